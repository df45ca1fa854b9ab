//! Host side of select, partition and run-length encode.

use crate::LaunchConfig;
use primitives_kernels::device::{scan as scan_kernel, select as kernel};
use primitives_kernels::entry;
use primitives_kernels::launch::KernelArgs;
use primitives_kernels::ops::GradientPair;

use super::reduce::sealed;
use super::BLOCK_THREADS;
use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PRIMITIVES_MODULE};
use crate::ops::Element;

/// An element type with select and partition-by-flags kernels (all instantiated types and the three
/// gradient pairs). Sealed.
pub trait SelectKernel: Element + sealed::Sealed {
    /// The kernels' names in the PTX.
    const SELECT_FLAGGED: &'static str;
    const PARTITION_FLAGGED: &'static str;
    /// Their typed launch arguments (the entry points' `args`).
    const SELECT_FLAGGED_ARGS: SelectArgs<Self, *const u8>;
    const PARTITION_FLAGGED_ARGS: PartitionArgs<Self, *const u8>;
}

/// A numeric element type that also has select/partition by comparison and run-length encoding.
pub trait CompareKernel: SelectKernel + PartialOrd {
    /// The kernels' names in the PTX.
    const SELECT_IF: &'static str;
    const PARTITION_IF: &'static str;
    const OFFSETS_IF: &'static str;
    const RUN_HEADS: &'static str;
    const RUN_LENGTHS: &'static str;
    /// Their typed launch arguments (the entry points' `args`).
    const SELECT_IF_ARGS: SelectArgs<Self, Threshold>;
    const PARTITION_IF_ARGS: PartitionArgs<Self, Threshold>;
    const OFFSETS_IF_ARGS: fn(*const Self, u32, u64, u64, *mut u64, *mut u8, u32, u32) -> KernelArgs;
    const RUN_HEADS_ARGS: fn(*const Self, u64, *mut u32, *mut u64, *mut u8, u32, u32) -> KernelArgs;
    const RUN_LENGTHS_ARGS: fn(*const Self, u64, *const u32, *const u64, *mut Self, *mut u32) -> KernelArgs;
}

/// A comparison's code and the threshold's bits, as the kernels take them.
pub type Threshold = (u32, u64);

/// A select's arguments: input, what selects (flags, or a [`Threshold`]), items, output, count,
/// temporary storage, tiles, epoch, two passes.
pub type SelectArgs<T, H> = fn(*const T, H, u64, *mut T, *mut u64, *mut u8, u32, u32, u32) -> KernelArgs;
/// A partition's arguments: a select's without the passes.
pub type PartitionArgs<T, H> = fn(*const T, H, u64, *mut T, *mut u64, *mut u8, u32, u32) -> KernelArgs;

macro_rules! select_kernels {
    ($($t:ty => $select:ident, $partition:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl SelectKernel for $t {
            const SELECT_FLAGGED: &'static str = entry::$select::NAME;
            const PARTITION_FLAGGED: &'static str = entry::$partition::NAME;
            const SELECT_FLAGGED_ARGS: SelectArgs<$t, *const u8> = entry::$select::args;
            const PARTITION_FLAGGED_ARGS: PartitionArgs<$t, *const u8> = entry::$partition::args;
        }
    )*};
}

macro_rules! compare_kernels {
    ($($t:ty => $select:ident, $partition:ident, $offsets:ident, $heads:ident, $runs:ident;)*) => {$(
        impl CompareKernel for $t {
            const SELECT_IF: &'static str = entry::$select::NAME;
            const PARTITION_IF: &'static str = entry::$partition::NAME;
            const OFFSETS_IF: &'static str = entry::$offsets::NAME;
            const RUN_HEADS: &'static str = entry::$heads::NAME;
            const RUN_LENGTHS: &'static str = entry::$runs::NAME;
            const SELECT_IF_ARGS: SelectArgs<$t, Threshold> =
                |input, (code, bits), n, output, count, temp, tiles, epoch, two_pass| {
                    entry::$select::args(input, code, bits, n, output, count, temp, tiles, epoch, two_pass)
                };
            const PARTITION_IF_ARGS: PartitionArgs<$t, Threshold> =
                |input, (code, bits), n, output, count, temp, tiles, epoch| {
                    entry::$partition::args(input, code, bits, n, output, count, temp, tiles, epoch)
                };
            const OFFSETS_IF_ARGS: fn(*const $t, u32, u64, u64, *mut u64, *mut u8, u32, u32) -> KernelArgs =
                entry::$offsets::args;
            const RUN_HEADS_ARGS: fn(*const $t, u64, *mut u32, *mut u64, *mut u8, u32, u32) -> KernelArgs =
                entry::$heads::args;
            const RUN_LENGTHS_ARGS: fn(*const $t, u64, *const u32, *const u64, *mut $t, *mut u32) -> KernelArgs =
                entry::$runs::args;
        }
    )*};
}

