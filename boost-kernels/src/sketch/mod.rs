//! XGBoost's weighted quantile summary (`WQSummary<float, float>`): the arithmetic of its exact
//! summary of a queue, `SetPrune` and `SetCombine` with `FixError`, written once. `boost`'s
//! quantile cuts run them on the host, a summary after another (`boost::quantile`); the device's
//! sketch runs the same functions a thread a queue, and its parallel merge computes each entry
//! with the same element formulas ([`SketchEntry::merged_with`], [`SketchEntry::merged_alone`],
//! [`prune_target`], [`prune_passes`], [`prune_picks_first`]), so both give the same summaries, bit
//! for bit, and the cuts of a column are XGBoost 3.4's CPU cuts on either.
//!
//! The ranks are `f32`, as XGBoost's: its pruning decisions depend on their rounding.
//!
//! The sequential functions read entries through `Fn(usize) -> SketchEntry` and write them through
//! `FnMut(SketchEntry)`, so that the host passes slices and `Vec::push` and a device thread passes
//! checked loads and stores.
//!
//! The device's sketch (`boost::gpu::sketch` launches it; see its module for the steps), a file a
//! step: `columns.rs` (each column's kept values of dense or CSR data, and the data checks),
//! `queues.rs` (the columns' queues, their entries and summaries), `merge.rs` (the summaries merged
//! a column at a time, as a tree or in order), over `block.rs` (a block's sorted runs, scans and
//! prune).

/// An entry of a summary: a value with bounds on the weight strictly below it (`rmin`), up to and
/// including it (`rmax`), and its own weight (`wmin`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SketchEntry {
    pub rmin: f32,
    pub rmax: f32,
    pub wmin: f32,
    pub value: f32,
}

impl SketchEntry {
    /// The smallest rank of a value above this one.
    #[inline]
    pub fn rmin_next(&self) -> f32 {
        self.rmin + self.wmin
    }

    /// The largest rank of a value below this one.
    #[inline]
    pub fn rmax_prev(&self) -> f32 {
        self.rmax - self.wmin
    }

    /// `SetCombine`'s entry for a value that both summaries hold.
    #[inline]
    pub fn merged_with(self, other: SketchEntry) -> SketchEntry {
        SketchEntry {
            rmin: self.rmin + other.rmin,
            rmax: self.rmax + other.rmax,
            wmin: self.wmin + other.wmin,
            value: self.value,
        }
    }

    /// `SetCombine`'s entry for a value that only this entry's summary holds: `below` is the other
    /// summary's last entry with a smaller value (`None`: it has none), `above` its first entry
    /// with a larger one (`None`: none; `other_rmax` is then its last entry's `rmax`).
    #[inline]
    pub fn merged_alone(self, below: Option<SketchEntry>, above: Option<SketchEntry>, other_rmax: f32) -> SketchEntry {
        let prev_rmin = below.map_or(0.0, |b| b.rmin_next());
        let next_rmax = above.map_or(other_rmax, |a| a.rmax_prev());
        SketchEntry { rmin: self.rmin + prev_rmin, rmax: self.rmax + next_rmax, wmin: self.wmin, value: self.value }
    }
}

/// `FixError`, one entry at a time in order: ranks made non-decreasing and `rmax` at least `rmin +
/// wmin`. Equivalently (what the device's merge computes with max-scans), an entry's fixed `rmin`
/// is the largest `rmin` up to it, and its fixed `rmax` the largest of `rmax` and fixed `rmin +
/// wmin` up to it.
#[derive(Clone, Copy, Debug, Default)]
pub struct FixError {
    prev_rmin: f32,
    prev_rmax: f32,
}

impl FixError {
    #[inline]
    pub fn fix(&mut self, mut e: SketchEntry) -> SketchEntry {
        if e.rmin < self.prev_rmin {
            e.rmin = self.prev_rmin;
        } else {
            self.prev_rmin = e.rmin;
        }
        if e.rmax < self.prev_rmax {
            e.rmax = self.prev_rmax;
        }
        let rmin_next = e.rmin_next();
        if e.rmax < rmin_next {
            e.rmax = rmin_next;
        }
        self.prev_rmax = e.rmax;
        e
    }
}

