//! Tile status for single-pass scans with decoupled look-back (Merrill & Garland 2016).
//!
//! Every tile publishes, as soon as it knows it, first its aggregate and then its inclusive prefix.
//! Flags carry the launch's epoch (`flag = epoch << 2 | state`), so flags left by earlier launches
//! read as "not yet published" without clearing the storage between launches.
//!
//! Two layouts:
//! * [`PackedTileStatus`], for elements whose size is a multiple of 4: each 4-byte chunk of the value
//!   shares an 8-byte word with a copy of the flag, written with `st.relaxed.gpu.u64` and polled with
//!   `ld.relaxed.gpu.u64` (single-copy atomic); a reader that sees the same flag in every chunk has the
//!   value, with no fence on either side. (Fences at GPU scope cost microseconds on an H200; with
//!   them the scan ran at 1.5 TB/s, without them at 2.4 TB/s.)
//! * [`SplitTileStatus`], for any element: values in their own arrays, written with a plain store
//!   before the flag's `st.release.gpu`; a reader polls flags with `ld.relaxed.gpu`, then issues one
//!   `fence.acq_rel.gpu` per look-back window (an acquire pattern) before loading the values.
//!
//! Polling backs off with `nanosleep` so that hundreds of waiting warps do not flood the L2 with
//! loads of the same few lines while the tiles they wait for try to publish.

use crate::arch::{self, WARP_SIZE};
use crate::ops::{AssociativeOp, Element};
use crate::warp;

const AGGREGATE: u32 = 1;
const INCLUSIVE: u32 = 2;
const FIRST_BACKOFF_NS: u32 = 32;
const MAX_BACKOFF_NS: u32 = 512;

/// Where tiles publish their aggregates and inclusive prefixes, and how others read them.
pub trait TileStatus<T: Element> {
    /// Whether readers need an acquire fence between seeing flags and reading values.
    const FENCE_BEFORE_VALUES: bool;
    /// Bytes of device memory the status of `tiles` tiles takes.
    fn bytes(tiles: usize) -> usize;
    /// Publishes tile `tile`'s aggregate (one thread).
    ///
    /// # Safety
    /// `tile` below the tile count the storage was made for.
    unsafe fn publish_aggregate(&self, tile: u32, aggregate: T);
    /// Publishes tile `tile`'s inclusive prefix (one thread).
    ///
    /// # Safety
    /// As above.
    unsafe fn publish_inclusive(&self, tile: u32, inclusive: T);
    /// One relaxed poll of tile `tile`: its state this launch (0 = nothing yet) and, where the layout
    /// carries it, the value.
    ///
    /// # Safety
    /// As above.
    unsafe fn poll(&self, tile: u32) -> (u32, T);
    /// The published value of a tile whose state `state` was polled (after the fence when needed).
    ///
    /// # Safety
    /// As above, and `state` published.
    unsafe fn value(&self, tile: u32, state: u32, polled: T) -> T;
}

/// Each 4-byte chunk of the value in an 8-byte word with its own copy of the flag (elements whose
/// size is a multiple of 4). A reader takes the value only when every chunk shows the same flag of
/// this launch, so it never mixes an aggregate's chunks with an inclusive prefix's.
pub struct PackedTileStatus<T> {
    words: *mut u64,
    epoch: u32,
    _element: core::marker::PhantomData<T>,
}

impl<T: Element> PackedTileStatus<T> {
    const CHUNKS: usize = size_of::<T>() / 4;

    /// The status at `storage` (8-byte aligned, [`TileStatus::bytes`] long); `epoch` (1 to
    /// 2^30 - 1) differs from that of every launch since the storage was zeroed. `T`'s size must be
    /// a multiple of 4 (callers branch on it).
    ///
    /// # Safety
    /// `storage` valid for [`TileStatus::bytes`]`(tiles)` bytes.
    #[inline(always)]
    pub unsafe fn new(storage: *mut u8, epoch: u32) -> Self {
        Self { words: storage.cast::<u64>(), epoch, _element: core::marker::PhantomData }
    }

    #[inline(always)]
    unsafe fn publish(&self, tile: u32, state: u32, value: T) {
        let flag = ((self.epoch << 2 | state) as u64) << 32;
        let chunks: &[u32] = bytemuck::cast_slice(core::slice::from_ref(&value));
        for (c, &chunk) in chunks.iter().enumerate() {
            // SAFETY: tile in range (caller); chunk c < CHUNKS.
            unsafe {
                arch::store_relaxed_u64_gpu(self.words.add(tile as usize * Self::CHUNKS + c), flag | chunk as u64)
            };
        }
    }
}

