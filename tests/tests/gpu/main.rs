//! The GPU tests of every primitive, and of boost's kernels, in one executable (each embeds the PTX, so one keeps the GPU
//! bundle small). They run on the SIMT emulator in `cargo test` and on a GPU with `--features gpu`
//! (see `tests::gpu`).

mod boost_multi_device;
mod boost_pages;
mod boost_predict;
mod boost_shap;
mod boost_sketch;
mod boost_split;
mod boost_train;
mod histogram;
mod histogram_experiment;
mod multi;
mod reduce;
mod scan;
mod segmented;
mod select;
mod sort;
