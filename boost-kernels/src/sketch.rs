//! XGBoost's weighted quantile summary (`WQSummary<float, float>`): the arithmetic of its exact
//! summary of a queue, `SetPrune` and `SetCombine` with `FixError`, written once. `boost`'s
//! quantile cuts run them on the host, a summary after another (`boost::quantile`); the device's
//! sketch runs the same functions a thread a queue, and its parallel merge computes each entry
//! with the same element formulas ([`SketchEntry::merged_with`], [`SketchEntry::merged_alone`],
//! [`prune_target`], [`prune_passes`], [`prune_picks_first`]), so both give the same summaries, bit
//! for bit, and the cuts of a column are XGBoost 3.4's CPU cuts on either.
//!
//! The ranks are `f32`, as XGBoost's: its pruning decisions depend on their rounding.
//!
//! The sequential functions read entries through `Fn(usize) -> SketchEntry` and write them through
//! `FnMut(SketchEntry)`, so that the host passes slices and `Vec::push` and a device thread passes
//! checked loads and stores.

/// An entry of a summary: a value with bounds on the weight strictly below it (`rmin`), up to and
/// including it (`rmax`), and its own weight (`wmin`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SketchEntry {
    pub rmin: f32,
    pub rmax: f32,
    pub wmin: f32,
    pub value: f32,
}

impl SketchEntry {
    /// The smallest rank of a value above this one.
    #[inline]
    pub fn rmin_next(&self) -> f32 {
        self.rmin + self.wmin
    }

    /// The largest rank of a value below this one.
    #[inline]
    pub fn rmax_prev(&self) -> f32 {
        self.rmax - self.wmin
    }

    /// `SetCombine`'s entry for a value that both summaries hold.
    #[inline]
    pub fn merged_with(self, other: SketchEntry) -> SketchEntry {
        SketchEntry {
            rmin: self.rmin + other.rmin,
            rmax: self.rmax + other.rmax,
            wmin: self.wmin + other.wmin,
            value: self.value,
        }
    }

    /// `SetCombine`'s entry for a value that only this entry's summary holds: `below` is the other
    /// summary's last entry with a smaller value (`None`: it has none), `above` its first entry
    /// with a larger one (`None`: none; `other_rmax` is then its last entry's `rmax`).
    #[inline]
    pub fn merged_alone(self, below: Option<SketchEntry>, above: Option<SketchEntry>, other_rmax: f32) -> SketchEntry {
        let prev_rmin = below.map_or(0.0, |b| b.rmin_next());
        let next_rmax = above.map_or(other_rmax, |a| a.rmax_prev());
        SketchEntry { rmin: self.rmin + prev_rmin, rmax: self.rmax + next_rmax, wmin: self.wmin, value: self.value }
    }
}

/// `FixError`, one entry at a time in order: ranks made non-decreasing and `rmax` at least `rmin +
/// wmin`. Equivalently (what the device's merge computes with max-scans), an entry's fixed `rmin`
/// is the largest `rmin` up to it, and its fixed `rmax` the largest of `rmax` and fixed `rmin +
/// wmin` up to it.
#[derive(Clone, Copy, Debug, Default)]
pub struct FixError {
    prev_rmin: f32,
    prev_rmax: f32,
}

impl FixError {
    #[inline]
    pub fn fix(&mut self, mut e: SketchEntry) -> SketchEntry {
        if e.rmin < self.prev_rmin {
            e.rmin = self.prev_rmin;
        } else {
            self.prev_rmin = e.rmin;
        }
        if e.rmax < self.prev_rmax {
            e.rmax = self.prev_rmax;
        }
        let rmin_next = e.rmin_next();
        if e.rmax < rmin_next {
            e.rmax = rmin_next;
        }
        self.prev_rmax = e.rmax;
        e
    }
}

/// The exact summary of a queue already in stable order by value: `sorted(k)` is the `k`-th
/// (value, weight) of `len`; equal values become one entry, their weights added in order, and the
/// ranks are the running sum of the weights (in `f32`, in order). Pushes the entries in order.
pub fn summarize(len: usize, sorted: impl Fn(usize) -> (f32, f32), mut push: impl FnMut(SketchEntry)) {
    let mut wsum = 0f32;
    let mut i = 0;
    while i < len {
        let (value, mut w) = sorted(i);
        let mut j = i + 1;
        while j < len {
            let (next, weight) = sorted(j);
            if next != value {
                break;
            }
            w += weight;
            j += 1;
        }
        push(SketchEntry { rmin: wsum, rmax: wsum + w, wmin: w, value });
        wsum += w;
        i = j;
    }
}

/// Twice `SetPrune`'s `k`-th rank target of `n` steps from `begin` over `range`.
#[inline]
pub fn prune_target(k: usize, n: usize, begin: f32, range: f32) -> f32 {
    2.0 * ((k as f32 * range) / n as f32 + begin)
}

/// Whether `SetPrune`'s walk passes the entry before `next` for the target `dx2`.
#[inline]
pub fn prune_passes(dx2: f32, next: SketchEntry) -> bool {
    dx2 >= next.rmax + next.rmin
}

/// Whether `SetPrune` picks `at` rather than `next` (the entry after it) for the target `dx2`.
#[inline]
pub fn prune_picks_first(dx2: f32, at: SketchEntry, next: SketchEntry) -> bool {
    dx2 < at.rmin_next() + next.rmax_prev()
}

