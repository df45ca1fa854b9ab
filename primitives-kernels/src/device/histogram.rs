//! Device histograms: one block's share of
//!
//! * the histogram of a sequence ([`histogram_kernel`]): pre-binned samples (`u8`, `u16`, `u32` bin
//!   ids) or floats binned into equal-width bins over `[lower, upper)` (CUB's `HistogramEven`),
//!   counted or weighted. A grid of a few blocks per multiprocessor strides over the input in 16-byte
//!   vectors (16 `u8` samples a load); each block adds into a [`BlockHistogram`] in shared memory and
//!   flushes its totals with device-scope atomics at the end. A thread merges runs of equal bins in
//!   registers before adding (one shared-memory addition per run), which is what keeps data where
//!   most items fall into one bin from serialising on that bin's counter. Samples outside the bins
//!   (a bin id at or above the bin count; a float outside `[lower, upper)` or NaN) are ignored and
//!   counted. When not even one copy of the histogram fits in shared memory, blocks add straight to
//!   the device histogram ([`DIRECT_TO_GLOBAL`]).
//! * the multi-feature histogram of gradient boosting ([`multi_feature_kernel`]): a dense row-major
//!   bin matrix (`features` local bin ids a row), a gradient pair a row, a row-index list cut into
//!   nodes. A block takes one (node, chunk of the node's rows, group of features) work item: the
//!   group's histograms live in shared memory (one histogram of `group_features * bins_per_feature`
//!   bins), a thread takes a row (its gradient once, its bin ids several at a time), and the block
//!   flushes to `histogram[(node * features + feature) * bins_per_feature +
//!   bin]` with 64-bit device atomics. Integer (fixed-point) sums are exact, so the result is the
//!   same bits whatever the order.

use crate::arch;
use crate::block::{BlockHistogram, BlockHistogramLayout, DynamicShared, HistogramCounter};
use crate::ops::Element;
use crate::thread;

/// Threads per block of [`histogram_kernel`].
pub const BLOCK_THREADS: u32 = 256;
/// Threads per block of [`multi_feature_kernel`] (one or two blocks fill a multiprocessor's shared
/// memory with a 28-feature group of 256 fixed-point bins, so blocks are large).
pub const MULTI_BLOCK_THREADS: u32 = 512;
/// Bin ids a thread of [`multi_feature_kernel`] loads before adding their gradients.
pub const MULTI_BINS_IN_FLIGHT: usize = 8;
/// The layout code telling [`histogram_kernel`] and [`multi_feature_kernel`] to add straight to
/// the device histogram (when a block's histogram does not fit in shared memory).
pub const DIRECT_TO_GLOBAL: u32 = u32::MAX;

/// A pre-binned sample: a bin id.
pub trait BinId: Element {
    fn index(self) -> u32;
}
impl BinId for u8 {
    #[inline(always)]
    fn index(self) -> u32 {
        self as u32
    }
}
impl BinId for u16 {
    #[inline(always)]
    fn index(self) -> u32 {
        self as u32
    }
}
impl BinId for u32 {
    #[inline(always)]
    fn index(self) -> u32 {
        self
    }
}

/// Maps a sample to its bin; a result at or above the bin count means "ignored".
pub trait Binning<S>: Copy {
    fn bin(&self, sample: S) -> u32;
}

/// The sample is its bin id.
#[derive(Clone, Copy)]
pub struct PreBinned;

impl<S: BinId> Binning<S> for PreBinned {
    #[inline(always)]
    fn bin(&self, sample: S) -> u32 {
        sample.index()
    }
}

/// `bins` equal-width bins over `[lower, upper)`: bin `min(floor((x - lower) * (bins / (upper -
/// lower))), bins - 1)`, computed in the sample's precision with those operations in that order (the
/// CPU oracle does the same, so the bins agree bit for bit). `x` outside `[lower, upper)`, or NaN, is
/// ignored. The clamp only matters where rounding takes an `x` just below `upper` to `bins`.
#[derive(Clone, Copy)]
pub struct EvenBins<F> {
    lower: F,
    upper: F,
    scale: F,
    last: u32,
}

macro_rules! even_bins {
    ($($t:ty),*) => {$(
        impl EvenBins<$t> {
            /// `bins >= 1` and `lower < upper` (host-checked).
            #[inline(always)]
            pub fn new(lower: $t, upper: $t, bins: u32) -> Self {
                Self { lower, upper, scale: bins as $t / (upper - lower), last: bins - 1 }
            }
        }
        impl Binning<$t> for EvenBins<$t> {
            #[inline(always)]
            fn bin(&self, x: $t) -> u32 {
                if x >= self.lower && x < self.upper {
                    // Saturating conversion; the product is >= 0.
                    (((x - self.lower) * self.scale) as u32).min(self.last)
                } else {
                    u32::MAX
                }
            }
        }
    )*};
}
even_bins!(f32, f64);

