//! `reg:expectileerror`: XGBoost 3.4.1's expectile regression, one output per `expectile_alpha`
//! (ascending), the arithmetic `boost_kernels::expectile`'s. Predictions chain the outputs so
//! expectiles never cross; the base scores (the expectiles in prediction space) become margins
//! together (`Model::base_margins`), so `prob_to_margin` is the identity here.

use primitives::ops::GradientPair;
use rayon::prelude::*;

use super::scaled_residual::{check_alphas, format_alphas};
use super::{validate_rows, weight_of, weighted_label_mean, DeviceObjective, Objective, OutputTransform};
use crate::data::MetaInfo;
use crate::Result;
use boost_kernels::expectile::Expectiles;
use boost_kernels::metric::Transform;
use boost_kernels::residual::MAX_QUANTILES;

/// `reg:expectileerror` of `expectile_alpha`'s alphas.
#[derive(Clone, Debug)]
pub struct Expectile {
    alphas: Vec<f32>,
}

impl Expectile {
    /// Expectile regression of `alphas`: at least one, each in `[0, 1]`, ascending. The error names
    /// `expectile_alpha`.
    pub fn new(alphas: Vec<f32>) -> Result<Self> {
        check_alphas("expectile_alpha", "reg:expectileerror", &alphas)?;
        Ok(Self { alphas })
    }

    /// The alphas.
    pub fn alphas(&self) -> &[f32] {
        &self.alphas
    }

    /// The alphas as the kernels take them (at most `MAX_QUANTILES`).
    pub fn expectiles(&self) -> Option<Expectiles> {
        let mut alphas = [0.0; MAX_QUANTILES];
        alphas.get_mut(..self.alphas.len())?.copy_from_slice(&self.alphas);
        Some(Expectiles { outputs: self.alphas.len() as u32, alphas })
    }

}

impl Objective for Expectile {
    fn name(&self) -> &'static str {
        "reg:expectileerror"
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
        let k = self.alphas.len();
        out.par_chunks_mut(k).zip(margins.par_chunks(k)).enumerate().for_each(|(i, (pairs, row))| {
            let (label, weight) = (info.labels.get(i).copied().unwrap_or(0.0), weight_of(info, i));
            for (j, pair) in pairs.iter_mut().enumerate() {
                *pair = boost_kernels::expectile::gradient(k, |c| self.alphas[c], j, |c| row[c], label, weight);
            }
        });
    }
    fn device_objective(&self) -> Option<DeviceObjective> {
        self.expectiles().map(DeviceObjective::Expectile)
    }
    fn output_transform(&self) -> OutputTransform {
        OutputTransform::Expectiles
    }
    /// One alpha's prediction is its margin (the device's row-wise metrics take it).
    fn device_eval_transform(&self) -> Option<Transform> {
        (self.alphas.len() == 1).then_some(Transform::IDENTITY)
    }
    fn initial_base_score(&self, info: &MetaInfo) -> f32 {
        self.initial_base_scores(info)[0]
    }
    /// XGBoost's `InitEstimation`: the weighted label mean `μ`, plus each alpha's Newton step from
    /// it (`-ΣG / max(ΣH, 1e-6)` in `f64`), then each at least the one below.
    fn initial_base_scores(&self, info: &MetaInfo) -> Vec<f32> {
        let mean = weighted_label_mean(info);
        let mut out: Vec<f32> = self
            .alphas
            .iter()
            .map(|&a| {
                let (mut g, mut h) = (0.0f64, 0.0f64);
                for (i, &y) in info.labels.iter().enumerate() {
                    let (diff, w) = (mean - y, weight_of(info, i));
                    let side = if diff >= 0.0 { 1.0 - a } else { a };
                    g += (side * diff * w) as f64;
                    h += (side * w) as f64;
                }
                (-g / h.max(1e-6)) as f32 + mean
            })
            .collect();
        for k in 1..out.len() {
            out[k] = out[k].max(out[k - 1]);
        }
        out
    }
    fn default_metric(&self) -> &'static str {
        "expectile"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name(), "expectile_loss_param": {"expectile_alpha": format_alphas(&self.alphas)}})
    }
}

#[cfg(test)]
// Known answers keep the digits xgboost printed, beyond what an f32 holds.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::objective::from_name;

    /// From xgboost 3.4.1 (`learner_model_param.base_score`, and `predict(output_margin=True)`
    /// after a round of eta 0): the base scores of three expectiles, with and without weights,
    /// equal alphas too (the second kept at least the first), and their margins.
    #[test]
    fn base_scores_and_margins_match_xgboost_3_4() {
        let labels = [0.5f32, 2.0, 3.0, -1.0, 7.0];
        let weights = [1.0f32, 0.5, 1.0, 3.0, 1.0];
        type Case = ([f32; 3], bool, [f32; 3], [f32; 3]);
        let cases: [Case; 4] = [
            ([0.1, 0.5, 0.9], false, [0.81034493, 2.3, 4.3571424], [0.810344934, 1.234180212, 1.920383453]),
            ([0.1, 0.5, 0.9], true, [-0.2987013, 1.3076923, 3.641509], [-0.298701286, 1.382486343, 2.231865882]),
            ([0.2, 0.2, 0.95], false, [1.1428571, 1.1428571, 4.6707315], [1.142857074, -13.815509796, 3.498066425]),
            ([0.2, 0.2, 0.95], true, [0.05405402, 0.05405402, 4.0097084], [0.054054021, -13.815509796, 3.936321735]),
        ];
        let close = |a: f32, b: f32| (a - b).abs() <= 2e-6 * (1.0 + b.abs());
        for (alphas, weighted, base, margins) in cases {
            let info = MetaInfo {
                labels: labels.to_vec(),
                weights: if weighted { weights.to_vec() } else { Vec::new() },
                ..Default::default()
            };
            let objective = Expectile::new(alphas.to_vec()).unwrap();
            let got = objective.initial_base_scores(&info);
            assert!(got.iter().zip(base).all(|(&g, b)| close(g, b)), "{alphas:?} {weighted}: {got:?} vs {base:?}");
            let got = crate::model::base_margins("reg:expectileerror", &base, |b| b);
            assert!(got.iter().zip(margins).all(|(&g, m)| close(g, m)), "{alphas:?} {weighted}: {got:?} vs {margins:?}");
            // The chain of those margins gives the base scores back.
            let mut chained = [0f32; 3];
            boost_kernels::expectile::chain(3, |k| got[k], |k, p| chained[k] = p);
            assert!(chained.iter().zip(base).all(|(&c, b)| (c - b).abs() <= 1e-5 * (1.0 + b.abs())), "{chained:?}");
        }
    }

    #[test]
    fn expectile_alpha_is_checked() {
        let p = |v: &str| vec![("expectile_alpha".to_string(), v.to_string())];
        let err = |params: Vec<(String, String)>| from_name("reg:expectileerror", &params).err().unwrap().to_string();
        assert!(err(Vec::new()).contains("expectile_alpha"));
        assert!(err(p("[0.5, 0.1]")).contains("ascending"));
        assert!(err(p("1.5")).contains("outside [0, 1]"));
        let objective = from_name("reg:expectileerror", &p("[0.1, 0.5]")).unwrap();
        assert_eq!(
            objective.to_json(),
            serde_json::json!({"name": "reg:expectileerror", "expectile_loss_param": {"expectile_alpha": "[1E-1,5E-1]"}})
        );
        assert_eq!((objective.outputs(), objective.multi_target()), (2, true));
    }
}