/// `SetPrune`: at most `max_size` of the `len` entries `src(i)`, the first and the last kept, the
/// others picked nearest to evenly spaced ranks between the first entry's `rmax` and the last's
/// `rmin`. Pushes the kept entries in order.
pub fn prune(len: usize, src: impl Fn(usize) -> SketchEntry, max_size: usize, mut push: impl FnMut(SketchEntry)) {
    if len <= max_size || max_size <= 1 {
        for i in 0..len.min(max_size) {
            push(src(i));
        }
        return;
    }
    let last = len - 1;
    let (first, end) = (src(0), src(last));
    let (begin, range) = (first.rmax, end.rmin - first.rmax);
    let n = max_size - 1;
    push(first);
    let (mut i, mut last_idx) = (1, 0);
    for k in 1..n {
        let dx2 = prune_target(k, n, begin, range);
        while i < last && prune_passes(dx2, src(i + 1)) {
            i += 1;
        }
        if i == last {
            break;
        }
        let pick = if prune_picks_first(dx2, src(i), src(i + 1)) { i } else { i + 1 };
        if pick != last_idx {
            push(src(pick));
            last_idx = pick;
        }
    }
    if last_idx != last {
        push(end);
    }
}

/// `SetCombine` and `FixError`: the merged summary of `a` (`a_len` entries) and `b`, pushed in
/// order.
pub fn combine(
    a_len: usize,
    a: impl Fn(usize) -> SketchEntry,
    b_len: usize,
    b: impl Fn(usize) -> SketchEntry,
    mut push: impl FnMut(SketchEntry),
) {
    if a_len == 0 || b_len == 0 {
        let (len, src): (usize, &dyn Fn(usize) -> SketchEntry) = if a_len == 0 { (b_len, &b) } else { (a_len, &a) };
        for i in 0..len {
            push(src(i));
        }
        return;
    }
    let (a_rmax, b_rmax) = (a(a_len - 1).rmax, b(b_len - 1).rmax);
    let mut fix = FixError::default();
    let (mut i, mut j) = (0, 0);
    let (mut a_below, mut b_below) = (None, None);
    while i < a_len && j < b_len {
        let (x, y) = (a(i), b(j));
        if x.value == y.value {
            push(fix.fix(x.merged_with(y)));
            (a_below, b_below) = (Some(x), Some(y));
            i += 1;
            j += 1;
        } else if x.value < y.value {
            push(fix.fix(x.merged_alone(b_below, Some(y), b_rmax)));
            a_below = Some(x);
            i += 1;
        } else {
            push(fix.fix(y.merged_alone(a_below, Some(x), a_rmax)));
            b_below = Some(y);
            j += 1;
        }
    }
    for i in i..a_len {
        push(fix.fix(a(i).merged_alone(b_below, None, b_rmax)));
    }
    for j in j..b_len {
        push(fix.fix(b(j).merged_alone(a_below, None, a_rmax)));
    }
}

// ---- the device's sketch (`boost::gpu::sketch` launches these; see its module for the steps) ----

use core::ptr::{addr_of, addr_of_mut};

use primitives_kernels::arch;
use primitives_kernels::block::{BlockScan, DynamicShared};
use primitives_kernels::ops::{AssociativeOp, Sum};
use primitives_kernels::warp;

use crate::evaluate::global_thread;

