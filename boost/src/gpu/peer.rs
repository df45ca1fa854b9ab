//! The [`Communicator`] of CUDA devices that reach each other's memory (peer access, NVLink or
//! PCIe): the root device's kernel reads every part through its address and writes the sum
//! (`boost_kernels::device_sum`). Ordered without host waits: the root's stream waits for each
//! device's work so far (an event), and each device's later work waits for the sum.
//!
//! Why not only NCCL ([`super::Nccl`]): a grouped `ncclReduce` over four devices cost about
//! 0.14 ms of host time a call on H100s, nine calls a tree of depth 8; this costs a few driver
//! calls. The data are small (a level's histograms, at most a few tens of megabytes), so the
//! bandwidth of a collective's ring does not matter here.

use boost_kernels::device_sum::MAX_PARTS;
use boost_kernels::entry;
use primitives::{DeviceBuffer, Gpu};

use super::multi::{check_parts, Communicator};
use super::{element_config, ptr, Fixed};
use crate::{Error, Result};

/// Sums over devices through peer access (see the module).
#[derive(Debug)]
pub struct PeerSum {
    /// The devices' ordinals, in rank order: those that may read each other's memory.
    ordinals: Vec<usize>,
}

impl PeerSum {
    /// Grants every device of `gpus` access to every other's memory. An error when there are more
    /// than [`MAX_PARTS`] devices or a pair cannot reach each other (the caller then takes NCCL).
    pub fn new(gpus: &[&Gpu]) -> Result<Self> {
        if gpus.len() > MAX_PARTS {
            return Err(Error::Communication(format!(
                "peer sums take at most {MAX_PARTS} devices, not {}",
                gpus.len()
            )));
        }
        for (i, owner) in gpus.iter().enumerate() {
            for (j, reader) in gpus.iter().enumerate().filter(|&(j, _)| j != i) {
                owner
                    .grant_peer_access(reader)
                    .map_err(|e| Error::Communication(format!("device {j} reading device {i}'s memory: {e}")))?;
            }
        }
        Ok(PeerSum { ordinals: ordinals(gpus) })
    }
}

impl Communicator for PeerSum {
    fn reduce_sum(
        &self,
        gpus: &[&Gpu],
        parts: &[&DeviceBuffer<Fixed>],
        root: usize,
        sum: &mut DeviceBuffer<Fixed>,
    ) -> Result<()> {
        check_parts(gpus, parts, root, sum)?;
        if ordinals(gpus) != self.ordinals {
            return Err(Error::Communication(format!(
                "a sum over devices {:?} with peer access granted among {:?}",
                ordinals(gpus),
                self.ordinals
            )));
        }
        let root_gpu = gpus[root];
        for (d, gpu) in gpus.iter().enumerate().filter(|&(d, _)| d != root) {
            root_gpu.wait_for(gpu).map_err(|e| Error::Communication(format!("device {d}'s part: {e}")))?;
        }
        let addresses: Vec<u64> = parts.iter().map(|p| p.device_ptr()).collect();
        sum_parts(root_gpu, &addresses, sum)?;
        // Each device's later work (a part's buffer freed or written again) follows the reads.
        for (d, gpu) in gpus.iter().enumerate().filter(|&(d, _)| d != root) {
            gpu.wait_for(root_gpu).map_err(|e| Error::Communication(format!("device {d} after the sum: {e}")))?;
        }
        Ok(())
    }
}

/// The CUDA ordinals of `gpus` (none for an emulated device, which `PeerSum::new` refuses).
fn ordinals(gpus: &[&Gpu]) -> Vec<usize> {
    gpus.iter().filter_map(|gpu| gpu.ordinal()).collect()
}

/// Enqueues `sum = Σ parts` on `gpu`, the parts given by their addresses (each `sum.len()` sums,
/// readable from `gpu`: its own buffers, or other devices' with peer access granted).
pub(super) fn sum_parts(gpu: &Gpu, parts: &[u64], sum: &mut DeviceBuffer<Fixed>) -> Result<()> {
    if parts.is_empty() || parts.len() > MAX_PARTS {
        return Err(Error::InvalidData(format!("a sum of {} parts (1 to {MAX_PARTS})", parts.len())));
    }
    let part = |p: usize| ptr::<Fixed>(parts.get(p).copied().unwrap_or(0));
    let (sum_ptr, len, count) = (sum.as_mut_ptr(), sum.len() as u64, parts.len() as u64);
    let (p0, p1, p2, p3, p4, p5, p6, p7) = (part(0), part(1), part(2), part(3), part(4), part(5), part(6), part(7));
    let args = entry::boost_histogram_sum_parts::args(sum_ptr, len, count, p0, p1, p2, p3, p4, p5, p6, p7);
    // SAFETY: the caller gives parts of `sum.len()` sums readable from `gpu`; a thread an element.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(sum.len())?, args)? };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use primitives::Schedule;

    /// The kernel's sums on one emulated device (every part its own): wrapping, any count.
    #[test]
    fn parts_sum_element_by_element_and_wrap() {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 9 });
        let len = 700;
        let parts: Vec<Vec<Fixed>> = (0..5i64)
            .map(|p| {
                (0..len as i64).map(|i| Fixed::new(i * (p + 1) - 300, if i == 3 { i64::MAX } else { p - i })).collect()
            })
            .collect();
        let uploaded: Vec<DeviceBuffer<Fixed>> = parts.iter().map(|p| gpu.upload(p).unwrap()).collect();
        for count in [1, 2, 5] {
            let mut sum = gpu.alloc_zeroed::<Fixed>(len).unwrap();
            let addresses: Vec<u64> = uploaded[..count].iter().map(|b| b.device_ptr()).collect();
            sum_parts(&gpu, &addresses, &mut sum).unwrap();
            let expected: Vec<Fixed> = (0..len)
                .map(|i| {
                    parts[..count].iter().fold(Fixed::new(0, 0), |s, p| {
                        Fixed::new(s.grad.wrapping_add(p[i].grad), s.hess.wrapping_add(p[i].hess))
                    })
                })
                .collect();
            assert_eq!(sum.to_vec(&gpu).unwrap(), expected, "{count} parts");
        }
        assert!(sum_parts(&gpu, &[0; 9], &mut gpu.alloc_zeroed::<Fixed>(1).unwrap()).is_err());
    }

    #[test]
    fn emulated_devices_have_no_peer_access() {
        let gpus = [Gpu::emulated(Schedule::Deterministic), Gpu::emulated(Schedule::Deterministic)];
        let refused = PeerSum::new(&[&gpus[0], &gpus[1]]).expect_err("emulated devices");
        assert!(matches!(refused, Error::Communication(_)), "{refused}");
    }
}
