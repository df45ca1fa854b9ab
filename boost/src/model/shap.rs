//! Explanations: SHAP values (XGBoost's `pred_contribs`), SHAP interaction values
//! (`pred_interactions`) and Saabas' approximation (`approx_contribs`), parallel over rows.
//!
//! The trees are decomposed into root-to-leaf paths ([`ShapPaths`]) whose values
//! [`boost_kernels::shap`] computes, the arithmetic the GPU's kernel runs too. Each row's values are
//! summed in `f64` over the paths in model order and rounded to `f32` at the end; the bias column
//! is the trees' expected values (their cover-weighted mean leaf) rounded to `f32`, plus the row's
//! base margin, as XGBoost adds them. Layouts are XGBoost's: `rows x outputs x (features + 1)` for
//! contributions, `rows x outputs x (features + 1)^2` for interactions, the bias last.

use boost_kernels::predict::{CATEGORICAL, DEFAULT_LEFT};
use boost_kernels::shap::{self, ElementTable, PathMemory, ShapElement, ShapPath, ShapSplit, MAX_PATH_FEATURES};

use boost_kernels::shap::oblivious::oblivious_values;

use super::predict::{check_features, for_each_block, Row};
use super::Model;
use super::ObliviousShap;
use crate::data::FeatureMatrix;
use crate::tree::Tree;
use crate::{Error, Result};

/// The paths of a model's trees, as [`boost_kernels::shap`] reads them.
pub(crate) struct ShapPaths {
    pub paths: Vec<ShapPath>,
    pub elements: Vec<ShapElement>,
    pub splits: Vec<ShapSplit>,
    /// The categorical splits' bitsets: a word count, then the words.
    pub category_words: Vec<u32>,
    /// The elements' tables ([`ElementTable`]).
    pub tables: Vec<f32>,
    /// The weights of the 8-point and the 16-point Gauss–Legendre rules on `[0, 1]`.
    pub weights: Vec<f32>,
    /// The nodes of those rules.
    nodes: Vec<f64>,
    /// Each output's expected value: the sum of its trees' mean leaf values, weighted by cover.
    pub expected: Vec<f64>,
}

impl PathMemory for ShapPaths {
    fn path(&self, i: usize) -> ShapPath {
        self.paths[i]
    }
    fn element(&self, i: usize) -> ShapElement {
        self.elements[i]
    }
    fn split(&self, i: usize) -> ShapSplit {
        self.splits[i]
    }
    fn category_word(&self, i: usize) -> u32 {
        self.category_words[i]
    }
    fn table(&self, i: usize) -> f32 {
        self.tables[i]
    }
    fn weight(&self, i: usize) -> f32 {
        self.weights[i]
    }
}

impl ShapPaths {
    /// No paths, with each output's `expected` value.
    pub fn empty(expected: Vec<f64>) -> Self {
        ShapPaths {
            paths: Vec::new(),
            elements: Vec::new(),
            splits: Vec::new(),
            category_words: Vec::new(),
            tables: Vec::new(),
            weights: Vec::new(),
            nodes: Vec::new(),
            expected,
        }
    }

    /// The paths of `trees` (the output of each in `outputs`), checked: children inside their
    /// tree, each node reached once, covers not negative, at most [`MAX_PATH_FEATURES`] features
    /// on a path. `first_tree` is the first one's index in the model (for errors).
    pub fn of(trees: &[Tree], outputs: &[u32], num_outputs: usize, first_tree: usize) -> Result<Self> {
        let (eight, sixteen) = (gauss_legendre(8), gauss_legendre(16));
        let mut out = ShapPaths {
            paths: Vec::new(),
            elements: Vec::new(),
            splits: Vec::new(),
            category_words: Vec::new(),
            tables: Vec::new(),
            weights: eight.iter().chain(&sixteen).map(|&[_, w]| w as f32).collect(),
            nodes: eight.iter().chain(&sixteen).map(|&[t, _]| t).collect(),
            expected: vec![0.0; num_outputs],
        };
        for (t, (tree, &output)) in trees.iter().zip(outputs).enumerate() {
            let index = first_tree + t;
            out.expected[output as usize] += out.add_tree(tree, output, index)?;
        }
        Ok(out)
    }

