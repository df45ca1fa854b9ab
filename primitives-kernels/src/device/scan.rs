//! Device scan in a single pass with decoupled look-back (Merrill & Garland 2016, "Single-pass
//! Parallel Prefix Scan with Decoupled Look-back").
//!
//! Two tile designs share the look-back ([`crate::device::tile_status`]):
//! * [`staged_scan_kernel`], the device scan: the tile (144 bytes a thread) is copied into shared
//!   memory with `cp.async`, so it holds no registers while the block waits for its look-back. On an
//!   H200 this keeps 216 KiB of tiles per multiprocessor instead of 80 KiB in registers, and the scan
//!   went from 2.49 to 3.33 TB/s at 2^28 f32, 80% of copy bandwidth (docs/benchmarks.md).
//! * [`scan_kernel`], items in registers (64 bytes a thread): the base of the select and segmented
//!   scan kernels, and kept as a measured variant of the scan.
//! * [`specialized_scan_kernel`], the staged tile with a dedicated look-back warp that starts at the
//!   ticket: a measured variant, 3% slower than the staged scan on an H200 (the prefix waits on the
//!   predecessors' aggregates, not on when the look-back starts; docs/benchmarks.md).
//!
//! In both, a block takes the next tile number from a global counter (so tiles start in order and
//! every predecessor of a running tile has started: the look-back always makes progress, on the GPU
//! and in the emulator whatever the block order), reduces its items per thread, scans the thread
//! totals across the block, and gets the tile's exclusive prefix from warp 0's look-back over the
//! predecessors' published aggregates and inclusive prefixes. Operands are combined in input order,
//! so non-commutative operators (such as the segmented operator of a segmented scan) are fine.

use crate::arch::{self, WARP_SIZE};
use crate::block::{BlockScan, DynamicShared};
use crate::device::tile_status::{
    look_back_with_backoff, take_tile, tile_prefix, tile_prefix_counted, LookBackStats, PackedTileStatus,
    SplitTileStatus, TileStatus, LOOK_BACK_DEPTH,
};
use crate::ops::{AssociativeOp, Element};
use crate::thread;
use crate::warp::{self, transpose, WarpTranspose};

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

