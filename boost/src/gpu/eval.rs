//! Evaluation sets on the device during a training run: [`DeviceEvalSet`] keeps a set's features,
//! labels, weights and margins there; after each round the round's trees ([`DeviceTrees`]) walk its
//! rows (`boost_kernels::predict`, the CPU predictor's step) and add their leaf values to the
//! margins, and its metrics are computed from them there ([`MetricRows`]). Margins, and so the
//! evaluation log and early stopping, are the host's bit for bit.

use std::ops::Range;

use primitives::ops::Element;
use primitives::{DeviceBuffer, Gpu, LaunchConfig};

use boost_kernels::entry;
use boost_kernels::metric::Transform;
use boost_kernels::predict::{self, PredictNode, PredictTree, CATEGORICAL, DEFAULT_LEFT, FEATURE_MASK, LEAF};

use super::element_config;
use super::metrics::{InitialMargins, MetricRows};
use super::DeviceData;
use super::{binarised::BinarisedTrees, ptr, ptr_mut};
use crate::data::{FeatureMatrix, MetaInfo};
use crate::metric::DeviceMetric;
use crate::model::check_features;
use crate::objective::DeviceObjective;
use crate::tree::oblivious::ObliviousTree;
use crate::tree::Tree;
use crate::{Error, Result};

/// Trees laid out for the prediction kernels (a boosting round's, or a whole model's): each tree's
/// reachable nodes breadth first (a split's children adjacent and after it, as
/// [`PredictNode`] says), or an oblivious tree's level splits and leaves (`PredictTree::levels`),
/// the trees one after the other, and each tree's first node and output; and, for a model of
/// enough oblivious trees, their layout for the binarised applier.
pub struct DeviceTrees {
    pub(super) trees: DeviceBuffer<PredictTree>,
    /// The same table on the host, for launches that take the trees in another order.
    table: Vec<PredictTree>,
    pub(super) nodes: DeviceBuffer<PredictNode>,
    /// The categorical splits' bitsets, each a word count and the words (a word when none).
    pub(super) categories: DeviceBuffer<u32>,
    count: usize,
    /// The largest output a tree adds to, plus one.
    outputs: usize,
    binarised: Option<BinarisedTrees>,
}

impl DeviceTrees {
    /// Whether these trees lie in the memory of `gpu`.
    pub fn is_on(&self, gpu: &Gpu) -> bool {
        self.nodes.is_on(gpu)
    }

    /// Uploads `trees` (each with the output it adds to). A child outside its tree, a node reached
    /// twice or a feature index of 2^30 or more is an error, so the kernels' walks stay inside the
    /// trees.
    pub fn upload(gpu: &Gpu, trees: &[(Tree, u32)]) -> Result<Self> {
        let mut nodes = Vec::with_capacity(trees.iter().map(|(t, _)| t.len()).sum());
        let mut categories = Vec::new();
        let mut table = Vec::with_capacity(trees.len());
        for (index, (tree, output)) in trees.iter().enumerate() {
            let first_node = nodes.len();
            let oblivious = ObliviousTree::of(tree).filter(|o| !o.levels.is_empty());
            let levels = match &oblivious {
                Some(o) => lay_out_oblivious(o, index, &mut nodes)?,
                None => lay_out(tree, index, &mut nodes, &mut categories).map(|()| 0)?,
            };
            let first = u32::try_from(first_node);
            let Ok(first_node) = first else {
                return Err(Error::Model(format!("{} nodes in one upload", nodes.len())));
            };
            table.push(PredictTree {
                first_node,
                nodes: (nodes.len() - first_node as usize) as u32,
                output: *output,
                levels,
            });
        }
        Ok(DeviceTrees {
            trees: gpu.upload(&table)?,
            table,
            nodes: gpu.upload(&nodes)?,
            categories: gpu.upload(if categories.is_empty() { &[0] } else { &categories })?,
            count: trees.len(),
            outputs: trees.iter().map(|&(_, output)| output as usize + 1).max().unwrap_or(0),
            binarised: if trees.len() >= MIN_BINARISED_TREES { BinarisedTrees::upload(gpu, trees)? } else { None },
        })
    }
}

