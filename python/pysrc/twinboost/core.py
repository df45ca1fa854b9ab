"""``DMatrix`` and ``Booster``, with XGBoost's Python names and meanings."""

import copy as _copy
import os
import tempfile

import numpy as np

from . import _core, data as _data
from .exceptions import DataError, ModelError, ParameterError


class DMatrix:
    """Training or prediction data, as XGBoost's ``DMatrix``.

    ``data`` is a 2-D NumPy array (any numeric dtype, C or Fortran order; float32 in C order is
    read in place, not copied, so leave it unchanged while the DMatrix is in use), a device array
    (CuPy, PyTorch, anything with ``__cuda_array_interface__``: kept in device memory and read
    there, float32 C-order in place, other dtypes converted on the device; training and
    prediction run on its GPU), a pandas DataFrame (its column names become ``feature_names``;
    nullable dtypes' NA is missing), a SciPy sparse matrix (entries not stored are missing), a
    list of rows, or the path of a CSV or libsvm file (XGBoost's ``path?format=csv&label_column=0``
    URI too; a plain path reads a CSV file's first column as the label, as the command line does).
    ``missing`` (NaN by default) marks missing values.
    ``group`` (sizes) or ``qid`` (a query id a row, rows sorted by it) gives ranking groups.
    ``label_lower_bound`` and ``label_upper_bound`` give ``survival:aft``'s intervals (``inf``
    above a right-censored row, 0 below a left-censored one; labels are then optional).
    """

    def __init__(self, data, label=None, *, weight=None, base_margin=None, missing=None, silent=False,
                 feature_names=None, feature_types=None, nthread=None, group=None, qid=None,
                 label_lower_bound=None, label_upper_bound=None, feature_weights=None, enable_categorical=False):
        del silent, nthread  # XGBoost's: nothing here is printed, and reading is not threaded
        names = types = categories = None
        if isinstance(data, (str, os.PathLike)):
            self._handle = _core.DMatrix.from_file(*_data.data_uri(os.fspath(data)))
        elif _data.is_device_array(data):
            self._handle = _core.DMatrix.device_dense(*_data.device_features(data, missing))
        elif _data._is_scipy_sparse(data):
            self._handle = _core.DMatrix.csr(*_data.csr_features(data, missing))
        elif _data._is_pandas_frame(data):
            values, names, types, categories, kinds = _data.frame_features(data, missing, enable_categorical)
            self._handle = _core.DMatrix.dense(values)
            if categories is not None:
                # The categories go with a model trained on these rows (XGBoost's category encoder),
                # and rows whose categories are coded otherwise are recoded to its codes.
                self._handle.set_category_names(categories)
                if kinds is not None:
                    self._handle.set_category_kinds(kinds)
        else:
            self._handle = _core.DMatrix.dense(_data.dense_features(data, missing))
        self.set_info(label=label, weight=weight, base_margin=base_margin, group=group, qid=qid,
                      feature_names=feature_names if feature_names is not None else names,
                      feature_types=feature_types if feature_types is not None else types,
                      label_lower_bound=label_lower_bound, label_upper_bound=label_upper_bound,
                      feature_weights=feature_weights)

    def set_info(self, *, label=None, weight=None, base_margin=None, group=None, qid=None,
                 label_lower_bound=None, label_upper_bound=None, feature_names=None, feature_types=None,
                 feature_weights=None):
        """Sets any of the per-row arrays (``survival:aft``'s bounds too), the groups, the feature
        names and types, and the features' weights in column sampling (``feature_weights``, one a
        feature, >= 0)."""
        if label_lower_bound is not None:
            self.set_float_info("label_lower_bound", label_lower_bound)
        if label_upper_bound is not None:
            self.set_float_info("label_upper_bound", label_upper_bound)
        if feature_weights is not None:
            self._handle.set_feature_weights(_data.vector(feature_weights, "feature_weights"))
        if label is not None:
            self.set_label(label)
        if group is not None or qid is not None:
            self._handle.set_groups(_data.group_sizes(group, qid, self.num_row()))
        if weight is not None:
            self.set_weight(weight)
        if base_margin is not None:
            self.set_base_margin(base_margin)
        if feature_names is not None:
            self.feature_names = feature_names
        if feature_types is not None:
            self.feature_types = feature_types

    def set_label(self, label):
        """Sets the labels (finite, one a row)."""
        self._handle.set_labels(_data.vector(label, "label", self.num_row()))

    def set_weight(self, weight):
        """Sets the weights (one a row, or one a query group for ranking)."""
        self._handle.set_weights(_data.vector(weight, "weight"))

    def set_base_margin(self, margin):
        """Sets each row's starting margins (``rows`` or ``rows x outputs``)."""
        self._handle.set_base_margin(_data.margins(margin, self.num_row()))

    def set_group(self, group):
        """Sets the query groups' sizes (consecutive rows)."""
        self._handle.set_groups(_data.group_sizes(group=group))

    _FLOAT_FIELDS = ("label", "weight", "base_margin", "label_lower_bound", "label_upper_bound",
                     "feature_weights")

    def set_float_info(self, field, data):
        """Sets a float field by XGBoost's name: ``label``, ``weight``, ``base_margin``,
        ``label_lower_bound``, ``label_upper_bound`` (the bounds take effect once both are given)
        or ``feature_weights``."""
        if field == "label":
            self.set_label(data)
        elif field == "weight":
            self.set_weight(data)
        elif field == "base_margin":
            self.set_base_margin(data)
        elif field == "feature_weights":
            self._handle.set_feature_weights(_data.vector(data, field))
        elif field in ("label_lower_bound", "label_upper_bound"):
            # XGBoost takes the bounds one at a time; the native matrix, both at once.
            bounds = self.__dict__.setdefault("_bounds", [None, None])
            bounds[field == "label_upper_bound"] = _data.vector(data, field, self.num_row())
            if all(b is not None for b in bounds):
                self._handle.set_label_bounds(*bounds)
        else:
            raise ValueError(f"unknown float field `{field}`; fields: {', '.join(self._FLOAT_FIELDS)}")

    def get_float_info(self, field):
        """A float field by XGBoost's name (an empty array when unset)."""
        if field in ("label_lower_bound", "label_upper_bound"):
            side = field == "label_upper_bound"
            bounds = self.__dict__.get("_bounds", [None, None])
            waiting = bounds[side] is not None and bounds[not side] is None
            return bounds[side] if waiting else self._handle.label_bounds()[side]
        getters = {"label": self.get_label, "weight": self.get_weight, "base_margin": self.get_base_margin}
        if field not in getters:
            raise ValueError(f"unknown float field `{field}`; fields: {', '.join(self._FLOAT_FIELDS)}")
        return getters[field]()

    def get_label(self):
        """The labels (an empty array when none were set)."""
        return self._handle.labels()

    def get_weight(self):
        """The weights (an empty array when none were set)."""
        return self._handle.weights()

    def get_base_margin(self):
        """The base margins, flat (an empty array when none were set)."""
        return self._handle.base_margin()

    def get_group(self):
        """The query groups' sizes (an empty array without groups)."""
        return np.diff(np.asarray(self._handle.group_ptr(), dtype=np.uint32))

    def num_row(self):
        """Rows."""
        return self._handle.rows()

    def num_col(self):
        """Features."""
        return self._handle.cols()

    @property
    def feature_names(self):
        """The features' names, or None."""
        return self._handle.feature_names() or None

    @feature_names.setter
    def feature_names(self, names):
        self._handle.set_feature_names([] if names is None else [str(n) for n in names])

    @property
    def feature_types(self):
        """The features' types by XGBoost's names (``q``, ``float``, ``int``, ``i``: numeric; ``c``:
        categorical, the values category codes 0, 1, ...), or None."""
        return self._handle.feature_types() or None

    @feature_types.setter
    def feature_types(self, types):
        self._handle.set_feature_types([] if types is None else [str(t) for t in types])


