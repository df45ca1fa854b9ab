//! Host side of the device histograms (`primitives_kernels::device::histogram`): argument checks,
//! the block-histogram layout, grid sizing, the multi-feature work list, launch.

use crate::LaunchConfig;
/// The block-histogram layouts, for [`DeviceHistogram::count_with_layout`].
pub use primitives_kernels::block::BlockHistogramLayout;
use primitives_kernels::block::HistogramCounter;
use primitives_kernels::device::histogram::{self as kernel, FeatureGroup, MultiWork};
use primitives_kernels::entry::histogram as hist;
use primitives_kernels::launch::KernelArgs;
use primitives_kernels::ops::GradientPair;

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PRIMITIVES_MODULE};
use crate::ops::Element;

/// Resident blocks per multiprocessor the grid of the histogram of a sequence is sized for
/// (8 x 256 threads fill a multiprocessor; each block privatises its histogram in shared memory).
const BLOCKS_PER_MULTIPROCESSOR: u32 = 8;
/// Blocks per multiprocessor the multi-feature histogram's shared memory is sized for: a feature
/// group takes at most half a multiprocessor's shared memory, less the 1 KiB the driver reserves
/// per block (28 features of 256 fixed-point bins, 112 KiB, fit on an H100/H200).
const MULTI_BLOCKS_PER_MULTIPROCESSOR: usize = 2;
/// Work items (blocks) per feature group and per resident block of the multi-feature histogram:
/// enough waves to even out nodes of different sizes, few enough that flushing each block's
/// histogram with global atomics stays cheap.
const MULTI_WAVES: usize = 2;
/// Fewest rows a multi-feature work item covers (its flush costs one atomic per bin).
const MULTI_MIN_CHUNK_ROWS: usize = 1024;
/// How much finer a launch over device ranges cuts its bounds: the ranges are usually a fraction
/// of the bounds (a smaller child in its half of its parent's range: a third of the bounded rows on
/// average), and a block over rows outside them exits at once, so the blocks that do work stay
/// about as many as with host ranges.
const MULTI_DEVICE_RANGE_SPLIT: usize = 4;
/// Shared memory the driver keeps for itself in every block.
const RESERVED_SHARED_BYTES: usize = 1024;

mod sealed {
    /// Only this crate names the types that have histogram kernels.
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for super::GradientPair<i64> {}
    impl Sealed for super::GradientPair<f32> {}
    impl Sealed for super::GradientPair<f64> {}
    impl<B: super::Element> Sealed for super::MultiFeatureMatrix<'_, B> {}
    impl Sealed for super::PackedBinMatrix<'_> {}
}

/// A bin id type of pre-binned samples (`u8`, `u16`, `u32`) and of the multi-feature bin matrix.
/// Sealed.
pub trait BinIndex: Element + Into<u32> + sealed::Sealed {
    /// Kernel of [`DeviceHistogram::count`].
    const COUNT: &'static str;
    /// Its typed launch arguments: samples, items, bins, layout, histogram, ignored.
    #[doc(hidden)]
    const COUNT_ARGS: fn(*const Self, u64, u32, u32, *mut u64, *mut u64) -> KernelArgs;
    /// Position of the type in the per-bin-type kernel tables below (0, 1, 2).
    const TABLE_INDEX: usize;
}

impl BinIndex for u8 {
    const COUNT: &'static str = hist::primitives_histogram_count_u8::NAME;
    const COUNT_ARGS: fn(*const u8, u64, u32, u32, *mut u64, *mut u64) -> KernelArgs =
        hist::primitives_histogram_count_u8::args;
    const TABLE_INDEX: usize = 0;
}
impl BinIndex for u16 {
    const COUNT: &'static str = hist::primitives_histogram_count_u16::NAME;
    const COUNT_ARGS: fn(*const u16, u64, u32, u32, *mut u64, *mut u64) -> KernelArgs =
        hist::primitives_histogram_count_u16::args;
    const TABLE_INDEX: usize = 1;
}
impl BinIndex for u32 {
    const COUNT: &'static str = hist::primitives_histogram_count_u32::NAME;
    const COUNT_ARGS: fn(*const u32, u64, u32, u32, *mut u64, *mut u64) -> KernelArgs =
        hist::primitives_histogram_count_u32::args;
    const TABLE_INDEX: usize = 2;
}

