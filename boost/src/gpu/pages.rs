//! External-memory pages on one GPU ([`GpuPages`]), as Ou's out-of-core GPU boosting does with
//! gradient-based sampling: each tree's rows with a gradient (the sampled ones) are gathered from
//! every page into one device page ([`boost_kernels::ellpack::gather_kernel`]; from a page's copy
//! in the builder's layout, mapped into the device's address space, where it has one:
//! [`super::host_bins`]), the in-core
//! builder ([`GpuTrainer`]) grows the tree on it, and every page is then walked on the device for
//! every row's leaf ([`boost_kernels::predict::ellpack_kernel`], or
//! [`boost_kernels::predict::packed_kernel`] over the copy).
//!
//! Rows without a gradient add nothing to any histogram (fixed-point sums), so the tree is the one
//! grown over all rows: with the same gradients, the CPU's tree ([`crate::tree::hist`]) bit for
//! bit. Each pass copies every page to the device where it is (host memory, page-locked so that
//! the copies run at the bus's speed, or the mapped cache file), but for the pages the device
//! keeps: from the second tree on, those that fit half the room the first tree's peak left under
//! the memory limit (or in the device). The device holds the sampled page, its gradients, the
//! builder's buffers, the kept pages and one page being read, which `device_memory_limit`
//! bounds; where a tree's sampled rows (without sampling, every row) do not fit beside the rest,
//! the tree is grown over the pages streamed a level at a time instead ([`super::paged`]): the
//! same tree.
//!
//! Where the rows' labels, margins and gradients fit half of `device_memory_limit` (and for the
//! objectives the device computes, ranking aside), the rounds are the device's
//! ([`GpuPages::boost_tree`]): gradients, sample, quantiser and the kept rows in fixed point
//! ([`GpuTrainer::quantise_kept`]) there, and the walk adds each row's leaf value to its margin
//! (when every row was kept, the builder's row order has them: no walk); the host reads back only
//! the kept rows' indices (to find each page's). Where they do not fit, an element-wise
//! objective's rounds are still the device's: the rows stay in page-locked host memory and stream
//! through the same kernels in chunks ([`super::host_rows`]), and the host adds each row's leaf
//! value to its margin. Otherwise (the other objectives) the gradients and the sample are the
//! host's (the learner's host rounds, [`GpuPages::build_tree`]), and the leaves come back through
//! a page-locked staging buffer.

use std::sync::Arc;
use std::time::Instant;

use boost_kernels::entry;
use boost_kernels::metric::Transform;
use boost_kernels::reduce::BlockSum;
use primitives::ops::GradientPair;
use primitives::{CopyStream, DeviceBuffer, Gpu, HostMapped, HostPin};
use rayon::prelude::*;

use super::host_bins::{gather_packed, HostBins};
use super::host_rows::HostRows;
use super::paged::{grow_streamed, Streamed, TreeGradients};
use super::quantiser::KeptRows;
use super::trainer::{add_leaf_values, leaf_ranges, no_device_rows, DeviceRows};
use super::{element_config, BinLayout, DeviceBins, DeviceCuts, DeviceTrees, Fixed, GpuTrainer, InitialMargins};
use crate::data::MetaInfo;
use crate::ellpack::EllpackMatrix;
use crate::external::ExternalMatrix;
use crate::fixed_point::GradientQuantiser;
use crate::metric::DeviceMetric;
use crate::objective::DeviceObjective;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::sample::TreeSampler;
use crate::tree::hist::BuiltTree;
use crate::tree::grow::RowOrder;
use crate::tree::Tree;
use crate::Result;

/// A training run over external-memory pages on one GPU.
pub struct GpuPages<'g> {
    /// The pages in host memory, page-locked so that their copies run at the bus's speed; first,
    /// so that they are unlocked before `matrix` may free them.
    _pinned: Vec<HostPin>,
    matrix: Arc<ExternalMatrix>,
    layout: BinLayout,
    /// The builder of the sampled rows: the cuts uploaded once, its rows replaced every tree.
    trainer: GpuTrainer<'g>,
    /// [`bin_values`] of the cuts, on the device for every tree's walk.
    bin_values: DeviceBuffer<f32>,
    /// Page-locked host buffers of a tree's sampled rows and their gradients and of every row's
    /// leaf.
    staged_rows: Staging<u32>,
    staged_fixed: Staging<GradientPair<i64>>,
    staged_leaves: Staging<u32>,
    /// The stream of the pages' copies beside the kernels (the walk's, a streamed tree's).
    copies: CopyStream,
    /// Every row's labels, weights, margins and gradients when the device computes the rounds
    /// and they fit it.
    device_rows: Option<DeviceRows>,
    /// Every row's labels, weights, margins and gradients when the device computes the rounds of
    /// an element-wise objective and they do not fit it: streamed through it for each tree.
    host_rows: Option<HostRows>,
    /// The pages' state for the trees whose sampled rows do not fit the device in one page.
    streamed: Option<Streamed>,
    /// The pages kept on the device (by the pages' order), chosen at the first tree.
    resident: Option<Vec<Option<DeviceBuffer<u64>>>>,
    /// The device's free memory when the run began: the rows' arrays fit half of it (or of the
    /// memory limit) or stream through the device, decided once.
    free_at_start: usize,
    /// The pages in the builder's layout in host memory, made at the first tree; last, so that
    /// the copy stream that reads them (`copies`) is waited for first.
    host_bins: Option<HostBins>,
}

/// A host buffer page-locked for the device's copies, kept across trees and grown (a quarter
/// more than asked) when a tree needs more.
pub(super) struct Staging<T> {
    data: Vec<T>,
    pin: Option<HostPin>,
}

