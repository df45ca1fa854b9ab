//! A trained model: trees with their output group, the base score and the objective; prediction;
//! XGBoost's JSON model format.
//!
//! [`Model`] mirrors what XGBoost 3.x keeps in a `gbtree` model file, so that a model written here
//! loads in XGBoost and predicts the same values, and a model written by XGBoost (2.x and 3.x JSON)
//! loads here:
//!
//! - `trees` and `tree_info` (the output, class or target, that each tree adds to), in boosting order;
//! - `iteration_indptr`: the trees of boosting round `r` are `trees[iteration_indptr[r]..iteration_indptr[r + 1]]`
//!   (a round has `num_parallel_tree * outputs` trees for XGBoost's own models);
//! - `base_score`, one value per output, as XGBoost 3.2 stores it: the value that the objective's
//!   `prob_to_margin` turns into the starting margin (a probability for `binary:logistic`, a mean for
//!   `reg:squarederror`; for `multi:softprob` XGBoost's `prob_to_margin` is the identity, and the per-class
//!   values it estimates are log-odds centred on 0, so they read as margins).
//!
//! The submodules hold the JSON reader and writer ([`Model::load_json`], [`Model::save_json`]),
//! prediction ([`Model::predict_margin`], [`Model::predict_leaf`]) and feature importance
//! ([`Model::feature_importance`]).

mod cats;
mod importance;
mod json;
pub(crate) use json::write_float;
mod ubjson;
pub use ubjson::is_ubjson;
mod dump;
pub use dump::{DumpFormat, FeatureKind, FeatureMap};
mod predict;
mod shap;
mod shap_oblivious;
mod target_statistics;
pub(crate) use predict::{check_features, trees_of_rounds, PackedTrees};
#[cfg(test)]
pub(crate) use shap::test_models as shap_tests;
pub(crate) use shap::{alloc_explanation, check_explained_features, ShapPaths, ShapTrees};
#[cfg(test)]
pub(crate) use shap_oblivious::tests as shap_oblivious_tests;
pub(crate) use shap_oblivious::ObliviousShap;

use std::collections::BTreeMap;

pub use cats::{CategoryEncoder, FeatureCategories};
pub use importance::{FeatureScore, ImportanceType};
pub use json::MAX_OUTPUTS;
pub use target_statistics::{EncodedFeature, TargetStatistics, BOOSTER_NAME as TARGET_STATISTICS_BOOSTER};

pub use crate::tree::Tree;
use crate::tree::NO_PARENT;
use crate::{Error, Result};

/// The XGBoost version whose JSON layout [`Model::save_json`] writes.
pub const XGBOOST_FORMAT_VERSION: [u32; 3] = [3, 4, 1];

/// A gradient-boosted tree ensemble in XGBoost's `gbtree` layout.
///
/// The fields are public so that the trainer can build a model and readers can inspect it; a model
/// whose fields disagree (checked by [`Model::validate`]) is refused with [`Error::Model`] by the
/// writer and by prediction, never a panic.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// The trees in boosting order.
    pub trees: Vec<Tree>,
    /// The output (class of a multi-class model, target of a multi-target one, else 0) of each tree.
    pub tree_info: Vec<u32>,
    /// Offsets of the boosting rounds into `trees`: `rounds + 1` entries from 0 to `trees.len()`.
    pub iteration_indptr: Vec<usize>,
    /// Number of features the model was trained on (prediction data may have fewer, never more).
    pub num_feature: usize,
    /// Number of classes of a multi-class model; 0 otherwise (XGBoost's convention).
    pub num_class: usize,
    /// Number of regression targets (1 unless multi-target).
    pub num_target: usize,
    /// One value per output, in the space of the objective's `prob_to_margin` input (see the module
    /// documentation).
    pub base_score: Vec<f32>,
    /// XGBoost's `boost_from_average`: whether training estimated `base_score` from the labels.
    pub boost_from_average: bool,
    /// Trees grown per output and round (random forests: more than 1).
    pub num_parallel_tree: usize,
    /// The objective's XGBoost name (`learner.objective.name`).
    pub objective_name: String,
    /// The objective's configuration as XGBoost writes it (`learner.objective`, including `name`);
    /// `crate::objective` rebuilds the objective from it.
    pub objective: serde_json::Value,
    /// Feature names, empty or one per feature.
    pub feature_names: Vec<String>,
    /// Feature types (`float`, `int`, `q`, `i`, `c`), empty or one per feature.
    pub feature_types: Vec<String>,
    /// Free-form attributes (`best_iteration`, `best_score`, ...).
    pub attributes: BTreeMap<String, String>,
    /// `gradient_booster.model.cats`: XGBoost 3.1+'s category encoder (empty without named
    /// categories).
    pub categories: CategoryEncoder,
    /// The ordered-target-statistics encoder of features trained with
    /// `categorical_encoding=ordered_target` (empty otherwise); such a model is not XGBoost's
    /// (see [`TargetStatistics`]).
    pub target_statistics: TargetStatistics,
    /// The XGBoost version that wrote the model file ([`XGBOOST_FORMAT_VERSION`] for models built
    /// here; `[0, 0, 0]` when a file does not say).
    pub version: [u32; 3],
}

