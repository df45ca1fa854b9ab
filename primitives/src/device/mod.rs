//! Device-wide algorithms, shaped like CUB's `Device*` facades: each takes the [`Gpu`](crate::Gpu),
//! device buffers in and out, enqueues its kernels on the GPU's stream and returns without waiting.
//! Temporary storage is owned by the `Gpu` handle and reused across calls.

mod histogram;
mod multi;
mod reduce;
mod scan;
mod segmented_reduce;
mod select;

pub use histogram::{ExperimentalHistogram, HistogramExperimentKernel};
pub use multi::{DeviceMulti, MultiKernel, MAX_BUCKETS};
pub use reduce::{DeviceReduce, ReduceKernel};
pub(crate) use scan::ScanTemp;
pub use scan::{DeviceScan, ScanKernel, SegmentHeads, SegmentedScanKernel};
pub use segmented_reduce::{DeviceSegmentedReduce, SegmentedReduceKernel};
pub use select::{CompareKernel, Comparison, DevicePartition, DeviceRunLengthEncode, DeviceSelect, SelectKernel};

/// Threads per block of the device-wide kernels.
pub(crate) const BLOCK_THREADS: u32 = 256;
