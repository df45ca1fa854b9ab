//! [`DeviceBuffer`]: a typed array in device memory.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{result, CudaContext, CudaSlice, DevicePtr};
use primitives_kernels::emu::DeviceMemory;

use crate::error::{Error, Result};
use crate::gpu::{Backend, CudaDevice, Gpu, MemoryCharge};
use crate::ops::Element;

pub(crate) enum Storage {
    Cuda(CudaSlice<u8>),
    /// Memory another library allocated on a CUDA device ([`DeviceBuffer::borrow_foreign`]), of
    /// the context it was borrowed for.
    Foreign {
        address: u64,
        context: Arc<CudaContext>,
    },
    Emulated(DeviceMemory),
}

/// `len` elements of `T` in device memory, freed (stream-ordered on a CUDA device) on drop, or
/// memory another library allocated, borrowed ([`DeviceBuffer::borrow_foreign`]).
///
/// The bytes are held untyped so that any [`Element`] (any `bytemuck::Pod` type) can live on the
/// device without implementing cudarc's traits. A buffer belongs to the [`Gpu`] that made it.
pub struct DeviceBuffer<T> {
    pub(crate) storage: Storage,
    pub(crate) len: usize,
    /// What keeps borrowed memory allocated; dropped after `storage` (fields drop in order).
    pub(crate) _owner: Option<Box<dyn Any + Send + Sync>>,
    /// The buffer's bytes in its `Gpu`'s account (none for borrowed memory).
    pub(crate) _charge: Option<MemoryCharge>,
    pub(crate) _element: PhantomData<T>,
}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}]", std::any::type_name::<T>(), self.len)
    }
}

