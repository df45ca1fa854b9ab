//! Oblivious trees (`grow_policy=oblivious`, CatBoost's `SymmetricTree`): grown a level at a time,
//! every node of a level split on one feature and threshold with one missing direction, chosen by
//! the loss changes summed over the level's nodes (`boost_kernels::oblivious`, shared with the
//! kernels). Nodes without rows split too, so a tree of depth `d` has `2^d` leaves and a row's leaf
//! is one comparison a level. The tree is an ordinary one in XGBoost's layout (children numbered
//! level by level, as XGBoost numbers a depthwise tree), so XGBoost loads and predicts it.
//!
//! Column sampling: `colsample_bytree` over the tree, then `colsample_bylevel` and
//! `colsample_bynode` once a level (a level's nodes share their split, so they share its columns).

use boost_kernels::split::{leaf_value, Bounds, GradientSum};
use rand::Rng;

use super::grow::{sample, split_node, ChildHistograms, Expansion, GrowBackend};
use crate::fixed_point::GradientQuantiser;
use crate::param::TreeParams;
use crate::tree::Tree;

/// Grows one oblivious tree of at most `params.max_depth` levels over `features` (the tree's
/// sampled columns) with `backend`, drawing the levels' column samples from `rng`.
pub fn grow<S: GradientSum, B: GrowBackend<S>>(
    backend: &mut B,
    params: &TreeParams,
    quantiser: &GradientQuantiser,
    features: &[u32],
    rows: usize,
    rng: &mut impl Rng,
) -> Result<Tree, B::Error> {
    let sp = params.split();
    let to_f = |s: S| s.to_float(quantiser);
    let total = backend.total()?;
    let root = to_f(total);
    let mut tree = Tree::leaf(leaf_value(&sp, root.grad, root.hess), root.hess as f32);
    if params.max_depth == 0 || rows == 0 {
        return Ok(tree);
    }
    backend.root_histogram()?;
    // The level's nodes (id and gradient sum), in node order.
    let mut level: Vec<(usize, S)> = vec![(0, total)];
    for depth in 0..params.max_depth {
        let weights = &params.feature_weights;
        let by_level = sample(features, params.colsample_bylevel, weights, rng);
        let level_features = sample(&by_level, params.colsample_bynode, weights, rng);
        let Some(splits) = backend.evaluate_level(&level, &level_features)? else {
            break;
        };
        let expanded: Vec<Expansion<S>> = level
            .iter()
            .zip(splits)
            .map(|(&(node, sum), split)| split_node(&mut tree, (node, sum, Bounds::NONE), split, Vec::new(), params, quantiser).0)
            .collect();
        backend.partition(&expanded)?;
        level = expanded.iter().flat_map(|e| [(e.left, e.split.left), (e.right, e.split.right)]).collect();
        if depth + 1 == params.max_depth {
            expanded.iter().for_each(|e| backend.release(e.node));
            return Ok(tree);
        }
        let children: Vec<ChildHistograms> =
            expanded.iter().map(|e| ChildHistograms { left: e.left, right: e.right, parent: e.node }).collect();
        backend.children_histograms(&children)?;
    }
    level.iter().for_each(|&(node, _)| backend.release(node));
    Ok(tree)
}

/// An oblivious tree in the compact form of the fast applier (`boost_kernels::predict::
/// oblivious_index`): a split a level and the `2^depth` leaf values by index. Any full tree whose
/// levels each share one split has it, whoever trained it.
#[derive(Clone, Debug, PartialEq)]
pub struct ObliviousTree {
    /// Level `l`'s feature, condition (a value below it goes left) and missing direction.
    pub levels: Vec<(u32, f32, bool)>,
    /// The leaves' values, leaf `i` the node `2^depth - 1 + i`.
    pub leaves: Vec<f32>,
}

