//! A SIMT emulator: runs the crate's kernels (and yours) on the CPU with the GPU's execution model,
//! so kernel tests run on any machine (host builds only).
//!
//! Each GPU thread is a coroutine ([`corosensei`]); block barriers and warp collectives (shuffles,
//! votes, ballots, `sync_warp`) are its scheduling points. Blocks run one at a time. The default
//! schedule is deterministic (threads in index order, blocks in index order); a seeded shuffled
//! schedule changes the order of threads between scheduling points and the order of blocks, to expose
//! missing barriers and races.
//!
//! On top of executing, the emulator checks what a GPU would not tell you, each reported as an
//! [`EmulatorError`] naming the kernel, block and thread:
//! * a barrier not reached by every thread of the block, or reached at different call sites;
//! * a warp collective whose mask names a lane that exited, does not exist or waits elsewhere, or
//!   that is called by a lane outside its own mask;
//! * a shared-memory access past the launch's dynamic shared memory;
//! * a global access outside every allocation of the emulated device ([`Emulator::alloc`]);
//! * misaligned accesses, `trap`, and any panic in kernel code.
//!
//! # Testing your own kernel crate
//!
//! Write kernels with [`kernel!`](crate::kernel) and only `arch` for device intrinsics and memory
//! accesses ([`crate::arch::load`], [`crate::arch::store`], ...); then in a host test:
//!
//! ```
//! use primitives_kernels::{arch, emu::{Emulator, LaunchConfig, Schedule}, kernel};
//!
//! kernel! {
//!     /// out[i] = 2 * in[i]
//!     pub unsafe fn double(input: *const u32, output: *mut u32, n: u32) {
//!         let i = arch::block_idx_x() * arch::block_dim_x() + arch::thread_idx_x();
//!         if i < n {
//!             unsafe { arch::store(output.add(i as usize), 2 * arch::load(input.add(i as usize))) };
//!         }
//!     }
//! }
//!
//! # fn main() {
//! let device = Emulator::new(Schedule::Shuffled { seed: 7 });
//! let mut input = device.alloc(4 * 100);
//! input.write_bytes(bytemuck::cast_slice(&(0..100u32).collect::<Vec<_>>()));
//! let output = device.alloc(4 * 100);
//! let config = LaunchConfig { grid_dim: 4, block_dim: 32, shared_mem_bytes: 0 };
//! let (i, o) = (input.address(), output.address());
//! device.launch("double", config, &|| unsafe { double(i as *const u32, o as *mut u32, 100) }).unwrap();
//! let mut result = vec![0u32; 100];
//! output.read_bytes(bytemuck::cast_slice_mut(&mut result));
//! assert_eq!(result[99], 198);
//! # }
//! ```

use std::prelude::rust_2021::*;
use std::write;

mod executor;
mod memory;

use std::ptr::NonNull;
use std::sync::Arc;

pub use executor::current_location;
pub(crate) use executor::{barrier, check_access, collective, fault, with_current, CollectiveOp};
pub use memory::{DeviceMemory, Registry};

/// Order of execution of threads between scheduling points, and of blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Threads and blocks in index order.
    #[default]
    Deterministic,
    /// A random order, fixed by the seed, re-drawn at every scheduling round and for the blocks.
    Shuffled { seed: u64 },
}

/// Shape of an emulated launch (one-dimensional grids and blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid_dim: u32,
    pub block_dim: u32,
    pub shared_mem_bytes: u32,
}

