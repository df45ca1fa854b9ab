//! Device radix sort and segmented radix sort: one block's share (CUB's agent layer).
//!
//! Large inputs (and large segments) use Onesweep (Adinets & Merrill 2022, "Onesweep: A Faster Least
//! Significant Digit Radix Sort for GPUs"): one [`histogram_kernel`] pass counts the digits of every
//! digit place at once, [`bin_offsets_kernel`] turns the counts into each digit's first output
//! position, then one [`onesweep_kernel`] launch per digit place ranks a tile of keys in the block
//! ([`crate::block::BlockRadixRank`]), finds each digit's position among all tiles by a decoupled look-back per
//! digit (one thread per digit; each tile publishes its digit counts, then its inclusive counts), and
//! scatters the tile's keys (and values) through shared memory, so that keys of one digit leave the
//! block in runs of consecutive addresses.
//!
//! Every launch works on a list of segments: the device sort is the one-segment case. A tile never
//! spans two segments and the look-back stops at the first tile of the tile's segment, so large
//! segments of a segmented sort are sorted by the same kernels in the same launches, all at once.
//! Small segments (up to one tile) are sorted by [`block_sort_segments_kernel`]: one block per
//! segment, all digit places in shared memory, one read and one write of each item.
//!
//! The segment list is `count + 1` first tiles, then `count` begin offsets, then `count` end offsets
//! (all `u32`), so the item count of one call stays below 2^30 (the look-back's 30-bit counts).

use crate::arch;
use crate::block::{striped_position, striped_present, BlockRadixSort, BlockScan, DynamicShared};
use crate::ops::{Element, Sum};
use crate::radix_key::{DigitPlace, RadixKey};

/// Bits per digit place of the device sorts.
pub const RADIX_BITS: u32 = 8;
/// Digit values per place.
pub const DIGITS: usize = 1 << RADIX_BITS;
/// Threads per block of the histogram and small-segment sort kernels.
pub const BLOCK_THREADS: u32 = 256;
/// Threads per block of [`onesweep_kernel`] (at least one look-back thread per digit).
pub const ONESWEEP_THREADS: u32 = 256;
/// Most digit places of one sort (64-bit keys).
pub const MAX_PLACES: usize = 8;

/// Keys (and values) per thread of an Onesweep tile, by the size of the larger of key and value.
/// Larger tiles mean longer runs of one digit in the scatter and fewer tiles to look back over, but
/// the tile must fit 80 registers (3 blocks of 256 per multiprocessor): 22 4-byte items (H200, u32
/// pairs at 2^26: 30.1 G pairs/s; 24 items within noise, 16 or 18 at 4 blocks 25.8 and 25.9).
pub const fn items_per_thread<K, V>() -> usize {
    let size = if size_of::<K>() > size_of::<V>() { size_of::<K>() } else { size_of::<V>() };
    if size <= 4 {
        22
    } else if size <= 8 {
        16
    } else {
        8
    }
}

/// Items per Onesweep tile.
pub const fn tile_items<K, V>() -> usize {
    ONESWEEP_THREADS as usize * items_per_thread::<K, V>()
}

/// Keys (and values) per thread of the small-segment block sort: it keeps keys, values, digits
/// and ranks through every digit place, so fewer than Onesweep.
pub const fn block_items_per_thread<K, V>() -> usize {
    let size = if size_of::<K>() > size_of::<V>() { size_of::<K>() } else { size_of::<V>() };
    if size <= 8 {
        16
    } else {
        8
    }
}

/// Flag of a published tile count: the tile's own count of the digit.
const AGGREGATE: u32 = 1 << 30;
/// Flag of a published inclusive count: the digit's count over the tile and all before it in its
/// segment.
const INCLUSIVE: u32 = 2 << 30;
const VALUE_MASK: u32 = (1 << 30) - 1;

