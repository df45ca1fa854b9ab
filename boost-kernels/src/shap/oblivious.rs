//! SHAP values of oblivious trees (a split a level, shared by the level's nodes), by dynamic
//! programming over the tree instead of its `2^d` paths one by one.
//!
//! With `A_n(t)`, the product of the factors `f(t) = z + (o − z) t` of the nodes from the root
//! down to node `n`, and `S_c(t) = Σ_leaves v Π f(t)`, the leaves under `c` with the factors of
//! the nodes below `c` (`S_n = Σ_children f_c S_c`, `S_leaf = v`), level `l`'s feature gets
//!
//! ```text
//! φ_l = Σ_{c a child at level l} (o_c − z_c) ∫₀¹ A_parent(c)(t) S_c(t) dt,
//! ```
//!
//! the paths' sum of [`super`] grouped by the node where the path crosses level `l`. A walk over
//! the leaves in order (a stack of `A` going down, of partial `S` coming up) visits each node
//! once, 4 quadrature points at a time, and decides a row's direction once a level instead of once
//! a path. Every node is visited whatever the row, so a warp's threads read the same node at once;
//! the loops over levels are written out for each depth, so the stacks live in registers. A
//! feature split on at several levels is one element of a path, as in [`super`]: its factor sits
//! at its last level's node (`z` the product of the path's fractions on it, taken when the row
//! takes all of its splits), the earlier levels' factors are 1 and their terms none. The 8-point
//! rule is exact up to depth [`MAX_OBLIVIOUS_DEPTH`] (deeper trees take the paths); the sums are
//! `f32` over a tree and 4 points, `f64` across them. 1.40x faster than the paths for 500 trees
//! of depth 8 on an H200 (docs/benchmarks.md).

use primitives_kernels::arch;

use super::DeviceRows;
use crate::evaluate::global_thread;
use crate::predict::{goes_left, DEFAULT_LEFT, FEATURE_MASK};

/// Deepest oblivious tree of the walk (its registers bound it; the 8-point rule would be exact to 16).
pub const MAX_OBLIVIOUS_DEPTH: usize = 10;

/// Points of the rule the walk integrates with.
pub const OBLIVIOUS_POINTS: usize = 8;

/// A level of an oblivious tree: its split (`feature` with [`DEFAULT_LEFT`], a value below `value`
/// going left), the levels up to it that split on its feature (bit `l` for level `l`, its own
/// included), and whether it is the last level on its feature (1) or a later one is (0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObliviousLevel {
    pub feature: u32,
    pub value: f32,
    pub levels: u32,
    pub last: u32,
}

impl ObliviousLevel {
    /// Whether a row whose split feature is `x` goes right.
    #[inline]
    fn goes_right(&self, x: f32) -> bool {
        !goes_left(x, self.value, self.feature & DEFAULT_LEFT != 0)
    }
}

/// An oblivious tree: its levels `first_level..first_level + depth`, its nodes below the root `first_node..` (node `n >= 1` of the tree
/// at `first_node + n - 1`), its `2^depth` leaves `first_leaf..`, and the output it adds to.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObliviousShapTree {
    pub first_level: u32,
    pub depth: u32,
    pub first_node: u32,
    pub first_leaf: u32,
    pub output: u32,
    pub _pad: u32,
}

/// Where a backend keeps the oblivious trees.
pub trait ObliviousMemory {
    fn tree(&self, i: usize) -> ObliviousShapTree;
    fn level(&self, i: usize) -> ObliviousLevel;
    /// Node `i`'s factor at point `q` when the row takes its way (`2 * i * Q + q`) and when not
    /// (`(2 * i + 1) * Q + q`), as [`super::ElementTable`] gives them (1 on a level whose feature a
    /// later one splits on).
    fn factor(&self, i: usize) -> f32;
    /// Node `i`'s cover fraction `z` (of its feature's splits down to it).
    fn fraction(&self, i: usize) -> f64;
    fn leaf(&self, i: usize) -> f32;
    /// Weight `q` of the 8-point rule.
    fn weight(&self, q: usize) -> f32;
}

