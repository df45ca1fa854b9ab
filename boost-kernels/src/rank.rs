//! LambdaMART's gradients of one query group (`rank:pairwise`, `rank:ndcg`, `rank:map`), written
//! once: `boost`'s objective calls [`group_gradients`] for each group on the CPU (formulas and
//! XGBoost's conventions in its `objective/ranking.rs`), and [`lambdarank_kernel`] runs it on the
//! device, a thread per group, over the group's documents ranked by our segmented radix sort
//! ([`descending_key`]). Both read the group through [`QueryGroup`], so both compute the same pairs
//! in the same order and accumulate the same `f32` sums.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::objective::sigmoid;
use crate::order::ascending_key;

/// Largest relevance degree with the exponential gain (`2^31 - 1` still fits `u32`).
pub const MAX_REL: u32 = 31;

/// The parameters of a LambdaMART objective as the device takes them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LambdaRankParams {
    /// [`LambdaRankParams::PAIRWISE`], [`LambdaRankParams::NDCG`] or [`LambdaRankParams::MAP`].
    pub kind: u32,
    /// 1: `lambdarank_pair_method = mean` (random partners), 0: `topk`.
    pub mean: u32,
    /// `lambdarank_num_pair_per_sample` (resolved to its default when not set).
    pub num_pair: u32,
    /// `lambdarank_normalization`.
    pub normalization: u32,
    /// `lambdarank_score_normalization`.
    pub score_normalization: u32,
    /// `ndcg_exp_gain`.
    pub exp_gain: u32,
}

impl LambdaRankParams {
    pub const PAIRWISE: u32 = 0;
    pub const NDCG: u32 = 1;
    pub const MAP: u32 = 2;
}

/// The DCG gain of label `y`: `2^y - 1` with the exponential gain (the label converted to an
/// unsigned relevance degree first, truncating, as XGBoost; capped at [`MAX_REL`]), else `y`.
#[inline]
pub fn ndcg_gain(y: f32, exp_gain: bool) -> f64 {
    if exp_gain {
        let rel = y as u32;
        let rel = if rel < MAX_REL { rel } else { MAX_REL };
        ((1u32 << rel) - 1) as f64
    } else {
        y as f64
    }
}

/// The DCG discount of the document ranked `i`-th (from 0): `1 / log2(i + 2)`.
#[inline]
pub fn ndcg_discount(i: usize) -> f64 {
    1.0 / libm::log2(i as f64 + 2.0)
}

/// `1 / IDCG` of a group of `n` documents whose labels in descending order are `sorted_label(i)`,
/// over its first `k` positions (0 when the IDCG is 0).
#[inline]
pub fn inv_idcg(n: usize, k: usize, sorted_label: impl Fn(usize) -> f32, exp_gain: bool) -> f64 {
    let mut idcg = 0.0f64;
    for i in 0..if k < n { k } else { n } {
        idcg += ndcg_discount(i) * ndcg_gain(sorted_label(i), exp_gain);
    }
    if idcg == 0.0 {
        0.0
    } else {
        1.0 / idcg
    }
}

/// The order the documents of a group are ranked in, as `u32` sort keys (ascending): margins
/// descending, `-0.0` equal to `+0.0`, NaN after every number; a stable sort keeps ties in
/// document order (XGBoost's `ArgSort` with `std::greater`).
#[inline]
pub fn descending_key(x: f32) -> u32 {
    if x.is_nan() {
        u32::MAX
    } else {
        !ascending_key(x)
    }
}

