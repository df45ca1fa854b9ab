//! The `data` family: synthetic rows made on the device (the benchmarks' data).

use primitives_kernels::kernel;

use crate::synthetic::{self, SyntheticRows};

kernel! {
    /// Synthetic rows `first..first + n`; see [`synthetic::rows_kernel`].
    pub unsafe fn boost_synthetic_rows(spec: *const SyntheticRows, first: u64, n: u64, values: *mut f32, labels: *mut f32) {
        // SAFETY: the host launcher sizes every buffer as the kernel's contract requires.
        unsafe { synthetic::rows_kernel(spec, first, n, values, labels) }
    }
}

host_kernels! {
    boost_synthetic_rows,
}