    /// Adds `tree`'s paths, leaves in depth-first order (left first); returns its mean value.
    fn add_tree(&mut self, tree: &Tree, output: u32, index: usize) -> Result<f64> {
        let n = tree.len();
        let bad = |what: String| Error::Model(format!("tree {index}: {what}"));
        if n == 0 {
            return Err(bad("no nodes".into()));
        }
        let mut seen = vec![false; n];
        // The nodes of the current path, and at each split the way taken (true: left).
        let mut path: Vec<(usize, bool)> = Vec::new();
        // A node to visit with the length of the path above it and the way from its parent.
        let mut stack = vec![(0usize, 0usize, false)];
        let mut mean = 0.0;
        while let Some((node, depth, left)) = stack.pop() {
            if std::mem::replace(&mut seen[node], true) {
                return Err(bad(format!("node {node} is reached twice")));
            }
            path.truncate(depth);
            if let Some(last) = path.last_mut() {
                last.1 = left;
            }
            if tree.is_leaf(node) {
                mean += self.add_path(tree, &path, node, output, index)?;
                continue;
            }
            let child = |c: i32| {
                usize::try_from(c).ok().filter(|&c| c < n).ok_or_else(|| bad(format!("node {node} has child {c}")))
            };
            let (l, r) = (child(tree.left_children[node])?, child(tree.right_children[node])?);
            let cover = tree.sum_hessian[node];
            if cover < 0.0 || tree.sum_hessian[l] < 0.0 || tree.sum_hessian[r] < 0.0 {
                return Err(bad(format!("node {node} or a child has a negative cover: SHAP values need covers")));
            }
            path.push((node, true));
            stack.push((r, depth + 1, false));
            stack.push((l, depth + 1, true));
        }
        Ok(mean)
    }

    /// Adds the path to `leaf` through `path`'s splits; returns the leaf's share of the tree's
    /// mean value (its value times its cover fraction).
    fn add_path(&mut self, tree: &Tree, path: &[(usize, bool)], leaf: usize, output: u32, index: usize) -> Result<f64> {
        let value = f64::from(tree.split_conditions[leaf]);
        let first = self.elements.len();
        // Features in order of first appearance on the path, each with its splits.
        let mut features: Vec<u32> = Vec::new();
        for &(node, _) in path {
            let f = tree.split_indices[node];
            if !features.contains(&f) {
                features.push(f);
            }
        }
        if features.len() > MAX_PATH_FEATURES {
            return Err(Error::Model(format!(
                "tree {index}: the path to leaf {leaf} splits on {} features; SHAP values take at most {MAX_PATH_FEATURES}",
                features.len()
            )));
        }
        let points = shap::points_for(features.len());
        let nodes = self.nodes[shap::weights_offset(points)..][..points].to_vec();
        for &f in &features {
            let first_split = self.splits.len() as u32;
            let mut zero = 1.0;
            for (i, &(node, left)) in path.iter().enumerate() {
                if tree.split_indices[node] != f {
                    continue;
                }
                let child = path.get(i + 1).map_or(leaf, |&(c, _)| c);
                zero *= branch_weight(tree.sum_hessian[child], tree.sum_hessian[node]);
                let split = self.split_of(tree, node, left);
                self.splits.push(split);
            }
            let splits = self.splits.len() as u32 - first_split;
            let table = self.tables.len() as u32;
            ElementTable::fill(zero, nodes.iter().copied(), |v| self.tables.push(v));
            self.elements.push(ShapElement { feature: f, first_split, splits, table, zero_fraction: zero });
        }
        if !features.is_empty() {
            let (len, points) = (features.len() as u32, points as u32);
            self.paths.push(ShapPath { first: first as u32, len, output, points, value });
        }
        Ok(mean_share(tree, path, leaf, value))
    }

    /// Node `node`'s split as the kernels read it, taken to the left child when `left`.
    fn split_of(&mut self, tree: &Tree, node: usize, left: bool) -> ShapSplit {
        let mut feature = tree.split_indices[node] | if tree.default_left[node] { DEFAULT_LEFT } else { 0 };
        let mut value = tree.split_conditions[node];
        if let Some(set) = tree.categorical.set(node) {
            feature |= CATEGORICAL;
            value = f32::from_bits(self.category_words.len() as u32);
            self.category_words.push(set.len() as u32);
            self.category_words.extend_from_slice(set);
        }
        ShapSplit { feature, value, left: u32::from(left), _pad: 0 }
    }
}

/// XGBoost's cover fraction of a child: 0.5 under a node without cover, at least `1e-12` (a
/// refreshed tree may have a child without cover).
pub(super) fn branch_weight(cover: f32, parent: f32) -> f64 {
    if parent <= 0.0 {
        return 0.5;
    }
    (f64::from(cover) / f64::from(parent)).max(1e-12)
}

