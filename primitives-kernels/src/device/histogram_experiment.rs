//! Gradient-pair histograms by atomic addition, **for the precision experiment only**
//! (`cargo xtask precision`, docs/precision.md): how far a histogram summed with `f32` or `f64`
//! atomics lies from the exact one, and how much it changes from run to run, against 64-bit fixed
//! point, whose integer atomics give the same bits whatever the order.
//!
//! The scheme is XGBoost's GPU `hist`: each block accumulates its grid-strided rows into a private
//! histogram in shared memory with block-scope atomics, then adds it to the global histogram with
//! device-scope atomics. The order of both kinds of additions is decided by the warp scheduler, so
//! float results vary from run to run; that is what the experiment measures. This is not the device
//! histogram library (issue 5: many features, bins per feature, sub-warp privatisation, ...).

use crate::arch;
use crate::block::DynamicShared;
use crate::ops::{Element, GradientPair};

/// A histogram component type with atomic addition at block and device scope.
pub trait AtomicAccumulate: Element {
    /// `*ptr += value` atomically with respect to the threads of the block.
    ///
    /// # Safety
    /// `ptr` valid and aligned, in shared or global memory.
    unsafe fn atomic_add_block(ptr: *mut Self, value: Self);
    /// `*ptr += value` atomically with respect to every thread of the device.
    ///
    /// # Safety
    /// `ptr` valid and aligned, in global memory.
    unsafe fn atomic_add_device(ptr: *mut Self, value: Self);
}

impl AtomicAccumulate for f32 {
    #[inline(always)]
    unsafe fn atomic_add_block(ptr: *mut Self, value: Self) {
        // SAFETY: forwarded from the caller.
        unsafe { arch::atomic_add_f32_cta(ptr, value) };
    }
    #[inline(always)]
    unsafe fn atomic_add_device(ptr: *mut Self, value: Self) {
        // SAFETY: forwarded from the caller.
        unsafe { arch::atomic_add_f32_gpu(ptr, value) };
    }
}

impl AtomicAccumulate for f64 {
    #[inline(always)]
    unsafe fn atomic_add_block(ptr: *mut Self, value: Self) {
        // SAFETY: forwarded from the caller.
        unsafe { arch::atomic_add_f64_cta(ptr, value) };
    }
    #[inline(always)]
    unsafe fn atomic_add_device(ptr: *mut Self, value: Self) {
        // SAFETY: forwarded from the caller.
        unsafe { arch::atomic_add_f64_gpu(ptr, value) };
    }
}

/// Fixed point: two's complement addition is the same operation on `u64` bits, and exact.
impl AtomicAccumulate for i64 {
    #[inline(always)]
    unsafe fn atomic_add_block(ptr: *mut Self, value: Self) {
        // SAFETY: forwarded from the caller; i64 and u64 have the same size and alignment.
        unsafe { arch::atomic_add_u64_cta(ptr.cast::<u64>(), value as u64) };
    }
    #[inline(always)]
    unsafe fn atomic_add_device(ptr: *mut Self, value: Self) {
        // SAFETY: as above.
        unsafe { arch::atomic_add_u64_gpu(ptr.cast::<u64>(), value as u64) };
    }
}

/// Dynamic shared memory the kernel needs for `bin_count` bins of `GradientPair<T>`.
pub const fn shared_bytes<T>(bin_count: usize) -> usize {
    bin_count * core::mem::size_of::<GradientPair<T>>()
}

/// Adds `gradients[i]` to `histogram[bins[i]]` for every `i < len`; rows whose bin is at or past
/// `bin_count` are skipped. Any grid, any block size; [`shared_bytes`]`::<T>(bin_count)` bytes of
/// dynamic shared memory.
///
/// # Safety
/// `bins` and `gradients` valid for `len` reads; `histogram` valid for `bin_count` elements that only
/// this kernel's atomics touch while it runs.
#[inline(always)]
pub unsafe fn gradient_histogram_kernel<T: AtomicAccumulate>(
    bins: *const u32,
    gradients: *const GradientPair<T>,
    len: u64,
    bin_count: u32,
    histogram: *mut GradientPair<T>,
) {
    let mut shared = DynamicShared::new();
    let local = shared.take::<GradientPair<T>>(bin_count as usize);
    let threads = arch::block_dim_x();
    let tid = arch::thread_idx_x();

    let mut b = tid;
    while b < bin_count {
        // SAFETY: b < bin_count, the size of the block's histogram.
        unsafe { arch::store(local.add(b as usize), GradientPair::new(T::zeroed(), T::zeroed())) };
        b += threads;
    }
    arch::sync_threads();

    let stride = threads as u64 * arch::grid_dim_x() as u64;
    let mut i = arch::block_idx_x() as u64 * threads as u64 + tid as u64;
    while i < len {
        // SAFETY: i < len.
        let bin = unsafe { arch::load(bins.add(i as usize)) };
        if bin < bin_count {
            // SAFETY: i < len.
            let g = unsafe { arch::load(gradients.add(i as usize)) };
            // `GradientPair` is `repr(C)`: `grad`, then `hess`.
            let slot = local.wrapping_add(bin as usize).cast::<T>();
            // SAFETY: bin < bin_count: both components lie in the block's histogram.
            unsafe {
                T::atomic_add_block(slot, g.grad);
                T::atomic_add_block(slot.add(1), g.hess);
            }
        }
        i += stride;
    }
    arch::sync_threads();

    let mut b = tid;
    while b < bin_count {
        // SAFETY: b < bin_count for both histograms; every addition above is complete (barrier).
        unsafe {
            let sum = arch::load(local.add(b as usize));
            let slot = histogram.add(b as usize).cast::<T>();
            T::atomic_add_device(slot, sum.grad);
            T::atomic_add_device(slot.add(1), sum.hess);
        }
        b += threads;
    }
}