impl<T: bytemuck::Pod + Send + Sync> Staging<T> {
    pub(super) fn new() -> Self {
        Staging { data: Vec::new(), pin: None }
    }

    /// The first `len` elements, the buffer grown first if it is shorter.
    pub(super) fn take(&mut self, gpu: &Gpu, len: usize) -> Result<&mut [T]> {
        self.take_with_room(gpu, len, len / 4)
    }

    /// [`Staging::take`], a buffer grown to `len + room` elements.
    pub(super) fn take_with_room(&mut self, gpu: &Gpu, len: usize, room: usize) -> Result<&mut [T]> {
        if self.data.len() < len {
            self.pin = None;
            self.data = faulted_in(len + room);
            // SAFETY: the vector is neither moved nor freed while pinned: it is replaced only
            // after the pin is dropped (above), and `drop` unpins it first.
            self.pin = Some(unsafe { gpu.pin_host(&self.data) }?);
        }
        Ok(&mut self.data[..len])
    }

    /// The first `len` elements.
    pub(super) fn slice(&self, len: usize) -> &[T] {
        &self.data[..len]
    }

    /// Every element, to write.
    pub(super) fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }
}

/// `len` zeroed elements whose memory pages every thread has written: page-locking memory whose
/// pages are not yet mapped takes their faults one at a time in the driver (about 0.5 s a GB on
/// the lent machines), where the threads here share them.
pub(super) fn faulted_in<T: bytemuck::Pod + Send + Sync>(len: usize) -> Vec<T> {
    (0..len).into_par_iter().with_min_len(1 << 16).map(|_| T::zeroed()).collect()
}

impl<T> Drop for Staging<T> {
    fn drop(&mut self) {
        // Unpinned before the vector is freed.
        self.pin = None;
    }
}

impl<'g> GpuPages<'g> {
    /// Uploads the cuts of `matrix`.
    pub fn new(gpu: &'g Gpu, matrix: Arc<ExternalMatrix>) -> Result<Self> {
        let layout = BinLayout::of(&matrix.cuts)?;
        let cuts = DeviceCuts::upload(gpu, &matrix.cuts)?;
        let bins = DeviceBins::upload(gpu, (Vec::new(), layout))?;
        let trainer = GpuTrainer::with_bins(gpu, cuts, &matrix.cuts, 0, bins)?;
        let bin_values = gpu.upload(&bin_values(&matrix.cuts))?;
        // SAFETY: the pages' words never move or change while `matrix` lives, and the pins are
        // dropped with it.
        let pinned = matrix.store.host_words().map(|words| unsafe { gpu.pin_host(words) });
        let pinned = pinned.collect::<std::result::Result<_, primitives::Error>>()?;
        Ok(GpuPages {
            matrix,
            layout,
            trainer,
            bin_values,
            _pinned: pinned,
            staged_rows: Staging::new(),
            staged_fixed: Staging::new(),
            staged_leaves: Staging::new(),
            host_bins: None,
            copies: gpu.copy_stream()?,
            device_rows: None,
            host_rows: None,
            streamed: None,
            resident: None,
            free_at_start: room(gpu)?,
        })
    }

