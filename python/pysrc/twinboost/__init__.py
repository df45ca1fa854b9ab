"""twinboost: gradient boosting compatible with XGBoost, whose CPU and GPU build the same model.

The API is XGBoost's: ``DMatrix``, ``train``, ``Booster``, the callbacks; models are XGBoost's
JSON, loaded by either library with the same predictions::

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
from .core import Booster, DMatrix
from .exceptions import BoostError, DataError, DeviceError, FileError, ModelError, ParameterError
from .training import train

__all__ = [
    "Booster",
    "BoostError",
    "DataError",
    "DeviceError",
    "DMatrix",
    "FileError",
    "METRIC_NAMES",
    "ModelError",
    "OBJECTIVE_NAMES",
    "ParameterError",
    "__version__",
    "callback",
    "train",
]
