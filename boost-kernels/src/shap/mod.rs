//! SHAP values of tree ensembles (Lundberg et al.'s TreeSHAP) on root-to-leaf paths, as
//! GPUTreeShap decomposes a model, with the Shapley weights integrated by Gauss–Legendre
//! quadrature: the arithmetic of `boost`'s CPU explanations and of its kernels, written once.
//!
//! A path is its leaf's value `v` and its distinct features `j`, each with `z_j`, the fraction of
//! the training cover that follows the path's splits on `j` (the product of their cover ratios),
//! and, for a row, `o_j`: 1 when the row takes every split of `j` on the path the path's way, else
//! 0. The SHAP value of feature `i` on the path is
//!
//! ```text
//! φ_i = v (o_i − z_i) ∫₀¹ Π_{j≠i} f_j(t) dt,   f_j(t) = z_j + (o_j − z_j) t,
//! ```
//!
//! (the Shapley weights `|S|! (d − |S| − 1)! / d!` are the Beta integrals `∫ t^|S| (1−t)^(d−|S|−1)`),
//! and the interaction value of two of its features `i ≠ k` (feature `k` conditioned on and off,
//! halved, as XGBoost defines it) is
//!
//! ```text
//! φ_ik = v/2 (o_i − z_i) (o_k − z_k) ∫₀¹ Π_{j≠i,k} f_j(t) dt.
//! ```
//!
//! The integrands are polynomials of degree below `d`, which a Gauss–Legendre rule of `Q` points
//! integrates exactly when `d ≤ 2Q`: 8 points for paths of up to 16 features (XGBoost's rule), 16
//! up to [`MAX_PATH_FEATURES`]. With `P_q = w_q Π_j f_j(t_q)`, `φ_i = v (o_i − z_i) Σ_q P_q / f_i(t_q)`
//! (`f_j > 0`: `z_j > 0`, `t_q < 1`). A row only picks each factor and its reciprocal from two,
//! `o_j` = 1 or 0: the host tabulates them per element and point ([`ElementTable`]), so a path
//! costs a row `2 d Q` multiplications in `f32` and no division; each path's value is then added
//! in `f64`. A row's values are the sums over the paths in model order, each path's terms in
//! element order: the same additions in the same order on both backends. The kernels: SHAP values
//! a thread a row over every path; interaction values a thread a (row, matrix row `i`) over the
//! paths on which feature `i` lies ([`element_interactions`]: each pair's bits whichever of its
//! two threads computes it), its row of sums in shared memory. Models of oblivious trees have
//! their own walk for SHAP values ([`oblivious`]).

pub mod oblivious;

use primitives_kernels::arch;

use crate::evaluate::global_thread;
use crate::predict::{category_bits_go_left, goes_left, CATEGORICAL, DEFAULT_LEFT, FEATURE_MASK};

/// Most distinct features on one path: a longer path is refused by the host.
pub const MAX_PATH_FEATURES: usize = 32;

/// The points of the rule that integrates a path of `features` distinct features exactly.
#[inline]
pub fn points_for(features: usize) -> usize {
    if features <= 16 {
        8
    } else {
        16
    }
}

/// Where a rule's weights start in the weight table (the 8-point rule's, then the 16-point one's).
#[inline]
pub fn weights_offset(points: usize) -> usize {
    if points == 8 {
        0
    } else {
        8
    }
}

/// Values of an element's table for a rule of `points` points ([`ElementTable`]).
#[inline]
pub fn table_len(points: usize) -> usize {
    4 * points
}

/// An element's table for a rule of `Q` points: at `4q` the factor `f(t_q)` when the row takes the
/// path's way (`z + (1 − z) t_q`), at `4q + 1` when it does not (`z (1 − t_q)`), at `4q + 2` and
/// `4q + 3` their reciprocals.
pub struct ElementTable;

impl ElementTable {
    /// The table of an element of cover fraction `z` under a rule of nodes `t`.
    pub fn fill(z: f64, nodes: impl Iterator<Item = f64>, mut push: impl FnMut(f32)) {
        for t in nodes {
            let (taken, not_taken) = (z + (1.0 - z) * t, z * (1.0 - t));
            push(taken as f32);
            push(not_taken as f32);
            push((1.0 / taken) as f32);
            push((1.0 / not_taken) as f32);
        }
    }
}

