//! Device reduce in one launch: every block reduces a grid-strided share of the input with 16-byte
//! loads, writes its total to `block_totals`, and the last block to finish (counted with a GPU-scope
//! atomic after a release fence) reduces the block totals in block order and writes the result.
//!
//! Like CUB's `DeviceReduce`, the device-wide reduce assumes the operator is commutative as well as
//! associative (threads take strided shares); warp and block reduce only need associativity.
//!
//! The result is deterministic for a given grid size: each thread's share and the order in which
//! shares, warps, blocks and block totals are combined depend only on the indices, never on timing.

use crate::arch;
use crate::block::{BlockReduce, DynamicShared};
use crate::ops::{AssociativeOp, Element};

/// Independent 16-byte loads each thread keeps in flight per step of the grid-stride loop.
pub const LOADS_IN_FLIGHT: usize = 4;

/// Dynamic shared memory the reduce kernel needs, in bytes.
pub const fn shared_bytes<T: Element>() -> usize {
    // Block-reduce storage, then one u32 flag (16-byte alignment slack between them).
    BlockReduce::<T>::SHARED_BYTES + 16 + 4
}

/// Elements per 16-byte vector, or 0 when `T` cannot be loaded that way.
#[inline(always)]
const fn per_vector<T>() -> usize {
    let size = core::mem::size_of::<T>();
    if size <= 16 && 16usize.is_multiple_of(size) {
        16 / size
    } else {
        0
    }
}

/// Combines the elements of one 16-byte vector, in order, into `acc`.
#[inline(always)]
fn combine_vector<T: Element, Op: AssociativeOp<T>>(mut acc: T, words: [u32; 4]) -> T {
    let bytes = bytemuck::bytes_of(&words);
    for j in 0..per_vector::<T>() {
        let item: T =
            bytemuck::pod_read_unaligned(&bytes[j * core::mem::size_of::<T>()..][..core::mem::size_of::<T>()]);
        acc = Op::combine(acc, item);
    }
    acc
}

/// This thread's combination of its grid-strided share of `input[..len]`.
///
/// # Safety
/// `input` must be valid for reads of `len` elements that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn thread_share<T: Element, Op: AssociativeOp<T>>(input: *const T, len: u64) -> T {
    let threads = arch::block_dim_x() as u64;
    let stride = threads * arch::grid_dim_x() as u64;
    let first = arch::block_idx_x() as u64 * threads + arch::thread_idx_x() as u64;
    let mut acc = Op::identity();

    let per_vec = per_vector::<T>() as u64;
    let vectorised = per_vec > 0 && (input as usize).is_multiple_of(16);
    let scalar_start = if vectorised {
        let vectors = input.cast::<[u32; 4]>();
        let vector_count = len / per_vec;
        let mut i = first;
        // LOADS_IN_FLIGHT independent loads are issued before any is combined, to cover latency.
        while i + (LOADS_IN_FLIGHT as u64 - 1) * stride < vector_count {
            let mut batch = [[0u32; 4]; LOADS_IN_FLIGHT];
            for (k, slot) in batch.iter_mut().enumerate() {
                // SAFETY: i + k * stride < vector_count, so the vector lies inside input[..len].
                *slot = unsafe { arch::load_global_nc_v4(vectors.add((i + k as u64 * stride) as usize)) };
            }
            for words in batch {
                acc = combine_vector::<T, Op>(acc, words);
            }
            i += LOADS_IN_FLIGHT as u64 * stride;
        }
        while i < vector_count {
            // SAFETY: i < vector_count.
            let words = unsafe { arch::load_global_nc_v4(vectors.add(i as usize)) };
            acc = combine_vector::<T, Op>(acc, words);
            i += stride;
        }
        vector_count * per_vec
    } else {
        0
    };

    // The elements past the last whole vector (or all of them when not vectorised).
    let mut i = scalar_start + first;
    while i < len {
        // SAFETY: i < len.
        let item = unsafe { arch::load(input.add(i as usize)) };
        acc = Op::combine(acc, item);
        i += stride;
    }
    acc
}

/// The reduce kernel's body. Launch with any grid of at most `block_totals`' length in blocks and
/// [`shared_bytes::<T>()`] bytes of dynamic shared memory; `done_blocks` must hold 0 before the launch
/// and holds 0 again after it.
///
/// # Safety
/// `input` valid for `len` reads; `block_totals` valid for `grid_dim` writes; `done_blocks` and
/// `output` valid for one element each; no other kernel uses `block_totals`, `done_blocks` or
/// `output` concurrently.
#[inline(always)]
pub unsafe fn reduce_kernel<T: Element, Op: AssociativeOp<T>>(
    input: *const T,
    len: u64,
    block_totals: *mut T,
    done_blocks: *mut u32,
    output: *mut T,
) {
    let mut shared = DynamicShared::new();
    let storage = BlockReduce::<T>::from_allocator(&mut shared);
    let is_last_flag = shared.take::<u32>(1);
    let tid = arch::thread_idx_x();
    let blocks = arch::grid_dim_x();

    // SAFETY: forwarded from the caller.
    let share = unsafe { thread_share::<T, Op>(input, len) };
    let block_total = storage.reduce::<Op>(share);

    if blocks == 1 {
        if tid == 0 {
            // SAFETY: output is valid for one write.
            unsafe { arch::store(output, block_total) };
        }
        return;
    }

    if tid == 0 {
        // SAFETY: block_idx < grid_dim <= len(block_totals); done_blocks valid.
        unsafe {
            arch::store(block_totals.add(arch::block_idx_x() as usize), block_total);
            // Release: our block total is visible at GPU scope before the counter moves.
            arch::fence_acq_rel_gpu();
            let finished_before = arch::atomic_add_u32_gpu(done_blocks, 1);
            // Acquire: the totals of the blocks counted before us are visible to us after this.
            arch::fence_acq_rel_gpu();
            arch::store(is_last_flag, (finished_before == blocks - 1) as u32);
        }
    }
    // Also separates the block reduce above from the reuse of its storage below.
    arch::sync_threads();
    // SAFETY: written by thread 0 before the barrier.
    if unsafe { arch::load(is_last_flag) } == 0 {
        return;
    }

    // The last block: combine the block totals in block order.
    let threads = arch::block_dim_x();
    let mut acc = Op::identity();
    let mut b = tid;
    while b < blocks {
        // SAFETY: b < grid_dim; relaxed GPU-scope loads see the other blocks' published totals
        // (ordered by thread 0's acquire fence and the barrier), not a stale L1 line.
        acc = Op::combine(acc, unsafe { arch::load_relaxed_gpu(block_totals.add(b as usize)) });
        b += threads;
    }
    let total = storage.reduce::<Op>(acc);
    if tid == 0 {
        // SAFETY: output and done_blocks valid; resetting the counter readies the storage for reuse.
        unsafe {
            arch::store(output, total);
            arch::store(done_blocks, 0);
        }
    }
}
