//! The GPU backend of `boost`: [`GpuTrainer`] keeps the cuts, the bins and the row order on the
//! device for a training run and grows each tree there ([`GpuBackend`]: histograms with the
//! subtraction trick, split evaluation, row partitions), with the gradient quantiser and, for
//! element-wise and softmax objectives, the gradients, margins and row-wise metrics on the device too. The kernels are
//! `boost-kernels`', whose arithmetic is the CPU builder's, so both write the same trees. Runs on a
//! CUDA device or, in tests, on the SIMT emulator; the GPU test suite (`tests/tests/gpu/boost_split.rs`,
//! `boost_train.rs`) checks it against the CPU backend, on the emulator in `cargo test` and on a GPU
//! with `--features gpu`.

mod adaptive;
mod binarised;
mod bins;
mod csr;
mod device_threads;
mod eval;
mod exact;
mod metrics;
mod multi;
mod nccl;
mod peer;
mod predict;
mod rank;
mod sketch;

use std::time::Instant;

use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, DeviceHistogram, DeviceScan, Gpu, LaunchConfig};

pub use boost_kernels::evaluate::{DeviceSplit, SplitContext};
use boost_kernels::fixed_point::QuantiserSums;
use boost_kernels::metric::Transform;
use boost_kernels::objective::{ElementwiseObjective, LeafRange};
use boost_kernels::oblivious;
use boost_kernels::partition::{ChildSlots, PartitionSplit, SubtractionPlan, SPLIT_INDEX_SHIFT};
use boost_kernels::reduce::{self, BlockSum};
pub use boost_kernels::sampling::RowSampler;
use boost_kernels::split::{calc_gain, Split};

use crate::data::{FeatureMatrix, MetaInfo};
use crate::ellpack::EllpackMatrix;
use crate::fixed_point::GradientQuantiser;
use crate::metric::DeviceMetric;
use crate::objective::DeviceObjective;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::tree::grow::{self, ChildHistograms, Expansion, GrowBackend, RowOrder};
use crate::tree::Tree;
use crate::{Error, Result};
use adaptive::{AdaptiveScratch, ResidualInputs};
pub(crate) use bins::csr_is_checked;
pub use bins::{local_bins, BinLayout, DeviceBins};
pub use csr::DeviceCsr;
pub use eval::{DeviceEvalSet, DeviceTrees, PredictLaunch};
pub use exact::GpuExact;
pub use metrics::InitialMargins;
use metrics::MetricRows;
pub use multi::{shards, Communicator, HostStaged, MultiGpuTrainer};
pub use nccl::Nccl;
pub use peer::PeerSum;
pub use predict::{transform_on_device, DeviceData, DeviceModel, OutputTransform};
use rank::RankGradients;
#[doc(hidden)]
pub use sketch::device_cuts_within;
pub use sketch::{device_cuts, device_cuts_csr};

type Fixed = GradientPair<i64>;

/// Threads per block of the evaluation kernels (a warp per (node, feature) pair, a thread per node).
const EVALUATE_THREADS: u32 = 128;

/// [`QuantileCuts`] in device memory.
pub struct DeviceCuts {
    cut_ptrs: DeviceBuffer<u32>,
    cut_values: DeviceBuffer<f32>,
    features: usize,
    total_bins: usize,
    /// The most bins of one feature.
    max_bins: usize,
    /// The bins' upper bounds on the host (an oblivious level's threshold).
    host_values: Vec<f32>,
}

impl DeviceCuts {
    /// Copies `cuts` to `gpu`.
    pub fn upload(gpu: &Gpu, cuts: &QuantileCuts) -> Result<Self> {
        Ok(DeviceCuts {
            cut_ptrs: gpu.upload(&cuts.cut_ptrs)?,
            cut_values: gpu.upload(&cuts.cut_values)?,
            features: cuts.features(),
            total_bins: cuts.total_bins(),
            max_bins: (0..cuts.features()).map(|f| cuts.bins(f)).max().unwrap_or(0),
            host_values: cuts.cut_values.clone(),
        })
    }

    /// Bins over all features: the length of one node's histogram in the global layout.
    pub fn total_bins(&self) -> usize {
        self.total_bins
    }
}

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

/// A device buffer kept between uses and grown when one needs more (a lossguide tree runs hundreds
/// of batches, and each allocation and free is a driver call the host makes while the device
/// waits). Reuse is safe because every use is ordered on the one stream.
pub struct Kept<T>(Option<DeviceBuffer<T>>);

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept(None)
    }
}

impl<T: primitives::ops::Element> Kept<T> {
    /// At least `len` elements, their values whatever the last use left.
    fn at_least(&mut self, gpu: &Gpu, len: usize) -> Result<&mut DeviceBuffer<T>> {
        if self.0.as_ref().is_none_or(|buffer| buffer.len() < len) {
            self.0 = Some(gpu.alloc_uninitialized::<T>(len.max(1).next_power_of_two())?);
        }
        Ok(self.0.as_mut().expect("allocated above"))
    }

    /// The buffer, once a use has made it.
    fn get(&self) -> Option<&DeviceBuffer<T>> {
        self.0.as_ref()
    }

    /// `data` at the buffer's start.
    fn upload(&mut self, gpu: &Gpu, data: &[T]) -> Result<&DeviceBuffer<T>> {
        let buffer = self.at_least(gpu, data.len())?;
        buffer.copy_from_host(gpu, data)?;
        Ok(buffer)
    }
}

/// The split evaluation's device scratch: its uploaded arena and its per-pair candidates.
#[derive(Default)]
pub struct EvaluationScratch {
    arena: Kept<u32>,
    candidates: Kept<DeviceSplit>,
}

fn blocks(items: usize) -> u32 {
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
    enqueue_evaluation(gpu, cuts, histograms, (layout, nodes), context, &mut scratch, best.device_ptr())?;
    Ok(best.to_vec(gpu)?.iter().map(DeviceSplit::split).collect())
}

