//! The GPU backend of `boost`, being built (issue: "boost trains on the GPU"): device copies of
//! the cuts and bins for a training run ([`GpuTrainer`]), histograms and split evaluation for a
//! batch of nodes, over the kernels of `boost-kernels`, whose arithmetic is the CPU builder's
//! (`boost_kernels::split`). Runs on a CUDA device or, in tests, on
//! the SIMT emulator. The GPU test suite (`tests/tests/gpu/boost_split.rs`) checks it against the
//! CPU builder's choice, on the emulator in `cargo test` and on a GPU with `--features gpu`.

use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, DeviceHistogram, Gpu, LaunchConfig, MultiFeatureMatrix};

pub use boost_kernels::evaluate::{DeviceSplit, SplitContext};
use boost_kernels::split::Split;

use crate::ellpack::EllpackMatrix;
use crate::fixed_point::GradientQuantiser;
use crate::param::TreeParams;
use crate::quantile::QuantileCuts;
use crate::tree::grow::{self, ChildHistograms, Expansion, GrowBackend, RowOrder};
use crate::{Error, Result};

type Fixed = GradientPair<i64>;

/// Threads per block of the evaluation kernels (one thread per (node, feature) pair or per node).
const EVALUATE_THREADS: u32 = 128;

/// [`QuantileCuts`] in device memory.
pub struct DeviceCuts {
    cut_ptrs: DeviceBuffer<u32>,
    cut_values: DeviceBuffer<f32>,
    min_values: DeviceBuffer<f32>,
    features: usize,
    total_bins: usize,
    /// The most bins of one feature.
    max_bins: usize,
}

impl DeviceCuts {
    /// Copies `cuts` to `gpu`.
    pub fn upload(gpu: &Gpu, cuts: &QuantileCuts) -> Result<Self> {
        Ok(DeviceCuts {
            cut_ptrs: gpu.upload(&cuts.cut_ptrs)?,
            cut_values: gpu.upload(&cuts.cut_values)?,
            min_values: gpu.upload(&cuts.min_values)?,
            features: cuts.features(),
            total_bins: cuts.total_bins(),
            max_bins: (0..cuts.features()).map(|f| cuts.bins(f)).max().unwrap_or(0),
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
    Global,
    Padded { bins_per_feature: usize },
}

/// A node to evaluate: the slot of its histogram, its gradient sum, the features to try
/// (increasing).
#[derive(Clone, Debug)]
pub struct NodeToEvaluate {
    pub slot: u32,
    pub total: Fixed,
    pub features: Vec<u32>,
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
        return Ok(Vec::new());
    }
    let num_pairs = pairs.len() / 2;
    let slots: Vec<u32> = nodes.iter().map(|n| n.slot).collect();
    let totals: Vec<Fixed> = nodes.iter().map(|n| n.total).collect();
    let pairs_buffer = gpu.upload(if pairs.is_empty() { &[0u32, 0] } else { &pairs })?;
    let offsets_buffer = gpu.upload(&offsets)?;
    let slots_buffer = gpu.upload(&slots)?;
    let totals_buffer = gpu.upload(&totals)?;
    let context_buffer = gpu.upload(std::slice::from_ref(context))?;
    let candidates = gpu.alloc_zeroed::<DeviceSplit>(num_pairs.max(1))?;
    let best = gpu.alloc_zeroed::<DeviceSplit>(nodes.len())?;
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
            slots_buffer.device_ptr(),
            totals_buffer.device_ptr(),
            cuts.cut_ptrs.device_ptr(),
            cuts.cut_values.device_ptr(),
            cuts.min_values.device_ptr(),
            pairs_buffer.device_ptr(),
            num_pairs as u64,
            context_buffer.device_ptr(),
            candidates.device_ptr(),
        ];
        // SAFETY: every pair names a node of `slots`/`totals` and a feature of the cuts, every slot's
        // histogram lies within `histograms` and holds each feature's bins (checked above).
        unsafe { gpu.launch(module, "boost_split_features", config(num_pairs), &args)? };
    }
    let args = [
        candidates.device_ptr(),
        offsets_buffer.device_ptr(),
        nodes.len() as u64,
        context_buffer.device_ptr(),
        best.device_ptr(),
    ];
    // SAFETY: `offsets` has `nodes + 1` entries up to `num_pairs`, the candidates that many.
    unsafe { gpu.launch(module, "boost_split_nodes", config(nodes.len()), &args)? };
    Ok(best.to_vec(gpu)?.iter().map(DeviceSplit::split).collect())
}

