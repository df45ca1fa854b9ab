//! Block histogram: the threads of a block add weighted items to bins of a histogram kept in shared
//! memory, then read the totals out (to flush them to a device-wide histogram). Two layouts:
//!
//! * [`BlockHistogramLayout::Atomic`] (CUB's `BLOCK_HISTO_ATOMIC`): `copies` histograms, warp `w`
//!   adding to copy `w % copies` with shared-memory atomics. One copy per warp (the default when it
//!   fits) keeps warps from contending for a hot bin; lanes of one warp still serialise on it.
//! * [`BlockHistogramLayout::WarpColumns`] (the CatBoost layout, "allocate an independent histogram
//!   per warp", ../shared/papers/catboost-gpu-oblivious-trees.txt): every warp has its own histogram
//!   with one column per lane, counter `(warp, bin, lane)` at `32 * (warp * bins + bin) + lane`.
//!   The data-dependent part of the address, `32 * bin`, is 0 mod 32, so a warp's 32 accesses fall in
//!   32 distinct banks whatever the bins are, and no lane shares a counter with another: plain
//!   read-modify-writes, no atomics, no conflicts, skewed data costs nothing extra. The price is 32
//!   counters per bin and warp, so it is for small bin counts. (CatBoost's kernel shares a column
//!   between 8 lanes that update 8 different (feature, statistic) slots in turn; with one statistic of
//!   one feature that degenerates to a column per lane.)
//!
//! [`BlockHistogramLayout::select`] picks `Atomic` with as many copies (one per warp at most,
//! halving) as fit in [`ATOMIC_MAX_BYTES`]. `WarpColumns` stays available by name but is not chosen:
//! measured on an H200 (2026-11-22, 2^28 u8 samples, 256-thread blocks, `bandwidth histogram`,
//! docs/benchmarks.md) one copy per warp with native shared-memory atomics was as fast or faster at
//! every bin count from 1 to 128, uniform and skewed (e.g. 16 bins: 331 us against 364 uniform, 325
//! against 358 skewed), except 2 uniform bins (363 against 377 us, while skewed 2 bins lost 335 to
//! 311); the CatBoost layout was designed against Maxwell's slower shared atomics.
//!
//! Counters live in shared memory as planes of their components ([`HistogramCounter`]): a
//! `GradientPair<i64>` is four planes of `u32` (gradient low and high words, hessian low and high
//! words), so the 32-bit atomics of neighbouring bins fall in neighbouring banks. A 64-bit integer is
//! added as two 32-bit atomics with the carry (XGBoost's `AtomicAdd64As32`): the low word's atomic
//! returns the old value, which says whether the addition carried into the high word. The final
//! 64-bit value is exact whatever the order; only the totals read after a barrier are meaningful.

use core::marker::PhantomData;

use crate::arch::{self, WARP_SIZE};
use crate::block::DynamicShared;
use crate::ops::{Element, GradientPair};

/// Most bytes the copies of the `Atomic` layout may take.
pub const ATOMIC_MAX_BYTES: usize = 32 * 1024;

/// A counter of a histogram bin: a count or a sum of weights.
pub trait HistogramCounter: Element {
    /// The element of the device-wide histogram the block totals are added to: `u64` for `u32`
    /// counts (a block counts fewer than 2^32 items, a device may count more), the type itself
    /// otherwise.
    type Wide: Element;

    /// `a + b` (integers wrap).
    fn add(a: Self, b: Self) -> Self;
    /// The total as a device-histogram element.
    fn widen(self) -> Self::Wide;
    /// All bits zero (a total that need not be flushed).
    fn is_zero(self) -> bool;

