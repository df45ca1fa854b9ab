//! Device-wide algorithms, shaped like CUB's `Device*` facades: each takes the [`Gpu`](crate::Gpu),
//! device buffers in and out, enqueues its kernels on the GPU's stream and returns without waiting.
//! Temporary storage is owned by the `Gpu` handle and reused across calls.

mod histogram;
#[cfg(feature = "experiments")]
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
    pack_bin_rows, BinIndex, BlockHistogramLayout, DeviceHistogram, EvenSample, HistogramWeight, MultiFeatureBins,
    MultiFeatureGradient, MultiFeatureMatrix, PackedBinMatrix,
};
#[cfg(feature = "experiments")]
pub use histogram_experiment::{ExperimentalHistogram, HistogramExperimentKernel};
pub use multi::{DeviceMulti, MultiKernel, MAX_BUCKETS};
pub use reduce::{DeviceReduce, ReduceKernel};
pub(crate) use scan::ScanTemp;
#[cfg(feature = "experiments")]
pub use scan::ScanTile;
pub use scan::{DeviceScan, ScanKernel, SegmentHeads, SegmentedScanKernel};
pub use segmented_reduce::{DeviceSegmentedReduce, SegmentedReduceKernel};
#[cfg(feature = "experiments")]
pub use select::SelectPasses;
pub use select::{CompareKernel, Comparison, DevicePartition, DeviceRunLengthEncode, DeviceSelect, SelectKernel};
#[cfg(test)]
pub(crate) use sort::kernel_names as sort_kernel_names;
pub use sort::{DeviceRadixSort, DeviceSegmentedSort, SortKey, SortOrder, MAX_SORT_ITEMS};

/// Threads per block of the device-wide kernels.
pub(crate) const BLOCK_THREADS: u32 = 256;
