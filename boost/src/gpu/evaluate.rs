//! Split evaluation on the device (XGBoost's `evaluate_splits.cu`): the best split of each node
//! from its histogram, one launch over every (node, feature) pair and one over the nodes
//! ([`evaluate_splits`]), and an oblivious level's one split; the arithmetic is
//! `boost_kernels::evaluate`'s, the CPU builder's.

use primitives::{DeviceBuffer, Gpu, LaunchConfig};

use boost_kernels::entry;
use boost_kernels::evaluate::{DeviceSplit, SplitContext};
use boost_kernels::oblivious;
use boost_kernels::split::{calc_gain, Split};

use super::grow::GpuBackend;
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

/// A node to evaluate: the slot of its histogram, its gradient sum, the features to try
/// (increasing).
#[derive(Clone, Debug)]
pub struct NodeToEvaluate {
    /// Where its histogram lies (its slot in the histogram store).
    pub slot: u32,
    /// The sum of its rows' fixed-point gradients.
    pub total: Fixed,
    /// The features its split may use (after column sampling).
    pub features: Vec<u32>,
}

/// The split evaluation's device scratch: its uploaded arena and its per-pair candidates.
#[derive(Default)]
pub struct EvaluationScratch {
    pub(super) arena: Kept<u32>,
    pub(super) candidates: Kept<DeviceSplit>,
}

pub(super) fn blocks(items: usize) -> u32 {
    items.div_ceil(EVALUATE_THREADS as usize).max(1) as u32
}

/// The best split of each node, as the CPU builder chooses it, `None` where no split passes the
/// limits: one launch over every (node, feature) pair, one over the nodes.
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
/// `nodes.len()` [`DeviceSplit`]s, for the caller to read with whatever else it reads.
pub(super) fn enqueue_evaluation(
    gpu: &Gpu,
    cuts: &DeviceCuts,
    histograms: &DeviceBuffer<Fixed>,
    (layout, nodes): (HistogramLayout, &[NodeToEvaluate]),
    context: &SplitContext,
    scratch: &mut EvaluationScratch,
    best: *mut DeviceSplit,
) -> Result<()> {
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
    let mut pairs = Vec::new();
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
        pairs.extend(node.features.iter().flat_map(|&f| [i as u32, f]));
        offsets.push((pairs.len() / 2) as u32);
    }
    if nodes.is_empty() {
        return Ok(());
    }
    let num_pairs = pairs.len() / 2;
    // One upload for the batch (each is an operation on the stream, and the host enqueues a
    // lossguide tree's hundreds of batches one after another): the context, then (16-byte
    // aligned) the totals, slots, offsets and pairs, as 32-bit words.
    let mut arena: Vec<u32> = bytemuck::cast_slice(std::slice::from_ref(context)).to_vec();
    arena.resize(arena.len().next_multiple_of(4), 0);
    let totals_at = arena.len();
    for node in nodes {
        arena.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&node.total)));
    }
    let slots_at = arena.len();
    arena.extend(nodes.iter().map(|n| n.slot));
    let offsets_at = arena.len();
    arena.extend_from_slice(&offsets);
    let pairs_at = arena.len();
    arena.extend_from_slice(&pairs);
    let arena = scratch.arena.upload(gpu, &arena)?.as_ptr();
    let at = |words: usize| arena.wrapping_add(words);
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
            at(totals_at).cast(),
            cuts.cut_ptrs.as_ptr(),
            cuts.cut_values.as_ptr(),
            at(pairs_at),
            num_pairs as u64,
            at(0).cast(),
            candidates.as_mut_ptr(),
        );
        // SAFETY: every pair names a node of `slots`/`totals` and a feature of the cuts, every slot's
        // histogram lies within `histograms` and holds each feature's bins (checked above); one
        // warp per pair, whole warps (the block size is a multiple of 32).
        unsafe { gpu.launch_kernel(crate::KERNELS, config(num_pairs * 32), args)? };
    }
    let args =
        entry::boost_split_nodes::args(candidates.as_ptr(), at(offsets_at), nodes.len() as u64, at(0).cast(), best);
    // SAFETY: `offsets` has `nodes + 1` entries up to `num_pairs`, the candidates that many; `best`
    // has room for a split per node (caller).
    unsafe { gpu.launch_kernel(crate::KERNELS, config(nodes.len()), args) }?;
    Ok(())
}

impl GpuBackend<'_> {
    /// The best splits of `nodes`; when they are the pending partition's children, read back
    /// with its counts (one wait).
    pub(super) fn evaluate_batch(&mut self, nodes: &[(usize, Fixed, Vec<u32>)]) -> Result<Vec<Option<Split<Fixed>>>> {
        if nodes.is_empty() {
            return Ok(Vec::new());
        }
        let mut batch = Vec::with_capacity(nodes.len());
        let mut buffer = None;
        for (node, total, features) in nodes {
            let (b, slot) = self
                .histograms
                .slot(*node)
                .ok_or_else(|| Error::InvalidData(format!("node {node} is evaluated before its histogram is built")))?;
            if buffer.is_some_and(|first| first != b) {
                return Err(Error::InvalidData("a batch's nodes have histograms in different buffers".into()));
            }
            buffer = Some(b);
            batch.push(NodeToEvaluate { slot, total: *total, features: features.clone() });
        }
        let histograms = buffer
            .and_then(|b| self.histograms.buffer(b))
            .ok_or_else(|| Error::InvalidData("the batch's histograms were freed".into()))?;
        let layout = HistogramLayout::Padded { bins_per_feature: self.bins_per_feature };
        let fits = self.pending.as_ref().is_some_and(|p| nodes.len() <= 2 * p.expanded.len());
        let b = &mut *self.buffers;
        let (Some(pending), Some(words)) = (self.pending.as_ref().filter(|_| fits), b.batch.get()) else {
            return evaluate_splits(self.gpu, self.cuts, histograms, layout, &batch, &self.context);
        };
        let at = pending.splits_at();
        let best = words.as_mut_ptr().wrapping_add(at).cast();
        let evaluation = &mut b.evaluation;
        enqueue_evaluation(self.gpu, self.cuts, histograms, (layout, &batch), &self.context, evaluation, best)?;
        let words = words.range_to_vec(self.gpu, 0..at + nodes.len() * SPLIT_WORDS)?;
        // Read unaligned: a `Vec<u32>` need not be 8-byte aligned.
        let bytes: &[u8] = bytemuck::cast_slice(&words[at..]);
        let splits = bytes
            .chunks_exact(size_of::<DeviceSplit>())
            .map(|chunk| bytemuck::pod_read_unaligned::<DeviceSplit>(chunk).split())
            .collect();
        self.settle(Some(&words))?;
        Ok(splits)
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
