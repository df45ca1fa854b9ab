//! Split evaluation on the device (XGBoost's `evaluate_splits.cu`): the best split of each node
//! from its histogram, one launch over every (node, feature) pair and one over the nodes
//! ([`evaluate_splits`]), and an oblivious level's one split; the arithmetic is
//! `boost_kernels::evaluate`'s, the CPU builder's. A batch with partition splits to try (categorical
//! features of many categories) first keys each such pair's categories and sorts them
//! (`DeviceSegmentedSort`, a segment a pair), as XGBoost's `SortHistogram`.

use primitives::{DeviceBuffer, DeviceSegmentedSort, Gpu, LaunchConfig, SortOrder};

use boost_kernels::categorical;
use boost_kernels::entry;
use boost_kernels::evaluate::{DeviceSplit, NodeInput, SplitContext, SplitPair, ONE_HOT, PARTITION};
use boost_kernels::oblivious;
use boost_kernels::split::{calc_gain, Parent, Split, SplitKind};

use super::grow::GpuBackend;
use crate::tree::grow::SplitRequest;
use super::partition::SPLIT_WORDS;
use super::{element_config, warp_per_block_config, DeviceCuts, Fixed, Kept};
use crate::{Error, Result};

/// Threads per block of the evaluation kernels (a warp per (node, feature) pair, a thread per node).
pub(super) const EVALUATE_THREADS: u32 = 128;

/// How node histograms lie in a buffer: one per slot, each either every feature's bins in turn by
/// global bin id (`Global`, the CPU builder's layout), or one row of `bins_per_feature` sums per
/// feature (`Padded`, what `DeviceHistogram::multi_feature` builds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistogramLayout {
    /// All features' bins one after the other (the cuts' global bin ids).
    Global,
    /// Each feature's bins from `feature * bins_per_feature` (the multi-feature histogram's layout).
    Padded {
        /// Bins a feature (at least the cuts' most).
        bins_per_feature: usize,
    },
}

/// A node to evaluate: the slot of its histogram, its gradient sum, its gain and bounds, the
/// features to try (increasing) and their monotone directions (empty: none).
#[derive(Clone, Debug)]
pub struct NodeToEvaluate {
    /// Where its histogram lies (its slot in the histogram store).
    pub slot: u32,
    /// The sum of its rows' fixed-point gradients.
    pub total: Fixed,
    /// Its gain and the bounds of its children's weights (`boost_kernels::split::Parent`).
    pub parent: Parent,
    /// The features its split may use (after column sampling and interaction constraints).
    pub features: Vec<u32>,
    /// Each feature's monotone direction; empty when none has one.
    pub monotone: Vec<i32>,
}

impl NodeToEvaluate {
    /// A node without constraints: its gain is its sum's.
    pub fn unconstrained(slot: u32, total: Fixed, features: Vec<u32>, context: &SplitContext) -> Self {
        let t = context.quantiser.to_float(total);
        let parent = Parent::unconstrained(calc_gain(&context.params, t.grad, t.hess));
        NodeToEvaluate { slot, total, parent, features, monotone: Vec::new() }
    }
}

/// The split evaluation's device scratch: its uploaded arena, its per-pair candidates, and the
/// ends of the orders of the partition splits chosen.
#[derive(Default)]
pub struct EvaluationScratch {
    pub(super) arena: Kept<u32>,
    pub(super) candidates: Kept<DeviceSplit>,
    pub(super) edges: Kept<u32>,
}

/// Where an enqueued evaluation left each node's end of its categories' order, for a partition
/// split (`boost_kernels::categorical::partition_edge`): `stride` bins a node in the scratch's
/// `edges` (0: the batch tried no partition split).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PartitionEdges {
    pub(super) stride: usize,
}

/// The batch's (node, feature) pairs, with the categorical ones' kinds; the partition pairs (indices
/// into the pairs) with the offsets of their orders, and the most steps of their scans.
#[derive(Default)]
struct Pairs {
    pairs: Vec<SplitPair>,
    partition: Vec<u32>,
    offsets: Vec<u32>,
    steps: usize,
}