/// A root-to-leaf path: its elements `first..first + len`, the output its leaf adds to, the points
/// of its rule ([`points_for`]), and its leaf value (times the tree's weight).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShapPath {
    pub first: u32,
    pub len: u32,
    pub output: u32,
    pub points: u32,
    pub value: f64,
}

/// A distinct feature of a path: its splits `first_split..first_split + splits`, where its table
/// starts ([`ElementTable`]), and `z`, the cover fraction that follows its splits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShapElement {
    pub feature: u32,
    pub first_split: u32,
    pub splits: u32,
    pub table: u32,
    pub zero_fraction: f64,
}

/// A split on a path as [`crate::predict::PredictNode`] encodes one (`feature` with its flags;
/// `value` the condition, or for a categorical split where its bitset starts in the category
/// words, as bits) and the way the path takes (`left`: 1 for the left child).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShapSplit {
    pub feature: u32,
    pub value: f32,
    pub left: u32,
    pub _pad: u32,
}

impl ShapSplit {
    /// Whether a row whose split feature is `x` takes this split the path's way; `word(i)` reads
    /// the category words.
    #[inline]
    pub fn taken(&self, x: f32, word: impl Fn(usize) -> u32) -> bool {
        let default_left = self.feature & DEFAULT_LEFT != 0;
        let left = if self.feature & CATEGORICAL != 0 {
            let at = self.value.to_bits() as usize;
            category_bits_go_left(x, default_left, word(at), |w| word(at + 1 + w as usize))
        } else {
            goes_left(x, self.value, default_left)
        };
        left == (self.left != 0)
    }

    /// The split's feature index.
    #[inline]
    pub fn feature_index(&self) -> u32 {
        self.feature & FEATURE_MASK
    }
}

/// Where a backend keeps the paths.
pub trait PathMemory {
    fn path(&self, i: usize) -> ShapPath;
    fn element(&self, i: usize) -> ShapElement;
    fn split(&self, i: usize) -> ShapSplit;
    fn category_word(&self, i: usize) -> u32;
    /// Value `i` of the element tables.
    fn table(&self, i: usize) -> f32;
    /// Weight `i` of the rules' weights ([`weights_offset`]).
    fn weight(&self, i: usize) -> f32;
}

/// Which of `path`'s elements a row takes (bit `j` for element `j`); `value(feature)` gives the
/// row's values (NaN: missing).
#[inline]
fn taken_mask(memory: &impl PathMemory, path: &ShapPath, value: &impl Fn(u32) -> f32) -> u32 {
    let mut mask = 0;
    for j in 0..path.len as usize {
        let element = memory.element(path.first as usize + j);
        let x = value(element.feature);
        let mut taken = true;
        for s in 0..element.splits as usize {
            taken &= memory.split(element.first_split as usize + s).taken(x, |i| memory.category_word(i));
        }
        mask |= u32::from(taken) << j;
    }
    mask
}

/// `P_q = w_q Π_j f_j(t_q)` of a path for a row taking the elements of `mask`.
#[inline]
fn products<const Q: usize>(memory: &impl PathMemory, path: &ShapPath, mask: u32) -> [f32; Q] {
    let mut p = [0f32; Q];
    let weights = weights_offset(Q);
    for (q, p) in p.iter_mut().enumerate() {
        *p = memory.weight(weights + q);
    }
    for j in 0..path.len as usize {
        let table = memory.element(path.first as usize + j).table as usize;
        let not_taken = (mask >> j & 1 == 0) as usize;
        for (q, p) in p.iter_mut().enumerate() {
            *p *= memory.table(table + 4 * q + not_taken);
        }
    }
    p
}

/// `Σ_q P_q / f_j(t_q)` of element `j` (its table at `table`), taken or not.
#[inline]
fn integral<const Q: usize>(memory: &impl PathMemory, p: &[f32; Q], table: usize, not_taken: usize) -> f32 {
    let mut sum = 0f32;
    for (q, p) in p.iter().enumerate() {
        sum += p * memory.table(table + 4 * q + 2 + not_taken);
    }
    sum
}