/// Dynamic shared memory of [`onesweep_kernel`], in bytes.
pub const fn shared_bytes<K, V>() -> usize {
    BlockRadixSort::<RADIX_BITS>::shared_bytes::<K, V>(ONESWEEP_THREADS as usize, items_per_thread::<K, V>())
        + DIGITS * 4
        + tile_items::<K, V>() * 4
        + 32
}

/// Dynamic shared memory of [`block_sort_segments_kernel`] for blocks of `threads` (the kernel
/// takes its scratch by the launch's block size, so smaller blocks need less).
pub const fn block_shared_bytes_for<K, V>(threads: usize) -> usize {
    BlockRadixSort::<RADIX_BITS>::shared_bytes::<K, V>(threads, block_items_per_thread::<K, V>()) + 16
}

/// Keys each thread of [`histogram_kernel`] loads before counting them.
const HISTOGRAM_ITEMS: usize = 16;

/// Dynamic shared memory of [`histogram_kernel`], in bytes.
pub const HISTOGRAM_SHARED_BYTES: usize = MAX_PLACES * DIGITS * 4 + 16;

/// A segment list as laid out in device memory (see the module doc).
#[derive(Clone, Copy)]
struct Segments {
    list: *const u32,
    count: u32,
}

impl Segments {
    #[inline(always)]
    fn first_tile(&self, s: u32) -> u32 {
        // SAFETY: s <= count, inside the list (contract of the kernels).
        unsafe { arch::load(self.list.add(s as usize)) }
    }

    #[inline(always)]
    fn begin(&self, s: u32) -> u32 {
        // SAFETY: s < count, inside the list.
        unsafe { arch::load(self.list.add(self.count as usize + 1 + s as usize)) }
    }

    #[inline(always)]
    fn end(&self, s: u32) -> u32 {
        // SAFETY: s < count, inside the list.
        unsafe { arch::load(self.list.add(2 * self.count as usize + 1 + s as usize)) }
    }

    /// The segment of tile `tile`: the last `s` with `first_tile(s) <= tile`.
    #[inline(always)]
    fn of_tile(&self, tile: u32) -> u32 {
        let (mut low, mut high) = (0u32, self.count);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if self.first_tile(middle) <= tile {
                low = middle;
            } else {
                high = middle;
            }
        }
        low
    }
}

