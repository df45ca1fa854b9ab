//! `multi:softmax` and `multi:softprob`: cross-entropy of the softmax of `K` margins per row.
//!
//! With `p = softmax(m)`, the gradient for class `k` is `(p_k - [y = k]) w` and the hessian XGBoost's
//! diagonal bound `max(2 p_k (1 - p_k) w, 1e-16)` (twice the true diagonal `p_k(1 - p_k)`, which
//! keeps the Newton steps of the `K` independent trees conservative).
//!
//! The softmax subtracts the row's largest margin before `expf`. XGBoost's gradient starts that
//! maximum at `FLT_MIN` (so an all-negative row is not shifted); we always subtract the true maximum,
//! which cannot underflow to `0/0` and differs from XGBoost by rounding only. The sum of the
//! exponentials is accumulated in `f64`, as XGBoost does.

use boost_kernels::objective::{softmax_gradient, softmax_normaliser, softmax_probability};
use primitives::ops::GradientPair;
use rayon::prelude::*;

use super::{validate_rows, weight_of, DeviceObjective, Objective, OutputTransform};
use crate::data::MetaInfo;
use crate::{Error, Result};

/// Rows per parallel task of the gradient loop.
const ROWS_PER_TASK: usize = 1 << 12;

/// Softmax probabilities of one row, written into `out` (XGBoost's `common::Softmax`; the device's
/// arithmetic, [`boost_kernels::objective::softmax_normaliser`]).
#[inline]
pub fn softmax_row(margins: &[f32], out: &mut [f32]) {
    let normaliser = softmax_normaliser(|c| margins[c], margins.len());
    for (o, &m) in out.iter_mut().zip(margins) {
        *o = softmax_probability(m, normaliser);
    }
}

/// `multi:softmax` (class ids out) or `multi:softprob` (probabilities out).
#[derive(Clone, Debug)]
pub struct Softmax {
    classes: usize,
    output_prob: bool,
}

impl Softmax {
    /// `classes >= 1` (`from_name` checks it).
    pub fn new(classes: usize, output_prob: bool) -> Self {
        Self { classes: classes.max(1), output_prob }
    }

    fn probabilities(&self, margins: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0f32; margins.len()];
        for (row, o) in margins.chunks(self.classes).zip(out.chunks_mut(self.classes)) {
            softmax_row(row, o);
        }
        out
    }
}

