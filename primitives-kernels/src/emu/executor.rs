//! The emulator's executor: one coroutine per GPU thread, a block at a time.
//!
//! A thread runs until it reaches a scheduling point (a barrier or a warp collective); there it
//! records what it waits for in its `ThreadContext` and yields. After each yield the executor checks
//! whether the barrier or collective can complete; if so it computes the results and makes the
//! waiting threads runnable. A round runs every runnable thread once, in index order or shuffled.

use std::prelude::rust_2021::*;
use std::{format, thread_local, vec};

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::ptr;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::{EmulatorError, Fault, LaunchConfig, Registry, Schedule};

/// Bytes after the dynamic shared memory in which an access is reported as a shared-memory overrun
/// (rather than as a stray global access).
const SHARED_GUARD: usize = 64 << 10;
/// Filler of fresh shared memory: the GPU leaves it uninitialised, and a conspicuous pattern makes
/// reads of unwritten shared memory show.
const SHARED_POISON: u8 = 0xcd;
/// A shuffle from a lane outside the mask reads an undefined value; the emulator gives this one.
const UNDEFINED_LANE_VALUE: u32 = 0xdead_beef;
const STACK_BYTES: usize = 256 << 10;
const WARP: u32 = 32;

/// A warp collective, with the calling lane's own parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CollectiveOp {
    ShflDown(u32),
    ShflUp(u32),
    ShflXor(u32),
    ShflIdx(u32),
    VoteAll,
    VoteAny,
    Ballot,
    MatchAny,
    SyncWarp,
}

impl CollectiveOp {
    /// Same instruction (lanes may pass different lane offsets).
    fn same_kind(self, other: Self) -> bool {
        std::mem::discriminant(&self) == std::mem::discriminant(&other)
    }

