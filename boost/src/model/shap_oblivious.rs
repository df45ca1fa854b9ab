//! SHAP values of models of oblivious trees by [`boost_kernels::shap::oblivious`]'s walk over each
//! tree: a faster route than the paths of [`super::shap`], which every other model takes (and
//! every model's interaction values). The walk sums in another order than the paths: its values
//! differ from theirs by rounding (tested to 1e-6 relative), and are the same bits on both backends.

use boost_kernels::predict::DEFAULT_LEFT;
use boost_kernels::shap::oblivious::{
    ObliviousLevel, ObliviousMemory, ObliviousShapTree, MAX_OBLIVIOUS_DEPTH, OBLIVIOUS_POINTS,
};

use super::shap::{branch_weight, cover_ratio, gauss_legendre};
use crate::tree::oblivious::ObliviousTree;
use crate::tree::Tree;

/// A model's oblivious trees as [`boost_kernels::shap::oblivious`] reads them.
pub(crate) struct ObliviousShap {
    pub trees: Vec<ObliviousShapTree>,
    pub levels: Vec<ObliviousLevel>,
    /// Each node's factors (below the roots): taken at each point, then not taken.
    pub factors: Vec<f32>,
    /// Each node's cover fraction.
    pub fractions: Vec<f64>,
    pub leaves: Vec<f32>,
    /// The 8-point rule's weights.
    pub weights: Vec<f32>,
    /// Each output's expected value, as [`super::ShapPaths`] gives it.
    pub expected: Vec<f64>,
}

impl ObliviousMemory for ObliviousShap {
    fn tree(&self, i: usize) -> ObliviousShapTree {
        self.trees[i]
    }
    fn level(&self, i: usize) -> ObliviousLevel {
        self.levels[i]
    }
    fn factor(&self, i: usize) -> f32 {
        self.factors[i]
    }
    fn fraction(&self, i: usize) -> f64 {
        self.fractions[i]
    }
    fn leaf(&self, i: usize) -> f32 {
        self.leaves[i]
    }
    fn weight(&self, q: usize) -> f32 {
        self.weights[q]
    }
}

impl ObliviousShap {
    /// `trees` (the output of each in `outputs`) for the walk, when every one is oblivious, at most
    /// [`MAX_OBLIVIOUS_DEPTH`] deep, with covers that are not negative.
    pub fn of(trees: &[Tree], outputs: &[u32], num_outputs: usize) -> Option<Self> {
        let rule = gauss_legendre(OBLIVIOUS_POINTS);
        let mut out = ObliviousShap {
            trees: Vec::new(),
            levels: Vec::new(),
            factors: Vec::new(),
            fractions: Vec::new(),
            leaves: Vec::new(),
            weights: rule.iter().map(|&[_, w]| w as f32).collect(),
            expected: vec![0.0; num_outputs],
        };
        for (tree, &output) in trees.iter().zip(outputs) {
            let oblivious = ObliviousTree::of(tree)?;
            let d = oblivious.levels.len();
            if d > MAX_OBLIVIOUS_DEPTH || tree.sum_hessian.iter().any(|&c| c < 0.0) {
                return None;
            }
            out.expected[output as usize] += mean(tree, d);
            if d == 0 {
                continue;
            }
            out.trees.push(ObliviousShapTree {
                first_level: out.levels.len() as u32,
                depth: d as u32,
                first_node: out.fractions.len() as u32,
                first_leaf: out.leaves.len() as u32,
                output,
                _pad: 0,
            });
            // Bit `l`: level `l` splits on the feature.
            let levels_of = |f: u32| (0..d).filter(|&l| oblivious.levels[l].0 == f).fold(0u32, |m, l| m | 1 << l);
            for (l, &(feature, value, default_left)) in oblivious.levels.iter().enumerate() {
                let on_feature = levels_of(feature);
                out.levels.push(ObliviousLevel {
                    feature: feature | if default_left { DEFAULT_LEFT } else { 0 },
                    value,
                    levels: on_feature & ((2 << l) - 1),
                    last: u32::from(on_feature >> (l + 1) == 0),
                });
            }
            for node in 1..tree.len() {
                let l = (node + 1).ilog2() as usize - 1; // the level of the split above it
                let on_feature = levels_of(oblivious.levels[l].0);
                let z = merged_fraction(tree, node, on_feature & ((2 << l) - 1));
                let last = on_feature >> (l + 1) == 0;
                out.fractions.push(z);
                let factor = |t: f64, not_taken: bool| match (last, not_taken) {
                    (false, _) => 1.0,
                    (true, false) => (z + (1.0 - z) * t) as f32,
                    (true, true) => (z * (1.0 - t)) as f32,
                };
                for not_taken in [false, true] {
                    out.factors.extend(rule.iter().map(|&[t, _]| factor(t, not_taken)));
                }
            }
            out.leaves.extend_from_slice(&oblivious.leaves);
        }
        Some(out)
    }
}

/// The cover fraction of node `node`'s feature down to it: the product, from the root, of the
/// fractions of the path's nodes below the levels in `on_feature` (as [`super::ShapPaths`]
/// multiplies them).
fn merged_fraction(tree: &Tree, node: usize, on_feature: u32) -> f64 {
    let mut path = vec![node];
    while let Some(&n) = path.last().filter(|&&n| n > 0) {
        path.push((n - 1) / 2);
    }
    path.reverse(); // the root first: path[k] is at depth k
    let mut z = 1.0;
    for k in 0..path.len() - 1 {
        if on_feature >> k & 1 != 0 {
            z *= branch_weight(tree.sum_hessian[path[k + 1]], tree.sum_hessian[path[k]]);
        }
    }
    z
}

