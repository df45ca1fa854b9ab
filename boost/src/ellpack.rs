//! The quantised feature matrix in ELLPACK form (Mitchell et al. 2018, section 3): every row holds
//! `row_stride` symbols, each a global bin id, bit-packed with the fewest bits that hold the symbol
//! count; the null symbol (= total bins) marks a missing value or padding.
//!
//! Dense data (every row has every feature) uses `row_stride = features` and entry `k` of a row is
//! feature `k`'s bin, so a row's bin of feature `f` is found without a search. Sparse data keeps each
//! row's present entries in increasing feature order, padded with null symbols to the longest row.

use boost_kernels::ellpack::EllpackShape;
use rayon::prelude::*;

use crate::data::FeatureMatrix;
use crate::quantile::QuantileCuts;

/// Bit-packed bin ids, `row_stride` per row, in words the matrix owns (`Vec<u64>`, the default)
/// or borrows (`&[u64]`: an external page read in place from its cache file, or a view).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EllpackMatrix<W = Vec<u64>> {
    /// Rows.
    pub rows: usize,
    /// Entries a row.
    pub row_stride: usize,
    /// Entry `k` of a row is feature `k` (no missing values anywhere).
    pub is_dense: bool,
    /// Bits per symbol.
    pub symbol_bits: u32,
    /// The missing/padding symbol: the total bin count.
    pub null_symbol: u32,
    /// Symbols packed low bits first into 64-bit words, plus one spare word so that a two-word read
    /// never leaves the buffer.
    words: W,
}

/// Rows quantised per chunk in parallel: a multiple of 64, so that a chunk's symbols fill whole
/// 64-bit words whatever their width.
const ROWS_PER_CHUNK: usize = 4096;
const _: () = assert!(ROWS_PER_CHUNK.is_multiple_of(64));

/// What fixes an ELLPACK matrix's shape besides its rows: the widest row (in entries that have a
/// bin) and whether any row misses one. Found over a whole matrix, or added up batch by batch so
/// that pages of rows read apart pack as the whole matrix does ([`EllpackMatrix::pack`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EllpackLayout {
    cols: usize,
    widest: usize,
    any_missing: bool,
}

impl EllpackLayout {
    /// Adds the rows of `features` (quantised by `cuts`) to the layout: a maximum and an `or`,
    /// the same on any thread count and for any split of the rows.
    pub fn add(&mut self, features: &FeatureMatrix, cuts: &QuantileCuts) {
        // A present value has a bin unless its feature has none.
        self.add_where(features, |j| cuts.cut_ptrs[j] != cuts.cut_ptrs[j + 1]);
    }

    /// [`EllpackLayout::add`] before the cuts exist, every present value counted: the same layout
    /// for cuts that give every feature with a present value bins.
    pub fn add_present(&mut self, features: &FeatureMatrix) {
        self.add_where(features, |_| true);
    }

    fn add_where(&mut self, features: &FeatureMatrix, has_bins: impl Fn(usize) -> bool + Sync) {
        let rows = features.rows();
        let (widest, any_missing) = (0..rows.div_ceil(ROWS_PER_CHUNK))
            .into_par_iter()
            .map(|chunk| {
                let (mut widest, mut missing) = (0usize, false);
                for i in chunk * ROWS_PER_CHUNK..((chunk + 1) * ROWS_PER_CHUNK).min(rows) {
                    let mut present = 0;
                    features.for_each_present(i, |j, _| present += has_bins(j) as usize);
                    widest = widest.max(present);
                    missing |= present < features.cols();
                }
                (widest, missing)
            })
            .reduce(|| (0, false), |a, b| (a.0.max(b.0), a.1 | b.1));
        self.cols = self.cols.max(features.cols());
        self.widest = self.widest.max(widest);
        self.any_missing |= any_missing;
    }

    /// Entry `k` of a row is feature `k`: no row misses a value.
    fn is_dense(&self) -> bool {
        !self.any_missing
    }

    fn row_stride(&self) -> usize {
        if self.is_dense() {
            self.cols
        } else {
            self.widest
        }
    }
}

impl EllpackMatrix {
    /// Quantises `features` with `cuts`.
    pub fn new(features: &FeatureMatrix, cuts: &QuantileCuts) -> Self {
        let mut layout = EllpackLayout::default();
        layout.add(features, cuts);
        Self::pack(features, cuts, &layout)
    }

