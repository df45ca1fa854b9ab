//! The expansion driver of the `hist` method, shared by the CPU and the GPU backends: which nodes
//! are split and in what order (depthwise: a level at a time; lossguide: the best loss change
//! first; oblivious trees in [`super::oblivious`]), `max_depth` and `max_leaves`, column sampling by tree, level and node (every random draw
//! on this thread, in node order), node ids, leaf values and the tree's arrays. What is
//! data-parallel (gradient sums, histograms with the subtraction trick, split evaluation, row
//! partitions) is the backend's ([`GrowBackend`]), a batch of nodes per call so that a GPU backend
//! launches once per batch.

use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};

use boost_kernels::split::{calc_gain, calc_weight, gain_given_weight, leaf_value, Bounds, GradientSum, Parent, Split};
use rand::seq::SliceRandom;
use rand::Rng;
use rayon::prelude::*;

use crate::fixed_point::GradientQuantiser;
use crate::param::{GrowPolicy, TreeParams};
use crate::tree::constraints::{extend_path, Interactions};
use crate::tree::Tree;

/// A node being split: its id, its split, and its children's ids.
#[derive(Clone, Debug)]
pub struct Expansion<S> {
    /// The node split.
    pub node: usize,
    /// Its split.
    pub split: Split<S>,
    /// Its left child's id.
    pub left: usize,
    /// Its right child's id.
    pub right: usize,
    /// A categorical split's categories going right, a bitset over its feature's bins
    /// (`boost_kernels::categorical::CategorySet`); empty for a numeric split.
    pub categories: Vec<u32>,
}

/// A node whose best split a backend finds ([`GrowBackend::evaluate`]).
#[derive(Clone, Debug)]
pub struct SplitRequest<S> {
    /// The node's id.
    pub node: usize,
    /// Its gradient sum.
    pub sum: S,
    /// Its gain and the bounds of its children's weights (`monotone` 0: each feature's is in
    /// `monotone`).
    pub parent: Parent,
    /// The features its split may use, increasing.
    pub features: Vec<u32>,
    /// Each of `features`' monotone direction (1 increasing, -1 decreasing, 0 none); empty when the
    /// run has no monotone constraints.
    pub monotone: Vec<i32>,
}

impl<S> SplitRequest<S> {
    /// The node as the parent of candidates on `features[k]`.
    #[inline]
    pub fn parent_of(&self, k: usize) -> Parent {
        self.parent.with_monotone(self.monotone.get(k).copied().unwrap_or(0))
    }
}

/// Children whose histograms a batch needs: the smaller one's built from its rows, the other's as
/// the parent's minus it (the subtraction trick); which is smaller is the backend's to tell
/// ([`boost_kernels::partition::build_left`]), since it holds the rows.
#[derive(Clone, Copy, Debug)]
pub struct ChildHistograms {
    /// The left child's id.
    pub left: usize,
    /// The right child's id.
    pub right: usize,
    /// Their parent's id.
    pub parent: usize,
}

/// Rows grouped by node: one array of row indices in which each node's rows are a range, kept so
/// by stable partitions (a node's rows stay in increasing order). Both backends keep one.
pub struct RowOrder {
    /// Row indices, each node's a range.
    pub rows: Vec<u32>,
    ranges: Vec<(usize, usize)>,
}

impl RowOrder {
    /// Every one of `n` rows in the root.
    pub fn new(n: usize) -> Self {
        RowOrder { rows: (0..n as u32).into_par_iter().collect(), ranges: vec![(0, n)] }
    }

    /// The root's range of `n` rows without the rows themselves: for a backend that keeps them
    /// elsewhere (the GPU's on the device) and fills [`RowOrder::rows`] only when it needs
    /// [`RowOrder::positions`].
    pub fn ranges_only(n: usize) -> Self {
        RowOrder { rows: Vec::new(), ranges: vec![(0, n)] }
    }

    /// Node `node`'s rows are `rows[begin..end]`.
    pub fn range(&self, node: usize) -> (usize, usize) {
        self.ranges[node]
    }