/// One query group as [`group_gradients`] reads and writes it. Documents are numbered from 0 in
/// the group's input order; positions are ranks (0: the highest margin).
pub trait QueryGroup {
    /// Documents in the group.
    fn documents(&self) -> usize;
    fn margin(&self, doc: usize) -> f32;
    fn label(&self, doc: usize) -> f32;
    /// The document ranked `pos`-th.
    fn ranked(&self, pos: usize) -> usize;
    /// The `i`-th position in the order of the ranked documents' labels (descending, stable over
    /// positions). Read by `mean` only.
    fn by_label(&self, i: usize) -> usize;
    /// [`ndcg_discount`] of position `pos` (from a table: it is read twice a pair).
    fn discount(&self, pos: usize) -> f64;
    /// `rank:map`'s statistics at position `pos`: the relevant documents up to it and
    /// `Σ_{i <= pos} y_i / (i + 1)`.
    fn map_stats(&self, pos: usize) -> (f64, f64);
    fn set_map_stats(&mut self, pos: usize, hits: f64, sum: f64);
    fn gradient(&self, doc: usize) -> GradientPair<f32>;
    fn set_gradient(&mut self, doc: usize, gradient: GradientPair<f32>);
}

/// What every pair of a group's round shares.
struct Pairs<'a> {
    params: &'a LambdaRankParams,
    inv_idcg: f64,
    /// `lambdarank_score_normalization`, unless every score ties.
    norm_by_diff: bool,
}

/// One pair's lambda and hessian, and which of its two positions holds the higher label.
#[derive(Clone, Copy)]
struct PairTerm {
    /// 1 when the pair's first position holds its higher-labelled document.
    first_high: u32,
    lambda: f32,
    hessian: f32,
}

impl PairTerm {
    /// `g`, the gradient of the document at the pair's first (`first`) or second position, with
    /// the pair added: `+λ` for the higher-labelled document, `-λ` for the other, the hessian to both.
    #[inline(always)]
    fn add_to(self, g: GradientPair<f32>, first: bool) -> GradientPair<f32> {
        let high = first == (self.first_high != 0);
        GradientPair::new(if high { g.grad + self.lambda } else { g.grad - self.lambda }, g.hess + self.hessian)
    }

    /// The pair's term of the normaliser's sum: `-2 λ`.
    #[inline(always)]
    fn sum_term(self) -> f64 {
        -2.0 * self.lambda as f64
    }
}

impl<'a> Pairs<'a> {
    /// The pairs of `group`, whose documents are ranked already.
    fn new(params: &'a LambdaRankParams, inv_idcg: f64, group: &impl QueryGroup) -> Self {
        let best = group.margin(group.ranked(0));
        let worst = group.margin(group.ranked(group.documents() - 1));
        Pairs { params, inv_idcg, norm_by_diff: params.score_normalization != 0 && best != worst }
    }

    /// `|ΔZ|` of swapping the documents at positions `rank_high` (label `y_high`) and `rank_low`.
    fn delta(&self, group: &impl QueryGroup, y_high: f32, y_low: f32, rank_high: usize, rank_low: usize) -> f64 {
        match self.params.kind {
            LambdaRankParams::NDCG => {
                let exp_gain = self.params.exp_gain != 0;
                let (gh, gl) = (ndcg_gain(y_high, exp_gain), ndcg_gain(y_low, exp_gain));
                let (dh, dl) = (group.discount(rank_high), group.discount(rank_low));
                let original = gh * dh + gl * dl;
                let changed = gl * dh + gh * dl;
                (original - changed) * self.inv_idcg
            }
            LambdaRankParams::MAP => {
                // The change of average precision when the documents at the two positions swap.
                let (mut rh, mut rl, mut yh, mut yl) = (rank_high, rank_low, y_high, y_low);
                if rh > rl {
                    core::mem::swap(&mut rh, &mut rl);
                    core::mem::swap(&mut yh, &mut yl);
                }
                let total = group.map_stats(group.documents() - 1).0;
                let (r_h, r_l) = (rh as f64 + 1.0, rl as f64 + 1.0);
                let ((n, acc_h), (m, _)) = (group.map_stats(rh), group.map_stats(rl));
                let b = group.map_stats(rl - 1).1 - acc_h;
                if yh < yl {
                    (m / r_l - (n + 1.0) / r_h - b) / total
                } else {
                    (n / r_h - m / r_l + b) / total
                }
            }
            _ => 1.0,
        }
    }

