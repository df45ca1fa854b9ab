//! The device's rounds over rows whose labels, weights, margins and gradients stay in host memory
//! ([`HostRows`]), for external-memory pages whose rows' arrays do not fit the device beside the
//! pages' work. Each tree streams them through the device in chunks (page-locked host memory,
//! copied at the bus's speed), and the in-core rounds' kernels compute what they compute over all
//! rows at once: the gradients (`boost_objective_gradients`), gradient-based sampling's largest
//! magnitude, histograms and draws (`gpu::sample`), the quantiser's block sums and the kept rows
//! in fixed point (`boost_quantise_sums`, `boost_quantise_kept`). A chunk starts at a multiple of
//! [`SUM_BLOCK`], so its blocks are the whole column's and their sums, added in order, the same;
//! the samplers draw a chunk's rows from its first (`from_row`). So the tree is the one the host's
//! rounds and the in-core device's grow, bit for bit. The host only adds each row's leaf value to
//! its margin.

use boost_kernels::entry;
use boost_kernels::fixed_point::QuantiserSums;
use boost_kernels::mvs::{GradientSampler, MvsBin, MvsPass};
use boost_kernels::objective::ElementwiseObjective;
use boost_kernels::reduce::{self, BlockSum, SUM_BLOCK};
use boost_kernels::sampling::RowSampler;
use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, Gpu};
use rayon::prelude::*;
use std::ops::Range;

use super::pages::{room, Staging};
use super::quantiser::KeptRows;
use super::{element_config, sample, warp_per_block_config, Fixed, InitialMargins};
use crate::data::MetaInfo;
use crate::fixed_point::GradientQuantiser;
use crate::sample::{gradient_sampler, TreeSampler};
use crate::tree::Tree;
use crate::{Error, Result};

/// Rows of the largest chunk: 80 MB of device buffers.
const MAX_CHUNK_ROWS: usize = 4 << 20;

/// Device bytes a row of a chunk: its margin, label, weight and gradient pair.
const CHUNK_ROW_BYTES: usize = 12 + size_of::<GradientPair<f32>>();

/// Every training row's labels, weights and margins in page-locked host memory, with the tree's
/// gradients.
pub(super) struct HostRows {
    rows: usize,
    objective: DeviceBuffer<ElementwiseObjective>,
    labels: Staging<f32>,
    weights: Option<Staging<f32>>,
    margins: Staging<f32>,
    /// The tree's gradients, sampled once [`HostRows::sample`] is done: the chunks' the device
    /// keeps no copy of.
    gradients: Staging<GradientPair<f32>>,
    /// The tree's chunks.
    chunks: Vec<ChunkRows>,
}

/// One chunk of a tree's rows: its range (whole blocks of the sums), and the device's copy of its
/// gradients when it keeps one (the host's copy is then not the chunk's).
struct ChunkRows {
    range: Range<usize>,
    device: Option<DeviceBuffer<GradientPair<f32>>>,
}

/// A tree's gradients after [`HostRows::sample`]: the quantiser of all rows and each block's
/// count of kept rows.
pub(super) struct Sampled {
    pub(super) quantiser: GradientQuantiser,
    pub(super) counts: Vec<u32>,
}

/// One chunk's device buffers.
struct Chunk {
    rows: usize,
    margins: DeviceBuffer<f32>,
    labels: DeviceBuffer<f32>,
    weights: Option<DeviceBuffer<f32>>,
    gradients: DeviceBuffer<GradientPair<f32>>,
}

impl HostRows {
    /// The `n` rows' labels, weights and `margins` for `objective`'s gradients, page-locked.
    pub(super) fn new(
        gpu: &Gpu,
        n: usize,
        objective: ElementwiseObjective,
        info: &MetaInfo,
        margins: InitialMargins<'_>,
    ) -> Result<Self> {
        if info.labels.len() != n || !(info.weights.is_empty() || info.weights.len() == n) {
            return Err(Error::InvalidData(format!(
                "{} labels and {} weights for {n} rows",
                info.labels.len(),
                info.weights.len()
            )));
        }
        let pinned = |values: &[f32]| -> Result<Staging<f32>> {
            let mut staging = Staging::new();
            let to = staging.take_with_room(gpu, n, 0)?;
            to.par_chunks_mut(1 << 16).zip(values.par_chunks(1 << 16)).for_each(|(to, from)| to.copy_from_slice(from));
            Ok(staging)
        };
        let margins = match margins {
            InitialMargins::Rows(margins) if margins.len() == n => pinned(margins)?,
            InitialMargins::Base(&[base]) => {
                let mut staging = Staging::new();
                staging.take_with_room(gpu, n, 0)?.par_iter_mut().with_min_len(1 << 16).for_each(|m| *m = base);
                staging
            }
            InitialMargins::Rows(m) | InitialMargins::Base(m) => {
                return Err(Error::InvalidData(format!("{} initial margins for {n} rows of one output", m.len())))
            }
        };
        let mut gradients = Staging::new();
        gradients.take_with_room(gpu, n, 0)?;
        Ok(HostRows {
            rows: n,
            objective: gpu.upload(&[objective])?,
            labels: pinned(&info.labels)?,
            weights: (!info.weights.is_empty()).then(|| pinned(&info.weights)).transpose()?,
            margins,
            gradients,
            chunks: Vec::new(),
        })
    }

