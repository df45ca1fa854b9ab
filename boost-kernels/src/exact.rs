//! The exact method's split arithmetic (XGBoost's `ColMaker`): every boundary between two distinct
//! values of a feature is a candidate, not only a quantile cut. Written once for the CPU backend
//! (which walks each feature's sorted values once a level for all nodes, as XGBoost does) and the
//! kernels (which evaluate every boundary at once from prefix sums and keep the first best), so both
//! choose the same splits.
//!
//! A node's present values of a feature, sorted, are enumerated in up to two directions, each
//! accumulating the values taken so far (`taken`):
//! - *forward* (ascending; taken only when the feature has missing values and is not constant,
//!   XGBoost's `NeedForwardSearch`): the taken values go left, the rest and the missing right;
//! - *backward* (descending): the taken values go right, the rest and the missing left.
//!
//! Between two consecutive values `prev != value` a [`step`] candidate splits halfway between them,
//! when something with hessian has been taken (XGBoost's `GradStats::Empty` test); after the last
//! value an [`end`] candidate sends every present value to the taken side, the missing ones to the
//! other, its threshold past the last value by `|last| + kRtEps`. Candidates are compared by
//! [`candidate_loss`] (both children at `min_child_weight`, a finite change); within a feature the
//! first of the largest wins (forward before backward, each in its enumeration order), between
//! features the lower index ([`crate::split::replaces`]).
//!
//! One deviation from XGBoost: where `(lo + hi) / 2` rounds to `lo` (adjacent floats) or overflows,
//! the threshold is `hi`, so that a row's side under the stored threshold is always the side its
//! gradient was summed on (XGBoost falls back to the enumeration's previous value, which is right
//! for the backward direction only).

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::{global_thread, DeviceSplit, SplitContext};
use crate::fixed_point::GradientQuantiser;
use crate::split::{candidate_loss, Bounds, GradientSum, Parent, Split, SplitKind, SplitParams};

/// XGBoost's `kRtEps` as the `f32` it adds to `|last|` for an end candidate's gap.
pub const END_GAP: f32 = 1e-6;

/// The threshold between two adjacent distinct values `lo < hi`: their midpoint in `f32`, as
/// XGBoost computes it, or `hi` where that is not above `lo` or above `hi`.
#[inline(always)]
pub fn midpoint(lo: f32, hi: f32) -> f32 {
    let mid = (lo + hi) * 0.5;
    if lo < mid && mid <= hi {
        mid
    } else {
        hi
    }
}

/// The threshold of an end candidate after value `last`: above it for the forward direction
/// (every present value goes left), below it for the backward one (every present value right).
#[inline(always)]
pub fn past(last: f32, missing_left: bool) -> f32 {
    let gap = f32::from_bits(last.to_bits() & 0x7fff_ffff) + END_GAP;
    if missing_left {
        last - gap
    } else {
        last + gap
    }
}

/// The children of a candidate: the taken side is left going forward (`missing_left` false),
/// right going backward.
#[inline(always)]
pub fn sides<S: GradientSum>(taken: S, node: S, missing_left: bool) -> (S, S) {
    let rest = S::sub(node, taken);
    if missing_left {
        (rest, taken)
    } else {
        (taken, rest)
    }
}

/// The candidate between the last value taken, `prev`, and the next one, `value`, `taken` the sums
/// of the values taken so far: its loss change and children, or `None` when there is none (nothing
/// with hessian taken yet, equal values, a child below `min_child_weight`, an infinite change).
#[inline(always)]
pub fn step<S: GradientSum>(taken: S, prev: f32, value: f32, n: &NodeFeature<'_, S>) -> Option<(f32, S, S)> {
    if !taken.has_hessian() || value == prev {
        return None;
    }
    let (left, right) = sides(taken, n.node, n.missing_left);
    candidate_loss(left, right, &n.parent, n.params, n.quantiser).map(|loss| (loss, left, right))
}

/// The end candidate of a direction, `taken` every present value's sums: its loss change and
/// children, or `None` (a child below `min_child_weight`, an infinite change). XGBoost makes no
/// `Empty` test here.
#[inline(always)]
pub fn end<S: GradientSum>(taken: S, n: &NodeFeature<'_, S>) -> Option<(f32, S, S)> {
    let (left, right) = sides(taken, n.node, n.missing_left);
    candidate_loss(left, right, &n.parent, n.params, n.quantiser).map(|loss| (loss, left, right))
}

/// A candidate as a split of `feature` (the exact method has no bins: `last_left_bin` is 0).
#[inline(always)]
pub fn split_of<S>(feature: u32, (loss_chg, left, right): (f32, S, S), threshold: f32, missing_left: bool) -> Split<S> {
    Split {
        loss_chg,
        feature,
        last_left_bin: 0,
        threshold,
        default_left: missing_left,
        left,
        right,
        kind: SplitKind::Numeric,
    }
}

/// One node's walk over one feature's values in one direction (the CPU's enumeration): the sums
/// taken, the last value and the best candidate so far.
#[derive(Clone, Copy, Debug)]
pub struct Enumeration<S> {
    pub taken: S,
    pub last: f32,
    pub best: Option<Split<S>>,
}