/// The exact summary of a queue already in stable order by value: `sorted(k)` is the `k`-th
/// (value, weight) of `len`; equal values become one entry, their weights added in order, and the
/// ranks are the running sum of the weights (in `f32`, in order). Pushes the entries in order.
pub fn summarize(len: usize, sorted: impl Fn(usize) -> (f32, f32), mut push: impl FnMut(SketchEntry)) {
    let mut wsum = 0f32;
    let mut i = 0;
    while i < len {
        let (value, mut w) = sorted(i);
        let mut j = i + 1;
        while j < len {
            let (next, weight) = sorted(j);
            if next != value {
                break;
            }
            w += weight;
            j += 1;
        }
        push(SketchEntry { rmin: wsum, rmax: wsum + w, wmin: w, value });
        wsum += w;
        i = j;
    }
}

/// Twice `SetPrune`'s `k`-th rank target of `n` steps from `begin` over `range`.
#[inline]
pub fn prune_target(k: usize, n: usize, begin: f32, range: f32) -> f32 {
    2.0 * ((k as f32 * range) / n as f32 + begin)
}

/// Whether `SetPrune`'s walk passes the entry before `next` for the target `dx2`.
#[inline]
pub fn prune_passes(dx2: f32, next: SketchEntry) -> bool {
    dx2 >= next.rmax + next.rmin
}

/// Whether `SetPrune` picks `at` rather than `next` (the entry after it) for the target `dx2`.
#[inline]
pub fn prune_picks_first(dx2: f32, at: SketchEntry, next: SketchEntry) -> bool {
    dx2 < at.rmin_next() + next.rmax_prev()
}

/// `SetPrune`: at most `max_size` of the `len` entries `src(i)`, the first and the last kept, the
/// others picked nearest to evenly spaced ranks between the first entry's `rmax` and the last's
/// `rmin`. Pushes the kept entries in order.
pub fn prune(len: usize, src: impl Fn(usize) -> SketchEntry, max_size: usize, mut push: impl FnMut(SketchEntry)) {
    if len <= max_size || max_size <= 1 {
        for i in 0..len.min(max_size) {
            push(src(i));
        }
        return;
    }
    let last = len - 1;
    let (first, end) = (src(0), src(last));
    let (begin, range) = (first.rmax, end.rmin - first.rmax);
    let n = max_size - 1;
    push(first);
    let (mut i, mut last_idx) = (1, 0);
    for k in 1..n {
        let dx2 = prune_target(k, n, begin, range);
        while i < last && prune_passes(dx2, src(i + 1)) {
            i += 1;
        }
        if i == last {
            break;
        }
        let pick = if prune_picks_first(dx2, src(i), src(i + 1)) { i } else { i + 1 };
        if pick != last_idx {
            push(src(pick));
            last_idx = pick;
        }
    }
    if last_idx != last {
        push(end);
    }
}

/// `SetCombine` and `FixError`: the merged summary of `a` (`a_len` entries) and `b`, pushed in
/// order.
pub fn combine(
    a_len: usize,
    a: impl Fn(usize) -> SketchEntry,
    b_len: usize,
    b: impl Fn(usize) -> SketchEntry,
    mut push: impl FnMut(SketchEntry),
) {
    if a_len == 0 || b_len == 0 {
        let (len, src): (usize, &dyn Fn(usize) -> SketchEntry) = if a_len == 0 { (b_len, &b) } else { (a_len, &a) };
        for i in 0..len {
            push(src(i));
        }
        return;
    }
    let (a_rmax, b_rmax) = (a(a_len - 1).rmax, b(b_len - 1).rmax);
    let mut fix = FixError::default();
    let (mut i, mut j) = (0, 0);
    let (mut a_below, mut b_below) = (None, None);
    while i < a_len && j < b_len {
        let (x, y) = (a(i), b(j));
        if x.value == y.value {
            push(fix.fix(x.merged_with(y)));
            (a_below, b_below) = (Some(x), Some(y));
            i += 1;
            j += 1;
        } else if x.value < y.value {
            push(fix.fix(x.merged_alone(b_below, Some(y), b_rmax)));
            a_below = Some(x);
            i += 1;
        } else {
            push(fix.fix(y.merged_alone(a_below, Some(x), a_rmax)));
            b_below = Some(y);
            j += 1;
        }
    }
    for i in i..a_len {
        push(fix.fix(a(i).merged_alone(b_below, None, b_rmax)));
    }
    for j in j..b_len {
        push(fix.fix(b(j).merged_alone(a_below, None, a_rmax)));
    }
}

