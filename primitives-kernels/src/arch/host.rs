//! The host side of `arch`: the same functions with the GPU's meaning, given by the SIMT emulator
//! ([`crate::emu`]). Outside an emulated launch they panic: a device intrinsic has no meaning there.
//!
//! Memory accesses are checked against the block's dynamic shared memory and the emulated device's
//! allocations; atomics are plain read-modify-writes (an emulated block runs on one OS thread, and
//! threads switch only at barriers and warp collectives); fences are no-ops for the same reason.

use std::prelude::rust_2021::*;

use std::panic::Location;

use crate::emu::{self, CollectiveOp};

/// `%tid.x`.
pub fn thread_idx_x() -> u32 {
    emu::with_current(|thread, _| thread.thread_idx())
}
/// `%ctaid.x`.
pub fn block_idx_x() -> u32 {
    emu::with_current(|_, block| block.block_idx())
}
/// `%ntid.x`.
pub fn block_dim_x() -> u32 {
    emu::with_current(|_, block| block.block_dim())
}
/// `%nctaid.x`.
pub fn grid_dim_x() -> u32 {
    emu::with_current(|_, block| block.grid_dim())
}
/// `%laneid`.
pub fn lane_id() -> u32 {
    thread_idx_x() % super::WARP_SIZE
}

/// `bar.sync 0`: a scheduling point; every thread of the block must reach the same call.
#[track_caller]
pub fn sync_threads() {
    emu::barrier(Location::caller())
}
/// `bar.warp.sync`.
#[track_caller]
pub fn sync_warp(mask: u32) {
    emu::collective(CollectiveOp::SyncWarp, mask, 0, Location::caller());
}

/// `shfl.sync.down.b32`.
#[track_caller]
pub fn shfl_down_sync_u32(mask: u32, value: u32, delta: u32) -> u32 {
    emu::collective(CollectiveOp::ShflDown(delta), mask, value, Location::caller())
}
/// `shfl.sync.up.b32`.
#[track_caller]
pub fn shfl_up_sync_u32(mask: u32, value: u32, delta: u32) -> u32 {
    emu::collective(CollectiveOp::ShflUp(delta), mask, value, Location::caller())
}
/// `shfl.sync.bfly.b32`.
#[track_caller]
pub fn shfl_xor_sync_u32(mask: u32, value: u32, lane_mask: u32) -> u32 {
    emu::collective(CollectiveOp::ShflXor(lane_mask), mask, value, Location::caller())
}
/// `shfl.sync.idx.b32`.
#[track_caller]
pub fn shfl_idx_sync_u32(mask: u32, value: u32, lane: u32) -> u32 {
    emu::collective(CollectiveOp::ShflIdx(lane), mask, value, Location::caller())
}
/// `vote.sync.all.pred`.
#[track_caller]
pub fn vote_all_sync(mask: u32, predicate: bool) -> bool {
    emu::collective(CollectiveOp::VoteAll, mask, predicate as u32, Location::caller()) != 0
}
/// `vote.sync.any.pred`.
#[track_caller]
pub fn vote_any_sync(mask: u32, predicate: bool) -> bool {
    emu::collective(CollectiveOp::VoteAny, mask, predicate as u32, Location::caller()) != 0
}
/// `vote.sync.ballot.b32`.
#[track_caller]
pub fn ballot_sync(mask: u32, predicate: bool) -> u32 {
    emu::collective(CollectiveOp::Ballot, mask, predicate as u32, Location::caller())
}
/// `match.any.sync.b32`: the lanes of `mask` whose `value` equals the caller's.
#[track_caller]
pub fn match_any_sync(mask: u32, value: u32) -> u32 {
    emu::collective(CollectiveOp::MatchAny, mask, value, Location::caller())
}
/// The lanes of the full warp whose `value` agrees with the caller's in bits 0 to 8 (nine
/// ballots on the device).
#[track_caller]
pub fn match_low9_sync(value: u32) -> u32 {
    emu::collective(CollectiveOp::MatchAny, u32::MAX, value & 0x1ff, Location::caller())
}
/// `activemask.b32`: in the emulator, the lanes of the warp that exist in the block.
pub fn active_mask() -> u32 {
    let (thread, threads) = emu::with_current(|t, b| (t.thread_idx(), b.block_dim()));
    let first = thread - thread % super::WARP_SIZE;
    let lanes = (threads - first).min(super::WARP_SIZE);
    if lanes == super::WARP_SIZE {
        u32::MAX
    } else {
        (1 << lanes) - 1
    }
}

