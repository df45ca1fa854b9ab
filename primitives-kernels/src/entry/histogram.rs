//! Entry points of the histogram kernels: `primitives_histogram_count_<bin type>`,
//! `primitives_histogram_weighted_<weight>_<bin type>`, `primitives_histogram_even_<sample type>`
//! and `primitives_histogram_multi_<gradient>_<bin type>`.

use crate::device::histogram::{self, Count, EvenBins, FeatureGroup, MultiWork, PreBinned, Weights};
use crate::kernel;
use crate::ops::GradientPair;

macro_rules! count_entry_points {
    ($($name:ident: $b:ty;)*) => {
        $(
            kernel! {
                /// Counts of pre-binned samples; see [`histogram::histogram_kernel`].
                pub unsafe fn $name(samples: *const $b, len: u64, bins: u32, layout: u32, histogram: *mut u64, ignored: *mut u64) {
                    // SAFETY: the host launcher sizes every buffer and the shared memory as the kernel requires.
                    unsafe {
                        histogram::histogram_kernel::<$b, PreBinned, u32, Count, { 16 / size_of::<$b>() }>(
                            samples, len, PreBinned, bins, Count, layout, histogram, ignored,
                        )
                    }
                }
            }
        )*
    };
}

count_entry_points! {
    primitives_histogram_count_u8: u8;
    primitives_histogram_count_u16: u16;
    primitives_histogram_count_u32: u32;
}

macro_rules! weighted_entry_points {
    ($($name:ident: $b:ty, $w:ty;)*) => {
        $(
            kernel! {
                /// Weighted histogram of pre-binned samples; see [`histogram::histogram_kernel`].
                pub unsafe fn $name(samples: *const $b, len: u64, bins: u32, weights: *const $w, layout: u32, histogram: *mut $w, ignored: *mut u64) {
                    // SAFETY: as above.
                    unsafe {
                        histogram::histogram_kernel::<$b, PreBinned, $w, Weights<$w>, { 16 / size_of::<$b>() }>(
                            samples, len, PreBinned, bins, Weights { weights }, layout, histogram, ignored,
                        )
                    }
                }
            }
        )*
    };
}

weighted_entry_points! {
    primitives_histogram_weighted_f32_u8: u8, f32;
    primitives_histogram_weighted_f32_u16: u16, f32;
    primitives_histogram_weighted_f32_u32: u32, f32;
    primitives_histogram_weighted_f64_u8: u8, f64;
    primitives_histogram_weighted_f64_u16: u16, f64;
    primitives_histogram_weighted_f64_u32: u32, f64;
    primitives_histogram_weighted_gpi64_u8: u8, GradientPair<i64>;
    primitives_histogram_weighted_gpi64_u16: u16, GradientPair<i64>;
    primitives_histogram_weighted_gpi64_u32: u32, GradientPair<i64>;
}

macro_rules! even_entry_points {
    ($($name:ident: $f:ty;)*) => {
        $(
            kernel! {
                /// Counts of float samples in equal-width bins over `[lower, upper)` (their bits in the
                /// low bytes of `lower_bits`/`upper_bits`); see [`histogram::histogram_kernel`].
                pub unsafe fn $name(samples: *const $f, len: u64, lower_bits: u64, upper_bits: u64, bins: u32, layout: u32, histogram: *mut u64, ignored: *mut u64) {
                    let lower = <$f>::from_bits(lower_bits as _);
                    let upper = <$f>::from_bits(upper_bits as _);
                    // SAFETY: as above; the host checked bins >= 1 and lower < upper.
                    unsafe {
                        histogram::histogram_kernel::<$f, EvenBins<$f>, u32, Count, { 16 / size_of::<$f>() }>(
                            samples, len, EvenBins::<$f>::new(lower, upper, bins), bins, Count, layout, histogram, ignored,
                        )
                    }
                }
            }
        )*
    };
}

even_entry_points! {
    primitives_histogram_even_f32: f32;
    primitives_histogram_even_f64: f64;
}