impl Pairs {
    fn push(&mut self, (node, feature, monotone): (u32, u32, i32), cuts: &DeviceCuts, context: &SplitContext) -> Result<()> {
        let f = feature as usize;
        let mut pair = SplitPair { node, feature, kind: 0, sorted_at: 0, monotone };
        if cuts.categorical.get(f).copied().unwrap_or(false) {
            let bins = (cuts.host_ptrs[f + 1] - cuts.host_ptrs[f]) as usize;
            if categorical::use_one_hot(bins, &context.categorical) {
                pair.kind = ONE_HOT;
            } else {
                let at = *self.offsets.last().unwrap_or(&0);
                let end = u32::try_from(at as usize + bins)
                    .map_err(|_| Error::InvalidData("a batch's categories to sort pass 2^32".into()))?;
                pair = SplitPair { kind: PARTITION, sorted_at: at, ..pair };
                if self.offsets.is_empty() {
                    self.offsets.push(0);
                }
                self.offsets.push(end);
                self.partition.push(self.pairs.len() as u32);
                let steps = (context.categorical.max_cat_threshold as usize).min(bins).saturating_sub(1);
                self.steps = self.steps.max(steps);
            }
        }
        self.pairs.push(pair);
        Ok(())
    }
}

pub(super) fn blocks(items: usize) -> u32 {
    items.div_ceil(EVALUATE_THREADS as usize).max(1) as u32
}

/// The best split of each node, as the CPU builder chooses it, `None` where no split passes the
/// limits: one launch over every (node, feature) pair, one over the nodes (and, when categorical
/// features take partition splits, their categories keyed and sorted first).
pub fn evaluate_splits(
    gpu: &Gpu,
    cuts: &DeviceCuts,
    histograms: &DeviceBuffer<Fixed>,
    layout: HistogramLayout,
    nodes: &[NodeToEvaluate],
    context: &SplitContext,
) -> Result<Vec<Option<Split<Fixed>>>> {
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    let best = gpu.alloc_uninitialized::<DeviceSplit>(nodes.len())?;
    let mut scratch = EvaluationScratch::default();
    enqueue_evaluation(gpu, cuts, histograms, (layout, nodes), context, &mut scratch, best.as_mut_ptr())?;
    Ok(best.to_vec(gpu)?.iter().map(DeviceSplit::split).collect())
}

