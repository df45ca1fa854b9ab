//! `auc` (area under the ROC curve) and `aucpr` (under the precision-recall curve), with XGBoost's
//! three cases:
//!
//! - **binary** (one prediction per row, no groups): sort by prediction, descending; walk the rows
//!   accumulating weighted false and true positives `FP += (1 - y) w`, `TP += y w` (labels may be
//!   fractional); at each change of prediction add the area of the segment since the last change.
//!   Tied predictions therefore form one segment: the trapezoid `|ΔFP| (TP₀ + TP₁) / 2` for ROC,
//!   normalised by `FP · TP` at the end; for PR the exact area under the interpolated curve of Davis
//!   & Goadrich (`pr = TP / P`, precision `TP / (TP + FP)` interpolated linearly in counts), already
//!   normalised. No positives or no negatives: NaN. The positives are summed in fixed point (one
//!   power-of-two scale for the walk, exact prefixes) and the segments in a fixed order by position
//!   (`boost_kernels::auc`), where XGBoost sums both in `f64` in the sort's order: the value differs
//!   from XGBoost's in the last bits only, and the device's (sort, scans, the same segment
//!   function) is this one, bit for bit.
//! - **multi-class** (`K > 1` predictions per row): one-vs-rest binary AUC per class, averaged with
//!   weights `TP_k` (the class's weighted prevalence) for ROC; for PR XGBoost's weights are all 1 (an
//!   unweighted mean of the classes). Any degenerate class makes the result NaN.
//! - **ranking** (query groups set): per group. ROC: every pair of the group's documents ordered by
//!   label (descending, stable), including pairs of equal labels, scores 1 if the first is predicted
//!   higher, ½ on a tie, 0 otherwise; the group's AUC is the mean over its pairs. Groups of fewer
//!   than 3 documents are skipped. PR: the binary PR AUC of the group. The result is the unweighted
//!   mean over the valid groups (a group weight scales numerator and denominator alike), NaN when
//!   none is valid, the groups' AUCs summed in `reduce`'s fixed order. A group's AUC is
//!   `boost_kernels::rank_metric`'s, which the device runs too, a thread a group.

use std::cell::RefCell;

use rayon::prelude::*;

use boost_kernels::auc::{self, fixed_scale, position_area, row_positives, term_bound, to_f64, AucCurve, Positives};
use boost_kernels::fixed_point;
use boost_kernels::metric::LossSum;
use boost_kernels::rank_metric::{finish_auc, group_auc_term, group_pr, group_roc};

use super::{check_prediction_count, check_row_weights, fixed_order_sum, DeviceMetric, Metric};
use crate::data::MetaInfo;
use crate::objective::{argsort_desc, check_weights, cmp_desc, weight_of};
use crate::{Error, Result};

/// ROC or PR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AucKind {
    /// Area under the ROC curve (`auc`).
    Roc,
    /// Area under the precision-recall curve (`aucpr`).
    Pr,
}

/// `auc` or `aucpr`.
#[derive(Clone, Debug)]
pub struct Auc {
    kind: AucKind,
}

impl Auc {
    /// The metric of `kind`.
    pub fn new(kind: AucKind) -> Self {
        Self { kind }
    }
}

