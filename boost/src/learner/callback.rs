//! Callbacks of the training loop, as XGBoost's `TrainingCallback`: called before the first round,
//! around each round (with its evaluation log) and after the last. The evaluation monitor
//! ([`EvaluationMonitor`], `verbose_eval`) and early stopping ([`EarlyStopping`],
//! `early_stopping_rounds`) are two of them; a caller passes its own beside them.

use std::ops::ControlFlow;

use super::RoundLog;
use crate::model::Model;
use crate::{Error, Result};

/// What a run's evaluation log holds, in log order: the evaluation sets' names and the metrics'
/// names, each with whether larger is better.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvalLayout {
    /// The evaluation sets' names.
    pub sets: Vec<String>,
    /// (metric name, larger is better) of each metric, logged for every set.
    pub metrics: Vec<(String, bool)>,
}

/// A hook into [`crate::learner::train`]'s loop. Every method has a default that does nothing;
/// [`ControlFlow::Break`] from either iteration hook ends training after that round (every callback
/// is still called for it, as XGBoost's `CallbackContainer` does).
pub trait TrainingCallback {
    /// Before the first round: the model (a continued model's trees included) and what the
    /// evaluation log will hold. An error ends training before any tree is grown.
    fn before_training(&mut self, _model: &Model, _layout: &EvalLayout) -> Result<()> {
        Ok(())
    }

    /// Before round `round` (counted from the model's first tree, continued rounds included).
    fn before_iteration(&mut self, _model: &Model, _round: usize) -> Result<ControlFlow<()>> {
        Ok(ControlFlow::Continue(()))
    }

    /// After each round, with its evaluation log (no values when nothing is evaluated).
    fn after_iteration(&mut self, _model: &Model, _log: &RoundLog) -> Result<ControlFlow<()>> {
        Ok(ControlFlow::Continue(()))
    }

    /// After the last round; the model may be changed (early stopping records its best round).
    fn after_training(&mut self, _model: &mut Model) -> Result<()> {
        Ok(())
    }

    /// The learning rate (`eta`) from round `round` on, when this callback changes it (XGBoost's
    /// `LearningRateScheduler`, or a callback's `set_param("learning_rate", ...)`): asked before
    /// each round, after [`TrainingCallback::before_iteration`]. `None` keeps the current one.
    fn learning_rate(&mut self, _round: usize) -> Option<f32> {
        None
    }
}

/// Shows the evaluation log every `period` rounds and the last round's (XGBoost's
/// `EvaluationMonitor`; `TrainOptions::verbose_eval` adds one writing to standard error).
pub struct EvaluationMonitor<'a> {
    period: usize,
    show: Box<dyn FnMut(&RoundLog) + 'a>,
    /// The latest log not shown yet, shown when training ends.
    unshown: Option<RoundLog>,
}

impl EvaluationMonitor<'static> {
    /// Writes XGBoost's line (`[12]\ttrain-auc:0.91000`) to standard error every `period` rounds
    /// (at least 1).
    pub fn new(period: usize) -> Self {
        Self::with_output(period, |log| eprintln!("{log}"))
    }
}

impl<'a> EvaluationMonitor<'a> {
    /// Passes the log of every `period`-th round (at least 1) and of the last to `show`.
    pub fn with_output(period: usize, show: impl FnMut(&RoundLog) + 'a) -> Self {
        EvaluationMonitor { period: period.max(1), show: Box::new(show), unshown: None }
    }
}

impl TrainingCallback for EvaluationMonitor<'_> {
    fn after_iteration(&mut self, _model: &Model, log: &RoundLog) -> Result<ControlFlow<()>> {
        if log.values.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        if log.round.is_multiple_of(self.period) {
            (self.show)(log);
            self.unshown = None;
        } else {
            self.unshown = Some(log.clone());
        }
        Ok(ControlFlow::Continue(()))
    }

    fn after_training(&mut self, _model: &mut Model) -> Result<()> {
        if let Some(log) = self.unshown.take() {
            (self.show)(&log);
        }
        Ok(())
    }
}

/// Stops training when a metric of an evaluation set has not improved for `rounds` rounds
/// (XGBoost's `EarlyStopping`): by default the last metric of the last set, larger being better
/// as the metric says. The best round and its score become the model's `best_iteration` and
/// `best_score` attributes, which XGBoost's scikit-learn API predicts with.
#[derive(Clone, Debug)]
pub struct EarlyStopping {
    rounds: usize,
    data_name: Option<String>,
    metric_name: Option<String>,
    maximize: Option<bool>,
    min_delta: f64,
    /// Which value of the log is watched, and whether larger is better: set before training.
    watched: Option<(usize, bool)>,
    best: Option<(usize, f64)>,
}

impl EarlyStopping {
    /// Stops after `rounds` rounds without improvement.
    pub fn new(rounds: usize) -> Self {
        EarlyStopping {
            rounds,
            data_name: None,
            metric_name: None,
            maximize: None,
            min_delta: 0.0,
            watched: None,
            best: None,
        }
    }

    /// Watches the evaluation set named `name` instead of the last.
    pub fn data_name(mut self, name: impl Into<String>) -> Self {
        self.data_name = Some(name.into());
        self
    }

    /// Watches the metric named `name` instead of the last.
    pub fn metric_name(mut self, name: impl Into<String>) -> Self {
        self.metric_name = Some(name.into());
        self
    }

    /// Whether larger is better, instead of what the metric says.
    pub fn maximize(mut self, maximize: bool) -> Self {
        self.maximize = Some(maximize);
        self
    }

    /// The least change that counts as an improvement (0 by default).
    pub fn min_delta(mut self, min_delta: f64) -> Self {
        self.min_delta = min_delta;
        self
    }

