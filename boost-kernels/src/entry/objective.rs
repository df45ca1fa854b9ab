//! The `objective` family: a round's per-row kernels: gradients (element-wise, softmax, expectiles, AFT, LambdaMART), margins, sampling (uniform and gradient-based), the scaled residuals' scales, and the metrics.

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::auc::{self, AucCurve, Positives};
use crate::expectile::{self, Expectiles};
use crate::metric::{self, ElementwiseMetric, LossSum, MultiClassMetric, Transform};
use crate::mvs::{self, GradientSampler, MvsBin, MvsPass};
use crate::objective::{self, ElementwiseObjective, LeafRange};
use crate::rank::{self, LambdaRankParams, RankRows};
use crate::rank_metric::{self, RankMetricParams};
use crate::residual::{self, ScaledResidual};
use crate::sampling::RowSampler;
use crate::survival::{self, Aft};

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
    /// Every row's expectile gradient pairs, output-major; see [`expectile::gradients_kernel`].
    pub unsafe fn boost_objective_expectile_gradients(
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        n: u64,
        expectiles: *const Expectiles,
        out: *mut GradientPair<f32>,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { expectile::gradients_kernel(margins, labels, weights, n, expectiles, out) }
    }
}

kernel! {
    /// Every row's AFT gradient pair; see [`survival::aft_gradients_kernel`].
    pub unsafe fn boost_objective_aft_gradients(
        margins: *const f32,
        lower: *const f32,
        upper: *const f32,
        weights: *const f32,
        n: u64,
        aft: *const Aft,
        out: *mut GradientPair<f32>,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { survival::aft_gradients_kernel(margins, lower, upper, weights, n, aft, out) }
    }
}

kernel! {
    /// Block sums of one output's scale terms; see [`residual::root_residual_sums_kernel`].
    pub unsafe fn boost_objective_root_residual_sums(
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        n: u64,
        outputs: u64,
        output: u64,
        block_sums: *mut LossSum,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { residual::root_residual_sums_kernel(margins, labels, weights, n, outputs, output, block_sums) }
    }
}

kernel! {
    /// Every output's scaled-residual pairs, class-major; see [`residual::gradients_kernel`].
    pub unsafe fn boost_objective_scaled_residual_gradients(
        margins: *const f32,
        labels: *const f32,
        weights: *const f32,
        n: u64,
        objective: *const ScaledResidual,
        scales: *const f32,
        out: *mut GradientPair<f32>,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { residual::gradients_kernel(margins, labels, weights, n, objective, scales, out) }
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
    /// The largest regularised gradient magnitude; see [`mvs::max_kernel`].
    pub unsafe fn boost_sample_mvs_max(gradients: *const GradientPair<f32>, n: u64, max: *mut u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { mvs::max_kernel(gradients, n, max) }
    }
}

kernel! {
    /// One pass of the threshold's radix select; see [`mvs::histogram_kernel`].
    pub unsafe fn boost_sample_mvs_histogram(
        gradients: *const GradientPair<f32>,
        n: u64,
        pass: *const MvsPass,
        bins: *mut MvsBin,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { mvs::histogram_kernel(gradients, n, pass, bins) }
    }
}

kernel! {
    /// One output's gradients, sampled by their magnitudes; see [`mvs::apply_kernel`].
    pub unsafe fn boost_sample_mvs_apply(
        gradients: *const GradientPair<f32>,
        sample_key: u64,
        threshold: f32,
        n: u64,
        out: *mut GradientPair<f32>,
    ) {
        let sampler = GradientSampler { key: sample_key, threshold, _pad: 0 };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { mvs::apply_kernel(gradients, sampler, n, out) }
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

host_kernels! {
    boost_objective_gradients,
    boost_objective_add_leaves,
    boost_objective_fill_margins,
    boost_metric_elementwise,
    boost_metric_rank_groups,
    boost_metric_rank_auc,
    boost_metric_sum_terms,
    boost_objective_softmax_gradients,
    boost_objective_aft_gradients,
    boost_objective_expectile_gradients,
    boost_objective_root_residual_sums,
    boost_objective_scaled_residual_gradients,
    boost_objective_descending_keys,
    boost_objective_lambdarank,
    boost_objective_lambdarank_topk,
    boost_objective_sample,
    boost_sample_mvs_max,
    boost_sample_mvs_histogram,
    boost_sample_mvs_apply,
    boost_metric_multiclass,
    boost_metric_auc_keys,
    boost_metric_auc_positives,
    boost_metric_auc_area,
}
