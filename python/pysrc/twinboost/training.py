"""``train``: XGBoost's training function. The rounds run in the native module with the GIL
released; the callbacks run between them, and Ctrl-C stops at the end of the round with
``KeyboardInterrupt`` (no model is returned)."""

import numpy as np

from . import _core
from .callback import CallbackContainer, EarlyStopping, EvaluationMonitor
from .core import Booster, DMatrix, ExtMemQuantileDMatrix, QuantileDMatrix, _configure_constraints, _params_pairs
from .exceptions import DataError, ParameterError


class _TrainingBooster(Booster):
    """The model as callbacks see it during training: read with a copy of the trees of the round
    (taken only when a callback reads them), attributes kept and given to the trained model."""

    def __init__(self, params, start):
        super().__init__(params)
        self._start = start
        self._rounds = start.num_boosted_rounds() if start is not None else 0
        self._view = None
        self._snapshot = None
        self._attrs = {}
        self._learning_rate = None

    def set_param(self, params, value=None):
        """As XGBoost's during training: ``learning_rate`` (``eta``) applies from the next round
        (``LearningRateScheduler``); ``device`` and ``nthread`` only to this view's predictions;
        other training parameters cannot change mid-run (a ``ParameterError``)."""
        pairs = {params: value} if isinstance(params, str) else dict(params)
        for name, value in pairs.items():
            if name in ("learning_rate", "eta"):
                self._learning_rate = float(value)
            elif name not in ("device", "nthread", "n_jobs", "verbosity"):
                raise ParameterError(f"parameter `{name}`: only learning_rate (eta) can change during training")
        super().set_param(pairs)

    def _take_learning_rate(self):
        rate, self._learning_rate = self._learning_rate, None
        return rate

    def _at(self, view, rounds):
        self._view, self._snapshot, self._rounds = view, None, rounds

    def _model(self):
        if self._snapshot is None:
            if self._view is not None:
                self._snapshot = self._view.snapshot()
            elif self._start is not None:
                self._snapshot = self._start._model().copy()
            else:
                return super()._model()
            for key, value in self._attrs.items():
                self._snapshot.set_attribute(key, value)
        return self._snapshot

    def num_boosted_rounds(self):
        return self._rounds

    def set_attr(self, **kwargs):
        for key, value in kwargs.items():
            self._attrs[key] = None if value is None else str(value)
            if self._snapshot is not None:
                self._snapshot.set_attribute(key, self._attrs[key])


def _objective(obj, dtrain):
    """XGBoost's ``obj(predt, dtrain) -> (grad, hess)`` over flat float32 margins."""
    rows = dtrain.num_row()

    def gradients(margins):
        predt = margins if margins.shape[0] == rows else margins.reshape(rows, -1)
        grad, hess = obj(predt, dtrain)
        grad = np.ascontiguousarray(grad, dtype=np.float32).reshape(-1)
        hess = np.ascontiguousarray(hess, dtype=np.float32).reshape(-1)
        if grad.shape != margins.shape or hess.shape != margins.shape:
            raise DataError(f"the objective gave {grad.size} gradients and {hess.size} hessians for {margins.size} margins")
        return grad, hess

    return gradients


class _CustomMetric:
    """XGBoost's ``custom_metric(predt, dmatrix)``, returning ``(name, value)`` or a list of them,
    over flat float32 predictions of set ``index`` (0: the training data, then the evaluation
    sets). The native module logs the first pair; the others join the round's log after it."""

    def __init__(self, function, sets):
        self.function, self.sets = function, sets
        self.more = {}  # id of a set's DMatrix -> this round's pairs after the first

    def __call__(self, predictions, index):
        data = self.sets[index]
        rows = data.num_row()
        predt = predictions if predictions.shape[0] == rows else predictions.reshape(rows, -1)
        result = self.function(predt, data)
        pairs = [(str(name), float(value)) for name, value in (result if isinstance(result, list) else [result])]
        if not pairs:
            raise ValueError("custom_metric returned no (name, value) pair")
        self.more[id(data)] = pairs[1:]
        return pairs[0]

    def complete(self, values, evals):
        """The round's log with each set's further pairs after its entries (the custom metric is
        logged last for each set, as XGBoost does)."""
        sets = {name: data for data, name in evals}
        log = []
        for i, entry in enumerate(values):
            log.append(entry)
            name = entry[0]
            if i + 1 == len(values) or values[i + 1][0] != name:
                log.extend((name, metric, value) for metric, value in self.more.get(id(sets.get(name)), []))
        return log


