//! Tile status for single-pass scans with decoupled look-back (Merrill & Garland 2016).
//!
//! Every tile publishes, as soon as it knows it, first its aggregate and then its inclusive prefix.
//! A value is written with a plain store and then its flag with `st.release.gpu`; a reader polls the
//! flag with `ld.relaxed.gpu`, and once it sees it published, issues `fence.acq_rel.gpu` (an acquire
//! pattern: one fence per look-back window rather than an acquiring load per poll) and only then
//! loads the value (with `ld.relaxed.gpu`), so the value it reads is the published one. Flags carry the launch's epoch (`flag = epoch << 2 | state`), so flags left
//! by earlier launches read as "not yet published" without clearing the array between launches.

use crate::arch::{self, WARP_SIZE};
use crate::ops::{AssociativeOp, Element};
use crate::warp;

const AGGREGATE: u32 = 1;
const INCLUSIVE: u32 = 2;

/// The published state of every tile of one launch.
pub struct TileStatus<T> {
    flags: *mut u32,
    aggregates: *mut T,
    inclusives: *mut T,
    epoch: u32,
}

impl<T: Element> TileStatus<T> {
    /// Bytes of device memory the status of `tiles` tiles takes (flags, then aggregates, then
    /// inclusive prefixes, each part 16-byte aligned).
    pub const fn bytes(tiles: usize) -> usize {
        Self::aggregates_offset(tiles) + 2 * (tiles * size_of::<T>()).next_multiple_of(16)
    }

    const fn aggregates_offset(tiles: usize) -> usize {
        (tiles * 4).next_multiple_of(16)
    }

    /// The status arrays of `tiles` tiles at `storage` (see [`Self::bytes`]); `epoch` (1 to 2^30 - 1)
    /// must differ from that of every earlier launch since the storage was zeroed.
    ///
    /// # Safety
    /// `storage` must be valid for [`Self::bytes`]`(tiles)` bytes, 16-byte aligned.
    #[inline(always)]
    pub unsafe fn new(storage: *mut u8, tiles: usize, epoch: u32) -> Self {
        let aggregates_offset = Self::aggregates_offset(tiles);
        let values_bytes = (tiles * size_of::<T>()).next_multiple_of(16);
        // SAFETY: the offsets stay inside the storage the caller vouches for.
        unsafe {
            Self {
                flags: storage.cast::<u32>(),
                aggregates: storage.add(aggregates_offset).cast::<T>(),
                inclusives: storage.add(aggregates_offset + values_bytes).cast::<T>(),
                epoch,
            }
        }
    }

    /// Publishes tile `tile`'s aggregate (one thread).
    ///
    /// # Safety
    /// `tile` must be below the tile count given to [`Self::new`].
    #[inline(always)]
    pub unsafe fn publish_aggregate(&self, tile: u32, aggregate: T) {
        // SAFETY: tile is in range.
        unsafe {
            arch::store(self.aggregates.add(tile as usize), aggregate);
            arch::store_release_u32_gpu(self.flags.add(tile as usize), self.epoch << 2 | AGGREGATE);
        }
    }

    /// Publishes tile `tile`'s inclusive prefix (one thread).
    ///
    /// # Safety
    /// `tile` must be below the tile count given to [`Self::new`].
    #[inline(always)]
    pub unsafe fn publish_inclusive(&self, tile: u32, inclusive: T) {
        // SAFETY: tile is in range.
        unsafe {
            arch::store(self.inclusives.add(tile as usize), inclusive);
            arch::store_release_u32_gpu(self.flags.add(tile as usize), self.epoch << 2 | INCLUSIVE);
        }
    }

    /// The exclusive prefix of tile `tile` (> 0): the combination of `seed` and the inclusive prefix
    /// of the tiles before it, found by looking back over windows of 32 predecessors until one has
    /// published its inclusive prefix. Called by all 32 lanes of one warp; the result is in every lane.
    ///
    /// `seed` acts as the inclusive prefix of a virtual tile -1 (the exclusive scan's initial value, or
    /// the identity).
    ///
    /// # Safety
    /// `tile` must be below the tile count given to [`Self::new`].
    #[inline(always)]
    pub unsafe fn look_back<Op: AssociativeOp<T>>(&self, tile: u32, seed: T) -> T {
        let lane = arch::lane_id();
        let mut prefix = Op::identity();
        // Window [window_end - 32, window_end): lane i looks at tile window_end - 32 + i, so the
        // highest lane looks at the nearest predecessor.
        let mut window_end = tile as i64;
        loop {
            let predecessor = window_end - WARP_SIZE as i64 + lane as i64;
            let state = if predecessor < 0 {
                INCLUSIVE
            } else {
                loop {
                    // SAFETY: 0 <= predecessor < tile.
                    let flag = unsafe { arch::load_relaxed_u32_gpu(self.flags.add(predecessor as usize)) };
                    if flag >> 2 == self.epoch {
                        break flag & 3;
                    }
                }
            };
            // Every lane has seen a published flag (each spun on its own above); the fence makes the
            // values published before those flags visible to the loads below.
            arch::fence_acq_rel_gpu();
            let inclusive_lanes = arch::ballot_sync(arch::FULL_MASK, state == INCLUSIVE);
            let value = if predecessor < -1 {
                Op::identity()
            } else if predecessor == -1 {
                seed
            } else if state == INCLUSIVE {
                // SAFETY: published (acquire above); predecessor in range.
                unsafe { arch::load_relaxed_gpu(self.inclusives.add(predecessor as usize)) }
            } else {
                // SAFETY: as above.
                unsafe { arch::load_relaxed_gpu(self.aggregates.add(predecessor as usize)) }
            };
            if inclusive_lanes != 0 {
                // The nearest tile with an inclusive prefix ends the look-back: combine it and the
                // aggregates after it, in tile order.
                let stop = WARP_SIZE - 1 - inclusive_lanes.leading_zeros();
                let contribution = if lane >= stop { value } else { Op::identity() };
                let window = warp::warp_reduce::<T, Op>(contribution);
                let window = arch::shfl_idx_sync(arch::FULL_MASK, window, 0);
                return Op::combine(window, prefix);
            }
            let window = warp::warp_reduce::<T, Op>(value);
            let window = arch::shfl_idx_sync(arch::FULL_MASK, window, 0);
            prefix = Op::combine(window, prefix);
            window_end -= WARP_SIZE as i64;
        }
    }
}
