//! Explanations on the device: [`DeviceShap`] uploads a model's root-to-leaf paths
//! ([`crate::model::ShapPaths`]) once, and each call sums every row's SHAP values over them a
//! thread a row, or its interaction values a thread a (row, matrix row) over the paths of that
//! row's feature (its sums in shared memory), with the CPU's arithmetic (`boost_kernels::shap`) in
//! the CPU's order, so the values are the CPU's bit for bit. Rows go a batch at a time (host rows
//! are uploaded a batch at a time): a batch's values and `f64` sums bound the memory with the paths.

use boost_kernels::entry;
use boost_kernels::shap::oblivious::{ObliviousLevel, ObliviousShapTree};
use boost_kernels::shap::{ShapElement, ShapOccurrence, ShapPath, ShapSplit};
use primitives::{DeviceBuffer, Gpu, LaunchConfig};

use std::ops::Range;

use super::eval::{DeviceFeatures, FeatureView};
use super::{element_config, ptr, DeviceData};
use crate::data::{CsrMatrix, DenseMatrix, FeatureMatrix};
use crate::model::{check_features, Model, ObliviousShap, ShapPaths, ShapTrees};
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
    let bases = model.base_margins_of(n, base_margin, prob_to_margin)?;
    let shap = match interactions {
        true => DeviceShap::upload(gpu, &model.shap_paths(iteration_range)?, model.num_feature, true)?,
        false => match model.shap_trees(iteration_range)? {
            ShapTrees::Paths(paths) => DeviceShap::upload(gpu, &paths, model.num_feature, false)?,
            ShapTrees::Oblivious(trees) => DeviceShap::upload_oblivious(gpu, &trees, model.num_feature)?,
        },
    };
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

/// Bytes of a batch's sums and values (what bounds an explanation's device memory, with the paths
/// and the batch's rows).
const BATCH_BYTES: usize = 1 << 27;

/// Threads a block of the contributions kernel.
const ROW_THREADS: u32 = 128;

/// Dynamic shared memory an interactions block may take without opting in to more.
const SHARED_BYTES: usize = 48 << 10;

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
    /// For interaction values: where each (output, feature) appears among the paths.
    occurrences: Option<(DeviceBuffer<u32>, DeviceBuffer<ShapOccurrence>)>,
    /// A model of oblivious trees, walked instead of its paths (which are then empty).
    oblivious: Option<DeviceOblivious>,
    outputs: usize,
    /// Columns of a row's values: the model's features and the bias.
    width: usize,
    /// Bytes of a batch's sums and values.
    batch_bytes: usize,
    /// Shared memory an interactions block may take for its sums (else they go to a scratch buffer).
    shared_bytes: usize,
}

/// The occurrences of each (output, feature) among `paths` (of `width - 1` features), in model
/// order, as offsets (`outputs * width + 1`, the bias column's lists empty) into the list.
fn occurrences(paths: &ShapPaths, outputs: usize, width: usize) -> Result<(Vec<u32>, Vec<ShapOccurrence>)> {
    let key = |p: &ShapPath, e: &ShapElement| p.output as usize * width + e.feature as usize;
    let elements_of = |p: &ShapPath| &paths.elements[p.first as usize..(p.first + p.len) as usize];
    let mut offsets = vec![0u32; outputs * width + 1];
    for p in &paths.paths {
        for e in elements_of(p) {
            offsets[key(p, e) + 1] += 1;
        }
    }
    for i in 1..offsets.len() {
        offsets[i] = offsets[i].checked_add(offsets[i - 1]).ok_or_else(|| Error::Model("too many path elements".into()))?;
    }
    let mut next = offsets.clone();
    let mut list = vec![ShapOccurrence::default(); paths.elements.len()];
    for (i, p) in paths.paths.iter().enumerate() {
        for (j, e) in elements_of(p).iter().enumerate() {
            let at = &mut next[key(p, e)];
            list[*at as usize] = ShapOccurrence { path: i as u32, element: j as u32 };
            *at += 1;
        }
    }
    Ok((offsets, list))
}

