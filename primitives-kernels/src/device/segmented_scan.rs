//! Segmented scan and scan-by-key in one pass: the device scan (`device::scan`) over
//! `(value, head flag)` items with the segmented operator [`Segmented`], which restarts the scan at
//! every head. The operator is associative but not commutative; the look-back keeps operand order.
//!
//! Heads come from a flag array, or from keys (an item is a head where its key differs from the
//! previous item's: equal adjacent keys form a segment), or from CSR offsets turned into flags by
//! `offsets_to_flags_kernel`.

use core::marker::PhantomData;

use crate::arch;
use crate::block::{BlockScan, DynamicShared};
use crate::device::scan::{BLOCK_THREADS, TEMP_HEADER};
use crate::device::tile_status::{take_tile, tile_prefix, PackedTileStatus, TileStatus, LOOK_BACK_DEPTH};
use crate::ops::{AssociativeOp, Element, GradientPair};
use crate::thread;

/// A value with its head flag (the flag is a `u32` and a padding word, so that the type has no
/// padding for every element type it is made for).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Headed<T> {
    pub value: T,
    pub head: u32,
    _pad: u32,
}

impl<T> Headed<T> {
    #[inline(always)]
    pub fn new(value: T, head: bool) -> Self {
        Self { value, head: head as u32, _pad: 0 }
    }
}

macro_rules! headed_pod {
    ($($t:ty),*) => {$(
        // SAFETY: repr(C) of a Pod value of size 4 or a multiple of 8 (alignment at most 8) and two
        // u32: no padding, every bit pattern valid.
        unsafe impl bytemuck::Zeroable for Headed<$t> {}
        // SAFETY: as above.
        unsafe impl bytemuck::Pod for Headed<$t> {}
    )*};
}
headed_pod!(f32, f64, i32, u32, i64, u64, GradientPair<f32>, GradientPair<f64>, GradientPair<i64>);

/// The segmented operator over [`Headed`] items: `a ⊕ b` is `b` when `b` starts a segment, else the
/// combination of the values with `a`'s flag. Associative (not commutative); the identity is the
/// inner identity with no head.
#[derive(Clone, Copy, Default)]
pub struct Segmented<Op>(PhantomData<Op>);

impl<T: Element, Op: AssociativeOp<T>> AssociativeOp<Headed<T>> for Segmented<Op> {
    #[inline(always)]
    fn identity() -> Headed<T> {
        Headed::new(Op::identity(), false)
    }
    #[inline(always)]
    fn combine(a: Headed<T>, b: Headed<T>) -> Headed<T> {
        if b.head != 0 {
            b
        } else {
            Headed { value: Op::combine(a.value, b.value), head: a.head, _pad: 0 }
        }
    }
}

/// Dynamic shared memory of the segmented scan for `T`.
pub const fn shared_bytes<T: Element>() -> usize
where
    Headed<T>: Element,
{
    BlockScan::<Headed<T>>::SHARED_BYTES + 16 + 4
}

/// Bytes of temporary storage for `tiles` tiles.
pub fn temp_bytes<T: Element>(tiles: usize) -> usize
where
    Headed<T>: Element,
{
    TEMP_HEADER + <PackedTileStatus<Headed<T>> as TileStatus<Headed<T>>>::bytes(tiles)
}

