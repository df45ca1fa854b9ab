//! XGBoost's `exact` tree method on the CPU (its `ColMaker`), the reference of the GPU's: each
//! feature's present values sorted once ([`SortedColumns`]), then a level at a time every feature's
//! column is walked once for all the level's nodes, each node enumerating the boundaries between
//! its distinct values in both missing directions (`boost_kernels::exact`, shared with the
//! kernels). Rows know their node by a position array, updated after each level from the split
//! features' columns (missing values to the default side first), as XGBoost does.
//!
//! Sums are fixed point, so the trees do not depend on the thread count and the GPU's equal them.
//! `gamma` is applied when a node is split (as `hist` does), not by XGBoost's later `prune` pass,
//! which can keep a low-gain split above a high-gain one.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use boost_kernels::exact::{from_total_order_bits, total_order_bits, Enumeration, NodeFeature};
use boost_kernels::split::{self, GradientSum, Split};
use primitives::ops::GradientPair;
use rand::Rng;
use rayon::prelude::*;

use crate::data::FeatureMatrix;
use crate::fixed_point::GradientQuantiser;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::tree::grow::{self, ChildHistograms, Expansion, GrowBackend, SplitRequest};
use crate::tree::hist::BuiltTree;

/// Fixed-point gradient sums.
type Sum = GradientPair<i64>;

/// Each feature's present values in increasing order with their rows (XGBoost's `SortedCSCPage`):
/// feature `f`'s are `values[offsets[f]..offsets[f + 1]]`.
#[derive(Clone, Debug)]
pub struct SortedColumns {
    /// `features + 1` offsets.
    pub offsets: Vec<usize>,
    /// The values, each feature's increasing (equal values by row).
    pub values: Vec<f32>,
    /// Each value's row.
    pub rows: Vec<u32>,
    /// Whether a feature is enumerated forward too (XGBoost's `NeedForwardSearch`): some rows miss
    /// it and it has two distinct values.
    pub forward: Vec<bool>,
}

impl SortedColumns {
    /// The columns of `features`, sorted in parallel: each value's key is its total-order bits
    /// above its row, so an unstable sort of the keys leaves equal values by row.
    pub fn new(features: &FeatureMatrix) -> Self {
        let (n, cols) = (features.rows(), features.cols());
        let key = |v: f32, row: usize| ((total_order_bits(v) as u64) << 32) | row as u64;
        let columns: Vec<Vec<u64>> = match features {
            FeatureMatrix::Dense(m) => (0..cols)
                .into_par_iter()
                .map(|f| {
                    let mut keys: Vec<u64> = (0..n)
                        .map(|r| (m.values[r * cols + f], r))
                        .filter(|(v, _)| !v.is_nan())
                        .map(|(v, r)| key(v, r))
                        .collect();
                    keys.sort_unstable();
                    keys
                })
                .collect(),
            FeatureMatrix::Sparse(_) => {
                let mut columns = vec![Vec::new(); cols];
                for i in 0..n {
                    features.for_each_present(i, |j, v| columns[j].push(key(v, i)));
                }
                columns.par_iter_mut().for_each(|c| c.sort_unstable());
                columns
            }
        };
        let mut offsets = Vec::with_capacity(cols + 1);
        offsets.push(0);
        for c in &columns {
            offsets.push(offsets.last().unwrap() + c.len());
        }
        let value = |k: u64| from_total_order_bits((k >> 32) as u32);
        let forward = columns
            .iter()
            .map(|c| c.len() < n && c.first().zip(c.last()).is_some_and(|(&a, &b)| value(a) != value(b)))
            .collect();
        let values = columns.par_iter().flat_map_iter(|c| c.iter().map(|&k| value(k))).collect();
        let rows = columns.par_iter().flat_map_iter(|c| c.iter().map(|&k| k as u32)).collect();
        SortedColumns { offsets, values, rows, forward }
    }

