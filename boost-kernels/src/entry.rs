//! `boost`'s kernel entry points, with stable names `boost_<algorithm>_...`; the host crate
//! launches them by these names (and runs their host versions on the emulator).

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::adaptive::{self, Residuals};
use crate::auc::{self, AucCurve, Positives};
use crate::binarised::{self, BinarisedFeature, BinarisedModel, BinarisedTree, LevelSplit};
use crate::bins::PackedRows;
use crate::bins::{self, Cuts, PackedShape};
use crate::device_sum::{self, MAX_PARTS};
use crate::evaluate::{self, DeviceSplit, FeatureSplitArgs, SplitContext};
use crate::exact::{self, ExactExpansion};
use crate::fixed_point::{GradientQuantiser, QuantiserSums};
use crate::metric::{self, ElementwiseMetric, LossSum, MultiClassMetric, Transform};
use crate::objective::{self, ElementwiseObjective, LeafRange};
use crate::oblivious::{self, LevelArgs};
use crate::partition::{self, ChildPlanArgs, ChildSlots, PartitionArgs, PartitionSplit, SubtractionPlan};
use crate::predict::{self, PredictNode, PredictTree};
use crate::quantise;
use crate::rank::{self, LambdaRankParams, RankRows};
use crate::rank_metric::{self, RankMetricParams};
use crate::sampling::RowSampler;
use crate::sketch::{
    self, ColumnMerges, CsrRows, DenseColumns, QueueEntries, QueueSummaries, SketchEntry, SketchQueue, TreeRound,
};
use crate::subtract;
use crate::synthetic::{self, SyntheticRows};

kernel! {
    /// Synthetic rows `first..first + n`; see [`synthetic::rows_kernel`].
    pub unsafe fn boost_synthetic_rows(spec: *const SyntheticRows, first: u64, n: u64, values: *mut f32, labels: *mut f32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { synthetic::rows_kernel(spec, first, n, values, labels) }
    }
}

kernel! {
    /// The packed bins of dense row-major features; see [`bins::dense_kernel`].
    pub unsafe fn boost_bins_dense(
        values: *const f32,
        rows: u64,
        features: u64,
        bits: u64,
        row_words: u64,
        cut_ptrs: *const u32,
        cut_values: *const f32,
        out: *mut u32,
    ) {
        let (cuts, shape) = (Cuts { cut_ptrs, cut_values }, PackedShape { features, bits: bits as u32, row_words });
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { bins::dense_kernel(values, rows, shape, cuts, out) }
    }
}

kernel! {
    /// The packed bins of CSR rows; see [`bins::csr_kernel`].
    pub unsafe fn boost_bins_csr(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        features: u64,
        bits: u64,
        row_words: u64,
        cut_ptrs: *const u32,
        cut_values: *const f32,
        out: *mut u32,
    ) {
        let (cuts, shape) = (Cuts { cut_ptrs, cut_values }, PackedShape { features, bits: bits as u32, row_words });
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { bins::csr_kernel(row_ptr, col_indices, values, rows, shape, cuts, out) }
    }
}

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
        pairs: *const u32,
        num_pairs: u64,
        context: *const SplitContext,
        out: *mut DeviceSplit,
    ) {
        let args = FeatureSplitArgs {
            histograms, node_stride, feature_stride, slots, totals, cut_ptrs, cut_values, pairs, num_pairs,
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

kernel! {
    /// The exact method's gradient gather; see [`exact::gather_kernel`].
    pub unsafe fn boost_exact_gather(rows: *const u32, len: u64, gradients: *const GradientPair<i64>, gathered: *mut GradientPair<i64>) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { exact::gather_kernel(rows, len, gradients, gathered) }
    }
}

kernel! {
    /// The exact method's default sides; see [`exact::default_positions_kernel`].
    pub unsafe fn boost_exact_default_positions(positions: *mut u32, rows: u64, plan: *const i32, plan_len: u64, expansions: *const ExactExpansion) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { exact::default_positions_kernel(positions, rows, plan, plan_len, expansions) }
    }
}

