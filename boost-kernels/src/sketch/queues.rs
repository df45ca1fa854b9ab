//! The columns' queues of at most a sketch's batch of values, their entries (the distinct values
//! with their weights) and each queue's pruned summary.

use primitives_kernels::arch;

use crate::evaluate::global_thread;

use super::*;

use super::block::{Block, Run, Sorted};
use super::columns::upper_bound;

/// A queue of the sketch: values `start..end` of the column-major kept values, whose first value
/// lies in run `run` (a global run number); its entries are the runs `run..=` that of `end - 1`,
/// the first from `start` on.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SketchQueue {
    pub start: u32,
    pub end: u32,
    pub run: u32,
    pub entries: u32,
}

/// A thread a column: the column's queues, as the host's sketch fills them (see
/// `boost::quantile::queue_starts`): a queue takes entries (runs of equal values) until it holds
/// `2 limit`, and the value after the start of its last entry starts the next one. `runs` are the
/// inclusive sums of [`heads_kernel`]'s flags (run `r` of the column-major values is numbered `r +
/// 1`); queue `q` of column `c` goes to `queues[queue_offsets[c] + q]`, the column's count to
/// `counts[c]`.
///
/// # Safety
/// `runs` holds the `col_starts[cols]` run numbers; `limits` a limit a column (at least 1);
/// `queues` room for every column's queues from its offset.
pub unsafe fn queues_kernel(
    runs: *const u32,
    col_starts: *const u64,
    cols: u64,
    limits: *const u32,
    queue_offsets: *const u64,
    queues: *mut SketchQueue,
    counts: *mut u32,
) {
    let col = global_thread();
    if col >= cols {
        return;
    }
    // SAFETY: `col < cols`; every index loaded below lies in the column.
    unsafe {
        let (begin, end) =
            (arch::load(col_starts.add(col as usize)) as u32, arch::load(col_starts.add(col as usize + 1)) as u32);
        let full = 2 * arch::load(limits.add(col as usize));
        let out = queues.add(arch::load(queue_offsets.add(col as usize)) as usize);
        let run_at = |i: u32| arch::load(runs.add(i as usize));
        let mut count = 0usize;
        let mut start = begin;
        while start < end {
            let run = run_at(start);
            let last_run = run_at(end - 1);
            // The queue's last entry starts at the first value of run `run + full - 1`: the first
            // value past it starts the next queue.
            // (A queue of exactly `full` entries at the column's end is full too: a value after its
            // last entry's first starts a new one.)
            let next = if last_run - run + 1 >= full {
                let target = run + full - 1;
                let first =
                    start + upper_bound((end - start) as usize, |k| run_at(start + k as u32), target - 1) as u32;
                first + 1
            } else {
                end
            };
            let next = if next >= end { end } else { next };
            let entries = run_at(next - 1) - run + 1;
            arch::store(out.add(count), SketchQueue { start, end: next, run, entries });
            count += 1;
            start = next;
        }
        arch::store(counts.add(col as usize), count as u32);
    }
}

/// Where the entries of a launch's queues go, and what they come from.
#[derive(Clone, Copy)]
pub struct QueueEntries {
    /// The column-major kept values, their weights (null: all 1) and run numbers.
    pub values: *const f32,
    pub weights: *const f32,
    pub runs: *const u32,
    pub n: u64,
    /// The launch's queues in column order, `queues_len` of them, and the first entry of each
    /// (`queues_len + 1` offsets).
    pub queues: *const SketchQueue,
    pub queues_len: u64,
    pub entry_offsets: *const u32,
    /// A queue's entries: their values (the sort's keys) and their weights (its values).
    pub keys: *mut f32,
    pub entry_weights: *mut f32,
}

