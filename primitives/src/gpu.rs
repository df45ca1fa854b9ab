//! The [`Gpu`] handle: one device (a CUDA GPU, or the SIMT emulator), one stream (copies may run
//! beside it on a [`crate::CopyStream`]), and the kernel modules, loaded from the embedded images
//! family by family, each on its first launch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, PushKernelArg};
use cudarc::nvrtc::Ptx;
use primitives_kernels::emu::{self, Emulator, Schedule};

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::ops::Element;

/// A kernel launch's shape, for [`Gpu::launch_kernel`]: the grid and block (x, y, z) and the
/// dynamic shared memory in bytes (above 48 KiB, the launch opts the kernel in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid_dim: (u32, u32, u32),
    /// Threads in a block.
    pub block_dim: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

/// A point in a [`Gpu`]'s stream ([`Gpu::record_event`]): the time between two of them is the
/// device's time for the work enqueued between them (CUDA events), which host clocks cannot tell
/// while the host runs ahead. On the emulator, where work runs as it is enqueued, the host's clock.
pub struct DeviceEvent(EventKind);

enum EventKind {
    Cuda(CudaEvent),
    Host(Instant),
}

impl DeviceEvent {
    /// The device time from `start` to this event, waiting for this one to complete. Both must come
    /// from the same [`Gpu`].
    pub fn elapsed_since(&self, start: &DeviceEvent) -> Result<Duration> {
        match (&start.0, &self.0) {
            (EventKind::Cuda(start), EventKind::Cuda(stop)) => {
                let ms = start.elapsed_ms(stop).map_err(Error::driver("timing between two events", 0))?;
                Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
            }
            (EventKind::Host(start), EventKind::Host(stop)) => Ok(stop.saturating_duration_since(*start)),
            _ => Err(Error::InvalidArgument {
                name: "start",
                reason: "an event of a CUDA device and one of an emulated device cannot be compared".into(),
            }),
        }
    }
}

/// The host version of a kernel, called with its arguments as 64-bit values (emulator only).
pub type HostKernel = unsafe fn(&[u64]);

/// The kernels of a kernel crate as a host crate embeds them: a name for error messages, its
/// families (the index `cargo xtask kernels` writes as `kernels/families.rs`), and the host
/// versions of its kernels, by name, for the emulated device.
#[derive(Clone, Copy, Debug)]
pub struct KernelModule {
    pub name: &'static str,
    pub families: &'static [KernelFamily],
    pub host_kernel: fn(&str) -> Option<HostKernel>,
}

/// Kernels loaded together as one CUDA module, when the first of them is launched: a program that
/// only reduces loads (and, without machine code for its GPU, JIT-compiles) only the reduce kernels.
#[derive(Clone, Copy, Debug)]
pub struct KernelFamily {
    pub name: &'static str,
    pub entry_points: &'static [&'static str],
    /// The family's PTX (target [`PTX_COMPUTE_CAPABILITY`]), zstd-compressed: what the driver
    /// compiles for a GPU no machine code below fits.
    pub ptx: &'static [u8],
    /// Machine code per architecture, each compiled from that PTX by `ptxas`.
    pub sass: &'static [SassImage],
}

/// A family's machine code (a cubin, zstd-compressed) for GPUs of one architecture.
#[derive(Clone, Copy, Debug)]
pub struct SassImage {
    pub compute_capability: (u32, u32),
    pub image: &'static [u8],
}

/// The architecture the embedded PTX targets: the oldest GPUs the kernels run on.
pub const PTX_COMPUTE_CAPABILITY: (u32, u32) = (8, 0);

/// Environment variable that makes every family load print a line to standard error
/// (`PRIMITIVES_LOG_LOADS=1`), as [`Gpu::module_loads`] records it.
pub const LOG_LOADS_ENV: &str = "PRIMITIVES_LOG_LOADS";

/// Which image of a family a device loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    /// Machine code built for this compute capability: loads without compiling.
    Sass { compute_capability: (u32, u32) },
    /// The PTX, compiled by the driver at load time (its JIT, cached in `~/.nv/ComputeCache` when
    /// that is enabled).
    Ptx,
}

/// Environment variable that makes CUDA devices load the PTX of every family even where machine
/// code fits (`PRIMITIVES_KERNEL_IMAGE=ptx`): to compare the two, or to work around a bad cubin.
pub const KERNEL_IMAGE_ENV: &str = "PRIMITIVES_KERNEL_IMAGE";

impl KernelFamily {
    /// The image a GPU of `compute_capability` loads: machine code of its major version built for
    /// the highest minor version not above its own (machine code runs on later minors of its
    /// major), else the PTX for any GPU at least as new as the PTX's target, else `None`.
    pub fn image_for(&self, compute_capability: (u32, u32), prefer_ptx: bool) -> Option<(ImageKind, &'static [u8])> {
        let (major, minor) = compute_capability;
        let sass = self
            .sass
            .iter()
            .filter(|s| s.compute_capability.0 == major && s.compute_capability.1 <= minor)
            .max_by_key(|s| s.compute_capability.1);
        match sass {
            Some(s) if !prefer_ptx => Some((ImageKind::Sass { compute_capability: s.compute_capability }, s.image)),
            _ if compute_capability >= PTX_COMPUTE_CAPABILITY => Some((ImageKind::Ptx, self.ptx)),
            _ => None,
        }
    }
}

impl KernelModule {
    /// The family holding `kernel`.
    pub fn family_of(&self, kernel: &str) -> Option<&'static KernelFamily> {
        self.families.iter().find(|family| family.entry_points.contains(&kernel))
    }
}

