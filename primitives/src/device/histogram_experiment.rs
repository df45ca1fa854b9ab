//! Host side of the experimental gradient histogram (`primitives_kernels::device::histogram_experiment`).

use crate::LaunchConfig;
use primitives_kernels::device::histogram_experiment as kernel;
use primitives_kernels::entry;
use primitives_kernels::launch::KernelArgs;
use primitives_kernels::ops::GradientPair;

use super::BLOCK_THREADS;
use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PRIMITIVES_MODULE};
use crate::ops::Element;

/// Blocks per multiprocessor of the grid (each block holds a private histogram in shared memory).
const BLOCKS_PER_MULTIPROCESSOR: u32 = 8;
/// Rows per thread the grid is sized for (grid-stride loop beyond that).
const ROWS_PER_THREAD: usize = 16;
/// Shared memory a block may use without opting in (48 KiB on every CUDA GPU).
const MAX_SHARED_BYTES: usize = 48 * 1024;

mod sealed {
    /// Only this crate names the component types that have histogram kernels.
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i64 {}
}

/// A gradient component type with an experimental histogram kernel: `f32`, `f64`, or `i64` (64-bit
/// fixed point, as `boost::fixed_point` makes it). Sealed.
pub trait HistogramExperimentKernel: Element + sealed::Sealed {
    /// The kernel's name in the PTX.
    const KERNEL: &'static str;
    /// Its typed launch arguments: bins, gradients, rows, bins in the histogram, the histogram.
    const ARGS: fn(*const u32, *const GradientPair<Self>, u64, u32, *mut GradientPair<Self>) -> KernelArgs;
}

macro_rules! experiment_kernels {
    ($($t:ty => $name:ident;)*) => {$(
        impl HistogramExperimentKernel for $t {
            const KERNEL: &'static str = entry::$name::NAME;
            const ARGS: fn(*const u32, *const GradientPair<$t>, u64, u32, *mut GradientPair<$t>) -> KernelArgs =
                entry::$name::args;
        }
    )*};
}

experiment_kernels! {
    f32 => primitives_experimental_histogram_sum_gpf32;
    f64 => primitives_experimental_histogram_sum_gpf64;
    i64 => primitives_experimental_histogram_sum_gpi64;
}

/// **Experimental; for the precision experiment only** (`cargo xtask precision`, docs/precision.md):
/// a gradient-pair histogram over one bin index per row, summed with atomic additions, XGBoost's
/// GPU `hist` scheme (a shared-memory histogram per block, then device-scope atomics). With `f32` or
/// `f64` components the result depends on the order the scheduler gives the atomics, so it changes
/// from run to run; with `i64` fixed point it does not. The device histogram library (issue 5) will
/// replace this; the API may change or go without notice.
pub struct ExperimentalHistogram;

impl ExperimentalHistogram {
    /// Most bins a histogram of `GradientPair<T>` may have (its block copy lives in shared memory).
    pub fn max_bins<T: HistogramExperimentKernel>() -> usize {
        MAX_SHARED_BYTES / size_of::<GradientPair<T>>()
    }

    /// Adds `gradients[i]` to `histogram[bins[i]]` for every row `i` (`histogram` is not cleared
    /// first); rows whose bin is at or past `histogram.len()` are skipped. Enqueued, no wait.
    pub fn gradient_pairs<T: HistogramExperimentKernel>(
        gpu: &Gpu,
        bins: &DeviceBuffer<u32>,
        gradients: &DeviceBuffer<GradientPair<T>>,
        histogram: &mut DeviceBuffer<GradientPair<T>>,
    ) -> Result<()>
    where
        GradientPair<T>: Element,
    {
        if gradients.len() != bins.len() {
            return Err(Error::InvalidArgument {
                name: "gradients",
                reason: format!("{} gradient pairs for {} bin indices", gradients.len(), bins.len()),
            });
        }
        if histogram.is_empty() || histogram.len() > Self::max_bins::<T>() {
            return Err(Error::InvalidArgument {
                name: "histogram",
                reason: format!("{} bins; 1 to {} are supported", histogram.len(), Self::max_bins::<T>()),
            });
        }
        if bins.is_empty() {
            return Ok(());
        }
        let wanted = bins.len().div_ceil(BLOCK_THREADS as usize * ROWS_PER_THREAD);
        let grid = wanted.min((gpu.properties().multiprocessors.max(1) * BLOCKS_PER_MULTIPROCESSOR) as usize) as u32;
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: kernel::shared_bytes::<T>(histogram.len()) as u32,
        };
        let (len, bin_count) = (bins.len() as u64, histogram.len() as u32);
        let args = T::ARGS(bins.as_ptr(), gradients.as_ptr(), len, bin_count, histogram.as_mut_ptr());
        // SAFETY: `bins` and `gradients` hold `len` elements, `histogram` `bin_count` (at most what
        // the shared memory given holds), and only this launch, in stream order, uses them.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args) }
    }
}
