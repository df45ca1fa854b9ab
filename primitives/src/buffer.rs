//! [`DeviceBuffer`]: a typed array in device memory.

use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, DevicePtr};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::ops::Element;

/// `len` elements of `T` in device memory, freed (stream-ordered) on drop.
///
/// The bytes are held untyped so that any [`Element`] (any `bytemuck::Pod` type) can live on the
/// device without implementing cudarc's traits.
pub struct DeviceBuffer<T> {
    bytes: CudaSlice<u8>,
    len: usize,
    _element: PhantomData<T>,
}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer<{}>[{}]",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

impl<T: Element> DeviceBuffer<T> {
    fn allocate(gpu: &Gpu, len: usize, zeroed: bool) -> Result<Self> {
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| Error::InvalidArgument {
                name: "len",
                reason: format!(
                    "{len} elements of {} bytes overflow the address space",
                    size_of::<T>()
                ),
            })?;
        // A zero-byte allocation is not portable across drivers; keep one word so the pointer is real.
        let allocated = bytes.max(16);
        let stream = gpu.stream();
        let slice = if zeroed {
            stream.alloc_zeros::<u8>(allocated)
        } else {
            // SAFETY: uninitialised device bytes are fine for a Pod element type; callers that read
            // them (`from_host`) overwrite them first.
            unsafe { stream.alloc::<u8>(allocated) }
        }
        .map_err(Error::driver("allocating device memory", allocated))?;
        Ok(Self {
            bytes: slice,
            len,
            _element: PhantomData,
        })
    }

    /// `len` zeroed elements.
    pub fn zeroed(gpu: &Gpu, len: usize) -> Result<Self> {
        Self::allocate(gpu, len, true)
    }

    /// A copy of `data` on the device.
    pub fn from_host(gpu: &Gpu, data: &[T]) -> Result<Self> {
        let mut buffer = Self::allocate(gpu, data.len(), false)?;
        buffer.copy_from_host(gpu, data)?;
        Ok(buffer)
    }

    /// Overwrites the first `data.len()` elements with `data`.
    pub fn copy_from_host(&mut self, gpu: &Gpu, data: &[T]) -> Result<()> {
        if data.len() > self.len {
            return Err(Error::InvalidArgument {
                name: "data",
                reason: format!(
                    "{} elements do not fit a buffer of {}",
                    data.len(),
                    self.len
                ),
            });
        }
        if data.is_empty() {
            return Ok(());
        }
        let source: &[u8] = bytemuck::cast_slice(data);
        let mut destination = self.bytes.slice_mut(..source.len());
        gpu.stream()
            .memcpy_htod(source, &mut destination)
            .map_err(Error::driver("copying to the device", source.len()))
    }

    /// Copies the buffer to the host, waiting for the work enqueued before.
    pub fn to_vec(&self, gpu: &Gpu) -> Result<Vec<T>> {
        let mut host = vec![T::zeroed(); self.len];
        if self.len > 0 {
            let destination: &mut [u8] = bytemuck::cast_slice_mut(&mut host);
            let bytes = destination.len();
            let source = self.bytes.slice(..bytes);
            gpu.stream()
                .memcpy_dtoh(&source, destination)
                .map_err(Error::driver("copying to the host", bytes))?;
        }
        gpu.synchronize()?;
        Ok(host)
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
    pub fn device_ptr(&self, gpu: &Gpu) -> u64 {
        // Event tracking is off (see `Gpu::with_ordinal`), so the returned guard records nothing.
        let (pointer, _guard) = self.bytes.device_ptr(gpu.stream());
        pointer
    }
}
