//! Prediction: the walk from a tree's root to a leaf over a row's feature values, written once.
//! `boost`'s CPU predictor decides each step with [`goes_left`] (a categorical split's with
//! [`category_bits_go_left`], the node's categories as a bitset), and [`dense_kernel`] and
//! [`csr_kernel`] walk the same trees on the device with it, adding the leaf values to the margins
//! in the same order (tree after tree, in `f32`), so that the device's margins are the host's bit
//! for bit. A training run keeps its evaluation sets' margins up to date with these kernels.
//!
//! Two shapes of launch: a thread a row walking every tree ([`dense_kernel`], [`csr_kernel`]; the
//! block's dense rows staged in shared memory) for batches that fill the device, and a
//! thread a (tree, row) pair ([`dense_trees_kernel`], [`csr_trees_kernel`]) writing leaf values that
//! [`sum_kernel`] adds in tree order, for small batches, where a thread a row would leave most of
//! the device idle and wait on one long chain of dependent loads a row.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;

use crate::bins::PackedRows;
use crate::ellpack::EllpackPage;
use crate::evaluate::global_thread;
use crate::objective::{sigmoid, softmax_normaliser, softmax_probability};

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

/// Categories at and above this (2^24, where `f32` stops holding every integer) are no category,
/// as in XGBoost.
pub const MAX_CATEGORY: u32 = 1 << 24;

/// The step of a categorical split (XGBoost's): a missing value follows the node's default
/// direction; a value whose category (the value truncated to an integer) is one of `categories`
/// (the split's, sorted) goes right, and every other value goes left, a negative one or one past
/// [`MAX_CATEGORY`] included (XGBoost's `Decision`).
#[inline]
pub fn category_goes_left(value: f32, default_left: bool, categories: &[u32]) -> bool {
    if value.is_nan() {
        return default_left;
    }
    if !(0.0..MAX_CATEGORY as f32).contains(&value) {
        return true;
    }
    categories.binary_search(&(value as u32)).is_err()
}

/// [`category_goes_left`] over the split's categories as a bitset of `words` words (bit `c % 32`
/// of word `c / 32` for category `c`; `word(i)` reads word `i`), as the device keeps them.
#[inline]
pub fn category_bits_go_left(value: f32, default_left: bool, words: u32, word: impl Fn(u32) -> u32) -> bool {
    if value.is_nan() {
        return default_left;
    }
    if !(0.0..MAX_CATEGORY as f32).contains(&value) {
        return true;
    }
    let c = value as u32;
    !(c / 32 < words && word(c / 32) >> (c % 32) & 1 != 0)
}

/// The leaf of an oblivious tree of `depth` levels as an index into its `2^depth` leaves (CatBoost's
/// applier): level `l`'s split `level(l)` (feature, condition, missing left) compared once, its
/// bit (1 = right) appended, with no branch on the path. The index is the leaf's node id less
/// `2^depth - 1` in XGBoost's numbering of a full tree.
#[inline(always)]
pub fn oblivious_index(depth: usize, level: impl Fn(usize) -> (u32, f32, bool), value: impl Fn(u32) -> f32) -> usize {
    let mut index = 0;
    for l in 0..depth {
        let (feature, condition, default_left) = level(l);
        index = 2 * index + usize::from(!goes_left(value(feature), condition, default_left));
    }
    index
}

/// The `left` of a leaf.
pub const LEAF: u32 = u32::MAX;
/// The bit of a split's `feature` that sends missing values left.
pub const DEFAULT_LEFT: u32 = 1 << 31;
/// The bit of a split's `feature` that makes it categorical: its `value`'s bits are then where
/// its categories start in [`TreeNodes::categories`] (a word count, then that many bitset words).
pub const CATEGORICAL: u32 = 1 << 30;
/// The feature index of a split's `feature` (the flags cleared).
pub const FEATURE_MASK: u32 = !(DEFAULT_LEFT | CATEGORICAL);