select_kernels! {
    f32 => primitives_select_flagged_f32, primitives_partition_flagged_f32;
    f64 => primitives_select_flagged_f64, primitives_partition_flagged_f64;
    i32 => primitives_select_flagged_i32, primitives_partition_flagged_i32;
    u32 => primitives_select_flagged_u32, primitives_partition_flagged_u32;
    i64 => primitives_select_flagged_i64, primitives_partition_flagged_i64;
    u64 => primitives_select_flagged_u64, primitives_partition_flagged_u64;
    GradientPair<f32> => primitives_select_flagged_gpf32, primitives_partition_flagged_gpf32;
    GradientPair<f64> => primitives_select_flagged_gpf64, primitives_partition_flagged_gpf64;
    GradientPair<i64> => primitives_select_flagged_gpi64, primitives_partition_flagged_gpi64;
}
compare_kernels! {
    f32 => primitives_select_if_f32, primitives_partition_if_f32, primitives_select_offsets_if_f32, primitives_run_heads_f32, primitives_run_lengths_f32;
    f64 => primitives_select_if_f64, primitives_partition_if_f64, primitives_select_offsets_if_f64, primitives_run_heads_f64, primitives_run_lengths_f64;
    i32 => primitives_select_if_i32, primitives_partition_if_i32, primitives_select_offsets_if_i32, primitives_run_heads_i32, primitives_run_lengths_i32;
    u32 => primitives_select_if_u32, primitives_partition_if_u32, primitives_select_offsets_if_u32, primitives_run_heads_u32, primitives_run_lengths_u32;
    i64 => primitives_select_if_i64, primitives_partition_if_i64, primitives_select_offsets_if_i64, primitives_run_heads_i64, primitives_run_lengths_i64;
    u64 => primitives_select_if_u64, primitives_partition_if_u64, primitives_select_offsets_if_u64, primitives_run_heads_u64, primitives_run_lengths_u64;
}

/// A comparison of each item with a threshold: `item < threshold` for [`Comparison::Less`], and so on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    Equal,
    NotEqual,
}

impl Comparison {
    fn code(self) -> u32 {
        use kernel::comparison::*;
        match self {
            Comparison::Less => LESS,
            Comparison::LessEqual => LESS_EQUAL,
            Comparison::Greater => GREATER,
            Comparison::GreaterEqual => GREATER_EQUAL,
            Comparison::Equal => EQUAL,
            Comparison::NotEqual => NOT_EQUAL,
        }
    }

    /// The comparison applied to one item (the CPU side of the same rule).
    pub fn holds<T: PartialOrd>(self, item: T, threshold: T) -> bool {
        match self {
            Comparison::Less => item < threshold,
            Comparison::LessEqual => item <= threshold,
            Comparison::Greater => item > threshold,
            Comparison::GreaterEqual => item >= threshold,
            Comparison::Equal => item == threshold,
            Comparison::NotEqual => item != threshold,
        }
    }
}

fn threshold_bits<T: Element>(threshold: T) -> u64 {
    let mut bytes = [0u8; 8];
    bytes[..size_of::<T>()].copy_from_slice(bytemuck::bytes_of(&threshold));
    u64::from_le_bytes(bytes)
}

fn check_lengths<T: Element>(
    input: &DeviceBuffer<T>,
    output_len: usize,
    flags_len: Option<usize>,
    count_len: usize,
) -> Result<()> {
    let n = input.len();
    if n >= u32::MAX as usize {
        return Err(Error::InvalidArgument { name: "input", reason: format!("{n} items; at most 2^32 - 2") });
    }
    if output_len < n {
        return Err(Error::InvalidArgument {
            name: "output",
            reason: format!("holds {output_len} items, the input {n}"),
        });
    }
    if let Some(flags) = flags_len {
        if flags < n {
            return Err(Error::InvalidArgument { name: "flags", reason: format!("{flags} flags for {n} items") });
        }
    }
    if count_len == 0 {
        return Err(Error::InvalidArgument { name: "count", reason: "needs room for one number".into() });
    }
    Ok(())
}