    /// Features.
    pub fn features(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Feature `f`'s values and rows.
    pub fn column(&self, f: usize) -> (&[f32], &[u32]) {
        let r = self.offsets[f]..self.offsets[f + 1];
        (&self.values[r.clone()], &self.rows[r])
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.values.len() * 8 + self.offsets.len() * 8 + self.forward.len()
    }
}

/// Builds one tree from fixed-point gradients (one per row) with the exact method.
pub struct ExactBuilder<'a> {
    /// The training rows' sorted columns.
    pub columns: &'a SortedColumns,
    /// The tree parameters.
    pub params: &'a TreeParams,
    /// Converts fixed-point sums to floats.
    pub quantiser: &'a GradientQuantiser,
}

impl ExactBuilder<'_> {
    /// Grows a tree over `features` (the tree's sampled columns) with the shared expansion driver
    /// ([`grow::grow`]), drawing further column samples from `rng`.
    pub fn build(&self, gradients: &[Sum], features: &[u32], rng: &mut impl Rng) -> BuiltTree {
        let rows = gradients.len();
        let mut phases = PhaseTimes::default();
        // The gradients in the columns' order, so that the walks read them in sequence.
        let by_entry = phases.time("tree: gradients by entry", || {
            self.columns.rows.par_iter().with_min_len(1 << 14).map(|&r| gradients[r as usize]).collect()
        });
        let mut backend = ExactBackend { builder: self, gradients, by_entry, positions: vec![0; rows], phases };
        let tree = match grow::grow(&mut backend, self.params, self.quantiser, features, rows, rng) {
            Ok(tree) => tree,
            Err(never) => match never {},
        };
        BuiltTree { tree, positions: backend.positions, phases: backend.phases }
    }

    /// The best split of each node of `nodes` (id, sums, gain and bounds, features), the rows at
    /// `positions`, found by walking each feature's column once for all of them; `gradients` in
    /// the columns' order.
    fn evaluate(&self, gradients: &[Sum], nodes: &[SplitRequest<Sum>], positions: &[u32]) -> Vec<Option<Split<Sum>>> {
        let p = self.params.split();
        let mut slot_of = vec![u32::MAX; nodes.iter().map(|n| n.node + 1).max().unwrap_or(0)];
        for (slot, n) in nodes.iter().enumerate() {
            slot_of[n.node] = slot as u32;
        }
        let mut features: Vec<u32> = nodes.iter().flat_map(|n| n.features.iter().copied()).collect();
        features.sort_unstable();
        features.dedup();
        let context = Walk {
            gradients,
            nodes,
            slot_of: &slot_of,
            positions,
            params: &p,
            quantiser: self.quantiser,
        };
        let per_feature: Vec<Vec<Option<Split<Sum>>>> =
            features.par_iter().map(|&f| self.walk_feature(f, &context)).collect();
        // Features in increasing order: ties keep the lower index.
        (0..nodes.len())
            .map(|slot| {
                let mut best: Option<Split<Sum>> = None;
                for s in per_feature.iter().filter_map(|f| f[slot]) {
                    if split::replaces(&s, best.as_ref()) {
                        best = Some(s);
                    }
                }
                best.filter(|b| split::is_valid(b, &p))
            })
            .collect()
    }

    /// Feature `f`'s best split for every node of the walk (`None` where a node does not sample it
    /// or has no candidate): forward when the feature calls for it, then backward.
    fn walk_feature(&self, f: u32, w: &Walk<'_>) -> Vec<Option<Split<Sum>>> {
        // A node id's slot where that node samples `f`, else none: one lookup an entry.
        let mut slot_for = vec![u32::MAX; w.slot_of.len()];
        for (slot, node) in w.nodes.iter().enumerate() {
            if node.features.binary_search(&f).is_ok() {
                slot_for[node.node] = slot as u32;
            }
        }
        let range = self.columns.offsets[f as usize]..self.columns.offsets[f as usize + 1];
        let (values, rows, gradients) =
            (&self.columns.values[range.clone()], &self.columns.rows[range.clone()], &w.gradients[range]);
        let mut scans = vec![Enumeration::<Sum>::START; w.nodes.len()];
        let mut pass = |missing_left: bool| {
            let context: Vec<NodeFeature<'_, Sum>> = w
                .nodes
                .iter()
                .map(|n| NodeFeature {
                    node: n.sum,
                    parent: n.parent.with_monotone(self.params.monotone(f)),
                    feature: f,
                    missing_left,
                    params: w.params,
                    quantiser: w.quantiser,
                })
                .collect();
            let mut take = |i: usize, slot: u32| {
                if slot != u32::MAX {
                    scans[slot as usize].take(values[i], gradients[i], &context[slot as usize]);
                }
            };
            // The rows' nodes are scattered: look a block's up first, so that their loads overlap
            // (XGBoost's `kBuffer`), then walk the block.
            let slot = |i: usize| slot_for.get(w.positions[rows[i] as usize] as usize).copied().unwrap_or(u32::MAX);
            let n = values.len();
            let mut block = [u32::MAX; LOOKAHEAD];
            for start in (0..n).step_by(LOOKAHEAD) {
                let len = LOOKAHEAD.min(n - start);
                for (k, b) in block[..len].iter_mut().enumerate() {
                    *b = slot(if missing_left { n - 1 - (start + k) } else { start + k });
                }
                for (k, &s) in block[..len].iter().enumerate() {
                    take(if missing_left { n - 1 - (start + k) } else { start + k }, s);
                }
            }
            for (slot, scan) in scans.iter_mut().enumerate() {
                if slot_for[w.nodes[slot].node] != u32::MAX {
                    scan.finish(&context[slot]);
                }
            }
        };
        if self.columns.forward[f as usize] {
            pass(false);
        }
        pass(true);
        scans.into_iter().map(|s| s.best).collect()
    }
}

