//! CPU oracles: the same function shapes as the device algorithms, on slices. Tests compare the GPU
//! against these; they are also a plain CPU implementation for small inputs.

mod histogram;
mod multi;
mod reduce;
mod scan;
mod segmented;
mod select;
mod sort;

pub use histogram::{histogram_count, histogram_even, histogram_weighted, multi_feature_histogram, EvenBinning};
pub use multi::{multireduce, multiscan};
pub use reduce::{compensated_sum, pairwise_error_bound, reduce, PAIRWISE_LEAF};
pub use scan::{exclusive_scan, inclusive_scan, key_heads, offset_heads, segmented_scan};
pub use segmented::{segmented_reduce, segmented_reduce_by_flags};
pub use select::{partition, run_length_encode, select_flagged, select_if};
pub use sort::{segmented_sort_keys, segmented_sort_pairs, sort_keys, sort_pairs};