/// The kernels of `primitives-kernels`, built by `cargo xtask kernels`. A `static`, not a `const`:
/// each use of a const may get its own copy of the images (a 45 MB benchmark executable, not 11).
pub static PRIMITIVES_MODULE: KernelModule = KernelModule {
    name: "primitives-kernels",
    families: include!("../kernels/families.rs"),
    host_kernel: primitives_kernels::entry::host_kernel,
};

/// One family's module load: which image, how large, and how long it took.
#[derive(Clone, Debug)]
pub struct ModuleLoad {
    pub device_ordinal: usize,
    pub module: &'static str,
    pub family: &'static str,
    pub image: ImageKind,
    /// Size of the uncompressed image handed to the driver.
    pub bytes: usize,
    /// Decompression plus the driver's load (and JIT, for PTX).
    pub duration: Duration,
}

impl std::fmt::Display for ModuleLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let image = match self.image {
            ImageKind::Sass { compute_capability: (major, minor) } => format!("sm_{major}{minor} machine code"),
            ImageKind::Ptx => "PTX, JIT-compiled".into(),
        };
        write!(
            f,
            "loaded the `{}` kernels of {} on device {} ({image}, {} bytes) in {:.1} ms",
            self.family,
            self.module,
            self.device_ordinal,
            self.bytes,
            self.duration.as_secs_f64() * 1e3
        )
    }
}

/// Modules loaded in this process, by (device ordinal, kernel module, family). A CUDA `Gpu` uses
/// the device's primary context, which every `Gpu` of that device shares, so a family loads once
/// per process and device, however many `Gpu`s open it; held here, the modules (and so the primary
/// context) stay for the life of the process.
type LoadedModules = HashMap<(usize, &'static str, &'static str), Arc<CudaModule>>;
static LOADED_MODULES: Mutex<Option<LoadedModules>> = Mutex::new(None);
static MODULE_LOADS: Mutex<Vec<ModuleLoad>> = Mutex::new(Vec::new());

/// Which device a [`Gpu`] drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// The CUDA GPU with this ordinal.
    Cuda { ordinal: usize },
    /// The SIMT emulator ([`primitives_kernels::emu`]): the same kernels, run on the CPU with checks.
    Emulated(Schedule),
}

/// Environment variable naming the device kind: `cuda`, `cuda:N`, `emulator`,
/// `emulator:shuffled:SEED`.
pub const DEVICE_ENV: &str = "PRIMITIVES_DEVICE";

/// Dynamic shared memory a kernel may use without the per-function opt-in (48 KiB on every CUDA GPU).
pub const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

impl DeviceKind {
    /// Parses the syntax of [`DEVICE_ENV`].
    pub fn parse(text: &str) -> Result<Self> {
        let invalid = || Error::InvalidArgument {
            name: DEVICE_ENV,
            reason: format!("`{text}`: expected cuda, cuda:N, emulator or emulator:shuffled:SEED"),
        };
        let parts: Vec<&str> = text.trim().split(':').collect();
        match parts.as_slice() {
            ["cuda"] => Ok(DeviceKind::Cuda { ordinal: 0 }),
            ["cuda", n] => Ok(DeviceKind::Cuda { ordinal: n.parse().map_err(|_| invalid())? }),
            ["emulator"] => Ok(DeviceKind::Emulated(Schedule::Deterministic)),
            ["emulator", "shuffled", seed] => {
                Ok(DeviceKind::Emulated(Schedule::Shuffled { seed: seed.parse().map_err(|_| invalid())? }))
            }
            _ => Err(invalid()),
        }
    }

    /// The kind named by [`DEVICE_ENV`], or `default` when it is not set.
    pub fn from_env_or(default: DeviceKind) -> Result<Self> {
        match std::env::var(DEVICE_ENV) {
            Ok(text) => Self::parse(&text),
            Err(_) => Ok(default),
        }
    }
}

/// Device memory as [`Gpu::memory_usage`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryUsage {
    /// The most bytes the stream-ordered pool held in use at once.
    pub peak_bytes: u64,
    pub free_bytes: u64,
    pub total_bytes: u64,
}

/// What the primitives need to know about the device to size their grids.
#[derive(Clone, Debug)]
pub struct DeviceProperties {
    pub name: String,
    pub kind: DeviceKind,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub max_threads_per_multiprocessor: u32,
    /// Most dynamic shared memory one block may have (with the opt-in a launch makes).
    pub max_shared_bytes_per_block: usize,
    pub total_memory: usize,
}

pub(crate) struct CudaDevice {
    pub(crate) context: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
    /// What each kernel has been given so far, set once each rather than a driver call per launch
    /// (a lossguide tree launches the multi-feature histogram hundreds of times).
    attributes: Mutex<HashMap<&'static str, FunctionAttributes>>,
    /// The event [`Gpu::wait_for`] records on this stream, made on first use and reused (a wait
    /// takes the event's state when it is enqueued).
    marker: Mutex<Option<cudarc::driver::CudaEvent>>,
}

/// Attributes set on a kernel: its dynamic shared memory opt-in (bytes) and the largest carveout.
#[derive(Clone, Copy, Default)]
struct FunctionAttributes {
    shared_opt_in: u32,
    carveout: bool,
}

pub(crate) enum Backend {
    Cuda(CudaDevice),
    Emulated(Emulator),
}

/// Host memory page-locked by [`Gpu::pin_host`], unlocked when dropped.
pub struct HostPin {
    /// The address and its device's context (none on the emulator).
    ptr: Option<(usize, Arc<CudaContext>)>,
}

