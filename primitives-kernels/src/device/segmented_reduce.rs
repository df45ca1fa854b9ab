//! Segmented reduce: `output[s]` = the reduction of segment `s` (the identity when it is empty).
//!
//! Two kernels share the work by segment length:
//! * `segments_kernel`: one worker per segment, a thread (`LANES = 1`, for tiny segments) or a warp
//!   (`LANES = 32`), grid-strided over the segments, so a block serves many small segments. Segments
//!   longer than `huge` items are left out and appended (atomically) to a list of huge segments.
//! * `huge_kernel`: every block takes a grid-strided share of every listed huge segment and writes
//!   one partial per (segment, block); `huge_fixup_kernel` combines each segment's partials in block
//!   order. So a few huge segments are spread over the whole GPU.
//!
//! As with device reduce, the operator must be commutative as well as associative (threads take
//! strided shares). Results do not depend on timing: a segment's reduction order is fixed by its length, the launch
//! shapes and its position in the huge list (which may vary, but only changes where its partials go).

use crate::arch;
use crate::block::{BlockReduce, DynamicShared};
use crate::ops::{AssociativeOp, Element};
use crate::warp;

/// Segments as begin and end offsets in two arrays (CUB's layout; a CSR offset array `o` is
/// `begin = o`, `end = o + 1`), their number on the device (so that it can come from an earlier kernel).
#[derive(Clone, Copy)]
pub struct Segments {
    pub begin: *const u32,
    pub end: *const u32,
    pub count: *const u64,
}

impl Segments {
    /// Number of segments.
    ///
    /// # Safety
    /// `count` valid.
    #[inline(always)]
    pub unsafe fn count(&self) -> usize {
        // SAFETY: forwarded.
        unsafe { arch::load(self.count) as usize }
    }

    /// `[begin, end)` of segment `s`, clamped so that a bad offset can never cause an access outside
    /// `[0, len)`, and whether the offsets were valid (`begin <= end <= len`).
    ///
    /// # Safety
    /// `s < count()`.
    #[inline(always)]
    pub unsafe fn bounds(&self, s: usize, len: usize) -> (usize, usize, bool) {
        // SAFETY: s < count (caller); both arrays hold `count` offsets.
        let (b, e) = unsafe { (arch::load(self.begin.add(s)) as usize, arch::load(self.end.add(s)) as usize) };
        let valid = b <= e && e <= len;
        let e = e.min(len);
        (b.min(e), e, valid)
    }
}

/// Reduces `input[begin..end]` across the `LANES` threads of a worker (1, or a full warp); the result
/// is valid in the worker's first thread.
///
/// # Safety
/// `input[begin..end]` readable.
#[inline(always)]
unsafe fn worker_reduce<T: Element, Op: AssociativeOp<T>, const LANES: usize>(
    input: *const T,
    begin: usize,
    end: usize,
) -> T {
    let lane = if LANES == 1 { 0 } else { arch::lane_id() as usize };
    let mut acc = Op::identity();
    let mut i = begin + lane;
    // Unrolled by 4 so that several loads are in flight.
    while i + 3 * LANES < end {
        // SAFETY: i + 3 * LANES < end.
        let (a, b, c, d) = unsafe {
            (
                arch::load(input.add(i)),
                arch::load(input.add(i + LANES)),
                arch::load(input.add(i + 2 * LANES)),
                arch::load(input.add(i + 3 * LANES)),
            )
        };
        acc = Op::combine(Op::combine(acc, a), Op::combine(Op::combine(b, c), d));
        i += 4 * LANES;
    }
    while i < end {
        // SAFETY: i < end.
        acc = Op::combine(acc, unsafe { arch::load(input.add(i)) });
        i += LANES;
    }
    if LANES == 1 {
        acc
    } else {
        warp::warp_reduce::<T, Op>(acc)
    }
}

