//! The evaluation log's metrics on the device: [`MetricRows`] keeps a set's labels, weights and
//! margins there (the training rows, or an evaluation set's) and computes the row-wise,
//! multi-class, AUC and ranking metrics from them as the host computes them from the same
//! predictions, bit for bit, reading back block sums instead of the margins.

use primitives::ops::Max;
use primitives::{DeviceBuffer, DeviceRadixSort, DeviceScan, DeviceSegmentedSort, Gpu, SortOrder};

use boost_kernels::auc::{AucCurve, Positives};
use boost_kernels::entry;
use boost_kernels::metric::{LossSum, Transform};
use boost_kernels::rank_metric;
use boost_kernels::reduce::{self, BlockSum};

use super::{element_config, warp_per_block_config};
use crate::data::MetaInfo;
use crate::metric::DeviceMetric;
use crate::objective::ranking::LambdaRank;
use crate::objective::DeviceObjective;
use crate::{Error, Result};

/// A set's margins before a training run's first round.
#[derive(Clone, Copy, Debug)]
pub enum InitialMargins<'a> {
    /// Every row's, row-major (base margins given with the data, or a model's trees continued).
    Rows(&'a [f32]),
    /// Every row at these base margins, one per output (made on the device, not uploaded).
    Base(&'a [f32]),
}

impl InitialMargins<'_> {
    /// The margins of `rows` rows of `outputs` on the device.
    pub(super) fn to_device(self, gpu: &Gpu, rows: usize, outputs: usize) -> Result<DeviceBuffer<f32>> {
        let count = rows * outputs;
        match self {
            InitialMargins::Rows(margins) if margins.len() == count => Ok(gpu.upload(margins)?),
            InitialMargins::Base(base) if base.len() == outputs && outputs > 0 => {
                let margins = gpu.alloc_uninitialized::<f32>(count)?;
                let base = gpu.upload(base)?;
                let args = entry::boost_objective_fill_margins::args(
                    base.as_ptr(),
                    outputs as u64,
                    count as u64,
                    margins.as_mut_ptr(),
                );
                // SAFETY: `outputs >= 1` base margins, `count` margins.
                unsafe { gpu.launch_kernel(crate::KERNELS, element_config(count)?, args)? };
                Ok(margins)
            }
            InitialMargins::Rows(m) | InitialMargins::Base(m) => Err(Error::InvalidData(format!(
                "{} initial margins for {rows} rows of {outputs} outputs ({self:?})",
                m.len()
            ))),
        }
    }
}

/// A set of rows whose metrics the device computes from their margins.
pub(crate) struct MetricRows {
    pub(crate) rows: usize,
    /// The margins of a row: 1, or a softmax's classes.
    pub(crate) outputs: usize,
    softmax: bool,
    pub(crate) labels: DeviceBuffer<f32>,
    pub(crate) weights: Option<DeviceBuffer<f32>>,
    /// `outputs` a row, row-major.
    pub(crate) margins: DeviceBuffer<f32>,
    /// The fixed-point scales of the AUC walks over these rows (the host's, from the same labels):
    /// the binary walk's, or each class's one-vs-rest walk's.
    auc_scales: Vec<f64>,
    /// The AUC's sort and scans, made at the first AUC.
    auc_scratch: Option<AucScratch>,
    /// A ranking objective's query groups, for `ndcg`, `map` and the per-group `auc`.
    groups: Option<QueryGroups>,
}

impl MetricRows {
    /// Uploads the labels and the row weights of rows that `objective`'s margins predict, with their
    /// margins before the run's first round.
    pub(crate) fn new(
        gpu: &Gpu,
        objective: DeviceObjective,
        info: &MetaInfo,
        margins: InitialMargins<'_>,
    ) -> Result<Self> {
        let n = info.labels.len();
        let (outputs, softmax) = (objective.outputs(), matches!(objective, DeviceObjective::Softmax { .. }));
        // Ranking's weights are per query group, and its metrics the host's.
        let ranking = matches!(objective, DeviceObjective::LambdaRank(_));
        if !(ranking || info.weights.is_empty() || info.weights.len() == n) {
            return Err(Error::InvalidData(format!("{n} labels and {} weights", info.weights.len())));
        }
        Ok(MetricRows {
            rows: n,
            outputs,
            softmax,
            labels: gpu.upload(&info.labels)?,
            weights: (!ranking && !info.weights.is_empty()).then(|| gpu.upload(&info.weights)).transpose()?,
            margins: margins.to_device(gpu, n, outputs)?,
            auc_scales: crate::metric::auc_scales(info, outputs),
            auc_scratch: None,
            groups: ranking.then(|| QueryGroups::new(gpu, info)).transpose()?,
        })
    }

