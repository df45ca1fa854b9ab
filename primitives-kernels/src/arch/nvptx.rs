//! The NVPTX implementation of `arch`: one PTX instruction per function.

use core::arch::asm;
use core::arch::nvptx;

// Dynamic shared memory of the launch, sized by the host's `shared_mem_bytes`.
core::arch::global_asm!(".extern .shared .align 16 .b8 primitives_dynamic_shared[];");

#[allow(improper_ctypes)]
extern "C" {
    #[link_name = "llvm.nvvm.read.ptx.sreg.laneid"]
    fn llvm_laneid() -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn llvm_shfl_down(mask: u32, value: u32, delta: u32, clamp: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn llvm_shfl_up(mask: u32, value: u32, delta: u32, clamp: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn llvm_shfl_bfly(mask: u32, value: u32, lane_mask: u32, clamp: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn llvm_shfl_idx(mask: u32, value: u32, lane: u32, clamp: u32) -> u32;
    #[link_name = "llvm.nvvm.vote.all.sync"]
    fn llvm_vote_all(mask: u32, predicate: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.any.sync"]
    fn llvm_vote_any(mask: u32, predicate: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn llvm_vote_ballot(mask: u32, predicate: bool) -> u32;
    #[link_name = "llvm.nvvm.match.any.sync.i32"]
    fn llvm_match_any(mask: u32, value: u32) -> u32;
    #[link_name = "llvm.nvvm.activemask"]
    fn llvm_activemask() -> u32;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn llvm_bar_warp_sync(mask: u32);
}

// ---- indices --------------------------------------------------------------------------------------

/// `%tid.x`: the thread's index in its block.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_x() as u32 }
}
/// `%ctaid.x`: the block's index in the grid.
#[inline(always)]
pub fn block_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_x() as u32 }
}
/// `%ntid.x`: threads per block.
#[inline(always)]
pub fn block_dim_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_dim_x() as u32 }
}
/// `%nctaid.x`: blocks in the grid.
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_grid_dim_x() as u32 }
}
/// `%laneid`: the thread's lane in its warp.
#[inline(always)]
pub fn lane_id() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { llvm_laneid() }
}

// ---- barriers -------------------------------------------------------------------------------------

/// Block-wide barrier (`bar.sync 0`), also ordering shared- and global-memory accesses of the block.
/// Every thread of the block must reach the same call.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: the barrier has no memory-safety preconditions; reaching it from every thread is the
    // caller's algorithmic contract (a deadlock, not UB, if broken).
    unsafe { nvptx::_syncthreads() }
}
/// `bar.warp.sync mask`: the named lanes wait for each other and their memory accesses are ordered.
#[inline(always)]
pub fn sync_warp(mask: u32) {
    // SAFETY: no memory-safety preconditions.
    unsafe { llvm_bar_warp_sync(mask) }
}

// ---- warp shuffles and votes ----------------------------------------------------------------------