impl HostPin {
    /// The pin of `ptr`, registered with `context`'s driver.
    pub(crate) fn registered(ptr: usize, context: Arc<CudaContext>) -> Self {
        HostPin { ptr: Some((ptr, context)) }
    }

    /// No pin (the emulator's, or no memory).
    pub(crate) fn none() -> Self {
        HostPin { ptr: None }
    }
}

impl Drop for HostPin {
    fn drop(&mut self) {
        if let Some((ptr, context)) = self.ptr.take() {
            // A failure leaves the memory locked until the process ends: nothing to report it to.
            if context.bind_to_thread().is_ok() {
                // SAFETY: the address `pin_host` registered, unregistered once.
                let _ = unsafe { sys::cuMemHostUnregister(ptr as *mut std::ffi::c_void) };
            }
        }
    }
}

/// A device with one stream on which every primitive is enqueued, in order.
///
/// Work is asynchronous on a CUDA device: a primitive returns once its kernels are enqueued, and
/// results are read back with [`DeviceBuffer::to_vec`] (which waits) or after [`Gpu::synchronize`].
/// On the emulated device every launch completes before it returns.
///
/// Device memory comes from the device's default stream-ordered pool (`cuMemAllocAsync`) where the
/// driver has one. Opening a CUDA `Gpu` sets that pool to keep freed memory for reuse rather than
/// hand it back to the driver at each synchronisation (its release threshold), as PyTorch's caching
/// allocator does: the pool is the process's, so this holds for other users of it too.
pub struct Gpu {
    pub(crate) backend: Backend,
    properties: DeviceProperties,
    pub(crate) reduce_temp: Mutex<Option<DeviceBuffer<u8>>>,
    pub(crate) scan_temp: Mutex<crate::device::ScanTemp>,
    /// The multi-feature histogram's work items, kept between calls (a gradient booster builds
    /// histograms hundreds of times a tree; one copy instead of an allocation, a copy and a free).
    pub(crate) multi_work: Mutex<Option<DeviceBuffer<u32>>>,
    /// The bytes this `Gpu`'s buffers hold, and the limit they may reach.
    pub(crate) memory: Arc<MemoryAccount>,
}

/// The bytes a [`Gpu`]'s live buffers hold (borrowed memory excluded) and the caller's limit on
/// them ([`Gpu::set_memory_limit`]), checked at every allocation.
#[derive(Debug)]
pub(crate) struct MemoryAccount {
    in_use: AtomicUsize,
    /// The most `in_use` reached since the last reset.
    peak: AtomicUsize,
    /// `usize::MAX`: no limit.
    limit: AtomicUsize,
}

impl Default for MemoryAccount {
    fn default() -> Self {
        MemoryAccount { in_use: AtomicUsize::new(0), peak: AtomicUsize::new(0), limit: AtomicUsize::new(usize::MAX) }
    }
}

/// A buffer's share of its [`MemoryAccount`], given back on drop.
#[derive(Debug)]
pub(crate) struct MemoryCharge {
    account: Arc<MemoryAccount>,
    bytes: usize,
}

impl MemoryAccount {
    /// Charges `bytes`, or [`Error::MemoryLimit`] when they would pass the limit.
    pub(crate) fn charge(self: &Arc<Self>, bytes: usize) -> Result<MemoryCharge> {
        let limit = self.limit.load(Ordering::Relaxed);
        let before = self
            .in_use
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&after| after <= limit)
            })
            .map_err(|in_use| Error::MemoryLimit { bytes, in_use, limit })?;
        self.peak.fetch_max(before + bytes, Ordering::Relaxed);
        Ok(MemoryCharge { account: self.clone(), bytes })
    }
}

impl Drop for MemoryCharge {
    fn drop(&mut self) {
        self.account.in_use.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("properties", &self.properties).finish_non_exhaustive()
    }
}

impl Gpu {
    /// Opens CUDA device 0.
    pub fn new() -> Result<Self> {
        Self::with_kind(DeviceKind::Cuda { ordinal: 0 })
    }

    /// Opens the CUDA device with this ordinal.
    pub fn with_ordinal(ordinal: usize) -> Result<Self> {
        Self::with_kind(DeviceKind::Cuda { ordinal })
    }

    /// The SIMT emulator as a device.
    pub fn emulated(schedule: Schedule) -> Self {
        let properties = DeviceProperties {
            name: "SIMT emulator (primitives-kernels::emu)".into(),
            kind: DeviceKind::Emulated(schedule),
            compute_capability: (8, 0),
            // Few multiprocessors keep grids, and so emulation time, small.
            multiprocessors: 2,
            max_threads_per_multiprocessor: 2048,
            max_shared_bytes_per_block: 227 * 1024,
            total_memory: usize::MAX,
        };
        Self {
            backend: Backend::Emulated(Emulator::new(schedule)),
            properties,
            reduce_temp: Mutex::default(),
            memory: Arc::default(),
            multi_work: Mutex::default(),
            scan_temp: Mutex::default(),
        }
    }

    /// Opens a device of either kind. A CUDA device fails with [`Error::NoDriver`] when there is no
    /// driver and [`Error::NoDevice`] when there is no such device; never panics.
    pub fn with_kind(kind: DeviceKind) -> Result<Self> {
        match kind {
            DeviceKind::Emulated(schedule) => Ok(Self::emulated(schedule)),
            DeviceKind::Cuda { ordinal } => Self::open_cuda(ordinal),
        }
    }

