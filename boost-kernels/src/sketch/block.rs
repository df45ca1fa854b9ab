//! A block's share of the sketch's steps: sorted runs of entries, block-wide scans of counts and
//! running maxima, and the prune of a summary.

use core::ptr::{addr_of, addr_of_mut};

use primitives_kernels::arch;
use primitives_kernels::block::{BlockScan, DynamicShared};
use primitives_kernels::ops::{AssociativeOp, Sum};
use primitives_kernels::warp;

use super::*;

/// A queue's entries sorted by value: `len` values and their weights.
#[derive(Clone, Copy)]
pub(super) struct Sorted {
    pub(super) keys: *const f32,
    pub(super) weights: *const f32,
    pub(super) len: usize,
}

impl Sorted {
    /// # Safety
    /// `k < len`.
    #[inline]
    pub(super) unsafe fn key(self, k: usize) -> f32 {
        // SAFETY: as the caller promises.
        unsafe { arch::load(self.keys.add(k)) }
    }

    /// # Safety
    /// `k < len`.
    #[inline]
    pub(super) unsafe fn weight(self, k: usize) -> f32 {
        // SAFETY: as the caller promises.
        unsafe { arch::load(self.weights.add(k)) }
    }

    /// The values and weights of the entries `at(j)` where `valid(j)`, zeros elsewhere.
    ///
    /// # Safety
    /// `at(j) < len` where `valid(j)`.
    #[inline]
    pub(super) unsafe fn items(
        self,
        valid: impl Fn(usize) -> bool,
        at: impl Fn(usize) -> usize,
    ) -> ([f32; ITEMS], [f32; ITEMS]) {
        let (mut keys, mut weights) = ([0f32; ITEMS], [0f32; ITEMS]);
        for j in 0..ITEMS {
            if valid(j) {
                // SAFETY: as the caller promises.
                unsafe { (keys[j], weights[j]) = (self.key(at(j)), self.weight(at(j))) };
            }
        }
        (keys, weights)
    }

    /// Whether entry `k` starts a group of equal values.
    ///
    /// # Safety
    /// `k < len`.
    #[inline]
    pub(super) unsafe fn head(self, k: usize) -> bool {
        // SAFETY: `k - 1 < k < len`.
        k == 0 || unsafe { self.key(k) != self.key(k - 1) }
    }
}

/// A summary in device memory: `len` entries from `at`.
#[derive(Clone, Copy)]
pub(super) struct Run {
    pub(super) at: *mut SketchEntry,
    pub(super) len: usize,
}

impl Run {
    /// # Safety
    /// `i < len`.
    #[inline]
    pub(super) unsafe fn get(self, i: usize) -> SketchEntry {
        // SAFETY: as the caller promises.
        unsafe { arch::load(self.at.add(i)) }
    }
}

/// `max` that keeps the later operand when neither is larger: `FixError`'s `if e < prev { prev }
/// else { e }` as an associative operator, so that its running maxima are block scans.
#[derive(Clone, Copy, Default)]
pub(super) struct LaterMax;

impl AssociativeOp<f32> for LaterMax {
    fn identity() -> f32 {
        f32::NEG_INFINITY
    }
    fn combine(a: f32, b: f32) -> f32 {
        if b < a {
            a
        } else {
            b
        }
    }
}

/// Items a thread takes in each tile of a block-wide pass: fewer tiles, so fewer barriers.
pub(super) const ITEMS: usize = 16;

/// Threads of a warp.
pub(super) const WARP: usize = arch::WARP_SIZE as usize;

/// The block's shared state for the merge: two block scans and a few broadcast words.
pub(super) struct Block {
    pub(super) counts: BlockScan<u32>,
    pub(super) maxima: BlockScan<f32>,
    pub(super) words: *mut u32,
}

impl Block {
    pub(super) fn new() -> Self {
        let mut shared = DynamicShared::new();
        Block {
            counts: BlockScan::from_allocator(&mut shared),
            maxima: BlockScan::from_allocator(&mut shared),
            words: shared.take::<u32>(4),
        }
    }

