//! Trees grown over several devices of one process (Mitchell et al. 2018): the rows split into
//! contiguous shards, one a device, each device quantising, partitioning and building histograms
//! of its own rows, and the histograms summed over the devices through a [`Communicator`] before
//! a split is chosen. Gradient sums are fixed-point integers, so the sum over devices is the one
//! device's sum exactly, and the trees are the one-device (and the CPU) builder's, bit for bit.
//!
//! What keeps them identical: shards start at multiples of [`SUM_BLOCK`] rows, so each device's
//! quantiser block sums are blocks of the whole run's, added on the host in the same order (the
//! quantiser, the one thing made of floating-point sums, is the same); each device keeps its own
//! rows' histograms for the subtraction trick (the smaller child a device builds is its own
//! choice), and the first device also keeps the nodes' histograms summed over the devices, which
//! split evaluation reads.
//!
//! [`MultiGpuTrainer`] grows trees from the host's gradients ([`MultiGpuTrainer::build_tree`]) or
//! runs whole rounds on the devices ([`MultiGpuTrainer::boost_tree`]: each device's gradients and
//! margins of its rows); the learner drives it for `n_gpus > 1`. Each step runs on every device at
//! once, a thread a device ([`DeviceThreads`]): one device's launches and waits overlap the others'; the
//! sums over the devices are then issued from the caller's thread (NCCL's grouped calls).

use std::ops::Range;

use boost_kernels::reduce::{BlockSum, SUM_BLOCK};
use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, Gpu};

use super::device_threads::DeviceThreads;
use super::histogram::HistogramStore;
use super::metrics::finish_loss;
use super::{sample, Fixed, GpuBackend, GpuTrainer, InitialMargins, RowSampler, SplitContext};
use crate::data::{CsrMatrix, FeatureMatrix, MetaInfo};
use crate::fixed_point::GradientQuantiser;
use crate::metric::DeviceMetric;
use crate::objective::DeviceObjective;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::sample::{add_bins, gradient_sampler, TreeSampler};
use crate::tree::grow::{self, ChildHistograms, Expansion, GrowBackend, RowOrder, SplitRequest};
use crate::tree::hist::BuiltTree;
use crate::tree::Tree;
use crate::{Error, Result};
use boost_kernels::fixed_point::QuantiserSums;
use boost_kernels::mvs::MvsPass;
use boost_kernels::metric::{LossSum, Transform};
use boost_kernels::split::Split;

/// How the devices of a run exchange sums.
pub trait Communicator {
    /// The element-wise sum of `parts` (part `d` on `gpus[d]`, all of one length) into `sum`, a
    /// buffer of that length on `gpus[root]` (its contents overwritten). Fixed-point sums wrap as
    /// the devices' do, so any order gives the same result.
    fn reduce_sum(
        &self,
        gpus: &[&Gpu],
        parts: &[&DeviceBuffer<Fixed>],
        root: usize,
        sum: &mut DeviceBuffer<Fixed>,
    ) -> Result<()>;
}

/// A [`Communicator`] through host memory: each part read back, summed on the host, the sum
/// uploaded. Any devices, emulated ones included (what CI checks multi-device training with).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostStaged;

impl Communicator for HostStaged {
    fn reduce_sum(
        &self,
        gpus: &[&Gpu],
        parts: &[&DeviceBuffer<Fixed>],
        root: usize,
        sum: &mut DeviceBuffer<Fixed>,
    ) -> Result<()> {
        check_parts(gpus, parts, root, sum)?;
        let mut total = parts[0].to_vec(gpus[0])?;
        for (gpu, part) in gpus.iter().zip(parts).skip(1) {
            for (s, v) in total.iter_mut().zip(part.to_vec(gpu)?) {
                *s = s.plus(v);
            }
        }
        Ok(sum.copy_from_host(gpus[root], &total)?)
    }
}