kernel! {
    /// A step of the exact method's level over its entries (`LevelArgs`), by `stage`: 0 the
    /// segments' best keys ([`exact::candidates_kernel`]; `p0` the keys), 1 the nodes' splits
    /// ([`exact::best_kernel`]; keys, splits), 2 the split features' sides
    /// ([`exact::split_positions_kernel`]; positions, expansion by slot, expansions), 3 the entries'
    /// next slots ([`exact::targets_kernel`]; positions, slot by node, its length, targets, left
    /// flags), 4 the next segments' sizes ([`exact::sizes_kernel`]; flags' sums, parent slots, next
    /// slots, sizes), 5 the move ([`exact::scatter_kernel`]; targets, flags' sums, next segments,
    /// next slots, values, rows). The interleaved mode's: 6 a node's masked inputs
    /// ([`exact::mask_kernel`]), 7 its keys ([`exact::interleaved_candidates_kernel`]), 8 its splits
    /// by feature ([`exact::materialize_kernel`]), 9 the nodes' picks ([`exact::pick_kernel`]), 10
    /// the split features' sides ([`exact::interleaved_positions_kernel`]), 11-13 the change to the
    /// sorting layout ([`exact::pack_kernel`], [`exact::count_kernel`], [`exact::unpack_kernel`]).
    pub unsafe fn boost_exact_level(
        values: *const f32,
        rows: *const u32,
        prefix: *const GradientPair<i64>,
        len: u64,
        segments: *const u32,
        slots: u64,
        features: u64,
        totals: *const GradientPair<i64>,
        gains: *const f32,
        uses: *const u8,
        forward: *const u8,
        context: *const SplitContext,
        stage: u64,
        p0: u64,
        p1: u64,
        p2: u64,
        p3: u64,
        p4: u64,
        p5: u64,
    ) {
        let a = exact::LevelArgs { values, rows, prefix, len, segments, slots, features, totals, gains, uses, forward, context };
        // SAFETY: the host launcher sizes every buffer as the stage's kernel's contract requires.
        unsafe {
            match stage {
                0 => exact::candidates_kernel(&a, p0 as *mut u64),
                1 => exact::best_kernel(&a, p0 as *const u64, p1 as *mut DeviceSplit),
                2 => exact::split_positions_kernel(&a, p0 as *mut u32, p1 as *const i32, p2 as *const ExactExpansion),
                3 => exact::targets_kernel(&a, p0 as *const u32, p1 as *const u32, p2, p3 as *mut u32, p4 as *mut u32),
                4 => exact::sizes_kernel(&a, p0 as *const u32, p1 as *const u32, p2, p3 as *mut u32),
                6 => exact::mask_kernel(&a, p0 as *const u32, p1 as u32, p2 as *const GradientPair<i64>, p3 as *mut GradientPair<i64>, p4 as *mut u32),
                7 => exact::interleaved_candidates_kernel(&a, p0 as *const u32, p1 as u32, p2 as *const u32, p3 as *mut u64),
                8 => exact::materialize_kernel(&a, p0 as u32, p1 as *const u32, p2 as *const u64, p3 as *mut DeviceSplit),
                9 => exact::pick_kernel(&a, p0 as *const DeviceSplit, p1 as *mut DeviceSplit),
                10 => exact::interleaved_positions_kernel(&a, p0 as *const u32, p1 as *mut u32, p2 as *const i32, p3 as *const ExactExpansion),
                11 => exact::pack_kernel(&a, p0 as *mut u64),
                12 => exact::count_kernel(&a, p0 as *const u32, p1, p2 as *mut u32),
                13 => exact::unpack_kernel(&a, p0 as *const u32, p1 as *const u64, p2 as *const u32, p3, p4 as *mut f32, p5 as *mut u32),
                _ => exact::scatter_kernel(&a, p0 as *const u32, p1 as *const u32, p2 as *const u32, p3, p4 as *mut f32, p5 as *mut u32),
            }
        }
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

kernel! {
    /// A left/right flag per position of the row order; see [`partition::flags_kernel`].
    pub unsafe fn boost_partition_flags(
        rows: *const u32,
        n: u64,
        bins: *const u32,
        row_words: u64,
        bits: u64,
        splits: *const PartitionSplit,
        num_splits: u64,
        split_index: *const u32,
        flags: *mut u32,
    ) {
        let bins = PackedRows { words: bins, row_words: row_words as usize, bits: bits as u32 };
        let args = PartitionArgs { rows, n, bins, splits, num_splits, split_index };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { partition::flags_kernel(&args, flags) }
    }
}

kernel! {
    /// The row order after the partition; see [`partition::scatter_kernel`].
    pub unsafe fn boost_partition_scatter(
        rows: *const u32,
        n: u64,
        splits: *const PartitionSplit,
        num_splits: u64,
        split_index: *const u32,
        flags: *const u32,
        scan: *const u32,
        out: *mut u32,
    ) {
        let args = PartitionArgs { rows, n, bins: partition::NO_BINS, splits, num_splits, split_index };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { partition::scatter_kernel(&args, flags, scan, out) }
    }
}

kernel! {
    /// Each split node's count of left rows; see [`partition::counts_kernel`].
    pub unsafe fn boost_partition_counts(
        scan: *const u32,
        splits: *const PartitionSplit,
        num_splits: u64,
        lefts: *mut u32,
        children: *const ChildSlots,
        base: u64,
        ranges: *mut [u32; 2],
        plans: *mut SubtractionPlan,
    ) {
        let plan = ChildPlanArgs { children, base, ranges, plans };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { partition::counts_kernel(scan, splits, num_splits, lefts, &plan) }
    }
}

kernel! {
    /// The subtraction trick; see [`subtract::subtract_kernel`].
    pub unsafe fn boost_histogram_subtract(
        histograms: *mut GradientPair<i64>,
        slot_len: u64,
        plans: *const SubtractionPlan,
        num_plans: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { subtract::subtract_kernel(histograms, slot_len, plans, num_plans) }
    }
}

kernel! {
    /// Several devices' histograms summed, read through their addresses; see
    /// [`device_sum::sum_parts_kernel`]. Parts past `count` are ignored (pass null).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn boost_histogram_sum_parts(
        sum: *mut GradientPair<i64>,
        len: u64,
        count: u64,
        p0: *const GradientPair<i64>,
        p1: *const GradientPair<i64>,
        p2: *const GradientPair<i64>,
        p3: *const GradientPair<i64>,
        p4: *const GradientPair<i64>,
        p5: *const GradientPair<i64>,
        p6: *const GradientPair<i64>,
        p7: *const GradientPair<i64>,
    ) {
        let parts: [*const GradientPair<i64>; MAX_PARTS] = [p0, p1, p2, p3, p4, p5, p6, p7];
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { device_sum::sum_parts_kernel(sum, len, parts, count) }
    }
}

kernel! {
    /// Block sums of the quantiser's terms; see [`quantise::sums_kernel`].
    pub unsafe fn boost_quantise_sums(gradients: *const GradientPair<f32>, n: u64, block_sums: *mut QuantiserSums) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { quantise::sums_kernel(gradients, n, block_sums) }
    }
}