/// Where each sample's weight comes from.
pub trait WeightSource<C>: Copy {
    /// Weights of samples `first..first + ITEMS`.
    ///
    /// # Safety
    /// Those samples exist.
    unsafe fn load<const ITEMS: usize>(&self, first: usize) -> [C; ITEMS];
    /// Weight of sample `index`.
    ///
    /// # Safety
    /// The sample exists.
    unsafe fn load_one(&self, index: usize) -> C;
}

/// Every sample counts 1.
#[derive(Clone, Copy)]
pub struct Count;

impl WeightSource<u32> for Count {
    #[inline(always)]
    unsafe fn load<const ITEMS: usize>(&self, _first: usize) -> [u32; ITEMS] {
        [1; ITEMS]
    }
    #[inline(always)]
    unsafe fn load_one(&self, _index: usize) -> u32 {
        1
    }
}

/// A weight per sample, from an array as long as the samples.
#[derive(Clone, Copy)]
pub struct Weights<W> {
    pub weights: *const W,
}

impl<W: HistogramCounter> WeightSource<W> for Weights<W> {
    #[inline(always)]
    unsafe fn load<const ITEMS: usize>(&self, first: usize) -> [W; ITEMS] {
        // SAFETY: the caller vouches for samples first..first + ITEMS; the weights are as many.
        unsafe { thread::load_blocked::<W, ITEMS>(self.weights.add(first)) }
    }
    #[inline(always)]
    unsafe fn load_one(&self, index: usize) -> W {
        // SAFETY: as above.
        unsafe { arch::load(self.weights.add(index)) }
    }
}

/// A thread's current run of equal bins: additions to the same bin as the previous sample merge in
/// registers.
struct Run<C> {
    bin: u32,
    sum: C,
}

impl<C: HistogramCounter> Run<C> {
    #[inline(always)]
    fn new() -> Self {
        Self { bin: u32::MAX, sum: C::zeroed() }
    }

    #[inline(always)]
    fn push(&mut self, bin: u32, value: C, sink: &impl Fn(u32, C)) {
        if bin == self.bin {
            self.sum = C::add(self.sum, value);
        } else {
            self.finish(sink);
            self.bin = bin;
            self.sum = value;
        }
    }

    #[inline(always)]
    fn finish(&mut self, sink: &impl Fn(u32, C)) {
        if self.bin != u32::MAX {
            sink(self.bin, self.sum);
        }
        self.bin = u32::MAX;
    }
}

/// Dynamic shared memory of [`histogram_kernel`] for `bins` bins of `C` in layout `layout` (a
/// [`BlockHistogramLayout::code`] or [`DIRECT_TO_GLOBAL`]).
pub const fn shared_bytes<C>(bins: u32, layout: u32) -> usize {
    let histogram = if layout == DIRECT_TO_GLOBAL {
        0
    } else {
        BlockHistogramLayout::from_code(layout).shared_bytes::<C>(bins, BLOCK_THREADS)
    };
    // The ignored-sample counter first, padded to 8 bytes.
    8 + histogram
}

/// `$body` for `$k` = 0, 1, ... while `$k < $n` (at most 16), written out: LLVM's unroller counts
/// the inline-assembly atomics as costly and would keep a loop, and with it the samples in local
/// memory.
macro_rules! unrolled {
    ($k:ident < $n:expr => $body:block) => {
        unrolled!(@ $k, $n, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $k:ident, $n:expr, $body:block, $($i:literal)*) => {
        const { assert!($n <= 16, "unrolled! covers 16 iterations") };
        $(
            if $i < $n {
                let $k: usize = $i;
                $body
            }
        )*
    };
}

/// How [`histogram_body`] adds a run to the histogram (a const parameter, so that each body has one
/// simple addition and its per-vector loop unrolls into registers).
const MODE_ATOMIC: u32 = 0;
const MODE_WARP_COLUMNS: u32 = 1;
const MODE_DIRECT: u32 = 2;

/// Adds each sample's weight to `histogram[binning.bin(sample)]` (`bins` bins) and the number of
/// samples outside the bins to `*ignored`.
///
/// Launch any grid of [`BLOCK_THREADS`] threads with [`shared_bytes`]`::<C>(bins, layout)` bytes of
/// dynamic shared memory; a block should see fewer than 2^32 samples (its counters are `u32` for
/// counts). `ITEMS` samples make 16 bytes.
///
/// # Safety
/// `samples` valid for `len` reads (and `weights`, when it is an array); `histogram` valid for `bins`
/// elements and `ignored` for one, in global memory, touched only by atomics while the kernel runs.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn histogram_kernel<S, B, C, W, const ITEMS: usize>(
    samples: *const S,
    len: u64,
    binning: B,
    bins: u32,
    weights: W,
    layout: u32,
    histogram: *mut C::Wide,
    ignored: *mut u64,
) where
    S: Element,
    B: Binning<S>,
    C: HistogramCounter,
    W: WeightSource<C>,
{
    match layout {
        // SAFETY: forwarded from the caller; the mode matches the layout.
        DIRECT_TO_GLOBAL => unsafe {
            histogram_body::<S, B, C, W, ITEMS, MODE_DIRECT>(
                samples, len, binning, bins, weights, layout, histogram, ignored,
            )
        },
        // SAFETY: as above.
        0 => unsafe {
            histogram_body::<S, B, C, W, ITEMS, MODE_WARP_COLUMNS>(
                samples, len, binning, bins, weights, layout, histogram, ignored,
            )
        },
        // SAFETY: as above.
        _ => unsafe {
            histogram_body::<S, B, C, W, ITEMS, MODE_ATOMIC>(
                samples, len, binning, bins, weights, layout, histogram, ignored,
            )
        },
    }
}