    /// The rows' margins.
    pub(super) fn margins(&self) -> &[f32] {
        self.margins.slice(self.rows)
    }

    /// The tree's gradients, sampled ([`HostRows::sample`]), once on the host
    /// ([`HostRows::copy_to_host`]).
    pub(super) fn gradients(&self) -> &[GradientPair<f32>] {
        self.gradients.slice(self.rows)
    }

    /// Each row's leaf value of `tree` (`positions`, a row's leaf, from row `first`) added to its
    /// margin.
    pub(super) fn add_leaves(&mut self, tree: &Tree, first: usize, positions: &[u32]) {
        let values = &tree.split_conditions;
        let margins = &mut self.margins.data_mut()[first..first + positions.len()];
        margins.par_iter_mut().zip(positions).with_min_len(1 << 14).for_each(|(m, &leaf)| *m += values[leaf as usize]);
    }

    /// The chunks' row ranges: whole blocks of the sums, as many rows as a sixteenth of the room
    /// the device has now holds (at least a block, at most [`MAX_CHUNK_ROWS`]).
    fn chunk_ranges(&self, gpu: &Gpu) -> Result<Vec<Range<usize>>> {
        let fit = room(gpu)? / (16 * CHUNK_ROW_BYTES);
        let rows = (fit.min(MAX_CHUNK_ROWS) / SUM_BLOCK).max(1) * SUM_BLOCK;
        Ok((0..self.rows).step_by(rows).map(|first| first..(first + rows).min(self.rows)).collect())
    }

    /// One chunk's buffers of `rows` rows.
    fn chunk(&self, gpu: &Gpu, rows: usize) -> Result<Chunk> {
        Ok(Chunk {
            rows,
            margins: gpu.alloc_uninitialized(rows)?,
            labels: gpu.alloc_uninitialized(rows)?,
            weights: self.weights.as_ref().map(|_| gpu.alloc_uninitialized(rows)).transpose()?,
            gradients: gpu.alloc_uninitialized(rows)?,
        })
    }

    /// Bytes of the gradients the device keeps for the tree (freed by [`HostRows::kept`] or
    /// [`HostRows::copy_to_host`]).
    pub(super) fn device_bytes(&self) -> usize {
        self.chunks.iter().filter_map(|c| c.device.as_ref()).map(|d| d.len() * size_of::<GradientPair<f32>>()).sum()
    }

    /// The tree's gradients, drawn by `sampler`, into [`HostRows::gradients`] or the device's
    /// copies of the chunks it keeps (while they fit its room, less [`reserve`]), with their quantiser
    /// and each block's count of kept rows: every chunk computed on the device once, and for
    /// gradient-based sampling read again by each threshold pass and the draws (copied again
    /// where the device keeps no copy).
    pub(super) fn sample(&mut self, gpu: &Gpu, sampler: TreeSampler) -> Result<Sampled> {
        let ranges = self.chunk_ranges(gpu)?;
        let mut chunk = self.chunk(gpu, ranges.first().map_or(0, |r| r.len()))?;
        self.chunks = ranges.into_iter().map(|range| ChunkRows { range, device: None }).collect();
        // Each block's sums and count, and the largest magnitude, accumulate on the device: read
        // back once.
        let blocks = reduce::blocks(self.rows);
        let totals = BlockTotals { sums: gpu.alloc_uninitialized(blocks)?, counts: gpu.alloc_uninitialized(blocks)? };
        match sampler {
            TreeSampler::Uniform(sampler) => self.gradients_pass(gpu, &mut chunk, sampler, Then::Totals(&totals))?,
            TreeSampler::GradientBased { key, subsample } => {
                let max = gpu.alloc_zeroed::<u32>(1)?;
                self.gradients_pass(gpu, &mut chunk, RowSampler::ALL, Then::Max(&max))?;
                let max = f32::from_bits(max.to_vec(gpu)?[0]);
                let histogram = |pass: &MvsPass| self.histogram(gpu, &mut chunk.gradients, pass);
                let sampler = gradient_sampler(key, subsample, self.rows as u64, max, histogram)?;
                self.draw(gpu, &mut chunk.gradients, sampler, &totals)?;
            }
        }
        let total = totals.sums.to_vec(gpu)?.into_iter().fold(QuantiserSums::zero(), BlockSum::plus);
        let quantiser = GradientQuantiser::from_sums(total.positive, total.negative, self.rows);
        Ok(Sampled { quantiser, counts: totals.counts.to_vec(gpu)? })
    }