/// The nodes of a prediction launch's trees, and the categorical splits' bitsets.
#[derive(Clone, Copy)]
pub struct TreeNodes {
    pub nodes: *const PredictNode,
    pub categories: *const u32,
}

/// A tree node as the device walks it: 16 bytes, read with one vector load. The host lays each
/// tree out breadth first (`boost::gpu::DeviceTrees`), so a split's children are adjacent and after
/// it: the left one at `left`, the right one at `left + 1`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PredictNode {
    /// The left child's index within the laid-out tree, or [`LEAF`].
    pub left: u32,
    /// The split's feature, with [`DEFAULT_LEFT`] when a missing value goes left and
    /// [`CATEGORICAL`] for a split on categories.
    pub feature: u32,
    /// The split condition, or the leaf value (a categorical split: its bitset's place, as bits).
    pub value: f32,
    /// The node's index in the model's tree (what leaf prediction reports).
    pub id: u32,
}

impl PredictNode {
    /// The child of a split that a row with `value` of the split's feature goes to; a categorical
    /// split's categories are read from `categories`.
    ///
    /// # Safety
    /// For a categorical split, `categories` holds its word count and words where `value` says.
    #[inline]
    unsafe fn child(&self, value: f32, categories: *const u32) -> u32 {
        let default_left = self.feature & DEFAULT_LEFT != 0;
        let left = if self.feature & CATEGORICAL != 0 {
            let at = self.value.to_bits() as usize;
            // SAFETY: the split's words are within `categories` (caller).
            let words = unsafe { arch::load(categories.add(at)) };
            // SAFETY: as above, `w < words`.
            category_bits_go_left(value, default_left, words, |w| unsafe {
                arch::load(categories.add(at + 1 + w as usize))
            })
        } else {
            goes_left(value, self.value, default_left)
        };
        self.left + u32::from(!left)
    }
}

/// A tree of one prediction launch: where its nodes start in the node buffer, how many it has, the
/// output (class) its leaf values add to, and for an oblivious tree its levels (0 for any other).
/// An oblivious tree of `levels` levels is laid out as its level splits (a node a level), then its
/// `2^levels` leaves by index ([`oblivious_index`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PredictTree {
    pub first_node: u32,
    pub nodes: u32,
    pub output: u32,
    pub levels: u32,
}

/// Level splits an oblivious walk loads together before comparing (independent loads in flight
/// instead of one dependent load a level).
const LEVELS_IN_FLIGHT: usize = 4;

/// The leaf that a row reaches in `tree`, `value(feature)` giving the row's values (NaN when
/// missing). A child outside the tree ends the walk at its parent, and no walk takes more steps
/// than the tree has nodes (the host's layout allows neither).
///
/// # Safety
/// `tree.nodes >= 1`, `nodes` holds the tree's `tree.first_node + tree.nodes` nodes, 16-byte
/// aligned, and the bitsets of its categorical splits.
#[inline]
unsafe fn leaf(nodes: TreeNodes, tree: PredictTree, value: impl Fn(u32) -> f32) -> PredictNode {
    let first = nodes.nodes.wrapping_add(tree.first_node as usize) as *const [u32; 4];
    // SAFETY: the root and every child loaded are below `tree.nodes` (checked before the load); the
    // nodes are read-only during the launch, so the non-coherent path is sound.
    let load = |i: u32| -> PredictNode { bytemuck::cast(unsafe { arch::load_global_nc_v4(first.add(i as usize)) }) };
    if tree.levels != 0 {
        return oblivious_leaf(tree, load, value);
    }
    let mut node = load(0);
    for _ in 0..tree.nodes {
        if node.left == LEAF {
            break;
        }
        // SAFETY: a categorical split's words are within `nodes.categories` (caller).
        let child = unsafe { node.child(value(node.feature & FEATURE_MASK), nodes.categories) };
        if child >= tree.nodes {
            break;
        }
        node = load(child);
    }
    node
}