/// The bins of every row and feature as the device builds histograms from them: row-major, one
/// `u16` per feature, the bin's index within its feature, `bins_per_feature` for a missing value.
/// Made from the CPU's quantised matrix (the device will build it itself later).
pub fn local_bins(matrix: &EllpackMatrix, cuts: &QuantileCuts) -> Result<(Vec<u16>, usize)> {
    let features = cuts.features();
    let bins_per_feature = (0..features).map(|f| cuts.bins(f)).max().unwrap_or(0).max(1);
    if bins_per_feature >= u16::MAX as usize {
        return Err(Error::param(
            "max_bin",
            format!("{bins_per_feature} bins: the GPU builder takes fewer than 65535"),
        ));
    }
    let mut bins = vec![bins_per_feature as u16; matrix.rows * features];
    for row in 0..matrix.rows {
        for f in 0..features {
            if let Some(bin) = matrix.bin_of(row, f, cuts) {
                bins[row * features + f] = (bin - cuts.cut_ptrs[f]) as u16;
            }
        }
    }
    Ok((bins, bins_per_feature))
}

/// The GPU backend of the expansion driver ([`grow::grow`]), first version: histograms of every
/// child built on the device (`DeviceHistogram::multi_feature`, one launch per batch, no
/// subtraction trick yet), splits evaluated on the device ([`evaluate_splits`], one pair of
/// launches per batch); row partitions on the host from a host copy of the bins, the row order
/// then copied to the device (one more copy per batch than the goal). Gradient sums are exact
/// fixed-point integers, so the trees are the CPU builder's, bit for bit.
pub struct GpuBackend<'a> {
    gpu: &'a Gpu,
    cuts: &'a DeviceCuts,
    /// [`local_bins`] on the host and on the device.
    host_bins: &'a [u16],
    bins: &'a DeviceBuffer<u16>,
    bins_per_feature: usize,
    features: usize,
    first_bins: &'a [u32],
    /// Fixed-point gradients on the host and on the device.
    host_gradients: &'a [Fixed],
    gradients: &'a DeviceBuffer<Fixed>,
    context: SplitContext,
    order: RowOrder,
    /// `order.rows` on the device, dropped when the host's changes.
    device_rows: Option<DeviceBuffer<u32>>,
    /// The last batch's histograms (padded layout), and each node's slot in them.
    histograms: Option<DeviceBuffer<Fixed>>,
    slots: Vec<Option<u32>>,
}

impl<'a> GpuBackend<'a> {
    /// A backend over the device copies of the cuts, [`local_bins`] and the fixed-point gradients
    /// (with their host copies, which the host partition and the root sum read).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: &'a Gpu,
        cuts: &'a DeviceCuts,
        host_bins: &'a [u16],
        bins: &'a DeviceBuffer<u16>,
        bins_per_feature: usize,
        first_bins: &'a [u32],
        host_gradients: &'a [Fixed],
        gradients: &'a DeviceBuffer<Fixed>,
        context: SplitContext,
    ) -> Self {
        let rows = host_gradients.len();
        GpuBackend {
            gpu,
            cuts,
            host_bins,
            bins,
            bins_per_feature,
            features: cuts.features,
            first_bins,
            host_gradients,
            gradients,
            context,
            order: RowOrder::new(rows),
            device_rows: None,
            histograms: None,
            slots: vec![None],
        }
    }

    /// Histograms of `nodes` (each a range of the row order) in one launch: the ranges, sorted,
    /// with the gaps between them as nodes of their own, whose histograms are not used.
    fn build_histograms(&mut self, nodes: &[usize]) -> Result<()> {
        let mut ranges: Vec<(usize, usize, usize)> =
            nodes.iter().map(|&n| (self.order.range(n).0, self.order.range(n).1, n)).collect();
        ranges.sort_unstable();
        let mut offsets = vec![0u32];
        let last = nodes.iter().max().copied().unwrap_or(0);
        self.slots.clear();
        self.slots.resize(last + 1, None);
        for &(begin, end, node) in &ranges {
            if begin > *offsets.last().unwrap_or(&0) as usize {
                offsets.push(begin as u32);
            }
            self.slots[node] = Some((offsets.len() - 1) as u32);
            offsets.push(end as u32);
        }
        let slots = offsets.len() - 1;
        let mut histograms = self.gpu.alloc_zeroed::<Fixed>(slots * self.features * self.bins_per_feature)?;
        let rows = match &self.device_rows {
            Some(rows) => rows,
            None => self.device_rows.insert(self.gpu.upload(&self.order.rows)?),
        };
        let matrix =
            MultiFeatureMatrix { bins: self.bins, features: self.features, bins_per_feature: self.bins_per_feature };
        DeviceHistogram::multi_feature(self.gpu, matrix, self.gradients, rows, &offsets, &mut histograms)?;
        self.histograms = Some(histograms);
        Ok(())
    }
}

