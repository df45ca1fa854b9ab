//! A thread a device for the multi-device trainer's steps, each waiting for the next step by
//! spinning rather than sleeping.
//!
//! A tree over several devices is a few dozen short steps (a level's partition and histograms,
//! a tree's quantiser), each a few hundred microseconds of host work a device (kernel launches,
//! small copies) between waits for the devices. A general thread pool (rayon) puts its idle
//! threads to sleep, and waking one costs tens of microseconds (a futex; more in a sandboxed
//! kernel), a few times a step. Here each device past the first has its own thread, which spins
//! on an epoch counter for a while after each step and only then parks; the caller's thread runs
//! the first device's share itself, then spins until the others are done. Emulated devices are
//! slow host work themselves and share the machine's cores, so their threads park at once.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use crate::Result;

/// A step, run once per device index; its lifetime is erased while the workers hold it.
type Job = dyn Fn(usize) + Sync;

/// An item of [`DeviceThreads::on_each`] and its step's result.
type Cell<'i, T, R> = (&'i mut T, Option<Result<R>>);

/// What the caller and the workers share.
struct Shared {
    /// Bumped for each step; a worker runs the step whose epoch it has not seen yet.
    epoch: AtomicU64,
    /// The step of the current epoch.
    job: Mutex<Option<JobRef>>,
    /// The devices the current step has (the workers past it only acknowledge the epoch).
    devices: AtomicU64,
    /// Steps finished by workers since the start, `workers` an epoch.
    finished: AtomicU64,
    /// The first panic of a worker's share of the current step.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Each worker's flag that it is parked (for the caller to unpark it).
    parked: Vec<AtomicBool>,
    /// The caller's thread and its flag that it is parked.
    caller: Mutex<Option<Thread>>,
    caller_parked: AtomicBool,
    /// How long a waiting thread spins before it parks.
    spin: Duration,
    stop: AtomicBool,
}

/// The address of a step, valid until every worker has finished its epoch.
#[derive(Clone, Copy)]
struct JobRef(*const Job);

// SAFETY: the address of a `Sync` closure, dereferenced only while the caller of `broadcast` keeps
// the closure alive (it waits for every worker to finish the epoch).
unsafe impl Send for JobRef {}

/// A thread for each device past the first (see the module).
pub(super) struct DeviceThreads {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Held for a whole step: the workers serve one caller at a time (a step's share calling
    /// `on_each` of the same threads would wait for itself).
    busy: Mutex<()>,
}

impl DeviceThreads {
    /// Threads for `devices` devices (`devices - 1` of them); `spin` whether waiting threads spin
    /// (CUDA devices) or park at once (emulated ones).
    pub(super) fn new(devices: usize, spin: bool) -> std::io::Result<Self> {
        let workers = devices.saturating_sub(1);
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: Mutex::new(None),
            devices: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            panic: Mutex::new(None),
            parked: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            caller: Mutex::new(None),
            caller_parked: AtomicBool::new(false),
            spin: if spin { Duration::from_millis(5) } else { Duration::ZERO },
            stop: AtomicBool::new(false),
        });
        let mut threads = DeviceThreads { shared, workers: Vec::with_capacity(workers), busy: Mutex::new(()) };
        for w in 0..workers {
            let shared = Arc::clone(&threads.shared);
            let name = format!("boost-device-{}", w + 1);
            threads.workers.push(thread::Builder::new().name(name).spawn(move || work(&shared, w))?);
        }
        Ok(threads)
    }

    /// `step` on every item at once, item `d` on device `d`'s thread (the first on the caller's),
    /// the results in item order; the first error, or a panic of any share, once all have ended.
    pub(super) fn on_each<T: Send, R: Send>(
        &self,
        items: &mut [T],
        step: impl Fn(&mut T) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        if items.len() <= 1 || self.workers.is_empty() {
            return items.iter_mut().map(step).collect();
        }
        // Each item with room for its result, one lock each (taken once, by its own thread).
        let cells: Vec<Mutex<Cell<'_, T, R>>> = items.iter_mut().map(|item| Mutex::new((item, None))).collect();
        let job = |d: usize| {
            let mut cell = cells[d].lock().unwrap_or_else(PoisonError::into_inner);
            let result = step(&mut *cell.0);
            cell.1 = Some(result);
        };
        self.broadcast(cells.len().min(self.workers.len() + 1), &job);
        // More items than threads (never so in the trainer): the rest on the caller's thread.
        (self.workers.len() + 1..cells.len()).for_each(job);
        cells
            .into_iter()
            .map(|cell| {
                let (_, result) = cell.into_inner().unwrap_or_else(PoisonError::into_inner);
                result.expect("every device's share ran")
            })
            .collect()
    }

    /// Runs `job(d)` for `d` in `0..devices`, `0` on the caller's thread, and returns when all have
    /// ended (a panic of any share is resumed here, after that).
    fn broadcast<'j>(&self, devices: usize, job: &'j (dyn Fn(usize) + Sync + 'j)) {
        let _one_caller = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        let shared = &*self.shared;
        *shared.caller.lock().unwrap_or_else(PoisonError::into_inner) = Some(thread::current());
        // SAFETY: the erased lifetime outlives every use: this function returns (or unwinds) only
        // after every worker has finished this epoch, and a worker reads the job only before that.
        let erased: *const Job = unsafe { std::mem::transmute::<&'j (dyn Fn(usize) + Sync + 'j), &'static Job>(job) };
        *shared.job.lock().unwrap_or_else(PoisonError::into_inner) = Some(JobRef(erased));
        shared.devices.store(devices as u64, Ordering::SeqCst);
        let epoch = shared.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        for (w, parked) in shared.parked.iter().enumerate() {
            if parked.swap(false, Ordering::SeqCst) {
                self.workers[w].thread().unpark();
            }
        }
        let mine = panic::catch_unwind(AssertUnwindSafe(|| job(0)));
        let target = epoch * self.workers.len() as u64;
        wait(shared, &shared.caller_parked, || shared.finished.load(Ordering::SeqCst) >= target);
        *shared.job.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let theirs = shared.panic.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Err(payload) = mine {
            panic::resume_unwind(payload);
        }
        if let Some(payload) = theirs {
            panic::resume_unwind(payload);
        }
    }
}

