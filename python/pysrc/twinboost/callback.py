"""Training callbacks, as XGBoost's ``xgboost.callback``: a ``TrainingCallback`` is called before
and after training and around each round; ``after_iteration`` (or ``before_iteration``) returning
True ends training. ``EvaluationMonitor`` prints the evaluation log, ``EarlyStopping`` stops
when a metric stops improving (``train(verbose_eval=, early_stopping_rounds=)`` adds them), and
``LearningRateScheduler`` changes the learning rate between rounds."""

from collections import OrderedDict

# Metrics for which larger is better, by name prefix, as XGBoost's early stopping decides.
_MAXIMIZED = ("auc", "aucpr", "pre", "pre@", "map", "ndcg", "auc@", "aucpr@", "map@", "ndcg@")


class TrainingCallback:
    """A hook into ``train``: override any of the four methods.

    ``evals_log`` maps each evaluation set's name to its metrics' names and their values so far
    (one a round). ``epoch`` counts this call's rounds from 0, also when training continues a
    model.
    """

    def before_training(self, model):
        """Before the first round; returns the model."""
        return model

    def after_training(self, model):
        """After the last round; returns the model (``EarlyStopping(save_best=True)`` returns
        another)."""
        return model

    def before_iteration(self, model, epoch, evals_log):
        """Before each round; True stops training."""
        return False

    def after_iteration(self, model, epoch, evals_log):
        """After each round and its evaluation; True stops training."""
        return False


class CallbackContainer:
    """Calls the callbacks in order and keeps the evaluation history (``evals_result``)."""

    def __init__(self, callbacks):
        self.callbacks = list(callbacks)
        for c in self.callbacks:
            if not isinstance(c, TrainingCallback):
                raise TypeError(f"callbacks take TrainingCallback instances, not {type(c).__name__}")
        self.history = OrderedDict()

    def before_training(self, model):
        for c in self.callbacks:
            model = c.before_training(model)
        return model

    def after_training(self, model):
        for c in self.callbacks:
            model = c.after_training(model)
        return model

    def before_iteration(self, model, epoch):
        # Every callback is called, then any True stops.
        return any([c.before_iteration(model, epoch, self.history) for c in self.callbacks])

    def after_iteration(self, model, epoch, values):
        """``values``: the round's (set, metric, value) in log order."""
        for data, metric, value in values:
            self.history.setdefault(data, OrderedDict()).setdefault(metric, []).append(value)
        return any([c.after_iteration(model, epoch, self.history) for c in self.callbacks])


class EvaluationMonitor(TrainingCallback):
    """Prints ``[epoch]\\tset-metric:value`` (5 decimals, XGBoost's and the command line's line)
    every ``period`` rounds, and the last round's if it was skipped."""

    def __init__(self, rank=0, period=1, show_stdv=False, logger=None):
        del rank, show_stdv
        self.period = max(int(period), 1)
        self._print = logger or (lambda msg: print(msg, flush=True))
        self._latest = None

    def after_iteration(self, model, epoch, evals_log):
        if not evals_log:
            return False
        line = f"[{epoch}]" + "".join(
            f"\t{data}-{metric}:{log[-1]:.5f}" for data, metrics in evals_log.items() for metric, log in metrics.items()
        )
        if epoch % self.period == 0:
            self._print(line)
            self._latest = None
        else:
            self._latest = line
        return False

    def after_training(self, model):
        if self._latest is not None:
            self._print(self._latest)
            self._latest = None
        return model


class LearningRateScheduler(TrainingCallback):
    """Changes the learning rate as training goes, as XGBoost's: ``learning_rates`` is a function
    of the round (``epoch``, from 0) or a sequence a round. After round ``epoch`` it sets
    ``learning_rate`` to ``learning_rates(epoch)`` for the rounds that follow; the first round uses
    the parameters' rate."""

    def __init__(self, learning_rates):
        if callable(learning_rates):
            self.learning_rates = learning_rates
        elif isinstance(learning_rates, (list, tuple)):
            rates = list(learning_rates)
            self.learning_rates = lambda epoch: rates[epoch]
        else:
            raise TypeError(f"learning_rates: a function of the round or a sequence, not {type(learning_rates).__name__}")
        super().__init__()

    def after_iteration(self, model, epoch, evals_log):
        model.set_param("learning_rate", self.learning_rates(epoch))
        return False


class EarlyStopping(TrainingCallback):
    """Stops when ``metric_name`` of ``data_name`` (by default the last metric of the last
    evaluation set) has not improved by more than ``min_delta`` for ``rounds`` rounds. The best
    round (counted over the whole model) and its score become the model's ``best_iteration`` and
    ``best_score``; with ``save_best`` the model returned ends at that round. ``maximize``
    defaults to the metric's direction (``auc``, ``ndcg``, ``map``, ... larger)."""

    def __init__(self, rounds, metric_name=None, data_name=None, maximize=None, save_best=False, min_delta=0.0):
        if min_delta < 0:
            raise ValueError("min_delta must be >= 0")
        self.rounds = int(rounds)
        self.metric_name = metric_name
        self.data_name = data_name
        self.maximize = maximize
        self.save_best = save_best
        self.min_delta = float(min_delta)
        self._start = 0
        self._best = None
        self._since_best = 0

    def before_training(self, model):
        self._start = model.num_boosted_rounds()
        self._best, self._since_best = None, 0
        return model

    def after_training(self, model):
        if not self.save_best or model.attr("best_iteration") is None:
            return model
        best_iteration, best_score = model.best_iteration, model.best_score
        model = model[: best_iteration + 1]
        model.set_attr(best_iteration=best_iteration, best_score=best_score)
        return model

    def _improves(self, score):
        if self.maximize:
            return score - self.min_delta > self._best
        return self._best - self.min_delta > score

    def after_iteration(self, model, epoch, evals_log):
        if not evals_log:
            raise ValueError("early stopping needs at least one evaluation set")
        data = self.data_name or list(evals_log)[-1]
        if data not in evals_log:
            raise ValueError(f"early stopping: no evaluation set named {data!r}")
        metric = self.metric_name or list(evals_log[data])[-1]
        if metric not in evals_log[data]:
            raise ValueError(f"early stopping: no metric named {metric!r} for {data!r}")
        if self.maximize is None:
            self.maximize = metric != "mape" and metric.startswith(_MAXIMIZED)
        score = evals_log[data][metric][-1]
        if self._best is None or self._improves(score):
            self._best, self._since_best = score, 0
            model.set_attr(best_score=str(score), best_iteration=str(epoch + self._start))
        else:
            self._since_best += 1
        return self._since_best >= self.rounds
