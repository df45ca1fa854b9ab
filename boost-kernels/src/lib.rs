//! Device code of the `boost` gradient-boosting library: gradient-pair histograms, row partition,
//! split evaluation and prediction kernels, composed from the warp, block and device algorithms of
//! `primitives-kernels`.
//!
//! Nothing is here yet: the crate is the compiling skeleton that `cargo xtask kernels` already builds
//! to PTX (an empty module) and that `boost` already embeds, so that adding the first kernel changes
//! no plumbing.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx), allow(unused_features))]

#[cfg(all(target_arch = "nvptx64", feature = "entry-points"))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    primitives_kernels::arch::trap()
}