/// The leaf's term of the tree's mean value: its value times the product of the cover fractions
/// down to it (a node without cover halves, as XGBoost's mean value does).
fn mean_share(tree: &Tree, path: &[(usize, bool)], leaf: usize, value: f64) -> f64 {
    let mut share = value;
    for (i, &(node, _)) in path.iter().enumerate() {
        let child = path.get(i + 1).map_or(leaf, |&(c, _)| c);
        share *= cover_ratio(tree.sum_hessian[child], tree.sum_hessian[node]);
    }
    share
}

/// A child's share of its parent's cover in the mean value: a half under a node without cover.
pub(super) fn cover_ratio(cover: f32, parent: f32) -> f64 {
    if parent == 0.0 {
        0.5
    } else {
        f64::from(cover) / f64::from(parent)
    }
}

/// The Gauss–Legendre rule of `n` points on `[0, 1]`, (node, weight) pairs: the roots of the
/// Legendre polynomial by Newton's method.
pub(super) fn gauss_legendre(n: usize) -> Vec<[f64; 2]> {
    (0..n)
        .map(|i| {
            let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            for _ in 0..100 {
                let (p, dp) = legendre(n, x);
                let dx = p / dp;
                x -= dx;
                if dx.abs() < 1e-16 {
                    break;
                }
            }
            let (_, dp) = legendre(n, x);
            [0.5 * (x + 1.0), 1.0 / ((1.0 - x * x) * dp * dp)]
        })
        .collect()
}

/// The Legendre polynomial of degree `n` at `x` and its derivative.
fn legendre(n: usize, x: f64) -> (f64, f64) {
    let (mut p0, mut p1) = (1.0, x);
    for k in 2..=n {
        let k = k as f64;
        (p0, p1) = (p1, ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k);
    }
    let p = if n == 0 { p0 } else { p1 };
    let prev = if n <= 1 { 1.0 } else { p0 };
    (p, n as f64 * (x * p - prev) / (x * x - 1.0))
}

/// A model's trees as its SHAP values are computed: their paths, or for oblivious trees the walk.
pub(crate) enum ShapTrees {
    Paths(ShapPaths),
    Oblivious(ObliviousShap),
}

impl ShapTrees {
    /// Each output's expected value.
    pub fn expected(&self) -> &[f64] {
        match self {
            ShapTrees::Paths(paths) => &paths.expected,
            ShapTrees::Oblivious(trees) => &trees.expected,
        }
    }

    /// Adds each of `rows`' SHAP values to its `outputs x width` sums in `sums`, over the trees in
    /// model order (the block's rows against each path or tree in turn, which stays in cache).
    pub(super) fn add_values(&self, rows: &[Row<'_>], outputs: usize, width: usize, sums: &mut [f64]) {
        let first = |r: usize, output: u32| (r * outputs + output as usize) * width;
        match self {
            ShapTrees::Paths(paths) => {
                for path in &paths.paths {
                    for (r, row) in rows.iter().enumerate() {
                        let sums = &mut sums[first(r, path.output)..][..width];
                        let value = |f: u32| row.value(f as usize);
                        shap::path_values(paths, path, &value, |f, phi| sums[f as usize] += phi);
                    }
                }
            }
            ShapTrees::Oblivious(trees) => {
                for tree in &trees.trees {
                    for (r, row) in rows.iter().enumerate() {
                        let sums = &mut sums[first(r, tree.output)..][..width];
                        let value = |f: u32| row.value(f as usize);
                        oblivious_values(trees, tree, &value, |f, phi| sums[f as usize] += phi);
                    }
                }
            }
        }
    }
}

impl Model {
    /// The trees of `iteration_range` to explain, checked: at least one.
    fn explained_trees(&self, iteration_range: (usize, usize)) -> Result<std::ops::Range<usize>> {
        self.check_shape()?;
        let range = self.tree_range(iteration_range)?;
        if range.is_empty() {
            return Err(Error::Model(format!(
                "no trees to explain: the model has {} rounds, the iteration range is {iteration_range:?}",
                self.num_rounds()
            )));
        }
        Ok(range)
    }

    /// The paths of the trees of `iteration_range`, for explanations.
    pub(crate) fn shap_paths(&self, iteration_range: (usize, usize)) -> Result<ShapPaths> {
        let range = self.explained_trees(iteration_range)?;
        ShapPaths::of(&self.trees[range.clone()], &self.tree_info[range.clone()], self.num_outputs(), range.start)
    }