/// A weight type of [`DeviceHistogram::weighted`]: `f32`, `f64` or 64-bit fixed-point gradient
/// pairs. Sealed.
pub trait HistogramWeight: HistogramCounter<Wide = Self> + sealed::Sealed {
    /// Kernels for `u8`, `u16`, `u32` bin ids.
    const WEIGHTED: [&'static str; 3];
    /// Their typed launch arguments (the samples as bytes: each entry point takes its bin type).
    #[doc(hidden)]
    const WEIGHTED_ARGS: [WeightedArgs<Self>; 3];
}

/// A weighted histogram's arguments: samples, items, bins, weights, layout, histogram, ignored.
#[doc(hidden)]
pub type WeightedArgs<W> = fn(*const u8, u64, u32, *const W, u32, *mut W, *mut u64) -> KernelArgs;

macro_rules! weighted_args {
    ($($name:ident),*) => {
        [$(|samples, len, bins, weights, layout, histogram, ignored| {
            hist::$name::args(samples.cast(), len, bins, weights, layout, histogram, ignored)
        }),*]
    };
}

impl HistogramWeight for f32 {
    const WEIGHTED: [&'static str; 3] = [
        hist::primitives_histogram_weighted_f32_u8::NAME,
        hist::primitives_histogram_weighted_f32_u16::NAME,
        hist::primitives_histogram_weighted_f32_u32::NAME,
    ];
    const WEIGHTED_ARGS: [WeightedArgs<f32>; 3] = weighted_args!(
        primitives_histogram_weighted_f32_u8,
        primitives_histogram_weighted_f32_u16,
        primitives_histogram_weighted_f32_u32
    );
}
impl HistogramWeight for f64 {
    const WEIGHTED: [&'static str; 3] = [
        hist::primitives_histogram_weighted_f64_u8::NAME,
        hist::primitives_histogram_weighted_f64_u16::NAME,
        hist::primitives_histogram_weighted_f64_u32::NAME,
    ];
    const WEIGHTED_ARGS: [WeightedArgs<f64>; 3] = weighted_args!(
        primitives_histogram_weighted_f64_u8,
        primitives_histogram_weighted_f64_u16,
        primitives_histogram_weighted_f64_u32
    );
}
impl HistogramWeight for GradientPair<i64> {
    const WEIGHTED: [&'static str; 3] = [
        hist::primitives_histogram_weighted_gpi64_u8::NAME,
        hist::primitives_histogram_weighted_gpi64_u16::NAME,
        hist::primitives_histogram_weighted_gpi64_u32::NAME,
    ];
    const WEIGHTED_ARGS: [WeightedArgs<GradientPair<i64>>; 3] = weighted_args!(
        primitives_histogram_weighted_gpi64_u8,
        primitives_histogram_weighted_gpi64_u16,
        primitives_histogram_weighted_gpi64_u32
    );
}

/// A gradient-pair type of [`DeviceHistogram::multi_feature`]: `GradientPair<i64>` (fixed point,
/// exact and order-independent) or `GradientPair<f32>`/`GradientPair<f64>`. Sealed.
pub trait MultiFeatureGradient: HistogramCounter<Wide = Self> + sealed::Sealed {
    /// Kernels for `u8`, `u16`, `u32` bin ids.
    const MULTI: [&'static str; 3];
    /// Kernel for bit-packed rows.
    const PACKED: &'static str;
    /// Their typed launch arguments (the dense bins as bytes: each entry point takes its bin type).
    #[doc(hidden)]
    const MULTI_ARGS: [MultiArgs<Self>; 3];
    #[doc(hidden)]
    const PACKED_ARGS: PackedArgs<Self>;
    /// The global layout's entry points' arguments: by bin type, then packed.
    /// Kernels of the global layout: `u8`, `u16`, `u32` bin ids, then packed rows.
    const GLOBAL: [&'static str; 4];
    #[doc(hidden)]
    const GLOBAL_ARGS: [GlobalArgs<Self>; 3];
    #[doc(hidden)]
    const GLOBAL_PACKED_ARGS: GlobalPackedArgs<Self>;
}

/// A multi-feature histogram's arguments in the global layout after its bins: rows of the matrix,
/// features, gradients, row order, work items, node ranges, feature offsets, groups, node stride,
/// layout, histogram, the bad row.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct GlobalRest<G> {
    matrix_rows: u64,
    features: u32,
    gradients: *const G,
    rows: *const u32,
    work: *const MultiWork,
    node_ranges: *const [u32; 2],
    feature_offsets: *const u32,
    groups: *const FeatureGroup,
    node_stride: u64,
    layout: u32,
    histogram: *mut G,
    bad_row: *mut u32,
}

#[doc(hidden)]
pub type GlobalArgs<G> = fn(*const u8, GlobalRest<G>) -> KernelArgs;
#[doc(hidden)]
pub type GlobalPackedArgs<G> = fn(*const u32, u64, u32, GlobalRest<G>) -> KernelArgs;

macro_rules! global_args {
    ($($name:ident),*) => {
        [$(|bins, r| {
            hist::$name::args(bins.cast(), r.matrix_rows, r.features, r.gradients, r.rows, r.work, r.node_ranges, r.feature_offsets, r.groups, r.node_stride, r.layout, r.histogram, r.bad_row)
        }),*]
    };
}

/// A multi-feature histogram's arguments after its bins: rows of the matrix, features, bins a
/// feature, gradients, row order, work items, node ranges, features a group, layout, histogram,
/// the bad row.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct MultiRest<G> {
    matrix_rows: u64,
    features: u32,
    bins_per_feature: u32,
    gradients: *const G,
    rows: *const u32,
    work: *const MultiWork,
    node_ranges: *const [u32; 2],
    group_features: u32,
    layout: u32,
    histogram: *mut G,
    bad_row: *mut u32,
}

/// A dense multi-feature histogram's arguments: the bins, then the rest.
#[doc(hidden)]
pub type MultiArgs<G> = fn(*const u8, MultiRest<G>) -> KernelArgs;
/// A bit-packed multi-feature histogram's arguments: the words, words a row, bits, then the rest.
#[doc(hidden)]
pub type PackedArgs<G> = fn(*const u32, u64, u32, MultiRest<G>) -> KernelArgs;

macro_rules! multi_args {
    ($($name:ident),*) => {
        [$(|bins, r| {
            hist::$name::args(bins.cast(), r.matrix_rows, r.features, r.bins_per_feature, r.gradients, r.rows, r.work, r.node_ranges, r.group_features, r.layout, r.histogram, r.bad_row)
        }),*]
    };
}

/// A gradient type's multi-feature entry points: by bin type (`u8`, `u16`, `u32`), then packed.
macro_rules! multi_feature_kernels {
    ($($g:ty => [$($dense:ident),*], $packed:ident, [$($global:ident),*], $global_packed:ident;)*) => {$(
        impl MultiFeatureGradient for $g {
            const PACKED: &'static str = hist::$packed::NAME;
            const MULTI: [&'static str; 3] = [$(hist::$dense::NAME),*];
            const MULTI_ARGS: [MultiArgs<$g>; 3] = multi_args!($($dense),*);
            const GLOBAL: [&'static str; 4] = [$(hist::$global::NAME,)* hist::$global_packed::NAME];
            const GLOBAL_ARGS: [GlobalArgs<$g>; 3] = global_args!($($global),*);
            const GLOBAL_PACKED_ARGS: GlobalPackedArgs<$g> = |words, row_words, bits, r| {
                hist::$global_packed::args(
                    words, row_words, bits, r.matrix_rows, r.gradients, r.rows, r.work, r.node_ranges,
                    r.feature_offsets, r.groups, r.node_stride, r.layout, r.histogram, r.bad_row,
                )
            };
            const PACKED_ARGS: PackedArgs<$g> = |words, row_words, bits, r| {
                hist::$packed::args(
                    words, row_words, bits, r.matrix_rows, r.features, r.bins_per_feature, r.gradients, r.rows, r.work,
                    r.node_ranges, r.group_features, r.layout, r.histogram, r.bad_row,
                )
            };
        }
    )*};
}

multi_feature_kernels! {
    GradientPair<i64> => [primitives_histogram_multi_gpi64_u8, primitives_histogram_multi_gpi64_u16, primitives_histogram_multi_gpi64_u32], primitives_histogram_multi_gpi64_packed,
        [primitives_histogram_global_gpi64_u8, primitives_histogram_global_gpi64_u16, primitives_histogram_global_gpi64_u32], primitives_histogram_global_gpi64_packed;
    GradientPair<f32> => [primitives_histogram_multi_gpf32_u8, primitives_histogram_multi_gpf32_u16, primitives_histogram_multi_gpf32_u32], primitives_histogram_multi_gpf32_packed,
        [primitives_histogram_global_gpf32_u8, primitives_histogram_global_gpf32_u16, primitives_histogram_global_gpf32_u32], primitives_histogram_global_gpf32_packed;
    GradientPair<f64> => [primitives_histogram_multi_gpf64_u8, primitives_histogram_multi_gpf64_u16, primitives_histogram_multi_gpf64_u32], primitives_histogram_multi_gpf64_packed,
        [primitives_histogram_global_gpf64_u8, primitives_histogram_global_gpf64_u16, primitives_histogram_global_gpf64_u32], primitives_histogram_global_gpf64_packed;
}

/// A float sample type of [`DeviceHistogram::histogram_even`]: `f32`, `f64`. Sealed.
pub trait EvenSample: Element + PartialOrd + sealed::Sealed {
    const EVEN: &'static str;
    /// Its typed launch arguments: samples, items, lower bits, upper bits, bins, layout,
    /// histogram, ignored.
    #[doc(hidden)]
    const EVEN_ARGS: fn(*const Self, u64, u64, u64, u32, u32, *mut u64, *mut u64) -> KernelArgs;
    /// The value's bits, zero-extended to 64.
    fn bits(self) -> u64;
    /// Whether `upper - lower` is a finite, positive width.
    fn valid_range(lower: Self, upper: Self) -> bool;
}

impl EvenSample for f32 {
    const EVEN: &'static str = hist::primitives_histogram_even_f32::NAME;
    const EVEN_ARGS: fn(*const f32, u64, u64, u64, u32, u32, *mut u64, *mut u64) -> KernelArgs =
        hist::primitives_histogram_even_f32::args;
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn valid_range(lower: Self, upper: Self) -> bool {
        lower.is_finite() && upper.is_finite() && lower < upper && (upper - lower).is_finite()
    }
}
impl EvenSample for f64 {
    const EVEN: &'static str = hist::primitives_histogram_even_f64::NAME;
    const EVEN_ARGS: fn(*const f64, u64, u64, u64, u32, u32, *mut u64, *mut u64) -> KernelArgs =
        hist::primitives_histogram_even_f64::args;
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn valid_range(lower: Self, upper: Self) -> bool {
        lower.is_finite() && upper.is_finite() && lower < upper && (upper - lower).is_finite()
    }
}

/// The dense bin matrix of [`DeviceHistogram::multi_feature`]: row `r`'s `features` local bin ids
/// at `bins[r * features..(r + 1) * features]`, each below `bins_per_feature` or else missing.
#[derive(Clone, Copy, Debug)]
pub struct MultiFeatureMatrix<'a, B: Element> {
    pub bins: &'a DeviceBuffer<B>,
    pub features: usize,
    pub bins_per_feature: usize,
}

/// A bin matrix of bit-packed rows for [`DeviceHistogram::multi_feature`] (XGBoost's ELLPACK
/// layout): row `r` is the `row_words` words from `words[r * row_words]`, its feature `f`'s local
/// bin id the bits `f * bits..(f + 1) * bits` of them (bit `i` is bit `i % 32` of word `i / 32`),
/// `row_words` at least `ceil(features * bits / 32)`. An id at or above `bins_per_feature` is a
/// missing value, so `bits` bits hold `2^bits - 1` bins and the missing id (`2^bits - 1`): 9 bits
/// for 256 bins, 28 features in 8 words a row instead of 14 of `u16` ids. [`pack_bin_rows`] packs
/// ids this way on the host.
#[derive(Clone, Copy, Debug)]
pub struct PackedBinMatrix<'a> {
    pub words: &'a DeviceBuffer<u32>,
    pub row_words: usize,
    pub bits: u32,
    pub features: usize,
    pub bins_per_feature: usize,
}

/// `ids` (rows of `features` local bin ids, each below `2^bits`) packed as [`PackedBinMatrix`]
/// reads them, `ceil(features * bits / 32)` words a row.
pub fn pack_bin_rows(ids: &[u32], features: usize, bits: u32) -> Vec<u32> {
    let row_words = kernel::PackedRows::row_words(features, bits);
    let rows = ids.len() / features.max(1);
    let mut words = vec![0u32; rows * row_words];
    for (row, packed) in ids.chunks_exact(features.max(1)).zip(words.chunks_exact_mut(row_words.max(1))) {
        let mask = ((1u64 << bits) - 1) as u32;
        for (w, word) in packed.iter_mut().enumerate() {
            *word = kernel::packed_row_word(w, features, bits, |f| row[f] & mask);
        }
    }
    words
}

/// A bin matrix [`DeviceHistogram::multi_feature`] reads: dense ids ([`MultiFeatureMatrix`]) or
/// bit-packed rows ([`PackedBinMatrix`]). Sealed.
pub trait MultiFeatureBins: Copy + sealed::Sealed {
    /// Rows, features and bins a feature, checked.
    #[doc(hidden)]
    fn shape(&self) -> Result<(usize, usize, usize)>;
    /// The launch arguments of the kernel for gradients `G`: the matrix's, then `rest`.
    #[doc(hidden)]
    fn args<G: MultiFeatureGradient>(&self, rest: MultiRest<G>) -> KernelArgs;
    /// The same for the global layout's kernel.
    #[doc(hidden)]
    fn global_args<G: MultiFeatureGradient>(&self, rest: GlobalRest<G>) -> KernelArgs;
}

impl<B: BinIndex> MultiFeatureBins for MultiFeatureMatrix<'_, B> {
    fn shape(&self) -> Result<(usize, usize, usize)> {
        check_shape(self.features, self.bins_per_feature)?;
        if !self.bins.len().is_multiple_of(self.features) {
            return Err(Error::InvalidArgument {
                name: "bins",
                reason: format!("{} bin ids are not whole rows of {} features", self.bins.len(), self.features),
            });
        }
        Ok((self.bins.len() / self.features, self.features, self.bins_per_feature))
    }
    fn args<G: MultiFeatureGradient>(&self, rest: MultiRest<G>) -> KernelArgs {
        G::MULTI_ARGS[B::TABLE_INDEX](self.bins.as_ptr().cast(), rest)
    }
    fn global_args<G: MultiFeatureGradient>(&self, rest: GlobalRest<G>) -> KernelArgs {
        G::GLOBAL_ARGS[B::TABLE_INDEX](self.bins.as_ptr().cast(), rest)
    }
}