kernel! {
    /// Fixed-point gradients and their block sums; see [`quantise::quantise_kernel`].
    pub unsafe fn boost_quantise_fixed(
        gradients: *const GradientPair<f32>,
        n: u64,
        quantiser: *const GradientQuantiser,
        fixed: *mut GradientPair<i64>,
        block_totals: *mut GradientPair<i64>,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { quantise::quantise_kernel(gradients, n, quantiser, fixed, block_totals) }
    }
}

kernel! {
    /// Every row's gradient pair; see [`objective::gradients_kernel`].
    pub unsafe fn boost_objective_gradients(
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        sample_key: u64,
        sample_threshold: u64,
        n: u64,
        objective: *const ElementwiseObjective,
        out: *mut GradientPair<f32>,
    ) {
        let sampler = RowSampler { key: sample_key, threshold: sample_threshold };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { objective::gradients_kernel(margins, labels, weights, sampler, n, objective, out) }
    }
}

kernel! {
    /// Each row's leaf value added to its margin; see [`objective::add_leaves_kernel`].
    pub unsafe fn boost_objective_add_leaves(
        rows: *const u32,
        n: u64,
        leaves: *const LeafRange,
        num_leaves: u64,
        margins: *mut f32,
        outputs: u64,
        output: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { objective::add_leaves_kernel(rows, n, leaves, num_leaves, margins, outputs, output) }
    }
}

kernel! {
    /// Each row's predictions from its margins; see [`predict::transform_kernel`].
    pub unsafe fn boost_predict_transform(margins: *const f32, out: *mut f32, rows: u64, outputs: u64, code: u64) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::transform_kernel(margins, out, rows, outputs, code as u32) }
    }
}

kernel! {
    /// Every row's margins at the base margins; see [`objective::fill_margins_kernel`].
    pub unsafe fn boost_objective_fill_margins(base: *const f32, outputs: u64, count: u64, margins: *mut f32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { objective::fill_margins_kernel(base, outputs, count, margins) }
    }
}

