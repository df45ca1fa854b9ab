//! Gradient-based sampling on the device ([`boost_kernels::mvs`]): the largest magnitude, the
//! threshold's three histogram passes (a few kilobytes read back each), then every row's pair
//! sampled in one kernel. The host's choice of the threshold from the bins is the CPU backend's
//! ([`crate::sample::gradient_sampler`]), so both keep the same rows.

use boost_kernels::entry;
use boost_kernels::mvs::{GradientSampler, MvsBin, MvsPass, BINS};
use primitives::kernels::KernelArgs;
use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, Gpu, LaunchConfig};

use super::{element_config, ptr, ELEMENT_THREADS};
use crate::Result;

/// Blocks of the kernels that walk the rows a grid apart: enough to fill a large GPU, few enough
/// that each block's flush of its bins is small against its rows.
const MAX_BLOCKS: usize = 1024;

fn grid_config(rows: usize, shared_mem_bytes: u32) -> LaunchConfig {
    let blocks = rows.div_ceil(8 * ELEMENT_THREADS as usize).clamp(1, MAX_BLOCKS);
    LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (ELEMENT_THREADS, 1, 1), shared_mem_bytes }
}

fn launch(gpu: &Gpu, config: LaunchConfig, args: KernelArgs) -> Result<()> {
    // SAFETY: each caller sizes the buffers as its kernel's contract requires.
    unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
    Ok(())
}

/// The largest regularised magnitude of the `rows` pairs at `gradients` (a device address).
pub(super) fn magnitude_max(gpu: &Gpu, gradients: u64, rows: usize) -> Result<f32> {
    let max = gpu.alloc_zeroed::<u32>(1)?;
    add_magnitude_max(gpu, gradients, rows, &max)?;
    Ok(f32::from_bits(max.to_vec(gpu)?[0]))
}

/// [`magnitude_max`] into `max` (a float's bits), which keeps the larger of it and its value: the
/// largest over several calls (no wait).
pub(super) fn add_magnitude_max(gpu: &Gpu, gradients: u64, rows: usize, max: &DeviceBuffer<u32>) -> Result<()> {
    let args = entry::boost_sample_mvs_max::args(ptr(gradients), rows as u64, max.as_mut_ptr());
    launch(gpu, grid_config(rows, 0), args)
}

/// `pass`'s bins of the `rows` pairs at `gradients`.
pub(super) fn magnitude_histogram(gpu: &Gpu, gradients: u64, rows: usize, pass: &MvsPass) -> Result<Vec<MvsBin>> {
    let bins = gpu.alloc_zeroed::<MvsBin>(pass.bins())?;
    let on_device = gpu.upload(std::slice::from_ref(pass))?;
    add_magnitude_histogram(gpu, gradients, rows, (&on_device, pass), &bins)?;
    Ok(bins.to_vec(gpu)?)
}

/// [`magnitude_histogram`] added into `bins` (`pass`, with its copy on the device): a histogram over
/// several calls (no wait).
pub(super) fn add_magnitude_histogram(
    gpu: &Gpu,
    gradients: u64,
    rows: usize,
    (on_device, pass): (&DeviceBuffer<MvsPass>, &MvsPass),
    bins: &DeviceBuffer<MvsBin>,
) -> Result<()> {
    debug_assert!(pass.bins() <= BINS && bins.len() >= pass.bins());
    let shared = (pass.bins() * std::mem::size_of::<MvsBin>()) as u32;
    let args =
        entry::boost_sample_mvs_histogram::args(ptr(gradients), rows as u64, on_device.as_ptr(), bins.as_mut_ptr());
    launch(gpu, grid_config(rows, shared), args)
}

/// The `rows` pairs at `gradients` sampled by `sampler` into `out` (which may be `gradients`).
pub(super) fn apply(
    gpu: &Gpu,
    gradients: u64,
    rows: usize,
    sampler: &GradientSampler,
    out: *mut GradientPair<f32>,
) -> Result<()> {
    let args = entry::boost_sample_mvs_apply::args(ptr(gradients), sampler.key, sampler.threshold, rows as u64, out);
    launch(gpu, element_config(rows)?, args)
}