impl MultiFeatureBins for PackedBinMatrix<'_> {
    fn shape(&self) -> Result<(usize, usize, usize)> {
        check_shape(self.features, self.bins_per_feature)?;
        if !(1..=kernel::MAX_PACKED_BITS).contains(&self.bits) {
            return Err(Error::InvalidArgument {
                name: "bits",
                reason: format!("{}; 1 to {}", self.bits, kernel::MAX_PACKED_BITS),
            });
        }
        let least = kernel::PackedRows::row_words(self.features, self.bits);
        if self.row_words < least {
            return Err(Error::InvalidArgument {
                name: "row_words",
                reason: format!("{}: {} features of {} bits take {least}", self.row_words, self.features, self.bits),
            });
        }
        if !self.words.len().is_multiple_of(self.row_words) {
            return Err(Error::InvalidArgument {
                name: "words",
                reason: format!("{} words are not whole rows of {}", self.words.len(), self.row_words),
            });
        }
        Ok((self.words.len() / self.row_words, self.features, self.bins_per_feature))
    }
    fn args<G: MultiFeatureGradient>(&self, rest: MultiRest<G>) -> KernelArgs {
        G::PACKED_ARGS(self.words.as_ptr(), self.row_words as u64, self.bits, rest)
    }
    fn global_args<G: MultiFeatureGradient>(&self, rest: GlobalRest<G>) -> KernelArgs {
        G::GLOBAL_PACKED_ARGS(self.words.as_ptr(), self.row_words as u64, self.bits, rest)
    }
}