/// Refuses parts that are not one a device, of one length, a root that is no device, or a sum
/// buffer not of that length on the root.
pub(super) fn check_parts(
    gpus: &[&Gpu],
    parts: &[&DeviceBuffer<Fixed>],
    root: usize,
    sum: &DeviceBuffer<Fixed>,
) -> Result<()> {
    let len = parts.first().map_or(0, |f| f.len());
    let same = parts.iter().all(|p| p.len() == len);
    if parts.len() != gpus.len() || root >= gpus.len() || !same || sum.len() != len || !sum.is_on(gpus[root]) {
        return Err(Error::InvalidData(format!(
            "a sum of {} parts over {} devices to device {root}, lengths {:?}, into {} sums",
            parts.len(),
            gpus.len(),
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            sum.len()
        )));
    }
    Ok(())
}

/// Contiguous shards of `rows` rows for up to `devices` devices: whole blocks of [`SUM_BLOCK`]
/// rows (the last shard takes the remainder), as even as the blocks allow, none empty (fewer
/// shards than devices when there are fewer blocks).
pub fn shards(rows: usize, devices: usize) -> Vec<Range<usize>> {
    let blocks = rows.div_ceil(SUM_BLOCK);
    let per_device = blocks.div_ceil(devices.max(1)).max(1);
    (0..blocks.div_ceil(per_device))
        .map(|d| d * per_device * SUM_BLOCK..((d + 1) * per_device * SUM_BLOCK).min(rows))
        .collect()
}

/// The threads of a run over `gpus`: a thread a device past the first, spinning between steps
/// on CUDA devices.
fn device_threads(gpus: &[&Gpu]) -> Result<DeviceThreads> {
    let cuda = gpus.iter().all(|gpu| gpu.ordinal().is_some());
    DeviceThreads::new(gpus.len(), cuda)
        .map_err(|e| Error::Communication(format!("starting a thread for each of {} devices: {e}", gpus.len())))
}

/// Rows `range` of CSR rows, as a matrix of their own.
fn csr_rows(m: &CsrMatrix, range: Range<usize>) -> FeatureMatrix {
    let entries = m.row_ptr[range.start]..m.row_ptr[range.end];
    FeatureMatrix::Sparse(CsrMatrix {
        rows: range.len(),
        cols: m.cols,
        row_ptr: m.row_ptr[range.start..=range.end].iter().map(|p| p - entries.start).collect(),
        col_indices: m.col_indices[entries.clone()].to_vec(),
        values: m.values[entries].to_vec(),
    })
}

/// A [`GpuTrainer`] a device, each over its shard of the rows, and the communicator between them.
pub struct MultiGpuTrainer<'g> {
    trainers: Vec<GpuTrainer<'g>>,
    shards: Vec<Range<usize>>,
    communicator: Box<dyn Communicator>,
    /// Each device's steps run on its own thread ([`DeviceThreads::on_each`]).
    threads: DeviceThreads,
    /// The buffers of the last tree's sums over the devices (on the first), for the next tree's.
    sum_spares: Vec<DeviceBuffer<Fixed>>,
    /// The tree-building steps of every device so far.
    phases: PhaseTimes,
}