    /// The device.
    pub fn gpu(&self) -> &'g Gpu {
        self.trainer.gpu()
    }

    /// Bytes of the packed pages.
    pub fn pages_bytes(&self) -> usize {
        self.matrix.bytes()
    }

    /// Wall time of the steps so far (the in-core builder's and the pages'), with their device
    /// time if recorded ([`GpuPages::time_device`]).
    pub fn phases(&mut self) -> Result<PhaseTimes> {
        self.trainer.phases()
    }

    /// Records each step's device time from now on: [`GpuTrainer::time_device`].
    pub fn time_device(&mut self, on: bool) {
        self.trainer.time_device(on);
    }

    /// One tree from `gradients` (one a row of the pages, zero for the rows sampling left out), in
    /// fixed point by the quantiser of all rows ([`crate::fixed_point::quantiser`]), with every
    /// row's leaf: the tree the CPU's builder grows from the same gradients.
    pub fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<BuiltTree> {
        self.start_tree()?;
        let start = Instant::now();
        let gpu = self.trainer.gpu();
        let (quantiser, runs) = crate::fixed_point::quantiser_and_kept_rows(gradients);
        let count = runs.iter().map(Vec::len).sum();
        if !self.sampled_page_fits(count, 0)? {
            let root = gradients.par_iter().map(|&g| quantiser.to_fixed(g)).reduce(Fixed::zero, BlockSum::plus);
            self.trainer.phases.add("pages: every row's gradient summed in fixed point", start.elapsed());
            let tree = self.grow_streamed(params, (quantiser, TreeGradients::Host(gradients), root), features, rng)?;
            return self.with_leaves(tree);
        }
        let sampled = self.staged_rows.take(gpu, count)?;
        let gathered = self.staged_fixed.take(gpu, sampled.len())?;
        let root = stage_sampled(&runs, gradients, &quantiser, sampled, gathered);
        let (sampled, gathered) = (&*sampled, &*gathered);
        let (device_fixed, device_rows) = (gpu.upload(gathered)?, gpu.upload(sampled)?);
        self.trainer.phases.add("pages: quantise and stage the sampled rows", start.elapsed());

        let pages = DevicePages::new(gpu, &self.matrix, &self.resident, (&self.host_bins, &self.copies));
        let kept = KeptRows { quantiser, rows: device_rows, fixed: device_fixed, root };
        let (tree, _) = grow_kept(&mut self.trainer, &pages, self.layout, (sampled, kept), (params, features, rng))?;
        self.with_leaves(tree)
    }

    /// `tree` with every row's leaf; the pages kept on the device after the first tree.
    fn with_leaves(&mut self, tree: Tree) -> Result<BuiltTree> {
        let start = Instant::now();
        let positions = self.leaves(&tree)?;
        self.trainer.phases.add("pages: every row's leaf", start.elapsed());
        self.keep_pages_on_device()?;
        Ok(BuiltTree { tree, positions, phases: PhaseTimes::default() })
    }

    /// Whether a tree's `count` sampled rows fit the device in one page (their bins, gradients,
    /// indices and row buffers) beside a page being read, once `freed` more bytes are freed; if
    /// not, the tree is streamed.
    fn sampled_page_fits(&self, count: usize, freed: usize) -> Result<bool> {
        let row_bytes = self.layout.row_words * 4 + size_of::<Fixed>() + 4 + 5 * 4;
        let mut largest = 0;
        self.matrix.store.for_each(|_, page| largest = largest.max(std::mem::size_of_val(page.words())))?;
        // The last tree's sampled rows are freed before this one's are gathered.
        let freed = freed + self.trainer.bins_bytes() + self.trainer.rows * 5 * 4;
        Ok(count.saturating_mul(row_bytes).saturating_add(largest) <= room(self.gpu())?.saturating_add(freed))
    }

    /// One tree over the pages streamed a level at a time ([`super::paged`]), the pages' state
    /// made at the first such tree (on the host; after it, on the device as far as its peak
    /// allows); the builder's own rows freed first.
    fn grow_streamed(
        &mut self,
        params: &TreeParams,
        gradients: (GradientQuantiser, TreeGradients, Fixed),
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<Tree> {
        let (gpu, layout) = (self.trainer.gpu(), self.layout);
        if self.trainer.rows > 0 {
            self.trainer.replace_rows(0, |_| DeviceBins::upload(gpu, (Vec::new(), layout)))?;
        }
        let pages = DevicePages::new(gpu, &self.matrix, &self.resident, (&self.host_bins, &self.copies));
        if self.streamed.is_none() {
            let start = Instant::now();
            self.streamed = Some(Streamed::new(gpu, &pages)?);
            self.trainer.phases.add("pages: each page's state, page-locked (once)", start.elapsed());
        }
        let streamed = self.streamed.as_mut().expect("made above");
        let tree = grow_streamed(&mut self.trainer, &pages, streamed, params, gradients, features, rng)?;
        streamed.keep_on_device(gpu, room_after_peak(gpu)?)?;
        Ok(tree)
    }

    /// Every row's leaf of `tree`: each page uploaded and walked on the device
    /// ([`boost_kernels::predict::ellpack_kernel`]), the leaves read back.
    fn leaves(&mut self, tree: &Tree) -> Result<Vec<u32>> {
        Ok(self.walk_leaves(tree, &mut |_, _| {})?.par_iter().copied().collect())
    }

    /// [`GpuPages::leaves`] in the page-locked staging buffer, each page's also to `each` (its
    /// first row, its rows' leaves) as they arrive, while the next page is copied.
    fn walk_leaves(&mut self, tree: &Tree, each: PageLeaves) -> Result<&[u32]> {
        let gpu = self.trainer.gpu();
        let positions = self.staged_leaves.take(gpu, self.matrix.rows())?;
        let values = (&self.trainer.cuts.cut_ptrs, &self.bin_values);
        let pages = DevicePages::new(gpu, &self.matrix, &self.resident, (&self.host_bins, &self.copies));
        walk_pages(&pages, (self.layout, values), (tree, 0), (Walk::Leaves(positions), each))?;
        Ok(positions)
    }

    /// Before a tree: until pages are kept on the device, the peak of the first tree is measured.
    /// Before the first, the pages' copies in the builder's layout are made ([`HostBins`]).
    fn start_tree(&mut self) -> Result<()> {
        if self.host_bins.is_none() {
            let start = Instant::now();
            let pages = DevicePages::new(self.gpu(), &self.matrix, &self.resident, (&None, &self.copies));
            let bins = HostBins::transcode(self.gpu(), &pages, (&self.trainer.cuts.cut_ptrs, self.layout))?;
            self.host_bins = Some(bins);
            self.trainer.phases.add("pages: each page in the builder's layout, in host memory (once)", start.elapsed());
        }
        if self.resident.is_none() {
            self.gpu().reset_memory_in_use_peak();
        }
        Ok(())
    }

    /// After the first tree: keeps pages on the device, in order, while they fit half the room its
    /// peak left (under the device's memory limit, or without one its free memory); the others are
    /// copied for every pass (XGBoost splits its cache between host and device so).
    fn keep_pages_on_device(&mut self) -> Result<()> {
        if self.resident.is_some() {
            return Ok(());
        }
        let start = Instant::now();
        let gpu = self.gpu();
        let room = room_after_peak(gpu)?;
        let (mut resident, mut bytes, mut failed) = (Vec::new(), 0usize, None);
        self.matrix.store.for_each(|_, page| {
            let words = page.words();
            let fits = failed.is_none() && bytes + std::mem::size_of_val(words) <= room / 2;
            resident.push(match fits.then(|| gpu.upload(words)) {
                Some(Ok(copy)) => {
                    bytes += std::mem::size_of_val(words);
                    Some(copy)
                }
                Some(Err(error)) => {
                    failed = Some(error);
                    None
                }
                None => None,
            });
        })?;
        if let Some(error) = failed {
            return Err(error.into());
        }
        gpu.synchronize()?;
        if bytes > 0 {
            self.trainer.phases.add("pages: copies kept on the device", start.elapsed());
        }
        // A page kept on the device is read there: its packed copy in host memory is not.
        if let Some(bins) = &mut self.host_bins {
            resident.iter().enumerate().filter(|(_, kept)| kept.is_some()).for_each(|(k, _)| bins.release(k));
        }
        self.resident = Some(resident);
        Ok(())
    }

    /// Whether the device can compute the rounds of `objective`: those of an element-wise
    /// objective always (the rows streamed through it where they do not fit: [`HostRows`]), the
    /// others' (the softmax, the scaled residuals, AFT, the expectiles) where they fit.
    pub(crate) fn takes(&self, objective: DeviceObjective) -> bool {
        matches!(objective, DeviceObjective::Elementwise(_)) || self.fits(objective)
    }

    /// Whether every row's labels, weights, margins and gradients of `objective` take at most half
    /// of the device's memory limit, or without one of its free memory when the run began (ranking
    /// aside).
    pub(crate) fn fits(&self, objective: DeviceObjective) -> bool {
        let outputs = match objective {
            DeviceObjective::Elementwise(_) => 1,
            DeviceObjective::Softmax { classes } => classes,
            DeviceObjective::ScaledResidual(o) => o.outputs as usize,
            DeviceObjective::Aft(_) => 1,
            DeviceObjective::Expectile(o) => o.outputs as usize,
            DeviceObjective::LambdaRank(_) => return false,
        };
        // Label and weight, margins, the tree's gradients, and the round's for several outputs (for
        // AFT: the round's, and the label bounds).
        let aft = matches!(objective, DeviceObjective::Aft(_));
        let row_bytes = 8 + 4 * outputs + 8 + if outputs > 1 { 8 * outputs } else { 0 } + if aft { 16 } else { 0 };
        let limit = self.gpu().memory_limit().unwrap_or(self.free_at_start);
        self.matrix.rows().saturating_mul(row_bytes) <= limit / 2
    }

    /// Keeps every row's labels, weights and `margins` for [`GpuPages::boost_tree`]: on the
    /// device where they fit, else in page-locked host memory.
    pub(crate) fn keep_rows_on_device(
        &mut self,
        objective: DeviceObjective,
        info: &MetaInfo,
        margins: InitialMargins<'_>,
    ) -> Result<()> {
        let (gpu, n) = (self.gpu(), self.matrix.rows());
        match objective {
            DeviceObjective::Elementwise(elementwise) if !self.fits(objective) => {
                let start = Instant::now();
                self.host_rows = Some(HostRows::new(gpu, n, elementwise, info, margins)?);
                self.trainer.phases.add("pages: the rows' labels and margins, page-locked", start.elapsed());
            }
            _ => self.device_rows = Some(DeviceRows::new(gpu, n, objective, info, margins)?),
        }
        Ok(())
    }

    /// Whether the rows' metrics are the device's: where the rows are there.
    pub(crate) fn evaluates_on_device(&self) -> bool {
        self.device_rows.is_some()
    }

    /// The device's rows, kept by [`GpuPages::keep_rows_on_device`].
    fn device_rows(&self) -> Result<&DeviceRows> {
        self.device_rows.as_ref().ok_or_else(no_device_rows)
    }

    /// The rows' margins, read back from the device (or copied where the host holds them).
    pub(crate) fn margins(&self) -> Result<Vec<f32>> {
        match &self.host_rows {
            Some(rows) => Ok(rows.margins().to_vec()),
            None => self.device_rows()?.set.read_margins(self.gpu()),
        }
    }

    /// `metric` of the rows' predictions (`transform` of the margins) on the device.
    pub(crate) fn evaluate(&mut self, metric: DeviceMetric, transform: Transform) -> Result<f64> {
        let gpu = self.gpu();
        self.device_rows.as_mut().ok_or_else(no_device_rows)?.set.evaluate(gpu, metric, transform)
    }

    /// The gradients of round `_round` of every output, for the softmax and the scaled residuals
    /// (the element-wise objectives' come with each tree).
    pub(crate) fn compute_gradients(&mut self, _round: usize) -> Result<()> {
        if self.host_rows.is_some() {
            return Ok(());
        }
        let start = Instant::now();
        let (gpu, n) = (self.gpu(), self.matrix.rows());
        self.device_rows.as_mut().ok_or_else(no_device_rows)?.round_gradients(gpu, n)?;
        self.trainer.phases.add("tree: gradients and quantise", start.elapsed());
        Ok(())
    }

    /// Output `output`'s tree of a round on the device: the rows' gradients (`sampler`'s), the
    /// kept rows gathered from the pages, the tree grown on them, and every page walked for each
    /// row's leaf value, added to its margin. The tree [`GpuPages::build_tree`] grows from the same
    /// gradients.
    pub(crate) fn boost_tree(
        &mut self,
        params: &TreeParams,
        output: usize,
        sampler: TreeSampler,
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<Tree> {
        if self.host_rows.is_some() {
            return self.boost_tree_host_rows(params, sampler, features, rng);
        }
        self.start_tree()?;
        let start = Instant::now();
        let (gpu, n) = (self.gpu(), self.matrix.rows());
        let gradients = self.device_rows()?.tree_gradients(gpu, n, output, sampler)?;
        // SAFETY: `gradients` is `n` pairs of the device rows' buffers, kept for the training run.
        let kept = unsafe { self.trainer.quantise_kept(gradients, n)? };
        if !self.sampled_page_fits(kept.rows.len(), 0)? {
            self.trainer.phases.add("pages: gradients, sample and kept rows on the device", start.elapsed());
            // The pages' states take the rows' gradients (zero where the sample leaves a row
            // out) as they are, each page put in fixed point on the device as it is read.
            let (quantiser, root) = (kept.quantiser, kept.root);
            drop((kept.rows, kept.fixed));
            let rows = self.device_rows.take().ok_or_else(no_device_rows)?;
            let tree = rows.gradients_at(gradients, n).and_then(|(buffer, at)| {
                self.grow_streamed(params, (quantiser, TreeGradients::Device(buffer, at), root), features, rng)
            });
            self.device_rows = Some(rows);
            let tree = tree?;
            self.add_leaf_values_by_walk(&tree, output)?;
            self.keep_pages_on_device()?;
            return Ok(tree);
        }
        let sampled = self.staged_rows.take(gpu, kept.rows.len())?;
        kept.rows.copy_range_to_host(gpu, 0..sampled.len(), sampled)?;
        self.trainer.phases.add("pages: gradients, sample and kept rows on the device", start.elapsed());

        let pages = DevicePages::new(gpu, &self.matrix, &self.resident, (&self.host_bins, &self.copies));
        let (tree, order) = grow_kept(&mut self.trainer, &pages, self.layout, (sampled, kept), (params, features, rng))?;

        if self.trainer.rows == n {
            // Every row was kept, in order: the builder's row order has each one's leaf.
            let start = Instant::now();
            let rows = self.device_rows.as_ref().ok_or_else(no_device_rows)?;
            let outputs = rows.gradients.outputs();
            let leaves: Vec<_> = leaf_ranges(&tree, &order).into_iter().map(|(_, leaf)| leaf).collect();
            add_leaf_values(gpu, (&self.trainer.buffers.rows, n), &leaves, (&rows.set.margins, outputs, output))?;
            self.trainer.phases.add("pages: every row's leaf value to its margin", start.elapsed());
        } else {
            self.add_leaf_values_by_walk(&tree, output)?;
        }
        self.keep_pages_on_device()?;
        Ok(tree)
    }

    /// [`GpuPages::boost_tree`] with the rows in host memory ([`HostRows`]): the gradients, the
    /// sample, the quantiser and the kept rows computed as the rows stream through the device,
    /// every row's leaf found by a walk of the pages, its value added to its margin on the host.
    fn boost_tree_host_rows(
        &mut self,
        params: &TreeParams,
        sampler: TreeSampler,
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<Tree> {
        self.start_tree()?;
        let start = Instant::now();
        let (gpu, layout) = (self.gpu(), self.layout);
        // The last tree's sampled rows freed first: room for the chunks.
        if self.trainer.rows > 0 {
            self.trainer.replace_rows(0, |_| DeviceBins::upload(gpu, (Vec::new(), layout)))?;
        }
        let mut rows = self.host_rows.take().ok_or_else(no_device_rows)?;
        let tree = self.grow_from_host_rows(&mut rows, params, sampler, features, rng, start).and_then(|tree| {
            let start = Instant::now();
            self.walk_leaves(&tree, &mut |first, leaves| rows.add_leaves(&tree, first, leaves))?;
            self.trainer.phases.add("pages: every row's leaf value to its margin", start.elapsed());
            Ok(tree)
        });
        self.host_rows = Some(rows);
        let tree = tree?;
        self.keep_pages_on_device()?;
        Ok(tree)
    }

    /// The tree of [`GpuPages::boost_tree_host_rows`] from `rows` (`start`: when its work began).
    fn grow_from_host_rows(
        &mut self,
        rows: &mut HostRows,
        params: &TreeParams,
        sampler: TreeSampler,
        features: &[u32],
        rng: &mut impl rand::Rng,
        start: Instant,
    ) -> Result<Tree> {
        let gpu = self.gpu();
        let sampled = rows.sample(gpu, sampler)?;
        self.trainer.phases.add("pages: the rows' gradients and sample, streamed through the device", start.elapsed());
        let start = Instant::now();
        let count = sampled.counts.iter().map(|&c| c as usize).sum();
        if !self.sampled_page_fits(count, rows.device_bytes())? {
            rows.copy_to_host(gpu)?;
            let quantiser = sampled.quantiser;
            let gradients = rows.gradients();
            let root = gradients.par_iter().map(|&g| quantiser.to_fixed(g)).reduce(Fixed::zero, BlockSum::plus);
            self.trainer.phases.add("pages: every row's gradient summed in fixed point", start.elapsed());
            return self.grow_streamed(params, (quantiser, TreeGradients::Host(gradients), root), features, rng);
        }
        let host_sampled = self.staged_rows.take(gpu, count)?;
        let kept = rows.kept(gpu, sampled, host_sampled)?;
        self.trainer.phases.add("pages: the kept rows in fixed point, streamed through the device", start.elapsed());
        let pages = DevicePages::new(gpu, &self.matrix, &self.resident, (&self.host_bins, &self.copies));
        let kept = (&*host_sampled, kept);
        Ok(grow_kept(&mut self.trainer, &pages, self.layout, kept, (params, features, rng))?.0)
    }

    /// Each row's leaf value of `tree` (output `output`'s) added to its margin, by a walk of every
    /// page on the device.
    fn add_leaf_values_by_walk(&mut self, tree: &Tree, output: usize) -> Result<()> {
        let start = Instant::now();
        let gpu = self.gpu();
        let rows = self.device_rows.as_ref().ok_or_else(no_device_rows)?;
        let margins = Walk::Margins(rows.set.margins.device_ptr(), rows.gradients.outputs());
        let values = (&self.trainer.cuts.cut_ptrs, &self.bin_values);
        let pages = DevicePages::new(gpu, &self.matrix, &self.resident, (&self.host_bins, &self.copies));
        walk_pages(&pages, (self.layout, values), (tree, output), (margins, &mut |_, _| {}))?;
        // The copies run on after the launches: the walk's time is theirs.
        gpu.synchronize()?;
        self.trainer.phases.add("pages: every row's leaf value to its margin", start.elapsed());
        Ok(())
    }
}

/// Bytes the device can give beside the peak so far: under its memory limit, or its free memory
/// less what the peak held above the memory in use now.
fn room_after_peak(gpu: &Gpu) -> Result<usize> {
    let transient = gpu.memory_in_use_peak().saturating_sub(gpu.memory_in_use());
    Ok(match gpu.memory_limit() {
        Some(limit) => limit.saturating_sub(gpu.memory_in_use_peak()),
        None => gpu.memory_usage()?.map_or(usize::MAX, |u| (u.free_bytes as usize).saturating_sub(transient)),
    })
}

/// Bytes the device can still give: what its memory limit leaves, or its free memory (unbounded
/// where neither is known, as on the emulator without a limit).
pub(super) fn room(gpu: &Gpu) -> Result<usize> {
    Ok(match gpu.memory_limit() {
        Some(limit) => limit.saturating_sub(gpu.memory_in_use()),
        None => gpu.memory_usage()?.map_or(usize::MAX, |u| u.free_bytes as usize),
    })
}

/// The tree of the `kept` rows (their indices also on the host, `sampled`): their bins gathered
/// from every page into the builder's rows ([`gather_sampled`]), the tree grown on them, with
/// its row order.
fn grow_kept(
    trainer: &mut GpuTrainer,
    pages: &DevicePages,
    layout: BinLayout,
    (sampled, kept): (&[u32], KeptRows),
    (params, features, rng): (&TreeParams, &[u32], &mut impl rand::Rng),
) -> Result<(Tree, RowOrder)> {
    gather_sampled(trainer, pages, layout, (sampled, &kept.rows))?;
    let KeptRows { quantiser, rows, fixed, root } = kept;
    drop(rows);
    trainer.grow(params, quantiser, &fixed, root, features, false, rng)
}

/// Replaces `trainer`'s rows with the `sampled` rows (increasing; on the host and the device) of
/// every page.
fn gather_sampled(
    trainer: &mut GpuTrainer,
    pages: &DevicePages,
    layout: BinLayout,
    (sampled, device_rows): (&[u32], &DeviceBuffer<u32>),
) -> Result<()> {
    let start = Instant::now();
    let gpu = trainer.gpu();
    trainer.replace_rows(sampled.len(), |cuts| {
        let words = gpu.alloc_uninitialized(sampled.len() * layout.row_words)?;
        gather(pages, &cuts.cut_ptrs, (sampled, device_rows), DeviceBins { words, layout })
    })?;
    // Copies from page-locked memory run on after the call returns: the staging buffers are
    // written again only once they are done.
    gpu.synchronize()?;
    trainer.phases.add("pages: gather the sampled rows", start.elapsed());
    Ok(())
}

/// What a walk tells of each page's leaves as they arrive: its first row and its rows' leaves.
type PageLeaves<'a> = &'a mut dyn FnMut(usize, &[u32]);

/// Where a walk goes: each row's leaf, read back (a row of the matrix, or of its page), or its
/// value added to the rows' margins on the device (the address of the first row's, `outputs` a
/// row).
enum Walk<'a> {
    Leaves(&'a mut [u32]),
    Margins(u64, usize),
}

impl Walk<'_> {
    /// The part of this walk's rows that are `rows` from `first`.
    fn rows(&mut self, first: usize, rows: usize) -> Walk<'_> {
        match self {
            Walk::Leaves(all) => Walk::Leaves(&mut all[first..first + rows]),
            Walk::Margins(margins, outputs) => {
                let bytes = first * *outputs * std::mem::size_of::<f32>();
                Walk::Margins(*margins + bytes as u64, *outputs)
            }
        }
    }
}