/// The feature and bin counts as the kernels take them: 1 to 2^32 - 1 each.
fn check_shape(features: usize, bins_per_feature: usize) -> Result<()> {
    if features == 0 || features > u32::MAX as usize {
        return Err(Error::InvalidArgument { name: "features", reason: format!("{features}; 1 to 2^32 - 1") });
    }
    if bins_per_feature == 0 || bins_per_feature > u32::MAX as usize {
        return Err(Error::InvalidArgument {
            name: "bins_per_feature",
            reason: format!("{bins_per_feature}; 1 to 2^32 - 1"),
        });
    }
    Ok(())
}

/// Device-wide histograms (CUB's `DeviceHistogram`, plus the multi-feature gradient histogram of
/// gradient boosting).
///
/// Every call **adds** to the histogram it is given (clear it first for a fresh one), so a histogram
/// can be built over several batches. Samples outside the bins are **ignored and counted**: a bin id
/// at or above the bin count (`histogram.len()`), and for [`DeviceHistogram::histogram_even`] a
/// sample outside `[lower, upper)` or NaN; their number is added to `ignored[0]`.
///
/// Counts are `u64`: a device holds more than 2^32 `u8` samples (4 GiB), and the block totals are
/// flushed with one 64-bit atomic per bin, which costs the same as a 32-bit one. (Inside a block the
/// counters are `u32`; the grid is sized so that no block sees 2^32 samples.)
///
/// Weighted sums in `f32`/`f64` depend on the order of the atomics (they can differ in the last bits
/// from run to run); `GradientPair<i64>` fixed point is exact, the same bits every run.
///
/// ```no_run
/// use primitives::{DeviceHistogram, Gpu};
/// # fn main() -> primitives::Result<()> {
/// let gpu = Gpu::new()?;
/// let samples = gpu.upload(&[0u8, 3, 3, 1, 7])?;
/// let mut histogram = gpu.alloc_zeroed::<u64>(4)?;
/// let mut ignored = gpu.alloc_zeroed::<u64>(1)?;
/// DeviceHistogram::count(&gpu, &samples, &mut histogram, &mut ignored)?;
/// assert_eq!(histogram.to_vec(&gpu)?, [1, 1, 0, 2]);
/// assert_eq!(ignored.to_vec(&gpu)?, [1]); // the 7
/// # Ok(())
/// # }
/// ```
pub struct DeviceHistogram;

impl DeviceHistogram {
    /// The block-histogram layout used for `bins` bins of `C` on `gpu`, as a kernel argument (a
    /// [`BlockHistogramLayout::code`], or `kernel::DIRECT_TO_GLOBAL` when not even one copy fits in
    /// shared memory).
    fn layout_code<C>(gpu: &Gpu, bins: u32) -> u32 {
        let limit = gpu.properties().max_shared_bytes_per_block;
        let chosen = BlockHistogramLayout::select::<C>(bins, kernel::BLOCK_THREADS).code();
        let single = BlockHistogramLayout::Atomic { copies: 1 }.code();
        if kernel::shared_bytes::<C>(bins, chosen) <= limit {
            chosen
        } else if kernel::shared_bytes::<C>(bins, single) <= limit {
            single
        } else {
            kernel::DIRECT_TO_GLOBAL
        }
    }

    /// `histogram[b] += |{i : samples[i] == b}|` for every bin `b < histogram.len()`; the number of
    /// samples at or above `histogram.len()` is added to `ignored[0]`.
    pub fn count<B: BinIndex>(
        gpu: &Gpu,
        samples: &DeviceBuffer<B>,
        histogram: &mut DeviceBuffer<u64>,
        ignored: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        let bins = check_bins(histogram.len())?;
        let layout = Self::layout_code::<u32>(gpu, bins);
        let args = |histogram, ignored| {
            B::COUNT_ARGS(samples.as_ptr(), samples.len() as u64, bins, layout, histogram, ignored)
        };
        Self::launch::<B, u32>(gpu, samples.len(), bins, layout, histogram, ignored, args)
    }

    /// [`DeviceHistogram::count`] with the block-histogram layout forced (`None` is the selector's
    /// choice), to measure the selector (`benches/src/bin/bandwidth/histogram.rs`).
    /// [`BlockHistogramLayout::Atomic`] takes 1 to 8 copies (the warps of a block); a layout whose
    /// shared memory exceeds the device's limit is an error.
    pub fn count_with_layout<B: BinIndex>(
        gpu: &Gpu,
        samples: &DeviceBuffer<B>,
        layout: Option<BlockHistogramLayout>,
        histogram: &mut DeviceBuffer<u64>,
        ignored: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        let Some(forced) = layout else { return Self::count(gpu, samples, histogram, ignored) };
        let bins = check_bins(histogram.len())?;
        let warps = kernel::BLOCK_THREADS / 32;
        let code = forced.code();
        let fits = kernel::shared_bytes::<u32>(bins, code) <= gpu.properties().max_shared_bytes_per_block;
        if code > warps || !fits {
            return Err(Error::InvalidArgument {
                name: "layout",
                reason: format!("{forced:?} for {bins} bins: 1 to {warps} copies that fit in shared memory"),
            });
        }
        let args =
            |histogram, ignored| B::COUNT_ARGS(samples.as_ptr(), samples.len() as u64, bins, code, histogram, ignored);
        Self::launch::<B, u32>(gpu, samples.len(), bins, code, histogram, ignored, args)
    }

