//! The crate's one error type.

use std::path::PathBuf;

/// Everything `boost` can fail with. Messages name the file, line, parameter or model field at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A malformed line or field in a data file.
    #[error("{path}:{line}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line (from 1).
        line: usize,
        /// What is wrong there.
        reason: String,
    },
    /// A training or prediction parameter that is unknown or out of range.
    #[error("parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// Labels, weights, groups or base margins that the objective or the data cannot take.
    #[error("invalid data: {0}")]
    InvalidData(String),
    /// A model file that is corrupt, foreign or from an unsupported version.
    #[error("model: {0}")]
    Model(String),
    /// The device that `device=` names cannot be opened (no driver, no such GPU, an architecture the
    /// kernels do not cover).
    #[error("parameter `device`: `{device}` cannot be used: {source}")]
    Device {
        /// The device as `device=` named it.
        device: String,
        /// Why it cannot be used.
        source: Box<primitives::Error>,
    },
    /// The GPU ran out of memory during a phase of training.
    #[error("GPU out of memory while {phase}: {bytes} bytes asked, {free_bytes} free")]
    DeviceMemory {
        /// The step that allocated.
        phase: String,
        /// Bytes it asked for.
        bytes: usize,
        /// Bytes free on the device then.
        free_bytes: u64,
    },
    /// A phase of training would pass the `device_memory_limit` parameter.
    #[error(
        "device_memory_limit reached while {phase}: {bytes} bytes asked with {in_use} in use, the limit is {limit}"
    )]
    DeviceMemoryLimit {
        /// The step that allocated.
        phase: String,
        /// Bytes it asked for.
        bytes: usize,
        /// Bytes the run's buffers held then.
        in_use: usize,
        /// The limit.
        limit: usize,
    },
    /// A step of training on a GPU failed (a kernel fault, a lost device, a driver error): which
    /// device and which phase. No model file is written.
    #[error("GPU {device} failed while {phase}: {source}")]
    DeviceStep {
        /// The device.
        device: String,
        /// The step that failed.
        phase: String,
        /// The driver's or the emulator's error.
        source: Box<primitives::Error>,
    },
    /// The devices of a multi-device run could not exchange their sums (NCCL missing or failing).
    #[error("multi-device communication: {0}")]
    Communication(String),
    /// A callback, custom objective or custom metric of the caller's failed (a binding's callable
    /// raised, say): training stopped there and no model is returned.
    #[error("callback: {0}")]
    Callback(String),
    /// A failure of the GPU backend outside a named phase.
    #[error("GPU: {0}")]
    Gpu(#[from] primitives::Error),
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn param(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidParameter { name: name.into(), reason: reason.into() }
    }
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}
