//! Explanations on the device: [`DeviceShap`] uploads a model's root-to-leaf paths
//! ([`crate::model::ShapPaths`]) once, and each call sums every row's SHAP values (or interaction
//! values) over them a thread a row, with the CPU's arithmetic (`boost_kernels::shap`) in the
//! CPU's order, so the values are the CPU's bit for bit. Rows go a batch at a time (host rows are
//! uploaded a batch at a time): a batch's `f64` sums, `outputs x (features + 1)` values a row (times
//! `features + 1` for interaction values), bound the memory with the paths.

use boost_kernels::entry;
use boost_kernels::shap::{ShapElement, ShapPath, ShapSplit};
use primitives::{DeviceBuffer, Gpu, LaunchConfig};

use std::ops::Range;

use super::eval::{DeviceFeatures, FeatureView};
use super::{element_config, ptr, DeviceData};
use crate::data::{CsrMatrix, DenseMatrix, FeatureMatrix};
use crate::model::{check_features, Model, ShapPaths};
use crate::{Error, Result};

/// Rows to explain: on the host (uploaded for the call) or already on the device.
pub(crate) enum ExplainRows<'a> {
    Host(&'a FeatureMatrix),
    Device(DeviceData<'a>),
}

/// [`Model::predict_contributions`] (or, with `interactions`, [`Model::predict_interactions`]) of
/// `rows`, whose features the model's target statistics have encoded already, on `gpu`: the
/// CPU's values, bit for bit.
pub(crate) fn explain(
    gpu: &Gpu,
    model: &Model,
    rows: ExplainRows<'_>,
    base_margin: Option<&[f32]>,
    prob_to_margin: impl Fn(f32) -> f32,
    iteration_range: (usize, usize),
    interactions: bool,
) -> Result<Vec<f32>> {
    let (n, cols, device_view) = match &rows {
        ExplainRows::Host(features) => {
            check_features(features, model.num_feature)?;
            (features.rows(), features.cols(), None)
        }
        ExplainRows::Device(data) => {
            let (n, view) = data.view(gpu)?;
            (n, data.cols(), Some(view))
        }
    };
    crate::model::check_explained_features(cols, model.num_feature)?;
    let paths = model.shap_paths(iteration_range)?;
    let bases = model.base_margins_of(n, base_margin, prob_to_margin)?;
    let shap = DeviceShap::upload(gpu, &paths, model.num_feature)?;
    let width = model.num_feature + 1;
    let per_row = model.num_outputs() * if interactions { width * width } else { width };
    let what = if interactions { "interaction values" } else { "contributions" };
    let mut out = crate::model::alloc_explanation(n, per_row, what)?;
    shap.explain(gpu, &rows, device_view, n, &bases, interactions, &mut out)?;
    Ok(out)
}

/// Rows `range` of host rows, for one batch's upload.
fn rows_of(features: &FeatureMatrix, range: Range<usize>) -> FeatureMatrix {
    match features {
        FeatureMatrix::Dense(m) => {
            FeatureMatrix::Dense(DenseMatrix::new(range.len(), m.cols, m.values[range.start * m.cols..range.end * m.cols].to_vec()))
        }
        FeatureMatrix::Sparse(m) => {
            let (begin, end) = (m.row_ptr[range.start], m.row_ptr[range.end]);
            FeatureMatrix::Sparse(CsrMatrix {
                rows: range.len(),
                cols: m.cols,
                row_ptr: m.row_ptr[range.start..=range.end].iter().map(|p| p - begin).collect(),
                col_indices: m.col_indices[begin..end].to_vec(),
                values: m.values[begin..end].to_vec(),
            })
        }
    }
}

/// Bytes of the `f64` sums of one batch of rows (what bounds an explanation's device memory, with
/// the paths and the batch's rows).
const BATCH_BYTES: usize = 1 << 26;

/// Threads a block of the row kernels.
const ROW_THREADS: u32 = 128;

/// A model's paths on one device.
struct DeviceShap {
    paths: DeviceBuffer<ShapPath>,
    elements: DeviceBuffer<ShapElement>,
    splits: DeviceBuffer<ShapSplit>,
    category_words: DeviceBuffer<u32>,
    tables: DeviceBuffer<f32>,
    weights: DeviceBuffer<f32>,
    /// Each output's expected value rounded to `f32`, as the CPU adds it.
    expected: DeviceBuffer<f32>,
    outputs: usize,
    /// Columns of a row's values: the model's features and the bias.
    width: usize,
    /// Bytes of the `f64` sums of a batch of rows.
    batch_bytes: usize,
}

impl DeviceShap {
    /// `paths` of a model of `num_feature` features on `gpu`.
    fn upload(gpu: &Gpu, paths: &ShapPaths, num_feature: usize) -> Result<Self> {
        let expected: Vec<f32> = paths.expected.iter().map(|&e| e as f32).collect();
        Ok(DeviceShap {
            paths: gpu.upload(&paths.paths)?,
            elements: gpu.upload(&paths.elements)?,
            splits: gpu.upload(&paths.splits)?,
            category_words: gpu.upload(&paths.category_words)?,
            tables: gpu.upload(&paths.tables)?,
            weights: gpu.upload(&paths.weights)?,
            expected: gpu.upload(&expected)?,
            outputs: paths.expected.len(),
            width: num_feature + 1,
            batch_bytes: BATCH_BYTES,
        })
    }

    /// The explanations of `rows` rows into `out` (`rows x outputs x width`, times `width` for
    /// interaction values), a batch of rows at a time (host rows uploaded a batch at a time; device
    /// rows read through `device_view`, their checked view); `bases` holds each row's base margins
    /// (`rows x outputs`).
    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        gpu: &Gpu,
        data: &ExplainRows<'_>,
        device_view: Option<FeatureView>,
        rows: usize,
        bases: &[f32],
        interactions: bool,
        out: &mut [f32],
    ) -> Result<()> {
        let (outputs, width) = (self.outputs, self.width);
        let per_row = outputs * if interactions { width * width } else { width };
        let batch = (self.batch_bytes / (per_row * 8)).clamp(1, rows.max(1));
        let mut sums = gpu.alloc_uninitialized::<f64>(batch * outputs * width)?;
        let mut pairs = gpu.alloc_uninitialized::<f64>(if interactions { batch * per_row } else { 0 })?;
        for first in (0..rows).step_by(batch) {
            let n = batch.min(rows - first);
            let uploaded;
            let (view, first_row) = match (data, device_view) {
                (ExplainRows::Host(features), _) => {
                    uploaded = DeviceFeatures::upload(gpu, &rows_of(features, first..first + n))?;
                    (uploaded.view(), 0)
                }
                (ExplainRows::Device(_), Some(view)) => (view, first),
                (ExplainRows::Device(_), None) => {
                    return Err(Error::InvalidData("device rows without their checked view".into()))
                }
            };
            sums.fill_zero(gpu)?;
            pairs.fill_zero(gpu)?;
            self.sum_rows(gpu, view, first_row..first_row + n, &sums, interactions.then_some(&pairs))?;
            let finished = self.finish(gpu, &sums, &pairs, &bases[first * outputs..(first + n) * outputs], n)?;
            finished.copy_range_to_host(gpu, 0..n * per_row, &mut out[first * per_row..(first + n) * per_row])?;
        }
        Ok(())
    }

    /// Sums rows `rows`' values over the paths into `sums` (and `pairs`, for interactions).
    fn sum_rows(
        &self,
        gpu: &Gpu,
        view: FeatureView,
        rows: std::ops::Range<usize>,
        sums: &DeviceBuffer<f64>,
        pairs: Option<&DeviceBuffer<f64>>,
    ) -> Result<()> {
        let (values, cols, row_ptr, col_indices) = match view {
            FeatureView::Dense { values, cols } => (values, cols as u64, 0, 0),
            FeatureView::Csr { row_ptr, col_indices, values } => (values, 0, row_ptr, col_indices),
        };
        let (values, row_ptr, col_indices) = (ptr(values), ptr(row_ptr), ptr(col_indices));
        let (first, n) = (rows.start as u64, rows.len() as u64);
        let (paths, num_paths) = (self.paths.as_ptr(), self.paths.len() as u64);
        let (elements, splits) = (self.elements.as_ptr(), self.splits.as_ptr());
        let (words, width) = (self.category_words.as_ptr(), self.width as u64);
        let (tables, weights) = (self.tables.as_ptr(), self.weights.as_ptr());
        // (The sums kept in shared memory instead cost occupancy: 1.56x the time at 1M x 28 on an H200.)
        let blocks = rows.len().div_ceil(ROW_THREADS as usize);
        let config = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (ROW_THREADS, 1, 1), shared_mem_bytes: 0 };
        let args = match pairs {
            None => entry::boost_shap_contributions::args(
                values,
                cols,
                row_ptr,
                col_indices,
                first,
                n,
                paths,
                num_paths,
                elements,
                splits,
                words,
                tables,
                weights,
                sums.as_mut_ptr(),
                width,
            ),
            Some(pairs) => entry::boost_shap_interactions::args(
                values,
                cols,
                row_ptr,
                col_indices,
                first,
                n,
                paths,
                num_paths,
                elements,
                splits,
                words,
                tables,
                weights,
                sums.as_mut_ptr(),
                pairs.as_mut_ptr(),
                width,
            ),
        };
        if blocks > i32::MAX as usize {
            return Err(Error::InvalidData(format!("{} rows are too many for one launch", rows.len())));
        }
        // SAFETY: the rows are checked (`check_features`, `DeviceData::view`) and hold `rows.end`
        // rows; the paths were made from the model checked and uploaded whole; `sums` holds
        // `outputs * width` values a row of the batch and `pairs` `outputs * width^2`.
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        Ok(())
    }

    /// The batch's sums rounded into XGBoost's layout, with the bias.
    fn finish(
        &self,
        gpu: &Gpu,
        sums: &DeviceBuffer<f64>,
        pairs: &DeviceBuffer<f64>,
        bases: &[f32],
        rows: usize,
    ) -> Result<DeviceBuffer<f32>> {
        let (outputs, width) = (self.outputs, self.width);
        let per_row = if pairs.is_empty() { outputs * width } else { outputs * width * width };
        let out = gpu.alloc_uninitialized::<f32>(rows * per_row)?;
        let bases = gpu.upload(bases)?;
        let pairs = if pairs.is_empty() { std::ptr::null() } else { pairs.as_ptr() };
        let args = entry::boost_shap_finish::args(
            sums.as_ptr(),
            pairs,
            self.expected.as_ptr(),
            bases.as_ptr(),
            out.as_mut_ptr(),
            rows as u64,
            outputs as u64,
            width as u64,
        );
        // SAFETY: the sums of `rows` rows as `sum_rows` filled them, `outputs` expected values,
        // `rows * outputs` bases and room for `rows * per_row` values.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(rows * outputs * width)?, args)? };
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::CsrMatrix;
    use crate::gpu::DeviceCsr;
    use primitives::Schedule;

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// The emulated device's SHAP and interaction values are the CPU's bit for bit: host rows
    /// dense and CSR, device rows, base margins, iteration ranges, interaction values in batches
    /// of 3 rows, contributions of host rows in batches of 7.
    #[test]
    fn device_explanations_are_the_cpus() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        for objective in [&[("objective", "reg:squarederror")][..], &[("objective", "multi:softprob"), ("num_class", "3")][..]] {
            let (model, features) = crate::model::shap_tests::trained(objective, 3);
            let FeatureMatrix::Dense(dense) = &features else { unreachable!() };
            let rows = 40;
            let dense = crate::data::DenseMatrix::new(rows, dense.cols, dense.values[..rows * dense.cols].to_vec());
            let host = FeatureMatrix::Dense(dense.clone());
            let outputs = model.num_outputs();
            let margins: Vec<f32> = (0..rows * outputs).map(|i| i as f32 * 0.01).collect();
            for (base, range) in [(None, (0, 0)), (Some(&margins[..]), (1, 3))] {
                let cpu = model.predict_contributions(&host, base, |b| b, range).unwrap();
                let on_gpu = explain(&gpu, &model, ExplainRows::Host(&host), base, |b| b, range, false).unwrap();
                assert_eq!(bits(&on_gpu), bits(&cpu), "contributions, {objective:?}, {range:?}");
                let cpu = model.predict_interactions(&host, base, |b| b, range).unwrap();
                let on_gpu = explain(&gpu, &model, ExplainRows::Host(&host), base, |b| b, range, true).unwrap();
                assert_eq!(bits(&on_gpu), bits(&cpu), "interactions, {objective:?}, {range:?}");
            }
            let cpu = model.predict_contributions(&host, None, |b| b, (0, 0)).unwrap();
            let sparse = to_csr(&dense);
            let on_gpu = explain(&gpu, &model, ExplainRows::Host(&FeatureMatrix::Sparse(sparse.clone())), None, |b| b, (0, 0), false);
            assert_eq!(bits(&on_gpu.unwrap()), bits(&cpu), "CSR rows");
            let csr = DeviceCsr::upload(&gpu, &sparse).unwrap();
            let on_gpu = explain(&gpu, &model, ExplainRows::Device(DeviceData::Csr(&csr)), None, |b| b, (0, 0), false);
            assert_eq!(bits(&on_gpu.unwrap()), bits(&cpu), "device CSR rows");
            let values = gpu.upload(&dense.values).unwrap();
            let data = DeviceData::Dense { values: &values, rows, cols: dense.cols };
            let cpu = model.predict_interactions(&host, None, |b| b, (0, 0)).unwrap();
            let paths = model.shap_paths((0, 0)).unwrap();
            let mut shap = DeviceShap::upload(&gpu, &paths, model.num_feature).unwrap();
            shap.batch_bytes = 3 * outputs * shap.width * shap.width * 8;
            let bases = model.base_margins_of(rows, None, |b| b).unwrap();
            let mut out = vec![0f32; cpu.len()];
            let view = data.view(&gpu).unwrap().1;
            shap.explain(&gpu, &ExplainRows::Device(data), Some(view), rows, &bases, true, &mut out).unwrap();
            assert_eq!(bits(&out), bits(&cpu), "interactions of device rows in batches of 3");
            let cpu = model.predict_contributions(&host, None, |b| b, (0, 0)).unwrap();
            let mut out = vec![0f32; cpu.len()];
            shap.batch_bytes = 7 * outputs * shap.width * 8;
            let host = ExplainRows::Host(&FeatureMatrix::Sparse(sparse));
            shap.explain(&gpu, &host, None, rows, &bases, false, &mut out).unwrap();
            assert_eq!(bits(&out), bits(&cpu), "contributions of host CSR rows in batches of 7");
        }
    }

    fn to_csr(m: &crate::data::DenseMatrix) -> CsrMatrix {
        let mut csr = CsrMatrix { rows: m.rows, cols: m.cols, row_ptr: vec![0], ..Default::default() };
        for i in 0..m.rows {
            for (j, &v) in m.row(i).iter().enumerate().filter(|(_, v)| !v.is_nan()) {
                csr.col_indices.push(j as u32);
                csr.values.push(v);
            }
            csr.row_ptr.push(csr.values.len());
        }
        csr
    }
}
