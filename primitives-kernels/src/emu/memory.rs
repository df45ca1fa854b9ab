//! Emulated device memory: host allocations that the emulator knows, so that every global access of
//! an emulated kernel is checked against them.

use std::prelude::rust_2021::*;
use std::{assert, write};

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, RwLock};

/// Every live allocation of one emulated device: start address -> length in bytes, and the host
/// regions borrowed as device memory (few; they may overlap or repeat, as views of one array do).
#[derive(Default, Debug)]
pub struct Registry {
    allocations: RwLock<BTreeMap<usize, usize>>,
    borrowed: RwLock<Vec<(usize, usize)>>,
}

impl Registry {
    /// The allocation `(start, len)` holding `[address, address + size)`, if one does.
    pub fn find(&self, address: usize, size: usize) -> Option<(usize, usize)> {
        let holds = |&(start, len): &(usize, usize)| address >= start && address + size <= start + len;
        let allocations = self.allocations.read().unwrap_or_else(|p| p.into_inner());
        let nearest = allocations.range(..=address).next_back().map(|(&start, &len)| (start, len));
        if let Some(found) = nearest.filter(holds) {
            return Some(found);
        }
        drop(allocations);
        self.borrowed.read().unwrap_or_else(|p| p.into_inner()).iter().copied().find(holds)
    }

    fn insert(&self, start: usize, len: usize) {
        self.allocations.write().unwrap_or_else(|p| p.into_inner()).insert(start, len);
    }

    fn remove(&self, start: usize) {
        self.allocations.write().unwrap_or_else(|p| p.into_inner()).remove(&start);
    }

    fn insert_borrowed(&self, start: usize, len: usize) {
        self.borrowed.write().unwrap_or_else(|p| p.into_inner()).push((start, len));
    }

    fn remove_borrowed(&self, start: usize, len: usize) {
        let mut borrowed = self.borrowed.write().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = borrowed.iter().position(|&region| region == (start, len)) {
            borrowed.swap_remove(i);
        }
    }
}

/// Zeroed, 16-byte aligned bytes of emulated global memory, registered with their device for the
/// lifetime of the value.
pub struct DeviceMemory {
    pointer: NonNull<u8>,
    len: usize,
    /// The heap block's layout; `None` for memory borrowed from the host ([`DeviceMemory::borrowed`]),
    /// which is not freed here.
    layout: Option<Layout>,
    registry: Arc<Registry>,
}

// SAFETY: the memory is a plain heap block owned by this value. Kernels write it only inside a launch,
// which holds a shared borrow of the buffer for its duration and runs on one OS thread; host copies go
// through `&mut self` or happen between launches.
unsafe impl Send for DeviceMemory {}
// SAFETY: as above; `&DeviceMemory` only exposes the address and the length.
unsafe impl Sync for DeviceMemory {}

impl DeviceMemory {
    /// The allocations of the device this memory belongs to.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    pub(crate) fn new(registry: Arc<Registry>, len: usize) -> Self {
        // At least one 16-byte word, so that every allocation has a distinct, real address.
        let layout = Layout::from_size_align(len.max(16).next_multiple_of(16), 16).expect("allocation size overflows");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let pointer = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        registry.insert(pointer.as_ptr() as usize, len);
        Self { pointer, len, layout: Some(layout), registry }
    }

    /// `len` bytes at `pointer` that the caller owns, registered as the device's until the value
    /// drops (and then left alone): the emulated form of memory another library allocated on a
    /// device (a CUDA array interface's pointer), read and written in place.
    ///
    /// # Safety
    /// `pointer` is valid for reads and writes of `len` bytes until the value drops, and nothing
    /// else accesses them while a kernel or a host copy of this value does.
    pub(crate) unsafe fn borrowed(registry: Arc<Registry>, pointer: NonNull<u8>, len: usize) -> Self {
        registry.insert_borrowed(pointer.as_ptr() as usize, len);
        Self { pointer, len, layout: None, registry }
    }

    /// The device address kernels receive.
    pub fn address(&self) -> u64 {
        self.pointer.as_ptr() as u64
    }

    /// Bytes that kernels may access.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-byte allocation.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `bytes` to the start of the allocation.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        self.write_bytes_at(0, bytes)
    }

    /// Copies `bytes` to the allocation at byte `offset`.
    pub fn write_bytes_at(&mut self, offset: usize, bytes: &[u8]) {
        assert!(
            offset + bytes.len() <= self.len,
            "{} bytes at {offset} do not fit an allocation of {}",
            bytes.len(),
            self.len
        );
        // SAFETY: the allocation holds `len >= offset + bytes.len()` bytes and `&mut self` excludes
        // kernels.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.pointer.as_ptr().add(offset), bytes.len()) };
    }

    /// Copies the first `bytes.len()` bytes of the allocation out.
    pub fn read_bytes(&self, bytes: &mut [u8]) {
        self.read_bytes_at(0, bytes)
    }

    /// Copies `bytes.len()` bytes of the allocation from byte `offset` on out.
    pub fn read_bytes_at(&self, offset: usize, bytes: &mut [u8]) {
        assert!(
            offset + bytes.len() <= self.len,
            "{} bytes at {offset} asked of an allocation of {}",
            bytes.len(),
            self.len
        );
        // SAFETY: the allocation holds `len >= offset + bytes.len()` bytes; no launch runs during a
        // host copy (launches block until done).
        unsafe { std::ptr::copy_nonoverlapping(self.pointer.as_ptr().add(offset), bytes.as_mut_ptr(), bytes.len()) };
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        let start = self.pointer.as_ptr() as usize;
        match self.layout {
            Some(layout) => {
                self.registry.remove(start);
                // SAFETY: allocated in `new` with this layout and not freed before.
                unsafe { dealloc(self.pointer.as_ptr(), layout) }
            }
            None => self.registry.remove_borrowed(start, self.len),
        }
    }
}

impl std::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceMemory({:#x}, {} bytes)", self.address(), self.len)
    }
}
