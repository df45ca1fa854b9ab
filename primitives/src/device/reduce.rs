//! Host side of device reduce: grid sizing, temporary storage, launch.

use crate::LaunchConfig;
use primitives_kernels::device::reduce as kernel;
use primitives_kernels::entry;
use primitives_kernels::launch::KernelArgs;

use super::BLOCK_THREADS;
use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PRIMITIVES_MODULE};
use crate::ops::{AssociativeOp, Element, Max, Min, Sum};

/// Resident blocks per multiprocessor the grid is sized for (8 x 256 threads fills an SM).
const BLOCKS_PER_MULTIPROCESSOR: u32 = 8;

pub(crate) mod sealed {
    /// Only this crate names the (type, operator) pairs that have kernels.
    pub trait Sealed {}
}

/// A (type, operator) pair for which `primitives-kernels` ships a device-reduce entry point. Other
/// pairs do not compile: `DeviceReduce::reduce::<u8, Sum>` is a type error, not a run-time failure.
pub trait ReduceKernel<T: Element>: AssociativeOp<T> + sealed::Sealed {
    /// The kernel's stable name in the PTX.
    const KERNEL: &'static str;

    /// The kernel's launch arguments (its entry point's typed `args`).
    fn args(input: *const T, len: u64, block_totals: *mut T, done_blocks: *mut u32, output: *mut T) -> KernelArgs;
}

macro_rules! reduce_kernels {
    ($($op:ty, $t:ty => $name:ident;)*) => {$(
        impl ReduceKernel<$t> for $op {
            const KERNEL: &'static str = entry::$name::NAME;

            fn args(input: *const $t, len: u64, block_totals: *mut $t, done_blocks: *mut u32, output: *mut $t) -> KernelArgs {
                entry::$name::args(input, len, block_totals, done_blocks, output)
            }
        }
    )*};
}

impl sealed::Sealed for Sum {}
impl sealed::Sealed for Min {}
impl sealed::Sealed for Max {}

reduce_kernels! {
    Sum, f32 => primitives_reduce_sum_f32;
    Min, f32 => primitives_reduce_min_f32;
    Max, f32 => primitives_reduce_max_f32;
    Sum, f64 => primitives_reduce_sum_f64;
    Min, f64 => primitives_reduce_min_f64;
    Max, f64 => primitives_reduce_max_f64;
    Sum, i32 => primitives_reduce_sum_i32;
    Min, i32 => primitives_reduce_min_i32;
    Max, i32 => primitives_reduce_max_i32;
    Sum, u32 => primitives_reduce_sum_u32;
    Min, u32 => primitives_reduce_min_u32;
    Max, u32 => primitives_reduce_max_u32;
    Sum, i64 => primitives_reduce_sum_i64;
    Min, i64 => primitives_reduce_min_i64;
    Max, i64 => primitives_reduce_max_i64;
    Sum, u64 => primitives_reduce_sum_u64;
    Min, u64 => primitives_reduce_min_u64;
    Max, u64 => primitives_reduce_max_u64;
}

/// Device-wide reduction (CUB's `DeviceReduce`).
///
/// One launch: blocks reduce grid-strided shares with 16-byte loads, and the last block to finish
/// combines the block totals. The result is deterministic for a given device (the grid depends only
/// on the input length and the multiprocessor count). As with CUB, the operator must be commutative
/// as well as associative. An empty input gives the operator's identity.
///
/// ```no_run
/// use primitives::{DeviceReduce, Gpu};
/// # fn main() -> primitives::Result<()> {
/// let gpu = Gpu::new()?;
/// let input = gpu.upload(&[3.0f32, 1.0, 4.0, 1.0, 5.0])?;
/// let mut total = gpu.alloc_zeroed::<f32>(1)?;
/// DeviceReduce::sum(&gpu, &input, &mut total)?; // enqueued, not yet waited for
/// assert_eq!(total.to_vec(&gpu)?, [14.0]);
/// assert_eq!(gpu.reduce::<f32, primitives::ops::Max>(&input)?, 5.0);
/// # Ok(())
/// # }
/// ```
pub struct DeviceReduce;