/// The tree's mean value: [`super::ShapPaths`]'s sum, leaves in order, each share multiplied down
/// from the root.
fn mean(tree: &Tree, depth: usize) -> f64 {
    let first_leaf = (1 << depth) - 1;
    (0..1usize << depth)
        .map(|leaf| {
            let mut share = f64::from(tree.split_conditions[first_leaf + leaf]);
            for l in 0..depth {
                let node = (1 << l) - 1 + (leaf >> (depth - l));
                let child = (1 << (l + 1)) - 1 + (leaf >> (depth - l - 1));
                share *= cover_ratio(tree.sum_hessian[child], tree.sum_hessian[node]);
            }
            share
        })
        .fold(0.0, |mean, share| mean + share)
}

#[cfg(test)]
pub(crate) mod tests {
    use boost_kernels::shap;

    use super::*;
    use crate::data::FeatureMatrix;
    use crate::model::shap_tests::trained;
    use crate::model::{Model, ShapPaths, ShapTrees};

    /// A model of oblivious trees of depth 3 on 5 features.
    pub(crate) fn oblivious_model(objective: &[(&str, &str)]) -> (Model, FeatureMatrix) {
        let mut pairs = objective.to_vec();
        pairs.extend([("grow_policy", "oblivious"), ("max_depth", "3")]);
        trained(&pairs, 4)
    }

    /// The walk gives each oblivious tree's SHAP values and mean value as its paths do: the same
    /// sums in another order, to 1e-6 of the tree's largest leaf; trees splitting on a feature
    /// at several levels among them.
    #[test]
    fn the_walk_gives_the_paths_values() {
        let (mut walked, mut repeated) = (0, 0);
        for depth in ["3", "6"] {
            let pairs = [("objective", "reg:squarederror"), ("grow_policy", "oblivious"), ("max_depth", depth)];
            let (model, features) = trained(&pairs, 6);
            let FeatureMatrix::Dense(dense) = &features else { unreachable!() };
            for (t, tree) in model.trees.iter().enumerate() {
                let Some(walk) = ObliviousShap::of(std::slice::from_ref(tree), &[0], 1) else { continue };
                let paths = ShapPaths::of(std::slice::from_ref(tree), &[0], 1, t).unwrap();
                assert_eq!(walk.expected[0].to_bits(), paths.expected[0].to_bits(), "tree {t}'s mean value");
                let largest = walk.leaves.iter().fold(0f64, |m, &v| m.max(f64::from(v).abs()));
                for r in (0..dense.rows).step_by(7) {
                    let row = dense.row(r);
                    let value = |f: u32| row[f as usize];
                    let (mut want, mut got) = ([0f64; 5], [0f64; 5]);
                    for path in &paths.paths {
                        shap::path_values(&paths, path, &value, |f, phi| want[f as usize] += phi);
                    }
                    for tree in &walk.trees {
                        shap::oblivious::oblivious_values(&walk, tree, &value, |f, phi| got[f as usize] += phi);
                    }
                    for f in 0..5 {
                        let error = (got[f] - want[f]).abs();
                        assert!(error <= 1e-6 * largest, "tree {t} row {r} feature {f}: {} vs {}", got[f], want[f]);
                    }
                }
                walked += 1;
                repeated += usize::from(walk.levels.iter().any(|l| l.levels.count_ones() > 1));
            }
        }
        assert_eq!(walked, 12, "every tree walked");
        assert!(repeated >= 2, "{repeated} trees split on a feature twice");
    }

    /// A model whose trees are all oblivious is walked, its values within 1e-6 relative of its
    /// paths' and summing to its margins; a depthwise model takes the paths.
    #[test]
    fn oblivious_models_are_walked() {
        for objective in
            [&[("objective", "reg:squarederror")][..], &[("objective", "multi:softprob"), ("num_class", "3")]]
        {
            let (model, features) = oblivious_model(objective);
            let ShapTrees::Oblivious(walk) = model.shap_trees((0, 0)).unwrap() else { panic!("not walked") };
            assert_eq!(walk.trees.len(), model.trees.len(), "{objective:?}");
            let walked = model.predict_contributions(&features, None, |b| b, (0, 0)).unwrap();
            let mut by_paths = vec![0f64; walked.len()];
            let paths = ShapTrees::Paths(model.shap_paths((0, 0)).unwrap());
            let FeatureMatrix::Dense(dense) = &features else { unreachable!() };
            let rows: Vec<_> = (0..dense.rows).map(|r| super::super::predict::Row(dense.row(r))).collect();
            paths.add_values(&rows, model.num_outputs(), model.num_feature + 1, &mut by_paths);
            let margins = model.predict_margin(&features, None, |b| b, (0, 0)).unwrap();
            let width = model.num_feature + 1;
            for (i, (got, want)) in walked.iter().zip(&by_paths).enumerate().filter(|(i, _)| i % width != width - 1) {
                assert!((f64::from(*got) - want).abs() <= 1e-6 * (1.0 + want.abs()), "value {i}: {got} vs {want}");
            }
            for (block, margin) in walked.chunks(width).zip(&margins) {
                let total: f32 = block.iter().sum();
                assert!((total - margin).abs() <= 1e-5 * (1.0 + margin.abs()), "{total} vs margin {margin}");
            }
        }
        let (depthwise, _) = trained(&[("objective", "reg:squarederror")], 2);
        assert!(matches!(depthwise.shap_trees((0, 0)).unwrap(), ShapTrees::Paths(_)));
    }
}
