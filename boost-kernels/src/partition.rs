//! Row partitions on the device: after a batch of nodes is split, each node's rows (a range of the
//! row order) are reordered so that the rows going left come first, both parts in their old order
//! (a stable partition, as the CPU builder's). Three launches over the row order: a flag per
//! position ([`flags_kernel`]), an exclusive sum of the flags (the primitives' device scan), then a
//! scatter to each row's new position ([`scatter_kernel`]); [`counts_kernel`] gives each node's
//! count of left rows, the one value per node the host driver reads back, and from it where the
//! children's histograms come from (which child is built from rows, which by subtraction), so that
//! the host enqueues them without waiting.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;

use crate::evaluate::global_thread;

/// One split node of a partition batch: its rows are positions `begin..end` of the row order; a row
/// goes left when its bin of `feature` (the bin's index within the feature) is at most `last_left`,
/// or, when the value is missing, when `default_left` is set. Batches list nodes by increasing
/// `begin`, their ranges apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PartitionSplit {
    pub begin: u32,
    pub end: u32,
    pub feature: u32,
    pub default_left: u32,
    pub last_left: i64,
}

/// Whether a row whose bin of the split's feature is `bin` goes left; `missing` is the bin id of a
/// missing value.
#[inline(always)]
pub fn goes_left(split: &PartitionSplit, bin: u32, missing: u32) -> bool {
    if bin == missing {
        split.default_left != 0
    } else {
        bin as i64 <= split.last_left
    }
}

/// The split whose range holds `position`, if one does (binary search over the batch).
///
/// # Safety
/// `splits` holds `num_splits` splits sorted by `begin`.
#[inline(always)]
unsafe fn split_at(splits: *const PartitionSplit, num_splits: usize, position: u32) -> Option<PartitionSplit> {
    let (mut lo, mut hi) = (0usize, num_splits);
    // The last split that begins at or before `position`.
    while lo < hi {
        let mid = (lo + hi) / 2;
        // SAFETY: `mid < num_splits`.
        if unsafe { arch::load(splits.add(mid)) }.begin <= position {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo == 0 {
        return None;
    }
    // SAFETY: `lo - 1 < num_splits`.
    let split = unsafe { arch::load(splits.add(lo - 1)) };
    (position < split.end).then_some(split)
}

/// The buffers of the partition kernels.
#[repr(C)]
pub struct PartitionArgs {
    /// The row order: `n` row indices.
    pub rows: *const u32,
    pub n: u64,
    /// The bins, row-major, `features` per row, `missing` for a missing value.
    pub bins: *const u16,
    pub features: u64,
    pub missing: u64,
    pub splits: *const PartitionSplit,
    pub num_splits: u64,
}

/// `flags[p]` = 1 when the row at position `p` of the row order goes left, 0 when it goes right or
/// its node is not in the batch; `flags[n]` = 0 (so that the exclusive sum of the `n + 1` flags
/// ends with the total). One thread per flag: launch `n + 1` threads.
///
/// # Safety
/// The buffers hold what [`PartitionArgs`] says, every row index is a row of `bins`, every split's
/// feature below `features`, and `flags` has room for `n + 1` flags.
pub unsafe fn flags_kernel(a: &PartitionArgs, flags: *mut u32) {
    let p = global_thread();
    if p >= a.n {
        if p == a.n {
            // SAFETY: `flags` holds `n + 1` flags.
            unsafe { arch::store(flags.add(p as usize), 0) };
        }
        return;
    }
    // SAFETY: `p < n`; the contract covers the rest.
    unsafe {
        let flag = match split_at(a.splits, a.num_splits as usize, p as u32) {
            Some(split) => {
                let row = arch::load(a.rows.add(p as usize)) as usize;
                let bin = arch::load(a.bins.add(row * a.features as usize + split.feature as usize));
                goes_left(&split, bin as u32, a.missing as u32) as u32
            }
            None => 0,
        };
        arch::store(flags.add(p as usize), flag);
    }
}

/// Writes the row order after the partition to `out`: a row of a split node to its node's left part
/// (at its rank among the left rows) or right part, any other row where it was. `scan` is the
/// exclusive sum of [`flags_kernel`]'s flags, `n + 1` entries. One thread per position.
///
/// # Safety
/// As [`flags_kernel`], with `flags` and `scan` as described and `out` room for `n` rows.
pub unsafe fn scatter_kernel(a: &PartitionArgs, flags: *const u32, scan: *const u32, out: *mut u32) {
    let p = global_thread();
    if p >= a.n {
        return;
    }
    let p = p as usize;
    // SAFETY: `p < n`, every `begin`/`end` at most `n`; the contract covers the rest.
    unsafe {
        let row = arch::load(a.rows.add(p));
        let destination = match split_at(a.splits, a.num_splits as usize, p as u32) {
            Some(split) => {
                let base = arch::load(scan.add(split.begin as usize));
                let left_rank = (arch::load(scan.add(p)) - base) as usize;
                if arch::load(flags.add(p)) != 0 {
                    split.begin as usize + left_rank
                } else {
                    let lefts = (arch::load(scan.add(split.end as usize)) - base) as usize;
                    split.begin as usize + lefts + (p - split.begin as usize - left_rank)
                }
            }
            None => p,
        };
        arch::store(out.add(destination), row);
    }
}

/// Whether a split node's left child gets its histogram from its rows and the right one by
/// subtraction (otherwise the other way round): the child with fewer rows is built, the left one
/// on a tie. Both backends decide with this, so both build the same histograms (not that it
/// changes them: fixed-point sums subtract exactly).
#[inline(always)]
pub fn build_left(left_rows: u64, right_rows: u64) -> bool {
    left_rows <= right_rows
}

/// Where the children of a split node get their histograms: slots `2 * pair` (left) and
/// `2 * pair + 1` (right) of the batch's new buffer, from the parent's sums at address `parent`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ChildSlots {
    pub pair: u32,
    pub padding: u32,
    pub parent: u64,
}

/// One subtraction: `histograms[large] = parent - histograms[small]`, `parent` a device address.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SubtractionPlan {
    pub small: u32,
    pub large: u32,
    pub parent: u64,
}

