//! Gradient boosting on the GPU and the CPU: XGBoost's `hist` and `exact` tree methods, a
//! CatBoost-style oblivious-tree option, XGBoost's objectives, metrics and JSON models, all composed
//! from the `primitives` crate's algorithms.
//!
//! Training runs on the CPU (`device=cpu`, XGBoost's default) or on a CUDA GPU (`device=cuda`,
//! `cuda:N`, or `auto` for the GPU when one can be opened); both write the same model file, byte for
//! byte, because the arithmetic that decides a tree is one `no_std` source (`boost-kernels`) compiled
//! for the host and to the kernels this crate embeds (built by `cargo xtask kernels`).

pub mod data;
pub mod ellpack;
mod error;
pub mod fixed_point;
pub mod gpu;
pub mod learner;
pub mod metric;
pub mod model;
pub mod objective;
pub mod param;
pub mod phases;
pub mod quantile;
pub mod tree;

pub use error::{Error, Result};

/// The kernels of `boost-kernels` as `cargo xtask kernels` built them (`kernels/families.rs`):
/// machine code per GPU architecture and PTX, loaded family by family on first launch (a `static`
/// so that the images are embedded once).
pub static KERNELS: primitives::KernelModule = primitives::KernelModule {
    name: "boost-kernels",
    families: {
        #[allow(unused_imports)]
        use primitives::{KernelFamily, SassImage};
        include!("../kernels/families.rs")
    },
    host_kernel: boost_kernels::entry::host_kernel,
};