impl ObliviousTree {
    /// The compact form of `tree`, when it is oblivious: full, numbered level by level (node `n`'s
    /// children `2n + 1` and `2n + 2`), each level's nodes splitting alike.
    pub fn of(tree: &Tree) -> Option<Self> {
        let n = tree.len();
        let lengths =
            [tree.right_children.len(), tree.split_indices.len(), tree.split_conditions.len(), tree.default_left.len()];
        // `n + 1` a power of two: `2^(depth + 1) - 1` nodes (no tree of no nodes, no corrupt arrays).
        let categorical = !tree.categorical.is_empty();
        if categorical || n == 0 || !(n + 1).is_power_of_two() || lengths.iter().any(|&len| len != n) {
            return None;
        }
        let depth = (n + 1).ilog2() as usize - 1;
        let split = |node: usize| (tree.split_indices[node], tree.split_conditions[node], tree.default_left[node]);
        let mut levels = Vec::with_capacity(depth);
        for l in 0..depth {
            let first = (1 << l) - 1;
            for node in first..2 * first + 1 {
                let children = (tree.left_children[node], tree.right_children[node]);
                if children != (2 * node as i32 + 1, 2 * node as i32 + 2) || split(node).0 != split(first).0 {
                    return None;
                }
                if split(node).1.to_bits() != split(first).1.to_bits() || split(node).2 != split(first).2 {
                    return None;
                }
            }
            levels.push(split(first));
        }
        let leaves = (1 << depth) - 1..n;
        if leaves.clone().any(|leaf| tree.left_children[leaf] != -1) {
            return None;
        }
        Some(ObliviousTree { levels, leaves: tree.split_conditions[leaves].to_vec() })
    }

    /// The leaf index of a row whose feature `f` has value `value(f)`.
    #[inline]
    pub fn leaf(&self, value: impl Fn(u32) -> f32) -> usize {
        boost_kernels::predict::oblivious_index(self.levels.len(), |l| self.levels[l], value)
    }
}

#[cfg(test)]
mod tests {
    use crate::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
    use crate::data::{Dataset, FeatureMatrix};
    use crate::learner::{train, TrainOptions};
    use crate::model::Model;
    use crate::param::Params;

    fn data() -> Dataset {
        let spec = SyntheticSpec {
            rows: 3000,
            cols: 9,
            missing_columns: 3,
            task: SyntheticTask::Binary,
            seed: 7,
            ..Default::default()
        };
        let mut data = generate(&spec).unwrap();
        data.info.weights = (0..data.rows()).map(|i| 0.5 + (i % 4) as f32 / 2.0).collect();
        data
    }

    fn fit(pairs: &[(&str, &str)], data: &Dataset, rounds: usize) -> Model {
        let params = Params::from_pairs(pairs).unwrap();
        let options = TrainOptions { num_boost_round: rounds, verbose_eval: 0, ..Default::default() };
        train(&params, data, &[], &options, &mut []).unwrap().model
    }

    /// Every level's nodes share one split, every tree is full (`2^depth` leaves, nodes numbered
    /// level by level), and a row's leaf is its comparisons' bits, one a level (the fast applier's
    /// index) as the generic walk finds it.
    #[test]
    fn a_level_shares_one_split_and_a_leaf_is_the_levels_bits() {
        let data = data();
        let pairs = [
            ("objective", "binary:logistic"),
            ("grow_policy", "oblivious"),
            ("max_depth", "5"),
            ("min_child_weight", "5"),
            ("colsample_bylevel", "0.7"),
            ("seed", "4"),
        ];
        let model = fit(&pairs, &data, 8);
        let FeatureMatrix::Dense(rows) = &data.features else { panic!("dense rows") };
        let mut depths = Vec::new();
        for tree in &model.trees {
            let depth = tree.max_depth();
            depths.push(depth);
            assert_eq!(tree.len(), (1 << (depth + 1)) - 1, "a full tree of depth {depth}");
            for level in 0..depth {
                let nodes = (1 << level) - 1..(1 << (level + 1)) - 1;
                let first = nodes.start;
                for n in nodes {
                    assert_eq!(tree.left_children[n], 2 * n as i32 + 1);
                    let split =
                        |n: usize| (tree.split_indices[n], tree.split_conditions[n].to_bits(), tree.default_left[n]);
                    assert_eq!(split(n), split(first), "level {level}, node {n}");
                }
            }
            for i in 0..data.rows() {
                let row = rows.row(i);
                let mut index = 0usize;
                for level in 0..depth {
                    let node = (1 << level) - 1 + index;
                    let v = row[tree.split_indices[node] as usize];
                    let right = if v.is_nan() { !tree.default_left[node] } else { v >= tree.split_conditions[node] };
                    index = 2 * index + right as usize;
                }
                let value = |f: usize| row[f];
                assert_eq!((1 << depth) - 1 + index, tree.leaf_index(value), "row {i}");
            }
        }
        assert!(depths.iter().all(|&d| d == 5), "the trees reach the depth limit here: {depths:?}");
    }

