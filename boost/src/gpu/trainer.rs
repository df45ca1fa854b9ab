//! A training run on one GPU ([`GpuTrainer`], XGBoost's `updater_gpu_hist.cu`): the cuts, bins and
//! row buffers made once; each tree grown by a [`GpuBackend`]; for the objectives the device
//! computes, the labels, margins, gradients and row-wise metrics kept there too.

use std::time::Instant;

use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, Gpu};

use boost_kernels::entry;
use boost_kernels::evaluate::SplitContext;
use boost_kernels::metric::Transform;
use boost_kernels::metric::LossSum;
use boost_kernels::objective::{ElementwiseObjective, LeafRange};
use boost_kernels::reduce::{self, BlockSum};
use boost_kernels::residual::{self, ScaledResidual};
use boost_kernels::mvs::GradientSampler;
use boost_kernels::sampling::RowSampler;

use super::grow::GpuBackend;
use super::metrics::MetricRows;
use super::partition::RowBuffers;
use super::quantiser::QuantiseScratch;
use super::rank::RankGradients;
use super::timers::DeviceTimers;
use super::{bins, csr, ptr, sample};
use super::{element_config, local_bins, warp_per_block_config, DeviceBins, DeviceCsr, DeviceCuts, Fixed, InitialMargins};
use crate::data::{FeatureMatrix, MetaInfo};
use crate::ellpack::EllpackMatrix;
use crate::fixed_point::GradientQuantiser;
use crate::metric::DeviceMetric;
use crate::objective::DeviceObjective;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::sample::{gradient_sampler, TreeSampler};
use crate::tree::grow::{self, RowOrder};
use crate::tree::Tree;
use crate::{Error, Result};