/// The SHAP values of `path` for the row whose values `value` gives: `add(feature, φ)` a feature,
/// in element order.
#[inline]
pub fn path_values(memory: &impl PathMemory, path: &ShapPath, value: &impl Fn(u32) -> f32, add: impl FnMut(u32, f64)) {
    let mask = taken_mask(memory, path, value);
    match path.points {
        8 => contributions::<8>(memory, path, mask, add),
        _ => contributions::<16>(memory, path, mask, add),
    }
}

#[inline]
fn contributions<const Q: usize>(memory: &impl PathMemory, path: &ShapPath, mask: u32, mut add: impl FnMut(u32, f64)) {
    let p = products::<Q>(memory, path, mask);
    for j in 0..path.len as usize {
        let element = memory.element(path.first as usize + j);
        let taken = mask >> j & 1 != 0;
        let sum = integral::<Q>(memory, &p, element.table as usize, usize::from(!taken));
        let spread = f64::from(u8::from(taken)) - element.zero_fraction;
        add(element.feature, path.value * spread * f64::from(sum));
    }
}

/// The SHAP values of `path` (through `add` as [`path_values`]) and its pairs' interaction values,
/// `pair(i, k, φ_ik)` for the features of elements `i < k`, in that order.
#[inline]
pub fn path_interactions(
    memory: &impl PathMemory,
    path: &ShapPath,
    value: &impl Fn(u32) -> f32,
    add: impl FnMut(u32, f64),
    pair: impl FnMut(u32, u32, f64),
) {
    let mask = taken_mask(memory, path, value);
    match path.points {
        8 => {
            contributions::<8>(memory, path, mask, add);
            interactions::<8>(memory, path, mask, pair);
        }
        _ => {
            contributions::<16>(memory, path, mask, add);
            interactions::<16>(memory, path, mask, pair);
        }
    }
}

#[inline]
fn interactions<const Q: usize>(
    memory: &impl PathMemory,
    path: &ShapPath,
    mask: u32,
    mut pair: impl FnMut(u32, u32, f64),
) {
    let p = products::<Q>(memory, path, mask);
    let d = path.len as usize;
    for i in 0..d {
        let ei = memory.element(path.first as usize + i);
        let not_i = usize::from(mask >> i & 1 == 0);
        // P_q / f_i(t_q)
        let mut pi = [0f32; Q];
        for (q, pi) in pi.iter_mut().enumerate() {
            *pi = p[q] * memory.table(ei.table as usize + 4 * q + 2 + not_i);
        }
        let spread_i = f64::from(u8::from(not_i == 0)) - ei.zero_fraction;
        for k in i + 1..d {
            let ek = memory.element(path.first as usize + k);
            let taken = mask >> k & 1 != 0;
            let sum = integral::<Q>(memory, &pi, ek.table as usize, usize::from(!taken));
            let spread_k = f64::from(u8::from(taken)) - ek.zero_fraction;
            pair(ei.feature, ek.feature, 0.5 * path.value * spread_i * spread_k * f64::from(sum));
        }
    }
}

/// Element `i`'s share of `path`'s interaction values for a row: `add(φ_i)`, then
/// `pair(feature_k, φ_ik)` for each other element `k` in element order, each pair the bits
/// [`path_interactions`] gives it (the pair's terms in the order of its lower element).
#[inline]
pub fn element_interactions(
    memory: &impl PathMemory,
    path: &ShapPath,
    value: &impl Fn(u32) -> f32,
    i: usize,
    add: impl FnMut(f64),
    pair: impl FnMut(u32, f64),
) {
    let mask = taken_mask(memory, path, value);
    match path.points {
        8 => element_pairs::<8>(memory, path, mask, i, add, pair),
        _ => element_pairs::<16>(memory, path, mask, i, add, pair),
    }
}

