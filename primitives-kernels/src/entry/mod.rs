//! The crate's own kernel entry points, instantiated per (element type, operator). Their names are
//! stable: `primitives_<algorithm>_<operator>_<type>`; the host crate refers to them by these names.

pub mod histogram;
pub mod sort;

use crate::device::{self, histogram_experiment, multi, scan, segmented_reduce as segmented, segmented_scan, select};
use crate::kernel;
use crate::ops::{GradientPair, Max, Min, Sum};

macro_rules! reduce_entry_points {
    ($($name:ident: $t:ty, $op:ty;)*) => {
        $(
            kernel! {
                /// Device reduce of one (type, operator); see [`device::reduce::reduce_kernel`].
                pub unsafe fn $name(input: *const $t, len: u64, block_totals: *mut $t, done_blocks: *mut u32, output: *mut $t) {
                    // SAFETY: the host launcher sizes every buffer as `reduce_kernel` requires.
                    unsafe { device::reduce::reduce_kernel::<$t, $op>(input, len, block_totals, done_blocks, output) }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn reduce_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($name) => Some($name::raw),)*
                _ => None,
            }
        }
    };
}

reduce_entry_points! {
    primitives_reduce_sum_f32: f32, Sum;
    primitives_reduce_min_f32: f32, Min;
    primitives_reduce_max_f32: f32, Max;
    primitives_reduce_sum_f64: f64, Sum;
    primitives_reduce_min_f64: f64, Min;
    primitives_reduce_max_f64: f64, Max;
    primitives_reduce_sum_i32: i32, Sum;
    primitives_reduce_min_i32: i32, Min;
    primitives_reduce_max_i32: i32, Max;
    primitives_reduce_sum_u32: u32, Sum;
    primitives_reduce_min_u32: u32, Min;
    primitives_reduce_max_u32: u32, Max;
    primitives_reduce_sum_i64: i64, Sum;
    primitives_reduce_min_i64: i64, Min;
    primitives_reduce_max_i64: i64, Max;
    primitives_reduce_sum_u64: u64, Sum;
    primitives_reduce_min_u64: u64, Min;
    primitives_reduce_max_u64: u64, Max;
}

macro_rules! scan_entry_points {
    ($($inclusive:ident, $exclusive:ident: $t:ty, $op:ty;)*) => {
        $(
            kernel! {
                /// Device inclusive scan of one (type, operator); see [`device::scan::staged_scan_kernel`].
                pub unsafe fn $inclusive(input: *const $t, output: *mut $t, len: u64, initial: *const $t, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: the host launcher sizes every buffer as `staged_scan_kernel` requires.
                    unsafe {
                        device::scan::staged_scan_kernel::<$t, $op, { device::scan::staged_vector_items::<$t>() }, false>(
                            input, output, len, initial, temp, tiles, epoch,
                        )
                    }
                }
            }
            kernel! {
                /// Device exclusive scan of one (type, operator); see [`device::scan::staged_scan_kernel`].
                pub unsafe fn $exclusive(input: *const $t, output: *mut $t, len: u64, initial: *const $t, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: as above.
                    unsafe {
                        device::scan::staged_scan_kernel::<$t, $op, { device::scan::staged_vector_items::<$t>() }, true>(
                            input, output, len, initial, temp, tiles, epoch,
                        )
                    }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn scan_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($inclusive) => Some($inclusive::raw), stringify!($exclusive) => Some($exclusive::raw),)*
                _ => None,
            }
        }
    };
}

