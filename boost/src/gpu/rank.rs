//! LambdaMART's gradients on the device (`rank:pairwise`, `rank:ndcg`, `rank:map`): each round,
//! every query group's documents ranked by margin with our segmented radix sort, (for `mean`) its
//! positions by label likewise, then the CPU backend's code: `boost_kernels::rank`'s
//! `lambdarank_topk_kernel`, a warp per group that computes 32 pairs at once and adds them in the
//! CPU's order, or for `mean` (whose partners are drawn in sequence) `lambdarank_kernel`, a thread
//! per group.

use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, DeviceSegmentedSort, Gpu, SortOrder};

use boost_kernels::entry;
use boost_kernels::rank::LambdaRankParams;

use super::element_config;
use crate::data::MetaInfo;
use crate::objective::ranking::{discount_table, inv_idcg, seed_base, weight_norm, LambdaRank};
use crate::{Error, Result};

/// The query groups and the per-round buffers, kept for a training run.
pub(super) struct RankGradients {
    params_buffer: DeviceBuffer<LambdaRankParams>,
    /// `groups + 1` row offsets: the segments of the sorts.
    group_ptr: DeviceBuffer<u32>,
    groups: usize,
    /// A weight per group, when the data has them.
    weights: Option<DeviceBuffer<f32>>,
    weight_norm: f64,
    inv_idcg: DeviceBuffer<f64>,
    discount: DeviceBuffer<f64>,
    keys: DeviceBuffer<u32>,
    sorted_keys: DeviceBuffer<u32>,
    /// Each group's rows by rank.
    ranked: DeviceBuffer<u32>,
    /// Each group's positions in label order (`mean`).
    by_label: Option<DeviceBuffer<u32>>,
    /// Two values a row (`rank:map`).
    map_stats: Option<DeviceBuffer<f64>>,
}

impl RankGradients {
    /// The groups of `info` (its labels' rows) on the device, with the buffers of a round.
    pub(super) fn new(gpu: &Gpu, params: LambdaRankParams, info: &MetaInfo) -> Result<Self> {
        let n = info.labels.len();
        if n == 0 {
            return Err(Error::InvalidData("ranking without rows".into()));
        }
        let gptr = LambdaRank::groups(info, n);
        let groups = gptr.len() - 1;
        let inv_idcg: Vec<f64> = gptr.windows(2).map(|w| inv_idcg(&params, &info.labels[w[0]..w[1]])).collect();
        let offsets: Vec<u32> = gptr.iter().map(|&o| o as u32).collect();
        let mean = params.mean != 0;
        let map = params.kind == LambdaRankParams::MAP;
        Ok(RankGradients {
            params_buffer: gpu.upload(&[params])?,
            group_ptr: gpu.upload(&offsets)?,
            groups,
            weights: (info.weights.len() == groups).then(|| gpu.upload(&info.weights)).transpose()?,
            weight_norm: weight_norm(info, groups),
            inv_idcg: gpu.upload(&inv_idcg)?,
            discount: gpu.upload(&discount_table(&gptr).into_iter().chain([0.0]).collect::<Vec<_>>())?,
            keys: gpu.alloc_uninitialized(n)?,
            sorted_keys: gpu.alloc_uninitialized(n)?,
            ranked: gpu.alloc_uninitialized(n)?,
            by_label: mean.then(|| gpu.alloc_uninitialized(n)).transpose()?,
            map_stats: map.then(|| gpu.alloc_uninitialized(2 * n)).transpose()?,
        })
    }

    /// Every row's gradient pair of round `iteration` into `out`, from `margins` and `labels` (a
    /// value a row each); `identity` holds `0..n`.
    pub(super) fn compute(
        &mut self,
        gpu: &Gpu,
        margins: &DeviceBuffer<f32>,
        labels: &DeviceBuffer<f32>,
        identity: &DeviceBuffer<u32>,
        iteration: usize,
        out: &DeviceBuffer<GradientPair<f32>>,
    ) -> Result<()> {
        let n = self.keys.len();
        let config = element_config(n)?;
        // Each group's rows by margin, descending, ties in row order.
        let args = entry::boost_objective_descending_keys::args(
            margins.as_ptr(),
            std::ptr::null(),
            n as u64,
            self.keys.as_mut_ptr(),
        );
        // SAFETY: margins and keys hold `n` values.
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        let ascending = SortOrder::ascending();
        DeviceSegmentedSort::sort_pairs(
            gpu,
            &self.keys,
            &mut self.sorted_keys,
            identity,
            &mut self.ranked,
            &self.group_ptr,
            ascending,
        )?;
        if let Some(by_label) = &mut self.by_label {
            // Each group's positions by the label of the document there, descending, stable.
            let args = entry::boost_objective_descending_keys::args(
                labels.as_ptr(),
                self.ranked.as_ptr(),
                n as u64,
                self.keys.as_mut_ptr(),
            );
            // SAFETY: the ranked rows and the keys hold `n` values, each row below `n`.
            unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
            DeviceSegmentedSort::sort_pairs(
                gpu,
                &self.keys,
                &mut self.sorted_keys,
                identity,
                by_label,
                &self.group_ptr,
                ascending,
            )?;
        }
        let (params, group_ptr, groups) = (self.params_buffer.as_ptr(), self.group_ptr.as_ptr(), self.groups as u64);
        let (margins, labels) = (margins.as_ptr(), labels.as_ptr());
        let weights = self.weights.as_ref().map_or(std::ptr::null(), DeviceBuffer::as_ptr);
        let (inv_idcg, discount, ranked) = (self.inv_idcg.as_ptr(), self.discount.as_ptr(), self.ranked.as_ptr());
        let map_stats = self.map_stats.as_ref().map_or(std::ptr::null_mut(), DeviceBuffer::as_mut_ptr);
        let weight_norm = self.weight_norm.to_bits();
        // Both launches: the offsets are the groups' (`groups + 1`, non-decreasing, the last
        // `n`); every row-wise buffer holds `n` values (the statistics `2 n`), the discounts a value
        // per position of the largest group; the sorts map each group's positions to its own rows
        // and positions.
        match &self.by_label {
            // `topk`: a warp per group, its pairs 32 at a time.
            None => {
                let args = entry::boost_objective_lambdarank_topk::args(
                    params,
                    group_ptr,
                    groups,
                    margins,
                    labels,
                    weights,
                    inv_idcg,
                    discount,
                    ranked,
                    map_stats,
                    weight_norm,
                    out.as_mut_ptr(),
                );
                let warps = super::warp_per_block_config(self.groups)?;
                // SAFETY: as above; a warp per group.
                unsafe { gpu.launch_kernel(crate::KERNELS, warps, args)? };
            }
            // `mean`: a thread per group, which draws the partners in sequence.
            Some(by_label) => {
                let seed_base = seed_base(iteration, self.groups) as u64;
                let args = entry::boost_objective_lambdarank::args(
                    params,
                    group_ptr,
                    groups,
                    margins,
                    labels,
                    weights,
                    inv_idcg,
                    discount,
                    ranked,
                    by_label.as_ptr(),
                    map_stats,
                    seed_base,
                    weight_norm,
                    out.as_mut_ptr(),
                );
                let threads = element_config(self.groups)?;
                // SAFETY: as above.
                unsafe { gpu.launch_kernel(crate::KERNELS, threads, args)? };
            }
        }
        Ok(())
    }
}
