//! `train`: `boost`'s training loop on a thread of its own with the GIL released, the Python
//! side's round hook and custom objective called from it each round, and Ctrl-C turned into a stop
//! at the end of the round (then `KeyboardInterrupt`; no model is returned).

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use boost::data::MetaInfo;
use boost::model::Model;
use boost::{
    CustomMetric, CustomObjective, GradientPair, MetricInput, Params, RoundLog, TrainOptions, TrainingCallback,
};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;

use crate::booster::Booster;
use crate::dmatrix::DMatrix;
use crate::errors::OrRaise;

/// The first Python exception raised by a callable of the run, kept to be raised when it ends.
type Raised = Arc<Mutex<Option<PyErr>>>;

fn keep(raised: &Raised, error: PyErr) -> boost::Error {
    let message = error.to_string();
    raised.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(error);
    boost::Error::Callback(message)
}

/// The model being trained, as the round hooks see it: `snapshot()` copies it into a `Booster`
/// while a hook runs, and fails afterwards.
#[pyclass(module = "twinboost._core", name = "ModelView", frozen)]
pub struct ModelView {
    /// The model of the hook running now; null between hooks.
    model: Mutex<*const Model>,
}

// SAFETY: the pointer is only read under the mutex, and only while it is non-null, which it is
// exactly while `PythonRounds::call` runs with the `&Model` it came from borrowed (the training
// thread waits in that call, so the model neither moves nor changes).
unsafe impl Send for ModelView {}
// SAFETY: as for `Send`: every access goes through the mutex.
unsafe impl Sync for ModelView {}

#[pymethods]
impl ModelView {
    /// A copy of the model as it is now (in a round hook only).
    fn snapshot(&self, py: Python<'_>) -> PyResult<Booster> {
        let model = self.model.lock().unwrap_or_else(|p| p.into_inner());
        if model.is_null() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("the model can be read only inside a round hook"));
        }
        // SAFETY: non-null, so `PythonRounds::call` is running and the model is borrowed (above).
        let model = unsafe { &**model }.clone();
        Ok(Booster { inner: boost::Booster::from_model(model).or_raise(py)? })
    }
}

/// Calls the Python round hooks, `before(round, view) -> (stop, learning_rate or None)` and
/// `after(round, log, view) -> stop`: a true `stop` ends training. Stops with an error once Ctrl-C
/// was pressed.
struct PythonRounds {
    before: Option<Py<PyAny>>,
    after: Option<Py<PyAny>>,
    view: Py<ModelView>,
    interrupted: Arc<AtomicBool>,
    raised: Raised,
    /// The learning rate the callbacks set (`set_param`) for the coming round.
    learning_rate: Option<f32>,
}

