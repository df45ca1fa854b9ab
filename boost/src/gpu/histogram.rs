//! Node histograms on the device (XGBoost's `histogram.cu`): the smaller child's built from its rows,
//! its sibling's by subtraction from the parent's, kept in one buffer per batch until released.

use boost_kernels::entry;
use primitives::{DeviceBuffer, DeviceHistogram, Gpu};

use super::evaluate::HistogramLayout;
use super::grow::GpuBackend;
use super::{element_config, DeviceBins, Fixed};
use crate::tree::grow::ChildHistograms;
use crate::{Error, Result};

/// Node histograms on the device, one buffer per batch (a slot per node, in the backend's layout), a
/// buffer freed when the last of its nodes is released. Lossguide keeps a node's histogram from
/// the batch that built it until the node is split (its children's are derived from it) or dropped.
#[derive(Default)]
pub(super) struct HistogramStore {
    pub(super) batches: Vec<Option<(DeviceBuffer<Fixed>, usize)>>,
    /// Each node's batch and slot.
    pub(super) nodes: Vec<Option<(usize, u32)>>,
    /// Freed batches' buffers, for later batches of the same size (depthwise levels repeat
    /// from tree to tree): an allocation and a free a level cost tens of microseconds of host time
    /// when several devices' threads call the driver at once.
    pub(super) spares: Vec<DeviceBuffer<Fixed>>,
}

/// The most buffers, and bytes, [`HistogramStore`] keeps for reuse.
pub(super) const HISTOGRAM_SPARES: usize = 12;
pub(super) const HISTOGRAM_SPARE_BYTES: usize = 256 << 20;

impl HistogramStore {
    /// A store that reuses `spares` (buffers of an earlier store on the same device).
    pub(super) fn with_spares(spares: Vec<DeviceBuffer<Fixed>>) -> Self {
        HistogramStore { spares, ..Default::default() }
    }

