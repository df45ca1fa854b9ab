//! Split evaluation for a batch of nodes on the device, in two launches: one thread per (node,
//! feature) pair scans the feature's bins ([`split::best_split_of_feature`]); then one thread per
//! node takes the best of its pairs in feature order and checks it ([`split::replaces`],
//! [`split::is_valid`]), as the CPU builder does. The arithmetic is the CPU's, call for call.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::fixed_point::GradientQuantiser;
use crate::split::{self, calc_gain, FeatureBins, Split, SplitParams};

type Fixed = GradientPair<i64>;

/// What the evaluation kernels need besides the data, in one `Pod` block of device memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplitContext {
    pub params: SplitParams,
    pub quantiser: GradientQuantiser,
}

/// A [`Split`] of fixed-point sums as the kernels store it (`found` = 0: no split).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DeviceSplit {
    pub left: Fixed,
    pub right: Fixed,
    pub last_left_bin: i64,
    pub loss_chg: f32,
    pub feature: u32,
    pub threshold: f32,
    pub default_left: u32,
    pub found: u32,
    pub padding: u32,
}

impl From<Option<Split<Fixed>>> for DeviceSplit {
    fn from(split: Option<Split<Fixed>>) -> Self {
        match split {
            None => DeviceSplit::default(),
            Some(s) => DeviceSplit {
                left: s.left,
                right: s.right,
                last_left_bin: s.last_left_bin,
                loss_chg: s.loss_chg,
                feature: s.feature,
                threshold: s.threshold,
                default_left: s.default_left as u32,
                found: 1,
                padding: 0,
            },
        }
    }
}

impl DeviceSplit {
    /// The split, if one was found.
    pub fn split(&self) -> Option<Split<Fixed>> {
        (self.found != 0).then_some(Split {
            loss_chg: self.loss_chg,
            feature: self.feature,
            last_left_bin: self.last_left_bin,
            threshold: self.threshold,
            default_left: self.default_left != 0,
            left: self.left,
            right: self.right,
        })
    }
}

/// One feature's bins of one node's histogram in device memory.
struct DeviceBins {
    feature: u32,
    first_bin: u32,
    len: usize,
    /// The node's histogram at the feature's first bin.
    hist: *const Fixed,
    cut_values: *const f32,
    min_value: f32,
}

impl FeatureBins<Fixed> for DeviceBins {
    fn feature(&self) -> u32 {
        self.feature
    }
    fn first_bin(&self) -> u32 {
        self.first_bin
    }
    fn bin_count(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn hist(&self, b: usize) -> Fixed {
        // SAFETY: `b < len`, and the launcher's histogram holds the feature's `len` bins.
        unsafe { arch::load(self.hist.add(b)) }
    }
    #[inline(always)]
    fn cut_value(&self, b: usize) -> f32 {
        // SAFETY: `b < len`, within the feature's cuts.
        unsafe { arch::load(self.cut_values.add(self.first_bin as usize + b)) }
    }
    fn min_value(&self) -> f32 {
        self.min_value
    }
}

/// The buffers of [`split_features_kernel`].
#[repr(C)]
pub struct FeatureSplitArgs {
    /// Histograms by slot, `node_stride` sums each. Within one, feature `f`'s bins start at
    /// `cut_ptrs[f]` when `feature_stride` is 0 (global bin ids) and at `f * feature_stride`
    /// otherwise (a padded row of bins per feature).
    pub histograms: *const Fixed,
    pub node_stride: u64,
    pub feature_stride: u64,
    /// Per node to evaluate: its histogram's slot and its gradient sum.
    pub slots: *const u32,
    pub totals: *const Fixed,
    /// The cuts: `features + 1` offsets, the bins' upper bounds, each feature's minimum.
    pub cut_ptrs: *const u32,
    pub cut_values: *const f32,
    pub min_values: *const f32,
    /// (node, feature) pairs, two `u32`s each; the node indexes `slots` and `totals`.
    pub pairs: *const u32,
    pub num_pairs: u64,
    pub context: *const SplitContext,
    /// One result per pair.
    pub out: *mut DeviceSplit,
}

/// The global index of this thread in a one-dimensional grid.
#[inline(always)]
pub(crate) fn global_thread() -> u64 {
    arch::block_idx_x() as u64 * arch::block_dim_x() as u64 + arch::thread_idx_x() as u64
}

/// Best split of each (node, feature) pair, one thread each.
///
/// # Safety
/// Every buffer holds what [`FeatureSplitArgs`] says, every pair names a node of `slots` and
/// `totals` and a feature of the cuts, and every slot's histogram holds that feature's bins.
pub unsafe fn split_features_kernel(a: &FeatureSplitArgs) {
    let i = global_thread();
    if i >= a.num_pairs {
        return;
    }
    let i = i as usize;
    // SAFETY: `i < num_pairs` and the launcher's buffers hold what the contract says.
    unsafe {
        let node = arch::load(a.pairs.add(2 * i)) as usize;
        let feature = arch::load(a.pairs.add(2 * i + 1));
        let context = arch::load(a.context);
        let total = arch::load(a.totals.add(node));
        let slot = arch::load(a.slots.add(node)) as usize;
        let begin = arch::load(a.cut_ptrs.add(feature as usize));
        let end = arch::load(a.cut_ptrs.add(feature as usize + 1));
        let result = if begin == end {
            None
        } else {
            let t = context.quantiser.to_float(total);
            let parent_gain = calc_gain(&context.params, t.grad, t.hess);
            let within =
                if a.feature_stride == 0 { begin as usize } else { feature as usize * a.feature_stride as usize };
            let bins = DeviceBins {
                feature,
                first_bin: begin,
                len: (end - begin) as usize,
                hist: a.histograms.add(slot * a.node_stride as usize + within),
                cut_values: a.cut_values,
                min_value: arch::load(a.min_values.add(feature as usize)),
            };
            split::best_split_of_feature(&bins, total, parent_gain, &context.params, &context.quantiser)
        };
        arch::store(a.out.add(i), DeviceSplit::from(result));
    }
}

/// Each node's best split over its pairs (consecutive in `candidates`, features increasing), one
/// thread per node: `pair_offsets[n]..pair_offsets[n + 1]` are node `n`'s.
///
/// # Safety
/// `candidates` holds `pair_offsets[num_nodes]` results, `pair_offsets` `num_nodes + 1` offsets,
/// `out` room for `num_nodes` results.
pub unsafe fn split_nodes_kernel(
    candidates: *const DeviceSplit,
    pair_offsets: *const u32,
    num_nodes: u64,
    context: *const SplitContext,
    out: *mut DeviceSplit,
) {
    let n = global_thread();
    if n >= num_nodes {
        return;
    }
    let n = n as usize;
    // SAFETY: `n < num_nodes` and the buffers are sized as the contract says.
    unsafe {
        let params = arch::load(context).params;
        let (begin, end) = (arch::load(pair_offsets.add(n)), arch::load(pair_offsets.add(n + 1)));
        let mut best: Option<Split<Fixed>> = None;
        for k in begin..end {
            if let Some(candidate) = arch::load(candidates.add(k as usize)).split() {
                if split::replaces(&candidate, best.as_ref()) {
                    best = Some(candidate);
                }
            }
        }
        arch::store(out.add(n), DeviceSplit::from(best.filter(|b| split::is_valid(b, &params))));
    }
}
