//! Feature importance as XGBoost's `Booster.get_score(importance_type=...)` defines it.
//!
//! Over the split nodes reachable from each tree's root (deleted nodes do not count), for each
//! feature: `weight` is the number of splits on it, `total_gain` the sum of their `loss_changes`,
//! `total_cover` the sum of their `sum_hessian`; `gain` and `cover` are those sums divided by the
//! weight. Sums are taken in `f32`, trees in model order and nodes in XGBoost's walk order (a stack:
//! a node, then its right subtree, then its left), so they match XGBoost's values bit for bit.
//! Features no split uses are left out, as XGBoost does.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::Model;
use crate::{Error, Result};

/// One of XGBoost's importance types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImportanceType {
    /// Number of splits on the feature.
    Weight,
    /// Mean gain (`loss_changes`) of the feature's splits.
    Gain,
    /// Mean cover (`sum_hessian`) of the feature's splits.
    Cover,
    /// Sum of the gains of the feature's splits.
    TotalGain,
    /// Sum of the covers of the feature's splits.
    TotalCover,
}

impl ImportanceType {
    /// Every type, in XGBoost's documentation order.
    pub const ALL: [ImportanceType; 5] = [Self::Weight, Self::Gain, Self::Cover, Self::TotalGain, Self::TotalCover];

    /// XGBoost's name (`weight`, `gain`, `cover`, `total_gain`, `total_cover`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Weight => "weight",
            Self::Gain => "gain",
            Self::Cover => "cover",
            Self::TotalGain => "total_gain",
            Self::TotalCover => "total_cover",
        }
    }
}

impl fmt::Display for ImportanceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ImportanceType {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| {
            Error::param("importance_type", format!("`{s}`; expected weight, gain, cover, total_gain or total_cover"))
        })
    }
}

/// The importance of one feature.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureScore {
    /// The feature's index.
    pub feature: usize,
    /// The feature's name, when the model has names.
    pub name: Option<String>,
    /// The importance.
    pub score: f32,
}

impl FeatureScore {
    /// The key XGBoost's `get_score` uses: the name, else `f{index}`.
    pub fn key(&self) -> String {
        self.name.clone().unwrap_or_else(|| format!("f{}", self.feature))
    }
}

impl Model {
    /// The importance of every feature that some split uses, by increasing feature index.
    pub fn feature_importance(&self, kind: ImportanceType) -> Result<Vec<FeatureScore>> {
        self.check_shape()?;
        // Per used feature: (splits, sum); a map, so that memory follows the splits, not `num_feature`.
        let mut stats: BTreeMap<usize, (usize, f32)> = BTreeMap::new();
        let mut stack = Vec::new();
        for (t, tree) in self.trees.iter().enumerate() {
            let n = tree.len();
            stack.clear();
            stack.push(0usize);
            let mut visited = 0usize;
            while let Some(node) = stack.pop() {
                // A walk of more nodes than the tree has goes round a cycle.
                visited += 1;
                if visited > n {
                    return Err(Error::Model(format!("tree {t}: a cycle through node {node}")));
                }
                if tree.left_children[node] == -1 {
                    continue;
                }
                let f = tree.split_indices[node] as usize;
                if f >= self.num_feature {
                    return Err(Error::Model(format!(
                        "tree {t}: node {node} splits on feature {f}, but the model has {}",
                        self.num_feature
                    )));
                }
                let (count, sum) = stats.entry(f).or_insert((0, 0.0));
                *count += 1;
                match kind {
                    ImportanceType::Weight => {}
                    ImportanceType::Gain | ImportanceType::TotalGain => *sum += tree.loss_changes[node],
                    ImportanceType::Cover | ImportanceType::TotalCover => *sum += tree.sum_hessian[node],
                }
                for child in [tree.left_children[node], tree.right_children[node]] {
                    let c = usize::try_from(child).ok().filter(|&c| c < n).ok_or_else(|| {
                        Error::Model(format!("tree {t}: node {node} has child {child}, not one of its {n} nodes"))
                    })?;
                    stack.push(c);
                }
            }
        }
        Ok(stats
            .into_iter()
            .map(|(f, (count, sum))| {
                let score = match kind {
                    ImportanceType::Weight => count as f32,
                    ImportanceType::Gain | ImportanceType::Cover => sum / count as f32,
                    ImportanceType::TotalGain | ImportanceType::TotalCover => sum,
                };
                FeatureScore { feature: f, name: self.feature_names.get(f).cloned(), score }
            })
            .collect())
    }
}
