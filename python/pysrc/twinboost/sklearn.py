"""scikit-learn estimators in XGBoost's shape: ``XGBRegressor``, ``XGBClassifier`` and
``XGBRanker`` (``n_estimators``, ``max_depth``, ``learning_rate``, ..., ``fit(X, y, eval_set=)``,
``early_stopping_rounds``, ``feature_importances_``, ``get_booster()``). They pass
scikit-learn's estimator checks and work in ``Pipeline``, ``GridSearchCV``, ``cross_val_score``
and with ``clone``. Unlike XGBoost's, the classifier takes any labels (strings included): it
encodes ``classes_`` itself."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .core import Booster, DMatrix
from .training import train

# XGBoost's scikit-learn names of the parameters that are the training parameters' own names.
_PARAMETERS = (
    "max_depth", "max_leaves", "max_bin", "grow_policy", "learning_rate", "verbosity", "objective",
    "booster", "tree_method", "n_jobs", "gamma", "min_child_weight", "max_delta_step", "subsample",
    "sampling_method", "colsample_bytree", "colsample_bylevel", "colsample_bynode", "reg_alpha",
    "reg_lambda", "scale_pos_weight", "base_score", "random_state", "num_parallel_tree", "device",
    "validate_parameters", "eval_metric", "max_cat_to_onehot", "max_cat_threshold", "monotone_constraints",
    "interaction_constraints",
)


def _check_accepted(X, fitting):
    """The rows as scikit-learn's checks expect them: numeric, 2-D, NaN allowed (missing),
    CSR/CSC sparse taken as they are."""
    return dict(accept_sparse=["csr", "csc"], dtype=[np.float32, np.float64], ensure_all_finite="allow-nan",
                reset=fitting)


_NO_Y = object()


def _validate(estimator, X, y=_NO_Y, fitting=False, **checks):
    """scikit-learn's checks of ``X`` (and ``y``, when passed) with the estimator's bookkeeping
    (``n_features_in_``, ``feature_names_in_``). A pandas frame with ``category`` columns, with
    ``enable_categorical``, is checked through a copy whose categories are their codes, and kept
    as it is: its strings reach the ``DMatrix``, which codes them."""
    proxy = _codes_of_categories(X)
    if proxy is not None and not estimator.enable_categorical:
        raise ValueError("X has category columns: pass enable_categorical=True, as XGBoost asks")
    checked = validate_data(estimator, X if proxy is None else proxy,
                            *(() if y is _NO_Y else (y,)), **checks, **_check_accepted(X, fitting))
    if proxy is None:
        return checked
    return (X, checked[1]) if y is not _NO_Y else X


def _codes_of_categories(X):
    """A copy of a pandas frame with each ``category`` column as its float codes (NaN where
    missing); None for anything else (or a frame without such columns)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns") or not any(str(t) == "category" for t in dtypes):
        return None
    proxy = X.copy()
    for name, dtype in zip(X.columns, dtypes):
        if str(dtype) == "category":
            codes = X[name].cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan
            proxy[name] = codes
    return proxy