/// The walk of XGBoost's `BinaryAUC` as `boost_kernels::auc` defines it (the device's
/// `GpuTrainer::evaluate` computes the same): rows sorted by prediction, descending; fixed-point
/// prefixes of the false and true positives; a tie group's segment at its last position; the
/// segments summed by position in the fixed order. Returns the total positives, the summed area and
/// the fixed-point scale.
fn walk(
    curve: AucCurve,
    predictions: &[f32],
    label: impl Fn(usize) -> f32 + Sync,
    weight: impl Fn(usize) -> f32 + Sync,
) -> (Positives, f64, f64) {
    let n = predictions.len();
    let scale = scale_of(n, &label, &weight);
    // Any order within a tie group gives the same prefixes at its ends.
    let mut sorted: Vec<usize> = (0..n).collect();
    sorted.par_sort_unstable_by(|&a, &b| cmp_desc(predictions[a], predictions[b]));
    let mut prefixes = Vec::with_capacity(n);
    let mut starts = Vec::with_capacity(n);
    let (mut prefix, mut start) = (Positives::new(0, 0), 0);
    for (p, &row) in sorted.iter().enumerate() {
        if p > 0 && predictions[row] != predictions[sorted[p - 1]] {
            start = p;
        }
        prefix = fixed_point::add(prefix, row_positives(label(row), weight(row), scale));
        prefixes.push(prefix);
        starts.push(start);
    }
    let total = prefix;
    let area = fixed_order_sum(n, |p| {
        let ends_group = p + 1 == n || predictions[sorted[p]] != predictions[sorted[p + 1]];
        let area = position_area(curve, p, ends_group, starts[p], |q| prefixes[q], total, scale);
        LossSum { loss: area, weight: 0.0 }
    });
    (total, area.loss, scale)
}

/// The fixed-point scale of a walk over `n` rows: `n` times the largest term bounds every prefix.
fn scale_of(n: usize, label: impl Fn(usize) -> f32 + Sync, weight: impl Fn(usize) -> f32 + Sync) -> f64 {
    // The largest is order-independent: the device's rows get the host's scale.
    let largest = (0..n).into_par_iter().map(|i| term_bound(label(i), weight(i))).reduce(|| 0.0, f64::max);
    fixed_scale(n as f64 * largest)
}

/// The fixed-point scales of the walks over `info`'s rows (what the device's AUC takes): the binary
/// walk's for one output, each class's one-vs-rest walk's for `outputs > 1`.
pub(crate) fn auc_scales(info: &MetaInfo, outputs: usize) -> Vec<f64> {
    let n = info.labels.len();
    if outputs <= 1 {
        return vec![scale_of(n, |i| info.labels[i], |i| weight_of(info, i))];
    }
    (0..outputs).map(|c| scale_of(n, |i| class_label(info, outputs, c, i), |i| weight_of(info, i))).collect()
}

/// `(FP, TP, area)` of one curve from a walk's total positives, summed area and scale, as the
/// multi-class average takes them: ROC's unnormalised area, `(0, 0, 0)` without positives or
/// negatives; PR's `(1, 1, area)` (already normalised), NaN area without positives or negatives.
fn curve_of_walk(curve: AucCurve, (total, area, scale): (Positives, f64, f64)) -> (f64, f64, f64) {
    let (fp, tp) = to_f64(total, scale);
    match (curve, fp <= 0.0 || tp <= 0.0) {
        (AucCurve::PR, true) => (1.0, 1.0, f64::NAN),
        (AucCurve::PR, false) => (1.0, 1.0, area),
        (_, true) => (0.0, 0.0, 0.0),
        (_, false) => (fp, tp, area),
    }
}

/// Row `i`'s label in class `c`'s one-vs-rest walk (of `classes > 1`).
fn class_label(info: &MetaInfo, classes: usize, c: usize, i: usize) -> f32 {
    auc::walk_label(info.labels[i], classes as u64, c as u64)
}

/// The multi-class AUC from each class's one-vs-rest walk: the classes' AUCs averaged with weights
/// `TP_k` for ROC, unweighted for PR (XGBoost's weights); NaN when a class is degenerate.
pub(crate) fn one_vs_rest(curve: AucCurve, walks: &[(Positives, f64, f64)]) -> f64 {
    let (mut sum, mut tp_sum) = (0.0f64, 0.0f64);
    for &walk in walks {
        let (fp, tp, area) = curve_of_walk(curve, walk);
        let local = fp * tp;
        if local == 0.0 {
            return f64::NAN;
        }
        sum += area / local * tp;
        tp_sum += tp;
    }
    if tp_sum == 0.0 || sum.is_nan() {
        f64::NAN
    } else {
        sum / tp_sum
    }
}

