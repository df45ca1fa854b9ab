//! The `predict` family: tree walks: dense, CSR, binarised rows, ELLPACK pages and packed rows, by tree or by row, and the objective's output transform.

use primitives_kernels::kernel;

use crate::binarised::{self, BinarisedFeature, BinarisedModel, BinarisedTree, LevelSplit};
use crate::bins::PackedRows;
use crate::ellpack::{EllpackPage, EllpackShape};
use crate::predict::{self, PredictNode, PredictTree};

kernel! {
    /// Each row's predictions from its margins; see [`predict::transform_kernel`].
    pub unsafe fn boost_predict_transform(margins: *const f32, out: *mut f32, rows: u64, outputs: u64, code: u64) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::transform_kernel(margins, out, rows, outputs, code as u32) }
    }
}

kernel! {
    /// Trees walked for dense rows: their leaf values added to the margins, or their leaf indices; see
    /// [`predict::dense_kernel`].
    pub unsafe fn boost_predict_dense(
        values: *const f32,
        rows: u64,
        cols: u64,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        categories: *const u32,
        margins: *mut f32,
        outputs: u64,
        leaves: *mut u32,
        stage: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::dense_kernel(values, rows, cols, trees, num_trees, predict::TreeNodes { nodes, categories }, margins, outputs, leaves, stage) }
    }
}

kernel! {
    /// Oblivious trees' leaf values added to the margins of dense rows, the rows' features first
    /// turned into bin codes against the model's conditions; see [`binarised::dense_kernel`].
    pub unsafe fn boost_predict_binarised(
        values: *const f32,
        rows: u64,
        cols: u64,
        features: *const BinarisedFeature,
        num_features: u64,
        thresholds: *const f32,
        steps: u64,
        trees: *const BinarisedTree,
        num_trees: u64,
        splits: *const [LevelSplit; 2],
        leaf_values: *const f32,
        columns: u64,
        margins: *mut f32,
        outputs: u64,
    ) {
        let model = BinarisedModel {
            features,
            num_features,
            thresholds,
            steps,
            trees,
            num_trees,
            splits,
            leaf_values,
            columns,
        };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { binarised::dense_kernel(values, rows, cols, model, margins, outputs) }
    }
}

kernel! {
    /// [`boost_predict_dense`] over CSR rows; see [`predict::csr_kernel`].
    pub unsafe fn boost_predict_csr(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        categories: *const u32,
        margins: *mut f32,
        outputs: u64,
        leaves: *mut u32,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe {
            predict::csr_kernel(row_ptr, col_indices, values, rows, trees, num_trees, predict::TreeNodes { nodes, categories }, margins, outputs, leaves)
        }
    }
}

kernel! {
    /// A thread a (tree, row) of dense rows: leaf values or indices; see
    /// [`predict::dense_trees_kernel`].
    pub unsafe fn boost_predict_dense_trees(
        values: *const f32,
        rows: u64,
        cols: u64,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        categories: *const u32,
        leaf_values: *mut f32,
        leaves: *mut u32,
        leaf_stride: u64,
    ) {
        let out = predict::TreeWalks { values: leaf_values, leaves, leaf_stride };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::dense_trees_kernel(values, rows, cols, trees, num_trees, predict::TreeNodes { nodes, categories }, out) }
    }
}

kernel! {
    /// [`boost_predict_dense_trees`] over CSR rows; see [`predict::csr_trees_kernel`].
    pub unsafe fn boost_predict_csr_trees(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        categories: *const u32,
        leaf_values: *mut f32,
        leaves: *mut u32,
        leaf_stride: u64,
    ) {
        let out = predict::TreeWalks { values: leaf_values, leaves, leaf_stride };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::csr_trees_kernel(row_ptr, col_indices, values, rows, trees, num_trees, predict::TreeNodes { nodes, categories }, out) }
    }
}

kernel! {
    /// The tree kernels' leaf values added to the margins in tree order; see
    /// [`predict::sum_kernel`].
    pub unsafe fn boost_predict_sum(
        leaf_values: *const f32,
        rows: u64,
        trees: *const PredictTree,
        num_trees: u64,
        margins: *mut f32,
        outputs: u64,
    ) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::sum_kernel(leaf_values, rows, trees, num_trees, margins, outputs) }
    }
}

kernel! {
    /// The leaves a tree walk reaches from the rows of an ELLPACK page (external memory), or their
    /// values added to the rows' margins; see [`predict::ellpack_kernel`].
    pub unsafe fn boost_predict_ellpack(
        words: *const u64,
        rows: u64,
        row_stride: u64,
        symbol_bits: u64,
        dense: u64,
        cut_ptrs: *const u32,
        features: u64,
        bin_values: *const f32,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        categories: *const u32,
        leaves: *mut u32,
        margins: *mut f32,
        outputs: u64,
    ) {
        let shape = EllpackShape { row_stride: row_stride as usize, symbol_bits: symbol_bits as u32, is_dense: dense != 0 };
        let page = EllpackPage { words, rows, shape, cut_ptrs, features: features as u32 };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { predict::ellpack_kernel(page, bin_values, trees, num_trees, predict::TreeNodes { nodes, categories }, (leaves, margins, outputs)) }
    }
}

kernel! {
    /// [`boost_predict_ellpack`] over a page's rows in the builder's packed layout; see
    /// [`predict::packed_kernel`].
    pub unsafe fn boost_predict_packed(
        words: *const u32,
        rows: u64,
        features: u64,
        bits: u64,
        row_words: u64,
        cut_ptrs: *const u32,
        bin_values: *const f32,
        trees: *const PredictTree,
        num_trees: u64,
        nodes: *const PredictNode,
        categories: *const u32,
        leaves: *mut u32,
        margins: *mut f32,
        outputs: u64,
    ) {
        let bins = PackedRows { words, row_words: row_words as usize, bits: bits as u32 };
        let nodes = predict::TreeNodes { nodes, categories };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe {
            predict::packed_kernel((bins, rows, features as u32), cut_ptrs, bin_values, trees, num_trees, nodes, (leaves, margins, outputs))
        }
    }
}

host_kernels! {
    boost_predict_transform,
    boost_predict_dense,
    boost_predict_binarised,
    boost_predict_csr,
    boost_predict_dense_trees,
    boost_predict_csr_trees,
    boost_predict_sum,
    boost_predict_ellpack,
    boost_predict_packed,
}