    /// Nodes with a range so far (ids below this).
    pub fn nodes(&self) -> usize {
        self.ranges.len()
    }

    /// The rows of `node`, in increasing order.
    pub fn node_rows(&self, node: usize) -> &[u32] {
        let (begin, end) = self.ranges[node];
        &self.rows[begin..end]
    }

    /// Records the children's ranges once each expanded node's rows are partitioned, `lefts[i]`
    /// of `expanded[i]`'s going left.
    pub fn split<S>(&mut self, expanded: &[Expansion<S>], lefts: &[usize]) {
        for (e, &n_left) in expanded.iter().zip(lefts) {
            let (begin, end) = self.ranges[e.node];
            let last = e.left.max(e.right);
            if self.ranges.len() <= last {
                self.ranges.resize(last + 1, (0, 0));
            }
            self.ranges[e.left] = (begin, begin + n_left);
            self.ranges[e.right] = (begin + n_left, end);
        }
    }

    /// The leaf each row ended in, once `tree` is grown.
    pub fn positions(&self, tree: &Tree) -> Vec<u32> {
        // Every row is in exactly one leaf's range: each slot is written once, in parallel.
        let positions: Vec<AtomicU32> = (0..self.rows.len()).into_par_iter().map(|_| AtomicU32::new(0)).collect();
        self.ranges.par_iter().enumerate().filter(|&(id, _)| tree.is_leaf(id)).for_each(|(id, &(begin, end))| {
            self.rows[begin..end]
                .par_iter()
                .for_each(|&row| positions[row as usize].store(id as u32, Ordering::Relaxed));
        });
        positions.into_par_iter().map(AtomicU32::into_inner).collect()
    }
}

/// Moves the rows whose flag is set to the front, keeping the order within both parts (a stable
/// partition); returns how many went to the front.
pub fn stable_partition(rows: &mut [u32], goes_left: &[bool]) -> usize {
    let mut right = Vec::with_capacity(rows.len());
    let mut n_left = 0;
    for i in 0..rows.len() {
        if goes_left[i] {
            rows[n_left] = rows[i];
            n_left += 1;
        } else {
            right.push(rows[i]);
        }
    }
    rows[n_left..].copy_from_slice(&right);
    n_left
}

/// The data-parallel steps of growing one tree. Nodes are named by the driver's ids (the tree's);
/// the backend holds their rows and histograms.
pub trait GrowBackend<S: GradientSum> {
    /// What a step can fail with (`Infallible` on the CPU; device errors on the GPU).
    type Error;
    /// The sum of every row's gradient (the root's).
    fn total(&mut self) -> Result<S, Self::Error>;
    /// Builds the root's histogram (node 0, every row).
    fn root_histogram(&mut self) -> Result<(), Self::Error>;
    /// Splits the rows of each expanded node between its children (stably: rows keep their order).
    /// The driver never asks how many went where, so a GPU backend need not wait for the counts.
    fn partition(&mut self, expanded: &[Expansion<S>]) -> Result<(), Self::Error>;
    /// Builds the histograms of these children and releases their parents'. A batch's children
    /// are all its expansions' or none (they share a depth).
    fn children_histograms(&mut self, children: &[ChildHistograms]) -> Result<(), Self::Error>;
    /// The best split of each node over its features, if one passes the limits.
    fn evaluate(&mut self, nodes: &[SplitRequest<S>]) -> Result<Vec<Option<Split<S>>>, Self::Error>;
    /// The split of every node of an oblivious tree's level (`nodes`: id and gradient sum, in
    /// order) over `features` (increasing): one feature, threshold and missing direction for all
    /// (`boost_kernels::oblivious`), with each node's children's sums and its own loss change;
    /// `None` when no candidate passes the limits.
    fn evaluate_level(&mut self, nodes: &[(usize, S)], features: &[u32]) -> Result<Option<Vec<Split<S>>>, Self::Error>;
    /// Drops a node's histogram: it will not be split.
    fn release(&mut self, node: usize);
    /// The categories a categorical split of `node` (found by [`GrowBackend::evaluate`]) sends
    /// right, as a bitset over its feature's bins; asked before the node is partitioned, while its
    /// histogram is kept. Only backends whose setup takes categorical features are asked.
    fn categories(&mut self, node: usize, split: &Split<S>) -> Result<Vec<u32>, Self::Error> {
        let _ = (node, split);
        unreachable!("this backend's setup refuses categorical features")
    }
}