/// [`evaluate_splits`] without the wait: the best splits go to `best`, the device address of
/// `nodes.len()` [`DeviceSplit`]s, for the caller to read with whatever else it reads.
fn enqueue_evaluation(
    gpu: &Gpu,
    cuts: &DeviceCuts,
    histograms: &DeviceBuffer<Fixed>,
    (layout, nodes): (HistogramLayout, &[NodeToEvaluate]),
    context: &SplitContext,
    scratch: &mut EvaluationScratch,
    best: u64,
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
    let arena_at = scratch.arena.upload(gpu, &arena)?.device_ptr();
    let at = |words: usize| arena_at + (words * size_of::<u32>()) as u64;
    let candidates = scratch.candidates.at_least(gpu, num_pairs)?;
    let module = crate::KERNELS;
    let config = |items: usize| LaunchConfig {
        grid_dim: (blocks(items), 1, 1),
        block_dim: (EVALUATE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    if num_pairs > 0 {
        let args = [
            histograms.device_ptr(),
            node_stride as u64,
            feature_stride as u64,
            at(slots_at),
            at(totals_at),
            cuts.cut_ptrs.device_ptr(),
            cuts.cut_values.device_ptr(),
            at(pairs_at),
            num_pairs as u64,
            at(0),
            candidates.device_ptr(),
        ];
        // SAFETY: every pair names a node of `slots`/`totals` and a feature of the cuts, every slot's
        // histogram lies within `histograms` and holds each feature's bins (checked above); one
        // warp per pair, whole warps (the block size is a multiple of 32).
        unsafe { gpu.launch(module, "boost_split_features", config(num_pairs * 32), &args)? };
    }
    let args = [candidates.device_ptr(), at(offsets_at), nodes.len() as u64, at(0), best];
    // SAFETY: `offsets` has `nodes + 1` entries up to `num_pairs`, the candidates that many; `best`
    // has room for a split per node (caller).
    unsafe { gpu.launch(module, "boost_split_nodes", config(nodes.len()), &args) }?;
    Ok(())
}

/// Threads per block of the partition and subtraction kernels (one thread per element).
const ELEMENT_THREADS: u32 = 256;

fn element_config(items: usize) -> Result<LaunchConfig> {
    let blocks = items.div_ceil(ELEMENT_THREADS as usize).max(1);
    if blocks > i32::MAX as usize {
        return Err(Error::InvalidData(format!("{items} elements are too many for one launch")));
    }
    Ok(LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (ELEMENT_THREADS, 1, 1), shared_mem_bytes: 0 })
}

/// The device buffers of the row order, kept for a training run: the order itself, its double (the
/// partition scatters into it, then the two swap), the partition's flags and their exclusive sum
/// (`rows + 1` each: the flag after a span's last stays 0, so the last sum is the count of left
/// rows), and the identity order each tree starts from; with the batches' scratch.
pub struct RowBuffers {
    rows: DeviceBuffer<u32>,
    spare: DeviceBuffer<u32>,
    flags: DeviceBuffer<u32>,
    scan: DeviceBuffer<u32>,
    identity: DeviceBuffer<u32>,
    /// The partition's splits and children's slots.
    partition_upload: Kept<u64>,
    /// A batch's plan and results ([`PendingPartition`]).
    batch: Kept<u32>,
    evaluation: EvaluationScratch,
    /// Histogram buffers of the last tree, for the next one's batches of the same sizes.
    histogram_spares: Vec<DeviceBuffer<Fixed>>,
}

impl RowBuffers {
    /// Buffers for `rows` rows.
    pub fn new(gpu: &Gpu, rows: usize) -> Result<Self> {
        if rows >= u32::MAX as usize {
            return Err(Error::InvalidData(format!("{rows} rows: the GPU builder takes fewer than 2^32 - 1")));
        }
        let identity: Vec<u32> = (0..rows as u32).collect();
        Ok(RowBuffers {
            rows: gpu.alloc_zeroed(rows)?,
            spare: gpu.alloc_zeroed(rows)?,
            flags: gpu.alloc_zeroed(rows + 1)?,
            scan: gpu.alloc_zeroed(rows + 1)?,
            identity: gpu.upload(&identity)?,
            partition_upload: Kept::default(),
            batch: Kept::default(),
            evaluation: EvaluationScratch::default(),
            histogram_spares: Vec::new(),
        })
    }
}

/// Node histograms on the device, one buffer per batch (a slot per node, the padded layout), a
/// buffer freed when the last of its nodes is released. Lossguide keeps a node's histogram from
/// the batch that built it until the node is split (its children's are derived from it) or dropped.
#[derive(Default)]
struct HistogramStore {
    batches: Vec<Option<(DeviceBuffer<Fixed>, usize)>>,
    /// Each node's batch and slot.
    nodes: Vec<Option<(usize, u32)>>,
    /// Freed batches' buffers, for later batches of the same size (depthwise levels repeat
    /// from tree to tree): an allocation and a free a level cost tens of microseconds of host time
    /// when several devices' threads call the driver at once.
    spares: Vec<DeviceBuffer<Fixed>>,
}

/// The most buffers, and bytes, [`HistogramStore`] keeps for reuse.
const HISTOGRAM_SPARES: usize = 12;
const HISTOGRAM_SPARE_BYTES: usize = 256 << 20;

impl HistogramStore {
    /// A store that reuses `spares` (buffers of an earlier store on the same device).
    fn with_spares(spares: Vec<DeviceBuffer<Fixed>>) -> Self {
        HistogramStore { spares, ..Default::default() }
    }

    /// A zeroed buffer of `len` sums: a spare of that length cleared, or a new one.
    fn zeroed(&mut self, gpu: &Gpu, len: usize) -> Result<DeviceBuffer<Fixed>> {
        match self.spares.iter().position(|b| b.len() == len) {
            Some(i) => {
                let mut buffer = self.spares.swap_remove(i);
                buffer.fill_zero(gpu)?;
                Ok(buffer)
            }
            None => Ok(gpu.alloc_zeroed(len)?),
        }
    }

    /// A buffer of `len` sums to be overwritten whole: a spare of that length, or a new one.
    fn uninitialized(&mut self, gpu: &Gpu, len: usize) -> Result<DeviceBuffer<Fixed>> {
        match self.spares.iter().position(|b| b.len() == len) {
            Some(i) => Ok(self.spares.swap_remove(i)),
            None => Ok(gpu.alloc_uninitialized(len)?),
        }
    }

    /// Keeps `buffer` for reuse, within the limits (the oldest spares go first).
    fn spare(&mut self, buffer: DeviceBuffer<Fixed>) {
        self.spares.push(buffer);
        let bytes = |spares: &[DeviceBuffer<Fixed>]| spares.iter().map(|b| b.len() * size_of::<Fixed>()).sum::<usize>();
        while self.spares.len() > HISTOGRAM_SPARES || bytes(&self.spares) > HISTOGRAM_SPARE_BYTES {
            self.spares.remove(0);
        }
    }

    /// Every buffer, live or spare, as spares for a later store (the nodes' histograms dropped).
    fn into_spares(mut self) -> Vec<DeviceBuffer<Fixed>> {
        for (buffer, _) in std::mem::take(&mut self.batches).into_iter().flatten() {
            self.spare(buffer);
        }
        self.spares
    }

    /// Adds a batch's buffer holding `nodes` (node, slot).
    fn insert(&mut self, buffer: DeviceBuffer<Fixed>, nodes: &[(usize, u32)]) {
        let batch = self.batches.len();
        self.batches.push(Some((buffer, nodes.len())));
        for &(node, slot) in nodes {
            if self.nodes.len() <= node {
                self.nodes.resize(node + 1, None);
            }
            self.nodes[node] = Some((batch, slot));
        }
    }

    fn slot(&self, node: usize) -> Option<(usize, u32)> {
        self.nodes.get(node).copied().flatten()
    }

    /// The last batch's buffer, unless freed.
    fn last_batch(&self) -> Option<&DeviceBuffer<Fixed>> {
        self.batches.last().and_then(|b| b.as_ref()).map(|(buffer, _)| buffer)
    }

    fn buffer(&self, batch: usize) -> Option<&DeviceBuffer<Fixed>> {
        self.batches.get(batch).and_then(|b| b.as_ref()).map(|(buffer, _)| buffer)
    }

    fn release(&mut self, node: usize) {
        let Some((batch, _)) = self.nodes.get_mut(node).and_then(Option::take) else {
            return;
        };
        if let Some(Some((_, live))) = self.batches.get_mut(batch) {
            *live -= 1;
            if *live == 0 {
                if let Some((buffer, _)) = self.batches[batch].take() {
                    self.spare(buffer);
                }
            }
        }
    }
}

/// [`boost_kernels::partition::split_index_entry`] for `b` in `0..entries`, in one sweep: the
/// entries' positions grow with `b`, so the count of `begins` (sorted) at or below each only moves
/// forward. A binary search an entry cost a deep level of 100M rows about 0.5 ms of host time.
fn split_index(begins: &[u32], entries: usize) -> Vec<u32> {
    let mut index = Vec::with_capacity(entries.next_multiple_of(2));
    let mut at_or_below = 0;
    for b in 0..entries {
        let position = (b as u64) << SPLIT_INDEX_SHIFT;
        while begins.get(at_or_below).is_some_and(|&begin| begin as u64 <= position) {
            at_or_below += 1;
        }
        index.push((at_or_below.max(1) - 1) as u32);
    }
    index
}

/// The GPU backend of the expansion driver ([`grow::grow`]): per batch of nodes, rows partitioned
/// on the device (flags, scan, scatter and counts: four launches, over the span of the batch's
/// rows), the smaller children's histograms built in one launch
/// (`DeviceHistogram::multi_feature_device_ranges`, from ranges the counts kernel wrote) and their
/// siblings' derived by subtraction (one launch), splits evaluated on the device
/// ([`evaluate_splits`], two launches). The host waits once a batch, for the splits, which the
/// driver needs; the counts of left rows come back with them. Gradient sums are exact fixed-point
/// integers, so the trees are the CPU builder's, bit for bit.
pub struct GpuBackend<'a> {
    gpu: &'a Gpu,
    cuts: &'a DeviceCuts,
    bins: &'a DeviceBins,
    bins_per_feature: usize,
    features: usize,
    first_bins: &'a [u32],
    /// The fixed-point gradients and their sum (the root's).
    gradients: &'a DeviceBuffer<Fixed>,
    root: Fixed,
    context: SplitContext,
    /// The nodes' ranges of the row order; its rows live on the device, read back only when asked.
    order: RowOrder,
    buffers: &'a mut RowBuffers,
    histograms: HistogramStore,
    /// The last partition, until its counts are read back.
    pending: Option<PendingPartition>,
    /// The histogram kernel's check of the row indices, read once a tree.
    bad_row: DeviceBuffer<u32>,
    /// Wall time of each step (each ends in a host synchronisation or is host work).
    phases: PhaseTimes,
}

/// A partition enqueued on the device whose counts of left rows the host has not read yet. Its
/// plan and results live in [`RowBuffers::batch`], as 32-bit words: each child slot's range
/// (`[begin, end]`, slots `2e` and `2e + 1` for expansion `e`), the counts (a word per sorted
/// split), room for the best splits of the children, and each pair's [`SubtractionPlan`]. One read
/// brings back the counts and the splits.
struct PendingPartition {
    expanded: Vec<Expansion<Fixed>>,
    /// Each split of the batch (sorted by position), as its index in `expanded`.
    sorted: Vec<usize>,
}

/// 32-bit words of a [`DeviceSplit`] and of a [`SubtractionPlan`] (both 8-byte aligned).
const SPLIT_WORDS: usize = size_of::<DeviceSplit>() / 4;
const PLAN_WORDS: usize = size_of::<SubtractionPlan>() / 4;

impl PendingPartition {
    fn counts_at(&self) -> usize {
        4 * self.expanded.len()
    }

    fn splits_at(&self) -> usize {
        self.counts_at() + self.expanded.len().next_multiple_of(2)
    }

    fn plans_at(&self) -> usize {
        self.splits_at() + 2 * self.expanded.len() * SPLIT_WORDS
    }

    fn words(&self) -> usize {
        self.plans_at() + self.expanded.len() * PLAN_WORDS
    }

    /// The counts of left rows per expansion, from the batch's words read back.
    fn lefts(&self, words: &[u32]) -> Vec<usize> {
        let mut lefts = vec![0usize; self.expanded.len()];
        for (&e, &count) in self.sorted.iter().zip(&words[self.counts_at()..]) {
            lefts[e] = count as usize;
        }
        lefts
    }
}