/// The first index of the sorted `len` values `at(i)` whose value is above `x` (`len` if none).
#[inline]
fn upper_bound<T: PartialOrd>(len: usize, at: impl Fn(usize) -> T, x: T) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if at(mid) <= x {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The dense rows' shape and weights, as the compaction kernels read them: `cols` columns of rows
/// `stride` values apart (a group of a wider matrix's columns, `values` at its first).
#[derive(Clone, Copy)]
pub struct DenseColumns {
    pub values: *const f32,
    pub rows: u64,
    pub cols: u64,
    pub stride: u64,
    /// A weight a row, or null (every weight 1).
    pub weights: *const f32,
    /// Rows of one piece: a thread takes one column of one piece.
    pub piece_rows: u64,
}

impl DenseColumns {
    fn pieces(&self) -> u64 {
        self.rows.div_ceil(self.piece_rows)
    }

    /// Visits the present values of column `col` in rows of piece `piece`, in row order, with
    /// their weights.
    ///
    /// # Safety
    /// `values` holds `rows` rows of `stride >= cols` values and `weights` (when not null) `rows`.
    unsafe fn for_each_present(&self, piece: u64, col: u64, mut visit: impl FnMut(f32, f32)) {
        let end = ((piece + 1) * self.piece_rows).min(self.rows);
        for row in piece * self.piece_rows..end {
            // SAFETY: `row < rows`, `col < cols <= stride`.
            let value = unsafe { arch::load(self.values.add((row * self.stride + col) as usize)) };
            if value.is_nan() {
                continue;
            }
            let weight = if self.weights.is_null() {
                1.0
            } else {
                // SAFETY: `row < rows`.
                unsafe { arch::load(self.weights.add(row as usize)) }
            };
            visit(value, weight);
        }
    }
}

/// A thread a (piece, column): `present[col * pieces + piece]` the piece's present values of the
/// column (what the sketch's size counts), `kept[...]` those of them with a weight (what it
/// queues).
///
/// # Safety
/// `values` holds `rows` rows of `stride >= cols` values and `weights` (when not null) `rows`;
/// `present` and `kept` hold `cols * pieces` counts.
pub unsafe fn count_kernel(data: DenseColumns, present: *mut u32, kept: *mut u32) {
    let index = global_thread();
    let pieces = data.pieces();
    if index >= pieces * data.cols {
        return;
    }
    let (piece, col) = (index / data.cols, index % data.cols);
    let (mut all, mut weighted) = (0u32, 0u32);
    // SAFETY: as the caller promises.
    unsafe { data.for_each_present(piece, col, |_, w| (all, weighted) = (all + 1, weighted + u32::from(w != 0.0))) };
    let at = (col * pieces + piece) as usize;
    // SAFETY: `at < cols * pieces`.
    unsafe {
        arch::store(present.add(at), all);
        arch::store(kept.add(at), weighted);
    }
}

/// A thread a (piece, column): writes the piece's kept values of the column (and their weights,
/// when `out_weights` is not null) from `offsets[col * pieces + piece]` on, in row order, so that
/// each column's kept values lie together in row order (column after column).
///
/// # Safety
/// As [`count_kernel`]; `offsets` the exclusive sums of its `kept`, within both outputs.
pub unsafe fn scatter_kernel(data: DenseColumns, offsets: *const u64, out_values: *mut f32, out_weights: *mut f32) {
    let index = global_thread();
    let pieces = data.pieces();
    if index >= pieces * data.cols {
        return;
    }
    let (piece, col) = (index / data.cols, index % data.cols);
    // SAFETY: `col * pieces + piece < cols * pieces`.
    let mut at = unsafe { arch::load(offsets.add((col * pieces + piece) as usize)) } as usize;
    // SAFETY: as the caller promises: the piece's kept values fit from its offset.
    unsafe {
        data.for_each_present(piece, col, |v, w| {
            if w != 0.0 {
                arch::store(out_values.add(at), v);
                if !out_weights.is_null() {
                    arch::store(out_weights.add(at), w);
                }
                at += 1;
            }
        })
    };
}

/// CSR rows in device memory: `rows + 1` entry offsets, each entry's column and value; `cols`
/// columns; a weight a row (null: every weight 1).
#[derive(Clone, Copy)]
pub struct CsrRows {
    pub row_ptr: *const u64,
    pub col_indices: *const u32,
    pub values: *const f32,
    pub rows: u64,
    pub nnz: u64,
    pub cols: u64,
    pub weights: *const f32,
}

impl CsrRows {
    /// The row of entry `e` (`row_ptr` valid: increasing from 0 to `nnz`).
    ///
    /// # Safety
    /// `row_ptr` holds `rows + 1` offsets.
    unsafe fn row_of(&self, e: u64) -> u64 {
        // SAFETY: `k <= rows`.
        let row = upper_bound(self.rows as usize + 1, |k| unsafe { arch::load(self.row_ptr.add(k)) }, e);
        (row.max(1) - 1) as u64
    }
}

/// The problems [`csr_check_kernel`] finds, each the first row that has it (`u32::MAX`: none):
/// offsets that decrease or do not run from 0 to `nnz`, a column at or past `cols`, columns that
/// do not increase within the row, an infinite value.
pub const CSR_BAD_OFFSETS: usize = 0;
pub const CSR_BAD_COLUMN: usize = 1;
pub const CSR_UNORDERED: usize = 2;
pub const CSR_INFINITE: usize = 3;
/// Words of [`csr_check_kernel`]'s problems.
pub const CSR_PROBLEMS: usize = 4;

/// A thread a row: checks its offsets, columns and values, lowering `problems[CSR_...]` to the row
/// when it has that problem (the host sets the words to `u32::MAX` first).
///
/// # Safety
/// `row_ptr` holds `rows + 1` offsets, the entry arrays `nnz` entries; `problems`
/// [`CSR_PROBLEMS`] words.
pub unsafe fn csr_check_kernel(csr: CsrRows, problems: *mut u32) {
    let row = global_thread();
    if row >= csr.rows {
        return;
    }
    // SAFETY: `row + 1 <= rows`; entries read only within `0..nnz`; three problem words.
    unsafe {
        let (first, end) = (arch::load(csr.row_ptr.add(row as usize)), arch::load(csr.row_ptr.add(row as usize + 1)));
        let report = |problem: usize| {
            arch::atomic_min_u32_gpu(problems.add(problem), row.min(u32::MAX as u64 - 1) as u32);
        };
        let bad_ends = (row == 0 && first != 0) || (row + 1 == csr.rows && end != csr.nnz);
        if first > end || end > csr.nnz || bad_ends {
            report(CSR_BAD_OFFSETS);
            return;
        }
        for e in first..end {
            let col = arch::load(csr.col_indices.add(e as usize));
            if col as u64 >= csr.cols {
                report(CSR_BAD_COLUMN);
            }
            if e > first && arch::load(csr.col_indices.add(e as usize - 1)) >= col {
                report(CSR_UNORDERED);
            }
            if arch::load(csr.values.add(e as usize)).is_infinite() {
                report(CSR_INFINITE);
            }
        }
    }
}

/// A thread a value of `n` dense row-major values of `cols` columns: an infinite one lowers
/// `first_row` to its row (the host sets it to `u32::MAX` first; rows below 2^32).
///
/// # Safety
/// `values` holds `n` values; `first_row` one word.
pub unsafe fn dense_check_kernel(values: *const f32, n: u64, cols: u64, first_row: *mut u32) {
    let i = global_thread();
    if i >= n {
        return;
    }
    // SAFETY: `i < n`; one word.
    unsafe {
        if arch::load(values.add(i as usize)).is_infinite() {
            arch::atomic_min_u32_gpu(first_row, (i / cols.max(1)) as u32);
        }
    }
}

/// A thread an entry of checked CSR rows: its sort key, the column for an entry the sketch queues
/// (present, with a weight), `cols` plus the column for a present entry of weight 0 (counted, not
/// queued), `2 cols` for a missing one (NaN); and its index (the sort's values). Sorted stably, the
/// keys gather each column's queued values in row order, column after column.
///
/// # Safety
/// As [`csr_check_kernel`], the rows checked; `keys` and `indices` hold `nnz` items.
pub unsafe fn csr_keys_kernel(csr: CsrRows, keys: *mut u32, indices: *mut u32) {
    let e = global_thread();
    if e >= csr.nnz {
        return;
    }
    // SAFETY: `e < nnz`; its row below `rows`.
    unsafe {
        let col = arch::load(csr.col_indices.add(e as usize));
        let value = arch::load(csr.values.add(e as usize));
        let weight = if csr.weights.is_null() { 1.0 } else { arch::load(csr.weights.add(csr.row_of(e) as usize)) };
        let key = if value.is_nan() {
            2 * csr.cols as u32
        } else if weight == 0.0 {
            csr.cols as u32 + col
        } else {
            col
        };
        arch::store(keys.add(e as usize), key);
        arch::store(indices.add(e as usize), e as u32);
    }
}

/// A thread a key `k` in `0..=2 cols`: `bounds[k]` the first of the `n` sorted keys at or above it.
///
/// # Safety
/// `sorted_keys` holds `n` keys, `bounds` `2 cols + 1`.
pub unsafe fn csr_bounds_kernel(sorted_keys: *const u32, n: u64, cols: u64, bounds: *mut u64) {
    let k = global_thread();
    if k > 2 * cols {
        return;
    }
    // SAFETY: indices below `n`; `k <= 2 cols`.
    unsafe {
        let at = |i: usize| arch::load(sorted_keys.add(i));
        let (mut lo, mut hi) = (0usize, n as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if at(mid) < k as u32 {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        arch::store(bounds.add(k as usize), lo as u64);
    }
}

/// A thread a queued entry (the first `n` of the sorted order): its value and weight (when
/// `out_weights` is not null) from entry `entries[i]`.
///
/// # Safety
/// As [`csr_keys_kernel`]; `entries` holds `n` entry indices below `nnz`, the outputs `n` items.
pub unsafe fn csr_gather_kernel(
    csr: CsrRows,
    entries: *const u32,
    n: u64,
    out_values: *mut f32,
    out_weights: *mut f32,
) {
    let i = global_thread();
    if i >= n {
        return;
    }
    // SAFETY: `i < n`; the entry below `nnz`, its row below `rows`.
    unsafe {
        let e = arch::load(entries.add(i as usize)) as u64;
        arch::store(out_values.add(i as usize), arch::load(csr.values.add(e as usize)));
        if !out_weights.is_null() {
            arch::store(out_weights.add(i as usize), arch::load(csr.weights.add(csr.row_of(e) as usize)));
        }
    }
}

/// A thread a kept value: `heads[i]` = 1 when value `i` starts a run of equal values (the first of
/// its column, or not equal to the one before), else 0. Their inclusive sums number the runs.
///
/// # Safety
/// `values` and `heads` hold `n` items; `col_starts` the `cols + 1` column offsets (the last `n`).
pub unsafe fn heads_kernel(values: *const f32, n: u64, col_starts: *const u64, cols: u64, heads: *mut u32) {
    let i = global_thread();
    if i >= n {
        return;
    }
    // SAFETY: `i < n`, the column offsets as promised.
    unsafe {
        let col = upper_bound(cols as usize, |c| arch::load(col_starts.add(c)), i) - 1;
        let head = i == arch::load(col_starts.add(col))
            || arch::load(values.add(i as usize)) != arch::load(values.add(i as usize - 1));
        arch::store(heads.add(i as usize), u32::from(head));
    }
}

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

/// A queue's entries sorted by value: `len` values and their weights.
#[derive(Clone, Copy)]
struct Sorted {
    keys: *const f32,
    weights: *const f32,
    len: usize,
}

impl Sorted {
    /// # Safety
    /// `k < len`.
    #[inline]
    unsafe fn key(self, k: usize) -> f32 {
        // SAFETY: as the caller promises.
        unsafe { arch::load(self.keys.add(k)) }
    }

    /// # Safety
    /// `k < len`.
    #[inline]
    unsafe fn weight(self, k: usize) -> f32 {
        // SAFETY: as the caller promises.
        unsafe { arch::load(self.weights.add(k)) }
    }

    /// The values and weights of the entries `at(j)` where `valid(j)`, zeros elsewhere.
    ///
    /// # Safety
    /// `at(j) < len` where `valid(j)`.
    #[inline]
    unsafe fn items(self, valid: impl Fn(usize) -> bool, at: impl Fn(usize) -> usize) -> ([f32; ITEMS], [f32; ITEMS]) {
        let (mut keys, mut weights) = ([0f32; ITEMS], [0f32; ITEMS]);
        for j in 0..ITEMS {
            if valid(j) {
                // SAFETY: as the caller promises.
                unsafe { (keys[j], weights[j]) = (self.key(at(j)), self.weight(at(j))) };
            }
        }
        (keys, weights)
    }

    /// Whether entry `k` starts a group of equal values.
    ///
    /// # Safety
    /// `k < len`.
    #[inline]
    unsafe fn head(self, k: usize) -> bool {
        // SAFETY: `k - 1 < k < len`.
        k == 0 || unsafe { self.key(k) != self.key(k - 1) }
    }
}

/// A summary in device memory: `len` entries from `at`.
#[derive(Clone, Copy)]
struct Run {
    at: *mut SketchEntry,
    len: usize,
}

impl Run {
    /// # Safety
    /// `i < len`.
    #[inline]
    unsafe fn get(self, i: usize) -> SketchEntry {
        // SAFETY: as the caller promises.
        unsafe { arch::load(self.at.add(i)) }
    }
}

/// `max` that keeps the later operand when neither is larger: `FixError`'s `if e < prev { prev }
/// else { e }` as an associative operator, so that its running maxima are block scans.
#[derive(Clone, Copy, Default)]
struct LaterMax;

impl AssociativeOp<f32> for LaterMax {
    fn identity() -> f32 {
        f32::NEG_INFINITY
    }
    fn combine(a: f32, b: f32) -> f32 {
        if b < a {
            a
        } else {
            b
        }
    }
}

/// Items a thread takes in each tile of a block-wide pass: fewer tiles, so fewer barriers.
const ITEMS: usize = 16;

/// Threads of a warp.
const WARP: usize = arch::WARP_SIZE as usize;

/// The block's shared state for the merge: two block scans and a few broadcast words.
struct Block {
    counts: BlockScan<u32>,
    maxima: BlockScan<f32>,
    words: *mut u32,
}

impl Block {
    fn new() -> Self {
        let mut shared = DynamicShared::new();
        Block {
            counts: BlockScan::from_allocator(&mut shared),
            maxima: BlockScan::from_allocator(&mut shared),
            words: shared.take::<u32>(4),
        }
    }

    /// Every thread's `value` of thread 0, after a barrier.
    fn broadcast(&self, value: u32) -> u32 {
        if arch::thread_idx_x() == 0 {
            // SAFETY: the block's 4 words.
            unsafe { arch::store(self.words, value) };
        }
        arch::sync_threads();
        // SAFETY: written before the barrier.
        let value = unsafe { arch::load(self.words) };
        arch::sync_threads();
        value
    }

    /// The indices `0..n` in tiles of [`ITEMS`] a thread: `body(first, end)` gets this thread's
    /// contiguous part of the tile (empty past `n`), in thread order. Every thread runs every
    /// tile, so that `body` may scan the threads' parts.
    fn tiles(n: usize, mut body: impl FnMut(usize, usize)) {
        let threads = arch::block_dim_x() as usize;
        let mut start = 0;
        while start < n {
            let first = (start + arch::thread_idx_x() as usize * ITEMS).min(n);
            body(first, (first + ITEMS).min(n));
            start += threads * ITEMS;
        }
    }

    /// The indices `0..n` in tiles of [`ITEMS`] a thread, warp-striped (coalesced): each warp owns
    /// `32 ITEMS` contiguous indices of a tile, lane `l` taking item `j` at `base + 32 j + l`;
    /// `body(base, end)` gets the warp's `base` and the end of the indices. Every thread runs every
    /// tile, so that `body` may scan over the block.
    fn warp_tiles(n: usize, mut body: impl FnMut(usize, usize)) {
        let threads = arch::block_dim_x() as usize;
        let mut start = 0;
        while start < n {
            body(start + arch::warp_idx() as usize * WARP * ITEMS, n);
            start += threads * ITEMS;
        }
    }

    /// The place of each flagged item of a warp tile ([`Block::warp_tiles`]) among the block's
    /// flagged items of the tile, in index order, and the tile's count of them: ballots within the
    /// warp, a block scan of the warps' counts.
    fn compact(&self, flags: [bool; ITEMS]) -> ([u32; ITEMS], u32) {
        let lane = arch::lane_id();
        let below = (1u32 << lane) - 1;
        let (mut places, mut warp_count) = ([0u32; ITEMS], 0u32);
        for j in 0..ITEMS {
            let ballot = arch::ballot_sync(u32::MAX, flags[j]);
            places[j] = warp_count + (ballot & below).count_ones();
            warp_count += ballot.count_ones();
        }
        let (before, total) = self.counts.exclusive_scan::<Sum>(if lane == 0 { warp_count } else { 0 });
        let warp_before = arch::shfl_idx_sync(u32::MAX, before, 0);
        (places.map(|p| p + warp_before), total)
    }

    /// The inclusive [`LaterMax`] scan from `carry` of a warp tile's values ([`Block::warp_tiles`])
    /// in index order (warp scans, a block scan of the warps' maxima), and the block tile's result.
    /// The values are ranks, never NaN, so `-inf` is the identity.
    fn later_max_tile(&self, values: [f32; ITEMS], carry: f32) -> ([f32; ITEMS], f32) {
        let last_lane = WARP as u32 - 1;
        let (mut scanned, mut warp_max) = ([0f32; ITEMS], f32::NEG_INFINITY);
        for j in 0..ITEMS {
            let inclusive = warp::warp_inclusive_scan::<f32, LaterMax>(values[j]);
            scanned[j] = LaterMax::combine(warp_max, inclusive);
            warp_max = LaterMax::combine(warp_max, arch::shfl_idx_sync(u32::MAX, inclusive, last_lane));
        }
        let lane = arch::lane_id();
        let (before, total) =
            self.maxima.exclusive_scan::<LaterMax>(if lane == 0 { warp_max } else { f32::NEG_INFINITY });
        let prefix = LaterMax::combine(carry, arch::shfl_idx_sync(u32::MAX, before, 0));
        (scanned.map(|v| LaterMax::combine(prefix, v)), LaterMax::combine(carry, total))
    }

    /// [`summarize`] of `sorted` into `exact` when every partial sum of its weights is exact in
    /// `f32` (integers up to 2^24): each group's head written with the weight before it (warp scans
    /// of the weights, a block scan of the warps' sums), then each group's weight the next group's
    /// rank less its own (the total after the last). Returns the number of groups.
    ///
    /// # Safety
    /// Room for `sorted.len` entries at `exact`.
    unsafe fn summarize_counts(&self, sorted: Sorted, exact: *mut SketchEntry) -> usize {
        let lane = arch::lane_id() as usize;
        let (mut groups, mut total_weight) = (0u32, 0f32);
        Block::warp_tiles(sorted.len, |base, end| {
            let at = |j: usize| base + WARP * j + lane;
            // SAFETY: only entries below `end == len` are read.
            let (keys, weights) = unsafe { sorted.items(|j| at(j) < end, at) };
            // The value before each item: the lane below's, lane 0's the last lane's of the last
            // item (or the one before the warp's first).
            // SAFETY: `base - 1 < base < end == len`.
            let before_warp = if base > 0 && base < end { unsafe { sorted.key(base - 1) } } else { f32::NAN };
            let mut heads = [false; ITEMS];
            for j in 0..ITEMS {
                let below = arch::shfl_up_sync(u32::MAX, keys[j], 1);
                let last =
                    if j == 0 { before_warp } else { arch::shfl_idx_sync(u32::MAX, keys[j - 1], WARP as u32 - 1) };
                let previous = if lane == 0 { last } else { below };
                heads[j] = at(j) < end && (at(j) == 0 || keys[j] != previous);
            }
            let (places, count) = self.compact(heads);
            let (mut ranks, mut warp_weight) = ([0f32; ITEMS], 0f32);
            for j in 0..ITEMS {
                let (before, total) = warp::warp_exclusive_scan::<f32, Sum>(weights[j]);
                ranks[j] = warp_weight + before;
                warp_weight += total;
            }
            let (before, total) = self.maxima.exclusive_scan::<Sum>(if lane == 0 { warp_weight } else { 0.0 });
            let rank_before = total_weight + arch::shfl_idx_sync(u32::MAX, before, 0);
            for j in 0..ITEMS {
                if heads[j] {
                    let entry = SketchEntry { rmin: rank_before + ranks[j], rmax: 0.0, wmin: 0.0, value: keys[j] };
                    // SAFETY: at most one entry a head, fewer than `len`.
                    unsafe { arch::store(exact.add((groups + places[j]) as usize), entry) };
                }
            }
            (groups, total_weight) = (groups + count, total_weight + total);
            arch::sync_threads();
        });
        let groups = groups as usize;
        Block::strided(groups, |g| {
            // SAFETY: `g < groups`; only the fields this thread owns are written (the next
            // group's `rmin`, which another thread may read, is not).
            unsafe {
                let rmin = arch::load(addr_of!((*exact.add(g)).rmin));
                let next = if g + 1 < groups { arch::load(addr_of!((*exact.add(g + 1)).rmin)) } else { total_weight };
                arch::store(addr_of_mut!((*exact.add(g)).wmin), next - rmin);
                arch::store(addr_of_mut!((*exact.add(g)).rmax), next);
            }
        });
        arch::sync_threads();
        groups
    }

    /// `body(i)` for `i` in `0..n`, thread `t` taking `t, t + threads, ...` (coalesced).
    fn strided(n: usize, mut body: impl FnMut(usize)) {
        let threads = arch::block_dim_x() as usize;
        let mut i = arch::thread_idx_x() as usize;
        while i < n {
            body(i);
            i += threads;
        }
    }

    /// [`summarize`] of `sorted` into `exact` with the host's sums in order: a group's weight added
    /// by the thread of its first entry, the ranks by thread 0. Returns the number of groups.
    ///
    /// # Safety
    /// Room for `sorted.len` entries at `exact`.
    unsafe fn summarize_in_order(&self, sorted: Sorted, exact: *mut SketchEntry) -> usize {
        let len = sorted.len;
        let mut groups = 0u32;
        Block::tiles(len, |first, end| {
            // SAFETY: entries below `end <= len`.
            let here = (first..end).filter(|&k| unsafe { sorted.head(k) }).count() as u32;
            let (before, total) = self.counts.exclusive_scan::<Sum>(here);
            // SAFETY: as above.
            let heads = (first..end).filter(|&k| unsafe { sorted.head(k) });
            for (at, k) in ((groups + before) as usize..).zip(heads) {
                // SAFETY: entries below `len`; at most one entry a head, fewer than `len`.
                unsafe {
                    let value = sorted.key(k);
                    let mut w = sorted.weight(k);
                    let mut next = k + 1;
                    while next < len && sorted.key(next) == value {
                        w += sorted.weight(next);
                        next += 1;
                    }
                    arch::store(exact.add(at), SketchEntry { rmin: 0.0, rmax: 0.0, wmin: w, value });
                }
            }
            groups += total;
            arch::sync_threads();
        });
        let groups = groups as usize;
        if arch::thread_idx_x() == 0 {
            let mut wsum = 0f32;
            for g in 0..groups {
                // SAFETY: `g < groups`, written before the barrier of the last tile.
                unsafe {
                    let mut e = arch::load(exact.add(g));
                    (e.rmin, e.rmax) = (wsum, wsum + e.wmin);
                    wsum += e.wmin;
                    arch::store(exact.add(g), e);
                }
            }
        }
        arch::sync_threads();
        groups
    }

    /// Copies `src` to `dst` (other memory).
    ///
    /// # Safety
    /// Room for `src.len` entries at `dst`.
    unsafe fn copy(&self, src: Run, len: usize, dst: *mut SketchEntry) -> Run {
        Block::strided(len, |k| {
            // SAFETY: `k < len <= src.len`, within `dst`.
            unsafe { arch::store(dst.add(k), src.get(k)) };
        });
        arch::sync_threads();
        Run { at: dst, len }
    }

    /// [`prune`] of `src` into `dst`, the block together: each rank target's pick found by a
    /// binary search (the walk's position is monotone in the target, so the walk stops where the
    /// search does), a thread a target; the picks kept where they change, in order (ballots and a
    /// block scan). A summary whose targets decrease (a negative range) is pruned by thread 0 alone.
    ///
    /// # Safety
    /// Room for `max_size` entries at `dst` and `max_size` words at `picks`; `src` elsewhere.
    unsafe fn prune(&self, src: Run, max_size: usize, dst: *mut SketchEntry, picks: *mut u32) -> Run {
        let len = src.len;
        if len <= max_size || max_size <= 1 {
            // SAFETY: as the caller promises.
            return unsafe { self.copy(src, len.min(max_size), dst) };
        }
        let last = len - 1;
        // SAFETY: `0, last < len`.
        let (first, end) = unsafe { (src.get(0), src.get(last)) };
        let (begin, range) = (first.rmax, end.rmin - first.rmax);
        let n = max_size - 1;
        if range.is_nan() || range < 0.0 {
            let mut kept = 0;
            if arch::thread_idx_x() == 0 {
                // SAFETY: at most `max_size` entries pushed.
                prune(
                    len,
                    |i| unsafe { src.get(i) },
                    max_size,
                    |e| {
                        // SAFETY: as above.
                        unsafe { arch::store(dst.add(kept), e) };
                        kept += 1;
                    },
                );
            }
            return Run { at: dst, len: self.broadcast(kept as u32) as usize };
        }
        // The pick of target `k` (1..n) at `picks[k - 1]`, or `u32::MAX` past the walk's end.
        // An entry of `src`, `i` at most `last` (every caller's).
        let entry = |i: usize| {
            // SAFETY: `i <= last < len`.
            unsafe { src.get(i) }
        };
        Block::strided(n - 1, |slot| {
            let dx2 = prune_target(slot + 1, n, begin, range);
            let (mut i, mut hi) = (1, last);
            while i < hi {
                let mid = i + (hi - i) / 2;
                if prune_passes(dx2, entry(mid + 1)) {
                    i = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let pick = if i == last {
                u32::MAX
            } else if prune_picks_first(dx2, entry(i), entry(i + 1)) {
                i as u32
            } else {
                i as u32 + 1
            };
            // SAFETY: `slot < n - 1 < max_size`.
            unsafe { arch::store(picks.add(slot), pick) };
        });
        if arch::thread_idx_x() == 0 {
            // SAFETY: `dst` has room; word 1 holds the last pick (0: none).
            unsafe {
                arch::store(dst, first);
                arch::store(self.words.add(1), 0);
            }
        }
        arch::sync_threads();
        // The picks of the targets, `u32::MAX` outside them.
        let pick_at = |at: usize| {
            if at < n - 1 {
                // SAFETY: `at < n - 1`; the picks were written before the barrier.
                unsafe { arch::load(picks.add(at)) }
            } else {
                u32::MAX
            }
        };
        let lane = arch::lane_id() as usize;
        let mut kept = 0u32;
        Block::warp_tiles(n - 1, |base, slots| {
            let at = |j: usize| base + WARP * j + lane;
            let pick: [u32; ITEMS] = core::array::from_fn(|j| pick_at(at(j)));
            // A target whose pick the walk keeps: a valid one that differs from the one before.
            let fresh: [bool; ITEMS] = core::array::from_fn(|j| {
                at(j) < slots && pick[j] != u32::MAX && (at(j) == 0 || pick[j] != pick_at(at(j) - 1))
            });
            let (places, total) = self.compact(fresh);
            for j in 0..ITEMS {
                if fresh[j] {
                    // SAFETY: at most `n` kept after the first, within `max_size`.
                    unsafe { arch::store(dst.add(1 + (kept + places[j]) as usize), src.get(pick[j] as usize)) };
                }
                // The last valid target's pick: the walk's last index.
                if at(j) < slots && pick[j] != u32::MAX && pick_at(at(j) + 1) == u32::MAX {
                    // SAFETY: word 1 of the block's words.
                    unsafe { arch::store(self.words.add(1), pick[j]) };
                }
            }
            kept += total;
            arch::sync_threads();
        });
        // SAFETY: written before the barrier (the last tile's).
        let last_idx = unsafe { arch::load(self.words.add(1)) } as usize;
        let mut len = 1 + kept as usize;
        if last_idx != last {
            if arch::thread_idx_x() == 0 {
                // SAFETY: `len < max_size` (the walk keeps at most `max_size - 1` before it).
                unsafe { arch::store(dst.add(len), end) };
            }
            len += 1;
        }
        arch::sync_threads();
        Run { at: dst, len }
    }

    /// [`combine`] of `a` and `b` into `dst`, the block together: the merge path of the two
    /// (equal values `a`'s first) split by a binary search at each thread's first place, each
    /// thread then merging its places in order, the entry of a value that both hold written once;
    /// an entry's ranks come from its neighbours in the other summary
    /// ([`SketchEntry::merged_alone`]); then `FixError` as two max-scans.
    ///
    /// # Safety
    /// Room for `a.len + b.len` entries at `dst`; `a`, `b` elsewhere.
    unsafe fn combine(&self, a: Run, b: Run, dst: *mut SketchEntry) -> Run {
        if a.len == 0 || b.len == 0 {
            let src = if a.len == 0 { b } else { a };
            // SAFETY: as the caller promises.
            return unsafe { self.copy(src, src.len, dst) };
        }
        // An entry of a summary, `i` below its length.
        let at = |run: Run, i: usize| {
            // SAFETY: every caller's `i` is below `run.len`.
            unsafe { run.get(i) }
        };
        let (a_rmax, b_rmax) = (at(a, a.len - 1).rmax, at(b, b.len - 1).rmax);
        // Of the first `d` places of the merge, how many are `a`'s.
        let split = |d: usize| {
            let (mut lo, mut hi) = (d.saturating_sub(b.len), d.min(a.len));
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if at(a, mid).value <= at(b, d - mid - 1).value {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        // Walks the places `first..end` of the merge, writing each entry (none for `b`'s copy of a
        // value `a` holds) at its place less `skipped_before` and the copies skipped since, when
        // `write`; returns the copies skipped.
        let walk = |first: usize, end: usize, write: Option<usize>| {
            let mut i = split(first);
            let mut j = first - i;
            let mut skipped = 0;
            for place in first..end {
                if i < a.len && (j >= b.len || at(a, i).value <= at(b, j).value) {
                    let x = at(a, i);
                    if let Some(skipped_before) = write {
                        let entry = if j < b.len && at(b, j).value == x.value {
                            x.merged_with(at(b, j))
                        } else {
                            let lower = (j > 0).then(|| at(b, j - 1));
                            let upper = (j < b.len).then(|| at(b, j));
                            x.merged_alone(lower, upper, b_rmax)
                        };
                        // SAFETY: a place below `a.len + b.len`.
                        unsafe { arch::store(dst.add(place - skipped_before - skipped), entry) };
                    }
                    i += 1;
                } else {
                    let y = at(b, j);
                    if i > 0 && at(a, i - 1).value == y.value {
                        skipped += 1;
                    } else if let Some(skipped_before) = write {
                        let lower = (i > 0).then(|| at(a, i - 1));
                        let upper = (i < a.len).then(|| at(a, i));
                        let entry = y.merged_alone(lower, upper, a_rmax);
                        // SAFETY: a place below `a.len + b.len`.
                        unsafe { arch::store(dst.add(place - skipped_before - skipped), entry) };
                    }
                    j += 1;
                }
            }
            skipped
        };
        let mut skipped_before = 0u32;
        Block::tiles(a.len + b.len, |first, end| {
            let here = if first < end { walk(first, end, None) as u32 } else { 0 };
            let (before, total) = self.counts.exclusive_scan::<Sum>(here);
            if first < end {
                walk(first, end, Some((skipped_before + before) as usize));
            }
            skipped_before += total;
            arch::sync_threads();
        });
        let shared_total = skipped_before as usize;
        let len = a.len + b.len - shared_total;
        // FixError: `rmin` the running `LaterMax` of the `rmin`s from 0, `rmax` that of
        // `LaterMax(rmax, rmin + wmin)`.
        let (mut prev_rmin, mut prev_rmax) = (0f32, 0f32);
        let lane = arch::lane_id() as usize;
        Block::warp_tiles(len, |base, end| {
            let at = |j: usize| base + WARP * j + lane;
            // Entry `at(j)`, whose scans' identity stands for it past `len`.
            let entry = |j: usize| {
                let none = SketchEntry { rmin: f32::NEG_INFINITY, rmax: f32::NEG_INFINITY, wmin: 0.0, value: 0.0 };
                if at(j) < end {
                    // SAFETY: `at(j) < len` entries, written before the barrier.
                    unsafe { arch::load(dst.add(at(j))) }
                } else {
                    none
                }
            };
            let (rmins, total) = self.later_max_tile(core::array::from_fn(|j| entry(j).rmin), prev_rmin);
            arch::sync_threads();
            let (rmaxs, total_t) = self.later_max_tile(
                core::array::from_fn(|j| {
                    let e = SketchEntry { rmin: rmins[j], ..entry(j) };
                    LaterMax::combine(e.rmax, e.rmin_next())
                }),
                prev_rmax,
            );
            for j in 0..ITEMS {
                if at(j) < end {
                    let e = SketchEntry { rmin: rmins[j], rmax: rmaxs[j], ..entry(j) };
                    // SAFETY: `at(j) < len`; only this thread reads or writes the entry in the tile.
                    unsafe { arch::store(dst.add(at(j)), e) };
                }
            }
            (prev_rmin, prev_rmax) = (total, total_t);
            arch::sync_threads();
        });
        Run { at: dst, len }
    }
}

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

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// Entries with ranks that break the invariants here and there, as a combine's raw output can.
    fn rough_entries(n: usize, seed: u32) -> Vec<SketchEntry> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1 << 24) as f32
        };
        let mut rank = 0f32;
        (0..n)
            .map(|i| {
                rank += next() * 3.0 - 0.5;
                let wmin = next() * 2.0;
                SketchEntry { rmin: rank, rmax: rank + wmin + next() - 0.3, wmin, value: i as f32 }
            })
            .collect()
    }

    /// The max-scan form of `FixError` (the device's) is the sequential one, bit for bit.
    #[test]
    fn fix_error_is_two_prefix_maxima() {
        for seed in 0..20 {
            let raw = rough_entries(200, seed);
            let mut fix = FixError::default();
            let sequential: Vec<SketchEntry> = raw.iter().map(|&e| fix.fix(e)).collect();
            let (mut rmin, mut rmax) = (0f32, 0f32);
            for (e, want) in raw.iter().zip(&sequential) {
                rmin = rmin.max(e.rmin);
                rmax = rmax.max(e.rmax).max(rmin + e.wmin);
                assert_eq!((rmin.to_bits(), rmax.to_bits()), (want.rmin.to_bits(), want.rmax.to_bits()), "seed {seed}");
            }
        }
    }

    /// Pruning keeps the first and last entries, at most `max_size`, in order; short summaries and
    /// sizes of 0 and 1 keep a prefix.
    #[test]
    fn prune_keeps_the_ends_and_the_size() {
        let mut fix = FixError::default();
        let src: Vec<SketchEntry> = rough_entries(500, 7).into_iter().map(|e| fix.fix(e)).collect();
        for max_size in [0, 1, 2, 3, 10, 100, 499, 500, 600] {
            let mut out = Vec::new();
            prune(src.len(), |i| src[i], max_size, |e| out.push(e));
            assert!(out.len() <= max_size, "{max_size}: {}", out.len());
            if max_size >= src.len() {
                assert_eq!(out, src);
            } else if max_size >= 2 {
                assert_eq!((out[0], *out.last().unwrap()), (src[0], src[499]));
                assert!(out.windows(2).all(|w| w[0].value < w[1].value));
            } else {
                assert_eq!(out, src[..max_size]);
            }
        }
    }

    /// Combining a summary with another gives each value once, the shared values' weights added,
    /// and ranks that satisfy the invariants; combining with an empty summary copies.
    #[test]
    fn combine_merges_values_and_repairs_ranks() {
        let summary = |values: &[f32]| {
            let mut out = Vec::new();
            summarize(values.len(), |i| (values[i], 1.0 + i as f32 * 0.5), |e| out.push(e));
            out
        };
        let (a, b) = (summary(&[1.0, 3.0, 5.0, 7.0]), summary(&[2.0, 3.0, 8.0]));
        let mut out = Vec::new();
        combine(a.len(), |i| a[i], b.len(), |j| b[j], |e| out.push(e));
        let values: Vec<f32> = out.iter().map(|e| e.value).collect();
        assert_eq!(values, [1.0, 2.0, 3.0, 5.0, 7.0, 8.0]);
        assert_eq!(out[2].wmin, a[1].wmin + b[1].wmin);
        assert!(out.windows(2).all(|w| w[0].rmin <= w[1].rmin && w[0].rmax <= w[1].rmax));
        assert!(out.iter().all(|e| e.rmax >= e.rmin_next()));
        let mut copied = Vec::new();
        combine(0, |_| unreachable!(), b.len(), |j| b[j], |e| copied.push(e));
        assert_eq!(copied, b);
    }
}