/// Every page of `matrix` walked on the device by `tree` (of output `output`), to `walk`'s rows
/// (each page's leaves also to `each`, with its first row, as they arrive):
/// a page kept there as it is, one with a copy in the builder's layout that copy (the next one's
/// copied on the copy stream while the kernel reads it: two buffers, or one where the device has
/// no room for two), the others their words.
fn walk_pages<'a>(
    pages: &DevicePages<'a>,
    (layout, values): (BinLayout, (&DeviceBuffer<u32>, &DeviceBuffer<f32>)),
    (tree, output): (&Tree, usize),
    (mut walk, each): (Walk, PageLeaves),
) -> Result<()> {
    let gpu = pages.gpu;
    let trees = DeviceTrees::upload(gpu, &[(tree.clone(), output as _)])?;
    let views = pages.views()?;
    let copied = |v: &DevicePage<'a>| if v.kept.is_none() { v.bins.map(HostMapped::host) } else { None };
    let largest = views.iter().filter_map(copied).map(<[u32]>::len).max().unwrap_or(0);
    let mut slots = vec![DeviceBins { words: gpu.alloc_uninitialized(largest)?, layout }];
    match gpu.alloc_uninitialized(largest) {
        Ok(words) if largest > 0 => slots.push(DeviceBins { words, layout }),
        Ok(_) | Err(primitives::Error::MemoryLimit { .. } | primitives::Error::OutOfMemory { .. }) => {}
        Err(error) => return Err(error.into()),
    }
    let count = slots.len();
    let prefetch = |k: usize, slots: &mut [DeviceBins]| match views.get(k).and_then(copied) {
        // SAFETY: the copies' host side (the pages' copies) is never written during the run; a
        // slot is written only after the device's work so far, which holds the last kernel that
        // read it, and read only after the device waits for its copy.
        Some(bins) => unsafe { pages.copies.upload_at(gpu, &mut slots[k % count].words, 0, bins) },
        None => Ok(()),
    };
    for (k, view) in views.iter().enumerate() {
        if k == 0 || count == 1 {
            prefetch(k, &mut slots)?;
        }
        pages.copies.wait(gpu)?;
        if count == 2 {
            prefetch(k + 1, &mut slots)?;
        }
        let (page, out) = (&view.page, walk.rows(view.first, view.page.rows));
        match (view.kept, copied(view)) {
            _ if page.rows == 0 => {}
            (Some(words), _) => walk_page(gpu, PageRows::Ellpack(page, words), values, &trees, out)?,
            (None, Some(_)) => walk_page(gpu, PageRows::Packed(&slots[k % count], page.rows), values, &trees, out)?,
            (None, None) => {
                let words = gpu.upload(page.words())?;
                walk_page(gpu, PageRows::Ellpack(page, &words), values, &trees, out)?
            }
        }
        if let Walk::Leaves(all) = &walk {
            each(view.first, &all[view.first..view.first + page.rows]);
        }
    }
    Ok(())
}