/// The SHAP values of oblivious `tree` for the row whose values `value` gives: `add(feature, φ)`
/// a level, in level order.
#[inline]
pub fn oblivious_values(
    memory: &impl ObliviousMemory,
    tree: &ObliviousShapTree,
    value: &impl Fn(u32) -> f32,
    add: impl FnMut(u32, f64),
) {
    // A walk for each depth: its stacks indexed by constants, so they live in registers.
    macro_rules! walk {
        ($($d:literal)*) => {
            match tree.depth {
                $($d => walk::<$d>(memory, tree, value, add),)*
                _ => {}
            }
        };
    }
    walk!(1 2 3 4 5 6 7 8 9 10);
}

/// Runs `body` with `$l` bound to each of the literals in turn: a loop over levels written out,
/// so that every index into the walk's stacks is a constant and the stacks live in registers.
macro_rules! each_level {
    ($l:ident in $($n:literal)* => $body:block) => {
        $({
            let $l: usize = $n;
            $body
        })*
    };
}

/// Points of the rule a pass of the walk takes at once (each level's stack entry holds one value a
/// point: more at once, fewer steps over the tree but more registers).
const POINTS_AT_ONCE: usize = 4;

/// [`oblivious_values`] of a tree of depth `D`. The loops over levels are written out whole
/// ([`each_level`]), their bodies guarded by the depth and the leaf index (the same for every row).
#[inline(always)]
#[allow(unused_assignments)] // `rising` after the root
fn walk<const D: usize>(
    memory: &impl ObliviousMemory,
    tree: &ObliviousShapTree,
    value: &impl Fn(u32) -> f32,
    mut add: impl FnMut(u32, f64),
) {
    const P: usize = POINTS_AT_ONCE;
    let level = |l: usize| memory.level(tree.first_level as usize + l);
    // Bit `l` of `right`: the row goes right at level `l`; of `last`: no later level splits on
    // level `l`'s feature; `levels[l]`: the levels up to `l` on its feature.
    let (mut right, mut last) = (0u32, 0u32);
    let mut levels = [0u32; MAX_OBLIVIOUS_DEPTH];
    each_level!(l in 0 1 2 3 4 5 6 7 8 9 => {
        if l < D {
            let split = level(l);
            right |= u32::from(split.goes_right(value(split.feature & FEATURE_MASK))) << l;
            last |= u32::from(split.last != 0) << l;
            levels[l] = split.levels;
        }
    });
    let mut phi = [0f64; MAX_OBLIVIOUS_DEPTH];
    for first_point in (0..OBLIVIOUS_POINTS).step_by(P) {
        // `a[l]`: the weights times the factors down to the path's node at depth `l`; `s[l]`: the
        // partial `S` of the path's node at depth `l` (its finished children's `f_c S_c`); a value
        // a point of the pass.
        let mut a = [[0f32; P]; MAX_OBLIVIOUS_DEPTH + 1];
        let mut s = [[0f32; P]; MAX_OBLIVIOUS_DEPTH + 1];
        for (k, a) in a[0].iter_mut().enumerate() {
            *a = memory.weight(first_point + k);
        }
        for leaf in 0..1usize << D {
            // Bit `l`: the path goes right at level `l`.
            let path = (leaf as u32).reverse_bits() >> (32 - D);
            // The path's node at depth `l >= 1` and whether the row does not take its feature's
            // splits the path's way.
            let node = |l: usize| {
                let node = tree.first_node as usize + (1 << l) - 2 + (leaf >> (D - l));
                (node, (path ^ right) & levels[l - 1] != 0)
            };
            let factors = |(node, not_taken): (usize, bool)| {
                let at = (2 * node + usize::from(not_taken)) * OBLIVIOUS_POINTS + first_point;
                let mut f = [0f32; P];
                for (k, f) in f.iter_mut().enumerate() {
                    *f = memory.factor(at + k);
                }
                f
            };
            // Down from the first level where this path leaves the previous one.
            let from = if leaf == 0 { 0 } else { D - 1 - leaf.trailing_zeros() as usize };
            each_level!(l in 0 1 2 3 4 5 6 7 8 9 => {
                if l < D && l >= from {
                    let f = factors(node(l + 1));
                    for k in 0..P {
                        a[l + 1][k] = a[l][k] * f[k];
                    }
                }
            });
            // Up while the finished node is a right child (its parent is finished too).
            let mut child = [memory.leaf(tree.first_leaf as usize + leaf); P];
            let mut rising = true;
            each_level!(l in 10 9 8 7 6 5 4 3 2 1 => {
                if l <= D && rising {
                    let (at, not_taken) = node(l);
                    if last >> (l - 1) & 1 != 0 {
                        let mut term = 0f32;
                        for k in 0..P {
                            term += a[l - 1][k] * child[k];
                        }
                        let spread = f64::from(u8::from(!not_taken)) - memory.fraction(at);
                        phi[l - 1] += spread * f64::from(term);
                    }
                    let f = factors((at, not_taken));
                    for k in 0..P {
                        s[l - 1][k] += f[k] * child[k];
                    }
                    if leaf >> (D - l) & 1 == 0 {
                        rising = false;
                    } else {
                        child = s[l - 1];
                        s[l - 1] = [0.0; P];
                    }
                }
            });
        }
    }
    each_level!(l in 0 1 2 3 4 5 6 7 8 9 => {
        if l < D && last >> l & 1 != 0 {
            add(level(l).feature & FEATURE_MASK, phi[l]);
        }
    });
}