/// [`histogram_kernel`] for one way of adding.
///
/// # Safety
/// As for [`histogram_kernel`]; `MODE` matches `layout`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn histogram_body<S, B, C, W, const ITEMS: usize, const MODE: u32>(
    samples: *const S,
    len: u64,
    binning: B,
    bins: u32,
    weights: W,
    layout: u32,
    histogram: *mut C::Wide,
    ignored: *mut u64,
) where
    S: Element,
    B: Binning<S>,
    C: HistogramCounter,
    W: WeightSource<C>,
{
    const { assert!(ITEMS * size_of::<S>() == 16, "ITEMS samples must make one 16-byte vector") };
    let mut shared = DynamicShared::new();
    let ignored_slot = shared.take::<u64>(1).cast::<u32>();
    let tid = arch::thread_idx_x();
    let threads = arch::block_dim_x() as usize;
    if tid == 0 {
        // SAFETY: the slot is the first word of the shared memory taken above.
        unsafe { arch::store(ignored_slot, 0) };
    }
    let block = if MODE == MODE_DIRECT {
        None
    } else {
        let block = BlockHistogram::<C>::from_allocator(&mut shared, bins, BlockHistogramLayout::from_code(layout));
        block.clear();
        Some(block)
    };
    arch::sync_threads();

    let sink = |bin: u32, value: C| match &block {
        // SAFETY: bin < bins (runs hold bins that passed the check); MODE matches the layout.
        Some(block) => unsafe { block.add_in_layout(MODE == MODE_WARP_COLUMNS, bin, value) },
        // SAFETY: bin < bins; the histogram holds `bins` elements.
        None => unsafe { C::add_global(histogram.add(bin as usize), value.widen()) },
    };
    let mut run = Run::<C>::new();
    let mut skipped = 0u32;
    let len = len as usize;
    let first_thread = arch::block_idx_x() as usize * threads + tid as usize;
    let stride = arch::grid_dim_x() as usize * threads;

    // Whole 16-byte vectors (device allocations are 16-byte aligned; any other start goes item by item).
    let vectors = if (samples as usize).is_multiple_of(16) { len / ITEMS } else { 0 };
    let mut v = first_thread;
    while v < vectors {
        // SAFETY: vector v lies inside the samples (v < len / ITEMS) and is 16-byte aligned; nothing
        // writes the samples during the kernel.
        let words = unsafe { arch::load_global_nc_v4(samples.cast::<[u32; 4]>().add(v)) };
        // SAFETY: a register reinterpretation of 16 bytes as ITEMS Pod samples (asserted equal sizes).
        let items: [S; ITEMS] = unsafe { core::ptr::read_unaligned(words.as_ptr().cast::<[S; ITEMS]>()) };
        // SAFETY: samples v * ITEMS.. + ITEMS exist.
        let values = unsafe { weights.load::<ITEMS>(v * ITEMS) };
        unrolled!(k < ITEMS => {
            let bin = binning.bin(items[k]);
            if bin < bins {
                run.push(bin, values[k], &sink);
            } else {
                skipped += 1;
            }
        });
        v += stride;
    }
    let mut i = vectors * ITEMS + first_thread;
    while i < len {
        // SAFETY: i < len.
        let bin = binning.bin(unsafe { arch::load(samples.add(i)) });
        if bin < bins {
            // SAFETY: i < len.
            run.push(bin, unsafe { weights.load_one(i) }, &sink);
        } else {
            skipped += 1;
        }
        i += stride;
    }
    run.finish(&sink);
    if skipped != 0 {
        // SAFETY: the slot is in shared memory.
        unsafe { arch::red_add_u32_shared(ignored_slot, skipped) };
    }
    arch::sync_threads();

    if let Some(block) = &block {
        // SAFETY: the histogram holds `bins` elements; every add happened before the barrier.
        unsafe { block.flush(histogram) };
    }
    if tid == 0 {
        // SAFETY: written before the barrier.
        let count = unsafe { arch::load(ignored_slot) };
        if count != 0 {
            // SAFETY: `ignored` valid (caller).
            unsafe { arch::atomic_add_u64_gpu(ignored, count as u64) };
        }
    }
}