/// The leaf of an oblivious tree laid out as [`PredictTree`] says: the level splits loaded
/// [`LEVELS_IN_FLIGHT`] at a time, the index's bits appended ([`goes_left`], as
/// [`oblivious_index`]), then the leaf at `levels + index`. An index past the tree's nodes (which
/// the host's layout does not allow) ends at the first level's node.
#[inline(always)]
fn oblivious_leaf(tree: PredictTree, load: impl Fn(u32) -> PredictNode, value: impl Fn(u32) -> f32) -> PredictNode {
    let levels = tree.levels.min(tree.nodes);
    let mut index = 0u32;
    let mut l = 0;
    while l < levels {
        let mut splits = [PredictNode::default(); LEVELS_IN_FLIGHT];
        for (k, split) in splits.iter_mut().enumerate() {
            if l + (k as u32) < levels {
                *split = load(l + k as u32);
            }
        }
        for (k, split) in splits.iter().enumerate() {
            if l + (k as u32) < levels {
                let left =
                    goes_left(value(split.feature & !DEFAULT_LEFT), split.value, split.feature & DEFAULT_LEFT != 0);
                index = 2 * index + u32::from(!left);
            }
        }
        l += LEVELS_IN_FLIGHT as u32;
    }
    let at = levels.saturating_add(index);
    load(if at < tree.nodes { at } else { 0 })
}

/// The dynamic shared memory, in bytes, that a row kernel block of `threads` needs to stage its
/// dense rows of `cols` values (each row `cols | 1` words apart, so that the lanes reading one
/// feature of their rows hit distinct banks).
pub fn staged_bytes(threads: usize, cols: usize) -> usize {
    threads * (cols | 1) * 4
}

/// The row kernels' walk of one row over the `num_trees` trees, in order: each leaf value added to
/// the margin of its tree's output in `f32`, as the CPU predictor adds them, or each leaf's index
/// written. A run of trees of one output keeps its margin in a register: the host groups a
/// launch's trees by output (keeping their order within an output, which is all the sums depend
/// on), so each margin is read and written once.
///
/// # Safety
/// The trees' nodes and outputs are within bounds; `margins` points at the row's margins, or
/// `leaves` (when not null) at `rows * num_trees` indices.
#[inline]
unsafe fn walk_row(
    row: u64,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: TreeNodes,
    leaves: *mut u32,
    margins: *mut f32,
    value: impl Fn(u32) -> f32,
) {
    let mut run: Option<(u32, f32)> = None;
    for t in 0..num_trees as usize {
        // SAFETY: `t < num_trees`; the tree's nodes and output are within bounds (the caller).
        unsafe {
            let tree = arch::load(trees.add(t));
            let leaf = leaf(nodes, tree, &value);
            if !leaves.is_null() {
                arch::store(leaves.add(row as usize * num_trees as usize + t), leaf.id);
                continue;
            }
            run = Some(match run {
                Some((output, sum)) if output == tree.output => (output, sum + leaf.value),
                previous => {
                    if let Some((output, sum)) = previous {
                        arch::store(margins.add(output as usize), sum);
                    }
                    (tree.output, arch::load(margins.add(tree.output as usize)) + leaf.value)
                }
            });
        }
    }
    if let Some((output, sum)) = run {
        // SAFETY: as above.
        unsafe { arch::store(margins.add(output as usize), sum) };
    }
}

/// Stages the block's dense rows `first_row..first_row + block_rows` in shared memory (see
/// [`staged_bytes`]), the block's threads striding over the values (coalesced), and waits for the
/// block: the rows' `.shared` address.
///
/// # Safety
/// The dynamic shared memory holds [`staged_bytes`] for the block; `values` holds the rows.
unsafe fn stage_rows(values: *const f32, cols: u32, first_row: u64, block_rows: u32) -> u32 {
    let shared = arch::shared_address(arch::dynamic_shared_memory());
    let global = values.wrapping_add(first_row as usize * cols as usize);
    let mut k = arch::thread_idx_x();
    while k < block_rows * cols {
        let at = shared + 4 * (k / cols * (cols | 1) + k % cols);
        // SAFETY: `k` is a value of the block's rows, and its place within the staged rows.
        unsafe { arch::store_shared(at, arch::load(global.add(k as usize))) };
        k += arch::block_dim_x();
    }
    arch::sync_threads();
    shared
}

