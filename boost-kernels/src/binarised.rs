//! CatBoost's binarised applier for oblivious trees: each row's features are turned once into
//! small bin codes against the model's own split thresholds, so that a level of a tree is an
//! integer add on a staged word instead of a float load, a missing-value test and a comparison.
//!
//! Why it is fast: a feature's distinct split conditions `c_0 < c_1 < ...` (over every tree of
//! the model) give a value `v` its bin `b(v)`, how many of them are at or below `v`; then `v < c_i`
//! exactly when `b(v) <= i`, so every level's comparison of every tree is one of small integers.
//! A thread takes two rows; their codes share a 32-bit word, a row a 16-bit lane, so one shared
//! load and one add decide a level for both rows (bit 8 of each lane is the side), and the level's
//! bit is shifted into an accumulator with no branch.
//!
//! The codes of a feature's column (a byte in each lane) carry the missing direction, since
//! XGBoost-style splits learn it per split: a *missing-right* column holds `b(v)` and [`MISSING`]
//! (255, above every bin) for a missing value; a *missing-left* column holds `b(v) + 1` and 0. A
//! split of condition index `i` adds `255 - i` to the former or `254 - i` to the latter: the sum
//! reaches 256 (bit 8) exactly when the row goes right ([`LevelSplit::new`], [`goes_right`]). With
//! at most [`MAX_THRESHOLDS`] conditions a feature, the codes fit a byte and the sums stay below
//! 512, so the lanes never carry into each other.
//!
//! A row pair's bits land in a lane's slot in level order (bit `l` is level `l`'s side, 1 =
//! right): the reverse of [`crate::predict::oblivious_index`]'s order, so the host lays each tree's
//! leaf values out by slot ([`slot_of_index`]). The leaf values are then added to the margins tree
//! after tree in `f32`, in the CPU predictor's order, so the margins are its own bit for bit.
//!
//! Memory is read and written through `arch`, so the emulator checks every access.

use primitives_kernels::arch;

/// The most distinct split conditions a feature may have: its bins `0..=MAX_THRESHOLDS` and the
/// missing code fit a byte, and `bin + 255 - i` stays below 512.
pub const MAX_THRESHOLDS: usize = 254;
/// The most levels a tree may have: a leaf's slot fits a 16-bit lane.
pub const MAX_LEVELS: usize = 16;
/// A feature's column code that says the column is not staged.
pub const NO_COLUMN: u32 = 0xFFFF;
/// The code of a missing value in a missing-right column (above every bin).
pub const MISSING: u32 = 0xFF;
/// A 16-bit lane's 1 in both lanes.
const LANES: u32 = 0x0001_0001;
/// Bit 8 of both lanes: the side of a level's comparison.
const SIDES: u32 = 0x0100_0100;
/// The levels that one accumulator takes: their bits enter at bit 8 and move down one a level.
const CHUNK: u32 = 8;

/// How many of a feature's thresholds are at or below each of `values` (not NaN): a branch-free
/// binary search of `steps` probes over `threshold(0..2^steps - 1)`, ascending, whose first
/// `count` are the feature's and the rest `+inf` (only an infinite value counts those, hence the
/// clamp). The values' searches go in step, so their loads are in flight together.
#[inline(always)]
pub fn bins<const N: usize>(values: [f32; N], steps: u32, count: u32, threshold: impl Fn(u32) -> f32) -> [u32; N] {
    let mut at = [0; N];
    let mut step = (1u32 << steps) >> 1;
    while step != 0 {
        for (at, &value) in at.iter_mut().zip(&values) {
            if threshold(*at + step - 1) <= value {
                *at += step;
            }
        }
        step >>= 1;
    }
    at.map(|at| at.min(count))
}

/// The code of a missing-left column from the missing-right column's (`bin + 1`, missing 0), in
/// each byte of `word` that holds one.
#[inline(always)]
pub fn missing_left_codes(word: u32) -> u32 {
    word.wrapping_add(LANES) & 0x00FF_00FF
}

/// Whether a lane of code `code` goes right at a split whose lane addend is `add`.
#[inline(always)]
pub fn goes_right(code: u32, add: u32) -> bool {
    (code + add) & 0x100 != 0
}