kernel! {
    pub unsafe fn boost_metric_elementwise(
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        n: u64,
        transform: u64,
        metric: *const ElementwiseMetric,
        block_sums: *mut LossSum,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { metric::elementwise_kernel(margins, labels, weights, n, Transform(transform as u32), metric, block_sums) }
    }
}

kernel! {
    /// Each query group's term of a ranking metric; see [`rank_metric::groups_kernel`].
    pub unsafe fn boost_metric_rank_groups(
        params: *const RankMetricParams,
        group_ptr: *const u32,
        groups: u64,
        labels: *const f32,
        weights: *const f32,
        ranked: *const u32,
        ideal: *const u32,
        terms: *mut LossSum,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { rank_metric::groups_kernel(params, group_ptr, groups, labels, weights, ranked, ideal, terms) }
    }
}

kernel! {
    /// Each query group's term of the ranking `auc` or `aucpr`; see [`rank_metric::auc_groups_kernel`].
    pub unsafe fn boost_metric_rank_auc(
        curve: u64,
        group_ptr: *const u32,
        groups: u64,
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        ranked: *const u32,
        ideal: *const u32,
        prefixes: *mut Positives,
        terms: *mut LossSum,
    ) {
        let curve = AucCurve(curve as u32);
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe {
            rank_metric::auc_groups_kernel(
                curve, group_ptr, groups, margins, labels, weights, ranked, ideal, prefixes, terms,
            )
        }
    }
}

kernel! {
    /// The block sums of precomputed metric terms; see [`metric::terms_kernel`].
    pub unsafe fn boost_metric_sum_terms(terms: *const LossSum, n: u64, block_sums: *mut LossSum) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { metric::terms_kernel(terms, n, block_sums) }
    }
}

kernel! {
    /// Every row's softmax gradient pairs, class-major; see [`objective::softmax_gradients_kernel`].
    pub unsafe fn boost_objective_softmax_gradients(
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        n: u64,
        classes: u64,
        out: *mut GradientPair<f32>,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { objective::softmax_gradients_kernel(margins, labels, weights, n, classes, out) }
    }
}

kernel! {
    /// A sort key per position of the row order; see [`adaptive::residual_keys_kernel`].
    pub unsafe fn boost_objective_residual_keys(
        rows: *const u32,
        n: u64,
        labels: *const f32,
        margins: *const f32,
        outputs: u64,
        output: u64,
        gradients: *const GradientPair<f32>,
        keys: *mut u64,
    ) {
        let residuals = Residuals { labels, margins, outputs, output };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { adaptive::residual_keys_kernel(rows, n, residuals, gradients, keys) }
    }
}

kernel! {
    /// Each leaf's quantile of its residuals; see [`adaptive::leaf_quantiles_kernel`]. `alpha` is an
    /// `f64`'s bits.
    pub unsafe fn boost_objective_leaf_quantiles(
        keys: *const u64,
        rows: *const u32,
        offsets: *const u32,
        num_leaves: u64,
        labels: *const f32,
        margins: *const f32,
        outputs: u64,
        output: u64,
        weights: *const f32,
        alpha: u64,
        out: *mut f32,
    ) {
        let residuals = Residuals { labels, margins, outputs, output };
        let alpha = f64::from_bits(alpha);
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { adaptive::leaf_quantiles_kernel(keys, rows, offsets, num_leaves, residuals, weights, alpha, out) }
    }
}

kernel! {
    /// Sort keys that rank values descending; see [`rank::descending_keys_kernel`].
    pub unsafe fn boost_objective_descending_keys(values: *const f32, rows: *const u32, n: u64, keys: *mut u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { rank::descending_keys_kernel(values, rows, n, keys) }
    }
}

kernel! {
    /// Every row's LambdaMART gradient pair; see [`rank::lambdarank_kernel`]. `weight_norm` is an
    /// `f64`'s bits.
    pub unsafe fn boost_objective_lambdarank(
        params: *const LambdaRankParams,
        group_ptr: *const u32,
        groups: u64,
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        inv_idcg: *const f64,
        discount: *const f64,
        ranked: *const u32,
        by_label: *const u32,
        map_stats: *mut f64,
        seed_base: u64,
        weight_norm: u64,
        out: *mut GradientPair<f32>,
    ) {
        let rows = RankRows { group_ptr, groups, margins, labels, weights, inv_idcg, discount };
        let (seed_base, weight_norm) = (seed_base as u32, f64::from_bits(weight_norm));
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { rank::lambdarank_kernel(params, rows, ranked, by_label, map_stats, seed_base, weight_norm, out) }
    }
}

