//! The [`Gpu`] handle: one device (a CUDA GPU, or the SIMT emulator), one stream, and the kernel
//! modules, loaded from the embedded PTX on first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use primitives_kernels::emu::{self, Emulator, Schedule};

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::ops::Element;

/// The host version of a kernel, called with its arguments as 64-bit values (emulator only).
pub type HostKernel = unsafe fn(&[u64]);

/// A module of kernels: PTX text embedded in a host crate, a name for error messages, and the host
/// versions of its kernels, by name, for the emulated device.
#[derive(Clone, Copy, Debug)]
pub struct KernelModule {
    pub name: &'static str,
    pub ptx: &'static str,
    pub host_kernel: fn(&str) -> Option<HostKernel>,
}

/// The kernels of `primitives-kernels`: PTX built by `cargo xtask kernels` for `sm_80`.
pub const PRIMITIVES_MODULE: KernelModule = KernelModule {
    name: "primitives-kernels",
    ptx: include_str!("../kernels/primitives_kernels.sm_80.ptx"),
    host_kernel: primitives_kernels::entry::host_kernel,
};

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

/// What the primitives need to know about the device to size their grids.
#[derive(Clone, Debug)]
pub struct DeviceProperties {
    pub name: String,
    pub kind: DeviceKind,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub max_threads_per_multiprocessor: u32,
    /// Most dynamic shared memory one block may have (with the opt-in `Gpu::launch` does).
    pub max_shared_bytes_per_block: usize,
    pub total_memory: usize,
}

pub(crate) struct CudaDevice {
    pub(crate) context: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
}

pub(crate) enum Backend {
    Cuda(CudaDevice),
    Emulated(Emulator),
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
        let stream = context.default_stream();
        let device = CudaDevice { context, stream, modules: Mutex::default(), functions: Mutex::default() };
        Ok(Self {
            backend: Backend::Cuda(device),
            properties,
            reduce_temp: Mutex::default(),
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

    /// The cudarc stream every primitive uses (CUDA devices only), for interoperation.
    pub fn cuda_stream(&self) -> Option<&Arc<CudaStream>> {
        match &self.backend {
            Backend::Cuda(device) => Some(&device.stream),
            Backend::Emulated(_) => None,
        }
    }

    /// The cudarc context (CUDA devices only).
    pub fn cuda_context(&self) -> Option<&Arc<CudaContext>> {
        match &self.backend {
            Backend::Cuda(device) => Some(&device.context),
            Backend::Emulated(_) => None,
        }
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

    fn cuda_function(device: &CudaDevice, module: KernelModule, name: &'static str) -> Result<CudaFunction> {
        let mut functions = device.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(function) = functions.get(name) {
            return Ok(function.clone());
        }
        let module_handle = {
            let mut modules = device.modules.lock().unwrap_or_else(|p| p.into_inner());
            match modules.get(module.name) {
                Some(handle) => handle.clone(),
                None => {
                    let handle = device
                        .context
                        .load_module(Ptx::from_src(module.ptx))
                        .map_err(|source| Error::ModuleLoad { module: module.name, source })?;
                    modules.insert(module.name, handle.clone());
                    handle
                }
            }
        };
        let function =
            module_handle.load_function(name).map_err(|source| Error::ModuleLoad { module: module.name, source })?;
        functions.insert(name, function.clone());
        Ok(function)
    }

    /// Enqueues `kernel` of `module` with its parameters as raw 64-bit values (device pointers
    /// included): a PTX launch on a CUDA device, the kernel's host version on the emulator.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameter list, and every pointer among them must be
    /// valid for what the kernel does with it for the launch's grid.
    pub(crate) unsafe fn launch(
        &self,
        module: KernelModule,
        kernel: &'static str,
        config: LaunchConfig,
        args: &[u64],
    ) -> Result<()> {
        match &self.backend {
            Backend::Cuda(device) => {
                let function = Self::cuda_function(device, module, kernel)?;
                if config.shared_mem_bytes > DEFAULT_SHARED_BYTES {
                    // Dynamic shared memory beyond 48 KiB needs the function's opt-in.
                    function
                        .set_attribute(
                            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            config.shared_mem_bytes as i32,
                        )
                        .map_err(Error::driver(
                            "allowing the kernel's shared memory",
                            config.shared_mem_bytes as usize,
                        ))?;
                }
                let mut builder = device.stream.launch_builder(&function);
                for arg in args {
                    builder.arg(arg);
                }
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
