//! Split evaluation for a batch of nodes on the device, in two launches: one warp per (node,
//! feature) pair scans the feature's bins 32 at a time, keeping the candidate the CPU's sequential
//! scan ([`split::best_split_of_feature`]) keeps; then one thread per node takes the best of its
//! pairs in feature order and checks it ([`split::replaces`], [`split::is_valid`]), as the CPU
//! builder does. Each candidate's arithmetic is the CPU's ([`split::candidate_loss`]).
//!
//! A categorical feature's pair scans as [`categorical`] does: one-hot candidates a bin at a
//! time, or a partition's over the node's categories in their sorted order, which a launch before
//! ([`sort_keys_kernel`]) keys for the primitives' segmented sort; the second launch also copies
//! the end of the order a chosen partition split needs ([`categorical::partition_edge`]).
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::categorical::{self, CategoricalParams, CATEGORICAL_CONDITION};
use crate::fixed_point::{add, sub, GradientQuantiser};
use crate::split::{self, Bounds, Parent, Split, SplitKind, SplitParams};

type Fixed = GradientPair<i64>;

/// What the evaluation kernels need besides the data, in one `Pod` block of device memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplitContext {
    pub params: SplitParams,
    pub quantiser: GradientQuantiser,
    pub categorical: CategoricalParams,
}

/// A (node, feature) pair of [`split_features_kernel`]: the node indexes the batch's slots and
/// nodes; `kind` is 0 for a numeric feature, [`ONE_HOT`] or [`PARTITION`] for a categorical one,
/// whose order (the node's categories sorted by [`categorical::sort_key`]) then starts at
/// `sorted_at` of the sorted bins; `monotone` is the feature's monotone constraint (1, -1 or 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplitPair {
    pub node: u32,
    pub feature: u32,
    pub kind: u32,
    pub sorted_at: u32,
    pub monotone: i32,
}

/// A node of [`split_features_kernel`]'s batch: its gradient sum, its gain and the bounds of its
/// children's weights ([`Parent`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NodeInput {
    pub total: Fixed,
    pub gain: f32,
    pub bounds: Bounds,
    pub pad: u32,
}

impl NodeInput {
    /// The node as a split candidate's parent, scanning a feature of monotone direction `monotone`.
    #[inline(always)]
    pub fn parent(&self, monotone: i32) -> Parent {
        Parent { gain: self.gain, bounds: self.bounds, monotone }
    }
}

/// A [`Split`] of fixed-point sums as the kernels store it (`found` = 0: no split). `kind` is 0 for
/// a numeric split, [`ONE_HOT`] or [`PARTITION`] for a categorical one, whose bin or count is then
/// in `last_left_bin`.
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
    pub kind: u32,
}

/// [`DeviceSplit::kind`] of a one-hot split.
pub const ONE_HOT: u32 = 1;
/// [`DeviceSplit::kind`] of a partition split.
pub const PARTITION: u32 = 2;

impl From<Option<Split<Fixed>>> for DeviceSplit {
    fn from(split: Option<Split<Fixed>>) -> Self {
        match split {
            None => DeviceSplit::default(),
            Some(s) => DeviceSplit {
                left: s.left,
                right: s.right,
                last_left_bin: match s.kind {
                    SplitKind::Numeric => s.last_left_bin,
                    SplitKind::OneHot { bin } => bin as i64,
                    SplitKind::Partition { count } => count as i64,
                },
                loss_chg: s.loss_chg,
                feature: s.feature,
                threshold: s.threshold,
                default_left: s.default_left as u32,
                found: 1,
                kind: match s.kind {
                    SplitKind::Numeric => 0,
                    SplitKind::OneHot { .. } => ONE_HOT,
                    SplitKind::Partition { .. } => PARTITION,
                },
            },
        }
    }
}

