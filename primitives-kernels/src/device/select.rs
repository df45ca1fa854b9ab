//! Stream compaction in one pass: select (keep the flagged items, in order), stable two-way partition
//! (flagged items first, then the others, each group in input order), and counting.
//!
//! The pass is the device scan's (decoupled look-back over tiles, `device::scan`) applied to the
//! flag counts: a thread's exclusive count of flagged items, plus the tile's prefix, is where its
//! flagged items go. Each tile first compacts its items in shared memory (flagged first, then, for a
//! partition, the others), then copies them out with coalesced stores. A partition needs the total
//! number of flagged items to place the others; a counting kernel (`count_kernel`) runs first and
//! leaves it on the device, so nothing returns to the host in between.

use crate::arch;
use crate::block::{BlockReduce, BlockScan, DynamicShared};
use crate::device::scan::{swizzled, BLOCK_THREADS, STAGED_ROW_VECTORS, TEMP_HEADER};
use crate::device::tile_status::{take_tile, tile_prefix, PackedTileStatus, LOOK_BACK_DEPTH};
use crate::ops::{Element, Sum};
use crate::thread;

/// Decides, item by item, what is selected.
pub trait FlagSource<T>: Copy {
    /// Whether item `index`, of value `item`, is selected.
    ///
    /// # Safety
    /// `index` below the input length.
    unsafe fn flag(&self, index: usize, item: T) -> bool;

