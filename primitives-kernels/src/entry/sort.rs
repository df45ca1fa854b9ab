//! Entry points of the radix sorts, per key type and value size: `primitives_radix_<kernel>_<key>`
//! and, for the kernels that move values, `_keys` (keys only) or `_v4`/`_v8`/`_v16` (values of 4, 8
//! or 16 bytes; other sizes travel as indices and are gathered).

use crate::device::radix_sort::{self as sort, block_items_per_thread, items_per_thread};
use crate::kernel;

macro_rules! sort_entry_points {
    ($($key:ty => $histogram:ident, [$($value:ty, $pairs:literal => $onesweep:ident, $block:ident;)*];)*) => {
        $(
            kernel! {
                /// Digit counts of every place; see [`sort::histogram_kernel`].
                pub unsafe fn $histogram(keys: *const $key, segments: *const u32, segment_count: u32, tiles: u32, tiles_per_block: u32, counts: *mut u32, begin_bit: u32, end_bit: u32, descending: u32, value_bytes: u32) {
                    // Tiles are as long as the sort's (which depends on the value size).
                    // SAFETY: the host launcher sizes every buffer as the kernel requires.
                    unsafe {
                        match value_bytes {
                            16 => sort::histogram_kernel::<$key, [u32; 4]>(keys, segments, segment_count, tiles, tiles_per_block, counts, begin_bit, end_bit, descending),
                            8 => sort::histogram_kernel::<$key, u64>(keys, segments, segment_count, tiles, tiles_per_block, counts, begin_bit, end_bit, descending),
                            _ => sort::histogram_kernel::<$key, u32>(keys, segments, segment_count, tiles, tiles_per_block, counts, begin_bit, end_bit, descending),
                        }
                    }
                }
            }
            $(
                kernel! {
                    /// One digit place of Onesweep; see [`sort::onesweep_kernel`].
                    pub unsafe fn $onesweep(keys_in: *const $key, keys_out: *mut $key, values_in: *const $value, values_out: *mut $value, segments: *const u32, segment_count: u32, offsets: *const u32, status: *mut u32, counter: *mut u32, tiles: u32, shift: u32, bits: u32, descending: u32) {
                        // SAFETY: the host launcher sizes every buffer as the kernel requires.
                        unsafe {
                            sort::onesweep_kernel::<$key, $value, { items_per_thread::<$key, $value>() }, $pairs>(
                                keys_in, keys_out, values_in, values_out, segments, segment_count, offsets, status, counter, tiles, shift, bits, descending,
                            )
                        }
                    }
                }
                kernel! {
                    /// Small segments, one block each; see [`sort::block_sort_segments_kernel`].
                    pub unsafe fn $block(keys_in: *const $key, keys_out: *mut $key, values_in: *const $value, values_out: *mut $value, ranges: *const u32, begin_bit: u32, end_bit: u32, descending: u32) {
                        // SAFETY: the host launcher sizes every buffer as the kernel requires.
                        unsafe {
                            sort::block_sort_segments_kernel::<$key, $value, { block_items_per_thread::<$key, $value>() }, $pairs>(
                                keys_in, keys_out, values_in, values_out, ranges, begin_bit, end_bit, descending,
                            )
                        }
                    }
                }
            )*
        )*

        /// The host version of a sort entry point, by its PTX name, for the emulator.
        #[cfg(not(target_arch = "nvptx64"))]
        pub(super) fn host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(
                    stringify!($histogram) => Some($histogram::raw),
                    $(
                        stringify!($onesweep) => Some($onesweep::raw),
                        stringify!($block) => Some($block::raw),
                    )*
                )*
                "primitives_radix_bin_offsets" => Some(primitives_radix_bin_offsets::raw),
                "primitives_gather_u32" => Some(primitives_gather_u32::raw),
                "primitives_gather_u8" => Some(primitives_gather_u8::raw),
                "primitives_sequence_u32" => Some(primitives_sequence_u32::raw),
                _ => None,
            }
        }
    };
}

