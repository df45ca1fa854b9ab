//! The evaluation sets of a run: their margins kept up to date round by round (on the host, or on
//! the device when the rounds are there), and each round's log of every set's metrics, computed on
//! the device when it computes all of them (then the margins never come back).

use primitives::Gpu;

use boost_kernels::metric::Transform;

use super::backend::DeviceRounds;
use super::callback::EvalLayout;
use super::device::on_device;
use super::RoundLog;
use crate::data::MetaInfo;
use crate::gpu::{DeviceEvalSet, DeviceTrees, InitialMargins};
use crate::metric::{DeviceMetric, Metric, MetricInput};
use crate::model::Model;
use crate::objective::{DeviceObjective, Objective};
use crate::phases::PhaseTimes;
use crate::rows::{Features, Rows};
use crate::tree::Tree;
use crate::Result;

/// The evaluation sets and metrics of a run, with what each set's margins are so far.
pub(super) struct Evaluation<'a> {
    train: &'a Rows<'a>,
    sets: &'a [(Rows<'a>, &'a str)],
    metrics: Vec<Box<dyn Metric>>,
    outputs: usize,
    /// Each set's margins on the host (none for the training set, whose margins are the run's, nor
    /// for a set on the device).
    margins: Vec<Vec<f32>>,
    /// Each set on the device, when the rounds are there.
    on_device: Vec<Option<DeviceEval>>,
    /// The training set's metrics in the device's form, when the device computes all of them.
    train_on_device: Option<Vec<DeviceMetric>>,
    /// Whether the training data fits each metric (checked once; NaN where it does not).
    train_fits: Vec<bool>,
    /// The objective's evaluation transform as the device applies it.
    transform: Option<Transform>,
}

/// How a run's rounds are computed, for its evaluation sets' setup.
pub(super) struct RoundsOn<'r, 'g> {
    /// The device computing the rounds and the objective's form there.
    pub device: Option<(&'r mut dyn DeviceRounds<'g>, DeviceObjective)>,
    /// The model's base margins.
    pub base_margins: &'r [f32],
    /// Whether a set with no margins of its own starts at `base_margins`, made on the device.
    pub from_base: bool,
}

impl<'a> Evaluation<'a> {
    /// The sets with their margins before the first round (`margins`, one a set: empty when made
    /// on the device or for the training set); each set uploaded when the rounds are on a device.
    pub(super) fn new(
        train: &'a Rows<'a>,
        sets: &'a [(Rows<'a>, &'a str)],
        metrics: Vec<Box<dyn Metric>>,
        objective: &dyn Objective,
        margins: Vec<Vec<f32>>,
        rounds: RoundsOn<'_, '_>,
        phases: &mut PhaseTimes,
    ) -> Result<Self> {
        let outputs = objective.outputs();
        let transform = objective.device_eval_transform();
        let (mut train_on_device, mut train_fits, mut on_device) = (None, Vec::new(), Vec::new());
        if let Some((device, device_objective)) = rounds.device {
            train_on_device = device_metrics_of(&metrics, device_objective, transform, train.info)
                .filter(|ms| ms.iter().all(|m| device.evaluates(m)));
            if train_on_device.is_some() {
                let rows = train.rows() * outputs;
                train_fits = metrics.iter().map(|m| m.check(rows, train.info, outputs).is_ok()).collect();
            }
            let gpu = device.gpu();
            for ((data, _), margins) in sets.iter().zip(&margins) {
                if data.is(train) || data.rows() == 0 || !device.keeps_evaluation_sets(device_objective) {
                    on_device.push(None);
                    continue;
                }
                let from_base = rounds.from_base && data.info.base_margin.is_empty();
                let margins = super::initial_margins(from_base, rounds.base_margins, margins);
                let start = std::time::Instant::now();
                let eval = DeviceEval::new(gpu, data, &metrics, device_objective, transform, margins)?;
                phases.add("evaluation sets to the device", start.elapsed());
                on_device.push(Some(eval));
            }
        } else {
            on_device.resize_with(sets.len(), || None);
        }
        Ok(Evaluation { train, sets, metrics, outputs, margins, on_device, train_on_device, train_fits, transform })
    }

