//! Wall time by phase of a training run, so that a slow phase (and a regression) shows in the CLI's
//! `verbosity=2` output and in the benchmark scripts without a profiler; with the device's time
//! by phase where a GPU run measures it (CUDA events, `verbosity=3`): the host's clock charges a
//! phase with the device work it waits for, the events do not.

use std::time::{Duration, Instant};

/// Phases in the order first seen, each with its summed wall time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseTimes {
    /// (phase, time) in the order the phases first ran.
    pub entries: Vec<(&'static str, Duration)>,
    /// (phase, device time) of the phases timed on the device, in the order first timed: the
    /// device's time between CUDA events recorded on its stream before and after the phase's
    /// work (idle gaps while the device waits for the host included).
    pub device: Vec<(&'static str, Duration)>,
}

impl PhaseTimes {
    /// Adds `elapsed` to phase `name`.
    pub fn add(&mut self, name: &'static str, elapsed: Duration) {
        add_to(&mut self.entries, name, elapsed);
    }

    /// Adds `elapsed` of device time to phase `name`.
    pub fn add_device(&mut self, name: &'static str, elapsed: Duration) {
        add_to(&mut self.device, name, elapsed);
    }

    /// Runs `f`, adding its wall time to phase `name`.
    pub fn time<T>(&mut self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let value = f();
        self.add(name, start.elapsed());
        value
    }

    /// Adds every phase of `other`.
    pub fn merge(&mut self, other: &PhaseTimes) {
        for &(name, elapsed) in &other.entries {
            self.add(name, elapsed);
        }
        for &(name, elapsed) in &other.device {
            self.add_device(name, elapsed);
        }
    }

    /// The device times, displayed as the host times are (`tree: histograms 0.950 s, ...`).
    pub fn device_summary(&self) -> impl std::fmt::Display + '_ {
        Summary(&self.device)
    }
}

fn add_to(entries: &mut Vec<(&'static str, Duration)>, name: &'static str, elapsed: Duration) {
    match entries.iter_mut().find(|(n, _)| *n == name) {
        Some((_, total)) => *total += elapsed,
        None => entries.push((name, elapsed)),
    }
}

/// Phases and times as `a 0.120 s, b 0.031 s`.
struct Summary<'a>(&'a [(&'static str, Duration)]);

impl std::fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, elapsed)) in self.0.iter().enumerate() {
            let separator = if i == 0 { "" } else { ", " };
            write!(f, "{separator}{name} {:.3} s", elapsed.as_secs_f64())?;
        }
        Ok(())
    }
}

impl std::fmt::Display for PhaseTimes {
    /// The host times: `cuts 0.120 s, gradients 0.031 s, ...`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Summary(&self.entries).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_sum_by_name_in_first_seen_order() {
        let mut p = PhaseTimes::default();
        p.add("b", Duration::from_millis(5));
        p.add("a", Duration::from_millis(1));
        p.add("b", Duration::from_millis(7));
        let mut q = PhaseTimes::default();
        q.add("a", Duration::from_millis(2));
        q.add("c", Duration::from_millis(3));
        p.merge(&q);
        let expected = [("b", 12), ("a", 3), ("c", 3)].map(|(n, ms)| (n, Duration::from_millis(ms)));
        assert_eq!(p.entries, expected);
        assert_eq!(p.to_string(), "b 0.012 s, a 0.003 s, c 0.003 s");
        assert_eq!(p.time("d", || 4), 4);
        assert_eq!(p.entries.len(), 4);
        q.add_device("c", Duration::from_millis(9));
        q.add_device("c", Duration::from_millis(1));
        p.merge(&q);
        assert_eq!(p.device, [("c", Duration::from_millis(10))]);
        assert_eq!(p.device_summary().to_string(), "c 0.010 s");
    }
}