    /// Quantises `features` with `cuts` in `layout` (which has their rows, and perhaps others'):
    /// a page of a larger matrix, which [`EllpackMatrix::append`] joins to the pages before it.
    pub fn pack(features: &FeatureMatrix, cuts: &QuantileCuts, layout: &EllpackLayout) -> Self {
        let rows = features.rows();
        let chunks = rows.div_ceil(ROWS_PER_CHUNK);
        let (is_dense, row_stride) = (layout.is_dense(), layout.row_stride());
        let null_symbol = cuts.total_bins() as u32;
        let symbol_bits = (32 - null_symbol.leading_zeros()).max(1);
        let bits_per_row = row_stride as u64 * symbol_bits as u64;
        let total_words = ((rows as u64 * bits_per_row).div_ceil(64) + 1) as usize;
        let mut words = vec![0u64; total_words];
        // A chunk's rows (a multiple of 64) start on a word boundary and end on one: the chunks pack
        // into disjoint words, in parallel (the spare last word, a piece of its own when the rows
        // fill the chunks, stays zero).
        let words_per_chunk = (ROWS_PER_CHUNK as u64 * bits_per_row / 64) as usize;
        if words_per_chunk > 0 {
            words.par_chunks_mut(words_per_chunk).enumerate().filter(|(chunk, _)| *chunk < chunks).for_each(
                |(chunk, out)| {
                    let mut bit = 0u64;
                    for i in chunk * ROWS_PER_CHUNK..((chunk + 1) * ROWS_PER_CHUNK).min(rows) {
                        let row_end = bit + bits_per_row;
                        features.for_each_present(i, |j, v| {
                            if let Some(bin) = cuts.search_bin(j, v) {
                                put(out, bit, bin, symbol_bits);
                                bit += symbol_bits as u64;
                            }
                        });
                        while bit < row_end {
                            put(out, bit, null_symbol, symbol_bits);
                            bit += symbol_bits as u64;
                        }
                    }
                },
            );
        }
        Self { rows, row_stride, is_dense, symbol_bits, null_symbol, words }
    }

    /// Appends the rows of `page`, packed in the same layout, after these: the matrix of both
    /// pages' rows, bit for bit.
    pub fn append(&mut self, page: &EllpackMatrix<impl AsRef<[u64]>>) {
        assert_eq!(
            (self.row_stride, self.is_dense, self.symbol_bits, self.null_symbol),
            (page.row_stride, page.is_dense, page.symbol_bits, page.null_symbol),
            "pages of one layout"
        );
        let bits_per_row = self.row_stride as u64 * self.symbol_bits as u64;
        let (start, added) = (self.rows as u64 * bits_per_row, page.rows as u64 * bits_per_row);
        self.words.resize(((start + added).div_ceil(64) + 1) as usize, 0);
        // The page's words shifted into place; the bits past both stay zero (the spare word too).
        let (base, shift) = ((start / 64) as usize, (start % 64) as u32);
        for (k, &word) in page.words.as_ref()[..added.div_ceil(64) as usize].iter().enumerate() {
            self.words[base + k] |= word << shift;
            if shift > 0 {
                self.words[base + k + 1] |= word >> (64 - shift);
            }
        }
        self.rows += page.rows;
    }

    /// The matrix without its words (a header, for a page kept on disk), and the words.
    pub fn into_words(mut self) -> (EllpackMatrix, Vec<u64>) {
        let words = std::mem::take(&mut self.words);
        (self, words)
    }

    /// The matrix, borrowing its words.
    pub fn view(&self) -> EllpackMatrix<&[u64]> {
        self.with_words(self.words.as_slice())
    }
}

impl<W: AsRef<[u64]>> EllpackMatrix<W> {
    /// Entry `k` of row `row` (a global bin id, or the null symbol).
    #[inline(always)]
    pub fn get(&self, row: usize, k: usize) -> u32 {
        let words = self.words.as_ref();
        self.shape().symbol(row, k, |i| words[i])
    }

    /// The packed words (with the words past the last symbol that a read may touch).
    pub fn words(&self) -> &[u64] {
        self.words.as_ref()
    }

    /// The shape the kernels read the page with (`boost_kernels::ellpack`).
    pub fn shape(&self) -> EllpackShape {
        EllpackShape { row_stride: self.row_stride, symbol_bits: self.symbol_bits, is_dense: self.is_dense }
    }

    /// Calls `f(symbol)` for the row's entries that are not null, in order.
    #[inline(always)]
    pub fn for_each_bin(&self, row: usize, mut f: impl FnMut(u32)) {
        for k in 0..self.row_stride {
            let s = self.get(row, k);
            if s != self.null_symbol {
                f(s);
            }
        }
    }

    /// The row's bin of feature `feature` (global id), `None` when missing.
    #[inline(always)]
    pub fn bin_of(&self, row: usize, feature: usize, cuts: &QuantileCuts) -> Option<u32> {
        let (words, bins) = (self.words.as_ref(), (cuts.cut_ptrs[feature], cuts.cut_ptrs[feature + 1]));
        self.shape().bin_of(row, feature, bins, |i| words[i])
    }

    /// Bytes the packed symbols take.
    pub fn bytes(&self) -> usize {
        self.words.as_ref().len() * 8
    }

