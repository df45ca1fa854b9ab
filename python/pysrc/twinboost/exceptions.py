"""The exceptions twinboost raises.

Every error of the library is a :class:`BoostError`; bad parameters, data and model files are
also :class:`ValueError` (as XGBoost's ``XGBoostError``), unreadable files :class:`OSError`, and
GPU failures :class:`RuntimeError`, so ``except ValueError`` catches what it would with XGBoost.
"""


class BoostError(Exception):
    """Base class of twinboost's errors."""


class ParameterError(BoostError, ValueError):
    """A parameter that is unknown or out of range; the message names it."""


class DataError(BoostError, ValueError):
    """Data, labels, weights, groups or margins that cannot be used; the message names the row,
    column or array."""


class ModelError(BoostError, ValueError):
    """A model file or model text that is corrupt, foreign or of an unsupported version."""


class FileError(BoostError, OSError):
    """A file that could not be opened, read or written."""


class DeviceError(BoostError, RuntimeError):
    """A GPU that cannot be opened, ran out of memory, or failed during a step."""