/// What [`counts_kernel`] also writes when given each split's [`ChildSlots`]: the children's
/// histogram plan, so that the histograms of the children are built and subtracted without the
/// host waiting for the counts.
#[repr(C)]
pub struct ChildPlanArgs {
    /// A [`ChildSlots`] per split (in the splits' order).
    pub children: *const ChildSlots,
    /// Where the splits' positions start in the whole row order (they are rebased to a span).
    pub base: u64,
    /// Per slot, the positions `[begin, end]` of the row order to build it from: the smaller
    /// child's range, and an empty range for its sibling.
    pub ranges: *mut [u32; 2],
    /// Per pair, its subtraction.
    pub plans: *mut SubtractionPlan,
}

/// `lefts[s]`: how many rows of split `s` go left; with `plan.children` not null, also each pair's
/// ranges and subtraction ([`ChildPlanArgs`]). One thread per split.
///
/// # Safety
/// `scan` as in [`scatter_kernel`], `splits` `num_splits` entries within it, `lefts` room for as many;
/// with children, `plan.children` `num_splits` entries whose pairs are distinct and index `ranges`
/// (two slots a pair) and `plans`.
pub unsafe fn counts_kernel(
    scan: *const u32,
    splits: *const PartitionSplit,
    num_splits: u64,
    lefts: *mut u32,
    plan: &ChildPlanArgs,
) {
    let s = global_thread();
    if s >= num_splits {
        return;
    }
    // SAFETY: `s < num_splits`; `begin` and `end` index `scan`; the rest by the contract.
    unsafe {
        let split = arch::load(splits.add(s as usize));
        let count = arch::load(scan.add(split.end as usize)) - arch::load(scan.add(split.begin as usize));
        arch::store(lefts.add(s as usize), count);
        if plan.children.is_null() {
            return;
        }
        let child = arch::load(plan.children.add(s as usize));
        let begin = split.begin + plan.base as u32;
        let (middle, end) = (begin + count, split.end + plan.base as u32);
        let left = build_left(count as u64, (end - middle) as u64);
        let (left_range, right_range) = if left { ([begin, middle], [0, 0]) } else { ([0, 0], [middle, end]) };
        let pair = child.pair as usize;
        arch::store(plan.ranges.add(2 * pair), left_range);
        arch::store(plan.ranges.add(2 * pair + 1), right_range);
        let (small, large) =
            if left { (2 * child.pair, 2 * child.pair + 1) } else { (2 * child.pair + 1, 2 * child.pair) };
        arch::store(plan.plans.add(pair), SubtractionPlan { small, large, parent: child.parent });
    }
}