/// What a node's candidates need: its sums, its gain and bounds with the feature's monotone
/// direction ([`Parent`]), the feature, the direction (missing values left: backward) and the
/// parameters.
#[derive(Clone, Copy)]
pub struct NodeFeature<'a, S> {
    pub node: S,
    pub parent: Parent,
    pub feature: u32,
    pub missing_left: bool,
    pub params: &'a SplitParams,
    pub quantiser: &'a GradientQuantiser,
}

impl<S: GradientSum> Enumeration<S> {
    /// Nothing taken (the last value is not read before something is taken).
    pub const START: Self = Enumeration { taken: S::ZERO, last: 0.0, best: None };

    #[inline(always)]
    fn offer(&mut self, candidate: Split<S>) {
        if self.best.is_none_or(|b| candidate.loss_chg > b.loss_chg) {
            self.best = Some(candidate);
        }
    }

    /// Takes the next value (in the direction's order) with gradient `g`, first considering the
    /// candidate before it.
    #[inline(always)]
    pub fn take(&mut self, value: f32, g: S, n: &NodeFeature<'_, S>) {
        if let Some(c) = step(self.taken, self.last, value, n) {
            let (lo, hi) = if n.missing_left { (value, self.last) } else { (self.last, value) };
            self.offer(split_of(n.feature, c, midpoint(lo, hi), n.missing_left));
        }
        self.taken = S::add(self.taken, g);
        self.last = value;
    }

    /// Considers the end candidate and starts the next direction (the best kept).
    #[inline(always)]
    pub fn finish(&mut self, n: &NodeFeature<'_, S>) {
        if let Some(c) = end(self.taken, n) {
            self.offer(split_of(n.feature, c, past(self.last, n.missing_left), n.missing_left));
        }
        self.taken = S::ZERO;
    }
}

// ---- the device's level: every boundary at once ---------------------------------------------------
//
// The entries of a level are grouped by segment `s = feature * slots + slot` (a node's values of a
// feature, increasing), `segments[s]..segments[s + 1]`. Candidates of a segment of `m` entries are
// numbered in the CPU's enumeration order: forward steps `0..m - 1` (before entry `j = order + 1`),
// the forward end `m - 1`, backward steps `m..2m - 1` (before entry `j = 2m - 1 - order`, met from
// the top), the backward end `2m - 1`. A candidate's key is its loss change's order-preserving bits
// above the complement of its number, so the largest key is the first of the largest changes.

/// The segment holding entry `e`: the last `s` with `segments[s] <= e` (empty ones skipped).
///
/// # Safety
/// `segments` holds `count + 1` increasing offsets with `segments[0] <= e < segments[count]`.
#[inline(always)]
pub unsafe fn segment_of(segments: *const u32, count: u32, e: u32) -> u32 {
    let (mut lo, mut hi) = (0u32, count);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        // SAFETY: `mid < count` (caller).
        if unsafe { arch::load(segments.add(mid as usize)) } <= e {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `value`'s bits as an unsigned number in `f32`'s total order (`-0.0` below `+0.0`), one to one.
#[inline(always)]
pub fn total_order_bits(value: f32) -> u32 {
    let bits = value.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// The inverse of [`total_order_bits`].
#[inline(always)]
pub fn from_total_order_bits(ordered: u32) -> f32 {
    f32::from_bits(if ordered >> 31 == 1 { ordered & 0x7fff_ffff } else { !ordered })
}

/// A candidate's key (0: none): its loss change's order-preserving bits, then the complement of
/// its number.
#[inline(always)]
pub fn key(loss_chg: f32, order: u32) -> u64 {
    ((total_order_bits(loss_chg) as u64) << 32) | (!order) as u64
}

/// The loss change and number of a key (not 0).
#[inline(always)]
pub fn unkey(key: u64) -> (f32, u32) {
    (from_total_order_bits((key >> 32) as u32), !(key as u32))
}

/// What the level's kernels read.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LevelArgs {
    /// The level's entries: values, rows, and their gradients' inclusive prefix sums within a
    /// segment.
    pub values: *const f32,
    pub rows: *const u32,
    pub prefix: *const GradientPair<i64>,
    pub len: u64,
    pub segments: *const u32,
    /// Nodes (slots) of the level; segments are `features * slots`.
    pub slots: u64,
    pub features: u64,
    /// A node's sums and gain, by slot.
    pub totals: *const GradientPair<i64>,
    pub gains: *const f32,
    /// A node's bounds of its children's weights by slot, and each feature's monotone direction
    /// (monotone constraints); null without constraints.
    pub bounds: *const Bounds,
    pub monotone: *const i32,
    /// `uses[slot * features + f]`: whether the node samples feature `f`.
    pub uses: *const u8,
    /// Whether feature `f` is enumerated forward too.
    pub forward: *const u8,
    pub context: *const SplitContext,
}

impl LevelArgs {
    /// The node description of `slot` for feature `f` in one direction.
    ///
    /// # Safety
    /// `slot < slots`; `context` points to the level's context, which outlives the result.
    #[inline(always)]
    unsafe fn node<'c>(
        &self,
        slot: usize,
        f: u32,
        missing_left: bool,
        context: &'c SplitContext,
    ) -> NodeFeature<'c, GradientPair<i64>> {
        // SAFETY: `slot < slots` (caller).
        unsafe {
            NodeFeature {
                node: arch::load(self.totals.add(slot)),
                parent: Parent {
                    gain: arch::load(self.gains.add(slot)),
                    bounds: if self.bounds.is_null() { Bounds::NONE } else { arch::load(self.bounds.add(slot)) },
                    monotone: if self.monotone.is_null() { 0 } else { arch::load(self.monotone.add(f as usize)) },
                },
                feature: f,
                missing_left,
                params: &context.params,
                quantiser: &context.quantiser,
            }
        }
    }

    /// Candidate `order` of segment `s` (`start..start + m`, `m >= 1`): the split, or `None`.
    ///
    /// # Safety
    /// `s` a segment of the level, `order < 2m`.
    #[inline(always)]
    unsafe fn candidate(&self, s: u32, order: u32, context: &SplitContext) -> Option<Split<GradientPair<i64>>> {
        let slots = self.slots as u32;
        let (f, slot) = (s / slots, (s % slots) as usize);
        // SAFETY: `s` and its entries are the level's (caller).
        unsafe {
            let start = arch::load(self.segments.add(s as usize)) as usize;
            let m = arch::load(self.segments.add(s as usize + 1)) - start as u32;
            let value = |j: u32| arch::load(self.values.add(start + j as usize));
            let prefix = |j: u32| arch::load(self.prefix.add(start + j as usize));
            let present = prefix(m - 1);
            let missing_left = order >= m;
            let n = self.node(slot, f, missing_left, context);
            if order == m - 1 || order == 2 * m - 1 {
                let last = value(if missing_left { 0 } else { m - 1 });
                return end(present, &n).map(|c| split_of(f, c, past(last, missing_left), missing_left));
            }
            let j = if missing_left { 2 * m - 1 - order } else { order + 1 };
            let (lo, hi) = (value(j - 1), value(j));
            let c = if missing_left {
                step(GradientSum::sub(present, prefix(j - 1)), hi, lo, &n)
            } else {
                step(prefix(j - 1), lo, hi, &n)
            };
            c.map(|c| split_of(f, c, midpoint(lo, hi), missing_left))
        }
    }
}

