//! `e^x` for `f32` as XGBoost's CPU build computes it: glibc's `expf` (since glibc 2.27), whose
//! result is the `f64` evaluation below rounded once to `f32`. XGBoost's sigmoid, softmax and the
//! exponential transforms call `expf`, so with this function our probabilities are XGBoost's bit
//! for bit (the `libm` crate's `expf`, an older algorithm, differs in the last bit for a few percent
//! of inputs). Written once for the CPU backend and the kernels (`f64` adds and multiplies, never
//! fused), so both give the same bits.
//!
//! The method (Szabolcs Nagy's, in glibc and musl): `x / ln 2 = k/32 + r` with `|r| <= 1/64`, so
//! `e^x = 2^(k/32) * 2^r`; `2^(k/32)` is a table entry scaled by `k / 32` in its exponent bits, and
//! `2^r` a degree-3 polynomial. Every step is in `f64`, whose error is far below the final rounding.

/// Entries a power of two is split into (`2^(i/32)`, `i < 32`).
const TABLE_BITS: u32 = 5;
const N: usize = 1 << TABLE_BITS;

/// `2^(i/32)` as the bits of the nearest `f64`, less `i` scaled into the exponent field
/// (`(i << 52) / 32`), so that adding `k << 47` gives `2^(k/32)` for any `k` with `k % 32 == i`.
const TABLE: [u64; N] = [
    0x3ff0000000000000,
    0x3fefd9b0d3158574,
    0x3fefb5586cf9890f,
    0x3fef9301d0125b51,
    0x3fef72b83c7d517b,
    0x3fef54873168b9aa,
    0x3fef387a6e756238,
    0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715,
    0x3feef1a7373aa9cb,
    0x3feedea64c123422,
    0x3feece086061892d,
    0x3feebfdad5362a27,
    0x3feeb42b569d4f82,
    0x3feeab07dd485429,
    0x3feea47eb03a5585,
    0x3feea09e667f3bcd,
    0x3fee9f75e8ec5f74,
    0x3feea11473eb0187,
    0x3feea589994cce13,
    0x3feeace5422aa0db,
    0x3feeb737b0cdc5e5,
    0x3feec49182a3f090,
    0x3feed503b23e255d,
    0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47,
    0x3fef199bdd85529c,
    0x3fef3720dcef9069,
    0x3fef5818dcfba487,
    0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da,
    0x3fefd0765b6e4540,
];

/// `32 / ln 2` (`0x1.71547652b82fep+0 * 32`).
const INV_LN2_N: f64 = f64::from_bits(0x40471547652b82fe);
/// `1.5 * 2^52`: adding it rounds a number below 2^51 to an integer, left in the low bits of the sum.
const SHIFT: f64 = f64::from_bits(0x4338000000000000);
/// The polynomial of `2^(r/32)`: `C0 r^3 + C1 r^2 + C2 r + 1` (the minimax coefficients of `2^r`
/// scaled by 32^-3, 32^-2 and 32^-1).
const C0: f64 = f64::from_bits(0x3ebc6af84b912394);
const C1: f64 = f64::from_bits(0x3f2ebfce50fac4f3);
const C2: f64 = f64::from_bits(0x3f962e42ff0c52d6);

/// Above this `e^x` overflows `f32` (`0x1.62e42ep6`).
const OVERFLOW: f32 = f32::from_bits(0x42b17217);
/// Below this `e^x` rounds to zero (`-0x1.9fe368p6`).
const UNDERFLOW: f32 = f32::from_bits(0xc2cff1b4);

/// `e^x`, rounded to `f32` as glibc's `expf` rounds it.
#[inline]
pub fn expf(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x > OVERFLOW {
        return f32::INFINITY;
    }
    if x < UNDERFLOW {
        return 0.0;
    }
    let z = INV_LN2_N * x as f64;
    // `k = round(z)`, and `r = z - k` in [-1/2, 1/2].
    let shifted = z + SHIFT;
    let k = shifted.to_bits();
    let r = z - (shifted - SHIFT);
    let scale = f64::from_bits(TABLE[k as usize % N].wrapping_add(k << (52 - TABLE_BITS)));
    let r2 = r * r;
    let y = (C0 * r + C1) * r2 + (C2 * r + 1.0);
    (y * scale) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is `2^(i/32)` rounded to the nearest `f64`: its integer power of two and its value
    /// agree with `powf` within an ulp (the entries themselves are pinned against glibc below).
    #[test]
    fn table_entries_are_the_powers_of_two() {
        for (i, &bits) in TABLE.iter().enumerate() {
            let value = f64::from_bits(bits.wrapping_add(((i as u64) << 52) / N as u64));
            let exact = libm::pow(2.0, i as f64 / N as f64);
            assert!((value - exact).abs() <= exact * 2.3e-16, "entry {i}: {value} vs {exact}");
        }
    }

    #[test]
    fn edges() {
        assert_eq!(expf(0.0), 1.0);
        assert_eq!(expf(-0.0), 1.0);
        assert_eq!(expf(f32::INFINITY), f32::INFINITY);
        assert_eq!(expf(f32::NEG_INFINITY), 0.0);
        assert!(expf(f32::NAN).is_nan());
        assert_eq!(expf(89.0), f32::INFINITY);
        assert!(expf(88.7).is_finite());
        assert_eq!(expf(-104.0), 0.0);
        assert!(expf(-100.0) > 0.0, "subnormal results are kept");
        assert_eq!(expf(1.0), core::f32::consts::E);
    }

    /// Against the C library's `expf` where it is glibc's (Linux): the same bits, on a sweep of every
    /// exponent's mantissas and on the ranges the objectives use.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn same_bits_as_glibc() {
        extern crate std;
        extern "C" {
            #[link_name = "expf"]
            fn c_expf(x: f32) -> f32;
        }
        let mut checked = 0u64;
        let mut bits = 0u32;
        // Every 97th float: all exponents, most mantissa patterns.
        while let Some(next) = bits.checked_add(97) {
            let x = f32::from_bits(bits);
            // SAFETY: `expf` is a pure function of its argument.
            let expected = unsafe { c_expf(x) };
            let ours = expf(x);
            assert!(
                ours.to_bits() == expected.to_bits() || (ours.is_nan() && expected.is_nan()),
                "expf({x:e}) = {ours:e}, glibc {expected:e}"
            );
            checked += 1;
            bits = next;
        }
        assert!(checked > 40_000_000);
    }
}
