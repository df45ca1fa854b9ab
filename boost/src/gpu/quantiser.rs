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
        let counts = std::ptr::null_mut();
        let args = entry::boost_quantise_sums::args(ptr(gradients), n as u64, block_sums.as_mut_ptr(), counts);
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

/// A tree's rows with a gradient ([`boost_kernels::fixed_point::is_kept`]) on the device, compacted
/// in row order: [`GpuTrainer::quantise_kept`].
pub(super) struct KeptRows {
    /// The quantiser of all rows' gradients.
    pub(super) quantiser: GradientQuantiser,
    /// The kept rows, increasing.
    pub(super) rows: DeviceBuffer<u32>,
    /// Their gradients in fixed point.
    pub(super) fixed: DeviceBuffer<Fixed>,
    /// The sum of `fixed`: the root's.
    pub(super) root: Fixed,
}

impl<'g> GpuTrainer<'g> {
    /// The quantiser of the `n` gradients at `gradients` (the one [`GpuTrainer::quantise_on_device`]
    /// makes) and the rows whose gradient is kept, with their gradients in fixed point: what the
    /// host's [`crate::fixed_point::quantiser_and_kept_rows`] and `to_fixed` give. Waits twice: for
    /// the block sums and counts, and for the block totals.
    ///
    /// # Safety
    /// As [`GpuTrainer::quantise_on_device`]'s.
    pub(super) unsafe fn quantise_kept(&mut self, gradients: u64, n: usize) -> Result<KeptRows> {
        let (gpu, blocks) = (self.gpu, reduce::blocks(n));
        let config = warp_per_block_config(blocks)?;
        let scratch = &mut self.quantise_scratch;
        let (block_sums, counts) = (scratch.sums.at_least(gpu, blocks)?, scratch.counts.at_least(gpu, blocks)?);
        let args =
            entry::boost_quantise_sums::args(ptr(gradients), n as u64, block_sums.as_mut_ptr(), counts.as_mut_ptr());
        // SAFETY: `n` gradients, a sum and a count per block; the grid is whole warps, one per block.
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        let sums = block_sums.range_to_vec(gpu, 0..blocks)?.into_iter().fold(QuantiserSums::zero(), BlockSum::plus);
        let quantiser = GradientQuantiser::from_sums(sums.positive, sums.negative, n);
        let mut offsets = counts.range_to_vec(gpu, 0..blocks)?;
        let mut kept = 0u32;
        for offset in &mut offsets {
            (*offset, kept) = (kept, kept + *offset);
        }
        let offsets = scratch.offsets.upload(gpu, &offsets)?.as_ptr();
        let quantiser_buffer = scratch.quantiser.upload(gpu, std::slice::from_ref(&quantiser))?.as_ptr();
        let (rows, fixed) = (gpu.alloc_uninitialized::<u32>(kept as usize)?, gpu.alloc_uninitialized(kept as usize)?);
        let block_totals = scratch.totals.at_least(gpu, blocks)?;
        let args = entry::boost_quantise_kept::args(
            ptr(gradients),
            n as u64,
            quantiser_buffer,
            offsets,
            rows.as_mut_ptr(),
            fixed.as_mut_ptr(),
            block_totals.as_mut_ptr(),
        );
        // SAFETY: `n` gradients, an offset and a total per block, the offsets the counts' exclusive
        // sums, a row and a fixed-point slot per kept row; whole warps.
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        let root = block_totals.range_to_vec(gpu, 0..blocks)?.into_iter().fold(Fixed::zero(), BlockSum::plus);
        Ok(KeptRows { quantiser, rows, fixed, root })
    }
}

/// The quantiser's device scratch, kept for the training run: each tree's block sums, quantiser and
/// fixed-point gradients reuse the last tree's buffers (no allocation or memset a tree).
#[derive(Default)]
pub(super) struct QuantiseScratch {
    pub(super) sums: Kept<QuantiserSums>,
    pub(super) quantiser: Kept<GradientQuantiser>,
    pub(super) totals: Kept<Fixed>,
    /// Each block's count of kept rows, and where its kept rows start.
    pub(super) counts: Kept<u32>,
    pub(super) offsets: Kept<u32>,
    pub(super) fixed: Option<DeviceBuffer<Fixed>>,
}