/// Start of the block's dynamic shared memory (filled with 0xcd bytes at block start).
pub fn dynamic_shared_memory() -> *mut u8 {
    emu::with_current(|_, block| block.shared_memory())
}
/// `%dynamic_smem_size`.
pub fn dynamic_shared_size() -> u32 {
    emu::with_current(|_, block| block.shared_size() as u32)
}

/// A checked plain load.
///
/// # Safety
/// As for `ptr::read`; the emulator faults instead of reading outside device memory.
pub unsafe fn load<T: Copy>(ptr: *const T) -> T {
    emu::check_access(ptr as usize, size_of::<T>(), align_of::<T>());
    // SAFETY: checked to lie inside shared memory or a device allocation, and aligned.
    unsafe { ptr.read() }
}
/// A checked plain store.
///
/// # Safety
/// As for `ptr::write`; the emulator faults instead of writing outside device memory.
pub unsafe fn store<T: Copy>(ptr: *mut T, value: T) {
    emu::check_access(ptr as usize, size_of::<T>(), align_of::<T>());
    // SAFETY: checked to lie inside shared memory or a device allocation, and aligned.
    unsafe { ptr.write(value) }
}

macro_rules! atomic_rmw {
    ($($(#[$doc:meta])* $name:ident: $ty:ty, |$old:ident, $value:ident| $new:expr;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` valid and aligned (checked by the emulator).
        pub unsafe fn $name(ptr: *mut $ty, $value: $ty) -> $ty {
            // SAFETY: `load`/`store` check the address.
            let $old = unsafe { load(ptr) };
            // SAFETY: as above.
            unsafe { store(ptr, $new) };
            $old
        }
    )*};
}

atomic_rmw! {
    /// `atom.relaxed.gpu.add.u32`.
    atomic_add_u32_gpu: u32, |old, value| old.wrapping_add(value);
    /// `atom.relaxed.cta.add.u32`.
    atomic_add_u32_cta: u32, |old, value| old.wrapping_add(value);
    /// `atom.relaxed.gpu.add.u64`.
    atomic_add_u64_gpu: u64, |old, value| old.wrapping_add(value);
    /// `atom.relaxed.cta.add.u64`.
    atomic_add_u64_cta: u64, |old, value| old.wrapping_add(value);
    /// `atom.relaxed.gpu.add.f32`.
    atomic_add_f32_gpu: f32, |old, value| old + value;
    /// `atom.relaxed.cta.add.f32`.
    atomic_add_f32_cta: f32, |old, value| old + value;
    /// `atom.relaxed.gpu.add.f64`.
    atomic_add_f64_gpu: f64, |old, value| old + value;
    /// `atom.relaxed.cta.add.f64`.
    atomic_add_f64_cta: f64, |old, value| old + value;
    /// `atom.relaxed.gpu.max.u32`.
    atomic_max_u32_gpu: u32, |old, value| old.max(value);
    /// `atom.relaxed.gpu.min.u32`.
    atomic_min_u32_gpu: u32, |old, value| old.min(value);
    /// `atom.relaxed.gpu.max.u64`.
    atomic_max_u64_gpu: u64, |old, value| old.max(value);
    /// `atom.relaxed.gpu.exch.b32`.
    atomic_exch_u32_gpu: u32, |_old, value| value;
    /// `atom.relaxed.gpu.exch.b64`.
    atomic_exch_u64_gpu: u64, |_old, value| value;
}

macro_rules! atomic_cas {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` valid and aligned (checked by the emulator).
        pub unsafe fn $name(ptr: *mut $ty, expected: $ty, new: $ty) -> $ty {
            // SAFETY: `load`/`store` check the address.
            let old = unsafe { load(ptr) };
            if old == expected {
                // SAFETY: as above.
                unsafe { store(ptr, new) };
            }
            old
        }
    )*};
}

atomic_cas! {
    /// `atom.relaxed.gpu.cas.b32`.
    atomic_cas_u32_gpu: u32;
    /// `atom.relaxed.cta.cas.b32`.
    atomic_cas_u32_cta: u32;
    /// `atom.relaxed.gpu.cas.b64`.
    atomic_cas_u64_gpu: u64;
}

/// Faults unless `[ptr, ptr + size)` lies in the block's dynamic shared memory: the `.shared`
/// atomics below take shared addresses only.
fn check_shared(ptr: usize, size: usize) {
    let (base, len) = emu::with_current(|_, block| (block.shared_memory() as usize, block.shared_size()));
    if ptr < base || ptr + size > base + len {
        emu::fault(emu::Fault::SharedOutOfBounds { offset: ptr.wrapping_sub(base), size, dynamic_size: len });
    }
}

macro_rules! shared_red {
    ($($(#[$doc:meta])* $name:ident: $ty:ty, |$old:ident, $value:ident| $new:expr;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` in the block's shared memory and aligned (checked by the emulator).
        pub unsafe fn $name(ptr: *mut $ty, $value: $ty) {
            check_shared(ptr as usize, size_of::<$ty>());
            // SAFETY: `load`/`store` check the address.
            let $old = unsafe { load(ptr) };
            // SAFETY: as above.
            unsafe { store(ptr, $new) };
        }
    )*};
}