kernel! {
    /// Every row's LambdaMART gradient pair with `topk` pairs, a warp per group; see
    /// [`rank::lambdarank_topk_kernel`]. `weight_norm` is an `f64`'s bits.
    pub unsafe fn boost_objective_lambdarank_topk(
        params: *const LambdaRankParams,
        group_ptr: *const u32,
        groups: u64,
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        inv_idcg: *const f64,
        discount: *const f64,
        ranked: *const u32,
        map_stats: *mut f64,
        weight_norm: u64,
        out: *mut GradientPair<f32>,
    ) {
        let rows = RankRows { group_ptr, groups, margins, labels, weights, inv_idcg, discount };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { rank::lambdarank_topk_kernel(params, rows, ranked, map_stats, f64::from_bits(weight_norm), out) }
    }
}

kernel! {
    /// One output's gradients with the rows a tree leaves out zeroed; see [`objective::sample_kernel`].
    pub unsafe fn boost_objective_sample(
        gradients: *const GradientPair<f32>,
        sample_key: u64,
        sample_threshold: u64,
        n: u64,
        out: *mut GradientPair<f32>,
    ) {
        let sampler = RowSampler { key: sample_key, threshold: sample_threshold };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { objective::sample_kernel(gradients, sampler, n, out) }
    }
}

kernel! {
    pub unsafe fn boost_metric_multiclass(
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        n: u64,
        classes: u64,
        metric: u64,
        block_sums: *mut LossSum,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe {
            metric::multiclass_kernel(margins, labels, weights, n, classes, MultiClassMetric(metric as u32), block_sums)
        }
    }
}

kernel! {
    /// Each row's prediction and index, for the sort; see [`auc::keys_kernel`].
    pub unsafe fn boost_metric_auc_keys(
        margins: *const f32,
        n: u64,
        classes: u64,
        class: u64,
        transform: u64,
        keys: *mut f32,
        rows: *mut u32,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { auc::keys_kernel(margins, n, classes, class, Transform(transform as u32), keys, rows) }
    }
}

kernel! {
    /// Each sorted position's positives and group head; see [`auc::positives_kernel`].
    pub unsafe fn boost_metric_auc_positives(
        keys: *const f32,
        rows: *const u32,
        labels: *const f32,
        weights: *const f32,
        n: u64,
        classes: u64,
        class: u64,
        scale: u64,
        positives: *mut Positives,
        heads: *mut u32,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe {
            auc::positives_kernel(keys, rows, labels, weights, n, classes, class, f64::from_bits(scale), positives, heads)
        }
    }
}

kernel! {
    /// The block sums of the curve's segment areas; see [`auc::area_kernel`].
    pub unsafe fn boost_metric_auc_area(
        keys: *const f32,
        prefixes: *const Positives,
        group_starts: *const u32,
        n: u64,
        curve: u64,
        scale: u64,
        block_sums: *mut LossSum,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe {
            auc::area_kernel(keys, prefixes, group_starts, n, AucCurve(curve as u32), f64::from_bits(scale), block_sums)
        }
    }
}

kernel! {
    /// Trees walked for dense rows: their leaf values added to the margins, or their leaf indices; see
    /// [`predict::dense_kernel`].
    pub unsafe fn boost_predict_dense(
        values: *const f32,
        rows: u64,
        cols: u64,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        margins: *mut f32,
        outputs: u64,
        leaves: *mut u32,
        stage: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::dense_kernel(values, rows, cols, trees, num_trees, nodes, margins, outputs, leaves, stage) }
    }
}

