//! Prediction on the device: [`DeviceModel`] lays a model's trees out for the prediction kernels
//! once (`boost_kernels::predict`, the CPU predictor's step), and each call uploads the rows, walks
//! every tree of the iteration range a thread a row, adding the leaf values tree after tree in `f32`
//! as the CPU predictor adds them (or writing the leaves' indices), and reads the result back:
//! [`Model::predict_margin`]'s and [`Model::predict_leaf`]'s values, bit for bit, for any model
//! the CPU predictor takes (ours, and XGBoost's JSON).

use std::ops::Range;

use primitives::{DeviceBuffer, Gpu};

use super::csr::{check_dense_finite, check_on};
use super::element_config;
use super::eval::{walk_trees, DeviceFeatures, DeviceTrees, FeatureView, PredictLaunch, Walks};
use super::metrics::InitialMargins;
use super::DeviceCsr;
use boost_kernels::entry;

use crate::data::{CsrMatrix, DenseMatrix, FeatureMatrix};
use crate::model::{check_features, trees_of_rounds, Model};
use crate::{Error, Result};
pub use boost_kernels::predict::OutputTransform;

/// The predictions of `rows` rows from their margins (`rows * outputs` on `gpu`, row-major) by
/// `transform`, in a new device buffer (`rows * transform.values_per_row(outputs)`): the host's
/// `Objective::transform` bit for bit (one source, `boost_kernels::predict::OutputTransform`).
pub fn transform_on_device(
    gpu: &Gpu,
    margins: &DeviceBuffer<f32>,
    rows: usize,
    outputs: usize,
    transform: OutputTransform,
) -> Result<DeviceBuffer<f32>> {
    check_on(gpu, margins, "the margins")?;
    if rows.checked_mul(outputs) != Some(margins.len()) {
        return Err(Error::InvalidData(format!("{} margins for {rows} rows of {outputs} outputs", margins.len())));
    }
    let out = gpu.alloc_uninitialized::<f32>(rows * transform.values_per_row(outputs))?;
    if rows == 0 {
        return Ok(out);
    }
    let args = entry::boost_predict_transform::args(
        margins.as_ptr(),
        out.as_mut_ptr(),
        rows as u64,
        outputs as u64,
        u64::from(transform.code()),
    );
    // SAFETY: `rows * outputs` margins and `rows * values_per_row(outputs)` values, a valid code.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(rows)?, args)? };
    Ok(out)
}

/// Rows already in device memory, as the caller filled them.
#[derive(Clone, Copy)]
pub enum DeviceData<'a> {
    /// `rows x cols` dense row-major `f32` (NaN: missing; no infinities).
    Dense {
        /// `rows * cols` values.
        values: &'a DeviceBuffer<f32>,
        /// Rows.
        rows: usize,
        /// Columns (features).
        cols: usize,
    },
    /// CSR rows, checked when made.
    Csr(&'a DeviceCsr),
}

impl DeviceData<'_> {
    /// Rows.
    pub fn rows(&self) -> usize {
        match self {
            DeviceData::Dense { rows, .. } => *rows,
            DeviceData::Csr(csr) => csr.rows(),
        }
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        match self {
            DeviceData::Dense { cols, .. } => *cols,
            DeviceData::Csr(csr) => csr.cols(),
        }
    }

    /// A host copy, for the steps that run on the CPU (training with `device=cpu`).
    pub fn to_host(&self, gpu: &Gpu) -> Result<FeatureMatrix> {
        self.check(gpu)?;
        Ok(match *self {
            DeviceData::Dense { values, rows, cols } => {
                FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.to_vec(gpu)?))
            }
            DeviceData::Csr(csr) => FeatureMatrix::Sparse(CsrMatrix {
                rows: csr.rows(),
                cols: csr.cols(),
                row_ptr: csr.row_ptr.to_vec(gpu)?.into_iter().map(|p| p as usize).collect(),
                col_indices: csr.col_indices.to_vec(gpu)?,
                values: csr.values.to_vec(gpu)?,
            }),
        })
    }

    /// Refuses a dense shape the buffer does not hold, infinite values, and rows of another GPU.
    pub(crate) fn check(&self, gpu: &Gpu) -> Result<()> {
        self.view(gpu).map(|_| ())
    }

    /// The rows and the kernels' view of them, the dense shape and values checked (CSR rows were
    /// when made).
    pub(super) fn view(&self, gpu: &Gpu) -> Result<(usize, FeatureView)> {
        match *self {
            DeviceData::Dense { values, rows, cols } => {
                if rows.checked_mul(cols) != Some(values.len()) {
                    return Err(Error::InvalidData(format!(
                        "{} device values for {rows} rows of {cols}",
                        values.len()
                    )));
                }
                check_dense_finite(gpu, values, (rows, cols))?;
                Ok((rows, FeatureView::Dense { values: values.device_ptr(), cols }))
            }
            DeviceData::Csr(csr) => {
                csr.check_on(gpu)?;
                let view = FeatureView::Csr {
                    row_ptr: csr.row_ptr.device_ptr(),
                    col_indices: csr.col_indices.device_ptr(),
                    values: csr.values.device_ptr(),
                };
                Ok((csr.rows(), view))
            }
        }
    }
}

