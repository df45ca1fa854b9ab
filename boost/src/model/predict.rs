//! Prediction: margins, transformed predictions and leaf indices, parallel over rows.
//!
//! Margins are accumulated as XGBoost's CPU predictor does, so that they match it bit for bit: each
//! output starts at its base margin (`base_margin` of the data when given, else
//! `prob_to_margin(base_score)`) and the trees' leaf values are added one tree after the other in
//! model order, in `f32`. Each step of a walk is [`goes_left`], the step the device's prediction
//! kernels take. Every row is computed by one thread, so the result does not depend on
//! the thread count. (When several blocks of rows hit a corrupt tree, which one's error is returned
//! may vary; predictions never do.)

use std::ops::Range;

use boost_kernels::predict::goes_left;
use rayon::prelude::*;

use super::Model;
use crate::data::{CsrMatrix, Dataset, DenseMatrix, FeatureMatrix};
use crate::objective::Objective;
use crate::tree::oblivious::ObliviousTree;
use crate::tree::Tree;
use crate::{Error, Result};

/// Rows per parallel task: enough to amortise the task, few enough to balance small inputs.
const ROWS_PER_TASK: usize = 64;

/// From this many rows the trees are packed for the walk (below it, packing costs more than it
/// saves).
const PACKED_FROM_ROWS: usize = 128;

/// A node as the packed walk reads it: one 16-byte record instead of five arrays. A leaf is its own
/// two children, so a row that reached it stays there and every row of a block takes the same
/// number of steps, with no branch on where it is.
#[derive(Clone, Copy)]
struct PackedNode {
    /// The left and the right child.
    children: [u32; 2],
    /// The split feature, with `default_left` in the top bit.
    split: u32,
    /// The split condition, or the leaf value.
    value: f32,
}

/// The trees of a prediction packed one after the other, checked once: children inside their
/// tree, no cycles, and each tree's depth.
pub(crate) struct PackedTrees {
    nodes: Vec<PackedNode>,
    /// Each tree's first node, and the end.
    starts: Vec<usize>,
    /// Each tree's longest path from the root, in steps.
    depths: Vec<usize>,
}

impl PackedTrees {
    /// `trees` packed, or `None` when one is not a well-formed tree (a child outside it, a node
    /// reached twice, no nodes) or a split feature does not fit in 31 bits: the unpacked walk then
    /// predicts, and names what is wrong.
    fn of(trees: &[Tree]) -> Option<Self> {
        let mut packed = PackedTrees { nodes: Vec::new(), starts: vec![0], depths: Vec::new() };
        for tree in trees {
            if !tree.categorical.is_empty() {
                return None; // Categorical splits take the unpacked walk.
            }
            let n = tree.len();
            for node in 0..n {
                let (left, right, feature) =
                    (tree.left_children[node], tree.right_children[node], tree.split_indices[node]);
                let child = |c: i32| u32::try_from(c).ok().filter(|&c| (c as usize) < n);
                let (left, right) = if left == -1 { (node as u32, node as u32) } else { (child(left)?, child(right)?) };
                if feature >> 31 != 0 {
                    return None;
                }
                let split = feature | u32::from(tree.default_left[node]) << 31;
                packed.nodes.push(PackedNode { children: [left, right], split, value: tree.split_conditions[node] });
            }
            packed.depths.push(depth(&packed.nodes[packed.starts[packed.starts.len() - 1]..])?);
            packed.starts.push(packed.nodes.len());
        }
        Some(packed)
    }