    /// The fast applier (taken when every tree is oblivious) gives the generic walk's margins bit
    /// for bit, missing values and a base margin included; a depthwise tree has no compact form.
    #[test]
    fn the_fast_applier_adds_the_walks_leaves() {
        use super::ObliviousTree;
        let data = data();
        let pairs = [("objective", "binary:logistic"), ("grow_policy", "oblivious"), ("max_depth", "6")];
        let model = fit(&pairs, &data, 6);
        assert!(model.trees.iter().all(|t| ObliviousTree::of(t).is_some()));
        let FeatureMatrix::Dense(rows) = &data.features else { panic!("dense rows") };
        let base: Vec<f32> = (0..data.rows()).map(|i| (i % 5) as f32 * 0.25).collect();
        let margins = model.predict_margin(&data.features, Some(&base), |b| b, (0, 0)).unwrap();
        for (i, &margin) in margins.iter().enumerate() {
            let walked = model.trees.iter().fold(base[i], |m, tree| m + tree.predict_row(rows.row(i)));
            assert_eq!(margin.to_bits(), walked.to_bits(), "row {i}");
        }
        let depthwise = fit(&[("objective", "binary:logistic"), ("max_depth", "6")], &data, 1);
        assert_eq!(ObliviousTree::of(&depthwise.trees[0]), None);
        // No nodes, or arrays of different lengths (a corrupt model): no compact form, no panic.
        assert_eq!(ObliviousTree::of(&crate::tree::Tree::default()), None);
        let mut short = model.trees[0].clone();
        short.split_conditions.pop();
        assert_eq!(ObliviousTree::of(&short), None);
        let leaf = crate::tree::Tree::leaf(0.25, 1.0);
        assert_eq!(ObliviousTree::of(&leaf), Some(ObliviousTree { levels: vec![], leaves: vec![0.25] }));
    }

    /// A level of one node is the node's own best split: depth-1 oblivious trees are depthwise's.
    #[test]
    fn a_level_of_one_node_splits_as_the_node_would() {
        let data = data();
        let oblivious =
            fit(&[("objective", "binary:logistic"), ("grow_policy", "SymmetricTree"), ("max_depth", "1")], &data, 5);
        let depthwise = fit(&[("objective", "binary:logistic"), ("max_depth", "1")], &data, 5);
        assert_eq!(oblivious.trees, depthwise.trees);
    }

    /// A level splits only when its summed loss change passes `gamma` a node; a split node without rows
    /// gets leaves of weight 0, and the model predicts as any other.
    #[test]
    fn gamma_stops_a_level_and_nodes_without_rows_split_too() {
        let data = data();
        let shallow = fit(
            &[("objective", "binary:logistic"), ("grow_policy", "oblivious"), ("max_depth", "8"), ("gamma", "2")],
            &data,
            3,
        );
        let deep = fit(&[("objective", "binary:logistic"), ("grow_policy", "oblivious"), ("max_depth", "8")], &data, 3);
        let depth = |m: &Model| m.trees.iter().map(|t| t.max_depth()).max().unwrap();
        assert!(depth(&shallow) < depth(&deep), "gamma 2: depth {} against {}", depth(&shallow), depth(&deep));
        // At depth 8 on 3000 rows some of the 256 leaves have no rows: hessian 0, value 0.
        let tree = &deep.trees[0];
        let empty: Vec<usize> = (0..tree.len()).filter(|&n| tree.is_leaf(n) && tree.sum_hessian[n] == 0.0).collect();
        assert!(!empty.is_empty());
        assert!(empty.iter().all(|&n| tree.split_conditions[n] == 0.0));
    }
}