    /// Adds `value` to counter `index` of `slots` counters stored as planes at `base`, atomically with
    /// respect to the block.
    ///
    /// # Safety
    /// `base` in shared memory, 8-byte aligned, holding `slots * size_of::<Self>()` bytes; `index <
    /// slots`.
    unsafe fn add_shared(base: *mut u8, slots: usize, index: usize, value: Self);
    /// Adds `value` to counter `index` without an atomic (the caller's thread is its only writer).
    ///
    /// # Safety
    /// As for [`HistogramCounter::add_shared`].
    unsafe fn add_shared_plain(base: *mut u8, slots: usize, index: usize, value: Self);
    /// Reads counter `index`.
    ///
    /// # Safety
    /// As for [`HistogramCounter::add_shared`].
    unsafe fn load_shared(base: *const u8, slots: usize, index: usize) -> Self;
    /// `*ptr += value` atomically with respect to the device.
    ///
    /// # Safety
    /// `ptr` valid and aligned, in global memory.
    unsafe fn add_global(ptr: *mut Self::Wide, value: Self::Wide);
}

/// Adds a 64-bit integer as two 32-bit shared atomics with carry, the low word at `lo` and the high
/// word at `hi` (see the module doc).
///
/// # Safety
/// `lo` and `hi` in shared memory, 4-byte aligned.
#[inline(always)]
unsafe fn add_u64_split(lo: *mut u32, hi: *mut u32, value: u64) {
    let low = value as u32;
    // SAFETY: forwarded from the caller.
    let old = unsafe { arch::atomic_add_u32_shared(lo, low) };
    let carry = old.overflowing_add(low).1 as u32;
    let high = ((value >> 32) as u32).wrapping_add(carry);
    if high != 0 {
        // SAFETY: forwarded from the caller.
        unsafe { arch::red_add_u32_shared(hi, high) };
    }
}

/// The plain version of [`add_u64_split`].
///
/// # Safety
/// `lo` and `hi` valid and 4-byte aligned.
#[inline(always)]
unsafe fn add_u64_split_plain(lo: *mut u32, hi: *mut u32, value: u64) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let sum = load_u64_split(lo, hi).wrapping_add(value);
        arch::store(lo, sum as u32);
        arch::store(hi, (sum >> 32) as u32);
    }
}

/// # Safety
/// `lo` and `hi` valid and 4-byte aligned.
#[inline(always)]
unsafe fn load_u64_split(lo: *const u32, hi: *const u32) -> u64 {
    // SAFETY: forwarded from the caller.
    unsafe { arch::load(lo) as u64 | (arch::load(hi) as u64) << 32 }
}

/// Plane `p` of a counter array whose planes hold `slots` elements of `E` each.
#[inline(always)]
fn plane<E>(base: *mut u8, slots: usize, p: usize) -> *mut E {
    base.wrapping_add(p * slots * size_of::<E>()).cast::<E>()
}