    /// The weights as a kernel parameter, or null (every weight 1).
    pub(crate) fn weights_ptr(&self) -> *const f32 {
        self.weights.as_ref().map_or(std::ptr::null(), DeviceBuffer::as_ptr)
    }

    /// `metric` of the rows' predictions (for an element-wise metric, `transform` of the margins; for
    /// a multi-class one, their softmax), as the host's metric computes it from the same predictions:
    /// the same row terms, summed in the same fixed order (the device sums each block, the host adds
    /// the block sums in order). Reads back a sum per 1024 rows instead of the margins.
    pub(crate) fn evaluate(&mut self, gpu: &Gpu, metric: DeviceMetric, transform: Transform) -> Result<f64> {
        let outputs = self.outputs;
        if let Some(block_sums) = self.loss_block_sums(gpu, metric, transform)? {
            return finish_loss(metric, block_sums.into_iter().fold(LossSum::zero(), BlockSum::plus));
        }
        match metric {
            DeviceMetric::Auc(_) if self.groups.as_ref().is_some_and(|g| g.explicit) => self.rank(gpu, metric),
            DeviceMetric::Auc(curve) if outputs == 1 || self.softmax => self.auc(gpu, curve, transform),
            DeviceMetric::Rank(_) if self.groups.is_some() => self.rank(gpu, metric),
            _ => Err(Error::InvalidData(format!("{metric:?} does not apply to an objective of {outputs} outputs"))),
        }
    }

    /// A row-wise `metric`'s sums of each block of 1024 rows, in order (`None` for the metrics that
    /// are not sums of row terms: the areas, the ranking metrics). The host adds them in order
    /// ([`finish_loss`]); a run over several devices adds every device's in row order.
    pub(crate) fn loss_block_sums(
        &mut self,
        gpu: &Gpu,
        metric: DeviceMetric,
        transform: Transform,
    ) -> Result<Option<Vec<LossSum>>> {
        let n = self.rows;
        let outputs = self.outputs;
        let row_wise = match metric {
            DeviceMetric::Elementwise(_) => outputs == 1,
            DeviceMetric::MultiClass(_) => self.softmax,
            _ => false,
        };
        if !row_wise {
            return Ok(None);
        }
        let blocks = reduce::blocks(n);
        let block_sums = gpu.alloc_zeroed::<LossSum>(blocks.max(1))?;
        let config = warp_per_block_config(blocks)?;
        match metric {
            DeviceMetric::Elementwise(metric) => {
                let metric_buffer = gpu.upload(std::slice::from_ref(&metric))?;
                let args = entry::boost_metric_elementwise::args(
                    self.margins.as_ptr(),
                    self.labels.as_ptr(),
                    self.weights_ptr(),
                    n as u64,
                    transform.0 as u64,
                    metric_buffer.as_ptr(),
                    block_sums.as_mut_ptr(),
                );
                // SAFETY: margins and labels (and weights when given) hold `n` values, one metric, a
                // sum per block; the grid is whole warps, one per block.
                unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
            }
            DeviceMetric::MultiClass(metric) => {
                let args = entry::boost_metric_multiclass::args(
                    self.margins.as_ptr(),
                    self.labels.as_ptr(),
                    self.weights_ptr(),
                    n as u64,
                    outputs as u64,
                    metric.0 as u64,
                    block_sums.as_mut_ptr(),
                );
                // SAFETY: `outputs` margins a row, labels the host checked to be class ids below it
                // (the softmax objective's validation), (weights when given), a sum per block; whole
                // warps, one per block.
                unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
            }
            _ => return Ok(None),
        }
        Ok(Some(block_sums.to_vec(gpu)?.into_iter().take(blocks).collect()))
    }

