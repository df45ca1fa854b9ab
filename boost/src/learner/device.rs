//! The devices of a run: the one the caller opened, the one its rows lie on, or the one the `device`
//! parameter names, with the others `n_gpus` asks for; and how a device's failure is reported.

use primitives::{DeviceKind, Gpu};

use crate::param::{Device, Params, TreeMethod};
use crate::rows::{Features, Rows};
use crate::{Error, Result};

/// The GPUs a run trains on (none on the CPU), and how the report names them.
pub(super) struct Devices<'a> {
    given: Option<&'a Gpu>,
    /// The caller's device's own memory limit, given back at the end of the run.
    given_limit: Option<Option<usize>>,
    opened: Option<Gpu>,
    extra: Vec<Gpu>,
    /// [`super::Trained::device`].
    pub(super) description: String,
}

impl<'a> Devices<'a> {
    /// `given` (the caller's), else the GPU holding the training rows unless `device=cpu`, else
    /// the `device` parameter's; then the extra devices of `n_gpus`.
    pub(super) fn open(params: &Params, train: &Rows<'a>, given: Option<&'a Gpu>) -> Result<Self> {
        let rows_gpu = match train.features {
            Features::Device { gpu, .. } if params.device != Device::Cpu => Some(gpu),
            _ => None,
        };
        let given = given.or(rows_gpu);
        let (opened, mut description) = match given {
            Some(gpu) => (None, describe(gpu)),
            None => open_device(params.device, params.verbosity >= 2)?,
        };
        let extra = open_extra_devices(params, given.or(opened.as_ref()))?;
        for gpu in &extra {
            description = format!("{description}, {}", describe(gpu));
        }
        let given_limit = given.map(Gpu::memory_limit);
        let devices = Devices { given, given_limit, opened, extra, description };
        let limit = params.device_memory_limit.map(|bytes| bytes as usize);
        devices.all().iter().for_each(|gpu| gpu.set_memory_limit(limit));
        Ok(devices)
    }

    /// The device that grows the trees (the first of several); none on the CPU.
    pub(super) fn first(&self) -> Option<&Gpu> {
        self.given.or(self.opened.as_ref())
    }

    /// Every device, the first first.
    pub(super) fn all(&self) -> Vec<&Gpu> {
        self.first().into_iter().chain(&self.extra).collect()
    }
}

impl Drop for Devices<'_> {
    fn drop(&mut self) {
        if let (Some(gpu), Some(limit)) = (self.given, self.given_limit) {
            gpu.set_memory_limit(limit);
        }
    }
}

/// The devices after the first of a run of `n_gpus` (none for one): CUDA devices from the first's
/// ordinal on, or emulators when the first is one (`PRIMITIVES_DEVICE`, the tests). `n_gpus` takes
/// a GPU and the `hist` method.
fn open_extra_devices(params: &Params, first: Option<&Gpu>) -> Result<Vec<Gpu>> {
    if params.n_gpus == 1 {
        return Ok(Vec::new());
    }
    let Some(first) = first else {
        return Err(Error::param(
            "n_gpus",
            format!("{} devices need device=cuda, not {}", params.n_gpus, params.device),
        ));
    };
    if params.tree_method != TreeMethod::Hist {
        return Err(Error::param("n_gpus", "several devices take tree_method=hist"));
    }
    let ordinal = match first.properties().kind {
        DeviceKind::Cuda { ordinal } => ordinal,
        DeviceKind::Emulated(schedule) => return Ok((1..params.n_gpus).map(|_| Gpu::emulated(schedule)).collect()),
    };
    (ordinal + 1..ordinal + params.n_gpus)
        .map(|o| {
            Gpu::with_ordinal(o)
                .map_err(|source| Error::Device { device: format!("cuda:{o}"), source: Box::new(source) })
        })
        .collect()
}

/// The device `device` names, opened (`None`: the CPU), and how [`super::Trained::device`] describes it.
/// `PRIMITIVES_DEVICE` overrides which device `cuda`/`auto` open (the tests' SIMT emulator). With
/// `explain`, an `auto` that falls back to the CPU says why in the description.
pub fn open_device(device: Device, explain: bool) -> Result<(Option<Gpu>, String)> {
    let open = |ordinal| Gpu::with_kind(DeviceKind::from_env_or(DeviceKind::Cuda { ordinal })?);
    match device {
        Device::Cpu => Ok((None, "cpu".into())),
        Device::Cuda { ordinal } => {
            let gpu = open(ordinal)
                .map_err(|source| Error::Device { device: device.to_string(), source: Box::new(source) })?;
            let name = describe(&gpu);
            Ok((Some(gpu), name))
        }
        Device::Auto => match open(0) {
            Ok(gpu) => {
                let name = describe(&gpu);
                Ok((Some(gpu), name))
            }
            // Said once, briefly: the reason (no driver, on most CPU machines) only when asked.
            Err(reason) if explain => Ok((None, format!("cpu (device=auto, no usable GPU: {reason})"))),
            Err(_) => Ok((None, "cpu (device=auto, no usable GPU)".into())),
        },
    }
}

pub(crate) fn describe(gpu: &Gpu) -> String {
    let properties = gpu.properties();
    match properties.kind {
        DeviceKind::Cuda { ordinal } => format!("{} (cuda:{ordinal})", properties.name),
        DeviceKind::Emulated(_) => properties.name.clone(),
    }
}

/// Runs a step on `gpu`; a device failure becomes an error naming the device and `phase` (with
/// the bytes asked and free when it ran out of memory, or in use and the limit when it reached
/// `device_memory_limit`).
pub(super) fn on_device<T>(gpu: &Gpu, phase: &str, step: impl FnOnce() -> Result<T>) -> Result<T> {
    match step() {
        Err(Error::Gpu(primitives::Error::OutOfMemory { bytes })) => {
            let free_bytes = gpu.memory_usage().ok().flatten().map_or(0, |usage| usage.free_bytes);
            Err(Error::DeviceMemory { phase: phase.into(), bytes, free_bytes })
        }
        Err(Error::Gpu(primitives::Error::MemoryLimit { bytes, in_use, limit })) => {
            Err(Error::DeviceMemoryLimit { phase: phase.into(), bytes, in_use, limit })
        }
        Err(Error::Gpu(source)) => {
            Err(Error::DeviceStep { device: describe(gpu), phase: phase.into(), source: Box::new(source) })
        }
        other => other,
    }
}