/// Appends the nodes of `tree` that the root reaches, breadth first: each split's children get the
/// next two places, so the left one's index is all a node keeps (and every child comes after its
/// parent). Each node keeps its index in `tree` for leaf prediction. A categorical split's
/// categories go to `categories` as a bitset (a word count, then the words), its `value` the
/// bitset's place.
fn lay_out(tree: &Tree, index: usize, nodes: &mut Vec<PredictNode>, categories: &mut Vec<u32>) -> Result<()> {
    let n = tree.len();
    let bad = |what: String| Error::Model(format!("tree {index} of {n} nodes: {what}"));
    if n == 0 || n > (u32::MAX / 2) as usize {
        return Err(bad("no nodes, or too many".into()));
    }
    let mut reached = vec![false; n];
    reached[0] = true;
    let mut order = vec![0usize];
    let mut next = 0;
    while let Some(&id) = order.get(next) {
        next += 1;
        let (left, right) = (tree.left_children[id], tree.right_children[id]);
        if left == -1 {
            let value = tree.split_conditions[id];
            nodes.push(PredictNode { left: LEAF, feature: 0, value, id: id as u32 });
            continue;
        }
        for child in [left, right] {
            if child < 0 || child as usize >= n || std::mem::replace(&mut reached[child as usize], true) {
                return Err(bad(format!("node {id} has a child {child} outside the tree or reached twice")));
            }
        }
        let feature = tree.split_indices[id];
        if feature & !FEATURE_MASK != 0 {
            return Err(bad(format!("node {id} splits on feature {feature}")));
        }
        let mut flag = if tree.default_left[id] { DEFAULT_LEFT } else { 0 };
        let mut value = tree.split_conditions[id];
        if let Some(set) = tree.categorical.set(id) {
            let at = u32::try_from(categories.len()).map_err(|_| bad("too many categories".into()))?;
            categories.push(set.len() as u32);
            categories.extend_from_slice(set);
            (flag, value) = (flag | CATEGORICAL, f32::from_bits(at));
        }
        let first_child = order.len() as u32;
        order.extend([left as usize, right as usize]);
        nodes.push(PredictNode { left: first_child, feature: feature | flag, value, id: id as u32 });
    }
    Ok(())
}

/// Appends an oblivious tree as the fast applier reads it: its level splits, then its leaves by
/// index (each keeping its node id in the full tree, `2^levels - 1 + index`); returns its levels.
fn lay_out_oblivious(tree: &ObliviousTree, index: usize, nodes: &mut Vec<PredictNode>) -> Result<u32> {
    for (l, &(feature, value, default_left)) in tree.levels.iter().enumerate() {
        if feature & !FEATURE_MASK != 0 || l >= 31 {
            return Err(Error::Model(format!("tree {index}: level {l} splits on feature {feature}")));
        }
        let flag = if default_left { DEFAULT_LEFT } else { 0 };
        nodes.push(PredictNode { left: 0, feature: feature | flag, value, id: (1u32 << l) - 1 });
    }
    let first_leaf = tree.leaves.len() as u32 - 1;
    nodes.extend(tree.leaves.iter().enumerate().map(|(i, &value)| PredictNode {
        left: LEAF,
        feature: 0,
        value,
        id: first_leaf + i as u32,
    }));
    Ok(tree.levels.len() as u32)
}

/// A dataset's features as the prediction kernels read them.
pub(super) enum DeviceFeatures {
    Dense { values: DeviceBuffer<f32>, cols: usize },
    Csr { row_ptr: DeviceBuffer<u64>, col_indices: DeviceBuffer<u32>, values: DeviceBuffer<f32> },
}

impl DeviceFeatures {
    /// Uploads `features`, which the caller checked with `check_features` (the kernels read each
    /// dense row's values, or each CSR row's entries between its offsets).
    pub(super) fn upload(gpu: &Gpu, features: &FeatureMatrix) -> Result<Self> {
        Ok(match features {
            FeatureMatrix::Dense(m) => DeviceFeatures::Dense { values: gpu.upload(&m.values)?, cols: m.cols },
            FeatureMatrix::Sparse(m) => {
                let row_ptr: Vec<u64> = m.row_ptr.iter().map(|&p| p as u64).collect();
                DeviceFeatures::Csr {
                    row_ptr: gpu.upload(&row_ptr)?,
                    col_indices: gpu.upload(&m.col_indices)?,
                    values: gpu.upload(&m.values)?,
                }
            }
        })
    }

