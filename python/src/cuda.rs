//! Device arrays through the CUDA array interface (CuPy, PyTorch, Numba): their memory borrowed in
//! place for `DMatrix` rows and `inplace_predict` (never copied to the host), and predictions
//! handed back in device memory as a `DeviceArray`, which such libraries wrap without a copy.

use std::sync::{Arc, Mutex};

use boost::DeviceData;
use numpy::{PyArray1, PyArrayMethods};
use primitives::{DeviceBuffer, DeviceKind, Gpu};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::to_py;

/// The devices device arrays lie on, opened once a process (a device's kernels load once) and
/// shared by every `DMatrix` and prediction that borrows from them.
static DEVICES: Mutex<Vec<(DeviceKind, Arc<Gpu>)>> = Mutex::new(Vec::new());

/// The device holding `address`: the CUDA device the driver names, or the SIMT emulator when
/// `PRIMITIVES_DEVICE` asks for it (the tests, where "device" arrays are host memory).
fn device_of(address: u64) -> boost::Result<Arc<Gpu>> {
    let gpu_error =
        |source: primitives::Error| boost::Error::Device { device: "cuda".into(), source: Box::new(source) };
    let kind = match DeviceKind::from_env_or(DeviceKind::Cuda { ordinal: 0 }).map_err(gpu_error)? {
        DeviceKind::Cuda { .. } => {
            let ordinal = Gpu::ordinal_of_pointer(address).map_err(device_array_error)?;
            DeviceKind::Cuda { ordinal }
        }
        emulated => emulated,
    };
    let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, gpu)) = devices.iter().find(|(k, _)| *k == kind) {
        return Ok(gpu.clone());
    }
    let gpu = Arc::new(Gpu::with_kind(kind).map_err(gpu_error)?);
    devices.push((kind, gpu.clone()));
    Ok(gpu)
}

/// A refused device pointer as a data error naming the array.
fn device_array_error(source: primitives::Error) -> boost::Error {
    boost::Error::InvalidData(format!("device array: {source}"))
}

/// A caller's dense rows in device memory: `rows x cols` C-contiguous float32 at `address`,
/// borrowed (with `owner`, the array, kept alive) after the caller's `stream` is waited for.
pub(crate) struct DeviceRows {
    pub(crate) gpu: Arc<Gpu>,
    pub(crate) values: DeviceBuffer<f32>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
}

impl DeviceRows {
    pub(crate) fn borrow(
        address: u64,
        (rows, cols): (usize, usize),
        stream: Option<usize>,
        owner: Py<PyAny>,
    ) -> boost::Result<Self> {
        let len = rows
            .checked_mul(cols)
            .ok_or_else(|| boost::Error::InvalidData(format!("device array: {rows} x {cols} values overflow")))?;
        let gpu = device_of(address)?;
        if let Some(stream) = stream {
            // SAFETY: the stream the array interface names: 1, 2 or a live stream of the array's
            // device, as the interface's version 3 requires of its producer.
            unsafe { gpu.wait_for_foreign_stream(stream) }.map_err(device_array_error)?;
        }
        // SAFETY: the interface promises `len` float32 values at `address`, allocated while the
        // array `owner` lives (kept with the buffer); they are only read.
        let values =
            unsafe { DeviceBuffer::borrow_foreign(&gpu, address, len, Box::new(owner)) }.map_err(device_array_error)?;
        Ok(DeviceRows { gpu, values, rows, cols })
    }

    pub(crate) fn data(&self) -> DeviceData<'_> {
        DeviceData::Dense { values: &self.values, rows: self.rows, cols: self.cols }
    }
}

/// Predictions left in device memory (float32), exposing the CUDA array interface so that CuPy
/// or PyTorch wraps them without a copy; `numpy.asarray` copies them to the host.
#[pyclass(module = "twinboost._core", name = "DeviceArray", frozen)]
pub struct DeviceArray {
    gpu: Arc<Gpu>,
    values: Arc<DeviceBuffer<f32>>,
    shape: Vec<usize>,
}

impl DeviceArray {
    pub(crate) fn new(gpu: Arc<Gpu>, values: DeviceBuffer<f32>) -> Self {
        let shape = vec![values.len()];
        DeviceArray { gpu, values: Arc::new(values), shape }
    }
}

#[pymethods]
impl DeviceArray {
    /// The CUDA array interface (version 3): the work that wrote the values is done.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interface = PyDict::new(py);
        interface.set_item("shape", self.shape(py)?)?;
        interface.set_item("typestr", "<f4")?;
        interface.set_item("data", (self.values.device_ptr(), false))?;
        interface.set_item("version", 3)?;
        interface.set_item("strides", py.None())?;
        interface.set_item("stream", py.None())?;
        Ok(interface)
    }

    /// The shape (row-major, C-contiguous).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// The same values in another shape of as many elements (no copy).
    fn reshape(&self, shape: Vec<usize>) -> PyResult<Self> {
        if shape.iter().product::<usize>() != self.values.len() {
            let message = format!("cannot reshape {} values to {shape:?}", self.values.len());
            return Err(pyo3::exceptions::PyValueError::new_err(message));
        }
        Ok(DeviceArray { gpu: self.gpu.clone(), values: self.values.clone(), shape })
    }

    /// The CUDA ordinal of the device holding the values (0 on the emulator).
    #[getter]
    fn device_ordinal(&self) -> usize {
        self.gpu.ordinal().unwrap_or(0)
    }

    /// A host copy as a NumPy array (NumPy's array protocol).
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            let message = "device values cannot be viewed as a NumPy array without a copy";
            return Err(pyo3::exceptions::PyValueError::new_err(message));
        }
        let host = py.detach(|| self.values.to_vec(&self.gpu)).map_err(|e| to_py(py, boost::Error::Gpu(e)))?;
        let array = PyArray1::from_vec(py, host).reshape(self.shape.clone())?.into_any();
        match dtype {
            Some(dtype) => array.call_method1("astype", (dtype,)),
            None => Ok(array),
        }
    }
}
