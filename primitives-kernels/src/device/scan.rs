//! Device scan in a single pass with decoupled look-back (Merrill & Garland 2016, "Single-pass
//! Parallel Prefix Scan with Decoupled Look-back").
//!
//! One block per tile of `BLOCK_THREADS * ITEMS` elements. A block takes the next tile number from a
//! global counter (so tiles start in order and every predecessor of a running tile has started: the
//! look-back always makes progress, on the GPU and in the emulator whatever the block order), loads
//! `ITEMS` consecutive elements per thread, scans them in the thread, scans the thread totals across
//! the block, and gets the tile's exclusive prefix from warp 0's look-back over the predecessors'
//! published aggregates and inclusive prefixes. Operands are combined in input order, so
//! non-commutative operators (such as the segmented operator of a segmented scan) are fine.

use crate::arch;
use crate::block::{BlockScan, DynamicShared};
use crate::device::tile_status::{take_tile, tile_prefix, PackedTileStatus, SplitTileStatus, TileStatus};
use crate::ops::{AssociativeOp, Element};
use crate::thread;
use crate::warp::{transpose, WarpTranspose};

/// Threads per block of the scan kernels (the host launches with this).
pub const BLOCK_THREADS: u32 = 256;

/// Bytes each thread scans. 128 (32 f32 per thread) was tried: LLVM then keeps the item arrays in
/// local memory (loops of 32 are not fully unrolled), so 64 it is.
pub const BYTES_PER_THREAD: usize = 64;

/// Elements per thread for `T`: [`BYTES_PER_THREAD`]' worth, between 1 and 16.
pub const fn items_per_thread<T>() -> usize {
    let items = BYTES_PER_THREAD / size_of::<T>();
    if items == 0 {
        1
    } else if items > 16 {
        16
    } else {
        items
    }
}

/// Dynamic shared memory of the scan kernel for `T`, in bytes: the block scan, the tile number, and
/// the warp transposes of the loads and stores.
pub const fn shared_bytes<T: Element>() -> usize {
    BlockScan::<T>::SHARED_BYTES
        + 16
        + 4
        + 16
        + WarpTranspose::shared_bytes((BLOCK_THREADS / 32) as usize, items_per_thread::<T>() * size_of::<T>())
}

/// Bytes at the start of the temporary storage before the tile status: the tile counter (first word);
/// the host keeps an exclusive scan's initial value at [`INITIAL_OFFSET`].
pub const TEMP_HEADER: usize = 128;
/// Where the host puts the initial value of an exclusive scan in the temporary storage.
pub const INITIAL_OFFSET: usize = 64;

/// Bytes of temporary storage for `tiles` tiles: the header, then the tile status.
pub fn temp_bytes<T: Element>(tiles: usize) -> usize {
    TEMP_HEADER
        + if size_of::<T>().is_multiple_of(4) {
            <PackedTileStatus<T> as TileStatus<T>>::bytes(tiles)
        } else {
            <SplitTileStatus<T> as TileStatus<T>>::bytes(tiles)
        }
}