    /// A device-to-device copy of rows the caller filled (an evaluation set owns its rows, as it
    /// does when they are uploaded from the host); the caller checked them (`DeviceData::view`).
    fn copy_of(gpu: &Gpu, data: DeviceData<'_>) -> Result<Self> {
        Ok(match data {
            DeviceData::Dense { values, cols, .. } => DeviceFeatures::Dense { values: copy(gpu, values)?, cols },
            DeviceData::Csr(csr) => DeviceFeatures::Csr {
                row_ptr: copy(gpu, &csr.row_ptr)?,
                col_indices: copy(gpu, &csr.col_indices)?,
                values: copy(gpu, &csr.values)?,
            },
        })
    }

    /// Walks the trees `range` of `trees` for each of the `rows` rows: see [`walk_trees`].
    pub(super) fn walk_trees(
        &self,
        gpu: &Gpu,
        rows: usize,
        trees: &DeviceTrees,
        range: Range<usize>,
        out: Walks<'_>,
        launch: Option<PredictLaunch>,
    ) -> Result<()> {
        walk_trees(gpu, self.view(), rows, trees, range, out, launch)
    }

    /// The kernels' view of the rows.
    pub(super) fn view(&self) -> FeatureView {
        match self {
            DeviceFeatures::Dense { values, cols } => FeatureView::Dense { values: values.device_ptr(), cols: *cols },
            DeviceFeatures::Csr { row_ptr, col_indices, values } => FeatureView::Csr {
                row_ptr: row_ptr.device_ptr(),
                col_indices: col_indices.device_ptr(),
                values: values.device_ptr(),
            },
        }
    }
}

/// A device-to-device copy of `source`.
fn copy<T: Element>(gpu: &Gpu, source: &DeviceBuffer<T>) -> Result<DeviceBuffer<T>> {
    let mut copy = gpu.alloc_uninitialized(source.len())?;
    copy.copy_from_device(gpu, source)?;
    Ok(copy)
}

/// Where rows' features lie on the device, as the prediction kernels take them.
#[derive(Clone, Copy)]
pub(super) enum FeatureView {
    /// `rows * cols` row-major values (NaN: missing).
    Dense { values: u64, cols: usize },
    /// `rows + 1` offsets into the entries' columns and values, checked.
    Csr { row_ptr: u64, col_indices: u64, values: u64 },
}

/// The shape of a prediction launch (see `boost_kernels::predict`): a thread a row walking every
/// tree, or a thread a (tree, row) pair whose leaf values a second kernel sums in tree order; for
/// margins of dense rows under a model of oblivious trees, two rows a thread comparing bin codes
/// (`boost_kernels::binarised`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredictLaunch {
    /// A thread a row walks every tree comparing feature values (large batches).
    Rows,
    /// A thread a (tree, row) writes a leaf value, a second kernel adds them in tree order (small batches).
    Trees,
    /// The binarised applier where the trees, the rows and the output allow it (large batches of
    /// dense rows, margins, a model of at least 8 oblivious trees), else [`PredictLaunch::Rows`].
    Binarised,
}

impl PredictLaunch {
    /// Below this, a thread a row leaves most of the device idle (an H100 holds 270k resident
    /// threads) and each row waits on its own long chain of dependent node loads, so a thread a
    /// (tree, row) pair answers sooner. Chosen by `benches/scripts/predict_side_by_side.py`
    /// (docs/benchmarks.md): on an H100 the row launch takes the same time from 1k to 100k rows
    /// and the tree launch grows with the rows; they cross near 65k rows for 500 trees of depth 8
    /// and near 90k for 2000 of depth 6.
    const MIN_ROWS_FOR_ROWS: usize = 1 << 16;

    fn for_rows(rows: usize) -> Self {
        if rows >= Self::MIN_ROWS_FOR_ROWS {
            PredictLaunch::Binarised
        } else {
            PredictLaunch::Trees
        }
    }
}

/// The fewest trees for which the binarised applier is laid out and launched: at 8 trees it is
/// already 1.5x the value walk on 10M rows (docs/benchmarks.md), while an evaluation set's round
/// of one tree a class would pay the layout and its uploads every round.
const MIN_BINARISED_TREES: usize = 8;

