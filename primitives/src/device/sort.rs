//! Host side of the radix sorts: segment classification, temporary storage, the launch sequence.
//!
//! A call sorts a list of segments (the device sort is one segment). Segments of at most
//! `block_sort_items` go to the block sort kernel, one block each, in four launches by size (32, 64, 128 or 256 threads
//! per block, so tiny segments do not occupy a whole 256-thread block). Longer segments go through
//! Onesweep together: one histogram launch, one offsets launch, then one launch per digit place,
//! ping-ponging between the output and a scratch buffer so that the last place lands in the output.

use crate::LaunchConfig;
use primitives_kernels::device::radix_sort as kernel;
use primitives_kernels::entry::sort;
use primitives_kernels::radix_key::RadixKey;

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PRIMITIVES_MODULE};
use crate::ops::Element;

mod sealed {
    use primitives_kernels::entry::sort;
    use primitives_kernels::launch::KernelArgs;

    /// The digit counts' arguments: keys, segments, their count, tiles, tiles a block, counts,
    /// begin bit, end bit, descending, value bytes.
    pub type HistogramArgs<K> = fn(*const K, *const u32, u32, u32, u32, *mut u32, u32, u32, u32, u32) -> KernelArgs;
    /// A onesweep pass's arguments: keys in, keys out, values in, values out (as bytes: the value
    /// kind's entry point takes them as its unit), segments, their count, offsets, status, counter,
    /// tiles, shift, bits, descending.
    pub type OnesweepArgs<K> = fn(
        *const K,
        *mut K,
        *const u8,
        *mut u8,
        *const u32,
        u32,
        *const u32,
        *mut u32,
        *mut u32,
        u32,
        u32,
        u32,
        u32,
    ) -> KernelArgs;
    /// The block sort's arguments: keys in, keys out, values in, values out (as bytes), ranges,
    /// begin bit, end bit, descending.
    pub type BlockSortArgs<K> = fn(*const K, *mut K, *const u8, *mut u8, *const u32, u32, u32, u32) -> KernelArgs;

    /// Only this crate names the key types that have sort kernels; their entry points' typed
    /// arguments, by value kind (keys only, 4, 8, 16 bytes).
    pub trait Sealed: Sized {
        const HISTOGRAM: HistogramArgs<Self>;
        const ONESWEEP: [OnesweepArgs<Self>; 4];
        const BLOCK_SORT: [BlockSortArgs<Self>; 4];
    }

    /// A key type's entry points: its histogram, then its onesweep and block-sort kernels by value
    /// kind (keys, 4, 8, 16 bytes), the values cast to the kind's unit.
    macro_rules! sort_kernels {
        ($($key:ty => $histogram:ident, [$($onesweep:ident, $block:ident;)*];)*) => {$(
            impl Sealed for $key {
                const HISTOGRAM: HistogramArgs<$key> = sort::$histogram::args;
                const ONESWEEP: [OnesweepArgs<$key>; 4] = [$(
                    |keys_in, keys_out, values_in, values_out, segments, count, offsets, status, counter, tiles, shift, bits, descending| {
                        sort::$onesweep::args(
                            keys_in, keys_out, values_in.cast(), values_out.cast(), segments, count, offsets, status,
                            counter, tiles, shift, bits, descending,
                        )
                    },
                )*];
                const BLOCK_SORT: [BlockSortArgs<$key>; 4] = [$(
                    |keys_in, keys_out, values_in, values_out, ranges, begin_bit, end_bit, descending| {
                        sort::$block::args(
                            keys_in, keys_out, values_in.cast(), values_out.cast(), ranges, begin_bit, end_bit, descending,
                        )
                    },
                )*];
            }
        )*};
    }

