//! Warp scan: Kogge-Stone over shuffles, log2(32) = 5 steps, no shared memory.
//!
//! Every step combines the value from the lower lane first, so non-commutative operators are fine.

use crate::arch::{self, WARP_SIZE};
use crate::ops::{AssociativeOp, Element};

/// Mask of lanes `0..valid_lanes`.
#[inline(always)]
fn lanes_mask(valid_lanes: u32) -> u32 {
    if valid_lanes >= WARP_SIZE {
        u32::MAX
    } else {
        (1u32 << valid_lanes) - 1
    }
}

/// Inclusive scan over lanes `0..valid_lanes` (1 to 32; lanes past it may be absent): lane `i` gets
/// `value_0 ⊕ ... ⊕ value_i`. Called by every lane in `0..valid_lanes`.
#[inline(always)]
pub fn warp_inclusive_scan_partial<T: Element, Op: AssociativeOp<T>>(value: T, valid_lanes: u32) -> T {
    let mask = lanes_mask(valid_lanes);
    let lane = arch::lane_id();
    let mut acc = value;
    let mut offset = 1;
    while offset < WARP_SIZE {
        let lower = arch::shfl_up_sync(mask, acc, offset);
        if lane >= offset {
            acc = Op::combine(lower, acc);
        }
        offset *= 2;
    }
    acc
}

/// Inclusive scan over a full warp.
#[inline(always)]
pub fn warp_inclusive_scan<T: Element, Op: AssociativeOp<T>>(value: T) -> T {
    warp_inclusive_scan_partial::<T, Op>(value, WARP_SIZE)
}

/// Exclusive scan over lanes `0..valid_lanes`: lane `i` gets `value_0 ⊕ ... ⊕ value_{i-1}` (lane 0 the
/// identity), plus the warp aggregate (the combination of all valid lanes) in every lane.
#[inline(always)]
pub fn warp_exclusive_scan_partial<T: Element, Op: AssociativeOp<T>>(value: T, valid_lanes: u32) -> (T, T) {
    let valid = valid_lanes.min(WARP_SIZE);
    let mask = lanes_mask(valid);
    let inclusive = warp_inclusive_scan_partial::<T, Op>(value, valid);
    let shifted = arch::shfl_up_sync(mask, inclusive, 1);
    let exclusive = if arch::lane_id() == 0 { Op::identity() } else { shifted };
    let aggregate = arch::shfl_idx_sync(mask, inclusive, valid - 1);
    (exclusive, aggregate)
}

/// Exclusive scan over a full warp, with the warp aggregate.
#[inline(always)]
pub fn warp_exclusive_scan<T: Element, Op: AssociativeOp<T>>(value: T) -> (T, T) {
    warp_exclusive_scan_partial::<T, Op>(value, WARP_SIZE)
}
