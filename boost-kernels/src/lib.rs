//! Device code of the `boost` gradient-boosting library, and the arithmetic that decides a tree,
//! written once (`no_std`) for the CPU backend and the kernels: `boost`'s CPU backend calls these
//! functions, and its GPU kernels, compiled from this crate to PTX, call the same ones, so both
//! build the same trees by construction.
//!
//! | | shared with the CPU backend | device only |
//! | --- | --- | --- |
//! | gradients | [`fixed_point`] (the quantiser: exact, order-free sums), [`reduce`] (the fixed order of its sums), [`objective`], [`residual`] (absolute error and quantiles), [`rank`] (LambdaMART), [`survival`] (AFT), [`expectile`], [`sampling`] (a stateless draw a row), [`mvs`] (gradient-based sampling), [`exp::expf`] (XGBoost's rounding) | [`quantise`] |
//! | splits | [`split`] (gains, weights, the bin scan both ways, ties), [`categorical`] (one-hot and partition splits), [`exact`] (the exact method's candidates), [`oblivious`] | [`evaluate`] (a warp a (node, feature)) |
//! | rows | [`bins`] (a value's bin), [`ellpack`] (reading a quantised page), [`partition`] (which child's histogram is built), [`sketch`] (XGBoost's quantile summaries) | [`partition`]'s kernels, [`subtract`], [`device_sum`], the device sketch's steps |
//! | metrics, orders | [`metric`], [`auc`], [`rank_metric`], [`order`] (keys, XGBoost's quantiles) | |
//! | prediction | [`predict`] (a tree walk's step), [`binarised`] (CatBoost's applier) | |
//! | data | [`synthetic`] (the benchmarks' rows), [`target_statistics`] (CatBoost's ordered encoding of categories) | |
//!
//! The kernels themselves are thin wrappers in `entry/`, a file a family (feature `entry-points`).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx), allow(unused_features))]

pub mod auc;
pub mod binarised;
pub mod bins;
pub mod categorical;
pub mod device_sum;
pub mod ellpack;
pub mod evaluate;
pub mod exact;
pub mod exp;
pub mod expectile;
pub mod fixed_point;
pub mod metric;
pub mod mvs;
pub mod objective;
pub mod oblivious;
pub mod order;
pub mod partition;
pub mod predict;
pub mod quantise;
pub mod rank;
pub mod rank_metric;
pub mod reduce;
pub mod residual;
pub mod sampling;
pub mod shap;
pub mod sketch;
pub mod split;
pub mod subtract;
pub mod survival;
pub mod synthetic;
pub mod target_statistics;

/// The kernels (`cargo xtask kernels` builds them with this feature; `boost` turns it on for their
/// host versions, which the emulated device runs).
#[cfg(feature = "entry-points")]
pub mod entry;

#[cfg(all(target_arch = "nvptx64", feature = "entry-points"))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    primitives_kernels::arch::trap()
}
