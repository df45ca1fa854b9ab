//! A run's setup: the inputs checked, the objective and metrics named, and the tree backend
//! built (the CPU's quantised matrix or sorted columns; a GPU's sketch and bins; several GPUs'
//! shards).

use std::sync::Arc;
use std::time::Instant;

use primitives::{DeviceBuffer, Gpu};

use super::backend::{CpuHist, TreeBackend};
use super::device::{on_device, Devices};
use super::TrainOptions;
use crate::data::{FeatureMatrix, MetaInfo};
use crate::ellpack::EllpackMatrix;
use crate::external::ExternalMatrix;
use crate::gpu::{
    csr_is_checked, device_cuts_csr, device_cuts_typed, host_dense_cuts, Communicator, DeviceCsr, DeviceData, GpuExact,
    GpuPages, GpuTrainer, HostStaged, MultiGpuTrainer, Nccl, PeerSum,
};
use crate::metric::{self, Metric};
use crate::objective::{self, Objective};
use crate::param::{GrowPolicy, Params, TreeMethod};
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::rows::{Features, Rows};
use crate::tree::exact::SortedColumns;
use crate::tree::hist::HistogramPrecision;
use crate::{Error, Result};

/// The objective and the metrics of the log, in order.
pub(super) type Checked = (Box<dyn Objective>, Vec<Box<dyn Metric>>);

