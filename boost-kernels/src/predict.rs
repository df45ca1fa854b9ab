//! Prediction: the walk from a tree's root to a leaf over a row's feature values, written once.
//! `boost`'s CPU predictor decides each step with [`goes_left`], and [`dense_kernel`] and
//! [`csr_kernel`] walk the same trees on the device with it, adding the leaf values to the margins
//! in the same order (tree after tree, in `f32`), so that the device's margins are the host's bit
//! for bit. A training run keeps its evaluation sets' margins up to date with these kernels.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;

use crate::evaluate::global_thread;

/// The step of a split node: a missing value (NaN) follows the node's default direction, any other
/// value goes left when it is below the split condition (XGBoost's rule).
#[inline]
pub fn goes_left(value: f32, condition: f32, default_left: bool) -> bool {
    if value.is_nan() {
        default_left
    } else {
        value < condition
    }
}

/// A tree node as the device walks it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PredictNode {
    /// The left child's index within its tree, or -1 for a leaf.
    pub left: i32,
    pub right: i32,
    pub feature: u32,
    /// The split condition, or the leaf value.
    pub value: f32,
    /// 1 when a missing value goes left.
    pub default_left: u32,
}

/// A tree of one prediction launch: where its nodes start in the node buffer, how many it has, and
/// the output (class) its leaf values add to.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PredictTree {
    pub first_node: u32,
    pub nodes: u32,
    pub output: u32,
    pub padding: u32,
}

/// The leaf that a row reaches in `tree` (its index within the tree, and the node), `value(feature)`
/// giving the row's values (NaN when missing). A child outside the tree or a path longer than the
/// tree ends the walk at its node (the host checks the trees it uploads, so neither happens).
///
/// # Safety
/// `tree.nodes >= 1`, and `nodes` holds the tree's `tree.first_node + tree.nodes` nodes.
#[inline]
unsafe fn leaf(nodes: *const PredictNode, tree: PredictTree, value: impl Fn(u32) -> f32) -> (u32, PredictNode) {
    let first = tree.first_node as usize;
    // SAFETY: every index loaded is below `tree.nodes` (the root, and children checked before).
    let (mut index, mut node) = (0u32, unsafe { arch::load(nodes.add(first)) });
    for _ in 0..tree.nodes {
        if node.left < 0 {
            break;
        }
        let child =
            if goes_left(value(node.feature), node.value, node.default_left != 0) { node.left } else { node.right };
        if child < 0 || child as u32 >= tree.nodes {
            break;
        }
        index = child as u32;
        // SAFETY: `child < tree.nodes`.
        node = unsafe { arch::load(nodes.add(first + child as usize)) };
    }
    (index, node)
}

/// `margins[row * outputs + tree.output] += ` the leaf value of each of the `num_trees` trees, in
/// order, for every row of a dense row-major matrix of `rows x cols` values (a feature at or past
/// `cols` is missing); or, when `leaves` is not null, `leaves[row * num_trees + t]` = the index of
/// the leaf the row reaches in tree `t` (`margins` is then not read). One thread per row.
///
/// # Safety
/// `values` holds `rows * cols` values, `margins` `rows * outputs` (or `leaves` `rows * num_trees`);
/// every tree has nodes, all within `nodes`, and an `output` below `outputs`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn dense_kernel(
    values: *const f32,
    rows: u64,
    cols: u64,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: *const PredictNode,
    margins: *mut f32,
    outputs: u64,
    leaves: *mut u32,
) {
    let row = global_thread();
    if row >= rows {
        return;
    }
    let start = row as usize * cols as usize;
    let value = |feature: u32| {
        if (feature as u64) < cols {
            // SAFETY: `row < rows` and `feature < cols`.
            unsafe { arch::load(values.add(start + feature as usize)) }
        } else {
            f32::NAN
        }
    };
    let out = Walks { margins, outputs, leaves };
    // SAFETY: as the caller promises.
    unsafe { walk_trees(row, trees, num_trees, nodes, out, value) }
}

/// [`dense_kernel`] over a CSR matrix: row `row`'s entries are `row_ptr[row]..row_ptr[row + 1]` of
/// `col_indices` and `values`; a feature without an entry is missing, and of two entries of one
/// column the later one counts (as the host's expansion of the row).
///
/// # Safety
/// `row_ptr` holds `rows + 1` non-decreasing offsets into `col_indices` and `values`; `margins`
/// holds `rows * outputs` values; every tree's `output` is below `outputs` and its nodes are within
/// `nodes`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn csr_kernel(
    row_ptr: *const u64,
    col_indices: *const u32,
    values: *const f32,
    rows: u64,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: *const PredictNode,
    margins: *mut f32,
    outputs: u64,
    leaves: *mut u32,
) {
    let row = global_thread();
    if row >= rows {
        return;
    }
    // SAFETY: `row + 1 <= rows`.
    let (begin, end) = unsafe { (arch::load(row_ptr.add(row as usize)), arch::load(row_ptr.add(row as usize + 1))) };
    let value = |feature: u32| {
        let mut found = f32::NAN;
        for entry in begin as usize..end as usize {
            // SAFETY: the row's entries are within both arrays.
            if unsafe { arch::load(col_indices.add(entry)) } == feature {
                // SAFETY: as above.
                found = unsafe { arch::load(values.add(entry)) };
            }
        }
        found
    };
    let out = Walks { margins, outputs, leaves };
    // SAFETY: as the caller promises.
    unsafe { walk_trees(row, trees, num_trees, nodes, out, value) }
}

/// Where the walks of a row go: its margins (`outputs` a row), or, when `leaves` is not null, a leaf
/// index a tree.
#[derive(Clone, Copy)]
struct Walks {
    margins: *mut f32,
    outputs: u64,
    leaves: *mut u32,
}

/// Walks each tree for the row, tree after tree: adds the leaf value to the row's margin of the
/// tree's output (in `f32`, as the CPU predictor adds them), or writes the leaf's index.
///
/// # Safety
/// As [`dense_kernel`]'s, for the row `row`.
#[inline]
unsafe fn walk_trees(
    row: u64,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: *const PredictNode,
    out: Walks,
    value: impl Fn(u32) -> f32,
) {
    for t in 0..num_trees as usize {
        // SAFETY: `t < num_trees`; the tree's nodes and output are within bounds (the caller).
        unsafe {
            let tree = arch::load(trees.add(t));
            let (index, leaf) = leaf(nodes, tree, &value);
            if out.leaves.is_null() {
                let at = out.margins.add(row as usize * out.outputs as usize + tree.output as usize);
                arch::store(at, arch::load(at) + leaf.value);
            } else {
                arch::store(out.leaves.add(row as usize * num_trees as usize + t), index);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_values_follow_the_default_and_others_compare_below() {
        assert!(goes_left(f32::NAN, 1.0, true));
        assert!(!goes_left(f32::NAN, 1.0, false));
        assert!(goes_left(0.5, 1.0, false));
        assert!(!goes_left(1.0, 1.0, true), "equal to the condition goes right");
        assert!(goes_left(f32::NEG_INFINITY, -1e30, false));
        assert!(!goes_left(f32::INFINITY, f32::INFINITY, true));
    }
}
