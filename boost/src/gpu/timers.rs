//! Device time by phase ([`DeviceTimers`]): CUDA events recorded on the stream around a phase's
//! work and read after a later wait, so that `verbosity=2` says where the device's time goes. The
//! host's clock cannot: it charges the phase that waits (split evaluation reads the splits back)
//! with the device work enqueued before it (the histograms).

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
/// (off by default: two events a phase cost a few microseconds of host time each).
#[derive(Default)]
pub(super) struct DeviceTimers {
    on: bool,
    pending: Vec<(&'static str, DeviceEvent, DeviceEvent)>,
}

impl DeviceTimers {
    /// Timers that record events when `on`.
    pub(super) fn new(on: bool) -> Self {
        DeviceTimers { on, pending: Vec::new() }
    }

    pub(super) fn is_on(&self) -> bool {
        self.on
    }

    /// Starts a phase: the host's clock, and an event when the device is timed.
    pub(super) fn start(&self, gpu: &Gpu) -> Result<PhaseStart> {
        let device = if self.on { Some(gpu.record_event()?) } else { None };
        Ok(PhaseStart { host: Instant::now(), device })
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
            self.pending.push((name, event, gpu.record_event()?));
        }
        Ok(())
    }

    /// Adds the device time of every phase recorded so far to `phases`, waiting for the last
    /// event if the device has not passed it.
    pub(super) fn read(&mut self, phases: &mut PhaseTimes) -> Result<()> {
        for (name, start, stop) in self.pending.drain(..) {
            phases.add_device(name, stop.elapsed_since(&start)?);
        }
        Ok(())
    }
}