/// The block's first row, its row count and this thread's row (`None` past the last).
fn block_rows(rows: u64) -> (u64, u32, Option<u64>) {
    let threads = arch::block_dim_x() as u64;
    let first = arch::block_idx_x() as u64 * threads;
    let count = rows.saturating_sub(first).min(threads) as u32;
    let row = first + arch::thread_idx_x() as u64;
    (first, count, (row < rows).then_some(row))
}

/// A thread a row: `margins[row * outputs + tree.output] += ` the leaf value of each of the
/// `num_trees` trees, in order, for every row of a dense row-major matrix of `rows x cols` values (a
/// feature at or past `cols` is missing); or, when `leaves` is not null, `leaves[row * num_trees +
/// t]` = the index of the leaf the row reaches in tree `t` (`margins` is then not read). With
/// `stage` not 0, the block's rows are first staged in shared memory.
///
/// # Safety
/// `values` holds `rows * cols` values, `margins` `rows * outputs` (or `leaves` `rows *
/// num_trees`); every tree has nodes, all within `nodes`, and an `output` below `outputs`; with
/// `stage`, the dynamic shared memory holds [`staged_bytes`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn dense_kernel(
    values: *const f32,
    rows: u64,
    cols: u64,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: TreeNodes,
    margins: *mut f32,
    outputs: u64,
    leaves: *mut u32,
    stage: u64,
) {
    let (first, count, row) = block_rows(rows);
    // SAFETY: as the caller promises.
    let staged = (stage != 0).then(|| unsafe { stage_rows(values, cols as u32, first, count) });
    let Some(row) = row else { return };
    let local = (row - first) as u32;
    let value = |feature: u32| {
        if (feature as u64) >= cols {
            return f32::NAN;
        }
        // SAFETY: `row < rows` and `feature < cols`; a staged row is within the shared memory.
        unsafe {
            match staged {
                Some(shared) => arch::load_shared(shared + 4 * (local * (cols as u32 | 1) + feature)),
                None => arch::load(values.add(row as usize * cols as usize + feature as usize)),
            }
        }
    };
    let row_margins = margins.wrapping_add(row as usize * outputs as usize);
    // SAFETY: as the caller promises.
    unsafe { walk_row(row, trees, num_trees, nodes, leaves, row_margins, value) }
}

/// A CSR row's value of `feature`: NaN without an entry; of two entries of one column the later
/// one counts (as the host's expansion of the row).
///
/// # Safety
/// `begin..end` are entries of both arrays.
#[inline]
unsafe fn csr_value(col_indices: *const u32, values: *const f32, (begin, end): (u64, u64), feature: u32) -> f32 {
    let mut found = f32::NAN;
    for entry in begin as usize..end as usize {
        // SAFETY: the row's entries are within both arrays.
        if unsafe { arch::load(col_indices.add(entry)) } == feature {
            // SAFETY: as above.
            found = unsafe { arch::load(values.add(entry)) };
        }
    }
    found
}