/// Where [`multi_feature_kernel`] reads a row's local bin ids: one [`BinId`] a (row, feature)
/// ([`DenseRows`]) or bit-packed rows ([`PackedRows`]).
pub trait RowBins: Copy {
    /// The ids of the row's features `first..first + MULTI_BINS_IN_FLIGHT` that lie below `end`,
    /// `u32::MAX` for the others.
    ///
    /// # Safety
    /// `row` is a row of the matrix and `end` at most its feature count.
    unsafe fn chunk(self, row: usize, first: u32, end: u32) -> [u32; MULTI_BINS_IN_FLIGHT];
}

/// A dense row-major matrix of bin ids: row `r`'s at `bins[r * features..(r + 1) * features]`.
#[derive(Clone, Copy)]
pub struct DenseRows<B> {
    pub bins: *const B,
    pub features: usize,
}

impl<B: BinId> RowBins for DenseRows<B> {
    #[inline(always)]
    unsafe fn chunk(self, row: usize, first: u32, end: u32) -> [u32; MULTI_BINS_IN_FLIGHT] {
        let mut ids = [u32::MAX; MULTI_BINS_IN_FLIGHT];
        let at = row * self.features + first as usize;
        unrolled!(k < MULTI_BINS_IN_FLIGHT => {
            if first + (k as u32) < end {
                // SAFETY: a feature below `end <= features` of a row of the matrix (caller).
                ids[k] = unsafe { arch::load(self.bins.add(at + k)) }.index();
            }
        });
        ids
    }
}

/// Bit-packed rows: row `r` is the `row_words` words from `words[r * row_words]`, feature `f`'s id
/// its bits `f * bits..(f + 1) * bits` (bit `i` is bit `i % 32` of word `i / 32`). `bits` is 1 to
/// [`MAX_PACKED_BITS`]; the all-ones id (`2^bits - 1`) is free for "missing" when `2^bits > bins_per_feature`.
/// XGBoost's ELLPACK packs its symbols the same way, a row after another; 9 bits hold 256 bins and
/// the missing symbol, so 28 features take 8 words a row against 14 of `u16` ids.
#[derive(Clone, Copy)]
pub struct PackedRows {
    pub words: *const u32,
    pub row_words: usize,
    pub bits: u32,
}

/// The widest ids [`PackedRows::chunk`] cuts out of one window of words; wider ones (up to
/// [`MAX_PACKED_BITS`]) are read one at a time.
const MAX_WINDOW_BITS: u32 = 16;
/// The most words a [`PackedRows::chunk`] window holds: [`MULTI_BINS_IN_FLIGHT`] ids of
/// [`MAX_WINDOW_BITS`] from any bit of a word.
const PACKED_CHUNK_WORDS: usize = (MULTI_BINS_IN_FLIGHT * MAX_WINDOW_BITS as usize).div_ceil(32) + 1;
/// The widest ids of [`PackedRows`]: 2^24 - 1 bins a feature and the missing id.
pub const MAX_PACKED_BITS: u32 = 24;

impl PackedRows {
    /// The words `row_words` a row of `features` ids of `bits` bits takes.
    pub const fn row_words(features: usize, bits: u32) -> usize {
        (features * bits as usize).div_ceil(32)
    }

    /// Row `row`'s id of feature `feature`.
    ///
    /// # Safety
    /// `row` is a row of the matrix and `feature` below its feature count.
    #[inline(always)]
    pub unsafe fn get(self, row: usize, feature: usize) -> u32 {
        let bit = feature * self.bits as usize;
        let at = row * self.row_words + bit / 32;
        let shift = (bit % 32) as u32;
        // SAFETY: the id's first word lies in the row (caller), and its second when it straddles.
        let (lo, hi) = unsafe {
            let lo = arch::load(self.words.add(at));
            (lo, if shift + self.bits > 32 { arch::load(self.words.add(at + 1)) } else { 0 })
        };
        funnel_shift_right(lo, hi, shift) & ((1u32 << self.bits) - 1)
    }
}