/// The training and evaluation sets checked (shapes, finite features, labels the objective takes,
/// data each metric takes), and the objective and the metrics of the log in order: `eval_metric`'s,
/// else the objective's default, then the caller's.
pub(super) fn check(
    params: &Params,
    train: &Rows<'_>,
    evals: &[(Rows<'_>, &str)],
    options: &TrainOptions,
) -> Result<Checked> {
    if train.rows() == 0 {
        return Err(Error::InvalidData("the training data has no rows".into()));
    }
    if train.info.labels.len() != train.rows() {
        return Err(Error::InvalidData(format!("{} labels for {} rows", train.info.labels.len(), train.rows())));
    }
    let objective = objective::from_name(&params.objective, &params.objective_params)?;
    objective.validate(train.info)?;
    crate::param::check_constraints(&params.tree, train.cols())?;
    crate::data::MetaInfo::check_feature_weights(&train.info.feature_weights, train.cols())?;
    train.check_finite()?;
    // The training set named as an evaluation set too is checked once.
    for (data, name) in evals.iter().filter(|(data, _)| !data.is(train)) {
        if let Err(Error::InvalidData(reason)) = data.check_finite() {
            return Err(Error::InvalidData(format!("evaluation set `{name}`: {reason}")));
        }
        if data.cols() > train.cols() {
            return Err(Error::InvalidData(format!(
                "evaluation set `{name}` has {} features, the training data {}",
                data.cols(),
                train.cols()
            )));
        }
        objective.validate(data.info)?;
    }
    let outputs = objective.outputs();
    let mut metrics: Vec<Box<dyn Metric>> = params
        .eval_metrics
        .iter()
        .map(|m| metric::from_name_with_params(m, &params.objective_params))
        .collect::<Result<_>>()?;
    if metrics.is_empty() && !params.disable_default_eval_metric {
        metrics.push(metric::default_metric_for(objective.as_ref())?);
    }
    if let Some(custom) = &options.custom_metric {
        metrics.push(Box::new(custom.clone()));
    }
    for (data, _) in evals {
        for m in &metrics {
            m.check(data.rows() * outputs, data.info, outputs)?;
        }
    }
    Ok((objective, metrics))
}

/// The backend growing the trees on `devices`. The CPU sketches and quantises the features into its
/// ELLPACK matrix. A GPU sketches dense rows itself (the CPU's cuts bit for bit) and quantises them
/// with the same search into the bins its builder reads; CSR rows are sketched on the host. The
/// exact method sorts the columns on the host; a GPU keeps them and grows the trees.
pub(super) fn backend<'g>(
    params: &Params,
    train: &Rows<'_>,
    devices: &'g Devices<'_>,
    precision: HistogramPrecision,
    phases: &mut PhaseTimes,
) -> Result<Box<dyn TreeBackend<'g> + 'g>> {
    let gpus = devices.all();
    if !gpus.is_empty() && precision != HistogramPrecision::FixedPoint {
        return Err(Error::param(
            "device",
            format!("histograms in {} are a CPU experiment; the GPU builder sums in fixed point", precision.name()),
        ));
    }
    if let Features::Pages(matrix) = train.features {
        return external_backend(params, matrix, gpus, precision);
    }
    let row_weights = row_weights(train.info, train.rows())?;
    let max_bin = params.tree.max_bin as usize;
    let categorical = train.info.categorical_features(train.cols())?;
    if categorical.contains(&true) {
        check_categorical_support(params)?;
    }
    if params.tree_method == TreeMethod::Exact {
        let columns = phases.time("sorted columns", || train.host_features().map(SortedColumns::new))?;
        let Some(&gpu) = gpus.first() else {
            return Ok(Box::new(columns));
        };
        on_device(gpu, "resetting the peak memory", || Ok(gpu.reset_peak_memory()?))?;
        let start = Instant::now();
        let exact = on_device(gpu, "uploading the sorted columns", || GpuExact::new(gpu, &columns, train.rows()))?;
        phases.add("sorted columns to the device", start.elapsed());
        return Ok(Box::new(exact));
    }
    match gpus[..] {
        [] => Ok(Box::new(cpu_hist(train.host_features()?, &row_weights, max_bin, &categorical, precision, phases)?)),
        [gpu] => {
            on_device(gpu, "resetting the peak memory", || Ok(gpu.reset_peak_memory()?))?;
            let mut trainer = gpu_trainer(gpu, train, &row_weights, (max_bin, &categorical), phases)?;
            // The device time of each step, for the summary at `verbosity=3` (not 2: a lossguide
            // run's step a node made the events cost 17% of its time on an H200).
            trainer.time_device(params.verbosity >= 3);
            Ok(Box::new(trainer))
        }
        // Several devices: the one device's cuts, each device quantising its shard of the rows.
        _ => Ok(Box::new(multi_gpu_trainer(&gpus, train, &row_weights, (max_bin, &categorical), phases)?)),
    }
}

/// The backend of external-memory pages: the CPU's hist builder, visiting them in turn, or one
/// GPU's builder on each tree's sampled rows ([`GpuPages`]). The pages were cut once, so `max_bin`
/// must be theirs.
fn external_backend<'g>(
    params: &Params,
    matrix: &Arc<ExternalMatrix>,
    gpus: Vec<&'g Gpu>,
    precision: HistogramPrecision,
) -> Result<Box<dyn TreeBackend<'g> + 'g>> {
    if params.tree_method != TreeMethod::Hist {
        return Err(Error::param("tree_method", "external-memory rows are quantised pages: use hist"));
    }
    if params.tree.max_bin != matrix.max_bin {
        let reason = format!("{} bins, and the pages were cut into {}", params.tree.max_bin, matrix.max_bin);
        return Err(Error::param("max_bin", reason));
    }
    if matrix.categorical.contains(&true) {
        check_categorical_support(params)?;
    }
    match gpus[..] {
        [] => {}
        [gpu] => {
            on_device(gpu, "resetting the peak memory", || Ok(gpu.reset_peak_memory()?))?;
            let mut pages = on_device(gpu, "uploading the cuts", || GpuPages::new(gpu, Arc::clone(matrix)))?;
            pages.time_device(params.verbosity >= 3);
            return Ok(Box::new(pages));
        }
        _ => return Err(Error::param("n_gpus", "external-memory pages train on one GPU")),
    }
    let (cuts, bytes) = (matrix.cuts.clone(), matrix.bytes());
    Ok(Box::new(CpuHist { cuts, pages: Box::new(Arc::clone(matrix)), bytes, precision }))
}

/// Categorical features are split by the `hist` method's depthwise and lossguide trees: any other
/// method is an error naming the parameter.
fn check_categorical_support(params: &Params) -> Result<()> {
    if params.tree_method == TreeMethod::Exact {
        return Err(Error::param("tree_method", "the exact method has no categorical splits (as XGBoost's): use hist"));
    }
    if params.tree.grow_policy == GrowPolicy::Oblivious {
        return Err(Error::param(
            "grow_policy",
            "oblivious trees have no categorical splits: use depthwise or lossguide",
        ));
    }
    Ok(())
}