    /// The pair of positions `i` and `j`, or `None` when their labels tie (no pair).
    #[inline(always)]
    fn term(&self, group: &impl QueryGroup, i: usize, j: usize) -> Option<PairTerm> {
        let (mut rank_high, mut rank_low) = (i, j);
        let (yi, yj) = (group.label(group.ranked(i)), group.label(group.ranked(j)));
        if yi == yj {
            return None;
        }
        if yi < yj {
            core::mem::swap(&mut rank_high, &mut rank_low);
        }
        let (high, low) = (group.ranked(rank_high), group.ranked(rank_low));
        let diff = group.margin(high) - group.margin(low);
        let sigmoid = sigmoid(diff) as f64;
        let mut delta = libm::fabs(self.delta(group, group.label(high), group.label(low), rank_high, rank_low));
        if self.norm_by_diff {
            delta /= libm::fabs(diff as f64) + 0.01;
        }
        let lambda = ((sigmoid - 1.0) * delta) as f32;
        let hessian = (libm::fmax(sigmoid * (1.0 - sigmoid), 1e-16) * delta * 2.0) as f32;
        Some(PairTerm { first_high: (rank_high == i) as u32, lambda, hessian })
    }

    /// The pair of positions `i` and `j` added to both documents' gradients; its term of the
    /// normaliser's sum, or `None` when their labels tie (no pair).
    fn apply(&self, group: &mut impl QueryGroup, i: usize, j: usize) -> Option<f64> {
        let term = self.term(group, i, j)?;
        let (a, b) = (group.ranked(i), group.ranked(j));
        group.set_gradient(a, term.add_to(group.gradient(a), true));
        group.set_gradient(b, term.add_to(group.gradient(b), false));
        Some(term.sum_term())
    }
}

/// `rank:map`'s statistics of every position of a ranked group ([`QueryGroup::map_stats`]).
fn set_map_stats(group: &mut impl QueryGroup) {
    let (mut hits, mut sum) = (0.0f64, 0.0f64);
    for pos in 0..group.documents() {
        let y = group.label(group.ranked(pos)) as f64;
        hits += y;
        sum += y / (pos as f64 + 1.0);
        group.set_map_stats(pos, hits, sum);
    }
}

/// The factor of `lambdarank_normalization` for a group whose pairs' `-2 λ` sum to `sum_lambda`.
fn normaliser(params: &LambdaRankParams, sum_lambda: f64) -> f64 {
    if params.normalization == 0 {
        1.0
    } else if params.mean != 0 {
        1.0 / params.num_pair as f64
    } else if sum_lambda > 0.0 {
        libm::log2(1.0 + sum_lambda) / sum_lambda
    } else {
        1.0
    }
}

/// A document's accumulated gradient, normalised by `norm`, times its group's `weight` and the
/// dataset's `weight_norm`.
#[inline(always)]
fn finish_gradient(g: GradientPair<f32>, norm: f64, weight: f32, weight_norm: f64) -> GradientPair<f32> {
    let g =
        if norm != 1.0 { GradientPair::new((g.grad as f64 * norm) as f32, (g.hess as f64 * norm) as f32) } else { g };
    GradientPair::new(((g.grad * weight) as f64 * weight_norm) as f32, ((g.hess * weight) as f64 * weight_norm) as f32)
}

