//! [`HostMapped`]: host memory page-locked and mapped into a device's address space, which
//! kernels read in place over the bus (zero-copy). Worth it where a kernel reads a small, scattered
//! part of a large host array (chosen rows of a table): the bus carries those bytes only, where a
//! copy would carry all of them.

use std::marker::PhantomData;
use std::ptr::NonNull;

use cudarc::driver::sys;

use crate::buffer::{DeviceBuffer, Storage};
use crate::error::{Error, Result};
use crate::gpu::{Backend, Gpu, HostPin};
use crate::ops::Element;

/// A host vector page-locked and mapped into a device's address space: its elements read on
/// the host ([`HostMapped::host`]) and by the device's kernels ([`HostMapped::device`], a buffer
/// that is not charged to the device's memory). Unmapped and unlocked on drop, which waits for
/// nothing: the device's work that reads it must be done first (as for page-locked copies).
pub struct HostMapped<T> {
    /// Fields drop in order: the device's view, then the pin, then the memory.
    device: DeviceBuffer<T>,
    _pin: HostPin,
    data: Vec<T>,
}

impl<T> HostMapped<T> {
    /// The elements, on the host. What the device wrote into them is seen once its work is done.
    pub fn host(&self) -> &[T] {
        &self.data
    }

    /// The elements, on the host, to write while no work of the device reads them.
    pub fn host_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The elements as the device's kernels address them.
    pub fn device(&self) -> &DeviceBuffer<T> {
        &self.device
    }

    /// The elements as the device's kernels and copies address them, to write.
    ///
    /// # Safety
    /// The host reads the elements ([`HostMapped::host`]) only once the device's writes through
    /// the buffer are done (a synchronisation, or a read back enqueued after them): the host
    /// cannot see them coming.
    pub unsafe fn device_mut(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.device
    }
}

impl Gpu {
    /// `data` page-locked (`cuMemHostRegister`, mapped) and addressed by this device's kernels in
    /// place: each read a transfer over the bus. On the emulator the kernels read the host memory
    /// itself.
    pub fn map_host<T: Element>(&self, data: Vec<T>) -> Result<HostMapped<T>> {
        let bytes = std::mem::size_of_val(data.as_slice());
        let len = data.len();
        let (storage, pin) = match &self.backend {
            Backend::Cuda(device) if bytes > 0 => {
                device.context.bind_to_thread().map_err(Error::driver("making the device's context current", 0))?;
                let ptr = data.as_ptr() as *mut std::ffi::c_void;
                // SAFETY: `bytes` of live host memory, which stays put (a vector's heap buffer does
                // not move with the vector) until the pin drops, before the vector.
                unsafe { sys::cuMemHostRegister_v2(ptr, bytes, sys::CU_MEMHOSTREGISTER_DEVICEMAP) }
                    .result()
                    .map_err(Error::driver("page-locking and mapping host memory", bytes))?;
                let pin = HostPin::registered(ptr as usize, device.context.clone());
                let mut address: sys::CUdeviceptr = 0;
                // SAFETY: `ptr` was registered above with the mapping flag.
                unsafe { sys::cuMemHostGetDevicePointer_v2(&mut address, ptr, 0) }
                    .result()
                    .map_err(Error::driver("reading mapped host memory's device address", bytes))?;
                (Storage::Foreign { address, context: device.context.clone() }, pin)
            }
            Backend::Cuda(_) => return Err(Error::InvalidArgument { name: "data", reason: "no elements".into() }),
            Backend::Emulated(emulator) => {
                let pointer = NonNull::new(data.as_ptr() as *mut u8).expect("a vector's buffer is not null");
                // SAFETY: `bytes` bytes of host memory that the vector keeps, unmoved, until the
                // buffer (dropped first) is gone.
                (Storage::Emulated(unsafe { emulator.borrow(pointer, bytes) }), HostPin::none())
            }
        };
        let device = DeviceBuffer { storage, len, _owner: None, _charge: None, _element: PhantomData };
        Ok(HostMapped { device, _pin: pin, data })
    }
}

#[cfg(test)]
mod tests {
    use crate::{Gpu, Schedule};

    #[test]
    fn mapped_host_memory_is_the_devices_to_read_and_write() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let mapped = gpu.map_host((0..16u32).collect()).unwrap();
        assert_eq!(mapped.device().to_vec(&gpu).unwrap(), (0..16).collect::<Vec<_>>());
        let mut other = gpu.upload(&[0u32; 4]).unwrap();
        other.copy_range_from_device(&gpu, mapped.device(), 3..7, 0).unwrap();
        assert_eq!(other.to_vec(&gpu).unwrap(), [3, 4, 5, 6]);
        let (mut mapped, from) = (mapped, gpu.upload(&[9u32, 9]).unwrap());
        // SAFETY: the host reads the elements after the synchronisation below.
        unsafe { mapped.device_mut() }.copy_range_from_device(&gpu, &from, 0..2, 14).unwrap();
        gpu.synchronize().unwrap();
        assert_eq!(&mapped.host()[12..], [12, 13, 9, 9]);
    }
}