scan_entry_points! {
    primitives_scan_inclusive_sum_f32, primitives_scan_exclusive_sum_f32: f32, Sum;
    primitives_scan_inclusive_min_f32, primitives_scan_exclusive_min_f32: f32, Min;
    primitives_scan_inclusive_max_f32, primitives_scan_exclusive_max_f32: f32, Max;
    primitives_scan_inclusive_sum_f64, primitives_scan_exclusive_sum_f64: f64, Sum;
    primitives_scan_inclusive_min_f64, primitives_scan_exclusive_min_f64: f64, Min;
    primitives_scan_inclusive_max_f64, primitives_scan_exclusive_max_f64: f64, Max;
    primitives_scan_inclusive_sum_i32, primitives_scan_exclusive_sum_i32: i32, Sum;
    primitives_scan_inclusive_min_i32, primitives_scan_exclusive_min_i32: i32, Min;
    primitives_scan_inclusive_max_i32, primitives_scan_exclusive_max_i32: i32, Max;
    primitives_scan_inclusive_sum_u32, primitives_scan_exclusive_sum_u32: u32, Sum;
    primitives_scan_inclusive_min_u32, primitives_scan_exclusive_min_u32: u32, Min;
    primitives_scan_inclusive_max_u32, primitives_scan_exclusive_max_u32: u32, Max;
    primitives_scan_inclusive_sum_i64, primitives_scan_exclusive_sum_i64: i64, Sum;
    primitives_scan_inclusive_min_i64, primitives_scan_exclusive_min_i64: i64, Min;
    primitives_scan_inclusive_max_i64, primitives_scan_exclusive_max_i64: i64, Max;
    primitives_scan_inclusive_sum_u64, primitives_scan_exclusive_sum_u64: u64, Sum;
    primitives_scan_inclusive_min_u64, primitives_scan_exclusive_min_u64: u64, Min;
    primitives_scan_inclusive_max_u64, primitives_scan_exclusive_max_u64: u64, Max;
    primitives_scan_inclusive_sum_gpf32, primitives_scan_exclusive_sum_gpf32: GradientPair<f32>, Sum;
    primitives_scan_inclusive_sum_gpf64, primitives_scan_exclusive_sum_gpf64: GradientPair<f64>, Sum;
    primitives_scan_inclusive_sum_gpi64, primitives_scan_exclusive_sum_gpi64: GradientPair<i64>, Sum;
}

macro_rules! select_entry_points {
    ($($t:ty => $select:ident, $partition:ident;)*) => {
        $(
            kernel! {
                /// Select by a flag array; see [`device::select::staged_select_kernel`].
                pub unsafe fn $select(input: *const $t, flags: *const u8, len: u64, output: *mut $t, count: *mut u64, temp: *mut u8, tiles: u32, epoch: u32, two_pass: u32) {
                    // SAFETY: the host launcher sizes every buffer as `select_kernel` requires.
                    unsafe {
                        select::staged_select_kernel::<$t, select::Flagged, { 16 / size_of::<$t>() }, { 8 * (16 / size_of::<$t>()) }, false>(
                            input, select::Flagged { flags }, len, output, count, temp, tiles, epoch, two_pass != 0,
                        )
                    }
                }
            }
            kernel! {
                /// Stable partition by a flag array; see [`device::select::staged_select_kernel`].
                pub unsafe fn $partition(input: *const $t, flags: *const u8, len: u64, output: *mut $t, count: *mut u64, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: as above.
                    unsafe {
                        select::staged_select_kernel::<$t, select::Flagged, { 16 / size_of::<$t>() }, { 8 * (16 / size_of::<$t>()) }, true>(
                            input, select::Flagged { flags }, len, output, count, temp, tiles, epoch, true,
                        )
                    }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn select_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($select) => Some($select::raw), stringify!($partition) => Some($partition::raw),)*
                _ => None,
            }
        }
    };
}

