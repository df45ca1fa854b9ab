//! Memory another library allocated on the device (CuPy's, PyTorch's arrays, through the CUDA
//! array interface), borrowed as a [`DeviceBuffer`] and read in place: checked with the driver
//! before any kernel touches it.

use std::any::Any;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr::NonNull;

use cudarc::driver::sys::{self, CUpointer_attribute};

use crate::buffer::{DeviceBuffer, Storage};
use crate::error::{Error, Result};
use crate::gpu::{Backend, Gpu};
use crate::ops::Element;

impl<T: Element> DeviceBuffer<T> {
    /// The `len` elements at `address`, in memory another library allocated on `gpu`, borrowed:
    /// kernels read and write them in place, and `owner` (what keeps the memory allocated, such as
    /// the array object) is kept until the buffer drops. Nothing is freed then.
    ///
    /// On a CUDA device the driver must know `address` as memory of this device (device or
    /// managed memory, not host memory) with the `len` elements inside one live allocation; a
    /// freed pointer, host memory or another GPU's memory is an [`Error::InvalidArgument`]. On the
    /// emulated device, `address` is host memory that the emulator registers as the device's.
    ///
    /// # Safety
    /// The memory stays allocated while `owner` lives, holds `len` elements of `T` (aligned), and
    /// nothing else writes it while the buffer's work runs. On the emulated device `address` must
    /// be valid host memory of `len` elements (the emulator cannot check it).
    pub unsafe fn borrow_foreign(
        gpu: &Gpu,
        address: u64,
        len: usize,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Result<Self> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| Error::InvalidArgument {
            name: "len",
            reason: format!("{len} elements of {} bytes overflow the address space", size_of::<T>()),
        })?;
        if !address.is_multiple_of(align_of::<T>() as u64) {
            return Err(invalid(format!("{address:#x} is not aligned to {} bytes", align_of::<T>())));
        }
        let storage = match &gpu.backend {
            Backend::Cuda(device) => {
                let ordinal = gpu.ordinal().unwrap_or(0);
                device.context.bind_to_thread().map_err(Error::driver("binding the context", 0))?;
                if bytes > 0 {
                    check_allocation(address, bytes, ordinal)?;
                }
                Storage::Foreign { address, context: device.context.clone() }
            }
            Backend::Emulated(emulator) => {
                let pointer = NonNull::new(address as usize as *mut u8)
                    .ok_or_else(|| invalid("a null pointer is not memory".into()))?;
                // SAFETY: the caller's promise: `bytes` bytes of host memory, kept by `owner`.
                Storage::Emulated(unsafe { emulator.borrow(pointer, bytes) })
            }
        };
        Ok(DeviceBuffer { storage, len, _owner: Some(owner), _charge: None, _element: PhantomData })
    }
}

impl Gpu {
    /// The ordinal of the CUDA device whose memory holds `address` (memory another library
    /// allocated), for opening that device before borrowing it. An error when there is no driver
    /// or the driver does not know `address` as device memory (freed, or host memory).
    pub fn ordinal_of_pointer(address: u64) -> Result<usize> {
        // SAFETY: only tries to dlopen libcuda; no CUDA call is made.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        cudarc::driver::result::init().map_err(Error::driver("initialising the driver", 0))?;
        // The driver answers for a thread with a current context: the first device's primary
        // context (the one CUDA libraries share) when this thread has none.
        let mut current: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: writes the current context (or null) into `current`.
        unsafe { sys::cuCtxGetCurrent(&mut current) }.result().map_err(Error::driver("reading the context", 0))?;
        let _primary = match current.is_null() {
            true => {
                let context = cudarc::driver::CudaContext::new(0)
                    .map_err(|e| Error::NoDevice(format!("creating a context on device 0: {e}")))?;
                context.bind_to_thread().map_err(Error::driver("binding the context", 0))?;
                Some(context)
            }
            false => None,
        };
        let memory_type: u32 = pointer_attribute(address, CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE)?;
        if memory_type == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
            return Err(invalid(format!("{address:#x} is host memory, not device memory")));
        }
        let ordinal: i32 = pointer_attribute(address, CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)?;
        usize::try_from(ordinal).map_err(|_| invalid(format!("{address:#x}: the driver reports device {ordinal}")))
    }

    /// Makes the work enqueued from now on wait for the work on `stream`, a CUDA stream of
    /// another library (a CUDA array interface's `stream`: 1 the legacy default stream, 2 the
    /// per-thread default stream, else a `CUstream` handle) that may still be writing memory
    /// this device is about to read. Nothing to wait for on the emulated device.
    ///
    /// # Safety
    /// `stream` is 1, 2 or a live stream of this device's context.
    pub unsafe fn wait_for_foreign_stream(&self, stream: usize) -> Result<()> {
        match &self.backend {
            // The legacy default stream is the one this device enqueues on: already in order.
            Backend::Cuda(_) if stream == 1 => Ok(()),
            Backend::Cuda(device) => {
                device.context.bind_to_thread().map_err(Error::driver("binding the context", 0))?;
                // SAFETY: the caller's promise: a valid stream handle of this context.
                unsafe { sys::cuStreamSynchronize(stream as sys::CUstream) }
                    .result()
                    .map_err(Error::driver("waiting for the caller's stream", 0))
            }
            Backend::Emulated(_) => Ok(()),
        }
    }
}