    sort_kernels! {
        u32 => primitives_radix_histogram_u32, [
            primitives_radix_onesweep_u32_keys, primitives_radix_block_sort_u32_keys;
            primitives_radix_onesweep_u32_v4, primitives_radix_block_sort_u32_v4;
            primitives_radix_onesweep_u32_v8, primitives_radix_block_sort_u32_v8;
            primitives_radix_onesweep_u32_v16, primitives_radix_block_sort_u32_v16;
        ];
        i32 => primitives_radix_histogram_i32, [
            primitives_radix_onesweep_i32_keys, primitives_radix_block_sort_i32_keys;
            primitives_radix_onesweep_i32_v4, primitives_radix_block_sort_i32_v4;
            primitives_radix_onesweep_i32_v8, primitives_radix_block_sort_i32_v8;
            primitives_radix_onesweep_i32_v16, primitives_radix_block_sort_i32_v16;
        ];
        f32 => primitives_radix_histogram_f32, [
            primitives_radix_onesweep_f32_keys, primitives_radix_block_sort_f32_keys;
            primitives_radix_onesweep_f32_v4, primitives_radix_block_sort_f32_v4;
            primitives_radix_onesweep_f32_v8, primitives_radix_block_sort_f32_v8;
            primitives_radix_onesweep_f32_v16, primitives_radix_block_sort_f32_v16;
        ];
        u64 => primitives_radix_histogram_u64, [
            primitives_radix_onesweep_u64_keys, primitives_radix_block_sort_u64_keys;
            primitives_radix_onesweep_u64_v4, primitives_radix_block_sort_u64_v4;
            primitives_radix_onesweep_u64_v8, primitives_radix_block_sort_u64_v8;
            primitives_radix_onesweep_u64_v16, primitives_radix_block_sort_u64_v16;
        ];
        i64 => primitives_radix_histogram_i64, [
            primitives_radix_onesweep_i64_keys, primitives_radix_block_sort_i64_keys;
            primitives_radix_onesweep_i64_v4, primitives_radix_block_sort_i64_v4;
            primitives_radix_onesweep_i64_v8, primitives_radix_block_sort_i64_v8;
            primitives_radix_onesweep_i64_v16, primitives_radix_block_sort_i64_v16;
        ];
        f64 => primitives_radix_histogram_f64, [
            primitives_radix_onesweep_f64_keys, primitives_radix_block_sort_f64_keys;
            primitives_radix_onesweep_f64_v4, primitives_radix_block_sort_f64_v4;
            primitives_radix_onesweep_f64_v8, primitives_radix_block_sort_f64_v8;
            primitives_radix_onesweep_f64_v16, primitives_radix_block_sort_f64_v16;
        ];
    }
}

/// A key type of the radix sorts: `u32`, `i32`, `f32`, `u64`, `i64`, `f64`. Sealed.
///
/// Keys order as numbers: signed integers by value; floats with `-0.0` equal to `+0.0` and every NaN
/// after `+inf` (equal to each other; first in a descending sort, as in `torch.sort`). The sorts move
/// the original bits, so `-0.0` and NaN payloads come out as they went in.
pub trait SortKey: RadixKey + sealed::Sealed {
    /// Suffix of the kernel names.
    const NAME: &'static str;
}

impl SortKey for u32 {
    const NAME: &'static str = "u32";
}
impl SortKey for i32 {
    const NAME: &'static str = "i32";
}
impl SortKey for f32 {
    const NAME: &'static str = "f32";
}
impl SortKey for u64 {
    const NAME: &'static str = "u64";
}
impl SortKey for i64 {
    const NAME: &'static str = "i64";
}
impl SortKey for f64 {
    const NAME: &'static str = "f64";
}

/// What a sort orders by: the bit range `begin_bit..end_bit` of the keys' order-preserving images
/// (all bits by default), ascending or descending. Sorting a partial range is stable: keys equal in
/// that range keep their input order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SortOrder {
    /// First bit (default 0).
    pub begin_bit: u32,
    /// One past the last bit; `None` for the key's width.
    pub end_bit: Option<u32>,
    /// Largest first.
    pub descending: bool,
}

impl SortOrder {
    /// All bits, smallest first.
    pub fn ascending() -> Self {
        Self::default()
    }

    /// All bits, largest first.
    pub fn descending() -> Self {
        Self { descending: true, ..Self::default() }
    }

    /// Only bits `begin_bit..end_bit` of the images.
    pub fn bits(self, begin_bit: u32, end_bit: u32) -> Self {
        Self { begin_bit, end_bit: Some(end_bit), ..self }
    }

    fn range<K: SortKey>(&self) -> Result<(u32, u32)> {
        let end = self.end_bit.unwrap_or(K::BITS);
        if self.begin_bit > end || end > K::BITS {
            return Err(Error::InvalidArgument {
                name: "order",
                reason: format!("bits {}..{end} are not a range inside a {}-bit key", self.begin_bit, K::BITS),
            });
        }
        Ok((self.begin_bit, end))
    }
}