macro_rules! multi_entry_points {
    ($($name:ident: $b:ty, $g:ty;)*) => {
        $(
            kernel! {
                /// Multi-feature histogram keyed by (node, feature, bin); see
                /// [`histogram::multi_feature_kernel`].
                pub unsafe fn $name(bins: *const $b, matrix_rows: u64, features: u32, bins_per_feature: u32, gradients: *const $g, rows: *const u32, work: *const MultiWork, node_ranges: *const [u32; 2], group_features: u32, layout: u32, histogram: *mut $g, bad_row: *mut u32) {
                    let bins = histogram::DenseRows { bins, features: features as usize };
                    // SAFETY: as above.
                    unsafe {
                        histogram::multi_feature_kernel::<_, $g>(
                            bins, matrix_rows, features, bins_per_feature, gradients, rows, work, node_ranges, group_features, layout, histogram, bad_row,
                        )
                    }
                }
            }
        )*
    };
}

macro_rules! packed_entry_points {
    ($($name:ident: $g:ty;)*) => {
        $(
            kernel! {
                /// Multi-feature histogram of bit-packed rows keyed by (node, feature, bin); see
                /// [`histogram::multi_feature_kernel`] and [`histogram::PackedRows`].
                pub unsafe fn $name(words: *const u32, row_words: u64, bits: u32, matrix_rows: u64, features: u32, bins_per_feature: u32, gradients: *const $g, rows: *const u32, work: *const MultiWork, node_ranges: *const [u32; 2], group_features: u32, layout: u32, histogram: *mut $g, bad_row: *mut u32) {
                    let bins = histogram::PackedRows { words, row_words: row_words as usize, bits };
                    // SAFETY: as above.
                    unsafe {
                        histogram::multi_feature_kernel::<_, $g>(
                            bins, matrix_rows, features, bins_per_feature, gradients, rows, work, node_ranges, group_features, layout, histogram, bad_row,
                        )
                    }
                }
            }
        )*
    };
}

macro_rules! global_entry_points {
    ($($name:ident: $b:ty, $g:ty;)*) => {
        $(
            kernel! {
                /// Multi-feature histogram in the global layout (no padding); see
                /// [`histogram::multi_feature_global_kernel`].
                pub unsafe fn $name(bins: *const $b, matrix_rows: u64, features: u32, gradients: *const $g, rows: *const u32, work: *const MultiWork, node_ranges: *const [u32; 2], feature_offsets: *const u32, groups: *const FeatureGroup, node_stride: u64, layout: u32, histogram: *mut $g, bad_row: *mut u32) {
                    let bins = histogram::DenseRows { bins, features: features as usize };
                    let global = (feature_offsets, groups, node_stride);
                    // SAFETY: as above.
                    unsafe {
                        histogram::multi_feature_global_kernel::<_, $g>(
                            bins, matrix_rows, gradients, rows, work, node_ranges, global, layout, histogram, bad_row,
                        )
                    }
                }
            }
        )*
    };
}

macro_rules! global_packed_entry_points {
    ($($name:ident: $g:ty;)*) => {
        $(
            kernel! {
                /// Multi-feature histogram of bit-packed rows in the global layout; see
                /// [`histogram::multi_feature_global_kernel`] and [`histogram::PackedRows`].
                pub unsafe fn $name(words: *const u32, row_words: u64, bits: u32, matrix_rows: u64, gradients: *const $g, rows: *const u32, work: *const MultiWork, node_ranges: *const [u32; 2], feature_offsets: *const u32, groups: *const FeatureGroup, node_stride: u64, layout: u32, histogram: *mut $g, bad_row: *mut u32) {
                    let bins = histogram::PackedRows { words, row_words: row_words as usize, bits };
                    let global = (feature_offsets, groups, node_stride);
                    // SAFETY: as above.
                    unsafe {
                        histogram::multi_feature_global_kernel::<_, $g>(
                            bins, matrix_rows, gradients, rows, work, node_ranges, global, layout, histogram, bad_row,
                        )
                    }
                }
            }
        )*
    };
}

global_packed_entry_points! {
    primitives_histogram_global_gpi64_packed: GradientPair<i64>;
    primitives_histogram_global_gpf32_packed: GradientPair<f32>;
    primitives_histogram_global_gpf64_packed: GradientPair<f64>;
}

