//! Warp multireduce and multiscan over interleaved buckets (Mitchell & Frank 2017, listing 5): for
//! each bucket present among the warp's items, one ordinary warp reduce or scan with the items of
//! other buckets masked off (they contribute the identity). The cost is one pass per *live* bucket,
//! so it suits small bucket counts (tree levels up to about 6 in the paper).

use crate::arch::{self, FULL_MASK};
use crate::ops::{AssociativeOp, Element};
use crate::warp;

/// One item per lane: `value` in `bucket` when `valid`. Calls `emit(bucket, warp_total)` in lane 0
/// for every bucket present, in increasing lane order of first appearance. Called by all 32 lanes.
#[inline(always)]
pub fn warp_multireduce<T: Element, Op: AssociativeOp<T>>(
    value: T,
    bucket: u32,
    valid: bool,
    mut emit: impl FnMut(u32, T),
) {
    let lane = arch::lane_id();
    let mut pending = arch::ballot_sync(FULL_MASK, valid);
    while pending != 0 {
        let leader = pending.trailing_zeros();
        let current = arch::shfl_idx_sync(FULL_MASK, bucket, leader);
        let members = arch::ballot_sync(FULL_MASK, valid && bucket == current);
        let contribution = if members & (1 << lane) != 0 { value } else { Op::identity() };
        let total = warp::warp_reduce::<T, Op>(contribution);
        if lane == 0 {
            emit(current, total);
        }
        pending &= !members;
    }
}

/// One item per lane: returns the lane's exclusive scan within its own bucket over the warp's lanes in
/// order, seeded by `carry(bucket)` (read by every lane of the bucket); calls `advance(bucket,
/// warp_total)` in lane 0 for every bucket present so the caller can move its carry on. Items with
/// `valid == false` get the identity. Called by all 32 lanes.
#[inline(always)]
pub fn warp_multiscan<T: Element, Op: AssociativeOp<T>>(
    value: T,
    bucket: u32,
    valid: bool,
    carry: impl Fn(u32) -> T,
    mut advance: impl FnMut(u32, T),
) -> T {
    let lane = arch::lane_id();
    let mut result = Op::identity();
    let mut pending = arch::ballot_sync(FULL_MASK, valid);
    while pending != 0 {
        let leader = pending.trailing_zeros();
        let current = arch::shfl_idx_sync(FULL_MASK, bucket, leader);
        let members = arch::ballot_sync(FULL_MASK, valid && bucket == current);
        let member = members & (1 << lane) != 0;
        let contribution = if member { value } else { Op::identity() };
        let (exclusive, total) = warp::warp_exclusive_scan::<T, Op>(contribution);
        if member {
            result = Op::combine(carry(current), exclusive);
        }
        // Every member read the carry above; the barrier-free order within the warp is kept by the
        // shuffle below, which all lanes reach after their reads.
        arch::sync_warp(FULL_MASK);
        if lane == 0 {
            advance(current, total);
        }
        arch::sync_warp(FULL_MASK);
        pending &= !members;
    }
    result
}