/// A model on the device: every tree, uploaded once, with what a prediction call needs.
pub struct DeviceModel {
    trees: DeviceTrees,
    /// Each round's first tree: `rounds + 1` offsets (the model's `iteration_indptr`).
    iteration_indptr: Vec<usize>,
    outputs: usize,
    num_feature: usize,
    base_score: Vec<f32>,
    objective_name: String,
    launch: Option<PredictLaunch>,
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
            objective_name: model.objective_name.clone(),
            launch: None,
        })
    }

    /// Whether this model's trees lie in the memory of `gpu`.
    pub fn is_on(&self, gpu: &Gpu) -> bool {
        self.trees.is_on(gpu)
    }

    /// Fixes the shape of the launches (`None`: by the batch's row count, the default).
    /// For the benchmark that chose the threshold between them, and for tests.
    #[doc(hidden)]
    pub fn set_launch(&mut self, launch: Option<PredictLaunch>) {
        self.launch = launch;
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
        let margins = self.predict_margin_uploaded(gpu, features, base_margin, prob_to_margin, iteration_range)?;
        Ok(margins.to_vec(gpu)?)
    }

    /// [`DeviceModel::predict_margin`] with the margins left on the device.
    pub fn predict_margin_uploaded(
        &self,
        gpu: &Gpu,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
    ) -> Result<DeviceBuffer<f32>> {
        check_features(features, self.num_feature)?;
        let trees = self.tree_range(iteration_range)?;
        let (rows, outputs) = (features.rows(), self.outputs);
        let margins = self.initial_margins(gpu, rows, base_margin, prob_to_margin)?;
        if rows == 0 {
            return Ok(margins);
        }
        let device_features = DeviceFeatures::upload(gpu, features)?;
        let walks = Walks::Margins { margins: &margins, outputs };
        device_features.walk_trees(gpu, rows, &self.trees, trees, walks, self.launch)?;
        Ok(margins)
    }

    /// [`DeviceModel::predict_margin`] of rows already in device memory (at most the model's
    /// features). The margins stay on the device.
    pub fn predict_margin_on_device(
        &self,
        gpu: &Gpu,
        data: DeviceData<'_>,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
    ) -> Result<DeviceBuffer<f32>> {
        let (rows, view) = data.view(gpu)?;
        self.check_cols(data.cols())?;
        let trees = self.tree_range(iteration_range)?;
        let margins = self.initial_margins(gpu, rows, base_margin, prob_to_margin)?;
        if rows == 0 {
            return Ok(margins);
        }
        let walks = Walks::Margins { margins: &margins, outputs: self.outputs };
        walk_trees(gpu, view, rows, &self.trees, trees, walks, self.launch)?;
        Ok(margins)
    }

    /// Every row's margins before the trees: `base_margin`, or the base score through
    /// `prob_to_margin`.
    fn initial_margins(
        &self,
        gpu: &Gpu,
        rows: usize,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
    ) -> Result<DeviceBuffer<f32>> {
        let outputs = self.outputs;
        if let Some(b) = base_margin.filter(|b| b.len() != rows * outputs) {
            return Err(Error::InvalidData(format!(
                "base_margin has {} values for {rows} rows of {outputs} outputs",
                b.len()
            )));
        }
        if rows == 0 {
            return Ok(gpu.alloc_zeroed(0)?);
        }
        let mut base = crate::model::base_margins(&self.objective_name, &self.base_score, prob_to_margin);
        base.truncate(outputs);
        let initial = match base_margin {
            Some(margins) => InitialMargins::Rows(margins),
            None => InitialMargins::Base(&base),
        };
        initial.to_device(gpu, rows, outputs)
    }

    /// [`Model::predict_leaf`] on the device: the index of the leaf each row reaches in each tree of
    /// `iteration_range`, `rows * trees` row-major.
    pub fn predict_leaf(
        &self,
        gpu: &Gpu,
        features: &FeatureMatrix,
        iteration_range: (usize, usize),
    ) -> Result<Vec<u32>> {
        check_features(features, self.num_feature)?;
        let trees = self.tree_range(iteration_range)?;
        let rows = features.rows();
        if rows == 0 || trees.is_empty() {
            return Ok(vec![0; rows * trees.len()]);
        }
        let leaves = gpu.alloc_uninitialized::<u32>(rows * trees.len())?;
        let device_features = DeviceFeatures::upload(gpu, features)?;
        device_features.walk_trees(gpu, rows, &self.trees, trees, Walks::Leaves(&leaves), self.launch)?;
        Ok(leaves.to_vec(gpu)?)
    }

    /// [`DeviceModel::predict_leaf`] of rows already in device memory, read back.
    pub fn predict_leaf_on_device(
        &self,
        gpu: &Gpu,
        data: DeviceData<'_>,
        iteration_range: (usize, usize),
    ) -> Result<Vec<u32>> {
        let (rows, view) = data.view(gpu)?;
        self.check_cols(data.cols())?;
        let trees = self.tree_range(iteration_range)?;
        if rows == 0 || trees.is_empty() {
            return Ok(vec![0; rows * trees.len()]);
        }
        let leaves = gpu.alloc_uninitialized::<u32>(rows * trees.len())?;
        walk_trees(gpu, view, rows, &self.trees, trees, Walks::Leaves(&leaves), self.launch)?;
        Ok(leaves.to_vec(gpu)?)
    }

    /// Refuses device rows of more features than the model's.
    fn check_cols(&self, cols: usize) -> Result<()> {
        if cols > self.num_feature {
            return Err(Error::InvalidData(format!("the data has {cols} features, the model {}", self.num_feature)));
        }
        Ok(())
    }

    /// The trees of `iteration_range` (`(0, 0)`: all), as [`Model::tree_range`] takes it.
    fn tree_range(&self, iteration_range: (usize, usize)) -> Result<Range<usize>> {
        trees_of_rounds(&self.iteration_indptr, iteration_range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective;
    use primitives::Schedule;

    /// The device's predictions from margins are every objective's host transform, bit for bit
    /// (ties, huge and tiny margins, NaN included); a wrong margin count is refused.
    #[test]
    fn device_transforms_are_the_hosts() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let classes = [("num_class".to_string(), "3".to_string())];
        let expectiles = [("expectile_alpha".to_string(), "[0.1, 0.5, 0.9]".to_string())];
        let aft = [("aft_loss_distribution".to_string(), "extreme".to_string())];
        let names: [(&str, &[(String, String)]); 15] = [
            ("binary:logistic", &[]),
            ("binary:hinge", &[]),
            ("reg:gamma", &[]),
            ("reg:tweedie", &[]),
            ("reg:squaredlogerror", &[]),
            ("binary:logitraw", &[]),
            ("reg:squarederror", &[]),
            ("reg:pseudohubererror", &[]),
            ("reg:absoluteerror", &[]),
            ("count:poisson", &[]),
            ("rank:ndcg", &[]),
            ("multi:softprob", &classes),
            ("multi:softmax", &classes),
            ("reg:expectileerror", &expectiles),
            ("survival:aft", &aft),
        ];
        let margins: Vec<f32> =
            [0.0, 1.5, 1.5, -3.0, 90.0, -90.0, 1e-30, f32::NAN, 7.25, -0.5, 2.0, 2.0].repeat(3).into_iter().collect();
        for (name, params) in names {
            let objective = objective::from_name(name, params).unwrap();
            let outputs = objective.outputs();
            let rows = margins.len() / outputs;
            let on_device = gpu.upload(&margins).unwrap();
            let values = transform_on_device(&gpu, &on_device, rows, outputs, objective.output_transform()).unwrap();
            let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            assert_eq!(bits(values.to_vec(&gpu).unwrap()), bits(objective.transform(&margins)), "{name}");
        }
        let on_device = gpu.upload(&margins).unwrap();
        let refused = transform_on_device(&gpu, &on_device, 5, 2, OutputTransform::Softmax).err().unwrap();
        assert!(refused.to_string().contains("36 margins for 5 rows of 2 outputs"));
    }
}
