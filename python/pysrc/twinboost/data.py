"""Inputs to the arrays the native module takes: NumPy, SciPy sparse and pandas to float32 rows
(dense C-order or CSR), device arrays (the CUDA array interface) to float32 rows in device memory,
labels and other per-row arrays to float32 vectors. Each check names what it refuses."""

import math
import os
import urllib.parse

import numpy as np

from .exceptions import DataError

_NUMERIC_KINDS = "biuf"


def _is_pandas_frame(data):
    return type(data).__module__.startswith("pandas") and hasattr(data, "dtypes") and hasattr(data, "columns")


def _is_pandas_series(data):
    return type(data).__module__.startswith("pandas") and hasattr(data, "dtype") and hasattr(data, "to_numpy")


def _is_scipy_sparse(data):
    return type(data).__module__.startswith("scipy.sparse") and hasattr(data, "tocsr")


def is_device_array(data):
    """Whether ``data`` is a device array: CuPy, PyTorch, Numba, any CUDA array interface."""
    return hasattr(type(data), "__cuda_array_interface__") or hasattr(data, "__cuda_array_interface__")


def _library(data):
    """``"cupy"``, ``"torch"`` or ``None``: the library that made a device array."""
    module = type(data).__module__.split(".")[0]
    return module if module in ("cupy", "torch") else None


def _is_nan(missing):
    return missing is None or (isinstance(missing, float) and math.isnan(missing))


def _replace_missing(values, missing):
    """NaN where ``values`` equal ``missing`` (a copy only when some do)."""
    if _is_nan(missing):
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


# XGBoost's `CatIndexType` of integer categories, by NumPy dtype.
_INTEGER_KINDS = {"int8": 9, "uint8": 10, "int16": 11, "uint16": 12, "int32": 13, "uint32": 14, "int64": 15,
                  "uint64": 16}


def frame_features(frame, missing, enable_categorical=False):
    """A pandas DataFrame's rows as float32, its column names, and for ``category`` columns (with
    ``enable_categorical``, as XGBoost) the feature types (``"c"``), each one's categories as text
    (their codes are the values; a missing category is NaN) and, for integer categories, XGBoost's
    type code of their dtype (a dict by column). Nullable dtypes' NA is missing."""
    types, categories, kinds = [], [], {}
    for name, dtype in zip(frame.columns, frame.dtypes):
        kind = getattr(dtype, "kind", "O")
        if str(dtype) == "category":
            if not enable_categorical:
                raise DataError(f"column {name!r} is categorical: pass enable_categorical=True, as XGBoost asks")
            names = dtype.categories
            kind = getattr(names.dtype, "kind", "O")
            if kind in "iu":
                kinds[len(types)] = _INTEGER_KINDS[str(names.dtype)]
                categories.append([str(int(c)) for c in names])
            elif kind in "OUT" or str(names.dtype) in ("string", "str"):
                categories.append([str(c) for c in names])
            else:
                raise NotImplementedError(f"column {name!r}: categories of {names.dtype} (strings and integers are "
                                          "taken); pass their codes with feature_types='c'")
            types.append("c")
        elif kind not in _NUMERIC_KINDS:
            raise TypeError(f"column {name!r}: dtype {dtype} is not numeric")
        else:
            types.append("q")
            categories.append(None)
    values = np.empty(frame.shape, dtype=np.float32)
    for j, (name, column) in enumerate(frame.items()):
        if categories[j] is not None:
            codes = column.cat.codes.to_numpy().astype(np.float32)
            codes[codes < 0] = np.nan
            values[:, j] = codes
        else:
            values[:, j] = column.to_numpy(dtype=np.float32, na_value=np.nan)
    if not any(c is not None for c in categories):
        types, categories = None, None
    kinds = [kinds.get(j) for j in range(frame.shape[1])] if kinds else None
    return dense_features(values, missing), [str(c) for c in frame.columns], types, categories, kinds


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
    values = host_copy(values)
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
    values = host_copy(values)
    array = _numeric(values, "base_margin")
    if array.ndim not in (1, 2) or array.shape[0] != rows:
        raise DataError(f"base_margin: shape {array.shape} for {rows} rows")
    return np.ascontiguousarray(array, dtype=np.float32).reshape(-1)


def group_sizes(group=None, qid=None, rows=None):
    """Query group sizes from XGBoost's ``group`` (sizes) or ``qid`` (a query id a row, sorted)."""
    if group is not None:
        sizes = _numeric(host_copy(group), "group")
        if sizes.ndim != 1 or (sizes < 0).any():
            raise DataError("group: expected a non-negative size a query group")
        return [int(s) for s in sizes]
    qid = _numeric(host_copy(qid), "qid")
    if qid.ndim != 1 or (rows is not None and qid.shape[0] != rows):
        raise DataError(f"qid: expected one query id a row, got shape {qid.shape}")
    if qid.shape[0] and (np.diff(qid) < 0).any():
        at = int(np.argmax(np.diff(qid) < 0)) + 1
        raise DataError(f"qid: row {at} has query id {qid[at]} after {qid[at - 1]}; sort the rows by query id")
    _, counts = np.unique(qid, return_counts=True)
    return [int(c) for c in counts]


