//! `DMatrix.from_batches`: the rows of a Python `DataIter` (XGBoost's external-memory iterator),
//! read batch by batch into `boost`'s quantised pages with the GIL released: it is taken only to
//! call the iterator, whose `_next_batch()` (Python) turns each batch into arrays. An exception it
//! raises stops the read and reaches the caller unchanged.

use std::path::PathBuf;

use boost::data::{CsrMatrix, DenseMatrix, FeatureMatrix};
use boost::{Batch, BatchSource, ExternalMemory};
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// A Python iterator as a [`BatchSource`], holding the first exception it raised.
struct PyBatches {
    iter: Py<PyAny>,
    raised: Option<PyErr>,
}

impl PyBatches {
    /// `error` kept for the caller, as the error that stops the read.
    fn stop(&mut self, error: PyErr) -> boost::Error {
        let message = error.to_string();
        self.raised.get_or_insert(error);
        boost::Error::Callback(format!("the batch iterator raised {message}"))
    }

    /// A batch as `_next_batch()` gives it: `("dense", values, labels, weights)` or
    /// `("csr", indptr, indices, values, cols, labels, weights)`, float32 C-contiguous arrays
    /// (`weights` empty for none).
    fn batch(item: &Bound<'_, PyAny>) -> PyResult<Batch> {
        let kind: String = item.get_item(0)?.extract()?;
        let vector = |at: usize| -> PyResult<Vec<f32>> {
            let array: PyReadonlyArray1<'_, f32> = item.get_item(at)?.extract()?;
            Ok(array.as_array().to_vec())
        };
        let (features, rest) = match kind.as_str() {
            "dense" => {
                let values: PyReadonlyArray2<'_, f32> = item.get_item(1)?.extract()?;
                let (rows, cols) = (values.shape()[0], values.shape()[1]);
                let values = values.as_array().iter().copied().collect::<Vec<f32>>();
                (FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values)), 2)
            }
            _ => {
                let indptr: PyReadonlyArray1<'_, u64> = item.get_item(1)?.extract()?;
                let indices: PyReadonlyArray1<'_, u32> = item.get_item(2)?.extract()?;
                let cols: usize = item.get_item(4)?.extract()?;
                let row_ptr: Vec<usize> = indptr.as_array().iter().map(|&p| p as usize).collect();
                let csr = CsrMatrix {
                    rows: row_ptr.len().saturating_sub(1),
                    cols,
                    row_ptr,
                    col_indices: indices.as_array().to_vec(),
                    values: vector(3)?,
                };
                (FeatureMatrix::Sparse(csr), 5)
            }
        };
        Ok(Batch { features, labels: vector(rest)?, weights: vector(rest + 1)? })
    }
}

impl BatchSource for PyBatches {
    fn reset(&mut self) -> boost::Result<()> {
        let reset = Python::attach(|py| self.iter.call_method0(py, "reset").map(drop));
        reset.map_err(|error| self.stop(error))
    }

    fn next_batch(&mut self) -> boost::Result<Option<Batch>> {
        let batch = Python::attach(|py| {
            let item = self.iter.bind(py).call_method0("_next_batch")?;
            if item.is_none() {
                return Ok(None);
            }
            Self::batch(&item).map(Some)
        });
        batch.map_err(|error| self.stop(error))
    }
}

/// Reads `iter` into pages as `ExternalMemory` says: `max_bin`, the feature types, pages of at
/// least `page_bytes`, and past `host_bytes` of them the unnamed file in `cache_dir`. The
/// iterator's own exception is raised as it is; `boost`'s errors as the package's.
pub(crate) fn from_batches(
    py: Python<'_>,
    iter: Bound<'_, PyAny>,
    (max_bin, feature_types): (u32, Vec<String>),
    (page_bytes, cache_dir, host_bytes): (usize, Option<PathBuf>, usize),
) -> PyResult<boost::DMatrix> {
    let options = ExternalMemory { max_bin, feature_types, page_bytes, cache_dir, host_bytes };
    let mut source = PyBatches { iter: iter.unbind(), raised: None };
    let result = py.detach(|| boost::DMatrix::from_batches(&mut source, &options));
    match (result, source.raised) {
        (Err(_), Some(raised)) => Err(raised),
        (result, _) => result.map_err(|e| crate::errors::to_py(py, e)),
    }
}
