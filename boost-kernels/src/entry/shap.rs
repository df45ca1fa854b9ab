//! The `shap` family: SHAP values and interaction values of rows, a thread a row over the model's
//! root-to-leaf paths, and their rounding into XGBoost's layouts.

use primitives_kernels::kernel;

use crate::shap::{self, DevicePaths, DeviceRows, ShapElement, ShapPath, ShapSplit};

kernel! {
    /// Each row's SHAP values summed over the paths; see [`shap::contributions_kernel`] (dense rows
    /// when `row_ptr` is null, else CSR).
    pub unsafe fn boost_shap_contributions(
        values: *const f32,
        cols: u64,
        row_ptr: *const u64,
        col_indices: *const u32,
        first_row: u64,
        rows: u64,
        paths: *const ShapPath,
        num_paths: u64,
        elements: *const ShapElement,
        splits: *const ShapSplit,
        category_words: *const u32,
        tables: *const f32,
        weights: *const f32,
        sums: *mut f64,
        width: u64,
    ) {
        let data = DeviceRows { values, cols, row_ptr, col_indices };
        let paths_view = DevicePaths { paths, elements, splits, category_words, tables, weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { shap::contributions_kernel(data, first_row, rows, paths_view, num_paths, sums, width) }
    }
}

kernel! {
    /// Each row's SHAP values and pairs' interaction values summed over the paths; see
    /// [`shap::interactions_kernel`].
    pub unsafe fn boost_shap_interactions(
        values: *const f32,
        cols: u64,
        row_ptr: *const u64,
        col_indices: *const u32,
        first_row: u64,
        rows: u64,
        paths: *const ShapPath,
        num_paths: u64,
        elements: *const ShapElement,
        splits: *const ShapSplit,
        category_words: *const u32,
        tables: *const f32,
        weights: *const f32,
        contributions: *mut f64,
        pairs: *mut f64,
        width: u64,
    ) {
        let data = DeviceRows { values, cols, row_ptr, col_indices };
        let paths_view = DevicePaths { paths, elements, splits, category_words, tables, weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { shap::interactions_kernel(data, first_row, rows, paths_view, num_paths, contributions, pairs, width) }
    }
}

kernel! {
    /// The sums rounded into XGBoost's layout with the bias; see [`shap::finish_kernel`].
    pub unsafe fn boost_shap_finish(
        contributions: *const f64,
        pairs: *const f64,
        expected: *const f32,
        bases: *const f32,
        out: *mut f32,
        rows: u64,
        outputs: u64,
        width: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { shap::finish_kernel(contributions, pairs, expected, bases, out, rows, outputs, width) }
    }
}

host_kernels! {
    boost_shap_contributions,
    boost_shap_interactions,
    boost_shap_finish,
}
