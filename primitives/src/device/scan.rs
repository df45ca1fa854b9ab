//! Host side of device scan: temporary storage (tile status reused across launches through epochs),
//! the initial value, launch.

use crate::LaunchConfig;
use primitives_kernels::device::scan as kernel;
use primitives_kernels::entry;
use primitives_kernels::launch::KernelArgs;
use primitives_kernels::ops::GradientPair;

use super::reduce::sealed;
use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PRIMITIVES_MODULE};
use crate::ops::{AssociativeOp, Element, Max, Min, Sum};

/// A (type, operator) pair with device-scan entry points in `primitives-kernels`. Sealed: other pairs
/// do not compile.
pub trait ScanKernel<T: Element>: AssociativeOp<T> + sealed::Sealed {
    /// The inclusive scan's name in the PTX.
    const INCLUSIVE: &'static str;
    /// The exclusive scan's name in the PTX.
    const EXCLUSIVE: &'static str;
    /// The inclusive scan's typed launch arguments.
    const INCLUSIVE_ARGS: ScanArgs<T>;
    /// The exclusive scan's typed launch arguments.
    const EXCLUSIVE_ARGS: ScanArgs<T>;
}

/// How a scan's launch makes its arguments: a [`ScanArgs`], or a bench's variant by name.
type ScanLaunch<'a, T> = dyn Fn(*const T, *mut T, u64, *const T, *mut u8, u32, u32) -> KernelArgs + 'a;

/// A device scan's launch arguments (its entry point's typed `args`): input, output, items, the
/// initial value, the temporary storage, tiles, epoch.
pub type ScanArgs<T> = fn(*const T, *mut T, u64, *const T, *mut u8, u32, u32) -> KernelArgs;

macro_rules! scan_kernels {
    ($($op:ty, $t:ty => $inclusive:ident, $exclusive:ident;)*) => {$(
        impl ScanKernel<$t> for $op {
            const INCLUSIVE: &'static str = entry::$inclusive::NAME;
            const EXCLUSIVE: &'static str = entry::$exclusive::NAME;
            const INCLUSIVE_ARGS: ScanArgs<$t> = entry::$inclusive::args;
            const EXCLUSIVE_ARGS: ScanArgs<$t> = entry::$exclusive::args;
        }
    )*};
}

scan_kernels! {
    Sum, f32 => primitives_scan_inclusive_sum_f32, primitives_scan_exclusive_sum_f32;
    Min, f32 => primitives_scan_inclusive_min_f32, primitives_scan_exclusive_min_f32;
    Max, f32 => primitives_scan_inclusive_max_f32, primitives_scan_exclusive_max_f32;
    Sum, f64 => primitives_scan_inclusive_sum_f64, primitives_scan_exclusive_sum_f64;
    Min, f64 => primitives_scan_inclusive_min_f64, primitives_scan_exclusive_min_f64;
    Max, f64 => primitives_scan_inclusive_max_f64, primitives_scan_exclusive_max_f64;
    Sum, i32 => primitives_scan_inclusive_sum_i32, primitives_scan_exclusive_sum_i32;
    Min, i32 => primitives_scan_inclusive_min_i32, primitives_scan_exclusive_min_i32;
    Max, i32 => primitives_scan_inclusive_max_i32, primitives_scan_exclusive_max_i32;
    Sum, u32 => primitives_scan_inclusive_sum_u32, primitives_scan_exclusive_sum_u32;
    Min, u32 => primitives_scan_inclusive_min_u32, primitives_scan_exclusive_min_u32;
    Max, u32 => primitives_scan_inclusive_max_u32, primitives_scan_exclusive_max_u32;
    Sum, i64 => primitives_scan_inclusive_sum_i64, primitives_scan_exclusive_sum_i64;
    Min, i64 => primitives_scan_inclusive_min_i64, primitives_scan_exclusive_min_i64;
    Max, i64 => primitives_scan_inclusive_max_i64, primitives_scan_exclusive_max_i64;
    Sum, u64 => primitives_scan_inclusive_sum_u64, primitives_scan_exclusive_sum_u64;
    Min, u64 => primitives_scan_inclusive_min_u64, primitives_scan_exclusive_min_u64;
    Max, u64 => primitives_scan_inclusive_max_u64, primitives_scan_exclusive_max_u64;
    Sum, GradientPair<f32> => primitives_scan_inclusive_sum_gpf32, primitives_scan_exclusive_sum_gpf32;
    Sum, GradientPair<f64> => primitives_scan_inclusive_sum_gpf64, primitives_scan_exclusive_sum_gpf64;
    Sum, GradientPair<i64> => primitives_scan_inclusive_sum_gpi64, primitives_scan_exclusive_sum_gpi64;
}

