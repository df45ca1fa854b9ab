//! The queues' summaries merged a column at a time: a round of the columns' merge trees at once
//! ([`tree_kernel`]), or a column's binary counter in order ([`merge_kernel`]).

use primitives_kernels::arch;
use primitives_kernels::block::BlockScan;

use super::*;

use super::block::{Block, Run};

/// What [`merge_kernel`] reads and writes.
#[derive(Clone, Copy)]
pub struct ColumnMerges {
    pub cols: u64,
    /// The pruned summaries of the queues ([`summaries_kernel`]), column after column:
    /// `column_queues[c]..column_queues[c + 1]` are column `c`'s.
    pub summaries: *mut SketchEntry,
    pub summary_lens: *const u32,
    pub summary_offsets: *const u64,
    pub column_queues: *const u64,
    /// A limit a column.
    pub limits: *const u32,
    /// A column's scratch, from `scratch_offsets[c]`: `levels[c]` levels of `limit` entries, then
    /// `5 limit` more ([`MERGE_SCRATCH`]).
    pub scratch: *mut SketchEntry,
    pub scratch_offsets: *const u64,
    pub levels: *const u32,
    /// A column's merged summary (room for `limit`), and its length.
    pub merged: *mut SketchEntry,
    pub merged_offsets: *const u64,
    pub merged_lens: *mut u32,
    /// Whether a column's levels left the binary tree ([`tree_kernel`]): 0 when its merge takes
    /// the tree's nodes, else the sequential merge. Its tree's first node of round `r` is
    /// `round_starts[c * TREE_ROUNDS + r]` (the summaries' index, the queues' being round 0).
    pub diverged: *const u32,
    pub round_starts: *const u32,
}

/// The most rounds of a column's tree ([`tree_kernel`]): one a bit of a queue count.
pub const TREE_ROUNDS: usize = 64;

/// What [`tree_kernel`] reads and writes: one round of the columns' trees.
#[derive(Clone, Copy)]
pub struct TreeRound {
    /// A task a node of the round: its older child, its newer child, itself (indices of the
    /// summaries) and its column.
    pub tasks: *const [u32; 4],
    pub tasks_len: u64,
    /// The summaries (queues' and nodes'), where each lies and its length.
    pub summaries: *mut SketchEntry,
    pub offsets: *const u64,
    pub lens: *mut u32,
    pub limits: *const u32,
    /// A task's scratch (`3 limit` entries) from `scratch_offsets[task]`.
    pub scratch: *mut SketchEntry,
    pub scratch_offsets: *const u64,
    /// Set for a column where a node's combined summary holds `limit` entries or fewer.
    pub diverged: *mut u32,
}

/// A block a node of a round of the columns' merge trees. When every combine of a column's binary
/// counter carries (more than `limit` entries: values rarely repeat), its levels are a binary tree
/// over the queue summaries in order: a level-`r + 1` summary is `prune(combine(newer, older))` of
/// two level-`r` summaries of consecutive blocks of pushes, so a round's nodes are independent
/// and the tree is built a round at a time, every column's nodes at once. A combine of `limit`
/// entries or fewer would have stayed at its level: the column is marked, and [`merge_kernel`]
/// runs its binary counter in order instead.
///
/// # Safety
/// As [`TreeRound`] says; the children are summaries of the task's column; [`MERGE_SHARED_BYTES`]
/// of dynamic shared memory.
pub unsafe fn tree_kernel(t: TreeRound) {
    let task = arch::block_idx_x() as usize;
    if task as u64 >= t.tasks_len {
        return;
    }
    let block = Block::new();
    // SAFETY: the children, the node and the scratch lie where the host put them.
    unsafe {
        let [older, newer, node, col] = arch::load(t.tasks.add(task));
        let run = |s: u32| Run {
            at: t.summaries.add(arch::load(t.offsets.add(s as usize)) as usize),
            len: arch::load(t.lens.add(s as usize)) as usize,
        };
        let limit = arch::load(t.limits.add(col as usize)) as usize;
        let scratch = t.scratch.add(arch::load(t.scratch_offsets.add(task)) as usize);
        let combined = block.combine(run(newer), run(older), scratch);
        if combined.len <= limit && arch::thread_idx_x() == 0 {
            arch::store(t.diverged.add(col as usize), 1);
        }
        let out = run(node);
        let pruned = block.prune(combined, limit, out.at, scratch.add(2 * limit) as *mut u32);
        if arch::thread_idx_x() == 0 {
            arch::store(t.lens.add(node as usize), pruned.len as u32);
        }
    }
}

/// Scratch of a column's merge past its levels, in summaries of `limit` entries: the combined
/// summary (2), the pruned one (1), the words of the block's searches (1) and the level the last
/// queue's summary settles in when the levels are the tree's (1).
pub const MERGE_SCRATCH: usize = 5;

/// The dynamic shared memory of a [`merge_kernel`] block, in bytes.
pub const MERGE_SHARED_BYTES: usize = BlockScan::<u32>::SHARED_BYTES + BlockScan::<f32>::SHARED_BYTES + 16 + 16;

/// The most levels of a column's sketch: a queue count below 2^64 carries to level 64 at most.
const MAX_LEVELS: usize = TREE_ROUNDS + 1;

/// A column's scratch buffers of the merge (each [`MERGE_SCRATCH`] part of its scratch).
#[derive(Clone, Copy)]
struct MergeScratch {
    combined: *mut SketchEntry,
    pruned: *mut SketchEntry,
    words: *mut u32,
    settled: *mut SketchEntry,
    limit: usize,
}