/// Counts, for each digit place `p` of `begin_bit..end_bit` and each segment `s`, the keys of each
/// digit into `counts[(p * segment_count + s) * DIGITS + digit]` (added to; zeroed by the host).
/// Block `b` takes tiles `b * tiles_per_block ..` in order, so it flushes its shared counts only
/// when the segment changes and at the end.
///
/// # Safety
/// `keys_in` valid over every segment; `segments` a segment list of `segment_count` segments covering
/// `tiles` tiles of [`tile_items`]`::<K, V>()`; `counts` valid for `places * segment_count * DIGITS`
/// entries; [`HISTOGRAM_SHARED_BYTES`] of shared memory; [`BLOCK_THREADS`] threads.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn histogram_kernel<K: RadixKey, V: Element>(
    keys_in: *const K,
    segments: *const u32,
    segment_count: u32,
    tiles: u32,
    tiles_per_block: u32,
    counts: *mut u32,
    begin_bit: u32,
    end_bit: u32,
    descending: u32,
) {
    let mut shared = DynamicShared::new();
    // `.shared` addresses: `red.shared` and `ld.shared`/`st.shared`, where a generic pointer costs the
    // generic-address path and keeps the compiler from moving key loads past the atomics.
    let local = arch::shared_address(shared.take::<u32>(MAX_PLACES * DIGITS));
    let segments = Segments { list: segments, count: segment_count };
    let places = (end_bit - begin_bit).div_ceil(RADIX_BITS) as usize;
    let tid = arch::thread_idx_x() as usize;
    let threads = arch::block_dim_x() as usize;
    let descending = descending != 0;
    let clear = || {
        let mut i = tid;
        while i < places * DIGITS {
            // SAFETY: i < places * DIGITS <= MAX_PLACES * DIGITS.
            unsafe { arch::store_shared_b32(local + 4 * i as u32, 0) };
            i += threads;
        }
    };
    let flush = |segment: u32| {
        arch::sync_threads();
        let mut i = tid;
        while i < places * DIGITS {
            let (place, digit) = (i / DIGITS, i % DIGITS);
            // SAFETY: i inside the shared counts; the global index inside `counts` (contract).
            unsafe {
                let count = arch::load_shared_b32(local + 4 * i as u32);
                if count != 0 {
                    let slot = counts.add((place * segment_count as usize + segment as usize) * DIGITS + digit);
                    arch::atomic_add_u32_gpu(slot, count);
                    arch::store_shared_b32(local + 4 * i as u32, 0);
                }
            }
            i += threads;
        }
        arch::sync_threads();
    };

    let first = arch::block_idx_x() * tiles_per_block;
    let last = (first + tiles_per_block).min(tiles);
    if first >= last {
        return;
    }
    clear();
    let tile_len = tile_items::<K, V>();
    let mut segment = segments.of_tile(first);
    arch::sync_threads();
    // The block's tiles of one segment are one run of keys: counted as one stretch.
    let mut tile = first;
    while tile < last {
        while segment + 1 < segment_count && segments.first_tile(segment + 1) <= tile {
            flush(segment);
            segment += 1;
        }
        let first_tile = segments.first_tile(segment);
        let end_tile = if segment + 1 < segment_count { segments.first_tile(segment + 1).min(last) } else { last };
        let begin = segments.begin(segment) as usize;
        let start = begin + (tile - first_tile) as usize * tile_len;
        let end = (segments.end(segment) as usize).min(begin + (end_tile - first_tile) as usize * tile_len);
        // HISTOGRAM_ITEMS keys in flight per thread before their atomics: one load at a time left
        // the kernel waiting on memory.
        let mut chunk = start;
        while chunk < end {
            // Each key's image once, then every place's digit of it.
            let mut images = [K::zeroed().image(); HISTOGRAM_ITEMS];
            for (j, image) in images.iter_mut().enumerate() {
                let i = chunk + j * threads + tid;
                if i < end {
                    // SAFETY: i inside the segment, inside `keys_in`.
                    *image = unsafe { arch::load(keys_in.add(i)) }.image();
                }
            }
            let present = (end - chunk).saturating_sub(tid).div_ceil(threads).min(HISTOGRAM_ITEMS);
            let count = |present: usize| {
                for place in 0..places {
                    let shift = begin_bit + place as u32 * RADIX_BITS;
                    let digit = DigitPlace::new(shift, (end_bit - shift).min(RADIX_BITS), descending);
                    let row = local + 4 * (place * DIGITS) as u32;
                    for (j, &image) in images.iter().enumerate() {
                        if j < present {
                            // SAFETY: place < MAX_PLACES, digit < DIGITS.
                            unsafe { arch::red_add_u32_shared_at(row + 4 * digit.of_image::<K>(image), 1) };
                        }
                    }
                }
            };
            // Full chunks (all but the last of a stretch) with a constant count: no checks.
            if present == HISTOGRAM_ITEMS {
                count(HISTOGRAM_ITEMS);
            } else {
                count(present);
            }
            chunk += HISTOGRAM_ITEMS * threads;
        }
        tile = end_tile;
    }
    flush(segment);
}

