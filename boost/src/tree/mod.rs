//! Regression trees in XGBoost's layout (the arrays of its JSON model), and their traversal; the
//! `hist` builder: the expansion driver shared by the backends in [`grow`] (oblivious trees'
//! in [`oblivious`]), the CPU backend in [`hist`]; the `exact` method's CPU backend in [`exact`].

pub mod constraints;
pub mod exact;
pub mod grow;
pub mod hist;
pub mod oblivious;

/// `parents` entry of the root (XGBoost writes `2147483647`).
pub const NO_PARENT: i32 = i32::MAX;

/// A regression tree as parallel node arrays, XGBoost's layout. Node 0 is the root; a leaf has
/// `left_children[n] == -1`, and its value (already multiplied by `eta`) in `split_conditions[n]`.
/// A split sends a row left when its value is below `split_conditions[n]`, a missing value to the
/// `default_left` side.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tree {
    /// Each node's left child (-1: a leaf).
    pub left_children: Vec<i32>,
    /// Each node's right child (-1: a leaf).
    pub right_children: Vec<i32>,
    /// Each node's parent (the root's: `i32::MAX`, as XGBoost writes it).
    pub parents: Vec<i32>,
    /// Each split's feature.
    pub split_indices: Vec<u32>,
    /// Each split's threshold, or a leaf's value.
    pub split_conditions: Vec<f32>,
    /// Whether a split sends missing values left.
    pub default_left: Vec<bool>,
    /// The node's weight: as XGBoost writes it, without `eta` for a split node and with it (the leaf
    /// value) for a leaf.
    pub base_weights: Vec<f32>,
    /// The gain of the node's split (0 for leaves).
    pub loss_changes: Vec<f32>,
    /// Sum of the hessians of the rows in the node (the cover).
    pub sum_hessian: Vec<f32>,
    /// The splits on categories (XGBoost's categorical splits; none for numeric trees).
    pub categorical: CategoricalSplits,
}

/// A tree's categorical splits: such a node sends a row right when its category is in the node's
/// set (see [`boost_kernels::predict::category_bits_go_left`]); its `split_conditions` entry is
/// unused. Sets are bitsets, as XGBoost keeps them in memory: a partition split of a feature of a
/// million categories sends most of them one way, and its list is only written to the JSON file
/// (XGBoost's `categories`, `categories_nodes`, `categories_segments`, `categories_sizes`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CategoricalSplits {
    /// The nodes that split on categories, increasing.
    pub nodes: Vec<u32>,
    /// Each node's set: bit `c % 32` of word `c / 32` for category `c`, no zero words at the end.
    pub sets: Vec<Vec<u32>>,
}

impl CategoricalSplits {
    /// Whether the tree has no categorical split.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Records that `node` (not yet listed) sends the categories of bitset `words` right, keeping
    /// the nodes in order.
    pub fn insert(&mut self, node: u32, mut words: Vec<u32>) {
        let kept = words.iter().rposition(|&w| w != 0).map_or(0, |last| last + 1);
        words.truncate(kept);
        let i = self.nodes.partition_point(|&n| n < node);
        self.nodes.insert(i, node);
        self.sets.insert(i, words);
    }

    /// The bitset of the categories that node `node` sends right, when it splits on categories.
    #[inline]
    pub fn set(&self, node: usize) -> Option<&[u32]> {
        let i = self.nodes.binary_search(&(node as u32)).ok()?;
        Some(&self.sets[i])
    }

    /// The categories that node `node` sends right, increasing, when it splits on categories.
    pub fn categories(&self, node: usize) -> Option<Vec<u32>> {
        self.set(node).map(members)
    }

    /// How many categories each categorical node sends right (XGBoost's `categories_sizes`).
    pub fn sizes(&self) -> Vec<usize> {
        self.sets.iter().map(|set| set.iter().map(|w| w.count_ones() as usize).sum()).collect()
    }

