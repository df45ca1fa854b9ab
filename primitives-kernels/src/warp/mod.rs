//! Warp-level cooperative algorithms: every lane named by the algorithm's mask calls them together.

mod multi;
mod reduce;
mod scan;
pub mod transpose;

pub use multi::{warp_multireduce, warp_multiscan};
pub use reduce::{warp_all_reduce, warp_reduce, warp_reduce_partial};
pub use scan::{warp_exclusive_scan, warp_exclusive_scan_partial, warp_inclusive_scan, warp_inclusive_scan_partial};
pub use transpose::WarpTranspose;
