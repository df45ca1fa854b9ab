//! Device-wide algorithms, shaped like CUB's `Device*` facades: each takes the [`Gpu`](crate::Gpu),
//! device buffers in and out, enqueues its kernels on the GPU's stream and returns without waiting.
//! Temporary storage is owned by the `Gpu` handle and reused across calls.

mod histogram;
mod histogram_experiment;
mod multi;
mod reduce;
mod scan;
mod segmented_reduce;
mod select;
mod sort;

#[cfg(test)]
pub(crate) use histogram::kernel_names as histogram_kernel_names;
pub use histogram::{
    BinIndex, BlockHistogramLayout, DeviceHistogram, EvenSample, HistogramWeight, MultiFeatureGradient,
    MultiFeatureMatrix,
};
pub use histogram_experiment::{ExperimentalHistogram, HistogramExperimentKernel};
pub use multi::{DeviceMulti, MultiKernel, MAX_BUCKETS};
pub use reduce::{DeviceReduce, ReduceKernel};
pub(crate) use scan::ScanTemp;
pub use scan::{DeviceScan, ScanKernel, ScanTile, SegmentHeads, SegmentedScanKernel};
pub use segmented_reduce::{DeviceSegmentedReduce, SegmentedReduceKernel};
pub use select::{
    CompareKernel, Comparison, DevicePartition, DeviceRunLengthEncode, DeviceSelect, SelectKernel, SelectPasses,
    TWO_PASS_SELECT_FROM,
};
#[cfg(test)]
pub(crate) use sort::kernel_names as sort_kernel_names;
pub use sort::{DeviceRadixSort, DeviceSegmentedSort, SortKey, SortOrder, MAX_SORT_ITEMS};

/// Threads per block of the device-wide kernels.
pub(crate) const BLOCK_THREADS: u32 = 256;