shared_red! {
    /// `red.relaxed.cta.shared.add.u32`.
    red_add_u32_shared: u32, |old, value| old.wrapping_add(value);
    /// `red.relaxed.cta.shared.add.f32`.
    red_add_f32_shared: f32, |old, value| old + value;
    /// `red.relaxed.cta.shared.add.f64`.
    red_add_f64_shared: f64, |old, value| old + value;
}

/// `red.relaxed.cta.shared.add.u32` at a `.shared` address.
///
/// # Safety
/// `address` 4 bytes of shared memory, aligned (checked).
pub unsafe fn red_add_u32_shared_at(address: u32, value: u32) {
    // SAFETY: forwarded; `shared_pointer` checks the address.
    unsafe { red_add_u32_shared(shared_pointer(address, 4, 4).cast::<u32>(), value) }
}

/// `atom.relaxed.cta.shared.add.u32` at a `.shared` address: returns the previous value.
///
/// # Safety
/// `address` 4 bytes of shared memory, aligned (checked).
pub unsafe fn atomic_add_u32_shared_at(address: u32, value: u32) -> u32 {
    // SAFETY: forwarded; `shared_pointer` checks the address.
    unsafe { atomic_add_u32_shared(shared_pointer(address, 4, 4).cast::<u32>(), value) }
}

/// `atom.relaxed.cta.shared.add.u32`: returns the previous value.
///
/// # Safety
/// `ptr` in the block's shared memory and aligned (checked by the emulator).
pub unsafe fn atomic_add_u32_shared(ptr: *mut u32, value: u32) -> u32 {
    check_shared(ptr as usize, 4);
    // SAFETY: `load`/`store` check the address.
    let old = unsafe { load(ptr) };
    // SAFETY: as above.
    unsafe { store(ptr, old.wrapping_add(value)) };
    old
}

macro_rules! ordered_load {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` valid and aligned (checked by the emulator).
        pub unsafe fn $name(ptr: *const $ty) -> $ty {
            // SAFETY: `load` checks the address.
            unsafe { load(ptr) }
        }
    )*};
}

macro_rules! ordered_store {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` valid and aligned (checked by the emulator).
        pub unsafe fn $name(ptr: *mut $ty, value: $ty) {
            // SAFETY: `store` checks the address.
            unsafe { store(ptr, value) }
        }
    )*};
}

ordered_load! {
    /// `ld.acquire.gpu.u32`.
    load_acquire_u32_gpu: u32;
    /// `ld.acquire.gpu.u64`.
    load_acquire_u64_gpu: u64;
    /// `ld.relaxed.gpu.u32`.
    load_relaxed_u32_gpu: u32;
    /// `ld.relaxed.gpu.u64`.
    load_relaxed_u64_gpu: u64;
}

ordered_store! {
    /// `st.release.gpu.u32`.
    store_release_u32_gpu: u32;
    /// `st.release.gpu.u64`.
    store_release_u64_gpu: u64;
    /// `st.relaxed.gpu.u32`.
    store_relaxed_u32_gpu: u32;
    /// `st.relaxed.gpu.u64`.
    store_relaxed_u64_gpu: u64;
}

/// `fence.acq_rel.gpu` (nothing to order in the emulator).
pub fn fence_acq_rel_gpu() {}
/// `fence.acq_rel.cta`.
pub fn fence_acq_rel_cta() {}
/// `fence.sc.gpu`.
pub fn fence_sc_gpu() {}

/// `ld.global.nc.v4.u32`.
///
/// # Safety
/// 16 readable, 16-byte aligned bytes (checked by the emulator).
pub unsafe fn load_global_nc_v4(ptr: *const [u32; 4]) -> [u32; 4] {
    emu::check_access(ptr as usize, 16, 16);
    // SAFETY: checked above.
    unsafe { ptr.read() }
}

/// `st.global.v4.u32`.
///
/// # Safety
/// 16 writable, 16-byte aligned bytes (checked by the emulator).
pub unsafe fn store_global_v4(ptr: *mut [u32; 4], value: [u32; 4]) {
    emu::check_access(ptr as usize, 16, 16);
    // SAFETY: checked above.
    unsafe { ptr.write(value) }
}