/// `shfl.sync.down.b32`.
#[inline(always)]
pub fn shfl_down_sync_u32(mask: u32, value: u32, delta: u32) -> u32 {
    // SAFETY: a register exchange; clamp 0x1f = whole-warp segment.
    unsafe { llvm_shfl_down(mask, value, delta, 0x1f) }
}
/// `shfl.sync.up.b32`.
#[inline(always)]
pub fn shfl_up_sync_u32(mask: u32, value: u32, delta: u32) -> u32 {
    // SAFETY: a register exchange; clamp 0 = whole-warp segment for `up`.
    unsafe { llvm_shfl_up(mask, value, delta, 0) }
}
/// `shfl.sync.bfly.b32`.
#[inline(always)]
pub fn shfl_xor_sync_u32(mask: u32, value: u32, lane_mask: u32) -> u32 {
    // SAFETY: a register exchange.
    unsafe { llvm_shfl_bfly(mask, value, lane_mask, 0x1f) }
}
/// `shfl.sync.idx.b32`.
#[inline(always)]
pub fn shfl_idx_sync_u32(mask: u32, value: u32, lane: u32) -> u32 {
    // SAFETY: a register exchange.
    unsafe { llvm_shfl_idx(mask, value, lane, 0x1f) }
}
/// `vote.sync.all.pred`: true when the predicate holds on every lane of `mask`.
#[inline(always)]
pub fn vote_all_sync(mask: u32, predicate: bool) -> bool {
    // SAFETY: a warp vote on registers.
    unsafe { llvm_vote_all(mask, predicate) }
}
/// `vote.sync.any.pred`: true when the predicate holds on some lane of `mask`.
#[inline(always)]
pub fn vote_any_sync(mask: u32, predicate: bool) -> bool {
    // SAFETY: a warp vote on registers.
    unsafe { llvm_vote_any(mask, predicate) }
}
/// `vote.sync.ballot.b32`: bit `i` set when lane `i` of `mask` has the predicate.
#[inline(always)]
pub fn ballot_sync(mask: u32, predicate: bool) -> u32 {
    // SAFETY: a warp vote on registers.
    unsafe { llvm_vote_ballot(mask, predicate) }
}
/// `match.any.sync.b32`: the lanes of `mask` whose `value` equals the caller's.
#[inline(always)]
pub fn match_any_sync(mask: u32, value: u32) -> u32 {
    // SAFETY: a warp collective on registers.
    unsafe { llvm_match_any(mask, value) }
}
/// The lanes of the full warp whose `value` agrees with the caller's in bits 0 to 8: one
/// `vote.ballot` per bit, each keeping the lanes that agree on it, as one asm block (so that LLVM
/// still unrolls the loops around it). Votes have short fixed latency where `match.any.sync` goes
/// through the shared-memory unit.
#[inline(always)]
pub fn match_low9_sync(value: u32) -> u32 {
    let peers: u32;
    // Not `pure`: a warp collective must not be merged, dropped or moved into a branch by LLVM.
    // SAFETY: warp votes on registers, every lane of the warp taking part.
    unsafe {
        asm!(
            "{{ .reg .pred p; .reg .b32 m, t;",
            "mov.b32 {0}, -1;",
            "and.b32 t, {1}, 1; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "and.b32 t, {1}, 2; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "and.b32 t, {1}, 4; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "and.b32 t, {1}, 8; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "and.b32 t, {1}, 16; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "and.b32 t, {1}, 32; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "and.b32 t, {1}, 64; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "and.b32 t, {1}, 128; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "and.b32 t, {1}, 256; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 m, p, -1; @!p not.b32 m, m; and.b32 {0}, {0}, m;",
            "}}",
            out(reg32) peers, in(reg32) value, options(nomem, nostack)
        )
    };
    peers
}
/// `activemask.b32`: the lanes currently executing together.
#[inline(always)]
pub fn active_mask() -> u32 {
    // SAFETY: reads the active-lane mask.
    unsafe { llvm_activemask() }
}

// ---- shared memory --------------------------------------------------------------------------------

/// Generic pointer to the start of the launch's dynamic shared memory (16-byte aligned).
#[inline(always)]
pub fn dynamic_shared_memory() -> *mut u8 {
    let ptr: u64;
    // SAFETY: converts the address of the declared `.extern .shared` array; touches no memory.
    unsafe { asm!("cvta.shared.u64 {0}, primitives_dynamic_shared;", out(reg64) ptr, options(pure, nomem, nostack)) };
    ptr as *mut u8
}
/// `%dynamic_smem_size`: bytes of dynamic shared memory this launch was given.
#[inline(always)]
pub fn dynamic_shared_size() -> u32 {
    let size: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {0}, %dynamic_smem_size;", out(reg32) size, options(pure, nomem, nostack)) };
    size
}

// ---- plain loads and stores -----------------------------------------------------------------------

/// A plain (weak) load through a generic pointer. Algorithms use this rather than dereferencing, so
/// that the emulator can check every access.
///
/// # Safety
/// As for `core::ptr::read`.
#[inline(always)]
pub unsafe fn load<T: Copy>(ptr: *const T) -> T {
    // SAFETY: forwarded to the caller.
    unsafe { ptr.read() }
}
/// A plain (weak) store through a generic pointer.
///
/// # Safety
/// As for `core::ptr::write`.
#[inline(always)]
pub unsafe fn store<T: Copy>(ptr: *mut T, value: T) {
    // SAFETY: forwarded to the caller.
    unsafe { ptr.write(value) }
}

// ---- atomics with explicit scope ------------------------------------------------------------------