/// Turns digit counts into first output positions: block `(place, segment)` (grid
/// `places * segment_count`) writes `begin(segment) + ` the exclusive scan over digits, in place.
///
/// # Safety
/// As for [`histogram_kernel`]'s `counts` and `segments`; [`DIGITS`] threads per block and
/// `BlockScan::<u32>::SHARED_BYTES` of shared memory.
#[inline(always)]
pub unsafe fn bin_offsets_kernel(counts: *mut u32, segments: *const u32, segment_count: u32) {
    let mut shared = DynamicShared::new();
    let scan = BlockScan::<u32>::from_allocator(&mut shared);
    let block = arch::block_idx_x();
    let segment = block % segment_count;
    let segments = Segments { list: segments, count: segment_count };
    let tid = arch::thread_idx_x() as usize;
    // SAFETY: block < places * segment_count, tid < DIGITS: inside `counts`.
    let slot = unsafe { counts.add(block as usize * DIGITS + tid) };
    // SAFETY: as above.
    let count = unsafe { arch::load(slot) };
    let (exclusive, _) = scan.exclusive_scan::<Sum>(count);
    // SAFETY: as above.
    unsafe { arch::store(slot, segments.begin(segment) + exclusive) };
}

/// One digit place of Onesweep over every tile of the segment list: keys `shift..shift + bits` of
/// `keys_in` (and `values_in` when `PAIRS`) go to their place in `keys_out` (`values_out`).
///
/// # Safety
/// Inputs valid over every segment and not overlapping the outputs, which are valid over the same
/// ranges; `segments` as for
/// [`histogram_kernel`]; `offsets` the place's [`bin_offsets_kernel`] output (`segment_count *
/// DIGITS` entries); `status` `tiles * DIGITS` zeroed words; `counter` 0; `tiles` blocks of
/// [`ONESWEEP_THREADS`] threads with [`shared_bytes`] of shared memory.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn onesweep_kernel<K: RadixKey, V: Element, const ITEMS: usize, const PAIRS: bool>(
    keys_in: *const K,
    keys_out: *mut K,
    values_in: *const V,
    values_out: *mut V,
    segments: *const u32,
    segment_count: u32,
    offsets: *const u32,
    status: *mut u32,
    counter: *mut u32,
    tiles: u32,
    shift: u32,
    bits: u32,
    descending: u32,
) {
    let mut shared = DynamicShared::new();
    let sort = BlockRadixSort::<RADIX_BITS>::from_allocator::<K, V, ITEMS>(&mut shared);
    let scatter_base = arch::shared_address(shared.take::<u32>(DIGITS));
    let rank_of = arch::shared_address(shared.take_aligned::<u32>(arch::block_dim_x() as usize * ITEMS, 16));
    let slots = shared.take::<u32>(2);
    let segments = Segments { list: segments, count: segment_count };
    let tid = arch::thread_idx_x();

    if tid == 0 {
        // SAFETY: counter valid (contract); the last ticket resets it for the next launch.
        let tile = unsafe { arch::atomic_add_u32_gpu(counter, 1) };
        if tile == tiles - 1 {
            // SAFETY: as above.
            unsafe { arch::atomic_exch_u32_gpu(counter, 0) };
        }
        // SAFETY: two shared slots.
        unsafe {
            arch::store(slots, tile);
            arch::store(slots.add(1), segments.of_tile(tile));
        }
    }
    arch::sync_threads();
    // SAFETY: written by thread 0 before the barrier.
    let (tile, segment) = unsafe { (arch::load(slots), arch::load(slots.add(1))) };
    let first_tile = segments.first_tile(segment);
    let tile_len = arch::block_dim_x() as usize * ITEMS;
    let start = segments.begin(segment) as usize + (tile - first_tile) as usize * tile_len;
    let valid = (segments.end(segment) as usize - start).min(tile_len);
    let place = Place { tile, first_tile, segment, start, valid, shift, bits, descending: descending != 0 };
    let buffers = Buffers { keys_in, keys_out, values_in, values_out, offsets, status, scatter_base, rank_of };
    // Full tiles (all but the last of each segment) skip every bounds check.
    // SAFETY: forwarded (contract).
    unsafe {
        if valid == tile_len {
            onesweep_tile::<K, V, ITEMS, PAIRS, true>(&sort, &place, &buffers);
        } else {
            onesweep_tile::<K, V, ITEMS, PAIRS, false>(&sort, &place, &buffers);
        }
    }
}

