//! A model's ordered-target-statistics encoder (`categorical_encoding=ordered_target`): the number
//! each category of an encoded feature stands for in the trees, the statistic of all its training
//! rows ([`boost_kernels::target_statistics`]); a category training never saw takes the prior.
//! Prediction replaces an encoded feature's codes by these numbers before the trees see them.
//!
//! XGBoost has no such encoder, so a model with one is written with the booster name
//! [`BOOSTER_NAME`] beside `gbtree`'s layout: XGBoost refuses to load it ("Unknown gbm type")
//! rather than predict from raw codes. This crate reads both names.

use std::borrow::Cow;
use std::fmt::Write;

use boost_kernels::predict::MAX_CATEGORY;
use serde_json::{Map, Value};

use super::json::write_float;
use crate::data::FeatureMatrix;
use crate::{Error, Result};

/// `learner.gradient_booster.name` of a model with target statistics.
pub const BOOSTER_NAME: &str = "gbtree_target_statistics";

/// One encoded feature: its index and a value per category code.
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedFeature {
    /// The feature (column) the codes are in.
    pub feature: usize,
    /// The encoding of category `c` at `values[c]`.
    pub values: Vec<f32>,
}

/// The encoder: empty for a model without target statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetStatistics {
    /// The encoded features, by increasing feature index.
    pub features: Vec<EncodedFeature>,
    /// The encoding of a category without training rows (the labels' mean).
    pub prior: f32,
    /// The prior's weight in rows (`ordered_target_prior_weight`), kept for the record.
    pub prior_weight: f64,
    /// The seed of the permutation the training rows were encoded in.
    pub seed: u64,
}

impl TargetStatistics {
    /// Whether no feature is encoded.
    pub fn is_empty(&self) -> bool {
        self.features.is_empty()
    }

    /// The encoding of `code` in encoded feature `e`: `NaN` stays missing; a code training never saw
    /// takes the prior; a negative, fractional or too large code is an error naming the feature.
    fn encode(&self, e: &EncodedFeature, code: f32) -> Result<f32> {
        if code.is_nan() {
            return Ok(code);
        }
        if !(code >= 0.0 && code.fract() == 0.0 && code < MAX_CATEGORY as f32) {
            return Err(Error::InvalidData(format!(
                "feature {}: {code} is not a category code (an integer from 0 to {})",
                e.feature,
                MAX_CATEGORY - 1
            )));
        }
        Ok(e.values.get(code as usize).copied().unwrap_or(self.prior))
    }