/// Most items one sort call takes (the look-back counts have 30 bits).
pub const MAX_SORT_ITEMS: usize = (1 << 30) - 1;

/// How values travel: by kernel (sizes 4, 8, 16) or as indices to gather by.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ValueKind {
    Keys,
    V4,
    V8,
    V16,
}

impl ValueKind {
    /// Its entry points' place in [`sealed::Sealed`]'s tables.
    fn index(self) -> usize {
        self as usize
    }

    #[cfg(test)]
    fn suffix(self) -> &'static str {
        match self {
            ValueKind::Keys => "keys",
            ValueKind::V4 => "v4",
            ValueKind::V8 => "v8",
            ValueKind::V16 => "v16",
        }
    }

    fn bytes(self) -> usize {
        match self {
            ValueKind::Keys | ValueKind::V4 => 4,
            ValueKind::V8 => 8,
            ValueKind::V16 => 16,
        }
    }

    /// Items per thread of the Onesweep kernels, as the kernel crate computes it.
    fn items<K>(self) -> usize {
        self.with_value(
            kernel::items_per_thread::<K, u32>,
            kernel::items_per_thread::<K, u64>,
            kernel::items_per_thread::<K, [u32; 4]>,
        )
    }

    /// Items per thread of the small-segment block sort.
    fn block_items<K>(self) -> usize {
        self.with_value(
            kernel::block_items_per_thread::<K, u32>,
            kernel::block_items_per_thread::<K, u64>,
            kernel::block_items_per_thread::<K, [u32; 4]>,
        )
    }

    fn shared_bytes<K>(self) -> usize {
        self.with_value(
            kernel::shared_bytes::<K, u32>,
            kernel::shared_bytes::<K, u64>,
            kernel::shared_bytes::<K, [u32; 4]>,
        )
    }

    /// The block sort's shared memory for blocks of `threads`.
    fn block_shared_bytes<K>(self, threads: usize) -> usize {
        match self {
            ValueKind::Keys | ValueKind::V4 => kernel::block_shared_bytes_for::<K, u32>(threads),
            ValueKind::V8 => kernel::block_shared_bytes_for::<K, u64>(threads),
            ValueKind::V16 => kernel::block_shared_bytes_for::<K, [u32; 4]>(threads),
        }
    }

    /// The kernel crate's figure for the value type the kernels use for this kind (`u32` for keys
    /// only, as the entry points instantiate them).
    fn with_value(self, v4: fn() -> usize, v8: fn() -> usize, v16: fn() -> usize) -> usize {
        match self {
            ValueKind::Keys | ValueKind::V4 => v4(),
            ValueKind::V8 => v8(),
            ValueKind::V16 => v16(),
        }
    }
}

/// Device-wide radix sort (CUB's `DeviceRadixSort`): stable, keys only or key-value pairs, any
/// [`SortOrder`]. Onesweep (one pass over the data per 8-bit digit place) for long inputs, one
/// block in shared memory for short inputs ([`Self::block_sort_items`]). The inputs are not modified; the call
/// allocates a scratch copy of keys (and values) from the stream's memory pool.
///
/// ```no_run
/// use primitives::{DeviceRadixSort, Gpu, SortOrder};
/// # fn main() -> primitives::Result<()> {
/// let gpu = Gpu::new()?;
/// let keys = gpu.upload(&[3.5f32, -1.0, f32::NAN, -0.0, 2.0])?;
/// let values = gpu.upload(&[0u32, 1, 2, 3, 4])?;
/// let (mut sorted, mut moved) = (gpu.alloc_zeroed::<f32>(5)?, gpu.alloc_zeroed::<u32>(5)?);
/// DeviceRadixSort::sort_pairs(&gpu, &keys, &mut sorted, &values, &mut moved, SortOrder::ascending())?;
/// assert_eq!(moved.to_vec(&gpu)?, [1, 3, 4, 0, 2]);
/// # Ok(())
/// # }
/// ```
pub struct DeviceRadixSort;

impl DeviceRadixSort {
    /// Items of one Onesweep tile (one block of one digit place) for keys `K` and values `V` (`()`
    /// for keys only).
    pub fn tile_items<K: SortKey, V: Element>() -> usize {
        kernel::ONESWEEP_THREADS as usize * value_kind::<V>(true).items::<K>()
    }