kernel! {
    /// Oblivious trees' leaf values added to the margins of dense rows, the rows' features first
    /// turned into bin codes against the model's conditions; see [`binarised::dense_kernel`].
    pub unsafe fn boost_predict_binarised(
        values: *const f32,
        rows: u64,
        cols: u64,
        features: *const BinarisedFeature,
        num_features: u64,
        thresholds: *const f32,
        steps: u64,
        trees: *const BinarisedTree,
        num_trees: u64,
        splits: *const [LevelSplit; 2],
        leaf_values: *const f32,
        columns: u64,
        margins: *mut f32,
        outputs: u64,
    ) {
        let model = BinarisedModel {
            features,
            num_features,
            thresholds,
            steps,
            trees,
            num_trees,
            splits,
            leaf_values,
            columns,
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { binarised::dense_kernel(values, rows, cols, model, margins, outputs) }
    }
}

kernel! {
    /// [`boost_predict_dense`] over CSR rows; see [`predict::csr_kernel`].
    pub unsafe fn boost_predict_csr(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        margins: *mut f32,
        outputs: u64,
        leaves: *mut u32,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe {
            predict::csr_kernel(row_ptr, col_indices, values, rows, trees, num_trees, nodes, margins, outputs, leaves)
        }
    }
}

kernel! {
    /// A thread a (tree, row) of dense rows: leaf values or indices; see
    /// [`predict::dense_trees_kernel`].
    pub unsafe fn boost_predict_dense_trees(
        values: *const f32,
        rows: u64,
        cols: u64,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        leaf_values: *mut f32,
        leaves: *mut u32,
        leaf_stride: u64,
    ) {
        let out = predict::TreeWalks { values: leaf_values, leaves, leaf_stride };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::dense_trees_kernel(values, rows, cols, trees, num_trees, nodes, out) }
    }
}

kernel! {
    /// [`boost_predict_dense_trees`] over CSR rows; see [`predict::csr_trees_kernel`].
    pub unsafe fn boost_predict_csr_trees(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        leaf_values: *mut f32,
        leaves: *mut u32,
        leaf_stride: u64,
    ) {
        let out = predict::TreeWalks { values: leaf_values, leaves, leaf_stride };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::csr_trees_kernel(row_ptr, col_indices, values, rows, trees, num_trees, nodes, out) }
    }
}

kernel! {
    /// The tree kernels' leaf values added to the margins in tree order; see
    /// [`predict::sum_kernel`].
    pub unsafe fn boost_predict_sum(
        leaf_values: *const f32,
        rows: u64,
        trees: *const PredictTree,
        num_trees: u64,
        margins: *mut f32,
        outputs: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::sum_kernel(leaf_values, rows, trees, num_trees, margins, outputs) }
    }
}

kernel! {
    /// The sketch: each (piece, column)'s present and weighted values; see [`sketch::count_kernel`].
    pub unsafe fn boost_sketch_count(
        values: *const f32,
        rows: u64,
        cols: u64,
        weights: *const f32,
        stride: u64,
        piece_rows: u64,
        present: *mut u32,
        kept: *mut u32,
    ) {
        let data = DenseColumns { values, rows, cols, stride, weights, piece_rows };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::count_kernel(data, present, kept) }
    }
}

kernel! {
    /// The sketch: the weighted values column after column; see [`sketch::scatter_kernel`].
    pub unsafe fn boost_sketch_scatter(
        values: *const f32,
        rows: u64,
        cols: u64,
        weights: *const f32,
        stride: u64,
        piece_rows: u64,
        offsets: *const u64,
        out_values: *mut f32,
        out_weights: *mut f32,
    ) {
        let data = DenseColumns { values, rows, cols, stride, weights, piece_rows };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::scatter_kernel(data, offsets, out_values, out_weights) }
    }
}

kernel! {
    /// CSR rows' offsets and columns checked; see [`sketch::csr_check_kernel`].
    pub unsafe fn boost_csr_check(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        nnz: u64,
        cols: u64,
        problems: *mut u32,
    ) {
        let csr = CsrRows { row_ptr, col_indices, values, rows, nnz, cols, weights: core::ptr::null() };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::csr_check_kernel(csr, problems) }
    }
}

kernel! {
    /// Dense rows' values checked finite; see [`sketch::dense_check_kernel`].
    pub unsafe fn boost_check_dense(values: *const f32, n: u64, cols: u64, first_row: *mut u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::dense_check_kernel(values, n, cols, first_row) }
    }
}

kernel! {
    /// The sketch of CSR rows: each entry's sort key; see [`sketch::csr_keys_kernel`].
    pub unsafe fn boost_sketch_csr_keys(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        nnz: u64,
        cols: u64,
        weights: *const f32,
        keys: *mut u32,
        indices: *mut u32,
    ) {
        let csr = CsrRows { row_ptr, col_indices, values, rows, nnz, cols, weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::csr_keys_kernel(csr, keys, indices) }
    }
}

kernel! {
    /// The sketch of CSR rows: where each key starts; see [`sketch::csr_bounds_kernel`].
    pub unsafe fn boost_sketch_csr_bounds(sorted_keys: *const u32, n: u64, cols: u64, bounds: *mut u64) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::csr_bounds_kernel(sorted_keys, n, cols, bounds) }
    }
}