/// A level's split as the applier reads it: the byte offset of its column within a row pair's
/// staged words, and the addend of its condition in both lanes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LevelSplit {
    pub offset: u32,
    pub add: u32,
}

impl LevelSplit {
    /// The split on staged column `column` at the feature's condition of index `index` (how many
    /// of the feature's conditions are below it), missing values left when `missing_left` (then the
    /// column holds missing-left codes, else missing-right ones).
    pub fn new(column: u32, index: u32, missing_left: bool) -> Self {
        let add = if missing_left { 254 - index } else { 255 - index };
        LevelSplit { offset: 4 * column, add: add * LANES }
    }
}

/// A tree of the applier: its level splits (`levels` of them from the pair of splits at index
/// `splits`, two a 16-byte pair), its `2^levels` leaf values from `leaves` by slot, and the output
/// they add to.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BinarisedTree {
    pub splits: u32,
    pub levels: u32,
    pub leaves: u32,
    pub output: u32,
}

/// A feature that some level splits on: its column in the rows, its conditions (`count` of them
/// from `thresholds`, padded with `+inf` to the search's `2^steps - 1`), and the staged columns of
/// its codes (`columns & 0xFFFF` missing-right, `columns >> 16` missing-left, [`NO_COLUMN`] when
/// no split needs it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BinarisedFeature {
    pub feature: u32,
    pub thresholds: u32,
    pub count: u32,
    pub columns: u32,
}

/// The slot at which the leaf of `index` ([`crate::predict::oblivious_index`]: level 0 the most
/// significant bit) of a tree of `levels` levels lies in the applier's leaf table (level 0 the
/// least significant bit).
pub fn slot_of_index(index: u32, levels: u32) -> u32 {
    if levels == 0 {
        0
    } else {
        index.reverse_bits() >> (32 - levels)
    }
}

/// The rows a block stages and walks: two a thread.
pub const ROWS_PER_THREAD: usize = 2;

/// The dynamic shared memory of a block of `threads`: a word a staged column for each row pair,
/// `stride` words apart ([`stride`]).
pub fn staged_bytes(threads: usize, columns: usize) -> usize {
    threads * stride(columns) as usize * 4
}

/// The words between two row pairs' staged columns: odd, so that the lanes loading one column of
/// their pairs hit distinct banks.
pub fn stride(columns: usize) -> u32 {
    columns as u32 | 1
}

/// The model's side of a launch: features, trees, splits and leaf values as the host laid them out.
#[derive(Clone, Copy)]
pub struct BinarisedModel {
    pub features: *const BinarisedFeature,
    pub num_features: u64,
    pub thresholds: *const f32,
    /// Probes of every feature's search ([`bins`]).
    pub steps: u64,
    pub trees: *const BinarisedTree,
    pub num_trees: u64,
    pub splits: *const [LevelSplit; 2],
    pub leaf_values: *const f32,
    /// Staged columns (at most [`NO_COLUMN`]).
    pub columns: u64,
}

