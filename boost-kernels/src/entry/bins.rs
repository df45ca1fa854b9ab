//! The `bins` family: the training features quantised on the device (packed bins of dense or CSR
//! rows, or of rows gathered from external-memory pages, ELLPACK or packed).

use primitives_kernels::kernel;

use crate::bins::{self, Cuts, PackedShape};
use crate::ellpack::{self, EllpackPage, EllpackShape};

kernel! {
    /// The packed bins of dense row-major features; see [`bins::dense_kernel`].
    pub unsafe fn boost_bins_dense(
        values: *const f32,
        rows: u64,
        features: u64,
        bits: u64,
        row_words: u64,
        cut_ptrs: *const u32,
        cut_values: *const f32,
        out: *mut u32,
    ) {
        let (cuts, shape) = (Cuts { cut_ptrs, cut_values }, PackedShape { features, bits: bits as u32, row_words });
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { bins::dense_kernel(values, rows, shape, cuts, out) }
    }
}

kernel! {
    /// The packed bins of CSR rows; see [`bins::csr_kernel`].
    pub unsafe fn boost_bins_csr(
        row_ptr: *const u64,
        col_indices: *const u32,
        values: *const f32,
        rows: u64,
        features: u64,
        bits: u64,
        row_words: u64,
        cut_ptrs: *const u32,
        cut_values: *const f32,
        out: *mut u32,
    ) {
        let (cuts, shape) = (Cuts { cut_ptrs, cut_values }, PackedShape { features, bits: bits as u32, row_words });
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { bins::csr_kernel(row_ptr, col_indices, values, rows, shape, cuts, out) }
    }
}

kernel! {
    /// The packed bins of chosen rows of an ELLPACK page; see [`ellpack::gather_kernel`].
    pub unsafe fn boost_bins_ellpack(
        words: *const u64,
        page_rows: u64,
        row_stride: u64,
        symbol_bits: u64,
        dense: u64,
        cut_ptrs: *const u32,
        first: u64,
        rows: *const u32,
        count: u64,
        features: u64,
        bits: u64,
        row_words: u64,
        out: *mut u32,
    ) {
        let shape = EllpackShape { row_stride: row_stride as usize, symbol_bits: symbol_bits as u32, is_dense: dense != 0 };
        let page = EllpackPage { words, rows: page_rows, shape, cut_ptrs, features: features as u32 };
        let packed = PackedShape { features, bits: bits as u32, row_words };
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { ellpack::gather_kernel(page, first, rows, count, packed, out) }
    }
}

kernel! {
    /// Chosen rows of packed rows, in order; see [`bins::gather_rows_kernel`].
    pub unsafe fn boost_bins_gather_packed(words: *const u32, row_words: u64, first: u64, rows: *const u32, count: u64, out: *mut u32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { bins::gather_rows_kernel(words, row_words, first, rows, count, out) }
    }
}

host_kernels! {
    boost_bins_dense,
    boost_bins_csr,
    boost_bins_ellpack,
    boost_bins_gather_packed,
}