global_entry_points! {
    primitives_histogram_global_gpi64_u8: u8, GradientPair<i64>;
    primitives_histogram_global_gpi64_u16: u16, GradientPair<i64>;
    primitives_histogram_global_gpi64_u32: u32, GradientPair<i64>;
    primitives_histogram_global_gpf32_u8: u8, GradientPair<f32>;
    primitives_histogram_global_gpf32_u16: u16, GradientPair<f32>;
    primitives_histogram_global_gpf32_u32: u32, GradientPair<f32>;
    primitives_histogram_global_gpf64_u8: u8, GradientPair<f64>;
    primitives_histogram_global_gpf64_u16: u16, GradientPair<f64>;
    primitives_histogram_global_gpf64_u32: u32, GradientPair<f64>;
}

packed_entry_points! {
    primitives_histogram_multi_gpi64_packed: GradientPair<i64>;
    primitives_histogram_multi_gpf32_packed: GradientPair<f32>;
    primitives_histogram_multi_gpf64_packed: GradientPair<f64>;
}

multi_entry_points! {
    primitives_histogram_multi_gpi64_u8: u8, GradientPair<i64>;
    primitives_histogram_multi_gpi64_u16: u16, GradientPair<i64>;
    primitives_histogram_multi_gpi64_u32: u32, GradientPair<i64>;
    primitives_histogram_multi_gpf32_u8: u8, GradientPair<f32>;
    primitives_histogram_multi_gpf32_u16: u16, GradientPair<f32>;
    primitives_histogram_multi_gpf32_u32: u32, GradientPair<f32>;
    primitives_histogram_multi_gpf64_u8: u8, GradientPair<f64>;
    primitives_histogram_multi_gpf64_u16: u16, GradientPair<f64>;
    primitives_histogram_multi_gpf64_u32: u32, GradientPair<f64>;
}

/// The host version of a histogram entry point, by its PTX name, for the emulator.
#[cfg(not(target_arch = "nvptx64"))]
pub(super) fn host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
    macro_rules! table {
        ($($name:ident),* $(,)?) => {
            match name {
                $(stringify!($name) => Some($name::raw as unsafe fn(&[u64])),)*
                _ => None,
            }
        };
    }
    table!(
        primitives_histogram_count_u8,
        primitives_histogram_count_u16,
        primitives_histogram_count_u32,
        primitives_histogram_weighted_f32_u8,
        primitives_histogram_weighted_f32_u16,
        primitives_histogram_weighted_f32_u32,
        primitives_histogram_weighted_f64_u8,
        primitives_histogram_weighted_f64_u16,
        primitives_histogram_weighted_f64_u32,
        primitives_histogram_weighted_gpi64_u8,
        primitives_histogram_weighted_gpi64_u16,
        primitives_histogram_weighted_gpi64_u32,
        primitives_histogram_even_f32,
        primitives_histogram_even_f64,
        primitives_histogram_global_gpi64_u8,
        primitives_histogram_global_gpi64_u16,
        primitives_histogram_global_gpi64_u32,
        primitives_histogram_global_gpf32_u8,
        primitives_histogram_global_gpf32_u16,
        primitives_histogram_global_gpf32_u32,
        primitives_histogram_global_gpf64_u8,
        primitives_histogram_global_gpf64_u16,
        primitives_histogram_global_gpf64_u32,
        primitives_histogram_global_gpi64_packed,
        primitives_histogram_global_gpf32_packed,
        primitives_histogram_global_gpf64_packed,
        primitives_histogram_multi_gpi64_u8,
        primitives_histogram_multi_gpi64_u16,
        primitives_histogram_multi_gpi64_u32,
        primitives_histogram_multi_gpf32_u8,
        primitives_histogram_multi_gpf32_u16,
        primitives_histogram_multi_gpf32_u32,
        primitives_histogram_multi_gpf64_u8,
        primitives_histogram_multi_gpf64_u16,
        primitives_histogram_multi_gpf64_u32,
        primitives_histogram_multi_gpi64_packed,
        primitives_histogram_multi_gpf32_packed,
        primitives_histogram_multi_gpf64_packed,
    )
}
