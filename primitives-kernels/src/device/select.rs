//! Stream compaction: select (keep the flagged items, in order), stable two-way partition (flagged
//! items first, then the others, each group in input order), and run-length encoding's run heads.
//!
//! The scheme is the device scan's (decoupled look-back over tiles, `device::scan`) applied to the
//! flag counts: a thread's exclusive count of flagged items, plus the tile's prefix, is where its
//! flagged items go. The staged kernel ([`staged_select_kernel`], for values) copies the tile into
//! shared memory, counts, scans the counts, then each warp moves its share of the tile straight to
//! the output, warp-striped, ranking the items of each step with one ballot. The register kernel
//! ([`select_kernel`], for run heads' indices) compacts in shared memory and copies out.
//!
//! A partition needs the total number of flagged items to place the others, so it takes two
//! passes: [`tile_offsets_kernel`] reads only the flags (or the items, for a comparison),
//! counts each tile's flagged items, scans those counts with a look-back over blocks of eight tiles
//! and leaves every tile's offset and the total on the device; the placement pass then moves each
//! tile with no look-back at all, so it runs at the pace of its loads and stores rather than of the
//! L2 round trips of a look-back. Nothing returns to the host in between. Select on large inputs
//! takes the same two passes (one more byte read per flag, no look-back to wait for); on small
//! ones, one pass with look-back, which saves a launch.

use crate::arch;
use crate::block::{BlockScan, DynamicShared};
use crate::device::scan::{swizzled, BLOCK_THREADS, EIGHT_VECTOR_ROWS as STAGED_ROW_VECTORS, TEMP_HEADER};
use crate::device::tile_status::{take_tile, tile_prefix, PackedTileStatus, LOOK_BACK_DEPTH};
use crate::ops::{Element, Sum};
use crate::thread;
use crate::warp;

/// Decides, item by item, what is selected.
pub trait FlagSource<T>: Copy {
    /// Whether item `index`, of value `item`, is selected.
    ///
    /// # Safety
    /// `index` below the input length.
    unsafe fn flag(&self, index: usize, item: T) -> bool;

    /// Whether the flags are a byte array ([`FlagSource::flag_bytes`]) that the staged kernels copy
    /// into shared memory, rather than computed from the items. A constant, so that the kernels'
    /// loops carry no test of it.
    const FLAG_ARRAY: bool = false;

    /// The flag bytes (non-zero: selected) where [`FlagSource::FLAG_ARRAY`]; null otherwise.
    #[inline(always)]
    fn flag_bytes(&self) -> *const u8 {
        core::ptr::null()
    }
}

/// Selected where a byte array is non-zero.
#[derive(Clone, Copy)]
pub struct Flagged {
    pub flags: *const u8,
}

impl<T> FlagSource<T> for Flagged {
    const FLAG_ARRAY: bool = true;

    #[inline(always)]
    unsafe fn flag(&self, index: usize, _item: T) -> bool {
        // SAFETY: the flag array is as long as the input (host-checked); index in range (caller).
        unsafe { arch::load(self.flags.add(index)) != 0 }
    }

    #[inline(always)]
    fn flag_bytes(&self) -> *const u8 {
        self.flags
    }
}

/// Segment heads from flag bytes: item 0 and every item whose flag is non-zero.
#[derive(Clone, Copy)]
pub struct HeadFlags {
    pub flags: *const u8,
}

impl<T> FlagSource<T> for HeadFlags {
    #[inline(always)]
    unsafe fn flag(&self, index: usize, _item: T) -> bool {
        // SAFETY: index in range (caller).
        index == 0 || unsafe { arch::load(self.flags.add(index)) != 0 }
    }
}

/// `item < threshold` and the other comparisons, by code (see [`Compare::new`]).
#[derive(Clone, Copy)]
pub struct Compare<T> {
    comparison: u32,
    threshold: T,
}

/// Comparison codes of [`Compare`].
pub mod comparison {
    pub const LESS: u32 = 0;
    pub const LESS_EQUAL: u32 = 1;
    pub const GREATER: u32 = 2;
    pub const GREATER_EQUAL: u32 = 3;
    pub const EQUAL: u32 = 4;
    pub const NOT_EQUAL: u32 = 5;
}