    /// A zeroed buffer of `len` sums: a spare of that length cleared, or a new one.
    pub(super) fn zeroed(&mut self, gpu: &Gpu, len: usize) -> Result<DeviceBuffer<Fixed>> {
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
    pub(super) fn uninitialized(&mut self, gpu: &Gpu, len: usize) -> Result<DeviceBuffer<Fixed>> {
        match self.spares.iter().position(|b| b.len() == len) {
            Some(i) => Ok(self.spares.swap_remove(i)),
            None => Ok(gpu.alloc_uninitialized(len)?),
        }
    }

    /// Keeps `buffer` for reuse, within the limits (the oldest spares go first).
    pub(super) fn spare(&mut self, buffer: DeviceBuffer<Fixed>) {
        self.spares.push(buffer);
        let bytes = |spares: &[DeviceBuffer<Fixed>]| spares.iter().map(|b| b.len() * size_of::<Fixed>()).sum::<usize>();
        while self.spares.len() > HISTOGRAM_SPARES || bytes(&self.spares) > HISTOGRAM_SPARE_BYTES {
            self.spares.remove(0);
        }
    }

    /// Every buffer, live or spare, as spares for a later store (the nodes' histograms dropped).
    pub(super) fn into_spares(mut self) -> Vec<DeviceBuffer<Fixed>> {
        for (buffer, _) in std::mem::take(&mut self.batches).into_iter().flatten() {
            self.spare(buffer);
        }
        self.spares
    }

    /// Adds a batch's buffer holding `nodes` (node, slot).
    pub(super) fn insert(&mut self, buffer: DeviceBuffer<Fixed>, nodes: &[(usize, u32)]) {
        let batch = self.batches.len();
        self.batches.push(Some((buffer, nodes.len())));
        for &(node, slot) in nodes {
            if self.nodes.len() <= node {
                self.nodes.resize(node + 1, None);
            }
            self.nodes[node] = Some((batch, slot));
        }
    }

    pub(super) fn slot(&self, node: usize) -> Option<(usize, u32)> {
        self.nodes.get(node).copied().flatten()
    }

    /// The last batch's buffer, unless freed.
    pub(super) fn last_batch(&self) -> Option<&DeviceBuffer<Fixed>> {
        self.batches.last().and_then(|b| b.as_ref()).map(|(buffer, _)| buffer)
    }

    pub(super) fn buffer(&self, batch: usize) -> Option<&DeviceBuffer<Fixed>> {
        self.batches.get(batch).and_then(|b| b.as_ref()).map(|(buffer, _)| buffer)
    }

    pub(super) fn release(&mut self, node: usize) {
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

impl GpuBackend<'_> {
    pub(super) fn slot_len(&self) -> usize {
        match self.layout {
            HistogramLayout::Global => self.cuts.total_bins(),
            HistogramLayout::Padded { bins_per_feature } => self.features * bins_per_feature,
        }
    }

    /// Builds the histograms of `built` from their rows into slots `0..` of a new buffer of `slots`
    /// slots (the others zero, for the caller to fill).
    pub(super) fn build_histograms(&mut self, built: &[(usize, u32)], slots: usize) -> Result<DeviceBuffer<Fixed>> {
        let mut ranges = vec![(0u32, 0u32); slots];
        for &(node, slot) in built {
            let (begin, end) = self.order.range(node);
            ranges[slot as usize] = (begin as u32, end as u32);
        }
        let mut histograms = self.histograms.zeroed(self.gpu, slots * self.slot_len())?;
        let rows = NodeRows { gpu: self.gpu, bins: self.bins, gradients: self.gradients, rows: &self.buffers.rows };
        add_histograms(&rows, (self.layout, self.first_bins), &ranges, &mut histograms, &mut self.bad_row)?;
        Ok(histograms)
    }

    /// The children's histograms of the pending partition's expansions (all of them: a batch's
    /// children share a depth), slots `2e` (left) and `2e + 1` (right) of one new buffer: the
    /// smaller's built from its rows within its half of the parent's range, the other's by
    /// subtraction from the parent's (which is released), as the counts kernel planned.
    pub(super) fn children_on_device(&mut self, children: &[ChildHistograms]) -> Result<()> {
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
        let (gpu, matrix, gradients, rows) = (self.gpu, self.bins.matrix(), self.gradients, &self.buffers.rows);
        match self.layout {
            HistogramLayout::Global => DeviceHistogram::multi_feature_global_device_ranges(
                gpu,
                matrix,
                gradients,
                rows,
                &bounds,
                batch,
                self.first_bins,
                &mut histograms,
                &mut self.bad_row,
            )?,
            HistogramLayout::Padded { .. } => DeviceHistogram::multi_feature_device_ranges(
                gpu,
                matrix,
                gradients,
                rows,
                &bounds,
                batch,
                &mut histograms,
                &mut self.bad_row,
            )?,
        }
        let args = entry::boost_histogram_subtract::args(
            histograms.as_mut_ptr(),
            self.slot_len() as u64,
            batch.as_ptr().wrapping_add(plans).cast(),
            pairs as u64,
        );
        // SAFETY: each plan's small and large slots are its pair's two (below `2 * pairs`, every slot
        // `slot_len` sums), its parent the address of a live histogram's slot (the parents are
        // released below, after the enqueue: frees are stream-ordered).
        unsafe { self.gpu.launch_kernel(crate::KERNELS, element_config(pairs * self.slot_len())?, args)? };
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
}

/// The rows whose histograms a launch adds: a matrix's bins, its rows' fixed-point gradients, and a
/// row order over them on the device.
pub(super) struct NodeRows<'r> {
    pub(super) gpu: &'r Gpu,
    pub(super) bins: &'r DeviceBins,
    pub(super) gradients: &'r DeviceBuffer<Fixed>,
    pub(super) rows: &'r DeviceBuffer<u32>,
}

/// Adds to slot `s` of `histograms` (in `layout`; `first_bins`: the cuts' features' first bins)
/// the histogram of the rows at positions `ranges[s]` of the order: one launch.
pub(super) fn add_histograms(
    rows: &NodeRows,
    (layout, first_bins): (HistogramLayout, &[u32]),
    ranges: &[(u32, u32)],
    histograms: &mut DeviceBuffer<Fixed>,
    bad_row: &mut DeviceBuffer<u32>,
) -> Result<()> {
    let (gpu, matrix) = (rows.gpu, rows.bins.matrix());
    match layout {
        HistogramLayout::Global => DeviceHistogram::multi_feature_global_ranges(
            gpu,
            matrix,
            rows.gradients,
            rows.rows,
            ranges,
            first_bins,
            histograms,
            bad_row,
        )?,
        HistogramLayout::Padded { .. } => {
            DeviceHistogram::multi_feature_ranges(gpu, matrix, rows.gradients, rows.rows, ranges, histograms, bad_row)?
        }
    }
    Ok(())
}