impl<T: Element> DeviceBuffer<T> {
    fn allocate(gpu: &Gpu, len: usize, zeroed: bool) -> Result<Self> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| Error::InvalidArgument {
            name: "len",
            reason: format!("{len} elements of {} bytes overflow the address space", size_of::<T>()),
        })?;
        let charge = gpu.memory.charge(bytes)?;
        let storage = match &gpu.backend {
            Backend::Cuda(device) => {
                // A zero-byte allocation is not portable across drivers; keep 16 bytes so the pointer
                // is real.
                let allocated = bytes.max(16);
                let slice = if zeroed {
                    device.stream.alloc_zeros::<u8>(allocated)
                } else {
                    // SAFETY: uninitialised device bytes are fine for a Pod element type; callers
                    // that read them (`from_host`) overwrite them first.
                    unsafe { device.stream.alloc::<u8>(allocated) }
                }
                .map_err(Error::driver("allocating device memory", allocated))?;
                Storage::Cuda(slice)
            }
            Backend::Emulated(emulator) => {
                if bytes > 1 << 40 {
                    return Err(Error::OutOfMemory { bytes });
                }
                Storage::Emulated(emulator.alloc(bytes))
            }
        };
        Ok(Self { storage, len, _owner: None, _charge: Some(charge), _element: PhantomData })
    }

    /// `len` zeroed elements.
    pub fn zeroed(gpu: &Gpu, len: usize) -> Result<Self> {
        Self::allocate(gpu, len, true)
    }

    /// `len` elements left as the allocator hands them over: for scratch space that is written
    /// before it is read (no memset on the stream).
    pub(crate) fn uninitialized(gpu: &Gpu, len: usize) -> Result<Self> {
        Self::allocate(gpu, len, false)
    }

    /// A copy of `data` on the device.
    pub fn from_host(gpu: &Gpu, data: &[T]) -> Result<Self> {
        let mut buffer = Self::allocate(gpu, data.len(), false)?;
        buffer.copy_from_host(gpu, data)?;
        Ok(buffer)
    }

    /// Overwrites the first `data.len()` elements with `data`.
    pub fn copy_from_host(&mut self, gpu: &Gpu, data: &[T]) -> Result<()> {
        self.copy_from_host_at(gpu, 0, data)
    }

    /// Overwrites elements `offset..offset + data.len()` with `data` (stream-ordered after the work
    /// enqueued before).
    pub fn copy_from_host_at(&mut self, gpu: &Gpu, offset: usize, data: &[T]) -> Result<()> {
        if offset.checked_add(data.len()).is_none_or(|end| end > self.len) {
            return Err(Error::InvalidArgument {
                name: "data",
                reason: format!("{} elements at {offset} do not fit a buffer of {}", data.len(), self.len),
            });
        }
        if data.is_empty() {
            return Ok(());
        }
        let source: &[u8] = bytemuck::cast_slice(data);
        let start = offset * size_of::<T>();
        match (&mut self.storage, &gpu.backend) {
            (Storage::Cuda(slice), Backend::Cuda(device)) => {
                let mut destination = slice.slice_mut(start..start + source.len());
                device
                    .stream
                    .memcpy_htod(source, &mut destination)
                    .map_err(Error::driver("copying to the device", source.len()))
            }
            (Storage::Foreign { address, .. }, Backend::Cuda(device)) => {
                // SAFETY: `start + source.len()` bytes lie in the borrowed range (checked above and
                // when borrowed); the copy is enqueued on the device's stream.
                cuda_step(device, "copying to the device", source.len(), |stream| unsafe {
                    result::memcpy_htod_async(*address + start as u64, source, stream)
                })
            }
            (Storage::Emulated(memory), Backend::Emulated(_)) => {
                memory.write_bytes_at(start, source);
                Ok(())
            }
            _ => Err(foreign_buffer()),
        }
    }

    /// Overwrites the first `source.len()` elements with `source`'s (a device-to-device copy,
    /// stream-ordered, no wait).
    pub fn copy_from_device(&mut self, gpu: &Gpu, source: &DeviceBuffer<T>) -> Result<()> {
        self.copy_range_from_device(gpu, source, 0..source.len, 0)
    }

    /// Overwrites elements `start..start + range.len()` with `source`'s elements `range` (a
    /// device-to-device copy, stream-ordered, no wait). `source` may not be `self`.
    pub fn copy_range_from_device(
        &mut self,
        gpu: &Gpu,
        source: &DeviceBuffer<T>,
        range: std::ops::Range<usize>,
        start: usize,
    ) -> Result<()> {
        if range.start > range.end || range.end > source.len {
            return Err(Error::InvalidArgument {
                name: "range",
                reason: format!("{}..{} of a buffer of {}", range.start, range.end, source.len),
            });
        }
        let len = range.end - range.start;
        if start.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::InvalidArgument {
                name: "start",
                reason: format!("{len} elements at {start} do not fit a buffer of {}", self.len),
            });
        }
        let (bytes, from_byte, to_byte) = (len * size_of::<T>(), range.start * size_of::<T>(), start * size_of::<T>());
        if bytes == 0 {
            return Ok(());
        }
        let (to_address, from_address) = (self.device_ptr() + to_byte as u64, source.device_ptr() + from_byte as u64);
        match (&mut self.storage, &source.storage, &gpu.backend) {
            (Storage::Emulated(destination), Storage::Emulated(from), Backend::Emulated(_)) => {
                let mut staged = vec![0u8; bytes];
                from.read_bytes_at(from_byte, &mut staged);
                destination.write_bytes_at(to_byte, &staged);
                Ok(())
            }
            (destination, from, Backend::Cuda(device)) if destination.is_cuda() && from.is_cuda() => {
                // SAFETY: both ranges lie in their buffers (checked above); stream-ordered.
                cuda_step(device, "copying within the device", bytes, |stream| unsafe {
                    result::memcpy_dtod_async(to_address, from_address, bytes, stream)
                })
            }
            _ => Err(foreign_buffer()),
        }
    }

    /// Elements `range` of this buffer (on `from`) copied into a new buffer on `to`: a peer copy
    /// between two CUDA devices (stream-ordered after `from`'s work, on `to`'s stream), a plain
    /// device copy when they are one, a byte copy between emulated devices.
    pub fn copy_range_to(&self, from: &Gpu, range: std::ops::Range<usize>, to: &Gpu) -> Result<DeviceBuffer<T>> {
        if !self.is_on(from) {
            return Err(foreign_buffer());
        }
        if range.start > range.end || range.end > self.len {
            return Err(Error::InvalidArgument {
                name: "range",
                reason: format!("{}..{} of a buffer of {}", range.start, range.end, self.len),
            });
        }
        let mut copy = Self::uninitialized(to, range.len())?;
        let (from_byte, bytes) = (range.start * size_of::<T>(), range.len() * size_of::<T>());
        if bytes == 0 {
            return Ok(copy);
        }
        let (destination_address, source_address) = (copy.device_ptr(), self.device_ptr() + from_byte as u64);
        match (&mut copy.storage, &self.storage, &to.backend) {
            (destination, source, Backend::Cuda(device)) if destination.is_cuda() && source.is_cuda() => {
                // SAFETY: `bytes` bytes in both buffers (the range checked above); with unified
                // addressing a copy by address reaches a peer's memory; stream-ordered on `to`.
                cuda_step(device, "copying between devices", bytes, |stream| unsafe {
                    result::memcpy_dtod_async(destination_address, source_address, bytes, stream)
                })?;
            }
            (Storage::Emulated(destination), Storage::Emulated(source), Backend::Emulated(_)) => {
                let mut staged = vec![0u8; bytes];
                source.read_bytes_at(from_byte, &mut staged);
                destination.write_bytes_at(0, &staged);
            }
            _ => return Err(foreign_buffer()),
        }
        Ok(copy)
    }

    /// Sets every byte of the buffer to zero (stream-ordered, no wait).
    pub fn fill_zero(&mut self, gpu: &Gpu) -> Result<()> {
        let bytes = self.len * size_of::<T>();
        match (&mut self.storage, &gpu.backend) {
            (Storage::Cuda(slice), Backend::Cuda(device)) => {
                if bytes > 0 {
                    let mut destination = slice.slice_mut(..bytes);
                    device
                        .stream
                        .memset_zeros(&mut destination)
                        .map_err(Error::driver("clearing device memory", bytes))?;
                }
                Ok(())
            }
            (Storage::Foreign { address, .. }, Backend::Cuda(device)) => {
                // SAFETY: the borrowed range holds `bytes` bytes; stream-ordered.
                cuda_step(device, "clearing device memory", bytes, |stream| unsafe {
                    result::memset_d8_async(*address, 0, bytes, stream)
                })
            }
            (Storage::Emulated(memory), Backend::Emulated(_)) => {
                memory.write_bytes_at(0, &vec![0u8; bytes]);
                Ok(())
            }
            _ => Err(foreign_buffer()),
        }
    }

    /// Copies the buffer to the host, waiting for the work enqueued before.
    pub fn to_vec(&self, gpu: &Gpu) -> Result<Vec<T>> {
        self.range_to_vec(gpu, 0..self.len)
    }

    /// Copies elements `range` to the host, waiting for the work enqueued before (a buffer kept
    /// larger than one use needs is read only as far as that use wrote it).
    pub fn range_to_vec(&self, gpu: &Gpu, range: std::ops::Range<usize>) -> Result<Vec<T>> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::InvalidArgument {
                name: "range",
                reason: format!("{}..{} of a buffer of {}", range.start, range.end, self.len),
            });
        }
        let mut host = vec![T::zeroed(); range.len()];
        self.copy_range_to_host(gpu, range, &mut host)?;
        Ok(host)
    }

    /// Copies elements `range` into `out` (as long as the range), waiting for the work enqueued
    /// before: into page-locked memory ([`Gpu::pin_host`]) at the bus's speed.
    pub fn copy_range_to_host(&self, gpu: &Gpu, range: std::ops::Range<usize>, out: &mut [T]) -> Result<()> {
        if range.start > range.end || range.end > self.len || out.len() != range.len() {
            return Err(Error::InvalidArgument {
                name: "range",
                reason: format!("{}..{} of a buffer of {} into {}", range.start, range.end, self.len, out.len()),
            });
        }
        let destination: &mut [u8] = bytemuck::cast_slice_mut(out);
        let (start, bytes) = (range.start * size_of::<T>(), destination.len());
        match (&self.storage, &gpu.backend) {
            (Storage::Cuda(slice), Backend::Cuda(device)) => {
                if bytes > 0 {
                    let source = slice.slice(start..start + bytes);
                    device
                        .stream
                        .memcpy_dtoh(&source, destination)
                        .map_err(Error::driver("copying to the host", bytes))?;
                }
                gpu.synchronize()?;
            }
            (Storage::Foreign { address, .. }, Backend::Cuda(device)) => {
                // SAFETY: the range lies in the borrowed memory (checked above); the copy waits
                // for the work enqueued before, and the synchronisation for the copy.
                cuda_step(device, "copying to the host", bytes, |stream| unsafe {
                    result::memcpy_dtoh_async(destination, *address + start as u64, stream)
                })?;
                gpu.synchronize()?;
            }
            (Storage::Emulated(memory), Backend::Emulated(_)) => memory.read_bytes_at(start, destination),
            _ => return Err(foreign_buffer()),
        }
        Ok(())
    }

    /// Whether this buffer belongs to `gpu` (was allocated by it): a kernel of one device must not
    /// be given another's memory.
    pub fn is_on(&self, gpu: &Gpu) -> bool {
        match (&self.storage, &gpu.backend) {
            (Storage::Cuda(slice), Backend::Cuda(device)) => Arc::ptr_eq(slice.context(), &device.context),
            (Storage::Foreign { context, .. }, Backend::Cuda(device)) => Arc::ptr_eq(context, &device.context),
            (Storage::Emulated(memory), Backend::Emulated(emulator)) => emulator.owns(memory),
            _ => false,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The raw device address, for kernel arguments.
    pub fn device_ptr(&self) -> u64 {
        match &self.storage {
            Storage::Cuda(slice) => {
                // Event tracking is off (see `Gpu::open_cuda`), so the returned guard records nothing.
                let (pointer, _guard) = slice.device_ptr(slice.stream());
                pointer
            }
            Storage::Foreign { address, .. } => *address,
            Storage::Emulated(memory) => memory.address(),
        }
    }

    /// The device address as a kernel parameter that reads (`NAME::args(...)` of a kernel; see
    /// [`Gpu::launch_kernel`](crate::Gpu::launch_kernel)). Only a kernel may dereference it.
    pub fn as_ptr(&self) -> *const T {
        self.device_ptr() as usize as *const T
    }

    /// The device address as a kernel parameter that writes. Taking it borrows nothing: the launch
    /// that writes through it is `unsafe`, and its caller keeps the buffer alive and unshared.
    pub fn as_mut_ptr(&self) -> *mut T {
        self.device_ptr() as usize as *mut T
    }
}

impl Storage {
    /// Whether the memory is a CUDA device's (allocated or borrowed).
    fn is_cuda(&self) -> bool {
        matches!(self, Storage::Cuda(_) | Storage::Foreign { .. })
    }
}

/// Runs a driver call that enqueues on `device`'s stream (given), with its context current on
/// this thread, as cudarc's own calls make it.
pub(crate) fn cuda_step(
    device: &CudaDevice,
    during: &'static str,
    bytes: usize,
    call: impl FnOnce(cudarc::driver::sys::CUstream) -> std::result::Result<(), cudarc::driver::DriverError>,
) -> Result<()> {
    device.context.bind_to_thread().map_err(Error::driver(during, bytes))?;
    call(device.stream.cu_stream()).map_err(Error::driver(during, bytes))
}

fn foreign_buffer() -> Error {
    Error::InvalidArgument { name: "gpu", reason: "the buffer belongs to a device of another kind".into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schedule;

    #[test]
    fn a_range_copied_to_another_device() {
        let (a, b) = (Gpu::emulated(Schedule::Deterministic), Gpu::emulated(Schedule::Deterministic));
        let data: Vec<u32> = (0..100).collect();
        let buffer = a.upload(&data).unwrap();
        let copy = buffer.copy_range_to(&a, 10..30, &b).unwrap();
        assert!(copy.is_on(&b) && !copy.is_on(&a));
        assert_eq!(copy.to_vec(&b).unwrap(), data[10..30]);
        assert_eq!(buffer.copy_range_to(&a, 0..0, &b).unwrap().len(), 0);
        assert!(buffer.copy_range_to(&a, 90..101, &b).is_err(), "past the end");
        assert!(buffer.copy_range_to(&b, 0..1, &a).is_err(), "not the buffer's device");
    }

    #[test]
    fn a_buffer_is_on_the_device_that_made_it_only() {
        let (a, b) = (Gpu::emulated(Schedule::Deterministic), Gpu::emulated(Schedule::Deterministic));
        let buffer = a.upload(&[1u32, 2, 3]).unwrap();
        assert!(buffer.is_on(&a));
        assert!(!buffer.is_on(&b));
    }
}