/// `gathered[e] = gradients[rows[e]]`, a thread an entry.
///
/// # Safety
/// `rows` and `gathered` hold `len` entries, every row indexes `gradients`.
pub unsafe fn gather_kernel(
    rows: *const u32,
    len: u64,
    gradients: *const GradientPair<i64>,
    gathered: *mut GradientPair<i64>,
) {
    let e = global_thread();
    if e < len {
        // SAFETY: `e < len`; the row indexes `gradients` (caller).
        unsafe {
            let row = arch::load(rows.add(e as usize)) as usize;
            arch::store(gathered.add(e as usize), arch::load(gradients.add(row)));
        }
    }
}

/// `best[s]`: the largest key among segment `s`'s candidates (a thread an entry: the steps before
/// it, and the ends at the segment's first and last entries), reduced within runs of equal
/// segments across a warp, then one atomic maximum a run. `best` starts zeroed.
///
/// # Safety
/// `a` describes the level (prefix sums computed); `best` holds a key per segment; whole warps.
pub unsafe fn candidates_kernel(a: &LevelArgs, best: *mut u64) {
    let e = global_thread();
    let active = e < a.len;
    let count = (a.features * a.slots) as u32;
    let mut s = u32::MAX;
    let mut k = 0u64;
    if active {
        // SAFETY: `e < len`; the segments cover the entries; each candidate's entries are its
        // segment's.
        unsafe {
            let context = arch::load(a.context);
            s = segment_of(a.segments, count, e as u32);
            let slots = a.slots as u32;
            let (f, slot) = (s / slots, s % slots);
            if arch::load(a.uses.add((slot as u64 * a.features + f as u64) as usize)) != 0 {
                let start = arch::load(a.segments.add(s as usize));
                let m = arch::load(a.segments.add(s as usize + 1)) - start;
                let j = e as u32 - start;
                let mut offer = |order: u32| {
                    if let Some(c) = a.candidate(s, order, &context) {
                        k = k.max(key(c.loss_chg, order));
                    }
                };
                if arch::load(a.forward.add(f as usize)) != 0 {
                    if j >= 1 {
                        offer(j - 1);
                    }
                    if j == m - 1 {
                        offer(m - 1);
                    }
                }
                if j >= 1 {
                    offer(2 * m - 1 - j);
                }
                if j == 0 {
                    offer(2 * m - 1);
                }
            }
        }
    }
    reduce_runs(active, s, k, |s, key| {
        // SAFETY: `s < count`, a key per segment.
        unsafe { arch::atomic_max_u64_gpu(best.add(s as usize), key) };
    });
}

