//! Device multireduce and multiscan over interleaved buckets: every item carries a bucket id in
//! `0..buckets` (at most 64); multireduce gives each bucket's reduction, multiscan each item's scan
//! within its own bucket, in input order. Built on the warp multireduce/multiscan (one masked warp
//! pass per live bucket, Mitchell & Frank 2017) in three launches:
//!
//! 1. `partials_kernel`: the grid splits the input into contiguous chunks, one per warp in order;
//!    each warp reduces its chunk per bucket into `partials[bucket][warp]`.
//! 2. `combine_kernel`: one block per bucket scans (or reduces) that bucket's warp partials in order.
//! 3. `scan_kernel` (multiscan only): each warp scans its chunk again, seeded per bucket by the
//!    scanned partial, and writes the results.
//!
//! Operands are combined in input order throughout, so any associative operator works, and results
//! do not depend on timing. Items whose bucket id is out of range take part in nothing (their
//! multiscan output is the identity) and the smallest such index is reported in `*bad_item`.

use crate::arch;
use crate::block::{BlockReduce, BlockScan, DynamicShared};
use crate::ops::{AssociativeOp, Element};
use crate::warp;

/// Largest bucket count.
pub const MAX_BUCKETS: usize = 64;
/// Threads per block of the multi kernels.
pub const BLOCK_THREADS: u32 = 256;
const WARPS_PER_BLOCK: usize = BLOCK_THREADS as usize / 32;
/// Rounds of 32 items a warp loads before it processes them (loads in flight).
const ROUNDS_IN_FLIGHT: usize = 4;

/// Dynamic shared memory of the partials and scan kernels: a running value per bucket per warp.
pub const fn shared_bytes<T>() -> usize {
    WARPS_PER_BLOCK * MAX_BUCKETS * size_of::<T>()
}

/// Dynamic shared memory of the combine kernel.
pub const fn combine_shared_bytes<T: Element>() -> usize {
    BlockScan::<T>::SHARED_BYTES + BlockReduce::<T>::SHARED_BYTES
}

/// The calling warp's chunk `[begin, end)` of `len` items split evenly over all warps of the grid.
#[inline(always)]
fn warp_chunk(len: usize) -> (usize, usize, usize) {
    let warps = arch::grid_dim_x() as usize * arch::block_dim_x() as usize / 32;
    let warp = (arch::block_idx_x() * arch::block_dim_x() + arch::thread_idx_x()) as usize / 32;
    let per_warp = len.div_ceil(warps);
    let begin = (warp * per_warp).min(len);
    (warp, begin, (begin + per_warp).min(len))
}

/// Loads up to `ROUNDS_IN_FLIGHT` rounds of one item per lane starting at `start` (items at
/// `start + 32 * r + lane`), with their buckets; validity says whether the item exists and its
/// bucket is in range (reporting it to `bad_item` when not).
///
/// # Safety
/// `values` and `buckets` valid for reads below `end`; `bad_item` valid.
#[allow(clippy::type_complexity)]
#[inline(always)]
unsafe fn load_rounds<T: Element>(
    values: *const T,
    buckets: *const u32,
    start: usize,
    end: usize,
    bucket_count: u32,
    bad_item: *mut u32,
) -> ([T; ROUNDS_IN_FLIGHT], [u32; ROUNDS_IN_FLIGHT], [bool; ROUNDS_IN_FLIGHT]) {
    let lane = arch::lane_id() as usize;
    let mut value = [T::zeroed(); ROUNDS_IN_FLIGHT];
    let mut bucket = [0u32; ROUNDS_IN_FLIGHT];
    let mut valid = [false; ROUNDS_IN_FLIGHT];
    for r in 0..ROUNDS_IN_FLIGHT {
        let i = start + 32 * r + lane;
        if i < end {
            // SAFETY: i < end.
            unsafe {
                value[r] = arch::load(values.add(i));
                bucket[r] = arch::load(buckets.add(i));
            }
            valid[r] = bucket[r] < bucket_count;
            if !valid[r] {
                // SAFETY: bad_item valid.
                unsafe { arch::atomic_min_u32_gpu(bad_item, i as u32) };
            }
        }
    }
    (value, bucket, valid)
}

/// Launch 1: `partials[bucket * warps + warp]` = the reduction of the warp's chunk in that bucket
/// (the identity where the bucket is absent).
///
/// # Safety
/// `values`, `buckets` valid for `len` reads; `partials` for `bucket_count * warps` writes;
/// `bad_item` valid; `bucket_count <= MAX_BUCKETS`; [`shared_bytes`] of dynamic shared memory.
#[inline(always)]
pub unsafe fn partials_kernel<T: Element, Op: AssociativeOp<T>>(
    values: *const T,
    buckets: *const u32,
    len: u64,
    bucket_count: u32,
    partials: *mut T,
    bad_item: *mut u32,
) {
    let warp_in_block = arch::warp_idx() as usize;
    let sums = DynamicShared::new().take::<T>(WARPS_PER_BLOCK * MAX_BUCKETS);
    // SAFETY: this warp's row of the shared sums.
    let row = unsafe { sums.add(warp_in_block * MAX_BUCKETS) };
    let lane = arch::lane_id() as usize;
    let mut b = lane;
    while b < bucket_count as usize {
        // SAFETY: b < MAX_BUCKETS.
        unsafe { arch::store(row.add(b), Op::identity()) };
        b += 32;
    }
    arch::sync_warp(arch::FULL_MASK);
    let (warp, begin, end) = warp_chunk(len as usize);
    let warps = arch::grid_dim_x() as usize * WARPS_PER_BLOCK;
    let mut start = begin;
    while start < end {
        // SAFETY: reads below end.
        let (value, bucket, valid) = unsafe { load_rounds(values, buckets, start, end, bucket_count, bad_item) };
        for r in 0..ROUNDS_IN_FLIGHT {
            warp::warp_multireduce::<T, Op>(value[r], bucket[r], valid[r], |b, total| {
                // SAFETY: b < bucket_count <= MAX_BUCKETS; lane 0 only.
                unsafe { arch::store(row.add(b as usize), Op::combine(arch::load(row.add(b as usize)), total)) };
            });
            arch::sync_warp(arch::FULL_MASK);
        }
        start += 32 * ROUNDS_IN_FLIGHT;
    }
    let mut b = lane;
    while b < bucket_count as usize {
        // SAFETY: b < bucket_count; the partials hold bucket_count * warps values.
        unsafe { arch::store(partials.add(b * warps + warp), arch::load(row.add(b))) };
        b += 32;
    }
}