/// [`dense_kernel`] over a CSR matrix: row `row`'s entries are `row_ptr[row]..row_ptr[row + 1]` of
/// `col_indices` and `values` (a feature without an entry is missing; of two entries of one column
/// the later counts); nothing is staged.
///
/// # Safety
/// `row_ptr` holds `rows + 1` non-decreasing offsets into `col_indices` and `values`; the rest as
/// [`dense_kernel`]'s.
#[allow(clippy::too_many_arguments)]
pub unsafe fn csr_kernel(
    row_ptr: *const u64,
    col_indices: *const u32,
    values: *const f32,
    rows: u64,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: TreeNodes,
    margins: *mut f32,
    outputs: u64,
    leaves: *mut u32,
) {
    let row = global_thread();
    if row >= rows {
        return;
    }
    // SAFETY: `row + 1 <= rows`.
    let span = unsafe { (arch::load(row_ptr.add(row as usize)), arch::load(row_ptr.add(row as usize + 1))) };
    // SAFETY: the row's entries are within both arrays (the caller).
    let value = |feature: u32| unsafe { csr_value(col_indices, values, span, feature) };
    let row_margins = margins.wrapping_add(row as usize * outputs as usize);
    // SAFETY: as the caller promises.
    unsafe { walk_row(row, trees, num_trees, nodes, leaves, row_margins, value) }
}

/// A thread a row of an ELLPACK page: `leaves[row * num_trees + t]` = the leaf the row reaches in
/// tree `t`, or, when `leaves` is null, `margins[row * outputs + tree.output] +=` its value, each
/// feature's value read as `bin_values[bin]` of its bin (a value on the same side of every split
/// condition as all of the bin's values: `boost`'s host walk of pages uses the same table), NaN
/// without one. External-memory training walks each tree over the pages so.
///
/// # Safety
/// `page.words` holds the page's symbols (and, where a row's last symbol ends a word, no more),
/// `page.cut_ptrs` `features + 1` offsets, `bin_values` a value for every global bin, `leaves` `rows *
/// num_trees` or `margins` `rows * outputs`; every tree has nodes, all within `nodes`, and an output
/// below `outputs`.
pub unsafe fn ellpack_kernel(
    page: EllpackPage,
    bin_values: *const f32,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: TreeNodes,
    (leaves, margins, outputs): (*mut u32, *mut f32, u64),
) {
    let row = global_thread();
    if row >= page.rows {
        return;
    }
    // SAFETY: every word read is one of the page's (the caller).
    let word = |i: usize| unsafe { arch::load(page.words.add(i)) };
    let value = |feature: u32| {
        if feature >= page.features {
            return f32::NAN;
        }
        // SAFETY: `feature + 1 <= features`.
        let bins = unsafe {
            (arch::load(page.cut_ptrs.add(feature as usize)), arch::load(page.cut_ptrs.add(feature as usize + 1)))
        };
        match page.shape.bin_of(row as usize, feature as usize, bins, word) {
            // SAFETY: a bin of the page is one of the table's.
            Some(bin) => unsafe { arch::load(bin_values.add(bin as usize)) },
            None => f32::NAN,
        }
    };
    let row_margins = margins.wrapping_add(row as usize * outputs as usize);
    // SAFETY: as the caller promises; the margins are not read when `leaves` is given.
    unsafe { walk_row(row, trees, num_trees, nodes, leaves, row_margins, value) }
}

/// [`ellpack_kernel`] over rows in the builder's packed layout ([`PackedRows`]: each feature's
/// bin within the feature, the all-ones id a missing value), the smaller copy of a page that
/// external-memory training keeps in host memory: a feature's value is `bin_values` of its global
/// bin (`cut_ptrs[feature]` plus its id), NaN where missing.
///
/// # Safety
/// `bins` holds `rows` packed rows of `features` ids, each id below its feature's bin count or
/// missing; `cut_ptrs` `features + 1` offsets; the rest as [`ellpack_kernel`]'s.
#[allow(clippy::too_many_arguments)]
pub unsafe fn packed_kernel(
    (bins, rows, features): (PackedRows, u64, u32),
    cut_ptrs: *const u32,
    bin_values: *const f32,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: TreeNodes,
    (leaves, margins, outputs): (*mut u32, *mut f32, u64),
) {
    let row = global_thread();
    if row >= rows {
        return;
    }
    let missing = (1u32 << bins.bits) - 1;
    let value = |feature: u32| {
        if feature >= features {
            return f32::NAN;
        }
        // SAFETY: `row < rows` and `feature < features`: an id of the rows (the caller).
        let id = unsafe { bins.get(row as usize, feature as usize) };
        if id == missing {
            return f32::NAN;
        }
        // SAFETY: the id is one of the feature's bins, so its global bin has a value.
        unsafe { arch::load(bin_values.add((arch::load(cut_ptrs.add(feature as usize)) + id) as usize)) }
    };
    let row_margins = margins.wrapping_add(row as usize * outputs as usize);
    // SAFETY: as the caller promises; the margins are not read when `leaves` is given.
    unsafe { walk_row(row, trees, num_trees, nodes, leaves, row_margins, value) }
}