    /// `histogram[b] += Σ {weights[i] : samples[i] == b}` for every bin `b < histogram.len()`; the
    /// number of samples at or above `histogram.len()` is added to `ignored[0]`.
    pub fn weighted<B: BinIndex, W: HistogramWeight>(
        gpu: &Gpu,
        samples: &DeviceBuffer<B>,
        weights: &DeviceBuffer<W>,
        histogram: &mut DeviceBuffer<W>,
        ignored: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        let bins = check_bins(histogram.len())?;
        if weights.len() < samples.len() {
            return Err(Error::InvalidArgument {
                name: "weights",
                reason: format!("{} weights for {} samples", weights.len(), samples.len()),
            });
        }
        let layout = Self::layout_code::<W>(gpu, bins);
        let args = |histogram, ignored| {
            let (data, len) = (samples.as_ptr().cast(), samples.len() as u64);
            W::WEIGHTED_ARGS[B::TABLE_INDEX](data, len, bins, weights.as_ptr(), layout, histogram, ignored)
        };
        Self::launch::<B, W>(gpu, samples.len(), bins, layout, histogram, ignored, args)
    }

    /// CUB's `HistogramEven`: `histogram.len()` equal-width bins over `[lower, upper)`. Sample `x`
    /// goes to bin `min(floor((x - lower) * (bins / (upper - lower))), bins - 1)`, computed in `F`
    /// ([`crate::cpu::EvenBinning::even_bin`] is the same formula); samples outside `[lower, upper)` and NaN
    /// are added to `ignored[0]`. `lower` and `upper` must be finite with `lower < upper`.
    pub fn histogram_even<F: EvenSample>(
        gpu: &Gpu,
        samples: &DeviceBuffer<F>,
        lower: F,
        upper: F,
        histogram: &mut DeviceBuffer<u64>,
        ignored: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        let bins = check_bins(histogram.len())?;
        if !F::valid_range(lower, upper) {
            return Err(Error::InvalidArgument {
                name: "upper",
                reason: "lower and upper must be finite, lower < upper, with a finite width".into(),
            });
        }
        let layout = Self::layout_code::<u32>(gpu, bins);
        let args = |histogram, ignored| {
            let (data, len) = (samples.as_ptr(), samples.len() as u64);
            F::EVEN_ARGS(data, len, lower.bits(), upper.bits(), bins, layout, histogram, ignored)
        };
        Self::launch::<F, u32>(gpu, samples.len(), bins, layout, histogram, ignored, args)
    }

    /// Checks the outputs, sizes the grid and launches; `args` builds the kernel's arguments from the
    /// histogram's and the ignored counter's pointers.
    #[allow(clippy::too_many_arguments)]
    fn launch<S: Element, C: HistogramCounter>(
        gpu: &Gpu,
        len: usize,
        bins: u32,
        layout: u32,
        histogram: &mut DeviceBuffer<C::Wide>,
        ignored: &mut DeviceBuffer<u64>,
        args: impl FnOnce(*mut C::Wide, *mut u64) -> KernelArgs,
    ) -> Result<()> {
        if ignored.is_empty() {
            return Err(Error::InvalidArgument { name: "ignored", reason: "needs one element".into() });
        }
        if len == 0 {
            return Ok(());
        }
        let threads = kernel::BLOCK_THREADS as usize;
        let vectors = len.div_ceil(16 / size_of::<S>());
        let resident = (gpu.properties().multiprocessors.max(1) * BLOCKS_PER_MULTIPROCESSOR) as usize;
        // Enough blocks that none sees 2^32 samples (its u32 counters), however long the input.
        let grid = vectors.div_ceil(threads).min(resident).max(len.div_ceil(u32::MAX as usize));
        if grid > i32::MAX as usize {
            return Err(Error::InvalidArgument { name: "samples", reason: format!("{len} samples are too many") });
        }
        let config = LaunchConfig {
            grid_dim: (grid as u32, 1, 1),
            block_dim: (kernel::BLOCK_THREADS, 1, 1),
            shared_mem_bytes: kernel::shared_bytes::<C>(bins, layout) as u32,
        };
        let args = args(histogram.as_mut_ptr(), ignored.as_mut_ptr());
        // SAFETY: the samples (and weights, checked as long) hold `len` elements, the histogram
        // `bins`, `ignored` one; the shared memory is what `shared_bytes` says for this layout, at
        // most the device's limit (`layout_code`); only this launch, in stream order, uses them.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args) }
    }

    /// The multi-feature gradient histogram of gradient boosting:
    /// `histogram[(n * features + f) * bins_per_feature + b] += Σ gradients[r]` over the rows `r =
    /// rows[p]`, `p` in `node_offsets[n]..node_offsets[n + 1]`, whose bin for feature `f` is
    /// `matrix.bins[r * features + f] == b`. Bin ids at or above `bins_per_feature` are missing
    /// values: skipped, not an error. Nodes are `0..node_offsets.len() - 1` (empty ones are fine).
    ///
    /// `GradientPair<i64>` sums are exact, the same bits whatever the order of the atomics, so the
    /// result repeats bit for bit. Every row index must be a row of the matrix (`matrix.bins.len() /
    /// features` rows): this is checked on the device, and the call waits for the check; a bad index
    /// gives [`Error::InvalidArgument`] naming `rows` (the histogram then holds the other rows' sums).
    pub fn multi_feature<M: MultiFeatureBins, G: MultiFeatureGradient>(
        gpu: &Gpu,
        matrix: M,
        gradients: &DeviceBuffer<G>,
        rows: &DeviceBuffer<u32>,
        node_offsets: &[u32],
        histogram: &mut DeviceBuffer<G>,
    ) -> Result<()> {
        if node_offsets.len() < 2 {
            return Err(Error::InvalidArgument {
                name: "node_offsets",
                reason: format!("{} offsets; a node needs two", node_offsets.len()),
            });
        }
        for (n, pair) in node_offsets.windows(2).enumerate() {
            if pair[0] > pair[1] {
                return Err(Error::InvalidArgument {
                    name: "node_offsets",
                    reason: format!("node {n}: offsets {} > {} out of order", pair[0], pair[1]),
                });
            }
        }
        let last = node_offsets[node_offsets.len() - 1] as usize;
        if last > rows.len() {
            return Err(Error::InvalidArgument {
                name: "node_offsets",
                reason: format!("offset {last} past the {} row indices", rows.len()),
            });
        }
        let ranges: Vec<(u32, u32)> = node_offsets.windows(2).map(|pair| (pair[0], pair[1])).collect();
        let mut bad_row = gpu.upload(&[u32::MAX])?;
        let (matrix_rows, _, _) = matrix.shape()?;
        Self::multi_feature_ranges(gpu, matrix, gradients, rows, &ranges, histogram, &mut bad_row)?;
        let bad = bad_row.to_vec(gpu)?[0];
        if bad != u32::MAX {
            return Err(Error::InvalidArgument {
                name: "rows",
                reason: format!("rows[{bad}] is not a row of the {matrix_rows}-row bin matrix"),
            });
        }
        Ok(())
    }

