//! The `shap` family: SHAP values of rows, a thread a row over the model's root-to-leaf paths,
//! interaction values, a thread a (row, matrix row) over the paths of one feature, and their
//! rounding into XGBoost's layouts.

use primitives_kernels::kernel;

use crate::shap::oblivious::{DeviceObliviousTrees, ObliviousLevel, ObliviousShapTree};
use crate::shap::{self, DevicePaths, DeviceRows, ShapElement, ShapOccurrence, ShapPath, ShapSplit};

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
    /// Each row's SHAP values summed over oblivious trees; see
    /// [`shap::oblivious::contributions_kernel`].
    pub unsafe fn boost_shap_oblivious_contributions(
        values: *const f32,
        cols: u64,
        row_ptr: *const u64,
        col_indices: *const u32,
        first_row: u64,
        rows: u64,
        trees: *const ObliviousShapTree,
        num_trees: u64,
        levels: *const ObliviousLevel,
        factors: *const f32,
        fractions: *const f64,
        leaves: *const f32,
        weights: *const f32,
        sums: *mut f64,
        width: u64,
    ) {
        let data = DeviceRows { values, cols, row_ptr, col_indices };
        let trees_view = DeviceObliviousTrees { trees, levels, factors, fractions, leaves, weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { shap::oblivious::contributions_kernel(data, first_row, rows, trees_view, num_trees, sums, width) }
    }
}

kernel! {
    /// Interaction values, a thread a (row, output, matrix row) over the paths of that row's
    /// feature, finished into XGBoost's layout; see [`shap::interactions_kernel`].
    pub unsafe fn boost_shap_interactions(
        values: *const f32,
        cols: u64,
        row_ptr: *const u64,
        col_indices: *const u32,
        first_row: u64,
        rows: u64,
        paths: *const ShapPath,
        elements: *const ShapElement,
        splits: *const ShapSplit,
        category_words: *const u32,
        tables: *const f32,
        weights: *const f32,
        offsets: *const u32,
        occurrences: *const ShapOccurrence,
        expected: *const f32,
        bases: *const f32,
        out: *mut f32,
        scratch: *mut f64,
        outputs: u64,
        width: u64,
    ) {
        let data = DeviceRows { values, cols, row_ptr, col_indices };
        let paths = DevicePaths { paths, elements, splits, category_words, tables, weights };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe {
            shap::interactions_kernel(
                data, first_row, rows, paths, offsets, occurrences, expected, bases, out, scratch, outputs, width,
            )
        }
    }
}

kernel! {
    /// The contributions' sums rounded into XGBoost's layout with the bias; see
    /// [`shap::finish_kernel`].
    pub unsafe fn boost_shap_finish(
        contributions: *const f64,
        expected: *const f32,
        bases: *const f32,
        out: *mut f32,
        rows: u64,
        outputs: u64,
        width: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { shap::finish_kernel(contributions, expected, bases, out, rows, outputs, width) }
    }
}

host_kernels! {
    boost_shap_contributions,
    boost_shap_oblivious_contributions,
    boost_shap_interactions,
    boost_shap_finish,
}
