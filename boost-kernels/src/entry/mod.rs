//! `boost`'s kernel entry points, a file a family (the PTX modules `cargo xtask kernels` writes,
//! each loaded on its first launch), with stable names `boost_<family>_...`. `kernel!` gives each
//! its typed host `args(...)`, which `boost` launches with, and its host version, which the
//! emulated device runs ([`host_kernel`](fn@crate::entry::host_kernel)).

/// The family's part of [`host_kernel`](fn@crate::entry::host_kernel): each named kernel's host version.
macro_rules! host_kernels {
    ($($name:ident,)*) => {
        /// The host version of this family's kernel `name`.
        #[cfg(not(target_arch = "nvptx64"))]
        pub(super) fn host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
            match name {
                $(stringify!($name) => Some($name::raw),)*
                _ => None,
            }
        }
    };
}

mod bins;
mod data;
mod exact;
mod histogram;
mod objective;
mod partition;
mod predict;
mod quantise;
mod shap;
mod sketch;
mod split;

pub use self::bins::*;
pub use self::data::*;
pub use self::exact::*;
pub use self::histogram::*;
pub use self::objective::*;
pub use self::partition::*;
pub use self::predict::*;
pub use self::quantise::*;
pub use self::shap::*;
pub use self::sketch::*;
pub use self::split::*;

/// The host version of a kernel by name (the emulated device runs these).
#[cfg(not(target_arch = "nvptx64"))]
pub fn host_kernel(name: &str) -> Option<unsafe fn(&[u64])> {
    [
        split::host_kernel,
        exact::host_kernel,
        partition::host_kernel,
        histogram::host_kernel,
        quantise::host_kernel,
        objective::host_kernel,
        predict::host_kernel,
        bins::host_kernel,
        sketch::host_kernel,
        shap::host_kernel,
        data::host_kernel,
    ]
    .iter()
    .find_map(|family| family(name))
}