impl Auc {
    fn curve(&self) -> AucCurve {
        match self.kind {
            AucKind::Roc => AucCurve::ROC,
            AucKind::Pr => AucCurve::PR,
        }
    }

    fn binary(&self, predictions: &[f32], info: &MetaInfo) -> f64 {
        let (total, area, scale) = walk(self.curve(), predictions, |i| info.labels[i], |i| weight_of(info, i));
        auc::finish(self.curve(), total, area, scale)
    }

    fn multi_class(&self, predictions: &[f32], info: &MetaInfo, k: usize) -> f64 {
        let rows = info.labels.len();
        let walks: Vec<(Positives, f64, f64)> = (0..k)
            .into_par_iter()
            .map(|c| {
                let column: Vec<f32> = (0..rows).map(|i| predictions[i * k + c]).collect();
                walk(self.curve(), &column, |i| class_label(info, k, c, i), |i| weight_of(info, i))
            })
            .collect();
        one_vs_rest(self.curve(), &walks)
    }

    /// The ranking case, each group's AUC by `boost_kernels::rank_metric` (the device's code):
    /// ROC by pair counting over the group's documents in label order, PR the group's binary walk.
    fn ranking(&self, predictions: &[f32], info: &MetaInfo) -> f64 {
        let gptr = &info.group_ptr;
        let sums = fixed_order_sum(gptr.len() - 1, |g| {
            let (p, y) = (&predictions[gptr[g]..gptr[g + 1]], &info.labels[gptr[g]..gptr[g + 1]]);
            let auc = match self.kind {
                AucKind::Roc => {
                    let by_label = argsort_desc(y);
                    group_roc(p.len(), |i| p[by_label[i]])
                }
                AucKind::Pr => {
                    let ranked = argsort_desc(p);
                    let prefixes = RefCell::new(vec![Positives::new(0, 0); p.len()]);
                    let weight = info.weights.get(g).copied().unwrap_or(1.0);
                    group_pr(
                        p.len(),
                        |r| p[ranked[r]],
                        |r| y[ranked[r]],
                        weight,
                        |r, prefix| prefixes.borrow_mut()[r] = prefix,
                        |r| prefixes.borrow()[r],
                    )
                }
            };
            group_auc_term(auc)
        });
        finish_auc(sums)
    }
}

impl Metric for Auc {
    fn name(&self) -> String {
        match self.kind {
            AucKind::Roc => "auc".into(),
            AucKind::Pr => "aucpr".into(),
        }
    }

    fn higher_is_better(&self) -> bool {
        true
    }

    fn check(&self, predictions: usize, info: &MetaInfo, outputs: usize) -> Result<()> {
        let rows = info.labels.len();
        if info.group_ptr.is_empty() {
            check_prediction_count(predictions, info, outputs)?;
            return check_row_weights(info);
        }
        check_prediction_count(predictions, info, 1)?;
        let g = &info.group_ptr;
        if g[0] != 0 || g[g.len() - 1] != rows || g.windows(2).any(|w| w[1] < w[0]) {
            return Err(Error::InvalidData(format!(
                "group offsets {:?}.. do not partition {rows} rows",
                &g[..g.len().min(4)]
            )));
        }
        let groups = g.len() - 1;
        if !info.weights.is_empty() && info.weights.len() != groups {
            return Err(Error::InvalidData(format!("{} weights for {groups} query groups", info.weights.len())));
        }
        check_weights(&info.weights, "group")?;
        if self.kind == AucKind::Pr {
            if let Some(i) = info.labels.iter().position(|y| !(0.0..=1.0).contains(y)) {
                return Err(Error::InvalidData(format!(
                    "row {i}: label {} is outside [0, 1], which aucpr requires",
                    info.labels[i]
                )));
            }
        }
        Ok(())
    }