class XGBModel(BaseEstimator):
    """The parameters and methods the three estimators share (XGBoost's ``XGBModel``)."""

    def __init__(self, *, n_estimators=None, max_depth=None, max_leaves=None, max_bin=None, grow_policy=None,
                 learning_rate=None, verbosity=None, objective=None, booster=None, tree_method=None, n_jobs=None,
                 gamma=None, min_child_weight=None, max_delta_step=None, subsample=None, sampling_method=None,
                 colsample_bytree=None, colsample_bylevel=None, colsample_bynode=None, reg_alpha=None,
                 reg_lambda=None, scale_pos_weight=None, base_score=None, random_state=None, missing=np.nan,
                 num_parallel_tree=None, importance_type=None, device=None, validate_parameters=None,
                 eval_metric=None, early_stopping_rounds=None, callbacks=None, enable_categorical=False,
                 feature_types=None, max_cat_to_onehot=None, max_cat_threshold=None, monotone_constraints=None,
                 interaction_constraints=None, feature_weights=None, **kwargs):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.max_bin = max_bin
        self.grow_policy = grow_policy
        self.learning_rate = learning_rate
        self.verbosity = verbosity
        self.objective = objective
        self.booster = booster
        self.tree_method = tree_method
        self.n_jobs = n_jobs
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.max_delta_step = max_delta_step
        self.subsample = subsample
        self.sampling_method = sampling_method
        self.colsample_bytree = colsample_bytree
        self.colsample_bylevel = colsample_bylevel
        self.colsample_bynode = colsample_bynode
        self.reg_alpha = reg_alpha
        self.reg_lambda = reg_lambda
        self.scale_pos_weight = scale_pos_weight
        self.base_score = base_score
        self.random_state = random_state
        self.missing = missing
        self.num_parallel_tree = num_parallel_tree
        self.importance_type = importance_type
        self.device = device
        self.validate_parameters = validate_parameters
        self.eval_metric = eval_metric
        self.early_stopping_rounds = early_stopping_rounds
        self.callbacks = callbacks
        self.enable_categorical = enable_categorical
        self.feature_types = feature_types
        self.max_cat_to_onehot = max_cat_to_onehot
        self.max_cat_threshold = max_cat_threshold
        self.monotone_constraints = monotone_constraints
        self.interaction_constraints = interaction_constraints
        self.feature_weights = feature_weights
        if kwargs:
            self.kwargs = kwargs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags

    # -- parameters ---------------------------------------------------------------------------

    @classmethod
    def _get_param_names(cls):
        # The subclasses' signatures name only what they change (`objective`): the parameters are
        # theirs and this class's.
        return sorted(set(super(XGBModel, XGBModel)._get_param_names()) | set(super(XGBModel, cls)._get_param_names()))

    def get_params(self, deep=True):
        params = super().get_params(deep)
        params.update(getattr(self, "kwargs", {}))
        return params

    def set_params(self, **params):
        known = self._get_param_names()
        for name, value in params.items():
            if name in known:
                setattr(self, name, value)
            else:
                if not hasattr(self, "kwargs"):
                    self.kwargs = {}
                self.kwargs[name] = value
        return self

    def get_xgb_params(self):
        """The training parameters, by XGBoost's names, of those that are set."""
        params = {name: getattr(self, name) for name in _PARAMETERS if getattr(self, name) is not None}
        params.update(getattr(self, "kwargs", {}))
        if isinstance(params.get("random_state"), np.random.RandomState):
            params["random_state"] = int(params["random_state"].randint(np.iinfo(np.int32).max))
        return params

    def get_num_boosting_rounds(self):
        """``n_estimators``, 100 by default as XGBoost's."""
        return 100 if self.n_estimators is None else int(self.n_estimators)

    # -- fitting ------------------------------------------------------------------------------

    def _dmatrix(self, X, y=None, weight=None, base_margin=None, **info):
        return DMatrix(X, label=y, weight=weight, base_margin=base_margin, missing=self.missing,
                       feature_names=self._feature_names(), feature_types=self.feature_types,
                       enable_categorical=self.enable_categorical, **info)

    def _feature_names(self):
        names = getattr(self, "feature_names_in_", None)
        return None if names is None else [str(n) for n in names]

    def _fit(self, X, y, params, sample_weight, base_margin, eval_set, sample_weight_eval_set,
             base_margin_eval_set, verbose, xgb_model, evals_info=None):
        """Trains on the checked rows; ``evals_info`` gives each evaluation set's extra fields."""
        info = dict((evals_info or {}).get("train", {}))
        if self.feature_weights is not None:
            info["feature_weights"] = self.feature_weights
        dtrain = self._dmatrix(X, y, sample_weight, base_margin, **info)
        evals = []
        for i, (Xe, ye) in enumerate(eval_set or []):
            Xe = _validate(self, Xe)
            weight = sample_weight_eval_set[i] if sample_weight_eval_set is not None else None
            margin = base_margin_eval_set[i] if base_margin_eval_set is not None else None
            extra = (evals_info or {}).get(i, {})
            evals.append((self._dmatrix(Xe, self._encode(ye), weight, margin, **extra), f"validation_{i}"))
        self.evals_result_ = {}
        start = xgb_model.get_booster() if isinstance(xgb_model, XGBModel) else xgb_model
        self._Booster = train(params, dtrain, self.get_num_boosting_rounds(), evals=evals,
                              early_stopping_rounds=self.early_stopping_rounds, evals_result=self.evals_result_,
                              verbose_eval=verbose, xgb_model=start, callbacks=self.callbacks)
        return self

    def _encode(self, y):
        return y

    def get_booster(self):
        """The trained ``Booster``."""
        if not hasattr(self, "_Booster"):
            raise NotFittedError("need to call fit or load_model beforehand")
        return self._Booster

    # -- prediction ---------------------------------------------------------------------------

    def _check_rows(self, X):
        check_is_fitted(self, "_Booster")
        return _validate(self, X)

    def _iteration_range(self, iteration_range):
        """As XGBoost's: the rounds up to the model's best iteration when it has one."""
        if iteration_range is not None and iteration_range[1] != 0:
            return iteration_range
        best = self._Booster.attr("best_iteration")
        return (0, int(best) + 1) if best is not None else (0, 0)

    def predict(self, X, output_margin=False, validate_features=True, base_margin=None, iteration_range=None):
        """Predictions of the rows (up to the best round after early stopping)."""
        X = self._check_rows(X)
        return self._Booster.predict(self._dmatrix(X, base_margin=base_margin), output_margin=output_margin,
                                     validate_features=validate_features,
                                     iteration_range=self._iteration_range(iteration_range))

    def apply(self, X, iteration_range=None):
        """The leaf each row reaches in each tree."""
        X = self._check_rows(X)
        return self._Booster.predict(self._dmatrix(X), pred_leaf=True,
                                     iteration_range=self._iteration_range(iteration_range))

    def evals_result(self):
        """Each evaluation set's metrics, round by round."""
        return self.evals_result_

    @property
    def best_iteration(self):
        """The best round of early stopping."""
        return self.get_booster().best_iteration

    @property
    def best_score(self):
        """The early-stopping metric's value at ``best_iteration``."""
        return self.get_booster().best_score

    @property
    def feature_importances_(self):
        """Each feature's importance of ``importance_type`` (``gain`` by default), normalised to
        sum to 1, zero for unused features."""
        booster = self.get_booster()
        scores = booster.get_score(importance_type=self.importance_type or "gain")
        names = booster.feature_names or [f"f{i}" for i in range(booster.num_features())]
        values = np.array([scores.get(name, 0.0) for name in names], dtype=np.float32)
        total = values.sum()
        return values / total if total > 0 else values

    def save_model(self, fname):
        """Saves the booster as XGBoost's JSON."""
        self.get_booster().save_model(fname)

    def load_model(self, fname):
        """Loads a JSON model into this estimator."""
        self._Booster = Booster(model_file=fname)
        self.n_features_in_ = self._Booster.num_features()