/// [`evaluate_splits`] without the wait: the best splits go to `best`, the device address of
/// `nodes.len()` [`DeviceSplit`]s, for the caller to read with whatever else it reads; the chosen
/// partition splits' ends of their orders to the scratch's `edges`, as the result says.
pub(super) fn enqueue_evaluation(
    gpu: &Gpu,
    cuts: &DeviceCuts,
    histograms: &DeviceBuffer<Fixed>,
    (layout, nodes): (HistogramLayout, &[NodeToEvaluate]),
    context: &SplitContext,
    scratch: &mut EvaluationScratch,
    best: *mut DeviceSplit,
) -> Result<PartitionEdges> {
    let (node_stride, feature_stride) = match layout {
        HistogramLayout::Global => (cuts.total_bins, 0),
        HistogramLayout::Padded { bins_per_feature } => {
            if bins_per_feature < cuts.max_bins || bins_per_feature == 0 {
                return Err(Error::InvalidData(format!(
                    "padded histograms of {bins_per_feature} bins a feature; the cuts have features of {}",
                    cuts.max_bins
                )));
            }
            (cuts.features * bins_per_feature, bins_per_feature)
        }
    };
    let mut pairs = Pairs::default();
    let mut offsets = Vec::with_capacity(nodes.len() + 1);
    offsets.push(0u32);
    for (i, node) in nodes.iter().enumerate() {
        if (node.slot as usize + 1) * node_stride > histograms.len() {
            return Err(Error::InvalidData(format!(
                "node {i}: slot {} is past the {} histograms given",
                node.slot,
                histograms.len() / node_stride.max(1)
            )));
        }
        if let Some(&bad) = node.features.iter().find(|&&f| f as usize >= cuts.features) {
            return Err(Error::InvalidData(format!("feature {bad} of node {i}: the cuts have {}", cuts.features)));
        }
        if !node.features.is_sorted_by(|a, b| a < b) {
            return Err(Error::InvalidData(format!("the features of node {i} are not increasing")));
        }
        for (k, &f) in node.features.iter().enumerate() {
            pairs.push((i as u32, f, node.monotone.get(k).copied().unwrap_or(0)), cuts, context)?;
        }
        offsets.push(pairs.pairs.len() as u32);
    }
    let num_pairs = pairs.pairs.len();
    // One upload for the batch (each is an operation on the stream, and the host enqueues a
    // lossguide tree's hundreds of batches one after another): the context, then (16-byte
    // aligned) the nodes, slots, offsets, pairs and partition pairs, as 32-bit words.
    let mut arena: Vec<u32> = bytemuck::cast_slice(std::slice::from_ref(context)).to_vec();
    arena.resize(arena.len().next_multiple_of(4), 0);
    let nodes_at = arena.len();
    for node in nodes {
        let input = NodeInput { total: node.total, gain: node.parent.gain, bounds: node.parent.bounds, pad: 0 };
        arena.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&input)));
    }
    let slots_at = arena.len();
    arena.extend(nodes.iter().map(|n| n.slot));
    let offsets_at = arena.len();
    arena.extend_from_slice(&offsets);
    arena.resize(arena.len().next_multiple_of(4), 0);
    let pairs_at = arena.len();
    arena.extend_from_slice(bytemuck::cast_slice(&pairs.pairs));
    let partition_at = arena.len();
    arena.extend_from_slice(&pairs.partition);
    let arena = scratch.arena.upload(gpu, &arena)?.as_ptr();
    let at = |words: usize| arena.wrapping_add(words);
    let sorted = sort_categories(gpu, histograms, (node_stride, feature_stride), cuts, &pairs, arena, [
        slots_at,
        pairs_at,
        partition_at,
    ])?;
    let sorted_ptr = sorted.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    let candidates = scratch.candidates.at_least(gpu, num_pairs)?;
    let config = |items: usize| LaunchConfig {
        grid_dim: (blocks(items), 1, 1),
        block_dim: (EVALUATE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    if num_pairs > 0 {
        let args = entry::boost_split_features::args(
            histograms.as_ptr(),
            node_stride as u64,
            feature_stride as u64,
            at(slots_at),
            at(nodes_at).cast(),
            cuts.cut_ptrs.as_ptr(),
            cuts.cut_values.as_ptr(),
            at(pairs_at).cast(),
            num_pairs as u64,
            sorted_ptr,
            at(0).cast(),
            candidates.as_mut_ptr(),
        );
        // SAFETY: every pair names a node of `slots`/`totals` and a feature of the cuts, every slot's
        // histogram lies within `histograms` and holds each feature's bins (checked above), every
        // partition pair's order lies in `sorted`; one warp per pair, whole warps (the block size
        // is a multiple of 32).
        unsafe { gpu.launch_kernel(crate::KERNELS, config(num_pairs * 32), args)? };
    }
    let edges = PartitionEdges { stride: if sorted.is_some() { pairs.steps.max(1) } else { 0 } };
    let edges_ptr =
        if edges.stride > 0 { scratch.edges.at_least(gpu, nodes.len() * edges.stride)?.as_mut_ptr() } else { std::ptr::null_mut() };
    let args = entry::boost_split_nodes::args(
        candidates.as_ptr(),
        at(offsets_at),
        nodes.len() as u64,
        at(0).cast(),
        at(pairs_at).cast(),
        sorted_ptr,
        cuts.cut_ptrs.as_ptr(),
        edges_ptr,
        edges.stride as u64,
        best,
    );
    // SAFETY: `offsets` has `nodes + 1` entries up to `num_pairs`, the candidates that many, read
    // from these pairs; `edges` holds `stride` bins a node, at least any partition's steps; `best`
    // has room for a split per node (caller).
    unsafe { gpu.launch_kernel(crate::KERNELS, config(nodes.len()), args) }?;
    // The sorted orders are freed after the launches that read them (frees are stream-ordered).
    drop(sorted);
    Ok(edges)
}

/// The partition pairs' categories keyed ([`categorical::sort_key`], a thread a category) and
/// sorted, a segment a pair (stable: ties keep bin order, as the CPU's sort); `None` when the
/// batch has no partition pair. `at` are the arena's words of the slots, pairs and partition pairs.
fn sort_categories(
    gpu: &Gpu,
    histograms: &DeviceBuffer<Fixed>,
    (node_stride, feature_stride): (usize, usize),
    cuts: &DeviceCuts,
    pairs: &Pairs,
    arena: *const u32,
    [slots_at, pairs_at, partition_at]: [usize; 3],
) -> Result<Option<DeviceBuffer<u32>>> {
    let keys = *pairs.offsets.last().unwrap_or(&0) as usize;
    if pairs.partition.is_empty() || keys == 0 {
        return Ok(None);
    }
    let (unsorted_keys, unsorted_bins) = (gpu.alloc_uninitialized::<f32>(keys)?, gpu.alloc_uninitialized::<u32>(keys)?);
    let args = entry::boost_split_sort_keys::args(
        histograms.as_ptr(),
        node_stride as u64,
        feature_stride as u64,
        arena.wrapping_add(slots_at),
        cuts.cut_ptrs.as_ptr(),
        arena.wrapping_add(pairs_at).cast(),
        arena.wrapping_add(0).cast(),
        arena.wrapping_add(partition_at),
        pairs.partition.len() as u64,
        keys as u64,
        unsorted_keys.as_mut_ptr(),
        unsorted_bins.as_mut_ptr(),
    );
    // SAFETY: the partition pairs' orders are adjacent from 0 up to `keys`, each of its feature's
    // bins, in histograms checked by the caller; a key and a bin a thread.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(keys)?, args)? };
    let (mut sorted_keys, mut sorted) = (gpu.alloc_uninitialized::<f32>(keys)?, gpu.alloc_uninitialized::<u32>(keys)?);
    DeviceSegmentedSort::sort_pairs_host_offsets(
        gpu,
        &unsorted_keys,
        &mut sorted_keys,
        &unsorted_bins,
        &mut sorted,
        &pairs.offsets,
        SortOrder::ascending(),
    )?;
    Ok(Some(sorted))
}

impl GpuBackend<'_> {
    /// The best splits of `nodes`; when they are the pending partition's children, read back
    /// with its counts (one wait).
    pub(super) fn evaluate_batch(&mut self, nodes: &[SplitRequest<Fixed>]) -> Result<Vec<Option<Split<Fixed>>>> {
        if nodes.is_empty() {
            return Ok(Vec::new());
        }
        let mut batch = Vec::with_capacity(nodes.len());
        let mut buffer = None;
        for r in nodes {
            let node = r.node;
            let (b, slot) = self
                .histograms
                .slot(node)
                .ok_or_else(|| Error::InvalidData(format!("node {node} is evaluated before its histogram is built")))?;
            if buffer.is_some_and(|first| first != b) {
                return Err(Error::InvalidData("a batch's nodes have histograms in different buffers".into()));
            }
            buffer = Some(b);
            let (features, monotone) = (r.features.clone(), r.monotone.clone());
            batch.push(NodeToEvaluate { slot, total: r.sum, parent: r.parent, features, monotone });
        }
        let histograms = buffer
            .and_then(|b| self.histograms.buffer(b))
            .ok_or_else(|| Error::InvalidData("the batch's histograms were freed".into()))?;
        let layout = self.layout;
        let fits = self.pending.as_ref().is_some_and(|p| nodes.len() <= 2 * p.expanded.len());
        let b = &mut *self.buffers;
        let (Some(pending), Some(words)) = (self.pending.as_ref().filter(|_| fits), b.batch.get()) else {
            let best = self.gpu.alloc_uninitialized::<DeviceSplit>(nodes.len())?;
            let (gpu, context) = (self.gpu, &self.context);
            let edges =
                enqueue_evaluation(gpu, self.cuts, histograms, (layout, &batch), context, &mut b.evaluation, best.as_mut_ptr())?;
            let splits: Vec<_> = best.to_vec(gpu)?.iter().map(DeviceSplit::split).collect();
            self.keep_partition_sets(nodes, &splits, edges)?;
            return Ok(splits);
        };
        let at = pending.splits_at();
        let best = words.as_mut_ptr().wrapping_add(at).cast();
        let evaluation = &mut b.evaluation;
        let edges =
            enqueue_evaluation(self.gpu, self.cuts, histograms, (layout, &batch), &self.context, evaluation, best)?;
        let words = words.range_to_vec(self.gpu, 0..at + nodes.len() * SPLIT_WORDS)?;
        // Read unaligned: a `Vec<u32>` need not be 8-byte aligned.
        let bytes: &[u8] = bytemuck::cast_slice(&words[at..]);
        let splits: Vec<_> = bytes
            .chunks_exact(size_of::<DeviceSplit>())
            .map(|chunk| bytemuck::pod_read_unaligned::<DeviceSplit>(chunk).split())
            .collect();
        self.settle(Some(&words))?;
        self.keep_partition_sets(nodes, &splits, edges)?;
        Ok(splits)
    }

    /// The categories each partition split of `splits` sends right, kept until the driver asks
    /// ([`Self::categories_of`]): the ends of their orders read back (one wait, when any).
    fn keep_partition_sets(
        &mut self,
        nodes: &[SplitRequest<Fixed>],
        splits: &[Option<Split<Fixed>>],
        edges: PartitionEdges,
    ) -> Result<()> {
        let partition = |s: &Option<Split<Fixed>>| matches!(s.map(|s| s.kind), Some(SplitKind::Partition { .. }));
        let Some(last) = splits.iter().rposition(partition) else {
            return Ok(());
        };
        let stride = edges.stride;
        let buffer = self.buffers.evaluation.edges.get().filter(|_| stride > 0);
        let buffer = buffer.ok_or_else(|| Error::InvalidData("a partition split without its categories' order".into()))?;
        let read = buffer.range_to_vec(self.gpu, 0..(last + 1) * stride)?;
        for (i, split) in splits.iter().enumerate() {
            let Some(split @ Split { kind: SplitKind::Partition { count }, .. }) = split else {
                continue;
            };
            let f = split.feature as usize;
            let bins = (self.cuts.host_ptrs[f + 1] - self.cuts.host_ptrs[f]) as usize;
            let len = categorical::partition_edge(bins, *count as usize, split.default_left).len();
            let mut words = vec![0u32; categorical::words_for(bins)];
            let edge = &read[i * stride..i * stride + len.min(stride)];
            categorical::partition_set(&mut words, bins, *count as usize, split.default_left, edge);
            self.partition_sets.insert(nodes[i].node, words);
        }
        Ok(())
    }

    /// The categories a categorical split of `node` sends right ([`GrowBackend::categories`]).
    ///
    /// [`GrowBackend::categories`]: crate::tree::grow::GrowBackend::categories
    pub(super) fn categories_of(&mut self, node: usize, split: &Split<Fixed>) -> Result<Vec<u32>> {
        let f = split.feature as usize;
        let bins = (self.cuts.host_ptrs[f + 1] - self.cuts.host_ptrs[f]) as usize;
        match split.kind {
            SplitKind::OneHot { bin } => {
                let mut words = vec![0u32; categorical::words_for(bins)];
                categorical::insert(&mut words, bin as usize);
                Ok(words)
            }
            SplitKind::Partition { .. } => self
                .partition_sets
                .remove(&node)
                .ok_or_else(|| Error::InvalidData(format!("node {node}'s partition split has no categories kept"))),
            SplitKind::Numeric => Err(Error::InvalidData(format!("node {node}'s split is numeric, not categorical"))),
        }
    }

    /// An oblivious level's split on the device (`boost_kernels::oblivious`): the level's
    /// histograms (one buffer, slots in node order) scanned a warp per (node, feature), a thread a
    /// (feature, candidate) sums the nodes' shares, the host picks the best in the CPU's order
    /// from the sums read back, and a thread a node gives the children's sums.
    pub(super) fn evaluate_level_on_device(
        &mut self,
        nodes: &[(usize, Fixed)],
        features: &[u32],
    ) -> Result<Option<Vec<Split<Fixed>>>> {
        let mut buffer = None;
        for (i, &(node, _)) in nodes.iter().enumerate() {
            let (b, slot) = self
                .histograms
                .slot(node)
                .ok_or_else(|| Error::InvalidData(format!("node {node} is evaluated before its histogram is built")))?;
            if slot as usize != i || buffer.is_some_and(|first| first != b) {
                return Err(Error::InvalidData(
                    "an oblivious level's histograms are not one buffer in node order".into(),
                ));
            }
            buffer = Some(b);
        }
        let histograms = buffer
            .and_then(|b| self.histograms.buffer(b))
            .ok_or_else(|| Error::InvalidData("the level's histograms were freed".into()))?;
        if self.layout == HistogramLayout::Global {
            return Err(Error::InvalidData("an oblivious level's histograms must be padded".into()));
        }
        if features.is_empty() || nodes.is_empty() {
            return Ok(None);
        }
        let (p, q) = (self.context.params, self.context.quantiser);
        let totals: Vec<Fixed> = nodes.iter().map(|&(_, sum)| sum).collect();
        let gains: Vec<f32> = totals
            .iter()
            .map(|&t| {
                let t = q.to_float(t);
                calc_gain(&p, t.grad, t.hess)
            })
            .collect();
        let (gpu, bpf, slot_len) = (self.gpu, self.bins_per_feature, self.slot_len());
        let prefix = gpu.alloc_uninitialized::<Fixed>(nodes.len() * slot_len)?;
        let (totals_d, gains_d, features_d) = (gpu.upload(&totals)?, gpu.upload(&gains)?, gpu.upload(features)?);
        let context = gpu.upload(std::slice::from_ref(&self.context))?;
        // One kernel in three stages: the prefix sums, each candidate's gain, the chosen split's sums.
        let stage = |stage: u64, feature: u64, candidate: u64, out: *mut u8| {
            entry::boost_split_level::args(
                histograms.as_ptr(),
                prefix.as_mut_ptr(),
                nodes.len() as u64,
                slot_len as u64,
                bpf as u64,
                totals_d.as_ptr(),
                gains_d.as_ptr(),
                features_d.as_ptr(),
                features.len() as u64,
                self.cuts.cut_ptrs.as_ptr(),
                context.as_ptr(),
                stage,
                feature,
                candidate,
                out,
            )
        };
        let module = crate::KERNELS;
        let warps = warp_per_block_config(nodes.len() * features.len())?;
        // SAFETY: the level's nodes are slots `0..nodes` of `histograms` (checked), `slot_len` sums
        // each in the padded layout of `bpf` bins a feature; `prefix` as large; a total and a gain a
        // node; the features are the cuts' (the driver's sample); whole warps.
        unsafe { gpu.launch_kernel(module, warps, stage(0, 0, 0, std::ptr::null_mut()))? };
        let candidates = gpu.alloc_uninitialized::<f64>(features.len() * 2 * bpf)?;
        let out = candidates.as_mut_ptr().cast();
        // SAFETY: as above, after the prefix sums; `candidates` holds a value per (feature, candidate).
        unsafe { gpu.launch_kernel(module, element_config(candidates.len())?, stage(1, 0, 0, out))? };
        let sums = candidates.to_vec(gpu)?;
        // Candidates in the CPU's order (features increasing, then candidates); NaN: none.
        let best = oblivious::first_best(features.iter().enumerate().flat_map(|(i, &f)| {
            let sums = &sums[i * 2 * bpf..(i + 1) * 2 * bpf];
            let candidates = sums.iter().enumerate().filter(|(_, loss)| !loss.is_nan());
            candidates.map(move |(c, &loss_chg)| oblivious::LevelBest { loss_chg, feature: f, candidate: c as u32 })
        }));
        let Some(best) = best.filter(|b| b.is_valid(&p, nodes.len())) else {
            return Ok(None);
        };
        let children = gpu.alloc_uninitialized::<Fixed>(2 * nodes.len())?;
        let choice = stage(2, best.feature as u64, best.candidate as u64, children.as_mut_ptr().cast());
        // SAFETY: as above; the feature is one of the level's; `children` holds two pairs a node.
        unsafe { gpu.launch_kernel(module, element_config(nodes.len())?, choice)? };
        let children = children.to_vec(gpu)?;
        let f = best.feature as usize;
        let begin = self.first_bins[f] as usize;
        let n = self.first_bins[f + 1] as usize - begin;
        let splits = children
            .chunks_exact(2)
            .zip(&gains)
            .map(|(pair, &gain)| {
                best.node_split(n, begin, |b| self.cuts.host_values[begin + b], (pair[0], pair[1]), gain, &p, &q)
            })
            .collect();
        Ok(Some(splits))
    }
}
