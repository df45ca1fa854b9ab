//! `boost`'s kernel entry points, with stable names `boost_<algorithm>_...`; the host crate
//! launches them by these names (and runs their host versions on the emulator).

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::{self, DeviceSplit, FeatureSplitArgs, SplitContext};

kernel! {
    /// Best split of each (node, feature) pair; see [`evaluate::split_features_kernel`].
    pub unsafe fn boost_split_features(
        histograms: *const GradientPair<i64>,
        node_stride: u64,
        feature_stride: u64,
        slots: *const u32,
        totals: *const GradientPair<i64>,
        cut_ptrs: *const u32,
        cut_values: *const f32,
        min_values: *const f32,
        pairs: *const u32,
        num_pairs: u64,
        context: *const SplitContext,
        out: *mut DeviceSplit,
    ) {
        let args = FeatureSplitArgs {
            histograms, node_stride, feature_stride, slots, totals, cut_ptrs, cut_values, min_values, pairs, num_pairs,
            context, out,
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { evaluate::split_features_kernel(&args) }
    }
}

kernel! {
    /// Each node's best split over its pairs; see [`evaluate::split_nodes_kernel`].
    pub unsafe fn boost_split_nodes(
        candidates: *const DeviceSplit,
        pair_offsets: *const u32,
        num_nodes: u64,
        context: *const SplitContext,
        out: *mut DeviceSplit,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { evaluate::split_nodes_kernel(candidates, pair_offsets, num_nodes, context, out) }
    }
}

/// The host version of a kernel by name (the emulated device runs these).
#[cfg(not(target_arch = "nvptx64"))]
pub fn host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
    match name {
        "boost_split_features" => Some(boost_split_features::raw),
        "boost_split_nodes" => Some(boost_split_nodes::raw),
        _ => None,
    }
}