    /// `auc` or `aucpr` of the rows' predictions (`transform` of the margins; for a softmax,
    /// one-vs-rest over its classes), as the host computes it (`boost_kernels::auc`): for each walk the
    /// predictions sorted descending with their rows (our radix sort), each position's fixed-point
    /// positives and tie-group head, their inclusive sum and max scans, and each tie group's segment
    /// area summed in the fixed order. Reads back the total positives and a sum per 1024 rows a walk.
    fn auc(&mut self, gpu: &Gpu, curve: AucCurve, transform: Transform) -> Result<f64> {
        let n = self.rows;
        let mut scratch = match self.auc_scratch.take() {
            Some(scratch) => scratch,
            None => AucScratch::new(gpu, n)?,
        };
        let walks = (0..self.outputs)
            .map(|class| self.auc_walk(gpu, &mut scratch, curve, transform, class))
            .collect::<Result<Vec<_>>>();
        self.auc_scratch = Some(scratch);
        let walks = walks?;
        Ok(match walks[..] {
            [(total, area, scale)] => boost_kernels::auc::finish(curve, total, area, scale),
            _ => crate::metric::one_vs_rest(curve, &walks),
        })
    }

    /// One walk of [`MetricRows::auc`] (class `class` of a softmax, or the binary walk): its total
    /// positives, summed area and scale.
    fn auc_walk(
        &self,
        gpu: &Gpu,
        scratch: &mut AucScratch,
        curve: AucCurve,
        transform: Transform,
        class: usize,
    ) -> Result<(Positives, f64, f64)> {
        let n = self.rows;
        let classes = self.outputs;
        let scale = self.auc_scales[class];
        let args = entry::boost_metric_auc_keys::args(
            self.margins.as_ptr(),
            n as u64,
            classes as u64,
            class as u64,
            transform.0 as u64,
            scratch.keys.as_mut_ptr(),
            scratch.rows.as_mut_ptr(),
        );
        // SAFETY: `classes` margins a row, `class < classes`; keys and row indices hold `n` values.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
        let order = SortOrder::descending();
        DeviceRadixSort::sort_pairs(
            gpu,
            &scratch.keys,
            &mut scratch.sorted_keys,
            &scratch.rows,
            &mut scratch.sorted_rows,
            order,
        )?;
        let args = entry::boost_metric_auc_positives::args(
            scratch.sorted_keys.as_ptr(),
            scratch.sorted_rows.as_ptr(),
            self.labels.as_ptr(),
            self.weights_ptr(),
            n as u64,
            classes as u64,
            class as u64,
            scale.to_bits(),
            scratch.positives.as_mut_ptr(),
            scratch.heads.as_mut_ptr(),
        );
        // SAFETY: every buffer holds `n` values; the sorted rows are a permutation of `0..n`.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
        DeviceScan::inclusive_sum(gpu, &scratch.positives, &mut scratch.prefixes)?;
        DeviceScan::inclusive_scan::<u32, Max>(gpu, &scratch.heads, &mut scratch.group_starts)?;
        let blocks = reduce::blocks(n);
        let args = entry::boost_metric_auc_area::args(
            scratch.sorted_keys.as_ptr(),
            scratch.prefixes.as_ptr(),
            scratch.group_starts.as_ptr(),
            n as u64,
            curve.0 as u64,
            scale.to_bits(),
            scratch.block_sums.as_mut_ptr(),
        );
        // SAFETY: keys, prefixes and group starts (positions up to their own) hold `n >= 1` values, a
        // sum per block; whole warps, one per block.
        unsafe { gpu.launch_kernel(crate::KERNELS, warp_per_block_config(blocks)?, args)? };
        let total = scratch.prefixes.range_to_vec(gpu, n - 1..n)?[0];
        let area = scratch.block_sums.to_vec(gpu)?.into_iter().fold(LossSum::zero(), BlockSum::plus).loss;
        Ok((total, area, scale))
    }

