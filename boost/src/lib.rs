//! Gradient boosting on the GPU and the CPU: XGBoost's `hist` and `exact` tree methods, a
//! CatBoost-style oblivious-tree option, XGBoost's objectives, metrics and JSON models, all composed
//! from the `primitives` crate's algorithms.
//!
//! The CPU backend is being built first (it is the reference the GPU backend must match bit for
//! bit). The crate already embeds the PTX of `boost-kernels` (built by `cargo xtask kernels`).

pub mod data;
pub mod ellpack;
mod error;
pub mod fixed_point;
pub mod learner;
pub mod metric;
pub mod model;
pub mod objective;
pub mod param;
pub mod quantile;
pub mod tree;

pub use error::{Error, Result};

/// PTX of the `boost-kernels` crate for `sm_80` (JIT-compiled by the driver on newer GPUs).
pub const KERNELS_PTX: &str = include_str!("../kernels/boost_kernels.sm_80.ptx");