/// Evaluates `$body` with `$status` bound to the tile status for `$t` in `temp` after the header:
/// [`PackedTileStatus`] for sizes that are multiples of 4, [`SplitTileStatus`] otherwise. Used
/// inside an `unsafe` block whose caller gives `temp_bytes(tiles)` bytes of `temp`.
macro_rules! with_tile_status {
    ($t:ty, $temp:expr, $tiles:expr, $epoch:expr, |$status:ident| $body:expr) => {{
        let storage = $temp.add(TEMP_HEADER);
        if size_of::<$t>().is_multiple_of(4) {
            let $status = PackedTileStatus::<$t>::new(storage, $epoch);
            $body
        } else {
            let $status = SplitTileStatus::<$t>::new(storage, $tiles as usize, $epoch);
            $body
        }
    }};
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
        with_tile_status!(T, temp, tiles, epoch, |status| {
            scan_tiles::<T, Op, _, ITEMS, EXCLUSIVE>(input, output, len, initial, temp, tiles, &status)
        })
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
        unsafe { tile_prefix::<T, Op, S, LOOK_BACK_DEPTH>(status, tile, seed, block_aggregate) }
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

/// 16-byte vectors in each thread's row of the staged scan's shared-memory tile (144 bytes: 36 f32,
/// 18 f64, 9 pairs of f64). Rows of 9 rather than 8 fit 216 KiB of tiles per multiprocessor instead
/// of 192 and need no swizzle (an odd row length is bank-conflict free as it is): on an H200 the f32
/// scan went from 3196 to 3376-3389 GB/s (docs/benchmarks.md).
pub const STAGED_ROW_VECTORS: usize = 9;

/// Rows of 8 vectors (128 bytes, the previous production tile): the select and partition kernels'
/// rows, and those of the scan variants measured against the production scan.
pub const EIGHT_VECTOR_ROWS: usize = 8;

/// Predecessors each lane of the staged scan's look-back examines per step (see
/// [`crate::device::tile_status::look_back`]).
pub const STAGED_LOOK_BACK_DEPTH: usize = 1;

/// Threads per block of the staged scan: 256 (36 KiB tiles; 6 blocks per multiprocessor for
/// elements of up to 4 bytes, 5 for larger ones, whose look-back needs more registers). The PTX link
/// step's launch bounds assume these.
pub const fn staged_block_threads<T>() -> u32 {
    256
}

/// Whether `T` can go through the staged scan: its size divides 16.
pub const fn staged_fits<T>() -> bool {
    size_of::<T>() <= 16 && 16 % size_of::<T>() == 0
}

/// Elements of `T` per 16-byte vector (for [`staged_fits`] types).
pub const fn staged_vector_items<T>() -> usize {
    16 / size_of::<T>()
}

/// Elements per tile of the staged scan with `block_threads` threads and rows of `row_vectors`
/// 16-byte vectors ([`STAGED_ROW_VECTORS`] in the production kernels).
pub const fn staged_tile_items<T>(block_threads: usize, row_vectors: usize) -> usize {
    block_threads * row_vectors * staged_vector_items::<T>()
}

/// Dynamic shared memory of the staged scan kernel: the tile, the block scan and the tile number.
pub const fn staged_shared_bytes<T: Element>(block_threads: usize, row_vectors: usize) -> usize {
    block_threads * row_vectors * 16 + BlockScan::<T>::SHARED_BYTES + 16
}

/// Where 16-byte vector `vector` of the tile lives in shared memory (in vectors), with rows of
/// `ROW` vectors (a multiple of 8, or odd). With a multiple of 8, the vectors of each 128-byte line
/// (8 vectors) are permuted by XOR with the row number, so that both a warp reading one vector of
/// each thread's row (8 lanes per shared-memory wavefront, 8 different rows) and a warp reading
/// consecutive vectors (the coalesced copies, 8 lanes in one line) touch 8 different bank groups:
/// no bank conflicts. An odd row length already puts 8 consecutive rows' vectors in 8 different
/// bank groups, so odd rows are not permuted.
#[inline(always)]
pub(crate) fn swizzled<const ROW: usize>(vector: usize) -> usize {
    if ROW % 2 == 1 {
        vector
    } else {
        vector ^ ((vector / ROW) % 8)
    }
}

/// One block's tile of the staged scans in shared memory, rows of `ROW` 16-byte vectors (placed by
/// [`swizzled`]), and where it lies in the input: full tiles of 16-byte aligned buffers move as
/// whole vectors (`cp.async` in, v4 stores out), others element by element.
struct StagedTile<T, const V: usize, const ROW: usize> {
    stage: *mut [u32; 4],
    address: u32,
    start: usize,
    valid: usize,
    vectors: bool,
    _element: core::marker::PhantomData<T>,
}

impl<T: Element, const V: usize, const ROW: usize> StagedTile<T, V, ROW> {
    /// Tile `tile` of `rows` rows in `stage`, of a scan of `len` items from `input` to `output`.
    #[inline(always)]
    fn new(stage: *mut [u32; 4], rows: usize, tile: u32, len: u64, input: *const T, output: *mut T) -> Self {
        const { assert!(ROW.is_multiple_of(8) || ROW % 2 == 1, "rows of whole 128-byte lines, or odd") };
        let items = rows * ROW * V;
        let start = tile as usize * items;
        let valid = (len as usize - start).min(items);
        let vectors = valid == items && (input as usize).is_multiple_of(16) && (output as usize).is_multiple_of(16);
        Self { stage, address: arch::shared_address(stage), start, valid, vectors, _element: core::marker::PhantomData }
    }

    #[inline(always)]
    fn vector_address(&self, vector: usize) -> u32 {
        self.address + (swizzled::<ROW>(vector) * 16) as u32
    }

    #[inline(always)]
    fn element(&self, e: usize) -> *mut T {
        // SAFETY: e < the tile's items: inside the stage.
        unsafe { self.stage.add(swizzled::<ROW>(e / V)).cast::<T>().add(e % V) }
    }

    /// Copies vectors `first..first + threads * ROW` of the tile in, shared by `threads` threads of
    /// which the caller is `index` (coalesced: thread `index` takes every `threads`-th vector), the
    /// identity past the input's end. The caller's copies have landed on return; other threads'
    /// need a barrier.
    ///
    /// # Safety
    /// `input` as given to [`Self::new`]; the range inside the tile.
    #[inline(always)]
    unsafe fn load<Op: AssociativeOp<T>>(&self, input: *const T, first: usize, threads: usize, index: usize) {
        if self.vectors {
            // SAFETY: a full tile: its vectors are inside input[..len]; aligned (checked in `new`).
            let source = unsafe { input.add(self.start).cast::<[u32; 4]>() };
            for i in 0..ROW {
                let v = first + index + i * threads;
                // SAFETY: v inside the range, so inside the stage and the tile.
                unsafe { arch::cp_async_16(self.vector_address(v), source.add(v)) };
            }
            arch::cp_async_wait_all();
        } else {
            let end = (first + threads * ROW) * V;
            let mut e = first * V + index;
            while e < end {
                let value = if e < self.valid {
                    // SAFETY: only elements inside input[..len] are read.
                    unsafe { arch::load(input.add(self.start + e)) }
                } else {
                    Op::identity()
                };
                // SAFETY: inside the stage.
                unsafe { arch::store(self.element(e), value) };
                e += threads;
            }
        }
    }

    /// Copies the same share of the tile out, the valid elements only (after a barrier over the
    /// threads that wrote them).
    ///
    /// # Safety
    /// `output` as given to [`Self::new`]; the range inside the tile.
    #[inline(always)]
    unsafe fn store(&self, output: *mut T, first: usize, threads: usize, index: usize) {
        if self.vectors {
            // SAFETY: a full tile: its vectors are inside output[..len]; aligned (checked in `new`).
            let destination = unsafe { output.add(self.start).cast::<[u32; 4]>() };
            for i in 0..ROW {
                let v = first + index + i * threads;
                // SAFETY: v inside the range, so inside the stage and the tile.
                unsafe { arch::store_global_v4(destination.add(v), arch::load_shared_v4(self.vector_address(v))) };
            }
        } else {
            let end = ((first + threads * ROW) * V).min(self.valid);
            let mut e = first * V + index;
            while e < end {
                // SAFETY: e < valid: inside the stage and output[..len].
                unsafe { arch::store(output.add(self.start + e), arch::load(self.element(e))) };
                e += threads;
            }
        }
    }

    /// Vector `j` of row `row`.
    #[inline(always)]
    fn read_vector(&self, row: usize, j: usize) -> [T; V] {
        let mut items = [T::zeroed(); V];
        // SAFETY: inside the stage.
        thread::unpack_vector::<T, V>(
            unsafe { arch::load_shared_v4(self.vector_address(row * ROW + j)) },
            0,
            &mut items,
        );
        items
    }

    /// The combination of row `row`'s items.
    #[inline(always)]
    fn row_total<Op: AssociativeOp<T>>(&self, row: usize) -> T {
        let mut total = Op::identity();
        for j in 0..ROW {
            // By reference: iterating the array by value puts it in local memory.
            for &item in &self.read_vector(row, j) {
                total = Op::combine(total, item);
            }
        }
        total
    }

    /// Scans row `row` in place, inclusive or exclusive, starting from `prefix`.
    #[inline(always)]
    fn scan_row<Op: AssociativeOp<T>, const EXCLUSIVE: bool>(&self, row: usize, prefix: T) {
        let mut running = prefix;
        for j in 0..ROW {
            let mut items = self.read_vector(row, j);
            for item in items.iter_mut() {
                let next = Op::combine(running, *item);
                *item = if EXCLUSIVE { running } else { next };
                running = next;
            }
            // SAFETY: inside the stage.
            unsafe {
                arch::store_shared_v4(self.vector_address(row * ROW + j), thread::pack_vector::<T, V>(&items, 0))
            };
        }
    }
}

/// The device scan with the tile staged in shared memory, a design for GPUs whose memory bandwidth
/// needs many bytes in flight per multiprocessor (Hopper): the block copies its tile (128 bytes per
/// thread) into shared memory with `cp.async`, so the tile holds no registers while it waits for its
/// look-back, and more and larger tiles fit per multiprocessor than with items in registers. Then
/// each thread reduces its row, the block scans the row totals with the look-back as block prefix,
/// each thread scans its row in place, and the block copies the tile out with coalesced stores.
///
/// Same contract as [`scan_kernel`], with [`staged_tile_items`] elements per tile and
/// [`staged_shared_bytes`] of dynamic shared memory; `V` must be [`staged_vector_items`]`::<T>()`.
/// Any block size that is a multiple of 32 works.
///
/// # Safety
/// As for [`scan_kernel`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn staged_scan_kernel<T: Element, Op: AssociativeOp<T>, const V: usize, const EXCLUSIVE: bool>(
    input: *const T,
    output: *mut T,
    len: u64,
    initial: *const T,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
) {
    // SAFETY: forwarded.
    unsafe {
        staged_scan_kernel_timed::<T, Op, V, STAGED_ROW_VECTORS, STAGED_LOOK_BACK_DEPTH, EXCLUSIVE, false>(
            input,
            output,
            len,
            initial,
            temp,
            tiles,
            epoch,
            core::ptr::null_mut(),
        )
    }
}