kernel! {
    /// The sketch of CSR rows: the queued values gathered; see [`sketch::csr_gather_kernel`].
    pub unsafe fn boost_sketch_csr_gather(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        nnz: u64,
        cols: u64,
        weights: *const f32,
        entries: *const u32,
        n: u64,
        out_values: *mut f32,
        out_weights: *mut f32,
    ) {
        let csr = CsrRows { row_ptr, col_indices, values, rows, nnz, cols, weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::csr_gather_kernel(csr, entries, n, out_values, out_weights) }
    }
}

kernel! {
    /// The sketch: the first values of runs of equal values; see [`sketch::heads_kernel`].
    pub unsafe fn boost_sketch_heads(values: *const f32, n: u64, col_starts: *const u64, cols: u64, heads: *mut u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::heads_kernel(values, n, col_starts, cols, heads) }
    }
}

kernel! {
    /// The sketch: each column's queues; see [`sketch::queues_kernel`].
    pub unsafe fn boost_sketch_queues(
        runs: *const u32,
        col_starts: *const u64,
        cols: u64,
        limits: *const u32,
        queue_offsets: *const u64,
        queues: *mut SketchQueue,
        counts: *mut u32,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::queues_kernel(runs, col_starts, cols, limits, queue_offsets, queues, counts) }
    }
}

kernel! {
    /// The sketch: each queue's entries; see [`sketch::entries_kernel`].
    pub unsafe fn boost_sketch_entries(
        values: *const f32,
        weights: *const f32,
        runs: *const u32,
        n: u64,
        queues: *const SketchQueue,
        queues_len: u64,
        entry_offsets: *const u32,
        keys: *mut f32,
        entry_weights: *mut f32,
    ) {
        let q = QueueEntries { values, weights, runs, n, queues, queues_len, entry_offsets, keys, entry_weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::entries_kernel(q) }
    }
}

kernel! {
    /// The sketch: each queue's pruned summary; see [`sketch::summaries_kernel`].
    pub unsafe fn boost_sketch_summaries(
        sorted_keys: *const f32,
        sorted_weights: *const f32,
        entry_offsets: *const u32,
        queues: *const SketchQueue,
        queues_len: u64,
        unit_weights: u64,
        limits: *const u32,
        summary_offsets: *const u64,
        exact: *mut SketchEntry,
        summaries: *mut SketchEntry,
        summary_lens: *mut u32,
        words: *mut u32,
    ) {
        let s = QueueSummaries {
            sorted_keys,
            sorted_weights,
            entry_offsets,
            queues,
            queues_len,
            unit_weights: unit_weights != 0,
            limits,
            summary_offsets,
            exact,
            summaries,
            summary_lens,
            words,
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::summaries_kernel(s) }
    }
}

kernel! {
    /// The sketch: each column's summaries merged; see [`sketch::merge_kernel`].
    pub unsafe fn boost_sketch_merge(
        cols: u64,
        summaries: *mut SketchEntry,
        summary_lens: *const u32,
        summary_offsets: *const u64,
        column_queues: *const u64,
        limits: *const u32,
        scratch: *mut SketchEntry,
        scratch_offsets: *const u64,
        levels: *const u32,
        merged: *mut SketchEntry,
        merged_offsets: *const u64,
        merged_lens: *mut u32,
        diverged: *const u32,
        round_starts: *const u32,
    ) {
        let m = ColumnMerges {
            cols,
            summaries,
            summary_lens,
            summary_offsets,
            column_queues,
            limits,
            scratch,
            scratch_offsets,
            levels,
            merged,
            merged_offsets,
            merged_lens,
            diverged,
            round_starts,
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::merge_kernel(m) }
    }
}

kernel! {
    /// The sketch: a round of the columns' merge trees; see [`sketch::tree_kernel`].
    pub unsafe fn boost_sketch_tree(
        tasks: *const [u32; 4],
        tasks_len: u64,
        summaries: *mut SketchEntry,
        offsets: *const u64,
        lens: *mut u32,
        limits: *const u32,
        scratch: *mut SketchEntry,
        scratch_offsets: *const u64,
        diverged: *mut u32,
    ) {
        let t = TreeRound { tasks, tasks_len, summaries, offsets, lens, limits, scratch, scratch_offsets, diverged };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::tree_kernel(t) }
    }
}