    fn name(self) -> &'static str {
        match self {
            CollectiveOp::ShflDown(_) => "shfl.sync.down",
            CollectiveOp::ShflUp(_) => "shfl.sync.up",
            CollectiveOp::ShflXor(_) => "shfl.sync.bfly",
            CollectiveOp::ShflIdx(_) => "shfl.sync.idx",
            CollectiveOp::VoteAll => "vote.sync.all",
            CollectiveOp::VoteAny => "vote.sync.any",
            CollectiveOp::Ballot => "vote.sync.ballot",
            CollectiveOp::MatchAny => "match.any.sync",
            CollectiveOp::SyncWarp => "bar.warp.sync",
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Wait {
    Barrier(&'static Location<'static>),
    Collective { op: CollectiveOp, mask: u32, value: u32, location: &'static Location<'static> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Runnable,
    Waiting,
    Done,
}

/// What every thread of the running block shares.
pub(crate) struct BlockContext<'a> {
    kernel: &'a str,
    block_idx: u32,
    block_dim: u32,
    grid_dim: u32,
    registry: &'a Registry,
    shared: Vec<u128>,
    shared_size: usize,
}

/// One emulated GPU thread, as the `arch` functions see it.
pub(crate) struct ThreadContext {
    block: *const BlockContext<'static>,
    thread: u32,
    yielder: Cell<*const Yielder<(), ()>>,
    wait: Cell<Option<Wait>>,
    result: Cell<u32>,
    /// The last global allocation this thread hit, to skip the registry lookup.
    last_allocation: Cell<(usize, usize)>,
}

/// Payload of the panics that carry a fault out of a coroutine.
struct FaultPayload(Fault);

thread_local! {
    static CURRENT: Cell<*const ThreadContext> = const { Cell::new(ptr::null()) };
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with the running emulated thread and its block.
///
/// Panics when no emulated launch is running on this OS thread: `arch` intrinsics have no meaning
/// outside a kernel.
pub(crate) fn with_current<R>(f: impl FnOnce(&ThreadContext, &BlockContext<'_>) -> R) -> R {
    let current = CURRENT.with(Cell::get);
    assert!(
        !current.is_null(),
        "primitives-kernels: a device intrinsic was called outside a kernel (on the host, kernels run inside emu::Emulator::launch)"
    );
    // SAFETY: CURRENT is set only while the executor resumes this thread's coroutine; the thread
    // context and its block context outlive that resumption.
    let thread = unsafe { &*current };
    // SAFETY: as above.
    let block = unsafe { &*thread.block };
    f(thread, block)
}

/// Where the running emulated thread is, as "kernel `k`, block b, thread t" (for messages).
pub fn current_location() -> Option<String> {
    let current = CURRENT.with(Cell::get);
    (!current.is_null())
        .then(|| with_current(|t, b| format!("kernel `{}`, block {}, thread {}", b.kernel, b.block_idx, t.thread)))
}

/// Stops the running thread with `fault`.
pub(crate) fn fault(fault: Fault) -> ! {
    std::panic::panic_any(FaultPayload(fault))
}

fn suspend(thread: &ThreadContext, wait: Wait) -> u32 {
    thread.wait.set(Some(wait));
    // SAFETY: the yielder pointer was set when the coroutine started and is valid while it runs.
    unsafe { (*thread.yielder.get()).suspend(()) };
    thread.result.get()
}

/// A block barrier reached at `location`.
pub(crate) fn barrier(location: &'static Location<'static>) {
    with_current(|thread, _| suspend(thread, Wait::Barrier(location)));
}

/// A warp collective: this lane's contribution `value`; returns this lane's result.
pub(crate) fn collective(op: CollectiveOp, mask: u32, value: u32, location: &'static Location<'static>) -> u32 {
    with_current(|thread, _| suspend(thread, Wait::Collective { op, mask, value, location }))
}

/// Checks an access of `size` bytes at `address` (aligned to `align`) against the block's dynamic
/// shared memory and the device's allocations; faults if it is outside both.
pub(crate) fn check_access(address: usize, size: usize, align: usize) {
    with_current(|thread, block| {
        if !address.is_multiple_of(align) {
            fault(Fault::Misaligned { address, align });
        }
        let shared_start = block.shared.as_ptr() as usize;
        if (shared_start..shared_start + block.shared_size + SHARED_GUARD).contains(&address) {
            let offset = address - shared_start;
            if offset + size > block.shared_size {
                fault(Fault::SharedOutOfBounds { offset, size, dynamic_size: block.shared_size });
            }
            return;
        }
        let (start, len) = thread.last_allocation.get();
        if address >= start && address + size <= start + len {
            return;
        }
        match block.registry.find(address, size) {
            Some(allocation) => thread.last_allocation.set(allocation),
            None => fault(Fault::GlobalOutOfBounds { address, size }),
        }
    })
}

impl ThreadContext {
    pub(crate) fn thread_idx(&self) -> u32 {
        self.thread
    }
}

impl BlockContext<'_> {
    pub(crate) fn block_idx(&self) -> u32 {
        self.block_idx
    }
    pub(crate) fn block_dim(&self) -> u32 {
        self.block_dim
    }
    pub(crate) fn grid_dim(&self) -> u32 {
        self.grid_dim
    }
    pub(crate) fn shared_memory(&self) -> *mut u8 {
        self.shared.as_ptr() as *mut u8
    }
    pub(crate) fn shared_size(&self) -> usize {
        self.shared_size
    }
    /// Mask of the lanes of warp `warp` that exist in this block.
    fn existing_lanes(&self, warp: u32) -> u32 {
        let lanes = (self.block_dim - warp * WARP).min(WARP);
        if lanes == WARP {
            u32::MAX
        } else {
            (1u32 << lanes) - 1
        }
    }
}

fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Faults are reported as errors by the executor; other panics keep their usual report.
            if info.payload().downcast_ref::<FaultPayload>().is_none() {
                previous(info);
            }
        }));
    });
}

pub(crate) fn launch(
    kernel_name: &str,
    config: LaunchConfig,
    schedule: Schedule,
    registry: &Registry,
    kernel: &(dyn Fn() + Sync),
) -> Result<(), EmulatorError> {
    let error = |block, thread, fault| EmulatorError { kernel: kernel_name.to_string(), block, thread, fault };
    if config.block_dim == 0 || config.block_dim > 1024 {
        return Err(error(
            0,
            None,
            Fault::InvalidLaunch(format!("{} threads per block (1 to 1024)", config.block_dim)),
        ));
    }
    if config.grid_dim == 0 {
        return Err(error(0, None, Fault::InvalidLaunch("a grid of 0 blocks".into())));
    }
    if config.shared_mem_bytes > 227 << 10 {
        return Err(error(
            0,
            None,
            Fault::InvalidLaunch(format!("{} bytes of shared memory", config.shared_mem_bytes)),
        ));
    }
    install_quiet_panic_hook();
    let mut rng = match schedule {
        Schedule::Deterministic => None,
        Schedule::Shuffled { seed } => Some(SmallRng::seed_from_u64(seed)),
    };
    let mut blocks: Vec<u32> = (0..config.grid_dim).collect();
    if let Some(rng) = rng.as_mut() {
        blocks.shuffle(rng);
    }
    let shared_size = config.shared_mem_bytes as usize;
    for block_idx in blocks {
        let block = BlockContext {
            kernel: kernel_name,
            block_idx,
            block_dim: config.block_dim,
            grid_dim: config.grid_dim,
            registry,
            shared: vec![u128::from_ne_bytes([SHARED_POISON; 16]); (shared_size + SHARED_GUARD).div_ceil(16)],
            shared_size,
        };
        run_block(&block, rng.as_mut(), kernel).map_err(|(thread, fault)| error(block_idx, thread, fault))?;
    }
    Ok(())
}

