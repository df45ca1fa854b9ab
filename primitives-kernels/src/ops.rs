//! Element types and associative operators.
//!
//! Every algorithm is generic over an element `T: Element` (any [`bytemuck::Pod`] type: plain bits, no
//! padding, no pointers, so it can cross the host/device boundary and the warp shuffles) and an
//! operator `Op: AssociativeOp<T>`. Operators are zero-sized types, so the GPU code is monomorphised
//! for each one, as CUB's templates are.

use bytemuck::Pod;

/// An element the primitives can move between threads, shared memory and the host: any `Pod` type of
/// at most [`crate::arch::MAX_ELEMENT_BYTES`] bytes.
pub trait Element: Pod {}
impl<T: Pod> Element for T {}

/// An associative binary operator with an identity: `combine(a, combine(b, c)) ==
/// combine(combine(a, b), c)` and `combine(identity(), a) == a == combine(a, identity())`.
///
/// Parallel algorithms regroup the operations (they never reorder operands unless an algorithm says
/// so), so floating-point sums are exact only up to rounding. Commutativity is not assumed.
pub trait AssociativeOp<T>: Copy + Default + 'static {
    /// The neutral element.
    fn identity() -> T;
    /// The operation.
    fn combine(a: T, b: T) -> T;
}

/// Addition. Integers wrap on overflow (as the GPU does); floats round at each step.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Sum;

/// Minimum. For floats NaN operands are ignored (IEEE `minNum`, PTX `min.f32`), so the result does not
/// depend on the order of reduction; an all-NaN (or empty) input reduces to the identity, +infinity.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Min;

/// Maximum. For floats NaN operands are ignored, as for [`Min`]; an all-NaN input gives -infinity.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Max;

macro_rules! int_ops {
    ($($t:ty),*) => {$(
        impl AssociativeOp<$t> for Sum {
            #[inline(always)]
            fn identity() -> $t { 0 }
            #[inline(always)]
            fn combine(a: $t, b: $t) -> $t { a.wrapping_add(b) }
        }
        impl AssociativeOp<$t> for Min {
            #[inline(always)]
            fn identity() -> $t { <$t>::MAX }
            #[inline(always)]
            fn combine(a: $t, b: $t) -> $t { if b < a { b } else { a } }
        }
        impl AssociativeOp<$t> for Max {
            #[inline(always)]
            fn identity() -> $t { <$t>::MIN }
            #[inline(always)]
            fn combine(a: $t, b: $t) -> $t { if b > a { b } else { a } }
        }
    )*};
}

macro_rules! float_ops {
    ($($t:ty),*) => {$(
        impl AssociativeOp<$t> for Sum {
            #[inline(always)]
            fn identity() -> $t { 0.0 }
            #[inline(always)]
            fn combine(a: $t, b: $t) -> $t { a + b }
        }
        impl AssociativeOp<$t> for Min {
            #[inline(always)]
            fn identity() -> $t { <$t>::INFINITY }
            #[inline(always)]
            fn combine(a: $t, b: $t) -> $t { a.min(b) }
        }
        impl AssociativeOp<$t> for Max {
            #[inline(always)]
            fn identity() -> $t { <$t>::NEG_INFINITY }
            #[inline(always)]
            fn combine(a: $t, b: $t) -> $t { a.max(b) }
        }
    )*};
}

int_ops!(u8, u16, u32, u64, i8, i16, i32, i64);
float_ops!(f32, f64);

/// A gradient and a hessian: the statistic that boosting sums per node and per histogram bin.
/// `GradientPair<i64>` holds the 64-bit fixed-point form (exact, order-independent sums).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct GradientPair<T> {
    pub grad: T,
    pub hess: T,
}

impl<T> GradientPair<T> {
    pub const fn new(grad: T, hess: T) -> Self {
        Self { grad, hess }
    }
}

macro_rules! gradient_pairs {
    ($($t:ty),*) => {$(
        // SAFETY: repr(C) with two fields of the same Pod type: no padding, every bit pattern valid.
        unsafe impl bytemuck::Zeroable for GradientPair<$t> {}
        // SAFETY: as above; the type is Copy and 'static.
        unsafe impl bytemuck::Pod for GradientPair<$t> {}

        /// Component-wise sum.
        impl AssociativeOp<GradientPair<$t>> for Sum {
            #[inline(always)]
            fn identity() -> GradientPair<$t> {
                GradientPair::new(<Sum as AssociativeOp<$t>>::identity(), <Sum as AssociativeOp<$t>>::identity())
            }
            #[inline(always)]
            fn combine(a: GradientPair<$t>, b: GradientPair<$t>) -> GradientPair<$t> {
                GradientPair::new(<Sum as AssociativeOp<$t>>::combine(a.grad, b.grad), <Sum as AssociativeOp<$t>>::combine(a.hess, b.hess))
            }
        }
    )*};
}

gradient_pairs!(f32, f64, i64);

#[cfg(test)]
mod tests {
    use super::*;

    fn check_identity<T: Copy + PartialEq + core::fmt::Debug, Op: AssociativeOp<T>>(samples: &[T]) {
        for &x in samples {
            assert_eq!(Op::combine(Op::identity(), x), x);
            assert_eq!(Op::combine(x, Op::identity()), x);
        }
    }

    #[test]
    fn identities_are_neutral() {
        check_identity::<i32, Sum>(&[i32::MIN, -1, 0, 7, i32::MAX]);
        check_identity::<i32, Min>(&[i32::MIN, -1, 0, 7, i32::MAX]);
        check_identity::<i32, Max>(&[i32::MIN, -1, 0, 7, i32::MAX]);
        check_identity::<u64, Sum>(&[0, 1, u64::MAX]);
        check_identity::<u64, Min>(&[0, 1, u64::MAX]);
        check_identity::<u64, Max>(&[0, 1, u64::MAX]);
        check_identity::<f32, Sum>(&[-1.5, 0.0, 3.25, f32::MAX, f32::INFINITY]);
        check_identity::<f64, Min>(&[-1.5, 0.0, 3.25, f64::MAX, f64::NEG_INFINITY]);
        check_identity::<f64, Max>(&[-1.5, 0.0, 3.25, f64::MIN, f64::INFINITY]);
    }

    #[test]
    fn float_min_max_ignore_nan_in_any_order() {
        assert_eq!(<Min as AssociativeOp<f32>>::combine(f32::NAN, 2.0), 2.0);
        assert_eq!(<Min as AssociativeOp<f32>>::combine(2.0, f32::NAN), 2.0);
        assert_eq!(<Max as AssociativeOp<f64>>::combine(f64::NAN, -2.0), -2.0);
        assert_eq!(<Max as AssociativeOp<f64>>::combine(-2.0, f64::NAN), -2.0);
    }

    #[test]
    fn integer_sum_wraps() {
        assert_eq!(<Sum as AssociativeOp<u32>>::combine(u32::MAX, 2), 1);
        assert_eq!(<Sum as AssociativeOp<i64>>::combine(i64::MAX, 1), i64::MIN);
    }
}