/// What went wrong in an emulated launch.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The launch shape is impossible on a GPU.
    InvalidLaunch(String),
    /// A thread exited while others wait at (or later reach) a block barrier.
    BarrierNotReached { location: String, waiting: u32, exited_thread: u32 },
    /// Threads of one block wait at different barrier call sites.
    DivergentBarriers { first: String, second: String },
    /// A warp collective whose mask names a lane that cannot take part.
    CollectiveMissingLane { operation: String, mask: u32, lane: u32, reason: String },
    /// The calling lane is not in the collective's own mask.
    LaneNotInMask { operation: String, mask: u32, lane: u32 },
    /// Lanes of one mask called different collectives.
    MismatchedCollectives { first: String, second: String, mask: u32 },
    /// No thread can move: each waits for something that will not happen.
    Deadlock(String),
    /// A shared-memory access past the launch's dynamic shared memory.
    SharedOutOfBounds { offset: usize, size: usize, dynamic_size: usize },
    /// A global-memory access outside every allocation of the emulated device.
    GlobalOutOfBounds { address: usize, size: usize },
    /// An access not aligned to its size.
    Misaligned { address: usize, align: usize },
    /// The kernel executed `trap`.
    Trap,
    /// Kernel code panicked (index out of bounds, overflow in a debug build, ...).
    Panic(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::InvalidLaunch(why) => write!(f, "invalid launch: {why}"),
            Fault::BarrierNotReached { location, waiting, exited_thread } => write!(
                f,
                "barrier at {location} not reached by every thread: thread {exited_thread} exited while {waiting} thread(s) wait there"
            ),
            Fault::DivergentBarriers { first, second } => {
                write!(f, "threads of the block wait at different barriers: {first} and {second}")
            }
            Fault::CollectiveMissingLane { operation, mask, lane, reason } => {
                write!(f, "warp collective {operation} with mask {mask:#010x}: lane {lane} {reason}")
            }
            Fault::LaneNotInMask { operation, mask, lane } => {
                write!(f, "lane {lane} called {operation} with mask {mask:#010x}, which does not name it")
            }
            Fault::MismatchedCollectives { first, second, mask } => {
                write!(f, "lanes of mask {mask:#010x} called different warp collectives: {first} and {second}")
            }
            Fault::Deadlock(state) => write!(f, "deadlock: {state}"),
            Fault::SharedOutOfBounds { offset, size, dynamic_size } => write!(
                f,
                "shared-memory access of {size} bytes at offset {offset} past the launch's {dynamic_size} bytes of dynamic shared memory"
            ),
            Fault::GlobalOutOfBounds { address, size } => {
                write!(f, "global access of {size} bytes at {address:#x} outside every device allocation")
            }
            Fault::Misaligned { address, align } => write!(f, "access at {address:#x} not aligned to {align} bytes"),
            Fault::Trap => write!(f, "the kernel executed trap"),
            Fault::Panic(message) => write!(f, "panic in kernel code: {message}"),
        }
    }
}

/// A fault in an emulated launch, with where it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct EmulatorError {
    pub kernel: String,
    pub block: u32,
    /// The thread that faulted, when one thread did.
    pub thread: Option<u32>,
    pub fault: Fault,
}

impl std::fmt::Display for EmulatorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.thread {
            Some(thread) => {
                write!(f, "kernel `{}`, block {}, thread {}: {}", self.kernel, self.block, thread, self.fault)
            }
            None => write!(f, "kernel `{}`, block {}: {}", self.kernel, self.block, self.fault),
        }
    }
}

impl std::error::Error for EmulatorError {}

/// An emulated device: its allocations and its schedule.
#[derive(Debug, Default)]
pub struct Emulator {
    registry: Arc<Registry>,
    schedule: Schedule,
}

impl Emulator {
    /// A device with no allocation yet.
    pub fn new(schedule: Schedule) -> Self {
        Self { registry: Arc::default(), schedule }
    }

    /// Whether `memory` was allocated by this device.
    pub fn owns(&self, memory: &DeviceMemory) -> bool {
        Arc::ptr_eq(&self.registry, memory.registry())
    }

    /// The schedule launches use.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// `len` zeroed bytes of device memory, 16-byte aligned.
    pub fn alloc(&self, len: usize) -> DeviceMemory {
        DeviceMemory::new(self.registry.clone(), len)
    }

    /// The `len` bytes at `pointer`, owned by the caller, as this device's memory until the value
    /// drops, and then left alone (the emulated form of memory another library allocated).
    ///
    /// # Safety
    /// `pointer` stays valid for `len` bytes of reads and writes, accessed by nothing else while
    /// this memory is, until the value drops.
    pub unsafe fn borrow(&self, pointer: NonNull<u8>, len: usize) -> DeviceMemory {
        // SAFETY: the caller's promise, passed on.
        unsafe { DeviceMemory::borrowed(self.registry.clone(), pointer, len) }
    }

    /// Runs `kernel` (a call of one kernel with its arguments) over the grid and waits for it.
    /// `name` is used in error messages.
    pub fn launch(&self, name: &str, config: LaunchConfig, kernel: &(dyn Fn() + Sync)) -> Result<(), EmulatorError> {
        executor::launch(name, config, self.schedule, &self.registry, kernel)
    }
}

pub use crate::launch::KernelParam;