/// `out[slot]`: each node's best split over its features (increasing; a later feature only with a
/// strictly larger change), if valid ([`crate::split::is_valid`]), recomputed from its key. A
/// thread a slot.
///
/// # Safety
/// As for [`candidates_kernel`], after it; `out` holds a split per slot.
pub unsafe fn best_kernel(a: &LevelArgs, best: *const u64, out: *mut DeviceSplit) {
    let slot = global_thread();
    if slot >= a.slots {
        return;
    }
    // SAFETY: `slot < slots`; keys per segment; a key's number is a candidate of its segment.
    unsafe {
        let context = arch::load(a.context);
        let mut chosen: Option<(f32, u32, u32)> = None;
        for f in 0..a.features {
            if arch::load(a.uses.add((slot * a.features + f) as usize)) == 0 {
                continue;
            }
            let s = (f * a.slots + slot) as u32;
            let k = arch::load(best.add(s as usize));
            if k == 0 {
                continue;
            }
            let (loss, order) = unkey(k);
            if chosen.is_none_or(|(b, _, _)| loss > b) {
                chosen = Some((loss, s, order));
            }
        }
        let split = chosen
            .and_then(|(_, s, order)| a.candidate(s, order, &context))
            .filter(|b| crate::split::is_valid(b, &context.params));
        arch::store(out.add(slot as usize), DeviceSplit::from(split));
    }
}

/// A split node of the level being partitioned: its slot among the level's nodes, its split and
/// its children's ids.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ExactExpansion {
    pub slot: u32,
    pub feature: u32,
    pub threshold: f32,
    pub default_left: u32,
    pub left: u32,
    pub right: u32,
}

/// Every row of a split node to its default child: `plan[node]` is the node's expansion (or -1).
/// A thread a row.
///
/// # Safety
/// `positions` holds `rows` node ids; `plan` holds `plan_len`; expansions as `plan` names.
pub unsafe fn default_positions_kernel(
    positions: *mut u32,
    rows: u64,
    plan: *const i32,
    plan_len: u64,
    expansions: *const ExactExpansion,
) {
    let r = global_thread();
    if r >= rows {
        return;
    }
    // SAFETY: `r < rows`; a plan entry names an expansion.
    unsafe {
        let node = arch::load(positions.add(r as usize));
        if (node as u64) < plan_len {
            let i = arch::load(plan.add(node as usize));
            if i >= 0 {
                let x = arch::load(expansions.add(i as usize));
                arch::store(positions.add(r as usize), if x.default_left != 0 { x.left } else { x.right });
            }
        }
    }
}

/// The rows present in a split node's feature: its child by the threshold (after
/// [`default_positions_kernel`]). `expansion_of[slot]` is the slot's expansion (or -1). A thread an
/// entry of the level.
///
/// # Safety
/// `a`'s entries, rows and segments describe the level; `positions` a node id a row.
pub unsafe fn split_positions_kernel(
    a: &LevelArgs,
    positions: *mut u32,
    expansion_of: *const i32,
    expansions: *const ExactExpansion,
) {
    let e = global_thread();
    if e >= a.len {
        return;
    }
    // SAFETY: `e < len`; its segment is the level's; a slot's expansion index is valid.
    unsafe {
        let s = segment_of(a.segments, (a.features * a.slots) as u32, e as u32);
        let slots = a.slots as u32;
        let i = arch::load(expansion_of.add((s % slots) as usize));
        if i < 0 {
            return;
        }
        let x = arch::load(expansions.add(i as usize));
        if x.feature == s / slots {
            let child = if arch::load(a.values.add(e as usize)) < x.threshold { x.left } else { x.right };
            arch::store(positions.add(arch::load(a.rows.add(e as usize)) as usize), child);
        }
    }
}

/// Each entry's slot in the next level (`slot_of[node]`, `u32::MAX` where its row's node is not
/// split further) into `targets`, and 1 in `lefts` for a left child's (even slots). A thread an
/// entry; `lefts[len]` is 0.
///
/// # Safety
/// `a`'s rows describe the level; `targets` `len`, `lefts` `len + 1` entries; `slot_of` holds
/// `slot_len` entries.
pub unsafe fn targets_kernel(
    a: &LevelArgs,
    positions: *const u32,
    slot_of: *const u32,
    slot_len: u64,
    targets: *mut u32,
    lefts: *mut u32,
) {
    let e = global_thread();
    if e > a.len {
        return;
    }
    // SAFETY: `e <= len`; positions are node ids.
    unsafe {
        if e == a.len {
            arch::store(lefts.add(e as usize), 0);
            return;
        }
        let node = arch::load(positions.add(arch::load(a.rows.add(e as usize)) as usize)) as u64;
        let t = if node < slot_len { arch::load(slot_of.add(node as usize)) } else { u32::MAX };
        arch::store(targets.add(e as usize), t);
        arch::store(lefts.add(e as usize), (t != u32::MAX && t & 1 == 0) as u32);
    }
}