/// Word `w` of a row of [`PackedRows`] whose feature `f` has id `id(f)` (below `2^bits`), `features`
/// ids of `bits` bits: the bits of the ids that overlap the word, 0 past the last id. A writer
/// that makes a word a thread writes whole words, without atomics.
#[inline(always)]
pub fn packed_row_word(w: usize, features: usize, bits: u32, mut id: impl FnMut(usize) -> u32) -> u32 {
    let bits = bits as usize;
    let (low, high) = (w * 32, w * 32 + 32);
    let mut word = 0u32;
    for f in low / bits..high.div_ceil(bits).min(features) {
        let (start, value) = (f * bits, id(f) as u64);
        // An id that begins in the word before contributes its high bits; others their low bits.
        word |= if start >= low { (value << (start - low)) as u32 } else { (value >> (low - start)) as u32 };
    }
    word
}

/// Sets row `row`'s id of `feature` to `id` (below `2^bits`) in rows of [`PackedRows`]'s layout,
/// `row_words` words a row, leaving the other ids as they are. Not atomic: one thread writes a row.
///
/// # Safety
/// `row` is a row of `words` and `feature` below its feature count; no other thread touches the
/// words of the row meanwhile.
#[inline(always)]
pub unsafe fn store_packed_id(words: *mut u32, row_words: usize, bits: u32, row: usize, feature: usize, id: u32) {
    let bit = feature * bits as usize;
    let at = row * row_words + bit / 32;
    let shift = bit % 32;
    let (mask, value) = (((1u64 << bits) - 1) << shift, (id as u64) << shift);
    // SAFETY: the id's words lie in the row (caller); the second only when the id straddles.
    unsafe {
        let lo = arch::load(words.add(at));
        arch::store(words.add(at), (lo & !(mask as u32)) | value as u32);
        if (mask >> 32) != 0 {
            let hi = arch::load(words.add(at + 1));
            arch::store(words.add(at + 1), (hi & !((mask >> 32) as u32)) | (value >> 32) as u32);
        }
    }
}

impl RowBins for PackedRows {
    /// The chunk's words loaded together, shifted so that the first id starts at bit 0, then the ids
    /// peeled off the bottom in turn. Every register index is a constant (the shifts are by
    /// run-time amounts, the same for every word), so the words stay in registers: indexing them by
    /// each id's own word put them in local memory (1.43x slower than `u16` ids at one node).
    #[inline(always)]
    unsafe fn chunk(self, row: usize, first: u32, end: u32) -> [u32; MULTI_BINS_IN_FLIGHT] {
        let mut ids = [u32::MAX; MULTI_BINS_IN_FLIGHT];
        let count = (end.saturating_sub(first) as usize).min(MULTI_BINS_IN_FLIGHT);
        if count == 0 {
            return ids;
        }
        if self.bits > MAX_WINDOW_BITS {
            // Ids wider than the window holds (more than 65535 bins a feature): one at a time.
            unrolled!(k < MULTI_BINS_IN_FLIGHT => {
                if k < count {
                    // SAFETY: feature `first + k` is below `end`, within the row (caller).
                    ids[k] = unsafe { self.get(row, first as usize + k) };
                }
            });
            return ids;
        }
        let bits = self.bits as usize;
        let first_bit = first as usize * bits;
        let first_word = first_bit / 32;
        let last_word = (first_bit + count * bits - 1) / 32;
        let base = row * self.row_words + first_word;
        let mut words = [0u32; PACKED_CHUNK_WORDS];
        unrolled!(w < PACKED_CHUNK_WORDS => {
            if first_word + w <= last_word {
                // SAFETY: words of the chunk's ids, within the row (caller).
                words[w] = unsafe { arch::load(self.words.add(base + w)) };
            }
        });
        let shift = (first_bit % 32) as u32;
        let mut window = [0u32; PACKED_CHUNK_WORDS - 1];
        unrolled!(w < PACKED_CHUNK_WORDS - 1 => {
            window[w] = funnel_shift_right(words[w], words[w + 1], shift);
        });
        let mask = (1u32 << self.bits) - 1;
        unrolled!(k < MULTI_BINS_IN_FLIGHT => {
            if k > 0 {
                let mut next = [0u32; PACKED_CHUNK_WORDS - 1];
                unrolled!(w < PACKED_CHUNK_WORDS - 1 => {
                    let above = window.get(w + 1).copied().unwrap_or(0);
                    next[w] = funnel_shift_right(window[w], above, self.bits);
                });
                window = next;
            }
            if k < count {
                ids[k] = window[0] & mask;
            }
        });
        ids
    }
}

