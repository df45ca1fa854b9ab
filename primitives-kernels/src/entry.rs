//! The crate's own kernel entry points, instantiated per (element type, operator). Their names are
//! stable: `primitives_<algorithm>_<operator>_<type>`; the host crate refers to them by these names.

use crate::device;
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
                /// Device inclusive scan of one (type, operator); see [`device::scan::scan_kernel`].
                pub unsafe fn $inclusive(input: *const $t, output: *mut $t, len: u64, initial: *const $t, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: the host launcher sizes every buffer as `scan_kernel` requires.
                    unsafe {
                        device::scan::scan_kernel::<$t, $op, { device::scan::items_per_thread::<$t>() }, false>(
                            input, output, len, initial, temp, tiles, epoch,
                        )
                    }
                }
            }
            kernel! {
                /// Device exclusive scan of one (type, operator); see [`device::scan::scan_kernel`].
                pub unsafe fn $exclusive(input: *const $t, output: *mut $t, len: u64, initial: *const $t, temp: *mut u8, tiles: u32, epoch: u32) {
                    // SAFETY: as above.
                    unsafe {
                        device::scan::scan_kernel::<$t, $op, { device::scan::items_per_thread::<$t>() }, true>(
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

/// The host version of an entry point, by its PTX name, for the emulator.
#[cfg(not(target_arch = "nvptx64"))]
pub fn host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
    reduce_host_kernel(name).or_else(|| scan_host_kernel(name))
}