def _start_model(xgb_model):
    if xgb_model is None or isinstance(xgb_model, Booster):
        return xgb_model
    return Booster(model_file=xgb_model)


def train(params, dtrain, num_boost_round=10, *, evals=None, obj=None, maximize=None,
          early_stopping_rounds=None, evals_result=None, verbose_eval=True, xgb_model=None,
          callbacks=None, custom_metric=None):
    """Trains a model, as ``xgboost.train``: ``params`` is XGBoost's parameter dict
    (``device="cuda"`` trains on the GPU, the same model as the CPU's), ``evals`` pairs of
    ``(DMatrix, name)`` logged every round, ``obj(predt, dtrain) -> (grad, hess)`` a custom
    objective, ``custom_metric(predt, dmatrix) -> (name, value)`` (or a list of pairs) metrics
    logged after the others (given what ``predict`` gives, or the margins with ``obj``), ``xgb_model`` a model
    (Booster, path or bytes) to continue. Returns the Booster."""
    if not isinstance(dtrain, DMatrix):
        raise TypeError(f"dtrain must be a DMatrix, not {type(dtrain).__name__}")
    evals = list(evals or [])
    for pair in evals:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], DMatrix) and isinstance(pair[1], str)):
            raise TypeError("evals takes (DMatrix, name) pairs")
    callbacks = list(callbacks or [])
    if verbose_eval:
        callbacks.append(EvaluationMonitor(period=1 if verbose_eval is True else int(verbose_eval)))
    if early_stopping_rounds:
        callbacks.append(EarlyStopping(rounds=early_stopping_rounds, maximize=maximize))
    container = CallbackContainer(callbacks)
    params = dict(params.items() if isinstance(params, dict) else params or [])
    if isinstance(dtrain, (QuantileDMatrix, ExtMemQuantileDMatrix)) and dtrain.max_bin is not None:
        # The matrix's bins are the training's, as in XGBoost (which refuses a different max_bin).
        given = params.get("max_bin")
        if given is not None and int(given) != int(dtrain.max_bin):
            raise ParameterError(f"parameter `max_bin`: {given}, but the {type(dtrain).__name__} has {dtrain.max_bin} bins")
        params["max_bin"] = dtrain.max_bin
    params = _configure_constraints(params, dtrain.feature_names)
    start = _start_model(xgb_model)
    model = _TrainingBooster(params, start)
    container.before_training(model)
    first = model.num_boosted_rounds()

    def before(round, view):
        model._at(view, round)
        stop = container.before_iteration(model, round - first)
        return bool(stop), model._take_learning_rate()

    metric = _CustomMetric(custom_metric, [dtrain] + [d for d, _ in evals]) if custom_metric else None

    def after(round, values, view):
        model._at(view, round + 1)
        if metric is not None:
            values = metric.complete(values, evals)
        return container.after_iteration(model, round - first, values)

    handle = _core.train(
        _params_pairs(params), dtrain._handle, int(num_boost_round),
        [(d._handle, name) for d, name in evals],
        xgb_model=start._model() if start is not None else None,
        before_iteration=before if container.callbacks else None,
        after_iteration=after,
        obj=_objective(obj, dtrain) if obj is not None else None,
        custom_metric=metric,
        maximize=bool(maximize),
    )
    booster = Booster._wrap(handle, params)
    for key, value in model._attrs.items():
        handle.set_attribute(key, value)
    booster = container.after_training(booster)
    if evals_result is not None:
        evals_result.update(container.history)
    return booster