    /// Every chunk's gradients, zero where `sampler` leaves a row out, kept on the device while
    /// they fit its room less [`reserve`] (else copied to the host), and `then` of them.
    fn gradients_pass(
        &mut self,
        gpu: &Gpu,
        chunk: &mut Chunk,
        sampler: RowSampler,
        then: Then,
    ) -> Result<()> {
        let room = room(gpu)?;
        let mut budget = room.saturating_sub(reserve(room));
        for k in 0..self.chunks.len() {
            let range = self.chunks[k].range.clone();
            let bytes = range.len() * size_of::<GradientPair<f32>>();
            let kept = if bytes <= budget { alloc_within_limit(gpu, range.len())? } else { None };
            budget -= kept.as_ref().map_or(0, |_| bytes);
            let gradients = kept.as_ref().unwrap_or(&chunk.gradients).device_ptr();
            self.chunk_gradients(gpu, chunk, range.clone(), sampler.from_row(range.start as u64), gradients)?;
            match then {
                Then::Max(max) => sample::add_magnitude_max(gpu, gradients, range.len(), max)?,
                Then::Totals(totals) => totals.add(gpu, (gradients, range.clone()))?,
            }
            match kept {
                Some(kept) => self.chunks[k].device = Some(kept),
                None => chunk.gradients.copy_range_to_host(gpu, 0..range.len(), &mut self.gradients.data_mut()[range])?,
            }
        }
        Ok(())
    }

    /// Gradient-based sampling's draws (`sampler`; `None`: every row kept) over every chunk's
    /// gradients, in place, then their block totals (through `staging` where the device keeps
    /// no copy).
    fn draw(
        &mut self,
        gpu: &Gpu,
        staging: &mut DeviceBuffer<GradientPair<f32>>,
        sampler: Option<GradientSampler>,
        totals: &BlockTotals,
    ) -> Result<()> {
        for k in 0..self.chunks.len() {
            let range = self.chunks[k].range.clone();
            let gradients = self.on_device(gpu, k, staging)?;
            if let Some(sampler) = &sampler {
                let sampler = sampler.from_row(range.start as u64);
                sample::apply(gpu, gradients, range.len(), &sampler, super::ptr_mut(gradients))?;
            }
            totals.add(gpu, (gradients, range.clone()))?;
            if sampler.is_some() && self.chunks[k].device.is_none() {
                staging.copy_range_to_host(gpu, 0..range.len(), &mut self.gradients.data_mut()[range])?;
            }
        }
        Ok(())
    }

    /// The device address of chunk `k`'s gradients: the device's copy, or the host's copied into
    /// `staging`.
    fn on_device(&self, gpu: &Gpu, k: usize, staging: &mut DeviceBuffer<GradientPair<f32>>) -> Result<u64> {
        let chunk = &self.chunks[k];
        Ok(match &chunk.device {
            Some(gradients) => gradients.device_ptr(),
            None => {
                staging.copy_from_host(gpu, &self.gradients.slice(self.rows)[chunk.range.clone()])?;
                staging.device_ptr()
            }
        })
    }

    /// Chunk `k`'s gradients copied back to the host, the device's copy freed.
    fn release(&mut self, gpu: &Gpu, k: usize) -> Result<()> {
        let chunk = &mut self.chunks[k];
        if let Some(gradients) = chunk.device.take() {
            let range = chunk.range.clone();
            gradients.copy_range_to_host(gpu, 0..range.len(), &mut self.gradients.data_mut()[range])?;
        }
        Ok(())
    }

