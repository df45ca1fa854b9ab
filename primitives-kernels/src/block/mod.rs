//! Block-level cooperative algorithms: every thread of the block calls them together. Their scratch
//! space ("temp storage" in CUB's words) lives in shared memory that the caller hands over, usually
//! carved from the launch's dynamic shared memory with [`DynamicShared`].

mod histogram;
mod radix_rank;
mod radix_sort;
mod reduce;
mod scan;

pub use histogram::{BlockHistogram, BlockHistogramLayout, HistogramCounter};
pub use radix_rank::BlockRadixRank;
pub use radix_sort::{striped_position, striped_present, BlockRadixSort};
pub use reduce::BlockReduce;
pub use scan::BlockScan;

use crate::arch;

/// A bump allocator over the launch's dynamic shared memory. Every thread of the block performs the
/// same sequence of [`DynamicShared::take`] calls and so obtains the same addresses.
pub struct DynamicShared {
    base: *mut u8,
    offset: usize,
    size: usize,
}

impl DynamicShared {
    /// Starts at the beginning of dynamic shared memory.
    #[inline(always)]
    pub fn new() -> Self {
        Self { base: arch::dynamic_shared_memory(), offset: 0, size: arch::dynamic_shared_size() as usize }
    }

    /// Reserves `count` elements of `T`, aligned for `T`. Traps (a launch failure on the host) when
    /// the launch did not provide enough dynamic shared memory, rather than overrun it.
    #[inline(always)]
    pub fn take<T>(&mut self, count: usize) -> *mut T {
        self.take_aligned::<T>(count, core::mem::align_of::<T>())
    }

    /// [`Self::take`] aligned to `align` bytes (a power of two, at most 16, the alignment of the
    /// dynamic shared memory itself) or `T`'s alignment if larger: for vector accesses and
    /// `cp.async` of 16 bytes.
    #[inline(always)]
    pub fn take_aligned<T>(&mut self, count: usize, align: usize) -> *mut T {
        let align = align.max(core::mem::align_of::<T>());
        let start = self.offset.next_multiple_of(align);
        let end = start + count * core::mem::size_of::<T>();
        if end > self.size {
            arch::trap();
        }
        self.offset = end;
        // SAFETY: start <= size, so the pointer stays inside the dynamic shared allocation.
        unsafe { self.base.add(start).cast::<T>() }
    }
}

impl Default for DynamicShared {
    fn default() -> Self {
        Self::new()
    }
}
