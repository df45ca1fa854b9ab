//! Device code of the `boost` gradient-boosting library, and the arithmetic that decides a tree,
//! written once for the CPU backend and the kernels (`no_std`): [`fixed_point`] (the gradient
//! quantiser: exact, order-independent sums) and [`split`] (gains, leaf weights, the scan over a
//! feature's bins in both missing directions, tie-breaking). The CPU backend in `boost` calls these
//! functions; the GPU backend's kernels, compiled from this crate to PTX, call the same ones, so
//! that both choose the same splits by construction. [`evaluate`] is split evaluation for a batch
//! of nodes on the device, over those functions; [`bins`] a value's bin among the cuts (the CPU's
//! ELLPACK search, and the kernels that quantise the features on the device); [`partition`] the stable row partition of a batch
//! of split nodes, [`subtract`] the subtraction trick on histograms, [`quantise`] the gradient
//! quantiser over the fixed-order sums of [`reduce`], [`objective`] the element-wise objectives'
//! gradients and the margin update,
//! [`metric`] the row-wise evaluation metrics, [`auc`] the areas under the ROC and PR curves,
//! [`sampling`] row sampling as a stateless draw, [`predict`] the walk from a tree's root to a leaf
//! (the CPU predictor's step, and the kernels that keep evaluation sets' margins on the device),
//! [`adaptive`] leaf values recomputed as quantiles of the rows' residuals (`reg:absoluteerror`),
//! [`rank`] LambdaMART's gradients of a query group, [`rank_metric`] `ndcg` and `map` of one,
//! [`sketch`] the weighted quantile summaries of XGBoost's sketch (the quantile cuts), [`exact`]
//! the exact method's candidates (every boundary between distinct values), [`binarised`] the fast
//! applier of oblivious trees (CatBoost's: rows turned into bin codes once, a level an integer add),
//! [`synthetic`] the benchmarks' synthetic rows (made where they are trained), [`exp::expf`] the
//! exponential as XGBoost's CPU build rounds it (its sigmoid and softmax, bit for bit).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx), allow(unused_features))]

pub mod adaptive;
pub mod auc;
pub mod binarised;
pub mod bins;
pub mod device_sum;
pub mod evaluate;
pub mod exact;
pub mod exp;
pub mod fixed_point;
pub mod metric;
pub mod objective;
pub mod oblivious;
pub mod partition;
pub mod predict;
pub mod quantise;
pub mod rank;
pub mod rank_metric;
pub mod reduce;
pub mod sampling;
pub mod sketch;
pub mod split;
pub mod subtract;
pub mod synthetic;

/// The kernels (`cargo xtask kernels` builds them with this feature; `boost` turns it on for their
/// host versions, which the emulated device runs).
#[cfg(feature = "entry-points")]
pub mod entry;

#[cfg(all(target_arch = "nvptx64", feature = "entry-points"))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    primitives_kernels::arch::trap()
}