    /// A ranking metric of the margins, as the host computes it (`boost_kernels::rank_metric`): `ndcg`
    /// and `map`, or `auc` and `aucpr` per query group. Each group's rows ranked by margin with our
    /// segmented sort, a thread a group for its term, the terms summed in the fixed order. Reads back
    /// a sum per 1024 groups.
    fn rank(&mut self, gpu: &Gpu, metric: DeviceMetric) -> Result<f64> {
        let n = self.rows;
        let groups =
            self.groups.as_mut().ok_or_else(|| Error::InvalidData("a ranking metric without groups".into()))?;
        let scratch = match groups.scratch.take() {
            Some(scratch) => scratch,
            None => RankScratch::new(gpu, n, &groups.offsets, &self.labels)?,
        };
        let scratch = groups.scratch.insert(scratch);
        let args = entry::boost_objective_descending_keys::args(
            self.margins.as_ptr(),
            std::ptr::null(),
            n as u64,
            scratch.keys.as_mut_ptr(),
        );
        // SAFETY: margins and keys hold `n` values.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
        DeviceSegmentedSort::sort_pairs(
            gpu,
            &scratch.keys,
            &mut scratch.sorted_keys,
            &scratch.identity,
            &mut scratch.ranked,
            &groups.offsets,
            SortOrder::ascending(),
        )?;
        let count = groups.count;
        let weights = groups.weights.as_ref().map_or(std::ptr::null(), DeviceBuffer::as_ptr);
        match metric {
            DeviceMetric::Rank(params) => {
                let params = gpu.upload(&[params])?;
                let args = entry::boost_metric_rank_groups::args(
                    params.as_ptr(),
                    groups.offsets.as_ptr(),
                    count as u64,
                    self.labels.as_ptr(),
                    weights,
                    scratch.ranked.as_ptr(),
                    scratch.ideal.as_ptr(),
                    scratch.terms.as_mut_ptr(),
                );
                // SAFETY: one parameter set; the offsets are the groups' (`count + 1`, non-decreasing,
                // the last `n`); labels and both orders hold `n` values, and the segmented sorts map
                // each group's positions to its own rows; (the weights and) the terms hold `count`.
                unsafe { gpu.launch_kernel(crate::KERNELS, element_config(count)?, args)? };
            }
            DeviceMetric::Auc(curve) => {
                if scratch.prefixes.is_none() {
                    scratch.prefixes = Some(gpu.alloc_uninitialized(n)?);
                }
                let prefixes = scratch.prefixes.as_ref().map_or(std::ptr::null_mut(), DeviceBuffer::as_mut_ptr);
                let args = entry::boost_metric_rank_auc::args(
                    curve.0 as u64,
                    groups.offsets.as_ptr(),
                    count as u64,
                    self.margins.as_ptr(),
                    self.labels.as_ptr(),
                    weights,
                    scratch.ranked.as_ptr(),
                    scratch.ideal.as_ptr(),
                    prefixes,
                    scratch.terms.as_mut_ptr(),
                );
                // SAFETY: as above, and the margins and prefixes hold `n` values.
                unsafe { gpu.launch_kernel(crate::KERNELS, element_config(count)?, args)? };
            }
            _ => return Err(Error::InvalidData(format!("{metric:?} is not a ranking metric"))),
        }
        let blocks = reduce::blocks(count);
        let args =
            entry::boost_metric_sum_terms::args(scratch.terms.as_ptr(), count as u64, scratch.block_sums.as_mut_ptr());
        // SAFETY: `count` terms, a sum per block; whole warps, one per block.
        unsafe { gpu.launch_kernel(crate::KERNELS, warp_per_block_config(blocks)?, args)? };
        let sums = scratch.block_sums.to_vec(gpu)?.into_iter().fold(LossSum::zero(), BlockSum::plus);
        Ok(match metric {
            DeviceMetric::Auc(_) => rank_metric::finish_auc(sums),
            _ => rank_metric::finish(sums),
        })
    }

    /// The margins, read back from the device.
    pub(crate) fn read_margins(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        Ok(self.margins.to_vec(gpu)?)
    }
}

/// The device buffers of [`MetricRows::auc`], one value a row (the sort takes whole buffers) and a
/// sum per block.
struct AucScratch {
    keys: DeviceBuffer<f32>,
    sorted_keys: DeviceBuffer<f32>,
    rows: DeviceBuffer<u32>,
    sorted_rows: DeviceBuffer<u32>,
    positives: DeviceBuffer<Positives>,
    prefixes: DeviceBuffer<Positives>,
    heads: DeviceBuffer<u32>,
    group_starts: DeviceBuffer<u32>,
    block_sums: DeviceBuffer<LossSum>,
}