/// A query group's gradients, written into the group: every pair's lambda accumulated document by
/// document (in `f32`, pair by pair), normalised per `lambdarank_normalization`, then times the
/// group's weight `weight` and the dataset's `weight_norm` (`groups / Σ weights`). `seed` seeds
/// `mean`'s partner draws; `inv_idcg` is [`inv_idcg`] of the group (read by `rank:ndcg`).
pub fn group_gradients(
    params: &LambdaRankParams,
    seed: u32,
    inv_idcg: f64,
    weight: f32,
    weight_norm: f64,
    group: &mut impl QueryGroup,
) {
    let cnt = group.documents();
    for doc in 0..cnt {
        group.set_gradient(doc, GradientPair::new(0.0, 0.0));
    }
    if cnt == 0 {
        return;
    }
    if params.kind == LambdaRankParams::MAP {
        set_map_stats(group);
    }
    let pairs = Pairs::new(params, inv_idcg, group);
    let k = params.num_pair as usize;
    let mut sum_lambda = 0.0f64;
    if params.mean == 0 {
        for i in 0..if k < cnt { k } else { cnt } {
            for j in i + 1..cnt {
                if let Some(l) = pairs.apply(group, i, j) {
                    sum_lambda += l;
                }
            }
        }
    } else {
        // Documents of one label form a bucket of the label order; each is paired with `k` random
        // documents outside it.
        let mut rng = MinStd::new(seed);
        let label_of = |group: &_, i: usize| label_in_label_order(group, i);
        let mut i = 0;
        while i < cnt {
            let y = label_of(&*group, i);
            let mut j = i + 1;
            while j < cnt && label_of(&*group, j) == y {
                j += 1;
            }
            let (n_left, n_right) = (i, cnt - j);
            if n_left + n_right > 0 {
                for _ in 0..k {
                    for doc in i..j {
                        let mut r = rng.uniform((n_left + n_right) as u64) as usize;
                        if r >= n_left {
                            r = r - i + j;
                        }
                        let (a, b) = (group.by_label(doc), group.by_label(r));
                        if let Some(l) = pairs.apply(group, a, b) {
                            sum_lambda += l;
                        }
                    }
                }
            }
            i = j;
        }
    }
    let norm = normaliser(params, sum_lambda);
    for doc in 0..cnt {
        group.set_gradient(doc, finish_gradient(group.gradient(doc), norm, weight, weight_norm));
    }
}

/// The label of the `i`-th document in label order.
fn label_in_label_order(group: &impl QueryGroup, i: usize) -> f32 {
    group.label(group.ranked(group.by_label(i)))
}

/// `std::minstd_rand` and libstdc++'s `uniform_int_distribution` on it, which is what XGBoost's CPU
/// `mean` pair sampling draws from.
pub struct MinStd(u64);

impl MinStd {
    const MODULUS: u64 = 2_147_483_647;

    pub fn new(seed: u32) -> Self {
        let s = seed as u64 % Self::MODULUS;
        MinStd(if s == 0 { 1 } else { s })
    }

    pub fn draw(&mut self) -> u64 {
        self.0 = self.0 * 48_271 % Self::MODULUS;
        self.0
    }

    /// Uniform in `[0, n)`, `n >= 1`: libstdc++ rejects draws at or above the largest multiple of
    /// `n` within the generator's range `[1, 2^31 - 2]` and divides (it never takes a modulo).
    pub fn uniform(&mut self, n: u64) -> u64 {
        const RANGE: u64 = MinStd::MODULUS - 3; // max() - min()
        let n = if n == 0 { 1 } else { n };
        let urange = n - 1;
        if urange >= RANGE {
            // Lists of 2^31 documents and more do not fit in memory; keep the draw in range.
            return (self.draw() - 1) % n;
        }
        let uerange = urange + 1;
        let scaling = RANGE / uerange;
        let past = uerange * scaling;
        loop {
            let r = self.draw() - 1;
            if r < past {
                return r / scaling;
            }
        }
    }
}

/// The documents of one group on the device: rows `begin..begin + len` of the row-wise buffers.
struct DeviceGroup {
    begin: usize,
    len: usize,
    margins: *const f32,
    labels: *const f32,
    /// Rows by rank within each group (the segmented sort of [`descending_key`]s of the margins).
    ranked: *const u32,
    /// Positions (as `begin + position`) in label order within each group; null unless `mean`.
    by_label: *const u32,
    /// Two per row; null unless `rank:map`.
    map_stats: *mut f64,
    /// [`ndcg_discount`] of each position up to the largest group's size.
    discount: *const f64,
    out: *mut GradientPair<f32>,
}