impl GrowBackend<Fixed> for GpuBackend<'_> {
    type Error = Error;

    fn total(&mut self) -> Result<Fixed> {
        Ok(self.host_gradients.iter().fold(Fixed::default(), |a, &b| boost_kernels::fixed_point::add(a, b)))
    }

    fn root_histogram(&mut self) -> Result<()> {
        self.build_histograms(&[0])
    }

    fn partition(&mut self, expanded: &[Expansion<Fixed>]) -> Result<Vec<usize>> {
        let mut lefts = Vec::with_capacity(expanded.len());
        for e in expanded {
            let (begin, end) = self.order.range(e.node);
            let f = e.split.feature as usize;
            let (first, missing) = (self.first_bins[f] as i64, self.bins_per_feature as u16);
            let rows = &mut self.order.rows[begin..end];
            let flags: Vec<bool> = rows
                .iter()
                .map(|&row| match self.host_bins[row as usize * self.features + f] {
                    local if local == missing => e.split.default_left,
                    local => first + local as i64 <= e.split.last_left_bin,
                })
                .collect();
            lefts.push(grow::stable_partition(rows, &flags));
        }
        self.order.split(expanded, &lefts);
        // The new row order goes to the device before the next histograms.
        self.device_rows = None;
        Ok(lefts)
    }

    fn children_histograms(&mut self, children: &[ChildHistograms]) -> Result<()> {
        let nodes: Vec<usize> = children.iter().flat_map(|c| [c.small, c.large]).collect();
        if nodes.is_empty() {
            return Ok(());
        }
        self.build_histograms(&nodes)
    }

    fn evaluate(&mut self, nodes: &[(usize, Fixed, Vec<u32>)]) -> Result<Vec<Option<Split<Fixed>>>> {
        let Some(histograms) = &self.histograms else {
            return Ok(vec![None; nodes.len()]);
        };
        let mut batch = Vec::with_capacity(nodes.len());
        for (node, total, features) in nodes {
            let slot =
                self.slots.get(*node).copied().flatten().ok_or_else(|| {
                    Error::InvalidData(format!("node {node} is evaluated before its histogram is built"))
                })?;
            batch.push(NodeToEvaluate { slot, total: *total, features: features.clone() });
        }
        let layout = HistogramLayout::Padded { bins_per_feature: self.bins_per_feature };
        evaluate_splits(self.gpu, self.cuts, histograms, layout, &batch, &self.context)
    }

    fn release(&mut self, node: usize) {
        if let Some(slot) = self.slots.get_mut(node) {
            *slot = None;
        }
    }
}

/// What the GPU backend keeps on the device for a whole training run: the cuts and every row's
/// bins ([`local_bins`]), uploaded once; each tree then uploads only its gradients.
pub struct GpuTrainer<'g> {
    gpu: &'g Gpu,
    cuts: DeviceCuts,
    first_bins: Vec<u32>,
    host_bins: Vec<u16>,
    bins: DeviceBuffer<u16>,
    bins_per_feature: usize,
}

impl<'g> GpuTrainer<'g> {
    /// Uploads the cuts and the bins of `matrix`.
    pub fn new(gpu: &'g Gpu, matrix: &EllpackMatrix, cuts: &QuantileCuts) -> Result<Self> {
        let (host_bins, bins_per_feature) = local_bins(matrix, cuts)?;
        Ok(GpuTrainer {
            gpu,
            cuts: DeviceCuts::upload(gpu, cuts)?,
            first_bins: cuts.cut_ptrs.clone(),
            bins: gpu.upload(&host_bins)?,
            host_bins,
            bins_per_feature,
        })
    }

    /// The device this trainer runs on.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// Grows one tree (see [`GpuBackend`]) from fixed-point `gradients`, one per row; returns it with
    /// each row's leaf, as [`crate::tree::hist::HistBuilder::build`] does on the CPU, drawing the
    /// same random numbers from `rng`.
    pub fn build_tree(
        &self,
        params: &TreeParams,
        quantiser: &GradientQuantiser,
        gradients: &[Fixed],
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<crate::tree::hist::BuiltTree> {
        if gradients.len() * self.cuts.features != self.host_bins.len() {
            return Err(Error::InvalidData(format!(
                "{} gradients for a matrix of {} rows",
                gradients.len(),
                self.host_bins.len() / self.cuts.features.max(1)
            )));
        }
        let device_gradients = self.gpu.upload(gradients)?;
        let context = SplitContext { params: params.split(), quantiser: *quantiser };
        let mut backend = GpuBackend::new(
            self.gpu,
            &self.cuts,
            &self.host_bins,
            &self.bins,
            self.bins_per_feature,
            &self.first_bins,
            gradients,
            &device_gradients,
            context,
        );
        let tree = grow::grow(&mut backend, params, quantiser, features, gradients.len(), rng)?;
        let positions = backend.order.positions(&tree);
        Ok(crate::tree::hist::BuiltTree { tree, positions })
    }
}

/// Grows one tree on `gpu`: [`GpuTrainer::build_tree`] for a single tree (uploads the matrix too).
#[allow(clippy::too_many_arguments)]
pub fn build_tree(
    gpu: &Gpu,
    matrix: &EllpackMatrix,
    cuts: &QuantileCuts,
    params: &TreeParams,
    quantiser: &GradientQuantiser,
    gradients: &[Fixed],
    features: &[u32],
    rng: &mut impl rand::Rng,
) -> Result<crate::tree::hist::BuiltTree> {
    GpuTrainer::new(gpu, matrix, cuts)?.build_tree(params, quantiser, gradients, features, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use primitives::Schedule;

    #[test]
    fn bad_batches_are_errors_not_faults() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0], min_values: vec![0.0] };
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