    /// What the log holds.
    pub(super) fn layout(&self) -> EvalLayout {
        EvalLayout {
            sets: self.sets.iter().map(|(_, name)| name.to_string()).collect(),
            metrics: self.metrics.iter().map(|m| (m.name(), m.higher_is_better())).collect(),
        }
    }

    /// Whether the log reads the training margins on the host (read back from a device each round).
    pub(super) fn reads_train_margins(&self) -> bool {
        self.sets.iter().any(|(data, _)| data.is(self.train))
            && !self.metrics.is_empty()
            && self.train_on_device.is_none()
    }

    /// The round's `trees` appended to `model`, and every set's margins moved on by them: walked
    /// on `gpu` for the sets there, predicted on the host for the others.
    pub(super) fn add_round(
        &mut self,
        model: &mut Model,
        trees: Vec<(Tree, u32)>,
        gpu: Option<&Gpu>,
        objective: &dyn Objective,
    ) -> Result<()> {
        let round = model.num_rounds();
        if let (true, Some(gpu)) = (self.on_device.iter().any(Option::is_some), gpu) {
            on_device(gpu, "predicting the evaluation sets", || {
                let trees = DeviceTrees::upload(gpu, &trees)?;
                self.on_device.iter_mut().flatten().try_for_each(|eval| eval.set.add_trees(gpu, &trees))
            })?;
        }
        model.push_round(trees)?;
        let to_margin = |b: f32| objective.prob_to_margin(b);
        for (((data, _), margins), on_device) in self.sets.iter().zip(&mut self.margins).zip(&self.on_device) {
            if !data.is(self.train) && on_device.is_none() {
                let range = (round, round + 1);
                *margins =
                    model.predict_encoded_margin(data.host_features()?, Some(margins), to_margin, range, None)?;
            }
        }
        Ok(())
    }

    /// Round `round`'s log of every set's metrics, with whether any was computed on the device;
    /// the training set's from `train_margins` (host) or from `rounds` (device).
    pub(super) fn log(
        &mut self,
        round: usize,
        train_margins: &[f32],
        mut rounds: Option<&mut dyn DeviceRounds<'_>>,
        gpu: Option<&Gpu>,
        objective: &dyn Objective,
    ) -> Result<(RoundLog, bool)> {
        let mut log = RoundLog { round, values: Vec::new() };
        let mut on_the_device = false;
        let transform = self.transform.unwrap_or(Transform::IDENTITY);
        let sets = self.sets.iter().zip(&mut self.margins).zip(&mut self.on_device);
        for (((data, name), margins), device_eval) in sets {
            let values = &mut log.values;
            if let (Some(eval), Some(gpu)) = (device_eval, gpu) {
                if let Some(kernel_metrics) = &eval.metrics {
                    log_device_metrics(values, name, &self.metrics, kernel_metrics, &eval.fits, |metric| {
                        on_device(gpu, "evaluating an evaluation set", || eval.set.evaluate(gpu, metric, transform))
                    })?;
                    on_the_device = true;
                    continue;
                }
                // A metric of the host's: the margins come back.
                *margins = on_device(gpu, "reading an evaluation set's margins", || eval.set.margins(gpu))?;
            }
            let is_train = data.is(self.train);
            if let (true, Some(kernel_metrics), Some(device)) = (is_train, &self.train_on_device, rounds.as_deref_mut())
            {
                let gpu = device.gpu();
                log_device_metrics(values, name, &self.metrics, kernel_metrics, &self.train_fits, |metric| {
                    on_device(gpu, "evaluating the training metrics", || device.evaluate(metric, transform))
                })?;
                on_the_device = true;
                continue;
            }
            let margins = if is_train { train_margins } else { margins.as_slice() };
            let predictions = objective.eval_transform(margins);
            let mut predicted = None;
            for metric in &self.metrics {
                let input = match metric.input() {
                    MetricInput::EvalTransform => predictions.as_slice(),
                    MetricInput::Prediction => predicted.get_or_insert_with(|| objective.transform(margins)).as_slice(),
                    MetricInput::Margins => margins,
                };
                // The value first: a custom metric may name itself as it computes it.
                let value = metric.evaluate(input, data.info, self.outputs);
                values.push((name.to_string(), metric.name(), value));
            }
        }
        Ok((log, on_the_device))
    }

    /// Whether the log has nothing to show (no sets or no metrics).
    pub(super) fn is_empty(&self) -> bool {
        self.sets.is_empty() || self.metrics.is_empty()
    }
}