/// The most leaf values the tree launch keeps at once (64 MiB): the trees go in chunks of about
/// `LEAF_VALUES / rows`.
const LEAF_VALUES: usize = 16 << 20;

/// Dynamic shared memory a row launch may stage in (the default limit of a block).
const STAGE_BYTES: usize = 48 << 10;

/// Walks the trees `range` of `trees` for each of the `rows` rows of `view`: adds their leaf values
/// to the margins, tree after tree, or writes their leaf indices. `launch` picks the kernels'
/// shape (`None`: by the row count).
pub(super) fn walk_trees(
    gpu: &Gpu,
    view: FeatureView,
    rows: usize,
    trees: &DeviceTrees,
    range: Range<usize>,
    out: Walks<'_>,
    launch: Option<PredictLaunch>,
) -> Result<()> {
    if range.end > trees.count || range.start > range.end {
        return Err(Error::InvalidData(format!("trees {range:?} of {}", trees.count)));
    }
    match out {
        Walks::Margins { margins, outputs } => {
            if trees.outputs > outputs || margins.len() != rows * outputs {
                return Err(Error::InvalidData(format!(
                    "{} margins for {rows} rows of {outputs} outputs, trees of outputs up to {}",
                    margins.len(),
                    trees.outputs
                )));
            }
            if rows == 0 || range.is_empty() {
                return Ok(());
            }
            let launch = launch.unwrap_or(PredictLaunch::for_rows(rows));
            if let (PredictLaunch::Binarised, FeatureView::Dense { values, cols }, Some(binarised)) =
                (launch, view, &trees.binarised)
            {
                let margins = (margins.device_ptr(), outputs);
                if range.len() >= MIN_BINARISED_TREES
                    && binarised.add_margins(gpu, (values, rows, cols), range.clone(), margins, STAGE_BYTES)?
                {
                    return Ok(());
                }
            }
            match launch {
                PredictLaunch::Rows | PredictLaunch::Binarised => {
                    walk_rows(gpu, view, rows, trees, range, RowWalks::Margins(margins.device_ptr(), outputs))
                }
                PredictLaunch::Trees => sum_tree_walks(gpu, view, rows, trees, range, margins.device_ptr(), outputs),
            }
        }
        Walks::Leaves(leaves) => {
            if leaves.len() != rows * range.len() {
                return Err(Error::InvalidData(format!("{} leaves for {rows} rows of {range:?}", leaves.len())));
            }
            if rows == 0 || range.is_empty() {
                return Ok(());
            }
            match launch.unwrap_or(PredictLaunch::for_rows(rows)) {
                PredictLaunch::Rows | PredictLaunch::Binarised => {
                    walk_rows(gpu, view, rows, trees, range, RowWalks::Leaves(leaves.device_ptr()))
                }
                PredictLaunch::Trees => {
                    let stride = range.len() as u64;
                    walk_each_tree(gpu, view, rows, trees, range, (0, leaves.device_ptr(), stride))
                }
            }
        }
    }
}

/// The device address of tree `t` of `trees`.
fn tree_address(trees: &DeviceTrees, t: usize) -> u64 {
    trees.trees.device_ptr() + (t * size_of::<PredictTree>()) as u64
}

/// What a row launch writes: margins (the device address, `outputs` a row) or leaf indices (a
/// tree a row).
#[derive(Clone, Copy)]
enum RowWalks {
    Margins(u64, usize),
    Leaves(u64),
}

