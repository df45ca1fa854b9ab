//! `reg:absoluteerror` and `reg:quantileerror` as XGBoost 3.4 computes them: a smooth surrogate of
//! the loss whose scale `S_j = (Σ w √|m_j - y| / Σ w)²` is set again each round from every row's
//! residual (formulas and the device's kernels in `boost_kernels::residual`). Every row's pair
//! depends on that sum, so these are not element-wise objectives: the CPU sums the terms in the
//! fixed order of `boost_kernels::reduce`, the device sums them by block and the host adds the
//! blocks in the same order, so both have the same scale bits.
//!
//! Quantiles are one output per `quantile_alpha` (XGBoost's `num_target`), their predictions sorted
//! in each row so they never cross; `base_score` is each alpha's quantile of the labels.

use primitives::ops::GradientPair;
use rayon::prelude::*;

use super::{newton_step, validate_rows, weight_of, weighted_label_mean, weighted_quantile, DeviceObjective, Objective, OutputTransform};
use crate::data::MetaInfo;
use crate::metric::fixed_order_sum;
use crate::model::write_float;
use crate::{Error, Result};
use boost_kernels::metric::Transform;
use boost_kernels::residual::{self, ScaledResidual, MAX_QUANTILES};

/// Each output's scale over the rows of `margins` (`outputs` a row), as the device sums it.
fn scales(margins: &[f32], info: &MetaInfo, outputs: usize) -> Vec<f32> {
    let n = info.labels.len().min(margins.len() / outputs.max(1));
    (0..outputs)
        .map(|j| {
            let sums = fixed_order_sum(n, |i| {
                residual::root_residual_term(margins[i * outputs + j], info.labels[i], weight_of(info, i))
            });
            residual::scale(sums)
        })
        .collect()
}

/// Every row's pairs (row-major, `outputs` a row) at this round's scales: `pair(j, m, y, w, S_j)`,
/// the kernels' arithmetic.
fn scaled_gradients(
    outputs: usize,
    margins: &[f32],
    info: &MetaInfo,
    out: &mut [GradientPair<f32>],
    pair: impl Fn(usize, f32, f32, f32, f32) -> GradientPair<f32> + Sync,
) {
    let scales = scales(margins, info, outputs);
    let rows = info.labels.len().min(margins.len() / outputs).min(out.len() / outputs);
    let (head, tail) = out.split_at_mut(rows * outputs);
    head.par_chunks_mut(outputs).enumerate().for_each(|(i, row)| {
        let (label, weight) = (info.labels[i], weight_of(info, i));
        for (j, p) in row.iter_mut().enumerate() {
            *p = pair(j, margins[i * outputs + j], label, weight, scales[j]);
        }
    });
    tail.fill(GradientPair::new(0.0, 0.0));
}

/// `reg:absoluteerror`: XGBoost 3.4's smooth majorisation of `|m - y|` (no leaf refresh).
#[derive(Clone, Debug)]
pub struct AbsoluteError;

const ABSOLUTE_ERROR: ScaledResidual =
    ScaledResidual { kind: ScaledResidual::ABSOLUTE_ERROR, outputs: 1, alphas: [0.0; MAX_QUANTILES] };

impl Objective for AbsoluteError {
    fn name(&self) -> &'static str {
        "reg:absoluteerror"
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, 1)
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        scaled_gradients(1, margins, info, out, |_, m, y, w, s| residual::absolute_error_gradient(m, y, w, s));
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        Some(DeviceObjective::ScaledResidual(ABSOLUTE_ERROR))
    }
    fn device_eval_transform(&self) -> Option<Transform> {
        Some(Transform::IDENTITY)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Identity
    }
    /// XGBoost 3.4's: the weighted label mean plus a Newton step from it (0 when the weights sum to
    /// nothing).
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        let total: f64 = (0..info.labels.len()).map(|i| weight_of(info, i) as f64).sum();
        if total.abs() < 1e-6 {
            return 0.0;
        }
        let mean = weighted_label_mean(info);
        mean + newton_step(self, info, mean)
    }
    fn default_metric(&self) -> &'static str {
        "mae"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name()})
    }
}

/// `reg:quantileerror`: one output per `quantile_alpha`, the smoothed pinball loss of each.
#[derive(Clone, Debug)]
pub struct Quantile {
    alphas: Vec<f32>,
}

impl Quantile {
    /// Quantile regression of `alphas` (XGBoost's `quantile_alpha`): each in `[0, 1]`, ascending.
    /// The error names the parameter.
    pub fn new(alphas: Vec<f32>) -> Result<Self> {
        check_alphas("quantile_alpha", "reg:quantileerror", &alphas)?;
        Ok(Self { alphas })
    }

    /// The alphas.
    pub fn alphas(&self) -> &[f32] {
        &self.alphas
    }
}

