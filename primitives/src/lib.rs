//! GPU parallel primitives with kernels written in Rust, in CUB's shape: device-wide algorithms
//! over [`DeviceBuffer`]s, generic over the element type and the operator, each with a CPU oracle
//! in [`cpu`], and the warp- and block-level algorithms under them in `primitives-kernels` for your
//! own kernels.
//!
//! * [`Gpu`]: one CUDA device and stream, or the SIMT emulator ([`Gpu::emulated`]), which runs the
//!   same kernels on the CPU with every memory access checked (tests run there without a GPU).
//!   Kernels load lazily by family from machine code for sm_80 to sm_120 embedded in this crate
//!   (PTX for newer devices), so users need no CUDA toolkit, only a driver. Without a driver or
//!   device, [`Gpu::new`] returns an [`Error`], never panics.
//! * [`DeviceBuffer`]: a typed array in device memory, for any [`ops::Element`] (`bytemuck::Pod`).
//! * Device-wide algorithms: [`DeviceReduce`], [`DeviceScan`] (inclusive, exclusive and segmented
//!   scans), [`DeviceSegmentedReduce`], [`DeviceMulti`] (multireduce and multiscan over buckets),
//!   [`DeviceRadixSort`] and [`DeviceSegmentedSort`] (stable, keys or pairs, any bit range),
//!   [`DeviceHistogram`] (even bins, and the multi-feature gradient histograms of tree boosting,
//!   padded or in the global layout),
//!   [`DeviceSelect`], [`DevicePartition`] and [`DeviceRunLengthEncode`]. The operators are
//!   [`ops::Sum`], [`ops::Min`], [`ops::Max`]; unsupported pairs do not compile.
//! * [`cpu`]: the oracles, the same function shapes on slices.
//!
//! ```
//! use primitives::{ops::Sum, DeviceRadixSort, DeviceScan, Gpu, Schedule, SortOrder};
//! # fn main() -> primitives::Result<()> {
//! // `Gpu::new()` for the first CUDA device; the emulator here, so that this runs anywhere.
//! let gpu = Gpu::emulated(Schedule::Deterministic);
//! let values: Vec<u32> = vec![5, 1, 4, 2, 3];
//! let on_device = gpu.upload(&values)?;
//! assert_eq!(gpu.reduce::<u32, Sum>(&on_device)?, 15);
//!
//! let mut prefix = gpu.alloc_zeroed::<u32>(values.len())?;
//! DeviceScan::inclusive_sum(&gpu, &on_device, &mut prefix)?;
//! assert_eq!(prefix.to_vec(&gpu)?, [5, 6, 10, 12, 15]);
//!
//! let mut sorted = gpu.alloc_zeroed::<u32>(values.len())?;
//! DeviceRadixSort::sort_keys(&gpu, &on_device, &mut sorted, SortOrder::ascending())?;
//! assert_eq!(sorted.to_vec(&gpu)?, [1, 2, 3, 4, 5]);
//! # Ok(())
//! # }
//! ```
//!
//! The warp and block algorithms, and the `arch` layer under them (every device intrinsic, with
//! the emulator's versions), live in `primitives-kernels`, which your own kernel crate can depend
//! on to instantiate them for its own types and operators.

mod buffer;
mod copy_stream;
pub mod cpu;
pub mod device;
mod error;
mod foreign;
mod gpu;
mod mapped;

pub use buffer::DeviceBuffer;
pub use copy_stream::CopyStream;
pub use device::{
    pack_bin_rows, BinIndex, BlockHistogramLayout, DeviceHistogram, EvenSample, HistogramWeight, MultiFeatureBins,
    MultiFeatureGradient, MultiFeatureMatrix, PackedBinMatrix,
};
pub use device::{
    CompareKernel, Comparison, DeviceMulti, DevicePartition, DeviceReduce, DeviceRunLengthEncode, DeviceScan,
    DeviceSegmentedReduce, DeviceSelect, MultiKernel, ReduceKernel, ScanKernel, SegmentHeads, SegmentedReduceKernel,
    SegmentedScanKernel, SelectKernel,
};
pub use device::{DeviceRadixSort, DeviceSegmentedSort, SortKey, SortOrder, MAX_SORT_ITEMS};
/// The experiments' facades (feature `experiments`): the precision study's histograms, the scan's
/// tile variants, select's pass choice. Not part of the default API.
#[cfg(feature = "experiments")]
pub use device::{ExperimentalHistogram, HistogramExperimentKernel, ScanTile, SelectPasses};
pub use error::{DriverError, Error, Result};
pub use gpu::{DeviceEvent, DeviceKind, DeviceProperties, Gpu, HostPin, LaunchConfig, MemoryUsage, DEVICE_ENV};
pub use mapped::HostMapped;
/// The SIMT emulator's schedule, for [`Gpu::emulated`].
pub use primitives_kernels::emu::Schedule;
/// Element bound and operators, shared with the kernels.
pub use primitives_kernels::ops;

/// For crates with kernels of their own (built like `primitives-kernels` by `cargo xtask kernels`):
/// the embedded images' index ([`KernelModule`](kernels::KernelModule)), a launch's typed arguments
/// ([`KernelArgs`](kernels::KernelArgs), for [`Gpu::launch_kernel`]), and the loader's diagnostics.
pub mod kernels {
    pub use crate::gpu::{
        HostKernel, ImageKind, KernelFamily, KernelModule, ModuleLoad, SassImage, KERNEL_IMAGE_ENV, LOG_LOADS_ENV,
        PRIMITIVES_MODULE, PTX_COMPUTE_CAPABILITY,
    };
    pub use primitives_kernels::launch::KernelArgs;
}

#[cfg(test)]
mod tests;