/// A thread a row: the row kernels, with the block's dense rows staged in shared memory when they
/// fit, and, for margins, the trees grouped by output (see `boost_kernels::predict`'s `walk_row`).
fn walk_rows(
    gpu: &Gpu,
    view: FeatureView,
    rows: usize,
    trees: &DeviceTrees,
    range: Range<usize>,
    out: RowWalks,
) -> Result<()> {
    // Leaf indices go tree by tree in the model's order: only margins take the trees grouped.
    let (grouped, (margins, outputs, leaves)) = match out {
        RowWalks::Margins(margins, outputs) => {
            (grouped_by_output(gpu, &trees.table[range.clone()], |t| t.output)?, (margins, outputs as u64, 0))
        }
        RowWalks::Leaves(leaves) => (None, (0, trees.outputs as u64, leaves)),
    };
    let first_tree = grouped.as_ref().map_or(ptr(tree_address(trees, range.start)), |g| g.as_ptr());
    let (num_trees, nodes, categories) = (range.len() as u64, trees.nodes.as_ptr(), trees.categories.as_ptr());
    let (margins, leaves) = (ptr_mut(margins), ptr_mut(leaves));
    match view {
        FeatureView::Dense { values, cols } => {
            // The most threads a block (down to a warp) whose rows fit in shared memory.
            let staged = [256usize, 128, 64, 32].into_iter().find(|&t| predict::staged_bytes(t, cols) <= STAGE_BYTES);
            let threads = staged.unwrap_or(256);
            let blocks = rows.div_ceil(threads);
            if blocks > i32::MAX as usize {
                return Err(Error::InvalidData(format!("{rows} rows are too many for one launch")));
            }
            let config = LaunchConfig {
                grid_dim: (blocks as u32, 1, 1),
                block_dim: (threads as u32, 1, 1),
                shared_mem_bytes: staged.map_or(0, |t| predict::staged_bytes(t, cols)) as u32,
            };
            let (values, rows, cols, stage) = (ptr(values), rows as u64, cols as u64, u64::from(staged.is_some()));
            let args = entry::boost_predict_dense::args(
                values, rows, cols, first_tree, num_trees, nodes, categories, margins, outputs, leaves, stage,
            );
            // SAFETY: `rows * cols` values and `rows * outputs` margins; the trees' nodes and
            // outputs were checked when uploaded and by the caller; the staged rows fit.
            unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        }
        FeatureView::Csr { row_ptr, col_indices, values } => {
            let (row_ptr, col_indices, values) = (ptr(row_ptr), ptr(col_indices), ptr(values));
            let args = entry::boost_predict_csr::args(
                row_ptr,
                col_indices,
                values,
                rows as u64,
                first_tree,
                num_trees,
                nodes,
                categories,
                margins,
                outputs,
                leaves,
            );
            // SAFETY: `rows + 1` non-decreasing offsets within the entries (checked before the
            // upload), the margins and the trees as above.
            unsafe { gpu.launch_kernel(crate::KERNELS, element_config(rows)?, args)? };
        }
    }
    Ok(())
}

/// A launch's trees `table` grouped by `output`, in order within each output (a stable sort),
/// uploaded; `None` when they already are (outputs non-decreasing: one output, or a single round's
/// trees; a multi-class model's rounds alternate them). Each margin's sum keeps its order, so its
/// bits.
pub(super) fn grouped_by_output<T: Element>(
    gpu: &Gpu,
    table: &[T],
    output: impl Fn(&T) -> u32,
) -> Result<Option<DeviceBuffer<T>>> {
    if table.windows(2).all(|pair| output(&pair[0]) <= output(&pair[1])) {
        return Ok(None);
    }
    let mut grouped = table.to_vec();
    grouped.sort_by_key(output);
    Ok(Some(gpu.upload(&grouped)?))
}

/// A thread a (tree, row), the trees in chunks: each chunk's leaf values, then their sums into the
/// margins in tree order.
fn sum_tree_walks(
    gpu: &Gpu,
    view: FeatureView,
    rows: usize,
    trees: &DeviceTrees,
    range: Range<usize>,
    margins: u64,
    outputs: usize,
) -> Result<()> {
    let chunk = (LEAF_VALUES / rows).clamp(1, range.len());
    let values = gpu.alloc_uninitialized::<f32>(chunk * rows)?;
    let config = element_config(rows * outputs)?;
    for first in range.clone().step_by(chunk) {
        let chunk = first..(first + chunk).min(range.end);
        let count = chunk.len() as u64;
        walk_each_tree(gpu, view, rows, trees, chunk.clone(), (values.device_ptr(), 0, 0))?;
        let args = entry::boost_predict_sum::args(
            values.as_ptr(),
            rows as u64,
            ptr(tree_address(trees, chunk.start)),
            count,
            ptr_mut(margins),
            outputs as u64,
        );
        // SAFETY: `count * rows` leaf values just written, `rows * outputs` margins, every tree's
        // output below `outputs` (checked by the caller).
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
    }
    Ok(())
}

