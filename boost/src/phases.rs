//! Wall time by phase of a training run, so that a slow phase (and a regression) shows in the CLI's
//! `verbosity=2` output and in the benchmark scripts without a profiler.

use std::time::{Duration, Instant};

/// Phases in the order first seen, each with its summed wall time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseTimes {
    /// (phase, time) in the order the phases first ran.
    pub entries: Vec<(&'static str, Duration)>,
}

impl PhaseTimes {
    /// Adds `elapsed` to phase `name`.
    pub fn add(&mut self, name: &'static str, elapsed: Duration) {
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some((_, total)) => *total += elapsed,
            None => self.entries.push((name, elapsed)),
        }
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
    }
}

impl std::fmt::Display for PhaseTimes {
    /// `cuts 0.120 s, gradients 0.031 s, ...`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, elapsed)) in self.entries.iter().enumerate() {
            let separator = if i == 0 { "" } else { ", " };
            write!(f, "{separator}{name} {:.3} s", elapsed.as_secs_f64())?;
        }
        Ok(())
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
    }
}