macro_rules! atomic_rmw {
    ($($(#[$doc:meta])* $name:ident: $ty:ty, $reg:ident, $instr:literal;)*) => {$(
        $(#[$doc])*
        /// Relaxed ordering; returns the previous value.
        ///
        /// # Safety
        /// `ptr` must be valid, aligned, and point to global or shared memory.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $ty, value: $ty) -> $ty {
            let old: $ty;
            // SAFETY: the caller vouches for `ptr`; the instruction is a single atomic access.
            unsafe { asm!(concat!($instr, " {0}, [{1}], {2};"), out($reg) old, in(reg64) ptr as u64, in($reg) value, options(nostack)) };
            old
        }
    )*};
}

atomic_rmw! {
    /// `atom.relaxed.gpu.add.u32`.
    atomic_add_u32_gpu: u32, reg32, "atom.relaxed.gpu.add.u32";
    /// `atom.relaxed.cta.add.u32`.
    atomic_add_u32_cta: u32, reg32, "atom.relaxed.cta.add.u32";
    /// `atom.relaxed.gpu.add.u64`.
    atomic_add_u64_gpu: u64, reg64, "atom.relaxed.gpu.add.u64";
    /// `atom.relaxed.cta.add.u64`.
    atomic_add_u64_cta: u64, reg64, "atom.relaxed.cta.add.u64";
    /// `atom.relaxed.gpu.add.f32`.
    atomic_add_f32_gpu: f32, reg32, "atom.relaxed.gpu.add.f32";
    /// `atom.relaxed.cta.add.f32`.
    atomic_add_f32_cta: f32, reg32, "atom.relaxed.cta.add.f32";
    /// `atom.relaxed.gpu.add.f64`.
    atomic_add_f64_gpu: f64, reg64, "atom.relaxed.gpu.add.f64";
    /// `atom.relaxed.cta.add.f64`.
    atomic_add_f64_cta: f64, reg64, "atom.relaxed.cta.add.f64";
    /// `atom.relaxed.gpu.max.u32`.
    atomic_max_u32_gpu: u32, reg32, "atom.relaxed.gpu.max.u32";
    /// `atom.relaxed.gpu.min.u32`.
    atomic_min_u32_gpu: u32, reg32, "atom.relaxed.gpu.min.u32";
    /// `atom.relaxed.gpu.max.u64`.
    atomic_max_u64_gpu: u64, reg64, "atom.relaxed.gpu.max.u64";
    /// `atom.relaxed.gpu.exch.b32`.
    atomic_exch_u32_gpu: u32, reg32, "atom.relaxed.gpu.exch.b32";
    /// `atom.relaxed.gpu.exch.b64`.
    atomic_exch_u64_gpu: u64, reg64, "atom.relaxed.gpu.exch.b64";
}

macro_rules! atomic_cas {
    ($($(#[$doc:meta])* $name:ident: $ty:ty, $reg:ident, $instr:literal;)*) => {$(
        $(#[$doc])*
        /// Relaxed ordering; stores `new` when `*ptr == expected`, returns the previous value.
        ///
        /// # Safety
        /// `ptr` must be valid, aligned, and point to global or shared memory.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $ty, expected: $ty, new: $ty) -> $ty {
            let old: $ty;
            // SAFETY: the caller vouches for `ptr`; the instruction is a single atomic access.
            unsafe { asm!(concat!($instr, " {0}, [{1}], {2}, {3};"), out($reg) old, in(reg64) ptr as u64, in($reg) expected, in($reg) new, options(nostack)) };
            old
        }
    )*};
}

atomic_cas! {
    /// `atom.relaxed.gpu.cas.b32`.
    atomic_cas_u32_gpu: u32, reg32, "atom.relaxed.gpu.cas.b32";
    /// `atom.relaxed.cta.cas.b32`.
    atomic_cas_u32_cta: u32, reg32, "atom.relaxed.cta.cas.b32";
    /// `atom.relaxed.gpu.cas.b64`.
    atomic_cas_u64_gpu: u64, reg64, "atom.relaxed.gpu.cas.b64";
}

// ---- shared-memory atomics -----------------------------------------------------------------------
// The `.shared` state space (the generic address converted by `cvta.to.shared`) lets ptxas emit the
// shared-memory atomic unit's own instructions (ATOMS) without the generic-address check.

macro_rules! shared_red {
    ($($(#[$doc:meta])* $name:ident: $ty:ty, $reg:ident, $instr:literal;)*) => {$(
        $(#[$doc])*
        /// Relaxed ordering, block scope, no result.
        ///
        /// # Safety
        /// `ptr` must be a generic address inside the block's shared memory, aligned for the type.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $ty, value: $ty) {
            // SAFETY: the caller vouches for `ptr`; one atomic access to shared memory.
            unsafe {
                asm!(
                    concat!("cvta.to.shared.u64 {s}, {p};\n", $instr, " [{s}], {v};"),
                    s = out(reg64) _, p = in(reg64) ptr as u64, v = in($reg) value, options(nostack)
                )
            };
        }
    )*};
}

shared_red! {
    /// `red.relaxed.cta.shared.add.u32`.
    red_add_u32_shared: u32, reg32, "red.relaxed.cta.shared.add.u32";
    /// `red.relaxed.cta.shared.add.f32`.
    red_add_f32_shared: f32, reg32, "red.relaxed.cta.shared.add.f32";
    /// `red.relaxed.cta.shared.add.f64`.
    red_add_f64_shared: f64, reg64, "red.relaxed.cta.shared.add.f64";
}

/// `atom.relaxed.cta.shared.add.u32`: returns the previous value.
///
/// # Safety
/// `ptr` must be a generic address inside the block's shared memory, 4-byte aligned.
#[inline(always)]
pub unsafe fn atomic_add_u32_shared(ptr: *mut u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller vouches for `ptr`; one atomic access to shared memory.
    unsafe {
        asm!(
            "cvta.to.shared.u64 {s}, {p};\natom.relaxed.cta.shared.add.u32 {o}, [{s}], {v};",
            s = out(reg64) _, o = out(reg32) old, p = in(reg64) ptr as u64, v = in(reg32) value, options(nostack)
        )
    };
    old
}

/// `red.relaxed.cta.shared.add.u32` at a `.shared` address (see [`shared_address`]): a 32-bit
/// address register rather than a converted 64-bit pointer.
///
/// # Safety
/// `address` 4 writable, 4-byte aligned bytes of shared memory.
#[inline(always)]
pub unsafe fn red_add_u32_shared_at(address: u32, value: u32) {
    // SAFETY: the caller vouches for `address`; one atomic access to shared memory.
    unsafe { asm!("red.relaxed.cta.shared.add.u32 [{0}], {1};", in(reg32) address, in(reg32) value, options(nostack)) };
}

/// `atom.relaxed.cta.shared.add.u32` at a `.shared` address: returns the previous value.
///
/// # Safety
/// `address` 4 writable, 4-byte aligned bytes of shared memory.
#[inline(always)]
pub unsafe fn atomic_add_u32_shared_at(address: u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller vouches for `address`; one atomic access to shared memory.
    unsafe {
        asm!(
            "atom.relaxed.cta.shared.add.u32 {0}, [{1}], {2};",
            out(reg32) old, in(reg32) address, in(reg32) value, options(nostack)
        )
    };
    old
}

// ---- ordered loads and stores, fences -------------------------------------------------------------

macro_rules! ordered_load {
    ($($(#[$doc:meta])* $name:ident: $ty:ty, $reg:ident, $instr:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` must be valid for reads and aligned.
        #[inline(always)]
        pub unsafe fn $name(ptr: *const $ty) -> $ty {
            let value: $ty;
            // SAFETY: the caller vouches for `ptr`.
            unsafe { asm!(concat!($instr, " {0}, [{1}];"), out($reg) value, in(reg64) ptr as u64, options(nostack)) };
            value
        }
    )*};
}

macro_rules! ordered_store {
    ($($(#[$doc:meta])* $name:ident: $ty:ty, $reg:ident, $instr:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` must be valid for writes and aligned.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $ty, value: $ty) {
            // SAFETY: the caller vouches for `ptr`.
            unsafe { asm!(concat!($instr, " [{0}], {1};"), in(reg64) ptr as u64, in($reg) value, options(nostack)) };
        }
    )*};
}

ordered_load! {
    /// `ld.acquire.gpu.u32`: later accesses of this thread are ordered after it.
    load_acquire_u32_gpu: u32, reg32, "ld.acquire.gpu.u32";
    /// `ld.acquire.gpu.u64`.
    load_acquire_u64_gpu: u64, reg64, "ld.acquire.gpu.u64";
    /// `ld.relaxed.gpu.u32`: coherent at GPU scope (bypasses a stale L1 line), no ordering.
    load_relaxed_u32_gpu: u32, reg32, "ld.relaxed.gpu.u32";
    /// `ld.relaxed.gpu.u64`.
    load_relaxed_u64_gpu: u64, reg64, "ld.relaxed.gpu.u64";
}

ordered_store! {
    /// `st.release.gpu.u32`: earlier accesses of this thread are ordered before it.
    store_release_u32_gpu: u32, reg32, "st.release.gpu.u32";
    /// `st.release.gpu.u64`.
    store_release_u64_gpu: u64, reg64, "st.release.gpu.u64";
    /// `st.relaxed.gpu.u32`.
    store_relaxed_u32_gpu: u32, reg32, "st.relaxed.gpu.u32";
    /// `st.relaxed.gpu.u64`.
    store_relaxed_u64_gpu: u64, reg64, "st.relaxed.gpu.u64";
}

/// `fence.acq_rel.gpu`: a release and acquire fence at GPU scope.
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    // SAFETY: a fence touches no memory itself.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
}
/// `fence.acq_rel.cta`.
#[inline(always)]
pub fn fence_acq_rel_cta() {
    // SAFETY: a fence touches no memory itself.
    unsafe { asm!("fence.acq_rel.cta;", options(nostack)) };
}
/// `fence.sc.gpu` (CUDA's `__threadfence`).
#[inline(always)]
pub fn fence_sc_gpu() {
    // SAFETY: a fence touches no memory itself.
    unsafe { asm!("fence.sc.gpu;", options(nostack)) };
}

// ---- wide loads -----------------------------------------------------------------------------------

/// `ld.global.nc.v4.u32`: one 16-byte load through the read-only (non-coherent) path.
///
/// # Safety
/// `ptr` must point to 16 readable, 16-byte aligned bytes of global memory that no thread writes
/// during the kernel.
#[inline(always)]
pub unsafe fn load_global_nc_v4(ptr: *const [u32; 4]) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller vouches for `ptr`; `pure, readonly` lets LLVM keep several loads in flight.
    unsafe {
        asm!(
            "ld.global.nc.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) ptr as u64,
            options(pure, readonly, nostack)
        )
    };
    [a, b, c, d]
}

/// `st.global.v4.u32`: one 16-byte store.
///
/// # Safety
/// `ptr` must point to 16 writable, 16-byte aligned bytes of global memory.
#[inline(always)]
pub unsafe fn store_global_v4(ptr: *mut [u32; 4], value: [u32; 4]) {
    // SAFETY: the caller vouches for `ptr`.
    unsafe {
        asm!(
            "st.global.v4.u32 [{0}], {{{1}, {2}, {3}, {4}}};",
            in(reg64) ptr as u64, in(reg32) value[0], in(reg32) value[1], in(reg32) value[2], in(reg32) value[3],
            options(nostack)
        )
    };
}

// ---- asynchronous copies into shared memory (sm_80) ------------------------------------------------

/// The `.shared` address (a 32-bit offset into the block's shared window) of a generic pointer into
/// shared memory, for the instructions below that take one: computing it once and adding offsets
/// keeps 32-bit rather than 64-bit addresses live.
#[inline(always)]
pub fn shared_address<T>(ptr: *const T) -> u32 {
    let address: u64;
    // SAFETY: converts an address; touches no memory.
    unsafe {
        asm!("cvta.to.shared.u64 {0}, {1};", out(reg64) address, in(reg64) ptr as u64, options(pure, nomem, nostack))
    };
    address as u32
}

/// `cp.async.cg.shared.global` of 16 bytes: starts copying `src` (global) to the `.shared` address
/// `dst` without holding registers while the load is in flight. [`cp_async_wait_all`], then a
/// barrier, make the data visible to the block.
///
/// # Safety
/// `dst` 16 writable, 16-byte aligned bytes of shared memory (see [`shared_address`]); `src` 16
/// readable, 16-byte aligned bytes of global memory that no thread writes during the kernel.
#[inline(always)]
pub unsafe fn cp_async_16(dst: u32, src: *const [u32; 4]) {
    // SAFETY: the caller vouches for both addresses; the copy lands before `cp.async.wait_all`.
    unsafe {
        asm!("cp.async.cg.shared.global [{0}], [{1}], 16;", in(reg32) dst, in(reg64) src as u64, options(nostack))
    };
}

/// `cp.async.wait_all`: waits until this thread's asynchronous copies have landed in shared memory.
#[inline(always)]
pub fn cp_async_wait_all() {
    // SAFETY: waits on the calling thread's own copies; no operands.
    unsafe { asm!("cp.async.wait_all;", options(nostack)) };
}

/// `ld.shared.v4.u32` at a `.shared` address.
///
/// # Safety
/// `address` 16 readable, 16-byte aligned bytes of shared memory (see [`shared_address`]).
#[inline(always)]
pub unsafe fn load_shared_v4(address: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller vouches for `address`.
    unsafe {
        asm!(
            "ld.shared.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg32) address,
            options(readonly, nostack)
        )
    };
    [a, b, c, d]
}

/// `ld.shared.b32` at a `.shared` address.
///
/// # Safety
/// `address` 4 readable, 4-byte aligned bytes of shared memory (see [`shared_address`]).
#[inline(always)]
pub unsafe fn load_shared_b32(address: u32) -> u32 {
    let value: u32;
    // SAFETY: the caller vouches for `address`.
    unsafe { asm!("ld.shared.b32 {0}, [{1}];", out(reg32) value, in(reg32) address, options(readonly, nostack)) };
    value
}

/// `ld.shared.v2.u32` at a `.shared` address.
///
/// # Safety
/// `address` 8 readable, 8-byte aligned bytes of shared memory (see [`shared_address`]).
#[inline(always)]
pub unsafe fn load_shared_v2(address: u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    // SAFETY: the caller vouches for `address`.
    unsafe {
        asm!(
            "ld.shared.v2.u32 {{{0}, {1}}}, [{2}];",
            out(reg32) a, out(reg32) b, in(reg32) address,
            options(readonly, nostack)
        )
    };
    [a, b]
}

/// `ld.shared.u8` at a `.shared` address, zero-extended.
///
/// # Safety
/// `address` one readable byte of shared memory (see [`shared_address`]).
#[inline(always)]
pub unsafe fn load_shared_u8(address: u32) -> u32 {
    let value: u32;
    // SAFETY: the caller vouches for `address`.
    unsafe { asm!("ld.shared.u8 {0}, [{1}];", out(reg32) value, in(reg32) address, options(readonly, nostack)) };
    value
}

/// `st.shared.b32` at a `.shared` address.
///
/// # Safety
/// `address` 4 writable, 4-byte aligned bytes of shared memory (see [`shared_address`]).
#[inline(always)]
pub unsafe fn store_shared_b32(address: u32, value: u32) {
    // SAFETY: the caller vouches for `address`.
    unsafe { asm!("st.shared.b32 [{0}], {1};", in(reg32) address, in(reg32) value, options(nostack)) };
}

/// `st.shared.v2.u32` at a `.shared` address.
///
/// # Safety
/// `address` 8 writable, 8-byte aligned bytes of shared memory (see [`shared_address`]).
#[inline(always)]
pub unsafe fn store_shared_v2(address: u32, value: [u32; 2]) {
    // SAFETY: the caller vouches for `address`.
    unsafe {
        asm!("st.shared.v2.u32 [{0}], {{{1}, {2}}};", in(reg32) address, in(reg32) value[0], in(reg32) value[1], options(nostack))
    };
}

/// `st.shared.v4.u32` at a `.shared` address.
///
/// # Safety
/// `address` 16 writable, 16-byte aligned bytes of shared memory (see [`shared_address`]).
#[inline(always)]
pub unsafe fn store_shared_v4(address: u32, value: [u32; 4]) {
    // SAFETY: the caller vouches for `address`.
    unsafe {
        asm!(
            "st.shared.v4.u32 [{0}], {{{1}, {2}, {3}, {4}}};",
            in(reg32) address, in(reg32) value[0], in(reg32) value[1], in(reg32) value[2], in(reg32) value[3],
            options(nostack)
        )
    };
}

// ---- clocks (timing experiments) ------------------------------------------------------------------

/// `%globaltimer`: nanoseconds of a clock shared by the whole GPU.
#[inline(always)]
pub fn global_timer() -> u64 {
    let t: u64;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u64 {0}, %globaltimer;", out(reg64) t, options(nomem, nostack)) };
    t
}

/// `%clock64`: cycles of the multiprocessor's own counter.
#[inline(always)]
pub fn clock64() -> u64 {
    let t: u64;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u64 {0}, %clock64;", out(reg64) t, options(nomem, nostack)) };
    t
}

/// `%smid`: the multiprocessor running the thread.
#[inline(always)]
pub fn sm_id() -> u32 {
    let id: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {0}, %smid;", out(reg32) id, options(nomem, nostack)) };
    id
}

/// `nanosleep.u32`: suspends the thread for about `ns` nanoseconds (0 to 1 ms), to back off while
/// polling memory another block will write.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    // SAFETY: no memory effects.
    unsafe { asm!("nanosleep.u32 {0};", in(reg32) ns, options(nostack, nomem)) };
}

/// Aborts the kernel (`trap`); the host sees a launch failure.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions.
    unsafe { nvptx::trap() }
}
