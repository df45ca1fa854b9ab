//! Thread-level helpers (CUB's `thread/` layer): one thread moving or combining its own items.

use crate::arch;
use crate::ops::{AssociativeOp, Element};

/// True when `ITEMS` elements of `T` at `ptr` can move as whole 16-byte vectors.
#[inline(always)]
pub fn vectorizable<T, const ITEMS: usize>(ptr: *const T) -> bool {
    let bytes = ITEMS * size_of::<T>();
    bytes.is_multiple_of(16) && (ptr as usize).is_multiple_of(16)
}

/// Moves the elements of 16-byte vector `v` into `items` (elements `v * 16 / size ..`). Sizes 4, 8
/// and 16 use `bytemuck::cast`, which keeps everything in registers.
#[inline(always)]
pub(crate) fn unpack_vector<T: Element, const ITEMS: usize>(words: [u32; 4], v: usize, items: &mut [T; ITEMS]) {
    match size_of::<T>() {
        4 => {
            for e in 0..4 {
                items[v * 4 + e] = bytemuck::cast::<u32, T>(words[e]);
            }
        }
        8 => {
            for e in 0..2 {
                items[v * 2 + e] = bytemuck::cast::<[u32; 2], T>([words[2 * e], words[2 * e + 1]]);
            }
        }
        16 => items[v] = bytemuck::cast::<[u32; 4], T>(words),
        size => {
            let bytes = bytemuck::bytes_of(&words);
            for e in 0..16 / size {
                items[v * (16 / size) + e] = bytemuck::pod_read_unaligned(&bytes[e * size..(e + 1) * size]);
            }
        }
    }
}

/// The inverse of [`unpack_vector`].
#[inline(always)]
pub(crate) fn pack_vector<T: Element, const ITEMS: usize>(items: &[T; ITEMS], v: usize) -> [u32; 4] {
    match size_of::<T>() {
        4 => core::array::from_fn(|e| bytemuck::cast::<T, u32>(items[v * 4 + e])),
        8 => {
            let a: [u32; 2] = bytemuck::cast(items[v * 2]);
            let b: [u32; 2] = bytemuck::cast(items[v * 2 + 1]);
            [a[0], a[1], b[0], b[1]]
        }
        16 => bytemuck::cast::<T, [u32; 4]>(items[v]),
        size => {
            let mut words = [0u32; 4];
            let bytes = bytemuck::bytes_of_mut(&mut words);
            for e in 0..16 / size {
                bytes[e * size..(e + 1) * size].copy_from_slice(bytemuck::bytes_of(&items[v * (16 / size) + e]));
            }
            words
        }
    }
}

/// Loads `ITEMS` consecutive elements ("blocked" arrangement) starting at `ptr`, with 16-byte
/// vector loads when [`vectorizable`].
///
/// # Safety
/// `ptr` must be valid for reads of `ITEMS` elements that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn load_blocked<T: Element, const ITEMS: usize>(ptr: *const T) -> [T; ITEMS] {
    let mut items = [T::zeroed(); ITEMS];
    if vectorizable::<T, ITEMS>(ptr) {
        let vectors = ptr.cast::<[u32; 4]>();
        for v in 0..ITEMS * size_of::<T>() / 16 {
            // SAFETY: vector v lies inside the ITEMS elements the caller vouches for; aligned.
            let words = unsafe { arch::load_global_nc_v4(vectors.add(v)) };
            unpack_vector(words, v, &mut items);
        }
    } else {
        for (k, item) in items.iter_mut().enumerate() {
            // SAFETY: k < ITEMS.
            *item = unsafe { arch::load(ptr.add(k)) };
        }
    }
    items
}