impl DeviceShap {
    /// `paths` of a model of `num_feature` features on `gpu` (with their occurrence lists, for
    /// `interactions`).
    fn upload(gpu: &Gpu, paths: &ShapPaths, num_feature: usize, interactions: bool) -> Result<Self> {
        let expected: Vec<f32> = paths.expected.iter().map(|&e| e as f32).collect();
        let (outputs, width) = (paths.expected.len(), num_feature + 1);
        let occurrences = match interactions {
            true => {
                let (offsets, list) = occurrences(paths, outputs, width)?;
                Some((gpu.upload(&offsets)?, gpu.upload(&list)?))
            }
            false => None,
        };
        Ok(DeviceShap {
            paths: gpu.upload(&paths.paths)?,
            elements: gpu.upload(&paths.elements)?,
            splits: gpu.upload(&paths.splits)?,
            category_words: gpu.upload(&paths.category_words)?,
            tables: gpu.upload(&paths.tables)?,
            weights: gpu.upload(&paths.weights)?,
            expected: gpu.upload(&expected)?,
            occurrences,
            oblivious: None,
            outputs,
            width,
            batch_bytes: BATCH_BYTES,
            shared_bytes: SHARED_BYTES,
        })
    }

    /// A model of oblivious `trees` of `num_feature` features on `gpu`, for SHAP values.
    fn upload_oblivious(gpu: &Gpu, trees: &ObliviousShap, num_feature: usize) -> Result<Self> {
        let no_paths = ShapPaths::empty(trees.expected.clone());
        let mut shap = DeviceShap::upload(gpu, &no_paths, num_feature, false)?;
        shap.oblivious = Some(DeviceOblivious {
            trees: gpu.upload(&trees.trees)?,
            levels: gpu.upload(&trees.levels)?,
            factors: gpu.upload(&trees.factors)?,
            fractions: gpu.upload(&trees.fractions)?,
            leaves: gpu.upload(&trees.leaves)?,
            weights: gpu.upload(&trees.weights)?,
        });
        Ok(shap)
    }