    /// Every chunk's gradients on the host ([`HostRows::gradients`]), the device's copies freed.
    pub(super) fn copy_to_host(&mut self, gpu: &Gpu) -> Result<()> {
        (0..self.chunks.len()).try_for_each(|k| self.release(gpu, k))
    }

    /// The gradients of the rows `range` into `out` (the device address of room for them), zero
    /// where `sampler` leaves a row out.
    fn chunk_gradients(
        &self,
        gpu: &Gpu,
        chunk: &mut Chunk,
        range: Range<usize>,
        sampler: RowSampler,
        out: u64,
    ) -> Result<()> {
        let rows = range.len();
        if rows > chunk.rows {
            return Err(Error::InvalidData(format!("a chunk of {rows} rows in buffers of {}", chunk.rows)));
        }
        chunk.margins.copy_from_host(gpu, &self.margins.slice(self.rows)[range.clone()])?;
        chunk.labels.copy_from_host(gpu, &self.labels.slice(self.rows)[range.clone()])?;
        let weights = match (&mut chunk.weights, &self.weights) {
            (Some(to), Some(from)) => {
                to.copy_from_host(gpu, &from.slice(self.rows)[range])?;
                to.as_ptr()
            }
            _ => std::ptr::null(),
        };
        let args = entry::boost_objective_gradients::args(
            chunk.margins.as_ptr(),
            chunk.labels.as_ptr(),
            weights,
            sampler.key,
            sampler.threshold,
            rows as u64,
            self.objective.as_ptr(),
            super::ptr_mut(out),
        );
        // SAFETY: margins and labels (and the weights when given) hold at least `rows` values
        // (checked above), `out` room for `rows` pairs (the caller's).
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(rows)?, args)? };
        Ok(())
    }

    /// `pass`'s histogram of every row's gradient magnitude, a chunk at a time (through `staging`
    /// where the device keeps no copy), added up on the device and read back once.
    fn histogram(&self, gpu: &Gpu, staging: &mut DeviceBuffer<GradientPair<f32>>, pass: &MvsPass) -> Result<Vec<MvsBin>> {
        let (bins, on_device) = (gpu.alloc_zeroed::<MvsBin>(pass.bins())?, gpu.upload(std::slice::from_ref(pass))?);
        for k in 0..self.chunks.len() {
            let gradients = self.on_device(gpu, k, staging)?;
            sample::add_magnitude_histogram(gpu, gradients, self.chunks[k].range.len(), (&on_device, pass), &bins)?;
        }
        Ok(bins.to_vec(gpu)?)
    }

    /// The rows [`HostRows::sample`] kept, compacted on the device in row order with their
    /// gradients in fixed point by its quantiser, their indices also into `sampled` (one a kept
    /// row): what [`crate::fixed_point::quantiser_and_kept_rows`] and `to_fixed` give. The
    /// device's copies of the chunks are freed (from the last, copied back first) as far as the
    /// kept rows need their room, and all of them at the end.
    pub(super) fn kept(&mut self, gpu: &Gpu, tree: Sampled, sampled: &mut [u32]) -> Result<KeptRows> {
        let mut offsets = tree.counts;
        let mut kept = 0u32;
        for offset in &mut offsets {
            (*offset, kept) = (kept, kept + *offset);
        }
        if sampled.len() != kept as usize {
            return Err(Error::InvalidData(format!("{} places for {kept} kept rows", sampled.len())));
        }
        let first = self.chunks.first().map_or(0, |c| c.range.len());
        let blocks = |rows: usize| rows.div_ceil(SUM_BLOCK);
        let need = sampled.len() * (4 + size_of::<Fixed>()) + first * CHUNK_ROW_BYTES;
        for k in (0..self.chunks.len()).rev() {
            if room(gpu)? >= need {
                break;
            }
            self.release(gpu, k)?;
        }
        let (mut rows, fixed) = (gpu.alloc_uninitialized::<u32>(sampled.len())?, gpu.alloc_uninitialized(sampled.len())?);
        let staged = self.chunks.iter().any(|c| c.device.is_none());
        let mut staging = gpu.alloc_uninitialized::<GradientPair<f32>>(if staged { first } else { 0 })?;
        let (offsets_on_device, totals) = (gpu.upload(&offsets)?, gpu.alloc_zeroed::<Fixed>(offsets.len())?);
        let quantiser = gpu.upload(std::slice::from_ref(&tree.quantiser))?;
        let mut firsts = Vec::new();
        for k in 0..self.chunks.len() {
            let range = self.chunks[k].range.clone();
            let (block, chunk_blocks) = (range.start / SUM_BLOCK, blocks(range.len()));
            let (from, to) = (offsets[block] as usize, offsets.get(block + chunk_blocks).map_or(kept, |&o| o) as usize);
            if from == to {
                continue;
            }
            let gradients = self.on_device(gpu, k, &mut staging)?;
            let args = entry::boost_quantise_kept::args(
                super::ptr(gradients),
                range.len() as u64,
                quantiser.as_ptr(),
                offsets_on_device.as_ptr().wrapping_add(block),
                rows.as_mut_ptr(),
                fixed.as_mut_ptr(),
                totals.as_mut_ptr().wrapping_add(block),
            );
            // SAFETY: the chunk's gradients, an offset and a total for each of its blocks (from
            // its first block's); the offsets the counts' exclusive sums over every row, so its kept
            // rows land inside `rows` and `fixed`, which hold every kept row; whole warps.
            unsafe { gpu.launch_kernel(crate::KERNELS, warp_per_block_config(chunk_blocks)?, args)? };
            firsts.push((from..to, range.start as u32));
        }
        self.chunks.clear();
        let root = totals.to_vec(gpu)?.into_iter().fold(Fixed::zero(), BlockSum::plus);
        // The kernel numbers a chunk's rows from its first.
        rows.copy_range_to_host(gpu, 0..sampled.len(), sampled)?;
        for (kept, first) in firsts {
            sampled[kept].par_iter_mut().with_min_len(1 << 14).for_each(|row| *row += first);
        }
        rows.copy_from_host(gpu, sampled)?;
        Ok(KeptRows { quantiser: tree.quantiser, rows, fixed, root })
    }
}