impl Objective for Quantile {
    fn name(&self) -> &'static str {
        "reg:quantileerror"
    }
    fn outputs(&self) -> usize {
        self.alphas.len()
    }
    fn multi_target(&self) -> bool {
        true
    }
    fn validate(&self, info: &MetaInfo) -> Result<()> {
        validate_rows(info, self.alphas.len())
    }
    fn gradients(&self, margins: &[f32], info: &MetaInfo, _iteration: usize, out: &mut [GradientPair<f32>]) {
        let alphas = &self.alphas;
        scaled_gradients(alphas.len(), margins, info, out, |j, m, y, w, s| {
            residual::quantile_gradient(m, y, w, s, alphas[j])
        });
    }
    /// The alphas as a kernel argument: at most [`MAX_QUANTILES`] of them (more take the host's
    /// gradients, the trees still on the device).
    fn device_objective(&self) -> Option<DeviceObjective> {
        if self.alphas.len() > MAX_QUANTILES {
            return None;
        }
        let mut alphas = [0.0; MAX_QUANTILES];
        alphas[..self.alphas.len()].copy_from_slice(&self.alphas);
        let outputs = self.alphas.len() as u32;
        Some(DeviceObjective::ScaledResidual(ScaledResidual { kind: ScaledResidual::QUANTILE, outputs, alphas }))
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Sorted
    }
    /// One alpha's predictions are its margins (the device's row-wise metrics take them); several
    /// are sorted in each row, which the host does.
    fn device_eval_transform(&self) -> Option<Transform> {
        (self.alphas.len() == 1).then_some(Transform::IDENTITY)
    }
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        self.initial_base_scores(info)[0]
    }
    /// Each alpha's quantile of the labels (weighted when the data has weights), XGBoost's
    /// `common::Quantile`/`WeightedQuantile`; 0 for no rows.
    fn initial_base_scores(&self, info: &MetaInfo) -> Vec<f32> {
        let weights = (!info.weights.is_empty()).then_some(info.weights.as_slice());
        let quantile = |&a: &f32| weighted_quantile(a as f64, &info.labels, weights);
        self.alphas.iter().map(quantile).map(|q| if q.is_nan() { 0.0 } else { q }).collect()
    }
    fn default_metric(&self) -> &'static str {
        "quantile"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "quantile_loss_param": {"quantile_alpha": format_alphas(&self.alphas)}})
    }
}

/// Checks `objective`'s alphas (parameter `param`): at least one, each in `[0, 1]`, ascending.
pub(super) fn check_alphas(param: &str, objective: &str, alphas: &[f32]) -> Result<()> {
    if alphas.is_empty() {
        return Err(Error::param(param, format!("{objective} needs at least one alpha")));
    }
    if let Some(a) = alphas.iter().find(|a| !(0.0..=1.0).contains(*a)) {
        return Err(Error::param(param, format!("{a} is outside [0, 1]")));
    }
    if alphas.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::param(param, format!("{alphas:?} is not in ascending order")));
    }
    Ok(())
}

/// Alphas as XGBoost writes a `ParamArray`: `[1E-1,5E-1,9E-1]`.
pub(super) fn format_alphas(alphas: &[f32]) -> String {
    let mut text = String::from("[");
    for (i, &a) in alphas.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        write_float(&mut text, a);
    }
    text.push(']');
    text
}