/// One worker per segment: a thread when `warp_per_segment` is 0, else a warp. Segments longer than
/// `huge` are appended to `huge_list[..huge_capacity]` instead (counted in `*huge_count`, which the
/// host zeroes first); when the list is full (overlapping segments can all be huge) the worker reduces
/// the segment itself.
/// The smallest index of a segment with bad offsets is left in `*bad_segment` (the host sets it to
/// `u32::MAX` first); such a segment is reduced over its clamped range.
///
/// # Safety
/// `input` valid for `len` reads; `segments` valid; `output` valid for `count()` writes; `huge_list`
/// valid for `huge_capacity` entries; `huge_count` and `bad_segment` valid.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn segments_kernel<T: Element, Op: AssociativeOp<T>>(
    input: *const T,
    len: u64,
    segments: Segments,
    output: *mut T,
    warp_per_segment: u32,
    huge: u64,
    huge_list: *mut u32,
    huge_capacity: u32,
    huge_count: *mut u32,
    bad_segment: *mut u32,
) {
    let list = HugeList { entries: huge_list, capacity: huge_capacity, count: huge_count };
    if warp_per_segment != 0 {
        // SAFETY: forwarded.
        unsafe { segments_body::<T, Op, 32>(input, len, segments, output, huge, list, bad_segment) }
    } else {
        // SAFETY: forwarded.
        unsafe { segments_body::<T, Op, 1>(input, len, segments, output, huge, list, bad_segment) }
    }
}