/// The pages of an external matrix as the device reads them: those kept there, the others copied
/// for each pass.
pub(super) struct DevicePages<'a> {
    gpu: &'a Gpu,
    pub(super) matrix: &'a ExternalMatrix,
    /// A page's copy kept on the device, by the pages' order.
    resident: &'a [Option<DeviceBuffer<u64>>],
    /// The pages' copies in the builder's layout, once made.
    bins: Option<&'a HostBins>,
    /// The stream of the pages' copies beside the kernels: the walk's, and a streamed tree's.
    pub(super) copies: &'a CopyStream,
}

/// A page as a pass reads it: its first row, its words on the host, its copy kept on the
/// device, if any, and its copy in the builder's layout in host memory, if any.
pub(super) struct DevicePage<'a> {
    pub(super) first: usize,
    pub(super) page: EllpackMatrix<&'a [u64]>,
    pub(super) kept: Option<&'a DeviceBuffer<u64>>,
    pub(super) bins: Option<&'a HostMapped<u32>>,
}

impl<'a> DevicePages<'a> {
    /// The pages of `matrix` with the copies the run keeps of them.
    fn new(
        gpu: &'a Gpu,
        matrix: &'a ExternalMatrix,
        resident: &'a Option<Vec<Option<DeviceBuffer<u64>>>>,
        (bins, copies): (&'a Option<HostBins>, &'a CopyStream),
    ) -> Self {
        DevicePages { gpu, matrix, resident: resident.as_deref().unwrap_or_default(), bins: bins.as_ref(), copies }
    }