/// The oblivious trees as the kernels read them (see [`ObliviousMemory`]).
#[derive(Clone, Copy)]
pub struct DeviceObliviousTrees {
    pub trees: *const ObliviousShapTree,
    pub levels: *const ObliviousLevel,
    pub factors: *const f32,
    pub fractions: *const f64,
    pub leaves: *const f32,
    pub weights: *const f32,
}

impl ObliviousMemory for DeviceObliviousTrees {
    #[inline]
    fn tree(&self, i: usize) -> ObliviousShapTree {
        // SAFETY: the host uploads every tree, level, node, leaf and weight the trees refer to,
        // and the kernel reads no others (here and below).
        unsafe { arch::load(self.trees.add(i)) }
    }
    #[inline]
    fn level(&self, i: usize) -> ObliviousLevel {
        // SAFETY: as above.
        unsafe { arch::load(self.levels.add(i)) }
    }
    #[inline]
    fn factor(&self, i: usize) -> f32 {
        // SAFETY: as above.
        unsafe { arch::load(self.factors.add(i)) }
    }
    #[inline]
    fn fraction(&self, i: usize) -> f64 {
        // SAFETY: as above.
        unsafe { arch::load(self.fractions.add(i)) }
    }
    #[inline]
    fn leaf(&self, i: usize) -> f32 {
        // SAFETY: as above.
        unsafe { arch::load(self.leaves.add(i)) }
    }
    #[inline]
    fn weight(&self, q: usize) -> f32 {
        // SAFETY: as above.
        unsafe { arch::load(self.weights.add(q)) }
    }
}

/// [`super::contributions_kernel`] over oblivious trees: a thread a row of `rows` rows, `sums[(output
/// * width + feature) * rows + r] +=` the row's SHAP values over trees `0..num_trees` in order
/// ([`oblivious_values`]).
///
/// # Safety
/// The rows and trees hold what [`DeviceRows`] and [`DeviceObliviousTrees`] say, `first_row +
/// rows` rows; `sums` holds `outputs * width * rows` values, every tree's output is below
/// `outputs` and every level's feature below `width - 1`.
pub unsafe fn contributions_kernel(
    data: DeviceRows,
    first_row: u64,
    rows: u64,
    trees: DeviceObliviousTrees,
    num_trees: u64,
    sums: *mut f64,
    width: u64,
) {
    let r = global_thread();
    if r >= rows {
        return;
    }
    // SAFETY: the row is one of the rows (the caller).
    let value = |f: u32| unsafe { data.value(first_row + r, f) };
    for t in 0..num_trees as usize {
        let tree = trees.tree(t);
        let row_sums = sums.wrapping_add((u64::from(tree.output) * width * rows + r) as usize);
        oblivious_values(&trees, &tree, &value, |f, phi| {
            let at = row_sums.wrapping_add((u64::from(f) * rows) as usize);
            // SAFETY: within `sums` (the caller); only this thread touches its row's sums.
            unsafe { arch::store(at, arch::load(at) + phi) }
        });
    }
}