impl<T: Element> TileStatus<T> for PackedTileStatus<T> {
    const FENCE_BEFORE_VALUES: bool = false;

    fn bytes(tiles: usize) -> usize {
        tiles * Self::CHUNKS * 8
    }

    #[inline(always)]
    unsafe fn publish_aggregate(&self, tile: u32, aggregate: T) {
        // SAFETY: forwarded.
        unsafe { self.publish(tile, AGGREGATE, aggregate) };
    }

    #[inline(always)]
    unsafe fn publish_inclusive(&self, tile: u32, inclusive: T) {
        // SAFETY: forwarded.
        unsafe { self.publish(tile, INCLUSIVE, inclusive) };
    }

    #[inline(always)]
    unsafe fn poll(&self, tile: u32) -> (u32, T) {
        let mut value = T::zeroed();
        let chunks: &mut [u32] = bytemuck::cast_slice_mut(core::slice::from_mut(&mut value));
        let mut first_flag = 0;
        let mut consistent = true;
        for (c, chunk) in chunks.iter_mut().enumerate() {
            // SAFETY: tile in range (caller); chunk c < CHUNKS.
            let word = unsafe { arch::load_relaxed_u64_gpu(self.words.add(tile as usize * Self::CHUNKS + c)) };
            let flag = (word >> 32) as u32;
            if c == 0 {
                first_flag = flag;
            } else if flag != first_flag {
                consistent = false;
            }
            *chunk = word as u32;
        }
        let state = if consistent && first_flag >> 2 == self.epoch { first_flag & 3 } else { 0 };
        (state, value)
    }

    #[inline(always)]
    unsafe fn value(&self, _tile: u32, _state: u32, polled: T) -> T {
        polled
    }
}

/// Flags and values in separate arrays (any element).
pub struct SplitTileStatus<T> {
    flags: *mut u32,
    aggregates: *mut T,
    inclusives: *mut T,
    epoch: u32,
}

impl<T: Element> SplitTileStatus<T> {
    const fn aggregates_offset(tiles: usize) -> usize {
        (tiles * 4).next_multiple_of(16)
    }

    /// The status of `tiles` tiles at `storage` (16-byte aligned, [`TileStatus::bytes`] long);
    /// `epoch` as for [`PackedTileStatus::new`].
    ///
    /// # Safety
    /// `storage` valid for [`TileStatus::bytes`]`(tiles)` bytes.
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
}

impl<T: Element> TileStatus<T> for SplitTileStatus<T> {
    const FENCE_BEFORE_VALUES: bool = true;

    fn bytes(tiles: usize) -> usize {
        Self::aggregates_offset(tiles) + 2 * (tiles * size_of::<T>()).next_multiple_of(16)
    }

    #[inline(always)]
    unsafe fn publish_aggregate(&self, tile: u32, aggregate: T) {
        // SAFETY: tile in range (caller).
        unsafe {
            arch::store(self.aggregates.add(tile as usize), aggregate);
            arch::store_release_u32_gpu(self.flags.add(tile as usize), self.epoch << 2 | AGGREGATE);
        }
    }

    #[inline(always)]
    unsafe fn publish_inclusive(&self, tile: u32, inclusive: T) {
        // SAFETY: tile in range (caller).
        unsafe {
            arch::store(self.inclusives.add(tile as usize), inclusive);
            arch::store_release_u32_gpu(self.flags.add(tile as usize), self.epoch << 2 | INCLUSIVE);
        }
    }

    #[inline(always)]
    unsafe fn poll(&self, tile: u32) -> (u32, T) {
        // SAFETY: tile in range (caller).
        let flag = unsafe { arch::load_relaxed_u32_gpu(self.flags.add(tile as usize)) };
        (if flag >> 2 == self.epoch { flag & 3 } else { 0 }, T::zeroed())
    }

    #[inline(always)]
    unsafe fn value(&self, tile: u32, state: u32, _polled: T) -> T {
        let array = if state == INCLUSIVE { self.inclusives } else { self.aggregates };
        // SAFETY: tile in range; published before the flag the caller saw (and fenced).
        unsafe { arch::load_relaxed_gpu(array.add(tile as usize)) }
    }
}