    /// Every thread's `value` of thread 0, after a barrier.
    pub(super) fn broadcast(&self, value: u32) -> u32 {
        if arch::thread_idx_x() == 0 {
            // SAFETY: the block's 4 words.
            unsafe { arch::store(self.words, value) };
        }
        arch::sync_threads();
        // SAFETY: written before the barrier.
        let value = unsafe { arch::load(self.words) };
        arch::sync_threads();
        value
    }

    /// The indices `0..n` in tiles of [`ITEMS`] a thread: `body(first, end)` gets this thread's
    /// contiguous part of the tile (empty past `n`), in thread order. Every thread runs every
    /// tile, so that `body` may scan the threads' parts.
    pub(super) fn tiles(n: usize, mut body: impl FnMut(usize, usize)) {
        let threads = arch::block_dim_x() as usize;
        let mut start = 0;
        while start < n {
            let first = (start + arch::thread_idx_x() as usize * ITEMS).min(n);
            body(first, (first + ITEMS).min(n));
            start += threads * ITEMS;
        }
    }

    /// The indices `0..n` in tiles of [`ITEMS`] a thread, warp-striped (coalesced): each warp owns
    /// `32 ITEMS` contiguous indices of a tile, lane `l` taking item `j` at `base + 32 j + l`;
    /// `body(base, end)` gets the warp's `base` and the end of the indices. Every thread runs every
    /// tile, so that `body` may scan over the block.
    pub(super) fn warp_tiles(n: usize, mut body: impl FnMut(usize, usize)) {
        let threads = arch::block_dim_x() as usize;
        let mut start = 0;
        while start < n {
            body(start + arch::warp_idx() as usize * WARP * ITEMS, n);
            start += threads * ITEMS;
        }
    }

    /// The place of each flagged item of a warp tile ([`Block::warp_tiles`]) among the block's
    /// flagged items of the tile, in index order, and the tile's count of them: ballots within the
    /// warp, a block scan of the warps' counts.
    pub(super) fn compact(&self, flags: [bool; ITEMS]) -> ([u32; ITEMS], u32) {
        let lane = arch::lane_id();
        let below = (1u32 << lane) - 1;
        let (mut places, mut warp_count) = ([0u32; ITEMS], 0u32);
        for j in 0..ITEMS {
            let ballot = arch::ballot_sync(u32::MAX, flags[j]);
            places[j] = warp_count + (ballot & below).count_ones();
            warp_count += ballot.count_ones();
        }
        let (before, total) = self.counts.exclusive_scan::<Sum>(if lane == 0 { warp_count } else { 0 });
        let warp_before = arch::shfl_idx_sync(u32::MAX, before, 0);
        (places.map(|p| p + warp_before), total)
    }

    /// The inclusive [`LaterMax`] scan from `carry` of a warp tile's values ([`Block::warp_tiles`])
    /// in index order (warp scans, a block scan of the warps' maxima), and the block tile's result.
    /// The values are ranks, never NaN, so `-inf` is the identity.
    pub(super) fn later_max_tile(&self, values: [f32; ITEMS], carry: f32) -> ([f32; ITEMS], f32) {
        let last_lane = WARP as u32 - 1;
        let (mut scanned, mut warp_max) = ([0f32; ITEMS], f32::NEG_INFINITY);
        for j in 0..ITEMS {
            let inclusive = warp::warp_inclusive_scan::<f32, LaterMax>(values[j]);
            scanned[j] = LaterMax::combine(warp_max, inclusive);
            warp_max = LaterMax::combine(warp_max, arch::shfl_idx_sync(u32::MAX, inclusive, last_lane));
        }
        let lane = arch::lane_id();
        let (before, total) =
            self.maxima.exclusive_scan::<LaterMax>(if lane == 0 { warp_max } else { f32::NEG_INFINITY });
        let prefix = LaterMax::combine(carry, arch::shfl_idx_sync(u32::MAX, before, 0));
        (scanned.map(|v| LaterMax::combine(prefix, v)), LaterMax::combine(carry, total))
    }

