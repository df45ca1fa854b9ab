//! Gradient boosting on the GPU and the CPU: XGBoost's `hist` and `exact` tree methods, a
//! CatBoost-style oblivious-tree option, XGBoost's objectives, metrics and JSON models, all composed
//! from the `primitives` crate's algorithms.
//!
//! The CPU backend is being built first (it is the reference the GPU backend must match bit for
//! bit). The crate already embeds the kernel images of `boost-kernels` (built by `cargo xtask
//! kernels`; none yet).

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