    /// `features` with every encoded feature's codes replaced by their encodings (borrowed when
    /// nothing is encoded).
    pub fn apply<'a>(&self, features: &'a FeatureMatrix) -> Result<Cow<'a, FeatureMatrix>> {
        let encoded: Vec<Option<&EncodedFeature>> =
            (0..features.cols()).map(|f| self.features.iter().find(|e| e.feature == f)).collect();
        if encoded.iter().all(Option::is_none) {
            return Ok(Cow::Borrowed(features));
        }
        let mut out = features.clone();
        out.try_map_values(|f, v| {
            if let Some(e) = encoded[f] {
                *v = self.encode(e, *v)?;
            }
            Ok(())
        })?;
        Ok(Cow::Owned(out))
    }

    /// Checks the features against a model of `num_feature` features.
    pub(crate) fn validate(&self, num_feature: usize) -> Result<()> {
        let ordered = self.features.windows(2).all(|w| w[0].feature < w[1].feature);
        if !ordered || self.features.last().is_some_and(|e| e.feature >= num_feature) {
            return Err(Error::Model(format!(
                "the target statistics' features are not distinct, increasing and below {num_feature}"
            )));
        }
        Ok(())
    }

    /// The JSON object written beside the trees (`learner.gradient_booster.target_statistics`).
    pub(crate) fn write_json(&self, w: &mut String) {
        w.push_str("{\"features\":[");
        for (i, e) in self.features.iter().enumerate() {
            if i > 0 {
                w.push(',');
            }
            let _ = write!(w, "{{\"feature\":{},\"values\":[", e.feature);
            for (k, &v) in e.values.iter().enumerate() {
                if k > 0 {
                    w.push(',');
                }
                write_float(w, v);
            }
            w.push_str("]}");
        }
        w.push_str("],\"prior\":");
        write_float(w, self.prior);
        let _ = write!(w, ",\"prior_weight\":{:?},\"seed\":{}}}", self.prior_weight, self.seed);
    }

    /// The encoder read back from its JSON object (`path` names it in errors).
    pub(crate) fn from_json(v: &Value, path: &str) -> Result<Self> {
        let bad = |what: &str| Error::Model(format!("`{path}`: {what}"));
        let o: &Map<String, Value> = v.as_object().ok_or_else(|| bad("not an object"))?;
        let number = |key: &str| o.get(key).and_then(Value::as_f64).ok_or_else(|| bad(&format!("no number `{key}`")));
        let features = o
            .get("features")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no `features` array"))?
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let feature = e.get("feature").and_then(Value::as_u64);
                let values = e.get("values").and_then(Value::as_array);
                let (Some(feature), Some(values)) = (feature, values) else {
                    return Err(bad(&format!("`features[{i}]` has no `feature` index or `values` array")));
                };
                let values = values
                    .iter()
                    .map(|x| x.as_f64().map(|x| x as f32).filter(|x| x.is_finite()))
                    .collect::<Option<Vec<f32>>>()
                    .ok_or_else(|| bad(&format!("`features[{i}].values` holds a value that is not a finite number")))?;
                Ok(EncodedFeature { feature: feature as usize, values })
            })
            .collect::<Result<_>>()?;
        Ok(TargetStatistics {
            features,
            prior: number("prior")? as f32,
            prior_weight: number("prior_weight")?,
            seed: o.get("seed").and_then(Value::as_u64).ok_or_else(|| bad("no integer `seed`"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, DenseMatrix};

    fn encoder() -> TargetStatistics {
        TargetStatistics {
            features: vec![EncodedFeature { feature: 1, values: vec![0.25, 0.75] }],
            prior: 0.5,
            prior_weight: 1.0,
            seed: 3,
        }
    }

    #[test]
    fn codes_become_their_statistic_unseen_ones_the_prior() {
        let m = FeatureMatrix::Dense(DenseMatrix::new(3, 2, vec![7.0, 0.0, 7.0, 1.0, 7.0, 9.0]));
        let FeatureMatrix::Dense(out) = encoder().apply(&m).unwrap().into_owned() else { unreachable!() };
        assert_eq!(&out.values[..], [7.0, 0.25, 7.0, 0.75, 7.0, 0.5]);
        let csr = FeatureMatrix::Sparse(CsrMatrix {
            rows: 2,
            cols: 2,
            row_ptr: vec![0, 1, 2],
            col_indices: vec![1, 0],
            values: vec![1.0, 4.0],
        });
        let FeatureMatrix::Sparse(out) = encoder().apply(&csr).unwrap().into_owned() else { unreachable!() };
        assert_eq!(out.values, [0.75, 4.0]);
    }

    #[test]
    fn a_code_that_is_no_category_names_the_feature() {
        for code in [-1.0, 0.5, 2e7] {
            let m = FeatureMatrix::Dense(DenseMatrix::new(1, 2, vec![0.0, code]));
            let err = encoder().apply(&m).unwrap_err().to_string();
            assert!(err.contains("feature 1") && err.contains(&code.to_string()), "{err}");
        }
    }

    #[test]
    fn the_json_reads_back() {
        let mut w = String::new();
        encoder().write_json(&mut w);
        let v: Value = serde_json::from_str(&w).unwrap();
        assert_eq!(TargetStatistics::from_json(&v, "ts").unwrap(), encoder());
    }
}