    /// Longest input (or segment) sorted by one block in shared memory, all digit places in one
    /// launch; longer ones go through Onesweep.
    pub fn block_sort_items<K: SortKey, V: Element>() -> usize {
        kernel::BLOCK_THREADS as usize * value_kind::<V>(true).block_items::<K>()
    }

    /// Sorts `keys_in` into `keys_out` (as long as the input or longer; the rest is untouched).
    pub fn sort_keys<K: SortKey>(
        gpu: &Gpu,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        order: SortOrder,
    ) -> Result<()> {
        check_out("keys_out", keys_out.len(), keys_in.len())?;
        let offsets = [0, keys_in.len() as u64];
        sort_segments::<K, u32>(gpu, keys_in, keys_out, None, &offsets, order)
    }

    /// Sorts the pairs `(keys_in[i], values_in[i])` by key into `keys_out`, `values_out`. Values
    /// of any `Pod` type: 4-, 8- and 16-byte values move with the keys, others are gathered
    /// afterwards by the sorted indices.
    pub fn sort_pairs<K: SortKey, V: Element>(
        gpu: &Gpu,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        values_in: &DeviceBuffer<V>,
        values_out: &mut DeviceBuffer<V>,
        order: SortOrder,
    ) -> Result<()> {
        check_out("keys_out", keys_out.len(), keys_in.len())?;
        check_out("values_in", values_in.len(), keys_in.len())?;
        check_out("values_out", values_out.len(), keys_in.len())?;
        let offsets = [0, keys_in.len() as u64];
        sort_pairs_any(gpu, keys_in, keys_out, values_in, values_out, &offsets, order)
    }
}

/// Segmented sort (CUB's `DeviceSegmentedSort`): each segment `offsets[s]..offsets[s + 1]` sorted
/// on its own, stable, in one call whatever the mix of sizes (many tiny segments and a few huge ones
/// included: small ones one block each, large ones by Onesweep with the look-back confined to the
/// segment). Items outside every segment are left as they are in the output.
///
/// The offsets are read back to the host to classify the segments (the call waits for the work
/// enqueued before it). A stable sort by a few low bits (`SortOrder::ascending().bits(0, b)`) keeps
/// the previous order within equal keys: the exact tree method's re-sort of each feature's rows by
/// node.
pub struct DeviceSegmentedSort;

impl DeviceSegmentedSort {
    /// Sorts the keys of each segment.
    pub fn sort_keys<K: SortKey>(
        gpu: &Gpu,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        offsets: &DeviceBuffer<u32>,
        order: SortOrder,
    ) -> Result<()> {
        check_out("keys_out", keys_out.len(), keys_in.len())?;
        let offsets = read_offsets(gpu, offsets, keys_in.len())?;
        sort_segments::<K, u32>(gpu, keys_in, keys_out, None, &offsets, order)
    }

    /// Sorts the pairs of each segment by key.
    pub fn sort_pairs<K: SortKey, V: Element>(
        gpu: &Gpu,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        values_in: &DeviceBuffer<V>,
        values_out: &mut DeviceBuffer<V>,
        offsets: &DeviceBuffer<u32>,
        order: SortOrder,
    ) -> Result<()> {
        check_out("keys_out", keys_out.len(), keys_in.len())?;
        check_out("values_in", values_in.len(), keys_in.len())?;
        check_out("values_out", values_out.len(), keys_in.len())?;
        let offsets = read_offsets(gpu, offsets, keys_in.len())?;
        sort_pairs_any(gpu, keys_in, keys_out, values_in, values_out, &offsets, order)
    }

    /// [`Self::sort_pairs`] with the offsets on the host (a caller that planned the segments
    /// there spares the copy to the device and the wait for reading them back).
    pub fn sort_pairs_host_offsets<K: SortKey, V: Element>(
        gpu: &Gpu,
        keys_in: &DeviceBuffer<K>,
        keys_out: &mut DeviceBuffer<K>,
        values_in: &DeviceBuffer<V>,
        values_out: &mut DeviceBuffer<V>,
        offsets: &[u32],
        order: SortOrder,
    ) -> Result<()> {
        check_out("keys_out", keys_out.len(), keys_in.len())?;
        check_out("values_in", values_in.len(), keys_in.len())?;
        check_out("values_out", values_out.len(), keys_in.len())?;
        let offsets = check_offsets(offsets.to_vec(), keys_in.len())?;
        sort_pairs_any(gpu, keys_in, keys_out, values_in, values_out, &offsets, order)
    }
}