#[inline]
fn element_pairs<const Q: usize>(
    memory: &impl PathMemory,
    path: &ShapPath,
    mask: u32,
    i: usize,
    mut add: impl FnMut(f64),
    mut pair: impl FnMut(u32, f64),
) {
    let p = products::<Q>(memory, path, mask);
    let ei = memory.element(path.first as usize + i);
    let not_i = usize::from(mask >> i & 1 == 0);
    let ti = ei.table as usize + 2 + not_i;
    // P_q / f_i(t_q), summed as `contributions` sums it.
    let mut pi = [0f32; Q];
    let mut sum = 0f32;
    for (q, pi) in pi.iter_mut().enumerate() {
        *pi = p[q] * memory.table(ti + 4 * q);
        sum += *pi;
    }
    let spread_i = f64::from(u8::from(not_i == 0)) - ei.zero_fraction;
    add(path.value * spread_i * f64::from(sum));
    for k in 0..path.len as usize {
        if k == i {
            continue;
        }
        let ek = memory.element(path.first as usize + k);
        let taken = mask >> k & 1 != 0;
        let tk = ek.table as usize + 2 + usize::from(!taken);
        let spread_k = f64::from(u8::from(taken)) - ek.zero_fraction;
        let mut sum = 0f32;
        let phi = if k > i {
            for (q, pi) in pi.iter().enumerate() {
                sum += pi * memory.table(tk + 4 * q);
            }
            0.5 * path.value * spread_i * spread_k * f64::from(sum)
        } else {
            for (q, p) in p.iter().enumerate() {
                sum += p * memory.table(tk + 4 * q) * memory.table(ti + 4 * q);
            }
            0.5 * path.value * spread_k * spread_i * f64::from(sum)
        };
        pair(ek.feature, phi);
    }
}

/// Row `i`'s entries of an interaction matrix of `width` columns with the diagonal filled:
/// `pair(k)` reads the accumulated `φ_ik` (0 on the diagonal and in the bias column), the diagonal
/// is `contribution − Σ_k φ_ik` (summed in column order), each entry rounded to `f32` through
/// `write(k, value)`.
#[inline]
pub fn finish_interaction_row(
    width: usize,
    i: usize,
    contribution: f64,
    pair: impl Fn(usize) -> f64,
    mut write: impl FnMut(usize, f32),
) {
    let mut others = 0.0;
    for k in 0..width {
        others += pair(k);
    }
    for k in 0..width {
        write(k, if k == i { (contribution - others) as f32 } else { pair(k) as f32 });
    }
}

/// The paths as the kernels read them (see [`PathMemory`]).
#[derive(Clone, Copy)]
pub struct DevicePaths {
    pub paths: *const ShapPath,
    pub elements: *const ShapElement,
    pub splits: *const ShapSplit,
    pub category_words: *const u32,
    pub tables: *const f32,
    pub weights: *const f32,
}

impl PathMemory for DevicePaths {
    #[inline]
    fn path(&self, i: usize) -> ShapPath {
        // SAFETY: the host uploads every path, element, split, word, table and weight that the
        // paths refer to, and the kernels read no others (here and below).
        unsafe { arch::load(self.paths.add(i)) }
    }
    #[inline]
    fn element(&self, i: usize) -> ShapElement {
        // SAFETY: as above.
        unsafe { arch::load(self.elements.add(i)) }
    }
    #[inline]
    fn split(&self, i: usize) -> ShapSplit {
        // SAFETY: as above.
        unsafe { arch::load(self.splits.add(i)) }
    }
    #[inline]
    fn category_word(&self, i: usize) -> u32 {
        // SAFETY: as above.
        unsafe { arch::load(self.category_words.add(i)) }
    }
    #[inline]
    fn table(&self, i: usize) -> f32 {
        // SAFETY: as above.
        unsafe { arch::load(self.tables.add(i)) }
    }
    #[inline]
    fn weight(&self, i: usize) -> f32 {
        // SAFETY: as above.
        unsafe { arch::load(self.weights.add(i)) }
    }
}

/// Rows as the kernels read them: dense (`row_ptr` null: `values` holds `rows * cols`) or CSR
/// (`row_ptr` holds `rows + 1` offsets into `col_indices` and `values`; of two entries of one
/// column the later counts, as the host's expansion of a row).
#[derive(Clone, Copy)]
pub struct DeviceRows {
    pub values: *const f32,
    pub cols: u64,
    pub row_ptr: *const u64,
    pub col_indices: *const u32,
}