/// Loads the first `valid` of `ITEMS` consecutive elements; the others are `fill`.
///
/// # Safety
/// `ptr` must be valid for reads of `valid` elements.
#[inline(always)]
pub unsafe fn load_blocked_partial<T: Element, const ITEMS: usize>(ptr: *const T, valid: usize, fill: T) -> [T; ITEMS] {
    let mut items = [fill; ITEMS];
    // A loop over all ITEMS with a guard (not `take(valid)`) keeps the indices constant after
    // unrolling, and so the array in registers.
    for (k, item) in items.iter_mut().enumerate() {
        if k < valid {
            // SAFETY: k < valid.
            *item = unsafe { arch::load(ptr.add(k)) };
        }
    }
    items
}

/// Stores `ITEMS` consecutive elements at `ptr`, with 16-byte vector stores when [`vectorizable`].
///
/// # Safety
/// `ptr` must be valid for writes of `ITEMS` elements.
#[inline(always)]
pub unsafe fn store_blocked<T: Element, const ITEMS: usize>(ptr: *mut T, items: &[T; ITEMS]) {
    if vectorizable::<T, ITEMS>(ptr) {
        let vectors = ptr.cast::<[u32; 4]>();
        for v in 0..ITEMS * size_of::<T>() / 16 {
            // SAFETY: vector v lies inside the ITEMS elements the caller vouches for; aligned.
            unsafe { arch::store_global_v4(vectors.add(v), pack_vector(items, v)) };
        }
    } else {
        for (k, item) in items.iter().enumerate() {
            // SAFETY: k < ITEMS.
            unsafe { arch::store(ptr.add(k), *item) };
        }
    }
}

/// Stores the first `valid` of `ITEMS` elements.
///
/// # Safety
/// `ptr` must be valid for writes of `valid` elements.
#[inline(always)]
pub unsafe fn store_blocked_partial<T: Element, const ITEMS: usize>(ptr: *mut T, items: &[T; ITEMS], valid: usize) {
    for (k, item) in items.iter().enumerate() {
        if k < valid {
            // SAFETY: k < valid.
            unsafe { arch::store(ptr.add(k), *item) };
        }
    }
}

/// Combination of all items, in order.
#[inline(always)]
pub fn reduce<T: Element, Op: AssociativeOp<T>, const ITEMS: usize>(items: &[T; ITEMS]) -> T {
    let mut acc = items[0];
    for &item in &items[1..] {
        acc = Op::combine(acc, item);
    }
    acc
}

/// `items[k] = prefix ⊕ items[0] ⊕ ... ⊕ items[k]` in place (inclusive), in order.
#[inline(always)]
pub fn inclusive_scan<T: Element, Op: AssociativeOp<T>, const ITEMS: usize>(items: &mut [T; ITEMS], prefix: T) {
    let mut acc = prefix;
    for item in items.iter_mut() {
        acc = Op::combine(acc, *item);
        *item = acc;
    }
}

/// `items[k] = prefix ⊕ items[0] ⊕ ... ⊕ items[k - 1]` in place (exclusive), in order.
#[inline(always)]
pub fn exclusive_scan<T: Element, Op: AssociativeOp<T>, const ITEMS: usize>(items: &mut [T; ITEMS], prefix: T) {
    let mut acc = prefix;
    for item in items.iter_mut() {
        let next = Op::combine(acc, *item);
        *item = acc;
        acc = next;
    }
}

/// Bitwise equality (NaNs with the same bits are equal, +0.0 and -0.0 are not), word by word so
/// that it stays in registers.
#[inline(always)]
pub fn bitwise_eq<T: Element>(a: T, b: T) -> bool {
    if size_of::<T>().is_multiple_of(4) {
        let a: &[u32] = bytemuck::cast_slice(core::slice::from_ref(&a));
        let b: &[u32] = bytemuck::cast_slice(core::slice::from_ref(&b));
        let mut equal = true;
        for (x, y) in a.iter().zip(b) {
            equal &= x == y;
        }
        equal
    } else {
        bytemuck::bytes_of(&a) == bytemuck::bytes_of(&b)
    }
}