select_entry_points! {
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

macro_rules! compare_entry_points {
    ($($t:ty => $select:ident, $partition:ident, $offsets:ident, $heads:ident, $runs:ident;)*) => {
        $(
            kernel! {
                /// Select by comparison with a threshold (its bits in `threshold`).
                pub unsafe fn $select(input: *const $t, comparison: u32, threshold: u64, len: u64, output: *mut $t, count: *mut u64, temp: *mut u8, tiles: u32, epoch: u32, two_pass: u32) {
                    // SAFETY: the host launcher sizes every buffer as `select_kernel` requires.
                    unsafe {
                        select::staged_select_kernel::<$t, select::Compare<$t>, { 16 / size_of::<$t>() }, { 8 * (16 / size_of::<$t>()) }, false>(
                            input, select::Compare::new(comparison, threshold), len, output, count, temp, tiles, epoch, two_pass != 0,
                        )
                    }
                }
            }
            kernel! {
                /// Stable partition by comparison with a threshold.
                pub unsafe fn $partition(input: *const $t, comparison: u32, threshold: u64, len: u64, output: *mut $t, count: *mut u64, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: as above.
                    unsafe {
                        select::staged_select_kernel::<$t, select::Compare<$t>, { 16 / size_of::<$t>() }, { 8 * (16 / size_of::<$t>()) }, true>(
                            input, select::Compare::new(comparison, threshold), len, output, count, temp, tiles, epoch, true,
                        )
                    }
                }
            }
            kernel! {
                /// First pass of a partition (or large select) by comparison: each tile's offset and the total.
                pub unsafe fn $offsets(input: *const $t, comparison: u32, threshold: u64, len: u64, count: *mut u64, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: the host launcher sizes every buffer as `tile_offsets_kernel` requires.
                    unsafe {
                        select::tile_offsets_kernel::<$t, select::Compare<$t>, { 16 / size_of::<$t>() }, { select::staged_tile_items::<$t>() }>(
                            input, select::Compare::new(comparison, threshold), len, count, temp, tiles, epoch,
                        )
                    }
                }
            }
            kernel! {
                /// Indices of the heads of runs of equal items (run-length encoding, first pass).
                pub unsafe fn $heads(input: *const $t, len: u64, heads: *mut u32, count: *mut u64, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: as for select.
                    unsafe {
                        select::select_kernel::<$t, select::RunHeads<$t>, select::Indices, { scan::items_per_thread::<$t>() }>(
                            input, select::RunHeads { input }, len, heads, count, temp, tiles, epoch,
                        )
                    }
                }
            }
            kernel! {
                /// Unique values and run lengths from the run heads (run-length encoding, second pass).
                pub unsafe fn $runs(input: *const $t, len: u64, heads: *const u32, runs: *const u64, unique: *mut $t, lengths: *mut u32) {
                    // SAFETY: the host passes the heads and run count of the first pass.
                    unsafe { select::run_lengths_kernel::<$t>(input, len, heads, runs, unique, lengths) }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn compare_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(
                    stringify!($select) => Some($select::raw),
                    stringify!($partition) => Some($partition::raw),
                    stringify!($offsets) => Some($offsets::raw),
                    stringify!($heads) => Some($heads::raw),
                    stringify!($runs) => Some($runs::raw),
                )*
                _ => None,
            }
        }
    };
}

compare_entry_points! {
    f32 => primitives_select_if_f32, primitives_partition_if_f32, primitives_select_offsets_if_f32, primitives_run_heads_f32, primitives_run_lengths_f32;
    f64 => primitives_select_if_f64, primitives_partition_if_f64, primitives_select_offsets_if_f64, primitives_run_heads_f64, primitives_run_lengths_f64;
    i32 => primitives_select_if_i32, primitives_partition_if_i32, primitives_select_offsets_if_i32, primitives_run_heads_i32, primitives_run_lengths_i32;
    u32 => primitives_select_if_u32, primitives_partition_if_u32, primitives_select_offsets_if_u32, primitives_run_heads_u32, primitives_run_lengths_u32;
    i64 => primitives_select_if_i64, primitives_partition_if_i64, primitives_select_offsets_if_i64, primitives_run_heads_i64, primitives_run_lengths_i64;
    u64 => primitives_select_if_u64, primitives_partition_if_u64, primitives_select_offsets_if_u64, primitives_run_heads_u64, primitives_run_lengths_u64;
}

macro_rules! offsets_flagged_entry_points {
    ($($bytes:literal => $name:ident;)*) => {
        $(
            kernel! {
                /// First pass of a partition (or large select) by a flag array, for items of this many bytes (tiles of
                /// [`select::staged_tile_items`] items): each tile's offset and the total.
                pub unsafe fn $name(flags: *const u8, len: u64, count: *mut u64, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: the host launcher sizes every buffer as `tile_offsets_kernel` requires.
                    unsafe {
                        select::tile_offsets_kernel::<u8, select::Flagged, 16, { select::staged_tile_items::<[u8; $bytes]>() }>(
                            flags, select::Flagged { flags }, len, count, temp, tiles, epoch,
                        )
                    }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn offsets_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($name) => Some($name::raw),)*
                _ => None,
            }
        }
    };
}

offsets_flagged_entry_points! {
    4 => primitives_select_offsets_flagged_4;
    8 => primitives_select_offsets_flagged_8;
    16 => primitives_select_offsets_flagged_16;
}

macro_rules! segmented_reduce_entry_points {
    ($($t:ty, $op:ty => $main:ident, $huge:ident, $fixup:ident;)*) => {
        $(
            kernel! {
                /// Segmented reduce, one worker per segment; see [`segmented::segments_kernel`].
                pub unsafe fn $main(input: *const $t, len: u64, begin: *const u32, end: *const u32, count: *const u64, output: *mut $t, warp_per_segment: u32, huge: u64, huge_list: *mut u32, huge_capacity: u32, huge_count: *mut u32, bad_segment: *mut u32) {
                    // SAFETY: the host launcher sizes every buffer as `segments_kernel` requires.
                    unsafe {
                        segmented::segments_kernel::<$t, $op>(
                            input, len, segmented::Segments { begin, end, count }, output, warp_per_segment, huge, huge_list, huge_capacity, huge_count, bad_segment,
                        )
                    }
                }
            }
            kernel! {
                /// Segmented reduce of the huge segments; see [`segmented::huge_kernel`].
                pub unsafe fn $huge(input: *const $t, len: u64, begin: *const u32, end: *const u32, count: *const u64, huge_list: *const u32, huge_capacity: u32, huge_count: *const u32, partials: *mut $t) {
                    // SAFETY: as above.
                    unsafe { segmented::huge_kernel::<$t, $op>(input, len, segmented::Segments { begin, end, count }, huge_list, huge_capacity, huge_count, partials) }
                }
            }
            kernel! {
                /// Combines the huge segments' partials; see [`segmented::huge_fixup_kernel`].
                pub unsafe fn $fixup(huge_list: *const u32, huge_capacity: u32, huge_count: *const u32, partials: *const $t, blocks: u32, output: *mut $t) {
                    // SAFETY: as above.
                    unsafe { segmented::huge_fixup_kernel::<$t, $op>(huge_list, huge_capacity, huge_count, partials, blocks, output) }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn segmented_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($main) => Some($main::raw), stringify!($huge) => Some($huge::raw), stringify!($fixup) => Some($fixup::raw),)*
                "primitives_heads_to_ends" => Some(primitives_heads_to_ends::raw),
                "primitives_select_head_flags" => Some(primitives_select_head_flags::raw),
                _ => None,
            }
        }
    };
}

segmented_reduce_entry_points! {
    f32, Sum => primitives_segmented_reduce_sum_f32, primitives_segmented_reduce_huge_sum_f32, primitives_segmented_reduce_fixup_sum_f32;
    f32, Min => primitives_segmented_reduce_min_f32, primitives_segmented_reduce_huge_min_f32, primitives_segmented_reduce_fixup_min_f32;
    f32, Max => primitives_segmented_reduce_max_f32, primitives_segmented_reduce_huge_max_f32, primitives_segmented_reduce_fixup_max_f32;
    f64, Sum => primitives_segmented_reduce_sum_f64, primitives_segmented_reduce_huge_sum_f64, primitives_segmented_reduce_fixup_sum_f64;
    f64, Min => primitives_segmented_reduce_min_f64, primitives_segmented_reduce_huge_min_f64, primitives_segmented_reduce_fixup_min_f64;
    f64, Max => primitives_segmented_reduce_max_f64, primitives_segmented_reduce_huge_max_f64, primitives_segmented_reduce_fixup_max_f64;
    i32, Sum => primitives_segmented_reduce_sum_i32, primitives_segmented_reduce_huge_sum_i32, primitives_segmented_reduce_fixup_sum_i32;
    i32, Min => primitives_segmented_reduce_min_i32, primitives_segmented_reduce_huge_min_i32, primitives_segmented_reduce_fixup_min_i32;
    i32, Max => primitives_segmented_reduce_max_i32, primitives_segmented_reduce_huge_max_i32, primitives_segmented_reduce_fixup_max_i32;
    u32, Sum => primitives_segmented_reduce_sum_u32, primitives_segmented_reduce_huge_sum_u32, primitives_segmented_reduce_fixup_sum_u32;
    u32, Min => primitives_segmented_reduce_min_u32, primitives_segmented_reduce_huge_min_u32, primitives_segmented_reduce_fixup_min_u32;
    u32, Max => primitives_segmented_reduce_max_u32, primitives_segmented_reduce_huge_max_u32, primitives_segmented_reduce_fixup_max_u32;
    i64, Sum => primitives_segmented_reduce_sum_i64, primitives_segmented_reduce_huge_sum_i64, primitives_segmented_reduce_fixup_sum_i64;
    i64, Min => primitives_segmented_reduce_min_i64, primitives_segmented_reduce_huge_min_i64, primitives_segmented_reduce_fixup_min_i64;
    i64, Max => primitives_segmented_reduce_max_i64, primitives_segmented_reduce_huge_max_i64, primitives_segmented_reduce_fixup_max_i64;
    u64, Sum => primitives_segmented_reduce_sum_u64, primitives_segmented_reduce_huge_sum_u64, primitives_segmented_reduce_fixup_sum_u64;
    u64, Min => primitives_segmented_reduce_min_u64, primitives_segmented_reduce_huge_min_u64, primitives_segmented_reduce_fixup_min_u64;
    u64, Max => primitives_segmented_reduce_max_u64, primitives_segmented_reduce_huge_max_u64, primitives_segmented_reduce_fixup_max_u64;
    GradientPair<f32>, Sum => primitives_segmented_reduce_sum_gpf32, primitives_segmented_reduce_huge_sum_gpf32, primitives_segmented_reduce_fixup_sum_gpf32;
    GradientPair<f64>, Sum => primitives_segmented_reduce_sum_gpf64, primitives_segmented_reduce_huge_sum_gpf64, primitives_segmented_reduce_fixup_sum_gpf64;
    GradientPair<i64>, Sum => primitives_segmented_reduce_sum_gpi64, primitives_segmented_reduce_huge_sum_gpi64, primitives_segmented_reduce_fixup_sum_gpi64;
}

// Scan variants measured side by side with the production scan (`bandwidth scan-variants`).
kernel! {
    /// The register-tile scan (items in registers, 64 bytes per thread) of f32 sums; see [`device::scan::scan_kernel`].
    pub unsafe fn primitives_scanvariant_registers_sum_f32(input: *const f32, output: *mut f32, len: u64, initial: *const f32, temp: *mut u8, tiles: u32, epoch: u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel requires (the timed variant
        // gets a timeline of 8 words per tile as `initial`).
        unsafe { device::scan::scan_kernel::<f32, Sum, { device::scan::items_per_thread::<f32>() }, false>(input, output, len, initial, temp, tiles, epoch) }
    }
}
// The warp-specialized scan at several look-back depths and sleeps (`bandwidth scan-variants`).
macro_rules! specialized_scan_variants {
    ($($name:ident: $depth:literal, $sleep_ns:literal;)*) => {
        $(
            kernel! {
                /// The warp-specialized scan of f32 sums at one look-back depth and longest sleep (in its name: `d<depth>_b<ns>`); see [`device::scan::specialized_scan_kernel_tuned`].
                pub unsafe fn $name(input: *const f32, output: *mut f32, len: u64, initial: *const f32, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: the host launcher sizes every buffer as the kernel requires.
                    unsafe {
                        device::scan::specialized_scan_kernel_tuned::<f32, Sum, 4, { device::scan::EIGHT_VECTOR_ROWS }, $depth, $sleep_ns, false, false>(
                            input, output, len, initial, temp, tiles, epoch, core::ptr::null_mut(),
                        )
                    }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn specialized_scan_variant_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($name) => Some($name::raw),)*
                _ => None,
            }
        }
    };
}

specialized_scan_variants! {
    primitives_scanvariant_specialized_d1_b0_sum_f32: 1, 0;
    primitives_scanvariant_specialized_d1_b64_sum_f32: 1, 64;
    primitives_scanvariant_specialized_d2_b0_sum_f32: 2, 0;
    primitives_scanvariant_specialized_d2_b64_sum_f32: 2, 64;
    primitives_scanvariant_specialized_d2_b512_sum_f32: 2, 512;
    primitives_scanvariant_specialized_d4_b64_sum_f32: 4, 64;
    primitives_scanvariant_specialized_d4_b512_sum_f32: 4, 512;
}

kernel! {
    /// The production warp-specialized scan of f32 sums with a timeline of every tile written to `initial` (8 words per tile); see [`device::scan::specialized_scan_kernel_tuned`].
    pub unsafe fn primitives_scanvariant_specialized_timed_sum_f32(input: *const f32, output: *mut f32, len: u64, initial: *const f32, temp: *mut u8, tiles: u32, epoch: u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel requires (a timeline of 8
        // words per tile as `initial`).
        unsafe { device::scan::specialized_scan_kernel_tuned::<f32, Sum, 4, { device::scan::EIGHT_VECTOR_ROWS }, { device::scan::SPECIALIZED_LOOK_BACK_DEPTH }, { device::scan::SPECIALIZED_MAX_BACKOFF_NS }, false, true>(input, output, len, initial, temp, tiles, epoch, initial as *mut u64) }
    }
}
kernel! {
    /// The staged scan of f32 sums with rows of 8 vectors (128 bytes a thread, the previous production tile); see [`device::scan::staged_scan_kernel_timed`].
    pub unsafe fn primitives_scanvariant_rows8_sum_f32(input: *const f32, output: *mut f32, len: u64, initial: *const f32, temp: *mut u8, tiles: u32, epoch: u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel requires.
        unsafe { device::scan::staged_scan_kernel_timed::<f32, Sum, 4, { device::scan::EIGHT_VECTOR_ROWS }, { device::scan::STAGED_LOOK_BACK_DEPTH }, false, false>(input, output, len, initial, temp, tiles, epoch, core::ptr::null_mut()) }
    }
}
kernel! {
    /// The staged scan of f32 sums with rows of 9 vectors (144 bytes a thread: 216 KiB of tiles per multiprocessor at 3 x 512 threads); see [`device::scan::staged_scan_kernel_timed`].
    pub unsafe fn primitives_scanvariant_rows9_sum_f32(input: *const f32, output: *mut f32, len: u64, initial: *const f32, temp: *mut u8, tiles: u32, epoch: u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel requires.
        unsafe { device::scan::staged_scan_kernel_timed::<f32, Sum, 4, 9, { device::scan::STAGED_LOOK_BACK_DEPTH }, false, false>(input, output, len, initial, temp, tiles, epoch, core::ptr::null_mut()) }
    }
}
kernel! {
    /// The production staged scan (rows of 9 vectors, 256 threads) of f32 sums with a timeline of every tile written to `initial` (8 words per tile); see [`device::scan::staged_scan_kernel_timed`].
    pub unsafe fn primitives_scanvariant_timed_sum_f32(input: *const f32, output: *mut f32, len: u64, initial: *const f32, temp: *mut u8, tiles: u32, epoch: u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel requires (the timed variant
        // gets a timeline of 8 words per tile as `initial`).
        unsafe { device::scan::staged_scan_kernel_timed::<f32, Sum, 4, { device::scan::STAGED_ROW_VECTORS }, { device::scan::STAGED_LOOK_BACK_DEPTH }, false, true>(input, output, len, initial, temp, tiles, epoch, initial as *mut u64) }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
fn scan_variant_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
    match name {
        "primitives_scanvariant_registers_sum_f32" => Some(primitives_scanvariant_registers_sum_f32::raw),
        "primitives_scanvariant_timed_sum_f32" => Some(primitives_scanvariant_timed_sum_f32::raw),
        "primitives_scanvariant_rows9_sum_f32" => Some(primitives_scanvariant_rows9_sum_f32::raw),
        "primitives_scanvariant_rows8_sum_f32" => Some(primitives_scanvariant_rows8_sum_f32::raw),
        "primitives_scanvariant_specialized_timed_sum_f32" => {
            Some(primitives_scanvariant_specialized_timed_sum_f32::raw)
        }
        _ => specialized_scan_variant_host_kernel(name),
    }
}

macro_rules! segmented_scan_entry_points {
    ($($t:ty, $op:ty => $name:ident;)*) => {
        $(
            kernel! {
                /// Segmented scan by head flags or by keys; see [`segmented_scan::segmented_scan_kernel`].
                pub unsafe fn $name(input: *const $t, flags: *const u8, keys: *const u32, output: *mut $t, len: u64, exclusive: u32, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: the host launcher sizes every buffer as the kernel requires.
                    unsafe {
                        segmented_scan::segmented_scan_kernel::<$t, $op, { scan::items_per_thread::<$t>() }>(
                            input, flags, keys, output, len, exclusive, temp, tiles, epoch,
                        )
                    }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn segmented_scan_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($name) => Some($name::raw),)*
                "primitives_offsets_to_flags" => Some(primitives_offsets_to_flags::raw),
                _ => None,
            }
        }
    };
}

segmented_scan_entry_points! {
    f32, Sum => primitives_segmented_scan_sum_f32;
    f32, Min => primitives_segmented_scan_min_f32;
    f32, Max => primitives_segmented_scan_max_f32;
    f64, Sum => primitives_segmented_scan_sum_f64;
    f64, Min => primitives_segmented_scan_min_f64;
    f64, Max => primitives_segmented_scan_max_f64;
    i32, Sum => primitives_segmented_scan_sum_i32;
    i32, Min => primitives_segmented_scan_min_i32;
    i32, Max => primitives_segmented_scan_max_i32;
    u32, Sum => primitives_segmented_scan_sum_u32;
    u32, Min => primitives_segmented_scan_min_u32;
    u32, Max => primitives_segmented_scan_max_u32;
    i64, Sum => primitives_segmented_scan_sum_i64;
    i64, Min => primitives_segmented_scan_min_i64;
    i64, Max => primitives_segmented_scan_max_i64;
    u64, Sum => primitives_segmented_scan_sum_u64;
    u64, Min => primitives_segmented_scan_min_u64;
    u64, Max => primitives_segmented_scan_max_u64;
    GradientPair<f32>, Sum => primitives_segmented_scan_sum_gpf32;
    GradientPair<f64>, Sum => primitives_segmented_scan_sum_gpf64;
    GradientPair<i64>, Sum => primitives_segmented_scan_sum_gpi64;
}

macro_rules! multi_entry_points {
    ($($t:ty, $op:ty => $partials:ident, $combine:ident, $scan:ident;)*) => {
        $(
            kernel! {
                /// Multireduce/multiscan, launch 1; see [`multi::partials_kernel`].
                pub unsafe fn $partials(values: *const $t, buckets: *const u32, len: u64, bucket_count: u32, partials: *mut $t, bad_item: *mut u32) {
                    // SAFETY: the host launcher sizes every buffer as the kernel requires.
                    unsafe { multi::partials_kernel::<$t, $op>(values, buckets, len, bucket_count, partials, bad_item) }
                }
            }
            kernel! {
                /// Multireduce/multiscan, launch 2; see [`multi::combine_kernel`].
                pub unsafe fn $combine(partials: *mut $t, warps: u32, scan: u32, totals: *mut $t) {
                    // SAFETY: as above.
                    unsafe { multi::combine_kernel::<$t, $op>(partials, warps, scan, totals) }
                }
            }
            kernel! {
                /// Multiscan, launch 3; see [`multi::scan_kernel`].
                pub unsafe fn $scan(values: *const $t, buckets: *const u32, len: u64, bucket_count: u32, partials: *const $t, inclusive: u32, output: *mut $t, bad_item: *mut u32) {
                    // SAFETY: as above.
                    unsafe { multi::scan_kernel::<$t, $op>(values, buckets, len, bucket_count, partials, inclusive, output, bad_item) }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn multi_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($partials) => Some($partials::raw), stringify!($combine) => Some($combine::raw), stringify!($scan) => Some($scan::raw),)*
                _ => None,
            }
        }
    };
}

multi_entry_points! {
    f32, Sum => primitives_multi_partials_sum_f32, primitives_multi_combine_sum_f32, primitives_multi_scan_sum_f32;
    f32, Min => primitives_multi_partials_min_f32, primitives_multi_combine_min_f32, primitives_multi_scan_min_f32;
    f32, Max => primitives_multi_partials_max_f32, primitives_multi_combine_max_f32, primitives_multi_scan_max_f32;
    f64, Sum => primitives_multi_partials_sum_f64, primitives_multi_combine_sum_f64, primitives_multi_scan_sum_f64;
    f64, Min => primitives_multi_partials_min_f64, primitives_multi_combine_min_f64, primitives_multi_scan_min_f64;
    f64, Max => primitives_multi_partials_max_f64, primitives_multi_combine_max_f64, primitives_multi_scan_max_f64;
    i32, Sum => primitives_multi_partials_sum_i32, primitives_multi_combine_sum_i32, primitives_multi_scan_sum_i32;
    i32, Min => primitives_multi_partials_min_i32, primitives_multi_combine_min_i32, primitives_multi_scan_min_i32;
    i32, Max => primitives_multi_partials_max_i32, primitives_multi_combine_max_i32, primitives_multi_scan_max_i32;
    u32, Sum => primitives_multi_partials_sum_u32, primitives_multi_combine_sum_u32, primitives_multi_scan_sum_u32;
    u32, Min => primitives_multi_partials_min_u32, primitives_multi_combine_min_u32, primitives_multi_scan_min_u32;
    u32, Max => primitives_multi_partials_max_u32, primitives_multi_combine_max_u32, primitives_multi_scan_max_u32;
    i64, Sum => primitives_multi_partials_sum_i64, primitives_multi_combine_sum_i64, primitives_multi_scan_sum_i64;
    i64, Min => primitives_multi_partials_min_i64, primitives_multi_combine_min_i64, primitives_multi_scan_min_i64;
    i64, Max => primitives_multi_partials_max_i64, primitives_multi_combine_max_i64, primitives_multi_scan_max_i64;
    u64, Sum => primitives_multi_partials_sum_u64, primitives_multi_combine_sum_u64, primitives_multi_scan_sum_u64;
    u64, Min => primitives_multi_partials_min_u64, primitives_multi_combine_min_u64, primitives_multi_scan_min_u64;
    u64, Max => primitives_multi_partials_max_u64, primitives_multi_combine_max_u64, primitives_multi_scan_max_u64;
    GradientPair<f32>, Sum => primitives_multi_partials_sum_gpf32, primitives_multi_combine_sum_gpf32, primitives_multi_scan_sum_gpf32;
    GradientPair<f64>, Sum => primitives_multi_partials_sum_gpf64, primitives_multi_combine_sum_gpf64, primitives_multi_scan_sum_gpf64;
    GradientPair<i64>, Sum => primitives_multi_partials_sum_gpi64, primitives_multi_combine_sum_gpi64, primitives_multi_scan_sum_gpi64;
}

kernel! {
    /// Head flags from CSR offsets; see [`segmented_scan::offsets_to_flags_kernel`].
    pub unsafe fn primitives_offsets_to_flags(offsets: *const u32, segments: u64, len: u64, flags: *mut u8, bad_segment: *mut u32) {
        // SAFETY: the host passes offsets, zeroed flags and the error word.
        unsafe { segmented_scan::offsets_to_flags_kernel(offsets, segments, len, flags, bad_segment) }
    }
}

kernel! {
    /// Indices of segment heads (item 0 and the flagged items) of a flag array.
    pub unsafe fn primitives_select_head_flags(flags: *const u8, len: u64, heads: *mut u32, count: *mut u64, temp: *mut u8, tiles: u32, epoch: u32) {
        // SAFETY: as for select.
        unsafe {
            select::select_kernel::<u8, select::HeadFlags, select::Indices, 16>(
                flags, select::HeadFlags { flags }, len, heads, count, temp, tiles, epoch,
            )
        }
    }
}

kernel! {
    /// Segment ends from head indices; see [`segmented::heads_to_ends_kernel`].
    pub unsafe fn primitives_heads_to_ends(heads: *const u32, count: *const u64, len: u64, ends: *mut u32) {
        // SAFETY: the host passes the heads and count of a select.
        unsafe { segmented::heads_to_ends_kernel(heads, count, len, ends) }
    }
}

macro_rules! histogram_experiment_entry_points {
    ($($t:ty => $name:ident;)*) => {
        $(
            kernel! {
                /// Gradient histogram by atomics, for the precision experiment only; see
                /// [`histogram_experiment::gradient_histogram_kernel`].
                pub unsafe fn $name(bins: *const u32, gradients: *const GradientPair<$t>, len: u64, bin_count: u32, histogram: *mut GradientPair<$t>) {
                    // SAFETY: the host launcher sizes every buffer and the shared memory as the kernel requires.
                    unsafe { histogram_experiment::gradient_histogram_kernel::<$t>(bins, gradients, len, bin_count, histogram) }
                }
            }
        )*

        #[cfg(not(target_arch = "nvptx64"))]
        fn histogram_experiment_host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($name) => Some($name::raw),)*
                _ => None,
            }
        }
    };
}

histogram_experiment_entry_points! {
    f32 => primitives_experimental_histogram_sum_gpf32;
    f64 => primitives_experimental_histogram_sum_gpf64;
    i64 => primitives_experimental_histogram_sum_gpi64;
}

/// The host version of an entry point, by its PTX name, for the emulator.
#[cfg(not(target_arch = "nvptx64"))]
pub fn host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
    reduce_host_kernel(name)
        .or_else(|| scan_host_kernel(name))
        .or_else(|| scan_variant_host_kernel(name))
        .or_else(|| select_host_kernel(name))
        .or_else(|| compare_host_kernel(name))
        .or_else(|| segmented_host_kernel(name))
        .or_else(|| segmented_scan_host_kernel(name))
        .or_else(|| multi_host_kernel(name))
        .or_else(|| histogram_experiment_host_kernel(name))
        .or_else(|| sort::host_kernel(name))
        .or_else(|| histogram::host_kernel(name))
        .or_else(|| offsets_host_kernel(name))
}