/// The low word of `hi:lo` shifted right by `shift` (below 32): one `shf.r` on the device.
#[inline(always)]
fn funnel_shift_right(lo: u32, hi: u32, shift: u32) -> u32 {
    ((((hi as u64) << 32) | lo as u64) >> shift) as u32
}

/// One block's work in [`multi_feature_kernel`]: `rows[start..end]`, all rows of node `node`, and the
/// feature group `group` (features `group * group_features ..`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MultiWork {
    pub node: u32,
    pub start: u32,
    pub end: u32,
    pub group: u32,
}

/// Dynamic shared memory of [`multi_feature_kernel`] for groups of `group_features` features.
pub const fn multi_shared_bytes<C>(group_features: u32, bins_per_feature: u32, layout: u32) -> usize {
    BlockHistogramLayout::from_code(layout).shared_bytes::<C>(group_features * bins_per_feature, MULTI_BLOCK_THREADS)
}

/// Multi-feature histogram: for each work item `work[blockIdx]` and each row `r = rows[p]`, `p` in
/// `start..end`, and each feature `f` of the group whose bin `b` (the row's id of `f` in `bins`) is below
/// `bins_per_feature` (others are missing values, skipped), adds `gradients[r]` to
/// `histogram[(node * features + f) * bins_per_feature + b]`. A row index at or above `matrix_rows`
/// is skipped and the smallest such position is written to `*bad_row` (atomic minimum; the host
/// initialises it to `u32::MAX`).
///
/// When `node_ranges` is not null, it holds a position range per node (`[begin, end]`, written on
/// the device by an earlier kernel) and a work item covers only the positions of its `start..end`
/// within its node's range: a block whose intersection is empty exits at once.
///
/// Launch one block of [`MULTI_BLOCK_THREADS`] threads per work item, with
/// [`multi_shared_bytes`]`::<C>(group_features, bins_per_feature, layout)` bytes of dynamic shared
/// memory, `layout` a [`BlockHistogramLayout::code`] for `group_features * bins_per_feature` bins;
/// or, when those do not fit in shared memory, with `layout` [`DIRECT_TO_GLOBAL`] and none.
///
/// # Safety
/// `bins` holds `matrix_rows` rows of `features` ids, `gradients` `matrix_rows` pairs; `rows` for every
/// `start..end` of the work; every work item's node below the histogram's node count and its group's
/// first feature below `features`; `node_ranges` null or valid for a range per node; `histogram`
/// valid for `nodes * features * bins_per_feature` elements and `bad_row` for one, touched only by
/// atomics while the kernel runs.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn multi_feature_kernel<R: RowBins, C: HistogramCounter<Wide = C>>(
    bins: R,
    matrix_rows: u64,
    features: u32,
    bins_per_feature: u32,
    gradients: *const C,
    rows: *const u32,
    work: *const MultiWork,
    node_ranges: *const [u32; 2],
    group_features: u32,
    layout: u32,
    histogram: *mut C,
    bad_row: *mut u32,
) {
    // SAFETY: one work item per block, a range per node when given (caller).
    let Some(item) = (unsafe { block_item(work, node_ranges) }) else { return };
    let first_feature = item.group * group_features;
    let group = group_features.min(features - first_feature);
    let offset = (item.node as usize * features as usize + first_feature as usize) * bins_per_feature as usize;
    let padded = Padded { bins_per_feature };
    let walk = RowWalk { bins, matrix_rows, layout: padded, gradients, rows, first_feature, group, bad_row };
    // Bins too many for shared memory (a large `max_bin`): every addition an atomic on the device
    // histogram.
    let direct = layout == DIRECT_TO_GLOBAL;
    // SAFETY: the group's `group * bins_per_feature` sums of node `node` are contiguous in the
    // histogram from `offset` (caller).
    unsafe { walk.add_to(&item, (direct, layout, group * bins_per_feature), histogram.add(offset)) };
}

/// The block's work item, clipped to its node's range when `node_ranges` is given; `None` when
/// nothing is left (the same in every thread of the block, so the whole block leaves before any
/// barrier).
///
/// # Safety
/// `work` holds an item for this block; `node_ranges` is null or holds a range per node.
#[inline(always)]
unsafe fn block_item(work: *const MultiWork, node_ranges: *const [u32; 2]) -> Option<MultiWork> {
    // SAFETY: as the caller says.
    let mut item = unsafe { arch::load(work.add(arch::block_idx_x() as usize)) };
    if !node_ranges.is_null() {
        // SAFETY: as the caller says.
        let [begin, end] = unsafe { arch::load(node_ranges.add(item.node as usize)) };
        item.start = item.start.max(begin);
        item.end = item.end.min(end);
    }
    (item.start < item.end).then_some(item)
}