fn check_out(name: &'static str, len: usize, needed: usize) -> Result<()> {
    if len < needed {
        return Err(Error::InvalidArgument { name, reason: format!("holds {len} elements, the keys {needed}") });
    }
    Ok(())
}

/// The offsets on the host, checked: non-decreasing, the last at most `len`.
fn read_offsets(gpu: &Gpu, offsets: &DeviceBuffer<u32>, len: usize) -> Result<Vec<u64>> {
    check_offsets(offsets.to_vec(gpu)?, len)
}

/// Segment offsets checked: non-decreasing, the last at most `len`.
fn check_offsets(host: Vec<u32>, len: usize) -> Result<Vec<u64>> {
    if host.is_empty() {
        return Err(Error::InvalidArgument {
            name: "offsets",
            reason: "empty: a segment list needs at least one offset".into(),
        });
    }
    for (s, pair) in host.windows(2).enumerate() {
        if pair[0] > pair[1] {
            return Err(Error::InvalidArgument {
                name: "offsets",
                reason: format!("segment {s} ends before it begins ({} > {})", pair[0], pair[1]),
            });
        }
    }
    let last = *host.last().expect("not empty");
    if last as usize > len {
        return Err(Error::InvalidArgument {
            name: "offsets",
            reason: format!("the last offset {last} is past the {len} keys"),
        });
    }
    Ok(host.into_iter().map(u64::from).collect())
}

fn value_kind<V>(pairs: bool) -> ValueKind {
    match (pairs, size_of::<V>()) {
        (false, _) | (true, 0) => ValueKind::Keys,
        (true, 4) => ValueKind::V4,
        (true, 8) => ValueKind::V8,
        (true, 16) => ValueKind::V16,
        // Other sizes: the sort moves u32 indices.
        (true, _) => ValueKind::V4,
    }
}

/// Pairs of any value size: natively for 4, 8 and 16 bytes, else by sorting indices and gathering.
fn sort_pairs_any<K: SortKey, V: Element>(
    gpu: &Gpu,
    keys_in: &DeviceBuffer<K>,
    keys_out: &mut DeviceBuffer<K>,
    values_in: &DeviceBuffer<V>,
    values_out: &mut DeviceBuffer<V>,
    offsets: &[u64],
    order: SortOrder,
) -> Result<()> {
    let n = keys_in.len();
    match size_of::<V>() {
        0 => sort_segments::<K, u32>(gpu, keys_in, keys_out, None, offsets, order),
        4 | 8 | 16 => sort_segments::<K, V>(gpu, keys_in, keys_out, Some((values_in, values_out)), offsets, order),
        size => {
            // Indices of the segments' items, sorted with the keys; everything outside the segments
            // keeps its own index, so the gather leaves it as it is.
            let indices = sequence(gpu, n)?;
            let mut sorted = sequence(gpu, n)?;
            sort_segments::<K, u32>(gpu, keys_in, keys_out, Some((&indices, &mut sorted)), offsets, order)?;
            if n == 0 {
                return Ok(());
            }
            let (input, output, order) = (values_in.as_ptr(), values_out.as_mut_ptr(), sorted.as_ptr());
            let (args, units) = if size % 4 == 0 {
                let units = size / 4;
                (sort::primitives_gather_u32::args(input.cast(), order, output.cast(), n as u64, units as u32), units)
            } else {
                (sort::primitives_gather_u8::args(input.cast(), order, output.cast(), n as u64, size as u32), size)
            };
            let config = grid_stride(gpu, n * units);
            // SAFETY: the sorted indices are a permutation of 0..n; both value buffers hold n
            // elements of `units` units (checked by the callers).
            unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args) }
        }
    }
}

/// `0, 1, ..., n - 1` on the device.
fn sequence(gpu: &Gpu, n: usize) -> Result<DeviceBuffer<u32>> {
    let buffer = DeviceBuffer::<u32>::uninitialized(gpu, n)?;
    if n > 0 {
        let config = grid_stride(gpu, n);
        let args = sort::primitives_sequence_u32::args(buffer.as_mut_ptr(), n as u64);
        // SAFETY: the buffer holds n elements.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
    }
    Ok(buffer)
}