/// The starting margins of base scores `base_score` of objective `objective`: each through
/// `prob_to_margin`, except `reg:expectileerror`'s, ascending expectiles whose margins are the
/// lowest and then the gaps between them (`boost_kernels::expectile::margins_of`, XGBoost's
/// vector `ProbToMargin`; its objective's `prob_to_margin` is the identity).
pub(crate) fn base_margins(objective: &str, base_score: &[f32], prob_to_margin: impl Fn(f32) -> f32) -> Vec<f32> {
    let mut margins: Vec<f32> = base_score.iter().map(|&b| prob_to_margin(b)).collect();
    if objective == "reg:expectileerror" {
        boost_kernels::expectile::margins_of(&mut margins);
    }
    margins
}

impl Model {
    /// An empty model (no trees) for `objective` (its XGBoost JSON, with a string `name`, as
    /// `Objective::to_json` gives it). `num_class` is 0 unless multi-class; `base_score` has one
    /// value, or one per output. `num_target` starts at 1: set it (and `base_score`) for multi-target.
    pub fn new(
        objective: serde_json::Value,
        num_feature: usize,
        num_class: usize,
        base_score: Vec<f32>,
    ) -> Result<Self> {
        let objective_name = objective
            .get("name")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| Error::param("objective", "the objective's JSON has no string `name`"))?
            .to_string();
        let outputs = num_class.max(1);
        let base_score = match base_score.len() {
            1 => vec![base_score[0]; outputs],
            n if n == outputs => base_score,
            n => {
                return Err(Error::param("base_score", format!("{n} values for a model of {outputs} outputs")));
            }
        };
        let model = Model {
            trees: Vec::new(),
            tree_info: Vec::new(),
            iteration_indptr: vec![0],
            num_feature,
            num_class,
            num_target: 1,
            base_score,
            boost_from_average: true,
            num_parallel_tree: 1,
            objective_name,
            objective,
            feature_names: Vec::new(),
            feature_types: Vec::new(),
            attributes: BTreeMap::new(),
            categories: CategoryEncoder::default(),
            target_statistics: TargetStatistics::default(),
            version: XGBOOST_FORMAT_VERSION,
        };
        model.validate()?;
        Ok(model)
    }

    /// Appends one boosting round: each tree with the output it adds to.
    pub fn push_round(&mut self, trees: Vec<(Tree, u32)>) -> Result<()> {
        let outputs = self.num_outputs();
        for (i, (tree, output)) in trees.iter().enumerate() {
            let index = self.trees.len() + i;
            if *output as usize >= outputs {
                return Err(Error::Model(format!(
                    "tree {index}: output {output}, but the model has {outputs} outputs"
                )));
            }
            validate_tree(tree, index, self.num_feature)?;
        }
        for (tree, output) in trees {
            self.trees.push(tree);
            self.tree_info.push(output);
        }
        self.iteration_indptr.push(self.trees.len());
        Ok(())
    }

    /// The rounds `begin..end` taken every `step` as a model of their own (XGBoost's model
    /// slicing, `booster[begin:end:step]`): the trees of those rounds in order, the attributes
    /// but `best_iteration` and `best_score`, as XGBoost keeps them. `step` is at least 1 and
    /// the range a non-empty part of the rounds.
    pub fn slice(&self, begin: usize, end: usize, step: usize) -> Result<Model> {
        let rounds = self.num_rounds();
        if step == 0 || begin >= end || end > rounds {
            return Err(Error::param(
                "slice",
                format!("rounds {begin}..{end} by {step} of a model of {rounds} rounds: a non-empty range, step >= 1"),
            ));
        }
        let mut sliced = Model { trees: Vec::new(), tree_info: Vec::new(), iteration_indptr: vec![0], ..self.clone() };
        for round in (begin..end).step_by(step) {
            let trees = self.iteration_indptr[round]..self.iteration_indptr[round + 1];
            sliced.trees.extend_from_slice(&self.trees[trees.clone()]);
            sliced.tree_info.extend_from_slice(&self.tree_info[trees]);
            sliced.iteration_indptr.push(sliced.trees.len());
        }
        sliced.attributes.remove("best_iteration");
        sliced.attributes.remove("best_score");
        Ok(sliced)
    }

    /// Margins per row: the classes of a multi-class model, the targets of a multi-target one, else 1.
    pub fn num_outputs(&self) -> usize {
        self.num_class.max(self.num_target).max(1)
    }

    /// Number of boosting rounds.
    pub fn num_rounds(&self) -> usize {
        self.iteration_indptr.len().saturating_sub(1)
    }

    /// The starting margin of each output: `prob_to_margin(base_score[k])` (XGBoost computes it in
    /// `f32`, and so should the closure, for bit-identical margins); `reg:expectileerror`'s base
    /// scores become margins together, each a gap above the one below
    /// (`boost_kernels::expectile::margins_of`).
    pub fn base_margins(&self, prob_to_margin: impl Fn(f32) -> f32) -> Vec<f32> {
        base_margins(&self.objective_name, &self.base_score, prob_to_margin)
    }

    /// The name of feature `f` as XGBoost reports it (`get_score` keys, dumps): its name when the
    /// model has names, else `f{index}`.
    pub fn feature_key(&self, f: usize) -> String {
        self.feature_names.get(f).cloned().unwrap_or_else(|| format!("f{f}"))
    }

    /// Checks that the fields agree with each other and every tree is well formed (node arrays of
    /// one length, children in range, no cycles, parents matching, split features below
    /// `num_feature`). The error names the field and the tree.
    pub fn validate(&self) -> Result<()> {
        self.check_shape()?;
        self.target_statistics.validate(self.num_feature)?;
        for (i, tree) in self.trees.iter().enumerate() {
            validate_tree(tree, i, self.num_feature)?;
        }
        Ok(())
    }

    /// The model-level checks of [`Model::validate`] and the node-array lengths of each tree: what
    /// prediction needs (it checks every child index it follows), in time linear in the tree count.
    pub(crate) fn check_shape(&self) -> Result<()> {
        let outputs = self.num_outputs();
        if self.num_parallel_tree == 0 {
            return Err(Error::Model("`num_parallel_tree` is 0".into()));
        }
        if self.base_score.len() != outputs {
            return Err(Error::Model(format!(
                "`base_score` has {} values for a model of {outputs} outputs",
                self.base_score.len()
            )));
        }
        if self.tree_info.len() != self.trees.len() {
            return Err(Error::Model(format!(
                "`tree_info` has {} entries for {} trees",
                self.tree_info.len(),
                self.trees.len()
            )));
        }
        if let Some(t) = self.tree_info.iter().position(|&o| o as usize >= outputs) {
            return Err(Error::Model(format!(
                "`tree_info[{t}]` = {} is not below the {outputs} outputs",
                self.tree_info[t]
            )));
        }
        check_indptr(&self.iteration_indptr, self.trees.len())?;
        for (name, len) in [("feature_names", self.feature_names.len()), ("feature_types", self.feature_types.len())] {
            if len != 0 && len != self.num_feature {
                return Err(Error::Model(format!("`{name}` has {len} entries for {} features", self.num_feature)));
            }
        }
        let encoded = self.categories.features.len();
        if encoded != 0 && encoded != self.num_feature {
            return Err(Error::Model(format!(
                "`cats` encodes {encoded} features; the model has {} (`num_feature`)",
                self.num_feature
            )));
        }
        if self.objective.get("name").and_then(serde_json::Value::as_str) != Some(self.objective_name.as_str()) {
            return Err(Error::Model(format!("`objective.name` is not `{}`", self.objective_name)));
        }
        for (i, tree) in self.trees.iter().enumerate() {
            check_tree_arrays(tree, i)?;
        }
        Ok(())
    }
}