/// [`multi_feature_kernel`] into histograms in the global layout: node `n`'s bin `b` of feature
/// `f` at `histogram[n * node_stride + feature_offsets[f] + b]`, no padding, for features of very
/// different bin counts (a categorical feature of a million categories beside numeric ones of
/// 256). A work item's `group` indexes `groups`, the host's feature groups (their bins in shared
/// memory when they fit, else added to the device histogram); ids at or above a feature's bin
/// count (`feature_offsets[f + 1] - feature_offsets[f]`) are missing values.
///
/// Launch as [`multi_feature_kernel`], with [`multi_shared_bytes`]`::<C>(1, most, layout)` bytes of
/// dynamic shared memory, `most` the largest shared group's bins and `layout` a
/// [`BlockHistogramLayout::code`] for them (none when no group is shared).
///
/// # Safety
/// As for [`multi_feature_kernel`]; `feature_offsets` holds `features + 1` increasing offsets,
/// `groups` every work item's group, within `features`, each shared one's bins at most `most`;
/// `histogram` valid for `nodes * node_stride` elements, `node_stride` at least the last offset.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn multi_feature_global_kernel<R: RowBins, C: HistogramCounter<Wide = C>>(
    bins: R,
    matrix_rows: u64,
    gradients: *const C,
    rows: *const u32,
    work: *const MultiWork,
    node_ranges: *const [u32; 2],
    (feature_offsets, groups, node_stride): (*const u32, *const FeatureGroup, u64),
    layout: u32,
    histogram: *mut C,
    bad_row: *mut u32,
) {
    // SAFETY: one work item per block, a range per node when given (caller).
    let Some(item) = (unsafe { block_item(work, node_ranges) }) else { return };
    // SAFETY: the item's group is one of `groups`, its features' offsets within `feature_offsets`.
    let (g, offsets) = unsafe {
        let g = arch::load(groups.add(item.group as usize));
        (g, feature_offsets.add(g.first as usize))
    };
    // SAFETY: as above.
    let offset = item.node as usize * node_stride as usize + unsafe { arch::load(offsets) } as usize;
    let group = g.end - g.first;
    let layout_of_group = Global { offsets, features: group };
    let walk =
        RowWalk { bins, matrix_rows, layout: layout_of_group, gradients, rows, first_feature: g.first, group, bad_row };
    // SAFETY: the group's `bins` sums of node `node` are contiguous in the histogram from `offset`
    // (caller).
    unsafe { walk.add_to(&item, (g.shared == 0, layout, g.bins), histogram.add(offset)) };
}

/// A feature group of [`multi_feature_global_kernel`]: features `first..end`, whose bins
/// (`bins` in all, adjacent in the global layout) are summed in a block histogram in shared memory
/// when `shared` is 1, else added straight to the device histogram.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FeatureGroup {
    pub first: u32,
    pub end: u32,
    pub bins: u32,
    pub shared: u32,
}

/// Where a feature of a group puts its bins, from the group's first bin: a row of
/// `bins_per_feature` a feature (the padded layout), or each feature's own count after the
/// previous feature's (the global layout, `offsets` the features' first global bins).
trait GroupBins: Copy {
    /// The index of bin `id` of the group's feature `f` (counted from its first), `None` for a
    /// missing value (an id at or above the feature's bin count).
    fn index(self, f: u32, id: u32) -> Option<u32>;
}

#[derive(Clone, Copy)]
struct Padded {
    bins_per_feature: u32,
}

impl GroupBins for Padded {
    #[inline(always)]
    fn index(self, f: u32, id: u32) -> Option<u32> {
        (id < self.bins_per_feature).then(|| f * self.bins_per_feature + id)
    }
}

#[derive(Clone, Copy)]
struct Global {
    /// The group's first feature's entry of the features' first global bins.
    offsets: *const u32,
    /// The group's features (the chunks of ids run past them).
    features: u32,
}

impl GroupBins for Global {
    #[inline(always)]
    fn index(self, f: u32, id: u32) -> Option<u32> {
        if f >= self.features {
            return None;
        }
        // SAFETY: `f + 1` is at most the group's feature count, and the offsets run to its end
        // (the kernel's contract).
        let (first, begin, end) = unsafe {
            (
                arch::load(self.offsets),
                arch::load(self.offsets.add(f as usize)),
                arch::load(self.offsets.add(f as usize + 1)),
            )
        };
        (id < end - begin).then(|| begin - first + id)
    }
}