/// Predecessor tiles each lane of the look-back warp examines per step: a step covers
/// `32 * LOOK_BACK_DEPTH` tiles with that many independent loads in flight per lane.
///
/// Measured on an H200 (2026-11-21, 2^28 items): depth 1 gave f32 2434 GB/s, f64 2502, pair_i64
/// 2548; depth 4 gave 2151, 1760 and 1007 (the look-back's extra registers cost occupancy, and the
/// per-tile latency it saves was not the limit). So 1.
pub const LOOK_BACK_DEPTH: usize = 1;

/// What a look-back did (for timing experiments; callers that ignore it pay nothing).
#[derive(Clone, Copy, Default)]
pub struct LookBackStats {
    /// Windows of predecessors examined.
    pub windows: u32,
    /// Rounds of polls (a window is polled again while some predecessor has published nothing).
    pub polls: u32,
}

/// The exclusive prefix of tile `tile` (> 0): the combination of `seed` and the tiles before it,
/// found by looking back over windows of `32 * LOOK_BACK_DEPTH` predecessors until one has published
/// its inclusive prefix. Called by all 32 lanes of one warp; the result is in every lane.
///
/// `seed` acts as the inclusive prefix of a virtual tile -1 (the exclusive scan's initial value, or
/// the identity).
///
/// # Safety
/// `tile` below the tile count `status` was made for.
#[inline(always)]
pub unsafe fn look_back<T: Element, Op: AssociativeOp<T>, S: TileStatus<T>, const K: usize>(
    status: &S,
    tile: u32,
    seed: T,
    stats: &mut LookBackStats,
) -> T {
    // SAFETY: forwarded.
    unsafe { look_back_with_backoff::<T, Op, S, K, MAX_BACKOFF_NS>(status, tile, seed, stats) }
}

/// [`look_back`] sleeping at most `MAX_BACKOFF` nanoseconds between polls of a window that is not
/// all published (0: polls again at once).
///
/// # Safety
/// As for [`look_back`].
#[inline(always)]
pub unsafe fn look_back_with_backoff<
    T: Element,
    Op: AssociativeOp<T>,
    S: TileStatus<T>,
    const K: usize,
    const MAX_BACKOFF: u32,
