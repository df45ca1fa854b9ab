//! The reference of the precision experiment: an exact sum of `f64`s (so of `f32`s too), rounded
//! once, correctly, at the end.
//!
//! Why not `primitives::cpu::compensated_sum`: Neumaier's compensated sum is accurate to about one
//! ulp of the sum plus `n * 2^-106 * sum(|x|)`, not exact, and it is itself a float computation whose
//! error we would have to argue about. The errors measured here (down to `1e-12` for fixed point and
//! `f64`) are worth an exact reference.
//!
//! The method is a superaccumulator: every finite `f64` is `m * 2^e` with an integer `|m| < 2^53` and
//! `e >= -1074`, so it is an integer multiple of `2^-1074`. The accumulator holds that integer in
//! base `2^32`, one `i64` per digit: an addition puts the (at most 84-bit, after alignment) shifted
//! mantissa into three digits, without carries. Each digit takes less than `2^32` per addition, so
//! `2^31` additions fit before the carries must be propagated ([`ExactSum::normalize`], done every
//! `2^30`). The final rounding takes the top 64 to 96 bits and a sticky bit for the rest, and rounds
//! to nearest, ties to even (at `2^-1074` for results in the subnormal range).

/// Exponent of the lowest digit: a multiple of 32 at or below `-1074`.
const LOWEST_EXPONENT: i32 = -1088;
/// Digits: from `2^-1088` to past `2^1024`, plus three digits of headroom for the carries of up to
/// `2^64` additions of values near `f64::MAX`.
const DIGITS: usize = ((1024 - LOWEST_EXPONENT) / 32) as usize + 1 + 3;
/// Additions between carry propagations (each digit holds less than `2^63`).
const NORMALIZE_EVERY: u32 = 1 << 30;

/// An exact sum of finite `f64` values. Adding a NaN or an infinity makes [`ExactSum::round`] NaN.
#[derive(Clone, Debug)]
pub struct ExactSum {
    digits: [i64; DIGITS],
    pending: u32,
    non_finite: bool,
}

impl Default for ExactSum {
    fn default() -> Self {
        Self { digits: [0; DIGITS], pending: 0, non_finite: false }
    }
}

impl ExactSum {
    pub fn new() -> Self {
        Self::default()
    }

