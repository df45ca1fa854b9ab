//! Host side of segmented reduce.

use crate::LaunchConfig;
use primitives_kernels::device::{segmented_reduce as kernel, select as select_kernel};
use primitives_kernels::entry;
use primitives_kernels::launch::KernelArgs;
use primitives_kernels::ops::GradientPair;

use super::reduce::sealed;
use super::BLOCK_THREADS;
use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PRIMITIVES_MODULE};
use crate::ops::{AssociativeOp, Element, Max, Min, Sum};

/// Segments longer than this go to the chunked kernel that spreads them over all blocks.
const HUGE_SEGMENT: usize = 16 * 1024;
/// Blocks of the chunked kernel (per multiprocessor).
const HUGE_BLOCKS_PER_MULTIPROCESSOR: u32 = 4;
/// Average segment length from which a warp (rather than a thread) takes each segment.
const WARP_FROM_AVERAGE: usize = 16;

/// A (type, operator) pair with segmented-reduce kernels. Sealed.
pub trait SegmentedReduceKernel<T: Element>: AssociativeOp<T> + sealed::Sealed {
    /// The kernels' names in the PTX: a worker a segment, the huge segments, their fixup.
    const MAIN: &'static str;
    const HUGE: &'static str;
    const FIXUP: &'static str;
    /// Their typed launch arguments (the entry points' `args`).
    const MAIN_ARGS: MainArgs<T>;
    const HUGE_ARGS: HugeArgs<T>;
    const FIXUP_ARGS: FixupArgs<T>;
}

/// The segmented reduce's arguments: input, items, begins, ends, segment count, output, a warp a
/// segment, the huge size, the huge list, its capacity, its count, the first bad segment.
pub type MainArgs<T> = fn(
    *const T,
    u64,
    *const u32,
    *const u32,
    *const u64,
    *mut T,
    u32,
    u64,
    *mut u32,
    u32,
    *mut u32,
    *mut u32,
) -> KernelArgs;
/// The huge segments' arguments: input, items, begins, ends, segment count, the huge list, its
/// capacity, its count, the partials.
pub type HugeArgs<T> =
    fn(*const T, u64, *const u32, *const u32, *const u64, *const u32, u32, *const u32, *mut T) -> KernelArgs;
/// The fixup's arguments: the huge list, its capacity, its count, the partials, blocks, output.
pub type FixupArgs<T> = fn(*const u32, u32, *const u32, *const T, u32, *mut T) -> KernelArgs;

macro_rules! segmented_kernels {
    ($($op:ty, $t:ty => $main:ident, $huge:ident, $fixup:ident;)*) => {$(
        impl SegmentedReduceKernel<$t> for $op {
            const MAIN: &'static str = entry::$main::NAME;
            const HUGE: &'static str = entry::$huge::NAME;
            const FIXUP: &'static str = entry::$fixup::NAME;
            const MAIN_ARGS: MainArgs<$t> = entry::$main::args;
            const HUGE_ARGS: HugeArgs<$t> = entry::$huge::args;
            const FIXUP_ARGS: FixupArgs<$t> = entry::$fixup::args;
        }
    )*};
}