/// Entries whose rows' nodes are looked up ahead of their walk.
const LOOKAHEAD: usize = 32;

/// What a level's walk over the features shares.
struct Walk<'a> {
    /// Each entry's gradient, in the columns' order.
    gradients: &'a [Sum],
    nodes: &'a [SplitRequest<Sum>],
    slot_of: &'a [u32],
    positions: &'a [u32],
    params: &'a split::SplitParams,
    quantiser: &'a GradientQuantiser,
}

/// The exact method as the expansion driver's backend: node positions of the rows; no histograms.
struct ExactBackend<'a, 'b> {
    builder: &'b ExactBuilder<'a>,
    gradients: &'b [Sum],
    /// `gradients` in the columns' order.
    by_entry: Vec<Sum>,
    positions: Vec<u32>,
    phases: PhaseTimes,
}

impl GrowBackend<Sum> for ExactBackend<'_, '_> {
    type Error = Infallible;

    fn total(&mut self) -> Result<Sum, Infallible> {
        // Fixed-point addition is exact: any order gives these bits.
        Ok(self.gradients.par_iter().copied().reduce(|| Sum::ZERO, Sum::add))
    }

    fn root_histogram(&mut self) -> Result<(), Infallible> {
        Ok(())
    }

    /// Rows of a split node first go to its default side, then the split feature's column sends
    /// its present values by the threshold (XGBoost's `ResetPosition`).
    fn partition(&mut self, expanded: &[Expansion<Sum>]) -> Result<(), Infallible> {
        let start = Instant::now();
        let mut plan: Vec<Option<&Expansion<Sum>>> = vec![None; expanded.iter().map(|e| e.node + 1).max().unwrap_or(0)];
        for e in expanded {
            plan[e.node] = Some(e);
        }
        let split_of = |node: u32| plan.get(node as usize).copied().flatten();
        let old = &self.positions;
        let new: Vec<AtomicU32> = old
            .par_iter()
            .map(|&node| {
                AtomicU32::new(match split_of(node) {
                    Some(e) if e.split.default_left => e.left as u32,
                    Some(e) => e.right as u32,
                    None => node,
                })
            })
            .collect();
        let mut features: Vec<u32> = expanded.iter().map(|e| e.split.feature).collect();
        features.sort_unstable();
        features.dedup();
        for f in features {
            let (values, rows) = self.builder.columns.column(f as usize);
            // A row appears once in a column: each slot is written by one entry at most.
            values.par_iter().zip(rows).with_min_len(1 << 12).for_each(|(&v, &row)| {
                if let Some(e) = split_of(old[row as usize]).filter(|e| e.split.feature == f) {
                    let child = if v < e.split.threshold { e.left } else { e.right };
                    new[row as usize].store(child as u32, Ordering::Relaxed);
                }
            });
        }
        self.positions = new.into_par_iter().map(AtomicU32::into_inner).collect();
        self.phases.add("tree: positions", start.elapsed());
        Ok(())
    }