impl<'a> GpuBackend<'a> {
    /// A backend over the device copies of the cuts, the bins and the fixed-point gradients,
    /// whose sum is `root`; `buffers` sized for the gradients' rows.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: &'a Gpu,
        cuts: &'a DeviceCuts,
        bins: &'a DeviceBins,
        first_bins: &'a [u32],
        gradients: &'a DeviceBuffer<Fixed>,
        root: Fixed,
        buffers: &'a mut RowBuffers,
        context: SplitContext,
    ) -> Result<Self> {
        let rows = gradients.len();
        if buffers.identity.len() != rows {
            return Err(Error::InvalidData(format!("{rows} gradients, row buffers for {}", buffers.identity.len())));
        }
        buffers.rows.copy_from_device(gpu, &buffers.identity)?;
        let spares = std::mem::take(&mut buffers.histogram_spares);
        Ok(GpuBackend {
            gpu,
            cuts,
            bins,
            bins_per_feature: bins.layout.bins_per_feature,
            features: cuts.features,
            first_bins,
            gradients,
            root,
            context,
            order: RowOrder::ranges_only(rows),
            buffers,
            histograms: HistogramStore::with_spares(spares),
            pending: None,
            bad_row: gpu.upload(&[u32::MAX])?,
            phases: PhaseTimes::default(),
        })
    }

    fn slot_len(&self) -> usize {
        self.features * self.bins_per_feature
    }

    /// Builds the histograms of `built` from their rows into slots `0..` of a new buffer of `slots`
    /// slots (the others zero, for the caller to fill).
    fn build_histograms(&mut self, built: &[(usize, u32)], slots: usize) -> Result<DeviceBuffer<Fixed>> {
        let mut ranges = vec![(0u32, 0u32); slots];
        for &(node, slot) in built {
            let (begin, end) = self.order.range(node);
            ranges[slot as usize] = (begin as u32, end as u32);
        }
        let mut histograms = self.histograms.zeroed(self.gpu, slots * self.slot_len())?;
        let matrix = self.bins.matrix();
        DeviceHistogram::multi_feature_ranges(
            self.gpu,
            matrix,
            self.gradients,
            &self.buffers.rows,
            &ranges,
            &mut histograms,
            &mut self.bad_row,
        )?;
        Ok(histograms)
    }

    /// Moves each expanded node's left rows before its right rows, stably, on the device, and
    /// counts them there (read back with the next batch's splits, [`Self::settle`]), with the plan
    /// of the children's histograms.
    fn partition_on_device(&mut self, expanded: &[Expansion<Fixed>]) -> Result<()> {
        // The nodes' ranges come from the last partition's counts.
        self.settle(None)?;
        let mut splits: Vec<(PartitionSplit, usize)> = Vec::with_capacity(expanded.len());
        for (i, e) in expanded.iter().enumerate() {
            let (begin, end) = self.order.range(e.node);
            let feature = e.split.feature as usize;
            let split = PartitionSplit {
                begin: begin as u32,
                end: end as u32,
                feature: feature as u32,
                default_left: e.split.default_left as u32,
                last_left: e.split.last_left_bin - self.first_bins[feature] as i64,
            };
            splits.push((split, i));
        }
        splits.sort_unstable_by_key(|(split, _)| split.begin);
        // Only the span of the batch's rows is partitioned (lossguide splits one node at a time, and
        // a depthwise level's leaves may lie outside it): positions are rebased to the span.
        let span = match (splits.first(), splits.last()) {
            (Some(first), Some(last)) => first.0.begin as usize..last.0.end as usize,
            _ => return Ok(()),
        };
        // One upload: the rebased splits, then each one's children's slots (where the plan of their
        // histograms goes; the parent's sums are in its batch's buffer).
        let mut upload: Vec<u64> = Vec::with_capacity(splits.len() * 5);
        for &(split, _) in &splits {
            let rebased =
                PartitionSplit { begin: split.begin - span.start as u32, end: split.end - span.start as u32, ..split };
            upload.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&rebased)));
        }
        // The split index when the batch has more than a few splits (a depthwise level): a few
        // kilobytes that spare every position a binary search over the batch.
        let index_at = upload.len();
        let index_entries = if splits.len() > 4 { (span.len() >> SPLIT_INDEX_SHIFT) + 2 } else { 0 };
        if index_entries > 0 {
            let begins: Vec<u32> = splits.iter().map(|(split, _)| split.begin - span.start as u32).collect();
            let mut entries = split_index(&begins, index_entries);
            entries.resize(index_entries.next_multiple_of(2), 0);
            upload.extend_from_slice(bytemuck::cast_slice(&entries));
        }
        let children_at = upload.len();
        let slot_bytes = (self.slot_len() * size_of::<Fixed>()) as u64;
        for &(_, i) in &splits {
            let node = expanded[i].node;
            let (batch, slot) = self
                .histograms
                .slot(node)
                .ok_or_else(|| Error::InvalidData(format!("node {node} is split before its histogram is built")))?;
            let parent = self
                .histograms
                .buffer(batch)
                .ok_or_else(|| {
                    Error::InvalidData(format!("histogram batch {batch} was freed while node {node} needs it"))
                })?
                .device_ptr()
                + slot as u64 * slot_bytes;
            let child = ChildSlots { pair: i as u32, padding: 0, parent };
            upload.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&child)));
        }
        let b = &mut *self.buffers;
        let uploaded = b.partition_upload.upload(self.gpu, &upload)?.device_ptr();
        let (splits_ptr, children_ptr) = (uploaded, uploaded + 8 * children_at as u64);
        let index_ptr = if index_entries > 0 { uploaded + 8 * index_at as u64 } else { 0 };
        let pending =
            PendingPartition { expanded: expanded.to_vec(), sorted: splits.iter().map(|&(_, i)| i).collect() };
        let batch = b.batch.at_least(self.gpu, pending.words())?.device_ptr();
        let word = |at: usize| batch + (at * size_of::<u32>()) as u64;
        let (n, whole) = (span.len(), span.len() == self.gradients.len());
        let offset = (span.start * size_of::<u32>()) as u64;
        let num_splits = splits.len() as u64;
        let module = crate::KERNELS;
        // The span's flags and their sums in the first `n + 1` entries of the whole buffers; the
        // flags kernel writes every flag, the one after the last 0.
        let args = [
            b.rows.device_ptr() + offset,
            n as u64,
            self.bins.words.device_ptr(),
            self.bins.layout.row_words as u64,
            self.bins.layout.bits as u64,
            splits_ptr,
            num_splits,
            index_ptr,
            b.flags.device_ptr(),
        ];
        // SAFETY: `rows` from the span's start holds `n` indices of rows of `bins` (packed rows of
        // `features` ids), the splits are sorted by `begin` and rebased to the span, with features below
        // `features`, their index (when given) the `(n >> SPLIT_INDEX_SHIFT) + 2` entries of
        // `split_index_entry`; `flags` holds at least `n + 1` flags (the whole order's `rows + 1`),
        // one thread each.
        unsafe { self.gpu.launch(module, "boost_partition_flags", element_config(n + 1)?, &args)? };
        DeviceScan::exclusive_sum_n(self.gpu, &b.flags, &mut b.scan, n + 1)?;
        let args = [
            b.rows.device_ptr() + offset,
            n as u64,
            splits_ptr,
            num_splits,
            index_ptr,
            b.flags.device_ptr(),
            b.scan.device_ptr(),
            b.spare.device_ptr() + offset,
        ];
        // SAFETY: as above; `scan` holds the `n + 1` exclusive sums of the flags, `spare` from the
        // span's start room for `n` rows; each split's range lies within the span, so every
        // destination does.
        unsafe { self.gpu.launch(module, "boost_partition_scatter", element_config(n)?, &args)? };
        if whole {
            std::mem::swap(&mut b.rows, &mut b.spare);
        } else {
            b.rows.copy_range_from_device(self.gpu, &b.spare, span.clone(), span.start)?;
        }
        let args = [
            b.scan.device_ptr(),
            splits_ptr,
            num_splits,
            word(pending.counts_at()),
            children_ptr,
            span.start as u64,
            word(0),
            word(pending.plans_at()),
        ];
        // SAFETY: `scan` holds `n + 1` sums and every range ends at most at `n`; the batch's words
        // have room for two ranges and a plan per expansion and a count per split (`words()`); each
        // child slot's pair is its split's expansion, so the pairs are distinct.
        unsafe { self.gpu.launch(module, "boost_partition_counts", element_config(splits.len())?, &args)? };
        self.pending = Some(pending);
        Ok(())
    }

    /// Records the last partition's children's ranges, from the batch's words read back with other
    /// results or else read now (a wait).
    fn settle(&mut self, words: Option<&[u32]>) -> Result<()> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let lefts = match words {
            Some(words) => pending.lefts(words),
            None => {
                let batch = self.buffers.batch.at_least(self.gpu, pending.words())?;
                pending.lefts(&batch.range_to_vec(self.gpu, 0..pending.splits_at())?)
            }
        };
        self.order.split(&pending.expanded, &lefts);
        Ok(())
    }

    /// The children's histograms of the pending partition's expansions (all of them: a batch's
    /// children share a depth), slots `2e` (left) and `2e + 1` (right) of one new buffer: the
    /// smaller's built from its rows within its half of the parent's range, the other's by
    /// subtraction from the parent's (which is released), as the counts kernel planned.
    fn children_on_device(&mut self, children: &[ChildHistograms]) -> Result<()> {
        let pending = self
            .pending
            .as_ref()
            .ok_or_else(|| Error::InvalidData("children's histograms asked for before their partition".into()))?;
        let pairs = pending.expanded.len();
        let all = children.len() == pairs
            && children
                .iter()
                .zip(&pending.expanded)
                .all(|(c, e)| (c.left, c.right, c.parent) == (e.left, e.right, e.node));
        if !all {
            return Err(Error::InvalidData(
                "the children's histograms of a batch are asked for some of its expansions, not all".into(),
            ));
        }
        // The smaller child has at most half the parent's rows: the left one lies in the first
        // half of its range, the right one in the second.
        let mut bounds = Vec::with_capacity(2 * pairs);
        for e in &pending.expanded {
            let (begin, end) = self.order.range(e.node);
            let half = (end - begin) / 2;
            bounds.extend([(begin as u32, (begin + half) as u32), ((end - half) as u32, end as u32)]);
        }
        let plans = pending.plans_at();
        let batch = self.buffers.batch.get().ok_or_else(|| Error::InvalidData("the batch's plan is missing".into()))?;
        let mut histograms = self.histograms.zeroed(self.gpu, 2 * pairs * self.slot_len())?;
        let matrix = self.bins.matrix();
        DeviceHistogram::multi_feature_device_ranges(
            self.gpu,
            matrix,
            self.gradients,
            &self.buffers.rows,
            &bounds,
            batch,
            &mut histograms,
            &mut self.bad_row,
        )?;
        let args = [
            histograms.device_ptr(),
            self.slot_len() as u64,
            batch.device_ptr() + (plans * size_of::<u32>()) as u64,
            pairs as u64,
        ];
        // SAFETY: each plan's small and large slots are its pair's two (below `2 * pairs`, every slot
        // `slot_len` sums), its parent the address of a live histogram's slot (the parents are
        // released below, after the enqueue: frees are stream-ordered).
        unsafe {
            self.gpu.launch(
                crate::KERNELS,
                "boost_histogram_subtract",
                element_config(pairs * self.slot_len())?,
                &args,
            )?
        };
        for c in children {
            self.histograms.release(c.parent);
        }
        let nodes: Vec<(usize, u32)> = children
            .iter()
            .enumerate()
            .flat_map(|(i, c)| [(c.left, 2 * i as u32), (c.right, 2 * i as u32 + 1)])
            .collect();
        self.histograms.insert(histograms, &nodes);
        Ok(())
    }

    /// The best splits of `nodes`; when they are the pending partition's children, read back
    /// with its counts (one wait).
    fn evaluate_batch(&mut self, nodes: &[(usize, Fixed, Vec<u32>)]) -> Result<Vec<Option<Split<Fixed>>>> {
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
        let best = words.device_ptr() + (at * size_of::<u32>()) as u64;
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
    fn evaluate_level_on_device(
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
        let args = [
            histograms.device_ptr(),
            prefix.device_ptr(),
            nodes.len() as u64,
            slot_len as u64,
            bpf as u64,
            totals_d.device_ptr(),
            gains_d.device_ptr(),
            features_d.device_ptr(),
            features.len() as u64,
            self.cuts.cut_ptrs.device_ptr(),
            context.device_ptr(),
        ];
        let stage = |stage: u64, feature: u64, candidate: u64, out: u64| {
            let mut all = args.to_vec();
            all.extend([stage, feature, candidate, out]);
            all
        };
        let (module, kernel) = (crate::KERNELS, "boost_split_level");
        let warps = warp_per_block_config(nodes.len() * features.len())?;
        // SAFETY: the level's nodes are slots `0..nodes` of `histograms` (checked), `slot_len` sums
        // each in the padded layout of `bpf` bins a feature; `prefix` as large; a total and a gain a
        // node; the features are the cuts' (the driver's sample); whole warps.
        unsafe { gpu.launch(module, kernel, warps, &stage(0, 0, 0, 0))? };
        let candidates = gpu.alloc_uninitialized::<f64>(features.len() * 2 * bpf)?;
        let out = candidates.device_ptr();
        // SAFETY: as above, after the prefix sums; `candidates` holds a value per (feature, candidate).
        unsafe { gpu.launch(module, kernel, element_config(candidates.len())?, &stage(1, 0, 0, out))? };
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
        let choice = stage(2, best.feature as u64, best.candidate as u64, children.device_ptr());
        // SAFETY: as above; the feature is one of the level's; `children` holds two pairs a node.
        unsafe { gpu.launch(module, kernel, element_config(nodes.len())?, &choice)? };
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

    /// Reads the row check and, when `read_rows`, the row order (each row's leaf follows from the
    /// nodes' ranges).
    fn finish(&mut self, read_rows: bool) -> Result<()> {
        self.settle(None)?;
        if read_rows {
            self.order.rows = self.buffers.rows.to_vec(self.gpu)?;
        }
        let bad = self.bad_row.to_vec(self.gpu)?[0];
        if bad != u32::MAX {
            return Err(Error::InvalidData(format!("row order position {bad} holds no row of the matrix")));
        }
        Ok(())
    }
}

impl GrowBackend<Fixed> for GpuBackend<'_> {
    type Error = Error;

    fn total(&mut self) -> Result<Fixed> {
        Ok(self.root)
    }

    fn root_histogram(&mut self) -> Result<()> {
        let start = Instant::now();
        let histograms = self.build_histograms(&[(0, 0)], 1)?;
        self.histograms.insert(histograms, &[(0, 0)]);
        self.phases.add("tree: histograms", start.elapsed());
        Ok(())
    }

    fn partition(&mut self, expanded: &[Expansion<Fixed>]) -> Result<()> {
        let start = Instant::now();
        self.partition_on_device(expanded)?;
        self.phases.add("tree: partitions", start.elapsed());
        Ok(())
    }

    fn children_histograms(&mut self, children: &[ChildHistograms]) -> Result<()> {
        if children.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        self.children_on_device(children)?;
        self.phases.add("tree: histograms", start.elapsed());
        Ok(())
    }

    fn evaluate(&mut self, nodes: &[(usize, Fixed, Vec<u32>)]) -> Result<Vec<Option<Split<Fixed>>>> {
        let start = Instant::now();
        let splits = self.evaluate_batch(nodes);
        self.phases.add("tree: evaluation", start.elapsed());
        splits
    }

    fn evaluate_level(&mut self, nodes: &[(usize, Fixed)], features: &[u32]) -> Result<Option<Vec<Split<Fixed>>>> {
        let start = Instant::now();
        self.settle(None)?;
        let splits = self.evaluate_level_on_device(nodes, features);
        self.phases.add("tree: evaluation", start.elapsed());
        splits
    }

    fn release(&mut self, node: usize) {
        self.histograms.release(node);
    }
}