/// The list of huge segments the chunked kernel takes over.
#[derive(Clone, Copy)]
struct HugeList {
    entries: *mut u32,
    capacity: u32,
    count: *mut u32,
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn segments_body<T: Element, Op: AssociativeOp<T>, const LANES: usize>(
    input: *const T,
    len: u64,
    segments: Segments,
    output: *mut T,
    huge: u64,
    list: HugeList,
    bad_segment: *mut u32,
) {
    let len = len as usize;
    let threads = arch::block_dim_x() as usize * arch::grid_dim_x() as usize;
    let global = arch::block_idx_x() as usize * arch::block_dim_x() as usize + arch::thread_idx_x() as usize;
    let (mut s, stride) = (global / LANES, threads / LANES);
    // SAFETY: segments valid (caller).
    let count = unsafe { segments.count() };
    while s < count {
        // SAFETY: s < count.
        let (begin, end, valid) = unsafe { segments.bounds(s, len) };
        if !valid && (LANES == 1 || arch::lane_id() == 0) {
            // SAFETY: bad_segment valid (caller).
            unsafe { arch::atomic_min_u32_gpu(bad_segment, s as u32) };
        }
        // Offer a huge segment to the list (one ticket per worker, broadcast across its lanes).
        let mut listed = false;
        if (end - begin) as u64 > huge {
            let mut ticket = 0;
            if LANES == 1 || arch::lane_id() == 0 {
                // SAFETY: count valid (caller).
                ticket = unsafe { arch::atomic_add_u32_gpu(list.count, 1) };
                if ticket < list.capacity {
                    // SAFETY: ticket < capacity.
                    unsafe { arch::store(list.entries.add(ticket as usize), s as u32) };
                }
            }
            if LANES > 1 {
                ticket = arch::shfl_idx_sync(arch::FULL_MASK, ticket, 0);
            }
            listed = ticket < list.capacity;
        }
        if !listed {
            // SAFETY: [begin, end) inside the input.
            let total = unsafe { worker_reduce::<T, Op, LANES>(input, begin, end) };
            if LANES == 1 || arch::lane_id() == 0 {
                // SAFETY: s < count.
                unsafe { arch::store(output.add(s), total) };
            }
        }
        s += stride;
    }
}

/// Dynamic shared memory of [`huge_kernel`].
pub const fn huge_shared_bytes<T: Element>() -> usize {
    BlockReduce::<T>::SHARED_BYTES
}

/// Every block reduces its grid-strided share of every listed huge segment into
/// `partials[slot * grid + block]`.
///
/// # Safety
/// As for [`segments_kernel`]; `partials` valid for `huge_capacity * grid_dim` writes.
#[inline(always)]
pub unsafe fn huge_kernel<T: Element, Op: AssociativeOp<T>>(
    input: *const T,
    len: u64,
    segments: Segments,
    huge_list: *const u32,
    huge_capacity: u32,
    huge_count: *const u32,
    partials: *mut T,
) {
    let storage = BlockReduce::<T>::from_allocator(&mut DynamicShared::new());
    let (block, blocks) = (arch::block_idx_x() as usize, arch::grid_dim_x() as usize);
    let threads = arch::block_dim_x() as usize;
    let tid = arch::thread_idx_x() as usize;
    // SAFETY: huge_count valid (caller).
    let listed = unsafe { arch::load(huge_count) }.min(huge_capacity) as usize;
    for slot in 0..listed {
        // SAFETY: slot < listed; the listed segment is below count().
        let (begin, end, _) = unsafe { segments.bounds(arch::load(huge_list.add(slot)) as usize, len as usize) };
        let mut acc = Op::identity();
        let mut i = begin + block * threads + tid;
        while i < end {
            // SAFETY: i < end.
            acc = Op::combine(acc, unsafe { arch::load(input.add(i)) });
            i += blocks * threads;
        }
        let total = storage.reduce::<Op>(acc);
        if tid == 0 {
            // SAFETY: slot * blocks + block < listed * grid.
            unsafe { arch::store(partials.add(slot * blocks + block), total) };
        }
        // The block-reduce storage is reused for the next segment.
        arch::sync_threads();
    }
}

/// One warp per listed huge segment combines its `blocks` partials, in block order, into the output.
///
/// # Safety
/// As for [`huge_kernel`], after it ran with `blocks` blocks.
#[inline(always)]
pub unsafe fn huge_fixup_kernel<T: Element, Op: AssociativeOp<T>>(
    huge_list: *const u32,
    huge_capacity: u32,
    huge_count: *const u32,
    partials: *const T,
    blocks: u32,
    output: *mut T,
) {
    let warps = arch::block_dim_x() as usize / 32 * arch::grid_dim_x() as usize;
    let mut slot = (arch::block_idx_x() * arch::block_dim_x() + arch::thread_idx_x()) as usize / 32;
    let lane = arch::lane_id() as usize;
    // SAFETY: huge_count valid.
    let listed = unsafe { arch::load(huge_count) }.min(huge_capacity) as usize;
    while slot < listed {
        let mut acc = Op::identity();
        let mut b = lane;
        while b < blocks as usize {
            // SAFETY: b < blocks.
            acc = Op::combine(acc, unsafe { arch::load(partials.add(slot * blocks as usize + b)) });
            b += 32;
        }
        let total = warp::warp_reduce::<T, Op>(acc);
        if lane == 0 {
            // SAFETY: the listed segment index is below count().
            unsafe { arch::store(output.add(arch::load(huge_list.add(slot)) as usize), total) };
        }
        slot += warps;
    }
}

/// Segment ends from head indices: `end[s] = heads[s + 1]`, and `len` for the last of `*count`.
///
/// # Safety
/// `heads` holds `*count` indices; `ends` valid for `*count` writes.
#[inline(always)]
pub unsafe fn heads_to_ends_kernel(heads: *const u32, count: *const u64, len: u64, ends: *mut u32) {
    // SAFETY: count valid.
    let count = unsafe { arch::load(count) } as usize;
    let stride = arch::block_dim_x() as usize * arch::grid_dim_x() as usize;
    let mut s = (arch::block_idx_x() * arch::block_dim_x() + arch::thread_idx_x()) as usize;
    while s < count {
        // SAFETY: s < count.
        unsafe {
            let end = if s + 1 < count { arch::load(heads.add(s + 1)) } else { len as u32 };
            arch::store(ends.add(s), end);
        }
        s += stride;
    }
}