impl<T: Element> Compare<T> {
    /// `threshold_bits` holds the threshold's bytes in its low bytes (elements of up to 8 bytes).
    #[inline(always)]
    pub fn new(comparison: u32, threshold_bits: u64) -> Self {
        let bytes = threshold_bits.to_le_bytes();
        Self { comparison, threshold: bytemuck::pod_read_unaligned(&bytes[..size_of::<T>()]) }
    }
}

impl<T: Element + PartialOrd> FlagSource<T> for Compare<T> {
    #[inline(always)]
    unsafe fn flag(&self, _index: usize, item: T) -> bool {
        match self.comparison {
            comparison::LESS => item < self.threshold,
            comparison::LESS_EQUAL => item <= self.threshold,
            comparison::GREATER => item > self.threshold,
            comparison::GREATER_EQUAL => item >= self.threshold,
            comparison::EQUAL => item == self.threshold,
            _ => item != self.threshold,
        }
    }
}

/// Selected where an item differs (bitwise) from the one before it: the heads of runs of equal items.
#[derive(Clone, Copy)]
pub struct RunHeads<T> {
    pub input: *const T,
}

impl<T: Element> FlagSource<T> for RunHeads<T> {
    #[inline(always)]
    unsafe fn flag(&self, index: usize, item: T) -> bool {
        if index == 0 {
            return true;
        }
        // SAFETY: 0 < index < len.
        let previous = unsafe { arch::load(self.input.add(index - 1)) };
        !thread::bitwise_eq(previous, item)
    }
}

/// What a selected item contributes to the output.
pub trait SelectOutput<T>: Copy {
    type Out: Element;
    fn out(index: usize, item: T) -> Self::Out;
}

/// The item itself.
#[derive(Clone, Copy)]
pub struct Values;
impl<T: Element> SelectOutput<T> for Values {
    type Out = T;
    #[inline(always)]
    fn out(_index: usize, item: T) -> T {
        item
    }
}

/// The item's index (as `u32`).
#[derive(Clone, Copy)]
pub struct Indices;
impl<T: Element> SelectOutput<T> for Indices {
    type Out = u32;
    #[inline(always)]
    fn out(index: usize, _item: T) -> u32 {
        index as u32
    }
}

/// Dynamic shared memory of the select kernel, in bytes, for tiles of `ITEMS` per thread and outputs
/// of `out_bytes` bytes.
pub const fn shared_bytes(items: usize, out_bytes: usize) -> usize {
    BlockScan::<u32>::SHARED_BYTES + 16 + 2 * 4 + 16 + BLOCK_THREADS as usize * items * out_bytes
}

/// Bytes of temporary storage for `tiles` tiles (header and packed `u32` tile status).
pub const fn temp_bytes(tiles: usize) -> usize {
    TEMP_HEADER + tiles * 8
}

