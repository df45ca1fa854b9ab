//! Host side of multireduce and multiscan.

use crate::LaunchConfig;
use primitives_kernels::device::multi as kernel;
use primitives_kernels::entry;
use primitives_kernels::launch::KernelArgs;
use primitives_kernels::ops::GradientPair;

use super::reduce::sealed;
use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PRIMITIVES_MODULE};
use crate::ops::{AssociativeOp, Element, Max, Min, Sum};

/// Largest number of buckets.
pub const MAX_BUCKETS: u32 = kernel::MAX_BUCKETS as u32;

/// A (type, operator) pair with multireduce/multiscan kernels. Sealed.
pub trait MultiKernel<T: Element>: AssociativeOp<T> + sealed::Sealed {
    /// The kernels' names in the PTX: the warps' partials, their combination, the scan.
    const PARTIALS: &'static str;
    const COMBINE: &'static str;
    const SCAN: &'static str;
    /// Their typed launch arguments (the entry points' `args`).
    const PARTIALS_ARGS: fn(*const T, *const u32, u64, u32, *mut T, *mut u32) -> KernelArgs;
    const COMBINE_ARGS: fn(*mut T, u32, u32, *mut T) -> KernelArgs;
    const SCAN_ARGS: fn(*const T, *const u32, u64, u32, *const T, u32, *mut T, *mut u32) -> KernelArgs;
}

macro_rules! multi_kernels {
    ($($op:ty, $t:ty => $partials:ident, $combine:ident, $scan:ident;)*) => {$(
        impl MultiKernel<$t> for $op {
            const PARTIALS: &'static str = entry::$partials::NAME;
            const COMBINE: &'static str = entry::$combine::NAME;
            const SCAN: &'static str = entry::$scan::NAME;
            const PARTIALS_ARGS: fn(*const $t, *const u32, u64, u32, *mut $t, *mut u32) -> KernelArgs =
                entry::$partials::args;
            const COMBINE_ARGS: fn(*mut $t, u32, u32, *mut $t) -> KernelArgs = entry::$combine::args;
            const SCAN_ARGS: fn(*const $t, *const u32, u64, u32, *const $t, u32, *mut $t, *mut u32) -> KernelArgs =
                entry::$scan::args;
        }
    )*};
}

multi_kernels! {
    Sum, f32 => primitives_multi_partials_sum_f32, primitives_multi_combine_sum_f32, primitives_multi_scan_sum_f32;
    Min, f32 => primitives_multi_partials_min_f32, primitives_multi_combine_min_f32, primitives_multi_scan_min_f32;
    Max, f32 => primitives_multi_partials_max_f32, primitives_multi_combine_max_f32, primitives_multi_scan_max_f32;
    Sum, f64 => primitives_multi_partials_sum_f64, primitives_multi_combine_sum_f64, primitives_multi_scan_sum_f64;
    Min, f64 => primitives_multi_partials_min_f64, primitives_multi_combine_min_f64, primitives_multi_scan_min_f64;
    Max, f64 => primitives_multi_partials_max_f64, primitives_multi_combine_max_f64, primitives_multi_scan_max_f64;
    Sum, i32 => primitives_multi_partials_sum_i32, primitives_multi_combine_sum_i32, primitives_multi_scan_sum_i32;
    Min, i32 => primitives_multi_partials_min_i32, primitives_multi_combine_min_i32, primitives_multi_scan_min_i32;
    Max, i32 => primitives_multi_partials_max_i32, primitives_multi_combine_max_i32, primitives_multi_scan_max_i32;
    Sum, u32 => primitives_multi_partials_sum_u32, primitives_multi_combine_sum_u32, primitives_multi_scan_sum_u32;
    Min, u32 => primitives_multi_partials_min_u32, primitives_multi_combine_min_u32, primitives_multi_scan_min_u32;
    Max, u32 => primitives_multi_partials_max_u32, primitives_multi_combine_max_u32, primitives_multi_scan_max_u32;
    Sum, i64 => primitives_multi_partials_sum_i64, primitives_multi_combine_sum_i64, primitives_multi_scan_sum_i64;
    Min, i64 => primitives_multi_partials_min_i64, primitives_multi_combine_min_i64, primitives_multi_scan_min_i64;
    Max, i64 => primitives_multi_partials_max_i64, primitives_multi_combine_max_i64, primitives_multi_scan_max_i64;
    Sum, u64 => primitives_multi_partials_sum_u64, primitives_multi_combine_sum_u64, primitives_multi_scan_sum_u64;
    Min, u64 => primitives_multi_partials_min_u64, primitives_multi_combine_min_u64, primitives_multi_scan_min_u64;
    Max, u64 => primitives_multi_partials_max_u64, primitives_multi_combine_max_u64, primitives_multi_scan_max_u64;
    Sum, GradientPair<f32> => primitives_multi_partials_sum_gpf32, primitives_multi_combine_sum_gpf32, primitives_multi_scan_sum_gpf32;
    Sum, GradientPair<f64> => primitives_multi_partials_sum_gpf64, primitives_multi_combine_sum_gpf64, primitives_multi_scan_sum_gpf64;
    Sum, GradientPair<i64> => primitives_multi_partials_sum_gpi64, primitives_multi_combine_sum_gpi64, primitives_multi_scan_sum_gpi64;
}

/// Multireduce and multiscan over interleaved buckets (Mitchell & Frank 2017): `buckets[i]` in
/// `0..bucket_count` (at most 64) says which sequence item `i` belongs to. Each warp makes one masked
/// warp reduce or scan per bucket present among its 32 items, so the cost grows with the number of
/// live buckets: for many buckets use a histogram (multireduce, from about 12 buckets) or a radix
/// sort by bucket id and a segmented scan (multiscan, from about 6 buckets); `docs/benchmarks.md`
/// has the measured crossovers (H200, 2^26 items). Operands are combined in input order
/// (any associative operator), and results do not depend on timing. A bucket id out of range is an
/// [`Error::InvalidArgument`] naming the first such item (found on the device; the call waits for it).
pub struct DeviceMulti;