impl AucScratch {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::InvalidData("AUC of no rows".into()));
        }
        Ok(AucScratch {
            keys: gpu.alloc_uninitialized(n)?,
            sorted_keys: gpu.alloc_uninitialized(n)?,
            rows: gpu.alloc_uninitialized(n)?,
            sorted_rows: gpu.alloc_uninitialized(n)?,
            positives: gpu.alloc_uninitialized(n)?,
            prefixes: gpu.alloc_uninitialized(n)?,
            heads: gpu.alloc_uninitialized(n)?,
            group_starts: gpu.alloc_uninitialized(n)?,
            block_sums: gpu.alloc_uninitialized(reduce::blocks(n))?,
        })
    }
}

/// A ranking set's query groups on the device, with what its metrics sort (made at the first).
struct QueryGroups {
    /// `count + 1` row offsets (one group of every row when the set has none): the sorts' segments.
    offsets: DeviceBuffer<u32>,
    count: usize,
    /// Whether the set has query groups (else one group of every row: the ranking `auc` does not
    /// apply, the binary one does).
    explicit: bool,
    /// A weight per group, when the set has them.
    weights: Option<DeviceBuffer<f32>>,
    scratch: Option<RankScratch>,
}

impl QueryGroups {
    fn new(gpu: &Gpu, info: &MetaInfo) -> Result<Self> {
        let offsets = LambdaRank::groups(info, info.labels.len());
        let count = offsets.len() - 1;
        let offsets: Vec<u32> = offsets.into_iter().map(|o| o as u32).collect();
        Ok(QueryGroups {
            offsets: gpu.upload(&offsets)?,
            count,
            explicit: !info.group_ptr.is_empty(),
            weights: (info.weights.len() == count).then(|| gpu.upload(&info.weights)).transpose()?,
            scratch: None,
        })
    }
}

/// The device buffers of [`MetricRows::rank`]: sort keys and orders a row, a term a group and a sum
/// per block of terms.
struct RankScratch {
    keys: DeviceBuffer<u32>,
    sorted_keys: DeviceBuffer<u32>,
    /// `0..n`: the values the sorts carry.
    identity: DeviceBuffer<u32>,
    /// Each group's rows by margin, descending (this round's).
    ranked: DeviceBuffer<u32>,
    /// Each group's rows by label, descending: sorted once, the labels do not change.
    ideal: DeviceBuffer<u32>,
    terms: DeviceBuffer<LossSum>,
    block_sums: DeviceBuffer<LossSum>,
    /// The PR walks' prefixes, a value a row (made at the first `aucpr`).
    prefixes: Option<DeviceBuffer<Positives>>,
}

impl RankScratch {
    fn new(gpu: &Gpu, n: usize, offsets: &DeviceBuffer<u32>, labels: &DeviceBuffer<f32>) -> Result<Self> {
        if n == 0 {
            return Err(Error::InvalidData("a ranking metric of no rows".into()));
        }
        let count = offsets.len() - 1;
        let identity: Vec<u32> = (0..n as u32).collect();
        let mut scratch = RankScratch {
            keys: gpu.alloc_uninitialized(n)?,
            sorted_keys: gpu.alloc_uninitialized(n)?,
            identity: gpu.upload(&identity)?,
            ranked: gpu.alloc_uninitialized(n)?,
            ideal: gpu.alloc_uninitialized(n)?,
            terms: gpu.alloc_uninitialized(count)?,
            block_sums: gpu.alloc_uninitialized(reduce::blocks(count))?,
            prefixes: None,
        };
        let args = entry::boost_objective_descending_keys::args(
            labels.as_ptr(),
            std::ptr::null(),
            n as u64,
            scratch.keys.as_mut_ptr(),
        );
        // SAFETY: labels and keys hold `n` values.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
        let s = &mut scratch;
        DeviceSegmentedSort::sort_pairs(
            gpu,
            &s.keys,
            &mut s.sorted_keys,
            &s.identity,
            &mut s.ideal,
            offsets,
            SortOrder::ascending(),
        )?;
        Ok(scratch)
    }
}

/// A row-wise metric's value from the sum of its row terms (the blocks' sums added in order).
pub(crate) fn finish_loss(metric: DeviceMetric, sum: LossSum) -> Result<f64> {
    match metric {
        DeviceMetric::Elementwise(metric) => Ok(metric.finish(sum)),
        DeviceMetric::MultiClass(metric) => Ok(metric.finish(sum)),
        _ => Err(Error::InvalidData(format!("{metric:?} is not a sum of row terms"))),
    }
}