/// The select kernel's body with the tile in registers, for outputs other than the items themselves
/// (run heads' indices): the selected items' outputs go to `output[0..k]` in input order and the
/// last tile writes `k` to `*count`.
///
/// Launch `tiles = ceil(len / (BLOCK_THREADS * ITEMS))` blocks of [`BLOCK_THREADS`] threads with
/// [`shared_bytes`] bytes of dynamic shared memory.
///
/// # Safety
/// `input` valid for `len` reads (`len < 2^32`), `flags` valid for it; `output` valid for `len`
/// writes (not overlapping the input); `count` valid; `temp` as for the device scan
/// (`device::scan::scan_kernel`), with [`temp_bytes`]`(tiles)` bytes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn select_kernel<T: Element, F: FlagSource<T>, O: SelectOutput<T>, const ITEMS: usize>(
    input: *const T,
    flags: F,
    len: u64,
    output: *mut O::Out,
    count: *mut u64,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
) {
    let mut shared = DynamicShared::new();
    let block_scan = BlockScan::<u32>::from_allocator(&mut shared);
    let tile_slot = shared.take::<u32>(1);
    let prefix_slot = shared.take::<u32>(1);
    let compacted = shared.take::<O::Out>(BLOCK_THREADS as usize * ITEMS);
    let tid = arch::thread_idx_x() as usize;
    let threads = arch::block_dim_x() as usize;
    // SAFETY: temp's first word is the tile counter; the slot is shared.
    let tile = unsafe { take_tile(temp.cast::<u32>(), tiles, tile_slot) };

    let tile_items = threads * ITEMS;
    let tile_start = tile as usize * tile_items;
    let tile_valid = (len as usize - tile_start).min(tile_items);
    let thread_offset = tid * ITEMS;
    let thread_valid = tile_valid.saturating_sub(thread_offset).min(ITEMS);
    let first = tile_start + thread_offset.min(tile_valid);

    let items: [T; ITEMS] = if tile_valid == tile_items {
        // SAFETY: a full tile: the thread's items are inside the input.
        unsafe { thread::load_blocked::<T, ITEMS>(input.add(first)) }
    } else {
        // SAFETY: only the valid items are read.
        unsafe { thread::load_blocked_partial::<T, ITEMS>(input.add(first), thread_valid, T::zeroed()) }
    };
    let mut selected = [false; ITEMS];
    let mut thread_count = 0u32;
    for k in 0..ITEMS {
        if k < thread_valid {
            // SAFETY: first + k < len.
            selected[k] = unsafe { flags.flag(first + k, items[k]) };
            thread_count += selected[k] as u32;
        }
    }

    // SAFETY: tile < tiles; temp as the kernel's contract says; the slot is shared.
    let (rank_in_tile, tile_count, tile_prefix_count) =
        unsafe { scan_counts_looking_back(&block_scan, thread_count, temp, epoch, tile, prefix_slot) };
    let tile_prefix_count = tile_prefix_count as usize;

    // Compact the tile's selected items in shared memory, at their rank among them.
    let mut rank = rank_in_tile as usize;
    for k in 0..ITEMS {
        if k < thread_valid {
            let out = O::out(first + k, items[k]);
            if selected[k] {
                // SAFETY: rank < tile_count <= tile_items.
                unsafe { arch::store(compacted.add(rank), out) };
                rank += 1;
            }
        }
    }
    arch::sync_threads();

    let mut j = tid;
    while j < tile_count as usize {
        // SAFETY: j < tile_count <= tile_items; the destination is below the selected count <= len.
        unsafe { arch::store(output.add(tile_prefix_count + j), arch::load(compacted.add(j))) };
        j += threads;
    }
    if tile == tiles - 1 && tid == 0 {
        // SAFETY: count valid.
        unsafe { arch::store(count, (tile_prefix_count + tile_count as usize) as u64) };
    }
}

/// The block's exclusive scan of the threads' selected counts with the tile's decoupled look-back as
/// block prefix: `(the thread's count before it within the tile, the tile's count, the count before
/// the tile)`.
///
/// # Safety
/// `tile` below the tile count of `temp`'s status (header, then packed `u32` status, as
/// [`temp_bytes`] lays out); `prefix_slot` one `u32` of shared memory; called by the whole block.
#[inline(always)]
unsafe fn scan_counts_looking_back(
    block_scan: &BlockScan<u32>,
    count: u32,
    temp: *mut u8,
    epoch: u32,
    tile: u32,
    prefix_slot: *mut u32,
) -> (u32, u32, u32) {
    // SAFETY: the tile status follows the header in temp.
    let status = unsafe { PackedTileStatus::<u32>::new(temp.add(TEMP_HEADER), epoch) };
    let (exclusive, tile_count) = block_scan.exclusive_scan_with_prefix::<Sum>(count, |aggregate| {
        // SAFETY: tile < tiles; warp 0's 32 lanes run the callback.
        let prefix = unsafe { tile_prefix::<u32, Sum, _, LOOK_BACK_DEPTH>(&status, tile, 0, aggregate) };
        if arch::lane_id() == 0 {
            // SAFETY: shared slot; read after the block scan's closing barrier.
            unsafe { arch::store(prefix_slot, prefix) };
        }
        prefix
    });
    // SAFETY: written in the callback, before the block scan's last barrier.
    let prefix = unsafe { arch::load(prefix_slot) };
    (exclusive - prefix, tile_count, prefix)
}

/// Threads per block of the staged select kernel.
pub const STAGED_BLOCK_THREADS: u32 = 256;