type ThreadCoroutine = Coroutine<(), (), (), DefaultStack>;

fn take_stack() -> Result<DefaultStack, Fault> {
    match STACKS.with(|s| s.borrow_mut().pop()) {
        Some(stack) => Ok(stack),
        None => {
            DefaultStack::new(STACK_BYTES).map_err(|e| Fault::InvalidLaunch(format!("allocating a thread stack: {e}")))
        }
    }
}

fn fault_of(payload: Box<dyn std::any::Any + Send>) -> Fault {
    if let Some(FaultPayload(fault)) = payload.downcast_ref::<FaultPayload>() {
        fault.clone()
    } else if let Some(message) = payload.downcast_ref::<&str>() {
        Fault::Panic(message.to_string())
    } else if let Some(message) = payload.downcast_ref::<String>() {
        Fault::Panic(message.clone())
    } else {
        Fault::Panic("a panic with a non-string payload".into())
    }
}

type BlockResult = Result<(), (Option<u32>, Fault)>;

fn run_block(block: &BlockContext<'_>, mut rng: Option<&mut SmallRng>, kernel: &(dyn Fn() + Sync)) -> BlockResult {
    let n = block.block_dim as usize;
    // The lifetime is erased: thread contexts never outlive this call.
    let block_ptr = (block as *const BlockContext<'_>).cast::<BlockContext<'static>>();
    let threads: Vec<ThreadContext> = (0..block.block_dim)
        .map(|thread| ThreadContext {
            block: block_ptr,
            thread,
            yielder: Cell::new(ptr::null()),
            wait: Cell::new(None),
            result: Cell::new(0),
            last_allocation: Cell::new((0, 0)),
        })
        .collect();
    let mut coroutines: Vec<Option<ThreadCoroutine>> = Vec::with_capacity(n);
    for context in &threads {
        let context = context as *const ThreadContext;
        let kernel = kernel as *const (dyn Fn() + Sync);
        let stack = take_stack().map_err(|f| (None, f))?;
        // SAFETY: the closure borrows `threads` and `kernel`, which outlive every coroutine: each is
        // driven to completion or dropped (force-unwound) before this function returns.
        let coroutine = unsafe {
            Coroutine::with_stack_unchecked(stack, move |yielder: &Yielder<(), ()>, ()| {
                (*context).yielder.set(yielder);
                (*kernel)();
            })
        };
        coroutines.push(Some(coroutine));
    }

    let mut scheduler = Scheduler {
        block,
        threads: &threads,
        state: vec![State::Runnable; n],
        at_barrier: 0,
        first_at_barrier: usize::MAX,
        first_done: usize::MAX,
        at_collective: vec![0; n.div_ceil(WARP as usize)],
    };
    let mut order = Vec::with_capacity(n);
    loop {
        order.clear();
        order.extend((0..n).filter(|&t| scheduler.state[t] == State::Runnable));
        if order.is_empty() {
            if scheduler.state.iter().all(|&s| s == State::Done) {
                return Ok(());
            }
            return Err((None, Fault::Deadlock(scheduler.describe_waits())));
        }
        if let Some(rng) = rng.as_deref_mut() {
            order.shuffle(rng);
        }
        for &t in &order {
            if scheduler.state[t] != State::Runnable {
                continue;
            }
            let coroutine = coroutines[t].as_mut().expect("a runnable thread has its coroutine");
            CURRENT.with(|c| c.set(&threads[t]));
            let outcome = catch_unwind(AssertUnwindSafe(|| coroutine.resume(())));
            CURRENT.with(|c| c.set(ptr::null()));
            match outcome {
                Ok(CoroutineResult::Yield(())) => {
                    scheduler.state[t] = State::Waiting;
                    scheduler.arrive(t)?;
                }
                Ok(CoroutineResult::Return(())) => {
                    scheduler.state[t] = State::Done;
                    scheduler.first_done = scheduler.first_done.min(t);
                    if let Some(done) = coroutines[t].take() {
                        let stack = done.into_stack();
                        STACKS.with(|s| s.borrow_mut().push(stack));
                    }
                    scheduler.exited(t)?;
                }
                Err(payload) => return Err((Some(t as u32), fault_of(payload))),
            }
        }
    }
}

struct Scheduler<'a, 'b> {
    block: &'a BlockContext<'b>,
    threads: &'a [ThreadContext],
    state: Vec<State>,
    /// Threads waiting at the block barrier, and the lowest-numbered of them (`usize::MAX`: none).
    at_barrier: usize,
    first_at_barrier: usize,
    /// The lowest-numbered thread that has exited (`usize::MAX`: none). With the two above, the
    /// checks at a barrier and at an exit take constant time instead of a scan of the block.
    first_done: usize,
    /// Each warp's lanes waiting at a collective, as bits: a lane's arrival looks at the other
    /// lanes of its mask only once all of them are there (or one of them cannot come), instead of
    /// at every arrival.
    at_collective: Vec<u32>,
}

impl Scheduler<'_, '_> {
    fn wait_of(&self, t: usize) -> Option<Wait> {
        (self.state[t] == State::Waiting).then(|| self.threads[t].wait.get()).flatten()
    }

    /// Thread `t` just yielded at the point recorded in its context.
    fn arrive(&mut self, t: usize) -> BlockResult {
        match self.threads[t].wait.get() {
            Some(Wait::Barrier(location)) => self.arrive_at_barrier(t, location),
            Some(Wait::Collective { op, mask, location, .. }) => self.arrive_at_collective(t, op, mask, location),
            None => Ok(()),
        }
    }

    fn arrive_at_barrier(&mut self, t: usize, location: &'static Location<'static>) -> BlockResult {
        if self.first_done != usize::MAX {
            let exited = self.first_done;
            return Err((
                Some(t as u32),
                Fault::BarrierNotReached {
                    location: location.to_string(),
                    waiting: self.at_barrier as u32 + 1,
                    exited_thread: exited as u32,
                },
            ));
        }
        self.at_barrier += 1;
        self.first_at_barrier = self.first_at_barrier.min(t);
        if self.at_barrier < self.state.len() {
            return Ok(());
        }
        for u in 0..self.state.len() {
            if let Some(Wait::Barrier(other)) = self.wait_of(u) {
                if other != location {
                    return Err((
                        Some(u as u32),
                        Fault::DivergentBarriers { first: location.to_string(), second: other.to_string() },
                    ));
                }
            }
        }
        self.at_barrier = 0;
        self.first_at_barrier = usize::MAX;
        for u in 0..self.state.len() {
            self.threads[u].wait.set(None);
            self.state[u] = State::Runnable;
        }
        Ok(())
    }

    fn arrive_at_collective(
        &mut self,
        t: usize,
        op: CollectiveOp,
        mask: u32,
        location: &'static Location<'static>,
    ) -> BlockResult {
        let warp = t as u32 / WARP;
        let lane = t as u32 % WARP;
        let operation = || format!("{} at {location}", op.name());
        if mask & (1 << lane) == 0 {
            return Err((Some(t as u32), Fault::LaneNotInMask { operation: operation(), mask, lane }));
        }
        let missing = mask & !self.block.existing_lanes(warp);
        if missing != 0 {
            let reason = "does not exist in this block".to_string();
            return Err((
                Some(t as u32),
                Fault::CollectiveMissingLane { operation: operation(), mask, lane: missing.trailing_zeros(), reason },
            ));
        }
        self.at_collective[warp as usize] |= 1 << lane;
        let absent = mask & !self.at_collective[warp as usize];
        if absent != 0 {
            // The lowest absent lane decides, as a scan in lane order would: still running, it
            // will arrive (mismatches are found once every lane is here); exited or at the block
            // barrier, the scan below names the fault.
            let first = (warp * WARP + absent.trailing_zeros()) as usize;
            if self.state[first] == State::Runnable {
                return Ok(());
            }
        }
        let mut values = [0u32; WARP as usize];
        let mut ops = [op; WARP as usize];
        for l in 0..WARP {
            if mask & (1 << l) == 0 {
                continue;
            }
            let u = (warp * WARP + l) as usize;
            match (self.state[u], self.threads[u].wait.get()) {
                (State::Done, _) => {
                    let reason = "has exited".to_string();
                    return Err((
                        Some(t as u32),
                        Fault::CollectiveMissingLane { operation: operation(), mask, lane: l, reason },
                    ));
                }
                (State::Runnable, _) => return Ok(()), // not there yet
                (
                    State::Waiting,
                    Some(Wait::Collective { op: other, mask: other_mask, value, location: other_location }),
                ) => {
                    if !other.same_kind(op) || other_mask != mask {
                        return Err((
                            Some(u as u32),
                            Fault::MismatchedCollectives {
                                first: operation(),
                                second: format!("{} with mask {other_mask:#010x} at {other_location}", other.name()),
                                mask,
                            },
                        ));
                    }
                    values[l as usize] = value;
                    ops[l as usize] = other;
                }
                (State::Waiting, _) => {
                    let reason = "waits at a block barrier instead".to_string();
                    return Err((
                        Some(t as u32),
                        Fault::CollectiveMissingLane { operation: operation(), mask, lane: l, reason },
                    ));
                }
            }
        }
        // Every lane of the mask is here: compute each lane's result and release them.
        let predicate_bits =
            (0..WARP).filter(|&l| mask & (1 << l) != 0 && values[l as usize] != 0).fold(0u32, |b, l| b | (1 << l));
        let source = |l: u32, j: u32| {
            if j >= WARP {
                values[l as usize]
            } else if mask & (1 << j) != 0 {
                values[j as usize]
            } else {
                UNDEFINED_LANE_VALUE
            }
        };
        for l in 0..WARP {
            if mask & (1 << l) == 0 {
                continue;
            }
            let result = match ops[l as usize] {
                CollectiveOp::ShflDown(delta) => source(l, l.saturating_add(delta)),
                CollectiveOp::ShflUp(delta) => {
                    if delta > l {
                        values[l as usize]
                    } else {
                        source(l, l - delta)
                    }
                }
                CollectiveOp::ShflXor(lane_mask) => source(l, l ^ lane_mask),
                CollectiveOp::ShflIdx(src) => source(l, src % WARP),
                CollectiveOp::VoteAll => (predicate_bits == mask) as u32,
                CollectiveOp::VoteAny => (predicate_bits != 0) as u32,
                CollectiveOp::Ballot => predicate_bits,
                CollectiveOp::MatchAny => (0..WARP)
                    .filter(|&j| mask & (1 << j) != 0 && values[j as usize] == values[l as usize])
                    .fold(0, |m, j| m | 1 << j),
                CollectiveOp::SyncWarp => 0,
            };
            let u = (warp * WARP + l) as usize;
            self.threads[u].result.set(result);
            self.threads[u].wait.set(None);
            self.state[u] = State::Runnable;
        }
        self.at_collective[warp as usize] &= !mask;
        Ok(())
    }

    /// Thread `t` returned from the kernel: a fault if a thread waits for it at the block barrier
    /// or at a warp collective whose mask has its lane (the lowest-numbered such waiter is named).
    fn exited(&mut self, t: usize) -> BlockResult {
        let warp = t / WARP as usize * WARP as usize;
        let collective = (warp..(warp + WARP as usize).min(self.state.len()))
            .find(|&u| matches!(self.wait_of(u), Some(Wait::Collective { mask, .. }) if mask & (1 << (t % 32)) != 0));
        if self.at_barrier > 0 && collective.is_none_or(|u| self.first_at_barrier < u) {
            let Some(Wait::Barrier(location)) = self.wait_of(self.first_at_barrier) else {
                unreachable!("the first thread at the barrier waits there")
            };
            return Err((
                Some(t as u32),
                Fault::BarrierNotReached {
                    location: location.to_string(),
                    waiting: self.at_barrier as u32,
                    exited_thread: t as u32,
                },
            ));
        }
        if let Some(u) = collective {
            let Some(Wait::Collective { op, mask, location, .. }) = self.wait_of(u) else {
                unreachable!("found waiting at a collective")
            };
            return Err((
                Some(u as u32),
                Fault::CollectiveMissingLane {
                    operation: format!("{} at {location}", op.name()),
                    mask,
                    lane: t as u32 % WARP,
                    reason: "has exited".into(),
                },
            ));
        }
        Ok(())
    }

    fn describe_waits(&self) -> String {
        let mut parts = Vec::new();
        for (t, state) in self.state.iter().enumerate() {
            if *state != State::Waiting {
                continue;
            }
            match self.threads[t].wait.get() {
                Some(Wait::Barrier(location)) => parts.push(format!("thread {t} at the barrier at {location}")),
                Some(Wait::Collective { op, mask, location, .. }) => {
                    parts.push(format!("thread {t} at {} (mask {mask:#010x}) at {location}", op.name()))
                }
                None => {}
            }
            if parts.len() == 8 {
                parts.push("...".into());
                break;
            }
        }
        parts.join("; ")
    }
}