/// The next level's segment sizes: new segment `f * new_slots + t` takes the entries of feature
/// `f` of its parent (`parent_slot[t / 2]`) going its way, counted by the exclusive sums of the
/// left flags (`before`); `sizes[features * new_slots]` is 0 for the offsets' scan. A thread a
/// new segment.
///
/// # Safety
/// `a`'s segments describe the level; `before` the exclusive sums of [`targets_kernel`]'s flags
/// (`len + 1`); `sizes` holds `features * new_slots + 1`.
pub unsafe fn sizes_kernel(
    a: &LevelArgs,
    before: *const u32,
    parent_slot: *const u32,
    new_slots: u64,
    sizes: *mut u32,
) {
    let ns = global_thread();
    let count = a.features * new_slots;
    if ns > count {
        return;
    }
    // SAFETY: `ns <= count`; the parent slot is the level's.
    unsafe {
        if ns == count {
            arch::store(sizes.add(ns as usize), 0);
            return;
        }
        let (f, t) = (ns / new_slots, ns % new_slots);
        let s = (f * a.slots + arch::load(parent_slot.add((t / 2) as usize)) as u64) as usize;
        let (start, end) = (arch::load(a.segments.add(s)), arch::load(a.segments.add(s + 1)));
        let lefts = arch::load(before.add(end as usize)) - arch::load(before.add(start as usize));
        arch::store(sizes.add(ns as usize), if t & 1 == 0 { lefts } else { end - start - lefts });
    }
}

/// Moves each entry whose row goes on to its place in the next level: its new segment's offset
/// plus its rank among its old segment's entries going the same way (a stable partition of each
/// segment). A thread an entry.
///
/// # Safety
/// As for [`sizes_kernel`]; `new_segments` the exclusive sums of its sizes; the outputs hold the
/// next level's entries.
pub unsafe fn scatter_kernel(
    a: &LevelArgs,
    targets: *const u32,
    before: *const u32,
    new_segments: *const u32,
    new_slots: u64,
    values_out: *mut f32,
    rows_out: *mut u32,
) {
    let e = global_thread();
    if e >= a.len {
        return;
    }
    // SAFETY: `e < len`; destinations lie in the next level's entries (stable ranks in segments
    // sized by `sizes_kernel`).
    unsafe {
        let t = arch::load(targets.add(e as usize));
        if t == u32::MAX {
            return;
        }
        let s = segment_of(a.segments, (a.features * a.slots) as u32, e as u32);
        let f = (s / a.slots as u32) as u64;
        let start = arch::load(a.segments.add(s as usize));
        let lefts = arch::load(before.add(e as usize)) - arch::load(before.add(start as usize));
        let rank = if t & 1 == 0 { lefts } else { e as u32 - start - lefts };
        let dest = (arch::load(new_segments.add((f * new_slots + t as u64) as usize)) + rank) as usize;
        arch::store(values_out.add(dest), arch::load(a.values.add(e as usize)));
        arch::store(rows_out.add(dest), arch::load(a.rows.add(e as usize)));
    }
}

// ---- the interleaved mode (shallow levels): entries stay in each feature's value order ----------
//
// The level's `slots` nodes' entries are interleaved within each feature's segment (`segments`
// holds `features + 1` offsets; `targets[e]` is entry `e`'s slot, `u32::MAX` for a row whose node
// is not split further). A node `k`'s candidates come from a masked pass: its entries' gradients
// (others 0) scanned within each feature (`prefix`), and the last index of its entries up to each
// position plus one (`last`, a max-scan), which finds an entry's predecessor in its node. A
// candidate's number is in the CPU's enumeration order within (feature, node): forward steps by the
// later entry's place `j` in the feature (`j`), the forward end (`n`), backward steps (`2n - j`),
// the backward end (`2n + 1`).

/// The masked pass's inputs for slot `k`: `gathered[e]` entry `e`'s gradient where its slot is `k`
/// (else 0), `index[e]` `e + 1` there (else 0). A thread an entry.
///
/// # Safety
/// `a`'s rows describe the level; `targets`, `gathered` and `index` hold `len` entries; rows
/// index `gradients`.
pub unsafe fn mask_kernel(
    a: &LevelArgs,
    targets: *const u32,
    k: u32,
    gradients: *const GradientPair<i64>,
    gathered: *mut GradientPair<i64>,
    index: *mut u32,
) {
    let e = global_thread();
    if e >= a.len {
        return;
    }
    // SAFETY: `e < len`; the entry's row has a gradient.
    unsafe {
        let mine = arch::load(targets.add(e as usize)) == k;
        let g = if mine {
            arch::load(gradients.add(arch::load(a.rows.add(e as usize)) as usize))
        } else {
            GradientPair::new(0, 0)
        };
        arch::store(gathered.add(e as usize), g);
        arch::store(index.add(e as usize), if mine { e as u32 + 1 } else { 0 });
    }
}