/// How many passes a select takes: one (tiles look back for their offsets) or two (an offsets pass
/// first, then placement with no look-back). `Auto` takes two from 2^23 items on.
/// Public with the feature `experiments` (the side-by-side bench and the tests of both), which
/// alone asks for one pass.
#[cfg_attr(not(feature = "experiments"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectPasses {
    Auto,
    One,
    Two,
}

/// From this many items on, `Auto` selects in two passes. Measured on an H200 with u32 items
/// (docs/benchmarks.md): at 2^22 items one pass is faster (it saves a launch), at 2^24 two passes
/// are (the placement pass does not wait for look-backs).
pub(crate) const TWO_PASS_SELECT_FROM: usize = 1 << 23;

/// The offsets pass's typed arguments from what the pass adds: items, count, temporary storage,
/// tiles, epoch.
type OffsetsPass<'a> = Box<dyn Fn(u64, *mut u64, *mut u8, u32, u32) -> KernelArgs + 'a>;
/// The placement pass's typed arguments from items, output, count, temporary storage, tiles,
/// epoch, two passes.
type PlacePass<'a, T> = Box<dyn Fn(u64, *mut T, *mut u64, *mut u8, u32, u32, u32) -> KernelArgs + 'a>;

/// The launches of a select (`partition: false`) or partition of `input` by the staged kernels.
struct Launch<'a, T: Element> {
    input: &'a DeviceBuffer<T>,
    offsets: OffsetsPass<'a>,
    place: PlacePass<'a, T>,
    partition: bool,
}

impl<'a, T: Element> Launch<'a, T> {
    /// By flag bytes.
    fn flagged(input: &'a DeviceBuffer<T>, flags: &DeviceBuffer<u8>, partition: bool) -> Self
    where
        T: SelectKernel,
    {
        let (data, flags) = (input.as_ptr(), flags.as_ptr());
        let offsets: fn(*const u8, u64, *mut u64, *mut u8, u32, u32) -> KernelArgs = match size_of::<T>() {
            4 => entry::primitives_select_offsets_flagged_4::args,
            8 => entry::primitives_select_offsets_flagged_8::args,
            _ => entry::primitives_select_offsets_flagged_16::args,
        };
        let place: PlacePass<'a, T> = if partition {
            Box::new(move |n, out, count, temp, tiles, epoch, _| {
                T::PARTITION_FLAGGED_ARGS(data, flags, n, out, count, temp, tiles, epoch)
            })
        } else {
            Box::new(move |n, out, count, temp, tiles, epoch, two_pass| {
                T::SELECT_FLAGGED_ARGS(data, flags, n, out, count, temp, tiles, epoch, two_pass)
            })
        };
        let offsets = Box::new(move |n, count, temp, tiles, epoch| offsets(flags, n, count, temp, tiles, epoch));
        Launch { input, offsets, place, partition }
    }

    /// By comparison with a threshold.
    fn compare(input: &'a DeviceBuffer<T>, comparison: Comparison, threshold: T, partition: bool) -> Self
    where
        T: CompareKernel,
    {
        let (data, code, bits) = (input.as_ptr(), comparison.code(), threshold_bits(threshold));
        let place: PlacePass<'a, T> = if partition {
            Box::new(move |n, out, count, temp, tiles, epoch, _| {
                T::PARTITION_IF_ARGS(data, (code, bits), n, out, count, temp, tiles, epoch)
            })
        } else {
            Box::new(move |n, out, count, temp, tiles, epoch, two_pass| {
                T::SELECT_IF_ARGS(data, (code, bits), n, out, count, temp, tiles, epoch, two_pass)
            })
        };
        let offsets = Box::new(move |n, count, temp, tiles, epoch| {
            T::OFFSETS_IF_ARGS(data, code, bits, n, count, temp, tiles, epoch)
        });
        Launch { input, offsets, place, partition }
    }