    /// Threads a block of the interactions kernel, and whether their sums fit in shared memory.
    fn interaction_threads(&self) -> (u32, bool) {
        let fits = |threads: u32| threads as usize * self.width * 8 <= self.shared_bytes;
        [128, 64, 32].into_iter().find(|&t| fits(t)).map_or((ROW_THREADS, false), |t| (t, true))
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
        // A row's bytes: its values, and its f64 sums where they do not stay in shared memory.
        let sums_per_row = match interactions {
            true if self.interaction_threads().1 => 0,
            true => per_row,
            false => outputs * width,
        };
        let batch = (self.batch_bytes / (per_row * 4 + sums_per_row * 8)).clamp(1, rows.max(1));
        let mut sums = gpu.alloc_uninitialized::<f64>(batch * sums_per_row)?;
        let values = gpu.alloc_uninitialized::<f32>(batch * per_row)?;
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
            let bases = gpu.upload(&bases[first * outputs..(first + n) * outputs])?;
            if !interactions {
                sums.fill_zero(gpu)?; // the contributions kernel adds to them
            }
            let batch = Batch { view, first_row: first_row as u64, rows: n, bases: &bases, values: &values, sums: &sums };
            match interactions {
                true => self.interactions(gpu, &batch)?,
                false => self.contributions(gpu, &batch)?,
            }
            values.copy_range_to_host(gpu, 0..n * per_row, &mut out[first * per_row..(first + n) * per_row])?;
        }
        Ok(())
    }

    /// The batch's SHAP values: its rows summed over the paths into its zeroed sums, a thread a
    /// row, then rounded.
    fn contributions(&self, gpu: &Gpu, batch: &Batch<'_>) -> Result<()> {
        let (values, cols, row_ptr, col_indices) = batch.rows_args();
        let (n, width) = (batch.rows as u64, self.width as u64);
        let blocks = batch.rows.div_ceil(ROW_THREADS as usize);
        if blocks > i32::MAX as usize {
            return Err(Error::InvalidData(format!("{n} rows are too many for one launch")));
        }
        // (The sums kept in shared memory instead cost occupancy: 1.56x the time at 1M x 28 on an H200.)
        let config = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (ROW_THREADS, 1, 1), shared_mem_bytes: 0 };
        let args = match &self.oblivious {
            None => entry::boost_shap_contributions::args(
                values,
                cols,
                row_ptr,
                col_indices,
                batch.first_row,
                n,
                self.paths.as_ptr(),
                self.paths.len() as u64,
                self.elements.as_ptr(),
                self.splits.as_ptr(),
                self.category_words.as_ptr(),
                self.tables.as_ptr(),
                self.weights.as_ptr(),
                batch.sums.as_mut_ptr(),
                width,
            ),
            Some(o) => entry::boost_shap_oblivious_contributions::args(
                values,
                cols,
                row_ptr,
                col_indices,
                batch.first_row,
                n,
                o.trees.as_ptr(),
                o.trees.len() as u64,
                o.levels.as_ptr(),
                o.factors.as_ptr(),
                o.fractions.as_ptr(),
                o.leaves.as_ptr(),
                o.weights.as_ptr(),
                batch.sums.as_mut_ptr(),
                width,
            ),
        };
        // SAFETY: the rows are checked (`check_features`, `DeviceData::view`) and hold
        // `first_row + rows` rows; the paths (or trees) were made from the model checked and
        // uploaded whole;
        // `sums` holds `outputs * width` values a row of the batch.
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        let args = entry::boost_shap_finish::args(
            batch.sums.as_ptr(),
            self.expected.as_ptr(),
            batch.bases.as_ptr(),
            batch.values.as_mut_ptr(),
            n,
            self.outputs as u64,
            width,
        );
        // SAFETY: the sums of the batch's rows as above, `outputs` expected values, `rows *
        // outputs` bases and room for `rows * outputs * width` values.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(batch.rows * self.outputs * self.width)?, args) }?;
        Ok(())
    }

    /// The batch's interaction values, a thread a (row, output, matrix row).
    fn interactions(&self, gpu: &Gpu, batch: &Batch<'_>) -> Result<()> {
        let Some((offsets, occurrences)) = &self.occurrences else {
            return Err(Error::InvalidData("interaction values of paths uploaded without their occurrences".into()));
        };
        let (values, cols, row_ptr, col_indices) = batch.rows_args();
        let (threads, shared) = self.interaction_threads();
        let blocks = batch.rows.div_ceil(threads as usize) * self.outputs * self.width;
        if blocks > i32::MAX as usize {
            return Err(Error::InvalidData(format!("{} rows are too many for one launch", batch.rows)));
        }
        let shared_mem_bytes = if shared { threads * self.width as u32 * 8 } else { 0 };
        let config = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes };
        let scratch = if shared { std::ptr::null_mut() } else { batch.sums.as_mut_ptr() };
        let args = entry::boost_shap_interactions::args(
            values,
            cols,
            row_ptr,
            col_indices,
            batch.first_row,
            batch.rows as u64,
            self.paths.as_ptr(),
            self.elements.as_ptr(),
            self.splits.as_ptr(),
            self.category_words.as_ptr(),
            self.tables.as_ptr(),
            self.weights.as_ptr(),
            offsets.as_ptr(),
            occurrences.as_ptr(),
            self.expected.as_ptr(),
            batch.bases.as_ptr(),
            batch.values.as_mut_ptr(),
            scratch,
            self.outputs as u64,
            self.width as u64,
        );
        // SAFETY: the rows and paths as in `contributions`; the occurrences were made from these
        // paths; `rows * outputs` bases, room for `rows * outputs * width^2` values, and the sums'
        // `width` values a thread in shared memory (the launch's) or in `sums` (sized for it).
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args) }?;
        Ok(())
    }
}

/// A model's oblivious trees on one device ([`ObliviousShap`]).
struct DeviceOblivious {
    trees: DeviceBuffer<ObliviousShapTree>,
    levels: DeviceBuffer<ObliviousLevel>,
    factors: DeviceBuffer<f32>,
    fractions: DeviceBuffer<f64>,
    leaves: DeviceBuffer<f32>,
    weights: DeviceBuffer<f32>,
}

/// One batch of rows on the device: their view (from `first_row`), base margins, values and sums.
struct Batch<'a> {
    view: FeatureView,
    first_row: u64,
    rows: usize,
    bases: &'a DeviceBuffer<f32>,
    values: &'a DeviceBuffer<f32>,
    sums: &'a DeviceBuffer<f64>,
}

