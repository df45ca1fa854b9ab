//! The [`Communicator`] of CUDA devices: NCCL, loaded at run time as the driver is (`libnccl.so`,
//! through cudarc), one communicator a device made for the run's devices at once, each sum a
//! group of `ncclReduce` calls enqueued on the devices' streams (so it follows the kernels that
//! wrote the parts, and the kernels that read the sum follow it, with no host wait).

use std::ffi::c_void;

use cudarc::nccl::{result, sys};
use primitives::{DeviceBuffer, Gpu};

use super::multi::{check_parts, Communicator};
use super::Fixed;
use crate::{Error, Result};

/// NCCL communicators for a fixed list of CUDA devices (see the module).
pub struct Nccl {
    comms: Vec<sys::ncclComm_t>,
    ordinals: Vec<usize>,
}

impl Nccl {
    /// Communicators for `gpus` (CUDA devices, each once, in rank order). An error when NCCL
    /// cannot be loaded or initialised, or a device is emulated.
    pub fn new(gpus: &[&Gpu]) -> Result<Self> {
        let ordinals: Vec<usize> = gpus
            .iter()
            .map(|gpu| gpu.ordinal())
            .collect::<Option<_>>()
            .ok_or_else(|| Error::Communication("NCCL takes CUDA devices, not the emulator".into()))?;
        // SAFETY: only looks the library up.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::Communication("NCCL (libnccl.so) was not found".into()));
        }
        let devices: Vec<i32> = ordinals.iter().map(|&o| o as i32).collect();
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: room for a communicator a device; the ordinals are the devices' own.
        unsafe { result::comm_init_all(comms.as_mut_ptr(), devices.len() as i32, devices.as_ptr()) }
            .map_err(|e| Error::Communication(format!("ncclCommInitAll over devices {ordinals:?}: {e:?}")))?;
        Ok(Nccl { comms, ordinals })
    }
}

impl Drop for Nccl {
    fn drop(&mut self) {
        for &comm in &self.comms {
            // SAFETY: made by `ncclCommInitAll`, destroyed once. A failure here has nowhere to go.
            let _ = unsafe { result::comm_destroy(comm) };
        }
    }
}

impl Communicator for Nccl {
    fn reduce_sum(
        &self,
        gpus: &[&Gpu],
        parts: &[&DeviceBuffer<Fixed>],
        root: usize,
        sum: &mut DeviceBuffer<Fixed>,
    ) -> Result<()> {
        check_parts(gpus, parts, root, sum)?;
        let ordinals: Vec<Option<usize>> = gpus.iter().map(|g| g.ordinal()).collect();
        if ordinals.iter().copied().ne(self.ordinals.iter().map(|&o| Some(o))) {
            return Err(Error::Communication(format!(
                "a sum over devices {ordinals:?} with communicators for {:?}",
                self.ordinals
            )));
        }
        result::group_start().map_err(|e| Error::Communication(format!("ncclGroupStart: {e:?}")))?;
        let mut failed = None;
        for (d, (gpu, part)) in gpus.iter().zip(parts).enumerate() {
            let receive = (d == root).then_some(&*sum);
            failed = failed.or(self.reduce_rank(d, gpu, part, receive, root).err());
        }
        result::group_end().map_err(|e| Error::Communication(format!("ncclGroupEnd: {e:?}")))?;
        failed.map_or(Ok(()), Err)
    }
}

impl Nccl {
    /// Enqueues rank `rank`'s `ncclReduce` of `part` on its device's stream (`sum` on the root);
    /// the caller has checked that `gpu` is the rank's device.
    fn reduce_rank(
        &self,
        rank: usize,
        gpu: &Gpu,
        part: &DeviceBuffer<Fixed>,
        sum: Option<&DeviceBuffer<Fixed>>,
        root: usize,
    ) -> Result<()> {
        let stream = gpu.raw_stream().unwrap_or(std::ptr::null_mut()) as sys::cudaStream_t;
        let receive = sum.map_or(std::ptr::null_mut(), |s| s.device_ptr() as *mut c_void);
        // Fixed-point pairs are two `i64` each; NCCL's integer sums wrap as the devices' do.
        let count = 2 * part.len();
        // SAFETY: the part holds `count` `i64` on its device, the sum as many on the root's; the
        // communicator and the stream are the device's (checked by the caller).
        let status = unsafe {
            result::reduce(
                part.device_ptr() as *const c_void,
                receive,
                count,
                sys::ncclDataType_t::ncclInt64,
                sys::ncclRedOp_t::ncclSum,
                root as i32,
                self.comms[rank],
                stream,
            )
        };
        status
            .map(drop)
            .map_err(|e| Error::Communication(format!("ncclReduce on device {}: {e:?}", self.ordinals[rank])))
    }
}