class XGBRegressor(RegressorMixin, XGBModel):
    """Gradient-boosted trees for regression (``objective="reg:squarederror"`` by default)."""

    def __init__(self, *, objective="reg:squarederror", **kwargs):
        super().__init__(objective=objective, **kwargs)

    def fit(self, X, y, *, sample_weight=None, base_margin=None, eval_set=None, verbose=True, xgb_model=None,
            sample_weight_eval_set=None, base_margin_eval_set=None):
        """Trains on ``X`` and ``y``; ``eval_set`` is a list of ``(X, y)`` logged every round."""
        X, y = _validate(self, X, y, fitting=True, y_numeric=True)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X)
        return self._fit(X, y, self.get_xgb_params(), sample_weight, base_margin, eval_set, sample_weight_eval_set,
                         base_margin_eval_set, verbose, xgb_model)


class XGBClassifier(ClassifierMixin, XGBModel):
    """Gradient-boosted trees for classification: ``binary:logistic`` for two classes,
    ``multi:softprob`` for more. Labels may be any values; ``classes_`` holds them sorted."""

    def __init__(self, *, objective="binary:logistic", **kwargs):
        super().__init__(objective=objective, **kwargs)

    def _encode(self, y):
        y = np.asarray(y)
        codes = np.searchsorted(self.classes_, y)
        codes = np.minimum(codes, len(self.classes_) - 1)
        unknown = self.classes_[codes] != y
        if unknown.any():
            raise ValueError(f"y contains labels not seen in training: {np.unique(y[unknown])[:5]}")
        return codes.astype(np.float32)

    def fit(self, X, y, *, sample_weight=None, base_margin=None, eval_set=None, verbose=True, xgb_model=None,
            sample_weight_eval_set=None, base_margin_eval_set=None):
        """Trains on ``X`` and the labels ``y``; ``eval_set`` is a list of ``(X, y)``."""
        X, y = _validate(self, X, y, fitting=True)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ValueError(f"the classifier needs at least 2 classes, y has {self.n_classes_} class")
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X)
        params = self.get_xgb_params()
        if self.n_classes_ > 2 and str(params.get("objective", "")).startswith("binary:"):
            params["objective"] = "multi:softprob"
        if str(params.get("objective", "")).startswith("multi:"):
            params["num_class"] = self.n_classes_
        return self._fit(X, self._encode(y), params, sample_weight, base_margin, eval_set, sample_weight_eval_set,
                         base_margin_eval_set, verbose, xgb_model)

    def predict_proba(self, X, validate_features=True, base_margin=None, iteration_range=None):
        """Each row's probability of each class, ``(rows, n_classes)``."""
        softmax = self.get_xgb_params().get("objective") == "multi:softmax"
        p = XGBModel.predict(self, X, output_margin=softmax, validate_features=validate_features,
                             base_margin=base_margin, iteration_range=iteration_range)
        if softmax:
            # multi:softmax predicts class ids; the probabilities are the softmax of the margins,
            # as XGBoost's predict_proba computes them.
            e = np.exp(p - p.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        if p.ndim == 1:
            return np.column_stack([1 - p, p])
        return p

    def predict(self, X, output_margin=False, validate_features=True, base_margin=None, iteration_range=None):
        """Each row's most probable class (margins with ``output_margin``)."""
        if output_margin:
            return XGBModel.predict(self, X, output_margin=True, validate_features=validate_features,
                                    base_margin=base_margin, iteration_range=iteration_range)
        p = self.predict_proba(X, validate_features, base_margin, iteration_range)
        return self.classes_[np.argmax(p, axis=1)]


class XGBRanker(XGBModel):
    """Learning to rank (``objective="rank:ndcg"``): ``fit`` takes the query groups as ``group``
    (sizes) or ``qid`` (a query id a row, rows sorted by it); without either, the rows are one
    query (XGBoost refuses that)."""

    def __init__(self, *, objective="rank:ndcg", **kwargs):
        super().__init__(objective=objective, **kwargs)

    def fit(self, X, y, *, group=None, qid=None, sample_weight=None, base_margin=None, eval_set=None,
            eval_group=None, eval_qid=None, verbose=False, xgb_model=None, sample_weight_eval_set=None,
            base_margin_eval_set=None):
        """Trains on ``X``, the relevance labels ``y`` and the groups (``group`` or ``qid``)."""
        if group is not None and qid is not None:
            raise ValueError("XGBRanker.fit takes the query groups as group= or qid=, not both")
        X, y = _validate(self, X, y, fitting=True, y_numeric=True)
        if group is None and qid is None:
            group = [X.shape[0]]
        info = {"train": {"group": group, "qid": qid}}
        for i in range(len(eval_set or [])):
            info[i] = {"group": eval_group[i] if eval_group is not None else None,
                       "qid": eval_qid[i] if eval_qid is not None else None}
        return self._fit(X, y, self.get_xgb_params(), sample_weight, base_margin, eval_set, sample_weight_eval_set,
                         base_margin_eval_set, verbose, xgb_model, evals_info=info)

    def score(self, X, y, *, qid=None, group=None):
        """The model's ``ndcg`` (the first ``eval_metric`` when one is set) on ``X``, ``y``."""
        X = self._check_rows(X)
        d = self._dmatrix(X, y, qid=qid, group=[X.shape[0]] if group is None and qid is None else group)
        line = self._Booster.eval(d)
        return float(line.split("\t")[1].split(":")[1])
