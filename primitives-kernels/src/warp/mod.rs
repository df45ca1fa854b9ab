//! Warp-level cooperative algorithms: every lane named by the algorithm's mask calls them together.

mod reduce;

pub use reduce::{warp_all_reduce, warp_reduce, warp_reduce_partial};