    /// Launches over `input` into `output`, the selected count into `count[0]`; no host
    /// synchronisation. Lengths are checked by the callers (output and flags at least `n` items,
    /// `n < 2^32`).
    fn run(self, gpu: &Gpu, passes: SelectPasses, output: *mut T, count: &mut DeviceBuffer<u64>) -> Result<()> {
        let n = self.input.len();
        if n == 0 {
            return count.copy_from_host(gpu, &[0]);
        }
        let two_pass = self.partition
            || match passes {
                SelectPasses::Auto => n >= TWO_PASS_SELECT_FROM,
                SelectPasses::One => false,
                SelectPasses::Two => true,
            };
        let tiles = n.div_ceil(kernel::staged_tile_items::<T>());
        let mut temp = gpu.scan_temp.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = if two_pass { kernel::two_pass_temp_bytes(tiles) } else { kernel::temp_bytes(tiles) };
        let (buffer, epoch) = temp.prepare(gpu, bytes)?;
        let (temp, counter) = (buffer.as_mut_ptr(), count.as_mut_ptr());

        if two_pass {
            let config = LaunchConfig {
                grid_dim: (kernel::offsets_blocks(tiles) as u32, 1, 1),
                block_dim: (kernel::OFFSETS_BLOCK_THREADS, 1, 1),
                shared_mem_bytes: kernel::OFFSETS_SHARED_BYTES as u32,
            };
            let args = (self.offsets)(n as u64, counter, temp, tiles as u32, epoch);
            // SAFETY: the input (or flags) hold `n` items; the counter holds one u64; temp storage
            // ready for `tiles` tiles with a fresh epoch, its use ordered by the lock.
            unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        }
        let config = LaunchConfig {
            grid_dim: (tiles as u32, 1, 1),
            block_dim: (kernel::STAGED_BLOCK_THREADS, 1, 1),
            shared_mem_bytes: kernel::staged_shared_bytes::<T>() as u32,
        };
        let args = (self.place)(n as u64, output, counter, temp, tiles as u32, epoch, two_pass as u32);
        // SAFETY: as above; output holds `n` items; with two passes the offsets pass, earlier on the
        // stream, left the tiles' offsets in temp and the total in the counter.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args) }
    }
}

/// Stream compaction (CUB's `DeviceSelect`): keeps the selected items, in input order, at the start
/// of `output`, and writes their number to `num_selected[0]`. No host synchronisation; one pass
/// with decoupled look-back below 2^23 items, two passes (as
/// [`DevicePartition`]) from there on.
///
/// ```no_run
/// use primitives::{Comparison, DeviceSelect, Gpu};
/// # fn main() -> primitives::Result<()> {
/// let gpu = Gpu::new()?;
/// let input = gpu.upload(&[5u32, 1, 7, 2, 9])?;
/// let mut output = gpu.alloc_zeroed::<u32>(5)?;
/// let mut count = gpu.alloc_zeroed::<u64>(1)?;
/// DeviceSelect::compare(&gpu, &input, Comparison::Greater, 4, &mut output, &mut count)?;
/// assert_eq!(count.to_vec(&gpu)?, [3]);
/// assert_eq!(output.to_vec(&gpu)?[..3], [5, 7, 9]);
/// # Ok(())
/// # }
/// ```
pub struct DeviceSelect;

impl DeviceSelect {
    /// Elements per tile (one block) of select and partition for `T`.
    pub const fn tile_items<T>() -> usize {
        kernel::staged_tile_items::<T>()
    }

    /// Selects the items whose flag byte is non-zero.
    pub fn flagged<T: SelectKernel>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        flags: &DeviceBuffer<u8>,
        output: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        Self::flagged_passes(gpu, SelectPasses::Auto, input, flags, output, num_selected)
    }

    /// [`DeviceSelect::flagged`] in a chosen number of passes (for the side-by-side bench).
    #[cfg(feature = "experiments")]
    pub fn flagged_in<T: SelectKernel>(
        gpu: &Gpu,
        passes: SelectPasses,
        input: &DeviceBuffer<T>,
        flags: &DeviceBuffer<u8>,
        output: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        Self::flagged_passes(gpu, passes, input, flags, output, num_selected)
    }

    fn flagged_passes<T: SelectKernel>(
        gpu: &Gpu,
        passes: SelectPasses,
        input: &DeviceBuffer<T>,
        flags: &DeviceBuffer<u8>,
        output: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        check_lengths(input, output.len(), Some(flags.len()), num_selected.len())?;
        let launch = Launch::flagged(input, flags, false);
        launch.run(gpu, passes, output.as_mut_ptr(), num_selected)
    }

    /// Selects the items for which `item <comparison> threshold` holds.
    pub fn compare<T: CompareKernel>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        comparison: Comparison,
        threshold: T,
        output: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        Self::compare_passes(gpu, SelectPasses::Auto, input, comparison, threshold, output, num_selected)
    }

    /// [`DeviceSelect::compare`] in a chosen number of passes (for tests of both).
    #[cfg(feature = "experiments")]
    pub fn compare_in<T: CompareKernel>(
        gpu: &Gpu,
        passes: SelectPasses,
        input: &DeviceBuffer<T>,
        comparison: Comparison,
        threshold: T,
        output: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        Self::compare_passes(gpu, passes, input, comparison, threshold, output, num_selected)
    }

    fn compare_passes<T: CompareKernel>(
        gpu: &Gpu,
        passes: SelectPasses,
        input: &DeviceBuffer<T>,
        comparison: Comparison,
        threshold: T,
        output: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        check_lengths(input, output.len(), None, num_selected.len())?;
        let launch = Launch::compare(input, comparison, threshold, false);
        launch.run(gpu, passes, output.as_mut_ptr(), num_selected)
    }
}