    /// Splits sending the categories of `lists` (each a node's, in `nodes`' order) right.
    pub fn from_lists(nodes: Vec<u32>, lists: &[&[u32]]) -> Self {
        let sets = lists
            .iter()
            .map(|list| {
                let mut words = vec![0u32; list.last().map_or(0, |&c| c as usize / 32 + 1)];
                list.iter().for_each(|&c| boost_kernels::categorical::insert(&mut words, c as usize));
                words
            })
            .collect();
        CategoricalSplits { nodes, sets }
    }
}

/// The members of a bitset, increasing.
pub fn members(words: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, &w) in words.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            out.push(i as u32 * 32 + w.trailing_zeros());
            w &= w - 1;
        }
    }
    out
}

impl Tree {
    /// A tree of one leaf.
    pub fn leaf(value: f32, sum_hessian: f32) -> Self {
        let mut tree = Tree::default();
        tree.push_node(NO_PARENT, value, sum_hessian);
        tree
    }

    fn push_node(&mut self, parent: i32, value: f32, sum_hessian: f32) -> usize {
        self.left_children.push(-1);
        self.right_children.push(-1);
        self.parents.push(parent);
        self.split_indices.push(0);
        self.split_conditions.push(value);
        self.default_left.push(false);
        self.base_weights.push(value);
        self.loss_changes.push(0.0);
        self.sum_hessian.push(sum_hessian);
        self.left_children.len() - 1
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.left_children.len()
    }

    /// Whether the tree has no nodes (a valid tree has at least the root).
    pub fn is_empty(&self) -> bool {
        self.left_children.is_empty()
    }

    /// Whether `node` is a leaf.
    pub fn is_leaf(&self, node: usize) -> bool {
        self.left_children[node] == -1
    }

    /// Turns leaf `node` into a split on `feature < threshold` with two new leaves (values given as
    /// (leaf value, hessian sum)); returns the children's indices.
    #[allow(clippy::too_many_arguments)]
    pub fn split(
        &mut self,
        node: usize,
        feature: u32,
        threshold: f32,
        default_left: bool,
        loss_change: f32,
        left: (f32, f32),
        right: (f32, f32),
    ) -> (usize, usize) {
        debug_assert!(self.is_leaf(node));
        let l = self.push_node(node as i32, left.0, left.1);
        let r = self.push_node(node as i32, right.0, right.1);
        self.left_children[node] = l as i32;
        self.right_children[node] = r as i32;
        self.split_indices[node] = feature;
        self.split_conditions[node] = threshold;
        self.default_left[node] = default_left;
        self.loss_changes[node] = loss_change;
        (l, r)
    }

    /// Turns leaf `node` into a split on the categories of `feature`: rows whose category is in the
    /// bitset `categories` go right. The condition is XGBoost's placeholder.
    #[allow(clippy::too_many_arguments)]
    pub fn split_categorical(
        &mut self,
        node: usize,
        feature: u32,
        categories: Vec<u32>,
        default_left: bool,
        loss_change: f32,
        left: (f32, f32),
        right: (f32, f32),
    ) -> (usize, usize) {
        let condition = boost_kernels::categorical::CATEGORICAL_CONDITION;
        let children = self.split(node, feature, condition, default_left, loss_change, left, right);
        self.categorical.insert(node as u32, categories);
        children
    }

    /// Whether split `node` sends `value` left (NaN: missing): below the condition, or for a
    /// categorical split, not one of its categories (`boost_kernels::predict`'s rules).
    #[inline]
    pub fn goes_left(&self, node: usize, value: f32) -> bool {
        let default_left = self.default_left[node];
        if !self.categorical.is_empty() {
            if let Some(set) = self.categorical.set(node) {
                let word = |i: u32| set[i as usize];
                return boost_kernels::predict::category_bits_go_left(value, default_left, set.len() as u32, word);
            }
        }
        boost_kernels::predict::goes_left(value, self.split_conditions[node], default_left)
    }

