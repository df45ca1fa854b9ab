//! The `exact` family: the exact method: gradients gathered by sorted value, default sides, a level's steps.

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::{DeviceSplit, SplitContext};
use crate::exact::{self, ExactExpansion};
use crate::split::Bounds;

kernel! {
    /// The exact method's gradient gather; see [`exact::gather_kernel`].
    pub unsafe fn boost_exact_gather(rows: *const u32, len: u64, gradients: *const GradientPair<i64>, gathered: *mut GradientPair<i64>) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { exact::gather_kernel(rows, len, gradients, gathered) }
    }
}

kernel! {
    /// The exact method's default sides; see [`exact::default_positions_kernel`].
    pub unsafe fn boost_exact_default_positions(positions: *mut u32, rows: u64, plan: *const i32, plan_len: u64, expansions: *const ExactExpansion) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { exact::default_positions_kernel(positions, rows, plan, plan_len, expansions) }
    }
}

kernel! {
    /// A step of the exact method's level over its entries (`LevelArgs`), by `stage`: 0 the
    /// segments' best keys ([`exact::candidates_kernel`]; `p0` the keys), 1 the nodes' splits
    /// ([`exact::best_kernel`]; keys, splits), 2 the split features' sides
    /// ([`exact::split_positions_kernel`]; positions, expansion by slot, expansions), 3 the entries'
    /// next slots ([`exact::targets_kernel`]; positions, slot by node, its length, targets, left
    /// flags), 4 the next segments' sizes ([`exact::sizes_kernel`]; flags' sums, parent slots, next
    /// slots, sizes), 5 the move ([`exact::scatter_kernel`]; targets, flags' sums, next segments,
    /// next slots, values, rows). The interleaved mode's: 6 a node's masked inputs
    /// ([`exact::mask_kernel`]), 7 its keys ([`exact::interleaved_candidates_kernel`]), 8 its splits
    /// by feature ([`exact::materialize_kernel`]), 9 the nodes' picks ([`exact::pick_kernel`]), 10
    /// the split features' sides ([`exact::interleaved_positions_kernel`]), 11-13 the change to the
    /// sorting layout ([`exact::pack_kernel`], [`exact::count_kernel`], [`exact::unpack_kernel`]).
    pub unsafe fn boost_exact_level(
        values: *const f32,
        rows: *const u32,
        prefix: *const GradientPair<i64>,
        len: u64,
        segments: *const u32,
        slots: u64,
        features: u64,
        totals: *const GradientPair<i64>,
        gains: *const f32,
        bounds: *const Bounds,
        monotone: *const i32,
        uses: *const u8,
        forward: *const u8,
        context: *const SplitContext,
        stage: u64,
        p0: u64,
        p1: u64,
        p2: u64,
        p3: u64,
        p4: u64,
        p5: u64,
    ) {
        let a = exact::LevelArgs {
            values, rows, prefix, len, segments, slots, features, totals, gains, bounds, monotone, uses, forward, context,
        };
        // SAFETY: the host launcher sizes every buffer as the stage's kernel's contract requires.
        unsafe {
            match stage {
                0 => exact::candidates_kernel(&a, p0 as *mut u64),
                1 => exact::best_kernel(&a, p0 as *const u64, p1 as *mut DeviceSplit),
                2 => exact::split_positions_kernel(&a, p0 as *mut u32, p1 as *const i32, p2 as *const ExactExpansion),
                3 => exact::targets_kernel(&a, p0 as *const u32, p1 as *const u32, p2, p3 as *mut u32, p4 as *mut u32),
                4 => exact::sizes_kernel(&a, p0 as *const u32, p1 as *const u32, p2, p3 as *mut u32),
                6 => exact::mask_kernel(&a, p0 as *const u32, p1 as u32, p2 as *const GradientPair<i64>, p3 as *mut GradientPair<i64>, p4 as *mut u32),
                7 => exact::interleaved_candidates_kernel(&a, p0 as *const u32, p1 as u32, p2 as *const u32, p3 as *mut u64),
                8 => exact::materialize_kernel(&a, p0 as u32, p1 as *const u32, p2 as *const u64, p3 as *mut DeviceSplit),
                9 => exact::pick_kernel(&a, p0 as *const DeviceSplit, p1 as *mut DeviceSplit),
                10 => exact::interleaved_positions_kernel(&a, p0 as *const u32, p1 as *mut u32, p2 as *const i32, p3 as *const ExactExpansion),
                11 => exact::pack_kernel(&a, p0 as *mut u64),
                12 => exact::count_kernel(&a, p0 as *const u32, p1, p2 as *mut u32),
                13 => exact::unpack_kernel(&a, p0 as *const u32, p1 as *const u64, p2 as *const u32, p3, p4 as *mut f32, p5 as *mut u32),
                _ => exact::scatter_kernel(&a, p0 as *const u32, p1 as *const u32, p2 as *const u32, p3, p4 as *mut f32, p5 as *mut u32),
            }
        }
    }
}

host_kernels! {
    boost_exact_gather,
    boost_exact_default_positions,
    boost_exact_level,
}
