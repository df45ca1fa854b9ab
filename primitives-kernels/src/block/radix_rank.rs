//! Block radix rank: the stable rank of each item of a block among all the block's items ordered by
//! one digit (of `RADIX_BITS` bits), plus each digit's count and start.
//!
//! Items are held warp-striped: item `j` of lane `l` in warp `w` sits at block position
//! `(w * ITEMS + j) * 32 + l`, the arrangement of coalesced loads. Ranking is by warp matching (the
//! way of CUB's `BlockRadixRankMatch`): for each `j` in turn, a warp finds the lanes holding the same
//! digit (`match.any.sync`), the lowest of them bumps the warp's private counter of that digit by
//! their number, and each lane's rank is the counter before the bump plus the matching lanes below
//! it. The warps' counters then become per-warp exclusive prefixes and a block scan over digits gives
//! each digit's start. The rank of an item is `digit start + warp prefix + rank in warp`: stable,
//! since positions grow with `(w, j, l)` in that order. No atomics; one private counter array per
//! warp, so warps never contend.

use crate::arch::{self, FULL_MASK, WARP_SIZE};
use crate::block::{BlockScan, DynamicShared};
use crate::ops::Sum;

/// Block radix rank over digits of `RADIX_BITS` bits (1 to 8). Any block size that is a multiple
/// of 32, up to 1024 threads.
pub struct BlockRadixRank<const RADIX_BITS: u32> {
    /// `[warps][DIGITS + 1]` counters; the extra one counts absent items.
    warp_counters: *mut u32,
    /// `[DIGITS]` each digit's first rank.
    digit_starts: *mut u32,
    /// `[DIGITS]` each digit's item count.
    digit_counts: *mut u32,
    scan: BlockScan<u32>,
}

impl<const RADIX_BITS: u32> BlockRadixRank<RADIX_BITS> {
    /// Digit values, `2^RADIX_BITS`; the digit value `DIGITS` marks an absent item.
    pub const DIGITS: u32 = 1 << RADIX_BITS;

    /// Shared memory for a block of `block_threads` threads, in bytes (alignment slack included).
    pub const fn shared_bytes(block_threads: usize) -> usize {
        let warps = block_threads / WARP_SIZE as usize;
        (warps * (Self::DIGITS as usize + 1) + 2 * Self::DIGITS as usize) * 4 + BlockScan::<u32>::SHARED_BYTES + 16
    }

    /// Takes its shared memory from `shared` (sized for the launch's block).
    #[inline(always)]
    pub fn from_allocator(shared: &mut DynamicShared) -> Self {
        const { assert!(RADIX_BITS >= 1 && RADIX_BITS <= 8, "1 to 8 radix bits") };
        let warps = (arch::block_dim_x() / WARP_SIZE) as usize;
        let scan = BlockScan::<u32>::from_allocator(shared);
        let warp_counters = shared.take::<u32>(warps * (Self::DIGITS as usize + 1));
        let digit_starts = shared.take::<u32>(Self::DIGITS as usize);
        let digit_counts = shared.take::<u32>(Self::DIGITS as usize);
        Self { warp_counters, digit_starts, digit_counts, scan }
    }

    /// The lanes of the warp whose `digit` equals the caller's (absent items, `DIGITS`, match each
    /// other only): `match.any.sync`, one instruction where the ballot form (CUB's `MatchAny`) takes
    /// one vote per digit bit.
    #[inline(always)]
    fn match_digit(digit: u32) -> u32 {
        arch::match_any_sync(FULL_MASK, digit)
    }