    /// [`Self::multi_feature`] for nodes whose rows are any ranges of `rows`: node `n`'s are
    /// `rows[ranges[n].0..ranges[n].1]` (ranges in any order, apart or empty; the histogram needs a
    /// slot for every node, and an empty range leaves its slot untouched). Enqueued without waiting
    /// for the device: a row index that is not a row of the matrix is skipped, and the smallest
    /// position holding one is written to `bad_row[0]` (an atomic minimum: set it to `u32::MAX`
    /// beforehand and read it when you next wait).
    pub fn multi_feature_ranges<M: MultiFeatureBins, G: MultiFeatureGradient>(
        gpu: &Gpu,
        matrix: M,
        gradients: &DeviceBuffer<G>,
        rows: &DeviceBuffer<u32>,
        ranges: &[(u32, u32)],
        histogram: &mut DeviceBuffer<G>,
        bad_row: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        Self::multi_feature_bounded(gpu, matrix, gradients, rows, ranges, None, histogram, bad_row)
    }

    /// [`Self::multi_feature_ranges`] for nodes whose ranges an earlier kernel wrote on the device
    /// (so the host need not wait for them): node `n`'s rows are the positions of
    /// `rows[bounds[n].0..bounds[n].1]` that lie in `device_ranges[2n]..device_ranges[2n + 1]`. The
    /// host's `bounds` size the launch; blocks over positions outside a node's range exit at once.
    /// A gradient booster knows a child's rows lie in one half of its parent's range before the
    /// device has counted them.
    #[allow(clippy::too_many_arguments)]
    pub fn multi_feature_device_ranges<M: MultiFeatureBins, G: MultiFeatureGradient>(
        gpu: &Gpu,
        matrix: M,
        gradients: &DeviceBuffer<G>,
        rows: &DeviceBuffer<u32>,
        bounds: &[(u32, u32)],
        device_ranges: &DeviceBuffer<u32>,
        histogram: &mut DeviceBuffer<G>,
        bad_row: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        check_device_ranges(device_ranges, bounds)?;
        Self::multi_feature_bounded(gpu, matrix, gradients, rows, bounds, Some(device_ranges), histogram, bad_row)
    }

    /// [`Self::multi_feature_ranges`] into histograms in the **global layout**: node `n`'s bin `b`
    /// of feature `f` at `histogram[n * total + feature_offsets[f] + b]`, `total` the last of the
    /// `features + 1` increasing `feature_offsets`, with no padding (XGBoost's layout, for features
    /// of very different bin counts: a categorical feature of a million categories beside numeric
    /// ones of 256). A feature's ids at or above its bin count are missing values. Features are
    /// grouped as their bins fit in shared memory; a feature that alone does not is added straight
    /// to the device histogram.
    #[allow(clippy::too_many_arguments)]
    pub fn multi_feature_global_ranges<M: MultiFeatureBins, G: MultiFeatureGradient>(
        gpu: &Gpu,
        matrix: M,
        gradients: &DeviceBuffer<G>,
        rows: &DeviceBuffer<u32>,
        ranges: &[(u32, u32)],
        feature_offsets: &[u32],
        histogram: &mut DeviceBuffer<G>,
        bad_row: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        let global = Some(feature_offsets);
        Self::multi_feature_laid_out(gpu, matrix, gradients, rows, ranges, None, global, histogram, bad_row)
    }

    /// [`Self::multi_feature_device_ranges`] in the global layout of
    /// [`Self::multi_feature_global_ranges`].
    #[allow(clippy::too_many_arguments)]
    pub fn multi_feature_global_device_ranges<M: MultiFeatureBins, G: MultiFeatureGradient>(
        gpu: &Gpu,
        matrix: M,
        gradients: &DeviceBuffer<G>,
        rows: &DeviceBuffer<u32>,
        bounds: &[(u32, u32)],
        device_ranges: &DeviceBuffer<u32>,
        feature_offsets: &[u32],
        histogram: &mut DeviceBuffer<G>,
        bad_row: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        check_device_ranges(device_ranges, bounds)?;
        let (ranges, global) = (Some(device_ranges), Some(feature_offsets));
        Self::multi_feature_laid_out(gpu, matrix, gradients, rows, bounds, ranges, global, histogram, bad_row)
    }

    #[allow(clippy::too_many_arguments)]
    fn multi_feature_bounded<M: MultiFeatureBins, G: MultiFeatureGradient>(
        gpu: &Gpu,
        matrix: M,
        gradients: &DeviceBuffer<G>,
        rows: &DeviceBuffer<u32>,
        ranges: &[(u32, u32)],
        device_ranges: Option<&DeviceBuffer<u32>>,
        histogram: &mut DeviceBuffer<G>,
        bad_row: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        Self::multi_feature_laid_out(gpu, matrix, gradients, rows, ranges, device_ranges, None, histogram, bad_row)
    }

