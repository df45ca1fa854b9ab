//! The host side of `arch`: the same functions with the same signatures, so that the algorithms
//! compile (and their pure parts can be tested) on any machine.
//!
//! Kernels do not run on the host yet: calling an intrinsic here panics with the name of the
//! intrinsic. (A SIMT emulator that gives these functions their GPU meaning on the CPU is planned;
//! see ARCHITECTURE.md.)

fn no_device(intrinsic: &str) -> ! {
    panic!("primitives-kernels: device intrinsic `{intrinsic}` called on the host; kernels run only on a GPU")
}

macro_rules! host_intrinsics {
    () => {};
    ($(#[$doc:meta])* unsafe fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; $($rest:tt)*) => {
        $(#[$doc])*
        #[allow(unused_variables, clippy::missing_safety_doc)]
        pub unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
            no_device(stringify!($name))
        }
        host_intrinsics!($($rest)*);
    };
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?; $($rest:tt)*) => {
        $(#[$doc])*
        #[allow(unused_variables)]
        pub fn $name($($arg: $ty),*) $(-> $ret)? {
            no_device(stringify!($name))
        }
        host_intrinsics!($($rest)*);
    };
}

host_intrinsics! {
    /// `%tid.x`.
    fn thread_idx_x() -> u32;
    /// `%ctaid.x`.
    fn block_idx_x() -> u32;
    /// `%ntid.x`.
    fn block_dim_x() -> u32;
    /// `%nctaid.x`.
    fn grid_dim_x() -> u32;
    /// `%laneid`.
    fn lane_id() -> u32;
    /// `bar.sync 0`.
    fn sync_threads();
    /// `bar.warp.sync`.
    fn sync_warp(mask: u32);
    /// `shfl.sync.down.b32`.
    fn shfl_down_sync_u32(mask: u32, value: u32, delta: u32) -> u32;
    /// `shfl.sync.up.b32`.
    fn shfl_up_sync_u32(mask: u32, value: u32, delta: u32) -> u32;
    /// `shfl.sync.bfly.b32`.
    fn shfl_xor_sync_u32(mask: u32, value: u32, lane_mask: u32) -> u32;
    /// `shfl.sync.idx.b32`.
    fn shfl_idx_sync_u32(mask: u32, value: u32, lane: u32) -> u32;
    /// `vote.sync.all.pred`.
    fn vote_all_sync(mask: u32, predicate: bool) -> bool;
    /// `vote.sync.any.pred`.
    fn vote_any_sync(mask: u32, predicate: bool) -> bool;
    /// `vote.sync.ballot.b32`.
    fn ballot_sync(mask: u32, predicate: bool) -> u32;
    /// `activemask.b32`.
    fn active_mask() -> u32;
    /// Start of dynamic shared memory.
    fn dynamic_shared_memory() -> *mut u8;
    /// `%dynamic_smem_size`.
    fn dynamic_shared_size() -> u32;
    /// `atom.relaxed.gpu.add.u32`.
    unsafe fn atomic_add_u32_gpu(ptr: *mut u32, value: u32) -> u32;
    /// `atom.relaxed.cta.add.u32`.
    unsafe fn atomic_add_u32_cta(ptr: *mut u32, value: u32) -> u32;
    /// `atom.relaxed.gpu.add.u64`.
    unsafe fn atomic_add_u64_gpu(ptr: *mut u64, value: u64) -> u64;
    /// `atom.relaxed.cta.add.u64`.
    unsafe fn atomic_add_u64_cta(ptr: *mut u64, value: u64) -> u64;
    /// `atom.relaxed.gpu.add.f32`.
    unsafe fn atomic_add_f32_gpu(ptr: *mut f32, value: f32) -> f32;
    /// `atom.relaxed.cta.add.f32`.
    unsafe fn atomic_add_f32_cta(ptr: *mut f32, value: f32) -> f32;
    /// `atom.relaxed.gpu.add.f64`.
    unsafe fn atomic_add_f64_gpu(ptr: *mut f64, value: f64) -> f64;
    /// `atom.relaxed.cta.add.f64`.
    unsafe fn atomic_add_f64_cta(ptr: *mut f64, value: f64) -> f64;
    /// `atom.relaxed.gpu.max.u32`.
    unsafe fn atomic_max_u32_gpu(ptr: *mut u32, value: u32) -> u32;
    /// `atom.relaxed.gpu.min.u32`.
    unsafe fn atomic_min_u32_gpu(ptr: *mut u32, value: u32) -> u32;
    /// `atom.relaxed.gpu.exch.b32`.
    unsafe fn atomic_exch_u32_gpu(ptr: *mut u32, value: u32) -> u32;
    /// `atom.relaxed.gpu.exch.b64`.
    unsafe fn atomic_exch_u64_gpu(ptr: *mut u64, value: u64) -> u64;
    /// `atom.relaxed.gpu.cas.b32`.
    unsafe fn atomic_cas_u32_gpu(ptr: *mut u32, expected: u32, new: u32) -> u32;
    /// `atom.relaxed.cta.cas.b32`.
    unsafe fn atomic_cas_u32_cta(ptr: *mut u32, expected: u32, new: u32) -> u32;
    /// `atom.relaxed.gpu.cas.b64`.
    unsafe fn atomic_cas_u64_gpu(ptr: *mut u64, expected: u64, new: u64) -> u64;
    /// `ld.acquire.gpu.u32`.
    unsafe fn load_acquire_u32_gpu(ptr: *const u32) -> u32;
    /// `ld.acquire.gpu.u64`.
    unsafe fn load_acquire_u64_gpu(ptr: *const u64) -> u64;
    /// `ld.relaxed.gpu.u32`.
    unsafe fn load_relaxed_u32_gpu(ptr: *const u32) -> u32;
    /// `ld.relaxed.gpu.u64`.
    unsafe fn load_relaxed_u64_gpu(ptr: *const u64) -> u64;
    /// `st.release.gpu.u32`.
    unsafe fn store_release_u32_gpu(ptr: *mut u32, value: u32);
    /// `st.release.gpu.u64`.
    unsafe fn store_release_u64_gpu(ptr: *mut u64, value: u64);
    /// `st.relaxed.gpu.u32`.
    unsafe fn store_relaxed_u32_gpu(ptr: *mut u32, value: u32);
    /// `st.relaxed.gpu.u64`.
    unsafe fn store_relaxed_u64_gpu(ptr: *mut u64, value: u64);
    /// `fence.acq_rel.gpu`.
    fn fence_acq_rel_gpu();
    /// `fence.acq_rel.cta`.
    fn fence_acq_rel_cta();
    /// `fence.sc.gpu`.
    fn fence_sc_gpu();
    /// `ld.global.nc.v4.u32`.
    unsafe fn load_global_nc_v4(ptr: *const [u32; 4]) -> [u32; 4];
    /// `trap`.
    fn trap() -> !;
}