impl HistogramCounter for u32 {
    type Wide = u64;
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn widen(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn is_zero(self) -> bool {
        self == 0
    }
    #[inline(always)]
    unsafe fn add_shared(base: *mut u8, slots: usize, index: usize, value: Self) {
        // SAFETY: index < slots (caller).
        unsafe { arch::red_add_u32_shared(plane::<u32>(base, slots, 0).add(index), value) };
    }
    #[inline(always)]
    unsafe fn add_shared_plain(base: *mut u8, slots: usize, index: usize, value: Self) {
        let p = plane::<u32>(base, slots, 0).wrapping_add(index);
        // SAFETY: index < slots (caller).
        unsafe { arch::store(p, arch::load(p).wrapping_add(value)) };
    }
    #[inline(always)]
    unsafe fn load_shared(base: *const u8, slots: usize, index: usize) -> Self {
        // SAFETY: index < slots (caller).
        unsafe { arch::load(plane::<u32>(base as *mut u8, slots, 0).add(index)) }
    }
    #[inline(always)]
    unsafe fn add_global(ptr: *mut u64, value: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { arch::atomic_add_u64_gpu(ptr, value) };
    }
}

impl HistogramCounter for u64 {
    type Wide = u64;
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn widen(self) -> u64 {
        self
    }
    #[inline(always)]
    fn is_zero(self) -> bool {
        self == 0
    }
    #[inline(always)]
    unsafe fn add_shared(base: *mut u8, slots: usize, index: usize, value: Self) {
        let (lo, hi) = (plane::<u32>(base, slots, 0), plane::<u32>(base, slots, 1));
        // SAFETY: index < slots (caller); two planes of `slots` words.
        unsafe { add_u64_split(lo.add(index), hi.add(index), value) };
    }
    #[inline(always)]
    unsafe fn add_shared_plain(base: *mut u8, slots: usize, index: usize, value: Self) {
        let (lo, hi) = (plane::<u32>(base, slots, 0), plane::<u32>(base, slots, 1));
        // SAFETY: as above.
        unsafe { add_u64_split_plain(lo.add(index), hi.add(index), value) };
    }
    #[inline(always)]
    unsafe fn load_shared(base: *const u8, slots: usize, index: usize) -> Self {
        let base = base as *mut u8;
        let (lo, hi) = (plane::<u32>(base, slots, 0), plane::<u32>(base, slots, 1));
        // SAFETY: as above.
        unsafe { load_u64_split(lo.add(index), hi.add(index)) }
    }
    #[inline(always)]
    unsafe fn add_global(ptr: *mut u64, value: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { arch::atomic_add_u64_gpu(ptr, value) };
    }
}

macro_rules! float_counter {
    ($($t:ty, $red_shared:ident, $atomic_global:ident;)*) => {$(
        impl HistogramCounter for $t {
            type Wide = $t;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline(always)]
            fn widen(self) -> Self {
                self
            }
            #[inline(always)]
            fn is_zero(self) -> bool {
                self.to_bits() == 0
            }
            #[inline(always)]
            unsafe fn add_shared(base: *mut u8, slots: usize, index: usize, value: Self) {
                // SAFETY: index < slots (caller).
                unsafe { arch::$red_shared(plane::<$t>(base, slots, 0).add(index), value) };
            }
            #[inline(always)]
            unsafe fn add_shared_plain(base: *mut u8, slots: usize, index: usize, value: Self) {
                let p = plane::<$t>(base, slots, 0).wrapping_add(index);
                // SAFETY: index < slots (caller).
                unsafe { arch::store(p, arch::load(p) + value) };
            }
            #[inline(always)]
            unsafe fn load_shared(base: *const u8, slots: usize, index: usize) -> Self {
                // SAFETY: index < slots (caller).
                unsafe { arch::load(plane::<$t>(base as *mut u8, slots, 0).add(index)) }
            }
            #[inline(always)]
            unsafe fn add_global(ptr: *mut Self, value: Self) {
                // SAFETY: forwarded from the caller.
                unsafe { arch::$atomic_global(ptr, value) };
            }
        }

        /// Two planes: gradients, then hessians.
        impl HistogramCounter for GradientPair<$t> {
            type Wide = Self;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                GradientPair::new(a.grad + b.grad, a.hess + b.hess)
            }
            #[inline(always)]
            fn widen(self) -> Self {
                self
            }
            #[inline(always)]
            fn is_zero(self) -> bool {
                self.grad.to_bits() == 0 && self.hess.to_bits() == 0
            }
            #[inline(always)]
            unsafe fn add_shared(base: *mut u8, slots: usize, index: usize, value: Self) {
                // SAFETY: index < slots (caller); two planes.
                unsafe {
                    arch::$red_shared(plane::<$t>(base, slots, 0).add(index), value.grad);
                    arch::$red_shared(plane::<$t>(base, slots, 1).add(index), value.hess);
                }
            }
            #[inline(always)]
            unsafe fn add_shared_plain(base: *mut u8, slots: usize, index: usize, value: Self) {
                let (g, h) = (plane::<$t>(base, slots, 0).wrapping_add(index), plane::<$t>(base, slots, 1).wrapping_add(index));
                // SAFETY: as above.
                unsafe {
                    arch::store(g, arch::load(g) + value.grad);
                    arch::store(h, arch::load(h) + value.hess);
                }
            }
            #[inline(always)]
            unsafe fn load_shared(base: *const u8, slots: usize, index: usize) -> Self {
                let base = base as *mut u8;
                // SAFETY: as above.
                unsafe {
                    GradientPair::new(
                        arch::load(plane::<$t>(base, slots, 0).add(index)),
                        arch::load(plane::<$t>(base, slots, 1).add(index)),
                    )
                }
            }
            #[inline(always)]
            unsafe fn add_global(ptr: *mut Self, value: Self) {
                // `GradientPair` is `repr(C)`: `grad`, then `hess`.
                let component = ptr.cast::<$t>();
                // SAFETY: forwarded from the caller.
                unsafe {
                    arch::$atomic_global(component, value.grad);
                    arch::$atomic_global(component.add(1), value.hess);
                }
            }
        }
    )*};
}

