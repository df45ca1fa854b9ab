//! The row partition (XGBoost's `row_partitioner.cu`): each expanded node's rows moved left and
//! right, stably, by flags, a scan and a scatter over the batch's span ([`RowBuffers`]), and the
//! children's counts read back with the next batch's splits.

use std::ops::Range;

use primitives::{DeviceBuffer, DeviceScan, Gpu};

use boost_kernels::entry;
use boost_kernels::evaluate::DeviceSplit;
use boost_kernels::partition::{ChildSlots, PartitionSplit, SubtractionPlan, SPLIT_INDEX_SHIFT};

use super::evaluate::EvaluationScratch;
use super::grow::GpuBackend;
use super::{element_config, DeviceBins, Fixed, Kept};
use crate::tree::grow::{Expansion, RowOrder};
use crate::{Error, Result};

/// The device buffers of the row order, kept for a training run: the order itself, its double (the
/// partition scatters into it, then the two swap), the partition's flags and their exclusive sum
/// (`rows + 1` each: the flag after a span's last stays 0, so the last sum is the count of left
/// rows), and the identity order each tree starts from; with the batches' scratch.
pub struct RowBuffers {
    pub(super) rows: DeviceBuffer<u32>,
    pub(super) spare: DeviceBuffer<u32>,
    pub(super) flags: DeviceBuffer<u32>,
    pub(super) scan: DeviceBuffer<u32>,
    pub(super) identity: DeviceBuffer<u32>,
    /// The partition's splits and children's slots.
    pub(super) partition_upload: Kept<u64>,
    /// A batch's plan and results ([`PendingPartition`]).
    pub(super) batch: Kept<u32>,
    pub(super) evaluation: EvaluationScratch,
    /// Histogram buffers of the last tree, for the next one's batches of the same sizes.
    pub(super) histogram_spares: Vec<DeviceBuffer<Fixed>>,
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

/// [`boost_kernels::partition::split_index_entry`] for `b` in `0..entries`, in one sweep: the
/// entries' positions grow with `b`, so the count of `begins` (sorted) at or below each only moves
/// forward. A binary search an entry cost a deep level of 100M rows about 0.5 ms of host time.
pub(super) fn split_index(begins: &[u32], entries: usize) -> Vec<u32> {
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

/// A partition enqueued on the device whose counts of left rows the host has not read yet. Its
/// plan and results live in [`RowBuffers::batch`], as 32-bit words: each child slot's range
/// (`[begin, end]`, slots `2e` and `2e + 1` for expansion `e`), the counts (a word per sorted
/// split), room for the best splits of the children, and each pair's [`SubtractionPlan`]. One read
/// brings back the counts and the splits.
pub(super) struct PendingPartition {
    pub(super) expanded: Vec<Expansion<Fixed>>,
    /// Each split of the batch (sorted by position), as its index in `expanded`.
    pub(super) sorted: Vec<usize>,
}

/// 32-bit words of a [`DeviceSplit`] and of a [`SubtractionPlan`] (both 8-byte aligned).
pub(super) const SPLIT_WORDS: usize = size_of::<DeviceSplit>() / 4;
pub(super) const PLAN_WORDS: usize = size_of::<SubtractionPlan>() / 4;

impl PendingPartition {
    pub(super) fn counts_at(&self) -> usize {
        4 * self.expanded.len()
    }

    pub(super) fn splits_at(&self) -> usize {
        self.counts_at() + self.expanded.len().next_multiple_of(2)
    }

    pub(super) fn plans_at(&self) -> usize {
        self.splits_at() + 2 * self.expanded.len() * SPLIT_WORDS
    }

    pub(super) fn words(&self) -> usize {
        self.plans_at() + self.expanded.len() * PLAN_WORDS
    }

    /// The counts of left rows per expansion, read now (a wait).
    pub(super) fn read_lefts(&self, gpu: &Gpu, buffers: &mut RowBuffers) -> Result<Vec<usize>> {
        let batch = buffers.batch.at_least(gpu, self.words())?;
        Ok(self.lefts(&batch.range_to_vec(gpu, 0..self.splits_at())?))
    }

    /// The counts of left rows per expansion, from the batch's words read back.
    pub(super) fn lefts(&self, words: &[u32]) -> Vec<usize> {
        let mut lefts = vec![0usize; self.expanded.len()];
        for (&e, &count) in self.sorted.iter().zip(&words[self.counts_at()..]) {
            lefts[e] = count as usize;
        }
        lefts
    }
}

/// The rows one partition moves: a matrix's bins on the device, its features' first bins, and the
/// host's ranges of the row order (whose rows are [`RowBuffers::rows`]).
pub(super) struct PartitionRows<'r> {
    pub(super) gpu: &'r Gpu,
    pub(super) bins: &'r DeviceBins,
    pub(super) first_bins: &'r [u32],
    pub(super) order: &'r RowOrder,
}

impl GpuBackend<'_> {
    /// Moves each expanded node's left rows before its right rows, stably, on the device, and
    /// counts them there (read back with the next batch's splits, [`Self::settle`]), with the plan
    /// of the children's histograms.
    pub(super) fn partition_on_device(&mut self, expanded: &[Expansion<Fixed>]) -> Result<()> {
        // The nodes' ranges come from the last partition's counts.
        self.settle(None)?;
        let slot_bytes = (self.slot_len() * size_of::<Fixed>()) as u64;
        let histograms = &self.histograms;
        // Where the plan of a node's children's histograms finds the node's sums.
        let parent = |node: usize| -> Result<u64> {
            let (batch, slot) = histograms
                .slot(node)
                .ok_or_else(|| Error::InvalidData(format!("node {node} is split before its histogram is built")))?;
            let buffer = histograms.buffer(batch).ok_or_else(|| {
                Error::InvalidData(format!("histogram batch {batch} was freed while node {node} needs it"))
            })?;
            Ok(buffer.device_ptr() + slot as u64 * slot_bytes)
        };
        let rows = PartitionRows { gpu: self.gpu, bins: self.bins, first_bins: self.first_bins, order: &self.order };
        self.pending = enqueue_partition(&rows, self.buffers, expanded, parent)?;
        Ok(())
    }

