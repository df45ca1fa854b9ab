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

use crate::bins::PackedRows;
use crate::evaluate::global_thread;

/// One split node of a partition batch: its rows are positions `begin..end` of the row order; a row
/// goes left when its bin of `feature` (the bin's index within the feature) is at most `last_left`
/// (a numeric split) or is not in the split's categories (a categorical split: `category_words`
/// words of the batch's categories from `categories_at`, [`crate::categorical::CategorySet`]), or,
/// when the value is missing, when `default_left` is set. Batches list nodes by increasing
/// `begin`, their ranges apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PartitionSplit {
    pub begin: u32,
    pub end: u32,
    pub feature: u32,
    pub default_left: u32,
    pub last_left: i64,
    pub categories_at: u32,
    /// 0 for a numeric split.
    pub category_words: u32,
}

/// Whether a row whose bin of the split's feature is `bin` goes left; `missing` is the bin id of a
/// missing value, `categories` the batch's category bitsets.
///
/// # Safety
/// A categorical split's words lie within `categories`.
#[inline(always)]
pub unsafe fn goes_left(split: &PartitionSplit, bin: u32, missing: u32, categories: *const u32) -> bool {
    if bin == missing {
        split.default_left != 0
    } else if split.category_words != 0 {
        let word = bin / 32;
        // SAFETY: word `word` of the split's `category_words` (caller).
        let in_set = word < split.category_words
            && unsafe { arch::load(categories.add((split.categories_at + word) as usize)) } >> (bin % 32) & 1 != 0;
        !in_set
    } else {
        bin as i64 <= split.last_left
    }
}

/// Positions per entry of a batch's split index ([`PartitionArgs::split_index`]).
pub const SPLIT_INDEX_SHIFT: u32 = 12;

/// Entry `b` of a batch's split index: the index of the last split that begins at or before
/// position `b << SPLIT_INDEX_SHIFT` (0 when none does), for `b` in `0..=n >> SPLIT_INDEX_SHIFT`
/// plus one (`n` the span's positions). Both launchers of the kernels that read it use this.
pub fn split_index_entry(begins: &[u32], b: usize) -> u32 {
    let position = (b as u64) << SPLIT_INDEX_SHIFT;
    (begins.partition_point(|&begin| begin as u64 <= position).max(1) - 1) as u32
}