impl Block {
    /// `PushSummary`: `summary` carried up `levels` as a binary counter, the whole block on each
    /// prune and combine: at level `l`, pruned to `limit` and combined with the level's summary,
    /// which it replaces when the result has `limit` entries or fewer; otherwise it empties the
    /// level and goes up. A summary that settles is written to `place(l)`; a carry past level
    /// `height - 1` traps (the host sizes the levels for the binary counter: never reached).
    ///
    /// # Safety
    /// The levels' summaries and `summary` lie outside the scratch's `combined` and `pruned`
    /// (or `summary` in `combined`), `place(l)` for `l < height` has room for `limit` entries and
    /// holds no level read after it is written; `height <= MAX_LEVELS`.
    unsafe fn push_summary(
        &self,
        levels: &mut [Run; MAX_LEVELS],
        mut summary: Run,
        s: MergeScratch,
        (place, height): (impl Fn(usize) -> *mut SketchEntry, usize),
    ) {
        let mut l = 0;
        // SAFETY: as the caller promises.
        unsafe {
            loop {
                if l >= height {
                    arch::trap();
                }
                let level = levels[l];
                if level.len == 0 {
                    levels[l] = self.prune(summary, s.limit, place(l), s.words);
                    return;
                }
                let small = self.prune(summary, s.limit, s.pruned, s.words);
                let merged = self.combine(small, level, s.combined);
                if merged.len <= s.limit {
                    levels[l] = self.copy(merged, merged.len, place(l));
                    return;
                }
                levels[l].len = 0;
                summary = merged;
                l += 1;
            }
        }
    }

    /// `GetSummary`'s merge of the levels, the lowest first, each merge pruned to `limit`, into
    /// `out` (room for `limit`).
    ///
    /// # Safety
    /// The levels lie outside `out` and the scratch's `combined`.
    unsafe fn merge_levels(&self, levels: &[Run; MAX_LEVELS], s: MergeScratch, out: *mut SketchEntry) -> Run {
        let mut merged = Run { at: out, len: 0 };
        for &level in levels.iter().filter(|level| level.len > 0) {
            // SAFETY: as the caller promises.
            merged = unsafe {
                if merged.len == 0 {
                    self.copy(level, level.len, out)
                } else {
                    let both = self.combine(merged, level, s.combined);
                    self.prune(both, s.limit, out, s.words)
                }
            };
        }
        merged
    }
}

/// A block a column: the host's sketch of the column from its queue summaries (`PushSummary` of
/// each, in order, then `GetSummary`'s merge of the levels), each prune and combine done by the
/// whole block (the block's prune and combine, which give [`prune`]'s and [`combine`]'s entries).
/// A column whose levels are [`tree_kernel`]'s tree takes them from there and pushes only its last
/// queue's summary.
///
/// # Safety
/// As [`ColumnMerges`] says; every level count is at least the binary counter's height, and at
/// most 64; [`MERGE_SHARED_BYTES`] of dynamic shared memory.
pub unsafe fn merge_kernel(m: ColumnMerges) {
    let col = arch::block_idx_x() as usize;
    if col as u64 >= m.cols {
        return;
    }
    let block = Block::new();
    // SAFETY: every summary read and written lies in the column's regions (the caller).
    unsafe {
        let limit = arch::load(m.limits.add(col)) as usize;
        let levels_len = arch::load(m.levels.add(col)) as usize;
        let scratch = m.scratch.add(arch::load(m.scratch_offsets.add(col)) as usize);
        let level_at = |l: usize| scratch.add(l * limit);
        let s = MergeScratch {
            combined: scratch.add(levels_len * limit),
            pruned: scratch.add((levels_len + 2) * limit),
            words: scratch.add((levels_len + 3) * limit) as *mut u32,
            settled: scratch.add((levels_len + 4) * limit),
            limit,
        };
        let (first, end) =
            (arch::load(m.column_queues.add(col)) as usize, arch::load(m.column_queues.add(col + 1)) as usize);
        let queue = |q: usize| Run {
            at: m.summaries.add(arch::load(m.summary_offsets.add(q)) as usize),
            len: arch::load(m.summary_lens.add(q)) as usize,
        };
        let mut levels = [Run { at: scratch, len: 0 }; MAX_LEVELS];
        if arch::load(m.diverged.add(col)) == 0 {
            // The tree's nodes are the levels of all pushes but the last: round `r`'s last node
            // where bit `r` of their count is set.
            let pushes = end.saturating_sub(first + 1);
            for (r, level) in levels.iter_mut().enumerate().take(TREE_ROUNDS) {
                if (pushes >> r) & 1 == 1 {
                    let start = arch::load(m.round_starts.add(col * TREE_ROUNDS + r)) as usize;
                    *level = queue(start + (pushes >> r) - 1);
                }
            }
            if end > first {
                block.push_summary(&mut levels, queue(end - 1), s, (|_| s.settled, MAX_LEVELS));
            }
        } else {
            for q in first..end {
                block.push_summary(&mut levels, queue(q), s, (level_at, levels_len.min(MAX_LEVELS)));
            }
        }
        let out = m.merged.add(arch::load(m.merged_offsets.add(col)) as usize);
        let merged = block.merge_levels(&levels, s, out);
        if arch::thread_idx_x() == 0 {
            arch::store(m.merged_lens.add(col), merged.len as u32);
        }
    }
}