/// A node waiting to be split.
struct Candidate<S> {
    node: usize,
    split: Split<S>,
}

impl<S> PartialEq for Candidate<S> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl<S> Eq for Candidate<S> {}
impl<S> PartialOrd for Candidate<S> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<S> Ord for Candidate<S> {
    /// Lossguide's order: larger loss change first, then the lower node id.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.split.loss_chg.total_cmp(&other.split.loss_chg).then(other.node.cmp(&self.node))
    }
}

/// Column sampling: `colsample_bytree`, then `bylevel`, then `bynode`, each a fraction of the set
/// above it (at least one feature), drawn with the builder's random generator. With `weights` (one
/// a feature of the data, XGBoost's `feature_weights`; empty: uniform), the features of the
/// largest keys `ln(u) / w` (Efraimidis and Spirakis' weighted sampling without replacement,
/// XGBoost's `WeightedSamplingWithoutReplacement`, a weight below 1e-6 taken as 1e-6).
pub(crate) fn sample(features: &[u32], fraction: f32, weights: &[f32], rng: &mut (impl Rng + ?Sized)) -> Vec<u32> {
    if fraction >= 1.0 {
        return features.to_vec();
    }
    let n = ((features.len() as f64 * fraction as f64) as usize).max(1);
    if !weights.is_empty() {
        let mut keyed: Vec<(f32, u32)> = features
            .iter()
            .map(|&f| {
                let u: f32 = 1.0 - rng.gen::<f32>();
                (u.ln() / weights[f as usize].max(1e-6), f)
            })
            .collect();
        // Largest keys first; equal keys by feature.
        keyed.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut chosen: Vec<u32> = keyed[..n].iter().map(|&(_, f)| f).collect();
        chosen.sort_unstable();
        return chosen;
    }
    let mut chosen: Vec<u32> = features.choose_multiple(rng, n).copied().collect();
    chosen.sort_unstable();
    chosen
}

/// Splits `node` of `tree` (gradient sum `sum`, children's weights clipped to `bounds`) by `split`:
/// its children become leaves of their sums' values, and the node keeps its own weight without
/// `eta`, as XGBoost writes it. A categorical split's categories are its bitset's (`categories`,
/// empty for a numeric split). Returns the expansion and the children's clipped weights.
pub(crate) fn split_node<S: GradientSum>(
    tree: &mut Tree,
    (node, sum, bounds): (usize, S, Bounds),
    split: Split<S>,
    categories: Vec<u32>,
    params: &TreeParams,
    quantiser: &GradientQuantiser,
) -> (Expansion<S>, (f32, f32)) {
    let sp = params.split();
    let weight = |s: S| {
        let s = s.to_float(quantiser);
        (bounds.clip(calc_weight(&sp, s.grad, s.hess) as f32), s.hess as f32)
    };
    let ((wl, hl), (wr, hr), (own, _)) = (weight(split.left), weight(split.right), weight(sum));
    let (left, right) = ((wl * sp.eta, hl), (wr * sp.eta, hr));
    let (f, loss, default_left) = (split.feature, split.loss_chg, split.default_left);
    let (left, right) = if split.kind.is_categorical() {
        tree.split_categorical(node, f, categories.clone(), default_left, loss, left, right)
    } else {
        tree.split(node, f, split.threshold, default_left, loss, left, right)
    };
    tree.base_weights[node] = own;
    (Expansion { node, split, left, right, categories }, (wl, wr))
}