/// A `quantile_alpha` value as XGBoost's `ParamArray` reads it: one number (`0.5`) or a list
/// (`[0.1, 0.5]`, `[1E-1,5E-1]`, Python's `(0.1, 0.5)`). The error names `name`.
pub(crate) fn parse_alphas(name: &str, text: &str) -> Result<Vec<f32>> {
    let inner = text.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    inner
        .split([',', ' '])
        .filter(|t| !t.trim().is_empty())
        .map(|t| match t.trim().parse::<f32>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(Error::param(name, format!("`{t}` in `{text}` is not a number"))),
        })
        .collect()
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::objective::from_name;

    fn info(labels: &[f32], weights: &[f32]) -> MetaInfo {
        MetaInfo { labels: labels.to_vec(), weights: weights.to_vec(), ..Default::default() }
    }

    fn obj(name: &str, params: &[(&str, &str)]) -> Box<dyn Objective> {
        let p: Vec<(String, String)> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        from_name(name, &p).unwrap()
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 2e-6 * (1.0 + b.abs())
    }

    #[test]
    fn gradients_match_xgboost_3_4() {
        // From xgboost 3.4.1: the margins as base margins (every output), one exact tree an output
        // with a row a leaf (lambda 0, eta 1, min_child_weight 0): G = -leaf * cover, H = cover.
        let margins = [0.3f32, -1.2, 2.5, -0.7, 1.1];
        let labels = [0.5f32, 2.0, 3.0, -1.0, 7.0];
        let weights = [1.0f32, 0.5, 1.0, 3.0, 1.0];
        let data = info(&labels, &weights);
        let check = |o: &dyn Objective, want: &[[(f32, f32); 5]]| {
            let outputs = want.len();
            let m: Vec<f32> = margins.iter().flat_map(|&m| std::iter::repeat_n(m, outputs)).collect();
            let mut g = vec![GradientPair::new(0.0, 0.0); m.len()];
            o.gradients(&m, &data, 0, &mut g);
            for (j, column) in want.iter().enumerate() {
                for (i, &(wg, wh)) in column.iter().enumerate() {
                    let p = g[i * outputs + j];
                    assert!(close(p.grad, wg) && close(p.hess, wh), "{} output {j} row {i}: {p:?}", o.name());
                }
            }
        };
        let absolute = [[
            (-0.19509932, 0.97549665),
            (-0.42727667, 0.13352396),
            (-0.43553591, 0.87107182),
            (0.85253328, 2.8417776),
            (-0.8769083, 0.14862853),
        ]];
        check(&*obj("reg:absoluteerror", &[]), &absolute);
        let quantiles = [
            [(-0.17734024, 2.2168376), (-0.088675742, 0.06927792), (-0.1773515, 0.88675737), (2.1282177, 4.4337864), (-0.17735149, 0.075148933)],
            [(-0.62071896, 2.2168376), (-0.31036511, 0.06927792), (-0.62073022, 0.88675737), (0.79808152, 4.4337864), (-0.62073016, 0.075148933)],
        ];
        check(&*obj("reg:quantileerror", &[("quantile_alpha", "[0.2, 0.7]")]), &quantiles);
    }

    #[test]
    fn base_scores_match_xgboost_3_4() {
        let yr = [
            0.0665008, 1.4710113, 2.5190392, -2.2975748, 1.5087762, 3.4492939, 0.4049463, -0.6216292, 2.5044878,
            1.5068930, 2.7917662, 0.3095686, -1.9636365,
        ];
        let w = [
            1.6047283, 0.3826478, 0.1631052, 1.7104540, 1.7225670, 1.7530742, 0.9438195, 0.5480968, 0.0141837,
            1.2914418, 1.4398187, 1.6711384, 0.5637556,
        ];
        let absolute = obj("reg:absoluteerror", &[]);
        assert!(close(absolute.initial_base_score(&info(&yr, &[])), 0.9858803));
        assert!(close(absolute.initial_base_score(&info(&yr, &w)), 0.8573773));
        assert_eq!(absolute.initial_base_score(&info(&[], &[])), 0.0);
        let quantiles = obj("reg:quantileerror", &[("quantile_alpha", "[0.1,0.5,0.9]")]);
        let all = |b: Vec<f32>, want: [f32; 3]| b.iter().zip(want).all(|(&a, b)| close(a, b));
        assert!(all(quantiles.initial_base_scores(&info(&yr, &[])), [-2.1639996, 1.4710113, 3.1862826]));
        assert!(all(quantiles.initial_base_scores(&info(&yr, &w)), [-2.2975748, 0.4049463, 3.4492939]));
    }

    #[test]
    fn alphas_parse_print_and_check_as_xgboost() {
        let o = obj("reg:quantileerror", &[("quantile_alpha", "(0.1, 0.5, 0.9)")]);
        assert_eq!(o.outputs(), 3);
        let json = o.to_json();
        assert_eq!(json["quantile_loss_param"]["quantile_alpha"], "[1E-1,5E-1,9E-1]");
        assert_eq!(crate::objective::from_json(&json).unwrap().to_json(), json);
        assert_eq!(obj("reg:quantileerror", &[("quantile_alpha", "0.3")]).outputs(), 1);
        let err = |p: &[(&str, &str)]| match from_name("reg:quantileerror", &p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>()) {
            Err(Error::InvalidParameter { name, .. }) => name,
            other => panic!("{p:?}: {:?}", other.map(|o| o.name())),
        };
        assert_eq!(err(&[]), "quantile_alpha");
        assert_eq!(err(&[("quantile_alpha", "[0.5, 0.1]")]), "quantile_alpha");
        assert_eq!(err(&[("quantile_alpha", "[1.5]")]), "quantile_alpha");
        assert_eq!(err(&[("quantile_alpha", "[]")]), "quantile_alpha");
        assert_eq!(err(&[("quantile_alpha", "[0.1, x]")]), "quantile_alpha");
        // Predictions: each row sorted, so the quantiles never cross.
        assert_eq!(o.transform(&[3.0, 1.0, 2.0, 0.0, 0.5, -1.0]), vec![1.0, 2.0, 3.0, -1.0, 0.0, 0.5]);
    }
}
