"""twinboost: gradient boosting compatible with XGBoost, whose CPU and GPU build the same model.

The API is XGBoost's: ``DMatrix``, ``train``, ``Booster``, the callbacks, and the scikit-learn
estimators ``XGBRegressor``, ``XGBClassifier``, ``XGBRanker``; models are XGBoost's JSON, loaded
by either library with the same predictions::

    import numpy as np
    import twinboost as tb

    X = np.random.default_rng(0).random((1000, 4), dtype=np.float32)
    y = (X[:, 0] + X[:, 1] > 1).astype(np.float32)
    dtrain = tb.DMatrix(X, label=y)
    booster = tb.train({"objective": "binary:logistic", "max_depth": 3}, dtrain, 20)
    probabilities = booster.predict(dtrain)
"""

from . import callback
from ._core import METRIC_NAMES, OBJECTIVE_NAMES, __version__
from .core import Booster, DataIter, DMatrix, ExtMemQuantileDMatrix, QuantileDMatrix
from .exceptions import BoostError, DataError, DeviceError, FileError, ModelError, ParameterError
from .training import train

_ESTIMATORS = ("XGBClassifier", "XGBModel", "XGBRanker", "XGBRegressor")


def __getattr__(name):
    # The scikit-learn estimators import scikit-learn, which only they need.
    if name in _ESTIMATORS:
        from . import sklearn

        return getattr(sklearn, name)
    raise AttributeError(f"module 'twinboost' has no attribute {name!r}")

__all__ = [
    "Booster",
    "BoostError",
    "DataError",
    "DeviceError",
    "DataIter",
    "DMatrix",
    "ExtMemQuantileDMatrix",
    "FileError",
    "METRIC_NAMES",
    "ModelError",
    "OBJECTIVE_NAMES",
    "ParameterError",
    "QuantileDMatrix",
    "__version__",
    "callback",
    "train",
    *_ESTIMATORS,
]