fn grid_stride(gpu: &Gpu, work: usize) -> LaunchConfig {
    let max_grid = gpu.properties().multiprocessors.max(1) as usize * 16;
    let grid = work.div_ceil(kernel::BLOCK_THREADS as usize).clamp(1, max_grid) as u32;
    LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (kernel::BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// Sorts the segments `offsets[s]..offsets[s + 1]` of `keys_in` (and the values when given, whose
/// size is 4, 8 or 16 bytes) into the outputs: segments of at most a block's items each sorted by
/// one block, larger ones by onesweep radix passes over their tiles.
fn sort_segments<K: SortKey, V: Element>(
    gpu: &Gpu,
    keys_in: &DeviceBuffer<K>,
    keys_out: &mut DeviceBuffer<K>,
    values: Option<(&DeviceBuffer<V>, &mut DeviceBuffer<V>)>,
    offsets: &[u64],
    order: SortOrder,
) -> Result<()> {
    let (begin_bit, end_bit) = order.range::<K>()?;
    let n = keys_in.len();
    if n > MAX_SORT_ITEMS {
        return Err(Error::InvalidArgument {
            name: "keys_in",
            reason: format!("{n} keys; one call sorts at most {MAX_SORT_ITEMS}"),
        });
    }
    let kind = value_kind::<V>(values.is_some());
    let (values_in, values_out) = match &values {
        Some((input, output)) => (input.as_ptr().cast(), output.as_mut_ptr().cast()),
        None => (std::ptr::null(), std::ptr::null_mut()),
    };
    let sort = Sort {
        gpu,
        kind,
        keys: (keys_in.as_ptr(), keys_out.as_mut_ptr()),
        values: (values_in, values_out),
        has_values: values.is_some(),
        bits: (begin_bit, end_bit),
        descending: order.descending as u32,
        n,
    };
    let tile = kernel::ONESWEEP_THREADS as usize * kind.items::<K>();
    let segments = Segments::classify(offsets, kind.block_items::<K>(), tile);
    sort.small_segments(&segments.small)?;
    if segments.begins.is_empty() {
        return Ok(());
    }
    if end_bit == begin_bit {
        // An empty bit range: every order is sorted; copy the large segments through.
        return copy_large(gpu, keys_in, keys_out, values, &segments.begins, &segments.ends);
    }
    sort.large_segments::<V>(segments)
}

/// A sort's segments by size: the small ones (at most a block's items) by block-size class, as
/// `[begin, end]` pairs; the large ones in order, with the first tile of each and one past the last.
struct Segments {
    small: [Vec<u32>; 4],
    first_tiles: Vec<u32>,
    begins: Vec<u32>,
    ends: Vec<u32>,
}

/// Threads of each small-segment class. Full tiles matter: a segment sorted by a block twice its
/// size pays for the padding in every pass (1024 pairs took 128-thread blocks of 16 items before
/// the 64-thread class).
const SMALL_THREADS: [u32; 4] = [32, 64, 128, 256];

impl Segments {
    fn classify(offsets: &[u64], block_items: usize, tile: usize) -> Self {
        let block_capacity = kernel::BLOCK_THREADS as usize * block_items;
        let mut segments =
            Segments { small: Default::default(), first_tiles: vec![0], begins: Vec::new(), ends: Vec::new() };
        for pair in offsets.windows(2) {
            let (begin, end) = (pair[0] as usize, pair[1] as usize);
            let len = end - begin;
            if len == 0 {
                continue;
            }
            if len <= block_capacity {
                let class =
                    SMALL_THREADS.iter().position(|&t| len <= t as usize * block_items).expect("len <= capacity");
                segments.small[class].extend([begin as u32, end as u32]);
            } else {
                segments.begins.push(begin as u32);
                segments.ends.push(end as u32);
                let tiles = *segments.first_tiles.last().expect("starts with 0") + len.div_ceil(tile) as u32;
                segments.first_tiles.push(tiles);
            }
        }
        segments
    }
}

/// One segmented sort's launches: its keys and values (in, out; null for no values, as bytes: the
/// value kind's kernels take them as their unit), bit range and direction.
struct Sort<'g, K> {
    gpu: &'g Gpu,
    kind: ValueKind,
    keys: (*const K, *mut K),
    values: (*const u8, *mut u8),
    has_values: bool,
    bits: (u32, u32),
    descending: u32,
    n: usize,
}

impl<K: SortKey> Sort<'_, K> {
    /// Each small segment sorted by a block of its class.
    fn small_segments(&self, small: &[Vec<u32>; 4]) -> Result<()> {
        let ((keys_in, keys_out), (values_in, values_out)) = (self.keys, self.values);
        for (class, ranges) in small.iter().enumerate() {
            if ranges.is_empty() {
                continue;
            }
            let list = self.gpu.upload(ranges)?;
            let threads = SMALL_THREADS[class];
            let config = LaunchConfig {
                grid_dim: ((ranges.len() / 2) as u32, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: self.kind.block_shared_bytes::<K>(threads as usize) as u32,
            };
            let (begin_bit, end_bit) = self.bits;
            let block_sort = K::BLOCK_SORT[self.kind.index()];
            let args = block_sort(
                keys_in,
                keys_out,
                values_in,
                values_out,
                list.as_ptr(),
                begin_bit,
                end_bit,
                self.descending,
            );
            // SAFETY: every range lies inside the buffers (offsets checked against n) and holds at
            // most `threads * block_items` items; shared memory sized for the full block.
            unsafe { self.gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        }
        Ok(())
    }

    /// The large segments: each place's digit counts of every tile, their offsets, then a onesweep
    /// pass a place.
    fn large_segments<V: Element>(&self, segments: Segments) -> Result<()> {
        let gpu = self.gpu;
        let (begin_bit, end_bit) = self.bits;
        let segment_count = segments.begins.len();
        let tiles = *segments.first_tiles.last().expect("starts with 0") as usize;
        let places = (end_bit - begin_bit).div_ceil(kernel::RADIX_BITS) as usize;
        let mut list = segments.first_tiles;
        list.extend(&segments.begins);
        list.extend(&segments.ends);
        let segments = gpu.upload(&list)?;

        let counts = DeviceBuffer::<u32>::zeroed(gpu, places * segment_count * kernel::DIGITS)?;
        let blocks = tiles.min(gpu.properties().multiprocessors.max(1) as usize * 4);
        let tiles_per_block = tiles.div_ceil(blocks);
        let blocks = tiles.div_ceil(tiles_per_block);
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (kernel::BLOCK_THREADS, 1, 1),
            shared_mem_bytes: kernel::HISTOGRAM_SHARED_BYTES as u32,
        };
        let args = K::HISTOGRAM(
            self.keys.0,
            segments.as_ptr(),
            segment_count as u32,
            tiles as u32,
            tiles_per_block as u32,
            counts.as_mut_ptr(),
            begin_bit,
            end_bit,
            self.descending,
            self.kind.bytes() as u32,
        );
        // SAFETY: the segment list covers `tiles` tiles of this value kind inside the keys; counts
        // sized for every place and segment.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        let config = LaunchConfig {
            grid_dim: ((places * segment_count) as u32, 1, 1),
            block_dim: (kernel::DIGITS as u32, 1, 1),
            shared_mem_bytes: primitives_kernels::block::BlockScan::<u32>::SHARED_BYTES as u32,
        };
        let args =
            sort::primitives_radix_bin_offsets::args(counts.as_mut_ptr(), segments.as_ptr(), segment_count as u32);
        // SAFETY: one block per (place, segment) over the counts just made.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        self.onesweep_passes::<V>(&segments, segment_count, tiles, &counts)
    }

    /// A onesweep pass a place, alternating between the output and a scratch copy so that the
    /// last pass writes the output. Every place writes each item of its destination before the
    /// next reads it, so the scratch copies need no clearing (for 2^26 u32 pairs that memset was
    /// 0.5 GB of writes).
    fn onesweep_passes<V: Element>(
        &self,
        segments: &DeviceBuffer<u32>,
        segment_count: usize,
        tiles: usize,
        counts: &DeviceBuffer<u32>,
    ) -> Result<()> {
        let (gpu, n) = (self.gpu, self.n);
        let (begin_bit, end_bit) = self.bits;
        let ((keys_in, keys_out), (values_in, values_out)) = (self.keys, self.values);
        let places = (end_bit - begin_bit).div_ceil(kernel::RADIX_BITS) as usize;
        let mut scratch_keys = if places > 1 { Some(DeviceBuffer::<K>::uninitialized(gpu, n)?) } else { None };
        let mut scratch_values =
            if places > 1 && self.has_values { Some(DeviceBuffer::<V>::uninitialized(gpu, n)?) } else { None };
        // One place's status words, cleared again before each later place: a region per place would
        // save those memsets (12 MB each for 2^26 u32 pairs) for up to eight times the memory.
        let mut status = DeviceBuffer::<u32>::zeroed(gpu, tiles * kernel::DIGITS + 1)?;
        let counter = status.as_mut_ptr().wrapping_add(tiles * kernel::DIGITS);
        let onesweep = K::ONESWEEP[self.kind.index()];
        let scratch_key_ptr = scratch_keys.as_mut().map_or(std::ptr::null_mut(), |b| b.as_mut_ptr());
        let scratch_value_ptr = scratch_values.as_mut().map_or(std::ptr::null_mut(), |b| b.as_mut_ptr().cast::<u8>());
        let mut source = (keys_in, values_in);
        for place in 0..places {
            let destination = if (places - 1 - place).is_multiple_of(2) {
                (keys_out, values_out)
            } else {
                (scratch_key_ptr, scratch_value_ptr)
            };
            if place > 0 {
                status.fill_zero(gpu)?;
            }
            let shift = begin_bit + place as u32 * kernel::RADIX_BITS;
            let bits = (end_bit - shift).min(kernel::RADIX_BITS);
            let config = LaunchConfig {
                grid_dim: (tiles as u32, 1, 1),
                block_dim: (kernel::ONESWEEP_THREADS, 1, 1),
                shared_mem_bytes: self.kind.shared_bytes::<K>() as u32,
            };
            let args = onesweep(
                source.0,
                destination.0,
                source.1,
                destination.1,
                segments.as_ptr(),
                segment_count as u32,
                counts.as_ptr().wrapping_add(place * segment_count * kernel::DIGITS),
                status.as_mut_ptr(),
                counter,
                tiles as u32,
                shift,
                bits,
                self.descending,
            );
            // SAFETY: source and destination are distinct buffers of n items (input, output,
            // scratch); the offsets of this place; status zeroed, the counter at 0 (the last tile of
            // each launch resets it); one block per tile.
            unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
            source = (destination.0.cast_const(), destination.1.cast_const());
        }
        // The scratch buffers are freed in stream order after the launches that use them.
        drop((scratch_keys, scratch_values, status));
        Ok(())
    }
}