/// Refuses `bytes` bytes at `address` unless they lie in one live allocation of device `ordinal`.
fn check_allocation(address: u64, bytes: usize, ordinal: usize) -> Result<()> {
    let memory_type: u32 = pointer_attribute(address, CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE)?;
    if memory_type == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
        return Err(invalid(format!("{address:#x} is host memory, not device memory")));
    }
    let device: i32 = pointer_attribute(address, CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)?;
    if device != ordinal as i32 {
        return Err(invalid(format!("{address:#x} is memory of cuda:{device}, not of cuda:{ordinal}")));
    }
    let start: u64 = pointer_attribute(address, CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)?;
    let size: usize = pointer_attribute(address, CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE)?;
    if address + bytes as u64 > start + size as u64 {
        return Err(invalid(format!(
            "{bytes} bytes at {address:#x} run past the end of their allocation ({size} bytes at {start:#x})"
        )));
    }
    Ok(())
}

/// One attribute of the allocation holding `address`; an error naming the pointer when the
/// driver does not know it.
fn pointer_attribute<V: Default>(address: u64, attribute: CUpointer_attribute) -> Result<V> {
    let mut value = V::default();
    // SAFETY: `value` is of the type the attribute writes (the callers pair them as the driver
    // API documents: u32 for the memory type, i32 for the ordinal, u64 and usize for the range).
    let status = unsafe { sys::cuPointerGetAttribute((&mut value as *mut V).cast::<c_void>(), attribute, address) };
    match status {
        sys::CUresult::CUDA_SUCCESS => Ok(value),
        sys::CUresult::CUDA_ERROR_INVALID_VALUE => Err(invalid(format!(
            "the CUDA driver knows no device memory at {address:#x} (freed, or not allocated through CUDA)"
        ))),
        other => Err(Error::driver("reading a pointer's attributes", 0)(cudarc::driver::DriverError(other))),
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument { name: "address", reason }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{DeviceReduce, Gpu, Schedule};

    #[test]
    fn borrowed_host_memory_is_read_in_place_by_emulated_kernels() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let values: Arc<Vec<u32>> = Arc::new((1..=1000).collect());
        let address = values.as_ptr() as u64;
        // SAFETY: `values` is kept alive by the buffer (its owner) and nothing writes it.
        let borrowed =
            unsafe { crate::DeviceBuffer::<u32>::borrow_foreign(&gpu, address, 1000, Box::new(values.clone())) }
                .unwrap();
        assert!(borrowed.is_on(&gpu));
        assert_eq!(borrowed.device_ptr(), address, "not copied");
        let mut total = gpu.alloc_zeroed::<u32>(1).unwrap();
        DeviceReduce::sum(&gpu, &borrowed, &mut total).unwrap();
        assert_eq!(total.to_vec(&gpu).unwrap(), [500_500]);
        assert_eq!(borrowed.range_to_vec(&gpu, 10..13).unwrap(), [11, 12, 13]);
        // A second view of the same memory, dropped first, leaves the first registered.
        // SAFETY: as above.
        let view = unsafe { crate::DeviceBuffer::<u32>::borrow_foreign(&gpu, address + 40, 10, Box::new(())) }.unwrap();
        drop(view);
        DeviceReduce::sum(&gpu, &borrowed, &mut total).unwrap();
        assert_eq!(total.to_vec(&gpu).unwrap(), [500_500]);
        assert_eq!(Arc::strong_count(&values), 2, "the owner is kept with the buffer");
        drop(borrowed);
        assert_eq!(Arc::strong_count(&values), 1, "and released with it");
    }

    #[test]
    fn a_misaligned_or_null_pointer_is_refused() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let values = [0u32; 4];
        let address = values.as_ptr() as u64;
        // SAFETY: refused before any access.
        let misaligned = unsafe { crate::DeviceBuffer::<u32>::borrow_foreign(&gpu, address + 1, 2, Box::new(())) };
        assert!(misaligned.unwrap_err().to_string().contains("aligned"));
        // SAFETY: as above.
        let null = unsafe { crate::DeviceBuffer::<u32>::borrow_foreign(&gpu, 0, 2, Box::new(())) };
        assert!(null.unwrap_err().to_string().contains("null"));
    }
}