/// Bytes of the device's `room` left beside the gradients it keeps: for the sampling's small
/// buffers. The gradients are worth the room: each chunk kept saves its copies both ways in every
/// pass of the sampling (three to five), where a page kept would save one copy a tree; and
/// [`HostRows::kept`] frees chunks where the kept rows need their room.
fn reserve(room: usize) -> usize {
    room / 16 + (1 << 20)
}

/// `rows` gradient pairs on the device, or `None` where its memory (or its limit) has no room.
fn alloc_within_limit(gpu: &Gpu, rows: usize) -> Result<Option<DeviceBuffer<GradientPair<f32>>>> {
    match gpu.alloc_uninitialized(rows) {
        Ok(buffer) => Ok(Some(buffer)),
        Err(primitives::Error::MemoryLimit { .. } | primitives::Error::OutOfMemory { .. }) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// What the gradients' pass adds up after each chunk's gradients.
#[derive(Clone, Copy)]
enum Then<'a> {
    /// The blocks' totals (the gradients are the tree's).
    Totals(&'a BlockTotals),
    /// The largest magnitude (a float's bits), for gradient-based sampling's threshold.
    Max(&'a DeviceBuffer<u32>),
}

/// The quantiser's sums and the kept rows' count of every block of a tree's rows, on the device.
struct BlockTotals {
    sums: DeviceBuffer<QuantiserSums>,
    counts: DeviceBuffer<u32>,
}

impl BlockTotals {
    /// The sums and counts of the blocks of the gradients of the rows `range` (whole blocks from
    /// a block's first row) at `gradients`, into their blocks' places (no wait).
    fn add(&self, gpu: &Gpu, (gradients, range): (u64, Range<usize>)) -> Result<()> {
        let (first, blocks) = (range.start / SUM_BLOCK, reduce::blocks(range.len()));
        if range.start % SUM_BLOCK != 0 || first + blocks > self.sums.len().min(self.counts.len()) {
            return Err(Error::InvalidData(format!("rows {range:?} are not whole blocks of {}", self.sums.len())));
        }
        let args = entry::boost_quantise_sums::args(
            super::ptr(gradients),
            range.len() as u64,
            self.sums.as_mut_ptr().wrapping_add(first),
            self.counts.as_mut_ptr().wrapping_add(first),
        );
        // SAFETY: `range.len()` gradients, a sum and a count for each of their blocks from `first`
        // (checked above); the grid is whole warps, one a block.
        unsafe { gpu.launch_kernel(crate::KERNELS, warp_per_block_config(blocks)?, args)? };
        Ok(())
    }
}