/// Elements per tile of the staged select kernel for `T`.
pub const fn staged_tile_items<T>() -> usize {
    STAGED_BLOCK_THREADS as usize * STAGED_ROW_VECTORS * 16 / size_of::<T>()
}

/// Dynamic shared memory of the staged select kernel for `T`: the items, their flag bytes, the
/// block scan and two slots.
pub const fn staged_shared_bytes<T>() -> usize {
    STAGED_BLOCK_THREADS as usize * STAGED_ROW_VECTORS * 16
        + staged_tile_items::<T>().next_multiple_of(16)
        + BlockScan::<u32>::SHARED_BYTES
        + 16
}

/// Select or partition of whole values with the tile staged in shared memory, as the device scan
/// does ([`crate::device::scan::staged_scan_kernel`]): the items (128 bytes a thread) and, for a flag
/// array, the tile's flag bytes are copied in with `cp.async`, so nothing of the tile sits in
/// registers while the block waits for its look-back. Then each thread counts its selected items,
/// the block scans the counts (with the look-back as block prefix, in one pass), and each warp moves
/// its 32 * `ITEMS` items to the output warp-striped: in each step every lane takes one item, one
/// ballot ranks the step's selected items, and the selected (and, for a partition, the other)
/// lanes of the step write one run of consecutive places each.
///
/// Select (`PARTITION = false`): the selected items go to `output[0..k]` in input order and the last
/// tile writes `k` to `*count`, as [`select_kernel`] with [`Values`] does. Partition: the selected
/// items go to `output[0..k]` and the others to `output[k..len]`, each in input order.
///
/// `two_pass` (always, for a partition): the placement pass after [`tile_offsets_kernel`], which
/// left each tile's offset in `temp` and `k` in `*count`. Tile `i` is block `i` (no look-back, so no
/// ticket either). Otherwise the tiles look back for their offsets: one launch, which pays off on
/// small inputs, where a launch costs more than the look-back's latency.
///
/// Launch `ceil(len /` [`staged_tile_items`]`)` blocks of [`STAGED_BLOCK_THREADS`] threads with
/// [`staged_shared_bytes`] of dynamic shared memory. `V` must be `16 / size_of::<T>()` (elements of
/// 4, 8 or 16 bytes) and `ITEMS` `8 * V`.
///
/// # Safety
/// As for [`select_kernel`]; for two passes, `temp` and `*count` as the offsets pass left them.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn staged_select_kernel<
    T: Element,
    F: FlagSource<T>,
    const V: usize,
    const ITEMS: usize,
    const PARTITION: bool,