    /// Ranks the block's items by `digits` (warp-striped; `DIGITS` marks an absent item). Returns
    /// each item's rank among the present items (absent items get `u32::MAX`); afterwards, until
    /// the next call, [`Self::digit_start`] and [`Self::digit_count`] describe the digits. Called by
    /// every thread of the block; ends with a barrier.
    #[inline(always)]
    pub fn rank<const ITEMS: usize>(&self, digits: &[u32; ITEMS]) -> [u32; ITEMS] {
        let lane = arch::lane_id();
        let warp = arch::warp_idx() as usize;
        let stride = Self::DIGITS as usize + 1;
        // SAFETY: the warp's counter row lies inside `warp_counters` (warps * stride entries).
        let counters = unsafe { self.warp_counters.add(warp * stride) };
        let mut d = lane as usize;
        while d < stride {
            // SAFETY: d < stride.
            unsafe { arch::store(counters.add(d), 0) };
            d += WARP_SIZE as usize;
        }
        arch::sync_warp(FULL_MASK);

        let lanes_below = (1u32 << lane) - 1;
        let mut ranks = [0u32; ITEMS];
        for j in 0..ITEMS {
            let digit = digits[j];
            let peers = Self::match_digit(digit);
            // SAFETY: digit <= DIGITS < stride.
            let counter = unsafe { counters.add(digit as usize) };
            // SAFETY: as above; every matching lane reads before the lowest one writes (barrier).
            let before = unsafe { arch::load(counter) };
            arch::sync_warp(FULL_MASK);
            if peers & lanes_below == 0 {
                // SAFETY: as above; only the lowest matching lane writes this counter this round.
                unsafe { arch::store(counter, before + peers.count_ones()) };
            }
            arch::sync_warp(FULL_MASK);
            ranks[j] = before + (peers & lanes_below).count_ones();
        }
        arch::sync_threads();

        // Each thread owns a run of digits: per-warp exclusive prefixes of its digits, then a block
        // scan of the runs' totals gives the digit starts.
        let threads = arch::block_dim_x() as usize;
        let warps = threads / WARP_SIZE as usize;
        let per_thread = (Self::DIGITS as usize).div_ceil(threads);
        let first = arch::thread_idx_x() as usize * per_thread;
        let last = (first + per_thread).min(Self::DIGITS as usize);
        let mut run_total = 0u32;
        for d in first..last {
            let mut running = 0u32;
            for w in 0..warps {
                // SAFETY: w < warps, d < DIGITS < stride.
                unsafe {
                    let slot = self.warp_counters.add(w * stride + d);
                    let count = arch::load(slot);
                    arch::store(slot, running);
                    running += count;
                }
            }
            // SAFETY: d < DIGITS.
            unsafe { arch::store(self.digit_counts.add(d), running) };
            run_total += running;
        }
        let (mut start, _) = self.scan.exclusive_scan::<Sum>(run_total);
        for d in first..last {
            // SAFETY: d < DIGITS.
            unsafe {
                arch::store(self.digit_starts.add(d), start);
                start += arch::load(self.digit_counts.add(d));
            }
        }
        arch::sync_threads();

        for j in 0..ITEMS {
            let digit = digits[j];
            ranks[j] = if digit < Self::DIGITS {
                // SAFETY: digit < DIGITS; the warp's prefix row is inside `warp_counters`.
                unsafe {
                    ranks[j]
                        + arch::load(self.digit_starts.add(digit as usize))
                        + arch::load(counters.add(digit as usize))
                }
            } else {
                u32::MAX
            };
        }
        ranks
    }

    /// Rank of the first item with digit `digit` (< `DIGITS`) in the last [`Self::rank`].
    #[inline(always)]
    pub fn digit_start(&self, digit: u32) -> u32 {
        // SAFETY: digit < DIGITS (caller), inside `digit_starts`.
        unsafe { arch::load(self.digit_starts.add(digit as usize)) }
    }

    /// Number of items with digit `digit` (< `DIGITS`) in the last [`Self::rank`].
    #[inline(always)]
    pub fn digit_count(&self, digit: u32) -> u32 {
        // SAFETY: digit < DIGITS (caller), inside `digit_counts`.
        unsafe { arch::load(self.digit_counts.add(digit as usize)) }
    }
}