    fn children_histograms(&mut self, _children: &[ChildHistograms]) -> Result<(), Infallible> {
        Ok(())
    }

    fn evaluate(&mut self, nodes: &[SplitRequest<Sum>]) -> Result<Vec<Option<Split<Sum>>>, Infallible> {
        let start = Instant::now();
        let splits = self.builder.evaluate(&self.by_entry, nodes, &self.positions);
        self.phases.add("tree: evaluation", start.elapsed());
        Ok(splits)
    }

    /// Oblivious trees are grown from histograms: the parameters refuse them with `exact`.
    fn evaluate_level(
        &mut self,
        _nodes: &[(usize, Sum)],
        _features: &[u32],
    ) -> Result<Option<Vec<Split<Sum>>>, Infallible> {
        Ok(None)
    }

    fn release(&mut self, _node: usize) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseMatrix;
    use crate::fixed_point::quantise;
    use boost_kernels::split::{calc_gain, candidate_loss};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Rows with few distinct values (ties), missing values in two of four columns, one column
    /// constant where present.
    fn data(n: usize, seed: u64) -> (FeatureMatrix, Vec<GradientPair<f32>>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut values = Vec::with_capacity(n * 4);
        let mut gradients = Vec::with_capacity(n);
        for _ in 0..n {
            let a = rng.gen_range(0..12) as f32 * 0.5 - 2.0;
            let b = if rng.gen_bool(0.3) { f32::NAN } else { rng.gen_range(-3..4) as f32 };
            let c = if rng.gen_bool(0.2) { f32::NAN } else { 7.0 };
            let d: f32 = rng.gen_range(-1.0..1.0);
            values.extend([a, b, c, d]);
            let signal = if a > 0.7 { 1.0 } else { -0.5 } + if b.is_nan() { 0.8 } else { 0.0 } + d;
            gradients.push(GradientPair::new(signal + rng.gen_range(-0.3..0.3), rng.gen_range(0.5..1.5)));
        }
        (FeatureMatrix::Dense(DenseMatrix::new(n, 4, values)), gradients)
    }

    /// The largest loss change over every way one feature, a threshold and a missing side can split
    /// `rows` (their actual partitions, summed here), and a split reaching it.
    fn brute_force(
        x: &FeatureMatrix,
        g: &[Sum],
        rows: &[usize],
        p: &split::SplitParams,
        q: &GradientQuantiser,
    ) -> Option<f32> {
        let FeatureMatrix::Dense(m) = x else { unreachable!() };
        let node = rows.iter().fold(Sum::ZERO, |a, &r| Sum::add(a, g[r]));
        let t = node.to_float(q);
        let parent_gain = calc_gain(p, t.grad, t.hess);
        let mut best: Option<f32> = None;
        for f in 0..m.cols {
            let mut distinct: Vec<f32> = rows.iter().map(|&r| m.row(r)[f]).filter(|v| !v.is_nan()).collect();
            distinct.sort_by(f32::total_cmp);
            distinct.dedup();
            let mut thresholds: Vec<f32> = distinct.windows(2).map(|w| (w[0] + w[1]) * 0.5).collect();
            if let (Some(&lo), Some(&hi)) = (distinct.first(), distinct.last()) {
                thresholds.extend([lo - 1.0, hi + 1.0]);
            }
            for &threshold in &thresholds {
                for missing_left in [false, true] {
                    let left = rows
                        .iter()
                        .filter(|&&r| {
                            let v = m.row(r)[f];
                            if v.is_nan() {
                                missing_left
                            } else {
                                v < threshold
                            }
                        })
                        .fold(Sum::ZERO, |a, &r| Sum::add(a, g[r]));
                    let right = Sum::sub(node, left);
                    if let Some(loss) = candidate_loss(left, right, &split::Parent::unconstrained(parent_gain), p, q) {
                        if left.has_hessian() && right.has_hessian() {
                            best = Some(best.map_or(loss, |b| b.max(loss)));
                        }
                    }
                }
            }
        }
        best
    }