impl DeviceMulti {
    /// `output[b]` = the reduction of the items in bucket `b` (the identity for an empty bucket).
    pub fn reduce<T: Element, Op: MultiKernel<T>>(
        gpu: &Gpu,
        values: &DeviceBuffer<T>,
        buckets: &DeviceBuffer<u32>,
        bucket_count: u32,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Self::check(values, buckets, bucket_count, output.len(), bucket_count as usize)?;
        Self::run::<T, Op>(gpu, values, buckets, bucket_count, None, output)
    }

    /// `output[i]` = the combination of the items before `i` in `i`'s bucket (exclusive).
    pub fn exclusive_scan<T: Element, Op: MultiKernel<T>>(
        gpu: &Gpu,
        values: &DeviceBuffer<T>,
        buckets: &DeviceBuffer<u32>,
        bucket_count: u32,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Self::check(values, buckets, bucket_count, output.len(), values.len())?;
        let mut totals = DeviceBuffer::<T>::zeroed(gpu, bucket_count as usize)?;
        Self::run::<T, Op>(gpu, values, buckets, bucket_count, Some((output, false)), &mut totals)
    }

    /// `output[i]` = the combination of the items up to `i` in `i`'s bucket (inclusive).
    pub fn inclusive_scan<T: Element, Op: MultiKernel<T>>(
        gpu: &Gpu,
        values: &DeviceBuffer<T>,
        buckets: &DeviceBuffer<u32>,
        bucket_count: u32,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        Self::check(values, buckets, bucket_count, output.len(), values.len())?;
        let mut totals = DeviceBuffer::<T>::zeroed(gpu, bucket_count as usize)?;
        Self::run::<T, Op>(gpu, values, buckets, bucket_count, Some((output, true)), &mut totals)
    }

    fn check<T: Element>(
        values: &DeviceBuffer<T>,
        buckets: &DeviceBuffer<u32>,
        bucket_count: u32,
        output_len: usize,
        needed: usize,
    ) -> Result<()> {
        if bucket_count == 0 || bucket_count > MAX_BUCKETS {
            return Err(Error::InvalidArgument {
                name: "bucket_count",
                reason: format!("{bucket_count}; 1 to {MAX_BUCKETS}"),
            });
        }
        if buckets.len() < values.len() {
            return Err(Error::InvalidArgument {
                name: "buckets",
                reason: format!("{} bucket ids for {} values", buckets.len(), values.len()),
            });
        }
        if values.len() >= u32::MAX as usize {
            return Err(Error::InvalidArgument {
                name: "values",
                reason: format!("{} items; at most 2^32 - 2", values.len()),
            });
        }
        if output_len < needed {
            return Err(Error::InvalidArgument {
                name: "output",
                reason: format!("holds {output_len}, needs {needed}"),
            });
        }
        Ok(())
    }

    fn run<T: Element, Op: MultiKernel<T>>(
        gpu: &Gpu,
        values: &DeviceBuffer<T>,
        buckets: &DeviceBuffer<u32>,
        bucket_count: u32,
        scan: Option<(&mut DeviceBuffer<T>, bool)>,
        totals: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let n = values.len();
        let threads = kernel::BLOCK_THREADS as usize;
        let max_grid = gpu.properties().multiprocessors.max(1) as usize * 4;
        // At least a few rounds of 32 items per warp, at most a few blocks per multiprocessor.
        let grid = n.div_ceil(threads * 8).clamp(1, max_grid);
        let warps = grid * threads / 32;
        let partials = DeviceBuffer::<T>::zeroed(gpu, bucket_count as usize * warps)?;
        let bad = gpu.upload(&[u32::MAX])?;
        let config = LaunchConfig {
            grid_dim: (grid as u32, 1, 1),
            block_dim: (kernel::BLOCK_THREADS, 1, 1),
            shared_mem_bytes: kernel::shared_bytes::<T>() as u32,
        };
        let args = Op::PARTIALS_ARGS(
            values.as_ptr(),
            buckets.as_ptr(),
            n as u64,
            bucket_count,
            partials.as_mut_ptr(),
            bad.as_mut_ptr(),
        );
        // SAFETY: values and buckets hold n entries; partials bucket_count * warps.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        let combine = LaunchConfig {
            grid_dim: (bucket_count, 1, 1),
            block_dim: (kernel::BLOCK_THREADS, 1, 1),
            shared_mem_bytes: kernel::combine_shared_bytes::<T>() as u32,
        };
        let args = Op::COMBINE_ARGS(partials.as_mut_ptr(), warps as u32, scan.is_some() as u32, totals.as_mut_ptr());
        // SAFETY: one block per bucket over its `warps` partials; totals hold bucket_count values.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, combine, args)? };
        if let Some((output, inclusive)) = scan {
            let args = Op::SCAN_ARGS(
                values.as_ptr(),
                buckets.as_ptr(),
                n as u64,
                bucket_count,
                partials.as_ptr(),
                inclusive as u32,
                output.as_mut_ptr(),
                bad.as_mut_ptr(),
            );
            // SAFETY: the same grid as launch 1; output holds n values.
            unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        }
        let bad = bad.to_vec(gpu)?[0];
        if bad != u32::MAX {
            return Err(Error::InvalidArgument {
                name: "buckets",
                reason: format!("item {bad} has a bucket id at or above {bucket_count}"),
            });
        }
        Ok(())
    }
}