impl Drop for GpuBackend<'_> {
    /// Hands the tree's histogram buffers to the next tree's backend.
    fn drop(&mut self) {
        self.buffers.histogram_spares = std::mem::take(&mut self.histograms).into_spares();
    }
}

/// What the GPU backend keeps on the device for a whole training run: the cuts, every row's bins
/// ([`local_bins`]) and the row-order buffers, made once; each tree then uploads only its gradients.
pub struct GpuTrainer<'g> {
    gpu: &'g Gpu,
    cuts: DeviceCuts,
    first_bins: Vec<u32>,
    rows: usize,
    bins: DeviceBins,
    buffers: RowBuffers,
    /// Labels, weights and margins when the device computes the gradients.
    device_rows: Option<DeviceRows>,
    quantise_scratch: QuantiseScratch,
    /// The steps of every tree built so far.
    phases: PhaseTimes,
}

impl<'g> GpuTrainer<'g> {
    /// Uploads the cuts and the bins of `matrix`.
    pub fn new(gpu: &'g Gpu, matrix: &EllpackMatrix, cuts: &QuantileCuts) -> Result<Self> {
        let bins = DeviceBins::upload(gpu, local_bins(matrix, cuts)?)?;
        Self::with_bins(gpu, DeviceCuts::upload(gpu, cuts)?, cuts, matrix.rows, bins)
    }

    /// Uploads the cuts and quantises `features` with them on the device: the bins
    /// [`GpuTrainer::new`] uploads from the CPU's matrix of the same features, without that matrix.
    pub fn from_features(gpu: &'g Gpu, features: &FeatureMatrix, cuts: &QuantileCuts) -> Result<Self> {
        let device_cuts = DeviceCuts::upload(gpu, cuts)?;
        let bins = bins::device_bins(gpu, features, cuts, &device_cuts)?;
        Self::with_bins(gpu, device_cuts, cuts, features.rows(), bins)
    }

