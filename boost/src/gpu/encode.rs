//! Ordered target statistics on the device ([`boost_kernels::target_statistics`]): the rows
//! sorted by (category, place in the permutation) with the primitives' radix sort, every row's
//! earlier labels and count by a segmented exclusive scan over its category (fixed point, so the
//! CPU's running sums give the same integers), then each row's value and each category's
//! statistic over all its rows.

use boost_kernels::entry;
use boost_kernels::target_statistics::OrderedStatistics;
use primitives::ops::{GradientPair, Sum};
use primitives::kernels::KernelArgs;
use primitives::{DeviceBuffer, DeviceRadixSort, DeviceScan, Gpu, LaunchConfig, SegmentHeads, SortOrder};

use crate::Result;

/// One column's encoding on `gpu`: every row's ordered statistic (`NaN` where the code is
/// missing) and the statistic of each of `table_len` categories over all rows (the prior for a
/// category without rows). `codes` holds valid category codes below `table_len` or `NaN`;
/// `labels` one label a row, on `gpu`.
pub fn ordered_statistics(
    gpu: &Gpu,
    codes: &[f32],
    labels: &DeviceBuffer<f32>,
    stats: &OrderedStatistics,
    table_len: usize,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let n = codes.len();
    let codes = gpu.upload(codes)?;
    let stats_on_device = gpu.upload(std::slice::from_ref(stats))?;
    let keys = gpu.alloc_uninitialized::<u64>(n)?;
    let order = gpu.alloc_uninitialized::<u32>(n)?;
    let rows = n as u64;
    launch(gpu, n, entry::boost_encode_ordered_keys::args(codes.as_ptr(), rows, stats.seed, keys.as_mut_ptr(), order.as_mut_ptr()))?;
    drop(codes);
    let mut sorted_keys = gpu.alloc_uninitialized::<u64>(n)?;
    let mut sorted_order = gpu.alloc_uninitialized::<u32>(n)?;
    DeviceRadixSort::sort_pairs(gpu, &keys, &mut sorted_keys, &order, &mut sorted_order, SortOrder::ascending())?;
    drop((keys, order));
    let categories = gpu.alloc_uninitialized::<u32>(n)?;
    let pairs = gpu.alloc_uninitialized::<GradientPair<i64>>(n)?;
    launch(
        gpu,
        n,
        entry::boost_encode_ordered_pairs::args(
            sorted_keys.as_ptr(),
            sorted_order.as_ptr(),
            labels.as_ptr(),
            rows,
            stats_on_device.as_ptr(),
            categories.as_mut_ptr(),
            pairs.as_mut_ptr(),
        ),
    )?;
    drop(sorted_keys);
    let mut before = gpu.alloc_uninitialized::<GradientPair<i64>>(n)?;
    DeviceScan::exclusive_segmented_scan::<GradientPair<i64>, Sum>(
        gpu,
        &pairs,
        SegmentHeads::Keys(&categories),
        &mut before,
    )?;
    let values = gpu.alloc_uninitialized::<f32>(n)?;
    let table = gpu.upload(&vec![stats.prior_value(); table_len])?;
    launch(
        gpu,
        n,
        entry::boost_encode_ordered_values::args(
            categories.as_ptr(),
            sorted_order.as_ptr(),
            before.as_ptr(),
            pairs.as_ptr(),
            rows,
            stats_on_device.as_ptr(),
            values.as_mut_ptr(),
            table.as_mut_ptr(),
            table_len as u64,
        ),
    )?;
    Ok((values.to_vec(gpu)?, table.to_vec(gpu)?))
}

/// A thread a row.
fn launch(gpu: &Gpu, n: usize, args: KernelArgs) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let threads = 256u32;
    let config =
        LaunchConfig { grid_dim: ((n as u64).div_ceil(threads as u64) as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: every kernel of this file takes `n` rows with buffers of `n` items (the table of
    // `table_len`), allocated above; a thread past `n` returns.
    unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
    Ok(())
}
