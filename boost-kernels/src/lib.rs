//! Device code of the `boost` gradient-boosting library, and the arithmetic that decides a tree,
//! written once for the CPU backend and the kernels (`no_std`): [`fixed_point`] (the gradient
//! quantiser: exact, order-independent sums) and [`split`] (gains, leaf weights, the scan over a
//! feature's bins in both missing directions, tie-breaking). The CPU backend in `boost` calls these
//! functions; the GPU backend's kernels, compiled from this crate to PTX, will call the same ones,
//! so that both choose the same splits by construction.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx), allow(unused_features))]

pub mod fixed_point;
pub mod split;

#[cfg(all(target_arch = "nvptx64", feature = "entry-points"))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    primitives_kernels::arch::trap()
}