/// Where the tree kernels write: a leaf value a tree and row (`values[t * rows + row]`), or, when
/// `leaves` is not null, a leaf index (`leaves[row * leaf_stride + t]`).
#[derive(Clone, Copy)]
pub struct TreeWalks {
    pub values: *mut f32,
    pub leaves: *mut u32,
    pub leaf_stride: u64,
}

/// A thread a (tree, row) pair, for batches too small to fill the device a thread a row: the
/// thread `t * rows + row` walks tree `t` for `row` of dense rows and writes its leaf value or
/// index (see [`TreeWalks`]). [`sum_kernel`] then adds the values to the margins in tree order.
///
/// # Safety
/// `values` holds `rows * cols` values; the output as [`TreeWalks`] says for `num_trees` trees;
/// the trees as [`dense_kernel`]'s.
#[allow(clippy::too_many_arguments)]
pub unsafe fn dense_trees_kernel(
    values: *const f32,
    rows: u64,
    cols: u64,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: TreeNodes,
    out: TreeWalks,
) {
    let Some((t, row)) = tree_and_row(rows, num_trees) else { return };
    let value = |feature: u32| {
        if (feature as u64) < cols {
            // SAFETY: `row < rows` and `feature < cols`.
            unsafe { arch::load(values.add(row as usize * cols as usize + feature as usize)) }
        } else {
            f32::NAN
        }
    };
    // SAFETY: as the caller promises.
    unsafe { walk_tree(t, row, rows, trees, nodes, out, value) }
}

/// [`dense_trees_kernel`] over CSR rows (as [`csr_kernel`] reads them).
///
/// # Safety
/// As [`csr_kernel`]'s for the rows and [`dense_trees_kernel`]'s for the rest.
#[allow(clippy::too_many_arguments)]
pub unsafe fn csr_trees_kernel(
    row_ptr: *const u64,
    col_indices: *const u32,
    values: *const f32,
    rows: u64,
    trees: *const PredictTree,
    num_trees: u64,
    nodes: TreeNodes,
    out: TreeWalks,
) {
    let Some((t, row)) = tree_and_row(rows, num_trees) else { return };
    // SAFETY: `row + 1 <= rows`.
    let span = unsafe { (arch::load(row_ptr.add(row as usize)), arch::load(row_ptr.add(row as usize + 1))) };
    // SAFETY: the row's entries are within both arrays (the caller).
    let value = |feature: u32| unsafe { csr_value(col_indices, values, span, feature) };
    // SAFETY: as the caller promises.
    unsafe { walk_tree(t, row, rows, trees, nodes, out, value) }
}

/// The (tree, row) of a thread of the tree kernels: thread `t * rows + row`; `None` past them.
#[inline]
fn tree_and_row(rows: u64, num_trees: u64) -> Option<(u64, u64)> {
    let index = global_thread();
    (index < rows * num_trees).then(|| (index / rows, index % rows))
}

/// The tree kernels' walk of tree `t` for `row`.
///
/// # Safety
/// As [`dense_trees_kernel`]'s.
#[inline]
unsafe fn walk_tree(
    t: u64,
    row: u64,
    rows: u64,
    trees: *const PredictTree,
    nodes: TreeNodes,
    out: TreeWalks,
    value: impl Fn(u32) -> f32,
) {
    // SAFETY: `t < num_trees`, `row < rows`; the outputs as the caller promises.
    unsafe {
        let leaf = leaf(nodes, arch::load(trees.add(t as usize)), value);
        if out.leaves.is_null() {
            arch::store(out.values.add((t * rows + row) as usize), leaf.value);
        } else {
            arch::store(out.leaves.add((row * out.leaf_stride + t) as usize), leaf.id);
        }
    }
}