// `lambdarank_kernel`'s contract makes every index below `len` a row or position of the group
// within the buffers.
impl QueryGroup for DeviceGroup {
    fn documents(&self) -> usize {
        self.len
    }
    fn margin(&self, doc: usize) -> f32 {
        // SAFETY: an index of the group (the kernel's contract).
        unsafe { arch::load(self.margins.add(self.begin + doc)) }
    }
    fn label(&self, doc: usize) -> f32 {
        // SAFETY: an index of the group (the kernel's contract).
        unsafe { arch::load(self.labels.add(self.begin + doc)) }
    }
    fn ranked(&self, pos: usize) -> usize {
        // SAFETY: an index of the group (the kernel's contract).
        unsafe { arch::load(self.ranked.add(self.begin + pos)) as usize - self.begin }
    }
    fn by_label(&self, i: usize) -> usize {
        // SAFETY: an index of the group (the kernel's contract).
        unsafe { arch::load(self.by_label.add(self.begin + i)) as usize - self.begin }
    }
    fn discount(&self, pos: usize) -> f64 {
        // SAFETY: an index of the group (the kernel's contract).
        unsafe { arch::load(self.discount.add(pos)) }
    }
    fn map_stats(&self, pos: usize) -> (f64, f64) {
        let at = 2 * (self.begin + pos);
        // SAFETY: an index of the group (the kernel's contract).
        unsafe { (arch::load(self.map_stats.add(at)), arch::load(self.map_stats.add(at + 1))) }
    }
    fn set_map_stats(&mut self, pos: usize, hits: f64, sum: f64) {
        let at = 2 * (self.begin + pos);
        // SAFETY: an index of the group (the kernel's contract).
        unsafe {
            arch::store(self.map_stats.add(at), hits);
            arch::store(self.map_stats.add(at + 1), sum);
        }
    }
    fn gradient(&self, doc: usize) -> GradientPair<f32> {
        // SAFETY: an index of the group (the kernel's contract).
        unsafe { arch::load(self.out.add(self.begin + doc)) }
    }
    fn set_gradient(&mut self, doc: usize, gradient: GradientPair<f32>) {
        // SAFETY: an index of the group (the kernel's contract).
        unsafe { arch::store(self.out.add(self.begin + doc), gradient) }
    }
}

/// The rows of a ranking dataset as [`lambdarank_kernel`] reads them.
#[derive(Clone, Copy)]
pub struct RankRows {
    /// `groups + 1` row offsets.
    pub group_ptr: *const u32,
    pub groups: u64,
    pub margins: *const f32,
    pub labels: *const f32,
    /// A weight per group, or null.
    pub weights: *const f32,
    /// [`inv_idcg`] per group (read by `rank:ndcg`).
    pub inv_idcg: *const f64,
    /// [`ndcg_discount`] of each position up to the largest group's size (read by `rank:ndcg`).
    pub discount: *const f64,
}