>(
    status: &S,
    tile: u32,
    seed: T,
    stats: &mut LookBackStats,
) -> T {
    let lane = arch::lane_id() as i64;
    let mut prefix = Op::identity();
    // Window [window_end - 32K, window_end): lane l examines tiles window_end - 32K + lK + k for
    // k < K, so tiles stay in order across lanes and the nearest predecessor is lane 31's last.
    let mut window_end = tile as i64;
    loop {
        let base = window_end - (WARP_SIZE as i64 * K as i64) + lane * K as i64;
        let mut states = [0u32; K];
        let mut values = [Op::identity(); K];
        let mut backoff = if FIRST_BACKOFF_NS < MAX_BACKOFF { FIRST_BACKOFF_NS } else { MAX_BACKOFF };
        stats.windows += 1;
        loop {
            stats.polls += 1;
            let mut all_published = true;
            for k in 0..K {
                let predecessor = base + k as i64;
                if predecessor < 0 {
                    states[k] = INCLUSIVE;
                    values[k] = if predecessor == -1 { seed } else { Op::identity() };
                } else if states[k] == 0 {
                    // SAFETY: 0 <= predecessor < tile.
                    let (state, polled) = unsafe { status.poll(predecessor as u32) };
                    states[k] = state;
                    values[k] = polled;
                    all_published &= state != 0;
                }
            }
            if all_published {
                break;
            }
            if MAX_BACKOFF > 0 {
                arch::nanosleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
        if S::FENCE_BEFORE_VALUES {
            // Every lane has seen its flags published; the fence makes the values published before
            // them visible to the loads below.
            arch::fence_acq_rel_gpu();
            for k in 0..K {
                let predecessor = base + k as i64;
                if predecessor >= 0 {
                    // SAFETY: published (seen above); predecessor in range.
                    values[k] = unsafe { status.value(predecessor as u32, states[k], values[k]) };
                }
            }
        }
        // The nearest tile with an inclusive prefix ends the look-back.
        let mut nearest_inclusive = -1i32;
        for (k, &state) in states.iter().enumerate() {
            if state == INCLUSIVE {
                nearest_inclusive = k as i32;
            }
        }
        let lanes_with_inclusive = arch::ballot_sync(arch::FULL_MASK, nearest_inclusive >= 0);
        let stop_lane =
            if lanes_with_inclusive != 0 { (WARP_SIZE - 1 - lanes_with_inclusive.leading_zeros()) as i64 } else { -1 };
        // This lane's share, in tile order: nothing before the stop; from its nearest inclusive
        // prefix on in the stop lane; everything after it.
        let from = if lane < stop_lane {
            K as i32
        } else if lane == stop_lane {
            nearest_inclusive
        } else {
            0
        };
        let mut share = Op::identity();
        for (k, &value) in values.iter().enumerate() {
            if k as i32 >= from {
                share = Op::combine(share, value);
            }
        }
        let window = warp::warp_reduce::<T, Op>(share);
        let window = arch::shfl_idx_sync(arch::FULL_MASK, window, 0);
        prefix = Op::combine(window, prefix);
        if stop_lane >= 0 {
            return prefix;
        }
        window_end -= WARP_SIZE as i64 * K as i64;
    }
}

/// Takes the block's tile number from the launch's tile counter (thread 0 takes a ticket; the block
/// learns it through `slot`, a shared `u32`). Tiles therefore start in order: when a block runs, the
/// blocks of all earlier tiles have started, so a look-back always makes progress, on the GPU and in
/// the emulator, whatever the order blocks are scheduled in. The block with the last ticket resets
/// the counter for the next launch (all other tickets are taken by then). Called by every thread.
///
/// # Safety
/// `counter` valid, 0 before the launch's first ticket; `slot` in shared memory; exactly `tiles`
/// blocks in the launch.
#[inline(always)]
pub unsafe fn take_tile(counter: *mut u32, tiles: u32, slot: *mut u32) -> u32 {
    if arch::thread_idx_x() == 0 {
        // SAFETY: counter valid (caller).
        let ticket = unsafe { arch::atomic_add_u32_gpu(counter, 1) };
        if ticket == tiles - 1 {
            // SAFETY: as above.
            unsafe { arch::atomic_exch_u32_gpu(counter, 0) };
        }
        // SAFETY: slot in shared memory (caller).
        unsafe { arch::store(slot, ticket) };
    }
    arch::sync_threads();
    // SAFETY: written by thread 0 before the barrier.
    unsafe { arch::load(slot) }
}

/// The block-prefix callback of a single-pass scan, run by the 32 lanes of warp 0 with the tile's
/// aggregate: publishes the aggregate, looks back for the tile's exclusive prefix (`seed` before
/// tile 0), publishes the inclusive prefix, and returns the exclusive prefix.
///
/// # Safety
/// `tile` below the tile count of `status`; called by all 32 lanes of one warp.
#[inline(always)]
pub unsafe fn tile_prefix<T: Element, Op: AssociativeOp<T>, S: TileStatus<T>, const K: usize>(
    status: &S,
    tile: u32,
    seed: T,
    aggregate: T,
) -> T {
    // SAFETY: forwarded.
    unsafe { tile_prefix_counted::<T, Op, S, K>(status, tile, seed, aggregate, &mut LookBackStats::default()) }
}

/// [`tile_prefix`], counting what the look-back did in `stats`.
///
/// # Safety
/// As for [`tile_prefix`].
#[inline(always)]
pub unsafe fn tile_prefix_counted<T: Element, Op: AssociativeOp<T>, S: TileStatus<T>, const K: usize>(
    status: &S,
    tile: u32,
    seed: T,
    aggregate: T,
    stats: &mut LookBackStats,
) -> T {
    let lane = arch::lane_id();
    if tile == 0 {
        if lane == 0 {
            // SAFETY: tile 0 is in range.
            unsafe { status.publish_inclusive(0, Op::combine(seed, aggregate)) };
        }
        return seed;
    }
    if lane == 0 {
        // SAFETY: tile in range (caller).
        unsafe { status.publish_aggregate(tile, aggregate) };
    }
    // SAFETY: as above; all 32 lanes are here.
    let prefix = unsafe { look_back::<T, Op, S, K>(status, tile, seed, stats) };
    if lane == 0 {
        // SAFETY: as above.
        unsafe { status.publish_inclusive(tile, Op::combine(prefix, aggregate)) };
    }
    prefix
}