>(
    input: *const T,
    flags: F,
    len: u64,
    output: *mut T,
    count: *mut u64,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
    two_pass: bool,
) {
    const ROW: usize = STAGED_ROW_VECTORS;
    const { assert!(V * size_of::<T>() == 16 && V <= 4 && ITEMS == ROW * V, "elements of 4, 8 or 16 bytes") };
    // A partition always follows the offsets pass (it needs the total before placing the others).
    let two_pass = two_pass || PARTITION;
    let block = arch::block_dim_x() as usize;
    let mut shared = DynamicShared::new();
    let stage = shared.take::<[u32; 4]>(block * ROW);
    let flag_stage = shared.take::<[u32; 4]>((block * ITEMS).div_ceil(16));
    let block_scan = BlockScan::<u32>::from_allocator(&mut shared);
    let tile_slot = shared.take::<u32>(1);
    let prefix_slot = shared.take::<u32>(1);
    let tid = arch::thread_idx_x() as usize;
    let tile = if two_pass {
        // The offsets pass placed every tile already: no look-back, any order.
        arch::block_idx_x()
    } else {
        // SAFETY: temp's first word is the tile counter; the slot is shared.
        unsafe { take_tile(temp.cast::<u32>(), tiles, tile_slot) }
    };

    let tile_items = block * ITEMS;
    let tile_start = tile as usize * tile_items;
    let tile_valid = (len as usize - tile_start).min(tile_items);
    let flag_bytes = flags.flag_bytes();
    let stage_address = arch::shared_address(stage);
    let flag_address = arch::shared_address(flag_stage);
    let element = |e: usize| -> *mut T {
        // SAFETY: e < tile_items: inside the stage.
        unsafe { stage.add(swizzled::<ROW>(e / V)).cast::<T>().add(e % V) }
    };
    let vectors = tile_valid == tile_items
        && (input as usize).is_multiple_of(16)
        && (flag_bytes as usize).is_multiple_of(16)
        && (output as usize).is_multiple_of(16);
    if vectors {
        // SAFETY: a full tile: its item vectors (and flag vectors) are inside the input (flags).
        unsafe {
            let source = input.add(tile_start).cast::<[u32; 4]>();
            for i in 0..ROW {
                let v = tid + i * block;
                arch::cp_async_16(stage_address + (swizzled::<ROW>(v) * 16) as u32, source.add(v));
            }
            if F::FLAG_ARRAY {
                let source = flag_bytes.add(tile_start).cast::<[u32; 4]>();
                let mut v = tid;
                while v < tile_items / 16 {
                    arch::cp_async_16(flag_address + (v * 16) as u32, source.add(v));
                    v += block;
                }
            }
        }
        arch::cp_async_wait_all();
    } else {
        let mut e = tid;
        while e < tile_items {
            let inside = e < tile_valid;
            // SAFETY: only items inside the input are read; e inside the stages.
            unsafe {
                let value = if inside { arch::load(input.add(tile_start + e)) } else { T::zeroed() };
                arch::store(element(e), value);
                if F::FLAG_ARRAY {
                    let flag = if inside { arch::load(flag_bytes.add(tile_start + e)) } else { 0 };
                    arch::store(flag_stage.cast::<u8>().add(e), flag);
                }
            }
            e += block;
        }
    }
    arch::sync_threads();

    let thread_offset = tid * ITEMS;
    let thread_valid = tile_valid.saturating_sub(thread_offset).min(ITEMS);
    let first = tile_start + thread_offset;
    let row_address = |j: usize| stage_address + (swizzled::<ROW>(tid * ROW + j) * 16) as u32;
    let thread_count = if F::FLAG_ARRAY {
        // The thread's ITEMS flag bytes, as 16-byte vectors or (8 flags) 4-byte words; bytes past
        // the input are zero in the stage.
        let mut words = [0u32; 8];
        if ITEMS >= 16 {
            for h in 0..ITEMS / 16 {
                // SAFETY: the thread's flag bytes, inside the flag stage, 16-byte aligned.
                let vector = unsafe { arch::load_shared_v4(flag_address + (thread_offset + 16 * h) as u32) };
                words[4 * h..4 * h + 4].copy_from_slice(&vector);
            }
        } else {
            for (w, word) in words.iter_mut().enumerate().take(ITEMS / 4) {
                // SAFETY: as above, 4-byte aligned.
                *word = unsafe { arch::load(flag_stage.cast::<u32>().add(thread_offset / 4 + w)) };
            }
        }
        let mut count = 0;
        for &word in &words {
            count += non_zero_bytes(word).count_ones();
        }
        count
    } else {
        let mut count = 0;
        for j in 0..ROW {
            let mut items = [T::zeroed(); V];
            // SAFETY: the thread's own row.
            thread::unpack_vector::<T, V>(unsafe { arch::load_shared_v4(row_address(j)) }, 0, &mut items);
            for (e, &item) in items.iter().enumerate() {
                let k = j * V + e;
                // SAFETY: first + k < len when k < thread_valid.
                count += (k < thread_valid && unsafe { flags.flag(first + k, item) }) as u32;
            }
        }
        count
    };

    let (rank_in_tile, tile_count, tile_prefix_count) = if two_pass {
        let (exclusive, tile_count) = block_scan.exclusive_scan::<Sum>(thread_count);
        // SAFETY: the offsets pass wrote tile `tile`'s offset at `offsets_at` in temp.
        let prefix = unsafe { arch::load(temp.add(offsets_at(tiles as usize)).cast::<u32>().add(tile as usize)) };
        (exclusive, tile_count, prefix as usize)
    } else {
        // SAFETY: tile < tiles; temp as the kernel's contract says; the slot is shared.
        let (rank, tile_count, prefix) =
            unsafe { scan_counts_looking_back(&block_scan, thread_count, temp, epoch, tile, prefix_slot) };
        (rank, tile_count, prefix as usize)
    };

    // Each warp moves its own 32 * ITEMS items straight to the output, warp-striped: in step k lane
    // l takes item k * 32 + l of the warp's chunk, so the selected lanes of a step write consecutive
    // places (and so do the others, for a partition), ranked by one ballot. Reading the stage in
    // this order has no bank conflicts, and no second pass through shared memory is needed.
    // Indices within the input fit in u32 (len < 2^32): 32-bit arithmetic halves the instructions
    // of this loop, which bounds the kernel's speed.
    let lane = arch::lane_id();
    let chunk = (tid as u32 - lane) * ITEMS as u32;
    let warp_rank = arch::shfl_idx_sync(arch::FULL_MASK, rank_in_tile, 0);
    // SAFETY: for a partition (two passes) `count` holds the number of selected items (the offsets pass).
    let total_selected = if PARTITION { (unsafe { arch::load(count) }) as u32 } else { 0 };
    let tile_prefix = tile_prefix_count as u32;
    // Where the warp's next selected item and (partition) next other item go.
    let mut selected_at = tile_prefix + warp_rank;
    let mut other_at = total_selected + (tile_start as u32 - tile_prefix) + (chunk - warp_rank);
    let lanes_below = (1u32 << lane) - 1;
    let tile_valid = tile_valid as u32;
    for k in 0..ITEMS as u32 {
        let e = chunk + k * 32 + lane;
        let valid = e < tile_valid;
        let vector = swizzled::<ROW>((e / V as u32) as usize) as u32;
        // SAFETY: e < tile_items: inside the stage, aligned to the element.
        let item: T =
            unsafe { arch::load_shared(stage_address + vector * 16 + (e % V as u32) * size_of::<T>() as u32) };
        let flag = valid
            && if !F::FLAG_ARRAY {
                // SAFETY: tile_start + e < len.
                unsafe { flags.flag(tile_start + e as usize, item) }
            } else {
                // SAFETY: inside the flag stage.
                unsafe { arch::load_shared_u8(flag_address + e) != 0 }
            };
        let ballot = arch::ballot_sync(arch::FULL_MASK, flag);
        let rank = (ballot & lanes_below).count_ones();
        // One store a lane, selected or not: the selected lanes of a step write one run of places,
        // the others (partition) another.
        let destination = if flag { selected_at + rank } else { other_at + lane - rank };
        if flag || (PARTITION && valid) {
            // SAFETY: below the selected count for a selected item, in count..len for the others.
            unsafe { arch::store(output.add(destination as usize), item) };
        }
        let selected = ballot.count_ones();
        selected_at += selected;
        other_at += 32 - selected;
    }
    if !two_pass && tile == tiles - 1 && tid == 0 {
        // SAFETY: count valid.
        unsafe { arch::store(count, (tile_prefix_count + tile_count as usize) as u64) };
    }
}