/// The host version of a kernel by name (the emulated device runs these).
#[cfg(not(target_arch = "nvptx64"))]
pub fn host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
    match name {
        "boost_synthetic_rows" => Some(boost_synthetic_rows::raw),
        "boost_bins_dense" => Some(boost_bins_dense::raw),
        "boost_bins_csr" => Some(boost_bins_csr::raw),
        "boost_split_features" => Some(boost_split_features::raw),
        "boost_split_nodes" => Some(boost_split_nodes::raw),
        "boost_split_level" => Some(boost_split_level::raw),
        "boost_exact_gather" => Some(boost_exact_gather::raw),
        "boost_exact_default_positions" => Some(boost_exact_default_positions::raw),
        "boost_exact_level" => Some(boost_exact_level::raw),
        "boost_partition_flags" => Some(boost_partition_flags::raw),
        "boost_partition_scatter" => Some(boost_partition_scatter::raw),
        "boost_partition_counts" => Some(boost_partition_counts::raw),
        "boost_histogram_subtract" => Some(boost_histogram_subtract::raw),
        "boost_histogram_sum_parts" => Some(boost_histogram_sum_parts::raw),
        "boost_quantise_sums" => Some(boost_quantise_sums::raw),
        "boost_quantise_fixed" => Some(boost_quantise_fixed::raw),
        "boost_objective_gradients" => Some(boost_objective_gradients::raw),
        "boost_objective_add_leaves" => Some(boost_objective_add_leaves::raw),
        "boost_objective_fill_margins" => Some(boost_objective_fill_margins::raw),
        "boost_predict_transform" => Some(boost_predict_transform::raw),
        "boost_metric_elementwise" => Some(boost_metric_elementwise::raw),
        "boost_objective_softmax_gradients" => Some(boost_objective_softmax_gradients::raw),
        "boost_objective_sample" => Some(boost_objective_sample::raw),
        "boost_objective_residual_keys" => Some(boost_objective_residual_keys::raw),
        "boost_objective_descending_keys" => Some(boost_objective_descending_keys::raw),
        "boost_objective_lambdarank" => Some(boost_objective_lambdarank::raw),
        "boost_objective_lambdarank_topk" => Some(boost_objective_lambdarank_topk::raw),
        "boost_objective_leaf_quantiles" => Some(boost_objective_leaf_quantiles::raw),
        "boost_metric_multiclass" => Some(boost_metric_multiclass::raw),
        "boost_metric_auc_keys" => Some(boost_metric_auc_keys::raw),
        "boost_metric_auc_positives" => Some(boost_metric_auc_positives::raw),
        "boost_metric_auc_area" => Some(boost_metric_auc_area::raw),
        "boost_metric_rank_groups" => Some(boost_metric_rank_groups::raw),
        "boost_metric_rank_auc" => Some(boost_metric_rank_auc::raw),
        "boost_metric_sum_terms" => Some(boost_metric_sum_terms::raw),
        "boost_predict_dense" => Some(boost_predict_dense::raw),
        "boost_predict_binarised" => Some(boost_predict_binarised::raw),
        "boost_predict_csr" => Some(boost_predict_csr::raw),
        "boost_predict_dense_trees" => Some(boost_predict_dense_trees::raw),
        "boost_predict_csr_trees" => Some(boost_predict_csr_trees::raw),
        "boost_predict_sum" => Some(boost_predict_sum::raw),
        "boost_sketch_count" => Some(boost_sketch_count::raw),
        "boost_sketch_scatter" => Some(boost_sketch_scatter::raw),
        "boost_sketch_heads" => Some(boost_sketch_heads::raw),
        "boost_csr_check" => Some(boost_csr_check::raw),
        "boost_check_dense" => Some(boost_check_dense::raw),
        "boost_sketch_csr_keys" => Some(boost_sketch_csr_keys::raw),
        "boost_sketch_csr_bounds" => Some(boost_sketch_csr_bounds::raw),
        "boost_sketch_csr_gather" => Some(boost_sketch_csr_gather::raw),
        "boost_sketch_queues" => Some(boost_sketch_queues::raw),
        "boost_sketch_entries" => Some(boost_sketch_entries::raw),
        "boost_sketch_summaries" => Some(boost_sketch_summaries::raw),
        "boost_sketch_merge" => Some(boost_sketch_merge::raw),
        "boost_sketch_tree" => Some(boost_sketch_tree::raw),
        _ => None,
    }
}
