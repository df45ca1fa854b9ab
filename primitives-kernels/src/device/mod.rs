//! One thread block's share of the device-wide algorithms (CUB's agent layer). The host crate
//! `primitives` chooses the grid, allocates temporary storage and launches the kernels.

pub mod histogram;
pub mod histogram_experiment;
pub mod multi;
pub mod radix_sort;
pub mod reduce;
pub mod scan;
pub mod segmented_reduce;
pub mod segmented_scan;
pub mod select;
pub mod tile_status;