/// `iteration_indptr` must run from 0 to the tree count without decreasing.
fn check_indptr(indptr: &[usize], trees: usize) -> Result<()> {
    if indptr.first() != Some(&0) {
        return Err(Error::Model("`iteration_indptr` must start with 0".into()));
    }
    if let Some(r) = indptr.windows(2).position(|w| w[1] < w[0]) {
        return Err(Error::Model(format!("`iteration_indptr` decreases after round {r}")));
    }
    if indptr.last() != Some(&trees) {
        return Err(Error::Model(format!(
            "`iteration_indptr` ends at {} but the model has {trees} trees",
            indptr.last().copied().unwrap_or(0)
        )));
    }
    Ok(())
}

/// Every node array of tree `index` has the same, non-zero, length.
fn check_tree_arrays(tree: &Tree, index: usize) -> Result<()> {
    let n = tree.left_children.len();
    if n == 0 {
        return Err(Error::Model(format!("tree {index}: no nodes")));
    }
    let lengths = [
        ("right_children", tree.right_children.len()),
        ("parents", tree.parents.len()),
        ("split_indices", tree.split_indices.len()),
        ("split_conditions", tree.split_conditions.len()),
        ("default_left", tree.default_left.len()),
        ("base_weights", tree.base_weights.len()),
        ("loss_changes", tree.loss_changes.len()),
        ("sum_hessian", tree.sum_hessian.len()),
    ];
    for (name, len) in lengths {
        if len != n {
            return Err(Error::Model(format!("tree {index}: `{name}` has {len} entries, `left_children` {n}")));
        }
    }
    check_categorical(&tree.categorical, n, index)
}

