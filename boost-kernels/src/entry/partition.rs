//! The `partition` family: the rows' partition by the chosen splits, and the children's histogram plan.

use primitives_kernels::kernel;

use crate::bins::PackedRows;
use crate::partition::{self, ChildPlanArgs, ChildSlots, PartitionArgs, PartitionSplit, SubtractionPlan};

kernel! {
    /// A left/right flag per position of the row order; see [`partition::flags_kernel`].
    pub unsafe fn boost_partition_flags(
        rows: *const u32,
        n: u64,
        bins: *const u32,
        row_words: u64,
        bits: u64,
        splits: *const PartitionSplit,
        num_splits: u64,
        split_index: *const u32,
        categories: *const u32,
        flags: *mut u32,
    ) {
        let bins = PackedRows { words: bins, row_words: row_words as usize, bits: bits as u32 };
        let args = PartitionArgs { rows, n, bins, splits, num_splits, split_index, categories };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { partition::flags_kernel(&args, flags) }
    }
}

kernel! {
    /// The row order after the partition; see [`partition::scatter_kernel`].
    pub unsafe fn boost_partition_scatter(
        rows: *const u32,
        n: u64,
        splits: *const PartitionSplit,
        num_splits: u64,
        split_index: *const u32,
        flags: *const u32,
        scan: *const u32,
        out: *mut u32,
    ) {
        let categories = core::ptr::null();
        let args = PartitionArgs { rows, n, bins: partition::NO_BINS, splits, num_splits, split_index, categories };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { partition::scatter_kernel(&args, flags, scan, out) }
    }
}

kernel! {
    /// Each split node's count of left rows; see [`partition::counts_kernel`].
    pub unsafe fn boost_partition_counts(
        scan: *const u32,
        splits: *const PartitionSplit,
        num_splits: u64,
        lefts: *mut u32,
        children: *const ChildSlots,
        base: u64,
        ranges: *mut [u32; 2],
        plans: *mut SubtractionPlan,
    ) {
        let plan = ChildPlanArgs { children, base, ranges, plans };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { partition::counts_kernel(scan, splits, num_splits, lefts, &plan) }
    }
}

host_kernels! {
    boost_partition_flags,
    boost_partition_scatter,
    boost_partition_counts,
}