float_counter! {
    f32, red_add_f32_shared, atomic_add_f32_gpu;
    f64, red_add_f64_shared, atomic_add_f64_gpu;
}

/// 64-bit fixed point: four planes of `u32` (gradient low, gradient high, hessian low, hessian high);
/// two's complement addition is the `u64` addition of the bits, exact and order-independent.
impl HistogramCounter for GradientPair<i64> {
    type Wide = Self;
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        GradientPair::new(a.grad.wrapping_add(b.grad), a.hess.wrapping_add(b.hess))
    }
    #[inline(always)]
    fn widen(self) -> Self {
        self
    }
    #[inline(always)]
    fn is_zero(self) -> bool {
        self.grad == 0 && self.hess == 0
    }
    #[inline(always)]
    unsafe fn add_shared(base: *mut u8, slots: usize, index: usize, value: Self) {
        let word = |p| plane::<u32>(base, slots, p).wrapping_add(index);
        // SAFETY: index < slots (caller); four planes of `slots` words.
        unsafe {
            add_u64_split(word(0), word(1), value.grad as u64);
            add_u64_split(word(2), word(3), value.hess as u64);
        }
    }
    #[inline(always)]
    unsafe fn add_shared_plain(base: *mut u8, slots: usize, index: usize, value: Self) {
        let word = |p| plane::<u32>(base, slots, p).wrapping_add(index);
        // SAFETY: as above.
        unsafe {
            add_u64_split_plain(word(0), word(1), value.grad as u64);
            add_u64_split_plain(word(2), word(3), value.hess as u64);
        }
    }
    #[inline(always)]
    unsafe fn load_shared(base: *const u8, slots: usize, index: usize) -> Self {
        let word = |p| plane::<u32>(base as *mut u8, slots, p).wrapping_add(index);
        // SAFETY: as above.
        unsafe { GradientPair::new(load_u64_split(word(0), word(1)) as i64, load_u64_split(word(2), word(3)) as i64) }
    }
    #[inline(always)]
    unsafe fn add_global(ptr: *mut Self, value: Self) {
        let component = ptr.cast::<u64>();
        // SAFETY: forwarded from the caller; i64 and u64 have the same size and alignment.
        unsafe {
            arch::atomic_add_u64_gpu(component, value.grad as u64);
            arch::atomic_add_u64_gpu(component.add(1), value.hess as u64);
        }
    }
}

/// Where a block histogram's counters live (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockHistogramLayout {
    /// `copies` histograms (1 to the number of warps); warp `w` adds to copy `w % copies` with
    /// shared-memory atomics.
    Atomic { copies: u32 },
    /// The CatBoost layout: a histogram per warp, a column per lane, no atomics.
    WarpColumns,
}

impl BlockHistogramLayout {
    /// The layout for `bins` bins of `C` in a block of `threads` threads (the selector of the module
    /// doc).
    pub const fn select<C>(bins: u32, threads: u32) -> Self {
        let warps = threads.div_ceil(WARP_SIZE) as usize;
        let bin_bytes = bins as usize * size_of::<C>();
        let mut copies = warps;
        while copies > 1 && copies * bin_bytes > ATOMIC_MAX_BYTES {
            copies /= 2;
        }
        Self::Atomic { copies: copies as u32 }
    }

    /// Counters the layout holds for `bins` bins in a block of `threads` threads.
    pub const fn slots(self, bins: u32, threads: u32) -> usize {
        match self {
            Self::Atomic { copies } => copies as usize * bins as usize,
            Self::WarpColumns => threads.div_ceil(WARP_SIZE) as usize * WARP_SIZE as usize * bins as usize,
        }
    }

    /// Shared memory of the layout, in bytes, for `bins` bins of `C`.
    pub const fn shared_bytes<C>(self, bins: u32, threads: u32) -> usize {
        (self.slots(bins, threads) * size_of::<C>()).next_multiple_of(16)
    }

