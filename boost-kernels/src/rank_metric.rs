//! The ranking metrics `ndcg` and `map` of one query group, written once: `boost`'s metrics call
//! [`group_term`] for each group on the CPU, and [`groups_kernel`] runs it on the device, a thread
//! per group, over the group's documents ranked by margin and by label with our segmented radix
//! sort ([`crate::rank::descending_key`]: descending, ties in document order, NaN last). The group
//! terms are then summed in the fixed order of [`reduce`] ([`crate::metric::terms_kernel`] on the
//! device), so both backends print the same digits. Formulas and XGBoost's conventions are in
//! `boost`'s `metric/rank.rs`.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;

use crate::evaluate::global_thread;
use crate::metric::LossSum;
use crate::rank::{inv_idcg, ndcg_discount, ndcg_gain};

/// A ranking metric as the device takes it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RankMetricParams {
    /// [`RankMetricParams::NDCG`] or [`RankMetricParams::MAP`].
    pub kind: u32,
    /// Documents evaluated per group ([`RankMetricParams::WHOLE`]: all of them).
    pub truncation: u32,
    /// 1 for the `-` variants: a group without relevant documents scores 0 instead of 1.
    pub minus: u32,
    /// `ndcg_exp_gain`.
    pub exp_gain: u32,
}

impl RankMetricParams {
    pub const NDCG: u32 = 0;
    pub const MAP: u32 = 1;
    /// No truncation.
    pub const WHOLE: u32 = u32::MAX;
}

/// A group's term of the metric's sums: its score times `weight` (XGBoost adds a gainless NDCG
/// group's score unweighted) and `weight`. The group has `n` documents; `ranked_label(i)` is the label
/// of the document ranked `i`-th by prediction, `ideal_label(i)` the `i`-th label in descending
/// order (read by NDCG only).
#[inline]
pub fn group_term(
    params: &RankMetricParams,
    n: usize,
    ranked_label: impl Fn(usize) -> f32,
    ideal_label: impl Fn(usize) -> f32,
    weight: f32,
) -> LossSum {
    let t = params.truncation as usize;
    let k = if t < n { t } else { n };
    let empty = if params.minus != 0 { 0.0 } else { 1.0 };
    let w = weight as f64;
    if params.kind == RankMetricParams::NDCG {
        let exp_gain = params.exp_gain != 0;
        let inv = inv_idcg(n, k, ideal_label, exp_gain);
        if inv <= 0.0 {
            return LossSum { loss: empty, weight: w };
        }
        let mut ndcg = 0.0f64;
        for i in 0..k {
            ndcg += ndcg_discount(i) * ndcg_gain(ranked_label(i), exp_gain) * inv;
        }
        return LossSum { loss: ndcg * w, weight: w };
    }
    let (mut hits, mut ap) = (0.0f64, 0.0f64);
    for i in 0..n {
        let y = ranked_label(i) as f64;
        hits += y;
        if i < k {
            ap += hits / (i as f64 + 1.0) * y;
        }
    }
    let score = if hits > 0.0 {
        let cap = if params.truncation == RankMetricParams::WHOLE { f64::INFINITY } else { t as f64 };
        ap / if hits < cap { hits } else { cap }
    } else {
        empty
    };
    LossSum { loss: score * w, weight: w }
}

/// The metric from the sums of every group's [`group_term`]: their weighted mean (the plain sum when
/// the weights add to 0), capped at 1.
pub fn finish(sums: LossSum) -> f64 {
    let score = if sums.weight > 0.0 { sums.loss / sums.weight } else { sums.loss };
    if score < 1.0 {
        score
    } else {
        1.0
    }
}

/// `terms[g]`: [`group_term`] of every group `g`, its documents rows `group_ptr[g]..group_ptr[g + 1]`,
/// ranked by `ranked` and by label by `ideal` (each holds, at a group's positions, the group's rows
/// in that order), with weight `weights[g]` (1 when `weights` is null). One thread per group.
///
/// # Safety
/// `params` holds one value, `group_ptr` `groups + 1` non-decreasing offsets; `labels`, `ranked` and
/// `ideal` cover the last offset and map each group's positions to its own rows; `weights` (when
/// not null) and `terms` hold `groups` values.
#[allow(clippy::too_many_arguments)]
pub unsafe fn groups_kernel(
    params: *const RankMetricParams,
    group_ptr: *const u32,
    groups: u64,
    labels: *const f32,
    weights: *const f32,
    ranked: *const u32,
    ideal: *const u32,
    terms: *mut LossSum,
) {
    let g = global_thread();
    if g >= groups {
        return;
    }
    let g = g as usize;
    // SAFETY: `g < groups`; the contract covers every index below.
    unsafe {
        let params = arch::load(params);
        let begin = arch::load(group_ptr.add(g)) as usize;
        let end = arch::load(group_ptr.add(g + 1)) as usize;
        let weight = if weights.is_null() { 1.0 } else { arch::load(weights.add(g)) };
        let label_at = |order: *const u32, i: usize| arch::load(labels.add(arch::load(order.add(begin + i)) as usize));
        let term = group_term(&params, end - begin, |i| label_at(ranked, i), |i| label_at(ideal, i), weight);
        arch::store(terms.add(g), term);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(kind: u32, truncation: u32, minus: bool, ranked: &[f32], weight: f32) -> LossSum {
        let params = RankMetricParams { kind, truncation, minus: minus as u32, exp_gain: 1 };
        let mut ideal = ranked.to_vec();
        ideal.sort_by(|a, b| b.partial_cmp(a).unwrap());
        group_term(&params, ranked.len(), |i| ranked[i], |i| ideal[i], weight)
    }

    #[test]
    fn ndcg_and_map_by_hand() {
        let l3 = libm::log2(3.0);
        // Ranked labels 0, 2, 1: DCG = 3/log2(3) + 1/2 against the ideal 3 + 1/log2(3).
        let t = term(RankMetricParams::NDCG, RankMetricParams::WHOLE, false, &[0.0, 2.0, 1.0], 2.0);
        assert!((t.loss - 2.0 * (3.0 / l3 + 0.5) / (3.0 + 1.0 / l3)).abs() < 1e-12);
        assert_eq!(t.weight, 2.0);
        // No gain: 1 (0 for the minus variant), unweighted.
        let t = term(RankMetricParams::NDCG, 5, false, &[0.0, 0.0], 3.0);
        assert_eq!((t.loss, t.weight), (1.0, 3.0));
        assert_eq!(term(RankMetricParams::NDCG, 5, true, &[0.0, 0.0], 3.0).loss, 0.0);
        // Ranked 1, 0, 1, 0: AP = (1 + 2/3) / 2; at 2: 1 / min(2, 2).
        let ranked = [1.0, 0.0, 1.0, 0.0];
        let t = term(RankMetricParams::MAP, RankMetricParams::WHOLE, false, &ranked, 1.0);
        assert!((t.loss - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
        assert_eq!(term(RankMetricParams::MAP, 2, false, &ranked, 1.0).loss, 0.5);
        assert_eq!(term(RankMetricParams::MAP, 1, false, &ranked, 1.0).loss, 1.0);
        assert_eq!(term(RankMetricParams::MAP, 3, true, &[0.0], 1.0).loss, 0.0);
        assert_eq!(finish(LossSum { loss: 3.0, weight: 2.0 }), 1.0);
        assert_eq!(finish(LossSum { loss: 0.5, weight: 0.0 }), 0.5);
    }
}