/// What the GPU backend keeps on the device for a whole training run: the cuts, every row's bins
/// ([`local_bins`]) and the row-order buffers, made once; each tree then uploads only its gradients.
pub struct GpuTrainer<'g> {
    pub(super) gpu: &'g Gpu,
    pub(super) cuts: DeviceCuts,
    pub(super) first_bins: Vec<u32>,
    pub(super) rows: usize,
    pub(super) bins: DeviceBins,
    pub(super) buffers: RowBuffers,
    /// Labels, weights and margins when the device computes the gradients.
    pub(super) device_rows: Option<DeviceRows>,
    pub(super) quantise_scratch: QuantiseScratch,
    /// The steps of every tree built so far, with their device time when `timers` records it
    /// ([`GpuTrainer::time_device`]).
    pub(super) phases: PhaseTimes,
    pub(super) timers: DeviceTimers,
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
    /// missing), quantised there with `cuts` (the cuts of these rows, as [`super::device_cuts`] makes
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
    /// these rows, as [`super::device_cuts_csr`] makes them).
    pub fn from_device_csr(gpu: &'g Gpu, csr: &DeviceCsr, cuts: &QuantileCuts) -> Result<Self> {
        csr.check_on(gpu)?;
        let rows = csr.rows();
        let device_cuts = DeviceCuts::upload(gpu, cuts)?;
        let bins = bins::device_csr_bins(gpu, csr, cuts, &device_cuts)?;
        Self::with_bins(gpu, device_cuts, cuts, rows, bins)
    }

    /// Bytes of the quantised matrix on the device (packed rows, [`super::BinLayout`]).
    pub fn bins_bytes(&self) -> usize {
        self.bins.bytes()
    }

    pub(super) fn with_bins(
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
            timers: DeviceTimers::default(),
        })
    }

    /// Replaces the rows with the `rows` rows of the bins `bins` makes (the sampled rows of
    /// external-memory pages, another set every tree, from the cuts); the old ones are freed first.
    pub(super) fn replace_rows(
        &mut self,
        rows: usize,
        bins: impl FnOnce(&DeviceCuts) -> Result<DeviceBins>,
    ) -> Result<()> {
        self.bins.words = self.gpu.alloc_zeroed(0)?;
        self.buffers = RowBuffers::new(self.gpu, 0)?;
        self.bins = bins(&self.cuts)?;
        self.buffers = RowBuffers::new(self.gpu, rows)?;
        self.rows = rows;
        Ok(())
    }

    /// Records the device time of each step from now on (CUDA events around its work, a few
    /// microseconds of host time a step: lossguide's step a node feels them), beside the host's:
    /// [`PhaseTimes::device`].
    pub fn time_device(&mut self, on: bool) {
        self.timers = DeviceTimers::new(on);
    }

    /// Wall time of the tree-building steps so far, and their device time if recorded (read
    /// now: this waits for the device to finish the last step).
    pub fn phases(&mut self) -> Result<PhaseTimes> {
        self.timers.read(&mut self.phases)?;
        Ok(self.phases.clone())
    }

    /// The device this trainer runs on.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
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
        let start = self.timers.start(self.gpu)?;
        let (quantiser, fixed, root) = self.quantise(gradients)?;
        self.timers.stop(self.gpu, &mut self.phases, "tree: quantise", start)?;
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
    pub(super) fn grow(
        &mut self,
        params: &TreeParams,
        quantiser: GradientQuantiser,
        fixed: &DeviceBuffer<Fixed>,
        root: Fixed,
        features: &[u32],
        read_rows: bool,
        rng: &mut impl rand::Rng,
    ) -> Result<(Tree, RowOrder)> {
        let context = SplitContext { params: params.split(), quantiser, categorical: params.categorical() };
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
        // The trainer's timers (with its events of this round so far), lent for the tree.
        backend.timers = std::mem::take(&mut self.timers);
        let tree = grow::grow(&mut backend, params, &quantiser, features, fixed.len(), rng)?;
        let start = backend.timers.start(self.gpu)?;
        backend.finish(read_rows)?;
        backend.timers.stop(self.gpu, &mut backend.phases, "tree: row check and order read back", start)?;
        // The device has passed every event so far: reading them waits for nothing.
        backend.timers.read(&mut backend.phases)?;
        self.timers = std::mem::take(&mut backend.timers);
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
        self.device_rows = Some(DeviceRows::new(self.gpu, self.rows, objective, info, margins)?);
        Ok(())
    }

    pub(super) fn device_rows(&self) -> Result<&DeviceRows> {
        self.device_rows.as_ref().ok_or_else(no_device_rows)
    }

    /// The gradients of round `iteration` of every output, from the margins at the round's start,
    /// for the softmax and ranking objectives; an element-wise objective's come with its tree
    /// ([`GpuTrainer::boost_tree`]), sampled as they are computed.
    pub fn compute_gradients(&mut self, iteration: usize) -> Result<()> {
        let start = self.timers.start(self.gpu)?;
        let rows = self.device_rows.as_mut().ok_or_else(no_device_rows)?;
        if let RowGradients::PerRound { all, source: PerRoundSource::Rank(rank), .. } = &mut rows.gradients {
            rank.compute(self.gpu, &rows.set.margins, &rows.set.labels, &self.buffers.identity, iteration, all)?;
        }
        rows.round_gradients(self.gpu, self.rows)?;
        self.timers.stop(self.gpu, &mut self.phases, "tree: gradients and quantise", start)
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
        sampler: TreeSampler,
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<Tree> {
        let start = self.timers.start(self.gpu)?;
        let gradients = self.tree_gradients(output, sampler)?;
        // SAFETY: `gradients` is `rows` pairs of the device rows' buffers, kept for the training run.
        let (quantiser, fixed, root) = unsafe { self.quantise_on_device(gradients, self.rows)? };
        self.timers.stop(self.gpu, &mut self.phases, "tree: gradients and quantise", start)?;
        let (tree, order) = self.grow(params, quantiser, &fixed, root, features, false, rng)?;
        self.quantise_scratch.fixed = Some(fixed);
        self.add_tree_leaves(&tree, &order, output)?;
        Ok(tree)
    }

    /// Output `output`'s gradients of the tree about to be grown (sampled by `sampler`; row `i`
    /// of this trainer is the sampler's row `i`): see [`DeviceRows::tree_gradients`].
    pub(super) fn tree_gradients(&mut self, output: usize, sampler: TreeSampler) -> Result<u64> {
        self.device_rows()?.tree_gradients(self.gpu, self.rows, output, sampler)
    }

    /// See [`DeviceRows::gradient_sampled`].
    pub(super) fn gradient_sampled(&mut self, gradients: u64, sampler: &GradientSampler) -> Result<u64> {
        self.device_rows()?.gradient_sampled(self.gpu, self.rows, gradients, sampler)
    }

    /// See [`DeviceRows::uniform_gradients`].
    pub(super) fn uniform_gradients(&mut self, output: usize, sampler: RowSampler) -> Result<u64> {
        self.device_rows()?.uniform_gradients(self.gpu, self.rows, output, sampler)
    }

    /// Adds each row's leaf value of `tree` (grown over this trainer's rows, `order` their leaves'
    /// ranges) to its margin of output `output`.
    pub(super) fn add_tree_leaves(&mut self, tree: &Tree, order: &RowOrder, output: usize) -> Result<()> {
        let n = self.rows;
        let leaves: Vec<LeafRange> = leaf_ranges(tree, order).into_iter().map(|(_, leaf)| leaf).collect();
        let start = self.timers.start(self.gpu)?;
        let rows = self.device_rows()?;
        let outputs = rows.gradients.outputs();
        add_leaf_values(self.gpu, (&self.buffers.rows, n), &leaves, (&rows.set.margins, outputs, output))?;
        self.timers.stop(self.gpu, &mut self.phases, "tree: margins", start)
    }

    /// `metric` of the training rows' predictions; see `MetricRows::evaluate`.
    pub fn evaluate(&mut self, metric: DeviceMetric, transform: Transform) -> Result<f64> {
        let gpu = self.gpu;
        let rows = self.device_rows.as_mut().ok_or_else(no_device_rows)?;
        rows.set.evaluate(gpu, metric, transform)
    }

    /// A row-wise `metric`'s block sums over the training rows (see `MetricRows::loss_block_sums`).
    pub(super) fn loss_block_sums(
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

/// `tree`'s leaves (their ids) with their ranges of the row order `order` and their values, by
/// `begin`.
pub(super) fn leaf_ranges(tree: &Tree, order: &RowOrder) -> Vec<(usize, LeafRange)> {
    let mut leaves: Vec<(usize, LeafRange)> = (0..tree.len().min(order.nodes()))
        .filter(|&id| tree.is_leaf(id))
        .map(|id| {
            let (begin, end) = order.range(id);
            (id, LeafRange { begin: begin as u32, end: end as u32, value: tree.split_conditions[id], padding: 0 })
        })
        .collect();
    leaves.sort_unstable_by_key(|(_, leaf)| leaf.begin);
    leaves
}

/// Adds each of the `n` rows of `order` (the row order of a builder's rows, the leaves' ranges in
/// it) its leaf's value to its margin of output `output` (of `outputs` a row).
pub(super) fn add_leaf_values(
    gpu: &Gpu,
    (order, n): (&DeviceBuffer<u32>, usize),
    leaves: &[LeafRange],
    (margins, outputs, output): (&DeviceBuffer<f32>, usize, usize),
) -> Result<()> {
    // Leaves without rows here (a device's shard may have none in a leaf) would tie with their
    // neighbour's `begin` in the kernel's search: they add nothing, so they are left out.
    let leaves: Vec<LeafRange> = leaves.iter().copied().filter(|leaf| leaf.begin < leaf.end).collect();
    let leaves_buffer = gpu.upload(&leaves)?;
    let args = entry::boost_objective_add_leaves::args(
        order.as_ptr(),
        n as u64,
        leaves_buffer.as_ptr(),
        leaves.len() as u64,
        margins.as_mut_ptr(),
        outputs as u64,
        output as u64,
    );
    // SAFETY: the row order holds `n` distinct rows; the leaves' ranges, sorted, partition `0..n`;
    // `outputs` margins per row.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
    Ok(())
}

/// The training rows as [`GpuTrainer::keep_rows_on_device`] keeps them on the device.
pub(super) struct DeviceRows {
    /// Labels, weights and margins, with the metrics' scratch.
    pub(super) set: MetricRows,
    /// One tree's gradients (sampled).
    pub(super) tree_gradients: DeviceBuffer<GradientPair<f32>>,
    pub(super) gradients: RowGradients,
}

impl DeviceRows {
    /// The buffer holding the `n` pairs at `address` (one [`DeviceRows::tree_gradients`] gave)
    /// and the element they start at.
    pub(super) fn gradients_at(&self, address: u64, n: usize) -> Result<(&DeviceBuffer<GradientPair<f32>>, usize)> {
        let pair = std::mem::size_of::<GradientPair<f32>>() as u64;
        let round = match &self.gradients {
            RowGradients::PerRound { all, .. } => Some(all),
            RowGradients::Elementwise(_) => None,
        };
        let holds = |buffer: &DeviceBuffer<GradientPair<f32>>| {
            let offset = address.checked_sub(buffer.device_ptr())?;
            let at = (offset / pair) as usize;
            (offset % pair == 0 && at + n <= buffer.len()).then_some(at)
        };
        std::iter::once(&self.tree_gradients)
            .chain(round)
            .find_map(|buffer| Some((buffer, holds(buffer)?)))
            .ok_or_else(|| Error::InvalidData("the tree's gradients are not in the device rows' buffers".into()))
    }

    /// The `n` training rows' labels, weights and `margins` (one per output) for `objective`'s
    /// gradients on the device.
    pub(super) fn new(
        gpu: &Gpu,
        n: usize,
        objective: DeviceObjective,
        info: &MetaInfo,
        margins: InitialMargins<'_>,
    ) -> Result<Self> {
        if info.labels.len() != n {
            return Err(Error::InvalidData(format!("{} labels for {n} rows", info.labels.len())));
        }
        let set = MetricRows::new(gpu, objective, info, margins)?;
        let per_round = |outputs: usize, source| -> Result<RowGradients> {
            Ok(RowGradients::PerRound { outputs, all: gpu.alloc_zeroed(n * outputs)?, source })
        };
        let gradients = match objective {
            DeviceObjective::Elementwise(objective) => RowGradients::Elementwise(gpu.upload(&[objective])?),
            DeviceObjective::Softmax { classes } => per_round(classes, PerRoundSource::Softmax)?,
            DeviceObjective::ScaledResidual(objective) => {
                let scaled = ScaledGradients { objective: gpu.upload(&[objective])?, scales: gpu.alloc_zeroed(objective.outputs as usize)? };
                per_round(objective.outputs as usize, PerRoundSource::Scaled(Box::new(scaled)))?
            }
            DeviceObjective::LambdaRank(params) => {
                per_round(1, PerRoundSource::Rank(Box::new(RankGradients::new(gpu, params, info)?)))?
            }
            DeviceObjective::Expectile(expectiles) => {
                per_round(expectiles.outputs as usize, PerRoundSource::Expectile(gpu.upload(&[expectiles])?))?
            }
            DeviceObjective::Aft(loss) => {
                let bounds = AftGradients {
                    loss: gpu.upload(&[loss])?,
                    lower: gpu.upload(&info.label_lower_bound)?,
                    upper: gpu.upload(&info.label_upper_bound)?,
                };
                if bounds.lower.len() != n || bounds.upper.len() != n {
                    return Err(Error::InvalidData(format!("label bounds for {n} rows: {}", bounds.lower.len())));
                }
                per_round(1, PerRoundSource::Aft(Box::new(bounds)))?
            }
        };
        let tree_gradients = gpu.alloc_zeroed(n)?;
        Ok(DeviceRows { set, tree_gradients, gradients })
    }

    /// Every output's gradients from the margins at the round's start, for the softmax and the
    /// scaled residuals (the ranking kernels need the trainer's row order: `compute_gradients`);
    /// nothing for the element-wise objectives, whose come with each tree.
    pub(super) fn round_gradients(&mut self, gpu: &Gpu, n: usize) -> Result<()> {
        let scales = match &self.gradients {
            RowGradients::PerRound { outputs, source: PerRoundSource::Scaled(_), .. } => (0..*outputs)
                .map(|j| Ok(residual::scale(self.root_residual_sums(gpu, n, j)?.into_iter().fold(LossSum::zero(), BlockSum::plus))))
                .collect::<Result<Vec<f32>>>()?,
            _ => Vec::new(),
        };
        let RowGradients::PerRound { outputs, all, source } = &mut self.gradients else { return Ok(()) };
        let (margins, labels, weights) = (self.set.margins.as_ptr(), self.set.labels.as_ptr(), self.set.weights_ptr());
        let args = match source {
            PerRoundSource::Rank(_) => return Ok(()),
            PerRoundSource::Softmax => entry::boost_objective_softmax_gradients::args(
                margins,
                labels,
                weights,
                n as u64,
                *outputs as u64,
                all.as_mut_ptr(),
            ),
            PerRoundSource::Expectile(expectiles) => entry::boost_objective_expectile_gradients::args(
                margins,
                labels,
                weights,
                n as u64,
                expectiles.as_ptr(),
                all.as_mut_ptr(),
            ),
            PerRoundSource::Aft(aft) => entry::boost_objective_aft_gradients::args(
                margins,
                aft.lower.as_ptr(),
                aft.upper.as_ptr(),
                weights,
                n as u64,
                aft.loss.as_ptr(),
                all.as_mut_ptr(),
            ),
            PerRoundSource::Scaled(scaled) => {
                scaled.scales.copy_from_host(gpu, &scales)?;
                entry::boost_objective_scaled_residual_gradients::args(
                    margins,
                    labels,
                    weights,
                    n as u64,
                    scaled.objective.as_ptr(),
                    scaled.scales.as_ptr(),
                    all.as_mut_ptr(),
                )
            }
        };
        // SAFETY: margins and the gradients hold `n * outputs` values, labels (and the weights when
        // given) `n`, the scales one an output.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
        Ok(())
    }

    /// Output `output`'s block sums of its scale terms (`boost_kernels::residual`), in block order:
    /// the host adds them in order, as the CPU does (and a run over several devices would, device
    /// after device).
    pub(super) fn root_residual_sums(&self, gpu: &Gpu, n: usize, output: usize) -> Result<Vec<LossSum>> {
        let blocks = reduce::blocks(n);
        let block_sums = gpu.alloc_zeroed::<LossSum>(blocks.max(1))?;
        let args = entry::boost_objective_root_residual_sums::args(
            self.set.margins.as_ptr(),
            self.set.labels.as_ptr(),
            self.set.weights_ptr(),
            n as u64,
            self.gradients.outputs() as u64,
            output as u64,
            block_sums.as_mut_ptr(),
        );
        // SAFETY: the margins hold `n * outputs` values, labels (and weights) `n`, a sum per block;
        // the grid is whole warps, one per block.
        unsafe { gpu.launch_kernel(crate::KERNELS, warp_per_block_config(blocks)?, args)? };
        Ok(block_sums.to_vec(gpu)?.into_iter().take(blocks).collect())
    }

    /// Output `output`'s gradients of the tree about to be grown (sampled by `sampler`; row `i`
    /// of the `n` rows is the sampler's row `i`): the device address of `n` pairs in these buffers.
    pub(super) fn tree_gradients(&self, gpu: &Gpu, n: usize, output: usize, sampler: TreeSampler) -> Result<u64> {
        match sampler {
            TreeSampler::Uniform(sampler) => self.uniform_gradients(gpu, n, output, sampler),
            TreeSampler::GradientBased { key, subsample } => {
                let gradients = self.uniform_gradients(gpu, n, output, RowSampler::ALL)?;
                let max = sample::magnitude_max(gpu, gradients, n)?;
                let histogram = |pass: &_| sample::magnitude_histogram(gpu, gradients, n, pass);
                match gradient_sampler(key, subsample, n as u64, max, histogram)? {
                    Some(sampler) => self.gradient_sampled(gpu, n, gradients, &sampler),
                    None => Ok(gradients),
                }
            }
        }
    }

    /// `gradients` (the `n` rows' pairs, at a device address) sampled by `sampler` into the tree's
    /// gradients: their device address.
    pub(super) fn gradient_sampled(
        &self,
        gpu: &Gpu,
        n: usize,
        gradients: u64,
        sampler: &GradientSampler,
    ) -> Result<u64> {
        sample::apply(gpu, gradients, n, sampler, self.tree_gradients.as_mut_ptr())?;
        Ok(self.tree_gradients.device_ptr())
    }

    /// Output `output`'s gradients, zero for the rows `sampler` leaves out: the device address of
    /// the `n` rows' pairs in these buffers.
    pub(super) fn uniform_gradients(&self, gpu: &Gpu, n: usize, output: usize, sampler: RowSampler) -> Result<u64> {
        let outputs = self.gradients.outputs();
        if output >= outputs {
            return Err(Error::InvalidData(format!("output {output} of an objective with {outputs}")));
        }
        let weights = self.set.weights_ptr();
        Ok(match &self.gradients {
            RowGradients::Elementwise(objective) => {
                let args = entry::boost_objective_gradients::args(
                    self.set.margins.as_ptr(),
                    self.set.labels.as_ptr(),
                    weights,
                    sampler.key,
                    sampler.threshold,
                    n as u64,
                    objective.as_ptr(),
                    self.tree_gradients.as_mut_ptr(),
                );
                // SAFETY: margins, labels, gradients (and the weights when given) hold `n` values.
                unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
                self.tree_gradients.device_ptr()
            }
            // Output `output`'s gradients are the `n` pairs from `output * n` of the round's.
            RowGradients::PerRound { all: round, .. } => {
                let column = round.device_ptr() + (output * n * std::mem::size_of::<GradientPair<f32>>()) as u64;
                if sampler == RowSampler::ALL {
                    column
                } else {
                    let out = self.tree_gradients.as_mut_ptr();
                    let args =
                        entry::boost_objective_sample::args(ptr(column), sampler.key, sampler.threshold, n as u64, out);
                    // SAFETY: the column and the tree's gradients hold `n` pairs.
                    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
                    self.tree_gradients.device_ptr()
                }
            }
        })
    }
}

pub(super) fn no_device_rows() -> Error {
    Error::InvalidData("no training rows on the device".into())
}

/// How the device computes the gradients.
pub(super) enum RowGradients {
    /// An element-wise objective's kernel, for each tree.
    Elementwise(DeviceBuffer<ElementwiseObjective>),
    /// Every output's gradients once a round (`all`, class-major), from `source`.
    PerRound { outputs: usize, all: DeviceBuffer<GradientPair<f32>>, source: PerRoundSource },
}

/// What computes a round's gradients of every output.
pub(super) enum PerRoundSource {
    /// The softmax's kernel.
    Softmax,
    /// The scaled residuals' kernels (each output's scale first).
    Scaled(Box<ScaledGradients>),
    /// The ranking kernels.
    Rank(Box<RankGradients>),
    /// The AFT kernel, with the rows' label bounds.
    Aft(Box<AftGradients>),
    /// The expectiles' kernel.
    Expectile(DeviceBuffer<boost_kernels::expectile::Expectiles>),
}

/// `survival:aft`'s loss and the rows' label bounds on the device.
pub(super) struct AftGradients {
    loss: DeviceBuffer<boost_kernels::survival::Aft>,
    lower: DeviceBuffer<f32>,
    upper: DeviceBuffer<f32>,
}

/// A scaled-residual objective on the device, and the round's scales (one an output).
pub(super) struct ScaledGradients {
    objective: DeviceBuffer<ScaledResidual>,
    scales: DeviceBuffer<f32>,
}

impl RowGradients {
    pub(super) fn outputs(&self) -> usize {
        match self {
            RowGradients::Elementwise(_) => 1,
            RowGradients::PerRound { outputs, .. } => *outputs,
        }
    }
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
