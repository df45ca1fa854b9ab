//! Gradient boosting on the GPU and the CPU, compatible with XGBoost: its `hist` tree method
//! (depthwise and lossguide growth), its `exact` method (`tree_method=exact`), CatBoost-style
//! oblivious trees (`grow_policy=oblivious`, saved as ordinary XGBoost trees), its objectives
//! (regression, classification, ranking), metrics, parameter names and JSON models, composed from
//! the `primitives` crate's algorithms.
//!
//! Training runs on the CPU (`device=cpu`, XGBoost's default) or on a CUDA GPU (`device=cuda`,
//! `cuda:N`, or `auto` for the GPU when one can be opened). Both write the same model file, byte for
//! byte, because the arithmetic that decides a tree is one `no_std` source (`boost-kernels`),
//! compiled for the host and into the kernels this crate embeds.
//!
//! # Training and predicting
//!
//! [`DMatrix`] holds the data (features from host slices, CSR or a file, or rows already in a
//! GPU's memory, with labels, weights, query groups and base margins, each checked; features of
//! type `c` are categorical, split as XGBoost splits them: [`DMatrix::set_feature_types`], or
//! encoded by CatBoost's ordered target statistics with `categorical_encoding=ordered_target`,
//! [`CategoricalEncoding`]).
//! [`Booster::train`] fits a model with XGBoost's parameter names ([`Params::from_pairs`], or
//! typed: [`Params::builder`]); [`Booster::predict`] takes [`PredictOptions`] (values or margins,
//! an iteration range, a [`Device`]); [`Booster::save_model`] writes XGBoost's JSON, which
//! [`Booster::load_model`] (and XGBoost) read back.
//!
//! ```
//! use boost::{Booster, DMatrix, Params, PredictOptions};
//!
//! // 200 rows of 2 features; the label is whether x0 + x1 > 1.
//! let rows = 200;
//! let values: Vec<f32> = (0..2 * rows).map(|i| ((i * 37) % 101) as f32 / 100.0).collect();
//! let labels = (0..rows).map(|r| f32::from(values[2 * r] + values[2 * r + 1] > 1.0)).collect();
//! let dtrain = DMatrix::from_dense(values, rows, 2)?.with_labels(labels)?;
//! let params = Params::from_pairs(&[("objective", "binary:logistic"), ("max_depth", "3"), ("eta", "0.5")])?;
//! let booster = Booster::train(&params, &dtrain, 20, &[(&dtrain, "train")])?;
//! let probabilities = booster.predict(&dtrain, &PredictOptions::default())?;
//! let right = probabilities.iter().zip(dtrain.info().labels.iter()).filter(|(p, y)| (**p > 0.5) == (**y > 0.5));
//! assert!(right.count() > 190, "training accuracy");
//! let path = std::env::temp_dir().join(format!("boost-doc-model-{}.json", std::process::id()));
//! booster.save_model(&path)?;
//! assert_eq!(Booster::load_model(&path)?.predict(&dtrain, &PredictOptions::default())?, probabilities);
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), boost::Error>(())
//! ```
//!
//! With `("device", "cuda")` among the parameters the trees are built on the GPU (the same model
//! file); `PredictOptions::default().device(Device::Cuda { ordinal: 0 })` predicts there.
//! [`Booster::continue_training`] appends rounds to a trained or loaded model.
//! [`Booster::train_with`] takes [`TrainOptions`] (early stopping, a model to continue, a
//! [`CustomObjective`] whose gradients come from a closure, a [`CustomMetric`], an opened GPU) and
//! callbacks ([`TrainingCallback`]: [`EvaluationMonitor`], [`EarlyStopping`], the caller's own);
//! `boost/examples/` has runnable programs. Under the booster: [`learner::train`] (the whole
//! report of a run), [`model::Model`] (the trees, XGBoost's JSON), [`data`] (CSV, libsvm and
//! synthetic data). The `boost` command line is the `boost-cli` crate.
//!
//! The engine (the GPU backend, the tree builders, quantile cuts, fixed-point sums) is
//! crate-private; the `internals` feature makes it public, hidden from these docs and without
//! stability, for the workspace's GPU test suite, benchmarks and `xtask`.

#![warn(missing_docs)]
// Without `internals`, the engine's entry points that only the GPU test suite, the benchmarks and
// `xtask` call (launch and precision variants, test seams) are unused here; the workspace build,
// which has the feature, still reports dead code.
#![cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]

mod booster;
pub mod data;
mod error;
pub mod learner;
pub mod model;
pub mod output;
pub mod param;
mod rows;

/// The engine's modules: crate-private, or public but hidden with the `internals` feature, for
/// the GPU test suite, the benchmarks and `xtask`, which reach into them (no stability promised).
macro_rules! engine {
    ($(mod $name:ident;)*) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        pub(crate) mod $name;
    )*};
}

engine! {
    mod ellpack;
    mod fixed_point;
    mod gpu;
    mod metric;
    mod objective;
    mod external;
    mod phases;
    mod quantile;
    mod sample;
    mod tree;
}

pub use booster::{Booster, DMatrix, PredictOptions, PredictOutput};
pub use error::{Error, Result};
pub use external::{Batch, BatchSource, ExternalMemory, PagesInfo};
pub use gpu::{DeviceCsr, DeviceData};
pub use learner::{
    CustomMetric, CustomObjective, EarlyStopping, EvalLayout, EvaluationMonitor, RoundLog, TrainOptions,
    TrainingCallback,
};
pub use metric::{Metric, MetricInput, METRIC_NAMES};
pub use objective::{Objective, OBJECTIVE_NAMES};
pub use param::{CategoricalEncoding, Device, Params, ParamsBuilder, SamplingMethod};
pub use primitives::ops::GradientPair;
/// What [`Objective`] and [`Metric`] tell the GPU backend (their device versions): engine hooks.
#[doc(hidden)]
pub use {metric::DeviceMetric, objective::DeviceObjective};

/// The kernels of `boost-kernels` as `cargo xtask kernels` built them (`kernels/families.rs`):
/// machine code per GPU architecture and PTX, loaded family by family on first launch (a `static`
/// so that the images are embedded once).
pub static KERNELS: primitives::kernels::KernelModule = primitives::kernels::KernelModule {
    name: "boost-kernels",
    families: {
        #[allow(unused_imports)]
        use primitives::kernels::{KernelFamily, SassImage};
        include!("../kernels/families.rs")
    },
    host_kernel: boost_kernels::entry::host_kernel,
};

/// The README's Rust snippets, compiled and run as this crate's doc tests (so the README stays true).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