impl DeviceSplit {
    /// The split, if one was found.
    pub fn split(&self) -> Option<Split<Fixed>> {
        let (last_left_bin, kind) = match self.kind {
            ONE_HOT => (-1, SplitKind::OneHot { bin: self.last_left_bin as u32 }),
            PARTITION => (-1, SplitKind::Partition { count: self.last_left_bin as u32 }),
            _ => (self.last_left_bin, SplitKind::Numeric),
        };
        (self.found != 0).then_some(Split {
            loss_chg: self.loss_chg,
            feature: self.feature,
            last_left_bin,
            kind,
            threshold: self.threshold,
            default_left: self.default_left != 0,
            left: self.left,
            right: self.right,
        })
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
    /// Per node to evaluate: its histogram's slot, and its sum, gain and bounds.
    pub slots: *const u32,
    pub nodes: *const NodeInput,
    /// The cuts: `features + 1` offsets, the bins' upper bounds.
    pub cut_ptrs: *const u32,
    pub cut_values: *const f32,
    pub pairs: *const SplitPair,
    pub num_pairs: u64,
    /// The partition pairs' orders (bins of their feature), at their `sorted_at`; null when none.
    pub sorted: *const u32,
    pub context: *const SplitContext,
    /// One result per pair.
    pub out: *mut DeviceSplit,
}

/// The global index of this thread in a one-dimensional grid.
#[inline(always)]
pub(crate) fn global_thread() -> u64 {
    arch::block_idx_x() as u64 * arch::block_dim_x() as u64 + arch::thread_idx_x() as u64
}

/// A lane's best candidate so far and its place in the sequential scan's order (`seq`: forward
/// candidates `0..n` by bin, then backward ones `n..2n` from the last bin down), so that the warp
/// keeps the candidate the sequential scan keeps: the largest loss change, the earliest among equals.
#[derive(Clone, Copy)]
struct LaneBest {
    split: DeviceSplit,
    seq: u32,
}

/// Whether candidate `(loss, seq)` beats `best` under the sequential scan's rule (a strictly larger
/// loss change replaces; among equal ones the earlier wins).
#[inline(always)]
fn beats(loss: f32, seq: u32, found: bool, best_loss: f32, best_seq: u32) -> bool {
    found && (best_seq == u32::MAX || loss > best_loss || (loss == best_loss && seq < best_seq))
}

/// Warp-wide inclusive sum of fixed-point pairs (exact, so its value is the sequential sum's).
#[inline(always)]
fn warp_inclusive_sum(value: Fixed, lane: u32) -> Fixed {
    let mut sum = value;
    let mut delta = 1;
    while delta < arch::WARP_SIZE {
        let other = arch::shfl_up_sync(arch::FULL_MASK, sum, delta);
        if lane >= delta {
            sum = crate::fixed_point::add(sum, other);
        }
        delta *= 2;
    }
    sum
}

/// Walks a feature's `n` bins 32 at a time, one per lane, calling `visit(b, bin b's sum, the sum of
/// bins ..=b)` for each (the prefix sums exact, so they are the sequential scan's); returns the sum
/// of every bin. Every lane of the warp calls it.
///
/// # Safety
/// `hist` holds the feature's `n` bins.
#[inline(always)]
pub(crate) unsafe fn scan_bins(hist: *const Fixed, n: u32, lane: u32, visit: impl FnMut(u32, Fixed, Fixed)) -> Fixed {
    // SAFETY: `b < n` (caller).
    scan_items(n, lane, |b| unsafe { arch::load(hist.add(b as usize)) }, visit)
}

/// [`scan_bins`] over `n` items that `load` reads (called below `n` only).
#[inline(always)]
fn scan_items(n: u32, lane: u32, load: impl Fn(u32) -> Fixed, mut visit: impl FnMut(u32, Fixed, Fixed)) -> Fixed {
    let mut before = Fixed::default();
    let mut chunk = 0;
    while chunk < n {
        let b = chunk + lane;
        let h = if b < n { load(b) } else { Fixed::default() };
        let prefix = warp_inclusive_sum(h, lane);
        if b < n {
            visit(b, h, add(before, prefix));
        }
        before = add(before, arch::shfl_idx_sync(arch::FULL_MASK, prefix, 31));
        chunk += arch::WARP_SIZE;
    }
    before
}

/// A pair's histogram: where its feature's bins lie, their first global bin and their count.
///
/// # Safety
/// As [`split_features_kernel`]'s, for a pair of the batch.
#[inline(always)]
unsafe fn pair_bins(a: &FeatureSplitArgs, pair: &SplitPair) -> (*const Fixed, u32, u32) {
    // SAFETY: the pair's node and feature are the batch's and the cuts' (caller).
    unsafe {
        let slot = arch::load(a.slots.add(pair.node as usize)) as usize;
        let first = arch::load(a.cut_ptrs.add(pair.feature as usize));
        let n = arch::load(a.cut_ptrs.add(pair.feature as usize + 1)) - first;
        let within =
            if a.feature_stride == 0 { first as usize } else { pair.feature as usize * a.feature_stride as usize };
        (a.histograms.add(slot * a.node_stride as usize + within), first, n)
    }
}

/// Best split of each (node, feature) pair, one warp each: the CPU's sequential scan
/// ([`split::best_split_of_feature`]) with the bins 32 at a time. A bin's left sum is a warp prefix
/// sum plus the chunks before (exact in fixed point, so the same integers), each candidate's loss
/// change is [`split::candidate_loss`], and the warp keeps the candidate the sequential scan keeps.
///
/// # Safety
/// Every buffer holds what [`FeatureSplitArgs`] says, every pair names a node of `slots` and
/// `nodes` and a feature of the cuts, and every slot's histogram holds that feature's bins; the
/// grid has whole warps.
pub unsafe fn split_features_kernel(a: &FeatureSplitArgs) {
    let pair = global_thread() / arch::WARP_SIZE as u64;
    if pair >= a.num_pairs {
        return;
    }
    let (i, lane) = (pair as usize, arch::lane_id());
    // SAFETY: `i < num_pairs` and the launcher's buffers hold what the contract says; bins are read
    // only below the feature's count, a partition's order below its count.
    unsafe {
        let pair = arch::load(a.pairs.add(i));
        let context = arch::load(a.context);
        let (p, q) = (&context.params, &context.quantiser);
        let node = arch::load(a.nodes.add(pair.node as usize));
        let (total, parent) = (node.total, node.parent(pair.monotone));
        let (hist, first, n) = pair_bins(a, &pair);
        let mut best = LaneBest { split: DeviceSplit::default(), seq: u32::MAX };
        let feature = pair.feature;
        let mut offer = |left: Fixed, right: Fixed, kind: SplitKind, bin: (i64, f32), default_left: bool, seq: u32| {
            if let Some(loss_chg) = split::candidate_loss(left, right, &parent, p, q) {
                if beats(loss_chg, seq, true, best.split.loss_chg, best.seq) {
                    let (last_left_bin, threshold) = bin;
                    let found = Split { loss_chg, feature, last_left_bin, threshold, default_left, left, right, kind };
                    best = LaneBest { split: DeviceSplit::from(Some(found)), seq };
                }
            }
        };
        let categorical = (-1, CATEGORICAL_CONDITION);
        match pair.kind {
            ONE_HOT => {
                // Each category alone right, missing values left, then right (seq `2b`, `2b + 1`).
                let missing = sub(total, scan_bins(hist, n, lane, |_, _, _| {}));
                scan_bins(hist, n, lane, |b, h, _| {
                    let kind = SplitKind::OneHot { bin: b };
                    offer(sub(total, h), h, kind, categorical, true, 2 * b);
                    let right = add(h, missing);
                    offer(sub(total, right), right, kind, categorical, false, 2 * b + 1);
                });
            }
            PARTITION => {
                // The forward scan grows the right side from the order's start (missing values
                // left), the backward one the left side from its end (missing values right).
                let steps = (context.categorical.max_cat_threshold.min(n)).saturating_sub(1);
                let order = a.sorted.add(pair.sorted_at as usize);
                let at = |place: u32| arch::load(hist.add(arch::load(order.add(place as usize)) as usize));
                scan_items(steps, lane, at, |k, _, right| {
                    let kind = SplitKind::Partition { count: k + 1 };
                    offer(sub(total, right), right, kind, categorical, true, k);
                });
                scan_items(
                    steps,
                    lane,
                    |k| at(n - 1 - k),
                    |k, _, left| {
                        let kind = SplitKind::Partition { count: n - 1 - k };
                        offer(left, sub(total, left), kind, categorical, false, steps + k);
                    },
                );
            }
            _ => {
                let cut = |b: u32| arch::load(a.cut_values.add((first + b) as usize));
                // Missing values right: bins `..=b` go left.
                let present = scan_bins(hist, n, lane, |b, _, through| {
                    let bin = (first as i64 + b as i64, cut(b));
                    offer(through, sub(total, through), SplitKind::Numeric, bin, false, b);
                });
                // Missing values left, when some rows miss the feature: bins `b..` go right, all
                // present rows but those of the bins before `b`.
                if present != total {
                    scan_bins(hist, n, lane, |b, h, through| {
                        let right = sub(present, sub(through, h));
                        let threshold = if b == 0 { crate::split::NO_VALUE_LEFT } else { cut(b - 1) };
                        let bin = (first as i64 + b as i64 - 1, threshold);
                        offer(sub(total, right), right, SplitKind::Numeric, bin, true, 2 * n - 1 - b);
                    });
                }
            }
        }
        // The warp's best: every lane ends with the winner's (loss, seq); that lane writes it.
        let (mut loss, mut seq) = (best.split.loss_chg, best.seq);
        let mut delta = arch::WARP_SIZE / 2;
        while delta > 0 {
            let other_loss = arch::shfl_xor_sync(arch::FULL_MASK, loss, delta);
            let other_seq = arch::shfl_xor_sync(arch::FULL_MASK, seq, delta);
            if beats(other_loss, other_seq, other_seq != u32::MAX, loss, seq) {
                (loss, seq) = (other_loss, other_seq);
            }
            delta /= 2;
        }
        if seq == u32::MAX {
            if lane == 0 {
                arch::store(a.out.add(i), DeviceSplit::default());
            }
        } else if best.seq == seq {
            arch::store(a.out.add(i), best.split);
        }
    }
}

/// The sort keys of the partition pairs' categories: `keys[k]` = [`categorical::sort_key`] of
/// bin `k - sorted_at` of the pair whose order holds place `k`, `bins[k]` that bin. `partition`
/// lists the partition pairs (indices into `pairs`) by increasing `sorted_at`, their orders
/// adjacent from 0 up to `num_keys`. A thread a key.
///
/// # Safety
/// As [`split_features_kernel`]'s; `partition` holds `num_partition` such pairs, `keys` and
/// `bins` room for `num_keys`.
pub unsafe fn sort_keys_kernel(
    a: &FeatureSplitArgs,
    partition: *const u32,
    num_partition: u64,
    num_keys: u64,
    keys: *mut f32,
    bins: *mut u32,
) {
    let k = global_thread();
    if k >= num_keys || num_partition == 0 {
        return;
    }
    let k = k as u32;
    // SAFETY: the pair holding place `k` is found among `partition` (contract), and `k` lies in
    // its order, below the feature's bin count.
    unsafe {
        let pair_at = |j: u64| arch::load(a.pairs.add(arch::load(partition.add(j as usize)) as usize));
        // The last partition pair whose order starts at or before `k`.
        let (mut lo, mut hi) = (0u64, num_partition);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if pair_at(mid).sorted_at <= k {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let pair = pair_at(lo);
        let (hist, _, _) = pair_bins(a, &pair);
        let context = arch::load(a.context);
        let b = k - pair.sorted_at;
        let key = categorical::sort_key(arch::load(hist.add(b as usize)), &context.params, &context.quantiser);
        arch::store(keys.add(k as usize), key);
        arch::store(bins.add(k as usize), b);
    }
}

/// The buffers of [`split_nodes_kernel`] besides the candidates.
#[repr(C)]
pub struct NodeSplitArgs {
    /// `num_nodes + 1` offsets: node `n`'s pairs are `pair_offsets[n]..pair_offsets[n + 1]`.
    pub pair_offsets: *const u32,
    pub num_nodes: u64,
    pub context: *const SplitContext,
    /// The pairs and the partition pairs' orders, as [`split_features_kernel`] read them.
    pub pairs: *const SplitPair,
    pub sorted: *const u32,
    pub cut_ptrs: *const u32,
    /// `edge_stride` bins a node: a chosen partition split's end of the order
    /// ([`categorical::partition_edge`]); null when the batch has no partition pairs.
    pub edges: *mut u32,
    pub edge_stride: u64,
    /// A result per node.
    pub out: *mut DeviceSplit,
}

/// Each node's best split over its pairs (consecutive in `candidates`, features increasing), one
/// thread per node; a partition split's end of the order goes to the node's `edges`.
///
/// # Safety
/// `candidates` holds `pair_offsets[num_nodes]` results of the pairs [`split_features_kernel`]
/// read, every buffer what [`NodeSplitArgs`] says; `edge_stride` is at least every partition
/// pair's `max_cat_threshold - 1` steps.
pub unsafe fn split_nodes_kernel(candidates: *const DeviceSplit, a: &NodeSplitArgs) {
    let n = global_thread();
    if n >= a.num_nodes {
        return;
    }
    let n = n as usize;
    // SAFETY: `n < num_nodes` and the buffers are sized as the contract says.
    unsafe {
        let params = arch::load(a.context).params;
        let (begin, end) = (arch::load(a.pair_offsets.add(n)), arch::load(a.pair_offsets.add(n + 1)));
        let mut best: Option<Split<Fixed>> = None;
        let mut from = begin;
        for k in begin..end {
            if let Some(candidate) = arch::load(candidates.add(k as usize)).split() {
                if split::replaces(&candidate, best.as_ref()) {
                    (best, from) = (Some(candidate), k);
                }
            }
        }
        let best = best.filter(|b| split::is_valid(b, &params));
        if let Some(Split { kind: SplitKind::Partition { count }, default_left, .. }) = best {
            let pair = arch::load(a.pairs.add(from as usize));
            let f = pair.feature as usize;
            let bins = (arch::load(a.cut_ptrs.add(f + 1)) - arch::load(a.cut_ptrs.add(f))) as usize;
            let edge = categorical::partition_edge(bins, count as usize, default_left);
            for (j, place) in edge.enumerate() {
                let bin = arch::load(a.sorted.add(pair.sorted_at as usize + place));
                arch::store(a.edges.add(n * a.edge_stride as usize + j), bin);
            }
        }
        arch::store(a.out.add(n), DeviceSplit::from(best));
    }
}