    /// Adds packed tree `t`'s leaf values to the block's margins of `output`: all the block's rows
    /// take the tree's depth in steps together, so the steps of different rows are independent work
    /// for the processor rather than one chain of dependent loads and branches; each row's margin
    /// gets the one addition that [`leaf_of`]'s walk gives.
    fn add_leaves(&self, t: usize, rows: &[Row<'_>], margins: &mut [f32], outputs: usize, output: usize) {
        let nodes = &self.nodes[self.starts[t]..self.starts[t + 1]];
        let mut at = [0u32; ROWS_PER_TASK];
        let at = &mut at[..rows.len()];
        for _ in 0..self.depths[t] {
            for (node_of_row, row) in at.iter_mut().zip(rows) {
                let node = &nodes[*node_of_row as usize];
                let v = row.value((node.split & 0x7fff_ffff) as usize);
                // The child is loaded at an index, not chosen by a branch: which way a row goes is
                // data, which a branch would mispredict half the time.
                let right = usize::from(!goes_left(v, node.value, node.split >> 31 != 0));
                *node_of_row = node.children[right];
            }
        }
        for (r, &node) in at.iter().enumerate() {
            margins[r * outputs + output] += nodes[node as usize].value;
        }
    }
}

/// The longest path from the root of a packed tree (children inside it), or `None` for no nodes or
/// a node reached more than once (a cycle, or two parents): a tree visits each node once.
fn depth(nodes: &[PackedNode]) -> Option<usize> {
    let (mut deepest, mut visited) = (0, 0);
    let mut stack = vec![(0u32, 0usize)];
    while let Some((node, steps)) = stack.pop() {
        visited += 1;
        if visited > nodes.len() {
            return None;
        }
        let [left, right] = nodes.get(node as usize)?.children;
        if left == node {
            deepest = deepest.max(steps);
        } else {
            stack.extend([(left, steps + 1), (right, steps + 1)]);
        }
    }
    Some(deepest)
}

/// [`Model::tree_range`] over a model's `iteration_indptr` (`rounds + 1` offsets), for the device
/// predictor, which keeps only those.
pub(crate) fn trees_of_rounds(iteration_indptr: &[usize], iteration_range: (usize, usize)) -> Result<Range<usize>> {
    let rounds = iteration_indptr.len().saturating_sub(1);
    let (begin, end) = match iteration_range {
        (b, 0) => (b, rounds),
        r => r,
    };
    if end > rounds || begin > end {
        return Err(Error::param(
            "iteration_range",
            format!("({}, {}) for a model of {rounds} rounds", iteration_range.0, iteration_range.1),
        ));
    }
    Ok(iteration_indptr[begin]..iteration_indptr[end])
}

impl Model {
    /// The trees of boosting rounds `begin..end` (XGBoost's `iteration_range`; `end == 0` means the
    /// last round, so `(0, 0)` is the whole model).
    pub fn tree_range(&self, iteration_range: (usize, usize)) -> Result<Range<usize>> {
        trees_of_rounds(&self.iteration_indptr, iteration_range)
    }

    /// Raw margins, `rows * num_outputs()` row-major. Each row starts at `base_margin` when given
    /// (`rows * num_outputs()` values, as `MetaInfo::base_margin`), else at
    /// [`Model::base_margins`]`(prob_to_margin)`; then the trees of `iteration_range` add their leaf
    /// values in model order. `features` may have fewer columns than the model (the others are
    /// missing), not more.
    pub fn predict_margin(
        &self,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
    ) -> Result<Vec<f32>> {
        self.predict_margin_with(features, base_margin, prob_to_margin, iteration_range, None)
    }

    /// The model's trees packed for the CPU walk ([`Model::predict_margin_with`]), kept by a
    /// booster across predictions; `None` when a tree is not well formed.
    pub(crate) fn pack(&self) -> Option<PackedTrees> {
        PackedTrees::of(&self.trees)
    }

    /// [`Model::predict_margin`] walking `packed` (this model's [`Model::pack`]) when given; else
    /// the trees are packed for this call from [`PACKED_FROM_ROWS`] rows.
    pub(crate) fn predict_margin_with(
        &self,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
        packed: Option<&PackedTrees>,
    ) -> Result<Vec<f32>> {
        self.check_shape()?;
        check_features(features, self.num_feature)?;
        let features = self.target_statistics.apply(features)?;
        self.predict_encoded_margin(&features, base_margin, prob_to_margin, iteration_range, packed)
    }

    /// The margins of `rows` rows before any tree: their base margins (`rows` a row and output),
    /// or the base score's margin.
    pub(crate) fn base_margins_of(
        &self,
        rows: usize,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
    ) -> Result<Vec<f32>> {
        let outputs = self.num_outputs();
        Ok(match base_margin {
            Some(b) => {
                if b.len() != rows * outputs {
                    return Err(Error::InvalidData(format!(
                        "base_margin has {} values for {rows} rows of {outputs} outputs",
                        b.len()
                    )));
                }
                b.to_vec()
            }
            None => {
                let base = self.base_margins(prob_to_margin);
                let mut out = vec![0f32; rows * outputs];
                out.par_chunks_mut(outputs.max(1) << 12).for_each(|block| {
                    for row in block.chunks_mut(outputs.max(1)) {
                        row.copy_from_slice(&base[..row.len()]);
                    }
                });
                out
            }
        })
    }

