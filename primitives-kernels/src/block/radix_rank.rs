//! Block radix rank: the stable rank of each item of a block among all the block's items ordered by
//! one digit (of `RADIX_BITS` bits), plus each digit's count and start.
//!
//! Items are held warp-striped: item `j` of lane `l` in warp `w` sits at block position
//! `(w * ITEMS + j) * 32 + l`, the arrangement of coalesced loads. Ranking has two halves (the way
//! of CUB's `BlockRadixRankMatchEarlyCounts`): each warp counts its items by digit in a private row
//! of counters (shared-memory atomics), a block scan over digits gives each digit's start, and each
//! warp's counter of a digit becomes the digit's start plus the warp's exclusive prefix; then, for
//! each `j` in turn, a warp finds the lanes holding the same digit (one vote per digit bit), the
//! highest of them takes their number from its row's counter with one atomic, and each lane's rank
//! is `the counter's old value + matching lanes below it`: stable, since positions grow with
//! `(w, j, l)` in that order. Between the halves the digit counts are known, which lets a device
//! sort publish them early.

use crate::arch::{self, FULL_MASK, WARP_SIZE};
use crate::block::{BlockScan, DynamicShared};
use crate::ops::Sum;

/// Block radix rank over digits of `RADIX_BITS` bits (1 to 8). Any block size that is a multiple
/// of 32, up to 1024 threads. Its shared memory is held as `.shared` addresses: 32-bit address
/// arithmetic and `ld.shared`/`st.shared`, where generic pointers cost 64-bit registers and the
/// generic-address check on every access.
pub struct BlockRadixRank<const RADIX_BITS: u32> {
    /// `[warps][DIGITS + 1]` counters; the extra one counts absent items.
    warp_counters: u32,
    /// `[DIGITS]` each digit's first rank.
    digit_starts: u32,
    /// `[DIGITS]` each digit's item count.
    digit_counts: u32,
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
        let warp_counters = arch::shared_address(shared.take::<u32>(warps * (Self::DIGITS as usize + 1)));
        let digit_starts = arch::shared_address(shared.take::<u32>(Self::DIGITS as usize));
        let digit_counts = arch::shared_address(shared.take::<u32>(Self::DIGITS as usize));
        Self { warp_counters, digit_starts, digit_counts, scan }
    }

    /// The lanes of the warp whose `digit` equals the caller's (absent items, `DIGITS`, match each
    /// other only): one vote per digit bit, each keeping the lanes that agree on that bit (CUB's
    /// `MatchAny`). Votes are quick where `match.any.sync` is a shared-unit instruction whose
    /// latency the ranking waited on (H200: the warps' stalls sat on it).
    #[inline(always)]
    fn match_digit(digit: u32) -> u32 {
        // Bits 0..=RADIX_BITS (at most 8): the absent items' digit has the bit above the digits.
        arch::match_low9_sync(digit)
    }

    /// Ranks the block's items by `digits` (warp-striped; `DIGITS` marks an absent item). Returns
    /// each item's rank among the present items (absent items get `u32::MAX`); afterwards, until
    /// the next call, [`Self::digit_start`] and [`Self::digit_count`] describe the digits. Called by
    /// every thread of the block: [`Self::count`] then [`Self::rank_counted`].
    #[inline(always)]
    pub fn rank<const ITEMS: usize>(&self, digits: &[u32; ITEMS]) -> [u32; ITEMS] {
        self.count::<ITEMS>(|j| digits[j]);
        self.rank_counted::<ITEMS>(|j| digits[j])
    }

    /// The first half of [`Self::rank`]: counts the block's items by digit (each warp in its own
    /// counters, with shared-memory atomics), then turns the counts into each warp's exclusive
    /// prefix within each digit and each digit's count and start. Afterwards [`Self::digit_count`]
    /// and [`Self::digit_start`] are valid: a device sort publishes its tile's digit counts here,
    /// before the ranking proper, so that later tiles' look-backs need not wait for it (CUB's
    /// "early counts"). `digit(j)` is the digit of the thread's item `j` (`DIGITS` when absent): a
    /// function rather than an array, so that a caller holding keys need not keep their digits in
    /// registers as well. Called by every thread of the block; ends with a barrier.
    #[inline(always)]
    pub fn count<const ITEMS: usize>(&self, digit: impl Fn(usize) -> u32) {
        let lane = arch::lane_id();
        let stride = Self::DIGITS as usize + 1;
        let counters = self.warp_row();
        // A fixed trip count: a loop here made ptxas spill the caller's freshly loaded keys around it.
        for k in 0..(Self::DIGITS as usize + 1).div_ceil(WARP_SIZE as usize) {
            let d = lane as usize + k * WARP_SIZE as usize;
            if d < stride {
                // SAFETY: d < stride: inside the warp's row.
                unsafe { arch::store_shared_b32(counters + 4 * d as u32, 0) };
            }
        }
        arch::sync_warp(FULL_MASK);
        for j in 0..ITEMS {
            // SAFETY: digit <= DIGITS < stride (absent items count in the extra slot, unused).
            unsafe { arch::red_add_u32_shared_at(counters + 4 * digit(j), 1) };
        }
        arch::sync_threads();

        // Each thread owns a run of digits: their totals over the warps, a block scan of the runs'
        // totals for the digit starts, then each warp's counter of a digit becomes the digit's start
        // plus the counts of the warps before it: the rank's base, so that ranking reads no digit
        // start (a bank-conflicted load per item).
        let threads = arch::block_dim_x() as usize;
        let warps = threads / WARP_SIZE as usize;
        // A 32-bit division: a `usize` one is a 64-bit division subroutine on the GPU.
        let per_thread = Self::DIGITS.div_ceil(threads as u32) as usize;
        let first = arch::thread_idx_x() as usize * per_thread;
        let last = (first + per_thread).min(Self::DIGITS as usize);
        let mut run_total = 0u32;
        for d in first..last {
            let mut total = 0u32;
            for w in 0..warps {
                // SAFETY: w < warps, d < DIGITS < stride.
                total += unsafe { arch::load_shared_b32(self.warp_counters + 4 * (w * stride + d) as u32) };
            }
            // SAFETY: d < DIGITS.
            unsafe { arch::store_shared_b32(self.digit_counts + 4 * d as u32, total) };
            run_total += total;
        }
        let (mut start, _) = self.scan.exclusive_scan::<Sum>(run_total);
        for d in first..last {
            // SAFETY: d < DIGITS.
            unsafe { arch::store_shared_b32(self.digit_starts + 4 * d as u32, start) };
            for w in 0..warps {
                // SAFETY: w < warps, d < DIGITS < stride.
                unsafe {
                    let slot = self.warp_counters + 4 * (w * stride + d) as u32;
                    let count = arch::load_shared_b32(slot);
                    arch::store_shared_b32(slot, start);
                    start += count;
                }
            }
        }
        arch::sync_threads();
    }

    /// The second half of [`Self::rank`], after [`Self::count`] with the same digits: for each
    /// `j` in turn, a warp finds the lanes holding the same digit (one vote per digit bit), the
    /// highest of them takes their number from the warp's counter of that digit with one shared-memory atomic
    /// (the counter starts at the digit's start plus the counts of the warps before) and passes the
    /// old value to the others, and each lane's rank is that value plus the matching lanes below
    /// it. No branch surrounds the atomic, and the atomics of successive `j` need not wait for each
    /// other's results, so a warp overlaps its items. Stability rests on the shared-memory atomics
    /// of one warp to one address taking effect in the warp's instruction order, as CUB's Onesweep
    /// ranking also assumes.
    #[inline(always)]
    pub fn rank_counted<const ITEMS: usize>(&self, digit: impl Fn(usize) -> u32) -> [u32; ITEMS] {
        let lane = arch::lane_id();
        let counters = self.warp_row();
        let lanes_below = (1u32 << lane) - 1;
        let mut ranks = [u32::MAX; ITEMS];
        for (j, rank) in ranks.iter_mut().enumerate() {
            let digit = digit(j);
            let peers = Self::match_digit(digit);
            // The highest matching lane: `peers` holds the caller's lane, so it is never 0 and
            // `leading_zeros` needs no zero test.
            let leader = 31 - peers.leading_zeros();
            // Every lane runs the atomic, so there is no branch for ptxas to wrap in a divergent
            // region (it turns even a predicated `atom` into one): the leader adds the peers'
            // number to its digit's counter, the others add 0 to their own lane's counter of the
            // row, which changes nothing. Absent items' digit, `DIGITS`, has the row's extra slot.
            let (address, add) =
                if lane == leader { (counters + 4 * digit, peers.count_ones()) } else { (counters + 4 * lane, 0) };
            // SAFETY: digit <= DIGITS and lane < 32 <= DIGITS: inside the warp's row.
            let before = unsafe { arch::atomic_add_u32_shared_at(address, add) };
            let before = arch::shfl_idx_sync(FULL_MASK, before, leader);
            if digit < Self::DIGITS {
                *rank = before + (peers & lanes_below).count_ones();
            }
        }
        ranks
    }

    /// This warp's row of `warp_counters`.
    #[inline(always)]
    fn warp_row(&self) -> u32 {
        self.warp_counters + 4 * arch::warp_idx() * (Self::DIGITS + 1)
    }

    /// Rank of the first item with digit `digit` (< `DIGITS`) in the last [`Self::rank`] or
    /// [`Self::count`].
    #[inline(always)]
    pub fn digit_start(&self, digit: u32) -> u32 {
        // SAFETY: digit < DIGITS (caller), inside `digit_starts`.
        unsafe { arch::load_shared_b32(self.digit_starts + 4 * digit) }
    }

    /// Number of items with digit `digit` (< `DIGITS`) in the last [`Self::rank`] or
    /// [`Self::count`].
    #[inline(always)]
    pub fn digit_count(&self, digit: u32) -> u32 {
        // SAFETY: digit < DIGITS (caller), inside `digit_counts`.
        unsafe { arch::load_shared_b32(self.digit_counts + 4 * digit) }
    }
}
