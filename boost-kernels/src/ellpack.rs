//! Reading ELLPACK pages (`boost::ellpack::EllpackMatrix`): each row `row_stride` symbols of
//! `symbol_bits` bits, low bits first in 64-bit words, a symbol a global bin id (the null symbol,
//! above every bin, pads rows with fewer entries; a dense page has one a feature). Written once for
//! the host's reads and the kernels that read external-memory pages on the device.

use primitives_kernels::arch;

use crate::bins::{packed_row_word, store_packed_id, PackedShape};
use crate::evaluate::global_thread;

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

/// An ELLPACK page on the device as the kernels read it: its words, rows and shape, and the cuts'
/// `features + 1` offsets (feature `f`'s global bins are `cut_ptrs[f]..cut_ptrs[f + 1]`).
#[derive(Clone, Copy)]
pub struct EllpackPage {
    pub words: *const u64,
    pub rows: u64,
    pub shape: EllpackShape,
    pub cut_ptrs: *const u32,
    pub features: u32,
}

impl EllpackPage {
    /// Entry `k` of row `row`.
    ///
    /// # Safety
    /// `row` is a row of the page and `k` below its stride.
    #[inline(always)]
    unsafe fn symbol(&self, row: usize, k: usize) -> u32 {
        // SAFETY: the entry's words are the page's (the caller).
        self.shape.symbol(row, k, |i| unsafe { arch::load(self.words.add(i)) })
    }

    /// Feature `f`'s first global bin (`f <= features`).
    ///
    /// # Safety
    /// `f` is at most the page's feature count.
    #[inline(always)]
    unsafe fn first_bin(&self, f: usize) -> u32 {
        // SAFETY: `cut_ptrs` holds `features + 1` offsets.
        unsafe { arch::load(self.cut_ptrs.add(f)) }
    }
}

/// Row `i < count` of `out` (packed bins, [`PackedShape`]: each feature's bin within the feature,
/// `shape.missing()` where the row has none) from row `rows[i] - first` of `page`: how
/// external-memory training gathers a tree's sampled rows from every page into one page of the
/// in-core layout. A thread a row; a sparse row's entries are in feature order, so its features
/// are found walking the cuts forward.
///
/// # Safety
/// `rows` holds `count` rows of the page (plus `first`), `out` `count * shape.row_words` words;
/// `shape.features` is the page's feature count, its bits hold every feature's bins and a missing id.
pub unsafe fn gather_kernel(
    page: EllpackPage,
    first: u64,
    rows: *const u32,
    count: u64,
    shape: PackedShape,
    out: *mut u32,
) {
    let i = global_thread();
    if i >= count {
        return;
    }
    let (features, row_words, i) = (shape.features as usize, shape.row_words as usize, i as usize);
    // SAFETY: `i < count`, a row of the page (the caller).
    let row = (unsafe { arch::load(rows.add(i)) } as u64 - first) as usize;
    // SAFETY: row `i` of `out`; features and entries of a row of the page (the caller).
    unsafe {
        if page.shape.is_dense {
            for w in 0..row_words {
                let word = packed_row_word(w, features, shape.bits, |f| page.symbol(row, f) - page.first_bin(f));
                arch::store(out.add(i * row_words + w), word);
            }
            return;
        }
        for w in 0..row_words {
            arch::store(out.add(i * row_words + w), packed_row_word(w, features, shape.bits, |_| shape.missing()));
        }
        let (end, mut f) = (page.first_bin(features), 0);
        for k in 0..page.shape.row_stride {
            let symbol = page.symbol(row, k);
            // The null symbol, above every bin, ends the row.
            if symbol >= end {
                break;
            }
            while page.first_bin(f + 1) <= symbol {
                f += 1;
            }
            store_packed_id(out, row_words, shape.bits, i, f, symbol - page.first_bin(f));
        }
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