impl Batch<'_> {
    /// The kernels' row arguments: values, columns (dense), row offsets and column indices (CSR).
    fn rows_args(&self) -> (*const f32, u64, *const u64, *const u32) {
        match self.view {
            FeatureView::Dense { values, cols } => (ptr(values), cols as u64, ptr(0), ptr(0)),
            FeatureView::Csr { row_ptr, col_indices, values } => (ptr(values), 0, ptr(row_ptr), ptr(col_indices)),
        }
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
    /// of 3 rows (and of 5 with their sums in global memory), contributions of host rows in batches
    /// of 7.
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
            let mut shap = DeviceShap::upload(&gpu, &paths, model.num_feature, true).unwrap();
            shap.batch_bytes = 3 * outputs * shap.width * shap.width * 4;
            let bases = model.base_margins_of(rows, None, |b| b).unwrap();
            let mut out = vec![0f32; cpu.len()];
            let view = data.view(&gpu).unwrap().1;
            shap.explain(&gpu, &ExplainRows::Device(data), Some(view), rows, &bases, true, &mut out).unwrap();
            assert_eq!(bits(&out), bits(&cpu), "interactions of device rows in batches of 3");
            shap.shared_bytes = 0;
            shap.batch_bytes = 5 * outputs * shap.width * shap.width * 12;
            let mut out = vec![0f32; cpu.len()];
            shap.explain(&gpu, &ExplainRows::Device(data), Some(view), rows, &bases, true, &mut out).unwrap();
            assert_eq!(bits(&out), bits(&cpu), "interactions summed in global memory, in batches of 5");
            let cpu = model.predict_contributions(&host, None, |b| b, (0, 0)).unwrap();
            let mut out = vec![0f32; cpu.len()];
            shap.batch_bytes = 7 * outputs * shap.width * 12;
            let host = ExplainRows::Host(&FeatureMatrix::Sparse(sparse));
            shap.explain(&gpu, &host, None, rows, &bases, false, &mut out).unwrap();
            assert_eq!(bits(&out), bits(&cpu), "contributions of host CSR rows in batches of 7");
        }
    }

    /// A model of oblivious trees is walked on the device as on the CPU: the same bits, dense and
    /// CSR rows, in batches of 9; its interaction values take the paths.
    #[test]
    fn device_walks_oblivious_trees_as_the_cpu() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        for objective in [&[("objective", "reg:squarederror")][..], &[("objective", "multi:softprob"), ("num_class", "3")][..]] {
            let (model, features) = crate::model::shap_oblivious_tests::oblivious_model(objective);
            let FeatureMatrix::Dense(dense) = &features else { unreachable!() };
            let rows = 50;
            let dense = crate::data::DenseMatrix::new(rows, dense.cols, dense.values[..rows * dense.cols].to_vec());
            let host = FeatureMatrix::Dense(dense.clone());
            let ShapTrees::Oblivious(trees) = model.shap_trees((0, 0)).unwrap() else { panic!("not walked") };
            let cpu = model.predict_contributions(&host, None, |b| b, (0, 0)).unwrap();
            let on_gpu = explain(&gpu, &model, ExplainRows::Host(&host), None, |b| b, (0, 0), false).unwrap();
            assert_eq!(bits(&on_gpu), bits(&cpu), "{objective:?}");
            let mut shap = DeviceShap::upload_oblivious(&gpu, &trees, model.num_feature).unwrap();
            shap.batch_bytes = 9 * model.num_outputs() * shap.width * 12;
            let bases = model.base_margins_of(rows, None, |b| b).unwrap();
            let mut out = vec![0f32; cpu.len()];
            let sparse = FeatureMatrix::Sparse(to_csr(&dense));
            shap.explain(&gpu, &ExplainRows::Host(&sparse), None, rows, &bases, false, &mut out).unwrap();
            assert_eq!(bits(&out), bits(&cpu), "CSR rows in batches of 9, {objective:?}");
            let cpu = model.predict_interactions(&host, None, |b| b, (0, 0)).unwrap();
            let on_gpu = explain(&gpu, &model, ExplainRows::Host(&host), None, |b| b, (0, 0), true).unwrap();
            assert_eq!(bits(&on_gpu), bits(&cpu), "interactions, {objective:?}");
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
