//! CPU oracles: the same function shapes as the device algorithms, on slices. Tests compare the GPU
//! against these; they are also a plain CPU implementation for small inputs.

mod multi;
mod reduce;
mod scan;
mod segmented;
mod select;

pub use multi::{multireduce, multiscan};
pub use reduce::{compensated_sum, pairwise_error_bound, reduce, PAIRWISE_LEAF};
pub use scan::{exclusive_scan, inclusive_scan, key_heads, offset_heads, segmented_scan};
pub use segmented::{segmented_reduce, segmented_reduce_by_flags};
pub use select::{partition, run_length_encode, select_flagged, select_if};