impl Drop for DeviceThreads {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        for worker in self.workers.drain(..) {
            worker.thread().unpark();
            // A worker's panics are caught and handed to the caller; a join error has nowhere to go.
            let _ = worker.join();
        }
    }
}

/// Worker `w`'s loop: device `w + 1`'s share of each epoch's step.
fn work(shared: &Shared, w: usize) {
    let mut seen = 0;
    loop {
        wait(shared, &shared.parked[w], || shared.epoch.load(Ordering::SeqCst) != seen);
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        seen = shared.epoch.load(Ordering::SeqCst);
        let job = *shared.job.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(job) = job.filter(|_| w + 1 < shared.devices.load(Ordering::SeqCst) as usize) {
            // SAFETY: the caller of `broadcast` keeps the job alive until this epoch is finished.
            let job = unsafe { &*job.0 };
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| job(w + 1))) {
                shared.panic.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(payload);
            }
        }
        shared.finished.fetch_add(1, Ordering::SeqCst);
        if shared.caller_parked.swap(false, Ordering::SeqCst) {
            if let Some(caller) = &*shared.caller.lock().unwrap_or_else(PoisonError::into_inner) {
                caller.unpark();
            }
        }
    }
}

/// Waits until `ready`: spinning for `shared.spin`, then parked (`parked` set for the waker).
fn wait(shared: &Shared, parked: &AtomicBool, ready: impl Fn() -> bool) {
    let start = Instant::now();
    let mut spins = 0u32;
    while !ready() {
        if spins < 1024 || start.elapsed() < shared.spin {
            spins = spins.saturating_add(1);
            std::hint::spin_loop();
            continue;
        }
        parked.store(true, Ordering::SeqCst);
        // The waker bumps the state before it reads the flag: re-read after setting it.
        if ready() {
            parked.store(false, Ordering::SeqCst);
            return;
        }
        thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn each_item_runs_once_on_its_own_thread_in_order() {
        for spin in [true, false] {
            let threads = DeviceThreads::new(4, spin).unwrap();
            for round in 0..200u64 {
                let mut items: Vec<(u64, Option<thread::ThreadId>)> = (0..4).map(|d| (d, None)).collect();
                let out: Vec<u64> = threads
                    .on_each(&mut items, |(d, id)| {
                        *id = Some(thread::current().id());
                        Ok::<_, Error>(*d * 1000 + round)
                    })
                    .unwrap();
                assert_eq!(out, (0..4).map(|d| d * 1000 + round).collect::<Vec<_>>());
                let ids: Vec<_> = items.iter().map(|(_, id)| id.unwrap()).collect();
                assert_eq!(ids[0], thread::current().id(), "the first item on the caller's thread");
                assert!((1..4).all(|d| !ids[..d].contains(&ids[d])), "a thread an item: {ids:?}");
            }
        }
    }

    #[test]
    fn fewer_items_than_threads_and_errors_and_panics_come_back() {
        let threads = DeviceThreads::new(3, true).unwrap();
        let mut two = [1, 2];
        assert_eq!(threads.on_each(&mut two, |x| Ok::<_, Error>(*x * 2)).unwrap(), [2, 4]);
        let mut items = [0, 1, 2];
        let err = threads.on_each(&mut items, |x| if *x == 0 { Ok(()) } else { Err(Error::Model(x.to_string())) });
        assert!(matches!(err, Err(Error::Model(d)) if d == "1"), "the first error in device order");
        let panicked = panic::catch_unwind(AssertUnwindSafe(|| {
            threads.on_each(&mut items, |x| if *x == 2 { panic!("device 2") } else { Ok::<_, Error>(()) })
        }));
        assert!(panicked.is_err(), "a worker's panic reaches the caller");
        // The threads still serve steps after a panic.
        assert_eq!(threads.on_each(&mut items, |x| Ok::<_, Error>(*x + 1)).unwrap(), [1, 2, 3]);
    }

    #[test]
    fn callers_on_two_threads_take_turns() {
        let threads = DeviceThreads::new(3, true).unwrap();
        std::thread::scope(|s| {
            for caller in 0..2u64 {
                let threads = &threads;
                s.spawn(move || {
                    for round in 0..100u64 {
                        let mut items = [0u64, 1, 2];
                        let out = threads.on_each(&mut items, |x| Ok::<_, Error>(*x * 10 + caller + round)).unwrap();
                        assert_eq!(out, [caller + round, 10 + caller + round, 20 + caller + round]);
                    }
                });
            }
        });
    }

    #[test]
    fn more_items_than_threads_all_run() {
        let threads = DeviceThreads::new(2, false).unwrap();
        let mut items = [1, 2, 3, 4, 5];
        assert_eq!(threads.on_each(&mut items, |x| Ok::<_, Error>(*x * *x)).unwrap(), [1, 4, 9, 16, 25]);
    }
}
