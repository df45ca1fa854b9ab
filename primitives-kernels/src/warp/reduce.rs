//! Warp reduce: log2(32) = 5 shuffle steps, no shared memory.
//!
//! The shuffle distance grows (1, 2, 4, 8, 16), so after step `s` lane `i` holds lanes
//! `i..i + 2^s` combined in lane order: a non-commutative operator (the segmented operator of the
//! segmented scan's look-back) gets its operands in order. A shrinking distance (16, 8, ...) would
//! combine lane 0 with lane 16 first, which commutative operators hide and non-commutative ones do not.

use crate::arch::{self, FULL_MASK, WARP_SIZE};
use crate::ops::{AssociativeOp, Element};

/// Reduces `value` over the 32 lanes of a full warp; the result is valid in lane 0.
///
/// Operands are combined in lane order, so non-commutative operators are fine.
#[inline(always)]
pub fn warp_reduce<T: Element, Op: AssociativeOp<T>>(value: T) -> T {
    let mut acc = value;
    let mut offset = 1;
    while offset < WARP_SIZE {
        // Lane i (holding lanes i..i + offset) appends lanes i + offset..i + 2 offset. Lanes whose
        // partner is past lane 31 get their own value back; their results are never read by lane 0.
        let other = arch::shfl_down_sync(FULL_MASK, acc, offset);
        acc = Op::combine(acc, other);
        offset *= 2;
    }
    acc
}

/// Reduces `value` over lanes `0..valid_lanes` of a warp (1 <= `valid_lanes` <= 32); lanes at or past
/// `valid_lanes` may be absent. Called by every lane in `0..valid_lanes`; the result is valid in lane 0.
#[inline(always)]
pub fn warp_reduce_partial<T: Element, Op: AssociativeOp<T>>(value: T, valid_lanes: u32) -> T {
    if valid_lanes >= WARP_SIZE {
        return warp_reduce::<T, Op>(value);
    }
    let mask = (1u32 << valid_lanes) - 1;
    let lane = arch::lane_id();
    let mut acc = value;
    let mut offset = 1;
    while offset < WARP_SIZE {
        // Lane i holds lanes i..min(i + offset, valid_lanes) in order.
        let other = arch::shfl_down_sync(mask, acc, offset);
        if lane + offset < valid_lanes {
            acc = Op::combine(acc, other);
        }
        offset *= 2;
    }
    acc
}

/// Reduces `value` over a full warp and gives the result to every lane (butterfly exchange).
///
/// Each step combines the lower-indexed half first, so non-commutative operators are fine.
#[inline(always)]
pub fn warp_all_reduce<T: Element, Op: AssociativeOp<T>>(value: T) -> T {
    let lane = arch::lane_id();
    let mut acc = value;
    let mut offset = 1;
    while offset < WARP_SIZE {
        let other = arch::shfl_xor_sync(FULL_MASK, acc, offset);
        acc = if lane & offset == 0 { Op::combine(acc, other) } else { Op::combine(other, acc) };
        offset *= 2;
    }
    acc
}