/// Two rows a thread: `margins[row * outputs + tree.output] +=` the leaf value of each tree, in
/// order, for every row of a dense row-major `rows x cols` matrix (a feature at or past `cols` is
/// missing). The block's `2 * threads` rows are first staged as codes (`stage`); thread `t` walks
/// rows `t` and `threads + t` of the block. A run of trees of one output keeps its two sums in
/// registers (the host groups the trees by output, in order within each).
///
/// # Safety
/// `values` holds `rows * cols` values and `margins` `rows * outputs`; `model` as the host lays
/// it out (every index within its buffer, every output below `outputs`); the dynamic shared memory
/// holds [`staged_bytes`] for the block.
pub unsafe fn dense_kernel(
    values: *const f32,
    rows: u64,
    cols: u64,
    model: BinarisedModel,
    margins: *mut f32,
    outputs: u64,
) {
    let threads = arch::block_dim_x();
    let first = arch::block_idx_x() as u64 * (ROWS_PER_THREAD as u64 * threads as u64);
    let stride = stride(model.columns as usize);
    // SAFETY: as the caller promises.
    let shared = unsafe { stage(values, (rows, cols), first, model, stride) };
    let t = arch::thread_idx_x();
    let pair = shared + 4 * t * stride;
    let (lo, hi) = (first + t as u64, first + (threads + t) as u64);
    // SAFETY: the pair's staged words; `offset` is a staged column's (the host's layout).
    let word = |offset: u32| unsafe { arch::load_shared_b32(pair + offset) };
    let margin = |row: u64, output: u32| margins.wrapping_add(row as usize * outputs as usize + output as usize);
    let read = |row: u64, output: u32| {
        if row >= rows {
            return 0.0;
        }
        // SAFETY: a row below `rows`, a tree's output below `outputs` (the caller).
        unsafe { arch::load(margin(row, output)) }
    };
    let write = |row: u64, output: u32, sum: f32| {
        if row < rows {
            // SAFETY: as for `read`.
            unsafe { arch::store(margin(row, output), sum) }
        }
    };
    let (mut output, mut sum_lo, mut sum_hi) = (u32::MAX, 0.0f32, 0.0f32);
    for i in 0..model.num_trees as usize {
        // SAFETY: `i < num_trees`; the tree's splits and leaves are within their buffers.
        let (tree, value_lo, value_hi) = unsafe {
            let tree: BinarisedTree = bytemuck::cast(arch::load_global_nc_v4(model.trees.add(i).cast()));
            let slots = slots(word, model.splits.add(tree.splits as usize).cast(), tree.levels);
            let leaves = model.leaf_values.add(tree.leaves as usize);
            (tree, arch::load(leaves.add((slots & 0xFFFF) as usize)), arch::load(leaves.add((slots >> 16) as usize)))
        };
        if tree.output != output {
            if output != u32::MAX {
                write(lo, output, sum_lo);
                write(hi, output, sum_hi);
            }
            output = tree.output;
            (sum_lo, sum_hi) = (read(lo, output), read(hi, output));
        }
        sum_lo += value_lo;
        sum_hi += value_hi;
    }
    if output != u32::MAX {
        write(lo, output, sum_lo);
        write(hi, output, sum_hi);
    }
}

/// Both lanes' leaf slots of a tree of `levels` levels whose splits start at `splits`: the levels
/// in chunks of [`CHUNK`], each level's side (bit 8 of `word + add`) shifted into an accumulator
/// that moves down one bit a level, so a chunk of `n` levels ends with level `j`'s bit at `9 - n +
/// j` of each lane.
///
/// # Safety
/// `splits` holds `levels.div_ceil(2)` pairs; `word` reads a staged word.
#[inline(always)]
unsafe fn slots(word: impl Fn(u32) -> u32, splits: *const [u32; 4], levels: u32) -> u32 {
    let level = |accumulator: u32, offset: u32, add: u32| (accumulator >> 1) | (word(offset).wrapping_add(add) & SIDES);
    let mut pairs = splits;
    let mut next_pair = || {
        // SAFETY: called once each two levels, so the pair is within the tree's splits.
        let pair = unsafe { arch::load_global_nc_v4(pairs) };
        pairs = pairs.wrapping_add(1);
        pair
    };
    let mut slots = 0;
    let mut l = 0;
    while l < levels {
        let n = (levels - l).min(CHUNK);
        let mut accumulator = 0;
        if n == CHUNK {
            // A whole chunk: a loop of a known count, unrolled, its loads issued together.
            for _ in 0..CHUNK / 2 {
                let pair = next_pair();
                accumulator = level(level(accumulator, pair[0], pair[1]), pair[2], pair[3]);
            }
        } else {
            let mut k = 0;
            while k < n {
                let pair = next_pair();
                accumulator = level(accumulator, pair[0], pair[1]);
                if k + 1 < n {
                    accumulator = level(accumulator, pair[2], pair[3]);
                }
                k += 2;
            }
        }
        slots |= ((accumulator >> (9 - n)) & (((1 << n) - 1) * LANES)) << l;
        l += n;
    }
    slots
}