impl DeviceReduce {
    /// Reduces `input` with `Op` into `output[0]`.
    pub fn reduce<T: Element, Op: ReduceKernel<T>>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        if output.is_empty() {
            return Err(Error::InvalidArgument { name: "output", reason: "needs room for one element".into() });
        }
        let grid = Self::grid_size(gpu, input.len(), size_of::<T>());
        let max_grid = Self::max_grid(gpu);
        // Block totals of up to `max_grid` elements of up to 64 bytes, then the done-blocks counter.
        let counter_offset = max_grid as usize * primitives_kernels::arch::MAX_ELEMENT_BYTES;
        let mut temp = gpu.reduce_temp.lock().unwrap_or_else(|p| p.into_inner());
        if temp.is_none() {
            // Zeroed: the counter must start at 0; every launch leaves it at 0 again.
            *temp = Some(DeviceBuffer::zeroed(gpu, counter_offset + 16)?);
        }
        let temp_ptr = temp.as_ref().map(|t| t.as_mut_ptr()).unwrap_or(std::ptr::null_mut());
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (BLOCK_THREADS, 1, 1),
            shared_mem_bytes: kernel::shared_bytes::<T>() as u32,
        };
        let (totals, counter) = (temp_ptr.cast::<T>(), temp_ptr.wrapping_add(counter_offset).cast::<u32>());
        let args = Op::args(input.as_ptr(), input.len() as u64, totals, counter, output.as_mut_ptr());
        // SAFETY: the arguments follow `reduce_kernel`'s contract: `input` holds `len` elements,
        // block totals have room for `grid <= max_grid` elements, the counter is 0 between launches
        // (zeroed at allocation, reset by each launch's last block), `output` holds one element, and
        // the temp storage is used only by launches on this stream, in order (the lock is held).
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args) }
    }

    /// Sum of `input` into `output[0]`.
    pub fn sum<T: Element>(gpu: &Gpu, input: &DeviceBuffer<T>, output: &mut DeviceBuffer<T>) -> Result<()>
    where
        Sum: ReduceKernel<T>,
    {
        Self::reduce::<T, Sum>(gpu, input, output)
    }

    /// Minimum of `input` into `output[0]` (the type's largest value when empty).
    pub fn min<T: Element>(gpu: &Gpu, input: &DeviceBuffer<T>, output: &mut DeviceBuffer<T>) -> Result<()>
    where
        Min: ReduceKernel<T>,
    {
        Self::reduce::<T, Min>(gpu, input, output)
    }

    /// Maximum of `input` into `output[0]` (the type's smallest value when empty).
    pub fn max<T: Element>(gpu: &Gpu, input: &DeviceBuffer<T>, output: &mut DeviceBuffer<T>) -> Result<()>
    where
        Max: ReduceKernel<T>,
    {
        Self::reduce::<T, Max>(gpu, input, output)
    }

    fn max_grid(gpu: &Gpu) -> u32 {
        gpu.properties().multiprocessors.max(1) * BLOCKS_PER_MULTIPROCESSOR
    }

    /// Blocks for `len` elements: enough to fill the device, no more than the work needs.
    pub fn grid_size(gpu: &Gpu, len: usize, element_bytes: usize) -> u32 {
        let per_vector =
            if element_bytes <= 16 && 16usize.is_multiple_of(element_bytes) { 16 / element_bytes } else { 1 };
        let per_block_step = BLOCK_THREADS as usize * per_vector * kernel::LOADS_IN_FLIGHT;
        let wanted = len.div_ceil(per_block_step).max(1);
        wanted.min(Self::max_grid(gpu) as usize) as u32
    }
}

impl Gpu {
    /// Reduces `input` with `Op` and returns the result to the host (waits for the GPU).
    pub fn reduce<T: Element, Op: ReduceKernel<T>>(&self, input: &DeviceBuffer<T>) -> Result<T> {
        let mut output = DeviceBuffer::<T>::zeroed(self, 1)?;
        DeviceReduce::reduce::<T, Op>(self, input, &mut output)?;
        let host = output.to_vec(self)?;
        Ok(host[0])
    }
}