/// The segmented scan kernel's body. Heads: `flags[i] != 0` when `keys` is null, else
/// `i == 0 || keys[i] != keys[i - 1]`. Inclusive: `output[i]` is the combination of the segment's
/// items up to `i`; exclusive (`exclusive != 0`): up to `i - 1`, the identity at a head.
///
/// Launch `tiles = ceil(len / (BLOCK_THREADS * ITEMS))` blocks of [`BLOCK_THREADS`] threads with
/// [`shared_bytes`] bytes of dynamic shared memory.
///
/// # Safety
/// `input` valid for `len` reads; `flags` or `keys` likewise; `output` valid for `len` writes, not
/// overlapping the input; `temp` as for the device scan, with [`temp_bytes`]`(tiles)` bytes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn segmented_scan_kernel<T: Element, Op: AssociativeOp<T>, const ITEMS: usize>(
    input: *const T,
    flags: *const u8,
    keys: *const u32,
    output: *mut T,
    len: u64,
    exclusive: u32,
    temp: *mut u8,
    tiles: u32,
    epoch: u32,
) where
    Headed<T>: Element,
{
    let mut shared = DynamicShared::new();
    let block_scan = BlockScan::<Headed<T>>::from_allocator(&mut shared);
    let tile_slot = shared.take::<u32>(1);
    let tid = arch::thread_idx_x() as usize;
    // SAFETY: temp's first word is the tile counter; the slot is shared.
    let tile = unsafe { take_tile(temp.cast::<u32>(), tiles, tile_slot) };

    let tile_items = BLOCK_THREADS as usize * ITEMS;
    let tile_start = tile as usize * tile_items;
    let tile_valid = (len as usize - tile_start).min(tile_items);
    let thread_offset = tid * ITEMS;
    let thread_valid = tile_valid.saturating_sub(thread_offset).min(ITEMS);
    let first = tile_start + thread_offset.min(tile_valid);

    let values: [T; ITEMS] = if tile_valid == tile_items {
        // SAFETY: a full tile.
        unsafe { thread::load_blocked::<T, ITEMS>(input.add(first)) }
    } else {
        // SAFETY: only the valid items are read.
        unsafe { thread::load_blocked_partial::<T, ITEMS>(input.add(first), thread_valid, Op::identity()) }
    };
    let mut items = [Segmented::<Op>::identity(); ITEMS];
    for k in 0..ITEMS {
        if k < thread_valid {
            let i = first + k;
            let head = if keys.is_null() {
                // SAFETY: i < len.
                unsafe { arch::load(flags.add(i)) != 0 }
            } else {
                // SAFETY: i < len, and i - 1 >= 0 when read.
                i == 0 || unsafe { arch::load(keys.add(i)) != arch::load(keys.add(i - 1)) }
            };
            items[k] = Headed::new(values[k], head);
        }
    }
    let heads = items;

    // SAFETY: the status follows the header in temp.
    let status = unsafe { PackedTileStatus::<Headed<T>>::new(temp.add(TEMP_HEADER), epoch) };
    let thread_total = thread::reduce::<Headed<T>, Segmented<Op>, ITEMS>(&items);
    let (thread_prefix, _) = block_scan.exclusive_scan_with_prefix::<Segmented<Op>>(thread_total, |aggregate| {
        // SAFETY: tile < tiles; warp 0's 32 lanes run the callback.
        unsafe {
            tile_prefix::<Headed<T>, Segmented<Op>, _, LOOK_BACK_DEPTH>(
                &status,
                tile,
                Segmented::<Op>::identity(),
                aggregate,
            )
        }
    });
    let mut out = [Op::identity(); ITEMS];
    if exclusive != 0 {
        thread::exclusive_scan::<Headed<T>, Segmented<Op>, ITEMS>(&mut items, thread_prefix);
        for k in 0..ITEMS {
            out[k] = if heads[k].head != 0 { Op::identity() } else { items[k].value };
        }
    } else {
        thread::inclusive_scan::<Headed<T>, Segmented<Op>, ITEMS>(&mut items, thread_prefix);
        for k in 0..ITEMS {
            out[k] = items[k].value;
        }
    }
    if tile_valid == tile_items {
        // SAFETY: a full tile.
        unsafe { thread::store_blocked::<T, ITEMS>(output.add(first), &out) };
    } else {
        // SAFETY: only the valid outputs are written.
        unsafe { thread::store_blocked_partial::<T, ITEMS>(output.add(first), &out, thread_valid) };
    }
}

/// Head flags from CSR offsets (`offsets[0..=segments]`): `flags[offsets[s]] = 1` for every non-empty
/// segment; the host zeroes `flags` first. The smallest `s` whose offsets are out of order, or
/// whose end passes `len`, or a first offset that is not 0 or a last that is not `len`, is left in
/// `*bad_segment` (set to `u32::MAX` by the host).
///
/// # Safety
/// `offsets` valid for `segments + 1` reads; `flags` for `len` writes; `bad_segment` valid.
#[inline(always)]
pub unsafe fn offsets_to_flags_kernel(
    offsets: *const u32,
    segments: u64,
    len: u64,
    flags: *mut u8,
    bad_segment: *mut u32,
) {
    let stride = arch::block_dim_x() as usize * arch::grid_dim_x() as usize;
    let mut s = (arch::block_idx_x() * arch::block_dim_x() + arch::thread_idx_x()) as usize;
    while s < segments as usize {
        // SAFETY: s + 1 <= segments.
        let (begin, end) = unsafe { (arch::load(offsets.add(s)) as u64, arch::load(offsets.add(s + 1)) as u64) };
        let bad = begin > end || end > len || (s == 0 && begin != 0) || (s + 1 == segments as usize && end != len);
        if bad {
            // SAFETY: bad_segment valid.
            unsafe { arch::atomic_min_u32_gpu(bad_segment, s as u32) };
        } else if begin < end {
            // SAFETY: begin < end <= len.
            unsafe { arch::store(flags.add(begin as usize), 1) };
        }
        s += stride;
    }
}