/// An evaluation set on the device, with the metrics the device computes for it (all of the run's,
/// or `None`: then its margins come back for the host's) and whether its data fits each.
struct DeviceEval {
    set: DeviceEvalSet,
    metrics: Option<Vec<DeviceMetric>>,
    fits: Vec<bool>,
}

impl DeviceEval {
    /// `data` on `gpu` (uploaded, or the caller's device rows) at `margins`.
    fn new(
        gpu: &Gpu,
        data: &Rows<'_>,
        metrics: &[Box<dyn Metric>],
        objective: DeviceObjective,
        transform: Option<Transform>,
        margins: InitialMargins<'_>,
    ) -> Result<Self> {
        let set = on_device(gpu, "uploading an evaluation set", || match data.features {
            Features::Host(features) => DeviceEvalSet::new(gpu, features, data.info, objective, margins),
            Features::Device { data: rows, .. } => DeviceEvalSet::from_device(gpu, rows, data.info, objective, margins),
            Features::Pages(_) => Err(crate::rows::no_raw_features("an evaluation set on the device")),
        })?;
        let outputs = objective.outputs();
        let fits = metrics.iter().map(|m| m.check(data.rows() * outputs, data.info, outputs).is_ok()).collect();
        Ok(DeviceEval { set, metrics: device_metrics_of(metrics, objective, transform, data.info), fits })
    }
}

/// Appends set `name`'s values of `metrics` to the log, each computed on the device by `evaluate`
/// from its device form, or NaN where the set's data does not fit it (as `Metric::evaluate` gives).
fn log_device_metrics(
    values: &mut Vec<(String, String, f64)>,
    name: &str,
    metrics: &[Box<dyn Metric>],
    kernel_metrics: &[DeviceMetric],
    fits: &[bool],
    mut evaluate: impl FnMut(DeviceMetric) -> Result<f64>,
) -> Result<()> {
    for ((metric, &kernel_metric), &fits) in metrics.iter().zip(kernel_metrics).zip(fits) {
        let value = if fits { evaluate(kernel_metric)? } else { f64::NAN };
        values.push((name.to_string(), metric.name(), value));
    }
    Ok(())
}

/// The metrics of a set with `info` in the device's form, when the device computes every one of them
/// for predictions of `objective`: row-wise ones of one margin a row with an element-wise transform,
/// multi-class ones of a softmax, AUC (binary, one-vs-rest, and per query group for a ranking
/// objective), and `ndcg`/`map` of a ranking objective (ranked by its margins; of another
/// objective's transformed predictions, on the host).
fn device_metrics_of(
    metrics: &[Box<dyn Metric>],
    objective: DeviceObjective,
    transform: Option<Transform>,
    info: &MetaInfo,
) -> Option<Vec<DeviceMetric>> {
    // One margin a row, transformed element-wise: an element-wise objective, or absolute error (a
    // single quantile, a single expectile).
    let row_wise = match objective {
        DeviceObjective::Elementwise(_) => true,
        DeviceObjective::ScaledResidual(o) => o.outputs == 1,
        DeviceObjective::Expectile(o) => o.outputs == 1,
        _ => false,
    } && transform.is_some();
    metrics
        .iter()
        .map(|m| match (m.device_metric()?, objective) {
            (d @ DeviceMetric::Elementwise(_), _) if row_wise => Some(d),
            (d @ DeviceMetric::MultiClass(_), DeviceObjective::Softmax { .. }) => Some(d),
            (d @ DeviceMetric::Auc(_), DeviceObjective::Elementwise(_) | DeviceObjective::ScaledResidual(_))
                if row_wise && info.group_ptr.is_empty() =>
            {
                Some(d)
            }
            (d @ DeviceMetric::Auc(_), DeviceObjective::Softmax { .. }) if info.group_ptr.is_empty() => Some(d),
            (d @ DeviceMetric::Rank(_), DeviceObjective::LambdaRank(_)) => Some(d),
            // Per group with groups; without, the binary AUC, whose row weights a ranking set's
            // device rows do not keep.
            (d @ DeviceMetric::Auc(_), DeviceObjective::LambdaRank(_))
                if !info.group_ptr.is_empty() || info.weights.is_empty() =>
            {
                Some(d)
            }
            _ => None,
        })
        .collect()
}