    /// The trainer of `rows x cols` dense row-major values already in device memory (NaN:
    /// missing), quantised there with `cuts` (the cuts of these rows, as [`device_cuts`] makes
    /// them): the bins [`GpuTrainer::from_features`] makes of the same rows on the host.
    pub fn from_device_rows(
        gpu: &'g Gpu,
        values: &DeviceBuffer<f32>,
        (rows, cols): (usize, usize),
        cuts: &QuantileCuts,
    ) -> Result<Self> {
        if rows.checked_mul(cols) != Some(values.len()) || cols != cuts.features() {
            return Err(Error::InvalidData(format!(
                "{} device values for {rows} rows of {cols} features, cuts of {} features",
                values.len(),
                cuts.features()
            )));
        }
        csr::check_dense_finite(gpu, values, (rows, cols))?;
        let device_cuts = DeviceCuts::upload(gpu, cuts)?;
        let bins = bins::device_rows_bins(gpu, values, rows, cuts, &device_cuts)?;
        Self::with_bins(gpu, device_cuts, cuts, rows, bins)
    }

    /// The trainer of CSR rows already in device memory, quantised there with `cuts` (the cuts of
    /// these rows, as [`device_cuts_csr`] makes them).
    pub fn from_device_csr(gpu: &'g Gpu, csr: &DeviceCsr, cuts: &QuantileCuts) -> Result<Self> {
        csr.check_on(gpu)?;
        let rows = csr.rows();
        let device_cuts = DeviceCuts::upload(gpu, cuts)?;
        let bins = bins::device_csr_bins(gpu, csr, cuts, &device_cuts)?;
        Self::with_bins(gpu, device_cuts, cuts, rows, bins)
    }

    /// Bytes of the quantised matrix on the device (packed rows, [`BinLayout`]).
    pub fn bins_bytes(&self) -> usize {
        self.bins.bytes()
    }

    fn with_bins(
        gpu: &'g Gpu,
        device_cuts: DeviceCuts,
        cuts: &QuantileCuts,
        rows: usize,
        bins: DeviceBins,
    ) -> Result<Self> {
        Ok(GpuTrainer {
            gpu,
            cuts: device_cuts,
            first_bins: cuts.cut_ptrs.clone(),
            rows,
            bins,
            buffers: RowBuffers::new(gpu, rows)?,
            device_rows: None,
            quantise_scratch: QuantiseScratch::default(),
            phases: PhaseTimes::default(),
        })
    }

    /// Wall time of the tree-building steps so far.
    pub fn phases(&self) -> &PhaseTimes {
        &self.phases
    }

    /// The device this trainer runs on.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// The quantiser of `gradients` (the one [`GradientQuantiser::new`] makes on the host, from the
    /// same blocked sums), with the gradients in fixed point on the device and their sum. Waits twice:
    /// for the block sums and for the block totals.
    pub fn quantise(
        &mut self,
        gradients: &[GradientPair<f32>],
    ) -> Result<(GradientQuantiser, DeviceBuffer<Fixed>, Fixed)> {
        let device_gradients = self.gpu.upload(gradients)?;
        // SAFETY: the buffer holds `gradients.len()` pairs.
        unsafe { self.quantise_on_device(device_gradients.device_ptr(), gradients.len()) }
    }

    /// [`GpuTrainer::quantise`] of the `n` gradients already on the device at `gradients`.
    ///
    /// # Safety
    /// `gradients` is the device address of `n` gradient pairs that outlive the call.
    unsafe fn quantise_on_device(
        &mut self,
        gradients: u64,
        n: usize,
    ) -> Result<(GradientQuantiser, DeviceBuffer<Fixed>, Fixed)> {
        // SAFETY: forwarded.
        let sums = unsafe { self.quantiser_block_sums(gradients, n)? };
        let sums = sums.into_iter().fold(QuantiserSums::zero(), BlockSum::plus);
        let quantiser = GradientQuantiser::from_sums(sums.positive, sums.negative, n);
        // SAFETY: forwarded.
        let (fixed, root) = unsafe { self.quantise_fixed(gradients, n, &quantiser)? };
        Ok((quantiser, fixed, root))
    }

    /// The quantiser's sums of each block of [`boost_kernels::reduce::SUM_BLOCK`] of the `n`
    /// gradients at `gradients`, read back (one wait): the host adds them in order.
    ///
    /// # Safety
    /// As [`GpuTrainer::quantise_on_device`]'s.
    unsafe fn quantiser_block_sums(&mut self, gradients: u64, n: usize) -> Result<Vec<QuantiserSums>> {
        let blocks = reduce::blocks(n);
        let config = warp_per_block_config(blocks)?;
        let block_sums = self.quantise_scratch.sums.at_least(self.gpu, blocks)?;
        let args = [gradients, n as u64, block_sums.device_ptr()];
        // SAFETY: `n` gradients, a sum per block; the grid is whole warps, one per block.
        unsafe { self.gpu.launch(crate::KERNELS, "boost_quantise_sums", config, &args)? };
        Ok(block_sums.range_to_vec(self.gpu, 0..blocks)?)
    }

    /// The `n` gradients at `gradients` in fixed point by `quantiser`, and their sum (one wait).
    ///
    /// # Safety
    /// As [`GpuTrainer::quantise_on_device`]'s.
    unsafe fn quantise_fixed(
        &mut self,
        gradients: u64,
        n: usize,
        quantiser: &GradientQuantiser,
    ) -> Result<(DeviceBuffer<Fixed>, Fixed)> {
        let blocks = reduce::blocks(n);
        let config = warp_per_block_config(blocks)?;
        let scratch = &mut self.quantise_scratch;
        let quantiser_buffer = scratch.quantiser.upload(self.gpu, std::slice::from_ref(quantiser))?.device_ptr();
        // The fixed-point gradients of the last tree, when their buffer has the length (the kernel
        // writes every element).
        let fixed = match scratch.fixed.take() {
            Some(fixed) if fixed.len() == n => fixed,
            _ => self.gpu.alloc_zeroed::<Fixed>(n)?,
        };
        let block_totals = scratch.totals.at_least(self.gpu, blocks)?;
        let args = [gradients, n as u64, quantiser_buffer, fixed.device_ptr(), block_totals.device_ptr()];
        // SAFETY: `n` gradients and fixed-point slots, one quantiser, a total per block; whole warps.
        unsafe { self.gpu.launch(crate::KERNELS, "boost_quantise_fixed", config, &args)? };
        let root = block_totals.range_to_vec(self.gpu, 0..blocks)?.into_iter().fold(Fixed::zero(), BlockSum::plus);
        Ok((fixed, root))
    }

    /// Grows one tree (see [`GpuBackend`]) from `gradients`, one per row, quantised on the device;
    /// returns it with each row's leaf, as [`crate::tree::hist::HistBuilder::build`] does on the CPU
    /// with [`GradientQuantiser::new`], drawing the same random numbers from `rng`.
    pub fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<crate::tree::hist::BuiltTree> {
        if gradients.len() != self.rows {
            return Err(Error::InvalidData(format!(
                "{} gradients for a matrix of {} rows",
                gradients.len(),
                self.rows
            )));
        }
        let start = Instant::now();
        let (quantiser, fixed, root) = self.quantise(gradients)?;
        self.phases.add("tree: quantise", start.elapsed());
        let (tree, order) = self.grow(params, quantiser, &fixed, root, features, true, rng)?;
        self.quantise_scratch.fixed = Some(fixed);
        let start = Instant::now();
        let positions = order.positions(&tree);
        self.phases.add("tree: positions", start.elapsed());
        // The trainer keeps its own phases (`GpuTrainer::phases`), merged once at the end of a run.
        Ok(crate::tree::hist::BuiltTree { tree, positions, phases: PhaseTimes::default() })
    }

    /// Grows one tree from fixed-point gradients on the device; returns it with the row order: its
    /// nodes' ranges, and its rows read back from the device when `read_rows`.
    #[allow(clippy::too_many_arguments)]
    fn grow(
        &mut self,
        params: &TreeParams,
        quantiser: GradientQuantiser,
        fixed: &DeviceBuffer<Fixed>,
        root: Fixed,
        features: &[u32],
        read_rows: bool,
        rng: &mut impl rand::Rng,
    ) -> Result<(Tree, RowOrder)> {
        let context = SplitContext { params: params.split(), quantiser };
        let mut backend = GpuBackend::new(
            self.gpu,
            &self.cuts,
            &self.bins,
            &self.first_bins,
            fixed,
            root,
            &mut self.buffers,
            context,
        )?;
        let tree = grow::grow(&mut backend, params, &quantiser, features, fixed.len(), rng)?;
        let start = Instant::now();
        backend.finish(read_rows)?;
        backend.phases.add("tree: row check and order read back", start.elapsed());
        let order = std::mem::replace(&mut backend.order, RowOrder::ranges_only(0));
        self.phases.merge(&backend.phases);
        Ok((tree, order))
    }