    /// The multi-feature histogram, padded (`global` none) or in the global layout of these
    /// feature offsets.
    #[allow(clippy::too_many_arguments)]
    fn multi_feature_laid_out<M: MultiFeatureBins, G: MultiFeatureGradient>(
        gpu: &Gpu,
        matrix: M,
        gradients: &DeviceBuffer<G>,
        rows: &DeviceBuffer<u32>,
        ranges: &[(u32, u32)],
        device_ranges: Option<&DeviceBuffer<u32>>,
        global: Option<&[u32]>,
        histogram: &mut DeviceBuffer<G>,
        bad_row: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        let (matrix_rows, features, bins_per_feature) = matrix.shape()?;
        if let Some(offsets) = global {
            check_feature_offsets(offsets, features)?;
        }
        if gradients.len() < matrix_rows {
            return Err(Error::InvalidArgument {
                name: "gradients",
                reason: format!("{} gradient pairs for {matrix_rows} rows", gradients.len()),
            });
        }
        if ranges.is_empty() {
            return Err(Error::InvalidArgument { name: "ranges", reason: "no nodes".into() });
        }
        if let Some((n, &(begin, end))) =
            ranges.iter().enumerate().find(|&(_, &(begin, end))| begin > end || end as usize > rows.len())
        {
            return Err(Error::InvalidArgument {
                name: "ranges",
                reason: format!("node {n}: rows {begin}..{end} of {} row indices", rows.len()),
            });
        }
        if bad_row.is_empty() {
            return Err(Error::InvalidArgument { name: "bad_row", reason: "needs one element".into() });
        }
        let nodes = ranges.len();
        let node_len = match global {
            Some(offsets) => offsets[features] as usize,
            None => features * bins_per_feature,
        };
        let needed = nodes
            .checked_mul(node_len)
            .ok_or_else(|| Error::InvalidArgument { name: "histogram", reason: "size overflows".into() })?;
        if histogram.len() < needed {
            return Err(Error::InvalidArgument {
                name: "histogram",
                reason: format!("{} elements for {nodes} nodes x {node_len} bins", histogram.len()),
            });
        }
        let (features, bins_per_feature) = (features as u32, bins_per_feature as u32);

        let (groups, group_features, layout, shared_bytes) = match global {
            None => feature_groups::<G>(gpu, features, bins_per_feature),
            Some(offsets) => {
                let (groups, layout, shared_bytes) = global_groups::<G>(gpu, offsets);
                (groups.len(), 0, layout, shared_bytes)
            }
        };
        let global_groups = global.map(|offsets| global_groups::<G>(gpu, offsets).0);

        // Work items: each node's rows in chunks, each chunk once per feature group.
        let total_rows: usize = ranges.iter().map(|&(begin, end)| (end - begin) as usize).sum();
        if total_rows == 0 {
            return Ok(());
        }
        let resident = gpu.properties().multiprocessors.max(1) as usize * MULTI_BLOCKS_PER_MULTIPROCESSOR;
        let split = if device_ranges.is_some() { MULTI_DEVICE_RANGE_SPLIT } else { 1 };
        let chunk = total_rows.div_ceil(resident * MULTI_WAVES * split).max(MULTI_MIN_CHUNK_ROWS);
        let work = work_items(ranges, groups, chunk);
        if work.len() > i32::MAX as usize {
            return Err(Error::InvalidArgument { name: "rows", reason: format!("{total_rows} rows are too many") });
        }
        // The lock is held until the launch is enqueued; a later call's copy is ordered after it on
        // the one stream.
        // The global layout's feature offsets and groups follow the work items in one upload.
        let mut words: Vec<u32> = bytemuck::cast_slice(&work).to_vec();
        let (offsets_at, groups_at) = (words.len(), words.len() + global.map_or(0, <[u32]>::len));
        if let (Some(offsets), Some(groups)) = (global, &global_groups) {
            words.extend_from_slice(offsets);
            words.extend_from_slice(bytemuck::cast_slice(groups));
        }
        let words = &words[..];
        let mut kept = gpu.multi_work.lock().unwrap_or_else(|p| p.into_inner());
        if kept.as_ref().is_none_or(|buffer| buffer.len() < words.len()) {
            *kept = Some(gpu.alloc_uninitialized::<u32>(words.len().next_multiple_of(4096))?);
        }
        let work_buffer = kept.as_mut().expect("allocated above");
        work_buffer.copy_from_host(gpu, words)?;
        let config = LaunchConfig {
            grid_dim: (work.len() as u32, 1, 1),
            block_dim: (kernel::MULTI_BLOCK_THREADS, 1, 1),
            shared_mem_bytes: shared_bytes as u32,
        };
        let node_ranges = device_ranges.map_or(std::ptr::null(), |r| r.as_ptr().cast());
        let args = match global {
            None => matrix.args(MultiRest {
                matrix_rows: matrix_rows as u64,
                features,
                bins_per_feature,
                gradients: gradients.as_ptr(),
                rows: rows.as_ptr(),
                work: work_buffer.as_ptr().cast(),
                node_ranges,
                group_features,
                layout,
                histogram: histogram.as_mut_ptr(),
                bad_row: bad_row.as_mut_ptr(),
            }),
            Some(_) => matrix.global_args(GlobalRest {
                matrix_rows: matrix_rows as u64,
                features,
                gradients: gradients.as_ptr(),
                rows: rows.as_ptr(),
                work: work_buffer.as_ptr().cast(),
                node_ranges,
                feature_offsets: work_buffer.as_ptr().wrapping_add(offsets_at),
                groups: work_buffer.as_ptr().wrapping_add(groups_at).cast(),
                node_stride: node_len as u64,
                layout,
                histogram: histogram.as_mut_ptr(),
                bad_row: bad_row.as_mut_ptr(),
            }),
        };
        // Two blocks of a 28-feature group (115 KB each) a multiprocessor need the largest carveout.
        gpu.prefer_shared_memory(PRIMITIVES_MODULE, args.name())?;
        // SAFETY: the matrix holds `matrix_rows * features` bin ids and the gradients `matrix_rows`
        // pairs (checked); every work item's rows lie in a range within `rows` (checked), its
        // node below `nodes` and its group's first feature below `features`; the histogram holds
        // `nodes * node_len` elements (checked; in the global layout the offsets and groups follow
        // the work items, every group's features below `features`); `device_ranges`, when given, has
        // a range per node (checked), and the kernel keeps within the bounds; the shared memory is what
        // `multi_shared_bytes` says, at most the device's limit, or none for `DIRECT_TO_GLOBAL`.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        Ok(())
    }
}

/// The feature groups of a multi-feature histogram: as many features as fit in a block's share of
/// the multiprocessor's shared memory; all of the device's limit when not even one feature fits in
/// that share; and when not even in that, every feature at once added straight to the device
/// histogram (XGBoost's global-memory fallback for a large `max_bin`). Returns the groups, the
/// features a group, the block histogram's layout code and the shared bytes a block.
fn feature_groups<G: MultiFeatureGradient>(
    gpu: &Gpu,
    features: u32,
    bins_per_feature: u32,
) -> (usize, u32, u32, usize) {
    let limit = gpu.properties().max_shared_bytes_per_block;
    let share = (limit / MULTI_BLOCKS_PER_MULTIPROCESSOR).saturating_sub(RESERVED_SHARED_BYTES);
    let feature_bytes = bins_per_feature as usize * size_of::<G>();
    let fitting = if feature_bytes <= share { share / feature_bytes } else { limit / feature_bytes };
    if fitting == 0 {
        return (1, features, kernel::DIRECT_TO_GLOBAL, 0);
    }
    let groups = (features as usize).div_ceil(fitting);
    let group_features = (features as usize).div_ceil(groups) as u32;
    let slots = group_features * bins_per_feature;
    let mut layout = BlockHistogramLayout::select::<G>(slots, kernel::MULTI_BLOCK_THREADS).code();
    if kernel::multi_shared_bytes::<G>(group_features, bins_per_feature, layout) > limit {
        layout = BlockHistogramLayout::Atomic { copies: 1 }.code();
    }
    (groups, group_features, layout, kernel::multi_shared_bytes::<G>(group_features, bins_per_feature, layout))
}

