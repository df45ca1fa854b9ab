//! Block reduce: a warp reduce in every warp, the warp totals through shared memory, then a warp
//! reduce of those in warp 0. Two barriers' worth of latency, one slot of shared memory per warp.

use core::marker::PhantomData;

use crate::arch::{self, WARP_SIZE};
use crate::block::DynamicShared;
use crate::ops::{AssociativeOp, Element};
use crate::warp;

/// Most warps in a block (1024 threads).
const MAX_WARPS: usize = 32;

/// Block-wide reduction over shared scratch space of [`BlockReduce::SHARED_BYTES`] bytes.
///
/// Any block size from 1 to 1024 threads works; a last, partial warp is handled. Between two calls on
/// the same storage the block must pass a barrier ([`arch::sync_threads`]), as with CUB.
pub struct BlockReduce<T> {
    warp_totals: *mut T,
    _element: PhantomData<T>,
}

impl<T: Element> BlockReduce<T> {
    /// Shared memory the storage needs, in bytes.
    pub const SHARED_BYTES: usize = MAX_WARPS * core::mem::size_of::<T>();

    /// Uses `MAX_WARPS` elements at `warp_totals`.
    ///
    /// # Safety
    /// `warp_totals` must point to shared memory for 32 `T`s, the same address in every thread of the
    /// block, used by nothing else while the block reduces.
    #[inline(always)]
    pub unsafe fn from_shared(warp_totals: *mut T) -> Self {
        Self { warp_totals, _element: PhantomData }
    }

    /// Takes its storage from `shared`.
    #[inline(always)]
    pub fn from_allocator(shared: &mut DynamicShared) -> Self {
        Self { warp_totals: shared.take::<T>(MAX_WARPS), _element: PhantomData }
    }

    /// Takes its storage from the start of the launch's dynamic shared memory.
    ///
    /// # Safety
    /// Nothing else in the kernel may use the first [`Self::SHARED_BYTES`] bytes of dynamic shared
    /// memory while this storage is in use.
    #[inline(always)]
    pub unsafe fn from_dynamic_shared() -> Self {
        Self::from_allocator(&mut DynamicShared::new())
    }

    /// Reduces one value per thread; the result is valid in thread 0.
    #[inline(always)]
    pub fn reduce<Op: AssociativeOp<T>>(&self, value: T) -> T {
        let threads = arch::block_dim_x();
        let warp_idx = arch::warp_idx();
        let lane = arch::lane_id();
        let warps = threads.div_ceil(WARP_SIZE);
        let lanes_here = (threads - warp_idx * WARP_SIZE).min(WARP_SIZE);

        let warp_total = warp::warp_reduce_partial::<T, Op>(value, lanes_here);
        if warps == 1 {
            return warp_total;
        }
        if lane == 0 {
            // SAFETY: warp_idx < 32 and the storage holds 32 elements.
            unsafe { arch::store(self.warp_totals.add(warp_idx as usize), warp_total) };
        }
        arch::sync_threads();
        let mut total = warp_total;
        if warp_idx == 0 {
            let partial = if lane < warps {
                // SAFETY: lane < warps <= 32; written before the barrier above.
                unsafe { arch::load(self.warp_totals.add(lane as usize)) }
            } else {
                Op::identity()
            };
            total = warp::warp_reduce::<T, Op>(partial);
        }
        total
    }
}