impl LevelArgs {
    /// Candidate `order` of node `k` in feature segment `f` of the interleaved layout (`prefix` and
    /// `last` the node's masked scans; `order`'s candidate exists in the node's entries).
    ///
    /// # Safety
    /// `f` a feature of the layout, `k < slots`, the scans of `k`'s pass.
    #[inline(always)]
    unsafe fn interleaved_candidate(
        &self,
        f: u32,
        k: u32,
        order: u32,
        last: *const u32,
        context: &SplitContext,
    ) -> Option<Split<GradientPair<i64>>> {
        // SAFETY: the feature's entries and scans (caller).
        unsafe {
            let start = arch::load(self.segments.add(f as usize)) as usize;
            let n = arch::load(self.segments.add(f as usize + 1)) - start as u32;
            let value = |j: u32| arch::load(self.values.add(start + j as usize));
            let prefix = |j: u32| arch::load(self.prefix.add(start + j as usize));
            let last_of = |j: u32| arch::load(last.add(start + j as usize));
            let present = prefix(n - 1);
            let missing_left = order > n;
            let node = self.node(k as usize, f, missing_left, context);
            if order == n || order == 2 * n + 1 {
                // The forward end follows the node's last entry, the backward one its first: the
                // first is the entry whose predecessor search finds none.
                let at = if missing_left { first_of_node(n, &last_of) } else { last_of(n - 1) - 1 - start as u32 };
                return end(present, &node).map(|c| split_of(f, c, past(value(at), missing_left), missing_left));
            }
            let j = if missing_left { 2 * n - order } else { order };
            // The node's entry before `j` (the scan holds global places plus one).
            let before = last_of(j - 1) - 1 - start as u32;
            let (lo, hi) = (value(before), value(j));
            let c = if missing_left {
                step(GradientSum::sub(present, prefix(j - 1)), hi, lo, &node)
            } else {
                step(prefix(j - 1), lo, hi, &node)
            };
            c.map(|c| split_of(f, c, midpoint(lo, hi), missing_left))
        }
    }
}

