//! Device code of the `primitives` library: warp-, block- and device-level algorithms written in
//! `no_std` Rust and compiled to PTX by rustc's `nvptx64-nvidia-cuda` target.
//!
//! The crate is layered like CUB:
//!
//! * [`arch`]: every device intrinsic (special registers, barriers, warp shuffles and votes, dynamic
//!   shared memory, scoped atomics, acquire/release accesses, fences, vector loads). Nothing else in the
//!   crate writes inline assembly, which is the seam that lets the same algorithms run on the CPU.
//! * [`ops`]: the [`ops::Element`] bound and the [`ops::AssociativeOp`] trait with the provided
//!   [`ops::Sum`], [`ops::Min`] and [`ops::Max`] operators.
//! * [`warp`], [`block`]: cooperative algorithms called by every thread of a warp or block.
//! * [`device`]: one thread block's share of a device-wide algorithm (CUB's "agent" layer); the host
//!   crate `primitives` launches the grid.
//! * `entry`: the `#[no_mangle]` kernel entry points, instantiated per (type, operator) by a macro,
//!   compiled only with the `entry-points` feature.
//!
//! The crate builds on the host with stable Rust (so that its pure-Rust parts can be tested and the
//! host crate can share its operator types) and for `nvptx64-nvidia-cuda` with `cargo xtask kernels`.
//!
//! # Using the primitives in your own kernel crate
//!
//! A kernel crate of yours depends on `primitives-kernels` (without the `entry-points` feature) and
//! instantiates any algorithm for its own [`bytemuck::Pod`] type and operator. Here a block-wide
//! arg-min over `(value, index)` pairs:
//!
//! ```
//! # #![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
//! use bytemuck::{Pod, Zeroable};
//! use primitives_kernels::{arch, block, kernel, ops::AssociativeOp};
//!
//! #[derive(Clone, Copy, Pod, Zeroable)]
//! #[repr(C)]
//! pub struct ValueIndex {
//!     value: f32,
//!     index: u32,
//! }
//!
//! /// Smallest value; on ties the smaller index, so the result does not depend on the order.
//! #[derive(Clone, Copy, Default)]
//! pub struct ArgMin;
//!
//! impl AssociativeOp<ValueIndex> for ArgMin {
//!     fn identity() -> ValueIndex {
//!         ValueIndex { value: f32::INFINITY, index: u32::MAX }
//!     }
//!     fn combine(a: ValueIndex, b: ValueIndex) -> ValueIndex {
//!         if b.value < a.value || (b.value == a.value && b.index < a.index) { b } else { a }
//!     }
//! }
//!
//! kernel! {
//!     /// One block: the arg-min of `values[..n]`, written to `out[0]`. Launch with
//!     /// `block::BlockReduce::<ValueIndex>::SHARED_BYTES` bytes of dynamic shared memory.
//!     pub unsafe fn block_argmin(values: *const f32, n: u32, out: *mut ValueIndex) {
//!         let storage = unsafe { block::BlockReduce::<ValueIndex>::from_dynamic_shared() };
//!         let mut best = ArgMin::identity();
//!         let mut i = arch::thread_idx_x();
//!         while i < n {
//!             let item = ValueIndex { value: unsafe { arch::load(values.add(i as usize)) }, index: i };
//!             best = ArgMin::combine(best, item);
//!             i += arch::block_dim_x();
//!         }
//!         let total = storage.reduce::<ArgMin>(best);
//!         if arch::thread_idx_x() == 0 {
//!             unsafe { arch::store(out, total) };
//!         }
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! The `kernel!` macro emits an `extern "ptx-kernel"` `#[no_mangle]` entry point on the GPU target
//! (your crate needs `#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]`) and a plain function on
//! the host, which the SIMT emulator ([`emu`]) runs: that is how you unit-test the kernel without a
//! GPU. Memory is read and written through [`arch::load`] and [`arch::store`] so that the emulator
//! can check every access.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, asm_experimental_arch, stdarch_nvptx, link_llvm_intrinsics),
    // `link_llvm_intrinsics` gives `arch` the convergent NVVM intrinsics; `abi_ptx` is unused when a
    // dependent kernel crate builds us without our entry points.
    allow(internal_features, unused_features)
)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod arch;
pub mod block;
pub mod device;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
#[cfg(not(target_arch = "nvptx64"))]
pub mod launch;
pub mod ops;
pub mod radix_key;
pub mod thread;
pub mod warp;

#[cfg(feature = "entry-points")]
pub mod entry;

/// Declares a kernel entry point: `extern "ptx-kernel"` with a stable `#[no_mangle]` name on the GPU,
/// a plain `unsafe fn` of the same name on the host (run it inside [`emu::Emulator::launch`]), plus,
/// on the host, a module of the same name: `NAME::args(...)`, typed as the kernel's parameters,
/// makes a launch's [`launch::KernelArgs`] (the one place a launch names the kernel and its
/// arguments: the wrong count or types do not compile), and `NAME::raw(&[u64])` calls the host
/// version with arguments as a launch passes them (pointers and integers as 64-bit values).
#[macro_export]
macro_rules! kernel {
    ($(#[$attr:meta])* $vis:vis unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$attr])*
        #[cfg(target_arch = "nvptx64")]
        #[no_mangle]
        $vis unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body

        $(#[$attr])*
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(clippy::missing_safety_doc, clippy::too_many_arguments)]
        $vis unsafe fn $name($($arg: $ty),*) $body

        /// The host's side of the kernel of the same name: its typed launch arguments, and its host
        /// version called with a launch's words (the emulator).
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_snake_case, dead_code)]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;

            /// The kernel's name in the PTX.
            pub const NAME: &str = stringify!($name);

            /// A launch's arguments, typed as the kernel declares its parameters.
            #[allow(clippy::too_many_arguments)]
            pub fn args($($arg: $ty),*) -> $crate::launch::KernelArgs {
                $crate::launch::KernelArgs::new(NAME, &[$(<$ty as $crate::launch::KernelParam>::to_raw($arg)),*])
            }

            /// Calls the kernel with raw 64-bit arguments; panics when their number is wrong.
            ///
            /// # Safety
            /// The arguments must satisfy the kernel's contract.
            pub unsafe fn raw(args: &[u64]) {
                let names: &[&str] = &[$(stringify!($arg)),*];
                let expected = names.len();
                assert_eq!(args.len(), expected, "kernel {} takes {} arguments", stringify!($name), expected);
                #[allow(unused_mut, unused_variables)]
                let mut next = args.iter().copied();
                // SAFETY: forwarded to the caller.
                unsafe { super::$name($(<$ty as $crate::launch::KernelParam>::from_raw(next.next().unwrap_or_default())),*) }
            }
        }
    };
}

#[cfg(all(target_arch = "nvptx64", feature = "entry-points"))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    arch::trap()
}