/// Where one Onesweep tile sits and which digit it sorts by.
struct Place {
    tile: u32,
    first_tile: u32,
    segment: u32,
    start: usize,
    valid: usize,
    shift: u32,
    bits: u32,
    descending: bool,
}

/// The global and shared memory one Onesweep tile works on.
struct Buffers<K, V> {
    keys_in: *const K,
    keys_out: *mut K,
    values_in: *const V,
    values_out: *mut V,
    offsets: *const u32,
    status: *mut u32,
    /// `.shared` address of `[DIGITS]` words: each digit's output position less its start in the
    /// tile.
    scatter_base: u32,
    /// `.shared` address of `[tile items]` words: the rank of the item at each striped position,
    /// kept here rather than in registers from the ranking to the values' exchange.
    rank_of: u32,
}

/// One Onesweep tile; `FULL` when it holds `ITEMS` items on every thread.
///
/// # Safety
/// As for [`onesweep_kernel`].
#[inline(always)]
unsafe fn onesweep_tile<K: RadixKey, V: Element, const ITEMS: usize, const PAIRS: bool, const FULL: bool>(
    sort: &BlockRadixSort<RADIX_BITS>,
    place: &Place,
    buffers: &Buffers<K, V>,
) {
    const { assert!(ITEMS <= 32 && RADIX_BITS <= 8, "digits are packed four to a word, eight words") };
    let &Place { tile, first_tile, segment, start, valid, shift, bits, descending } = place;
    let present_items = striped_present::<ITEMS>(valid);
    let present = |j: usize| FULL || j < present_items;

    let mut keys = [K::zeroed(); ITEMS];
    for (j, key) in keys.iter_mut().enumerate() {
        if present(j) {
            // SAFETY: start + position inside the segment, inside the inputs.
            *key = unsafe { arch::load(buffers.keys_in.add(start + striped_position::<ITEMS>(j))) };
        }
    }
    // Digits are recomputed from the keys where needed rather than held: registers bound the
    // blocks per multiprocessor, and ptxas spilled with both arrays live.
    let place_digit = DigitPlace::new(shift, bits, descending);
    let digit_of = |j: usize| if present(j) { place_digit.of(keys[j]) } else { DIGITS as u32 };
    // The tile's digit counts are published as soon as they are known, before the ranking proper,
    // so that later tiles' look-backs do not wait for this tile's ranking (CUB's early counts).
    sort.ranker().count::<ITEMS>(digit_of);
    let mut digit = arch::thread_idx_x() as usize;
    while digit < DIGITS {
        let count = sort.ranker().digit_count(digit as u32);
        let flag = if tile == first_tile { INCLUSIVE } else { AGGREGATE };
        // SAFETY: tile < tiles, digit < DIGITS: inside `status`.
        unsafe { arch::store_relaxed_u32_gpu(buffers.status.add(tile as usize * DIGITS + digit), flag | count) };
        digit += arch::block_dim_x() as usize;
    }
    {
        let ranks = sort.ranker().rank_counted::<ITEMS>(digit_of);
        for (j, &rank) in ranks.iter().enumerate() {
            // SAFETY: the striped position is inside the tile, inside `rank_of`.
            unsafe { arch::store_shared_b32(buffers.rank_of + 4 * striped_position::<ITEMS>(j) as u32, rank) };
        }
    }
    // The rank of item `j`, as stored by this thread.
    let rank_of = |j: usize| {
        // SAFETY: as above; written by this thread.
        unsafe { arch::load_shared_b32(buffers.rank_of + 4 * striped_position::<ITEMS>(j) as u32) }
    };

    // Look-back, one thread per digit.
    let mut digit = arch::thread_idx_x() as usize;
    while digit < DIGITS {
        let count = sort.ranker().digit_count(digit as u32);
        // SAFETY: tile < tiles, digit < DIGITS: inside `status`.
        let own = unsafe { buffers.status.add(tile as usize * DIGITS + digit) };
        let mut exclusive = 0u32;
        if tile != first_tile {
            let mut predecessor = tile;
            while predecessor > first_tile {
                predecessor -= 1;
                // SAFETY: predecessor < tile: inside `status`.
                let word = unsafe { wait_published(buffers.status.add(predecessor as usize * DIGITS + digit)) };
                exclusive += word & VALUE_MASK;
                if word & INCLUSIVE != 0 {
                    break;
                }
            }
            // SAFETY: as above.
            unsafe { arch::store_relaxed_u32_gpu(own, INCLUSIVE | (exclusive + count)) };
        }
        // SAFETY: segment < count, digit < DIGITS: inside `offsets`; scatter_base has DIGITS slots.
        unsafe {
            let base = arch::load(buffers.offsets.add(segment as usize * DIGITS + digit)) + exclusive;
            let base = base.wrapping_sub(sort.ranker().digit_start(digit as u32));
            arch::store_shared_b32(buffers.scatter_base + 4 * digit as u32, base);
        }
        digit += arch::block_dim_x() as usize;
    }

    // The exchange's first barrier also orders the scatter bases.
    sort.exchange_by::<K, ITEMS, FULL>(&mut keys, rank_of, valid);
    // The digits of the items now held, four to a word, for the values' scatter.
    let mut digits = [0u32; 8];
    for (j, key) in keys.iter().enumerate() {
        if present(j) {
            let position = striped_position::<ITEMS>(j);
            let digit = place_digit.of(*key);
            digits[j / 4] |= digit << (8 * (j % 4));
            // SAFETY: digit < DIGITS; the destination is inside the segment (the bases are the
            // digit's positions in the segment's output).
            unsafe {
                let base = arch::load_shared_b32(buffers.scatter_base + 4 * digit);
                arch::store(buffers.keys_out.add(base.wrapping_add(position as u32) as usize), *key);
            }
        }
    }
    if PAIRS {
        // Values are loaded only now, so that they hold no registers through the ranking
        // (registers bound the blocks per multiprocessor). Staging them in shared memory with
        // `cp.async` as the tile starts measured no faster (H200).
        // The exchange ended with a barrier: its slots are free for the values.
        let exchange = sort.exchange_address();
        for j in 0..ITEMS {
            if present(j) {
                let rank = rank_of(j);
                let position = striped_position::<ITEMS>(j);
                // SAFETY: start + position inside the segment, inside the values; rank < valid,
                // inside the exchange slots (room for the tile as V).
                unsafe {
                    let value = arch::load(buffers.values_in.add(start + position));
                    arch::store_shared(exchange + rank * size_of::<V>() as u32, value);
                }
            }
        }
        arch::sync_threads();
        for j in 0..ITEMS {
            if present(j) {
                let position = striped_position::<ITEMS>(j);
                let digit = (digits[j / 4] >> (8 * (j % 4))) & 0xff;
                // SAFETY: position < valid, written before the barrier; the destination as for
                // the keys.
                unsafe {
                    let value = arch::load_shared::<V>(exchange + (position * size_of::<V>()) as u32);
                    let base = arch::load_shared_b32(buffers.scatter_base + 4 * digit);
                    arch::store(buffers.values_out.add(base.wrapping_add(position as u32) as usize), value);
                }
            }
        }
    }
}

