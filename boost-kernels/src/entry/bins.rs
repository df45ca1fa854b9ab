//! The `bins` family: the training features quantised on the device (packed bins of dense or CSR rows).

use primitives_kernels::kernel;

use crate::bins::{self, Cuts, PackedShape};

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

host_kernels! {
    boost_bins_dense,
    boost_bins_csr,
}