    fn open_cuda(ordinal: usize) -> Result<Self> {
        // SAFETY: only tries to dlopen libcuda; no CUDA call is made.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        let count =
            CudaContext::device_count().map_err(|e| Error::NoDevice(format!("the driver reports none ({e})")))?;
        if count <= 0 {
            return Err(Error::NoDevice("the driver reports 0 devices".into()));
        }
        if ordinal >= count as usize {
            return Err(Error::NoDevice(format!("device {ordinal} asked for, the driver reports {count}")));
        }
        let context = CudaContext::new(ordinal)
            .map_err(|e| Error::NoDevice(format!("creating a context on device {ordinal}: {e}")))?;
        // SAFETY: every primitive enqueues on this one stream, so cudarc's per-buffer event tracking
        // (which orders work across streams) is not needed; it would only add an event per launch.
        unsafe { context.disable_event_tracking() };
        if context.has_async_alloc() {
            // Scratch space comes from the device's default pool (`cuMemAllocAsync`). By default the
            // pool hands freed memory back to the driver at every synchronisation, so each call
            // after one paid to map its scratch again: a u32 pair sort of 2^26 keys took 3.29 ms
            // with that and 2.94 ms without (H200). Keep it, as PyTorch's caching allocator does.
            // SAFETY: the context's own device; the attribute takes a u64.
            unsafe {
                let pool = cudarc::driver::result::device::get_default_mem_pool(context.cu_device())
                    .map_err(Error::driver("reading the default memory pool", 0))?;
                let mut keep = u64::MAX;
                cudarc::driver::result::mem_pool::set_attribute(
                    pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut keep as *mut u64).cast(),
                )
                .map_err(Error::driver("keeping the memory pool's freed memory", 0))?;
            }
        }
        let attribute = |a| context.attribute(a).map_err(Error::driver("reading device attributes", 0));
        let properties = DeviceProperties {
            name: context.name().map_err(Error::driver("reading the device name", 0))?,
            kind: DeviceKind::Cuda { ordinal },
            compute_capability: context
                .compute_capability()
                .map_err(Error::driver("reading the compute capability", 0))?,
            multiprocessors: attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            max_threads_per_multiprocessor: attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )? as u32,
            max_shared_bytes_per_block: attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )? as usize,
            total_memory: context.total_mem().map_err(Error::driver("reading the memory size", 0))?,
        };
        let (major, minor) = properties.compute_capability;
        if (major, minor) < (PTX_COMPUTE_CAPABILITY.0 as i32, PTX_COMPUTE_CAPABILITY.1 as i32) {
            return Err(Error::UnsupportedDevice { compute_capability: (major, minor) });
        }
        let stream = context.default_stream();
        let device = CudaDevice {
            context,
            stream,
            functions: Mutex::default(),
            attributes: Mutex::default(),
            marker: Mutex::default(),
        };
        Ok(Self {
            backend: Backend::Cuda(device),
            properties,
            reduce_temp: Mutex::default(),
            memory: Arc::default(),
            multi_work: Mutex::default(),
            scan_temp: Mutex::default(),
        })
    }

    /// Name, kind, multiprocessor count and so on.
    pub fn properties(&self) -> &DeviceProperties {
        &self.properties
    }

    /// True for the SIMT emulator.
    pub fn is_emulated(&self) -> bool {
        matches!(self.backend, Backend::Emulated(_))
    }

    /// Lets kernels on `peer` read and write this device's buffers through their addresses (peer
    /// access over NVLink or PCIe): the memory of this device's pool, where every [`DeviceBuffer`]
    /// comes from. Once a pair is enough; granting again is harmless. An error when either device
    /// is emulated, they are one device, or the driver reports that `peer` cannot reach this one.
    pub fn grant_peer_access(&self, peer: &Gpu) -> Result<()> {
        let (Backend::Cuda(mine), Backend::Cuda(theirs)) = (&self.backend, &peer.backend) else {
            return Err(Error::InvalidArgument { name: "peer", reason: "peer access is between CUDA devices".into() });
        };
        let (owner, reader) = (mine.context.cu_device(), theirs.context.cu_device());
        let mut can = 0;
        // SAFETY: two devices of the driver; `can` is written.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, reader, owner) }
            .result()
            .map_err(Error::driver("asking whether the devices can reach each other", 0))?;
        if can == 0 || owner == reader {
            return Err(Error::InvalidArgument {
                name: "peer",
                reason: format!("device {reader} cannot reach device {owner}'s memory (peer access)"),
            });
        }
        theirs.context.bind_to_thread().map_err(Error::driver("making the peer's context current", 0))?;
        // SAFETY: the reader's context is current; the owner's context is alive (held by `self`).
        match unsafe { sys::cuCtxEnablePeerAccess(mine.context.cu_ctx(), 0) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
            failed => return Err(Error::driver("enabling peer access", 0)(cudarc::driver::DriverError(failed))),
        }
        // Stream-ordered allocations are reachable from another device only when their pool says so.
        if let Some(pool) = self.memory_pool()? {
            let access = sys::CUmemAccessDesc {
                location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: reader },
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            // SAFETY: this device's default pool; one access descriptor.
            unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }
                .result()
                .map_err(Error::driver("granting a peer access to the memory pool", 0))?;
        }
        Ok(())
    }

    /// Makes the work enqueued on this device from now on wait for the work enqueued on `other`
    /// so far (an event recorded on `other`'s stream, waited for on this one; no host wait).
    /// Nothing to do between emulated devices, whose work is done when enqueued.
    pub fn wait_for(&self, other: &Gpu) -> Result<()> {
        match (&self.backend, &other.backend) {
            (Backend::Emulated(_), Backend::Emulated(_)) => Ok(()),
            (Backend::Cuda(mine), Backend::Cuda(theirs)) => {
                let mut marker = theirs.marker.lock().unwrap_or_else(|p| p.into_inner());
                let event = match &mut *marker {
                    Some(event) => event,
                    empty => {
                        empty.insert(theirs.context.new_event(None).map_err(Error::driver("creating an event", 0))?)
                    }
                };
                event.record(&theirs.stream).map_err(Error::driver("recording an event", 0))?;
                mine.stream.wait(event).map_err(Error::driver("waiting for another device's event", 0))
            }
            _ => Err(Error::InvalidArgument {
                name: "other",
                reason: "a CUDA device and an emulated one do not order each other's work".into(),
            }),
        }
    }

    /// The CUDA device's ordinal (`None` on the emulator).
    pub fn ordinal(&self) -> Option<usize> {
        match &self.backend {
            Backend::Cuda(device) => Some(device.context.ordinal()),
            Backend::Emulated(_) => None,
        }
    }

    /// The handle (`CUstream`) of the stream that all of this `Gpu`'s work goes to, for other CUDA
    /// libraries to enqueue on (NCCL's collectives); `None` on the emulator.
    pub fn raw_stream(&self) -> Option<*mut std::ffi::c_void> {
        match &self.backend {
            Backend::Cuda(device) => Some(device.stream.cu_stream().cast()),
            Backend::Emulated(_) => None,
        }
    }

    /// Records an event at this point of the stream, to time the device's work between two events
    /// ([`DeviceEvent::elapsed_since`]).
    pub fn record_event(&self) -> Result<DeviceEvent> {
        match &self.backend {
            Backend::Cuda(device) => {
                let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
                let event = device.context.new_event(flags).map_err(Error::driver("creating an event", 0))?;
                event.record(&device.stream).map_err(Error::driver("recording an event", 0))?;
                Ok(DeviceEvent(EventKind::Cuda(event)))
            }
            Backend::Emulated(_) => Ok(DeviceEvent(EventKind::Host(Instant::now()))),
        }
    }

    /// Records `event` (one of this `Gpu`'s, read or no longer needed) again at this point of the
    /// stream: a timer that records many events reuses them rather than creating each.
    pub fn record_event_again(&self, event: &mut DeviceEvent) -> Result<()> {
        match (&self.backend, &mut event.0) {
            (Backend::Cuda(device), EventKind::Cuda(event)) => {
                event.record(&device.stream).map_err(Error::driver("recording an event", 0))
            }
            (Backend::Emulated(_), EventKind::Host(at)) => {
                *at = Instant::now();
                Ok(())
            }
            _ => Err(Error::InvalidArgument {
                name: "event",
                reason: "an event of a CUDA device and an emulated device cannot be mixed".into(),
            }),
        }
    }

    /// Asks for the largest shared-memory carveout for `kernel` (the driver's default may keep more
    /// of the multiprocessor's memory as L1 and so fit fewer blocks of a large-shared kernel). Per
    /// kernel, where measured: on an H200 it let two 115 KB multi-feature histogram blocks share a
    /// multiprocessor, while for the segmented sort it helped some segment sizes and hurt others.
    pub(crate) fn prefer_shared_memory(&self, module: KernelModule, kernel: &'static str) -> Result<()> {
        if let Backend::Cuda(device) = &self.backend {
            let mut attributes = device.attributes.lock().unwrap_or_else(|p| p.into_inner());
            let set = attributes.entry(kernel).or_default();
            if !set.carveout {
                self.cuda_function(device, module, kernel)?
                    .set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)
                    .map_err(Error::driver("preferring shared memory", 0))?;
                set.carveout = true;
            }
        }
        Ok(())
    }

    /// Waits for all enqueued work; reports a failure of any kernel run since the last check.
    pub fn synchronize(&self) -> Result<()> {
        match &self.backend {
            Backend::Cuda(device) => device.stream.synchronize().map_err(Error::driver("synchronizing the stream", 0)),
            Backend::Emulated(_) => Ok(()),
        }
    }

    /// Copies `data` to a new device buffer.
    pub fn upload<T: Element>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::from_host(self, data)
    }

    /// A new device buffer of `len` zeroed elements.
    pub fn alloc_zeroed<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::zeroed(self, len)
    }

    /// A new device buffer of `len` elements whose values are whatever the allocator hands over
    /// (any bits: the element types are plain data), for a buffer a kernel fills before anything
    /// reads it. Saves [`Gpu::alloc_zeroed`]'s memset, an operation on the stream.
    pub fn alloc_uninitialized<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::uninitialized(self, len)
    }

    /// The family loads of this `Gpu`'s device in this process so far, in order: the first call's
    /// cost (machine code loads in milliseconds; PTX is JIT-compiled, which takes seconds).
    pub fn module_loads(&self) -> Vec<ModuleLoad> {
        let DeviceKind::Cuda { ordinal } = self.properties.kind else { return Vec::new() };
        let loads = MODULE_LOADS.lock().unwrap_or_else(|p| p.into_inner());
        loads.iter().filter(|load| load.device_ordinal == ordinal).cloned().collect()
    }

    /// Total time of [`Gpu::module_loads`].
    pub fn module_load_time(&self) -> Duration {
        self.module_loads().iter().map(|load| load.duration).sum()
    }

    /// Device memory: the peak the device's stream-ordered pool (where every [`DeviceBuffer`] comes
    /// from) held in use at once since [`Gpu::reset_peak_memory`] (or since it was created), and the
    /// device's free and total bytes now. `None` on the emulated device and on drivers without a pool.
    pub fn memory_usage(&self) -> Result<Option<MemoryUsage>> {
        let Some(pool) = self.memory_pool()? else { return Ok(None) };
        let mut peak = 0u64;
        // SAFETY: the context's own default pool; the attribute is a u64.
        unsafe {
            cudarc::driver::result::mem_pool::get_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                (&mut peak as *mut u64).cast(),
            )
        }
        .map_err(Error::driver("reading the memory pool's peak", 0))?;
        let (free, total) =
            cudarc::driver::result::mem_get_info().map_err(Error::driver("reading the free device memory", 0))?;
        Ok(Some(MemoryUsage { peak_bytes: peak, free_bytes: free as u64, total_bytes: total as u64 }))
    }

    /// Limits the bytes this `Gpu`'s buffers may hold at once (`None`: no limit but the device's):
    /// an allocation past it fails with [`Error::MemoryLimit`], naming the bytes asked, the bytes
    /// in use and the limit, so that work can share a device or be held to a budget. The buffers
    /// the `Gpu` keeps for its own scratch count too.
    pub fn set_memory_limit(&self, limit: Option<usize>) {
        self.memory.limit.store(limit.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// The limit of [`Gpu::set_memory_limit`].
    pub fn memory_limit(&self) -> Option<usize> {
        Some(self.memory.limit.load(Ordering::Relaxed)).filter(|&l| l != usize::MAX)
    }

    /// The bytes this `Gpu`'s live buffers hold now (memory borrowed from other libraries not
    /// included).
    pub fn memory_in_use(&self) -> usize {
        self.memory.in_use.load(Ordering::Relaxed)
    }

    /// The most bytes this `Gpu`'s buffers held at once since [`Gpu::reset_memory_in_use_peak`]
    /// (or since it was created): [`Gpu::memory_in_use`]'s peak, on every device.
    pub fn memory_in_use_peak(&self) -> usize {
        self.memory.peak.load(Ordering::Relaxed)
    }

    /// Starts [`Gpu::memory_in_use_peak`] again from the bytes in use now.
    pub fn reset_memory_in_use_peak(&self) {
        self.memory.peak.store(self.memory_in_use(), Ordering::Relaxed);
    }

    /// Starts [`Gpu::memory_usage`]'s peak again from the memory in use now.
    pub fn reset_peak_memory(&self) -> Result<()> {
        let Some(pool) = self.memory_pool()? else { return Ok(()) };
        let mut zero = 0u64;
        // SAFETY: the context's own default pool; the driver takes 0 to reset the high-water mark.
        unsafe {
            cudarc::driver::result::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                (&mut zero as *mut u64).cast(),
            )
        }
        .map_err(Error::driver("resetting the memory pool's peak", 0))
    }

    /// Page-locks the host memory of `data` (`cuMemHostRegister`) so that copies between it and
    /// the device run at the bus's speed: the driver stages a copy from pageable memory through
    /// its own buffers, at a fraction of that (4 GB/s against 37 measured on an H200 machine). The
    /// memory is unlocked when the returned [`HostPin`] drops. Nothing to do on the emulator.
    ///
    /// # Safety
    /// `data` stays where it is, allocated, until the pin drops.
    pub unsafe fn pin_host<T: bytemuck::Pod>(&self, data: &[T]) -> Result<HostPin> {
        let Backend::Cuda(device) = &self.backend else { return Ok(HostPin { ptr: None }) };
        let bytes = std::mem::size_of_val(data);
        if bytes == 0 {
            return Ok(HostPin { ptr: None });
        }
        device.context.bind_to_thread().map_err(Error::driver("making the device's context current", 0))?;
        let ptr = data.as_ptr() as *mut std::ffi::c_void;
        // SAFETY: `bytes` of live host memory that stays put while pinned (the caller).
        unsafe { sys::cuMemHostRegister_v2(ptr, bytes, 0) }
            .result()
            .map_err(Error::driver("page-locking host memory", bytes))?;
        Ok(HostPin { ptr: Some((ptr as usize, device.context.clone())) })
    }

    /// The CUDA device's default memory pool, with its context current on this thread.
    fn memory_pool(&self) -> Result<Option<sys::CUmemoryPool>> {
        let Backend::Cuda(device) = &self.backend else { return Ok(None) };
        if !device.context.has_async_alloc() {
            return Ok(None);
        }
        device.context.bind_to_thread().map_err(Error::driver("making the device's context current", 0))?;
        // SAFETY: the context's own device, its context current on this thread.
        let pool = unsafe { cudarc::driver::result::device::get_default_mem_pool(device.context.cu_device()) }
            .map_err(Error::driver("reading the default memory pool", 0))?;
        Ok(Some(pool))
    }

    fn cuda_function(&self, device: &CudaDevice, module: KernelModule, name: &'static str) -> Result<CudaFunction> {
        let mut functions = device.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(function) = functions.get(name) {
            return Ok(function.clone());
        }
        let family = module.family_of(name).ok_or_else(|| Error::InvalidArgument {
            name: "kernel",
            reason: format!("`{name}` is in no family of the embedded `{}` images", module.name),
        })?;
        let module_handle = self.family_module(device, module, family)?;
        let function = module_handle.load_function(name).map_err(|source| Error::ModuleLoad {
            module: module.name,
            family: family.name,
            source: source.into(),
        })?;
        functions.insert(name, function.clone());
        Ok(function)
    }

    /// The loaded module of `family`, loading it on first use (see [`LOADED_MODULES`]).
    fn family_module(
        &self,
        device: &CudaDevice,
        module: KernelModule,
        family: &'static KernelFamily,
    ) -> Result<Arc<CudaModule>> {
        let ordinal = device.context.ordinal();
        let mut loaded = LOADED_MODULES.lock().unwrap_or_else(|p| p.into_inner());
        let key = (ordinal, module.name, family.name);
        if let Some(handle) = loaded.get_or_insert_with(HashMap::new).get(&key) {
            return Ok(handle.clone());
        }
        let start = Instant::now();
        let (major, minor) = self.properties.compute_capability;
        let capability = (major.max(0) as u32, minor.max(0) as u32);
        let prefer_ptx = std::env::var(KERNEL_IMAGE_ENV).is_ok_and(|v| v.eq_ignore_ascii_case("ptx"));
        let (kind, compressed) = family
            .image_for(capability, prefer_ptx)
            .ok_or(Error::UnsupportedDevice { compute_capability: (major, minor) })?;
        let image = decompress(compressed).map_err(|reason| Error::CorruptKernelImage {
            module: module.name,
            family: family.name,
            reason,
        })?;
        let bytes = image.len();
        let source = match kind {
            ImageKind::Sass { .. } => Ptx::from_binary(image),
            ImageKind::Ptx => {
                let text = String::from_utf8(image).map_err(|_| Error::CorruptKernelImage {
                    module: module.name,
                    family: family.name,
                    reason: "the PTX is not UTF-8".into(),
                })?;
                Ptx::from_src(text)
            }
        };
        let handle = device.context.load_module(source).map_err(|source| Error::ModuleLoad {
            module: module.name,
            family: family.name,
            source: source.into(),
        })?;
        let record = ModuleLoad {
            device_ordinal: ordinal,
            module: module.name,
            family: family.name,
            image: kind,
            bytes,
            duration: start.elapsed(),
        };
        if std::env::var_os(LOG_LOADS_ENV).is_some() {
            // Straight to stderr, past the test harness's capture of `eprintln!`.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "primitives: {record}");
        }
        MODULE_LOADS.lock().unwrap_or_else(|p| p.into_inner()).push(record);
        loaded.get_or_insert_with(HashMap::new).insert(key, handle.clone());
        Ok(handle)
    }

    /// The most threads a block of `kernel` of `module` may have on this device (its registers
    /// decide it, so it differs between architectures): a launcher whose kernel takes any block
    /// size chooses one no larger. The emulator takes any block of up to 1024 threads.
    pub fn max_block_threads(&self, module: KernelModule, kernel: &'static str) -> Result<u32> {
        match &self.backend {
            Backend::Cuda(device) => {
                let function = self.cuda_function(device, module, kernel)?;
                let threads = function
                    .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
                    .map_err(Error::driver("reading the kernel's largest block", 0))?;
                Ok(threads.max(1) as u32)
            }
            Backend::Emulated(_) => Ok(1024),
        }
    }

    /// Enqueues a kernel of `module` with `args`, which its typed `NAME::args(...)` made (see
    /// `primitives_kernels::kernel!`): a launch of its machine code or PTX on a CUDA device, the
    /// kernel's host version on the emulator. This is how a crate with kernels of its own (built
    /// like `primitives-kernels`, embedded as a [`KernelModule`]) launches them:
    /// `gpu.launch_kernel(MODULE, config, entry::my_kernel::args(input.as_ptr(), n))`.
    ///
    /// # Safety
    /// Every pointer among the arguments must be valid for what the kernel does with it for the
    /// launch's grid (the count and types are checked when `args` is compiled).
    pub unsafe fn launch_kernel(
        &self,
        module: KernelModule,
        config: LaunchConfig,
        args: primitives_kernels::launch::KernelArgs,
    ) -> Result<()> {
        // SAFETY: forwarded to the caller; the words are the kernel's typed parameters.
        unsafe { self.launch(module, args.name(), config, args.words()) }
    }

    /// [`Gpu::launch_kernel`] by the kernel's name and its parameters as raw 64-bit words.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameter list, and every pointer among them must be
    /// valid for what the kernel does with it for the launch's grid.
    unsafe fn launch(
        &self,
        module: KernelModule,
        kernel: &'static str,
        config: LaunchConfig,
        args: &[u64],
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(device) => {
                let function = self.cuda_function(device, module, kernel)?;
                if config.shared_mem_bytes > DEFAULT_SHARED_BYTES {
                    // Dynamic shared memory beyond 48 KiB needs the function's opt-in.
                    let mut attributes = device.attributes.lock().unwrap_or_else(|p| p.into_inner());
                    let set = attributes.entry(kernel).or_default();
                    if set.shared_opt_in < config.shared_mem_bytes {
                        function
                            .set_attribute(
                                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                config.shared_mem_bytes as i32,
                            )
                            .map_err(Error::driver(
                                "allowing the kernel's shared memory",
                                config.shared_mem_bytes as usize,
                            ))?;
                        set.shared_opt_in = config.shared_mem_bytes;
                    }
                }
                let mut builder = device.stream.launch_builder(&function);
                for arg in args {
                    builder.arg(arg);
                }
                let config = cudarc::driver::LaunchConfig {
                    grid_dim: config.grid_dim,
                    block_dim: config.block_dim,
                    shared_mem_bytes: config.shared_mem_bytes,
                };
                // SAFETY: forwarded from the caller's contract.
                unsafe { builder.launch(config) }.map_err(Error::launch(kernel))?;
                Ok(())
            }
            Backend::Emulated(emulator) => {
                let host = (module.host_kernel)(kernel).ok_or_else(|| {
                    Error::NoDevice(format!("kernel `{kernel}` has no host version in `{}`", module.name))
                })?;
                let shape = emu::LaunchConfig {
                    grid_dim: config.grid_dim.0,
                    block_dim: config.block_dim.0,
                    shared_mem_bytes: config.shared_mem_bytes,
                };
                // SAFETY: forwarded from the caller's contract; the emulator checks every access.
                emulator.launch(kernel, shape, &|| unsafe { host(args) })?;
                Ok(())
            }
        }
    }
}