impl Objective for Softmax {
    fn name(&self) -> &'static str {
        if self.output_prob {
            "multi:softprob"
        } else {
            "multi:softmax"
        }
    }
    fn outputs(&self) -> usize {
        self.classes
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, self.classes)?;
        let k = self.classes as f32;
        if let Some(i) = info.labels.iter().position(|&y| !(y >= 0.0 && y < k && libm::floorf(y) == y)) {
            return Err(Error::InvalidData(format!(
                "row {i}: label {} is not a class id in [0, {})",
                info.labels[i], self.classes
            )));
        }
        Ok(())
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let k = self.classes;
        let rows = (margins.len().min(out.len())) / k;
        let (head, tail) = out.split_at_mut(rows * k);
        // Rows are independent: parallel blocks of rows give the same result on any schedule.
        head.par_chunks_mut(ROWS_PER_TASK * k).enumerate().for_each(|(b, block)| {
            let mut p = vec![0.0f32; k];
            for (j, row_out) in block.chunks_mut(k).enumerate() {
                let r = b * ROWS_PER_TASK + j;
                softmax_row(&margins[r * k..(r + 1) * k], &mut p);
                let label = info.labels.get(r).copied().unwrap_or(-1.0);
                let w = weight_of(info, r);
                for (c, (o, &pc)) in row_out.iter_mut().zip(&p).enumerate() {
                    *o = softmax_gradient(pc, label == c as f32, w);
                }
            }
        });
        tail.fill(GradientPair::new(0.0, 0.0));
    }
    /// Class ids (as `f32`, the first of equal maxima) for `multi:softmax`, probabilities for
    /// `multi:softprob`.
    fn output_transform(&self) -> OutputTransform {
        if self.output_prob {
            OutputTransform::Softmax
        } else {
            OutputTransform::ArgMax
        }
    }
    fn eval_transform(&self, margins: &[f32]) -> Vec<f32> {
        self.probabilities(margins)
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::Softmax { classes: self.classes })
    }
    /// XGBoost before 3.1 used the constant 0.5 for every class; 3.2 estimates one value per
    /// class, see [`Objective::initial_base_scores`].
    fn initial_base_score(&self, _info: &MetaInfo) -> f32 {
        0.5
    }
    /// `log(f_k + 1e-6) - mean_j log(f_j + 1e-6)` with `f_k` the weighted frequency of
    /// class `k` (margins: `prob_to_margin` is the identity). All zeros without weight.
    fn initial_base_scores(&self, info: &MetaInfo) -> Vec<f32> {
        let k = self.classes;
        let mut counts = vec![0.0f64; k];
        let mut total = 0.0f64;
        for (i, &y) in info.labels.iter().enumerate() {
            let w = weight_of(info, i) as f64;
            if y >= 0.0 && (y as usize) < k {
                counts[y as usize] += w;
            }
            total += w;
        }
        if total <= 0.0 {
            return vec![0.0; k];
        }
        let logs: Vec<f32> = counts.iter().map(|&c| libm::logf((c / total) as f32 + 1e-6)).collect();
        let mean = (logs.iter().map(|&l| l as f64).sum::<f64>() / k as f64) as f32;
        logs.iter().map(|&l| l - mean).collect()
    }
    fn default_metric(&self) -> &'static str {
        "mlogloss"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "softmax_multiclass_param": {"num_class": self.classes.to_string()}})
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::objective::from_name;
    use rand::{Rng, SeedableRng};

    fn info(labels: &[f32], weights: &[f32]) -> MetaInfo {
        MetaInfo { labels: labels.to_vec(), weights: weights.to_vec(), ..Default::default() }
    }

    fn softprob(k: usize) -> Box<dyn Objective> {
        from_name("multi:softprob", &[("num_class".into(), k.to_string())]).unwrap()
    }

    fn grads(o: &dyn Objective, margins: &[f32], info: &MetaInfo) -> Vec<GradientPair<f32>> {
        let mut out = vec![GradientPair::new(0.0, 0.0); margins.len()];
        o.gradients(margins, info, 0, &mut out);
        out
    }

    #[test]
    fn gradients_match_finite_differences_and_hessian_is_twice_the_diagonal() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let k = 4;
        let rows = 6;
        let margins: Vec<f32> = (0..rows * k).map(|_| rng.gen_range(-3.0f32..3.0)).collect();
        let labels: Vec<f32> = (0..rows).map(|r| (r % k) as f32).collect();
        let weights: Vec<f32> = (0..rows).map(|_| rng.gen_range(0.2f32..2.0)).collect();
        let g = grads(&*softprob(k), &margins, &info(&labels, &weights));
        let loss = |m: &[f64], y: usize| {
            let mx = m.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = m.iter().map(|v| (v - mx).exp()).sum();
            -(m[y] - mx - s.ln())
        };
        let eps = 1e-4;
        for r in 0..rows {
            let row: Vec<f64> = margins[r * k..(r + 1) * k].iter().map(|&v| v as f64).collect();
            for c in 0..k {
                let mut plus = row.clone();
                plus[c] += eps;
                let mut minus = row.clone();
                minus[c] -= eps;
                let y = labels[r] as usize;
                let w = weights[r] as f64;
                let d1 = (loss(&plus, y) - loss(&minus, y)) / (2.0 * eps) * w;
                let d2 = (loss(&plus, y) - 2.0 * loss(&row, y) + loss(&minus, y)) / (eps * eps) * w;
                let gi = g[r * k + c];
                assert!((gi.grad as f64 - d1).abs() < 1e-3 * (1.0 + d1.abs()), "row {r} class {c}");
                assert!((gi.hess as f64 - 2.0 * d2).abs() < 2e-3 * (1.0 + d2.abs()), "row {r} class {c}");
            }
        }
    }

    #[test]
    fn gradients_match_xgboost() {
        // xgboost 3.2.0, margins as base_margin, one-row-per-leaf exact trees (lambda 0, eta 1):
        // per class tree, G = -leaf * cover, H = cover.
        let m = [0.1f32, -0.3, 0.7, 1.2, 0.0, -1.0, 2.0, -2.0, 0.5];
        let y = [0.0f32, 1.0, 1.0];
        let g = grads(&*softprob(3), &m, &info(&y, &[]));
        let want = [
            (-0.71366715, 0.40869275),
            (0.19193465, 0.31019151),
            (0.52173250, 0.49905539),
            (0.70821666, 0.41329163),
            (-0.78668930, 0.33561853),
            (0.07847264, 0.14462937),
            (0.80551244, 0.31332430),
            (-0.98524649, 0.02907162),
            (0.17973412, 0.29485956),
        ];
        for (i, &(wg, wh)) in want.iter().enumerate() {
            assert!((g[i].grad - wg).abs() < 2e-6 && (g[i].hess - wh).abs() < 2e-6, "{i}: {:?}", g[i]);
        }
    }

    #[test]
    fn parallel_blocks_cover_every_row() {
        let rows = 2 * ROWS_PER_TASK + 7;
        let margins: Vec<f32> = (0..rows * 3).map(|i| (i % 5) as f32 * 0.25).collect();
        let labels: Vec<f32> = (0..rows).map(|r| (r % 3) as f32).collect();
        let g = grads(&*softprob(3), &margins, &info(&labels, &[]));
        let mut p = [0.0f32; 3];
        for r in [0, ROWS_PER_TASK - 1, ROWS_PER_TASK, rows - 1] {
            softmax_row(&margins[r * 3..r * 3 + 3], &mut p);
            for c in 0..3 {
                let want = if c == r % 3 { p[c] - 1.0 } else { p[c] };
                assert_eq!(g[r * 3 + c].grad, want, "row {r} class {c}");
            }
        }
    }

    #[test]
    fn stable_for_extreme_margins() {
        let g = grads(&*softprob(3), &[-200.0, -300.0, -250.0, 1e30, 0.0, 0.0], &info(&[0.0, 1.0], &[]));
        assert!(g.iter().all(|p| p.grad.is_finite() && p.hess.is_finite()));
        assert_eq!(g[0].grad, 0.0);
        assert_eq!(g[1].hess, 1e-16);
        assert_eq!(g[3].grad, 1.0);
    }

    #[test]
    fn transforms() {
        let m = [1.0f32, 3.0, 3.0, -1.0, -2.0, -3.0];
        let softmax = from_name("multi:softmax", &[("num_class".into(), "3".into())]).unwrap();
        assert_eq!(softmax.transform(&m), vec![1.0, 0.0]);
        let p = softmax.eval_transform(&m);
        assert_eq!(p, softprob(3).transform(&m));
        assert!((p[0..3].iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((p[1] - p[2]).abs() == 0.0 && p[1] > p[0]);
        assert!(p[3] > p[4] && p[4] > p[5]);
        assert_eq!(softmax.outputs(), 3);
    }

    #[test]
    fn base_scores_match_xgboost() {
        // xgboost 3.2.0 learner_model_param.base_score: frequencies 5/13, 1/13, 7/13 give
        // [4.2431873E-1,-1.1851089E0,7.607902E-1]; all labels 0 give [9.210341,-4.6051702,-4.6051702].
        let mut y = vec![0.0f32; 5];
        y.extend([1.0]);
        y.extend([2.0; 7]);
        let got = softprob(3).initial_base_scores(&info(&y, &[]));
        for (g, w) in got.iter().zip([0.42431873f32, -1.1851089, 0.7607902]) {
            assert!((g - w).abs() < 2e-6, "{got:?}");
        }
        let got = softprob(3).initial_base_scores(&info(&[0.0; 6], &[]));
        for (g, w) in got.iter().zip([9.210341f32, -4.6051702, -4.6051702]) {
            assert!((g - w).abs() < 2e-5, "{got:?}");
        }
        let weighted = softprob(2).initial_base_scores(&info(&[0.0, 1.0], &[3.0, 1.0]));
        assert!((weighted[0] - 0.5 * libm::logf(3.0)).abs() < 1e-5);
        assert_eq!(softprob(3).initial_base_score(&info(&y, &[])), 0.5);
        assert_eq!(softprob(2).initial_base_scores(&info(&[], &[])), vec![0.0, 0.0]);
    }

    #[test]
    fn validation_names_the_row() {
        for (labels, row) in [(vec![0.0f32, 3.0], 1), (vec![-1.0], 0), (vec![0.0, 1.0, 1.5], 2), (vec![f32::NAN], 0)] {
            match softprob(3).validate(&info(&labels, &[])) {
                Err(Error::InvalidData(m)) => assert!(m.starts_with(&format!("row {row}:")), "{m}"),
                other => panic!("{labels:?}: {other:?}"),
            }
        }
        assert!(softprob(3).validate(&info(&[0.0, 1.0, 2.0], &[1.0, 0.0, 2.0])).is_ok());
        let bad_margin = MetaInfo { labels: vec![1.0], base_margin: vec![0.0], ..Default::default() };
        assert!(softprob(3).validate(&bad_margin).is_err());
    }
}