impl PythonRounds {
    /// Calls `hook` with `args` and the view, the view showing `model` during the call.
    fn call(
        &mut self,
        before: bool,
        model: &Model,
        args: impl FnOnce(Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyTuple>>,
    ) -> boost::Result<ControlFlow<()>> {
        if self.interrupted.load(Ordering::Relaxed) {
            return Err(boost::Error::Callback("interrupted".into()));
        }
        if let Some(error) = self.raised.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            // The custom metric raised while the round was evaluated.
            return Err(boost::Error::Callback(error.to_string()));
        }
        let hook = if before { &self.before } else { &self.after };
        let Some(hook) = hook else { return Ok(ControlFlow::Continue(())) };
        let returned = Python::attach(|py| {
            let view = self.view.get();
            *view.model.lock().unwrap_or_else(|p| p.into_inner()) = model;
            let returned = args(py).and_then(|args| hook.call1(py, args)).and_then(|r| match before {
                true => r.extract::<(bool, Option<f32>)>(py),
                false => Ok((r.is_truthy(py)?, None)),
            });
            *view.model.lock().unwrap_or_else(|p| p.into_inner()) = std::ptr::null();
            returned.map_err(|error| keep(&self.raised, error))
        })?;
        let (stop, learning_rate) = returned;
        self.learning_rate = learning_rate.or(self.learning_rate);
        Ok(if stop { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
    }
}

impl TrainingCallback for PythonRounds {
    fn before_iteration(&mut self, model: &Model, round: usize) -> boost::Result<ControlFlow<()>> {
        let view = Python::attach(|py| self.view.clone_ref(py));
        self.call(true, model, |py| (round, view).into_pyobject(py))
    }

    fn after_iteration(&mut self, model: &Model, log: &RoundLog) -> boost::Result<ControlFlow<()>> {
        let view = Python::attach(|py| self.view.clone_ref(py));
        self.call(false, model, |py| (log.round, log.values.clone(), view).into_pyobject(py))
    }

    fn learning_rate(&mut self, _round: usize) -> Option<f32> {
        self.learning_rate.take()
    }
}

/// A Python objective `obj(margins) -> (grad, hess)` (float32 arrays of `rows * outputs`).
fn python_objective(obj: Py<PyAny>, raised: Raised) -> CustomObjective {
    CustomObjective::fallible(move |margins: &[f32], _info: &MetaInfo| {
        Python::attach(|py| {
            let gradients = || -> PyResult<Vec<GradientPair<f32>>> {
                let (grad, hess): (Bound<'_, PyArray1<f32>>, Bound<'_, PyArray1<f32>>) =
                    obj.call1(py, (PyArray1::from_slice(py, margins),))?.extract(py)?;
                let (grad, hess) = (grad.readonly(), hess.readonly());
                let (grad, hess) = (grad.as_slice()?, hess.as_slice()?);
                Ok(grad.iter().zip(hess).map(|(&g, &h)| GradientPair::new(g, h)).collect())
            };
            gradients().map_err(|e| keep(&raised, e))
        })
    })
}

/// A Python metric `metric(predictions, set) -> (name, value)` (`set`: 0 for the training data,
/// then the evaluation sets in order), computed from the margins or from what `predict` gives. An
/// exception is kept (the round's hook then raises it) and the value is NaN.
fn python_metric(metric: Py<PyAny>, margins: bool, maximize: bool, sets: Vec<usize>, raised: Raised) -> CustomMetric {
    let input = if margins { MetricInput::Margins } else { MetricInput::Prediction };
    let evaluate = move |predictions: &[f32], info: &MetaInfo| {
        let set = sets.iter().position(|&address| address == info as *const MetaInfo as usize);
        Python::attach(|py| {
            let value = metric.call1(py, (PyArray1::from_slice(py, predictions), set)).and_then(|v| v.extract(py));
            match value {
                Ok((name, value)) => (Some(name), value),
                Err(error) => {
                    keep(&raised, error);
                    (None, f64::NAN)
                }
            }
        })
    };
    CustomMetric::naming("custom", maximize, evaluate).input(input)
}

/// Trains `num_boost_round` rounds on `dtrain` with XGBoost-named `params`, evaluating `evals`
/// each round; `before_iteration(round, view)` or `after_iteration(round, log, view)` returning
/// true stops (`view.snapshot()` is the model then); `obj(margins)` gives the
/// gradients instead of the objective's; `custom_metric(predictions, set)` is logged after the
/// metrics (on the margins when `obj` is given, as XGBoost); `nthread` threads do the CPU work (0: all).
#[pyfunction]
#[pyo3(signature = (
    params, dtrain, num_boost_round, evals, xgb_model=None, before_iteration=None, after_iteration=None, obj=None,
    custom_metric=None, maximize=false
))]
#[allow(clippy::too_many_arguments)]
pub fn train(
    py: Python<'_>,
    params: Vec<(String, String)>,
    dtrain: PyRef<'_, DMatrix>,
    num_boost_round: usize,
    evals: Vec<(PyRef<'_, DMatrix>, String)>,
    xgb_model: Option<PyRef<'_, Booster>>,
    before_iteration: Option<Py<PyAny>>,
    after_iteration: Option<Py<PyAny>>,
    obj: Option<Py<PyAny>>,
    custom_metric: Option<Py<PyAny>>,
    maximize: bool,
) -> PyResult<Booster> {
    let params = Params::from_pairs(&params).or_raise(py)?;
    let raised = Raised::default();
    let interrupted = Arc::new(AtomicBool::new(false));
    // The sets' labels by address, which is how the metric tells which set it is given.
    let sets = std::iter::once(&*dtrain).chain(evals.iter().map(|(d, _)| &**d));
    let sets = sets.map(|d| d.inner.info() as *const MetaInfo as usize).collect();
    let on_margins = obj.is_some();
    let options = TrainOptions {
        num_boost_round,
        verbose_eval: 0,
        xgb_model: xgb_model.map(|b| b.inner.model().clone()),
        custom_objective: obj.map(|obj| python_objective(obj, raised.clone())),
        custom_metric: custom_metric.map(|m| python_metric(m, on_margins, maximize, sets, raised.clone())),
        ..Default::default()
    };
    let view = Py::new(py, ModelView { model: Mutex::new(std::ptr::null()) })?;
    let mut rounds = PythonRounds {
        before: before_iteration,
        after: after_iteration,
        view,
        interrupted: interrupted.clone(),
        raised: raised.clone(),
        learning_rate: None,
    };
    let evals: Vec<(&boost::DMatrix, &str)> = evals.iter().map(|(d, name)| (&d.inner, name.as_str())).collect();
    let dtrain = &dtrain.inner;
    let nthread = params.nthread;
    let run = || {
        crate::pools::install(nthread, || {
            boost::Booster::train_with(&params, dtrain, &evals, &options, &mut [&mut rounds])
        })
    };
    let trained = py.detach(|| run_watching_signals(run, &interrupted))?;
    if let Some(error) = raised.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(error);
    }
    let trained = trained.map_err(|reason| crate::pools::refused(py, nthread, reason))?;
    Ok(Booster { inner: trained.or_raise(py)? })
}

/// Runs `run` on a thread of its own while this (the caller's, usually Python's main) thread
/// looks for Ctrl-C every 100 ms: then `interrupted` is set, which ends training after the
/// round, and `KeyboardInterrupt` is returned.
fn run_watching_signals<T: Send>(run: impl FnOnce() -> T + Send, interrupted: &AtomicBool) -> PyResult<T> {
    std::thread::scope(|scope| {
        let (done, finished) = std::sync::mpsc::channel();
        let worker = scope.spawn(move || {
            let result = run();
            let _ = done.send(());
            result
        });
        let mut signal = None;
        while finished.recv_timeout(Duration::from_millis(100)).is_err() && !worker.is_finished() {
            if signal.is_none() {
                if let Err(error) = Python::attach(|py| py.check_signals()) {
                    interrupted.store(true, Ordering::Relaxed);
                    signal = Some(error);
                }
            }
        }
        let result = worker.join().map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("training panicked"))?;
        match signal {
            Some(error) => Err(error),
            None => Ok(result),
        }
    })
}
