//! `boost::Error` as the package's exceptions (`twinboost/exceptions.py`): `ParameterError`,
//! `DataError` and `ModelError` are `ValueError`s, `FileError` an `OSError`, `DeviceError` a
//! `RuntimeError`, all `BoostError`s.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The exception class of `twinboost.exceptions` that an error of `boost` becomes.
fn class_name(error: &boost::Error) -> &'static str {
    use boost::Error as E;
    match error {
        E::Io { .. } => "FileError",
        E::Parse { .. } | E::InvalidData(_) => "DataError",
        E::InvalidParameter { .. } => "ParameterError",
        E::Model(_) => "ModelError",
        E::Device { .. }
        | E::DeviceMemory { .. }
        | E::DeviceMemoryLimit { .. }
        | E::DeviceStep { .. }
        | E::Communication(_)
        | E::Gpu(_) => "DeviceError",
        E::Callback(_) => "BoostError",
    }
}

/// `error` as the Python exception of its kind, with its message.
pub(crate) fn to_py(py: Python<'_>, error: boost::Error) -> PyErr {
    let message = error.to_string();
    let class = py.import("twinboost.exceptions").and_then(|m| m.getattr(class_name(&error)));
    match class.and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from)) {
        Ok(class) => PyErr::from_type(class, message),
        // The package's Python half is missing (the module imported alone): still an exception.
        Err(_) => PyRuntimeError::new_err(message),
    }
}

/// A `boost` result as a Python one.
pub(crate) trait OrRaise<T> {
    /// The value, or the error as the Python exception of its kind.
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for boost::Result<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