/// A zstd frame's content, its checksum verified (a damaged image is an error here, not a driver
/// fault later).
pub(crate) fn decompress(compressed: &[u8]) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read;
    let mut source = compressed;
    let mut decoder = ruzstd::decoding::StreamingDecoder::new(&mut source).map_err(|e| e.to_string())?;
    let mut content = Vec::new();
    decoder.read_to_end(&mut content).map_err(|e| e.to_string())?;
    let frame = decoder.into_frame_decoder();
    match (frame.get_checksum_from_data(), frame.get_calculated_checksum()) {
        (Some(stored), Some(computed)) if stored == computed => Ok(content),
        (Some(_), Some(_)) => Err("checksum mismatch".into()),
        _ => Err("no content checksum".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAMILY: KernelFamily = KernelFamily {
        name: "test",
        entry_points: &["k"],
        ptx: b"ptx",
        sass: &[
            SassImage { compute_capability: (8, 0), image: b"80" },
            SassImage { compute_capability: (8, 6), image: b"86" },
            SassImage { compute_capability: (8, 9), image: b"89" },
            SassImage { compute_capability: (9, 0), image: b"90" },
            SassImage { compute_capability: (10, 0), image: b"100" },
        ],
    };

    fn chosen(capability: (u32, u32)) -> Option<&'static [u8]> {
        FAMILY.image_for(capability, false).map(|(_, image)| image)
    }

    #[test]
    fn machine_code_of_the_same_major_and_the_highest_minor_not_above_the_device() {
        assert_eq!(chosen((8, 0)), Some(&b"80"[..]));
        assert_eq!(chosen((8, 6)), Some(&b"86"[..]));
        assert_eq!(chosen((8, 7)), Some(&b"86"[..]));
        assert_eq!(chosen((8, 9)), Some(&b"89"[..]));
        assert_eq!(chosen((9, 0)), Some(&b"90"[..]));
        assert_eq!(chosen((10, 3)), Some(&b"100"[..]));
    }

    #[test]
    fn ptx_for_newer_majors_and_on_request_and_nothing_for_older_gpus() {
        assert_eq!(FAMILY.image_for((12, 0), false), Some((ImageKind::Ptx, &b"ptx"[..])));
        assert_eq!(FAMILY.image_for((9, 0), true), Some((ImageKind::Ptx, &b"ptx"[..])));
        assert_eq!(FAMILY.image_for((7, 5), false), None);
        assert_eq!(FAMILY.image_for((7, 5), true), None);
    }

    #[test]
    fn damaged_images_are_errors() {
        let family = &PRIMITIVES_MODULE.families[0];
        assert!(decompress(family.ptx).is_ok());
        let mut damaged = family.ptx.to_vec();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0x40;
        assert!(decompress(&damaged).is_err());
        assert!(decompress(&damaged[..middle]).is_err());
        assert!(decompress(b"not zstd at all").is_err());
        assert!(decompress(&[]).is_err());
    }

    /// Emulated devices do their work when it is enqueued, so ordering them is a no-op; they have
    /// no address space to share, so peer access is refused with a named parameter.
    #[test]
    fn emulated_devices_order_trivially_and_refuse_peer_access() {
        let (a, b) = (Gpu::emulated(Schedule::Deterministic), Gpu::emulated(Schedule::Deterministic));
        a.wait_for(&b).expect("no-op between emulators");
        let refused = a.grant_peer_access(&b).expect_err("no peer access on the emulator");
        assert!(matches!(refused, Error::InvalidArgument { name: "peer", .. }), "{refused}");
    }

    /// A limit refuses the allocation that would pass it, with the numbers, and a dropped buffer
    /// gives its bytes back; the facades' own buffers count.
    #[test]
    fn a_memory_limit_refuses_what_would_pass_it() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        assert_eq!((gpu.memory_limit(), gpu.memory_in_use()), (None, 0));
        gpu.set_memory_limit(Some(1000));
        let a = gpu.alloc_zeroed::<u32>(200).unwrap();
        assert_eq!(gpu.memory_in_use(), 800);
        match gpu.alloc_uninitialized::<u8>(201) {
            Err(Error::MemoryLimit { bytes: 201, in_use: 800, limit: 1000 }) => {}
            other => panic!("expected the limit's error, got {other:?}"),
        }
        let b = gpu.upload(&[7u8; 200]).unwrap();
        assert_eq!(gpu.memory_in_use(), 1000);
        drop((a, b));
        assert_eq!((gpu.memory_in_use(), gpu.memory_in_use_peak()), (0, 1000));
        gpu.reset_memory_in_use_peak();
        drop(gpu.alloc_zeroed::<u8>(10).unwrap());
        assert_eq!((gpu.memory_in_use(), gpu.memory_in_use_peak()), (0, 10));
        let values = gpu.upload(&[1.0f32; 250]).unwrap();
        let refused = gpu.reduce::<f32, crate::ops::Sum>(&values);
        assert!(matches!(refused, Err(Error::MemoryLimit { bytes: 4, .. })), "the reduce's output: {refused:?}");
        gpu.set_memory_limit(None);
        assert_eq!(gpu.reduce::<f32, crate::ops::Sum>(&values).unwrap(), 250.0);
    }
}