/// A block's rows of one node and feature group in [`multi_feature_kernel`].
struct RowWalk<R, C, L> {
    bins: R,
    matrix_rows: u64,
    layout: L,
    gradients: *const C,
    rows: *const u32,
    first_feature: u32,
    group: u32,
    bad_row: *mut u32,
}

impl<R: RowBins, C: HistogramCounter<Wide = C>, L: GroupBins> RowWalk<R, C, L> {
    /// Adds the item's rows to the group's `bins` sums at `histogram`: straight to device memory
    /// (`direct`), or in a block histogram in shared memory (`layout`'s code, read as an `Atomic`
    /// layout so that the hot loop has one kind of addition) flushed at the end.
    ///
    /// # Safety
    /// As [`Self::run`]; `histogram` holds the group's `bins` sums; without `direct`, the block's
    /// dynamic shared memory holds a block histogram of `bins` in that layout.
    #[inline(always)]
    unsafe fn add_to(&self, item: &MultiWork, (direct, layout, bins): (bool, u32, u32), histogram: *mut C) {
        if direct {
            // SAFETY: every index is below `bins` (caller).
            unsafe {
                self.run(item.start, item.end, |index, gradient| C::add_global(histogram.add(index as usize), gradient))
            };
            return;
        }
        let mut shared = DynamicShared::new();
        let layout = match BlockHistogramLayout::from_code(layout) {
            BlockHistogramLayout::WarpColumns => BlockHistogramLayout::Atomic { copies: 1 },
            atomic => atomic,
        };
        let block = BlockHistogram::<C>::from_allocator(&mut shared, bins, layout);
        block.clear();
        arch::sync_threads();
        // SAFETY: every index is below `bins`, the block histogram's size; the layout is `Atomic`.
        unsafe { self.run(item.start, item.end, |index, gradient| block.add_in_layout(false, index, gradient)) };
        arch::sync_threads();
        // SAFETY: `bins` sums at `histogram` (caller).
        unsafe { block.flush(histogram) };
    }
}

impl<R: RowBins, C: Copy, L: GroupBins> RowWalk<R, C, L> {
    /// Calls `add(f * bins_per_feature + id, gradient)` for each row at positions `start..end` and
    /// each feature `f` of the group (counted from the group's first) whose id is a bin.
    ///
    /// A thread per row: its gradient loaded once, its bin ids read MULTI_BINS_IN_FLIGHT at a time
    /// (the loads issued together, then their additions), so a warp keeps many loads in flight
    /// instead of waiting on a row index, a bin id and a gradient for every single addition (the
    /// old (row, feature)-pair walk was latency-bound at 41 G rows x features/s). Lanes start at
    /// different chunks of the group so that the lanes of a warp seldom add to one feature's bins at
    /// once (fewer same-address atomics on skewed features).
    ///
    /// # Safety
    /// As for [`multi_feature_kernel`]; `add` is safe to call with any index below `group *
    /// bins_per_feature`.
    #[inline(always)]
    unsafe fn run(&self, start: u32, end: u32, mut add: impl FnMut(u32, C)) {
        let threads = arch::block_dim_x() as usize;
        let chunks = self.group.div_ceil(MULTI_BINS_IN_FLIGHT as u32);
        let first_chunk = arch::lane_id() % chunks;
        let mut position = start as usize + arch::thread_idx_x() as usize;
        while position < end as usize {
            // SAFETY: start <= position < end (caller: rows valid there).
            let row = unsafe { arch::load(self.rows.add(position)) };
            if (row as u64) < self.matrix_rows {
                // SAFETY: row < matrix_rows.
                let gradient = unsafe { arch::load(self.gradients.add(row as usize)) };
                let mut chunk = first_chunk;
                for _ in 0..chunks {
                    let first = chunk * MULTI_BINS_IN_FLIGHT as u32;
                    let (from, to) = (self.first_feature + first, self.first_feature + self.group);
                    // SAFETY: row < matrix_rows; the group's features are below the matrix's.
                    let ids = unsafe { self.bins.chunk(row as usize, from, to) };
                    unrolled!(k < MULTI_BINS_IN_FLIGHT => {
                        // Missing values (ids at or above the bin count) and the padding are skipped.
                        if let Some(index) = self.layout.index(first + k as u32, ids[k]) {
                            add(index, gradient);
                        }
                    });
                    chunk = if chunk + 1 == chunks { 0 } else { chunk + 1 };
                }
            } else {
                // SAFETY: `bad_row` valid (caller).
                unsafe { arch::atomic_min_u32_gpu(self.bad_row, position as u32) };
            }
            position += threads;
        }
    }
}