/// The scan kernel's body: `output[i] = seed ⊕ input[0] ⊕ ... ⊕ input[i]` (inclusive, seed = the
/// identity) or `seed ⊕ input[0] ⊕ ... ⊕ input[i - 1]` (exclusive, seed = `*initial`).
///
/// Launch `tiles = ceil(len / (BLOCK_THREADS * ITEMS))` blocks of [`BLOCK_THREADS`] threads with
/// [`shared_bytes`] bytes of dynamic shared memory.
///
/// # Safety
/// `input` valid for `len` reads and not written during the kernel; `output` valid for `len` writes
/// and not overlapping `input`; `initial` valid for one read when `EXCLUSIVE`; `temp` valid for
/// [`temp_bytes`]`(tiles)` bytes, 16-byte aligned, its first word 0 before the launch (it is 0 again
/// after), and `epoch` different from the epochs of all launches since `temp` was zeroed (1 to 2^30-1).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn scan_kernel<T: Element, Op: AssociativeOp<T>, const ITEMS: usize, const EXCLUSIVE: bool>(
    input: *const T,
    output: *mut T,
    len: u64,
    initial: *const T,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
) {
    // SAFETY: forwarded; the status lies after the header, inside `temp_bytes(tiles)`.
    unsafe {
        let status_storage = temp.add(TEMP_HEADER);
        if size_of::<T>().is_multiple_of(4) {
            let status = PackedTileStatus::<T>::new(status_storage, epoch);
            scan_tiles::<T, Op, _, ITEMS, EXCLUSIVE>(input, output, len, initial, temp, tiles, &status)
        } else {
            let status = SplitTileStatus::<T>::new(status_storage, tiles as usize, epoch);
            scan_tiles::<T, Op, _, ITEMS, EXCLUSIVE>(input, output, len, initial, temp, tiles, &status)
        }
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn scan_tiles<T: Element, Op: AssociativeOp<T>, S: TileStatus<T>, const ITEMS: usize, const EXCLUSIVE: bool>(
    input: *const T,
    output: *mut T,
    len: u64,
    initial: *const T,
    temp: *mut u8,
    tiles: u32,
    status: &S,
) {
    let mut shared = DynamicShared::new();
    let block_scan = BlockScan::<T>::from_allocator(&mut shared);
    let tile_slot = shared.take::<u32>(1);
    let transpose = WarpTranspose::from_allocator(&mut shared, ITEMS * size_of::<T>());
    let tid = arch::thread_idx_x();
    // SAFETY: temp's first word is the tile counter; the slot is shared.
    let tile = unsafe { take_tile(temp.cast::<u32>(), tiles, tile_slot) };

    let tile_items = (arch::block_dim_x() as usize * ITEMS) as u64;
    let tile_start = tile as u64 * tile_items;
    let tile_valid = (len - tile_start).min(tile_items) as usize;
    let thread_offset = tid as usize * ITEMS;
    let thread_valid = tile_valid.saturating_sub(thread_offset).min(ITEMS);
    let first = (tile_start as usize + thread_offset.min(tile_valid)) as isize;
    let full_tile = tile_valid as u64 == tile_items;
    // Full tiles of 64-byte lanes on 16-byte aligned data go through the warp transpose.
    let warp_start = tile_start as usize + arch::warp_idx() as usize * 32 * ITEMS;
    let transposed = full_tile
        && transpose::fits::<T, ITEMS>()
        && (input as usize).is_multiple_of(16)
        && (output as usize).is_multiple_of(16);

    let mut items: [T; ITEMS] = if transposed {
        // SAFETY: a full tile: the warp's 32 * ITEMS elements are inside input[..len]; aligned.
        unsafe { transpose.load::<T, ITEMS>(input.add(warp_start)) }
    } else if full_tile {
        // SAFETY: a full tile: this thread's ITEMS elements are inside input[..len].
        unsafe { thread::load_blocked::<T, ITEMS>(input.offset(first)) }
    } else {
        // SAFETY: only the thread's valid elements are read.
        unsafe { thread::load_blocked_partial::<T, ITEMS>(input.offset(first), thread_valid, Op::identity()) }
    };
    let seed = if EXCLUSIVE {
        // SAFETY: `initial` is valid when EXCLUSIVE.
        unsafe { arch::load(initial) }
    } else {
        Op::identity()
    };
    let thread_total = thread::reduce::<T, Op, ITEMS>(&items);
    let (thread_prefix, _) = block_scan.exclusive_scan_with_prefix::<Op>(thread_total, |block_aggregate| {
        // SAFETY: tile < tiles; warp 0's 32 lanes run the callback (256 threads per block).
        unsafe { tile_prefix::<T, Op, S>(status, tile, seed, block_aggregate) }
    });

    if EXCLUSIVE {
        thread::exclusive_scan::<T, Op, ITEMS>(&mut items, thread_prefix);
    } else {
        thread::inclusive_scan::<T, Op, ITEMS>(&mut items, thread_prefix);
    }
    if transposed {
        // SAFETY: a full tile: the warp's outputs are inside output[..len]; aligned.
        unsafe { transpose.store::<T, ITEMS>(output.add(warp_start), &items) };
    } else if full_tile {
        // SAFETY: a full tile: this thread's ITEMS outputs are inside output[..len].
        unsafe { thread::store_blocked::<T, ITEMS>(output.offset(first), &items) };
    } else {
        // SAFETY: only the thread's valid outputs are written.
        unsafe { thread::store_blocked_partial::<T, ITEMS>(output.offset(first), &items, thread_valid) };
    }
}
