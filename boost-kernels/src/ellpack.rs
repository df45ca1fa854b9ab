//! Reading ELLPACK pages (`boost::ellpack::EllpackMatrix`): each row `row_stride` symbols of
//! `symbol_bits` bits, low bits first in 64-bit words, a symbol a global bin id (the null symbol,
//! above every bin, pads rows with fewer entries; a dense page has one a feature). Written once for
//! the host's reads and the kernels that read external-memory pages on the device.

/// The symbol at bit `bit` (`bits` wide, 1 to 32) of the words that `word(i)` reads.
#[inline(always)]
pub fn packed_symbol(bit: u64, bits: u32, word: impl Fn(usize) -> u64) -> u32 {
    let (i, shift) = ((bit / 64) as usize, (bit % 64) as u32);
    let mut v = word(i) >> shift;
    if shift + bits > 64 {
        v |= word(i + 1) << (64 - shift);
    }
    (v & ((1u64 << bits) - 1)) as u32
}

/// A page's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EllpackShape {
    pub row_stride: usize,
    pub symbol_bits: u32,
    /// One symbol a feature, in feature order (no null).
    pub is_dense: bool,
}

impl EllpackShape {
    /// Entry `k` of row `row`.
    #[inline(always)]
    pub fn symbol(&self, row: usize, k: usize, word: impl Fn(usize) -> u64) -> u32 {
        packed_symbol((row * self.row_stride + k) as u64 * self.symbol_bits as u64, self.symbol_bits, word)
    }

    /// Row `row`'s bin of the feature whose global bins are `lo..hi` (the `feature`th of a dense
    /// page), `None` when it has none: entries are in feature order, nulls last, so a binary
    /// search on the entries finds it.
    #[inline(always)]
    pub fn bin_of(&self, row: usize, feature: usize, (lo, hi): (u32, u32), word: impl Fn(usize) -> u64) -> Option<u32> {
        if self.is_dense {
            return Some(self.symbol(row, feature, word));
        }
        let (mut a, mut b) = (0, self.row_stride);
        while a < b {
            let m = (a + b) / 2;
            if self.symbol(row, m, &word) < lo {
                a = m + 1;
            } else {
                b = m;
            }
        }
        if a < self.row_stride {
            let s = self.symbol(row, a, &word);
            if s < hi {
                return Some(s);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_across_word_boundaries_read_back() {
        for bits in [1u32, 5, 9, 13, 17, 32] {
            let symbols: [u32; 40] =
                core::array::from_fn(|i| (i as u32).wrapping_mul(2654435761) & ((1u64 << bits) - 1) as u32);
            let mut words = [0u64; 24];
            for (i, &s) in symbols.iter().enumerate() {
                let bit = i as u64 * bits as u64;
                words[(bit / 64) as usize] |= (s as u64) << (bit % 64);
                if bit % 64 + bits as u64 > 64 {
                    words[(bit / 64) as usize + 1] |= (s as u64) >> (64 - bit % 64);
                }
            }
            for (i, &s) in symbols.iter().enumerate() {
                assert_eq!(packed_symbol(i as u64 * bits as u64, bits, |w| words[w]), s, "bits {bits}, symbol {i}");
            }
        }
    }
}