    /// The trees of `iteration_range` for SHAP values: walked when all are oblivious
    /// ([`ObliviousShap::of`]), else their paths.
    pub(crate) fn shap_trees(&self, iteration_range: (usize, usize)) -> Result<ShapTrees> {
        let range = self.explained_trees(iteration_range)?;
        let (trees, outputs) = (&self.trees[range.clone()], &self.tree_info[range.clone()]);
        Ok(match ObliviousShap::of(trees, outputs, self.num_outputs()) {
            Some(oblivious) => ShapTrees::Oblivious(oblivious),
            None => ShapTrees::Paths(ShapPaths::of(trees, outputs, self.num_outputs(), range.start)?),
        })
    }

    /// Each row's SHAP values (XGBoost's `pred_contribs`): `rows x outputs x (num_feature + 1)`
    /// values, the last of each block the bias (the trees' expected value plus the row's base
    /// margin, `base_margin` or the base score through `prob_to_margin`); a block sums to the
    /// row's margin. Trees of `iteration_range` only.
    pub fn predict_contributions(
        &self,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
    ) -> Result<Vec<f32>> {
        let shap_trees = || self.shap_trees(iteration_range);
        let (features, trees, bases) = self.explain_inputs(features, base_margin, prob_to_margin, shap_trees)?;
        let (outputs, width) = (self.num_outputs(), self.num_feature + 1);
        let mut out = alloc_explanation(features.rows(), outputs * width, "contributions")?;
        for_each_block(&features, &mut out, outputs * width, |first, rows, block| {
            let mut sums = vec![0f64; rows.len() * outputs * width];
            trees.add_values(rows, outputs, width, &mut sums);
            for (v, s) in block.iter_mut().zip(&sums) {
                *v = *s as f32;
            }
            for r in 0..rows.len() {
                let base = &bases[(first + r) * outputs..][..outputs];
                for o in 0..outputs {
                    block[(r * outputs + o) * width + width - 1] = trees.expected()[o] as f32 + base[o];
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}

impl Model {
    /// Each row's SHAP interaction values (XGBoost's `pred_interactions`): `rows x outputs x
    /// (num_feature + 1)^2` values, a symmetric matrix a row and output whose off-diagonal
    /// entries are the pairs' interaction values, whose diagonal is each feature's SHAP value
    /// less its row's interactions, and whose last diagonal entry is the bias of
    /// [`Model::predict_contributions`]; a matrix sums to the row's margin.
    pub fn predict_interactions(
        &self,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
    ) -> Result<Vec<f32>> {
        let shap_paths = || self.shap_paths(iteration_range);
        let (features, paths, bases) = self.explain_inputs(features, base_margin, prob_to_margin, shap_paths)?;
        let (outputs, width) = (self.num_outputs(), self.num_feature + 1);
        let square = width * width;
        let mut out = alloc_explanation(features.rows(), outputs * square, "interaction values")?;
        for_each_block(&features, &mut out, outputs * square, |first, rows, block| {
            let mut contributions = vec![0f64; outputs * width];
            let mut pairs = vec![0f64; outputs * square];
            for (r, row) in rows.iter().enumerate() {
                contributions.fill(0.0);
                pairs.fill(0.0);
                let value = |f: u32| row.value(f as usize);
                for path in &paths.paths {
                    let o = path.output as usize;
                    let vector = &mut contributions[o * width..][..width];
                    let m = &mut pairs[o * square..][..square];
                    shap::path_interactions(
                        &paths,
                        path,
                        &value,
                        |f, phi| vector[f as usize] += phi,
                        |i, k, phi| {
                            m[i as usize * width + k as usize] += phi;
                            m[k as usize * width + i as usize] += phi;
                        },
                    );
                }
                let base = &bases[(first + r) * outputs..][..outputs];
                let values = &mut block[r * outputs * square..][..outputs * square];
                for o in 0..outputs {
                    let m = &pairs[o * square..][..square];
                    let matrix = &mut values[o * square..][..square];
                    for i in 0..width {
                        let row = &mut matrix[i * width..][..width];
                        let contribution = contributions[o * width + i];
                        shap::finish_interaction_row(width, i, contribution, |k| m[i * width + k], |k, v| row[k] = v);
                    }
                    matrix[square - 1] = paths.expected[o] as f32 + base[o];
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Saabas' approximation of each row's contributions (XGBoost's `approx_contribs`): along the
    /// row's path, each split's feature gets the change of the cover-weighted mean value from
    /// the node to its child; laid out as [`Model::predict_contributions`].
    pub fn predict_approx_contributions(
        &self,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
    ) -> Result<Vec<f32>> {
        // The expected values of the exact SHAP values' bias (a walked model's are the same bits).
        let shap_trees = || self.shap_trees(iteration_range);
        let (features, trees_of_range, bases) =
            self.explain_inputs(features, base_margin, prob_to_margin, shap_trees)?;
        let expected = trees_of_range.expected();
        let range = self.tree_range(iteration_range)?;
        let trees = &self.trees[range.clone()];
        let groups = &self.tree_info[range];
        let means: Vec<Vec<f64>> = trees.iter().map(node_means).collect();
        let (outputs, width) = (self.num_outputs(), self.num_feature + 1);
        let mut out = alloc_explanation(features.rows(), outputs * width, "contributions")?;
        for_each_block(&features, &mut out, outputs * width, |first, rows, block| {
            let mut sums = vec![0f64; outputs * width];
            for (r, row) in rows.iter().enumerate() {
                sums.fill(0.0);
                for ((tree, mean), &o) in trees.iter().zip(&means).zip(groups) {
                    let sums = &mut sums[o as usize * width..][..width];
                    // The paths are checked: every node is reached once from the root.
                    let mut node = 0;
                    while !tree.is_leaf(node) {
                        let f = tree.split_indices[node] as usize;
                        let left = tree.goes_left(node, row.value(f));
                        let child = if left { tree.left_children[node] } else { tree.right_children[node] } as usize;
                        sums[f] += mean[child] - mean[node];
                        node = child;
                    }
                }
                let values = &mut block[r * outputs * width..][..outputs * width];
                for (v, s) in values.iter_mut().zip(&sums) {
                    *v = *s as f32;
                }
                let base = &bases[(first + r) * outputs..][..outputs];
                for o in 0..outputs {
                    values[o * width + width - 1] = expected[o] as f32 + base[o];
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// XGBoost's `approx_contribs` with `pred_interactions`: Saabas' contributions on the
    /// diagonal of each matrix (conditioning a feature on or off does not change them, so every
    /// pair's value is 0); laid out as [`Model::predict_interactions`].
    pub fn predict_approx_interactions(
        &self,
        features: &FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        iteration_range: (usize, usize),
    ) -> Result<Vec<f32>> {
        let contributions =
            self.predict_approx_contributions(features, base_margin, prob_to_margin, iteration_range)?;
        let width = self.num_feature + 1;
        let mut out = alloc_explanation(contributions.len() / width, width * width, "interaction values")?;
        for (matrix, values) in out.chunks_mut(width * width).zip(contributions.chunks(width)) {
            for (i, &v) in values.iter().enumerate() {
                matrix[i * width + i] = v;
            }
        }
        Ok(out)
    }

    /// What every explanation starts from, checked in this order: the rows (encoded by the model's
    /// target statistics), the trees as `trees` gives them, and each row's base margins.
    fn explain_inputs<'a, T>(
        &self,
        features: &'a FeatureMatrix,
        base_margin: Option<&[f32]>,
        prob_to_margin: impl Fn(f32) -> f32,
        trees: impl FnOnce() -> Result<T>,
    ) -> Result<(std::borrow::Cow<'a, FeatureMatrix>, T, Vec<f32>)> {
        check_explained_features(features.cols(), self.num_feature)?;
        check_features(features, self.num_feature)?;
        let trees = trees()?;
        let bases = self.base_margins_of(features.rows(), base_margin, prob_to_margin)?;
        Ok((self.target_statistics.apply(features)?, trees, bases))
    }
}

/// Refuses data of another width than the model's: an explanation has a value for each of the
/// model's features, and a missing column would silently explain nothing.
pub(crate) fn check_explained_features(cols: usize, num_feature: usize) -> Result<()> {
    if cols != num_feature {
        return Err(Error::InvalidData(format!(
            "the data has {cols} features and the model {num_feature}: explanations need the model's features"
        )));
    }
    Ok(())
}

/// Each node's mean value: its leaves' values weighted by cover (the tree's paths are checked).
fn node_means(tree: &Tree) -> Vec<f64> {
    let mut means = vec![0.0; tree.len()];
    // A post-order walk: children before their parent.
    let mut stack = vec![(0usize, false)];
    while let Some((node, children_done)) = stack.pop() {
        if tree.is_leaf(node) {
            means[node] = f64::from(tree.split_conditions[node]);
        } else if children_done {
            let (l, r) = (tree.left_children[node] as usize, tree.right_children[node] as usize);
            let (cl, cr, c) = (tree.sum_hessian[l], tree.sum_hessian[r], tree.sum_hessian[node]);
            means[node] = if c == 0.0 {
                0.5 * (means[l] + means[r])
            } else {
                (means[l] * f64::from(cl) + means[r] * f64::from(cr)) / f64::from(c)
            };
        } else {
            stack.push((node, true));
            stack.push((tree.left_children[node] as usize, false));
            stack.push((tree.right_children[node] as usize, false));
        }
    }
    means
}

/// Values of an explanation, or a typed error naming the sizes when they would not fit in the
/// host's available memory.
pub(crate) fn alloc_explanation(rows: usize, per_row: usize, what: &str) -> Result<Vec<f32>> {
    let bytes = rows.checked_mul(per_row).and_then(|n| n.checked_mul(4));
    let mut system = sysinfo::System::new();
    system.refresh_memory();
    let available = system.available_memory();
    let too_big = || {
        Error::InvalidData(format!(
            "{what} of {rows} rows x {per_row} values ({}) do not fit in the {available} bytes of memory available: \
             explain fewer rows at a time",
            bytes.map_or("more than the address space".into(), |b| format!("{b} bytes"))
        ))
    };
    // A host that cannot say (available 0) is not refused; the allocation still is, if it fails.
    let bytes = bytes.filter(|&b| available == 0 || (b as u64) <= available).ok_or_else(too_big)?;
    let mut out = Vec::new();
    out.try_reserve_exact(bytes / 4).map_err(|_| too_big())?;
    out.resize(bytes / 4, 0.0);
    Ok(out)
}

#[cfg(test)]
pub(crate) mod test_models {
    use super::*;
    use crate::data::{Dataset, DenseMatrix, MetaInfo};
    use crate::learner::{train, TrainOptions};
    use crate::param::Params;

    /// A model trained on 5 features with missing values, deep enough to split on a feature twice
    /// on a path, and its rows.
    pub(crate) fn trained(objective: &[(&str, &str)], rounds: usize) -> (Model, FeatureMatrix) {
        let (rows, cols) = (400, 5);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f32 / (1u64 << 53) as f32
        };
        let mut values = vec![0f32; rows * cols];
        for v in values.iter_mut() {
            *v = if uniform() < 0.1 { f32::NAN } else { uniform() * 4.0 - 2.0 };
        }
        let labels: Vec<f32> = (0..rows)
            .map(|r| {
                let x = |c: usize| {
                    let v = values[r * cols + c];
                    if v.is_nan() {
                        0.0
                    } else {
                        v.clamp(-1.0, 1.0)
                    }
                };
                let y = x(0) * x(1) + (x(2) * 3.0).sin() + x(3).abs();
                if objective[0].1 == "binary:logistic" {
                    f32::from(y > 0.8)
                } else if objective[0].1 == "multi:softprob" {
                    ((y + 2.0).max(0.0) as u32).min(2) as f32
                } else {
                    y
                }
            })
            .collect();
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
        let data = Dataset { features: features.clone(), info: MetaInfo { labels, ..Default::default() } };
        let mut pairs = vec![("max_depth", "5"), ("eta", "0.5"), ("min_child_weight", "0.5")];
        pairs.extend_from_slice(objective);
        let params = Params::from_pairs(&pairs).unwrap();
        let options = TrainOptions { num_boost_round: rounds, verbose_eval: 0, ..Default::default() };
        (train(&params, &data, &[], &options, &mut []).unwrap().model, features)
    }
}

#[cfg(test)]
mod tests {
    use super::test_models::trained;
    use super::*;
    use crate::data::DenseMatrix;

    /// E[f(x) | x_S] of one tree by Lundberg's recursion: features in `known` follow the row,
    /// the others average their children by cover.
    fn expectation(tree: &Tree, node: usize, row: &[f32], known: u32) -> f64 {
        if tree.is_leaf(node) {
            return f64::from(tree.split_conditions[node]);
        }
        let (l, r) = (tree.left_children[node] as usize, tree.right_children[node] as usize);
        let f = tree.split_indices[node] as usize;
        if known >> f & 1 != 0 {
            let left = tree.goes_left(node, row[f]);
            return expectation(tree, if left { l } else { r }, row, known);
        }
        let (cl, cr) = (f64::from(tree.sum_hessian[l]), f64::from(tree.sum_hessian[r]));
        (cl * expectation(tree, l, row, known) + cr * expectation(tree, r, row, known)) / (cl + cr)
    }

    fn factorial(n: u32) -> f64 {
        (1..=n).map(f64::from).product()
    }

    /// Shapley values and interaction indices of one output by enumerating every subset.
    fn brute_force(model: &Model, output: u32, row: &[f32]) -> (Vec<f64>, Vec<f64>) {
        let m = model.num_feature as u32;
        let value = |known: u32| -> f64 {
            let trees = model.trees.iter().zip(&model.tree_info).filter(|(_, &o)| o == output);
            trees.map(|(t, _)| expectation(t, 0, row, known)).sum()
        };
        let mut phi = vec![0.0; m as usize];
        let mut pairs = vec![0.0; (m * m) as usize];
        for s in 0..1u32 << m {
            let size = s.count_ones();
            for i in (0..m).filter(|i| s >> i & 1 == 0) {
                let w = factorial(size) * factorial(m - size - 1) / factorial(m);
                phi[i as usize] += w * (value(s | 1 << i) - value(s));
                for k in (0..m).filter(|&k| k != i && s >> k & 1 == 0) {
                    let w = factorial(size) * factorial(m - size - 2) / (2.0 * factorial(m - 1));
                    let d = value(s | 1 << i | 1 << k) - value(s | 1 << i) - value(s | 1 << k) + value(s);
                    pairs[(i * m + k) as usize] += w * d;
                }
            }
        }
        (phi, pairs)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 2e-6 * (1.0 + b.abs())
    }

    #[test]
    fn contributions_and_interactions_are_the_shapley_values_by_enumeration() {
        for (objective, rounds) in [
            (&[("objective", "reg:squarederror")][..], 3),
            (&[("objective", "multi:softprob"), ("num_class", "3")][..], 2),
        ] {
            let (model, features) = trained(objective, rounds);
            let repeated = model.trees.iter().any(|t| {
                let paths = ShapPaths::of(std::slice::from_ref(t), &[0], 1, 0).unwrap();
                paths.elements.iter().any(|e| e.splits > 1)
            });
            assert!(repeated, "a path should split twice on a feature");
            let contributions = model.predict_contributions(&features, None, |b| b, (0, 0)).unwrap();
            let interactions = model.predict_interactions(&features, None, |b| b, (0, 0)).unwrap();
            let margins = model.predict_margin(&features, None, |b| b, (0, 0)).unwrap();
            let (outputs, width) = (model.num_outputs(), model.num_feature + 1);
            let FeatureMatrix::Dense(dense) = &features else { unreachable!() };
            for r in (0..dense.rows).step_by(37) {
                let row = &dense.values[r * dense.cols..(r + 1) * dense.cols];
                for o in 0..outputs {
                    let (phi, pairs) = brute_force(&model, o as u32, row);
                    let ours = &contributions[(r * outputs + o) * width..][..width];
                    let matrix = &interactions[(r * outputs + o) * width * width..][..width * width];
                    for i in 0..width - 1 {
                        assert!(
                            close(f64::from(ours[i]), phi[i]),
                            "row {r} output {o} feature {i}: {} vs {}",
                            ours[i],
                            phi[i]
                        );
                        for k in (0..width - 1).filter(|&k| k != i) {
                            let (got, want) = (f64::from(matrix[i * width + k]), pairs[i * (width - 1) + k]);
                            assert!(close(got, want), "row {r} pair ({i}, {k}): {got} vs {want}");
                        }
                        let row_sum: f64 = matrix[i * width..][..width].iter().map(|&v| f64::from(v)).sum();
                        assert!(
                            close(row_sum, phi[i]),
                            "row {r}: interactions of {i} sum to {row_sum}, not {}",
                            phi[i]
                        );
                    }
                    assert_eq!(matrix[width * width - 1], ours[width - 1]);
                    let total: f32 = ours.iter().sum();
                    let margin = margins[r * outputs + o];
                    assert!(
                        (total - margin).abs() <= 1e-5 * (1.0 + margin.abs()),
                        "row {r}: {total} vs margin {margin}"
                    );
                }
            }
        }
    }

    /// An element's share of a path's interaction values (the GPU's order: a thread a matrix row)
    /// is the path's pairs (the CPU's: each pair once), bit for bit, both ways round.
    #[test]
    fn element_interactions_are_the_paths_pairs_bit_for_bit() {
        let (model, features) = trained(&[("objective", "reg:squarederror")], 3);
        let paths = model.shap_paths((0, 0)).unwrap();
        let FeatureMatrix::Dense(dense) = &features else { unreachable!() };
        let mut pairs_seen = 0;
        for r in (0..dense.rows).step_by(23) {
            let row = dense.row(r);
            let value = |f: u32| row[f as usize];
            for path in &paths.paths {
                let (mut values, mut pairs) = (Vec::new(), Vec::new());
                let features: Vec<u32> =
                    (0..path.len).map(|j| paths.elements[(path.first + j) as usize].feature).collect();
                shap::path_interactions(
                    &paths,
                    path,
                    &value,
                    |_, phi| values.push(phi),
                    |i, k, phi| pairs.push((i, k, phi)),
                );
                for (i, &feature) in features.iter().enumerate() {
                    let mut own = None;
                    let mut others = Vec::new();
                    shap::element_interactions(
                        &paths,
                        path,
                        &value,
                        i,
                        |phi| own = Some(phi),
                        |k, phi| others.push((k, phi)),
                    );
                    assert_eq!(own.map(f64::to_bits), Some(values[i].to_bits()), "row {r}, element {i}");
                    for (k, phi) in others {
                        let (a, b) = if features.iter().position(|&f| f == k).unwrap() > i {
                            (feature, k)
                        } else {
                            (k, feature)
                        };
                        let want = pairs.iter().find(|p| p.0 == a && p.1 == b).unwrap().2;
                        assert_eq!(phi.to_bits(), want.to_bits(), "row {r}, pair ({a}, {b})");
                        pairs_seen += 1;
                    }
                }
            }
        }
        assert!(pairs_seen > 100, "{pairs_seen} pairs compared");
    }

    /// Data of another width than the model's, a range without trees and values past the host's
    /// memory are typed errors naming the sizes.
    #[test]
    fn bad_inputs_are_typed_errors_naming_the_sizes() {
        let (model, features) = trained(&[("objective", "reg:squarederror")], 2);
        let FeatureMatrix::Dense(dense) = &features else { unreachable!() };
        let narrow = FeatureMatrix::Dense(DenseMatrix::new(2, 4, dense.values[..8].to_vec()));
        let error = model.predict_contributions(&narrow, None, |b| b, (0, 0)).unwrap_err().to_string();
        assert!(error.contains("the data has 4 features and the model 5"), "{error}");
        let error = model.predict_interactions(&features, None, |b| b, (1, 1)).unwrap_err().to_string();
        assert!(error.contains("no trees to explain: the model has 2 rounds"), "{error}");
        let error = alloc_explanation(1 << 40, 1 << 20, "interaction values").unwrap_err().to_string();
        assert!(error.contains("interaction values of 1099511627776 rows x 1048576 values"), "{error}");
        assert!(error.contains("explain fewer rows at a time"), "{error}");
    }

    #[test]
    fn gauss_legendre_rules_integrate_their_polynomials_exactly() {
        for n in [8, 16] {
            let rule = gauss_legendre(n);
            for degree in 0..2 * n as i32 {
                let integral: f64 = rule.iter().map(|[t, w]| w * t.powi(degree)).sum();
                let exact = 1.0 / f64::from(degree + 1);
                assert!((integral - exact).abs() < 1e-13, "{n} points, t^{degree}: {integral} vs {exact}");
            }
        }
    }

    #[test]
    fn saabas_contributions_follow_the_path_of_mean_values() {
        // Root: feature 0 < 1 (cover 4): left leaf -1 (cover 1), right split feature 1 < 0 (cover 3):
        // leaves 0.5 (cover 1) and 2 (cover 2).
        let objective = serde_json::json!({"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}});
        let mut model = Model::new(objective, 2, 0, vec![0.0]).unwrap();
        let mut tree = Tree::leaf(0.0, 4.0);
        tree.split(0, 0, 1.0, true, 1.0, (-1.0, 1.0), (0.0, 3.0));
        tree.split(2, 1, 0.0, false, 1.0, (0.5, 1.0), (2.0, 2.0));
        model.push_round(vec![(tree, 0)]).unwrap();
        let x = FeatureMatrix::Dense(DenseMatrix::new(1, 2, vec![3.0, 1.0]));
        let got = model.predict_approx_contributions(&x, None, |b| b, (0, 0)).unwrap();
        let (right, root) = ((0.5 + 2.0 * 2.0) / 3.0, (-1.0 + 0.5 + 4.0) / 4.0);
        let want = [(right - root) as f32, (2.0 - right) as f32, root as f32];
        assert_eq!(got, want);
    }
}