    /// [`summarize`] of `sorted` into `exact` when every partial sum of its weights is exact in
    /// `f32` (integers up to 2^24): each group's head written with the weight before it (warp scans
    /// of the weights, a block scan of the warps' sums), then each group's weight the next group's
    /// rank less its own (the total after the last). Returns the number of groups.
    ///
    /// # Safety
    /// Room for `sorted.len` entries at `exact`.
    pub(super) unsafe fn summarize_counts(&self, sorted: Sorted, exact: *mut SketchEntry) -> usize {
        let lane = arch::lane_id() as usize;
        let (mut groups, mut total_weight) = (0u32, 0f32);
        Block::warp_tiles(sorted.len, |base, end| {
            let at = |j: usize| base + WARP * j + lane;
            // SAFETY: only entries below `end == len` are read.
            let (keys, weights) = unsafe { sorted.items(|j| at(j) < end, at) };
            // The value before each item: the lane below's, lane 0's the last lane's of the last
            // item (or the one before the warp's first).
            // SAFETY: `base - 1 < base < end == len`.
            let before_warp = if base > 0 && base < end { unsafe { sorted.key(base - 1) } } else { f32::NAN };
            let mut heads = [false; ITEMS];
            for j in 0..ITEMS {
                let below = arch::shfl_up_sync(u32::MAX, keys[j], 1);
                let last =
                    if j == 0 { before_warp } else { arch::shfl_idx_sync(u32::MAX, keys[j - 1], WARP as u32 - 1) };
                let previous = if lane == 0 { last } else { below };
                heads[j] = at(j) < end && (at(j) == 0 || keys[j] != previous);
            }
            let (places, count) = self.compact(heads);
            let (mut ranks, mut warp_weight) = ([0f32; ITEMS], 0f32);
            for j in 0..ITEMS {
                let (before, total) = warp::warp_exclusive_scan::<f32, Sum>(weights[j]);
                ranks[j] = warp_weight + before;
                warp_weight += total;
            }
            let (before, total) = self.maxima.exclusive_scan::<Sum>(if lane == 0 { warp_weight } else { 0.0 });
            let rank_before = total_weight + arch::shfl_idx_sync(u32::MAX, before, 0);
            for j in 0..ITEMS {
                if heads[j] {
                    let entry = SketchEntry { rmin: rank_before + ranks[j], rmax: 0.0, wmin: 0.0, value: keys[j] };
                    // SAFETY: at most one entry a head, fewer than `len`.
                    unsafe { arch::store(exact.add((groups + places[j]) as usize), entry) };
                }
            }
            (groups, total_weight) = (groups + count, total_weight + total);
            arch::sync_threads();
        });
        let groups = groups as usize;
        Block::strided(groups, |g| {
            // SAFETY: `g < groups`; only the fields this thread owns are written (the next
            // group's `rmin`, which another thread may read, is not).
            unsafe {
                let rmin = arch::load(addr_of!((*exact.add(g)).rmin));
                let next = if g + 1 < groups { arch::load(addr_of!((*exact.add(g + 1)).rmin)) } else { total_weight };
                arch::store(addr_of_mut!((*exact.add(g)).wmin), next - rmin);
                arch::store(addr_of_mut!((*exact.add(g)).rmax), next);
            }
        });
        arch::sync_threads();
        groups
    }

    /// `body(i)` for `i` in `0..n`, thread `t` taking `t, t + threads, ...` (coalesced).
    pub(super) fn strided(n: usize, mut body: impl FnMut(usize)) {
        let threads = arch::block_dim_x() as usize;
        let mut i = arch::thread_idx_x() as usize;
        while i < n {
            body(i);
            i += threads;
        }
    }