    /// This header's matrix with `words` (those [`EllpackMatrix::into_words`] took, or a view of
    /// them).
    pub fn with_words<V>(&self, words: V) -> EllpackMatrix<V> {
        let EllpackMatrix { rows, row_stride, is_dense, symbol_bits, null_symbol, .. } = *self;
        EllpackMatrix { rows, row_stride, is_dense, symbol_bits, null_symbol, words }
    }

    /// A copy that owns its words.
    pub fn to_owned_matrix(&self) -> EllpackMatrix {
        self.with_words(self.words.as_ref().to_vec())
    }
}

/// Writes `symbol` (`bits` wide) at bit `bit` of `words`, low bits first, into zeroed bits.
fn put(words: &mut [u64], bit: u64, symbol: u32, bits: u32) {
    let (word, shift) = ((bit / 64) as usize, (bit % 64) as u32);
    words[word] |= (symbol as u64) << shift;
    if shift + bits > 64 {
        words[word + 1] |= (symbol as u64) >> (64 - shift);
    }
}

/// The ELLPACK symbols unpacked for the CPU tree builder: 16-bit (or, past 65,535 bins, 32-bit)
/// integers, so that its inner loops read plain arrays instead of shifting and masking packed bits
/// (the packed form is what the GPU keeps; the CPU has the memory). Mostly dense data (rows holding
/// at least half of the features) is laid out with one slot per feature (null where missing), so
/// that a row's bin of a feature is one load instead of a search.
#[derive(Clone, Debug, PartialEq)]
pub struct UnpackedBins {
    /// Rows.
    pub rows: usize,
    /// Entries per row.
    pub stride: usize,
    /// Entry `f` of a row is feature `f`'s bin (or null); otherwise a row's present bins come first,
    /// in feature order, then nulls.
    pub by_feature: bool,
    /// The bin id of a missing value (one past the last bin).
    pub null: u32,
    /// The bin ids.
    pub data: UnpackedData,
    /// With one slot a feature, the same bin ids column after column (feature `f`'s of every row,
    /// then `f + 1`'s): a row partition reads one feature of many rows, and a column's are adjacent
    /// (XGBoost's CPU `hist` keeps such a column matrix beside its row-wise one for the same reason).
    pub columns: Option<UnpackedData>,
}

/// The entries of [`UnpackedBins`], row after row.
#[derive(Clone, Debug, PartialEq)]
pub enum UnpackedData {
    /// Bin ids below 2^16.
    U16(Vec<u16>),
    /// Wider bin ids.
    U32(Vec<u32>),
}

impl EllpackMatrix {
    /// The matrix unpacked for the CPU; `cuts` are those it was quantised with.
    pub fn unpack(&self, cuts: &QuantileCuts) -> UnpackedBins {
        let features = cuts.features();
        let by_feature = self.is_dense || 2 * self.row_stride >= features;
        let stride = if by_feature { features } else { self.row_stride };
        let null = self.null_symbol;
        let row_of = |row: usize, out: &mut [u32]| {
            if by_feature && !self.is_dense {
                out.fill(null);
                self.for_each_bin(row, |b| out[cuts.feature_of_bin(b)] = b);
            } else {
                for (k, slot) in out.iter_mut().enumerate() {
                    *slot = self.get(row, k);
                }
            }
        };
        let mut all = vec![0u32; self.rows * stride];
        all.par_chunks_mut(stride.max(1)).enumerate().for_each(|(row, out)| row_of(row, out));
        let columns = by_feature.then(|| {
            let mut columns = vec![0u32; all.len()];
            columns.par_chunks_mut(self.rows.max(1)).enumerate().for_each(|(f, column)| {
                column.iter_mut().zip(all.iter().skip(f).step_by(stride.max(1))).for_each(|(c, &b)| *c = b);
            });
            UnpackedData::of(columns, null)
        });
        UnpackedBins { rows: self.rows, stride, by_feature, null, data: UnpackedData::of(all, null), columns }
    }
}