/// A thread a (tree, row) of the trees `range`: `(values, leaves, leaf_stride)` as
/// `boost_kernels::predict::TreeWalks` (`values` holds `range.len() * rows` floats, or `leaves`
/// `rows * leaf_stride` indices, `leaf_stride >= range.len()`).
fn walk_each_tree(
    gpu: &Gpu,
    view: FeatureView,
    rows: usize,
    trees: &DeviceTrees,
    range: Range<usize>,
    (values_out, leaves, stride): (u64, u64, u64),
) -> Result<()> {
    let config = element_config(rows * range.len())?;
    let (first_tree, num_trees, nodes, categories) =
        (ptr(tree_address(trees, range.start)), range.len() as u64, trees.nodes.as_ptr(), trees.categories.as_ptr());
    let (values_out, leaves) = (ptr_mut(values_out), ptr_mut(leaves));
    match view {
        FeatureView::Dense { values, cols } => {
            let (values, rows, cols) = (ptr(values), rows as u64, cols as u64);
            let args = entry::boost_predict_dense_trees::args(
                values, rows, cols, first_tree, num_trees, nodes, categories, values_out, leaves, stride,
            );
            // SAFETY: `rows * cols` values; the outputs as the caller sized them; the trees as
            // `walk_trees` checked.
            unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        }
        FeatureView::Csr { row_ptr, col_indices, values } => {
            let (row_ptr, col_indices, values) = (ptr(row_ptr), ptr(col_indices), ptr(values));
            let args = entry::boost_predict_csr_trees::args(
                row_ptr,
                col_indices,
                values,
                rows as u64,
                first_tree,
                num_trees,
                nodes,
                categories,
                values_out,
                leaves,
                stride,
            );
            // SAFETY: checked CSR offsets (see `walk_rows`); the rest as above.
            unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        }
    }
    Ok(())
}

