//! The GPU tests of every primitive, in one executable (each embeds the PTX, so one keeps the GPU
//! bundle small). They run on the SIMT emulator in `cargo test` and on a GPU with `--features gpu`
//! (see `tests::gpu`).

mod histogram;
mod histogram_experiment;
mod multi;
mod reduce;
mod scan;
mod segmented;
mod select;
mod sort;