    /// [`Model::predict_margin_with`] of rows whose features the model's target statistics have
    /// encoded already (the training loop's sets).
    pub(crate) fn predict_encoded_margin(
        &self,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
        packed: Option<&PackedTrees>,
    ) -> Result<Vec<f32>> {
        self.check_shape()?;
        check_features(features, self.num_feature)?;
        let trees = self.tree_range(iteration_range)?;
        let outputs = self.num_outputs();
        let rows = features.rows();
        let mut out = self.base_margins_of(rows, base_margin, prob_to_margin)?;
        if trees.is_empty() {
            return Ok(out);
        }
        let first_tree = trees.start;
        let groups = &self.tree_info[trees.clone()];
        let trees = &self.trees[trees];
        // Oblivious trees (all of them) take the fast applier: the same leaves, added in the same
        // order, so the same bits.
        let oblivious: Option<Vec<ObliviousTree>> = trees.iter().map(ObliviousTree::of).collect();
        if let Some(oblivious) = oblivious {
            for_each_block(features, &mut out, outputs, |_, rows_of_block, margins| {
                for (tree, &group) in oblivious.iter().zip(groups) {
                    for (r, row) in rows_of_block.iter().enumerate() {
                        margins[r * outputs + group as usize] += tree.leaves[tree.leaf(|f| row.value(f as usize))];
                    }
                }
                Ok(())
            })?;
            return Ok(out);
        }
        // The packed trees and the index of the range's first tree among them.
        let packed_here;
        let packed = match packed {
            Some(packed) => Some((packed, first_tree)),
            None if rows >= PACKED_FROM_ROWS => {
                packed_here = PackedTrees::of(trees);
                packed_here.as_ref().map(|packed| (packed, 0))
            }
            None => None,
        };
        if let Some((packed, first)) = packed {
            for_each_block(features, &mut out, outputs, |_, rows_of_block, margins| {
                for (t, &group) in groups.iter().enumerate() {
                    packed.add_leaves(first + t, rows_of_block, margins, outputs, group as usize);
                }
                Ok(())
            })?;
            return Ok(out);
        }
        for_each_block(features, &mut out, outputs, |_, rows_of_block, margins| {
            for (t, (tree, &group)) in trees.iter().zip(groups).enumerate() {
                for (r, row) in rows_of_block.iter().enumerate() {
                    let leaf = leaf_of(tree, first_tree + t, row)?;
                    margins[r * outputs + group as usize] += tree.split_conditions[leaf];
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Margins of a dataset for `objective`: its `info.base_margin` when not empty, else the base
    /// score through `objective.prob_to_margin`.
    pub fn predict_dataset_margin(
        &self,
        data: &Dataset,
        objective: &dyn Objective,
        iteration_range: (usize, usize),
    ) -> Result<Vec<f32>> {
        self.check_objective(objective)?;
        let base_margin = (!data.info.base_margin.is_empty()).then_some(data.info.base_margin.as_slice());
        self.predict_margin(&data.features, base_margin, |b| objective.prob_to_margin(b), iteration_range)
    }

    /// Predictions of a dataset: the margins of [`Model::predict_dataset_margin`] through
    /// `objective.transform` (probabilities, class ids, ...), `rows * outputs` of the objective.
    pub fn predict(
        &self,
        data: &Dataset,
        objective: &dyn Objective,
        iteration_range: (usize, usize),
    ) -> Result<Vec<f32>> {
        let margins = self.predict_dataset_margin(data, objective, iteration_range)?;
        Ok(objective.transform(&margins))
    }

    /// The leaf each row reaches in each tree of `iteration_range`: `rows * trees` node indices,
    /// row-major, trees in model order (XGBoost's `pred_leaf`; XGBoost itself takes only ranges that
    /// start at round 0).
    pub fn predict_leaf(&self, features: &FeatureMatrix, iteration_range: (usize, usize)) -> Result<Vec<u32>> {
        self.check_shape()?;
        check_features(features, self.num_feature)?;
        let features = &*self.target_statistics.apply(features)?;
        let range = self.tree_range(iteration_range)?;
        let first_tree = range.start;
        let trees = &self.trees[range];
        let mut out = vec![0u32; features.rows() * trees.len()];
        if trees.is_empty() {
            return Ok(out);
        }
        for_each_block(features, &mut out, trees.len(), |_, rows_of_block, leaves| {
            for (t, tree) in trees.iter().enumerate() {
                for (r, row) in rows_of_block.iter().enumerate() {
                    // A node index fits in u32: the arrays were read from `i32` child indices.
                    leaves[r * trees.len() + t] = leaf_of(tree, first_tree + t, row)? as u32;
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Checks that `objective` predicts as many outputs as the model has.
    pub fn check_objective(&self, objective: &dyn Objective) -> Result<()> {
        if objective.outputs() != self.num_outputs() {
            return Err(Error::Model(format!(
                "objective `{}` has {} outputs, the model {}",
                objective.name(),
                objective.outputs(),
                self.num_outputs()
            )));
        }
        Ok(())
    }
}

/// The prediction data must be a well-formed matrix with at most the model's features (XGBoost's
/// rule: fewer columns are missing values, more are an error) and no infinite value.
pub(crate) fn check_features(features: &FeatureMatrix, num_feature: usize) -> Result<()> {
    if features.cols() > num_feature {
        return Err(Error::InvalidData(format!("the data has {} features, the model {num_feature}", features.cols())));
    }
    match features {
        FeatureMatrix::Dense(m) => {
            if m.values.len() != m.rows * m.cols {
                return Err(Error::InvalidData(format!(
                    "dense matrix of {} x {} holds {} values",
                    m.rows,
                    m.cols,
                    m.values.len()
                )));
            }
        }
        FeatureMatrix::Sparse(m) => check_csr(m)?,
    }
    features.check_finite()
}

fn check_csr(m: &CsrMatrix) -> Result<()> {
    if m.row_ptr.len() != m.rows + 1 || m.row_ptr.first() != Some(&0) {
        return Err(Error::InvalidData(format!(
            "CSR matrix of {} rows has {} row offsets, not starting at 0",
            m.rows,
            m.row_ptr.len()
        )));
    }
    if let Some(r) = m.row_ptr.windows(2).position(|w| w[1] < w[0]) {
        return Err(Error::InvalidData(format!("CSR row offsets decrease at row {r}")));
    }
    let nnz = m.row_ptr[m.rows];
    if m.col_indices.len() != nnz || m.values.len() != nnz {
        return Err(Error::InvalidData(format!(
            "CSR matrix: {nnz} entries by its offsets, {} column indices, {} values",
            m.col_indices.len(),
            m.values.len()
        )));
    }
    if let Some(&c) = m.col_indices.iter().find(|&&c| c as usize >= m.cols) {
        return Err(Error::InvalidData(format!("CSR column index {c} is not below the {} columns", m.cols)));
    }
    Ok(())
}

/// One row's feature values as the trees see them; a value past the row's end is missing.
pub(super) struct Row<'a>(pub(super) &'a [f32]);

impl Row<'_> {
    #[inline]
    pub(super) fn value(&self, feature: usize) -> f32 {
        self.0.get(feature).copied().unwrap_or(f32::NAN)
    }
}

/// Runs `f` on blocks of rows in parallel: `f(first, rows, out)` gets the index of the block's
/// first row, its rows and its slice of `out` (`width` values per row). Sparse rows are expanded
/// into a dense buffer (NaN = missing).
pub(super) fn for_each_block<T: Send>(
    features: &FeatureMatrix,
    out: &mut [T],
    width: usize,
    f: impl Fn(usize, &[Row<'_>], &mut [T]) -> Result<()> + Sync,
) -> Result<()> {
    if width == 0 || out.is_empty() {
        return Ok(());
    }
    out.par_chunks_mut(ROWS_PER_TASK * width).enumerate().try_for_each(|(block, chunk)| {
        let first = block * ROWS_PER_TASK;
        let count = chunk.len() / width;
        match features {
            FeatureMatrix::Dense(m) => {
                let rows: Vec<Row<'_>> = (first..first + count).map(|i| Row(dense_row(m, i))).collect();
                f(first, &rows, chunk)
            }
            FeatureMatrix::Sparse(m) => {
                // As wide as the matrix (at most the model's features): later features are missing
                // anyway, and the buffer stays small whatever `num_feature` a model file claims.
                let cols = m.cols;
                let mut dense = vec![f32::NAN; count * cols];
                for (r, i) in (first..first + count).enumerate() {
                    let range = m.row_ptr[i]..m.row_ptr[i + 1];
                    for (&c, &v) in m.col_indices[range.clone()].iter().zip(&m.values[range]) {
                        // `check_features` bounds the column indices by `m.cols`.
                        dense[r * cols + c as usize] = v;
                    }
                }
                let rows: Vec<Row<'_>> = (0..count).map(|r| Row(&dense[r * cols..(r + 1) * cols])).collect();
                f(first, &rows, chunk)
            }
        }
    })
}

fn dense_row(m: &DenseMatrix, i: usize) -> &[f32] {
    &m.values[i * m.cols..(i + 1) * m.cols]
}

/// The leaf that `row` reaches in `tree`. Every child index is checked and a path is at most as long
/// as the tree, so a corrupt tree gives an error, not a panic or an endless loop. The node arrays
/// are known to have one length (`Model::check_shape`).
#[inline]
fn leaf_of(tree: &Tree, index: usize, row: &Row<'_>) -> Result<usize> {
    let n = tree.len();
    let mut node = 0usize;
    for _ in 0..n {
        let left = tree.left_children[node];
        if left == -1 {
            return Ok(node);
        }
        let go_left = tree.goes_left(node, row.value(tree.split_indices[node] as usize));
        let child = if go_left { left } else { tree.right_children[node] };
        node = usize::try_from(child).ok().filter(|&c| c < n).ok_or_else(|| {
            Error::Model(format!("tree {index}: node {node} has child {child}, not one of its {n} nodes"))
        })?;
    }
    Err(Error::Model(format!("tree {index}: a path of more than {n} nodes (a cycle)")))
}
