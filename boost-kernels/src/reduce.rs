//! Sums whose rounding is fixed by their definition, not by the thread count or the device, so that
//! a floating-point sum the CPU and the GPU both take (the gradient quantiser's) has the same bits on
//! both. The terms go in blocks of [`SUM_BLOCK`]; a block is 32 lane partials (lane `l` adds terms
//! `l`, `l + 32`, `l + 64`, ... of the block, in order), combined as a warp's shuffle-down tree does
//! (at step 16, 8, 4, 2, 1, partial `l` becomes `l`'s plus `l + step`'s); the block sums are then
//! added in block order. The GPU computes a block with one warp ([`warp_block_sum`]), the CPU with
//! one loop ([`block_sum`]); both run [`lane_partial`] and add the same pairs.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

/// Terms per block: one warp's share on the device.
pub const SUM_BLOCK: usize = 1024;

const LANES: usize = arch::WARP_SIZE as usize;

/// A value the blocked sums add.
pub trait BlockSum: Copy + bytemuck::Pod {
    fn zero() -> Self;
    fn plus(self, other: Self) -> Self;
}

impl BlockSum for f64 {
    fn zero() -> Self {
        0.0
    }
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self + other
    }
}

/// Fixed-point pairs add exactly (wrapping never happens within the quantiser's bound).
impl BlockSum for GradientPair<i64> {
    fn zero() -> Self {
        GradientPair::new(0, 0)
    }
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        crate::fixed_point::add(self, other)
    }
}

/// Counts add as integers.
impl BlockSum for u32 {
    fn zero() -> Self {
        0
    }
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}

/// How many blocks `n` terms make.
pub fn blocks(n: usize) -> usize {
    n.div_ceil(SUM_BLOCK)
}

/// Lane `lane`'s partial sum of block `block` of `n` terms.
#[inline(always)]
pub fn lane_partial<T: BlockSum>(n: usize, block: usize, lane: usize, mut term: impl FnMut(usize) -> T) -> T {
    let start = block * SUM_BLOCK;
    let end = if start + SUM_BLOCK < n { start + SUM_BLOCK } else { n };
    let mut sum = T::zero();
    let mut i = start + lane;
    while i < end {
        sum = sum.plus(term(i));
        i += LANES;
    }
    sum
}

/// Block `block`'s sum, on the host.
pub fn block_sum<T: BlockSum>(n: usize, block: usize, mut term: impl FnMut(usize) -> T) -> T {
    let mut partials = [T::zero(); LANES];
    for (lane, partial) in partials.iter_mut().enumerate() {
        *partial = lane_partial(n, block, lane, &mut term);
    }
    let mut step = LANES / 2;
    while step > 0 {
        for l in 0..step {
            partials[l] = partials[l].plus(partials[l + step]);
        }
        step /= 2;
    }
    partials[0]
}

/// The sum of `n` terms, blocks in order, on the host.
pub fn sum<T: BlockSum>(n: usize, mut term: impl FnMut(usize) -> T) -> T {
    (0..blocks(n)).fold(T::zero(), |total, block| total.plus(block_sum(n, block, &mut term)))
}

/// Block `block`'s sum on the device, in lane 0 of the calling warp (every lane must call it, with
/// the same `block`).
#[inline(always)]
pub fn warp_block_sum<T: BlockSum>(n: usize, block: usize, term: impl FnMut(usize) -> T) -> T {
    warp_sum(lane_partial(n, block, arch::lane_id() as usize, term))
}

/// The calling warp's lane partials combined as [`block_sum`] combines them, in lane 0 (every lane
/// must call it).
#[inline(always)]
pub fn warp_sum<T: BlockSum>(mut sum: T) -> T {
    let mut step = LANES as u32 / 2;
    while step > 0 {
        // Lane `l < step` adds lane `l + step`'s partial, as `block_sum` does.
        sum = sum.plus(arch::shfl_down_sync(arch::FULL_MASK, sum, step));
        step /= 2;
    }
    sum
}