    /// The exact sum of `values`.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Self {
        let mut sum = Self::new();
        for x in values {
            sum.add(x);
        }
        sum
    }

    /// Adds `x` exactly.
    #[inline]
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            self.non_finite = true;
            return;
        }
        if x == 0.0 {
            return;
        }
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1 << 52) - 1);
        // x = mantissa * 2^exponent, exactly.
        let (mantissa, exponent) = if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased - 1075) };
        let shift = (exponent - LOWEST_EXPONENT) as u32;
        let (digit, offset) = ((shift / 32) as usize, shift % 32);
        let aligned = (mantissa as u128) << offset;
        let chunks = [aligned as u32 as i64, (aligned >> 32) as u32 as i64, (aligned >> 64) as u32 as i64];
        if x > 0.0 {
            for (d, c) in self.digits[digit..digit + 3].iter_mut().zip(chunks) {
                *d += c;
            }
        } else {
            for (d, c) in self.digits[digit..digit + 3].iter_mut().zip(chunks) {
                *d -= c;
            }
        }
        self.pending += 1;
        if self.pending == NORMALIZE_EVERY {
            self.normalize();
        }
    }

    /// Adds an `f32` exactly.
    #[inline]
    pub fn add_f32(&mut self, x: f32) {
        self.add(x as f64);
    }

    /// Propagates carries: every digit but the top one in `0..2^32`, the top one signed. The value
    /// is unchanged.
    pub fn normalize(&mut self) {
        for i in 0..DIGITS - 1 {
            let carry = self.digits[i] >> 32; // floor division by 2^32
            self.digits[i] -= carry << 32;
            self.digits[i + 1] += carry;
        }
        self.pending = 0;
    }

    /// `self - x`, rounded to the nearest `f64`: the error of an approximation `x` of the sum,
    /// computed with a single rounding.
    pub fn error_of(&self, x: f64) -> f64 {
        let mut difference = self.clone();
        difference.add(-x);
        difference.round()
    }

    /// The sum rounded to the nearest `f64`, ties to even (infinite beyond `f64::MAX`, NaN when a
    /// non-finite value was added).
    pub fn round(&self) -> f64 {
        if self.non_finite {
            return f64::NAN;
        }
        let mut magnitude = self.clone();
        magnitude.normalize();
        let negative = magnitude.digits[DIGITS - 1] < 0;
        if negative {
            for d in magnitude.digits.iter_mut() {
                *d = -*d;
            }
            magnitude.normalize();
        }
        let Some(top) = magnitude.digits.iter().rposition(|&d| d != 0) else {
            return 0.0;
        };
        // The top three digits (each in 0..2^32 after normalising), and whether anything is below.
        let digit = |i: usize| if i < DIGITS { magnitude.digits[i] as u128 } else { 0 };
        let low = top.saturating_sub(2);
        let window = (digit(low + 2) << 64) | (digit(low + 1) << 32) | digit(low);
        let sticky = magnitude.digits[..low].iter().any(|&d| d != 0);
        let window_exponent = 32 * low as i32 + LOWEST_EXPONENT; // the exponent of the window's lowest bit
        let length = 128 - window.leading_zeros() as i32;
        // Keep 53 bits, or fewer where the result is subnormal (its last bit is 2^-1074).
        let mut drop = (length - 53).max(-1074 - window_exponent).max(0);
        if drop > 127 {
            drop = 127; // only possible for values far below 2^-1074, which round to 0 anyway
        }
        let kept = window >> drop;
        let rounded = if drop == 0 {
            kept
        } else {
            let rest = window & ((1u128 << drop) - 1);
            let half = 1u128 << (drop - 1);
            let up = rest > half || (rest == half && (sticky || kept & 1 == 1));
            kept + up as u128
        };
        let value = scale(rounded as f64, window_exponent + drop);
        if negative {
            -value
        } else {
            value
        }
    }
}