/// Launch 2, one block per bucket: with `scan != 0`, replaces the bucket's `warps` partials by their
/// exclusive scan (in warp order); in any case writes their reduction to `totals[bucket]`.
///
/// # Safety
/// `partials` holds `gridDim * warps` values; `totals` room for `gridDim`; [`combine_shared_bytes`].
#[inline(always)]
pub unsafe fn combine_kernel<T: Element, Op: AssociativeOp<T>>(
    partials: *mut T,
    warps: u32,
    scan: u32,
    totals: *mut T,
) {
    let mut shared = DynamicShared::new();
    let block_scan = BlockScan::<T>::from_allocator(&mut shared);
    let block_reduce = BlockReduce::<T>::from_allocator(&mut shared);
    let bucket = arch::block_idx_x() as usize;
    let threads = arch::block_dim_x() as usize;
    let tid = arch::thread_idx_x() as usize;
    // SAFETY: this bucket's row.
    let row = unsafe { partials.add(bucket * warps as usize) };
    if scan == 0 {
        let mut acc = Op::identity();
        // Contiguous runs per thread keep the combination in warp order.
        let per_thread = (warps as usize).div_ceil(threads);
        let first = (tid * per_thread).min(warps as usize);
        let last = (first + per_thread).min(warps as usize);
        for w in first..last {
            // SAFETY: w < warps.
            acc = Op::combine(acc, unsafe { arch::load(row.add(w)) });
        }
        let total = block_reduce.reduce::<Op>(acc);
        if tid == 0 {
            // SAFETY: bucket < gridDim.
            unsafe { arch::store(totals.add(bucket), total) };
        }
        return;
    }
    let mut running = Op::identity();
    let mut base = 0usize;
    while base < warps as usize {
        let w = base + tid;
        // SAFETY: w < warps when read.
        let value = if w < warps as usize { unsafe { arch::load(row.add(w)) } } else { Op::identity() };
        let (exclusive, aggregate) = block_scan.exclusive_scan_with_prefix::<Op>(value, |_| running);
        if w < warps as usize {
            // SAFETY: w < warps.
            unsafe { arch::store(row.add(w), exclusive) };
        }
        running = Op::combine(running, aggregate);
        base += threads;
        // The block-scan storage is reused by the next round.
        arch::sync_threads();
    }
    if tid == 0 {
        // SAFETY: bucket < gridDim.
        unsafe { arch::store(totals.add(bucket), running) };
    }
}

/// Launch 3 (multiscan): with the same grid as launch 1, each warp scans its chunk within each bucket,
/// seeded by its scanned partial, and writes `output[i]` (exclusive, or inclusive when
/// `inclusive != 0`).
///
/// # Safety
/// As for [`partials_kernel`], after [`combine_kernel`] scanned the partials; `output` valid for
/// `len` writes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn scan_kernel<T: Element, Op: AssociativeOp<T>>(
    values: *const T,
    buckets: *const u32,
    len: u64,
    bucket_count: u32,
    partials: *const T,
    inclusive: u32,
    output: *mut T,
    bad_item: *mut u32,
) {
    let warp_in_block = arch::warp_idx() as usize;
    let carries = DynamicShared::new().take::<T>(WARPS_PER_BLOCK * MAX_BUCKETS);
    // SAFETY: this warp's row.
    let row = unsafe { carries.add(warp_in_block * MAX_BUCKETS) };
    let lane = arch::lane_id() as usize;
    let (warp, begin, end) = warp_chunk(len as usize);
    let warps = arch::grid_dim_x() as usize * WARPS_PER_BLOCK;
    let mut b = lane;
    while b < bucket_count as usize {
        // SAFETY: b < bucket_count.
        unsafe { arch::store(row.add(b), arch::load(partials.add(b * warps + warp))) };
        b += 32;
    }
    arch::sync_warp(arch::FULL_MASK);
    let mut start = begin;
    while start < end {
        // SAFETY: reads below end.
        let (value, bucket, valid) = unsafe { load_rounds(values, buckets, start, end, bucket_count, bad_item) };
        for r in 0..ROUNDS_IN_FLIGHT {
            let exclusive = warp::warp_multiscan::<T, Op>(
                value[r],
                bucket[r],
                valid[r],
                // SAFETY: b < bucket_count.
                |b| unsafe { arch::load(row.add(b as usize)) },
                // SAFETY: as above; lane 0 only.
                |b, total| unsafe {
                    arch::store(row.add(b as usize), Op::combine(arch::load(row.add(b as usize)), total))
                },
            );
            let i = start + 32 * r + lane;
            if i < end {
                let result = if inclusive != 0 && valid[r] { Op::combine(exclusive, value[r]) } else { exclusive };
                // SAFETY: i < end <= len.
                unsafe { arch::store(output.add(i), result) };
            }
        }
        start += 32 * ROUNDS_IN_FLIGHT;
    }
}