class QuantileDMatrix(DMatrix):
    """XGBoost's ``QuantileDMatrix``: a ``DMatrix`` for training with ``max_bin`` bins, whose
    evaluation sets name the training matrix as ``ref``. The model is the one a ``DMatrix`` of the
    same rows trains with the same ``max_bin`` (XGBoost's too: its cuts are the same). Here the
    rows are kept as they are and quantised when training starts, on the CPU or the GPU; XGBoost
    quantises them at construction to save memory, which this does not do yet."""

    def __init__(self, data, label=None, *, weight=None, base_margin=None, missing=None, silent=False,
                 feature_names=None, feature_types=None, nthread=None, max_bin=None, ref=None, group=None,
                 qid=None, enable_categorical=False):
        if ref is not None and not isinstance(ref, QuantileDMatrix):
            raise TypeError(f"ref must be the training QuantileDMatrix, not {type(ref).__name__}")
        super().__init__(data, label, weight=weight, base_margin=base_margin, missing=missing, silent=silent,
                         feature_names=feature_names, feature_types=feature_types, nthread=nthread, group=group,
                         qid=qid, enable_categorical=enable_categorical)
        self.max_bin = ref.max_bin if ref is not None and max_bin is None else max_bin
        self.ref = ref


class DataIter:
    """XGBoost's ``DataIter``: batches of rows for external memory (``ExtMemQuantileDMatrix``).
    Subclass it with ``next(input_data)``, which calls ``input_data(data=X, label=y, weight=w,
    feature_names=..., feature_types=...)`` with the next batch and returns True, or returns False
    after the last, and ``reset()``, which starts again from the first; every pass must give the
    same rows. ``data`` is a 2-D array, a pandas DataFrame of numbers or a SciPy sparse matrix.

    ``on_host=True`` (XGBoost 3's default) keeps the quantised pages in host memory;
    ``on_host=False`` writes them to an unnamed file in the directory of ``cache_prefix`` (the
    system's temporary directory without one), which nothing outlives. ``min_cache_page_bytes``:
    batches are joined into pages of at least this size (64 MiB by default)."""

    def __init__(self, cache_prefix=None, release_data=True, *, on_host=True, min_cache_page_bytes=None):
        del release_data  # nothing is kept here between batches
        self.cache_prefix = cache_prefix
        self.on_host = on_host
        self.min_cache_page_bytes = min_cache_page_bytes
        self._missing = None

    def next(self, input_data):
        """Calls ``input_data(data=..., label=..., ...)`` with the next batch and returns True, or
        returns False after the last."""
        raise NotImplementedError("a DataIter defines next(input_data)")

    def reset(self):
        """Starts again from the first batch."""
        raise NotImplementedError("a DataIter defines reset()")

    def _next_batch(self):
        """The next batch as the native reader takes it, or None after the last."""
        given = {}

        def input_data(data, *, label=None, weight=None, base_margin=None, group=None, qid=None,
                       feature_names=None, feature_types=None, **others):
            if base_margin is not None or group is not None or qid is not None:
                raise DataError("external memory takes data, label and weight a batch (no base_margin, group "
                                "or qid yet)")
            given.update(data=data, label=label, weight=weight, feature_names=feature_names,
                         feature_types=feature_types)

        if not self.next(input_data):
            return None
        if "data" not in given:
            raise DataError("DataIter.next returned True without calling input_data")
        data, label, weight = given["data"], given["label"], given["weight"]
        if label is None:
            raise DataError("external memory trains: every batch needs its label")
        self._names, self._types = given["feature_names"], given["feature_types"]
        rows = data.shape[0]
        labels = _data.vector(label, "label", rows)
        weights = np.empty(0, np.float32) if weight is None else _data.vector(weight, "weight", rows)
        if _data._is_scipy_sparse(data):
            return ("csr", *_data.csr_features(data, self._missing), labels, weights)
        if _data._is_pandas_frame(data):
            values, names, _, _, _ = _data.frame_features(data, self._missing)
            self._names = self._names if self._names is not None else names
            return ("dense", values, labels, weights)
        return ("dense", _data.dense_features(data, self._missing), labels, weights)


