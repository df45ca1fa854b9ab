//! The element-wise sum of several devices' histograms into one device's buffer, each part read
//! through its address (peer access over NVLink or PCIe): the multi-device trainer's sum without a
//! collective library's per-call host cost. Fixed-point sums wrap and add in any order, so the
//! result is the one-device histogram bit for bit.

use primitives_kernels::arch;
use primitives_kernels::ops::GradientPair;

use crate::evaluate::global_thread;
use crate::fixed_point;

type Fixed = GradientPair<i64>;

/// The most parts one launch adds (a device each: the machines have up to 8 GPUs).
pub const MAX_PARTS: usize = 8;

/// `sum[i] = parts[0][i] + ... + parts[count - 1][i]` for `i < len`, a thread an element.
///
/// # Safety
/// `count <= MAX_PARTS`; each of the first `count` parts holds `len` sums readable from this
/// device, `sum` room for `len`.
pub unsafe fn sum_parts_kernel(sum: *mut Fixed, len: u64, parts: [*const Fixed; MAX_PARTS], count: u64) {
    let i = global_thread();
    if i >= len {
        return;
    }
    let mut total = Fixed::new(0, 0);
    for part in &parts[..(count as usize).min(MAX_PARTS)] {
        // SAFETY: `i < len` within each of the first `count` parts (the contract).
        total = fixed_point::add(total, unsafe { arch::load(part.add(i as usize)) });
    }
    // SAFETY: `i < len`, room for `len` sums.
    unsafe { arch::store(sum.add(i as usize), total) };
}