/// Stable two-way partition (CUB's `DevicePartition`, but with both groups in input order): the
/// selected items first, then the others, into one output; their count goes to `num_selected[0]`.
/// Two launches, no host synchronisation: an offsets pass reads the flags (or items) once and, with
/// a decoupled look-back over blocks of tiles, gives every tile the count of selected items before
/// it and the total; the placement pass then moves each tile with no look-back of its own.
pub struct DevicePartition;

impl DevicePartition {
    /// Partitions by flag bytes (non-zero first).
    pub fn flagged<T: SelectKernel>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        flags: &DeviceBuffer<u8>,
        output: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        check_lengths(input, output.len(), Some(flags.len()), num_selected.len())?;
        let launch = Launch::flagged(input, flags, true);
        launch.run(gpu, SelectPasses::Two, output.as_mut_ptr(), num_selected)
    }

    /// Partitions by a comparison with a threshold (items for which it holds first).
    pub fn compare<T: CompareKernel>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        comparison: Comparison,
        threshold: T,
        output: &mut DeviceBuffer<T>,
        num_selected: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        check_lengths(input, output.len(), None, num_selected.len())?;
        let launch = Launch::compare(input, comparison, threshold, true);
        launch.run(gpu, SelectPasses::Two, output.as_mut_ptr(), num_selected)
    }
}

/// Run-length encoding (CUB's `DeviceRunLengthEncode::Encode`): runs of bitwise-equal consecutive
/// items become one `unique` value and its `length`; the number of runs goes to `num_runs[0]`.
pub struct DeviceRunLengthEncode;

impl DeviceRunLengthEncode {
    /// Encodes `input`. `unique` and `lengths` need room for as many runs as there can be (`input.len()`).
    pub fn encode<T: CompareKernel>(
        gpu: &Gpu,
        input: &DeviceBuffer<T>,
        unique: &mut DeviceBuffer<T>,
        lengths: &mut DeviceBuffer<u32>,
        num_runs: &mut DeviceBuffer<u64>,
    ) -> Result<()> {
        check_lengths(input, unique.len().min(lengths.len()), None, num_runs.len())?;
        let n = input.len();
        if n == 0 {
            return num_runs.copy_from_host(gpu, &[0]);
        }
        let heads = DeviceBuffer::<u32>::zeroed(gpu, n)?;
        let items = scan_kernel::items_per_thread::<T>();
        let tiles = n.div_ceil(BLOCK_THREADS as usize * items);
        {
            let mut temp = gpu.scan_temp.lock().unwrap_or_else(|p| p.into_inner());
            let (buffer, epoch) = temp.prepare(gpu, kernel::temp_bytes(tiles))?;
            let config = LaunchConfig {
                grid_dim: (tiles as u32, 1, 1),
                block_dim: (BLOCK_THREADS, 1, 1),
                shared_mem_bytes: kernel::shared_bytes(items, 4) as u32,
            };
            let (data, heads_out, runs, temp) =
                (input.as_ptr(), heads.as_mut_ptr(), num_runs.as_mut_ptr(), buffer.as_mut_ptr());
            let args = T::RUN_HEADS_ARGS(data, n as u64, heads_out, runs, temp, tiles as u32, epoch);
            // SAFETY: `heads` holds `n` u32; temp ready for `tiles` tiles with a fresh epoch.
            unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args)? };
        }
        let max_grid = gpu.properties().multiprocessors.max(1) * 8;
        let grid = (n.div_ceil(BLOCK_THREADS as usize) as u32).clamp(1, max_grid);
        let config = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK_THREADS, 1, 1), shared_mem_bytes: 0 };
        let (data, heads, runs) = (input.as_ptr(), heads.as_ptr(), num_runs.as_ptr());
        let args = T::RUN_LENGTHS_ARGS(data, n as u64, heads, runs, unique.as_mut_ptr(), lengths.as_mut_ptr());
        // SAFETY: the first pass left `num_runs[0]` ascending head indices below `n` in `heads`;
        // `unique` and `lengths` hold at least `n >= runs` items.
        unsafe { gpu.launch_kernel(PRIMITIVES_MODULE, config, args) }
    }
}