    /// The best round so far and its score.
    pub fn best(&self) -> Option<(usize, f64)> {
        self.best
    }

    fn position(names: &[String], wanted: &Option<String>, what: &str) -> Result<usize> {
        match wanted {
            None => Ok(names.len() - 1),
            Some(name) => names.iter().position(|n| n == name).ok_or_else(|| {
                Error::param("early_stopping_rounds", format!("no {what} named `{name}` (the log has {names:?})"))
            }),
        }
    }
}

impl TrainingCallback for EarlyStopping {
    fn before_training(&mut self, _model: &Model, layout: &EvalLayout) -> Result<()> {
        if layout.sets.is_empty() {
            return Err(Error::param("early_stopping_rounds", "needs at least one evaluation set (as in XGBoost)"));
        }
        if layout.metrics.is_empty() {
            return Err(Error::param("early_stopping_rounds", "needs a metric (disable_default_eval_metric is set)"));
        }
        let set = Self::position(&layout.sets, &self.data_name, "evaluation set")?;
        let names: Vec<String> = layout.metrics.iter().map(|(name, _)| name.clone()).collect();
        let metric = Self::position(&names, &self.metric_name, "metric")?;
        let maximize = self.maximize.unwrap_or(layout.metrics[metric].1);
        self.watched = Some((set * layout.metrics.len() + metric, maximize));
        self.best = None;
        Ok(())
    }

    fn after_iteration(&mut self, _model: &Model, log: &RoundLog) -> Result<ControlFlow<()>> {
        let Some((index, maximize)) = self.watched else {
            return Ok(ControlFlow::Continue(()));
        };
        let score = log.values.get(index).map_or(f64::NAN, |value| value.2);
        let improved = match self.best {
            None => true,
            Some((_, best)) if maximize => score > best + self.min_delta,
            Some((_, best)) => score < best - self.min_delta,
        };
        if improved {
            self.best = Some((log.round, score));
        }
        match self.best {
            Some((best, _)) if log.round - best >= self.rounds => Ok(ControlFlow::Break(())),
            _ => Ok(ControlFlow::Continue(())),
        }
    }

    fn after_training(&mut self, model: &mut Model) -> Result<()> {
        if let Some((round, score)) = self.best {
            model.attributes.insert("best_iteration".into(), round.to_string());
            model.attributes.insert("best_score".into(), python_float(score));
        }
        Ok(())
    }
}

/// `value` as Python's `str(float)` writes it, as XGBoost's early stopping stores `best_score`
/// (`0.5`, `1.0`, `1e-05`, `1.5e+16`): the same attribute from the Python package and from Rust.
fn python_float(value: f64) -> String {
    if !value.is_finite() {
        return if value.is_nan() {
            "nan".into()
        } else if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let fixed = value.to_string();
        if fixed.contains('.') {
            fixed
        } else {
            fixed + ".0"
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

/// The run's callbacks: the caller's, then the monitor and early stopping the options ask for
/// (XGBoost's order). Every callback is called at every step.
pub(super) struct Callbacks<'c, 'd> {
    callers: &'c mut [&'d mut dyn TrainingCallback],
    own: Vec<Box<dyn TrainingCallback>>,
}

impl<'c, 'd> Callbacks<'c, 'd> {
    pub(super) fn new(
        verbose_eval: usize,
        early_stopping_rounds: Option<usize>,
        callers: &'c mut [&'d mut dyn TrainingCallback],
    ) -> Self {
        let mut own: Vec<Box<dyn TrainingCallback>> = Vec::new();
        if verbose_eval > 0 {
            own.push(Box::new(EvaluationMonitor::new(verbose_eval)));
        }
        if let Some(rounds) = early_stopping_rounds {
            own.push(Box::new(EarlyStopping::new(rounds)));
        }
        Callbacks { callers, own }
    }

    fn each(&mut self, mut call: impl FnMut(&mut dyn TrainingCallback) -> Result<ControlFlow<()>>) -> Result<bool> {
        let mut stop = false;
        for callback in self.callers.iter_mut() {
            stop |= call(&mut **callback)?.is_break();
        }
        for callback in &mut self.own {
            stop |= call(callback.as_mut())?.is_break();
        }
        Ok(stop)
    }

    pub(super) fn before_training(&mut self, model: &Model, layout: &EvalLayout) -> Result<()> {
        self.each(|c| c.before_training(model, layout).map(ControlFlow::Continue)).map(drop)
    }

    /// Whether a callback asks to stop before round `round`.
    pub(super) fn before_iteration(&mut self, model: &Model, round: usize) -> Result<bool> {
        self.each(|c| c.before_iteration(model, round))
    }

    /// Whether a callback asks to stop after this round.
    pub(super) fn after_iteration(&mut self, model: &Model, log: &RoundLog) -> Result<bool> {
        self.each(|c| c.after_iteration(model, log))
    }

    /// The learning rate a callback sets for round `round` (the last one's, when several do).
    pub(super) fn learning_rate(&mut self, round: usize) -> Option<f32> {
        // Every callback is asked (one may take what it holds), the last rate set wins.
        let callers = self.callers.iter_mut().map(|c| c.learning_rate(round));
        let own = self.own.iter_mut().map(|c| c.learning_rate(round));
        callers.chain(own).fold(None, |last, rate| rate.or(last))
    }

    pub(super) fn after_training(&mut self, model: &mut Model) -> Result<()> {
        self.each(|c| c.after_training(model).map(ControlFlow::Continue)).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::python_float;

    #[test]
    fn scores_are_written_as_pythons_str_of_a_float() {
        let cases = [
            (0.5, "0.5"),
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, python) in cases {
            assert_eq!(python_float(value), python, "{value}");
        }
    }
}
