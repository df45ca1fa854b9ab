//! The `sketch` family: the quantile sketch of data in device memory (XGBoost's), and the dense and CSR checks.

use primitives_kernels::kernel;

use crate::sketch::{
    self, ColumnMerges, CsrRows, DenseColumns, QueueEntries, QueueSummaries, SketchEntry, SketchQueue, TreeRound,
};

kernel! {
    /// The sketch: each (piece, column)'s present and weighted values; see [`sketch::count_kernel`].
    pub unsafe fn boost_sketch_count(
        values: *const f32,
        rows: u64,
        cols: u64,
        weights: *const f32,
        stride: u64,
        piece_rows: u64,
        present: *mut u32,
        kept: *mut u32,
    ) {
        let data = DenseColumns { values, rows, cols, stride, weights, piece_rows };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::count_kernel(data, present, kept) }
    }
}

kernel! {
    /// The sketch: the weighted values column after column; see [`sketch::scatter_kernel`].
    pub unsafe fn boost_sketch_scatter(
        values: *const f32,
        rows: u64,
        cols: u64,
        weights: *const f32,
        stride: u64,
        piece_rows: u64,
        offsets: *const u64,
        out_values: *mut f32,
        out_weights: *mut f32,
    ) {
        let data = DenseColumns { values, rows, cols, stride, weights, piece_rows };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::scatter_kernel(data, offsets, out_values, out_weights) }
    }
}

kernel! {
    /// CSR rows' offsets and columns checked; see [`sketch::csr_check_kernel`].
    pub unsafe fn boost_csr_check(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        nnz: u64,
        cols: u64,
        problems: *mut u32,
    ) {
        let csr = CsrRows { row_ptr, col_indices, values, rows, nnz, cols, weights: core::ptr::null() };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::csr_check_kernel(csr, problems) }
    }
}

kernel! {
    /// Dense rows' values checked finite; see [`sketch::dense_check_kernel`].
    pub unsafe fn boost_check_dense(values: *const f32, n: u64, cols: u64, first_row: *mut u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::dense_check_kernel(values, n, cols, first_row) }
    }
}

kernel! {
    /// Dense rows' categorical columns: largest codes, bad values; see [`sketch::category_max_kernel`].
    pub unsafe fn boost_sketch_category_max(
        values: *const f32,
        rows: u64,
        stride: u64,
        columns: *const u32,
        num_columns: u64,
        piece_rows: u64,
        max: *mut u32,
        bad: *mut u32,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::category_max_kernel(values, rows, stride, columns, num_columns, piece_rows, max, bad) }
    }
}

kernel! {
    /// The sketch of CSR rows: each entry's sort key; see [`sketch::csr_keys_kernel`].
    pub unsafe fn boost_sketch_csr_keys(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        nnz: u64,
        cols: u64,
        weights: *const f32,
        keys: *mut u32,
        indices: *mut u32,
    ) {
        let csr = CsrRows { row_ptr, col_indices, values, rows, nnz, cols, weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::csr_keys_kernel(csr, keys, indices) }
    }
}

kernel! {
    /// The sketch of CSR rows: where each key starts; see [`sketch::csr_bounds_kernel`].
    pub unsafe fn boost_sketch_csr_bounds(sorted_keys: *const u32, n: u64, cols: u64, bounds: *mut u64) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::csr_bounds_kernel(sorted_keys, n, cols, bounds) }
    }
}

kernel! {
    /// The sketch of CSR rows: the queued values gathered; see [`sketch::csr_gather_kernel`].
    pub unsafe fn boost_sketch_csr_gather(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        nnz: u64,
        cols: u64,
        weights: *const f32,
        entries: *const u32,
        n: u64,
        out_values: *mut f32,
        out_weights: *mut f32,
    ) {
        let csr = CsrRows { row_ptr, col_indices, values, rows, nnz, cols, weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::csr_gather_kernel(csr, entries, n, out_values, out_weights) }
    }
}

