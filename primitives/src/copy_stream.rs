//! [`CopyStream`]: a second stream of a [`Gpu`] for host-to-device copies that overlap the kernels
//! enqueued on the device's own stream (double buffering: the next buffer's copy runs while the
//! kernels read the current one).

use std::sync::Arc;

use cudarc::driver::{result, sys, CudaEvent, CudaStream};

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::gpu::{Backend, Gpu};
use crate::ops::Element;

/// A stream of its own for copies to one [`Gpu`], ordered against that device's stream by events
/// only: a copy waits for the work enqueued on the device before it ([`CopyStream::upload_at`]),
/// and the device's later work waits for the copies when told ([`CopyStream::wait`]). On the
/// emulator a copy is done when enqueued.
pub struct CopyStream {
    cuda: Option<CudaCopies>,
}

struct CudaCopies {
    stream: Arc<CudaStream>,
    /// Recorded on the device's stream before each copy, which waits for it.
    after: CudaEvent,
    /// Recorded on this stream after each copy.
    done: CudaEvent,
}

impl Gpu {
    /// A new stream for copies to this device that overlap its kernels ([`CopyStream`]).
    pub fn copy_stream(&self) -> Result<CopyStream> {
        let Backend::Cuda(device) = &self.backend else { return Ok(CopyStream { cuda: None }) };
        let stream = device.context.new_stream().map_err(Error::driver("creating a copy stream", 0))?;
        let event = || {
            let flags = Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
            device.context.new_event(flags).map_err(Error::driver("creating an event", 0))
        };
        Ok(CopyStream { cuda: Some(CudaCopies { stream, after: event()?, done: event()? }) })
    }
}

impl CopyStream {
    /// Enqueues a copy of `data` into `buffer`'s elements from `offset`, on this stream, after all
    /// the work enqueued on `gpu` so far (the buffer's last readers). Returns once enqueued: from
    /// page-locked memory ([`Gpu::pin_host`]) the copy runs on while `gpu`'s kernels do.
    ///
    /// # Safety
    /// `data` is neither written nor freed, and `buffer` neither read, written nor freed by `gpu`,
    /// until `gpu` has waited for the copy ([`CopyStream::wait`]) and that wait is behind work that
    /// is done (a synchronisation of `gpu`, or a read back enqueued after it).
    pub unsafe fn upload_at<T: Element>(
        &self,
        gpu: &Gpu,
        buffer: &mut DeviceBuffer<T>,
        offset: usize,
        data: &[T],
    ) -> Result<()> {
        if !buffer.is_on(gpu) {
            return Err(Error::InvalidArgument { name: "buffer", reason: "not a buffer of this device".into() });
        }
        if offset.checked_add(data.len()).is_none_or(|end| end > buffer.len()) {
            return Err(Error::InvalidArgument {
                name: "data",
                reason: format!("{} elements at {offset} do not fit a buffer of {}", data.len(), buffer.len()),
            });
        }
        let (Some(copies), Backend::Cuda(device)) = (&self.cuda, &gpu.backend) else {
            return buffer.copy_from_host_at(gpu, offset, data);
        };
        let source: &[u8] = bytemuck::cast_slice(data);
        if source.is_empty() {
            return Ok(());
        }
        let during = "copying to the device on the copy stream";
        let address = buffer.device_ptr() + (offset * size_of::<T>()) as u64;
        copies.after.record(&device.stream).map_err(Error::driver("recording an event", 0))?;
        copies.stream.wait(&copies.after).map_err(Error::driver("waiting for the device's stream", 0))?;
        // SAFETY: `source.len()` bytes fit the buffer from `offset` (checked above), which belongs
        // to this context; the caller keeps both sides as they are until the copy is waited for.
        unsafe { result::memcpy_htod_async(address, source, copies.stream.cu_stream()) }
            .map_err(Error::driver(during, source.len()))?;
        copies.done.record(&copies.stream).map_err(Error::driver("recording an event", 0))
    }

    /// Makes the work enqueued on `gpu` from now on wait for the copies enqueued so far (no host
    /// wait).
    pub fn wait(&self, gpu: &Gpu) -> Result<()> {
        match (&self.cuda, &gpu.backend) {
            (Some(copies), Backend::Cuda(device)) => {
                device.stream.wait(&copies.done).map_err(Error::driver("waiting for the copy stream", 0))
            }
            (None, Backend::Emulated(_)) => Ok(()),
            _ => Err(Error::InvalidArgument {
                name: "gpu",
                reason: "a copy stream orders the work of the device it was made for".into(),
            }),
        }
    }
}

impl Drop for CopyStream {
    fn drop(&mut self) {
        // Copies still in flight write buffers their owner may free next: wait for them. A failure
        // here was a copy's, which the device's next wait on it reports.
        if let Some(copies) = &self.cuda {
            let _ = copies.stream.synchronize();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schedule;

    #[test]
    fn copies_land_where_asked_and_are_checked() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let copies = gpu.copy_stream().unwrap();
        let mut buffer = gpu.alloc_zeroed::<u32>(8).unwrap();
        // SAFETY: nothing reads the buffer or writes the data before the wait.
        unsafe { copies.upload_at(&gpu, &mut buffer, 3, &[7, 8, 9]).unwrap() };
        copies.wait(&gpu).unwrap();
        assert_eq!(buffer.to_vec(&gpu).unwrap(), [0, 0, 0, 7, 8, 9, 0, 0]);
        // SAFETY: as above; these fail before enqueuing anything.
        unsafe {
            assert!(copies.upload_at(&gpu, &mut buffer, 6, &[1, 2, 3]).is_err(), "past the end");
            let other = Gpu::emulated(Schedule::Deterministic);
            let mut foreign = other.alloc_zeroed::<u32>(8).unwrap();
            assert!(copies.upload_at(&gpu, &mut foreign, 0, &[1]).is_err(), "another device's buffer");
        }
    }
}