mod block;
mod columns;
mod merge;
mod queues;

pub use columns::*;
pub use merge::*;
pub use queues::*;

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// Entries with ranks that break the invariants here and there, as a combine's raw output can.
    fn rough_entries(n: usize, seed: u32) -> Vec<SketchEntry> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1 << 24) as f32
        };
        let mut rank = 0f32;
        (0..n)
            .map(|i| {
                rank += next() * 3.0 - 0.5;
                let wmin = next() * 2.0;
                SketchEntry { rmin: rank, rmax: rank + wmin + next() - 0.3, wmin, value: i as f32 }
            })
            .collect()
    }

    /// The max-scan form of `FixError` (the device's) is the sequential one, bit for bit.
    #[test]
    fn fix_error_is_two_prefix_maxima() {
        for seed in 0..20 {
            let raw = rough_entries(200, seed);
            let mut fix = FixError::default();
            let sequential: Vec<SketchEntry> = raw.iter().map(|&e| fix.fix(e)).collect();
            let (mut rmin, mut rmax) = (0f32, 0f32);
            for (e, want) in raw.iter().zip(&sequential) {
                rmin = rmin.max(e.rmin);
                rmax = rmax.max(e.rmax).max(rmin + e.wmin);
                assert_eq!((rmin.to_bits(), rmax.to_bits()), (want.rmin.to_bits(), want.rmax.to_bits()), "seed {seed}");
            }
        }
    }

    /// Pruning keeps the first and last entries, at most `max_size`, in order; short summaries and
    /// sizes of 0 and 1 keep a prefix.
    #[test]
    fn prune_keeps_the_ends_and_the_size() {
        let mut fix = FixError::default();
        let src: Vec<SketchEntry> = rough_entries(500, 7).into_iter().map(|e| fix.fix(e)).collect();
        for max_size in [0, 1, 2, 3, 10, 100, 499, 500, 600] {
            let mut out = Vec::new();
            prune(src.len(), |i| src[i], max_size, |e| out.push(e));
            assert!(out.len() <= max_size, "{max_size}: {}", out.len());
            if max_size >= src.len() {
                assert_eq!(out, src);
            } else if max_size >= 2 {
                assert_eq!((out[0], *out.last().unwrap()), (src[0], src[499]));
                assert!(out.windows(2).all(|w| w[0].value < w[1].value));
            } else {
                assert_eq!(out, src[..max_size]);
            }
        }
    }

    /// Combining a summary with another gives each value once, the shared values' weights added,
    /// and ranks that satisfy the invariants; combining with an empty summary copies.
    #[test]
    fn combine_merges_values_and_repairs_ranks() {
        let summary = |values: &[f32]| {
            let mut out = Vec::new();
            summarize(values.len(), |i| (values[i], 1.0 + i as f32 * 0.5), |e| out.push(e));
            out
        };
        let (a, b) = (summary(&[1.0, 3.0, 5.0, 7.0]), summary(&[2.0, 3.0, 8.0]));
        let mut out = Vec::new();
        combine(a.len(), |i| a[i], b.len(), |j| b[j], |e| out.push(e));
        let values: Vec<f32> = out.iter().map(|e| e.value).collect();
        assert_eq!(values, [1.0, 2.0, 3.0, 5.0, 7.0, 8.0]);
        assert_eq!(out[2].wmin, a[1].wmin + b[1].wmin);
        assert!(out.windows(2).all(|w| w[0].rmin <= w[1].rmin && w[0].rmax <= w[1].rmax));
        assert!(out.iter().all(|e| e.rmax >= e.rmin_next()));
        let mut copied = Vec::new();
        combine(0, |_| unreachable!(), b.len(), |j| b[j], |e| copied.push(e));
        assert_eq!(copied, b);
    }
}