/// The `.shared` address of a generic pointer into shared memory: its offset from the start of the
/// block's dynamic shared memory (faults outside it).
pub fn shared_address<T>(ptr: *const T) -> u32 {
    check_shared(ptr as usize, 0);
    (ptr as usize - dynamic_shared_memory() as usize) as u32
}

/// The generic pointer of `.shared` address `address`, checked for `size` bytes aligned to `align`.
fn shared_pointer(address: u32, size: usize, align: usize) -> *mut u8 {
    // SAFETY: only forms the address; the checks below fault before any access outside.
    let ptr = unsafe { dynamic_shared_memory().add(address as usize) };
    check_shared(ptr as usize, size);
    emu::check_access(ptr as usize, size, align);
    ptr
}

/// `cp.async.cg.shared.global` of 16 bytes: copied at once (the emulator has no copy in flight).
///
/// # Safety
/// `dst` 16 bytes of shared memory, `src` 16 readable bytes, both 16-byte aligned (checked).
pub unsafe fn cp_async_16(dst: u32, src: *const [u32; 4]) {
    let dst = shared_pointer(dst, 16, 16).cast::<[u32; 4]>();
    emu::check_access(src as usize, 16, 16);
    // SAFETY: checked above.
    unsafe { dst.write(src.read()) }
}

/// `cp.async.wait_all`: the emulator's copies have landed already.
pub fn cp_async_wait_all() {}

/// `ld.shared.b32`.
///
/// # Safety
/// 4 readable, 4-byte aligned bytes of shared memory (checked).
pub unsafe fn load_shared_b32(address: u32) -> u32 {
    // SAFETY: checked by `shared_pointer`.
    unsafe { shared_pointer(address, 4, 4).cast::<u32>().read() }
}

/// `ld.shared.v2.u32`.
///
/// # Safety
/// 8 readable, 8-byte aligned bytes of shared memory (checked).
pub unsafe fn load_shared_v2(address: u32) -> [u32; 2] {
    // SAFETY: checked by `shared_pointer`.
    unsafe { shared_pointer(address, 8, 8).cast::<[u32; 2]>().read() }
}

/// `ld.shared.u8`, zero-extended.
///
/// # Safety
/// One readable byte of shared memory (checked).
pub unsafe fn load_shared_u8(address: u32) -> u32 {
    // SAFETY: checked by `shared_pointer`.
    unsafe { shared_pointer(address, 1, 1).read() as u32 }
}

/// `ld.shared.v4.u32`.
///
/// # Safety
/// 16 readable, 16-byte aligned bytes of shared memory (checked).
pub unsafe fn load_shared_v4(address: u32) -> [u32; 4] {
    // SAFETY: checked by `shared_pointer`.
    unsafe { shared_pointer(address, 16, 16).cast::<[u32; 4]>().read() }
}

/// `st.shared.b32`.
///
/// # Safety
/// 4 writable, 4-byte aligned bytes of shared memory (checked).
pub unsafe fn store_shared_b32(address: u32, value: u32) {
    // SAFETY: checked by `shared_pointer`.
    unsafe { shared_pointer(address, 4, 4).cast::<u32>().write(value) }
}

/// `st.shared.v2.u32`.
///
/// # Safety
/// 8 writable, 8-byte aligned bytes of shared memory (checked).
pub unsafe fn store_shared_v2(address: u32, value: [u32; 2]) {
    // SAFETY: checked by `shared_pointer`.
    unsafe { shared_pointer(address, 8, 8).cast::<[u32; 2]>().write(value) }
}

/// `st.shared.v4.u32`.
///
/// # Safety
/// 16 writable, 16-byte aligned bytes of shared memory (checked).
pub unsafe fn store_shared_v4(address: u32, value: [u32; 4]) {
    // SAFETY: checked by `shared_pointer`.
    unsafe { shared_pointer(address, 16, 16).cast::<[u32; 4]>().write(value) }
}

/// `%globaltimer`: the host's monotonic clock in nanoseconds.
pub fn global_timer() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}
/// `%clock64`: the host's clock, as for [`global_timer`].
pub fn clock64() -> u64 {
    global_timer()
}
/// `%smid`: the emulator has one multiprocessor.
pub fn sm_id() -> u32 {
    0
}

/// `nanosleep.u32`: nothing to wait for in the emulator (other blocks do not run meanwhile).
pub fn nanosleep(_ns: u32) {}

/// `trap`: ends the launch with [`emu::Fault::Trap`].
pub fn trap() -> ! {
    emu::fault(emu::Fault::Trap)
}