    /// The layout as a kernel argument: 0 for `WarpColumns`, the number of copies for `Atomic`.
    pub const fn code(self) -> u32 {
        match self {
            Self::Atomic { copies } => copies,
            Self::WarpColumns => 0,
        }
    }

    /// The inverse of [`BlockHistogramLayout::code`].
    pub const fn from_code(code: u32) -> Self {
        if code == 0 {
            Self::WarpColumns
        } else {
            Self::Atomic { copies: code }
        }
    }
}

/// A histogram of `bins` bins of `C` in shared memory, shared by the threads of a block.
///
/// Use: [`BlockHistogram::clear`], a barrier, [`BlockHistogram::add`] from any thread any number of
/// times (no barrier needed between adds, and threads may diverge), a barrier, then
/// [`BlockHistogram::for_each_total`] or [`BlockHistogram::flush`].
pub struct BlockHistogram<C> {
    base: *mut u8,
    slots: usize,
    bins: u32,
    layout: BlockHistogramLayout,
    /// This thread's counter of bin `b` is `thread_slot + b * bin_stride`: its copy's bin 0 and 1
    /// (`Atomic`), or its warp's bin 0 in its lane's column and 32 (`WarpColumns`).
    thread_slot: usize,
    bin_stride: usize,
    _counter: PhantomData<C>,
}

impl<C: HistogramCounter> BlockHistogram<C> {
    /// Takes [`BlockHistogramLayout::shared_bytes`] from `shared`.
    #[inline(always)]
    pub fn from_allocator(shared: &mut DynamicShared, bins: u32, layout: BlockHistogramLayout) -> Self {
        let threads = arch::block_dim_x();
        // 8-byte aligned: planes of f64 follow each other at multiples of 8 bytes.
        let base = shared.take::<u64>(layout.shared_bytes::<C>(bins, threads) / 8).cast::<u8>();
        let (thread_slot, bin_stride) = match layout {
            BlockHistogramLayout::Atomic { copies } => ((arch::warp_idx() % copies) as usize * bins as usize, 1),
            BlockHistogramLayout::WarpColumns => (
                arch::warp_idx() as usize * bins as usize * WARP_SIZE as usize + arch::lane_id() as usize,
                WARP_SIZE as usize,
            ),
        };
        Self { base, slots: layout.slots(bins, threads), bins, layout, thread_slot, bin_stride, _counter: PhantomData }
    }

    /// The layout.
    #[inline(always)]
    pub fn layout(&self) -> BlockHistogramLayout {
        self.layout
    }

    /// Number of bins.
    #[inline(always)]
    pub fn bins(&self) -> u32 {
        self.bins
    }

    /// Zeroes every counter (all threads call it; a barrier must follow before the first add).
    #[inline(always)]
    pub fn clear(&self) {
        let words = self.base.cast::<u32>();
        let count = self.slots * size_of::<C>() / 4;
        let mut i = arch::thread_idx_x() as usize;
        while i < count {
            // SAFETY: i < the storage's word count.
            unsafe { arch::store(words.add(i), 0) };
            i += arch::block_dim_x() as usize;
        }
    }

    /// Adds `value` to bin `bin` (`bin < bins`, else nothing happens: no out-of-bounds access).
    #[inline(always)]
    pub fn add(&self, bin: u32, value: C) {
        if bin >= self.bins {
            return;
        }
        match self.layout {
            // SAFETY: bin < bins, and the layout is the one named.
            BlockHistogramLayout::Atomic { .. } => unsafe { self.add_in_layout(false, bin, value) },
            // SAFETY: as above.
            BlockHistogramLayout::WarpColumns => unsafe { self.add_in_layout(true, bin, value) },
        }
    }