/// Polls a tile's status word until it carries a flag.
///
/// # Safety
/// `word` valid.
#[inline(always)]
unsafe fn wait_published(word: *const u32) -> u32 {
    let mut backoff = 0;
    loop {
        // SAFETY: forwarded.
        let value = unsafe { arch::load_relaxed_u32_gpu(word) };
        if value & (AGGREGATE | INCLUSIVE) != 0 {
            return value;
        }
        if backoff > 0 {
            arch::nanosleep(backoff);
        }
        backoff = (backoff * 2).clamp(16, 256);
    }
}

/// Sorts each small segment of a list in one block: block `b` sorts items `pairs[2b]..pairs[2b+1]`
/// (at most `block threads * ITEMS` of them) of the inputs over `begin_bit..end_bit` into the same
/// range of the outputs.
///
/// # Safety
/// Inputs and outputs valid over every listed range, inputs not overlapping outputs; `ranges`
/// valid for `2 * grid` entries; a multiple of 32 threads (up to [`BLOCK_THREADS`]) with
/// [`block_shared_bytes_for`] its block size of shared memory.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn block_sort_segments_kernel<K: RadixKey, V: Element, const ITEMS: usize, const PAIRS: bool>(
    keys_in: *const K,
    keys_out: *mut K,
    values_in: *const V,
    values_out: *mut V,
    ranges: *const u32,
    begin_bit: u32,
    end_bit: u32,
    descending: u32,
) {
    let mut shared = DynamicShared::new();
    let sort = BlockRadixSort::<RADIX_BITS>::from_allocator::<K, V, ITEMS>(&mut shared);
    let block = arch::block_idx_x() as usize;
    // SAFETY: two entries per block (contract).
    let (start, end) =
        unsafe { (arch::load(ranges.add(2 * block)) as usize, arch::load(ranges.add(2 * block + 1)) as usize) };
    let valid = (end - start).min(arch::block_dim_x() as usize * ITEMS);
    let present = striped_present::<ITEMS>(valid);
    let mut keys = [K::zeroed(); ITEMS];
    let mut values = [V::zeroed(); ITEMS];
    for j in 0..ITEMS {
        let position = striped_position::<ITEMS>(j);
        if j < present {
            // SAFETY: inside the range, inside the inputs.
            unsafe {
                keys[j] = arch::load(keys_in.add(start + position));
                if PAIRS {
                    values[j] = arch::load(values_in.add(start + position));
                }
            }
        }
    }
    sort.sort::<K, V, ITEMS, PAIRS>(&mut keys, &mut values, valid, begin_bit, end_bit, descending != 0);
    for j in 0..ITEMS {
        let position = striped_position::<ITEMS>(j);
        if j < present {
            // SAFETY: inside the range, inside the outputs.
            unsafe {
                arch::store(keys_out.add(start + position), keys[j]);
                if PAIRS {
                    arch::store(values_out.add(start + position), values[j]);
                }
            }
        }
    }
}

