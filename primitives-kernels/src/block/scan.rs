//! Block scan ("warp scans" variant): a scan in every warp, the warp totals scanned by warp 0 through
//! shared memory, each warp's prefix added back. Two barriers; 33 elements of shared memory.

use core::marker::PhantomData;

use crate::arch::{self, WARP_SIZE};
use crate::block::DynamicShared;
use crate::ops::{AssociativeOp, Element};
use crate::warp;

const MAX_WARPS: usize = 32;

/// Block-wide scan over shared scratch space of [`BlockScan::SHARED_BYTES`] bytes.
///
/// Any block size from 1 to 1024 threads works. Operands are combined in thread order
/// (non-commutative operators are fine). Between two calls on the same storage the block must pass a
/// barrier, as with CUB.
pub struct BlockScan<T> {
    /// Warp totals, then (after the scan of warp totals) each warp's prefix; slot 32 holds the block
    /// aggregate.
    slots: *mut T,
    _element: PhantomData<T>,
}

impl<T: Element> BlockScan<T> {
    /// Shared memory the storage needs, in bytes.
    pub const SHARED_BYTES: usize = (MAX_WARPS + 1) * size_of::<T>();

    /// Takes its storage from `shared`.
    #[inline(always)]
    pub fn from_allocator(shared: &mut DynamicShared) -> Self {
        Self { slots: shared.take::<T>(MAX_WARPS + 1), _element: PhantomData }
    }

    /// Uses 33 elements of shared memory at `slots`.
    ///
    /// # Safety
    /// `slots` must point to shared memory for 33 `T`s, the same address in every thread of the
    /// block, used by nothing else during the scan.
    #[inline(always)]
    pub unsafe fn from_shared(slots: *mut T) -> Self {
        Self { slots, _element: PhantomData }
    }

    /// Exclusive scan of one value per thread, seeded by a block prefix: thread `i` gets
    /// `prefix ⊕ v_0 ⊕ ... ⊕ v_{i-1}`, where `prefix` is what `prefix_op` returns in lane 0 of warp 0
    /// when called by all 32 lanes of warp 0 with the block aggregate (CUB's block-prefix callback;
    /// the device scan's look-back runs there). Returns `(exclusive, block_aggregate)` in every thread.
    #[inline(always)]
    pub fn exclusive_scan_with_prefix<Op: AssociativeOp<T>>(&self, value: T, prefix_op: impl FnOnce(T) -> T) -> (T, T) {
        let threads = arch::block_dim_x();
        let warp_idx = arch::warp_idx();
        let lane = arch::lane_id();
        let warps = threads.div_ceil(WARP_SIZE);
        let lanes_here = (threads - warp_idx * WARP_SIZE).min(WARP_SIZE);

        let (exclusive_in_warp, warp_total) = warp::warp_exclusive_scan_partial::<T, Op>(value, lanes_here);
        if lane == 0 {
            // SAFETY: warp_idx < 32; the storage holds 33 elements.
            unsafe { arch::store(self.slots.add(warp_idx as usize), warp_total) };
        }
        arch::sync_threads();
        if warp_idx == 0 {
            // Warp 0 exists in full whenever the prefix callback needs all 32 lanes: when the block
            // has a single partial warp, lanes past it are absent, so it scans its own lanes only.
            let total = if lane < warps {
                // SAFETY: lane < warps <= 32, written before the barrier.
                unsafe { arch::load(self.slots.add(lane as usize)) }
            } else {
                Op::identity()
            };
            let scan_lanes = lanes_here; // 32 unless the whole block is one partial warp
            let (warp_prefix, block_aggregate) = warp::warp_exclusive_scan_partial::<T, Op>(total, scan_lanes);
            let block_prefix = arch::shfl_idx_sync(full_or(scan_lanes), prefix_op(block_aggregate), 0);
            if lane < warps {
                // SAFETY: lane < 32.
                unsafe { arch::store(self.slots.add(lane as usize), Op::combine(block_prefix, warp_prefix)) };
            }
            if lane == 0 {
                // SAFETY: slot 32 exists.
                unsafe { arch::store(self.slots.add(MAX_WARPS), block_aggregate) };
            }
        }
        arch::sync_threads();
        // SAFETY: written by warp 0 before the barrier.
        let warp_prefix = unsafe { arch::load(self.slots.add(warp_idx as usize)) };
        // SAFETY: as above.
        let block_aggregate = unsafe { arch::load(self.slots.add(MAX_WARPS)) };
        (Op::combine(warp_prefix, exclusive_in_warp), block_aggregate)
    }

    /// Exclusive scan: thread `i` gets `v_0 ⊕ ... ⊕ v_{i-1}` (thread 0 the identity); returns
    /// `(exclusive, block_aggregate)`.
    #[inline(always)]
    pub fn exclusive_scan<Op: AssociativeOp<T>>(&self, value: T) -> (T, T) {
        self.exclusive_scan_with_prefix::<Op>(value, |_| Op::identity())
    }

    /// Inclusive scan: thread `i` gets `v_0 ⊕ ... ⊕ v_i`; returns `(inclusive, block_aggregate)`.
    #[inline(always)]
    pub fn inclusive_scan<Op: AssociativeOp<T>>(&self, value: T) -> (T, T) {
        let (exclusive, aggregate) = self.exclusive_scan::<Op>(value);
        (Op::combine(exclusive, value), aggregate)
    }
}

#[inline(always)]
fn full_or(lanes: u32) -> u32 {
    if lanes >= WARP_SIZE {
        u32::MAX
    } else {
        (1u32 << lanes) - 1
    }
}