/// The split whose range holds `position`, if one does: a binary search over the batch, or over
/// the few splits between two entries of its split index when there is one (a depthwise level's
/// many nodes would otherwise cost every thread a chain of dependent loads).
///
/// # Safety
/// `a.splits` holds `a.num_splits` splits sorted by `begin`; `a.split_index` is null or holds the
/// entries of [`split_index_entry`] for `position`'s entry and the next.
#[inline(always)]
unsafe fn split_at(a: &PartitionArgs, position: u32) -> Option<PartitionSplit> {
    let (splits, num_splits) = (a.splits, a.num_splits as usize);
    let (mut lo, mut hi) = if a.split_index.is_null() {
        (0usize, num_splits)
    } else {
        let b = (position >> SPLIT_INDEX_SHIFT) as usize;
        // SAFETY: entries `b` and `b + 1` exist (caller). The answer, the last split beginning at
        // or before `position`, is at least entry `b`'s split and at most entry `b + 1`'s.
        unsafe { (arch::load(a.split_index.add(b)) as usize, arch::load(a.split_index.add(b + 1)) as usize + 1) }
    };
    hi = hi.min(num_splits);
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

/// The bins of the kernels that read none (the scatter).
pub const NO_BINS: PackedRows = PackedRows { words: core::ptr::null(), row_words: 0, bits: 1 };

/// The buffers of the partition kernels.
#[repr(C)]
pub struct PartitionArgs {
    /// The row order: `n` row indices.
    pub rows: *const u32,
    pub n: u64,
    /// The packed bins ([`crate::bins`]), the all-ones id for a missing value.
    pub bins: PackedRows,
    pub splits: *const PartitionSplit,
    pub num_splits: u64,
    /// Null, or the batch's split index ([`split_index_entry`]: `(n >> SPLIT_INDEX_SHIFT) + 2`
    /// entries).
    pub split_index: *const u32,
    /// The categorical splits' bitsets (null when the batch has none, or the kernel reads no bins).
    pub categories: *const u32,
}

/// `flags[p]` = 1 when the row at position `p` of the row order goes left, 0 when it goes right or
/// its node is not in the batch; `flags[n]` = 0 (so that the exclusive sum of the `n + 1` flags
/// ends with the total). One thread per flag: launch `n + 1` threads.
///
/// # Safety
/// The buffers hold what [`PartitionArgs`] says, every row index is a row of `bins`, every split's
/// feature below the bins' features, and `flags` has room for `n + 1` flags.
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
        let flag = match split_at(a, p as u32) {
            Some(split) => {
                let row = arch::load(a.rows.add(p as usize)) as usize;
                let bin = a.bins.get(row, split.feature as usize);
                goes_left(&split, bin, (1u32 << a.bins.bits) - 1, a.categories) as u32
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
        let destination = match split_at(a, p as u32) {
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

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use primitives_kernels::emu::{Emulator, LaunchConfig, Schedule};

    use super::*;

    /// With the split index, every position finds the split a search over the whole batch finds:
    /// nodes smaller and larger than an index entry's positions, gaps between them, a batch that
    /// starts after position 0.
    #[test]
    fn the_split_index_finds_what_the_whole_search_finds() {
        let sizes = [5u32, 9000, 1, 1, 4096, 4095, 20000, 3, 70, 8192, 2];
        let mut splits = Vec::new();
        let mut at = 100u32;
        for (i, &size) in sizes.iter().enumerate() {
            splits.push(PartitionSplit { begin: at, end: at + size, feature: i as u32, ..Default::default() });
            at += size + if i % 3 == 0 { 17 } else { 0 };
        }
        let n = at + 50;
        let begins: Vec<u32> = splits.iter().map(|s| s.begin).collect();
        let index: Vec<u32> =
            (0..((n >> SPLIT_INDEX_SHIFT) + 2) as usize).map(|b| split_index_entry(&begins, b)).collect();
        // On the emulator (the searches read through `arch`): each position's split, or u32::MAX,
        // by the whole search and by the index.
        let device = Emulator::new(Schedule::Deterministic);
        let upload = |bytes: &[u8]| {
            let mut memory = device.alloc(bytes.len());
            memory.write_bytes(bytes);
            memory
        };
        let (splits_memory, index_memory) =
            (upload(bytemuck::cast_slice(&splits)), upload(bytemuck::cast_slice(&index)));
        let found_memory = device.alloc(8 * n as usize);
        let (splits_at, index_at, found_at) = (splits_memory.address(), index_memory.address(), found_memory.address());
        let config = LaunchConfig { grid_dim: 1, block_dim: 1, shared_mem_bytes: 0 };
        let search = || {
            let args = |split_index: u64| PartitionArgs {
                rows: core::ptr::null(),
                n: n as u64,
                bins: NO_BINS,
                splits: splits_at as *const PartitionSplit,
                num_splits: sizes.len() as u64,
                split_index: split_index as *const u32,
                categories: core::ptr::null(),
            };
            let (whole, indexed) = (args(0), args(index_at));
            let feature = |split: Option<PartitionSplit>| split.map_or(u32::MAX, |s| s.feature);
            for p in 0..n {
                // SAFETY: the splits are sorted by `begin`; the index has an entry for `p`'s and the
                // next; two results a position.
                unsafe {
                    let out = (found_at as *mut u32).add(2 * p as usize);
                    arch::store(out, feature(split_at(&whole, p)));
                    arch::store(out.add(1), feature(split_at(&indexed, p)));
                }
            }
        };
        device.launch("split_at", config, &search).unwrap();
        let mut found = std::vec![0u32; 2 * n as usize];
        found_memory.read_bytes(bytemuck::cast_slice_mut(&mut found));
        for (p, pair) in found.chunks(2).enumerate() {
            assert_eq!(pair[0], pair[1], "position {p}");
        }
        let found = found.chunks(2).filter(|pair| pair[0] != u32::MAX).count() as u32;
        assert_eq!(found, sizes.iter().sum::<u32>());
    }
}