/// [`staged_scan_kernel`], which with `TIMED` also writes 8 words per tile to `timeline` (a timing
/// experiment): the global timer at the ticket, the multiprocessor, the multiprocessor's clock at the
/// ticket, when the tile has landed in shared memory, when the aggregate is published, when the
/// look-back is done and when the scan is done, then the global timer at the end.
///
/// # Safety
/// As for [`scan_kernel`]; with `TIMED`, `timeline` valid for `8 * tiles` words.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn staged_scan_kernel_timed<
    T: Element,
    Op: AssociativeOp<T>,
    const V: usize,
    const ROW: usize,
    const DEPTH: usize,
    const EXCLUSIVE: bool,
    const TIMED: bool,
>(
    input: *const T,
    output: *mut T,
    len: u64,
    initial: *const T,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
    timeline: *mut u64,
) {
    const { assert!(V * size_of::<T>() == 16, "V elements must fill a 16-byte vector") };
    // SAFETY: forwarded; the status lies after the header, inside `temp_bytes(tiles)`.
    unsafe {
        with_tile_status!(T, temp, tiles, epoch, |status| {
            staged_scan_tiles::<T, Op, _, V, ROW, DEPTH, EXCLUSIVE, TIMED>(
                input, output, len, initial, temp, tiles, &status, timeline,
            )
        })
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn staged_scan_tiles<
    T: Element,
    Op: AssociativeOp<T>,
    S: TileStatus<T>,
    const V: usize,
    const ROW: usize,
    const DEPTH: usize,
    const EXCLUSIVE: bool,
    const TIMED: bool,
>(
    input: *const T,
    output: *mut T,
    len: u64,
    initial: *const T,
    temp: *mut u8,
    tiles: u32,
    status: &S,
    timeline: *mut u64,
) {
    let block = arch::block_dim_x() as usize;
    let mut shared = DynamicShared::new();
    let stage = shared.take::<[u32; 4]>(block * ROW);
    let block_scan = BlockScan::<T>::from_allocator(&mut shared);
    let tile_slot = shared.take::<u32>(1);
    let tid = arch::thread_idx_x() as usize;
    // SAFETY: temp's first word is the tile counter; the slot is shared.
    let tile = unsafe { take_tile(temp.cast::<u32>(), tiles, tile_slot) };
    // Reads the clock only when TIMED (clock reads are volatile: LLVM would keep them otherwise).
    let mark = |slot: usize, value: fn() -> u64| {
        if TIMED && tid == 0 {
            // SAFETY: the caller gives 8 words per tile when TIMED.
            unsafe { arch::store(timeline.add(tile as usize * 8 + slot), value()) };
        }
    };
    mark(0, arch::global_timer);
    mark(2, arch::clock64);

    let staged = StagedTile::<T, V, ROW>::new(stage, block, tile, len, input, output);
    // SAFETY: the whole tile, shared by the block's threads.
    unsafe { staged.load::<Op>(input, 0, block, tid) };
    arch::sync_threads();
    mark(3, arch::clock64);

    let thread_total = staged.row_total::<Op>(tid);
    let seed = if EXCLUSIVE {
        // SAFETY: `initial` is valid when EXCLUSIVE.
        unsafe { arch::load(initial) }
    } else {
        Op::identity()
    };
    let (thread_prefix, _) = block_scan.exclusive_scan_with_prefix::<Op>(thread_total, |block_aggregate| {
        mark(4, arch::clock64);
        let mut stats = LookBackStats::default();
        // SAFETY: tile < tiles; warp 0's 32 lanes run the callback (block size a multiple of 32).
        let prefix = unsafe { tile_prefix_counted::<T, Op, S, DEPTH>(status, tile, seed, block_aggregate, &mut stats) };
        mark(5, arch::clock64);
        if TIMED && arch::thread_idx_x() == 0 {
            let packed = arch::sm_id() as u64 | (stats.windows as u64) << 16 | (stats.polls as u64) << 40;
            // SAFETY: the caller gives 8 words per tile when TIMED.
            unsafe { arch::store(timeline.add(tile as usize * 8 + 1), packed) };
        }
        prefix
    });

    staged.scan_row::<Op, EXCLUSIVE>(tid, thread_prefix);
    arch::sync_threads();
    mark(6, arch::clock64);
    // SAFETY: as for the load.
    unsafe { staged.store(output, 0, block, tid) };
    mark(7, arch::global_timer);
}

/// Dynamic shared memory of [`specialized_scan_kernel`] with `row_threads` threads holding rows of
/// `row_vectors` 16-byte vectors: the tile, the warps' totals, the tile's prefix and aggregate, and
/// two counters.
pub const fn specialized_shared_bytes<T: Element>(row_threads: usize, row_vectors: usize) -> usize {
    row_threads * row_vectors * 16 + (row_threads / 32 + 2) * size_of::<T>() + 2 * 4 + 16
}

/// Threads per block of [`specialized_scan_kernel`] for `T`: the look-back warp and
/// [`staged_block_threads`] row threads. The PTX link step's launch bounds assume these.
pub const fn specialized_block_threads<T>() -> u32 {
    staged_block_threads::<T>() + WARP_SIZE
}

/// Elements per tile of [`specialized_scan_kernel`] launched with `block_threads` threads (one
/// look-back warp and `block_threads - 32` threads holding rows of `row_vectors` vectors).
pub const fn specialized_tile_items<T>(block_threads: usize, row_vectors: usize) -> usize {
    staged_tile_items::<T>(block_threads - 32, row_vectors)
}

/// The staged scan with a dedicated look-back warp (warp specialization). In [`staged_scan_kernel`]
/// warp 0 looks back only once the whole tile has landed and been reduced, and the block waits for
/// it at a barrier; on an H200 that look-back took half of a tile's life (docs/benchmarks.md). The
/// tile's exclusive prefix does not depend on its own data, so here warp 0 holds no rows and looks
/// back from the moment the block has its tile number, while the other warps copy the tile in and
/// reduce it. Each of them copies and reduces its own rows (no block barrier between), and the last
/// warp to finish (a shared-memory counter) combines the warps' totals and publishes the tile's
/// aggregate at once, so successors are not held up by this tile's look-back. One barrier then joins
/// the prefix and the aggregate: warp 0 publishes the inclusive prefix, the row warps scan their rows
/// and copy them out.
///
/// Measured on an H200 (2^28 f32): 3050 GB/s against 3155 for [`staged_scan_kernel`]. The prefix
/// still arrives about 7 us after the tile's aggregate: it waits for the predecessors' aggregates,
/// which land with a long tail, whenever the look-back starts. Kept as a variant for that record.
///
/// Launch [`specialized_tile_items`] elements per tile, `32 + 32k` threads per block and
/// [`specialized_shared_bytes`] bytes of dynamic shared memory; otherwise the contract of
/// [`scan_kernel`]. `V` must be [`staged_vector_items`]`::<T>()`.
///
/// # Safety
/// As for [`scan_kernel`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn specialized_scan_kernel<T: Element, Op: AssociativeOp<T>, const V: usize, const EXCLUSIVE: bool>(
    input: *const T,
    output: *mut T,
    len: u64,
    initial: *const T,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
) {
    // SAFETY: forwarded.
    unsafe {
        specialized_scan_kernel_tuned::<
            T,
            Op,
            V,
            EIGHT_VECTOR_ROWS,
            SPECIALIZED_LOOK_BACK_DEPTH,
            SPECIALIZED_MAX_BACKOFF_NS,
            EXCLUSIVE,
            false,
        >(input, output, len, initial, temp, tiles, epoch, core::ptr::null_mut())
    }
}

/// Predecessors each lane of [`specialized_scan_kernel`]'s look-back warp examines per step.
pub const SPECIALIZED_LOOK_BACK_DEPTH: usize = 1;
/// The longest sleep of [`specialized_scan_kernel`]'s look-back warp between polls, in nanoseconds.
pub const SPECIALIZED_MAX_BACKOFF_NS: u32 = 512;

/// [`specialized_scan_kernel`] with rows of `ROW` vectors, a look-back of depth `DEPTH` and sleeps
/// of at most `MAX_BACKOFF` ns between polls (tuning variants are measured with these).
///
/// # Safety
/// As for [`scan_kernel`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn specialized_scan_kernel_tuned<
    T: Element,
    Op: AssociativeOp<T>,
    const V: usize,
    const ROW: usize,
    const DEPTH: usize,
    const MAX_BACKOFF: u32,
    const EXCLUSIVE: bool,
    const TIMED: bool,
>(
    input: *const T,
    output: *mut T,
    len: u64,
    initial: *const T,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
    timeline: *mut u64,
) {
    const { assert!(V * size_of::<T>() == 16, "V elements must fill a 16-byte vector") };
    // SAFETY: forwarded; the status lies after the header, inside `temp_bytes(tiles)`.
    unsafe {
        with_tile_status!(T, temp, tiles, epoch, |status| {
            specialized_scan_tiles::<T, Op, _, V, ROW, DEPTH, MAX_BACKOFF, EXCLUSIVE, TIMED>(
                input, output, len, initial, temp, tiles, &status, timeline,
            )
        })
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn specialized_scan_tiles<
    T: Element,
    Op: AssociativeOp<T>,
    S: TileStatus<T>,
    const V: usize,
    const ROW: usize,
    const DEPTH: usize,
    const MAX_BACKOFF: u32,
    const EXCLUSIVE: bool,
    const TIMED: bool,
>(
    input: *const T,
    output: *mut T,
    len: u64,
    initial: *const T,
    temp: *mut u8,
    tiles: u32,
    status: &S,
    timeline: *mut u64,
) {
    let warp_size = WARP_SIZE as usize;
    let row_threads = arch::block_dim_x() as usize - warp_size;
    let row_warps = row_threads / warp_size;
    let mut shared = DynamicShared::new();
    let stage = shared.take::<[u32; 4]>(row_threads * ROW);
    // Each row warp's total; once the last row warp is done, each row warp's exclusive prefix.
    let warp_totals = shared.take::<T>(row_warps);
    // The tile's exclusive prefix (from warp 0) and its aggregate (from the last row warp).
    let tile_values = shared.take::<T>(2);
    // Row warps done, and the tile number.
    let counters = shared.take::<u32>(2);
    let tid = arch::thread_idx_x() as usize;
    if tid == 0 {
        // SAFETY: shared; the barrier in `take_tile` orders this before every increment.
        unsafe { arch::store(counters, 0) };
    }
    // SAFETY: temp's first word is the tile counter; the slot is shared.
    let tile = unsafe { take_tile(temp.cast::<u32>(), tiles, counters.add(1)) };
    // With TIMED, `thread` writes `value()` to word `slot` of the tile's 8 (clock reads are volatile:
    // LLVM would keep them otherwise): the global timer at the ticket (0) and at the end of the first
    // row warp's stores (7); the multiprocessor, windows and polls (1); the clock at the ticket (2),
    // when the first row warp's part has landed (3), when the aggregate is published (4), when the
    // look-back is done (5) and after the barrier (6).
    let mark = |thread: usize, slot: usize, value: fn() -> u64| {
        if TIMED && tid == thread {
            // SAFETY: the caller gives 8 words per tile when TIMED.
            unsafe { arch::store(timeline.add(tile as usize * 8 + slot), value()) };
        }
    };
    mark(0, 0, arch::global_timer);
    mark(0, 2, arch::clock64);
    let seed = if EXCLUSIVE {
        // SAFETY: `initial` is valid when EXCLUSIVE.
        unsafe { arch::load(initial) }
    } else {
        Op::identity()
    };

    let staged = StagedTile::<T, V, ROW>::new(stage, row_threads, tile, len, input, output);
    let warp = arch::warp_idx() as usize;
    let lane = arch::lane_id() as usize;
    // Row warp `w` owns rows 32w..32w + 32, that is vectors 32w * ROW.. of the tile.
    let row_warp = warp.wrapping_sub(1);
    let warp_vectors = row_warp.wrapping_mul(warp_size * ROW);
    let row = row_warp.wrapping_mul(warp_size) + lane;

    let mut thread_prefix = Op::identity();
    if warp == 0 {
        let prefix = if tile == 0 {
            seed
        } else {
            // SAFETY: 0 < tile < tiles; the 32 lanes of warp 0 are here.
            let mut stats = LookBackStats::default();
            // SAFETY: as above.
            let prefix =
                unsafe { look_back_with_backoff::<T, Op, S, DEPTH, MAX_BACKOFF>(status, tile, seed, &mut stats) };
            if TIMED && tid == 0 {
                let packed = arch::sm_id() as u64 | (stats.windows as u64) << 16 | (stats.polls as u64) << 40;
                // SAFETY: the caller gives 8 words per tile when TIMED.
                unsafe { arch::store(timeline.add(tile as usize * 8 + 1), packed) };
            }
            prefix
        };
        mark(0, 5, arch::clock64);
        if lane == 0 {
            // SAFETY: shared.
            unsafe { arch::store(tile_values, prefix) };
        }
    } else {
        // SAFETY: this warp's part of the tile, shared by its lanes.
        unsafe { staged.load::<Op>(input, warp_vectors, warp_size, lane) };
        mark(32, 3, arch::clock64);
        // The warp's lanes read rows other lanes copied.
        arch::sync_warp(arch::FULL_MASK);
        let thread_total = staged.row_total::<Op>(row);
        let (exclusive, warp_total) = warp::warp_exclusive_scan::<T, Op>(thread_total);
        thread_prefix = exclusive;
        let mut last = false;
        if lane == 0 {
            // SAFETY: shared; row_warp < row_warps. The fences order the total before the count
            // (release) and the count before the last warp's reads (acquire).
            unsafe {
                arch::store(warp_totals.add(row_warp), warp_total);
                arch::fence_acq_rel_cta();
                last = arch::atomic_add_u32_shared(counters, 1) as usize == row_warps - 1;
                arch::fence_acq_rel_cta();
            }
        }
        if arch::vote_any_sync(arch::FULL_MASK, last) {
            // The last row warp: every total is in; scan them and publish the tile's aggregate.
            arch::sync_warp(arch::FULL_MASK);
            let total = if lane < row_warps {
                // SAFETY: shared, lane < row_warps.
                unsafe { arch::load(warp_totals.add(lane)) }
            } else {
                Op::identity()
            };
            let (warp_prefix, aggregate) = warp::warp_exclusive_scan::<T, Op>(total);
            if lane < row_warps {
                // SAFETY: as above.
                unsafe { arch::store(warp_totals.add(lane), warp_prefix) };
            }
            if lane == 0 {
                if TIMED {
                    // SAFETY: the caller gives 8 words per tile when TIMED.
                    unsafe { arch::store(timeline.add(tile as usize * 8 + 4), arch::clock64()) };
                }
                // SAFETY: shared; tile < tiles.
                unsafe {
                    arch::store(tile_values.add(1), aggregate);
                    if tile == 0 {
                        status.publish_inclusive(0, Op::combine(seed, aggregate));
                    } else {
                        status.publish_aggregate(tile, aggregate);
                    }
                }
            }
        }
    }
    arch::sync_threads();
    mark(0, 6, arch::clock64);

    // SAFETY: written before the barrier (warp 0 lane 0 and the last row warp).
    let prefix = unsafe { arch::load(tile_values) };
    if warp == 0 {
        if lane == 0 && tile != 0 {
            // SAFETY: as above; tile < tiles.
            unsafe { status.publish_inclusive(tile, Op::combine(prefix, arch::load(tile_values.add(1)))) };
        }
        return;
    }
    // SAFETY: written by the last row warp before the barrier.
    let warp_prefix = unsafe { arch::load(warp_totals.add(row_warp)) };
    staged.scan_row::<Op, EXCLUSIVE>(row, Op::combine(Op::combine(prefix, warp_prefix), thread_prefix));
    // The warp's lanes copy out rows other lanes scanned.
    arch::sync_warp(arch::FULL_MASK);
    // SAFETY: as for the load.
    unsafe { staged.store(output, warp_vectors, warp_size, lane) };
    mark(32, 7, arch::global_timer);
}