/// A tree's categorical splits index its nodes (increasing) and its categories.
fn check_categorical(splits: &crate::tree::CategoricalSplits, n: usize, index: usize) -> Result<()> {
    let nodes_ok =
        splits.nodes.windows(2).all(|w| w[0] < w[1]) && splits.nodes.last().is_none_or(|&l| (l as usize) < n);
    let max_words = boost_kernels::categorical::words_for(boost_kernels::predict::MAX_CATEGORY as usize);
    let sets_ok = splits.sets.len() == splits.nodes.len() && splits.sets.iter().all(|s| s.len() <= max_words);
    if !nodes_ok || !sets_ok {
        return Err(Error::Model(format!(
            "tree {index}: categorical splits that do not index its nodes and categories"
        )));
    }
    Ok(())
}

/// The node `child` that `node` of a tree of `n` nodes points to, if it is a valid index.
fn child_index(child: i32, n: usize) -> Option<usize> {
    usize::try_from(child).ok().filter(|&c| c < n)
}

/// Full check of tree `index`: array lengths, then a walk from the root. Nodes the walk does not
/// reach are allowed: XGBoost's pruner leaves them in the arrays as deleted nodes.
pub(crate) fn validate_tree(tree: &Tree, index: usize, num_feature: usize) -> Result<()> {
    check_tree_arrays(tree, index)?;
    let n = tree.len();
    if tree.parents[0] != NO_PARENT {
        return Err(Error::Model(format!(
            "tree {index}: the root's parent is {} (expected {NO_PARENT})",
            tree.parents[0]
        )));
    }
    // Deleted nodes keep their parent; every parent must at least be a node, so that code walking
    // the `parents` array (`Tree::max_depth`) stays in bounds.
    if let Some(node) = (1..n).find(|&node| child_index(tree.parents[node], n).is_none()) {
        return Err(Error::Model(format!(
            "tree {index}: `parents[{node}]` = {} is not a node of the {n}",
            tree.parents[node]
        )));
    }
    let mut seen = vec![false; n];
    seen[0] = true;
    let mut stack = vec![0usize];
    while let Some(node) = stack.pop() {
        let (left, right) = (tree.left_children[node], tree.right_children[node]);
        if left == -1 && right == -1 {
            continue;
        }
        let feature = tree.split_indices[node] as usize;
        if feature >= num_feature {
            return Err(Error::Model(format!(
                "tree {index}: node {node} splits on feature {feature}, but the model has {num_feature}"
            )));
        }
        for (field, child) in [("left_children", left), ("right_children", right)] {
            let c = child_index(child, n).ok_or_else(|| {
                Error::Model(format!("tree {index}: `{field}[{node}]` = {child} is not a node of the {n}"))
            })?;
            if seen[c] {
                return Err(Error::Model(format!(
                    "tree {index}: node {c} is reached twice (`{field}[{node}]`): a cycle or a shared child"
                )));
            }
            if tree.parents[c] != node as i32 {
                return Err(Error::Model(format!(
                    "tree {index}: `parents[{c}]` = {} but node {node} has it as child",
                    tree.parents[c]
                )));
            }
            seen[c] = true;
            stack.push(c);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
