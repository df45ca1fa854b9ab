//! The gradient quantiser on the device: the blocked sums the host's [`GradientQuantiser::new`]
//! reads, then the gradients in fixed point and their total; the same integers as the CPU's.

use primitives::ops::GradientPair;
use primitives::DeviceBuffer;

use boost_kernels::entry;
use boost_kernels::fixed_point::QuantiserSums;
use boost_kernels::reduce::{self, BlockSum};

use super::trainer::GpuTrainer;
use super::{ptr, warp_per_block_config, Fixed, Kept};
use crate::fixed_point::GradientQuantiser;
use crate::Result;

impl<'g> GpuTrainer<'g> {
    /// The quantiser of `gradients` (the one [`GradientQuantiser::new`] makes on the host, from the
    /// same blocked sums), with the gradients in fixed point on the device and their sum. Waits twice:
    /// for the block sums and for the block totals.
    pub fn quantise(
        &mut self,
        gradients: &[GradientPair<f32>],
    ) -> Result<(GradientQuantiser, DeviceBuffer<Fixed>, Fixed)> {
        let device_gradients = self.gpu.upload(gradients)?;
        // SAFETY: the buffer holds `gradients.len()` pairs.
        unsafe { self.quantise_on_device(device_gradients.device_ptr(), gradients.len()) }
    }

    /// [`GpuTrainer::quantise`] of the `n` gradients already on the device at `gradients`.
    ///
    /// # Safety
    /// `gradients` is the device address of `n` gradient pairs that outlive the call.
    pub(super) unsafe fn quantise_on_device(
        &mut self,
        gradients: u64,
        n: usize,
    ) -> Result<(GradientQuantiser, DeviceBuffer<Fixed>, Fixed)> {
        // SAFETY: forwarded.
        let sums = unsafe { self.quantiser_block_sums(gradients, n)? };
        let sums = sums.into_iter().fold(QuantiserSums::zero(), BlockSum::plus);
        let quantiser = GradientQuantiser::from_sums(sums.positive, sums.negative, n);
        // SAFETY: forwarded.
        let (fixed, root) = unsafe { self.quantise_fixed(gradients, n, &quantiser)? };
        Ok((quantiser, fixed, root))
    }

    /// The quantiser's sums of each block of [`boost_kernels::reduce::SUM_BLOCK`] of the `n`
    /// gradients at `gradients`, read back (one wait): the host adds them in order.
    ///
    /// # Safety
    /// As [`GpuTrainer::quantise_on_device`]'s.
    pub(super) unsafe fn quantiser_block_sums(&mut self, gradients: u64, n: usize) -> Result<Vec<QuantiserSums>> {
        let blocks = reduce::blocks(n);
        let config = warp_per_block_config(blocks)?;
        let block_sums = self.quantise_scratch.sums.at_least(self.gpu, blocks)?;
        let args = entry::boost_quantise_sums::args(ptr(gradients), n as u64, block_sums.as_mut_ptr());
        // SAFETY: `n` gradients, a sum per block; the grid is whole warps, one per block.
        unsafe { self.gpu.launch_kernel(crate::KERNELS, config, args)? };
        Ok(block_sums.range_to_vec(self.gpu, 0..blocks)?)
    }

    /// The `n` gradients at `gradients` in fixed point by `quantiser`, and their sum (one wait).
    ///
    /// # Safety
    /// As [`GpuTrainer::quantise_on_device`]'s.
    pub(super) unsafe fn quantise_fixed(
        &mut self,
        gradients: u64,
        n: usize,
        quantiser: &GradientQuantiser,
    ) -> Result<(DeviceBuffer<Fixed>, Fixed)> {
        let blocks = reduce::blocks(n);
        let config = warp_per_block_config(blocks)?;
        let scratch = &mut self.quantise_scratch;
        let quantiser_buffer = scratch.quantiser.upload(self.gpu, std::slice::from_ref(quantiser))?.as_ptr();
        // The fixed-point gradients of the last tree, when their buffer has the length (the kernel
        // writes every element).
        let fixed = match scratch.fixed.take() {
            Some(fixed) if fixed.len() == n => fixed,
            _ => self.gpu.alloc_zeroed::<Fixed>(n)?,
        };
        let block_totals = scratch.totals.at_least(self.gpu, blocks)?;
        let args = entry::boost_quantise_fixed::args(
            ptr(gradients),
            n as u64,
            quantiser_buffer,
            fixed.as_mut_ptr(),
            block_totals.as_mut_ptr(),
        );
        // SAFETY: `n` gradients and fixed-point slots, one quantiser, a total per block; whole warps.
        unsafe { self.gpu.launch_kernel(crate::KERNELS, config, args)? };
        let root = block_totals.range_to_vec(self.gpu, 0..blocks)?.into_iter().fold(Fixed::zero(), BlockSum::plus);
        Ok((fixed, root))
    }
}

/// The quantiser's device scratch, kept for the training run: each tree's block sums, quantiser and
/// fixed-point gradients reuse the last tree's buffers (no allocation or memset a tree).
#[derive(Default)]
pub(super) struct QuantiseScratch {
    pub(super) sums: Kept<QuantiserSums>,
    pub(super) quantiser: Kept<GradientQuantiser>,
    pub(super) totals: Kept<Fixed>,
    pub(super) fixed: Option<DeviceBuffer<Fixed>>,
}