class ExtMemQuantileDMatrix(DMatrix):
    """XGBoost's ``ExtMemQuantileDMatrix``: the rows of a ``DataIter``, read batch by batch (four
    passes) into quantised pages and never held whole. Training (``tree_method="hist"`` with this
    ``max_bin``) writes the model a ``DMatrix`` of the same rows trains, byte for byte. With
    ``device="cuda"`` each tree's sampled rows (``sampling_method="gradient_based"``) are gathered
    into one device page and grown there: the CPU's model. Predicting needs the rows themselves
    (a ``DMatrix``)."""

    def __init__(self, data, missing=None, nthread=None, max_bin=None, ref=None, enable_categorical=False,
                 max_quantile_batches=None, cache_host_ratio=None):
        del nthread, enable_categorical, max_quantile_batches, cache_host_ratio
        if not isinstance(data, DataIter):
            raise TypeError(f"data must be a twinboost.DataIter, not {type(data).__name__}")
        if max_bin is None:
            max_bin = ref.max_bin if isinstance(ref, ExtMemQuantileDMatrix) else 256
        data._missing = missing
        # The first batch's names and types, which the sketch needs before the passes.
        data.reset()
        data._next_batch()
        types = [str(t) for t in data._types] if data._types is not None else []
        cache_dir = None
        if not data.on_host:
            prefix = data.cache_prefix
            cache_dir = (os.path.dirname(os.fspath(prefix)) or ".") if prefix else tempfile.gettempdir()
        page_bytes = int(data.min_cache_page_bytes or 64 << 20)
        self._handle = _core.DMatrix.from_batches(data, int(max_bin), types, page_bytes, cache_dir, 0)
        self.max_bin = max_bin
        self.ref = ref
        if data._names is not None:
            self.feature_names = data._names

    def pages(self):
        """(pages, bytes in host memory, bytes on disk)."""
        return self._handle.pages()