    /// [`summarize`] of `sorted` into `exact` with the host's sums in order: a group's weight added
    /// by the thread of its first entry, the ranks by thread 0. Returns the number of groups.
    ///
    /// # Safety
    /// Room for `sorted.len` entries at `exact`.
    pub(super) unsafe fn summarize_in_order(&self, sorted: Sorted, exact: *mut SketchEntry) -> usize {
        let len = sorted.len;
        let mut groups = 0u32;
        Block::tiles(len, |first, end| {
            // SAFETY: entries below `end <= len`.
            let here = (first..end).filter(|&k| unsafe { sorted.head(k) }).count() as u32;
            let (before, total) = self.counts.exclusive_scan::<Sum>(here);
            // SAFETY: as above.
            let heads = (first..end).filter(|&k| unsafe { sorted.head(k) });
            for (at, k) in ((groups + before) as usize..).zip(heads) {
                // SAFETY: entries below `len`; at most one entry a head, fewer than `len`.
                unsafe {
                    let value = sorted.key(k);
                    let mut w = sorted.weight(k);
                    let mut next = k + 1;
                    while next < len && sorted.key(next) == value {
                        w += sorted.weight(next);
                        next += 1;
                    }
                    arch::store(exact.add(at), SketchEntry { rmin: 0.0, rmax: 0.0, wmin: w, value });
                }
            }
            groups += total;
            arch::sync_threads();
        });
        let groups = groups as usize;
        if arch::thread_idx_x() == 0 {
            let mut wsum = 0f32;
            for g in 0..groups {
                // SAFETY: `g < groups`, written before the barrier of the last tile.
                unsafe {
                    let mut e = arch::load(exact.add(g));
                    (e.rmin, e.rmax) = (wsum, wsum + e.wmin);
                    wsum += e.wmin;
                    arch::store(exact.add(g), e);
                }
            }
        }
        arch::sync_threads();
        groups
    }

    /// Copies `src` to `dst` (other memory).
    ///
    /// # Safety
    /// Room for `src.len` entries at `dst`.
    pub(super) unsafe fn copy(&self, src: Run, len: usize, dst: *mut SketchEntry) -> Run {
        Block::strided(len, |k| {
            // SAFETY: `k < len <= src.len`, within `dst`.
            unsafe { arch::store(dst.add(k), src.get(k)) };
        });
        arch::sync_threads();
        Run { at: dst, len }
    }