/// `out[row]`: every row's gradient pair, [`group_gradients`] of each group with seed
/// `seed_base + group` (wrapping) and the group's weight (1 when `rows.weights` is null) times
/// `weight_norm`. `ranked` holds each group's rows by rank, `by_label` (read by `mean`) each group's
/// positions `begin + position` in label order, `map_stats` (read and written by `rank:map`) two
/// values a row. One thread per group.
///
/// # Safety
/// `rows.group_ptr` holds `groups + 1` non-decreasing offsets; the row-wise buffers (`margins`,
/// `labels`, `ranked`, `out`, `by_label` and `map_stats` when read) cover the last offset;
/// `ranked` and `by_label` map each group's positions to its own rows and positions.
#[allow(clippy::too_many_arguments)]
pub unsafe fn lambdarank_kernel(
    params: *const LambdaRankParams,
    rows: RankRows,
    ranked: *const u32,
    by_label: *const u32,
    map_stats: *mut f64,
    seed_base: u32,
    weight_norm: f64,
    out: *mut GradientPair<f32>,
) {
    let g = global_thread();
    if g >= rows.groups {
        return;
    }
    let g = g as usize;
    // SAFETY: `g < groups`; the contract covers the rest.
    unsafe {
        let params = arch::load(params);
        let begin = arch::load(rows.group_ptr.add(g)) as usize;
        let end = arch::load(rows.group_ptr.add(g + 1)) as usize;
        let weight = if rows.weights.is_null() { 1.0 } else { arch::load(rows.weights.add(g)) };
        let inv_idcg = arch::load(rows.inv_idcg.add(g));
        let mut group = DeviceGroup {
            begin,
            len: end - begin,
            margins: rows.margins,
            labels: rows.labels,
            ranked,
            by_label,
            map_stats,
            discount: rows.discount,
            out,
        };
        let seed = seed_base.wrapping_add(g as u32);
        group_gradients(&params, seed, inv_idcg, weight, weight_norm, &mut group);
    }
}

/// [`lambdarank_kernel`] for `topk` pairs (`params.mean == 0`), one warp per group: the same
/// gradients, bit for bit. Lane `l` owns the documents at positions `l, l + 32, ...` (it alone reads
/// and writes their gradients). For each of the first `k` positions `i`, the lanes compute the pairs
/// `(i, j)` of 32 positions `j` at once and add each to their own document `j`; every lane then
/// adds the present pairs, in the order of `j`, to position `i`'s gradient and to the normaliser's
/// sum, which is the order [`group_gradients`] adds them in, pair by pair.
///
/// # Safety
/// As [`lambdarank_kernel`] (`by_label` is not read); the grid has a warp per group.
pub unsafe fn lambdarank_topk_kernel(
    params: *const LambdaRankParams,
    rows: RankRows,
    ranked: *const u32,
    map_stats: *mut f64,
    weight_norm: f64,
    out: *mut GradientPair<f32>,
) {
    let g = global_thread() / arch::WARP_SIZE as u64;
    if g >= rows.groups {
        return;
    }
    let (g, lane) = (g as usize, arch::lane_id() as usize);
    let lanes = arch::WARP_SIZE as usize;
    // SAFETY: `g < groups`; the contract covers the rest.
    unsafe {
        let params = arch::load(params);
        let begin = arch::load(rows.group_ptr.add(g)) as usize;
        let end = arch::load(rows.group_ptr.add(g + 1)) as usize;
        let weight = if rows.weights.is_null() { 1.0 } else { arch::load(rows.weights.add(g)) };
        let inv_idcg = arch::load(rows.inv_idcg.add(g));
        let mut group = DeviceGroup {
            begin,
            len: end - begin,
            margins: rows.margins,
            labels: rows.labels,
            ranked,
            by_label: core::ptr::null(),
            map_stats,
            discount: rows.discount,
            out,
        };
        let cnt = group.len;
        if cnt == 0 {
            return;
        }
        let mut p = lane;
        while p < cnt {
            group.set_gradient(group.ranked(p), GradientPair::new(0.0, 0.0));
            p += lanes;
        }
        if params.kind == LambdaRankParams::MAP && lane == 0 {
            set_map_stats(&mut group);
        }
        // Lane 0's statistics, for every lane.
        arch::sync_warp(arch::FULL_MASK);
        let pairs = Pairs::new(&params, inv_idcg, &group);
        let k = params.num_pair as usize;
        let mut sum_lambda = 0.0f64;
        for i in 0..if k < cnt { k } else { cnt } {
            let owner = i % lanes;
            let doc_i = group.ranked(i);
            let own = if lane == owner { group.gradient(doc_i) } else { GradientPair::new(0.0, 0.0) };
            let mut gradient_i = arch::shfl_idx_sync(arch::FULL_MASK, own, owner as u32);
            // Chunks of 32 positions, lane `l` at position `base + l`: every lane's own document.
            let mut base = (i + 1) / lanes * lanes;
            while base < cnt {
                let j = base + lane;
                let term = if j > i && j < cnt { pairs.term(&group, i, j) } else { None };
                if let Some(term) = term {
                    let doc_j = group.ranked(j);
                    group.set_gradient(doc_j, term.add_to(group.gradient(doc_j), false));
                }
                // The terms travel as two ballots and two word shuffles a pair.
                let mut present = arch::ballot_sync(arch::FULL_MASK, term.is_some());
                let first_high = arch::ballot_sync(arch::FULL_MASK, term.is_some_and(|t| t.first_high != 0));
                let (lambda, hessian) = term.map_or((0.0, 0.0), |t| (t.lambda, t.hessian));
                while present != 0 {
                    let from = present.trailing_zeros();
                    present &= present - 1;
                    let term = PairTerm {
                        first_high: (first_high >> from) & 1,
                        lambda: arch::shfl_idx_sync(arch::FULL_MASK, lambda, from),
                        hessian: arch::shfl_idx_sync(arch::FULL_MASK, hessian, from),
                    };
                    gradient_i = term.add_to(gradient_i, true);
                    sum_lambda += term.sum_term();
                }
                base += lanes;
            }
            if lane == owner {
                group.set_gradient(doc_i, gradient_i);
            }
        }
        let norm = normaliser(&params, sum_lambda);
        let mut p = lane;
        while p < cnt {
            let doc = group.ranked(p);
            group.set_gradient(doc, finish_gradient(group.gradient(doc), norm, weight, weight_norm));
            p += lanes;
        }
    }
}