/// A thread a kept value: a value that starts an entry of its queue (the queue's first, or a run's
/// first) writes the entry: its value and its weight, the weights of
/// the entry's values added in order in `f32` (as the host's queue adds them).
///
/// # Safety
/// As [`QueueEntries`] says: the queues cover the `n` values in order; the entry arrays hold
/// `entry_offsets[queues_len]` entries.
pub unsafe fn entries_kernel(q: QueueEntries) {
    let i = global_thread();
    if i >= q.n {
        return;
    }
    // SAFETY: `i < n`; the queue found covers `i`, its entries are within the arrays.
    unsafe {
        let at = |k: usize| arch::load(q.queues.add(k));
        let queue_index = upper_bound(q.queues_len as usize, |k| at(k).start, i as u32) - 1;
        let queue = at(queue_index);
        let run_at = |k: u64| arch::load(q.runs.add(k as usize));
        let run = run_at(i);
        if i as u32 != queue.start && run == run_at(i - 1) {
            return;
        }
        let weight_at = |k: u64| if q.weights.is_null() { 1.0 } else { arch::load(q.weights.add(k as usize)) };
        let mut weight = weight_at(i);
        let mut k = i + 1;
        while k < queue.end as u64 && run_at(k) == run {
            weight += weight_at(k);
            k += 1;
        }
        let index = run - queue.run;
        let entry = arch::load(q.entry_offsets.add(queue_index)) as usize + index as usize;
        arch::store(q.keys.add(entry), arch::load(q.values.add(i as usize)));
        arch::store(q.entry_weights.add(entry), weight);
    }
}

/// What [`summaries_kernel`] reads and writes.
#[derive(Clone, Copy)]
pub struct QueueSummaries {
    /// Each queue's entries sorted by value (stable: equal values' weights in queue order): values
    /// and weights.
    pub sorted_keys: *const f32,
    pub sorted_weights: *const f32,
    pub entry_offsets: *const u32,
    /// The queues (for their value counts), `queues_len` of them; whether every weight is 1.
    pub queues: *const SketchQueue,
    pub queues_len: u64,
    pub unit_weights: bool,
    /// A limit a queue (its column's), and where its pruned summary goes (room for `limit`
    /// entries; as many words of scratch at the same offset of `words`).
    pub limits: *const u32,
    pub summary_offsets: *const u64,
    /// Room for every queue's exact summary (as many as its entries).
    pub exact: *mut SketchEntry,
    pub summaries: *mut SketchEntry,
    pub summary_lens: *mut u32,
    pub words: *mut u32,
}

/// A block a queue: its exact summary ([`summarize`]), pruned to its column's limit ([`prune`]),
/// as the host's sketch makes it. With unit weights (each entry's weight the length of a run of
/// values, at most 2^24 of them in the queue) every partial sum of the weights is an integer that
/// `f32` holds exactly, in any order: the ranks are block scans (`Block::summarize_counts`).
/// Otherwise the sums must be the host's, in order (`Block::summarize_in_order`).
///
/// # Safety
/// As [`QueueSummaries`] says; [`MERGE_SHARED_BYTES`] of dynamic shared memory.
pub unsafe fn summaries_kernel(s: QueueSummaries) {
    let q = arch::block_idx_x() as usize;
    if q as u64 >= s.queues_len {
        return;
    }
    let block = Block::new();
    // SAFETY: the queue's entries, exact summary, pruned summary and words are within the arrays.
    unsafe {
        let (first, end) =
            (arch::load(s.entry_offsets.add(q)) as usize, arch::load(s.entry_offsets.add(q + 1)) as usize);
        let sorted = Sorted { keys: s.sorted_keys.add(first), weights: s.sorted_weights.add(first), len: end - first };
        let exact = s.exact.add(first);
        let queue = arch::load(s.queues.add(q));
        let groups = if s.unit_weights && queue.end - queue.start <= 1 << 24 {
            block.summarize_counts(sorted, exact)
        } else {
            block.summarize_in_order(sorted, exact)
        };
        let offset = arch::load(s.summary_offsets.add(q)) as usize;
        let limit = arch::load(s.limits.add(q)) as usize;
        let pruned = block.prune(Run { at: exact, len: groups }, limit, s.summaries.add(offset), s.words.add(offset));
        if arch::thread_idx_x() == 0 {
            arch::store(s.summary_lens.add(q), pruned.len as u32);
        }
    }
}
