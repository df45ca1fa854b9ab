"""Inputs to the arrays the native module takes: NumPy, SciPy sparse and pandas to float32 rows
(dense C-order or CSR), labels and other per-row arrays to float32 vectors. Each check names what
it refuses."""

import math

import numpy as np

from .exceptions import DataError

_NUMERIC_KINDS = "biuf"


def _is_pandas_frame(data):
    return type(data).__module__.startswith("pandas") and hasattr(data, "dtypes") and hasattr(data, "columns")


def _is_pandas_series(data):
    return type(data).__module__.startswith("pandas") and hasattr(data, "dtype") and hasattr(data, "to_numpy")


def _is_scipy_sparse(data):
    return type(data).__module__.startswith("scipy.sparse") and hasattr(data, "tocsr")


def _replace_missing(values, missing):
    """NaN where ``values`` equal ``missing`` (a copy only when some do)."""
    if missing is None or (isinstance(missing, float) and math.isnan(missing)):
        return values
    hit = values == missing
    if not hit.any():
        return values
    values = values.copy()
    values[hit] = np.nan
    return values


def _numeric(array, what):
    """``array`` as a NumPy array of a numeric dtype, or TypeError naming ``what``."""
    array = np.asarray(array)
    if array.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(
            f"{what}: dtype {array.dtype} is not numeric (convert the column to numbers"
            " or drop it; categorical columns are not supported yet)"
        )
    return array


def dense_features(data, missing):
    """A 2-D float32 C-contiguous array of rows, NaN for missing values."""
    array = _numeric(data, "data")
    if array.ndim != 2:
        raise DataError(f"data: expected a 2-D array of rows, got {array.ndim} dimension(s)")
    # float32 C-order is passed as it is; other dtypes and orders are converted once.
    array = np.ascontiguousarray(array, dtype=np.float32)
    return _replace_missing(array, missing)


def frame_features(frame, missing):
    """A pandas DataFrame's rows as float32 and its column names; nullable dtypes' NA is missing."""
    for name, dtype in zip(frame.columns, frame.dtypes):
        kind = getattr(dtype, "kind", "O")
        if str(dtype) == "category":
            raise TypeError(f"column {name!r}: categorical columns are not supported yet")
        if kind not in _NUMERIC_KINDS:
            raise TypeError(f"column {name!r}: dtype {dtype} is not numeric")
    values = frame.to_numpy(dtype=np.float32, na_value=np.nan)
    return dense_features(values, missing), [str(c) for c in frame.columns]


def csr_features(matrix, missing):
    """A SciPy sparse matrix as CSR arrays (offsets u64, columns u32, values f32) and its columns."""
    csr = matrix.tocsr()
    csr.sort_indices()
    values = _replace_missing(np.asarray(csr.data, dtype=np.float32), missing)
    indptr = np.ascontiguousarray(csr.indptr, dtype=np.uint64)
    indices = np.ascontiguousarray(csr.indices, dtype=np.uint32)
    return indptr, indices, np.ascontiguousarray(values), csr.shape[1]


def vector(values, what, rows=None):
    """A per-row array as float32 (a column vector is flattened)."""
    if _is_pandas_series(values) or _is_pandas_frame(values):
        values = values.to_numpy(dtype=np.float32, na_value=np.nan)
    array = _numeric(values, what)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise DataError(f"{what}: expected one value a row, got an array of shape {array.shape}")
    if rows is not None and array.shape[0] != rows:
        raise DataError(f"{what}: {array.shape[0]} values for {rows} rows")
    return np.ascontiguousarray(array, dtype=np.float32)


def margins(values, rows):
    """Base margins, one a row or ``rows x outputs``, as a flat row-major float32 array."""
    array = _numeric(values, "base_margin")
    if array.ndim not in (1, 2) or array.shape[0] != rows:
        raise DataError(f"base_margin: shape {array.shape} for {rows} rows")
    return np.ascontiguousarray(array, dtype=np.float32).reshape(-1)


def group_sizes(group=None, qid=None, rows=None):
    """Query group sizes from XGBoost's ``group`` (sizes) or ``qid`` (a query id a row, sorted)."""
    if group is not None:
        sizes = _numeric(group, "group")
        if sizes.ndim != 1 or (sizes < 0).any():
            raise DataError("group: expected a non-negative size a query group")
        return [int(s) for s in sizes]
    qid = _numeric(qid, "qid")
    if qid.ndim != 1 or (rows is not None and qid.shape[0] != rows):
        raise DataError(f"qid: expected one query id a row, got shape {qid.shape}")
    if qid.shape[0] and (np.diff(qid) < 0).any():
        at = int(np.argmax(np.diff(qid) < 0)) + 1
        raise DataError(f"qid: row {at} has query id {qid[at]} after {qid[at - 1]}; sort the rows by query id")
    _, counts = np.unique(qid, return_counts=True)
    return [int(c) for c in counts]