def _params_pairs(params):
    """XGBoost's parameter dict (or list of pairs) as (name, value) strings; a list of metrics
    (``eval_metric=["auc", "logloss"]``) gives one pair a metric, another list is one value, as
    XGBoost writes it (``quantile_alpha=[0.1, 0.9]`` is ``"[0.1, 0.9]"``)."""
    items = params.items() if isinstance(params, dict) else params
    pairs = []
    for name, value in items:
        if value is None:
            continue
        if isinstance(value, (list, tuple)) and name != "eval_metric":
            value = str(value)
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, bool):
                v = int(v)
            if name in ("nthread", "n_jobs") and isinstance(v, int) and v < 0:
                v = 0  # XGBoost's -1: every core
            pairs.append((str(name), str(v)))
    return pairs


def _configure_constraints(params, feature_names):
    """XGBoost's spellings of the constraints made strings of feature indices: a dict of
    ``monotone_constraints`` by feature name a tuple in the features' order, and
    ``interaction_constraints`` sets of names (or indices) lists of indices."""
    names = list(feature_names or [])
    index = {name: i for i, name in enumerate(names)}

    def unknown(name, missing):
        return ParameterError(f"parameter `{name}`: {sorted(map(str, missing))} are not features of the "
                              f"training data (its feature_names are {names})")

    params = dict(params)
    monotone = params.get("monotone_constraints")
    if isinstance(monotone, dict):
        if set(monotone) - set(names):
            raise unknown("monotone_constraints", set(monotone) - set(names))
        params["monotone_constraints"] = str(tuple(int(monotone.get(n, 0)) for n in names))
    interactions = params.get("interaction_constraints")
    if interactions is not None and not isinstance(interactions, str):
        sets = [[f if isinstance(f, int) else index.get(f) for f in group] for group in interactions]
        missing = {f for group, ids in zip(interactions, sets) for f, i in zip(group, ids) if i is None}
        if missing:
            raise unknown("interaction_constraints", missing)
        params["interaction_constraints"] = str(sets)
    return params


def _model_bytes(model):
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    raise TypeError(f"a model is a path or the bytes of save_raw, not {type(model).__name__}")


