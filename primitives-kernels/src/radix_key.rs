//! Keys of the radix sorts: each key type maps to an unsigned integer of its width whose unsigned
//! order is the key order (the "order-preserving bit transform"), and digits are read from that image.
//!
//! * unsigned integers: the bits themselves;
//! * signed integers: the sign bit flipped;
//! * floats: negative values have every bit flipped, others the sign bit set (so the image grows with
//!   the value); `-0.0` is first mapped to `+0.0` (they sort as equal, and a stable sort keeps their
//!   input order), and every NaN to the largest positive NaN (NaNs sort after `+inf`, equal to each
//!   other, in input order).
//!
//! Sorts move the keys' original bits: the image is recomputed whenever a digit is needed, never
//! stored, so `-0.0` and NaN payloads come out as they went in.

use crate::ops::Element;

/// A key type of the radix sorts. Sealed in practice by the instantiated entry points.
pub trait RadixKey: Element {
    /// Width of the key in bits (32 or 64).
    const BITS: u32;

    /// The unsigned integer of the key's width that holds its order-preserving image.
    type Image: Copy;

    /// The key's order-preserving image.
    fn image(self) -> Self::Image;

    /// The low 32 bits of `image >> shift`, for `shift` below [`Self::BITS`].
    fn image_bits(image: Self::Image, shift: u32) -> u32;

    /// The `bits`-bit digit (1 to 32 bits) of the key's order-preserving image starting at bit
    /// `shift`, complemented (`!digit` within `bits`) when `descending`.
    fn digit(self, shift: u32, bits: u32, descending: bool) -> u32;
}

/// One digit place, `bits` bits from `shift` (below the key's width), ascending or descending:
/// [`RadixKey::digit`] with its mask and complement worked out once, for the loops that take the
/// same place's digit of many keys.
#[derive(Clone, Copy, Debug)]
pub struct DigitPlace {
    shift: u32,
    mask: u32,
    flip: u32,
}

impl DigitPlace {
    /// The place of `bits` bits (1 to 32) from `shift`.
    #[inline(always)]
    pub fn new(shift: u32, bits: u32, descending: bool) -> Self {
        let mask = mask(bits);
        Self { shift, mask, flip: if descending { mask } else { 0 } }
    }

    /// The digit of `key` at this place (`key.digit(shift, bits, descending)`).
    #[inline(always)]
    pub fn of<K: RadixKey>(self, key: K) -> u32 {
        self.of_image::<K>(key.image())
    }

    /// The digit at this place of a key's image.
    #[inline(always)]
    pub fn of_image<K: RadixKey>(self, image: K::Image) -> u32 {
        (K::image_bits(image, self.shift) & self.mask) ^ self.flip
    }
}

#[inline(always)]
fn mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

#[inline(always)]
fn digit32(image: u32, shift: u32, bits: u32, descending: bool) -> u32 {
    let shifted = if shift >= 32 { 0 } else { image >> shift };
    let digit = shifted & mask(bits);
    if descending {
        digit ^ mask(bits)
    } else {
        digit
    }
}

#[inline(always)]
fn digit64(image: u64, shift: u32, bits: u32, descending: bool) -> u32 {
    let shifted = if shift >= 64 { 0 } else { image >> shift };
    let digit = (shifted as u32) & mask(bits);
    if descending {
        digit ^ mask(bits)
    } else {
        digit
    }
}

/// The order-preserving image of an `f32`'s bits.
#[inline(always)]
pub fn f32_image(bits: u32) -> u32 {
    const SIGN: u32 = 1 << 31;
    let magnitude = bits & !SIGN;
    let bits = if magnitude > 0x7f80_0000 {
        // Any NaN: the largest positive NaN, above +inf.
        0x7fff_ffff
    } else if magnitude == 0 {
        // -0.0 sorts as +0.0.
        0
    } else {
        bits
    };
    if bits & SIGN != 0 {
        !bits
    } else {
        bits | SIGN
    }
}

/// The order-preserving image of an `f64`'s bits.
#[inline(always)]
pub fn f64_image(bits: u64) -> u64 {
    const SIGN: u64 = 1 << 63;
    let magnitude = bits & !SIGN;
    let bits = if magnitude > 0x7ff0_0000_0000_0000 {
        0x7fff_ffff_ffff_ffff
    } else if magnitude == 0 {
        0
    } else {
        bits
    };
    if bits & SIGN != 0 {
        !bits
    } else {
        bits | SIGN
    }
}