/// What [`DeviceFeatures::walk_trees`] writes.
pub(super) enum Walks<'a> {
    /// The rows' margins, `outputs` a row: the leaf values are added.
    Margins { margins: &'a DeviceBuffer<f32>, outputs: usize },
    /// A leaf index a row and tree, row-major.
    Leaves(&'a DeviceBuffer<u32>),
}

/// Refuses an evaluation set whose labels are not one a row.
fn check_labels(info: &MetaInfo, rows: usize) -> Result<()> {
    if info.labels.len() != rows {
        return Err(Error::InvalidData(format!("{} labels for {rows} rows of an evaluation set", info.labels.len())));
    }
    Ok(())
}

/// An evaluation set kept on the device for a training run (see the module).
pub struct DeviceEvalSet {
    features: DeviceFeatures,
    set: MetricRows,
}

impl DeviceEvalSet {
    /// Uploads `features` with `info`'s labels and weights and the margins (one per output of
    /// `objective`) before the run's first round.
    pub fn new(
        gpu: &Gpu,
        features: &FeatureMatrix,
        info: &MetaInfo,
        objective: DeviceObjective,
        margins: InitialMargins<'_>,
    ) -> Result<Self> {
        check_labels(info, features.rows())?;
        // The kernels read each dense row's values, or each CSR row's entries between its offsets:
        // the host predictor's checks keep them in bounds.
        check_features(features, features.cols())?;
        let features = DeviceFeatures::upload(gpu, features)?;
        Ok(DeviceEvalSet { features, set: MetricRows::new(gpu, objective, info, margins)? })
    }

    /// [`DeviceEvalSet::new`] of rows already in the memory of `gpu` (copied there, checked as
    /// prediction checks them), with `info`'s labels and weights.
    pub fn from_device(
        gpu: &Gpu,
        data: DeviceData<'_>,
        info: &MetaInfo,
        objective: DeviceObjective,
        margins: InitialMargins<'_>,
    ) -> Result<Self> {
        check_labels(info, data.rows())?;
        data.view(gpu)?;
        let features = DeviceFeatures::copy_of(gpu, data)?;
        Ok(DeviceEvalSet { features, set: MetricRows::new(gpu, objective, info, margins)? })
    }

    /// Adds the leaf values of `trees` to the margins (one launch).
    pub fn add_trees(&mut self, gpu: &Gpu, trees: &DeviceTrees) -> Result<()> {
        let (rows, outputs) = (self.set.rows, self.set.outputs);
        let walks = Walks::Margins { margins: &self.set.margins, outputs };
        self.features.walk_trees(gpu, rows, trees, 0..trees.count, walks, None)
    }

    /// `metric` of the set's predictions; see `MetricRows::evaluate`.
    pub fn evaluate(&mut self, gpu: &Gpu, metric: DeviceMetric, transform: Transform) -> Result<f64> {
        self.set.evaluate(gpu, metric, transform)
    }

    /// The set's margins, read back (for the metrics the device does not compute).
    pub fn margins(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        self.set.read_margins(gpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
    use crate::data::{CsrMatrix, Dataset, DenseMatrix};
    use crate::learner::{train, TrainOptions};
    use crate::param::Params;
    use primitives::Schedule;

    /// A model with one-hot and partition splits walks on the device as on the host, bit for bit:
    /// missing values, categories unseen in training, negative, fractional and huge codes, in
    /// dense and CSR rows.
    #[test]
    fn categorical_splits_walk_on_the_device_as_on_the_host() {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 4 });
        let spec = SyntheticSpec { rows: 1200, cols: 4, seed: 6, missing_columns: 2, ..Default::default() };
        let mut data = generate(&spec).unwrap();
        let FeatureMatrix::Dense(m) = &mut data.features else { panic!("synthetic data is dense") };
        let values = m.values.make_mut();
        for (i, v) in values.iter_mut().enumerate().filter(|(i, v)| i % 4 < 2 && !v.is_nan()) {
            // Column 0: 3 categories (one-hot splits); column 1: 40 (partition splits).
            *v = ((v.abs() * 7.0) as u32 % if i % 4 == 0 { 3 } else { 40 }) as f32;
        }
        data.info.feature_types = vec!["c".into(), "c".into(), "q".into(), "q".into()];
        let params = Params::from_pairs(&[("objective", "reg:squarederror"), ("max_depth", "4")]).unwrap();
        let options = TrainOptions { num_boost_round: 4, verbose_eval: 0, ..Default::default() };
        let trained = train(&params, &data, &[], &options, &mut []).unwrap();
        let (model, objective) = (trained.model, trained.objective);
        let kinds: Vec<usize> = model.trees.iter().flat_map(|t| t.categorical.sizes()).collect();
        assert!(kinds.contains(&1) && kinds.iter().any(|&k| k > 1), "one-hot and partition splits: {kinds:?}");
        let FeatureMatrix::Dense(m) = &data.features else { unreachable!() };
        let mut rows = m.values.to_vec()[..200 * 4].to_vec();
        for (i, odd) in [f32::NAN, 41.0, -1.0, 2.5, 1e9, 3.0, 16_777_216.0].into_iter().enumerate() {
            rows[i * 8 + 1] = odd;
            rows[i * 8 + 4] = odd;
        }
        let dense = DenseMatrix::new(200, 4, rows.clone());
        let mut csr = CsrMatrix { rows: 200, cols: 4, row_ptr: vec![0], col_indices: Vec::new(), values: Vec::new() };
        for row in rows.chunks(4) {
            for (c, &v) in row.iter().enumerate().filter(|(_, v)| !v.is_nan()) {
                csr.col_indices.push(c as u32);
                csr.values.push(v);
            }
            csr.row_ptr.push(csr.values.len());
        }
        let to_margin = |b| objective.prob_to_margin(b);
        let device_objective = objective.device_objective().unwrap();
        let info = MetaInfo { labels: vec![0.0; 200], ..Default::default() };
        for features in [FeatureMatrix::Dense(dense), FeatureMatrix::Sparse(csr)] {
            let zero = vec![0.0; 200];
            let mut device = DeviceEvalSet::new(&gpu, &features, &info, device_objective, InitialMargins::Rows(&zero))
                .unwrap();
            let trees: Vec<(Tree, u32)> = model.trees.iter().cloned().zip(model.tree_info.iter().copied()).collect();
            device.add_trees(&gpu, &DeviceTrees::upload(&gpu, &trees).unwrap()).unwrap();
            let host = model.predict_margin(&features, Some(&zero), to_margin, (0, 0)).unwrap();
            let device = device.margins(&gpu).unwrap();
            let differ = host.iter().zip(&device).position(|(h, d)| h.to_bits() != d.to_bits());
            assert_eq!(differ, None, "margin {differ:?} differs");
        }
    }

    /// A model's later rounds added on the device to the margins of its first equal the host's
    /// prediction of the whole model, bit for bit: dense rows with missing values and fewer columns
    /// than the model, and the same rows as CSR (missing entries left out, a column given twice).
    #[test]
    fn the_devices_walks_give_the_hosts_margins() {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 3 });
        for (name, classes) in [("reg:squarederror", 1usize), ("multi:softprob", 3)] {
            let task = if classes > 1 {
                SyntheticTask::MultiClass { classes: classes as u32 }
            } else {
                SyntheticTask::Regression
            };
            let spec = SyntheticSpec { rows: 800, cols: 9, task, seed: 2, missing_columns: 3, ..Default::default() };
            let data = generate(&spec).unwrap();
            let num_class = classes.to_string();
            let mut pairs = vec![("objective", name), ("max_depth", "4"), ("eta", "0.5")];
            if classes > 1 {
                pairs.push(("num_class", &num_class));
            }
            let params = Params::from_pairs(&pairs).unwrap();
            let options = TrainOptions { num_boost_round: 4, verbose_eval: 0, ..Default::default() };
            let trained = train(&params, &data, &[], &options, &mut []).unwrap();
            let (model, objective) = (trained.model, trained.objective);
            let device_objective = objective.device_objective().unwrap();

            // Rows of another draw with one column fewer than the model, more of them missing.
            let spec = SyntheticSpec { rows: 300, seed: 9, missing_columns: 6, missing_fraction: 0.3, ..spec };
            let test = generate(&spec).unwrap();
            let FeatureMatrix::Dense(full) = &test.features else { panic!("synthetic data is dense") };
            let cols = full.cols - 1;
            let values: Vec<f32> = (0..full.rows).flat_map(|i| full.values[i * full.cols..][..cols].to_vec()).collect();
            let dense = DenseMatrix::new(full.rows, cols, values.clone());
            let mut csr =
                CsrMatrix { rows: full.rows, cols, row_ptr: vec![0], col_indices: Vec::new(), values: Vec::new() };
            for i in 0..full.rows {
                for c in 0..cols {
                    let v = values[i * cols + c];
                    if !v.is_nan() {
                        if i % 5 == 0 && c == 2 {
                            // A first entry of the column that the later one overrides.
                            csr.col_indices.push(2);
                            csr.values.push(v + 100.0);
                        }
                        csr.col_indices.push(c as u32);
                        csr.values.push(v);
                    }
                }
                csr.row_ptr.push(csr.values.len());
            }
            let to_margin = |b| objective.prob_to_margin(b);
            for features in [FeatureMatrix::Dense(dense), FeatureMatrix::Sparse(csr)] {
                let set = Dataset { features, info: test.info.clone() };
                let first = model.predict_margin(&set.features, None, to_margin, (0, 1)).unwrap();
                let mut device =
                    DeviceEvalSet::new(&gpu, &set.features, &set.info, device_objective, InitialMargins::Rows(&first))
                        .unwrap();
                for round in 1..model.num_rounds() {
                    let range = model.iteration_indptr[round]..model.iteration_indptr[round + 1];
                    let trees: Vec<(Tree, u32)> = range.map(|t| (model.trees[t].clone(), model.tree_info[t])).collect();
                    device.add_trees(&gpu, &DeviceTrees::upload(&gpu, &trees).unwrap()).unwrap();
                }
                let host = model.predict_margin(&set.features, None, to_margin, (0, 0)).unwrap();
                let device = device.margins(&gpu).unwrap();
                assert_eq!(device.len(), host.len());
                let differ = host.iter().zip(&device).position(|(h, d)| h.to_bits() != d.to_bits());
                assert_eq!(differ, None, "{name}: margin {differ:?} differs");
                assert_ne!(host, first, "{name}: the later rounds changed the margins");
            }
        }
    }

    #[test]
    fn a_tree_with_a_child_outside_it_is_an_error() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let mut tree = Tree::leaf(0.5, 1.0);
        assert!(DeviceTrees::upload(&gpu, &[(tree.clone(), 0)]).is_ok());
        tree.left_children[0] = 3;
        tree.right_children[0] = 4;
        assert!(matches!(DeviceTrees::upload(&gpu, &[(tree, 0)]), Err(Error::Model(_))));
        assert!(matches!(DeviceTrees::upload(&gpu, &[(Tree::default(), 0)]), Err(Error::Model(_))));
    }
}