/// Stages the block's rows `first..first + 2 * threads` as codes: for each (row pair, feature) the
/// two rows' bins ([`bins`], or [`MISSING`]) in the lanes of its missing-right column's word, and
/// their missing-left codes in the other column's; rows past `rows` are missing. The block's
/// threads stride over the (pair, feature) items, a pair's features adjacent (coalesced reads);
/// waits for the block and returns the staged words' `.shared` address.
///
/// # Safety
/// As [`dense_kernel`]'s.
unsafe fn stage(values: *const f32, (rows, cols): (u64, u64), first: u64, model: BinarisedModel, stride: u32) -> u32 {
    let shared = arch::shared_address(arch::dynamic_shared_memory());
    let threads = arch::block_dim_x();
    let features = model.num_features as u32;
    // No features (trees of no levels): nothing to stage.
    if let (Some(pair_step), Some(feature_step)) = (threads.checked_div(features), threads.checked_rem(features)) {
        let mut k = arch::thread_idx_x();
        let (mut pair, mut j) = (k / features, k % features);
        while k < threads * features {
            // SAFETY: `j < num_features`; the feature's thresholds and columns are the host's.
            unsafe {
                let f: BinarisedFeature =
                    bytemuck::cast(arch::load_global_nc_v4(model.features.add(j as usize).cast()));
                let table = model.thresholds.add(f.thresholds as usize);
                let value = |row: u64| {
                    if row >= rows || u64::from(f.feature) >= cols {
                        return f32::NAN;
                    }
                    arch::load(values.add(row as usize * cols as usize + f.feature as usize))
                };
                let pair_values = [value(first + pair as u64), value(first + (threads + pair) as u64)];
                let pair_bins = bins(pair_values, model.steps as u32, f.count, |i| arch::load(table.add(i as usize)));
                let code = |k: usize| if pair_values[k].is_nan() { MISSING } else { pair_bins[k] };
                let right = code(0) | (code(1) << 16);
                let at = shared + 4 * pair * stride;
                if f.columns & 0xFFFF != NO_COLUMN {
                    arch::store_shared_b32(at + 4 * (f.columns & 0xFFFF), right);
                }
                if f.columns >> 16 != NO_COLUMN {
                    arch::store_shared_b32(at + 4 * (f.columns >> 16), missing_left_codes(right));
                }
            }
            k += threads;
            pair += pair_step;
            j += feature_step;
            if j >= features {
                j -= features;
                pair += 1;
            }
        }
    }
    arch::sync_threads();
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `v < c_i` exactly when `bins(v) <= i`, and the lane arithmetic sends a value the side the
    /// float comparison does, for both missing directions, at every condition index of the range.
    #[test]
    fn codes_and_addends_decide_as_the_float_comparison() {
        let conditions = [-3.5f32, -0.0, 1.0, 2.5, 1e30];
        let steps = 3;
        let padded = |i: u32| conditions.get(i as usize).copied().unwrap_or(f32::INFINITY);
        let values = [-1e38, -3.5, -3.4, -0.0, 0.0, 0.5, 1.0, 2.5, 3.0, 1e30, f32::INFINITY, f32::NAN];
        for (i, &c) in conditions.iter().enumerate() {
            for &v in &values {
                for missing_left in [false, true] {
                    let right_code = if v.is_nan() { MISSING } else { bins([v], steps, 5, padded)[0] };
                    let code = if missing_left { missing_left_codes(right_code) } else { right_code };
                    let split = LevelSplit::new(0, i as u32, missing_left);
                    let expected = if v.is_nan() { !missing_left } else { v >= c };
                    assert_eq!(goes_right(code, split.add & 0xFFFF), expected, "v {v}, c {c}, left {missing_left}");
                }
            }
        }
        // The largest codes and addends stay inside a lane.
        assert_eq!(missing_left_codes(MISSING | (MISSING << 16)), 0);
        assert!(MISSING + (LevelSplit::new(0, 0, false).add & 0xFFFF) < 512);
        assert_eq!(bins([f32::INFINITY, 0.0], 8, 254, |_| f32::INFINITY), [254, 0]);
    }

    #[test]
    fn slots_reverse_the_index_bits() {
        assert_eq!(slot_of_index(0b110, 3), 0b011);
        assert_eq!(slot_of_index(0b1, 1), 0b1);
        assert_eq!(slot_of_index(0, 0), 0);
        assert_eq!(slot_of_index(0b1000_0000_0000_0001, 16), 0b1000_0000_0000_0001);
        assert_eq!(slot_of_index(0b0100_0000_0000_0000, 16), 0b10);
    }
}