/// `x * 2^exponent` for an integer-valued `x < 2^54`, exact whenever the result is representable.
fn scale(mut x: f64, mut exponent: i32) -> f64 {
    while exponent > 1000 {
        x *= 2f64.powi(1000);
        exponent -= 1000;
    }
    while exponent < -1000 {
        x *= 2f64.powi(-1000);
        exponent += 1000;
    }
    x * 2f64.powi(exponent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    fn exact(values: &[f64]) -> f64 {
        ExactSum::of(values.iter().copied()).round()
    }

    #[test]
    fn cancellation_that_float_sums_lose() {
        assert_eq!(exact(&[1e16, 1.0, -1e16]), 1.0);
        assert_eq!(exact(&[-1e16, -1.0, 1e16]), -1.0);
        assert_eq!(exact(&[2f64.powi(1000), 2f64.powi(-1000), -2f64.powi(1000)]), 2f64.powi(-1000));
        // Partial sums beyond f64::MAX, and a total that is tiny.
        assert_eq!(exact(&[f64::MAX, f64::MAX, 1.0, -f64::MAX, -f64::MAX]), 1.0);
        assert_eq!(exact(&[f64::MAX, f64::MAX]), f64::INFINITY);
        // The compensated sum of the primitives gets this one wrong (its compensation overflows).
        assert_eq!(exact(&[f64::MAX, -f64::MAX, 0.5]), 0.5);
        assert_eq!(exact(&[]), 0.0);
        assert_eq!(exact(&[3.0, -3.0]), 0.0);
    }

    #[test]
    fn subnormals_are_exact() {
        let tiny = f64::from_bits(1); // 2^-1074
        assert_eq!(exact(&[tiny, tiny]), 2.0 * tiny);
        assert_eq!(exact(&[3.0 * tiny, -tiny]), 2.0 * tiny);
        assert_eq!(exact(&[1.0, tiny, -1.0]), tiny);
        assert_eq!(exact(&[f64::MIN_POSITIVE, -tiny]), f64::MIN_POSITIVE - tiny);
    }

    #[test]
    fn rounds_to_nearest_ties_to_even() {
        let u = 2f64.powi(-53); // half an ulp of 1
        assert_eq!(exact(&[1.0, u]), 1.0, "a tie goes to the even neighbour");
        assert_eq!(exact(&[1.0, u, 2f64.powi(-200)]), 1.0 + 2.0 * u, "just above the tie goes up");
        assert_eq!(exact(&[1.0, u, -2f64.powi(-200)]), 1.0, "just below the tie goes down");
        assert_eq!(exact(&[1.0 + 2.0 * u, u]), 1.0 + 4.0 * u, "a tie from an odd value goes up");
        assert_eq!(exact(&[-1.0, -u]), -1.0);
        // 0.1 + 0.2: the exact sum of the two doubles rounds to 0.30000000000000004, like the float
        // sum (one rounding either way).
        assert_eq!(exact(&[0.1, 0.2]), 0.1 + 0.2);
    }

    #[test]
    fn f32_inputs_and_error_of() {
        let mut sum = ExactSum::new();
        for x in [0.1f32, 0.2, 0.3, -0.6] {
            sum.add_f32(x);
        }
        let want = 0.1f32 as f64 + 0.2f32 as f64 + 0.3f32 as f64 - 0.6f32 as f64; // exact in f64 here
        assert_eq!(sum.round(), want);
        assert_eq!(sum.error_of(want), 0.0);
        let near = want + 1e-9;
        assert_eq!(sum.error_of(near), want - near, "the difference of close doubles is exact");
        let mut nan = ExactSum::new();
        nan.add(f64::NAN);
        assert!(nan.round().is_nan());
    }

    /// Random integers times powers of two, with random signs (heavy cancellation): the exact sum
    /// is an `i128` multiple of `2^-80`, which Rust converts to `f64` with one correct rounding.
    #[test]
    fn matches_integer_arithmetic_on_random_cancelling_inputs() {
        let mut rng = SmallRng::seed_from_u64(1);
        for case in 0..300 {
            let n = rng.gen_range(1..2000);
            let mut values = Vec::with_capacity(2 * n);
            let mut scaled: i128 = 0;
            for _ in 0..n {
                let m: i64 = rng.gen_range(-(1i64 << 53) + 1..1 << 53);
                let e: i32 = rng.gen_range(-80..-20);
                values.push(m as f64 * 2f64.powi(e));
                scaled += (m as i128) << (e + 80);
                if rng.gen_bool(0.5) {
                    // Its negation somewhere: most of the sum cancels.
                    let k = rng.gen_range(0..values.len());
                    values.push(-values[k]);
                    scaled -= (values[k].abs() * 2f64.powi(80)) as i128 * values[k].signum() as i128;
                }
            }
            let want = scale(scaled as f64, -80);
            let mut shuffled = values.clone();
            shuffled.reverse();
            assert_eq!(exact(&values), want, "case {case}");
            assert_eq!(exact(&shuffled), want, "case {case}, reversed");
        }
    }

    #[test]
    fn carries_keep_the_value() {
        // A digit far past 2^32 (as 2^30 additions leave it) propagates into the digits above.
        let mut big = ExactSum::new();
        big.digits[40] = 1 << 62;
        big.digits[39] = -(1 << 40);
        let want = 2f64.powi(62 + 32 * 40 - 1088) - 2f64.powi(40 + 32 * 39 - 1088);
        assert_eq!(big.round(), want);
        big.normalize();
        assert_eq!(big.round(), want);
        // The periodic normalisation inside `add` changes nothing either.
        let mut sum = ExactSum::of([0.1, -1e300, 3.5]);
        sum.pending = NORMALIZE_EVERY - 1;
        sum.add(1e300);
        assert_eq!(sum.pending, 0);
        assert_eq!(sum.round(), ExactSum::of([0.1, 3.5]).round());
    }
}