segmented_kernels! {
    Sum, f32 => primitives_segmented_reduce_sum_f32, primitives_segmented_reduce_huge_sum_f32, primitives_segmented_reduce_fixup_sum_f32;
    Min, f32 => primitives_segmented_reduce_min_f32, primitives_segmented_reduce_huge_min_f32, primitives_segmented_reduce_fixup_min_f32;
    Max, f32 => primitives_segmented_reduce_max_f32, primitives_segmented_reduce_huge_max_f32, primitives_segmented_reduce_fixup_max_f32;
    Sum, f64 => primitives_segmented_reduce_sum_f64, primitives_segmented_reduce_huge_sum_f64, primitives_segmented_reduce_fixup_sum_f64;
    Min, f64 => primitives_segmented_reduce_min_f64, primitives_segmented_reduce_huge_min_f64, primitives_segmented_reduce_fixup_min_f64;
    Max, f64 => primitives_segmented_reduce_max_f64, primitives_segmented_reduce_huge_max_f64, primitives_segmented_reduce_fixup_max_f64;
    Sum, i32 => primitives_segmented_reduce_sum_i32, primitives_segmented_reduce_huge_sum_i32, primitives_segmented_reduce_fixup_sum_i32;
    Min, i32 => primitives_segmented_reduce_min_i32, primitives_segmented_reduce_huge_min_i32, primitives_segmented_reduce_fixup_min_i32;
    Max, i32 => primitives_segmented_reduce_max_i32, primitives_segmented_reduce_huge_max_i32, primitives_segmented_reduce_fixup_max_i32;
    Sum, u32 => primitives_segmented_reduce_sum_u32, primitives_segmented_reduce_huge_sum_u32, primitives_segmented_reduce_fixup_sum_u32;
    Min, u32 => primitives_segmented_reduce_min_u32, primitives_segmented_reduce_huge_min_u32, primitives_segmented_reduce_fixup_min_u32;
    Max, u32 => primitives_segmented_reduce_max_u32, primitives_segmented_reduce_huge_max_u32, primitives_segmented_reduce_fixup_max_u32;
    Sum, i64 => primitives_segmented_reduce_sum_i64, primitives_segmented_reduce_huge_sum_i64, primitives_segmented_reduce_fixup_sum_i64;
    Min, i64 => primitives_segmented_reduce_min_i64, primitives_segmented_reduce_huge_min_i64, primitives_segmented_reduce_fixup_min_i64;
    Max, i64 => primitives_segmented_reduce_max_i64, primitives_segmented_reduce_huge_max_i64, primitives_segmented_reduce_fixup_max_i64;
    Sum, u64 => primitives_segmented_reduce_sum_u64, primitives_segmented_reduce_huge_sum_u64, primitives_segmented_reduce_fixup_sum_u64;
    Min, u64 => primitives_segmented_reduce_min_u64, primitives_segmented_reduce_huge_min_u64, primitives_segmented_reduce_fixup_min_u64;
    Max, u64 => primitives_segmented_reduce_max_u64, primitives_segmented_reduce_huge_max_u64, primitives_segmented_reduce_fixup_max_u64;
    Sum, GradientPair<f32> => primitives_segmented_reduce_sum_gpf32, primitives_segmented_reduce_huge_sum_gpf32, primitives_segmented_reduce_fixup_sum_gpf32;
    Sum, GradientPair<f64> => primitives_segmented_reduce_sum_gpf64, primitives_segmented_reduce_huge_sum_gpf64, primitives_segmented_reduce_fixup_sum_gpf64;
    Sum, GradientPair<i64> => primitives_segmented_reduce_sum_gpi64, primitives_segmented_reduce_huge_sum_gpi64, primitives_segmented_reduce_fixup_sum_gpi64;
}

/// Segmented reduction (CUB's `DeviceSegmentedReduce`): `output[s]` is the reduction of segment `s`,
/// the identity for an empty one. Segments come as begin and end offsets (any order, may overlap or
/// leave gaps), as a CSR offset array, or as head flags. Many small segments are served several per
/// block (a thread or a warp each); segments over 16 Ki items are spread over all blocks. As for
/// device reduce, the operator must be commutative.
///
/// Offsets with `begin > end` or `end > input.len()` are reported as [`Error::InvalidArgument`]
/// naming the first such segment (found on the device; the call waits for it). The kernels clamp
/// offsets, so bad ones never cause an access outside the input.
pub struct DeviceSegmentedReduce;