/// The CPU's cuts (a bin a category for the `categorical` features), ELLPACK matrix and the bins
/// its builder reads.
fn cpu_hist(
    features: &FeatureMatrix,
    row_weights: &[f32],
    max_bin: usize,
    categorical: &[bool],
    precision: HistogramPrecision,
    phases: &mut PhaseTimes,
) -> Result<CpuHist> {
    let cuts = phases.time("cuts", || QuantileCuts::build_typed(features, row_weights, max_bin, categorical))?;
    let matrix = phases.time("ellpack", || EllpackMatrix::new(features, &cuts));
    let bins = phases.time("matrix for the tree builder", || matrix.unpack(&cuts));
    Ok(CpuHist { cuts, pages: Box::new(bins), bytes: matrix.bytes(), precision })
}

/// The features as the GPU builder reads them, with their cuts: dense rows and CSR rows whose
/// columns increase are sketched on the device ([`device_cuts_typed`], [`device_cuts_csr`]: the
/// host's cuts bit for bit) and quantised from the same device copy (uploaded once, or the caller's
/// rows in place), but numeric dense rows in host memory, uploaded a column group at a time for the
/// sketch ([`host_dense_cuts`]) and a row chunk at a time for the bins; other CSR rows (built in
/// memory), and CSR rows with categorical features, are sketched on the host and quantised on the
/// device.
fn gpu_trainer<'g>(
    gpu: &'g Gpu,
    train: &Rows<'_>,
    weights: &[f32],
    (max_bin, categorical): (usize, &[bool]),
    phases: &mut PhaseTimes,
) -> Result<GpuTrainer<'g>> {
    let typed = categorical.contains(&true);
    /// The rows the sketch read on the device, for the quantisation.
    enum OnDevice<'a> {
        Uploaded(DeviceBuffer<f32>, (usize, usize)),
        UploadedCsr(DeviceCsr),
        Caller(DeviceData<'a>),
        Nothing,
    }
    let start = Instant::now();
    let (rows, cuts) = on_device(gpu, "sketching the features on the device", || {
        let device_weights = (!weights.is_empty()).then(|| gpu.upload(weights)).transpose()?;
        let sketch = |data: DeviceData<'_>| match data {
            DeviceData::Dense { values, rows, cols } => {
                device_cuts_typed(gpu, values, (rows, cols), device_weights.as_ref(), max_bin, categorical)
            }
            DeviceData::Csr(_) if typed => Err(Error::param(
                "feature_types",
                "categorical features of CSR rows in device memory are not supported: pass them dense or on the host",
            )),
            DeviceData::Csr(csr) => device_cuts_csr(gpu, csr, device_weights.as_ref(), max_bin),
        };
        Ok(match train.features {
            Features::Device { data, .. } => (OnDevice::Caller(data), sketch(data)?),
            // Numeric rows a column group at a time, then quantised a row chunk at a time: never
            // the whole `f32` matrix on the device (XGBoost's device memory or less).
            Features::Host(FeatureMatrix::Dense(m)) if !typed => {
                let weights = device_weights.as_ref();
                (OnDevice::Nothing, host_dense_cuts(gpu, &m.values, (m.rows, m.cols), weights, max_bin)?)
            }
            Features::Host(FeatureMatrix::Dense(m)) => {
                let values = gpu.upload(&m.values)?;
                let cuts = sketch(DeviceData::Dense { values: &values, rows: m.rows, cols: m.cols })?;
                (OnDevice::Uploaded(values, (m.rows, m.cols)), cuts)
            }
            Features::Host(FeatureMatrix::Sparse(m)) if csr_is_checked(m) && !typed => {
                let csr = DeviceCsr::upload(gpu, m)?;
                let cuts = sketch(DeviceData::Csr(&csr))?;
                (OnDevice::UploadedCsr(csr), cuts)
            }
            Features::Host(features) => {
                (OnDevice::Nothing, QuantileCuts::build_typed(features, weights, max_bin, categorical)?)
            }
            Features::Pages(_) => return Err(crate::rows::no_raw_features("the device sketch")),
        })
    })?;
    phases.add("cuts", start.elapsed());
    let start = Instant::now();
    let trainer = on_device(gpu, "quantising the features on the device", || match &rows {
        OnDevice::Uploaded(values, shape) => GpuTrainer::from_device_rows(gpu, values, *shape, &cuts),
        OnDevice::UploadedCsr(csr) => GpuTrainer::from_device_csr(gpu, csr, &cuts),
        OnDevice::Caller(DeviceData::Dense { values, rows, cols }) => {
            GpuTrainer::from_device_rows(gpu, values, (*rows, *cols), &cuts)
        }
        OnDevice::Caller(DeviceData::Csr(csr)) => GpuTrainer::from_device_csr(gpu, csr, &cuts),
        OnDevice::Nothing => GpuTrainer::from_features(gpu, train.host_features()?, &cuts),
    })?;
    phases.add("matrix for the tree builder", start.elapsed());
    Ok(trainer)
}