def _device_float32(data, missing):
    """A device array as C-contiguous float32 with NaN for ``missing``, converted on its device
    (CuPy or PyTorch do it; never through host memory)."""
    library = _library(data)
    if library == "cupy":
        import cupy
        array = cupy.ascontiguousarray(data, dtype=cupy.float32)
        return array if _is_nan(missing) else cupy.where(array == missing, cupy.float32("nan"), array)
    if library == "torch":
        import torch
        tensor = data.detach().to(torch.float32).contiguous()
        return tensor if _is_nan(missing) else torch.where(tensor == missing, float("nan"), tensor)
    raise TypeError(
        f"data: a {type(data).__name__} device array must be C-contiguous float32 with NaN for missing"
        " values (CuPy and PyTorch arrays are converted on the device)"
    )


def _c_contiguous(shape, strides, itemsize=4):
    """Whether ``strides`` (bytes; ``None``: C order) lay ``shape`` out in C order."""
    if strides is None:
        return True
    expected = itemsize
    for size, stride in reversed(list(zip(shape, strides))):
        if size > 1 and stride != expected:
            return False
        expected *= size
    return True


def device_features(data, missing):
    """A device array's rows as ``(address, rows, cols, stream, owner)``: 2-D C-contiguous float32
    in device memory (converted there if need be), the stream that wrote them and the array that
    keeps them allocated."""
    interface = data.__cuda_array_interface__
    shape = tuple(interface["shape"])
    if len(shape) != 2:
        raise DataError(f"data: expected a 2-D device array of rows, got shape {shape}")
    if interface.get("mask") is not None:
        raise TypeError("data: masked device arrays are not supported (use NaN for missing values)")
    typestr = interface["typestr"]
    if typestr[1:2] not in tuple(_NUMERIC_KINDS):
        raise TypeError(f"data: device array of type {typestr} is not numeric")
    if typestr != "<f4" or not _c_contiguous(shape, interface.get("strides")) or not _is_nan(missing):
        data = _device_float32(data, missing)
        interface = data.__cuda_array_interface__
    address, _read_only = interface["data"]
    stream = interface.get("stream")
    return int(address), shape[0], shape[1], None if stream is None else int(stream), data


def host_copy(values):
    """A device array's values on the host (labels, weights: small), else ``values`` unchanged."""
    if not is_device_array(values):
        return values
    library = _library(values)
    if library == "cupy":
        return values.get()
    if library == "torch":
        return values.detach().cpu().numpy()
    return np.asarray(values)


def device_result(values, like):
    """Predictions (a ``DeviceArray`` or a NumPy array) as an array of the library of ``like``,
    the device array predicted: CuPy or PyTorch wrap device values without a copy; anything
    else gets the ``DeviceArray`` (NumPy values are uploaded only for CuPy and PyTorch)."""
    library = _library(like)
    if library == "cupy":
        import cupy
        with cupy.cuda.Device(_ordinal(values, like)):
            return cupy.asarray(values)
    if library == "torch":
        import torch
        return torch.as_tensor(values, device=like.device)
    return values


def _ordinal(values, like):
    ordinal = getattr(values, "device_ordinal", None)
    return like.device.id if ordinal is None else ordinal


def data_uri(text):
    """XGBoost's text-file URI, ``path?format=csv&label_column=0``, as ``(path, format,
    label_column)``: ``format`` is ``csv`` or ``libsvm`` (None: from the name), ``label_column`` a
    CSV file's label column (-1: none, XGBoost's default with ``format=csv``; None: the first, as
    the command line reads a plain path). A path that exists is taken whole."""
    if os.path.exists(text) or "?" not in text and "#" not in text:
        return text, None, None
    path, _, query = text.partition("?")
    if "#" in text:
        raise NotImplementedError(f"{text}: external-memory data (a #cache suffix) is not supported yet")
    try:
        options = dict(urllib.parse.parse_qsl(query, strict_parsing=True))
    except ValueError as error:
        raise DataError(f"{text}: cannot read the query ({error})") from None
    unknown = sorted(set(options) - {"format", "label_column"})
    if unknown:
        raise DataError(f"{text}: {', '.join(unknown)} not supported (format=csv|libsvm, label_column=N)")
    label = options.get("label_column")
    if label is not None:
        try:
            label = int(label)
        except ValueError:
            raise DataError(f"{text}: label_column={label!r} is not a column index") from None
    elif options.get("format") == "csv":
        label = -1
    return path, options.get("format"), label
