//! The sketch's input: each column's kept values of dense or CSR data in device memory, by column,
//! and the checks of that data.

use primitives_kernels::arch;

use crate::evaluate::global_thread;

/// The first index of the sorted `len` values `at(i)` whose value is above `x` (`len` if none).
#[inline]
pub(super) fn upper_bound<T: PartialOrd>(len: usize, at: impl Fn(usize) -> T, x: T) -> usize {
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

/// A thread a (piece of `piece_rows` rows, categorical column): for column `columns[k]` of the
/// dense rows (`stride` values a row), its largest code plus one into `max[k]` (0 while none is
/// present) and the first row whose present value is no category
/// ([`crate::categorical::is_category`]) into `bad[k]` (the host sets it to `u32::MAX`; rows below
/// 2^32): the cuts of a categorical feature, a bin a code.
///
/// # Safety
/// `values` holds `rows` rows of `stride` values, every column below `stride`; `max` and `bad`
/// hold `num_columns` words.
#[allow(clippy::too_many_arguments)]
pub unsafe fn category_max_kernel(
    values: *const f32,
    rows: u64,
    stride: u64,
    columns: *const u32,
    num_columns: u64,
    piece_rows: u64,
    max: *mut u32,
    bad: *mut u32,
) {
    let pieces = rows.div_ceil(piece_rows.max(1));
    let t = global_thread();
    if t >= pieces * num_columns {
        return;
    }
    let (k, piece) = ((t / pieces) as usize, t % pieces);
    // SAFETY: rows below `rows`, the column below `stride`, `k < num_columns` (contract).
    unsafe {
        let col = arch::load(columns.add(k)) as u64;
        let mut most = 0u32;
        for r in piece * piece_rows..((piece + 1) * piece_rows).min(rows) {
            let v = arch::load(values.add((r * stride + col) as usize));
            if v.is_nan() {
                continue;
            }
            if !crate::categorical::is_category(v) {
                arch::atomic_min_u32_gpu(bad.add(k), r as u32);
                break;
            }
            most = most.max(v as u32 + 1);
        }
        if most > 0 {
            arch::atomic_max_u32_gpu(max.add(k), most);
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