    /// Keeps the training rows' labels, weights and `margins` (one per output) on the
    /// device, so that [`GpuTrainer::compute_gradients`] and [`GpuTrainer::boost_tree`] compute the
    /// gradients of `objective` there and update the margins themselves.
    pub fn keep_rows_on_device(
        &mut self,
        objective: DeviceObjective,
        info: &MetaInfo,
        margins: InitialMargins<'_>,
    ) -> Result<()> {
        let n = self.rows;
        if info.labels.len() != n {
            return Err(Error::InvalidData(format!("{} labels for {n} rows", info.labels.len())));
        }
        let set = MetricRows::new(self.gpu, objective, info, margins)?;
        let (gradients, leaf_quantile) = match objective {
            DeviceObjective::Elementwise(objective) => {
                (RowGradients::Elementwise(self.gpu.upload(&[objective])?), objective.leaf_quantile())
            }
            DeviceObjective::Softmax { classes } => (
                RowGradients::PerRound { outputs: classes, all: self.gpu.alloc_zeroed(n * classes)?, rank: None },
                None,
            ),
            DeviceObjective::LambdaRank(params) => {
                let rank = Some(Box::new(RankGradients::new(self.gpu, params, info)?));
                (RowGradients::PerRound { outputs: 1, all: self.gpu.alloc_zeroed(n)?, rank }, None)
            }
        };
        self.device_rows = Some(DeviceRows {
            set,
            tree_gradients: self.gpu.alloc_zeroed(n)?,
            gradients,
            leaf_quantile,
            adaptive: AdaptiveScratch::default(),
        });
        Ok(())
    }

    fn device_rows(&self) -> Result<&DeviceRows> {
        self.device_rows.as_ref().ok_or_else(no_device_rows)
    }

    /// The gradients of round `iteration` of every output, from the margins at the round's start,
    /// for the softmax and ranking objectives; an element-wise objective's come with its tree
    /// ([`GpuTrainer::boost_tree`]), sampled as they are computed.
    pub fn compute_gradients(&mut self, iteration: usize) -> Result<()> {
        let start = Instant::now();
        let rows = self.device_rows.as_mut().ok_or_else(no_device_rows)?;
        if let RowGradients::PerRound { all, rank: Some(rank), .. } = &mut rows.gradients {
            rank.compute(self.gpu, &rows.set.margins, &rows.set.labels, &self.buffers.identity, iteration, all)?;
        }
        if let RowGradients::PerRound { outputs: classes, all, rank: None } = &rows.gradients {
            let n = self.rows;
            let args = [
                rows.set.margins.device_ptr(),
                rows.set.labels.device_ptr(),
                rows.set.weights_ptr(),
                n as u64,
                *classes as u64,
                all.device_ptr(),
            ];
            // SAFETY: margins and the gradients hold `n * classes` values, labels (and the weights when
            // given) `n`.
            unsafe { self.gpu.launch(crate::KERNELS, "boost_objective_softmax_gradients", element_config(n)?, &args)? };
        }
        self.phases.add("tree: gradients and quantise", start.elapsed());
        Ok(())
    }

    /// Output `output`'s tree of a boosting round on the device, for the rows
    /// [`GpuTrainer::keep_rows_on_device`] keeps: its gradients (zero for the rows `sampler` leaves
    /// out), the tree, and each row's leaf value added to its margin of that output. Returns the tree,
    /// as the CPU builder grows it from the same gradients. Call [`GpuTrainer::compute_gradients`]
    /// first in each round.
    pub fn boost_tree(
        &mut self,
        params: &TreeParams,
        output: usize,
        sampler: RowSampler,
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<Tree> {
        let start = Instant::now();
        let gradients = self.tree_gradients(output, sampler)?;
        // SAFETY: `gradients` is `rows` pairs of the device rows' buffers, kept for the training run.
        let (quantiser, fixed, root) = unsafe { self.quantise_on_device(gradients, self.rows)? };
        self.phases.add("tree: gradients and quantise", start.elapsed());
        let (mut tree, order) = self.grow(params, quantiser, &fixed, root, features, false, rng)?;
        self.quantise_scratch.fixed = Some(fixed);
        self.add_tree_leaves(params, &mut tree, &order, output, gradients)?;
        Ok(tree)
    }

    /// Output `output`'s gradients of the tree about to be grown (zero for the rows `sampler` leaves
    /// out; row `i` of this trainer is the sampler's row `i`): the device address of `rows` pairs in
    /// the device rows' buffers.
    fn tree_gradients(&mut self, output: usize, sampler: RowSampler) -> Result<u64> {
        let n = self.rows;
        let rows = self.device_rows()?;
        let outputs = rows.gradients.outputs();
        if output >= outputs {
            return Err(Error::InvalidData(format!("output {output} of an objective with {outputs}")));
        }
        let weights = rows.set.weights_ptr();
        Ok(match &rows.gradients {
            RowGradients::Elementwise(objective) => {
                let args = [
                    rows.set.margins.device_ptr(),
                    rows.set.labels.device_ptr(),
                    weights,
                    sampler.key,
                    sampler.threshold,
                    n as u64,
                    objective.device_ptr(),
                    rows.tree_gradients.device_ptr(),
                ];
                // SAFETY: margins, labels, gradients (and the weights when given) hold `n` values.
                unsafe { self.gpu.launch(crate::KERNELS, "boost_objective_gradients", element_config(n)?, &args)? };
                rows.tree_gradients.device_ptr()
            }
            // Output `output`'s gradients are the `n` pairs from `output * n` of the round's.
            RowGradients::PerRound { all: round, .. } => {
                let column = round.device_ptr() + (output * n * std::mem::size_of::<GradientPair<f32>>()) as u64;
                if sampler == RowSampler::ALL {
                    column
                } else {
                    let args = [column, sampler.key, sampler.threshold, n as u64, rows.tree_gradients.device_ptr()];
                    // SAFETY: the column and the tree's gradients hold `n` pairs.
                    unsafe { self.gpu.launch(crate::KERNELS, "boost_objective_sample", element_config(n)?, &args)? };
                    rows.tree_gradients.device_ptr()
                }
            }
        })
    }

    /// Adds each row's leaf value of `tree` (grown over this trainer's rows, `order` their leaves'
    /// ranges) to its margin of output `output`, after refreshing the leaves to their residuals'
    /// quantile for the objectives that ask (from `gradients`, the tree's, at that address).
    fn add_tree_leaves(
        &mut self,
        params: &TreeParams,
        tree: &mut Tree,
        order: &RowOrder,
        output: usize,
        gradients: u64,
    ) -> Result<()> {
        let n = self.rows;
        let start = Instant::now();
        let mut leaves: Vec<(usize, LeafRange)> = (0..tree.len().min(order.nodes()))
            .filter(|&id| tree.is_leaf(id))
            .map(|id| {
                let (begin, end) = order.range(id);
                (id, LeafRange { begin: begin as u32, end: end as u32, value: tree.split_conditions[id], padding: 0 })
            })
            .collect();
        leaves.sort_unstable_by_key(|(_, leaf)| leaf.begin);
        let mut leaves: (Vec<usize>, Vec<LeafRange>) = leaves.into_iter().unzip();
        let rows = self.device_rows.as_mut().ok_or_else(no_device_rows)?;
        let outputs = rows.gradients.outputs();
        if let Some(alpha) = rows.leaf_quantile {
            let inputs = ResidualInputs {
                labels: rows.set.labels.device_ptr(),
                weights: rows.set.weights_ptr(),
                margins: rows.set.margins.device_ptr(),
                outputs,
                output,
                gradients,
            };
            let quantiles =
                adaptive::leaf_quantiles(self.gpu, &mut rows.adaptive, &self.buffers.rows, &leaves.1, &inputs, alpha)?;
            for ((&id, leaf), q) in leaves.0.iter().zip(&mut leaves.1).zip(quantiles) {
                tree.split_conditions[id] =
                    boost_kernels::adaptive::refreshed_leaf(q, tree.split_conditions[id], params.eta);
                leaf.value = tree.split_conditions[id];
            }
            self.phases.add("tree: leaves refreshed", start.elapsed());
        }
        let start = Instant::now();
        // Leaves without rows here (a device's shard may have none in a leaf) would tie with their
        // neighbour's `begin` in the kernel's search: they add nothing, so they are left out.
        let leaves: Vec<LeafRange> = leaves.1.into_iter().filter(|leaf| leaf.begin < leaf.end).collect();
        let leaves_buffer = self.gpu.upload(&leaves)?;
        let rows = self.device_rows()?;
        let args = [
            self.buffers.rows.device_ptr(),
            n as u64,
            leaves_buffer.device_ptr(),
            leaves.len() as u64,
            rows.set.margins.device_ptr(),
            outputs as u64,
            output as u64,
        ];
        // SAFETY: the row order holds `n` distinct rows; the leaves' ranges, sorted, partition `0..n`;
        // `outputs` margins per row.
        unsafe { self.gpu.launch(crate::KERNELS, "boost_objective_add_leaves", element_config(n)?, &args)? };
        self.phases.add("tree: margins", start.elapsed());
        Ok(())
    }

    /// `metric` of the training rows' predictions; see `MetricRows::evaluate`.
    pub fn evaluate(&mut self, metric: DeviceMetric, transform: Transform) -> Result<f64> {
        let gpu = self.gpu;
        let rows = self.device_rows.as_mut().ok_or_else(no_device_rows)?;
        rows.set.evaluate(gpu, metric, transform)
    }

    /// A row-wise `metric`'s block sums over the training rows (see `MetricRows::loss_block_sums`).
    fn loss_block_sums(
        &mut self,
        metric: DeviceMetric,
        transform: Transform,
    ) -> Result<Option<Vec<boost_kernels::metric::LossSum>>> {
        let gpu = self.gpu;
        let rows = self.device_rows.as_mut().ok_or_else(no_device_rows)?;
        rows.set.loss_block_sums(gpu, metric, transform)
    }

    /// The training rows' margins, read back from the device.
    pub fn margins(&self) -> Result<Vec<f32>> {
        self.device_rows()?.set.read_margins(self.gpu)
    }
}

/// The quantiser's device scratch, kept for the training run: each tree's block sums, quantiser and
/// fixed-point gradients reuse the last tree's buffers (no allocation or memset a tree).
#[derive(Default)]
struct QuantiseScratch {
    sums: Kept<QuantiserSums>,
    quantiser: Kept<GradientQuantiser>,
    totals: Kept<Fixed>,
    fixed: Option<DeviceBuffer<Fixed>>,
}

/// The training rows as [`GpuTrainer::keep_rows_on_device`] keeps them on the device.
struct DeviceRows {
    /// Labels, weights and margins, with the metrics' scratch.
    set: MetricRows,
    /// One tree's gradients (sampled).
    tree_gradients: DeviceBuffer<GradientPair<f32>>,
    gradients: RowGradients,
    /// The quantile of the residuals that each tree's leaves are refreshed to (absolute error).
    leaf_quantile: Option<f64>,
    adaptive: AdaptiveScratch,
}

fn no_device_rows() -> Error {
    Error::InvalidData("no training rows on the device".into())
}

/// How the device computes the gradients.
enum RowGradients {
    /// An element-wise objective's kernel, for each tree.
    Elementwise(DeviceBuffer<ElementwiseObjective>),
    /// Every output's gradients once a round (`all`, class-major): the softmax's kernel, or with
    /// `rank`, the ranking kernels.
    PerRound { outputs: usize, all: DeviceBuffer<GradientPair<f32>>, rank: Option<Box<RankGradients>> },
}

impl RowGradients {
    fn outputs(&self) -> usize {
        match self {
            RowGradients::Elementwise(_) => 1,
            RowGradients::PerRound { outputs, .. } => *outputs,
        }
    }
}

/// One warp per block of [`reduce::SUM_BLOCK`] items, four warps a block.
fn warp_per_block_config(warps: usize) -> Result<LaunchConfig> {
    const WARPS: usize = 4;
    let blocks = warps.div_ceil(WARPS).max(1);
    if blocks > i32::MAX as usize {
        return Err(Error::InvalidData(format!("{warps} warps are too many for one launch")));
    }
    Ok(LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (32 * WARPS as u32, 1, 1), shared_mem_bytes: 0 })
}