impl DeviceRows {
    /// Row `row`'s value of `feature` (NaN: missing).
    ///
    /// # Safety
    /// `row` is one of the rows, which hold what [`DeviceRows`] says.
    #[inline]
    unsafe fn value(&self, row: u64, feature: u32) -> f32 {
        if self.row_ptr.is_null() {
            if u64::from(feature) >= self.cols {
                return f32::NAN;
            }
            // SAFETY: `row < rows`, `feature < cols` (the caller).
            return unsafe { arch::load(self.values.add((row * self.cols + u64::from(feature)) as usize)) };
        }
        // SAFETY: `row + 1 <= rows` (the caller).
        let (begin, end) =
            unsafe { (arch::load(self.row_ptr.add(row as usize)), arch::load(self.row_ptr.add(row as usize + 1))) };
        let mut found = f32::NAN;
        for entry in begin as usize..end as usize {
            // SAFETY: the row's entries are within both arrays (the caller).
            if unsafe { arch::load(self.col_indices.add(entry)) } == feature {
                // SAFETY: as above.
                found = unsafe { arch::load(self.values.add(entry)) };
            }
        }
        found
    }
}

/// A thread a row of `rows` rows (the batch's rows from `first_row`): `sums[(output * width +
/// feature) * rows + r] +=` the row's SHAP values over paths `0..num_paths` in order
/// ([`path_values`]).
///
/// # Safety
/// The rows and paths hold what [`DeviceRows`] and [`DevicePaths`] say, `first_row + rows` rows;
/// `sums` holds `outputs * width * rows` values, every path's output is below `outputs` and every
/// element's feature below `width - 1`.
pub unsafe fn contributions_kernel(
    data: DeviceRows,
    first_row: u64,
    rows: u64,
    paths: DevicePaths,
    num_paths: u64,
    sums: *mut f64,
    width: u64,
) {
    let r = global_thread();
    if r >= rows {
        return;
    }
    // SAFETY: the row is one of the rows (the caller).
    let value = |f: u32| unsafe { data.value(first_row + r, f) };
    for p in 0..num_paths as usize {
        let path = paths.path(p);
        let row_sums = sums.wrapping_add((u64::from(path.output) * width * rows + r) as usize);
        path_values(&paths, &path, &value, |f, phi| {
            let at = row_sums.wrapping_add((u64::from(f) * rows) as usize);
            // SAFETY: within `sums` (the caller); only this thread touches its row's sums.
            unsafe { arch::store(at, arch::load(at) + phi) }
        });
    }
}

/// Where a feature appears among the paths: the path and the element's place on it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShapOccurrence {
    pub path: u32,
    pub element: u32,
}

