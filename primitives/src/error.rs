//! The crate's one error type.

use cudarc::driver::sys::CUresult;

/// A CUDA driver call's failure: the driver's result code (`CUresult`), its name and description.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {description}")]
pub struct DriverError {
    /// The `CUresult` value (`2`: `CUDA_ERROR_OUT_OF_MEMORY`, ...).
    pub code: u32,
    /// The result's name, as `cuGetErrorName` gives it.
    pub name: String,
    /// Its description, as `cuGetErrorString` gives it.
    pub description: String,
}

impl From<cudarc::driver::DriverError> for DriverError {
    fn from(error: cudarc::driver::DriverError) -> Self {
        let text =
            |c: Result<&std::ffi::CStr, _>| c.map_or_else(|_| "unknown".into(), |c| c.to_string_lossy().into_owned());
        DriverError { code: error.0 as u32, name: text(error.error_name()), description: text(error.error_string()) }
    }
}

/// Everything that can go wrong on the host side of a primitive.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `libcuda` could not be loaded: no NVIDIA driver on this machine.
    #[error("no CUDA driver: libcuda could not be loaded (is an NVIDIA driver installed?)")]
    NoDriver,
    /// The driver is there but reports no usable device (or not the one asked for).
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A device allocation failed for lack of memory.
    #[error("out of device memory allocating {bytes} bytes")]
    OutOfMemory { bytes: usize },
    /// A device allocation would pass the caller's limit ([`crate::Gpu::set_memory_limit`]).
    #[error(
        "device memory limit: allocating {bytes} bytes with {in_use} in use would pass the limit of {limit} bytes"
    )]
    MemoryLimit { bytes: usize, in_use: usize, limit: usize },
    /// A family of embedded kernels did not load (the driver refused the image, or its JIT failed).
    #[error("loading the `{family}` kernels of `{module}`: {source}")]
    ModuleLoad { module: &'static str, family: &'static str, source: DriverError },
    /// An embedded kernel image is damaged (it does not decompress, or its checksum is wrong).
    #[error("the embedded `{family}` kernels of `{module}` are damaged: {reason}")]
    CorruptKernelImage { module: &'static str, family: &'static str, reason: String },
    /// The GPU is older than every shipped machine code and the PTX's target.
    #[error(
        "GPU of compute capability {}.{} is not supported: the kernels need 8.0 (Ampere) or newer",
        compute_capability.0,
        compute_capability.1
    )]
    UnsupportedDevice { compute_capability: (i32, i32) },
    /// A kernel failed to launch or failed while running.
    #[error("kernel `{kernel}` failed: {source}")]
    Launch { kernel: &'static str, source: DriverError },
    /// Any other driver call failed.
    #[error("CUDA driver error while {during}: {source}")]
    Driver { during: &'static str, source: DriverError },
    /// A kernel run on the emulated device faulted (out-of-bounds access, missing barrier, trap, ...).
    #[error("emulated kernel fault: {0}")]
    EmulatedFault(#[from] primitives_kernels::emu::EmulatorError),
    /// An argument that cannot be right (mismatched lengths, an empty output, ...).
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument { name: &'static str, reason: String },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A driver error during `during`, classified (out of memory is its own variant).
    pub(crate) fn driver(during: &'static str, bytes: usize) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
        move |source| {
            if source.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                Error::OutOfMemory { bytes }
            } else {
                Error::Driver { during, source: source.into() }
            }
        }
    }

    pub(crate) fn launch(kernel: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
        move |source| Error::Launch { kernel, source: source.into() }
    }
}
