//! Warp transpose (CUB's `BLOCK_LOAD_WARP_TRANSPOSE`): a warp loads its segment of 32 x 64 bytes with
//! fully coalesced 16-byte loads in "striped" order (lane `l` takes vectors `l, l + 32, ...`), passes
//! it through shared memory, and each lane ends with its 64 consecutive bytes ("blocked" order), as
//! a thread-local scan wants them. Stores go the other way. Unlike direct blocked vector loads (64-byte
//! stride between lanes), no request relies on L1 hits, which acquire fences elsewhere may invalidate.
//!
//! Shared layout: word `i` of the warp's 512 is kept at `i + i / 32`, so that both the striped
//! writes and the blocked reads (stride 16 words) hit 32 distinct banks.

use crate::arch;
use crate::block::DynamicShared;
use crate::ops::Element;

/// 32-bit words each lane moves.
pub const WORDS_PER_LANE: usize = 16;
const WORDS_PER_WARP: usize = 32 * WORDS_PER_LANE;
/// Shared words one warp's storage takes (with the padding).
pub const SHARED_WORDS_PER_WARP: usize = WORDS_PER_WARP + WORDS_PER_WARP / 32;

/// True when `ITEMS` elements of `T` are exactly one lane's 64 bytes.
pub const fn fits<T, const ITEMS: usize>() -> bool {
    ITEMS * size_of::<T>() == WORDS_PER_LANE * 4
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
    /// Shared memory for a block of `warps` warps, in bytes.
    pub const fn shared_bytes(warps: usize) -> usize {
        warps * SHARED_WORDS_PER_WARP * 4
    }

    /// Takes storage for every warp of the block from `shared` and returns the calling warp's part.
    #[inline(always)]
    pub fn from_allocator(shared: &mut DynamicShared) -> Self {
        let warps = arch::block_dim_x().div_ceil(arch::WARP_SIZE) as usize;
        let all = shared.take::<u32>(warps * SHARED_WORDS_PER_WARP);
        // SAFETY: warp_idx < warps, so the warp's part lies inside what was taken.
        Self { words: unsafe { all.add(arch::warp_idx() as usize * SHARED_WORDS_PER_WARP) } }
    }

    /// Loads the warp's 32 x `ITEMS` elements at `segment` (16-byte aligned) and returns lane `l`'s
    /// `ITEMS` consecutive elements `l * ITEMS ..`. Called by all 32 lanes; requires [`fits`].
    ///
    /// # Safety
    /// `segment` must be valid for reads of `32 * ITEMS` elements not written during the kernel, and
    /// 16-byte aligned.
    #[inline(always)]
    pub unsafe fn load<T: Element, const ITEMS: usize>(&self, segment: *const T) -> [T; ITEMS] {
        let lane = arch::lane_id() as usize;
        let vectors = segment.cast::<[u32; 4]>();
        let mut striped = [[0u32; 4]; WORDS_PER_LANE / 4];
        for (v, vector) in striped.iter_mut().enumerate() {
            // SAFETY: vector v * 32 + lane < 128 lies inside the segment.
            *vector = unsafe { arch::load_global_nc_v4(vectors.add(v * 32 + lane)) };
        }
        for (v, vector) in striped.iter().enumerate() {
            for (j, &word) in vector.iter().enumerate() {
                // SAFETY: the index is below SHARED_WORDS_PER_WARP.
                unsafe { arch::store(self.words.add(padded((v * 32 + lane) * 4 + j)), word) };
            }
        }
        arch::sync_warp(arch::FULL_MASK);
        let mut blocked = [0u32; WORDS_PER_LANE];
        for (w, word) in blocked.iter_mut().enumerate() {
            // SAFETY: as above; written by this warp before the sync.
            *word = unsafe { arch::load(self.words.add(padded(lane * WORDS_PER_LANE + w))) };
        }
        // The storage is reused by `store`: every lane must be done reading first.
        arch::sync_warp(arch::FULL_MASK);
        bytemuck::cast::<[u32; WORDS_PER_LANE], [T; ITEMS]>(blocked)
    }

    /// Stores lane `l`'s `ITEMS` consecutive elements at `segment + l * ITEMS`, through shared memory
    /// and coalesced 16-byte stores. Called by all 32 lanes; requires [`fits`].
    ///
    /// # Safety
    /// `segment` must be valid for writes of `32 * ITEMS` elements, 16-byte aligned.
    #[inline(always)]
    pub unsafe fn store<T: Element, const ITEMS: usize>(&self, segment: *mut T, items: &[T; ITEMS]) {
        let lane = arch::lane_id() as usize;
        let blocked = bytemuck::cast::<[T; ITEMS], [u32; WORDS_PER_LANE]>(*items);
        for (w, &word) in blocked.iter().enumerate() {
            // SAFETY: the index is below SHARED_WORDS_PER_WARP.
            unsafe { arch::store(self.words.add(padded(lane * WORDS_PER_LANE + w)), word) };
        }
        arch::sync_warp(arch::FULL_MASK);
        let vectors = segment.cast::<[u32; 4]>();
        for v in 0..WORDS_PER_LANE / 4 {
            let mut vector = [0u32; 4];
            for (j, word) in vector.iter_mut().enumerate() {
                // SAFETY: as above.
                *word = unsafe { arch::load(self.words.add(padded((v * 32 + lane) * 4 + j))) };
            }
            // SAFETY: vector v * 32 + lane lies inside the segment.
            unsafe { arch::store_global_v4(vectors.add(v * 32 + lane), vector) };
        }
        arch::sync_warp(arch::FULL_MASK);
    }
}
