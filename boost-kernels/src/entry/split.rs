//! The `split` family: split evaluation: a warp per (node, feature), each node's best, an oblivious level.

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::{self, DeviceSplit, FeatureSplitArgs, NodeInput, NodeSplitArgs, SplitContext, SplitPair};
use crate::oblivious::{self, LevelArgs};

kernel! {
    /// Best split of each (node, feature) pair; see [`evaluate::split_features_kernel`].
    pub unsafe fn boost_split_features(
        histograms: *const GradientPair<i64>,
        node_stride: u64,
        feature_stride: u64,
        slots: *const u32,
        nodes: *const NodeInput,
        cut_ptrs: *const u32,
        cut_values: *const f32,
        pairs: *const SplitPair,
        num_pairs: u64,
        sorted: *const u32,
        context: *const SplitContext,
        out: *mut DeviceSplit,
    ) {
        let args = FeatureSplitArgs {
            histograms, node_stride, feature_stride, slots, nodes, cut_ptrs, cut_values, pairs, num_pairs,
            sorted, context, out,
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { evaluate::split_features_kernel(&args) }
    }
}

kernel! {
    /// The partition pairs' sort keys; see [`evaluate::sort_keys_kernel`].
    pub unsafe fn boost_split_sort_keys(
        histograms: *const GradientPair<i64>,
        node_stride: u64,
        feature_stride: u64,
        slots: *const u32,
        cut_ptrs: *const u32,
        pairs: *const SplitPair,
        context: *const SplitContext,
        partition: *const u32,
        num_partition: u64,
        num_keys: u64,
        keys: *mut f32,
        bins: *mut u32,
    ) {
        let args = FeatureSplitArgs {
            histograms, node_stride, feature_stride, slots, nodes: core::ptr::null(), cut_ptrs,
            cut_values: core::ptr::null(), pairs, num_pairs: 0, sorted: core::ptr::null(), context,
            out: core::ptr::null_mut(),
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { evaluate::sort_keys_kernel(&args, partition, num_partition, num_keys, keys, bins) }
    }
}

kernel! {
    /// Each node's best split over its pairs; see [`evaluate::split_nodes_kernel`].
    pub unsafe fn boost_split_nodes(
        candidates: *const DeviceSplit,
        pair_offsets: *const u32,
        num_nodes: u64,
        context: *const SplitContext,
        pairs: *const SplitPair,
        sorted: *const u32,
        cut_ptrs: *const u32,
        edges: *mut u32,
        edge_stride: u64,
        out: *mut DeviceSplit,
    ) {
        let args = NodeSplitArgs { pair_offsets, num_nodes, context, pairs, sorted, cut_ptrs, edges, edge_stride, out };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { evaluate::split_nodes_kernel(candidates, &args) }
    }
}

kernel! {
    /// An oblivious level's split, in three launches: `stage` 0 the histograms' prefix sums
    /// ([`oblivious::prefix_kernel`]), 1 the summed candidates into `out` as `f64`
    /// ([`oblivious::candidates_kernel`]), 2 the nodes' children's sums of candidate `candidate`
    /// of `feature` into `out` as pairs ([`oblivious::node_sums_kernel`]).
    pub unsafe fn boost_split_level(
        histograms: *const GradientPair<i64>,
        prefix: *mut GradientPair<i64>,
        nodes: u64,
        slot_len: u64,
        bins_per_feature: u64,
        totals: *const GradientPair<i64>,
        parent_gains: *const f32,
        features: *const u32,
        num_features: u64,
        cut_ptrs: *const u32,
        context: *const SplitContext,
        stage: u64,
        feature: u64,
        candidate: u64,
        out: *mut u8,
    ) {
        let a = LevelArgs {
            histograms, prefix, nodes, slot_len, bins_per_feature, totals, parent_gains, features, num_features,
            cut_ptrs, context,
        };
        // SAFETY: the host launcher sizes every buffer as the stage's kernel's contract requires.
        unsafe {
            match stage {
                0 => oblivious::prefix_kernel(&a),
                1 => oblivious::candidates_kernel(&a, out.cast()),
                _ => oblivious::node_sums_kernel(&a, feature as u32, candidate as u32, out.cast()),
            }
        }
    }
}

host_kernels! {
    boost_split_features,
    boost_split_sort_keys,
    boost_split_nodes,
    boost_split_level,
}