    /// The flag bytes (non-zero: selected), where the flags are an array the staged kernel can copy
    /// into shared memory; null where they are computed from the items.
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

/// The select/partition kernel's body. Select (`PARTITION = false`): the selected items' outputs go to
/// `output[0..k]` in input order and the last tile writes `k` to `*count`. Partition: the `k =
/// *count` selected items (counted before the launch by `count_kernel`) go to `output[0..k]` and the
/// others to `output[k..len]`, each in input order.
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
pub unsafe fn select_kernel<
    T: Element,
    F: FlagSource<T>,
    O: SelectOutput<T>,
    const ITEMS: usize,
    const PARTITION: bool,
>(
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

    // SAFETY: the tile status follows the header in temp.
    let status = unsafe { PackedTileStatus::<u32>::new(temp.add(TEMP_HEADER), epoch) };
    let (thread_exclusive, tile_count) = block_scan.exclusive_scan_with_prefix::<Sum>(thread_count, |aggregate| {
        // SAFETY: tile < tiles; warp 0's 32 lanes run the callback.
        let prefix = unsafe { tile_prefix::<u32, Sum, _, LOOK_BACK_DEPTH>(&status, tile, 0, aggregate) };
        if arch::lane_id() == 0 {
            // SAFETY: shared slot; read after the block scan's closing barrier.
            unsafe { arch::store(prefix_slot, prefix) };
        }
        prefix
    });
    // SAFETY: written in the callback, before the block scan's last barrier.
    let tile_prefix_count = unsafe { arch::load(prefix_slot) } as usize;

    // Compact the tile in shared memory: selected items at their rank among the tile's selected
    // items; for a partition, the others after all of them at their rank among the others.
    let mut rank = thread_exclusive as usize - tile_prefix_count;
    for k in 0..ITEMS {
        if k < thread_valid {
            let out = O::out(first + k, items[k]);
            if selected[k] {
                // SAFETY: rank < tile_count <= tile_items.
                unsafe { arch::store(compacted.add(rank), out) };
                rank += 1;
            } else if PARTITION {
                // Items before this one in the tile, minus the selected ones among them.
                let other_rank = thread_offset + k - rank;
                // SAFETY: tile_count + other_rank < tile_valid.
                unsafe { arch::store(compacted.add(tile_count as usize + other_rank), out) };
            }
        }
    }
    arch::sync_threads();

    let kept = if PARTITION { tile_valid } else { tile_count as usize };
    // SAFETY: for a partition `count` holds the number of selected items, written before the launch.
    let total_selected = if PARTITION { (unsafe { arch::load(count) }) as usize } else { 0 };
    let mut j = tid;
    while j < kept {
        let destination = if j < tile_count as usize {
            tile_prefix_count + j
        } else {
            // The others before this tile: items before it minus the selected ones.
            total_selected + (tile_start - tile_prefix_count) + (j - tile_count as usize)
        };
        // SAFETY: j < kept <= tile_items; destination < len.
        unsafe { arch::store(output.add(destination), arch::load(compacted.add(j))) };
        j += threads;
    }
    if !PARTITION && tile == tiles - 1 && tid == 0 {
        // SAFETY: count valid.
        unsafe { arch::store(count, (tile_prefix_count + tile_count as usize) as u64) };
    }
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
/// the block scans the counts with the look-back as block prefix, each thread moves its items to
/// their compacted places in the same shared memory, and the block copies them out.
///
/// Same contract and results as [`select_kernel`] with [`Values`], with [`staged_tile_items`] items
/// per tile, [`STAGED_BLOCK_THREADS`] threads and [`staged_shared_bytes`] of dynamic shared memory.
/// `V` must be `16 / size_of::<T>()` (elements of 4, 8 or 16 bytes) and `ITEMS` `8 * V`.
///
/// # Safety
/// As for [`select_kernel`].
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
) {
    const ROW: usize = STAGED_ROW_VECTORS;
    const { assert!(V * size_of::<T>() == 16 && V <= 4 && ITEMS == ROW * V, "elements of 4, 8 or 16 bytes") };
    let block = arch::block_dim_x() as usize;
    let mut shared = DynamicShared::new();
    let stage = shared.take::<[u32; 4]>(block * ROW);
    let flag_stage = shared.take::<[u32; 4]>((block * ITEMS).div_ceil(16));
    let block_scan = BlockScan::<u32>::from_allocator(&mut shared);
    let tile_slot = shared.take::<u32>(1);
    let prefix_slot = shared.take::<u32>(1);
    let tid = arch::thread_idx_x() as usize;
    // SAFETY: temp's first word is the tile counter; the slot is shared.
    let tile = unsafe { take_tile(temp.cast::<u32>(), tiles, tile_slot) };

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
            if !flag_bytes.is_null() {
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
                if !flag_bytes.is_null() {
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
    let mut mask = 0u32;
    if !flag_bytes.is_null() {
        // The thread's ITEMS flag bytes, as 16-byte vectors or (8 flags) 4-byte words.
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
        for k in 0..ITEMS {
            if (words[k / 4] >> (8 * (k % 4))) & 0xff != 0 {
                mask |= 1 << k;
            }
        }
    } else {
        for j in 0..ROW {
            let mut items = [T::zeroed(); V];
            // SAFETY: the thread's own row.
            thread::unpack_vector::<T, V>(unsafe { arch::load_shared_v4(row_address(j)) }, 0, &mut items);
            for (e, &item) in items.iter().enumerate() {
                let k = j * V + e;
                // SAFETY: first + k < len when k < thread_valid.
                if k < thread_valid && unsafe { flags.flag(first + k, item) } {
                    mask |= 1 << k;
                }
            }
        }
    }
    if thread_valid < 32 {
        mask &= (1u32 << thread_valid) - 1;
    }

    // SAFETY: the tile status follows the header in temp.
    let status = unsafe { PackedTileStatus::<u32>::new(temp.add(TEMP_HEADER), epoch) };
    let (thread_exclusive, tile_count) = block_scan.exclusive_scan_with_prefix::<Sum>(mask.count_ones(), |aggregate| {
        // SAFETY: tile < tiles; warp 0's 32 lanes run the callback.
        let prefix = unsafe { tile_prefix::<u32, Sum, _, LOOK_BACK_DEPTH>(&status, tile, 0, aggregate) };
        if arch::lane_id() == 0 {
            // SAFETY: shared slot; read after the block scan's closing barrier.
            unsafe { arch::store(prefix_slot, prefix) };
        }
        prefix
    });
    // SAFETY: written in the callback, before the block scan's last barrier.
    let tile_prefix_count = unsafe { arch::load(prefix_slot) } as usize;

    // Every thread takes its row into registers before any thread overwrites the stage.
    let mut items = [T::zeroed(); ITEMS];
    for j in 0..ROW {
        // SAFETY: the thread's own row.
        thread::unpack_vector::<T, ITEMS>(unsafe { arch::load_shared_v4(row_address(j)) }, j, &mut items);
    }
    arch::sync_threads();
    let mut rank = thread_exclusive as usize - tile_prefix_count;
    for (k, &item) in items.iter().enumerate() {
        if k < thread_valid {
            if mask >> k & 1 != 0 {
                // SAFETY: rank < tile_count <= tile_items.
                unsafe { arch::store(element(rank), item) };
                rank += 1;
            } else if PARTITION {
                // Items before this one in the tile, minus the selected ones among them.
                let other_rank = thread_offset + k - rank;
                // SAFETY: tile_count + other_rank < tile_valid.
                unsafe { arch::store(element(tile_count as usize + other_rank), item) };
            }
        }
    }
    arch::sync_threads();

    let kept = if PARTITION { tile_valid } else { tile_count as usize };
    // SAFETY: for a partition `count` holds the number of selected items, written before the launch.
    let total_selected = if PARTITION { (unsafe { arch::load(count) }) as usize } else { 0 };
    let mut j = tid;
    while j < kept {
        let destination = if j < tile_count as usize {
            tile_prefix_count + j
        } else {
            // The others before this tile: items before it minus the selected ones.
            total_selected + (tile_start - tile_prefix_count) + (j - tile_count as usize)
        };
        // SAFETY: j < kept <= tile_items; destination < len.
        unsafe { arch::store(output.add(destination), arch::load(element(j))) };
        j += block;
    }
    if !PARTITION && tile == tiles - 1 && tid == 0 {
        // SAFETY: count valid.
        unsafe { arch::store(count, (tile_prefix_count + tile_count as usize) as u64) };
    }
}

/// Dynamic shared memory of the counting kernel for `u64` block totals.
pub const fn count_shared_bytes() -> usize {
    BlockReduce::<u64>::SHARED_BYTES
}

/// Adds the number of selected items of `input[..len]` to `*count` (one atomic per block; the host
/// zeroes `*count` first). Any grid.
///
/// # Safety
/// `input` valid for `len` reads and `flags` for the same; `count` valid.
#[inline(always)]
pub unsafe fn count_kernel<T: Element, F: FlagSource<T>>(input: *const T, flags: F, len: u64, count: *mut u64) {
    let storage = BlockReduce::<u64>::from_allocator(&mut DynamicShared::new());
    let stride = arch::block_dim_x() as usize * arch::grid_dim_x() as usize;
    let mut i = arch::block_idx_x() as usize * arch::block_dim_x() as usize + arch::thread_idx_x() as usize;
    let mut selected = 0u64;
    while i < len as usize {
        // SAFETY: i < len.
        selected += unsafe { flags.flag(i, arch::load(input.add(i))) } as u64;
        i += stride;
    }
    let block_total = storage.reduce::<Sum>(selected);
    if arch::thread_idx_x() == 0 && block_total != 0 {
        // SAFETY: count valid.
        unsafe { arch::atomic_add_u64_gpu(count, block_total) };
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