    /// [`prune`] of `src` into `dst`, the block together: each rank target's pick found by a
    /// binary search (the walk's position is monotone in the target, so the walk stops where the
    /// search does), a thread a target; the picks kept where they change, in order (ballots and a
    /// block scan). A summary whose targets decrease (a negative range) is pruned by thread 0 alone.
    ///
    /// # Safety
    /// Room for `max_size` entries at `dst` and `max_size` words at `picks`; `src` elsewhere.
    pub(super) unsafe fn prune(&self, src: Run, max_size: usize, dst: *mut SketchEntry, picks: *mut u32) -> Run {
        let len = src.len;
        if len <= max_size || max_size <= 1 {
            // SAFETY: as the caller promises.
            return unsafe { self.copy(src, len.min(max_size), dst) };
        }
        let last = len - 1;
        // SAFETY: `0, last < len`.
        let (first, end) = unsafe { (src.get(0), src.get(last)) };
        let (begin, range) = (first.rmax, end.rmin - first.rmax);
        let n = max_size - 1;
        if range.is_nan() || range < 0.0 {
            let mut kept = 0;
            if arch::thread_idx_x() == 0 {
                // SAFETY: at most `max_size` entries pushed.
                prune(
                    len,
                    |i| unsafe { src.get(i) },
                    max_size,
                    |e| {
                        // SAFETY: as above.
                        unsafe { arch::store(dst.add(kept), e) };
                        kept += 1;
                    },
                );
            }
            return Run { at: dst, len: self.broadcast(kept as u32) as usize };
        }
        // The pick of target `k` (1..n) at `picks[k - 1]`, or `u32::MAX` past the walk's end.
        // An entry of `src`, `i` at most `last` (every caller's).
        let entry = |i: usize| {
            // SAFETY: `i <= last < len`.
            unsafe { src.get(i) }
        };
        Block::strided(n - 1, |slot| {
            let dx2 = prune_target(slot + 1, n, begin, range);
            let (mut i, mut hi) = (1, last);
            while i < hi {
                let mid = i + (hi - i) / 2;
                if prune_passes(dx2, entry(mid + 1)) {
                    i = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let pick = if i == last {
                u32::MAX
            } else if prune_picks_first(dx2, entry(i), entry(i + 1)) {
                i as u32
            } else {
                i as u32 + 1
            };
            // SAFETY: `slot < n - 1 < max_size`.
            unsafe { arch::store(picks.add(slot), pick) };
        });
        if arch::thread_idx_x() == 0 {
            // SAFETY: `dst` has room; word 1 holds the last pick (0: none).
            unsafe {
                arch::store(dst, first);
                arch::store(self.words.add(1), 0);
            }
        }
        arch::sync_threads();
        // The picks of the targets, `u32::MAX` outside them.
        let pick_at = |at: usize| {
            if at < n - 1 {
                // SAFETY: `at < n - 1`; the picks were written before the barrier.
                unsafe { arch::load(picks.add(at)) }
            } else {
                u32::MAX
            }
        };
        let lane = arch::lane_id() as usize;
        let mut kept = 0u32;
        Block::warp_tiles(n - 1, |base, slots| {
            let at = |j: usize| base + WARP * j + lane;
            let pick: [u32; ITEMS] = core::array::from_fn(|j| pick_at(at(j)));
            // A target whose pick the walk keeps: a valid one that differs from the one before.
            let fresh: [bool; ITEMS] = core::array::from_fn(|j| {
                at(j) < slots && pick[j] != u32::MAX && (at(j) == 0 || pick[j] != pick_at(at(j) - 1))
            });
            let (places, total) = self.compact(fresh);
            for j in 0..ITEMS {
                if fresh[j] {
                    // SAFETY: at most `n` kept after the first, within `max_size`.
                    unsafe { arch::store(dst.add(1 + (kept + places[j]) as usize), src.get(pick[j] as usize)) };
                }
                // The last valid target's pick: the walk's last index.
                if at(j) < slots && pick[j] != u32::MAX && pick_at(at(j) + 1) == u32::MAX {
                    // SAFETY: word 1 of the block's words.
                    unsafe { arch::store(self.words.add(1), pick[j]) };
                }
            }
            kept += total;
            arch::sync_threads();
        });
        // SAFETY: written before the barrier (the last tile's).
        let last_idx = unsafe { arch::load(self.words.add(1)) } as usize;
        let mut len = 1 + kept as usize;
        if last_idx != last {
            if arch::thread_idx_x() == 0 {
                // SAFETY: `len < max_size` (the walk keeps at most `max_size - 1` before it).
                unsafe { arch::store(dst.add(len), end) };
            }
            len += 1;
        }
        arch::sync_threads();
        Run { at: dst, len }
    }

    /// [`combine`] of `a` and `b` into `dst`, the block together: the merge path of the two
    /// (equal values `a`'s first) split by a binary search at each thread's first place, each
    /// thread then merging its places in order, the entry of a value that both hold written once;
    /// an entry's ranks come from its neighbours in the other summary
    /// ([`SketchEntry::merged_alone`]); then `FixError` as two max-scans.
    ///
    /// # Safety
    /// Room for `a.len + b.len` entries at `dst`; `a`, `b` elsewhere.
    pub(super) unsafe fn combine(&self, a: Run, b: Run, dst: *mut SketchEntry) -> Run {
        if a.len == 0 || b.len == 0 {
            let src = if a.len == 0 { b } else { a };
            // SAFETY: as the caller promises.
            return unsafe { self.copy(src, src.len, dst) };
        }
        // An entry of a summary, `i` below its length.
        let at = |run: Run, i: usize| {
            // SAFETY: every caller's `i` is below `run.len`.
            unsafe { run.get(i) }
        };
        let (a_rmax, b_rmax) = (at(a, a.len - 1).rmax, at(b, b.len - 1).rmax);
        // Of the first `d` places of the merge, how many are `a`'s.
        let split = |d: usize| {
            let (mut lo, mut hi) = (d.saturating_sub(b.len), d.min(a.len));
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if at(a, mid).value <= at(b, d - mid - 1).value {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        // Walks the places `first..end` of the merge, writing each entry (none for `b`'s copy of a
        // value `a` holds) at its place less `skipped_before` and the copies skipped since, when
        // `write`; returns the copies skipped.
        let walk = |first: usize, end: usize, write: Option<usize>| {
            let mut i = split(first);
            let mut j = first - i;
            let mut skipped = 0;
            for place in first..end {
                if i < a.len && (j >= b.len || at(a, i).value <= at(b, j).value) {
                    let x = at(a, i);
                    if let Some(skipped_before) = write {
                        let entry = if j < b.len && at(b, j).value == x.value {
                            x.merged_with(at(b, j))
                        } else {
                            let lower = (j > 0).then(|| at(b, j - 1));
                            let upper = (j < b.len).then(|| at(b, j));
                            x.merged_alone(lower, upper, b_rmax)
                        };
                        // SAFETY: a place below `a.len + b.len`.
                        unsafe { arch::store(dst.add(place - skipped_before - skipped), entry) };
                    }
                    i += 1;
                } else {
                    let y = at(b, j);
                    if i > 0 && at(a, i - 1).value == y.value {
                        skipped += 1;
                    } else if let Some(skipped_before) = write {
                        let lower = (i > 0).then(|| at(a, i - 1));
                        let upper = (i < a.len).then(|| at(a, i));
                        let entry = y.merged_alone(lower, upper, a_rmax);
                        // SAFETY: a place below `a.len + b.len`.
                        unsafe { arch::store(dst.add(place - skipped_before - skipped), entry) };
                    }
                    j += 1;
                }
            }
            skipped
        };
        let mut skipped_before = 0u32;
        Block::tiles(a.len + b.len, |first, end| {
            let here = if first < end { walk(first, end, None) as u32 } else { 0 };
            let (before, total) = self.counts.exclusive_scan::<Sum>(here);
            if first < end {
                walk(first, end, Some((skipped_before + before) as usize));
            }
            skipped_before += total;
            arch::sync_threads();
        });
        let shared_total = skipped_before as usize;
        let len = a.len + b.len - shared_total;
        // FixError: `rmin` the running `LaterMax` of the `rmin`s from 0, `rmax` that of
        // `LaterMax(rmax, rmin + wmin)`.
        let (mut prev_rmin, mut prev_rmax) = (0f32, 0f32);
        let lane = arch::lane_id() as usize;
        Block::warp_tiles(len, |base, end| {
            let at = |j: usize| base + WARP * j + lane;
            // Entry `at(j)`, whose scans' identity stands for it past `len`.
            let entry = |j: usize| {
                let none = SketchEntry { rmin: f32::NEG_INFINITY, rmax: f32::NEG_INFINITY, wmin: 0.0, value: 0.0 };
                if at(j) < end {
                    // SAFETY: `at(j) < len` entries, written before the barrier.
                    unsafe { arch::load(dst.add(at(j))) }
                } else {
                    none
                }
            };
            let (rmins, total) = self.later_max_tile(core::array::from_fn(|j| entry(j).rmin), prev_rmin);
            arch::sync_threads();
            let (rmaxs, total_t) = self.later_max_tile(
                core::array::from_fn(|j| {
                    let e = SketchEntry { rmin: rmins[j], ..entry(j) };
                    LaterMax::combine(e.rmax, e.rmin_next())
                }),
                prev_rmax,
            );
            for j in 0..ITEMS {
                if at(j) < end {
                    let e = SketchEntry { rmin: rmins[j], rmax: rmaxs[j], ..entry(j) };
                    // SAFETY: `at(j) < len`; only this thread reads or writes the entry in the tile.
                    unsafe { arch::store(dst.add(at(j)), e) };
                }
            }
            (prev_rmin, prev_rmax) = (total, total_t);
            arch::sync_threads();
        });
        Run { at: dst, len }
    }
}