/// Reusable temporary storage of the scans: the tile counter, the initial value and the tile status.
/// Flags carry a per-launch epoch, so the storage needs no clearing between launches.
#[derive(Default)]
pub(crate) struct ScanTemp {
    buffer: Option<DeviceBuffer<u8>>,
    epoch: u32,
    /// The initial value last copied to the buffer, so that scans from the same value (every
    /// exclusive sum) skip the copy, an operation on the stream.
    initial: Option<Vec<u8>>,
}

/// Epochs live in the top 30 bits of a flag.
const MAX_EPOCH: u32 = (1 << 30) - 1;

impl ScanTemp {
    /// Readies at least `bytes` of storage (tile counter at 0, no live flag) and returns it with a
    /// fresh epoch. Every single-pass kernel (scan, select, ...) shares this storage; the caller holds
    /// the lock while it enqueues, so uses are ordered on the one stream.
    pub(crate) fn prepare(&mut self, gpu: &Gpu, bytes: usize) -> Result<(&mut DeviceBuffer<u8>, u32)> {
        let too_small = self.buffer.as_ref().is_none_or(|b| b.len() < bytes);
        if too_small || self.epoch >= MAX_EPOCH {
            // Zeroed: the tile counter starts at 0 and no flag carries a live epoch.
            self.buffer = Some(DeviceBuffer::zeroed(gpu, bytes.next_multiple_of(1 << 20))?);
            self.epoch = 0;
            self.initial = None;
        }
        self.epoch += 1;
        let epoch = self.epoch;
        Ok((self.buffer.as_mut().expect("allocated above"), epoch))
    }
}

/// The tile of a scan variant (`DeviceScan::inclusive_sum_variant`, feature `experiments`).
#[cfg(feature = "experiments")]
#[derive(Clone, Copy, Debug)]
pub enum ScanTile {
    /// Items in registers, 64 bytes a thread.
    Registers,
    /// Rows of `row_vectors` 16-byte vectors in shared memory, one a thread; warp 0 looks back.
    Staged { row_vectors: usize },
    /// As `Staged`, plus a look-back warp that holds no row (`block_threads - 32` rows).
    Specialized { row_vectors: usize },
}

/// Device-wide prefix scan (CUB's `DeviceScan`): one pass with decoupled look-back, no host
/// synchronisation. Operands are combined in input order; any associative operator works (it need
/// not be commutative). `output` must not be `input`.
///
/// ```no_run
/// use primitives::{DeviceScan, Gpu};
/// # fn main() -> primitives::Result<()> {
/// let gpu = Gpu::new()?;
/// let input = gpu.upload(&[3u32, 1, 4, 1, 5])?;
/// let mut output = gpu.alloc_zeroed::<u32>(5)?;
/// DeviceScan::inclusive_sum(&gpu, &input, &mut output)?;
/// assert_eq!(output.to_vec(&gpu)?, [3, 4, 8, 9, 14]);
/// DeviceScan::exclusive_sum(&gpu, &input, &mut output)?;
/// assert_eq!(output.to_vec(&gpu)?, [0, 3, 4, 8, 9]);
/// # Ok(())
/// # }
/// ```
pub struct DeviceScan;

