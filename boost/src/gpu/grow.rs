//! One tree on the device ([`GpuBackend`]): the expansion driver's backend (`tree::grow`), whose
//! steps are the files beside this one: histograms, split evaluation, the partition.

use std::collections::HashMap;

use primitives::{DeviceBuffer, Gpu};

use boost_kernels::evaluate::SplitContext;
use boost_kernels::split::Split;

use super::evaluate::HistogramLayout;
use super::histogram::HistogramStore;
use super::partition::{PendingPartition, RowBuffers};
use super::timers::DeviceTimers;
use super::{DeviceBins, DeviceCuts, Fixed};
use crate::phases::PhaseTimes;
use crate::tree::grow::{ChildHistograms, Expansion, GrowBackend, RowOrder, SplitRequest};
use crate::{Error, Result};

/// The GPU backend of the expansion driver ([`crate::tree::grow::grow`]): per batch of nodes, rows partitioned
/// on the device (flags, scan, scatter and counts: four launches, over the span of the batch's
/// rows), the smaller children's histograms built in one launch
/// (`DeviceHistogram::multi_feature_device_ranges`, from ranges the counts kernel wrote) and their
/// siblings' derived by subtraction (one launch), splits evaluated on the device
/// ([`super::evaluate_splits`], two launches). The host waits once a batch, for the splits, which the
/// driver needs; the counts of left rows come back with them. Gradient sums are exact fixed-point
/// integers, so the trees are the CPU builder's, bit for bit.
pub struct GpuBackend<'a> {
    pub(super) gpu: &'a Gpu,
    pub(super) cuts: &'a DeviceCuts,
    pub(super) bins: &'a DeviceBins,
    pub(super) bins_per_feature: usize,
    pub(super) features: usize,
    /// How a node's histogram lies in its slot: padded, or (features of very many categories
    /// beside narrow ones) the global layout of the cuts' first bins.
    pub(super) layout: HistogramLayout,
    pub(super) first_bins: &'a [u32],
    /// The fixed-point gradients and their sum (the root's).
    pub(super) gradients: &'a DeviceBuffer<Fixed>,
    pub(super) root: Fixed,
    pub(super) context: SplitContext,
    /// The nodes' ranges of the row order; its rows live on the device, read back only when asked.
    pub(super) order: RowOrder,
    pub(super) buffers: &'a mut RowBuffers,
    pub(super) histograms: HistogramStore,
    /// The last partition, until its counts are read back.
    pub(super) pending: Option<PendingPartition>,
    /// The histogram kernel's check of the row indices, read once a tree.
    pub(super) bad_row: DeviceBuffer<u32>,
    /// The categories of the partition splits found, by node, until the driver asks for them.
    pub(super) partition_sets: HashMap<usize, Vec<u32>>,
    /// Wall time of each step (each ends in a host synchronisation or is host work), with the
    /// device's time of each when `timers` records it.
    pub(super) phases: PhaseTimes,
    pub(super) timers: DeviceTimers,
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
            layout: cuts.histogram_layout(bins.layout.bins_per_feature),
            first_bins,
            gradients,
            root,
            context,
            order: RowOrder::ranges_only(rows),
            buffers,
            histograms: HistogramStore::with_spares(spares),
            pending: None,
            bad_row: gpu.upload(&[u32::MAX])?,
            partition_sets: HashMap::new(),
            phases: PhaseTimes::default(),
            timers: DeviceTimers::default(),
        })
    }
}

impl GrowBackend<Fixed> for GpuBackend<'_> {
    type Error = Error;

    fn total(&mut self) -> Result<Fixed> {
        Ok(self.root)
    }

    fn root_histogram(&mut self) -> Result<()> {
        let start = self.timers.start(self.gpu)?;
        let histograms = self.build_histograms(&[(0, 0)], 1)?;
        self.histograms.insert(histograms, &[(0, 0)]);
        self.timers.stop(self.gpu, &mut self.phases, "tree: histograms", start)
    }

    fn partition(&mut self, expanded: &[Expansion<Fixed>]) -> Result<()> {
        let start = self.timers.start(self.gpu)?;
        self.partition_on_device(expanded)?;
        self.timers.stop(self.gpu, &mut self.phases, "tree: partitions", start)
    }

    fn children_histograms(&mut self, children: &[ChildHistograms]) -> Result<()> {
        if children.is_empty() {
            return Ok(());
        }
        let start = self.timers.start(self.gpu)?;
        self.children_on_device(children)?;
        self.timers.stop(self.gpu, &mut self.phases, "tree: histograms", start)
    }

    fn evaluate(&mut self, nodes: &[SplitRequest<Fixed>]) -> Result<Vec<Option<Split<Fixed>>>> {
        let start = self.timers.start(self.gpu)?;
        let splits = self.evaluate_batch(nodes)?;
        self.timers.stop(self.gpu, &mut self.phases, "tree: evaluation", start)?;
        Ok(splits)
    }

    fn evaluate_level(&mut self, nodes: &[(usize, Fixed)], features: &[u32]) -> Result<Option<Vec<Split<Fixed>>>> {
        let start = self.timers.start(self.gpu)?;
        self.settle(None)?;
        let splits = self.evaluate_level_on_device(nodes, features)?;
        self.timers.stop(self.gpu, &mut self.phases, "tree: evaluation", start)?;
        Ok(splits)
    }

    fn release(&mut self, node: usize) {
        self.histograms.release(node);
    }

    fn categories(&mut self, node: usize, split: &Split<Fixed>) -> Result<Vec<u32>> {
        self.categories_of(node, split)
    }
}

impl Drop for GpuBackend<'_> {
    /// Hands the tree's histogram buffers to the next tree's backend.
    fn drop(&mut self) {
        self.buffers.histogram_spares = std::mem::take(&mut self.histograms).into_spares();
    }
}