/// `RadixKey` for a key type: its width, the digit function of that width, and its image.
macro_rules! radix_key {
    ($($key:ty: $bits:literal, $image_ty:ty, $digit:ident, |$k:ident| $image:expr;)*) => {$(
        impl RadixKey for $key {
            const BITS: u32 = $bits;
            type Image = $image_ty;
            #[inline(always)]
            fn image(self) -> $image_ty {
                let $k = self;
                $image
            }
            #[inline(always)]
            fn image_bits(image: $image_ty, shift: u32) -> u32 {
                // `shift` is below the width: the wrap only spares the shift a range check.
                image.wrapping_shr(shift) as u32
            }
            #[inline(always)]
            fn digit(self, shift: u32, bits: u32, descending: bool) -> u32 {
                $digit(self.image(), shift, bits, descending)
            }
        }
    )*};
}

radix_key! {
    u32: 32, u32, digit32, |k| k;
    i32: 32, u32, digit32, |k| k as u32 ^ (1 << 31);
    f32: 32, u32, digit32, |k| f32_image(k.to_bits());
    u64: 64, u64, digit64, |k| k;
    i64: 64, u64, digit64, |k| k as u64 ^ (1 << 63);
    f64: 64, u64, digit64, |k| f64_image(k.to_bits());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image_order<K: RadixKey>(a: K, b: K) -> core::cmp::Ordering {
        let hi = |k: K| (k.digit(32, 32, false) as u64) << 32 | k.digit(0, 32, false) as u64;
        hi(a).cmp(&hi(b))
    }

    #[test]
    fn digit_places_agree_with_digit() {
        fn check<K: RadixKey + core::fmt::Debug>(keys: &[K]) {
            for &key in keys {
                for shift in (0..K::BITS).step_by(3) {
                    for bits in [1, 5, 8, 13, 32] {
                        for descending in [false, true] {
                            let place = DigitPlace::new(shift, bits, descending);
                            assert_eq!(place.of(key), key.digit(shift, bits, descending), "{key:?} {shift} {bits}");
                        }
                    }
                }
            }
        }
        check(&[0u32, 1, 0x8000_0000, 0xdead_beef, u32::MAX]);
        check(&[i32::MIN, -7, 0, 9, i32::MAX]);
        check(&[f32::NEG_INFINITY, -1.5, -0.0, 0.0, 3.25, f32::NAN]);
        check(&[0u64, 0xdead_beef_cafe_f00d, u64::MAX]);
        check(&[i64::MIN, -3, 0, i64::MAX]);
        check(&[f64::NEG_INFINITY, -2.5, -0.0, 0.0, 1e300, f64::NAN]);
    }

    #[test]
    fn float_images_follow_the_value_order() {
        let values =
            [f32::NEG_INFINITY, -3.5, -1.0, -f32::MIN_POSITIVE, -1e-45, 0.0, 1e-45, 1.0, 2.5, f32::MAX, f32::INFINITY];
        for w in values.windows(2) {
            assert_eq!(image_order(w[0], w[1]), core::cmp::Ordering::Less, "{} < {}", w[0], w[1]);
            assert_eq!(image_order(w[0] as f64, w[1] as f64), core::cmp::Ordering::Less);
        }
        assert_eq!(image_order(-0.0f32, 0.0f32), core::cmp::Ordering::Equal);
        assert_eq!(image_order(-0.0f64, 0.0f64), core::cmp::Ordering::Equal);
        let negative_nan = f32::from_bits(0xffc0_0001);
        assert_eq!(image_order(f32::INFINITY, negative_nan), core::cmp::Ordering::Less);
        assert_eq!(image_order(f32::NAN, negative_nan), core::cmp::Ordering::Equal);
        assert_eq!(image_order(f64::INFINITY, -f64::NAN), core::cmp::Ordering::Less);
    }

    #[test]
    fn integer_images_follow_the_value_order() {
        let values = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for w in values.windows(2) {
            assert_eq!(image_order(w[0], w[1]), core::cmp::Ordering::Less);
        }
        let values = [i32::MIN, -5, -1, 0, 1, 7, i32::MAX];
        for w in values.windows(2) {
            assert_eq!(image_order(w[0], w[1]), core::cmp::Ordering::Less);
        }
        assert_eq!(0xdead_beefu32.digit(8, 8, false), 0xbe);
        assert_eq!(0xdead_beefu32.digit(8, 8, true), 0x41);
        assert_eq!(0xdead_beefu32.digit(28, 8, false), 0xd);
        assert_eq!(0x1234_5678_9abc_def0u64.digit(60, 4, false), 0x1);
    }
}