impl DeviceScan {
    /// Elements per tile (one block) for `T`.
    pub const fn tile_items<T>() -> usize {
        kernel::staged_tile_items::<T>(kernel::staged_block_threads::<T>() as usize, kernel::STAGED_ROW_VECTORS)
    }

    /// 16-byte vectors per thread in the production scan's shared-memory tile.
    #[doc(hidden)]
    pub const STAGED_ROW_VECTORS: usize = kernel::STAGED_ROW_VECTORS;

    /// A scan variant kept for side-by-side measurements (`bandwidth scan-variants`): the kernel
    /// `name` (an f32 inclusive sum) launched with `block_threads` threads per block and tiles of
    /// the given shape; a timed variant writes 8 words per tile to `timeline`. `shared_padding`
    /// bytes of unused dynamic shared memory limit the blocks per multiprocessor (and so the bytes in
    /// flight).
    #[cfg(feature = "experiments")]
    #[allow(clippy::too_many_arguments)]
    pub fn inclusive_sum_variant(
        gpu: &Gpu,
        name: &'static str,
        block_threads: u32,
        tile: ScanTile,
        shared_padding: usize,
        input: &DeviceBuffer<f32>,
        output: &mut DeviceBuffer<f32>,
        timeline: Option<&mut DeviceBuffer<u64>>,
    ) -> Result<()> {
        let threads = block_threads as usize;
        let (tile_items, shared) = match tile {
            ScanTile::Registers => {
                (kernel::BLOCK_THREADS as usize * kernel::items_per_thread::<f32>(), kernel::shared_bytes::<f32>())
            }
            ScanTile::Staged { row_vectors } => (
                kernel::staged_tile_items::<f32>(threads, row_vectors),
                kernel::staged_shared_bytes::<f32>(threads, row_vectors),
            ),
            ScanTile::Specialized { row_vectors } => (
                kernel::specialized_tile_items::<f32>(threads, row_vectors),
                kernel::specialized_shared_bytes::<f32>(threads - 32, row_vectors),
            ),
        };
        if let Some(timeline) = &timeline {
            if timeline.len() < 8 * input.len().div_ceil(tile_items) {
                return Err(Error::InvalidArgument { name: "timeline", reason: "needs 8 words per tile".into() });
            }
        }
        let timeline = timeline.map(|t| t.as_ptr().cast::<f32>());
        let shared = shared + shared_padding;
        let n = input.len();
        // The variants share the scan's parameters; the bench names which one.
        let variant =
            |input: *const f32, output: *mut f32, n: u64, initial: *const f32, temp: *mut u8, tiles, epoch| {
                use primitives_kernels::launch::KernelParam;
                let words =
                    [input.to_raw(), output.to_raw(), n, initial.to_raw(), temp.to_raw(), tiles as u64, epoch as u64];
                KernelArgs::new(name, &words)
            };
        Self::launch_with::<f32>(gpu, &variant, block_threads, tile_items, shared, input, output, n, None, timeline)
    }

