//! The [`Gpu`] handle: one device, its context, one stream, and the kernel modules loaded from the
//! embedded PTX on first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use crate::buffer::DeviceBuffer;
use crate::error::{Error, Result};
use crate::ops::Element;

/// A module of kernels: PTX text embedded in a host crate, and a name for error messages.
#[derive(Clone, Copy, Debug)]
pub struct KernelModule {
    pub name: &'static str,
    pub ptx: &'static str,
}

/// The PTX of `primitives-kernels`, built by `cargo xtask kernels` for `sm_80`.
pub const PRIMITIVES_MODULE: KernelModule = KernelModule {
    name: "primitives-kernels",
    ptx: include_str!("../kernels/primitives_kernels.sm_80.ptx"),
};

/// What the primitives need to know about the device to size their grids.
#[derive(Clone, Debug)]
pub struct DeviceProperties {
    pub name: String,
    pub ordinal: usize,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    pub max_threads_per_multiprocessor: u32,
    pub total_memory: usize,
}

/// A CUDA device with one stream on which every primitive is enqueued, in order.
///
/// Work is asynchronous: a primitive returns once its kernels are enqueued, and results are read back
/// with [`DeviceBuffer::to_vec`] (which waits) or after [`Gpu::synchronize`].
pub struct Gpu {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    properties: DeviceProperties,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
    pub(crate) reduce_temp: Mutex<Option<DeviceBuffer<u8>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

impl Gpu {
    /// Opens device 0.
    pub fn new() -> Result<Self> {
        Self::with_ordinal(0)
    }

    /// Opens the device with this ordinal. Fails with [`Error::NoDriver`] when there is no driver and
    /// [`Error::NoDevice`] when there is no such device; never panics.
    pub fn with_ordinal(ordinal: usize) -> Result<Self> {
        // SAFETY: only tries to dlopen libcuda; no CUDA call is made.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        let count = CudaContext::device_count()
            .map_err(|e| Error::NoDevice(format!("the driver reports none ({e})")))?;
        if count <= 0 {
            return Err(Error::NoDevice("the driver reports 0 devices".into()));
        }
        if ordinal >= count as usize {
            return Err(Error::NoDevice(format!(
                "device {ordinal} asked for, the driver reports {count}"
            )));
        }
        let context = CudaContext::new(ordinal)
            .map_err(|e| Error::NoDevice(format!("creating a context on device {ordinal}: {e}")))?;
        // SAFETY: every primitive enqueues on this one stream, so cudarc's per-buffer event tracking
        // (which orders work across streams) is not needed; it would only add an event per launch.
        unsafe { context.disable_event_tracking() };
        let attribute = |a| {
            context
                .attribute(a)
                .map_err(Error::driver("reading device attributes", 0))
        };
        let properties = DeviceProperties {
            name: context
                .name()
                .map_err(Error::driver("reading the device name", 0))?,
            ordinal,
            compute_capability: context
                .compute_capability()
                .map_err(Error::driver("reading the compute capability", 0))?,
            multiprocessors: attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )? as u32,
            max_threads_per_multiprocessor: attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )? as u32,
            total_memory: context
                .total_mem()
                .map_err(Error::driver("reading the memory size", 0))?,
        };
        let stream = context.default_stream();
        Ok(Self {
            context,
            stream,
            properties,
            modules: Mutex::default(),
            functions: Mutex::default(),
            reduce_temp: Mutex::default(),
        })
    }

    /// Name, multiprocessor count and so on.
    pub fn properties(&self) -> &DeviceProperties {
        &self.properties
    }

    /// The cudarc stream every primitive uses, for interoperation with other cudarc code.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The cudarc context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// Waits for all enqueued work; reports a failure of any kernel run since the last check.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(Error::driver("synchronizing the stream", 0))
    }

    /// Copies `data` to a new device buffer.
    pub fn upload<T: Element>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::from_host(self, data)
    }

    /// A new device buffer of `len` zeroed elements.
    pub fn alloc_zeroed<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::zeroed(self, len)
    }

    /// The kernel `name` of `module`, loading the module on first use.
    pub fn function(&self, module: KernelModule, name: &'static str) -> Result<CudaFunction> {
        let mut functions = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(function) = functions.get(name) {
            return Ok(function.clone());
        }
        let module_handle = {
            let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            match modules.get(module.name) {
                Some(handle) => handle.clone(),
                None => {
                    let handle = self
                        .context
                        .load_module(Ptx::from_src(module.ptx))
                        .map_err(|source| Error::ModuleLoad {
                            module: module.name,
                            source,
                        })?;
                    modules.insert(module.name, handle.clone());
                    handle
                }
            }
        };
        let function = module_handle
            .load_function(name)
            .map_err(|source| Error::ModuleLoad {
                module: module.name,
                source,
            })?;
        functions.insert(name, function.clone());
        Ok(function)
    }

    /// Enqueues `kernel` of `module`. `args` are the kernel's parameters as raw values.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameter list, and every pointer among them must be
    /// valid for what the kernel does with it for the launch's grid.
    pub(crate) unsafe fn launch(
        &self,
        module: KernelModule,
        kernel: &'static str,
        config: LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()> {
        let function = self.function(module, kernel)?;
        let mut builder = self.stream.launch_builder(&function);
        for arg in args {
            match arg {
                KernelArg::U64(value) => builder.arg(value),
            };
        }
        // SAFETY: forwarded from the caller's contract.
        unsafe { builder.launch(config) }.map_err(Error::launch(kernel))?;
        Ok(())
    }
}

/// A kernel parameter: device pointers travel as `U64`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KernelArg {
    U64(u64),
}