/// The feature groups of a histogram in the global layout (`offsets`, a feature's first bin each
/// and the end): consecutive features whose bins fit in a block's share of the multiprocessor's
/// shared memory, about evenly filled; a feature that alone does not fit is a group of its own,
/// added straight to the device histogram. Returns the groups, the block histogram's layout code
/// for the largest shared group, and the shared bytes a block.
fn global_groups<G: MultiFeatureGradient>(gpu: &Gpu, offsets: &[u32]) -> (Vec<FeatureGroup>, u32, usize) {
    let limit = gpu.properties().max_shared_bytes_per_block;
    let share = (limit / MULTI_BLOCKS_PER_MULTIPROCESSOR).saturating_sub(RESERVED_SHARED_BYTES);
    let capacity = (share / size_of::<G>()).max(1) as u32;
    let features = offsets.len() - 1;
    let bins = |f: usize| offsets[f + 1] - offsets[f];
    // Fill to an even share of the shared features' bins, at most the capacity.
    let small: u64 = (0..features).map(bins).filter(|&b| b <= capacity).map(u64::from).sum();
    let target = small.div_ceil(small.div_ceil(capacity as u64).max(1)).max(1) as u32;
    let mut groups: Vec<FeatureGroup> = Vec::new();
    for f in 0..features as u32 {
        let b = bins(f as usize);
        match groups.last_mut() {
            _ if b > capacity => groups.push(FeatureGroup { first: f, end: f + 1, bins: b, shared: 0 }),
            Some(g) if g.shared == 1 && g.bins + b <= target => {
                g.end += 1;
                g.bins += b;
            }
            _ => groups.push(FeatureGroup { first: f, end: f + 1, bins: b, shared: 1 }),
        }
    }
    let most = groups.iter().filter(|g| g.shared == 1).map(|g| g.bins).max().unwrap_or(0);
    if most == 0 {
        return (groups, kernel::DIRECT_TO_GLOBAL, 0);
    }
    let mut layout = BlockHistogramLayout::select::<G>(most, kernel::MULTI_BLOCK_THREADS).code();
    if kernel::multi_shared_bytes::<G>(1, most, layout) > limit {
        layout = BlockHistogramLayout::Atomic { copies: 1 }.code();
    }
    (groups, layout, kernel::multi_shared_bytes::<G>(1, most, layout))
}

/// Device ranges for every node of `bounds` (two entries a node).
fn check_device_ranges(device_ranges: &DeviceBuffer<u32>, bounds: &[(u32, u32)]) -> Result<()> {
    if device_ranges.len() < 2 * bounds.len() {
        return Err(Error::InvalidArgument {
            name: "device_ranges",
            reason: format!("{} entries for {} nodes; a node needs two", device_ranges.len(), bounds.len()),
        });
    }
    Ok(())
}

/// Feature offsets of the global layout, checked: one a feature and the end, increasing.
fn check_feature_offsets(offsets: &[u32], features: usize) -> Result<()> {
    if offsets.len() != features + 1 {
        return Err(Error::InvalidArgument {
            name: "feature_offsets",
            reason: format!("{} offsets for {features} features; one a feature and the end", offsets.len()),
        });
    }
    if let Some(f) = offsets.windows(2).position(|w| w[0] > w[1]) {
        return Err(Error::InvalidArgument {
            name: "feature_offsets",
            reason: format!("feature {f} ends before it begins ({} > {})", offsets[f], offsets[f + 1]),
        });
    }
    Ok(())
}

/// The work items of a multi-feature histogram: each node's rows in chunks of `chunk`, each chunk
/// once per feature group.
fn work_items(ranges: &[(u32, u32)], groups: usize, chunk: usize) -> Vec<MultiWork> {
    let mut work = Vec::new();
    for (n, &(begin, range_end)) in ranges.iter().enumerate() {
        let mut start = begin as usize;
        while start < range_end as usize {
            let end = (start + chunk).min(range_end as usize);
            for group in 0..groups as u32 {
                work.push(MultiWork { node: n as u32, start: start as u32, end: end as u32, group });
            }
            start = end;
        }
    }
    work
}

/// The bin count as the kernels take it: 1 to 2^32 - 1.
fn check_bins(bins: usize) -> Result<u32> {
    if bins == 0 || bins > u32::MAX as usize {
        return Err(Error::InvalidArgument { name: "histogram", reason: format!("{bins} bins; 1 to 2^32 - 1") });
    }
    Ok(bins as u32)
}

/// Every histogram kernel name the host API uses (for the test that the PTX has them all).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    let mut names = vec![<u8 as BinIndex>::COUNT, <u16 as BinIndex>::COUNT, <u32 as BinIndex>::COUNT];
    names.extend(<f32 as HistogramWeight>::WEIGHTED);
    names.extend(<f64 as HistogramWeight>::WEIGHTED);
    names.extend(<GradientPair<i64> as HistogramWeight>::WEIGHTED);
    names.extend([<f32 as EvenSample>::EVEN, <f64 as EvenSample>::EVEN]);
    names.extend(<GradientPair<i64> as MultiFeatureGradient>::MULTI);
    names.extend(<GradientPair<f32> as MultiFeatureGradient>::MULTI);
    names.extend(<GradientPair<f64> as MultiFeatureGradient>::MULTI);
    names.extend([
        <GradientPair<i64> as MultiFeatureGradient>::PACKED,
        <GradientPair<f32> as MultiFeatureGradient>::PACKED,
        <GradientPair<f64> as MultiFeatureGradient>::PACKED,
    ]);
    names.extend(<GradientPair<i64> as MultiFeatureGradient>::GLOBAL);
    names.extend(<GradientPair<f32> as MultiFeatureGradient>::GLOBAL);
    names.extend(<GradientPair<f64> as MultiFeatureGradient>::GLOBAL);
    names
}

#[cfg(test)]
mod tests {
    use super::pack_bin_rows;
    use proptest::prelude::*;

    proptest! {
        /// Packed words are the ids' bits laid end to end, bit by bit, each row from a new word.
        #[test]
        fn packed_rows_are_the_ids_bits_end_to_end(
            (features, bits, ids) in (1usize..40, 1u32..=16, 0usize..6).prop_flat_map(|(features, bits, rows)| {
                (Just(features), Just(bits), proptest::collection::vec(0u32..(1 << bits), rows * features))
            })
        ) {
            let row_words = (features * bits as usize).div_ceil(32);
            let mut want = vec![0u32; ids.len() / features * row_words];
            for (i, &id) in ids.iter().enumerate() {
                let (row, f) = (i / features, i % features);
                for b in 0..bits as usize {
                    let bit = f * bits as usize + b;
                    want[row * row_words + bit / 32] |= ((id >> b) & 1) << (bit % 32);
                }
            }
            prop_assert_eq!(pack_bin_rows(&ids, features, bits), want);
        }
    }
}