    /// `output[i] = input[0] ⊕ ... ⊕ input[i]`.
    pub fn inclusive_scan<T: Element, Op: ScanKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Self::launch::<T>(gpu, &Op::INCLUSIVE_ARGS, input, output, None)
    }

    /// `output[i] = initial ⊕ input[0] ⊕ ... ⊕ input[i - 1]` (`output[0] = initial`).
    pub fn exclusive_scan<T: Element, Op: ScanKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        initial: T,
    ) -> Result<()> {
        Self::launch::<T>(gpu, &Op::EXCLUSIVE_ARGS, input, output, Some(initial))
    }

    /// [`Self::exclusive_sum`] of the first `num_items` elements of `input` into the first
    /// `num_items` of `output` (CUB's `num_items`), so that buffers sized for the largest scan serve
    /// smaller ones without an allocation each.
    pub fn exclusive_sum_n<T: Element>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        num_items: usize,
    ) -> Result<()>
    where
        Sum: ScanKernel<T>,
    {
        let zero = <Sum as AssociativeOp<T>>::identity();
        Self::launch_n::<T>(gpu, &<Sum as ScanKernel<T>>::EXCLUSIVE_ARGS, input, output, num_items, Some(zero))
    }

    /// Inclusive prefix sum.
    pub fn inclusive_sum<T: Element>(gpu: &Gpu, input: &DeviceBuffer<T>, output: &mut DeviceBuffer<T>) -> Result<()>
    where
        Sum: ScanKernel<T>,
    {
        Self::inclusive_scan::<T, Sum>(gpu, input, output)
    }

    /// Exclusive prefix sum starting at zero.
    pub fn exclusive_sum<T: Element>(gpu: &Gpu, input: &DeviceBuffer<T>, output: &mut DeviceBuffer<T>) -> Result<()>
    where
        Sum: ScanKernel<T>,
    {
        Self::exclusive_scan::<T, Sum>(gpu, input, output, <Sum as AssociativeOp<T>>::identity())
    }

    fn launch<T: Element>(
        gpu: &Gpu,
        kernel: &ScanLaunch<'_, T>,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        initial: Option<T>,
    ) -> Result<()> {
        Self::launch_n(gpu, kernel, input, output, input.len(), initial)
    }

    fn launch_n<T: Element>(
        gpu: &Gpu,
        kernel: &ScanLaunch<'_, T>,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        num_items: usize,
        initial: Option<T>,
    ) -> Result<()> {
        let threads = kernel::staged_block_threads::<T>();
        let shared = kernel::staged_shared_bytes::<T>(threads as usize, kernel::STAGED_ROW_VECTORS);
        let tile = Self::tile_items::<T>();
        Self::launch_with(gpu, kernel, threads, tile, shared, input, output, num_items, initial, None)
    }

    #[allow(clippy::too_many_arguments)]
    fn launch_with<T: Element>(
        gpu: &Gpu,
        kernel: &ScanLaunch<'_, T>,
        block_threads: u32,
        tile_items: usize,
        shared_bytes: usize,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
        num_items: usize,
        initial: Option<T>,
        timeline: Option<*const T>,
    ) -> Result<()> {
        if num_items > input.len() {
            return Err(Error::InvalidArgument {
                name: "num_items",
                reason: format!("{num_items} items; the input holds {}", input.len()),
            });
        }
        if output.len() < num_items {
            return Err(Error::InvalidArgument {
                name: "output",
                reason: format!("holds {} elements for {num_items} items", output.len()),
            });
        }
        if num_items == 0 {
            return Ok(());
        }
        let tiles = num_items.div_ceil(tile_items);
        if tiles > u32::MAX as usize {
            return Err(Error::InvalidArgument { name: "input", reason: format!("{num_items} elements are too many") });
        }
        // Sized for the largest element, so one buffer serves every type.
        let needed =
            kernel::TEMP_HEADER + 16 + tiles * 4 + 2 * (tiles * primitives_kernels::arch::MAX_ELEMENT_BYTES + 16);
        let mut temp = gpu.scan_temp.lock().unwrap_or_else(|p| p.into_inner());
        let (_, epoch) = temp.prepare(gpu, needed)?;
        if let Some(initial) = initial {
            let bytes = bytemuck::bytes_of(&initial);
            if temp.initial.as_deref() != Some(bytes) {
                let buffer = temp.buffer.as_mut().expect("prepared above");
                buffer.copy_from_host_at(gpu, kernel::INITIAL_OFFSET, bytes)?;
                temp.initial = Some(bytes.to_vec());
            }
        }
        let base = temp.buffer.as_ref().expect("prepared above").as_mut_ptr();
        let config = LaunchConfig {
            grid_dim: (tiles as u32, 1, 1),
            block_dim: (block_threads, 1, 1),
            shared_mem_bytes: shared_bytes as u32,
        };
        let initial = timeline.unwrap_or(base.wrapping_add(kernel::INITIAL_OFFSET).cast::<T>());
        let args = kernel(input.as_ptr(), output.as_mut_ptr(), num_items as u64, initial, base, tiles as u32, epoch);
        // SAFETY: the arguments follow `scan_kernel`'s contract: buffers of `len` elements, temp
        // storage sized for `tiles` tiles of the largest element with the counter at 0 (zeroed at
        // allocation, reset by every launch's last tile) and a fresh epoch; the lock orders uses of
        // the temp storage on the one stream.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args) }
    }
}