    /// Each page, in row order.
    pub(super) fn views(&self) -> Result<Vec<DevicePage<'a>>> {
        let pages = self.matrix.store.pages()?.into_iter().enumerate();
        let kept = |i: usize| self.resident.get(i).and_then(Option::as_ref);
        let bins = |i: usize| self.bins.and_then(|b| b.page(i));
        Ok(pages.map(|(i, (first, page))| DevicePage { first, page, kept: kept(i), bins: bins(i) }).collect())
    }
}

/// A page's rows on the device as a walk reads them: its ELLPACK words, or its rows in the
/// builder's layout (the first `rows` of the buffer).
enum PageRows<'a> {
    Ellpack(&'a EllpackMatrix<&'a [u64]>, &'a DeviceBuffer<u64>),
    Packed(&'a DeviceBins, usize),
}

/// The leaf of `trees`' one tree that each row of `page` reaches, to `out`.
fn walk_page(
    gpu: &Gpu,
    page: PageRows,
    (cut_ptrs, bin_values): (&DeviceBuffer<u32>, &DeviceBuffer<f32>),
    trees: &DeviceTrees,
    out: Walk,
) -> Result<()> {
    let rows = match page {
        PageRows::Ellpack(page, _) => page.rows,
        PageRows::Packed(_, rows) => rows,
    };
    let leaves = match out {
        Walk::Leaves(_) => gpu.alloc_zeroed::<u32>(rows)?,
        Walk::Margins(..) => gpu.alloc_zeroed::<u32>(0)?,
    };
    let (margins, outputs) = match out {
        Walk::Leaves(_) => (std::ptr::null_mut(), 1),
        Walk::Margins(margins, outputs) => (super::ptr_mut(margins), outputs as u64),
    };
    let leaves_ptr = if leaves.is_empty() { std::ptr::null_mut() } else { leaves.as_mut_ptr() };
    let (nodes, categories) = (trees.nodes.as_ptr(), trees.categories.as_ptr());
    let features = (cut_ptrs.len() - 1) as u64;
    let args = match page {
        PageRows::Ellpack(page, words) => entry::boost_predict_ellpack::args(
            words.as_ptr(),
            rows as u64,
            page.row_stride as u64,
            page.symbol_bits as u64,
            u64::from(page.is_dense),
            cut_ptrs.as_ptr(),
            features,
            bin_values.as_ptr(),
            trees.trees.as_ptr(),
            1,
            nodes,
            categories,
            leaves_ptr,
            margins,
            outputs,
        ),
        PageRows::Packed(bins, _) => entry::boost_predict_packed::args(
            bins.words.as_ptr(),
            rows as u64,
            bins.layout.features as u64,
            u64::from(bins.layout.bits),
            bins.layout.row_words as u64,
            cut_ptrs.as_ptr(),
            bin_values.as_ptr(),
            trees.trees.as_ptr(),
            1,
            nodes,
            categories,
            leaves_ptr,
            margins,
            outputs,
        ),
    };
    // SAFETY: the page's words and rows as packed (or `rows` rows of the cuts' layout), the cuts'
    // offsets and a value a bin of the matrix the page belongs to, one tree checked at its upload
    // (its output below `outputs`), a leaf a row or the page's rows' margins.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(rows)?, args)? };
    if let Walk::Leaves(out) = out {
        leaves.copy_range_to_host(gpu, 0..rows, out)?;
    }
    Ok(())
}

/// The bins of the `sampled` rows (increasing; on the host and the device) of every page of
/// `matrix` into `bins`, gathered on the device: from a page kept there, from a page's mapped copy
/// in the builder's layout in place ([`gather_packed`]), or from the words of one without either,
/// copied ([`boost_kernels::ellpack::gather_kernel`]).
fn gather(
    pages: &DevicePages,
    cut_ptrs: &DeviceBuffer<u32>,
    (sampled, device_rows): (&[u32], &DeviceBuffer<u32>),
    bins: DeviceBins,
) -> Result<DeviceBins> {
    let (gpu, mut done) = (pages.gpu, 0);
    for DevicePage { first, page, kept, bins: copy } in pages.views()? {
        let end = sampled.partition_point(|&r| (r as usize) < first + page.rows);
        let span = std::mem::replace(&mut done, end)..end;
        match (kept, copy) {
            _ if span.is_empty() || bins.layout.row_words == 0 => {}
            (Some(words), _) => gather_page(gpu, (&page, words), first, cut_ptrs, (device_rows, span), &bins)?,
            (None, Some(copy)) => gather_packed(gpu, (copy, first), (device_rows, span), &bins)?,
            (None, None) => {
                let words = gpu.upload(page.words())?;
                gather_page(gpu, (&page, &words), first, cut_ptrs, (device_rows, span), &bins)?;
            }
        }
    }
    Ok(bins)
}

/// Rows `rows.0[span]` of `page` (whose first row is `first`) into the same rows of `bins`.
pub(super) fn gather_page(
    gpu: &Gpu,
    (page, words): (&EllpackMatrix<&[u64]>, &DeviceBuffer<u64>),
    first: usize,
    cut_ptrs: &DeviceBuffer<u32>,
    (rows, span): (&DeviceBuffer<u32>, std::ops::Range<usize>),
    bins: &DeviceBins,
) -> Result<()> {
    let layout = &bins.layout;
    let args = entry::boost_bins_ellpack::args(
        words.as_ptr(),
        page.rows as u64,
        page.row_stride as u64,
        page.symbol_bits as u64,
        u64::from(page.is_dense),
        cut_ptrs.as_ptr(),
        first as u64,
        rows.as_ptr().wrapping_add(span.start),
        span.len() as u64,
        layout.features as u64,
        layout.bits as u64,
        layout.row_words as u64,
        bins.words.as_mut_ptr().wrapping_add(span.start * layout.row_words),
    );
    // SAFETY: the page's words and rows as packed, the cuts' offsets of its matrix, `span` rows of
    // the page (plus `first`) and as many rows of `bins`, whose layout is the cuts'.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(span.len())?, args)? };
    Ok(())
}

/// The sampled rows (`runs` concatenated) into `rows` and their gradients in fixed point into
/// `fixed`, a run a task; their sum, the root's (integers: in any order the same).
fn stage_sampled(
    runs: &[Vec<u32>],
    gradients: &[GradientPair<f32>],
    quantiser: &GradientQuantiser,
    mut rows: &mut [u32],
    mut fixed: &mut [Fixed],
) -> Fixed {
    let mut outs = Vec::with_capacity(runs.len());
    for run in runs {
        let (run_rows, rest_rows) = std::mem::take(&mut rows).split_at_mut(run.len());
        let (run_fixed, rest_fixed) = std::mem::take(&mut fixed).split_at_mut(run.len());
        outs.push((run, run_rows, run_fixed));
        (rows, fixed) = (rest_rows, rest_fixed);
    }
    outs.into_par_iter()
        .map(|(run, rows, fixed)| {
            rows.copy_from_slice(run);
            let mut sum = Fixed::zero();
            for (f, &r) in fixed.iter_mut().zip(run.iter()) {
                *f = quantiser.to_fixed(gradients[r as usize]);
                sum = sum.plus(*f);
            }
            sum
        })
        .reduce(Fixed::zero, BlockSum::plus)
}

/// A value for each global bin of `cuts` that lies on the same side of every split condition as
/// all of the bin's values: its lowest (the bin below's cut; minus infinity for a feature's first
/// bin), or a category's code. The device walks pages with it.
fn bin_values(cuts: &QuantileCuts) -> Vec<f32> {
    let mut values = Vec::with_capacity(cuts.cut_values.len());
    for f in 0..cuts.features() {
        let (lo, hi) = (cuts.cut_ptrs[f], cuts.cut_ptrs[f + 1]);
        values.extend((lo..hi).map(|bin| match bin {
            _ if cuts.is_categorical(f) => (bin - lo) as f32,
            _ if bin == lo => f32::NEG_INFINITY,
            _ => cuts.cut_values[bin as usize - 1],
        }));
    }
    values
}
