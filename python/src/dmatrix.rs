//! `DMatrix`: rows for training and prediction, from the arrays the Python side prepared
//! (float32 features, dense C-order or CSR; NaN and absent entries are missing).

use std::path::PathBuf;
use std::sync::Arc;

use boost::data::{FeatureMatrix, FeatureValues};

use numpy::{PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::cuda::DeviceRows;
use crate::errors::OrRaise;

/// Training or prediction data (`boost::DMatrix`).
#[pyclass(module = "twinboost._core", name = "DMatrix")]
pub struct DMatrix {
    pub(crate) inner: boost::DMatrix,
}

/// A NumPy array's float32 values read in place: the array is kept alive with them, and NumPy
/// refuses to resize an array that another object references, so they stay where they are.
struct NumpyValues {
    _array: Py<PyArray2<f32>>,
    data: *const f32,
    len: usize,
}

// SAFETY: `data` points into the array `_array` keeps alive; it is only read, from any thread (the
// array's owner may not change it while a DMatrix views it, as `DMatrix`'s documentation says).
unsafe impl Send for NumpyValues {}
// SAFETY: as for `Send`: shared reads only.
unsafe impl Sync for NumpyValues {}

impl AsRef<[f32]> for NumpyValues {
    fn as_ref(&self) -> &[f32] {
        // SAFETY: `data` and `len` came from the live, C-contiguous, aligned array's slice.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }
}

/// A read-only array's values as a slice: the Python side passes C-contiguous arrays.
fn contiguous<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a numpy::PyReadonlyArray<'_, T, D>,
    what: &str,
) -> PyResult<&'a [T]> {
    array.as_slice().map_err(|_| PyValueError::new_err(format!("{what}: the array must be C-contiguous")))
}

#[pymethods]
impl DMatrix {
    /// Dense rows: a 2-D C-contiguous float32 array (NaN missing, no infinities), read in place.
    #[staticmethod]
    fn dense(py: Python<'_>, array: PyReadonlyArray2<'_, f32>) -> PyResult<Self> {
        let (rows, cols) = (array.shape()[0], array.shape()[1]);
        let slice = contiguous(&array, "data")?;
        let values = if slice.as_ptr().is_aligned() {
            let owner = NumpyValues { _array: (*array).clone().unbind(), data: slice.as_ptr(), len: slice.len() };
            FeatureValues::shared(Arc::new(owner))
        } else {
            slice.to_vec().into()
        };
        let inner = py.detach(|| boost::DMatrix::from_dense(values, rows, cols)).or_raise(py)?;
        Ok(DMatrix { inner })
    }

    /// Dense rows in device memory, as a CUDA array interface describes them (`rows x cols`
    /// C-contiguous float32 at `address`, written on `stream`), borrowed in place: `owner` (the
    /// array) is kept alive with the DMatrix, and nothing is copied to the host.
    #[staticmethod]
    fn device_dense(
        py: Python<'_>,
        address: u64,
        rows: usize,
        cols: usize,
        stream: Option<usize>,
        owner: Py<PyAny>,
    ) -> PyResult<Self> {
        let inner = py
            .detach(|| {
                let borrowed = DeviceRows::borrow(address, (rows, cols), stream, owner)?;
                boost::DMatrix::from_device_dense(borrowed.gpu, borrowed.values, rows, cols)
            })
            .or_raise(py)?;
        Ok(DMatrix { inner })
    }

    /// Whether the features are the caller's array, read in place (not a copy).
    fn reads_in_place(&self) -> bool {
        match self.inner.features() {
            Some(FeatureMatrix::Dense(m)) => m.values.is_shared(),
            Some(_) => false,
            None => true,
        }
    }

    /// Whether the rows lie in device memory.
    fn on_device(&self) -> bool {
        self.inner.features().is_none()
    }

    /// CSR rows of `cols` features: row offsets (`rows + 1`, from 0), each entry's column and value.
    #[staticmethod]
    fn csr(
        py: Python<'_>,
        indptr: PyReadonlyArray1<'_, u64>,
        indices: PyReadonlyArray1<'_, u32>,
        values: PyReadonlyArray1<'_, f32>,
        cols: usize,
    ) -> PyResult<Self> {
        let row_ptr = contiguous(&indptr, "indptr")?.iter().map(|&o| o as usize).collect();
        let (indices, values) = (contiguous(&indices, "indices")?.to_vec(), contiguous(&values, "data")?.to_vec());
        let inner = py.detach(|| boost::DMatrix::from_csr(row_ptr, indices, values, cols)).or_raise(py)?;
        Ok(DMatrix { inner })
    }

    /// Rows of a CSV or libsvm file: the format `csv` or `libsvm` (`None`: from its extension or
    /// contents), the label column of a CSV file (`None`: the first, as the command line reads
    /// it; -1: none), with its side files (`.weight`, `.query`) as the command line reads them.
    #[staticmethod]
    #[pyo3(signature = (path, format=None, label_column=None))]
    fn from_file(py: Python<'_>, path: PathBuf, format: Option<&str>, label_column: Option<i64>) -> PyResult<Self> {
        let format = match format {
            None => None,
            Some("csv") => Some(boost::data::DataFormat::Csv),
            Some("libsvm") => Some(boost::data::DataFormat::Libsvm),
            Some(other) => {
                let message = format!("{}: format `{other}` (csv or libsvm)", path.display());
                return Err(crate::errors::to_py(py, boost::Error::InvalidData(message)));
            }
        };
        let mut options = boost::data::ReadOptions { format, ..Default::default() };
        match label_column {
            Some(column) if column < 0 => options.csv.has_label = false,
            Some(column) => options.csv.label = boost::data::Column::Index(column as usize),
            None => {}
        }
        let inner = py.detach(|| boost::DMatrix::from_file(&path, &options)).or_raise(py)?;
        Ok(DMatrix { inner })
    }