/// Main (placement) tiles counted by one block of the offsets pass: one per warp.
pub const OFFSETS_TILES_PER_BLOCK: usize = 8;
/// Threads per block of the offsets pass.
pub const OFFSETS_BLOCK_THREADS: u32 = OFFSETS_TILES_PER_BLOCK as u32 * arch::WARP_SIZE;

/// Dynamic shared memory of the offsets pass.
pub const OFFSETS_SHARED_BYTES: usize = 64;

/// Blocks of the offsets pass for `tiles` placement tiles.
pub const fn offsets_blocks(tiles: usize) -> usize {
    tiles.div_ceil(OFFSETS_TILES_PER_BLOCK)
}

/// Where, in the temporary storage of a two-pass select or partition over `tiles` tiles, the tiles'
/// offsets begin:
/// after the header and the offsets pass's tile status.
pub const fn offsets_at(tiles: usize) -> usize {
    TEMP_HEADER + offsets_blocks(tiles) * 8
}

/// Bytes of temporary storage of a two-pass select or partition over `tiles` tiles.
pub const fn two_pass_temp_bytes(tiles: usize) -> usize {
    offsets_at(tiles) + tiles * 4
}

/// Non-zero bytes among the four of `word`: the high bit of each byte of `(b & 0x7f) + 0x7f | b` is
/// set exactly when the byte is non-zero (no carry crosses a byte).
#[inline(always)]
fn non_zero_bytes(word: u32) -> u32 {
    (((word & 0x7f7f_7f7f) + 0x7f7f_7f7f) | word) & 0x8080_8080
}