/// `keys[p]`: [`descending_key`] of `values[rows[p]]`, or of `values[p]` when `rows` is null. One
/// thread per position.
///
/// # Safety
/// `keys` (and `rows` when not null) hold `n` values, `values` every index read.
pub unsafe fn descending_keys_kernel(values: *const f32, rows: *const u32, n: u64, keys: *mut u32) {
    let p = global_thread();
    if p >= n {
        return;
    }
    let p = p as usize;
    // SAFETY: `p < n`; the contract covers the index read.
    unsafe {
        let i = if rows.is_null() { p } else { arch::load(rows.add(p)) as usize };
        arch::store(keys.add(p), descending_key(arch::load(values.add(i))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descending_keys_rank_numbers_first_and_nan_last() {
        let xs = [f32::INFINITY, 2.0, 0.0, -0.0, -1e-30, -3.0, f32::NEG_INFINITY, f32::NAN];
        for pair in xs.windows(2) {
            let (a, b) = (descending_key(pair[0]), descending_key(pair[1]));
            assert!(a < b || (pair[0] == 0.0 && pair[1] == 0.0 && a == b), "{} before {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn gains_discounts_and_ideal_dcg() {
        assert_eq!(ndcg_gain(3.0, true), 7.0);
        assert_eq!(ndcg_gain(40.0, true), ((1u64 << 31) - 1) as f64);
        assert_eq!(ndcg_gain(2.5, false), 2.5);
        assert_eq!(ndcg_discount(0), 1.0);
        assert_eq!(ndcg_discount(2), 0.5);
        let sorted = [3.0f32, 1.0, 0.0];
        let idcg = 7.0 + 1.0 / libm::log2(3.0);
        assert_eq!(inv_idcg(3, 32, |i| sorted[i], true), 1.0 / idcg);
        assert_eq!(inv_idcg(3, 1, |i| sorted[i], true), 1.0 / 7.0);
        assert_eq!(inv_idcg(1, 32, |_| 0.0, true), 0.0);
    }
}