class Booster:
    """A trained or loaded model, as XGBoost's ``Booster``: ``predict``, ``save_model`` (XGBoost's
    JSON, byte for byte what the ``boost`` command line writes), ``load_model`` (ours or
    XGBoost's JSON), importances, attributes and pickling.

    Predictions run where the ``device`` parameter says (``set_param({"device": "cuda"})``), as in
    XGBoost; a model trained with ``device="cuda"`` predicts on the GPU.
    """

    def __init__(self, params=None, cache=None, model_file=None):
        del cache  # XGBoost's prediction cache: nothing to declare here
        self._params = dict(params or {})
        self._handle = None
        if model_file is not None:
            self.load_model(model_file)

    @classmethod
    def _wrap(cls, handle, params):
        booster = cls(params)
        booster._handle = handle
        return booster

    def _nthread(self):
        """The ``nthread`` (or ``n_jobs``) parameter, 0 (every core) when unset or negative."""
        for name in ("nthread", "n_jobs"):
            value = self._params.get(name)
            if value is not None:
                return max(int(value), 0)
        return 0

    def _model(self):
        if self._handle is None:
            raise ModelError("the booster has no model: train it or load one")
        return self._handle

    # -- parameters and attributes --------------------------------------------------------

    def set_param(self, params, value=None):
        """Sets parameters (a dict, a list of pairs, or a name and a value): ``device`` decides where
        predictions run; the others are kept for training that continues this model."""
        if isinstance(params, str):
            params = {params: value}
        self._params.update(params.items() if isinstance(params, dict) else params)

    def attr(self, key):
        """The attribute ``key``, or None."""
        return self._model().attributes().get(key)

    def attributes(self):
        """Every attribute, as a dict."""
        return dict(self._model().attributes())

    def set_attr(self, **kwargs):
        """Sets attributes (strings); a value of None removes one."""
        for key, value in kwargs.items():
            self._model().set_attribute(key, None if value is None else str(value))

    @property
    def best_iteration(self):
        """The best round of early stopping (absolute), as XGBoost: AttributeError without one."""
        value = self.attr("best_iteration")
        if value is None:
            raise AttributeError("best_iteration: the model was not trained with early stopping")
        return int(value)

    @best_iteration.setter
    def best_iteration(self, value):
        self.set_attr(best_iteration=value)

    @property
    def best_score(self):
        """The early-stopping metric's value at ``best_iteration``."""
        value = self.attr("best_score")
        if value is None:
            raise AttributeError("best_score: the model was not trained with early stopping")
        return float(value)

    @best_score.setter
    def best_score(self, value):
        self.set_attr(best_score=value)

    @property
    def feature_names(self):
        """The features' names saved with the model, or None."""
        return self._model().feature_names() or None

    @feature_names.setter
    def feature_names(self, names):
        self._model().set_feature_names([] if names is None else [str(n) for n in names])

    @property
    def feature_types(self):
        """The features' types saved with the model, or None."""
        return self._model().feature_types() or None

    def num_boosted_rounds(self):
        """Boosting rounds in the model."""
        return self._model().num_boosted_rounds()

    def num_features(self):
        """Features the model was trained on."""
        return self._model().num_features()

    # -- prediction ---------------------------------------------------------------------------

    def _validate_features(self, data):
        names, given = self.feature_names, data.feature_names
        if names is None or given is None or names == given:
            return
        missing = [n for n in names if n not in given]
        extra = [n for n in given if n not in names]
        raise DataError(
            "feature_names mismatch: "
            + (f"the data lacks {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"the data has {extra} that the model does not" if extra else "")
            + ("" if missing or extra else "the same names in another order")
        )

    def predict(self, data, output_margin=False, pred_leaf=False, pred_contribs=False,
                approx_contribs=False, pred_interactions=False, validate_features=True,
                training=False, iteration_range=(0, 0), strict_shape=False):
        """Predictions of a ``DMatrix``: transformed values (probabilities, ...), margins with
        ``output_margin``, or each tree's leaf with ``pred_leaf``, of the rounds of
        ``iteration_range`` (``(0, 0)``: all). Shapes as XGBoost's: ``(rows,)`` for one output,
        ``(rows, outputs)`` for several; ``strict_shape`` always gives ``(rows, outputs)``
        (``(rows, rounds, outputs, parallel trees)`` for leaves)."""
        del training  # as XGBoost's prediction of a trained model: no dropout here
        if not isinstance(data, DMatrix):
            raise TypeError(f"predict takes a DMatrix, not {type(data).__name__} (see inplace_predict)")
        if validate_features:
            self._validate_features(data)
        begin, end = (int(i) for i in iteration_range)
        if pred_interactions or pred_contribs:
            return self._explain(data, pred_interactions, approx_contribs, begin, end, strict_shape)
        kind = "leaf" if pred_leaf else ("margin" if output_margin else "value")
        device = str(self._params.get("device", "cpu"))
        flat = self._model().predict(data._handle, kind, begin, end, device, self._nthread())
        rows = data.num_row()
        if pred_leaf:
            leaves = flat.reshape(rows, -1)
            if strict_shape:
                rounds = (end or self.num_boosted_rounds()) - begin
                return leaves.reshape(rows, rounds, self._model().num_outputs(), -1)
            return leaves
        outputs = flat.shape[0] // rows if rows else 1
        if outputs == 1 and not strict_shape:
            return flat
        return flat.reshape(rows, outputs)

    def _explain(self, data, interactions, approximate, begin, end, strict_shape):
        """SHAP values (``pred_contribs``) or interaction values (``pred_interactions``), Saabas'
        approximation with ``approx_contribs``, in XGBoost's shapes: ``(rows, features + 1)``
        (times ``features + 1`` again for interactions), with an outputs axis after the rows for a
        multi-output model or with ``strict_shape``."""
        kind = ("approx_" if approximate else "") + ("interactions" if interactions else "contribs")
        device = str(self._params.get("device", "cpu"))
        flat = self._model().predict(data._handle, kind, begin, end, device, self._nthread())
        rows, outputs = data.num_row(), self._model().num_outputs()
        width = self.num_features() + 1
        shape = (rows, outputs) + ((width, width) if interactions else (width,))
        values = flat.reshape(shape)
        return values if outputs > 1 or strict_shape else values[:, 0]

    def inplace_predict(self, data, iteration_range=(0, 0), predict_type="value", missing=np.nan,
                        validate_features=True, base_margin=None, strict_shape=False):
        """Predictions of rows given as they are (NumPy, pandas, SciPy CSR; float32 C-order NumPy
        read in place), as XGBoost's ``inplace_predict``: ``predict_type`` is ``"value"`` or
        ``"margin"``. Runs where the ``device`` parameter says, except that a device array (CuPy,
        PyTorch) is predicted on its GPU, read in place, unless ``device="cpu"``; its predictions
        come back as an array of the same library in device memory (a ``DeviceArray``, which
        exposes the CUDA array interface, for other libraries)."""
        if predict_type not in ("value", "margin"):
            raise ValueError(f"predict_type={predict_type!r}: expected 'value' or 'margin'")
        if _data.is_device_array(data):
            return self._device_predict(data, iteration_range, predict_type, missing, base_margin, strict_shape)
        rows = DMatrix(data, missing=missing, base_margin=base_margin, enable_categorical=True)
        if not validate_features:
            rows.feature_names = None
        return self.predict(rows, output_margin=predict_type == "margin", validate_features=validate_features,
                            iteration_range=iteration_range, strict_shape=strict_shape)

    def _device_predict(self, data, iteration_range, predict_type, missing, base_margin, strict_shape):
        """``inplace_predict`` of a device array: on its GPU, the result in device memory."""
        address, rows, cols, stream, owner = _data.device_features(data, missing)
        begin, end = (int(i) for i in iteration_range)
        device = str(self._params.get("device", "cpu"))
        if device == "cpu" or base_margin is not None:
            # Read back for the CPU (as XGBoost falls back to a DMatrix), or with base margins.
            dmat = DMatrix(owner, base_margin=base_margin)
            result = self.predict(dmat, output_margin=predict_type == "margin", validate_features=False,
                                  iteration_range=iteration_range, strict_shape=strict_shape)
            return _data.device_result(result, like=data)
        result = self._model().predict_device(address, rows, cols, stream, owner, predict_type, begin, end)
        outputs = result.shape[0] // rows if rows else 1
        shape = (rows,) if outputs == 1 and not strict_shape else (rows, outputs)
        return _data.device_result(result.reshape(list(shape)), like=data)

    # -- evaluation ---------------------------------------------------------------------------

    def eval_set(self, evals, iteration=0, feval=None):
        """XGBoost's evaluation line for ``evals`` (pairs of DMatrix and name):
        ``[iteration]\\tname-metric:value ...`` with the parameters' ``eval_metric``s."""
        if feval is not None:
            raise NotImplementedError("eval_set(feval=): use train(custom_metric=)")
        metrics = [v for n, v in _params_pairs(self._params) if n == "eval_metric"]
        line = f"[{iteration}]"
        for dmat, name in evals:
            for metric, value in self._model().evaluate(dmat._handle, metrics):
                line += f"\t{name}-{metric}:{value:.5f}"
        return line

    def eval(self, data, name="eval", iteration=0):
        """``eval_set([(data, name)], iteration)``."""
        return self.eval_set([(data, name)], iteration)

    # -- importance ---------------------------------------------------------------------------

    def get_score(self, fmap="", importance_type="weight"):
        """Each used feature's importance (``weight``, ``gain``, ``cover``, ``total_gain``,
        ``total_cover``), keyed by feature name or ``f{index}``."""
        if fmap:
            raise NotImplementedError("feature maps (fmap=) are not supported; set feature_names")
        return {key: float(score) for key, score in self._model().feature_importance(importance_type)}

    def get_fscore(self, fmap=""):
        """``get_score(importance_type="weight")``."""
        return self.get_score(fmap, "weight")

    # -- model I/O ----------------------------------------------------------------------------

    def save_model(self, fname):
        """Writes the model as XGBoost does: JSON for a ``.json`` path, else its binary UBJSON
        (``.ubj``); under a temporary name, then renamed."""
        self._model().save_model(os.fspath(fname))

    def get_dump(self, fmap="", with_stats=False, dump_format="text"):
        """Each tree as XGBoost's text or JSON dump (``dump_format``), with the gain and cover of
        each node when ``with_stats``, the features named by the feature map file ``fmap`` (else the
        model's feature names and types)."""
        return self._model().dump(os.fspath(fmap), bool(with_stats), dump_format)

    def dump_model(self, fout, fmap="", with_stats=False, dump_format="text"):
        """Writes ``get_dump`` to ``fout`` (a path or a text file) as XGBoost does: ``booster[k]:``
        before each text tree; a JSON array of the JSON trees."""
        trees = self.get_dump(fmap, with_stats, dump_format)
        if dump_format == "json":
            text = "[\n" + ",\n".join(trees) + "\n]"
        else:
            text = "".join(f"booster[{k}]:\n{tree}" for k, tree in enumerate(trees))
        if isinstance(fout, (str, os.PathLike)):
            with open(os.path.expanduser(os.fspath(fout)), "w", encoding="utf-8") as f:
                f.write(text)
        else:
            fout.write(text)

    def save_raw(self, raw_format="ubj"):
        """The model's bytes: ``"ubj"`` (XGBoost's default) or ``"json"``."""
        if raw_format == "json":
            return bytearray(self._model().to_json())
        if raw_format == "ubj":
            return bytearray(self._model().to_ubjson())
        raise ModelError(f"raw_format={raw_format!r}: 'ubj' or 'json'")

    def load_model(self, fname):
        """Loads a model: a path (ours or XGBoost's file, JSON or UBJSON) or the bytes of
        ``save_raw``."""
        if isinstance(fname, (str, os.PathLike)):
            self._handle = _core.Booster.load_model(os.fspath(fname))
        else:
            self._handle = _core.Booster.from_json(_model_bytes(fname))

    def __getitem__(self, index):
        """The rounds ``index`` selects (an int or a slice with step >= 1) as a new Booster, as
        XGBoost's model slicing: ``booster[:best_iteration + 1]``. The attributes are kept but for
        ``best_iteration`` and ``best_score``."""
        rounds = self.num_boosted_rounds()
        if isinstance(index, int):
            index = slice(index, index + 1)
        if not isinstance(index, slice):
            raise TypeError(f"a Booster is sliced by an int or a slice, not {type(index).__name__}")
        start = 0 if index.start is None else int(index.start)
        stop = rounds if index.stop is None else int(index.stop)
        step = 1 if index.step is None else int(index.step)
        if start < 0 or stop < 0:
            raise IndexError("negative round indices are not supported (as in XGBoost)")
        if stop > rounds:
            raise IndexError(f"round index {stop} out of range: the model has {rounds} rounds")
        if step < 1:
            raise ValueError(f"slice step {step}: must be >= 1")
        if stop <= start:
            raise ValueError(f"the slice {start}:{stop} selects no rounds")
        return Booster._wrap(self._model().slice(start, stop, step), dict(self._params))

    def copy(self):
        """A copy of the model and its parameters."""
        return self.__copy__()

    def __copy__(self):
        return Booster._wrap(self._handle.copy() if self._handle is not None else None, dict(self._params))

    def __deepcopy__(self, memo):
        return Booster._wrap(self._handle.copy() if self._handle is not None else None,
                             _copy.deepcopy(self._params, memo))

    def __getstate__(self):
        model = bytes(self._handle.to_json()) if self._handle is not None else None
        return {"params": self._params, "model": model}

    def __setstate__(self, state):
        self._params = state["params"]
        self._handle = _core.Booster.from_json(state["model"]) if state["model"] is not None else None