/// A thread a (output, row) pair: `margins[row * outputs + output] += values[t * rows + row]` for
/// each of the `num_trees` trees `t` of that output, in tree order (the CPU predictor's `f32`
/// sums).
///
/// # Safety
/// `values` holds `num_trees * rows` leaf values, `margins` `rows * outputs`; every tree's output
/// is below `outputs`.
pub unsafe fn sum_kernel(
    values: *const f32,
    rows: u64,
    trees: *const PredictTree,
    num_trees: u64,
    margins: *mut f32,
    outputs: u64,
) {
    let index = global_thread();
    if index >= rows * outputs {
        return;
    }
    let (output, row) = ((index / rows) as u32, index % rows);
    // SAFETY: `row < rows`, `output < outputs`, `t < num_trees`.
    unsafe {
        let at = margins.add((row * outputs) as usize + output as usize);
        let mut sum = arch::load(at);
        for t in 0..num_trees as usize {
            if arch::load(trees.add(t)).output == output {
                sum += arch::load(values.add(t * rows as usize + row as usize));
            }
        }
        arch::store(at, sum);
    }
}

/// What an objective makes of a row's margins for its predictions (XGBoost's `PredTransform`), one
/// source for the host's [`OutputTransform::row`] and the device's [`transform_kernel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputTransform {
    /// The margins (regression, ranking, `binary:logitraw`).
    Identity,
    /// [`sigmoid`] of each margin (the logistic family).
    Sigmoid,
    /// `e^m` of each margin (`count:poisson`).
    Exp,
    /// The row's softmax probabilities (`multi:softprob`).
    Softmax,
    /// The class of the row's largest margin, the first of equal ones, as `f32` (`multi:softmax`).
    ArgMax,
    /// 1 for a positive margin, else 0 (`binary:hinge`).
    Step,
    /// The row's margins in ascending order (`reg:quantileerror`, so quantiles never cross):
    /// XGBoost's stable insertion sort, NaN last.
    Sorted,
    /// Each expectile the one below plus a positive gap (`reg:expectileerror`, so they never cross):
    /// [`crate::expectile::chain`].
    Expectiles,
}

impl OutputTransform {
    /// The kernel argument's code.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The transform of a kernel argument's code.
    pub fn from_code(code: u32) -> Option<Self> {
        [
            Self::Identity,
            Self::Sigmoid,
            Self::Exp,
            Self::Softmax,
            Self::ArgMax,
            Self::Step,
            Self::Sorted,
            Self::Expectiles,
        ]
        .into_iter()
        .find(|t| t.code() == code)
    }

    /// Values a row of `outputs` margins gives.
    pub fn values_per_row(self, outputs: usize) -> usize {
        if self == Self::ArgMax {
            1
        } else {
            outputs
        }
    }

    /// A row's values from its `outputs` margins (`margin(c)`), written by `write(c, value)`.
    #[inline]
    pub fn row(self, outputs: usize, margin: impl Fn(usize) -> f32, mut write: impl FnMut(usize, f32)) {
        match self {
            Self::Identity => (0..outputs).for_each(|c| write(c, margin(c))),
            Self::Sigmoid => (0..outputs).for_each(|c| write(c, sigmoid(margin(c)))),
            Self::Exp => (0..outputs).for_each(|c| write(c, crate::exp::expf(margin(c)))),
            Self::Step => (0..outputs).for_each(|c| write(c, crate::metric::step(margin(c)))),
            Self::Sorted => {
                // Each margin goes to its rank (ties by position): the stable sort, without a buffer.
                let key = |c: usize| crate::order::ascending_key(margin(c));
                for c in 0..outputs {
                    let k = key(c);
                    let rank = (0..outputs).filter(|&d| key(d) < k || (key(d) == k && d < c)).count();
                    write(rank, margin(c));
                }
            }
            Self::Expectiles => crate::expectile::chain(outputs, margin, write),
            Self::Softmax => {
                let normaliser = softmax_normaliser(&margin, outputs);
                (0..outputs).for_each(|c| write(c, softmax_probability(margin(c), normaliser)));
            }
            Self::ArgMax => {
                let mut best = 0;
                for c in 1..outputs {
                    if margin(c) > margin(best) {
                        best = c;
                    }
                }
                write(0, best as f32);
            }
        }
    }
}

