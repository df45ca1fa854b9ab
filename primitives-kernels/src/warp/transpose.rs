//! Warp transpose (CUB's `BLOCK_LOAD_WARP_TRANSPOSE`): a warp loads its segment of 32 lanes x
//! `ITEMS` elements with fully coalesced 16-byte loads in "striped" order (lane `l` takes vectors
//! `l, l + 32, ...`), passes it through shared memory, and each lane ends with its `ITEMS`
//! consecutive elements ("blocked" order), as a thread-local scan wants them. Stores go the other way.
//! Unlike direct blocked vector loads (a lane's bytes apart from the next lane's), no request relies on
//! L1 hits.
//!
//! Shared layout: word `i` of the warp's segment is kept at `i + i / 32`, so that the striped
//! accesses and the blocked ones (stride `ITEMS * size / 4` words, a multiple of 4) hit 32 distinct
//! banks when a lane holds 64 bytes, and at most 2-way conflicts at 128.

use crate::arch;
use crate::block::DynamicShared;
use crate::ops::Element;

/// True when a lane's `ITEMS` elements of `T` are whole 16-byte vectors (the transpose's unit).
pub const fn fits<T, const ITEMS: usize>() -> bool {
    (ITEMS * size_of::<T>()).is_multiple_of(16)
}

/// Shared 32-bit words one warp's storage takes for `bytes_per_lane` bytes per lane (with padding).
pub const fn shared_words_per_warp(bytes_per_lane: usize) -> usize {
    let words = 32 * bytes_per_lane / 4;
    words + words / 32
}

#[inline(always)]
fn padded(index: usize) -> usize {
    index + index / 32
}

/// One warp's transpose storage.
pub struct WarpTranspose {
    words: *mut u32,
}

impl WarpTranspose {
    /// Shared memory for a block of `warps` warps moving `bytes_per_lane` bytes per lane, in bytes.
    pub const fn shared_bytes(warps: usize, bytes_per_lane: usize) -> usize {
        warps * shared_words_per_warp(bytes_per_lane) * 4
    }

    /// Takes storage for every warp of the block from `shared` and returns the calling warp's part.
    #[inline(always)]
    pub fn from_allocator(shared: &mut DynamicShared, bytes_per_lane: usize) -> Self {
        let warps = arch::block_dim_x().div_ceil(arch::WARP_SIZE) as usize;
        let per_warp = shared_words_per_warp(bytes_per_lane);
        let all = shared.take::<u32>(warps * per_warp);
        // SAFETY: warp_idx < warps, so the warp's part lies inside what was taken.
        Self { words: unsafe { all.add(arch::warp_idx() as usize * per_warp) } }
    }

    /// Loads the warp's 32 x `ITEMS` elements at `segment` (16-byte aligned) and returns lane `l`'s
    /// `ITEMS` consecutive elements `l * ITEMS ..`. Called by all 32 lanes; requires [`fits`] and
    /// storage made for `ITEMS * size_of::<T>()` bytes per lane.
    ///
    /// # Safety
    /// `segment` must be valid for reads of `32 * ITEMS` elements not written during the kernel, and
    /// 16-byte aligned.
    #[inline(always)]
    pub unsafe fn load<T: Element, const ITEMS: usize>(&self, segment: *const T) -> [T; ITEMS] {
        let lane = arch::lane_id() as usize;
        let vectors_per_lane = ITEMS * size_of::<T>() / 16;
        let words_per_lane = vectors_per_lane * 4;
        let source = segment.cast::<[u32; 4]>();
        // Loads in groups of 4 (several in flight), then their shared-memory writes. (A fixed group
        // keeps the buffer in registers; an array sized by ITEMS went to local memory.)
        const GROUP: usize = 4;
        let mut v0 = 0;
        while v0 < vectors_per_lane {
            let mut group = [[0u32; 4]; GROUP];
            for (g, vector) in group.iter_mut().enumerate() {
                if v0 + g < vectors_per_lane {
                    // SAFETY: vector (v0 + g) * 32 + lane lies inside the segment.
                    *vector = unsafe { arch::load_global_nc_v4(source.add((v0 + g) * 32 + lane)) };
                }
            }
            for (g, vector) in group.iter().enumerate() {
                if v0 + g < vectors_per_lane {
                    for (j, &word) in vector.iter().enumerate() {
                        // SAFETY: the index is inside the warp's storage.
                        unsafe { arch::store(self.words.add(padded(((v0 + g) * 32 + lane) * 4 + j)), word) };
                    }
                }
            }
            v0 += GROUP;
        }
        arch::sync_warp(arch::FULL_MASK);
        let mut items = [T::zeroed(); ITEMS];
        let words: &mut [u32] = bytemuck::cast_slice_mut(&mut items);
        for (w, word) in words.iter_mut().enumerate() {
            // SAFETY: as above; written by this warp before the sync.
            *word = unsafe { arch::load(self.words.add(padded(lane * words_per_lane + w))) };
        }
        // The storage is reused by `store`: every lane must be done reading first.
        arch::sync_warp(arch::FULL_MASK);
        items
    }

    /// Stores lane `l`'s `ITEMS` consecutive elements at `segment + l * ITEMS`, through shared memory
    /// and coalesced 16-byte stores. Called by all 32 lanes; requires [`fits`].
    ///
    /// # Safety
    /// `segment` must be valid for writes of `32 * ITEMS` elements, 16-byte aligned.
    #[inline(always)]
    pub unsafe fn store<T: Element, const ITEMS: usize>(&self, segment: *mut T, items: &[T; ITEMS]) {
        let lane = arch::lane_id() as usize;
        let vectors_per_lane = ITEMS * size_of::<T>() / 16;
        let words_per_lane = vectors_per_lane * 4;
        let words: &[u32] = bytemuck::cast_slice(items);
        for (w, &word) in words.iter().enumerate() {
            // SAFETY: the index is inside the warp's storage.
            unsafe { arch::store(self.words.add(padded(lane * words_per_lane + w)), word) };
        }
        arch::sync_warp(arch::FULL_MASK);
        let destination = segment.cast::<[u32; 4]>();
        for v in 0..vectors_per_lane {
            let mut vector = [0u32; 4];
            for (j, word) in vector.iter_mut().enumerate() {
                // SAFETY: as above.
                *word = unsafe { arch::load(self.words.add(padded((v * 32 + lane) * 4 + j))) };
            }
            // SAFETY: vector v * 32 + lane lies inside the segment.
            unsafe { arch::store_global_v4(destination.add(v * 32 + lane), vector) };
        }
        arch::sync_warp(arch::FULL_MASK);
    }
}