    /// The device computes every case (the ranking one for a ranking objective's margins).
    fn device_metric(&self) -> Option<DeviceMetric> {
        Some(DeviceMetric::Auc(self.curve()))
    }

    fn evaluate(&self, predictions: &[f32], info: &MetaInfo, outputs: usize) -> f64 {
        if info.labels.is_empty() || self.check(predictions.len(), info, outputs).is_err() {
            return f64::NAN;
        }
        if !info.group_ptr.is_empty() {
            self.ranking(predictions, info)
        } else if outputs > 1 {
            self.multi_class(predictions, info, outputs)
        } else {
            self.binary(predictions, info)
        }
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::super::from_name;
    use super::*;

    fn info(labels: &[f32], weights: &[f32], group_ptr: &[usize]) -> MetaInfo {
        MetaInfo {
            labels: labels.to_vec(),
            weights: weights.to_vec(),
            group_ptr: group_ptr.to_vec(),
            ..Default::default()
        }
    }

    fn auc(p: &[f32], y: &[f32], w: &[f32]) -> f64 {
        from_name("auc").unwrap().evaluate(p, &info(y, w, &[]), 1)
    }

    #[test]
    fn binary_roc_by_hand() {
        // Perfect, reversed, and the Mann-Whitney count with ties worth one half.
        assert_eq!(auc(&[0.9, 0.8, 0.2, 0.1], &[1.0, 1.0, 0.0, 0.0], &[]), 1.0);
        assert_eq!(auc(&[0.1, 0.2, 0.8, 0.9], &[1.0, 1.0, 0.0, 0.0], &[]), 0.0);
        // Positives 0.8, 0.5; negatives 0.5, 0.3, 0.9: pairs won 0.8>0.5, 0.8>0.3, 0.5~0.5 (half),
        // 0.5>0.3 => 3.5 of 6.
        let p = [0.8f32, 0.5, 0.5, 0.3, 0.9];
        let y = [1.0f32, 1.0, 0.0, 0.0, 0.0];
        assert!((auc(&p, &y, &[]) - 3.5 / 6.0).abs() < 1e-12);
        // All tied: 0.5.
        assert_eq!(auc(&[0.3, 0.3, 0.3], &[1.0, 0.0, 1.0], &[]), 0.5);
        // Weights count a row as that many copies.
        let w = [2.0f32, 1.0, 1.0, 1.0, 1.0];
        let copies = auc(&[0.8, 0.8, 0.5, 0.5, 0.3, 0.9], &[1.0, 1.0, 1.0, 0.0, 0.0, 0.0], &[]);
        assert!((auc(&p, &y, &w) - copies).abs() < 1e-12);
        // One class only: NaN.
        assert!(auc(&[0.3, 0.4], &[1.0, 1.0], &[]).is_nan());
        assert!(auc(&[], &[], &[]).is_nan());
    }

    #[test]
    fn binary_pr_by_hand() {
        let pr = |p: &[f32], y: &[f32]| from_name("aucpr").unwrap().evaluate(p, &info(y, &[], &[]), 1);
        // Perfect ranking: precision 1 at every recall.
        assert!((pr(&[0.9, 0.8, 0.2, 0.1], &[1.0, 1.0, 0.0, 0.0]) - 1.0).abs() < 1e-12);
        // Positive, negative, positive: recall 1/2 at precision 1, then from (1/2, 1/2) to (1, 2/3)
        // along the interpolation TP = 1 + t, FP = 1: ∫ of (1 + t) / (2 + t) dt / 2 over [0, 1]
        // = (1 - ln(3/2)) / 2.
        let want = 0.5 + (1.0 - (1.5f64).ln()) / 2.0;
        assert!((pr(&[0.9, 0.8, 0.7], &[1.0, 0.0, 1.0]) - want).abs() < 1e-12);
        assert!(pr(&[0.9, 0.8], &[0.0, 0.0]).is_nan());
    }

    #[test]
    fn ranking_auc_by_hand() {
        // Group 0 (labels 2, 1, 0; predictions 0.1, 0.3, 0.2): pairs (2,1) lost, (2,0) lost, (1,0)
        // won => 1/3. Group 1 (labels 1, 1, 0; predictions 0.5, 0.5, 0.1): (1,1) tie 1/2, (1,0) won
        // twice => 2.5/3. Group 2 has 2 documents: skipped.
        let y = [2.0f32, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0];
        let p = [0.1f32, 0.3, 0.2, 0.5, 0.5, 0.1, 0.2, 0.9];
        let i = info(&y, &[3.0, 0.5, 1.0], &[0, 3, 6, 8]);
        let v = from_name("auc").unwrap().evaluate(&p, &i, 1);
        assert!((v - (1.0 / 3.0 + 2.5 / 3.0) / 2.0).abs() < 1e-12);
        let only_small = info(&y[..4], &[], &[0, 2, 4]);
        assert!(from_name("auc").unwrap().evaluate(&p[..4], &only_small, 1).is_nan());
    }

    #[test]
    fn multi_class_one_vs_rest_by_hand() {
        // Class 0 perfectly separated (AUC 1, 2 positives), class 1 reversed (AUC 0, 1 positive),
        // class 2's positive (0.8) beats 2 of 3 negatives (AUC 2/3, 1 positive): the mean weighted by
        // prevalence is (2 + 0 + 2/3) / 4.
        let p = [
            0.9f32, 0.05, 0.05, //
            0.8, 0.1, 0.1, //
            0.1, 0.0, 0.9, //
            0.1, 0.1, 0.8,
        ];
        let y = [0.0f32, 0.0, 1.0, 2.0];
        let i = info(&y, &[], &[]);
        let roc = from_name("auc").unwrap().evaluate(&p, &i, 3);
        assert!((roc - (2.0 + 2.0 / 3.0) / 4.0).abs() < 1e-12, "{roc}");
        // A class without positives: NaN.
        let y2 = [0.0f32, 0.0, 2.0, 2.0];
        assert!(from_name("auc").unwrap().evaluate(&p, &info(&y2, &[], &[]), 3).is_nan());
    }

    #[test]
    fn known_answers_from_xgboost() {
        // `bst.eval` of xgboost 3.2.0 with these predictions as base_margin (eta 0), 20 rows, ties
        // included; with and without weights, as one dataset and as query groups of 6, 4, 10
        // (group weights 1, 2, 0.5).
        let y = [1.0f32, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0];
        let p = [0.3f32, 0.1, 0.7, 0.3, 0.3, 0.2, 0.9, 0.5, 0.1, 0.5, 0.6, 0.6, 0.2, 0.4, 0.8, 0.3, 0.1, 0.9, 0.5, 0.0];
        let w =
            [1.0f32, 2.0, 0.5, 1.0, 1.5, 1.0, 0.25, 2.0, 1.0, 1.0, 3.0, 0.5, 1.0, 1.0, 2.0, 0.75, 1.0, 1.0, 1.5, 1.0];
        let eval = |name: &str, w: &[f32], g: &[usize]| from_name(name).unwrap().evaluate(&p, &info(&y, w, g), 1);
        let groups = [0usize, 6, 10, 20];
        let gw = [1.0f32, 2.0, 0.5];
        let cases = [
            (eval("auc", &[], &[]), 0.7121212121212122),
            (eval("auc", &w, &[]), 0.6928312159709619),
            (eval("aucpr", &[], &[]), 0.689397126628359),
            (eval("aucpr", &w, &[]), 0.5874606623258132),
            (eval("auc", &[], &groups), 0.7425925925925926),
            (eval("auc", &gw, &groups), 0.7425925925925926),
            (eval("aucpr", &[], &groups), 0.7850369042011921),
        ];
        for (i, (got, want)) in cases.iter().enumerate() {
            assert!((got - want).abs() < 1e-6, "case {i}: {got} vs {want}");
        }
    }
}