/// Interaction values, a thread a (row, output `o`, matrix row `a`): the thread sums over the
/// paths of output `o` on which feature `a` lies, in model order (the occurrences from
/// `offsets[o * width + a]` to `offsets[o * width + a + 1]`), feature `a`'s SHAP value and its
/// pairs' values ([`element_interactions`]), and writes the matrix row
/// ([`finish_interaction_row`]) to `out[((r * outputs + o) * width + a) * width..]`, the bias
/// (`expected[o] + bases[r * outputs + o]`) on the last diagonal entry. A block's threads are consecutive rows of one matrix row (the
/// grid `row_blocks * outputs * width` blocks), so a warp walks one list of paths. A row's sums
/// are `width` `f64` values: in `scratch[((o * width + a) * width + k) * rows + r]`, or with
/// `scratch` null in dynamic shared memory (`width * block_dim` of them).
///
/// # Safety
/// As [`contributions_kernel`]'s; `offsets` holds `outputs * width + 1` ascending offsets into
/// `occurrences`, each naming a path of output `o` and an element of feature `a`; `expected` holds
/// `outputs` values, `bases` `rows * outputs`, `out` `rows * outputs * width * width`; `scratch`
/// as above, or the launch's dynamic shared memory `width * block_dim * 8` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn interactions_kernel(
    data: DeviceRows,
    first_row: u64,
    rows: u64,
    paths: DevicePaths,
    offsets: *const u32,
    occurrences: *const ShapOccurrence,
    expected: *const f32,
    bases: *const f32,
    out: *mut f32,
    scratch: *mut f64,
    outputs: u64,
    width: u64,
) {
    let (thread, threads) = (u64::from(arch::thread_idx_x()), u64::from(arch::block_dim_x()));
    let row_blocks = rows.div_ceil(threads);
    let block = u64::from(arch::block_idx_x());
    let (r, matrix_row) = ((block % row_blocks) * threads + thread, block / row_blocks);
    if r >= rows {
        return;
    }
    let (o, a) = (matrix_row / width, matrix_row % width);
    let sums = if scratch.is_null() {
        (arch::dynamic_shared_memory() as *mut f64).wrapping_add(thread as usize)
    } else {
        scratch.wrapping_add((matrix_row * width * rows + r) as usize)
    };
    let stride = if scratch.is_null() { threads } else { rows } as usize;
    // SAFETY: sum `k < width` of this thread's row, in shared memory or `scratch` (the caller);
    // no other thread touches it.
    let sum = |k: usize| sums.wrapping_add(k * stride);
    for k in 0..width as usize {
        // SAFETY: as above.
        unsafe { arch::store(sum(k), 0.0) };
    }
    // SAFETY: the row is one of the rows (the caller).
    let value = |f: u32| unsafe { data.value(first_row + r, f) };
    // SAFETY: `matrix_row < outputs * width` (the grid), the offsets' bounds (the caller).
    let (begin, end) =
        unsafe { (arch::load(offsets.add(matrix_row as usize)), arch::load(offsets.add(matrix_row as usize + 1))) };
    let mut contribution = 0f64;
    for n in begin as usize..end as usize {
        // SAFETY: `n` is below the last offset (the caller).
        let occurrence = unsafe { arch::load(occurrences.add(n)) };
        let path = paths.path(occurrence.path as usize);
        element_interactions(
            &paths,
            &path,
            &value,
            occurrence.element as usize,
            |phi| contribution += phi,
            |k, phi| {
                // SAFETY: as above; every element's feature is below `width - 1` (the caller).
                unsafe { arch::store(sum(k as usize), arch::load(sum(k as usize)) + phi) }
            },
        );
    }
    // SAFETY: within `expected` and `bases` (the caller).
    let bias = unsafe { arch::load(expected.add(o as usize)) + arch::load(bases.add((r * outputs + o) as usize)) };
    let row = out.wrapping_add((((r * outputs + o) * width + a) * width) as usize);
    // SAFETY: as above.
    let pair = |k: usize| unsafe { arch::load(sum(k)) };
    finish_interaction_row(width as usize, a as usize, contribution, pair, |k, v| {
        let v = if a == width - 1 && k as u64 == width - 1 { bias } else { v };
        // SAFETY: the row's `width` values are within `out` (the caller).
        unsafe { arch::store(row.add(k), v) }
    });
}

/// A thread a (row, output, feature) of a batch: `out[(r * outputs + o) * width + f]` = the row's
/// SHAP value rounded to `f32`, or for the bias column `expected[o] + bases[r * outputs + o]`.
///
/// # Safety
/// `contributions` as [`contributions_kernel`] fills it for `rows` rows; `expected` holds
/// `outputs` values, `bases` `rows * outputs`, `out` `rows * outputs * width`.
pub unsafe fn finish_kernel(
    contributions: *const f64,
    expected: *const f32,
    bases: *const f32,
    out: *mut f32,
    rows: u64,
    outputs: u64,
    width: u64,
) {
    let t = global_thread();
    if t >= rows * outputs * width {
        return;
    }
    let (r, o, i) = (t / (outputs * width), t / width % outputs, t % width);
    let value = if i == width - 1 {
        // SAFETY: within `expected` and `bases` (the caller).
        unsafe { arch::load(expected.add(o as usize)) + arch::load(bases.add((r * outputs + o) as usize)) }
    } else {
        // SAFETY: within `contributions` (the caller).
        unsafe { arch::load(contributions.add(((o * width + i) * rows + r) as usize)) as f32 }
    };
    // SAFETY: within `out` (the caller).
    unsafe { arch::store(out.add(t as usize), value) };
}