/// The place of a node's first entry in a feature of `n` entries, from its `last` scan: the first
/// `j` whose scan is not 0.
#[inline(always)]
fn first_of_node(n: u32, last_of: &impl Fn(u32) -> u32) -> u32 {
    // The scan is non-decreasing: a binary search for the first non-zero.
    let (mut lo, mut hi) = (0u32, n - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if last_of(mid) != 0 {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// `best[f * slots + k]`: the largest key of node `k`'s candidates in each feature, a thread an
/// entry of the node (the candidates it ends), reduced within a warp's runs of one feature and
/// kept by an atomic maximum. After `k`'s masked scans (`a.prefix`, `last`).
///
/// # Safety
/// `a` the interleaved layout with `k`'s prefix sums; `targets`, `last` its `len` entries; `best`
/// a key per (feature, slot); whole warps.
pub unsafe fn interleaved_candidates_kernel(
    a: &LevelArgs,
    targets: *const u32,
    k: u32,
    last: *const u32,
    best: *mut u64,
) {
    let e = global_thread();
    let active = e < a.len;
    let mut s = u32::MAX;
    let mut key_max = 0u64;
    if active {
        // SAFETY: `e < len`; the feature's entries and scans.
        unsafe {
            let context = arch::load(a.context);
            let f = segment_of(a.segments, a.features as u32, e as u32);
            s = f;
            let mine = arch::load(targets.add(e as usize)) == k;
            if mine && arch::load(a.uses.add((k as u64 * a.features + f as u64) as usize)) != 0 {
                let start = arch::load(a.segments.add(f as usize));
                let n = arch::load(a.segments.add(f as usize + 1)) - start;
                let j = e as u32 - start;
                let has_before = j > 0 && arch::load(last.add(e as usize - 1)) > start;
                let is_last = arch::load(last.add((start + n - 1) as usize)) == e as u32 + 1;
                let mut offer = |order: u32| {
                    if let Some(c) = a.interleaved_candidate(f, k, order, last, &context) {
                        key_max = key_max.max(key(c.loss_chg, order));
                    }
                };
                if arch::load(a.forward.add(f as usize)) != 0 {
                    if has_before {
                        offer(j);
                    }
                    if is_last {
                        offer(n);
                    }
                }
                if has_before {
                    offer(2 * n - j);
                }
                if !has_before {
                    offer(2 * n + 1);
                }
            }
        }
    }
    reduce_runs(active, s, key_max, |s, key| {
        // SAFETY: `s` a feature; a key per (feature, slot).
        unsafe { arch::atomic_max_u64_gpu(best.add((s as u64 * a.slots + k as u64) as usize), key) };
    });
}

/// Each lane's key reduced over its warp's run of equal `s` (segments do not decrease across the
/// lanes: a lane takes the larger key of the lane `d` above when that lane is in its run); the
/// run's first lane calls `flush(s, key)` when the key is not 0.
#[inline(always)]
fn reduce_runs(active: bool, s: u32, mut k: u64, flush: impl FnOnce(u32, u64)) {
    let lane = arch::lane_id();
    let mut d = 1;
    while d < arch::WARP_SIZE {
        let (other_s, other_k) =
            (arch::shfl_down_sync(arch::FULL_MASK, s, d), arch::shfl_down_sync(arch::FULL_MASK, k, d));
        if lane + d < arch::WARP_SIZE && other_s == s {
            k = k.max(other_k);
        }
        d *= 2;
    }
    let previous = arch::shfl_up_sync(arch::FULL_MASK, s, 1);
    if active && k != 0 && (lane == 0 || previous != s) {
        flush(s, k);
    }
}

/// `splits[f * slots + k]`: node `k`'s best split of each feature, from its key (a thread a
/// feature; after [`interleaved_candidates_kernel`] of `k`'s pass).
///
/// # Safety
/// As [`interleaved_candidates_kernel`]; `splits` holds a split per (feature, slot).
pub unsafe fn materialize_kernel(a: &LevelArgs, k: u32, last: *const u32, best: *const u64, splits: *mut DeviceSplit) {
    let f = global_thread();
    if f >= a.features {
        return;
    }
    // SAFETY: `f` a feature; a key's number is a candidate of node `k` in it.
    unsafe {
        let context = arch::load(a.context);
        let at = (f * a.slots + k as u64) as usize;
        let key = arch::load(best.add(at));
        let split = if key == 0 { None } else { a.interleaved_candidate(f as u32, k, unkey(key).1, last, &context) };
        arch::store(splits.add(at), DeviceSplit::from(split));
    }
}

/// `out[slot]`: each node's best split over its features from the materialized ones (increasing;
/// a later feature only with a strictly larger change), if valid. A thread a slot.
///
/// # Safety
/// `splits` holds a split per (feature, slot); `out` a split per slot.
pub unsafe fn pick_kernel(a: &LevelArgs, splits: *const DeviceSplit, out: *mut DeviceSplit) {
    let slot = global_thread();
    if slot >= a.slots {
        return;
    }
    // SAFETY: `slot < slots`; a split per (feature, slot).
    unsafe {
        let context = arch::load(a.context);
        let mut chosen: Option<Split<GradientPair<i64>>> = None;
        for f in 0..a.features {
            if arch::load(a.uses.add((slot * a.features + f) as usize)) == 0 {
                continue;
            }
            if let Some(s) = arch::load(splits.add((f * a.slots + slot) as usize)).split() {
                if crate::split::replaces(&s, chosen.as_ref()) {
                    chosen = Some(s);
                }
            }
        }
        let split = chosen.filter(|b| crate::split::is_valid(b, &context.params));
        arch::store(out.add(slot as usize), DeviceSplit::from(split));
    }
}

/// [`split_positions_kernel`] in the interleaved layout: an entry's slot is `targets[e]`.
///
/// # Safety
/// As [`split_positions_kernel`]; `targets` the level's slots of its `len` entries.
pub unsafe fn interleaved_positions_kernel(
    a: &LevelArgs,
    targets: *const u32,
    positions: *mut u32,
    expansion_of: *const i32,
    expansions: *const ExactExpansion,
) {
    let e = global_thread();
    if e >= a.len {
        return;
    }
    // SAFETY: `e < len`; a slot's expansion index is valid.
    unsafe {
        let slot = arch::load(targets.add(e as usize));
        if slot as u64 >= a.slots {
            return;
        }
        let i = arch::load(expansion_of.add(slot as usize));
        if i < 0 {
            return;
        }
        let x = arch::load(expansions.add(i as usize));
        if x.feature == segment_of(a.segments, a.features as u32, e as u32) {
            let child = if arch::load(a.values.add(e as usize)) < x.threshold { x.left } else { x.right };
            arch::store(positions.add(arch::load(a.rows.add(e as usize)) as usize), child);
        }
    }
}

/// `packed[e]`: entry `e`'s row above its value's bits (the sort's values). A thread an entry.
///
/// # Safety
/// `packed` holds `len` entries.
pub unsafe fn pack_kernel(a: &LevelArgs, packed: *mut u64) {
    let e = global_thread();
    if e < a.len {
        // SAFETY: `e < len`.
        unsafe {
            let (row, value) = (arch::load(a.rows.add(e as usize)), arch::load(a.values.add(e as usize)));
            arch::store(packed.add(e as usize), ((row as u64) << 32) | value.to_bits() as u64);
        }
    }
}

/// `counts[f * new_slots + t]` += 1 for each entry of feature `f` whose (sorted) key `t` is a next
/// slot. A thread an entry; `counts` starts zeroed.
///
/// # Safety
/// `keys` holds `len` entries; `counts` `features * new_slots`.
pub unsafe fn count_kernel(a: &LevelArgs, keys: *const u32, new_slots: u64, counts: *mut u32) {
    let e = global_thread();
    if e >= a.len {
        return;
    }
    // SAFETY: `e < len`; the key is below `new_slots` where counted.
    unsafe {
        let t = arch::load(keys.add(e as usize));
        if (t as u64) < new_slots {
            let f = segment_of(a.segments, a.features as u32, e as u32) as u64;
            arch::atomic_add_u32_gpu(counts.add((f * new_slots + t as u64) as usize), 1);
        }
    }
}

/// The sorting layout from the interleaved one sorted stably by next slot within each feature
/// (`keys`, `packed`): entry `e` of feature `f`, when its key is a next slot, goes to the feature's
/// first next segment plus its place in the feature (the slots come in order, the stopped rows
/// last). A thread an entry.
///
/// # Safety
/// `keys`, `packed` hold `len` sorted entries; `new_segments` the next layout's offsets; the
/// outputs hold its entries.
pub unsafe fn unpack_kernel(
    a: &LevelArgs,
    keys: *const u32,
    packed: *const u64,
    new_segments: *const u32,
    new_slots: u64,
    values_out: *mut f32,
    rows_out: *mut u32,
) {
    let e = global_thread();
    if e >= a.len {
        return;
    }
    // SAFETY: `e < len`; the destination lies in the feature's next segments.
    unsafe {
        if arch::load(keys.add(e as usize)) as u64 >= new_slots {
            return;
        }
        let f = segment_of(a.segments, a.features as u32, e as u32) as u64;
        let start = arch::load(a.segments.add(f as usize));
        let dest = (arch::load(new_segments.add((f * new_slots) as usize)) + (e as u32 - start)) as usize;
        let p = arch::load(packed.add(e as usize));
        arch::store(values_out.add(dest), f32::from_bits(p as u32));
        arch::store(rows_out.add(dest), (p >> 32) as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midpoint_stays_between_the_values() {
        assert_eq!(midpoint(1.0, 2.0), 1.5);
        assert_eq!(midpoint(-3.0, -1.0), -2.0);
        let lo = 1.0f32;
        let hi = f32::from_bits(lo.to_bits() + 1);
        let mid = midpoint(lo, hi);
        assert!(lo < mid && mid <= hi, "adjacent floats: {mid}");
        assert_eq!(midpoint(f32::MAX / 1.5, f32::MAX), f32::MAX, "an overflowing sum takes hi");
    }

    #[test]
    fn end_thresholds_lie_past_every_value() {
        for last in [-1e30f32, -2.5, -0.0, 0.0, 1e-40, 3.0, 1e30] {
            assert!(past(last, false) > last, "{last}");
            assert!(past(last, true) < last, "{last}");
        }
    }

    #[test]
    fn an_enumeration_finds_the_first_best_boundary_in_each_direction() {
        let p =
            SplitParams { eta: 1.0, gamma: 0.0, min_child_weight: 0.5, max_delta_step: 0.0, lambda: 1.0, alpha: 0.0 };
        let values = [1.0f32, 2.0, 2.0, 3.0];
        let floats = [(-1.0f32, 1.0f32), (-1.0, 1.0), (1.0, 1.0), (1.0, 1.0)].map(|(g, h)| GradientPair::new(g, h));
        let q = GradientQuantiser::new(&floats);
        let grads = floats.map(|g| q.to_fixed(g));
        let node = grads.iter().fold(<GradientPair<i64> as GradientSum>::ZERO, |a, &g| GradientSum::add(a, g));
        let parent_gain = crate::split::calc_gain(&p, 0.0, 4.0);
        // Two boundaries, 1 | 2 2 3 and 1 2 2 | 3: gradients -1 | 1 with hessians 1 | 3, then
        // 3 | 1, both 1/2 + 1/4 = 0.75. The first found wins: 1.5 forward, 2.5 backward.
        let parent = Parent::unconstrained(parent_gain);
        let forward = NodeFeature { node, parent, feature: 3, missing_left: false, params: &p, quantiser: &q };
        let mut e = Enumeration::START;
        for (v, g) in values.iter().zip(grads) {
            e.take(*v, g, &forward);
        }
        e.finish(&forward);
        let best = e.best.unwrap();
        assert_eq!((best.threshold, best.default_left, best.feature, best.loss_chg), (1.5, false, 3, 0.75));
        assert_eq!(best.left, grads[0]);
        let backward = NodeFeature { missing_left: true, ..forward };
        let mut b = Enumeration::START;
        for (v, g) in values.iter().zip(grads).rev() {
            b.take(*v, g, &backward);
        }
        b.finish(&backward);
        let best = b.best.unwrap();
        assert_eq!((best.threshold, best.default_left, best.loss_chg), (2.5, true, 0.75));
        assert_eq!(best.right, grads[3]);
    }

    #[test]
    fn an_end_candidate_splits_missing_from_present() {
        let p =
            SplitParams { eta: 1.0, gamma: 0.0, min_child_weight: 0.0, max_delta_step: 0.0, lambda: 1.0, alpha: 0.0 };
        let floats = [GradientPair::new(-2.0f32, 1.0), GradientPair::new(3.0, 1.0)];
        let q = GradientQuantiser::new(&floats);
        let (present, missing) = (q.to_fixed(floats[0]), q.to_fixed(floats[1]));
        let node = GradientSum::add(present, missing);
        let parent_gain = crate::split::calc_gain(&p, 1.0, 2.0);
        // One present value (5.0): no boundary, only the end candidate.
        let parent = Parent::unconstrained(parent_gain);
        let n = NodeFeature { node, parent, feature: 0, missing_left: false, params: &p, quantiser: &q };
        let mut e = Enumeration::START;
        e.take(5.0, present, &n);
        e.finish(&n);
        let best = e.best.unwrap();
        assert_eq!((best.left, best.right, best.default_left), (present, missing, false));
        assert!(best.threshold > 5.0);
        assert_eq!(best.loss_chg, 2.0 + 4.5 - parent_gain);
    }
}