impl UnpackedData {
    /// `bins` in 16 bits when every id (the null one, the largest, included) fits.
    fn of(bins: Vec<u32>, null: u32) -> Self {
        if null <= u16::MAX as u32 {
            UnpackedData::U16(bins.par_iter().map(|&b| b as u16).collect())
        } else {
            UnpackedData::U32(bins)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, DenseMatrix};
    use rand::{Rng, SeedableRng};

    /// Rows over several chunks (packed in parallel), symbols of a width that straddles words,
    /// rows of every width up to the widest: every symbol reads back, in row and feature order.
    #[test]
    fn chunks_pack_into_their_own_words() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(4);
        let (rows, cols) = (2 * ROWS_PER_CHUNK + 777, 5);
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| if rng.gen_bool(0.2) && i % cols != 0 { f32::NAN } else { rng.gen_range(0..40) as f32 })
            .collect();
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.clone()));
        let cuts = QuantileCuts::build(&features, &[], 13);
        let m = EllpackMatrix::new(&features, &cuts);
        assert_eq!((m.row_stride, m.symbol_bits), (cols, 7), "65 bins + null: 7 bits, straddling words");
        for i in 0..rows {
            let mut seen = Vec::new();
            m.for_each_bin(i, |s| seen.push(s));
            let present = |j: &usize| !values[i * cols + j].is_nan();
            let want: Vec<u32> =
                (0..cols).filter(present).filter_map(|j| cuts.search_bin(j, values[i * cols + j])).collect();
            assert_eq!(seen, want, "row {i}");
        }
    }

    /// Pages of any sizes, packed in the layout of all their rows and appended in order, are the
    /// whole matrix bit for bit: with missing values (a padded stride) and without (dense), with
    /// symbols that straddle words at the pages' joins.
    #[test]
    fn appended_pages_are_the_whole_matrix() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        let (rows, cols) = (ROWS_PER_CHUNK + 1001, 5);
        for missing in [0.0, 0.3] {
            let values: Vec<f32> = (0..rows * cols)
                .map(|_| if rng.gen_bool(missing) { f32::NAN } else { rng.gen_range(0..40) as f32 })
                .collect();
            let whole = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.clone()));
            let cuts = QuantileCuts::build(&whole, &[], 13);
            let expected = EllpackMatrix::new(&whole, &cuts);
            for sizes in [&[1][..], &[3, 64, 1000], &[ROWS_PER_CHUNK + 1001], &[777, 5]] {
                let mut pages = Vec::new();
                let (mut start, mut k) = (0, 0);
                while start < rows {
                    let end = (start + sizes[k % sizes.len()]).min(rows);
                    let page = values[start * cols..end * cols].to_vec();
                    pages.push(FeatureMatrix::Dense(DenseMatrix::new(end - start, cols, page)));
                    (start, k) = (end, k + 1);
                }
                let mut layout = EllpackLayout::default();
                pages.iter().for_each(|page| layout.add(page, &cuts));
                let mut joined = EllpackMatrix::pack(&pages[0], &cuts, &layout);
                pages[1..].iter().for_each(|page| joined.append(&EllpackMatrix::pack(page, &cuts, &layout)));
                assert!(joined == expected, "missing share {missing}, pages of {sizes:?}");
            }
        }
    }

    #[test]
    fn dense_and_sparse_matrices_pack_and_unpack() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let (rows, cols) = (1000, 7);
        let values: Vec<f32> = (0..rows * cols).map(|_| (rng.gen_range(0..300) as f32) * 0.5).collect();
        let dense = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.clone()));
        let cuts = QuantileCuts::build(&dense, &[], 64);
        let m = EllpackMatrix::new(&dense, &cuts);
        assert!(m.is_dense);
        assert_eq!(m.symbol_bits, 9, "7 x 64 bins + null = 449 symbols");
        for i in 0..rows {
            for j in 0..cols {
                assert_eq!(m.bin_of(i, j, &cuts), cuts.search_bin(j, values[i * cols + j]));
            }
        }
        assert!(m.bytes() < rows * cols * 4 / 3, "packed: {} bytes", m.bytes());

        // The same with about a third missing, as NaN in a dense matrix and absent in CSR.
        let mut holes = values.clone();
        for v in holes.iter_mut() {
            if rng.gen_bool(0.3) {
                *v = f32::NAN;
            }
        }
        let mut csr = CsrMatrix { rows, cols, row_ptr: vec![0], ..Default::default() };
        for i in 0..rows {
            for j in 0..cols {
                if !holes[i * cols + j].is_nan() {
                    csr.col_indices.push(j as u32);
                    csr.values.push(holes[i * cols + j]);
                }
            }
            csr.row_ptr.push(csr.col_indices.len());
        }
        for features in [FeatureMatrix::Dense(DenseMatrix::new(rows, cols, holes.clone())), FeatureMatrix::Sparse(csr)]
        {
            let cuts = QuantileCuts::build(&features, &[], 256);
            let m = EllpackMatrix::new(&features, &cuts);
            assert!(!m.is_dense);
            for i in 0..rows {
                let mut seen = Vec::new();
                m.for_each_bin(i, |s| seen.push(s));
                let mut want = Vec::new();
                for j in 0..cols {
                    let v = holes[i * cols + j];
                    let bin = if v.is_nan() { None } else { cuts.search_bin(j, v) };
                    assert_eq!(m.bin_of(i, j, &cuts), bin, "row {i} feature {j}");
                    want.extend(bin);
                }
                assert_eq!(seen, want);
            }
        }
    }
}