sort_entry_points! {
    u32 => primitives_radix_histogram_u32, [
        u32, false => primitives_radix_onesweep_u32_keys, primitives_radix_block_sort_u32_keys;
        u32, true => primitives_radix_onesweep_u32_v4, primitives_radix_block_sort_u32_v4;
        u64, true => primitives_radix_onesweep_u32_v8, primitives_radix_block_sort_u32_v8;
        [u32; 4], true => primitives_radix_onesweep_u32_v16, primitives_radix_block_sort_u32_v16;
    ];
    i32 => primitives_radix_histogram_i32, [
        u32, false => primitives_radix_onesweep_i32_keys, primitives_radix_block_sort_i32_keys;
        u32, true => primitives_radix_onesweep_i32_v4, primitives_radix_block_sort_i32_v4;
        u64, true => primitives_radix_onesweep_i32_v8, primitives_radix_block_sort_i32_v8;
        [u32; 4], true => primitives_radix_onesweep_i32_v16, primitives_radix_block_sort_i32_v16;
    ];
    f32 => primitives_radix_histogram_f32, [
        u32, false => primitives_radix_onesweep_f32_keys, primitives_radix_block_sort_f32_keys;
        u32, true => primitives_radix_onesweep_f32_v4, primitives_radix_block_sort_f32_v4;
        u64, true => primitives_radix_onesweep_f32_v8, primitives_radix_block_sort_f32_v8;
        [u32; 4], true => primitives_radix_onesweep_f32_v16, primitives_radix_block_sort_f32_v16;
    ];
    u64 => primitives_radix_histogram_u64, [
        u32, false => primitives_radix_onesweep_u64_keys, primitives_radix_block_sort_u64_keys;
        u32, true => primitives_radix_onesweep_u64_v4, primitives_radix_block_sort_u64_v4;
        u64, true => primitives_radix_onesweep_u64_v8, primitives_radix_block_sort_u64_v8;
        [u32; 4], true => primitives_radix_onesweep_u64_v16, primitives_radix_block_sort_u64_v16;
    ];
    i64 => primitives_radix_histogram_i64, [
        u32, false => primitives_radix_onesweep_i64_keys, primitives_radix_block_sort_i64_keys;
        u32, true => primitives_radix_onesweep_i64_v4, primitives_radix_block_sort_i64_v4;
        u64, true => primitives_radix_onesweep_i64_v8, primitives_radix_block_sort_i64_v8;
        [u32; 4], true => primitives_radix_onesweep_i64_v16, primitives_radix_block_sort_i64_v16;
    ];
    f64 => primitives_radix_histogram_f64, [
        u32, false => primitives_radix_onesweep_f64_keys, primitives_radix_block_sort_f64_keys;
        u32, true => primitives_radix_onesweep_f64_v4, primitives_radix_block_sort_f64_v4;
        u64, true => primitives_radix_onesweep_f64_v8, primitives_radix_block_sort_f64_v8;
        [u32; 4], true => primitives_radix_onesweep_f64_v16, primitives_radix_block_sort_f64_v16;
    ];
}

kernel! {
    /// Digit counts to first positions; see [`sort::bin_offsets_kernel`].
    pub unsafe fn primitives_radix_bin_offsets(counts: *mut u32, segments: *const u32, segment_count: u32) {
        // SAFETY: the host launcher sizes the buffers as the kernel requires.
        unsafe { sort::bin_offsets_kernel(counts, segments, segment_count) }
    }
}

kernel! {
    /// Gather of 4-byte units; see [`sort::gather_kernel`].
    pub unsafe fn primitives_gather_u32(input: *const u32, indices: *const u32, output: *mut u32, len: u64, units: u32) {
        // SAFETY: the host launcher passes valid indices and buffers.
        unsafe { sort::gather_kernel::<u32>(input, indices, output, len, units) }
    }
}

kernel! {
    /// Gather of bytes; see [`sort::gather_kernel`].
    pub unsafe fn primitives_gather_u8(input: *const u8, indices: *const u32, output: *mut u8, len: u64, units: u32) {
        // SAFETY: the host launcher passes valid indices and buffers.
        unsafe { sort::gather_kernel::<u8>(input, indices, output, len, units) }
    }
}

kernel! {
    /// `0, 1, ..., len - 1`; see [`sort::sequence_kernel`].
    pub unsafe fn primitives_sequence_u32(output: *mut u32, len: u64) {
        // SAFETY: the host launcher passes a buffer of `len` entries.
        unsafe { sort::sequence_kernel(output, len) }
    }
}