/// Selected items of one placement tile (`start..start + valid`), counted by the 32 lanes of a warp;
/// the result is in every lane's share, to be summed over the warp.
///
/// # Safety
/// `start + valid <= len`; `valid <= TILE`.
#[inline(always)]
unsafe fn count_tile<T: Element, F: FlagSource<T>, const V: usize, const TILE: usize>(
    input: *const T,
    flags: F,
    start: usize,
    valid: usize,
) -> u32 {
    const BATCH: usize = 4;
    let lane = arch::lane_id() as usize;
    let flag_bytes = flags.flag_bytes();
    let mut count = 0u32;
    if F::FLAG_ARRAY && valid == TILE && (flag_bytes as usize).is_multiple_of(16) {
        // 16 flag bytes a load; TILE / 16 is a multiple of 32 * BATCH (tiles of 2048 items or more).
        let vectors = flag_bytes.wrapping_add(start).cast::<[u32; 4]>();
        let mut v = lane;
        while v < TILE / 16 {
            let mut loaded = [[0u32; 4]; BATCH];
            for (b, words) in loaded.iter_mut().enumerate() {
                // SAFETY: a full tile: vector v + 32 b lies inside the flags (TILE / 16 vectors).
                *words = unsafe { arch::load_global_nc_v4(vectors.add(v + 32 * b)) };
            }
            // Index loops: rustc's by-value array iterators leave the arrays in local memory here.
            for words in &loaded {
                for &word in words {
                    count += non_zero_bytes(word).count_ones();
                }
            }
            v += 32 * BATCH;
        }
    } else if !F::FLAG_ARRAY && valid == TILE && (input as usize).is_multiple_of(16) && V * size_of::<T>() == 16 {
        // Flags computed from the items: 16 bytes of items a load.
        let vectors = input.wrapping_add(start).cast::<[u32; 4]>();
        let mut v = lane;
        while v < TILE / V {
            let mut loaded = [[0u32; 4]; BATCH];
            for (b, words) in loaded.iter_mut().enumerate() {
                // SAFETY: as above, TILE / V vectors of items.
                *words = unsafe { arch::load_global_nc_v4(vectors.add(v + 32 * b)) };
            }
            for (b, &words) in loaded.iter().enumerate() {
                let mut items = [T::zeroed(); V];
                thread::unpack_vector::<T, V>(words, 0, &mut items);
                for (e, &item) in items.iter().enumerate() {
                    // SAFETY: the item's index is inside the input.
                    count += unsafe { flags.flag(start + (v + 32 * b) * V + e, item) } as u32;
                }
            }
            v += 32 * BATCH;
        }
    } else {
        let mut i = lane;
        while i < valid {
            // SAFETY: start + i < start + valid <= len.
            count += unsafe { flags.flag(start + i, arch::load(input.add(start + i))) } as u32;
            i += 32;
        }
    }
    count
}