kernel! {
    /// The sketch: the first values of runs of equal values; see [`sketch::heads_kernel`].
    pub unsafe fn boost_sketch_heads(values: *const f32, n: u64, col_starts: *const u64, cols: u64, heads: *mut u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::heads_kernel(values, n, col_starts, cols, heads) }
    }
}

kernel! {
    /// The sketch: each column's queues; see [`sketch::queues_kernel`].
    pub unsafe fn boost_sketch_queues(
        runs: *const u32,
        col_starts: *const u64,
        cols: u64,
        limits: *const u32,
        queue_offsets: *const u64,
        queues: *mut SketchQueue,
        counts: *mut u32,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::queues_kernel(runs, col_starts, cols, limits, queue_offsets, queues, counts) }
    }
}

kernel! {
    /// The sketch: each queue's entries; see [`sketch::entries_kernel`].
    pub unsafe fn boost_sketch_entries(
        values: *const f32,
        weights: *const f32,
        runs: *const u32,
        n: u64,
        queues: *const SketchQueue,
        queues_len: u64,
        entry_offsets: *const u32,
        keys: *mut f32,
        entry_weights: *mut f32,
    ) {
        let q = QueueEntries { values, weights, runs, n, queues, queues_len, entry_offsets, keys, entry_weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::entries_kernel(q) }
    }
}

kernel! {
    /// The sketch: each queue's pruned summary; see [`sketch::summaries_kernel`].
    pub unsafe fn boost_sketch_summaries(
        sorted_keys: *const f32,
        sorted_weights: *const f32,
        entry_offsets: *const u32,
        queues: *const SketchQueue,
        queues_len: u64,
        unit_weights: u64,
        limits: *const u32,
        summary_offsets: *const u64,
        exact: *mut SketchEntry,
        summaries: *mut SketchEntry,
        summary_lens: *mut u32,
        words: *mut u32,
    ) {
        let s = QueueSummaries {
            sorted_keys,
            sorted_weights,
            entry_offsets,
            queues,
            queues_len,
            unit_weights: unit_weights != 0,
            limits,
            summary_offsets,
            exact,
            summaries,
            summary_lens,
            words,
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::summaries_kernel(s) }
    }
}

kernel! {
    /// The sketch: each column's summaries merged; see [`sketch::merge_kernel`].
    pub unsafe fn boost_sketch_merge(
        cols: u64,
        summaries: *mut SketchEntry,
        summary_lens: *const u32,
        summary_offsets: *const u64,
        column_queues: *const u64,
        limits: *const u32,
        scratch: *mut SketchEntry,
        scratch_offsets: *const u64,
        levels: *const u32,
        merged: *mut SketchEntry,
        merged_offsets: *const u64,
        merged_lens: *mut u32,
        diverged: *const u32,
        round_starts: *const u32,
    ) {
        let m = ColumnMerges {
            cols,
            summaries,
            summary_lens,
            summary_offsets,
            column_queues,
            limits,
            scratch,
            scratch_offsets,
            levels,
            merged,
            merged_offsets,
            merged_lens,
            diverged,
            round_starts,
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::merge_kernel(m) }
    }
}

kernel! {
    /// The sketch: a round of the columns' merge trees; see [`sketch::tree_kernel`].
    pub unsafe fn boost_sketch_tree(
        tasks: *const [u32; 4],
        tasks_len: u64,
        summaries: *mut SketchEntry,
        offsets: *const u64,
        lens: *mut u32,
        limits: *const u32,
        scratch: *mut SketchEntry,
        scratch_offsets: *const u64,
        diverged: *mut u32,
    ) {
        let t = TreeRound { tasks, tasks_len, summaries, offsets, lens, limits, scratch, scratch_offsets, diverged };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { sketch::tree_kernel(t) }
    }
}

host_kernels! {
    boost_sketch_category_max,
    boost_sketch_count,
    boost_sketch_scatter,
    boost_csr_check,
    boost_check_dense,
    boost_sketch_csr_keys,
    boost_sketch_csr_bounds,
    boost_sketch_csr_gather,
    boost_sketch_heads,
    boost_sketch_queues,
    boost_sketch_entries,
    boost_sketch_summaries,
    boost_sketch_merge,
    boost_sketch_tree,
}