/// Every kernel name the sorts launch (for the test that the embedded PTX has them all).
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    let mut names = vec![
        "primitives_radix_bin_offsets",
        "primitives_gather_u32",
        "primitives_gather_u8",
        "primitives_sequence_u32",
    ];
    for key in [u32::NAME, i32::NAME, f32::NAME, u64::NAME, i64::NAME, f64::NAME] {
        names.push(leak(format!("primitives_radix_histogram_{key}")));
        for kind in [ValueKind::Keys, ValueKind::V4, ValueKind::V8, ValueKind::V16] {
            for what in ["onesweep", "block_sort"] {
                names.push(leak(format!("primitives_radix_{what}_{key}_{}", kind.suffix())));
            }
        }
    }
    names
}

/// Copies the large segments through unchanged (an empty bit range).
fn copy_large<K: SortKey, V: Element>(
    gpu: &Gpu,
    keys_in: &DeviceBuffer<K>,
    keys_out: &mut DeviceBuffer<K>,
    values: Option<(&DeviceBuffer<V>, &mut DeviceBuffer<V>)>,
    begins: &[u32],
    ends: &[u32],
) -> Result<()> {
    // Rare enough to go through the host.
    let keys = keys_in.to_vec(gpu)?;
    for (&begin, &end) in begins.iter().zip(ends) {
        keys_out.copy_from_host_at(gpu, begin as usize, &keys[begin as usize..end as usize])?;
    }
    if let Some((input, output)) = values {
        let values = input.to_vec(gpu)?;
        for (&begin, &end) in begins.iter().zip(ends) {
            output.copy_from_host_at(gpu, begin as usize, &values[begin as usize..end as usize])?;
        }
    }
    Ok(())
}

/// A formatted kernel name as `&'static str` (the test's list of every sort entry point).
#[cfg(test)]
fn leak(name: String) -> &'static str {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(&interned) = names.get(name.as_str()) {
        return interned;
    }
    let interned: &'static str = Box::leak(name.into_boxed_str());
    names.insert(interned);
    interned
}