/// Grows one tree on `gpu`: [`GpuTrainer::build_tree`] for a single tree (uploads the matrix too).
pub fn build_tree(
    gpu: &Gpu,
    matrix: &EllpackMatrix,
    cuts: &QuantileCuts,
    params: &TreeParams,
    gradients: &[GradientPair<f32>],
    features: &[u32],
    rng: &mut impl rand::Rng,
) -> Result<crate::tree::hist::BuiltTree> {
    GpuTrainer::new(gpu, matrix, cuts)?.build_tree(params, gradients, features, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use primitives::Schedule;

    #[test]
    fn the_device_quantiser_is_the_hosts_bit_for_bit() {
        use rand::{Rng, SeedableRng};
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0] };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        // Sizes around a block (1024) and a warp, with signs, zeros and magnitudes mixed.
        for n in [0usize, 1, 31, 33, 1024, 1025, 5000] {
            let gradients: Vec<GradientPair<f32>> = (0..n)
                .map(|i| match i % 7 {
                    0 => GradientPair::new(0.0, 0.0),
                    1 => GradientPair::new(-rng.gen_range(0.0..1e3f32), rng.gen_range(0.0..1e-3)),
                    _ => GradientPair::new(rng.gen_range(-1.0..1.0f32), rng.gen_range(-0.1..1.0)),
                })
                .collect();
            let features: Vec<f32> = (0..n).map(|i| (i % 3) as f32).collect();
            let matrix = EllpackMatrix::new(
                &crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(n, 1, features)),
                &cuts,
            );
            let mut trainer = GpuTrainer::new(&gpu, &matrix, &cuts).unwrap();
            let (quantiser, fixed, root) = trainer.quantise(&gradients).unwrap();
            let host = GradientQuantiser::new(&gradients);
            assert_eq!(quantiser, host, "{n} gradients");
            let host_fixed: Vec<Fixed> = gradients.iter().map(|&g| host.to_fixed(g)).collect();
            assert_eq!(fixed.to_vec(&gpu).unwrap(), host_fixed, "{n} gradients");
            let host_root = host_fixed.iter().fold(Fixed::default(), |a, &b| crate::fixed_point::add(a, b));
            assert_eq!(root, host_root, "{n} gradients");
        }
    }

    #[test]
    fn the_device_auc_is_the_hosts_bit_for_bit() {
        use crate::metric::from_name;
        use boost_kernels::auc::AucCurve;
        use rand::{Rng, SeedableRng};
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 7 });
        let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0] };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        let objective =
            DeviceObjective::Elementwise(ElementwiseObjective { kind: ElementwiseObjective::LOGISTIC, parameter: 1.0 });
        // Sizes around a block and a sort tile; margins from a few values (large tie groups) or
        // continuous; labels 0/1 or fractional; with and without weights; one class only (NaN).
        for (case, n) in [1usize, 2, 33, 1025, 5000, 20_000].into_iter().enumerate() {
            let distinct = if case % 2 == 0 { 5 } else { 1 << 20 };
            let margins: Vec<f32> =
                (0..n).map(|_| rng.gen_range(0..distinct) as f32 / distinct as f32 * 8.0 - 4.0).collect();
            let labels: Vec<f32> = (0..n)
                .map(|i| {
                    if case == 3 {
                        rng.gen_range(0..5) as f32 / 4.0
                    } else if n == 2 {
                        1.0
                    } else {
                        (i % 3 == 0) as u8 as f32
                    }
                })
                .collect();
            let weights: Vec<f32> =
                if case % 3 == 1 { Vec::new() } else { (0..n).map(|_| rng.gen_range(0.1..3.0)).collect() };
            let info = MetaInfo { labels, weights, ..Default::default() };
            let matrix = EllpackMatrix::new(
                &crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(n, 1, vec![1.0; n])),
                &cuts,
            );
            let mut trainer = GpuTrainer::new(&gpu, &matrix, &cuts).unwrap();
            trainer.keep_rows_on_device(objective, &info, InitialMargins::Rows(&margins)).unwrap();
            let predictions: Vec<f32> = margins.iter().map(|&m| Transform::SIGMOID.apply(m)).collect();
            for (name, curve) in [("auc", AucCurve::ROC), ("aucpr", AucCurve::PR)] {
                let host = from_name(name).unwrap().evaluate(&predictions, &info, 1);
                let device = trainer.evaluate(DeviceMetric::Auc(curve), Transform::SIGMOID).unwrap();
                assert_eq!(device.to_bits(), host.to_bits(), "{name}, case {case}, {n} rows: {device} vs {host}");
                assert_eq!(host.is_nan(), n <= 2, "{name}, case {case}");
            }
        }
        // One-vs-rest over a softmax's 4 classes (class 3 has no rows in the first case: NaN).
        for (case, n) in [40usize, 3000].into_iter().enumerate() {
            let classes = 4;
            let margins: Vec<f32> = (0..n * classes).map(|_| rng.gen_range(0..6) as f32 - 3.0).collect();
            let labels: Vec<f32> = (0..n).map(|i| (i % (classes - 1 + case)) as f32).collect();
            let weights: Vec<f32> = (0..n).map(|_| rng.gen_range(0.5..2.0)).collect();
            let info = MetaInfo { labels, weights, ..Default::default() };
            let matrix = EllpackMatrix::new(
                &crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(n, 1, vec![1.0; n])),
                &cuts,
            );
            let mut trainer = GpuTrainer::new(&gpu, &matrix, &cuts).unwrap();
            trainer
                .keep_rows_on_device(DeviceObjective::Softmax { classes }, &info, InitialMargins::Rows(&margins))
                .unwrap();
            let predictions =
                crate::objective::Objective::eval_transform(&crate::objective::Softmax::new(classes, true), &margins);
            for (name, curve) in [("auc", AucCurve::ROC), ("aucpr", AucCurve::PR)] {
                let host = from_name(name).unwrap().evaluate(&predictions, &info, classes);
                let device = trainer.evaluate(DeviceMetric::Auc(curve), Transform::IDENTITY).unwrap();
                assert_eq!(device.to_bits(), host.to_bits(), "{name}, {classes} classes, {n} rows: {device} vs {host}");
                assert_eq!(host.is_nan(), case == 0, "{name}, case {case}");
            }
        }
    }

    #[test]
    fn the_device_quantises_the_features_as_the_cpu() {
        use crate::data::{CsrMatrix, DenseMatrix};
        use rand::{Rng, SeedableRng};
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 6 });
        let mut rng = rand::rngs::SmallRng::seed_from_u64(2);
        // Columns: continuous with missing values, all missing, constant, two values, heavy ties,
        // a column whose rows all have weight 0 in the cuts (no bins, values present).
        let (rows, cols) = (700, 6);
        let mut values = vec![0f32; rows * cols];
        for i in 0..rows {
            let row = &mut values[i * cols..(i + 1) * cols];
            row[0] = if i % 7 == 0 { f32::NAN } else { rng.gen_range(-3.0..3.0) };
            row[1] = f32::NAN;
            row[2] = 4.5;
            row[3] = if i % 2 == 0 { -1.0 } else { 1.0 };
            row[4] = rng.gen_range(0..5) as f32;
            row[5] = rng.gen_range(0.0..1.0);
        }
        let dense = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.clone()));
        for max_bin in [256usize, 3] {
            let cuts = QuantileCuts::build(&dense, &[], max_bin);
            let mut zero_weight_column = cuts.clone();
            zero_weight_column.cut_values.truncate(zero_weight_column.cut_ptrs[5] as usize);
            zero_weight_column.cut_ptrs[6] = zero_weight_column.cut_ptrs[5];
            for cuts in [cuts, zero_weight_column] {
                let ellpack = EllpackMatrix::new(&dense, &cuts);
                let (want, layout) = local_bins(&ellpack, &cuts).unwrap();
                // The host's packed rows against the CPU's bins, read bit by bit.
                for row in 0..rows {
                    for f in 0..cols {
                        let id = (0..layout.bits as usize).fold(0u32, |id, b| {
                            let bit = f * layout.bits as usize + b;
                            id | ((want[row * layout.row_words + bit / 32] >> (bit % 32)) & 1) << b
                        });
                        let bin = ellpack.bin_of(row, f, &cuts).map_or(layout.missing(), |b| b - cuts.cut_ptrs[f]);
                        assert_eq!(id, bin, "row {row}, feature {f}, max_bin {max_bin}");
                    }
                }
                let device_cuts = DeviceCuts::upload(&gpu, &cuts).unwrap();
                let got = bins::device_bins(&gpu, &dense, &cuts, &device_cuts).unwrap();
                assert_eq!(got.layout, layout);
                assert_eq!(got.words.to_vec(&gpu).unwrap(), want, "dense, max_bin {max_bin}");
                let on_device = gpu.upload(&values).unwrap();
                let got = bins::device_rows_bins(&gpu, &on_device, rows, &cuts, &device_cuts).unwrap();
                assert_eq!(got.words.to_vec(&gpu).unwrap(), want, "dense rows on the device, max_bin {max_bin}");
                // The same rows as CSR without their missing entries, and a few rows left empty.
                let mut csr = CsrMatrix { rows, cols, row_ptr: vec![0], col_indices: Vec::new(), values: Vec::new() };
                for i in 0..rows {
                    for c in 0..cols {
                        let v = values[i * cols + c];
                        if !v.is_nan() && i % 50 != 3 {
                            csr.col_indices.push(c as u32);
                            csr.values.push(v);
                        }
                    }
                    csr.row_ptr.push(csr.values.len());
                }
                let sparse = FeatureMatrix::Sparse(csr);
                let want = local_bins(&EllpackMatrix::new(&sparse, &cuts), &cuts).unwrap().0;
                let got = bins::device_bins(&gpu, &sparse, &cuts, &device_cuts).unwrap();
                assert_eq!(got.words.to_vec(&gpu).unwrap(), want, "CSR, max_bin {max_bin}");
            }
        }
    }

    #[test]
    fn the_device_ranking_metrics_are_the_hosts_bit_for_bit() {
        use crate::metric::{from_name, from_name_with_params, Metric, RankMetric, RankMetricKind};
        use boost_kernels::rank::LambdaRankParams;
        use rand::{Rng, SeedableRng};
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 4 });
        let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0] };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(8);
        let params = LambdaRankParams {
            kind: LambdaRankParams::NDCG,
            mean: 0,
            num_pair: 1,
            normalization: 1,
            score_normalization: 1,
            exp_gain: 1,
        };
        // Groups of many sizes (empty, one document, longer than the truncations), or no groups (one
        // group of every row, beyond a sort tile); margins from a few values (ties ranked in row
        // order) or continuous; graded labels for NDCG, binary ones for MAP and the PR curve (some
        // groups without a relevant document); with and without group weights.
        for (case, n) in [60usize, 1500, 5000].into_iter().enumerate() {
            let mut group_ptr = vec![0];
            if case < 2 {
                for size in [0usize, 1, 37, 5, 80, 13, 2, 3].into_iter().cycle() {
                    let last = *group_ptr.last().unwrap();
                    if last + size >= n {
                        break;
                    }
                    group_ptr.push(last + size);
                }
                group_ptr.push(n);
            } else {
                group_ptr.clear();
            }
            let groups = group_ptr.len().max(2) - 1;
            let distinct = if case == 1 { 1 << 20 } else { 4 };
            let margins: Vec<f32> = (0..n).map(|_| rng.gen_range(0..distinct) as f32 / distinct as f32 - 0.5).collect();
            let graded: Vec<f32> = (0..n).map(|i| if i % 11 < 3 { 0.0 } else { rng.gen_range(0..5) as f32 }).collect();
            let binary: Vec<f32> = graded.iter().map(|&y| (y >= 3.0) as u8 as f32).collect();
            let weights: Vec<f32> =
                if case == 0 { Vec::new() } else { (0..groups).map(|_| rng.gen_range(0.1..3.0)).collect() };
            let matrix = EllpackMatrix::new(
                &crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(n, 1, vec![1.0; n])),
                &cuts,
            );
            for labels in [graded, binary] {
                let map = labels.iter().all(|&y| y <= 1.0);
                let info =
                    MetaInfo { labels, weights: weights.clone(), group_ptr: group_ptr.clone(), ..Default::default() };
                let mut trainer = GpuTrainer::new(&gpu, &matrix, &cuts).unwrap();
                let objective = DeviceObjective::LambdaRank(params);
                trainer.keep_rows_on_device(objective, &info, InitialMargins::Rows(&margins)).unwrap();
                let mut metrics: Vec<Box<dyn Metric>> = if map {
                    ["map", "map@2", "map@3-", "map@100"].iter().map(|m| from_name(m).unwrap()).collect()
                } else {
                    ["ndcg", "ndcg@3", "ndcg@5-", "ndcg-"].iter().map(|m| from_name(m).unwrap()).collect()
                };
                if !map {
                    let linear = [("ndcg_exp_gain".to_string(), "false".to_string())];
                    metrics.push(from_name_with_params("ndcg@4", &linear).unwrap());
                    metrics.push(Box::new(RankMetric::new(RankMetricKind::Ndcg, None, None, false, true)));
                } else {
                    metrics.push(Box::new(RankMetric::new(RankMetricKind::Map, None, None, true, true)));
                }
                // The ranking AUC, per group (PR takes labels in [0, 1]).
                if !group_ptr.is_empty() {
                    metrics.push(from_name("auc").unwrap());
                    if map {
                        metrics.push(from_name("aucpr").unwrap());
                    }
                }
                for metric in &metrics {
                    let host = metric.evaluate(&margins, &info, 1);
                    let Some(device_metric) = metric.device_metric() else {
                        panic!("{}: not on the device", metric.name())
                    };
                    let device = trainer.evaluate(device_metric, Transform::IDENTITY).unwrap();
                    let name = metric.name();
                    assert_eq!(device.to_bits(), host.to_bits(), "{name}, case {case}, {n} rows: {device} vs {host}");
                    assert!((0.0..=1.0).contains(&host), "{name}, case {case}: {host}");
                }
            }
        }
    }

    #[test]
    fn the_split_index_sweep_is_the_entries_one_by_one() {
        use boost_kernels::partition::split_index_entry;
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        for splits in [1usize, 2, 5, 40, 128] {
            let mut begins: Vec<u32> = (0..splits).map(|_| rng.gen_range(0..1u32 << 20)).collect();
            begins.sort_unstable();
            begins[0] = rng.gen_range(0..3) << SPLIT_INDEX_SHIFT;
            let entries = ((1usize << 20) >> SPLIT_INDEX_SHIFT) + 2;
            let one_by_one: Vec<u32> = (0..entries).map(|b| split_index_entry(&begins, b)).collect();
            assert_eq!(split_index(&begins, entries), one_by_one, "{splits} splits");
        }
    }

    #[test]
    fn bad_batches_are_errors_not_faults() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0] };
        let device_cuts = DeviceCuts::upload(&gpu, &cuts).unwrap();
        let h = gpu.upload(&[Fixed::default(); 2]).unwrap();
        let context = SplitContext {
            params: crate::param::TreeParams::default().split(),
            quantiser: GradientQuantiser::new(&[GradientPair::new(1.0, 1.0)]),
        };
        let node =
            |slot, features: &[u32]| NodeToEvaluate { slot, total: Fixed::default(), features: features.to_vec() };
        let run = |nodes: &[NodeToEvaluate], layout| evaluate_splits(&gpu, &device_cuts, &h, layout, nodes, &context);
        let global = HistogramLayout::Global;
        assert!(matches!(run(&[node(0, &[1])], global), Err(Error::InvalidData(_))));
        assert!(matches!(run(&[node(1, &[0])], global), Err(Error::InvalidData(_))));
        assert!(matches!(run(&[node(0, &[0, 0])], global), Err(Error::InvalidData(_))));
        let narrow = HistogramLayout::Padded { bins_per_feature: 1 };
        assert!(matches!(run(&[node(0, &[0])], narrow), Err(Error::InvalidData(_))));
        assert!(run(&[], global).unwrap().is_empty());
        assert_eq!(run(&[node(0, &[])], global).unwrap(), vec![None]);
    }
}