impl DeviceSegmentedReduce {
    /// Reduces `input[begin[s]..end[s]]` into `output[s]` for every segment `s`.
    pub fn reduce<T: Element, Op: SegmentedReduceKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        begin: &DeviceBuffer<u32>,
        end: &DeviceBuffer<u32>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        if begin.len() != end.len() {
            return Err(Error::InvalidArgument {
                name: "end",
                reason: format!("{} end offsets for {} begin offsets", end.len(), begin.len()),
            });
        }
        let segments = begin.len();
        let count = gpu.upload(&[segments as u64])?;
        Self::launch::<T, Op>(gpu, input, begin.as_ptr(), end.as_ptr(), count.as_ptr(), segments, output)
    }

    /// Segments given by CSR offsets: segment `s` is `offsets[s]..offsets[s + 1]`.
    pub fn reduce_csr<T: Element, Op: SegmentedReduceKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        offsets: &DeviceBuffer<u32>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let segments = offsets.len().saturating_sub(1);
        let count = gpu.upload(&[segments as u64])?;
        let base = offsets.as_ptr();
        Self::launch::<T, Op>(gpu, input, base, base.wrapping_add(1), count.as_ptr(), segments, output)
    }

    /// Segments start at item 0 and at every item whose head flag is non-zero; their number goes to
    /// `num_segments[0]` and their reductions to `output[..num_segments]`.
    pub fn reduce_by_flags<T: Element, Op: SegmentedReduceKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        head_flags: &DeviceBuffer<u8>,
        output: &mut DeviceBuffer<T>,
        num_segments: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        let n = input.len();
        if head_flags.len() < n {
            return Err(Error::InvalidArgument {
                name: "head_flags",
                reason: format!("{} flags for {n} items", head_flags.len()),
            });
        }
        if num_segments.is_empty() {
            return Err(Error::InvalidArgument { name: "num_segments", reason: "needs room for one number".into() });
        }
        if n >= u32::MAX as usize {
            return Err(Error::InvalidArgument { name: "input", reason: format!("{n} items; at most 2^32 - 2") });
        }
        if n == 0 {
            return num_segments.copy_from_host(gpu, &[0]);
        }
        let heads = DeviceBuffer::<u32>::zeroed(gpu, n)?;
        let ends = DeviceBuffer::<u32>::zeroed(gpu, n)?;
        let tiles = n.div_ceil(BLOCK_THREADS as usize * 16);
        {
            let mut temp = gpu.scan_temp.lock().unwrap_or_else(|p| p.into_inner());
            let (buffer, epoch) = temp.prepare(gpu, select_kernel::temp_bytes(tiles))?;
            let config = LaunchConfig {
                grid_dim: (tiles as u32, 1, 1),
                block_dim: (BLOCK_THREADS, 1, 1),
                shared_mem_bytes: select_kernel::shared_bytes(16, 4) as u32,
            };
            let args = entry::primitives_select_head_flags::args(
                head_flags.as_ptr(),
                n as u64,
                heads.as_mut_ptr(),
                num_segments.as_mut_ptr(),
                buffer.as_mut_ptr(),
                tiles as u32,
                epoch,
            );
            // SAFETY: the flags hold n bytes, `heads` n u32; temp ready with a fresh epoch.
            unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        }
        let config = LaunchConfig {
            grid_dim: (grid_for(gpu, n, 1), 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let args =
            entry::primitives_heads_to_ends::args(heads.as_ptr(), num_segments.as_ptr(), n as u64, ends.as_mut_ptr());
        // SAFETY: `heads` holds `num_segments` indices and `ends` room for as many.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        Self::launch::<T, Op>(gpu, input, heads.as_ptr(), ends.as_ptr(), num_segments.as_ptr(), n, output)
    }

    /// Launches the three kernels for `max_segments` (an upper bound of the device word at `count`)
    /// segments.
    fn launch<T: Element, Op: SegmentedReduceKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        begin: *const u32,
        end: *const u32,
        count: *const u64,
        max_segments: usize,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let n = input.len();
        if output.len() < max_segments {
            return Err(Error::InvalidArgument {
                name: "output",
                reason: format!("holds {} results for {max_segments} segments", output.len()),
            });
        }
        if max_segments == 0 {
            return Ok(());
        }
        // Disjoint segments: at most n / (HUGE + 1) are huge. Overlapping ones can all be: the list is
        // capped there and the kernel reduces the overflow itself.
        let huge_capacity = (n / (HUGE_SEGMENT + 1) + 1).min(max_segments);
        let huge_list = DeviceBuffer::<u32>::zeroed(gpu, huge_capacity)?;
        // [huge count, first bad segment]
        let words = gpu.upload(&[0u32, u32::MAX])?;
        let (huge_count, bad_segment) = (words.as_mut_ptr(), words.as_mut_ptr().wrapping_add(1));
        let warp_per_segment = n / max_segments >= WARP_FROM_AVERAGE;
        let lanes = if warp_per_segment { 32 } else { 1 };
        let config = LaunchConfig {
            grid_dim: (grid_for(gpu, max_segments, lanes), 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let args = Op::MAIN_ARGS(
            input.as_ptr(),
            n as u64,
            begin,
            end,
            count,
            output.as_mut_ptr(),
            warp_per_segment as u32,
            HUGE_SEGMENT as u64,
            huge_list.as_mut_ptr(),
            huge_capacity as u32,
            huge_count,
            bad_segment,
        );
        // SAFETY: offsets arrays hold `*count <= max_segments` entries (checked by the callers),
        // `output` as many results, the huge list room for every segment longer than HUGE_SEGMENT.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };

        let blocks = gpu.properties().multiprocessors.max(1) * HUGE_BLOCKS_PER_MULTIPROCESSOR;
        let partials = DeviceBuffer::<T>::zeroed(gpu, huge_capacity * blocks as usize)?;
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: kernel::huge_shared_bytes::<T>() as u32,
        };
        let args = Op::HUGE_ARGS(
            input.as_ptr(),
            n as u64,
            begin,
            end,
            count,
            huge_list.as_ptr(),
            huge_capacity as u32,
            huge_count,
            partials.as_mut_ptr(),
        );
        // SAFETY: the partials hold `huge_capacity * blocks` results.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        let config = LaunchConfig {
            grid_dim: (grid_for(gpu, huge_capacity, 32), 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let args = Op::FIXUP_ARGS(
            huge_list.as_ptr(),
            huge_capacity as u32,
            huge_count,
            partials.as_ptr(),
            blocks,
            output.as_mut_ptr(),
        );
        // SAFETY: as above.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };

        let flags = words.to_vec(gpu)?;
        if flags[1] != u32::MAX {
            return Err(Error::InvalidArgument {
                name: "offsets",
                reason: format!("segment {}: begin after end, or end past the input's {n} items", flags[1]),
            });
        }
        Ok(())
    }
}

/// Blocks for `workers` workers of `lanes` threads, grid-strided beyond a full device.
fn grid_for(gpu: &Gpu, workers: usize, lanes: usize) -> u32 {
    let max = gpu.properties().multiprocessors.max(1) as usize * 16;
    (workers * lanes).div_ceil(BLOCK_THREADS as usize).clamp(1, max) as u32
}
