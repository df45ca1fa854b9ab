//! The `data` family: synthetic rows made on the device (the benchmarks' data), and categorical
//! columns encoded by ordered target statistics (once a run).

use primitives_kernels::kernel;
use primitives_kernels::ops::GradientPair;

use crate::synthetic::{self, SyntheticRows};
use crate::target_statistics::{self as ts, OrderedStatistics};

kernel! {
    /// Synthetic rows `first..first + n`; see [`synthetic::rows_kernel`].
    pub unsafe fn boost_synthetic_rows(spec: *const SyntheticRows, first: u64, n: u64, values: *mut f32, labels: *mut f32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { synthetic::rows_kernel(spec, first, n, values, labels) }
    }
}

kernel! {
    /// The rows' order keys; see [`ts::keys_kernel`].
    pub unsafe fn boost_encode_ordered_keys(codes: *const f32, rows: u64, seed: u64, keys: *mut u64, order: *mut u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { ts::keys_kernel(codes, rows, seed, keys, order) }
    }
}

kernel! {
    /// The sorted rows' categories and fixed-point labels; see [`ts::pairs_kernel`].
    pub unsafe fn boost_encode_ordered_pairs(
        keys: *const u64,
        order: *const u32,
        labels: *const f32,
        rows: u64,
        stats: *const OrderedStatistics,
        categories: *mut u32,
        pairs: *mut GradientPair<i64>,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { ts::pairs_kernel(keys, order, labels, rows, stats, categories, pairs) }
    }
}

kernel! {
    /// The rows' encodings and the categories' statistics; see [`ts::values_kernel`].
    pub unsafe fn boost_encode_ordered_values(
        categories: *const u32,
        order: *const u32,
        before: *const GradientPair<i64>,
        pairs: *const GradientPair<i64>,
        rows: u64,
        stats: *const OrderedStatistics,
        values: *mut f32,
        table: *mut f32,
        table_len: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { ts::values_kernel(categories, order, before, pairs, rows, stats, values, table, table_len) }
    }
}

host_kernels! {
    boost_synthetic_rows,
    boost_encode_ordered_keys,
    boost_encode_ordered_pairs,
    boost_encode_ordered_values,
}