impl<'g> MultiGpuTrainer<'g> {
    /// Splits `features` into [`shards`] over `gpus` and quantises each on its device with `cuts`
    /// (the cuts of all the rows, computed once). Dense rows are better given in the first
    /// device's memory ([`MultiGpuTrainer::from_device_rows`]): each shard then crosses between
    /// the devices instead of from the host.
    pub fn from_features(
        gpus: &[&'g Gpu],
        features: &FeatureMatrix,
        cuts: &QuantileCuts,
        communicator: Box<dyn Communicator>,
    ) -> Result<Self> {
        let shards = Self::shards_over(gpus, features.rows())?;
        Self::on_shards(gpus, shards, communicator, |shard, gpu| match features {
            FeatureMatrix::Dense(m) => {
                let values = gpu.upload(&m.values[shard.start * m.cols..shard.end * m.cols])?;
                GpuTrainer::from_device_rows(gpu, &values, (shard.len(), m.cols), cuts)
            }
            FeatureMatrix::Sparse(m) => GpuTrainer::from_features(gpu, &csr_rows(m, shard.clone()), cuts),
        })
    }

    /// [`MultiGpuTrainer::from_features`] of `rows x cols` dense row-major values in the memory of
    /// `gpus[0]` (NaN: missing): each shard copied to its device (a peer copy) and quantised there.
    pub fn from_device_rows(
        gpus: &[&'g Gpu],
        values: &DeviceBuffer<f32>,
        (rows, cols): (usize, usize),
        cuts: &QuantileCuts,
        communicator: Box<dyn Communicator>,
    ) -> Result<Self> {
        let shards = Self::shards_over(gpus, rows)?;
        if rows.checked_mul(cols) != Some(values.len()) || !values.is_on(gpus[0]) {
            return Err(Error::InvalidData(format!(
                "{} values for {rows} rows of {cols} features, or not on the first device",
                values.len()
            )));
        }
        let first = gpus[0];
        Self::on_shards(gpus, shards, communicator, |shard, gpu| {
            let part = values.copy_range_to(first, shard.start * cols..shard.end * cols, gpu)?;
            GpuTrainer::from_device_rows(gpu, &part, (shard.len(), cols), cuts)
        })
    }

    /// The trainer whose device `d` has the trainer `make(shards[d], gpus[d])`, each made on its
    /// device's thread.
    fn on_shards(
        gpus: &[&'g Gpu],
        shards: Vec<Range<usize>>,
        communicator: Box<dyn Communicator>,
        make: impl Fn(&Range<usize>, &'g Gpu) -> Result<GpuTrainer<'g>> + Sync,
    ) -> Result<Self> {
        let mut parts: Vec<(Range<usize>, &'g Gpu)> = shards.iter().cloned().zip(gpus.iter().copied()).collect();
        let threads = device_threads(gpus)?;
        let trainers = threads.on_each(&mut parts, |(shard, gpu)| make(shard, gpu))?;
        Ok(MultiGpuTrainer {
            trainers,
            shards,
            communicator,
            threads,
            sum_spares: Vec::new(),
            phases: PhaseTimes::default(),
        })
    }

    /// The [`shards`] of `rows` rows over `gpus`; an error for no devices or no rows.
    fn shards_over(gpus: &[&Gpu], rows: usize) -> Result<Vec<Range<usize>>> {
        if gpus.is_empty() {
            return Err(Error::param("device", "a multi-device run needs at least one device"));
        }
        let shards = shards(rows, gpus.len());
        if shards.is_empty() {
            return Err(Error::InvalidData("no rows to train on".into()));
        }
        Ok(shards)
    }

    /// The first device (where splits are evaluated).
    pub fn gpu(&self) -> &'g Gpu {
        self.trainers[0].gpu
    }

    /// The devices, in shard order.
    pub fn gpus(&self) -> Vec<&'g Gpu> {
        self.trainers.iter().map(|t| t.gpu).collect()
    }

    /// Bytes of the quantised matrices on all the devices.
    pub fn bins_bytes(&self) -> usize {
        self.trainers.iter().map(GpuTrainer::bins_bytes).sum()
    }

    /// Wall time of the tree-building steps so far, on every device (and of the gradients and
    /// margins of device rounds).
    pub fn phases(&mut self) -> Result<PhaseTimes> {
        let mut phases = self.phases.clone();
        for trainer in &mut self.trainers {
            phases.merge(&trainer.phases()?);
        }
        Ok(phases)
    }

    /// The rows of each device, in device order.
    pub fn shards(&self) -> &[Range<usize>] {
        &self.shards
    }

    /// [`GpuTrainer::build_tree`] over the devices: `gradients`, one per row of all the shards, each
    /// device's quantised on it with the quantiser of all of them; the tree and each row's leaf.
    pub fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<BuiltTree> {
        let rows = self.rows();
        if gradients.len() != rows {
            return Err(Error::InvalidData(format!("{} gradients for {rows} rows", gradients.len())));
        }
        let uploaded: Vec<DeviceBuffer<GradientPair<f32>>> = self
            .trainers
            .iter()
            .zip(&self.shards)
            .map(|(t, shard)| Ok(t.gpu.upload(&gradients[shard.clone()])?))
            .collect::<Result<_>>()?;
        let parts: Vec<u64> = uploaded.iter().map(DeviceBuffer::device_ptr).collect();
        // SAFETY: each part holds its shard's pairs and outlives the call.
        let (tree, orders) = unsafe { self.grow(params, &parts, None, features, true, rng)? };
        let positions = orders.iter().flat_map(|order| order.positions(&tree)).collect();
        Ok(BuiltTree { tree, positions, phases: Default::default() })
    }

    /// Each device's trainer with its part of `gradients` (a device address) and its rows.
    fn devices<'s>(
        trainers: &'s mut [GpuTrainer<'g>],
        shards: &[Range<usize>],
        gradients: &[u64],
    ) -> Vec<(&'s mut GpuTrainer<'g>, u64, usize)> {
        trainers.iter_mut().zip(gradients).zip(shards).map(|((t, &part), shard)| (t, part, shard.len())).collect()
    }

    /// The rows of all the shards.
    fn rows(&self) -> usize {
        self.shards.last().map_or(0, |s| s.end)
    }

    /// Grows one tree from each device's gradients (the device address of its shard's pairs):
    /// the quantiser from every block's sums in row order (`blocks`: each device's, when the
    /// caller has them), each device's gradients in fixed point on it, then the expansion driver
    /// over the devices. Returns the tree and each device's row order (its rows read back when
    /// `read_rows`).
    ///
    /// # Safety
    /// `gradients[d]` is the address of device `d`'s shard of pairs, alive for the call.
    unsafe fn grow(
        &mut self,
        params: &TreeParams,
        gradients: &[u64],
        blocks: Option<Vec<Vec<QuantiserSums>>>,
        features: &[u32],
        read_rows: bool,
        rng: &mut impl rand::Rng,
    ) -> Result<(Tree, Vec<RowOrder>)> {
        let rows = self.rows();
        let threads = &self.threads;
        let mut devices = Self::devices(&mut self.trainers, &self.shards, gradients);
        let blocks = match blocks {
            Some(blocks) => blocks,
            None => threads.on_each(&mut devices, |(t, part, n)| {
                // SAFETY: each part is its device's shard of pairs, as the caller promises.
                unsafe { t.quantiser_block_sums(*part, *n) }
            })?,
        };
        // Every block's sums in row order: the one device's quantiser.
        let sums = blocks.into_iter().flatten().fold(QuantiserSums::zero(), BlockSum::plus);
        let quantiser = GradientQuantiser::from_sums(sums.positive, sums.negative, rows);
        let start = std::time::Instant::now();
        let fixed = threads.on_each(&mut devices, |(t, part, n)| {
            // SAFETY: as above.
            unsafe { t.quantise_fixed(*part, *n, &quantiser) }
        })?;
        drop(devices);
        self.phases.add("tree: quantise (wall)", start.elapsed());
        let context = SplitContext { params: params.split(), quantiser, categorical: params.categorical() };
        let mut backends = Vec::with_capacity(self.trainers.len());
        for (t, (fixed, root)) in self.trainers.iter_mut().zip(&fixed) {
            backends.push(GpuBackend::new(
                t.gpu,
                &t.cuts,
                &t.bins,
                &t.first_bins,
                fixed,
                *root,
                &mut t.buffers,
                context,
            )?);
        }
        let spares = std::mem::take(&mut self.sum_spares);
        let mut multi = MultiBackend::new(backends, &*self.communicator, threads, spares);
        let tree = grow::grow(&mut multi, params, &quantiser, features, rows, rng)?;
        multi.flush()?;
        let start = std::time::Instant::now();
        let orders = threads.on_each(&mut multi.backends, |backend| {
            backend.finish(read_rows)?;
            Ok(std::mem::replace(&mut backend.order, RowOrder::ranges_only(0)))
        })?;
        multi.phases.add("tree: row check (wall)", start.elapsed());
        self.phases.merge(&multi.phases);
        // The devices' steps run at once, a thread each: each step's time is the sum of theirs.
        for backend in &multi.backends {
            self.phases.merge(&backend.phases);
        }
        self.sum_spares = std::mem::take(&mut multi.global).into_spares();
        drop(multi);
        for (trainer, (fixed, _)) in self.trainers.iter_mut().zip(fixed) {
            trainer.quantise_scratch.fixed = Some(fixed);
        }
        Ok((tree, orders))
    }

    /// Whether the device rounds take `objective`: element-wise objectives and the softmax.
    /// Ranking groups may cross shards and the scaled residuals' scales sum over every shard, so
    /// those take the host's gradients; so do AFT, whose label bounds the shards do not keep, and
    /// the expectiles.
    pub fn takes(objective: DeviceObjective) -> bool {
        match objective {
            DeviceObjective::Elementwise(_) | DeviceObjective::Softmax { .. } => true,
            DeviceObjective::ScaledResidual(_)
            | DeviceObjective::LambdaRank(_)
            | DeviceObjective::Aft(_)
            | DeviceObjective::Expectile(_) => false,
        }
    }

    /// [`GpuTrainer::keep_rows_on_device`] over the shards: each device keeps its rows' labels,
    /// weights and margins (of every row: `margins`, or the base margins).
    pub fn keep_rows_on_device(
        &mut self,
        objective: DeviceObjective,
        info: &MetaInfo,
        margins: InitialMargins<'_>,
    ) -> Result<()> {
        let rows = self.rows();
        if !Self::takes(objective) || !info.group_ptr.is_empty() {
            return Err(Error::InvalidData("this objective's rounds take the host's gradients over devices".into()));
        }
        if info.labels.len() != rows || !(info.weights.is_empty() || info.weights.len() == rows) {
            return Err(Error::InvalidData(format!(
                "{} labels and {} weights for {rows} rows",
                info.labels.len(),
                info.weights.len()
            )));
        }
        let outputs = objective.outputs();
        for (trainer, shard) in self.trainers.iter_mut().zip(&self.shards) {
            let part = MetaInfo {
                labels: info.labels[shard.clone()].to_vec(),
                weights: if info.weights.is_empty() { Vec::new() } else { info.weights[shard.clone()].to_vec() },
                ..Default::default()
            };
            let margins = match margins {
                InitialMargins::Rows(all) => {
                    let range = shard.start * outputs..shard.end * outputs;
                    InitialMargins::Rows(all.get(range).ok_or_else(|| {
                        Error::InvalidData(format!("{} margins for {rows} rows of {outputs}", all.len()))
                    })?)
                }
                base => base,
            };
            trainer.keep_rows_on_device(objective, &part, margins)?;
        }
        Ok(())
    }

    /// [`GpuTrainer::compute_gradients`] on every device.
    pub fn compute_gradients(&mut self, iteration: usize) -> Result<()> {
        self.threads.on_each(&mut self.trainers, |t| t.compute_gradients(iteration)).map(drop)
    }

    /// [`GpuTrainer::boost_tree`] over the devices: each device's gradients of its rows (sampled
    /// as the whole run's rows are), one tree grown over all of them, each device's margins
    /// updated with its rows' leaves.
    pub fn boost_tree(
        &mut self,
        params: &TreeParams,
        output: usize,
        sampler: TreeSampler,
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<Tree> {
        let start = std::time::Instant::now();
        let parts = self.tree_gradients(output, sampler)?;
        // Each device's quantiser block sums of its gradients.
        let mut devices: Vec<(&mut GpuTrainer<'g>, u64)> = self.trainers.iter_mut().zip(parts.clone()).collect();
        // SAFETY: each part is its trainer's tree gradients, one a row of its shard, kept for the run.
        let blocks = self.threads.on_each(&mut devices, |(t, part)| unsafe { t.quantiser_block_sums(*part, t.rows) })?;
        drop(devices);
        self.phases.add("tree: gradients", start.elapsed());
        // SAFETY: each part is its trainer's tree gradients, kept for the run.
        let (tree, orders) = unsafe { self.grow(params, &parts, Some(blocks), features, false, rng)? };
        // Each device adds its rows' leaves to its margins.
        let mut devices: Vec<(&mut GpuTrainer<'g>, &RowOrder)> = self.trainers.iter_mut().zip(&orders).collect();
        self.threads.on_each(&mut devices, |(t, order)| t.add_tree_leaves(&tree, order, output))?;
        Ok(tree)
    }

    /// Each device's gradients of output `output` for the tree, sampled as one run's rows are:
    /// uniform draws from each shard's first row on; gradient-based ones with one threshold, from
    /// the histograms of every device added.
    fn tree_gradients(&mut self, output: usize, sampler: TreeSampler) -> Result<Vec<u64>> {
        let mut devices: Vec<(&mut GpuTrainer<'g>, u64)> =
            self.trainers.iter_mut().zip(&self.shards).map(|(t, shard)| (t, shard.start as u64)).collect();
        let (key, subsample) = match sampler {
            TreeSampler::Uniform(s) => {
                return self.threads.on_each(&mut devices, |(t, first)| t.uniform_gradients(output, s.from_row(*first)))
            }
            TreeSampler::GradientBased { key, subsample } => (key, subsample),
        };
        let all = self.threads.on_each(&mut devices, |(t, _)| t.uniform_gradients(output, RowSampler::ALL))?;
        let mut devices: Vec<_> = devices.into_iter().zip(all.iter().copied()).collect();
        let threads = &self.threads;
        let maxima = threads.on_each(&mut devices, |((t, _), g)| sample::magnitude_max(t.gpu, *g, t.rows))?;
        let histogram = |pass: &MvsPass| {
            let each = threads.on_each(&mut devices, |((t, _), g)| sample::magnitude_histogram(t.gpu, *g, t.rows, pass))?;
            Ok(each.into_iter().reduce(|mut all, more| {
                add_bins(&mut all, &more);
                all
            }).unwrap_or_default())
        };
        let rows = self.shards.last().map_or(0, |s| s.end) as u64;
        let max = maxima.into_iter().fold(0.0, f32::max);
        match gradient_sampler(key, subsample, rows, max, histogram)? {
            None => Ok(all),
            Some(s) => threads.on_each(&mut devices, |((t, first), g)| t.gradient_sampled(*g, &s.from_row(*first))),
        }
    }

    /// A row-wise `metric` (a sum of row terms) of the training rows' predictions on the devices:
    /// every device's block sums added in row order, as one device adds its own, so the value is
    /// the host's bit for bit. An error for the other metrics (the caller reads the margins back).
    pub fn evaluate(&mut self, metric: DeviceMetric, transform: Transform) -> Result<f64> {
        let blocks = self.threads.on_each(&mut self.trainers, |t| {
            t.loss_block_sums(metric, transform)?
                .ok_or_else(|| Error::InvalidData(format!("{metric:?} is not a sum of row terms")))
        })?;
        // Every block's sums in row order, as one device adds its own.
        finish_loss(metric, blocks.into_iter().flatten().fold(LossSum::zero(), BlockSum::plus))
    }

    /// Every row's margins, read back from the devices, in row order.
    pub fn margins(&self) -> Result<Vec<f32>> {
        let mut margins = Vec::new();
        for trainer in &self.trainers {
            margins.extend(trainer.margins()?);
        }
        Ok(margins)
    }
}

/// The expansion driver's backend over a [`GpuBackend`] a device: partitions and histograms on
/// every device; splits evaluated on the first, from the histograms summed over the devices.
///
/// A partition waits for the children's histograms that follow it (the driver's next call), so
/// that each device's thread partitions and builds in one dispatch; the devices' releases of
/// histograms in between wait with it (the partition reads the parents' histograms).
struct MultiBackend<'a, 'c> {
    backends: Vec<GpuBackend<'a>>,
    communicator: &'c dyn Communicator,
    threads: &'c DeviceThreads,
    /// The nodes' histograms summed over the devices, on the first device.
    global: HistogramStore,
    /// The expansions of a partition not yet issued, and the nodes released since.
    deferred: Option<(Vec<Expansion<Fixed>>, Vec<usize>)>,
    /// Wall time of the steps over all the devices (the backends' own phases add the devices').
    phases: PhaseTimes,
}

impl MultiBackend<'_, '_> {
    fn new<'a, 'c>(
        backends: Vec<GpuBackend<'a>>,
        communicator: &'c dyn Communicator,
        threads: &'c DeviceThreads,
        spares: Vec<DeviceBuffer<Fixed>>,
    ) -> MultiBackend<'a, 'c> {
        MultiBackend {
            backends,
            communicator,
            threads,
            global: HistogramStore::with_spares(spares),
            deferred: None,
            phases: PhaseTimes::default(),
        }
    }

    /// Issues the deferred partition (and the releases after it) on every device.
    fn flush(&mut self) -> Result<()> {
        let Some((expanded, released)) = self.deferred.take() else { return Ok(()) };
        self.threads.on_each(&mut self.backends, |b| Self::partition_and_release(b, &expanded, &released)).map(drop)
    }

    fn partition_and_release(b: &mut GpuBackend<'_>, expanded: &[Expansion<Fixed>], released: &[usize]) -> Result<()> {
        b.partition(expanded)?;
        released.iter().for_each(|&node| b.release(node));
        Ok(())
    }

    /// Sums every device's last histogram batch (slots `nodes`) into the global store.
    fn sum_last_batch(&mut self, nodes: &[(usize, u32)]) -> Result<()> {
        let parts: Vec<&DeviceBuffer<Fixed>> = self
            .backends
            .iter()
            .map(|b| b.histograms.last_batch())
            .collect::<Option<_>>()
            .ok_or_else(|| Error::InvalidData("a device has no histogram batch to sum".into()))?;
        let gpus: Vec<&Gpu> = self.backends.iter().map(|b| b.gpu).collect();
        let start = std::time::Instant::now();
        let mut sum = self.global.uninitialized(gpus[0], parts[0].len())?;
        self.communicator.reduce_sum(&gpus, &parts, 0, &mut sum)?;
        self.phases.add("tree: sums over the devices (wall)", start.elapsed());
        self.global.insert(sum, nodes);
        Ok(())
    }

    /// Runs `f` on the first device's backend with the summed histograms in place of its own.
    fn on_sums<T>(&mut self, f: impl FnOnce(&mut GpuBackend<'_>) -> Result<T>) -> Result<T> {
        let first = &mut self.backends[0];
        std::mem::swap(&mut first.histograms, &mut self.global);
        let result = f(first);
        std::mem::swap(&mut first.histograms, &mut self.global);
        result
    }
}

impl GrowBackend<Fixed> for MultiBackend<'_, '_> {
    type Error = Error;

    fn total(&mut self) -> Result<Fixed> {
        self.flush()?;
        let mut total = Fixed::zero();
        for backend in &mut self.backends {
            total = total.plus(backend.total()?);
        }
        Ok(total)
    }

    fn root_histogram(&mut self) -> Result<()> {
        self.flush()?;
        self.threads.on_each(&mut self.backends, |b| b.root_histogram())?;
        self.sum_last_batch(&[(0, 0)])
    }

    fn partition(&mut self, expanded: &[Expansion<Fixed>]) -> Result<()> {
        self.flush()?;
        self.deferred = Some((expanded.to_vec(), Vec::new()));
        Ok(())
    }

    fn children_histograms(&mut self, children: &[ChildHistograms]) -> Result<()> {
        if children.is_empty() {
            return self.flush();
        }
        let deferred = self.deferred.take();
        let start = std::time::Instant::now();
        self.threads.on_each(&mut self.backends, |b| {
            if let Some((expanded, released)) = &deferred {
                Self::partition_and_release(b, expanded, released)?;
            }
            b.children_histograms(children)
        })?;
        self.phases.add("tree: partitions and histograms (wall)", start.elapsed());
        for c in children {
            self.global.release(c.parent);
        }
        let nodes: Vec<(usize, u32)> = children
            .iter()
            .enumerate()
            .flat_map(|(i, c)| [(c.left, 2 * i as u32), (c.right, 2 * i as u32 + 1)])
            .collect();
        self.sum_last_batch(&nodes)
    }

    fn evaluate(&mut self, nodes: &[SplitRequest<Fixed>]) -> Result<Vec<Option<Split<Fixed>>>> {
        self.flush()?;
        let start = std::time::Instant::now();
        let splits = self.on_sums(|first| first.evaluate(nodes));
        self.phases.add("tree: evaluation (wall)", start.elapsed());
        splits
    }

    fn evaluate_level(&mut self, nodes: &[(usize, Fixed)], features: &[u32]) -> Result<Option<Vec<Split<Fixed>>>> {
        self.flush()?;
        self.on_sums(|first| first.evaluate_level(nodes, features))
    }

    fn release(&mut self, node: usize) {
        match &mut self.deferred {
            Some((_, released)) => released.push(node),
            None => self.backends.iter_mut().for_each(|b| b.release(node)),
        }
        self.global.release(node);
    }

    /// The first device's: it evaluated the splits, and kept their categories.
    fn categories(&mut self, node: usize, split: &Split<Fixed>) -> Result<Vec<u32>> {
        self.backends[0].categories_of(node, split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
    use crate::param::Params;
    use primitives::Schedule;
    use rand::SeedableRng;

    #[test]
    fn nccl_refuses_emulated_devices() {
        let gpus = [Gpu::emulated(Schedule::Deterministic), Gpu::emulated(Schedule::Deterministic)];
        let refused = super::super::Nccl::new(&[&gpus[0], &gpus[1]]).err().expect("emulated devices");
        assert!(matches!(refused, Error::Communication(_)), "{refused}");
    }

    #[test]
    fn shards_are_whole_blocks_and_cover_the_rows() {
        assert_eq!(shards(5000, 2), [0..3072, 3072..5000]);
        assert_eq!(shards(5000, 3), [0..2048, 2048..4096, 4096..5000]);
        assert_eq!(shards(1500, 4), [0..1024, 1024..1500], "fewer blocks than devices");
        assert_eq!(shards(100, 2), vec![0..100; 1]);
        assert_eq!(shards(0, 2), Vec::<Range<usize>>::new());
    }

    /// Trees grown over 2 and 3 emulated devices are the one device's (tree and every row's
    /// leaf), for depthwise, lossguide and oblivious growth, dense rows with missing values and
    /// the same rows as CSR.
    #[test]
    fn trees_over_several_devices_are_the_one_devices() {
        let spec = SyntheticSpec {
            rows: 5000,
            cols: 6,
            task: SyntheticTask::Regression,
            seed: 4,
            missing_columns: 2,
            ..Default::default()
        };
        let data = generate(&spec).unwrap();
        let cuts = QuantileCuts::build(&data.features, &[], 64);
        let labels = &data.info.labels;
        let gradients: Vec<GradientPair<f32>> =
            labels.iter().enumerate().map(|(i, &y)| GradientPair::new(-y, 1.0 + (i % 3) as f32 * 0.5)).collect();
        let owned: Vec<Gpu> = (0..3).map(|seed| Gpu::emulated(Schedule::Shuffled { seed })).collect();
        let gpus: Vec<&Gpu> = owned.iter().collect();
        let features: Vec<u32> = (0..6).collect();
        let FeatureMatrix::Dense(dense) = &data.features else { panic!("synthetic data is dense") };
        let mut csr = CsrMatrix { rows: dense.rows, cols: dense.cols, row_ptr: vec![0], ..Default::default() };
        for i in 0..dense.rows {
            for (j, &v) in dense.row(i).iter().enumerate().filter(|(_, v)| !v.is_nan()) {
                csr.col_indices.push(j as u32);
                csr.values.push(v);
            }
            csr.row_ptr.push(csr.values.len());
        }
        let sparse = FeatureMatrix::Sparse(csr);
        for policy in [
            &[("max_depth", "4")][..],
            &[("grow_policy", "lossguide"), ("max_leaves", "9"), ("max_depth", "0")],
            &[("grow_policy", "oblivious"), ("max_depth", "3")],
        ] {
            let params = Params::from_pairs(policy).unwrap().tree;
            let mut one = GpuTrainer::from_features(gpus[0], &data.features, &cuts).unwrap();
            let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
            let expected = one.build_tree(&params, &gradients, &features, &mut rng).unwrap();
            assert!(expected.tree.len() > 7, "{policy:?}: a tree worth comparing");
            for devices in [2, 3] {
                let on_first = gpus[0].upload(&dense.values).unwrap();
                let from_device = || {
                    let shape = (dense.rows, dense.cols);
                    MultiGpuTrainer::from_device_rows(&gpus[..devices], &on_first, shape, &cuts, Box::new(HostStaged))
                };
                let from_host =
                    |matrix| MultiGpuTrainer::from_features(&gpus[..devices], matrix, &cuts, Box::new(HostStaged));
                for multi in [from_host(&data.features), from_host(&sparse), from_device()] {
                    let mut multi = multi.unwrap();
                    assert_eq!(multi.shards().len(), devices);
                    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
                    let got = multi.build_tree(&params, &gradients, &features, &mut rng).unwrap();
                    assert_eq!(got.tree, expected.tree, "{policy:?} over {devices} devices");
                    assert_eq!(got.positions, expected.positions, "{policy:?} over {devices} devices");
                }
            }
        }
    }
}
