//! Block radix sort: the block's keys (and values), held warp-striped in registers (see
//! [`BlockRadixRank`]), sorted over a bit range by one [`BlockRadixRank`] per digit and an exchange
//! through shared memory after each. Stable; ascending or descending.

use crate::arch::{self, WARP_SIZE};
use crate::block::{BlockRadixRank, DynamicShared};
use crate::ops::Element;
use crate::radix_key::{DigitPlace, RadixKey};

/// Block position of item `j` of the calling thread in the warp-striped arrangement.
#[inline(always)]
pub fn striped_position<const ITEMS: usize>(j: usize) -> usize {
    (arch::warp_idx() as usize * ITEMS + j) * WARP_SIZE as usize + arch::lane_id() as usize
}

/// How many of the calling thread's warp-striped items lie below block position `valid`: item `j`
/// is present exactly when `j` is below it. One 32-bit count per thread, where comparing each
/// item's position would keep `ITEMS` positions (64-bit as `usize`) and predicates alive.
#[inline(always)]
pub fn striped_present<const ITEMS: usize>(valid: usize) -> usize {
    let first = striped_position::<ITEMS>(0) as u32;
    let valid = valid.min(u32::MAX as usize) as u32;
    if valid > first {
        ((valid - first).div_ceil(WARP_SIZE) as usize).min(ITEMS)
    } else {
        0
    }
}

/// Block radix sort with digits of `RADIX_BITS` bits.
pub struct BlockRadixSort<const RADIX_BITS: u32> {
    rank: BlockRadixRank<RADIX_BITS>,
    exchange: *mut u8,
}

impl<const RADIX_BITS: u32> BlockRadixSort<RADIX_BITS> {
    /// Shared memory for `block_threads` threads of `items` keys `K` and values `V` each, in bytes.
    pub const fn shared_bytes<K, V>(block_threads: usize, items: usize) -> usize {
        let item = if size_of::<K>() > size_of::<V>() { size_of::<K>() } else { size_of::<V>() };
        BlockRadixRank::<RADIX_BITS>::shared_bytes(block_threads) + block_threads * items * item + 16
    }

    /// Takes its shared memory from `shared` (sized by [`Self::shared_bytes`] for the launch).
    #[inline(always)]
    pub fn from_allocator<K, V, const ITEMS: usize>(shared: &mut DynamicShared) -> Self {
        let rank = BlockRadixRank::from_allocator(shared);
        let item = size_of::<K>().max(size_of::<V>());
        let exchange = shared.take_aligned::<u8>(arch::block_dim_x() as usize * ITEMS * item, 16);
        Self { rank, exchange }
    }

    /// The ranker (its digit starts and counts describe the last digit sorted).
    pub fn ranker(&self) -> &BlockRadixRank<RADIX_BITS> {
        &self.rank
    }

    /// The `.shared` address of the memory [`Self::exchange`] moves items through: room for the
    /// block's items of the larger of the key and value types given to [`Self::from_allocator`],
    /// aligned to 16 bytes. Free for other use between exchanges.
    #[inline(always)]
    pub fn exchange_address(&self) -> u32 {
        arch::shared_address(self.exchange)
    }

    /// Moves each present item `j` to position `ranks[j]` through shared memory; afterwards item `j`
    /// holds what was ranked at the thread's `j`-th striped position (`valid` items in all). `FULL`
    /// when every item is present (`valid` is the block's item count): no bounds checks. Items of
    /// 4, 8 or 16 bytes (one `st.shared`/`ld.shared` each).
    #[inline(always)]
    pub fn exchange<T: Element, const ITEMS: usize, const FULL: bool>(
        &self,
        items: &mut [T; ITEMS],
        ranks: &[u32; ITEMS],
        valid: usize,
    ) {
        self.exchange_by::<T, ITEMS, FULL>(items, |j| ranks[j], valid);
    }

    /// [`Self::exchange`] with item `j`'s rank given by `rank(j)`, for a caller that keeps its ranks
    /// elsewhere than in registers (Onesweep keeps them in shared memory).
    #[inline(always)]
    pub fn exchange_by<T: Element, const ITEMS: usize, const FULL: bool>(
        &self,
        items: &mut [T; ITEMS],
        rank: impl Fn(usize) -> u32,
        valid: usize,
    ) {
        // `.shared` addresses: 32-bit address arithmetic and no generic-address check.
        let base = self.exchange_address();
        let present = striped_present::<ITEMS>(valid);
        for (j, item) in items.iter().enumerate() {
            if FULL || j < present {
                // SAFETY: ranks of present items are below `valid` <= the tile, inside `exchange`
                // (aligned to 16 bytes).
                unsafe { arch::store_shared(base + rank(j) * size_of::<T>() as u32, *item) };
            }
        }
        arch::sync_threads();
        for (j, item) in items.iter_mut().enumerate() {
            let position = striped_position::<ITEMS>(j);
            if FULL || j < present {
                // SAFETY: position < valid, written before the barrier.
                *item = unsafe { arch::load_shared(base + (position * size_of::<T>()) as u32) };
            }
        }
        arch::sync_threads();
    }

    /// Sorts the block's `valid` first items (by striped position; the rest are ignored) by the bits
    /// `begin_bit..end_bit` of the keys' order-preserving images, moving `values` along when `PAIRS`.
    /// Stable. Called by every thread of the block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn sort<K: RadixKey, V: Element, const ITEMS: usize, const PAIRS: bool>(
        &self,
        keys: &mut [K; ITEMS],
        values: &mut [V; ITEMS],
        valid: usize,
        begin_bit: u32,
        end_bit: u32,
        descending: bool,
    ) {
        let present = striped_present::<ITEMS>(valid);
        let mut shift = begin_bit;
        while shift < end_bit {
            let bits = (end_bit - shift).min(RADIX_BITS);
            let place = DigitPlace::new(shift, bits, descending);
            // Digits are recomputed from the keys rather than held (registers: see Onesweep).
            let digit_of = |j: usize| {
                if j < present {
                    place.of(keys[j])
                } else {
                    BlockRadixRank::<RADIX_BITS>::DIGITS
                }
            };
            self.rank.count::<ITEMS>(digit_of);
            let ranks = self.rank.rank_counted::<ITEMS>(digit_of);
            self.exchange::<K, ITEMS, false>(keys, &ranks, valid);
            if PAIRS {
                self.exchange::<V, ITEMS, false>(values, &ranks, valid);
            }
            shift += bits;
        }
    }
}
