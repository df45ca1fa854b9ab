//! The metrics of one query group, written once: `ndcg` and `map` ([`group_term`]) and the ranking
//! case of `auc` and `aucpr` ([`group_roc`], [`group_pr`], [`group_auc_term`]). `boost`'s metrics call them for each group on the
//! CPU, and [`groups_kernel`] and [`auc_groups_kernel`] run them on the device, a thread per group,
//! over the group's documents ranked by margin and by label with our segmented radix sort
//! ([`crate::rank::descending_key`]: descending, ties in document order, NaN last). The group terms
//! are then summed in the fixed order of [`crate::reduce`] ([`crate::metric::terms_kernel`] on the
//! device), so both backends print the same digits. Formulas and XGBoost's conventions are in
//! `boost`'s `metric/rank.rs` and `metric/auc.rs`.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;

use crate::auc::{fixed_scale, position_area, row_positives, term_bound, to_f64, AucCurve, Positives};
use crate::evaluate::global_thread;
use crate::metric::LossSum;
use crate::rank::{inv_idcg, ndcg_discount, ndcg_gain};
use crate::{fixed_point, reduce};

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

/// `auc` of a query group of `n` documents (XGBoost's ranking case, ROC): every pair of documents
/// in label order (descending, stable; `prediction_by_label(i)` is the prediction of the `i`-th)
/// scores 1 if the first is predicted higher (their `f32` difference positive), ½ on a tie, 0
/// otherwise, and the group's AUC is the mean over its pairs; `None` under 3 documents. The scores
/// are counted in halves, integers, so any order of the pairs counts the same.
pub fn group_roc(n: usize, prediction_by_label: impl Fn(usize) -> f32) -> Option<f64> {
    if n < 3 {
        return None;
    }
    let (mut halves, mut pairs) = (0u64, 0u64);
    for i in 0..n {
        let high = prediction_by_label(i);
        for j in i + 1..n {
            let d = high - prediction_by_label(j);
            halves += if d > 0.0 {
                2
            } else if d == 0.0 {
                1
            } else {
                0
            };
            pairs += 1;
        }
    }
    Some(halves as f64 * 0.5 / pairs as f64)
}

/// `aucpr` of a query group of `n` documents: the binary PR walk of [`crate::auc`] over the
/// documents ranked by prediction (`prediction(p)` and `label(p)` of the document ranked `p`-th; any
/// order within ties), each weighted by the group's `weight`, its fixed-point scale the group's own;
/// `None` without positives or negatives. `set_prefix(p, ·)` and `prefix(p)` keep the walk's
/// prefixes, a value a position.
pub fn group_pr(
    n: usize,
    prediction: impl Fn(usize) -> f32,
    label: impl Fn(usize) -> f32,
    weight: f32,
    mut set_prefix: impl FnMut(usize, Positives),
    prefix: impl Fn(usize) -> Positives,
) -> Option<f64> {
    let mut largest = 0.0f64;
    for p in 0..n {
        let bound = term_bound(label(p), weight);
        if bound > largest {
            largest = bound;
        }
    }
    let scale = fixed_scale(n as f64 * largest);
    let mut total = Positives::new(0, 0);
    for p in 0..n {
        total = fixed_point::add(total, row_positives(label(p), weight, scale));
        set_prefix(p, total);
    }
    let area = reduce::sum(n, |p| {
        let ends_group = p + 1 == n || prediction(p) != prediction(p + 1);
        let mut start = p;
        while ends_group && start > 0 && prediction(start - 1) == prediction(p) {
            start -= 1;
        }
        LossSum { loss: position_area(AucCurve::PR, p, ends_group, start, &prefix, total, scale), weight: 0.0 }
    });
    let (fp, tp) = to_f64(total, scale);
    (fp > 0.0 && tp > 0.0).then_some(area.loss)
}

/// A group's term of the ranking AUC's sums: its AUC and weight 1, or zeros when it has none (the
/// result is the plain mean over the groups that have one).
#[inline]
pub fn group_auc_term(auc: Option<f64>) -> LossSum {
    match auc {
        Some(auc) if !auc.is_nan() => LossSum { loss: auc, weight: 1.0 },
        _ => LossSum::default(),
    }
}

/// The ranking AUC from the sums of every group's [`group_auc_term`]: NaN when no group has one.
pub fn finish_auc(sums: LossSum) -> f64 {
    if sums.weight == 0.0 {
        f64::NAN
    } else {
        sums.loss / sums.weight
    }
}

/// `terms[g]`: [`group_auc_term`] of every group `g` (rows `group_ptr[g]..group_ptr[g + 1]`), ROC by
/// [`group_roc`] over `ideal` (each group's rows by label), PR by [`group_pr`] over `ranked` (by
/// margin) with weight `weights[g]` (1 when null) and `prefixes` as its scratch. One thread per group.
///
/// # Safety
/// `group_ptr` holds `groups + 1` non-decreasing offsets; `margins`, `labels`, `ranked`, `ideal` and
/// `prefixes` cover the last offset, the orders mapping each group's positions to its own rows;
/// `weights` (when not null) and `terms` hold `groups` values.
#[allow(clippy::too_many_arguments)]
pub unsafe fn auc_groups_kernel(
    curve: AucCurve,
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
    let g = global_thread();
    if g >= groups {
        return;
    }
    let g = g as usize;
    // SAFETY: `g < groups`; the contract covers every index below.
    unsafe {
        let begin = arch::load(group_ptr.add(g)) as usize;
        let n = arch::load(group_ptr.add(g + 1)) as usize - begin;
        let row = |order: *const u32, i: usize| arch::load(order.add(begin + i)) as usize;
        let auc = if curve == AucCurve::ROC {
            group_roc(n, |i| arch::load(margins.add(row(ideal, i))))
        } else {
            let weight = if weights.is_null() { 1.0 } else { arch::load(weights.add(g)) };
            group_pr(
                n,
                |p| arch::load(margins.add(row(ranked, p))),
                |p| arch::load(labels.add(row(ranked, p))),
                weight,
                |p, prefix| arch::store(prefixes.add(begin + p), prefix),
                |p| arch::load(prefixes.add(begin + p)),
            )
        };
        arch::store(terms.add(g), group_auc_term(auc));
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

    #[test]
    fn ranking_auc_by_hand() {
        // Predictions in label order 0.9, 0.5, 0.5, 0.1: pairs 1, 1, 1, ½, 1, 1 of 6.
        let p = [0.9f32, 0.5, 0.5, 0.1];
        assert_eq!(group_roc(4, |i| p[i]), Some(5.5 / 6.0));
        assert_eq!(group_roc(2, |i| p[i]), None);
        // Ranked labels 1, 0, 1 (no ties): precision 1 at recall ½, then 2/3 at recall 1.
        let (pred, lab) = ([0.9f32, 0.5, 0.1], [1.0f32, 0.0, 1.0]);
        let mut prefixes = [Positives::new(0, 0); 3];
        let cell = core::cell::RefCell::new(&mut prefixes);
        let pr =
            group_pr(3, |p| pred[p], |p| lab[p], 2.0, |p, x| cell.borrow_mut()[p] = x, |p| cell.borrow()[p]).unwrap();
        assert!(pr > 0.5 && pr < 1.0, "{pr}");
        let none = group_pr(3, |p| pred[p], |_| 1.0, 1.0, |_, _| {}, |_| Positives::new(0, 0));
        assert_eq!(none, None);
        let sums = LossSum { loss: 1.5, weight: 2.0 };
        assert_eq!(finish_auc(sums), 0.75);
        assert!(finish_auc(group_auc_term(None)).is_nan());
    }
}