    /// Every split of a grown tree has the largest loss change any split of its rows has, its
    /// children's sums are its rows' sums on each side of the stored threshold, and every leaf
    /// above the depth limit has no split worth making; the positions are the tree's leaves.
    #[test]
    fn exact_trees_are_the_brute_force_enumeration() {
        for (seed, depth, min_child_weight) in [(1, 1, 1.0), (2, 3, 1.0), (3, 4, 0.0), (4, 5, 3.0)] {
            let (x, floats) = data(300, seed);
            let (q, g) = quantise(&floats);
            let columns = SortedColumns::new(&x);
            assert_eq!(columns.forward, vec![false, true, false, false], "only b has missing and two values");
            let params = TreeParams { max_depth: depth, min_child_weight, eta: 1.0, ..Default::default() };
            let p = params.split();
            let built = ExactBuilder { columns: &columns, params: &params, quantiser: &q }.build(
                &g,
                &[0, 1, 2, 3],
                &mut ChaCha8Rng::seed_from_u64(0),
            );
            let tree = &built.tree;
            assert!(tree.len() > 1, "seed {seed}: the data has splits");
            let FeatureMatrix::Dense(m) = &x else { unreachable!() };
            // Each node's rows, by walking the tree.
            let mut node_rows: Vec<Vec<usize>> = vec![Vec::new(); tree.len()];
            for r in 0..m.rows {
                let mut node = 0;
                node_rows[0].push(r);
                while !tree.is_leaf(node) {
                    let v = m.row(r)[tree.split_indices[node] as usize];
                    let left = if v.is_nan() { tree.default_left[node] } else { v < tree.split_conditions[node] };
                    node = if left { tree.left_children[node] } else { tree.right_children[node] } as usize;
                    node_rows[node].push(r);
                }
                assert_eq!(built.positions[r] as usize, node, "row {r}'s position is its leaf");
            }
            let depth_of = |mut n: usize| {
                let mut d = 0;
                while n != 0 {
                    n = tree.parents[n] as usize;
                    d += 1;
                }
                d
            };
            for n in 0..tree.len() {
                let brute = brute_force(&x, &g, &node_rows[n], &p, &q);
                if tree.is_leaf(n) {
                    if depth_of(n) < depth {
                        assert!(brute.is_none_or(|b| b as f64 <= split::RT_EPS), "seed {seed} leaf {n}: {brute:?}");
                    }
                    continue;
                }
                assert_eq!(Some(tree.loss_changes[n]), brute, "seed {seed} node {n}");
                let sum =
                    |rows: &[usize]| rows.iter().fold(Sum::ZERO, |a, &r| Sum::add(a, g[r])).to_float(&q).hess as f32;
                let (l, r) = (tree.left_children[n] as usize, tree.right_children[n] as usize);
                assert_eq!((tree.sum_hessian[l], tree.sum_hessian[r]), (sum(&node_rows[l]), sum(&node_rows[r])));
            }
        }
    }

    /// Values sorted per feature with their rows; missing values left out.
    #[test]
    fn sorted_columns_hold_every_present_value_in_order() {
        let (x, _) = data(50, 9);
        let c = SortedColumns::new(&x);
        let FeatureMatrix::Dense(m) = &x else { unreachable!() };
        for f in 0..4 {
            let (values, rows) = c.column(f);
            assert_eq!(values.len(), (0..50).filter(|&r| !m.row(r)[f].is_nan()).count());
            assert!(values.windows(2).all(|w| w[0] <= w[1]));
            for (v, r) in values.iter().zip(rows) {
                assert_eq!(*v, m.row(*r as usize)[f]);
            }
        }
    }
}