/// A thread a row: `out`'s values of the row from its `outputs` margins by the transform of
/// `code` ([`OutputTransform::row`]).
///
/// # Safety
/// `margins` holds `rows * outputs` values, `out` `rows * values_per_row(outputs)`; `code` is an
/// [`OutputTransform`]'s.
pub unsafe fn transform_kernel(margins: *const f32, out: *mut f32, rows: u64, outputs: u64, code: u32) {
    let row = global_thread();
    let Some(transform) = OutputTransform::from_code(code) else { return };
    if row >= rows {
        return;
    }
    let outputs = outputs as usize;
    let per_row = transform.values_per_row(outputs);
    let (first, written) = (row as usize * outputs, row as usize * per_row);
    // SAFETY: `row < rows` and `row` calls `margin` with `c < outputs`.
    let margin = |c: usize| unsafe { arch::load(margins.add(first + c)) };
    let write = |c: usize, value: f32| {
        // SAFETY: `row < rows` and `row` writes `c < values_per_row(outputs)`.
        unsafe { arch::store(out.add(written + c), value) }
    };
    transform.row(outputs, margin, write);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The device's bitset step is the host's list step for every kind of value.
    #[test]
    fn category_bitsets_decide_as_category_lists() {
        let list = [0u32, 5, 31, 32, 70];
        let mut words = [0u32; 3];
        list.iter().for_each(|&c| words[c as usize / 32] |= 1 << (c % 32));
        let values =
            [0.0, 0.9, 5.0, 5.5, 6.0, 31.0, 32.0, 64.0, 70.0, 95.0, 96.0, 1e6, -0.5, -3.0, 1.6777216e7, f32::NAN];
        for v in values {
            for default_left in [false, true] {
                let bits = category_bits_go_left(v, default_left, 3, |w| words[w as usize]);
                assert_eq!(bits, category_goes_left(v, default_left, &list), "{v} {default_left}");
            }
        }
    }

    #[test]
    fn output_transforms_of_a_row() {
        let margins = [1.0f32, 3.0, 3.0, -1.0];
        let row = |t: OutputTransform| {
            let mut out = [f32::NAN; 4];
            t.row(4, |c| margins[c], |c, v| out[c] = v);
            out[..t.values_per_row(4)].to_vec()
        };
        assert_eq!(row(OutputTransform::Identity), margins);
        assert_eq!(row(OutputTransform::ArgMax), [1.0], "the first of equal maxima");
        assert_eq!(row(OutputTransform::Sigmoid)[0], sigmoid(1.0));
        assert_eq!(row(OutputTransform::Exp)[3], crate::exp::expf(-1.0));
        let p = row(OutputTransform::Softmax);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6 && p[1] == p[2] && p[1] > p[0]);
        assert_eq!(row(OutputTransform::Step), [1.0, 1.0, 1.0, 0.0]);
        assert_eq!(row(OutputTransform::Sorted), [-1.0, 1.0, 3.0, 3.0]);
        for t in [
            OutputTransform::Identity,
            OutputTransform::Softmax,
            OutputTransform::ArgMax,
            OutputTransform::Step,
            OutputTransform::Sorted,
        ] {
            assert_eq!(OutputTransform::from_code(t.code()), Some(t));
        }
        assert_eq!(OutputTransform::from_code(9), None);
    }

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