/// A (type, operator) pair with a segmented-scan kernel (for segments by flags, keys or offsets).
/// Sealed.
pub trait SegmentedScanKernel<T: Element>: AssociativeOp<T> + sealed::Sealed {
    /// The kernel's name in the PTX.
    const KERNEL: &'static str;
    /// The kernel's typed launch arguments.
    const ARGS: SegmentedScanArgs<T>;
}

/// A segmented scan's launch arguments: input, head flags, keys, output, items, exclusive,
/// temporary storage, tiles, epoch.
pub type SegmentedScanArgs<T> = fn(*const T, *const u8, *const u32, *mut T, u64, u32, *mut u8, u32, u32) -> KernelArgs;

macro_rules! segmented_scan_kernels {
    ($($op:ty, $t:ty => $name:ident;)*) => {$(
        impl SegmentedScanKernel<$t> for $op {
            const KERNEL: &'static str = entry::$name::NAME;
            const ARGS: SegmentedScanArgs<$t> = entry::$name::args;
        }
    )*};
}

segmented_scan_kernels! {
    Sum, f32 => primitives_segmented_scan_sum_f32;
    Min, f32 => primitives_segmented_scan_min_f32;
    Max, f32 => primitives_segmented_scan_max_f32;
    Sum, f64 => primitives_segmented_scan_sum_f64;
    Min, f64 => primitives_segmented_scan_min_f64;
    Max, f64 => primitives_segmented_scan_max_f64;
    Sum, i32 => primitives_segmented_scan_sum_i32;
    Min, i32 => primitives_segmented_scan_min_i32;
    Max, i32 => primitives_segmented_scan_max_i32;
    Sum, u32 => primitives_segmented_scan_sum_u32;
    Min, u32 => primitives_segmented_scan_min_u32;
    Max, u32 => primitives_segmented_scan_max_u32;
    Sum, i64 => primitives_segmented_scan_sum_i64;
    Min, i64 => primitives_segmented_scan_min_i64;
    Max, i64 => primitives_segmented_scan_max_i64;
    Sum, u64 => primitives_segmented_scan_sum_u64;
    Min, u64 => primitives_segmented_scan_min_u64;
    Max, u64 => primitives_segmented_scan_max_u64;
    Sum, GradientPair<f32> => primitives_segmented_scan_sum_gpf32;
    Sum, GradientPair<f64> => primitives_segmented_scan_sum_gpf64;
    Sum, GradientPair<i64> => primitives_segmented_scan_sum_gpi64;
}