    /// Records the last partition's children's ranges, from the batch's words read back with other
    /// results or else read now (a wait).
    pub(super) fn settle(&mut self, words: Option<&[u32]>) -> Result<()> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let lefts = match words {
            Some(words) => pending.lefts(words),
            None => pending.read_lefts(self.gpu, self.buffers)?,
        };
        self.order.split(&pending.expanded, &lefts);
        Ok(())
    }

    /// Reads the row check and, when `read_rows`, the row order (each row's leaf follows from the
    /// nodes' ranges).
    pub(super) fn finish(&mut self, read_rows: bool) -> Result<()> {
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

/// Enqueues the partition of each expanded node's rows (of `rows`' order, whose rows are
/// `buffers.rows`) into its left rows then its right rows, stably, with their counts and the plan of
/// the children's histograms (`parent`: a node's sums' device address) in `buffers.batch`.
pub(super) fn enqueue_partition(
    rows: &PartitionRows,
    buffers: &mut RowBuffers,
    expanded: &[Expansion<Fixed>],
    parent: impl Fn(usize) -> Result<u64>,
) -> Result<Option<PendingPartition>> {
    let parents = expanded.iter().map(|e| parent(e.node)).collect::<Result<Vec<u64>>>()?;
    let mut splits: Vec<(PartitionSplit, usize)> = Vec::with_capacity(expanded.len());
    // The categorical splits' bitsets, one after another.
    let mut categories: Vec<u32> = Vec::new();
    for (i, e) in expanded.iter().enumerate() {
        let (begin, end) = rows.order.range(e.node);
        let feature = e.split.feature as usize;
        let categorical = e.split.kind.is_categorical();
        let split = PartitionSplit {
            begin: begin as u32,
            end: end as u32,
            feature: feature as u32,
            default_left: e.split.default_left as u32,
            last_left: e.split.last_left_bin - rows.first_bins[feature] as i64,
            categories_at: categories.len() as u32,
            category_words: if categorical { e.categories.len().max(1) as u32 } else { 0 },
        };
        if categorical {
            categories.extend_from_slice(&e.categories);
            categories.resize(split.categories_at as usize + split.category_words as usize, 0);
        }
        splits.push((split, i));
    }
    splits.sort_unstable_by_key(|(split, _)| split.begin);
    // Only the span of the batch's rows is partitioned (lossguide splits one node at a time, and
    // a depthwise level's leaves may lie outside it): positions are rebased to the span.
    let span = match (splits.first(), splits.last()) {
        (Some(first), Some(last)) => first.0.begin as usize..last.0.end as usize,
        _ => return Ok(None),
    };
    let (mut upload, [index_at, index_entries, children_at]) = partition_upload(&splits, &span, &parents)?;
    let categories_at = upload.len();
    categories.resize(categories.len().next_multiple_of(2), 0);
    upload.extend(categories.chunks_exact(2).map(|w| bytemuck::cast::<[u32; 2], u64>([w[0], w[1]])));
    let (b, gpu) = (buffers, rows.gpu);
    let uploaded = b.partition_upload.upload(gpu, &upload)?.as_ptr();
    let splits_ptr = uploaded.cast::<PartitionSplit>();
    let children_ptr = uploaded.wrapping_add(children_at).cast::<ChildSlots>();
    let index_ptr = if index_entries > 0 { uploaded.wrapping_add(index_at).cast() } else { std::ptr::null() };
    let categories_ptr = uploaded.wrapping_add(categories_at).cast::<u32>();
    let pending =
        PendingPartition { expanded: expanded.to_vec(), sorted: splits.iter().map(|&(_, i)| i).collect() };
    let batch = b.batch.at_least(gpu, pending.words())?.as_mut_ptr();
    let word = |at: usize| batch.wrapping_add(at);
    // The whole order: the scatter's copy becomes the order (a spare of another length would not).
let (n, whole) = (span.len(), span.len() == b.rows.len() && b.spare.len() == b.rows.len());
    let num_splits = splits.len() as u64;
    let module = crate::KERNELS;
    // The span's flags and their sums in the first `n + 1` entries of the whole buffers; the
    // flags kernel writes every flag, the one after the last 0.
    let args = entry::boost_partition_flags::args(
        b.rows.as_ptr().wrapping_add(span.start),
        n as u64,
        rows.bins.words.as_ptr(),
        rows.bins.layout.row_words as u64,
        rows.bins.layout.bits as u64,
        splits_ptr,
        num_splits,
        index_ptr,
        categories_ptr,
        b.flags.as_mut_ptr(),
    );
    // SAFETY: `rows` from the span's start holds `n` indices of rows of `bins` (packed rows of
    // `features` ids), the splits are sorted by `begin` and rebased to the span, with features below
    // `features`, their index (when given) the `(n >> SPLIT_INDEX_SHIFT) + 2` entries of
    // `split_index_entry`, their bitsets within the upload's categories; `flags` holds at least
    // `n + 1` flags (the whole order's `rows + 1`), one thread each.
    unsafe { gpu.launch_kernel(module, element_config(n + 1)?, args)? };
    DeviceScan::exclusive_sum_n(gpu, &b.flags, &mut b.scan, n + 1)?;
    let args = entry::boost_partition_scatter::args(
        b.rows.as_ptr().wrapping_add(span.start),
        n as u64,
        splits_ptr,
        num_splits,
        index_ptr,
        b.flags.as_ptr(),
        b.scan.as_ptr(),
        b.spare.as_mut_ptr().wrapping_add(span.start),
    );
    // SAFETY: as above; `scan` holds the `n + 1` exclusive sums of the flags, `spare` from the
    // span's start room for `n` rows; each split's range lies within the span, so every
    // destination does.
    unsafe { gpu.launch_kernel(module, element_config(n)?, args)? };
    if whole {
        std::mem::swap(&mut b.rows, &mut b.spare);
    } else {
        b.rows.copy_range_from_device(gpu, &b.spare, span.clone(), span.start)?;
    }
    let args = entry::boost_partition_counts::args(
        b.scan.as_ptr(),
        splits_ptr,
        num_splits,
        word(pending.counts_at()),
        children_ptr,
        span.start as u64,
        word(0).cast(),
        word(pending.plans_at()).cast(),
    );
    // SAFETY: `scan` holds `n + 1` sums and every range ends at most at `n`; the batch's words
    // have room for two ranges and a plan per expansion and a count per split (`words()`); each
    // child slot's pair is its split's expansion, so the pairs are distinct.
    unsafe { gpu.launch_kernel(module, element_config(splits.len())?, args)? };
    Ok(Some(pending))
}

/// One upload for a partition: the splits rebased to the `span`, the split index when the
/// batch has more than a few splits, then each split's children's slots (where the plan of
/// their histograms goes; `parents[i]`: expansion `i`'s sums), as 64-bit words; with where the
/// index starts, its entries, and where the slots start.
fn partition_upload(
    splits: &[(PartitionSplit, usize)],
    span: &Range<usize>,
    parents: &[u64],
) -> Result<(Vec<u64>, [usize; 3])> {
    let mut upload: Vec<u64> = Vec::with_capacity(splits.len() * 5);
    for &(split, _) in splits {
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
    for &(_, i) in splits {
        let child = ChildSlots { pair: i as u32, padding: 0, parent: parents[i] };
        upload.extend_from_slice(bytemuck::cast_slice(std::slice::from_ref(&child)));
    }
    Ok((upload, [index_at, index_entries, children_at]))
}