    /// The batches of a `DataIter` (external memory), quantised into pages of at least
    /// `page_bytes` with `max_bin` bins; pages past `host_bytes` go to an unnamed file in
    /// `cache_dir` when one is given.
    #[staticmethod]
    #[pyo3(signature = (iter, max_bin, feature_types, page_bytes, cache_dir=None, host_bytes=0))]
    fn from_batches(
        py: Python<'_>,
        iter: Bound<'_, PyAny>,
        max_bin: u32,
        feature_types: Vec<String>,
        page_bytes: usize,
        cache_dir: Option<PathBuf>,
        host_bytes: usize,
    ) -> PyResult<Self> {
        let inner =
            crate::batches::from_batches(py, iter, (max_bin, feature_types), (page_bytes, cache_dir, host_bytes))?;
        Ok(DMatrix { inner })
    }

    /// Pages, bytes in host memory and bytes on disk of external-memory rows (`None` for others).
    fn pages(&self) -> Option<(usize, usize, u64)> {
        self.inner.pages().map(|p| (p.pages, p.host_bytes, p.disk_bytes))
    }

    /// Sets a label a row.
    fn set_labels(&mut self, py: Python<'_>, labels: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        self.inner.set_labels(contiguous(&labels, "label")?.to_vec()).or_raise(py)
    }

    /// Sets a weight a row (or a query group).
    fn set_weights(&mut self, py: Python<'_>, weights: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        self.inner.set_weights(contiguous(&weights, "weight")?.to_vec()).or_raise(py)
    }

    /// Sets `survival:aft`'s label intervals, a lower and an upper bound a row.
    fn set_label_bounds(
        &mut self,
        py: Python<'_>,
        lower: PyReadonlyArray1<'_, f32>,
        upper: PyReadonlyArray1<'_, f32>,
    ) -> PyResult<()> {
        let (lower, upper) =
            (contiguous(&lower, "label_lower_bound")?.to_vec(), contiguous(&upper, "label_upper_bound")?.to_vec());
        self.inner.set_label_bounds(lower, upper).or_raise(py)
    }

    /// The label intervals' lower and upper bounds (empty when none were set).
    fn label_bounds<'py>(&self, py: Python<'py>) -> (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<f32>>) {
        let info = self.inner.info();
        (PyArray1::from_slice(py, &info.label_lower_bound), PyArray1::from_slice(py, &info.label_upper_bound))
    }

    /// Sets each feature's weight in column sampling (empty: uniform).
    fn set_feature_weights(&mut self, py: Python<'_>, weights: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        self.inner.set_feature_weights(contiguous(&weights, "feature_weights")?.to_vec()).or_raise(py)
    }

    /// Sets the starting margins, `rows * outputs` row-major.
    fn set_base_margin(&mut self, py: Python<'_>, margins: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        self.inner.set_base_margin(contiguous(&margins, "base_margin")?.to_vec()).or_raise(py)
    }

    /// Sets the query groups' sizes (consecutive rows).
    fn set_groups(&mut self, py: Python<'_>, sizes: Vec<usize>) -> PyResult<()> {
        self.inner.set_groups(&sizes).or_raise(py)
    }

    /// Sets the features' names (an empty list clears them).
    fn set_feature_names(&mut self, py: Python<'_>, names: Vec<String>) -> PyResult<()> {
        self.inner.set_feature_names(names).or_raise(py)
    }

    /// Sets the features' types by XGBoost's names (`c`: categorical; an empty list clears them).
    fn set_feature_types(&mut self, py: Python<'_>, types: Vec<String>) -> PyResult<()> {
        self.inner.set_feature_types(types).or_raise(py)
    }

    /// Names the categories of categorical features (`None` a feature without names).
    fn set_category_names(&mut self, py: Python<'_>, names: Vec<Option<Vec<String>>>) -> PyResult<()> {
        self.inner.set_category_names(names).or_raise(py)
    }

    /// XGBoost's type codes of features whose categories are integers (`None`: strings).
    fn set_category_kinds(&mut self, py: Python<'_>, kinds: Vec<Option<i64>>) -> PyResult<()> {
        self.inner.set_category_kinds(kinds).or_raise(py)
    }

    /// The features' types (empty when none were set).
    fn feature_types(&self) -> Vec<String> {
        self.inner.info().feature_types.clone()
    }

    /// The labels (empty when none were set).
    fn labels<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        PyArray1::from_slice(py, &self.inner.info().labels)
    }

    /// The weights (empty when none were set).
    fn weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        PyArray1::from_slice(py, &self.inner.info().weights)
    }

    /// The base margins (empty when none were set).
    fn base_margin<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        PyArray1::from_slice(py, &self.inner.info().base_margin)
    }

    /// The query groups' offsets (`groups + 1`, from 0; empty without groups).
    fn group_ptr(&self) -> Vec<usize> {
        self.inner.info().group_ptr.clone()
    }

    /// The features' names (empty when none were set).
    fn feature_names(&self) -> Vec<String> {
        self.inner.info().feature_names.clone()
    }

    /// Rows.
    fn rows(&self) -> usize {
        self.inner.rows()
    }

    /// Features.
    fn cols(&self) -> usize {
        self.inner.cols()
    }
}