/// What the driver knows of a node: its sum and depth, its gain, the bounds of its children's
/// weights (monotone constraints) and the features on its path (interaction constraints).
struct NodeState<S> {
    sum: S,
    depth: u32,
    gain: f32,
    bounds: Bounds,
    path: Vec<u32>,
}

/// Grows one tree over `features` (the tree's sampled columns) with `backend`, drawing the level
/// and node column samples from `rng`.
pub fn grow<S: GradientSum, B: GrowBackend<S>>(
    backend: &mut B,
    params: &TreeParams,
    quantiser: &GradientQuantiser,
    features: &[u32],
    rows: usize,
    rng: &mut impl Rng,
) -> Result<Tree, B::Error> {
    if params.grow_policy == GrowPolicy::Oblivious {
        return super::oblivious::grow(backend, params, quantiser, features, rows, rng);
    }
    let p = params;
    let sp = params.split();
    let to_f = |s: S| s.to_float(quantiser);
    let total = backend.total()?;
    let root = to_f(total);
    let mut tree = Tree::leaf(leaf_value(&sp, root.grad, root.hess), root.hess as f32);
    let gain = calc_gain(&sp, root.grad, root.hess);
    let mut nodes = vec![NodeState { sum: total, depth: 0, gain, bounds: Bounds::NONE, path: Vec::new() }];
    let interactions = Interactions::new(&p.interaction_constraints);
    // A node's request: its sampled features less those its path's interaction constraints forbid.
    let request = |node: usize, state: &NodeState<S>, mut features: Vec<u32>| {
        if !interactions.is_empty() && !state.path.is_empty() {
            let allowed = interactions.allowed(&state.path);
            features.retain(|f| allowed.binary_search(f).is_ok());
        }
        let monotone = if p.monotone_constraints.is_empty() {
            Vec::new()
        } else {
            features.iter().map(|&f| p.monotone(f)).collect()
        };
        let parent = Parent { gain: state.gain, bounds: state.bounds, monotone: 0 };
        SplitRequest { node, sum: state.sum, parent, features, monotone }
    };
    let mut level_features: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut level_sample = |depth: u32, rng: &mut dyn rand::RngCore| -> Vec<u32> {
        if let Some((_, f)) = level_features.iter().find(|(d, _)| *d == depth) {
            return f.clone();
        }
        let f = sample(features, p.colsample_bylevel, &p.feature_weights, rng);
        level_features.push((depth, f.clone()));
        f
    };
    let can_split = |depth: u32| p.max_depth == 0 || depth < p.max_depth;
    let mut fifo: VecDeque<Candidate<S>> = VecDeque::new();
    let mut heap: BinaryHeap<Candidate<S>> = BinaryHeap::new();
    let push =
        |c: Candidate<S>, fifo: &mut VecDeque<Candidate<S>>, heap: &mut BinaryHeap<Candidate<S>>| match p.grow_policy {
            GrowPolicy::Depthwise | GrowPolicy::Oblivious => fifo.push_back(c),
            GrowPolicy::Lossguide => heap.push(c),
        };

    if can_split(0) && rows > 0 {
        backend.root_histogram()?;
        let node_features = sample(&level_sample(0, rng), p.colsample_bynode, &p.feature_weights, rng);
        match backend.evaluate(&[request(0, &nodes[0], node_features)])?.pop().flatten() {
            Some(split) => push(Candidate { node: 0, split }, &mut fifo, &mut heap),
            None => backend.release(0),
        }
    }
    let mut leaves = 1u32;
    loop {
        // The next batch: depthwise, every queued node (one level, in node order); lossguide, the
        // best one. A batch's splits, node ids and random draws happen in the same order as one
        // node at a time.
        let batch: Vec<Candidate<S>> = match p.grow_policy {
            GrowPolicy::Depthwise | GrowPolicy::Oblivious => fifo.drain(..).collect(),
            GrowPolicy::Lossguide => heap.pop().into_iter().collect(),
        };
        if batch.is_empty() {
            break;
        }
        let mut expanded: Vec<Expansion<S>> = Vec::with_capacity(batch.len());
        let mut weights_of: Vec<(f32, f32)> = Vec::with_capacity(batch.len());
        for Candidate { node, split } in batch {
            if p.max_leaves > 0 && leaves >= p.max_leaves {
                backend.release(node);
                continue;
            }
            leaves += 1;
            let categories = if split.kind.is_categorical() { backend.categories(node, &split)? } else { Vec::new() };
            let n = &nodes[node];
            let (e, weights) = split_node(&mut tree, (node, n.sum, n.bounds), split, categories, params, quantiser);
            expanded.push(e);
            weights_of.push(weights);
        }
        if expanded.is_empty() {
            continue;
        }
        backend.partition(&expanded)?;
        for (e, &(wl, wr)) in expanded.iter().zip(&weights_of) {
            // XGBoost's hist: the children's bounds from the split, their gains within the
            // node's bounds.
            let parent = &nodes[e.node];
            let (depth, bounds, f) = (parent.depth + 1, parent.bounds, e.split.feature);
            let (left_bounds, right_bounds) = bounds.children(p.monotone(f), wl, wr);
            let path = if interactions.is_empty() { Vec::new() } else { extend_path(&parent.path, f) };
            let gain = |s: S| {
                let s = to_f(s);
                gain_given_weight(&sp, s.grad, s.hess, bounds.clip(calc_weight(&sp, s.grad, s.hess) as f32))
            };
            let (left, right) = (e.split.left, e.split.right);
            let left = NodeState { sum: left, depth, gain: gain(left), bounds: left_bounds, path: path.clone() };
            let right = NodeState { sum: right, depth, gain: gain(right), bounds: right_bounds, path };
            nodes.extend([left, right]);
        }
        let mut children = Vec::new();
        for e in &expanded {
            if can_split(nodes[e.left].depth) {
                children.push(ChildHistograms { left: e.left, right: e.right, parent: e.node });
            } else {
                backend.release(e.node);
            }
        }
        backend.children_histograms(&children)?;
        // Column samples in node order (the generator's draws do not depend on the threads).
        let mut to_evaluate: Vec<SplitRequest<S>> = Vec::new();
        for e in &expanded {
            let depth = nodes[e.left].depth;
            if !can_split(depth) {
                continue;
            }
            let level = level_sample(depth, rng);
            for child in [e.left, e.right] {
                let features = sample(&level, p.colsample_bynode, &p.feature_weights, rng);
                to_evaluate.push(request(child, &nodes[child], features));
            }
        }
        let splits = backend.evaluate(&to_evaluate)?;
        for (SplitRequest { node: child, .. }, split) in to_evaluate.into_iter().zip(splits) {
            match split {
                Some(split) => push(Candidate { node: child, split }, &mut fifo, &mut heap),
                None => backend.release(child),
            }
        }
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::sample;

    /// Weighted column sampling draws one feature of several with chance proportional to its
    /// weight (Efraimidis and Spirakis), never a weightless one while others remain, and the
    /// uniform sampler without weights.
    #[test]
    fn feature_weights_set_the_chance_of_a_feature() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (features, weights) = ([0u32, 1, 2, 3], [0.0f32, 1.0, 2.0, 5.0]);
        let mut counts = [0usize; 4];
        let draws = 20_000;
        for _ in 0..draws {
            counts[sample(&features, 0.25, &weights, &mut rng)[0] as usize] += 1;
        }
        assert_eq!(counts[0], 0, "a weightless feature while others remain");
        for f in 1..4 {
            let expected = draws as f64 * weights[f] as f64 / 8.0;
            assert!((counts[f] as f64 - expected).abs() < 4.0 * expected.sqrt(), "{counts:?}");
        }
        let half = sample(&features, 0.5, &weights, &mut rng);
        assert!(half.len() == 2 && !half.contains(&0) && half.is_sorted());
        assert_eq!(sample(&features, 1.0, &weights, &mut rng), features);
        assert_eq!(sample(&features, 0.75, &[], &mut rng).len(), 3);
    }
}