    /// The leaf a row reaches; `value(feature)` gives the row's value (NaN = missing).
    #[inline]
    pub fn leaf_index(&self, value: impl Fn(usize) -> f32) -> usize {
        let mut node = 0usize;
        while self.left_children[node] != -1 {
            let left = self.goes_left(node, value(self.split_indices[node] as usize));
            node = if left { self.left_children[node] } else { self.right_children[node] } as usize;
        }
        node
    }

    /// The leaf value a dense row (NaN = missing) reaches.
    #[inline]
    pub fn predict_row(&self, row: &[f32]) -> f32 {
        self.split_conditions[self.leaf_index(|f| row.get(f).copied().unwrap_or(f32::NAN))]
    }

    /// Depth of the deepest leaf (a single leaf has depth 0).
    pub fn max_depth(&self) -> usize {
        let mut depth = vec![0usize; self.len()];
        let mut max = 0;
        for n in 1..self.len() {
            depth[n] = depth[self.parents[n] as usize] + 1;
            max = max.max(depth[n]);
        }
        max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_route_rows_with_missing_values() {
        let mut tree = Tree::leaf(0.0, 10.0);
        let (l, r) = tree.split(0, 1, 0.5, true, 3.0, (-1.0, 4.0), (2.0, 6.0));
        assert_eq!((l, r), (1, 2));
        assert_eq!(tree.predict_row(&[9.0, 0.25]), -1.0);
        assert_eq!(tree.predict_row(&[9.0, 0.5]), 2.0, "equal to the threshold goes right");
        assert_eq!(tree.predict_row(&[9.0, f32::NAN]), -1.0, "missing goes to the default side");
        let (ll, _) = tree.split(l, 0, -3.0, false, 1.0, (-5.0, 1.0), (-0.5, 3.0));
        assert_eq!(tree.predict_row(&[-4.0, 0.0]), -5.0);
        assert_eq!(tree.predict_row(&[f32::NAN, 0.0]), -0.5);
        assert_eq!(tree.parents, vec![NO_PARENT, 0, 0, 1, 1]);
        assert_eq!(tree.max_depth(), 2);
        assert!(tree.is_leaf(ll));
    }

    #[test]
    fn categorical_splits_are_kept_in_node_order() {
        let mut tree = Tree::leaf(0.0, 10.0);
        let set = |list: &[u32]| CategoricalSplits::from_lists(vec![0], &[list]).sets.remove(0);
        let (l, r) = tree.split_categorical(0, 0, set(&[1, 4]), false, 3.0, (-1.0, 4.0), (2.0, 6.0));
        // Lossguide may split a later node first.
        tree.split_categorical(r, 1, set(&[0]), true, 1.0, (0.5, 3.0), (1.5, 3.0));
        tree.split_categorical(l, 1, set(&[2, 3, 40]), false, 1.0, (0.5, 2.0), (1.5, 2.0));
        let c = &tree.categorical;
        assert_eq!((&c.nodes[..], c.sizes()), (&[0, 1, 2][..], vec![2, 3, 1]));
        assert_eq!(c.categories(1), Some(vec![2, 3, 40]));
        assert_eq!(c.sets[1].len(), 2, "words up to the largest category");
        assert_eq!(members(&[0b1001, 0, 1 << 31]), vec![0, 3, 95]);
        assert_eq!(tree.predict_row(&[4.0, 3.0]), 0.5, "category 4 right, then 3 left");
        assert_eq!(tree.predict_row(&[0.0, 2.0]), 1.5, "category 0 left, then 2 right");
        assert_eq!(tree.predict_row(&[7.0, f32::NAN]), 1.5, "unseen category left, missing to its default");
        assert_eq!(tree.split_conditions[0].to_bits(), 1, "XGBoost's placeholder condition");
    }
}