/// The first pass of a partition or two-pass select: how many items each placement tile of `TILE`
/// items selects before it.
/// Each warp counts one tile; the block scans its tiles' counts with a decoupled look-back over the
/// blocks as block prefix (blocks of [`OFFSETS_TILES_PER_BLOCK`] tiles keep the look-backs few),
/// and writes each tile's exclusive count (`u32`) at [`offsets_at`] in `temp`; the last block writes
/// the total to `*count`. The placement pass ([`staged_select_kernel`] with `two_pass`) then needs
/// no look-back of its own.
///
/// Launch [`offsets_blocks`]`(tiles)` blocks of [`OFFSETS_BLOCK_THREADS`] threads with
/// [`OFFSETS_SHARED_BYTES`] of dynamic shared memory. `V` is `16 / size_of::<T>()` where that divides (else 1).
///
/// # Safety
/// `input` valid for `len` reads (`len < 2^32`), the flags for the same; `count` valid; `temp` as
/// for the device scan, with [`two_pass_temp_bytes`]`(tiles)` bytes, `tiles = ceil(len / TILE)`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn tile_offsets_kernel<T: Element, F: FlagSource<T>, const V: usize, const TILE: usize>(
    input: *const T,
    flags: F,
    len: u64,
    count: *mut u64,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
) {
    const { assert!(TILE.is_multiple_of(16 * 32 * 4) && OFFSETS_TILES_PER_BLOCK <= 32, "tiles of whole batches") };
    let mut shared = DynamicShared::new();
    let block_slot = shared.take::<u32>(1);
    let warp_counts = shared.take::<u32>(OFFSETS_TILES_PER_BLOCK);
    let blocks = offsets_blocks(tiles as usize) as u32;
    // SAFETY: temp's first word is the tile counter; the slot is shared.
    let block = unsafe { take_tile(temp.cast::<u32>(), blocks, block_slot) };
    let warp = arch::warp_idx() as usize;
    let tile = block as usize * OFFSETS_TILES_PER_BLOCK + warp;
    let len = len as usize;
    let mut tile_count = 0u32;
    if tile < tiles as usize {
        let start = tile * TILE;
        // SAFETY: start < len; the tile's valid items are inside the input.
        let lane_count = unsafe { count_tile::<T, F, V, TILE>(input, flags, start, (len - start).min(TILE)) };
        tile_count = warp::warp_reduce::<u32, Sum>(lane_count);
    }
    if arch::lane_id() == 0 {
        // SAFETY: warp < OFFSETS_TILES_PER_BLOCK: inside the shared array.
        unsafe { arch::store(warp_counts.add(warp), tile_count) };
    }
    arch::sync_threads();
    if warp == 0 {
        let lane = arch::lane_id() as usize;
        let own = if lane < OFFSETS_TILES_PER_BLOCK {
            // SAFETY: written by warp `lane` before the barrier.
            unsafe { arch::load(warp_counts.add(lane)) }
        } else {
            0
        };
        let (exclusive, block_total) = warp::warp_exclusive_scan::<u32, Sum>(own);
        // SAFETY: the tile status follows the header in temp; block < blocks; all 32 lanes call.
        let prefix = unsafe {
            let status = PackedTileStatus::<u32>::new(temp.add(TEMP_HEADER), epoch);
            tile_prefix::<u32, Sum, _, LOOK_BACK_DEPTH>(&status, block, 0, block_total)
        };
        let tile = block as usize * OFFSETS_TILES_PER_BLOCK + lane;
        if lane < OFFSETS_TILES_PER_BLOCK && tile < tiles as usize {
            // SAFETY: the offsets follow the status in temp, one per tile.
            unsafe { arch::store(temp.add(offsets_at(tiles as usize)).cast::<u32>().add(tile), prefix + exclusive) };
        }
        if block == blocks - 1 && lane == 0 {
            // SAFETY: count valid.
            unsafe { arch::store(count, (prefix + block_total) as u64) };
        }
    }
}

/// The run-length kernel's body, after a select of run-head indices: for run `r < *runs`,
/// `unique[r] = input[heads[r]]` and `lengths[r] = heads[r + 1] - heads[r]` (the last run ends at
/// `len`). Any grid; threads past the runs do nothing.
///
/// # Safety
/// `input` valid for `len` reads; `heads` holds `*runs` ascending indices below `len`; `unique` and
/// `lengths` valid for `*runs` writes.
#[inline(always)]
pub unsafe fn run_lengths_kernel<T: Element>(
    input: *const T,
    len: u64,
    heads: *const u32,
    runs: *const u64,
    unique: *mut T,
    lengths: *mut u32,
) {
    // SAFETY: runs valid.
    let runs = unsafe { arch::load(runs) } as usize;
    let stride = arch::block_dim_x() as usize * arch::grid_dim_x() as usize;
    let mut r = arch::block_idx_x() as usize * arch::block_dim_x() as usize + arch::thread_idx_x() as usize;
    while r < runs {
        // SAFETY: r < runs; heads[r] < len.
        unsafe {
            let head = arch::load(heads.add(r)) as usize;
            let end = if r + 1 < runs { arch::load(heads.add(r + 1)) as usize } else { len as usize };
            arch::store(unique.add(r), arch::load(input.add(head)));
            arch::store(lengths.add(r), (end - head) as u32);
        }
        r += stride;
    }
}