    /// [`BlockHistogram::add`] without the checks, for a hot loop that chose the layout outside (pass
    /// a constant): `warp_columns` says whether the layout is `WarpColumns` (plain additions to the
    /// lane's own column) or `Atomic` (shared-memory atomics).
    ///
    /// # Safety
    /// `bin < bins`, and `warp_columns` matches the layout.
    #[inline(always)]
    pub unsafe fn add_in_layout(&self, warp_columns: bool, bin: u32, value: C) {
        let index = self.thread_slot + bin as usize * self.bin_stride;
        if warp_columns {
            // SAFETY: index < slots (bin < bins); only this lane writes its column.
            unsafe { C::add_shared_plain(self.base, self.slots, index, value) };
        } else {
            // SAFETY: index < slots (bin < bins).
            unsafe { C::add_shared(self.base, self.slots, index, value) };
        }
    }

    /// Calls `f(bin, total)` for every bin, each bin in one thread (bins strided over the block). The
    /// block must have passed a barrier since the last add.
    #[inline(always)]
    pub fn for_each_total(&self, mut f: impl FnMut(u32, C)) {
        let threads = arch::block_dim_x();
        let mut bin = arch::thread_idx_x();
        while bin < self.bins {
            let mut total = C::zeroed();
            match self.layout {
                BlockHistogramLayout::Atomic { copies } => {
                    for copy in 0..copies as usize {
                        // SAFETY: copy < copies, bin < bins.
                        let part =
                            unsafe { C::load_shared(self.base, self.slots, copy * self.bins as usize + bin as usize) };
                        total = C::add(total, part);
                    }
                }
                BlockHistogramLayout::WarpColumns => {
                    let warps = threads.div_ceil(WARP_SIZE) as usize;
                    for warp in 0..warps {
                        let row = (warp * self.bins as usize + bin as usize) * WARP_SIZE as usize;
                        for k in 0..WARP_SIZE {
                            // Neighbouring bins start at different columns: no bank conflicts.
                            let lane = ((k + bin) % WARP_SIZE) as usize;
                            // SAFETY: warp < warps, bin < bins, lane < 32: inside the storage.
                            let part = unsafe { C::load_shared(self.base, self.slots, row + lane) };
                            total = C::add(total, part);
                        }
                    }
                }
            }
            f(bin, total);
            bin += threads;
        }
    }

    /// Adds every non-zero bin total to `histogram[bin]` with device-scope atomics. The block must
    /// have passed a barrier since the last add.
    ///
    /// # Safety
    /// `histogram` valid for `bins` elements in global memory.
    #[inline(always)]
    pub unsafe fn flush(&self, histogram: *mut C::Wide) {
        self.for_each_total(|bin, total| {
            if !total.is_zero() {
                // SAFETY: bin < bins (caller vouches for the histogram's length).
                unsafe { C::add_global(histogram.add(bin as usize), total.widen()) };
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_picks_per_warp_copies_that_fit() {
        // 256 threads = 8 warps.
        assert_eq!(BlockHistogramLayout::select::<u32>(1, 256), BlockHistogramLayout::Atomic { copies: 8 });
        assert_eq!(BlockHistogramLayout::select::<u32>(32, 256), BlockHistogramLayout::Atomic { copies: 8 });
        assert_eq!(BlockHistogramLayout::select::<u32>(33, 256), BlockHistogramLayout::Atomic { copies: 8 });
        assert_eq!(BlockHistogramLayout::select::<u32>(1024, 256), BlockHistogramLayout::Atomic { copies: 8 });
        assert_eq!(BlockHistogramLayout::select::<u32>(2048, 256), BlockHistogramLayout::Atomic { copies: 4 });
        assert_eq!(BlockHistogramLayout::select::<u32>(1 << 20, 256), BlockHistogramLayout::Atomic { copies: 1 });
        // 28 features x 256 fixed-point bins in a 512-thread block: one copy.
        let pairs = BlockHistogramLayout::select::<GradientPair<i64>>(28 * 256, 512);
        assert_eq!(pairs, BlockHistogramLayout::Atomic { copies: 1 });
        assert_eq!(pairs.shared_bytes::<GradientPair<i64>>(28 * 256, 512), 28 * 256 * 16);
        for layout in [BlockHistogramLayout::WarpColumns, BlockHistogramLayout::Atomic { copies: 5 }] {
            assert_eq!(BlockHistogramLayout::from_code(layout.code()), layout);
        }
    }
}