/// Where the segments of a segmented scan start.
#[derive(Clone, Copy, Debug)]
pub enum SegmentHeads<'a> {
    /// An item starts a segment where its flag byte is non-zero (item 0 always does).
    Flags(&'a DeviceBuffer<u8>),
    /// Equal adjacent keys form a segment (scan by key).
    Keys(&'a DeviceBuffer<u32>),
    /// CSR offsets `o[0] = 0 <= o[1] <= ... <= o[m] = len`: segment `s` is `o[s]..o[s + 1]`. Checked
    /// on the device (the call then waits for the check).
    Offsets(&'a DeviceBuffer<u32>),
}

impl DeviceScan {
    /// Segmented inclusive scan: `output[i]` combines the items of `i`'s segment up to `i`.
    pub fn inclusive_segmented_scan<T: Element, Op: SegmentedScanKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        heads: SegmentHeads<'_>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Self::segmented::<T, Op>(gpu, input, heads, output, false)
    }

    /// Segmented exclusive scan: `output[i]` combines the items of `i`'s segment before `i` (the
    /// identity at the first item of a segment).
    pub fn exclusive_segmented_scan<T: Element, Op: SegmentedScanKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        heads: SegmentHeads<'_>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Self::segmented::<T, Op>(gpu, input, heads, output, true)
    }

    fn segmented<T: Element, Op: SegmentedScanKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        heads: SegmentHeads<'_>,
        output: &mut DeviceBuffer<T>,
        exclusive: bool,
    ) -> Result<()> {
        let n = input.len();
        if output.len() < n {
            return Err(Error::InvalidArgument {
                name: "output",
                reason: format!("holds {} elements, the input {n}", output.len()),
            });
        }
        let (head_len, name) = match heads {
            SegmentHeads::Flags(f) => (f.len(), "heads"),
            SegmentHeads::Keys(k) => (k.len(), "keys"),
            SegmentHeads::Offsets(_) => (n, "offsets"),
        };
        if head_len < n {
            return Err(Error::InvalidArgument { name, reason: format!("{head_len} entries for {n} items") });
        }
        if n == 0 {
            return Ok(());
        }
        let made_flags;
        let (flags, keys) = match heads {
            SegmentHeads::Flags(f) => (f.as_ptr(), std::ptr::null()),
            SegmentHeads::Keys(k) => (std::ptr::null(), k.as_ptr()),
            SegmentHeads::Offsets(offsets) => {
                made_flags = Self::flags_from_offsets(gpu, offsets, n)?;
                (made_flags.as_ptr(), std::ptr::null())
            }
        };
        let tiles = n.div_ceil(kernel::BLOCK_THREADS as usize * kernel::items_per_thread::<T>());
        let mut temp = gpu.scan_temp.lock().unwrap_or_else(|p| p.into_inner());
        // Sized for the largest element (a 64-byte value and its flag words, in 4-byte chunks).
        let needed = kernel::TEMP_HEADER + tiles * 2 * (primitives_kernels::arch::MAX_ELEMENT_BYTES + 8);
        let (buffer, epoch) = temp.prepare(gpu, needed)?;
        let config = LaunchConfig {
            grid_dim: (tiles as u32, 1, 1),
            block_dim: (kernel::BLOCK_THREADS, 1, 1),
            shared_mem_bytes: (33 * (size_of::<T>() + 8) + 16 + 4) as u32,
        };
        let (input, output, temp) = (input.as_ptr(), output.as_mut_ptr(), buffer.as_mut_ptr());
        let args = Op::ARGS(input, flags, keys, output, n as u64, exclusive as u32, temp, tiles as u32, epoch);
        // SAFETY: input, output and heads hold `n` entries (checked above); temp sized for `tiles`
        // tiles of the headed element with a fresh epoch; the lock orders its uses.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args) }
    }

    /// Head flags from CSR offsets, checked on the device.
    fn flags_from_offsets(gpu: &Gpu, offsets: &DeviceBuffer<u32>, n: usize) -> Result<DeviceBuffer<u8>> {
        let segments = offsets.len().saturating_sub(1);
        if segments == 0 {
            return Err(Error::InvalidArgument { name: "offsets", reason: format!("no segment for {n} items") });
        }
        let flags = DeviceBuffer::<u8>::zeroed(gpu, n)?;
        let bad = gpu.upload(&[u32::MAX])?;
        let max_grid = gpu.properties().multiprocessors.max(1) as usize * 16;
        let grid = segments.div_ceil(kernel::BLOCK_THREADS as usize).clamp(1, max_grid) as u32;
        let config =
            LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (kernel::BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
        let args = entry::primitives_offsets_to_flags::args(
            offsets.as_ptr(),
            segments as u64,
            n as u64,
            flags.as_mut_ptr(),
            bad.as_mut_ptr(),
        );
        // SAFETY: offsets hold segments + 1 entries, flags n bytes.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        let bad = bad.to_vec(gpu)?[0];
        if bad != u32::MAX {
            return Err(Error::InvalidArgument {
                name: "offsets",
                reason: format!("segment {bad}: offsets out of order, or not covering 0..{n} exactly"),
            });
        }
        Ok(flags)
    }
}
