//! Leaf values recomputed on the device after a tree is built (`reg:absoluteerror`), with the CPU
//! backend's arithmetic (`boost_kernels::adaptive`): a sort key per position of the row order, our
//! segmented radix sort over the leaves' ranges, and a thread per leaf for its quantile.

use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, DeviceSegmentedSort, Gpu, SortOrder};

use boost_kernels::adaptive::KEY_BITS;
use boost_kernels::entry;
use boost_kernels::objective::LeafRange;

use super::{element_config, Kept};
use crate::Result;

/// The refresh's device buffers, made at the first tree that needs them.
#[derive(Default)]
pub(super) struct AdaptiveScratch {
    rows: Option<RowScratch>,
    quantiles: Kept<f32>,
}

/// A value a row: exactly as many as rows, since the sort takes whole buffers.
struct RowScratch {
    keys: DeviceBuffer<u64>,
    sorted_keys: DeviceBuffer<u64>,
    sorted_rows: DeviceBuffer<u32>,
}

/// What the residuals are made of: the rows' labels, weights (null: none) and margins
/// (`outputs` a row, the tree's is `output`), and the gradients the tree was grown from.
pub(super) struct ResidualInputs {
    pub labels: *const f32,
    pub weights: *const f32,
    pub margins: *const f32,
    pub outputs: usize,
    pub output: usize,
    pub gradients: *const GradientPair<f32>,
}

/// Each leaf's `alpha`-quantile of its rows' residuals, in the order of `leaves` (sorted by `begin`,
/// covering `0..rows.len()` of the row order `rows`); NaN for a leaf without rows that take part.
pub(super) fn leaf_quantiles(
    gpu: &Gpu,
    scratch: &mut AdaptiveScratch,
    rows: &DeviceBuffer<u32>,
    leaves: &[LeafRange],
    inputs: &ResidualInputs,
    alpha: f64,
) -> Result<Vec<f32>> {
    let n = rows.len();
    if n == 0 {
        return Ok(vec![f32::NAN; leaves.len()]);
    }
    if scratch.rows.as_ref().is_none_or(|s| s.keys.len() != n) {
        scratch.rows = Some(RowScratch {
            keys: gpu.alloc_uninitialized(n)?,
            sorted_keys: gpu.alloc_uninitialized(n)?,
            sorted_rows: gpu.alloc_uninitialized(n)?,
        });
    }
    let RowScratch { keys, sorted_keys, sorted_rows } = scratch.rows.as_mut().expect("made above");
    let args = entry::boost_objective_residual_keys::args(
        rows.as_ptr(),
        n as u64,
        inputs.labels,
        inputs.margins,
        inputs.outputs as u64,
        inputs.output as u64,
        inputs.gradients,
        keys.as_mut_ptr(),
    );
    // SAFETY: the row order and the keys hold `n` values; every row is below the labels', margins'
    // and gradients' row counts.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };

    let offsets: Vec<u32> = leaves.iter().map(|leaf| leaf.begin).chain([n as u32]).collect();
    let offsets = gpu.upload(&offsets)?;
    // Stable: equal residuals keep the row order's order, which the CPU backend's leaves list too.
    DeviceSegmentedSort::sort_pairs(
        gpu,
        keys,
        sorted_keys,
        rows,
        sorted_rows,
        &offsets,
        SortOrder::ascending().bits(0, KEY_BITS),
    )?;

    let quantiles = scratch.quantiles.at_least(gpu, leaves.len())?;
    let args = entry::boost_objective_leaf_quantiles::args(
        sorted_keys.as_ptr(),
        sorted_rows.as_ptr(),
        offsets.as_ptr(),
        leaves.len() as u64,
        inputs.labels,
        inputs.margins,
        inputs.outputs as u64,
        inputs.output as u64,
        inputs.weights,
        alpha.to_bits(),
        quantiles.as_mut_ptr(),
    );
    // SAFETY: the offsets are `leaves + 1` non-decreasing positions up to `n`; the sorted rows are the
    // row order's; `quantiles` holds a value a leaf.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(leaves.len())?, args)? };
    let mut values = quantiles.to_vec(gpu)?;
    values.truncate(leaves.len());
    Ok(values)
}
