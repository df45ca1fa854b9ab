//! Device time by phase ([`DeviceTimers`]): CUDA events recorded on the stream around a phase's
//! work and read after a later wait, so that `verbosity=3` says where the device's time goes. The
//! host's clock cannot: it charges the phase that waits (split evaluation reads the splits back)
//! with the device work enqueued before it (the histograms). The `hist` builder on one GPU
//! ([`super::GpuTrainer`], in core or under [`super::GpuPages`]) is timed so; the exact method and
//! several GPUs report their host times only.

use std::time::Instant;

use primitives::{DeviceEvent, Gpu};

use crate::phases::PhaseTimes;
use crate::Result;

/// A phase's start: the host's instant and, when the device is timed, an event on its stream.
pub(super) struct PhaseStart {
    host: Instant,
    device: Option<DeviceEvent>,
}

/// The events of the phases timed on a device and not yet read, and whether to record any
/// (off by default: recording and reading two events a phase costs host time, which lossguide's
/// step a node would feel); the events read, for reuse.
#[derive(Default)]
pub(super) struct DeviceTimers {
    on: bool,
    pending: Vec<(&'static str, DeviceEvent, DeviceEvent)>,
    spare: Vec<DeviceEvent>,
}

impl DeviceTimers {
    /// Timers that record events when `on`.
    pub(super) fn new(on: bool) -> Self {
        DeviceTimers { on, ..Default::default() }
    }

    /// Starts a phase: the host's clock, and an event when the device is timed.
    pub(super) fn start(&mut self, gpu: &Gpu) -> Result<PhaseStart> {
        let device = if self.on { Some(self.record(gpu)?) } else { None };
        Ok(PhaseStart { host: Instant::now(), device })
    }

    /// An event recorded now: a spare one again, or a new one.
    fn record(&mut self, gpu: &Gpu) -> Result<DeviceEvent> {
        match self.spare.pop() {
            Some(mut event) => {
                gpu.record_event_again(&mut event)?;
                Ok(event)
            }
            None => Ok(gpu.record_event()?),
        }
    }

    /// Ends phase `name`: its host time added to `phases` now, its device time when read
    /// ([`DeviceTimers::read`]).
    pub(super) fn stop(
        &mut self,
        gpu: &Gpu,
        phases: &mut PhaseTimes,
        name: &'static str,
        start: PhaseStart,
    ) -> Result<()> {
        phases.add(name, start.host.elapsed());
        if let Some(event) = start.device {
            let stop = self.record(gpu)?;
            self.pending.push((name, event, stop));
        }
        Ok(())
    }

    /// Adds the device time of every phase recorded so far to `phases`, waiting for the last
    /// event if the device has not passed it.
    pub(super) fn read(&mut self, phases: &mut PhaseTimes) -> Result<()> {
        for (name, start, stop) in std::mem::take(&mut self.pending) {
            phases.add_device(name, stop.elapsed_since(&start)?);
            self.spare.extend([start, stop]);
        }
        Ok(())
    }
}