/// The trainer over `gpus` (at least two) of the training rows: dense rows (the caller's in the
/// first device's memory, or uploaded there) sketched on the first device (the one device's cuts)
/// and their shards copied from it to the others; CSR rows sketched on the host, each device's
/// shard uploaded. The devices sum histograms through NCCL, or through host memory when emulated.
fn multi_gpu_trainer<'g>(
    gpus: &[&'g Gpu],
    train: &Rows<'_>,
    weights: &[f32],
    (max_bin, categorical): (usize, &[bool]),
    phases: &mut PhaseTimes,
) -> Result<MultiGpuTrainer<'g>> {
    let gpu = gpus[0];
    for &g in gpus {
        on_device(g, "resetting the peak memory", || Ok(g.reset_peak_memory()?))?;
    }
    let start = Instant::now();
    // Peer access where every pair of devices has it (a few driver calls a sum), else NCCL.
    let (communicator, name): (Box<dyn Communicator>, _) = if gpus.iter().any(|g| g.is_emulated()) {
        (Box::new(HostStaged), "communicator: host")
    } else if let Ok(peer) = PeerSum::new(gpus) {
        (Box::new(peer), "communicator: peer access")
    } else {
        (Box::new(Nccl::new(gpus)?), "communicator: nccl")
    };
    phases.add(name, start.elapsed());
    let start = Instant::now();
    let uploaded;
    let dense = match train.features {
        Features::Device { data: DeviceData::Dense { values, rows, cols }, .. } if values.is_on(gpu) => {
            Some((values, rows, cols))
        }
        Features::Host(FeatureMatrix::Dense(m)) => {
            uploaded = on_device(gpu, "uploading the features", || Ok(gpu.upload(&m.values)?))?;
            Some((&uploaded, m.rows, m.cols))
        }
        _ => None,
    };
    let Some((values, rows, cols)) = dense else {
        let features = train.host_features()?;
        let cuts = QuantileCuts::build_typed(features, weights, max_bin, categorical)?;
        phases.add("cuts", start.elapsed());
        let start = Instant::now();
        let trainer = on_device(gpu, "quantising the features on the devices", || {
            MultiGpuTrainer::from_features(gpus, features, &cuts, communicator)
        })?;
        phases.add("matrix for the tree builder", start.elapsed());
        return Ok(trainer);
    };
    let cuts = on_device(gpu, "sketching the features on the device", || {
        let weights = (!weights.is_empty()).then(|| gpu.upload(weights)).transpose()?;
        device_cuts_typed(gpu, values, (rows, cols), weights.as_ref(), max_bin, categorical)
    })?;
    phases.add("cuts", start.elapsed());
    let start = Instant::now();
    let trainer = on_device(gpu, "quantising the features on the devices", || {
        MultiGpuTrainer::from_device_rows(gpus, values, (rows, cols), &cuts, communicator)
    })?;
    phases.add("matrix for the tree builder", start.elapsed());
    Ok(trainer)
}

/// Row weights for the quantile sketch: per-row weights, or per-group weights spread over the rows.
fn row_weights(info: &MetaInfo, rows: usize) -> Result<Vec<f32>> {
    if info.weights.is_empty() || info.weights.len() == rows {
        return Ok(info.weights.clone());
    }
    let groups = info.group_ptr.len().saturating_sub(1);
    if info.weights.len() == groups {
        let mut w = vec![0f32; rows];
        for g in 0..groups {
            w[info.group_ptr[g]..info.group_ptr[g + 1]].fill(info.weights[g]);
        }
        return Ok(w);
    }
    Err(Error::InvalidData(format!("{} weights for {rows} rows and {groups} groups", info.weights.len())))
}