/// `output[i] = input[indices[i]]` for elements of `units` units `U` each (values of sizes the sort
/// kernels are not instantiated for travel as indices, then are gathered).
///
/// # Safety
/// `indices` valid for `len` entries, each below the input's element count; `output` valid for
/// `len * units` units.
#[inline(always)]
pub unsafe fn gather_kernel<U: Element>(input: *const U, indices: *const u32, output: *mut U, len: u64, units: u32) {
    let total = len * units as u64;
    let mut i = (arch::block_idx_x() as u64 * arch::block_dim_x() as u64) + arch::thread_idx_x() as u64;
    let stride = arch::grid_dim_x() as u64 * arch::block_dim_x() as u64;
    while i < total {
        let (element, unit) = (i / units as u64, i % units as u64);
        // SAFETY: element < len; the index is below the input's count (contract).
        unsafe {
            let source = arch::load(indices.add(element as usize)) as u64 * units as u64 + unit;
            arch::store(output.add(i as usize), arch::load(input.add(source as usize)));
        }
        i += stride;
    }
}

/// `output[i] = i` (the indices that values of other sizes travel as).
///
/// # Safety
/// `output` valid for `len` entries.
#[inline(always)]
pub unsafe fn sequence_kernel(output: *mut u32, len: u64) {
    let mut i = (arch::block_idx_x() as u64 * arch::block_dim_x() as u64) + arch::thread_idx_x() as u64;
    let stride = arch::grid_dim_x() as u64 * arch::block_dim_x() as u64;
    while i < len {
        // SAFETY: i < len.
        unsafe { arch::store(output.add(i as usize), i as u32) };
        i += stride;
    }
}
