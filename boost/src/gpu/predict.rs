//! Prediction on the device: [`DeviceModel`] lays a model's trees out for the prediction kernels
//! once (`boost_kernels::predict`, the CPU predictor's step), and each call uploads the rows, walks
//! every tree of the iteration range a thread a row, adding the leaf values tree after tree in `f32`
//! as the CPU predictor adds them, and reads the margins back: [`Model::predict_margin`]'s values,
//! bit for bit, for any model the CPU predictor takes (ours, and XGBoost's JSON).

use primitives::Gpu;

use super::eval::{DeviceFeatures, DeviceTrees};
use super::metrics::InitialMargins;
use crate::data::FeatureMatrix;
use crate::model::{check_features, Model};
use crate::{Error, Result};

/// A model on the device: every tree, uploaded once, with what a prediction call needs.
pub struct DeviceModel {
    trees: DeviceTrees,
    /// Each round's first tree: `rounds + 1` offsets (the model's `iteration_indptr`).
    iteration_indptr: Vec<usize>,
    outputs: usize,
    num_feature: usize,
    base_score: Vec<f32>,
}

impl DeviceModel {
    /// Uploads `model`'s trees, after the checks of [`Model::validate`] (children in range, no
    /// cycles), so that every walk on the device stays within its tree.
    pub fn upload(gpu: &Gpu, model: &Model) -> Result<Self> {
        model.validate()?;
        let trees: Vec<_> = model.trees.iter().cloned().zip(model.tree_info.iter().copied()).collect();
        Ok(DeviceModel {
            trees: DeviceTrees::upload(gpu, &trees)?,
            iteration_indptr: model.iteration_indptr.clone(),
            outputs: model.num_outputs(),
            num_feature: model.num_feature,
            base_score: model.base_score.clone(),
        })
    }

    /// [`Model::predict_margin`] on the device: raw margins, `rows * outputs` row-major, each row
    /// from `base_margin` (when given) or the base score through `prob_to_margin`, plus the leaf
    /// values of the trees of `iteration_range` (`(0, 0)`: all).
    pub fn predict_margin(
        &self,
        gpu: &Gpu,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
    ) -> Result<Vec<f32>> {
        check_features(features, self.num_feature)?;
        let rounds = self.iteration_indptr.len() - 1;
        let (begin, end) = match iteration_range {
            (b, 0) => (b, rounds),
            r => r,
        };
        if end > rounds || begin > end {
            return Err(Error::param(
                "iteration_range",
                format!("({}, {}) for a model of {rounds} rounds", iteration_range.0, iteration_range.1),
            ));
        }
        let (rows, outputs) = (features.rows(), self.outputs);
        if rows == 0 {
            return Ok(Vec::new());
        }
        let base: Vec<f32> = self.base_score.iter().take(outputs).map(|&b| prob_to_margin(b)).collect();
        let initial = match base_margin {
            Some(margins) => InitialMargins::Rows(margins),
            None => InitialMargins::Base(&base),
        };
        let margins = initial.to_device(gpu, rows, outputs)?;
        let device_features = DeviceFeatures::upload(gpu, features)?;
        let trees = self.iteration_indptr[begin]..self.iteration_indptr[end];
        device_features.add_trees(gpu, rows, &self.trees, trees, &margins, outputs)?;
        Ok(margins.to_vec(gpu)?)
    }
}
