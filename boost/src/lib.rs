//! Gradient boosting on the GPU and the CPU: XGBoost's `hist` and `exact` tree methods, a
//! CatBoost-style oblivious-tree option, XGBoost's objectives, metrics and JSON models, all composed
//! from the `primitives` crate's algorithms.
//!
//! Nothing is trained yet: this is the crate's compiling skeleton. It already embeds the PTX of
//! `boost-kernels` (built by `cargo xtask kernels`), so that the GPU backend needs no new plumbing.

/// PTX of the `boost-kernels` crate for `sm_80` (JIT-compiled by the driver on newer GPUs).
pub const KERNELS_PTX: &str = include_str!("../kernels/boost_kernels.sm_80.ptx");
