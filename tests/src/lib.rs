//! Helpers shared by the integration tests: the GPU handle and deterministic random inputs.

use rand::{rngs::SmallRng, Rng, SeedableRng};

use primitives::{DeviceKind, Gpu, Schedule, DEVICE_ENV};

/// The device the GPU tests run on: the CUDA GPU with the `gpu` feature, the SIMT emulator without
/// it; `PRIMITIVES_DEVICE` (`cuda`, `emulator`, `emulator:shuffled:SEED`) overrides either.
///
/// A CUDA device that cannot be opened fails the test loudly: asking for the GPU without a usable one
/// is an error, never a silent pass.
pub fn gpu() -> Gpu {
    let default = if cfg!(feature = "gpu") {
        DeviceKind::Cuda { ordinal: 0 }
    } else {
        DeviceKind::Emulated(Schedule::Deterministic)
    };
    let kind = DeviceKind::from_env_or(default).unwrap_or_else(|error| panic!("{error}"));
    Gpu::with_kind(kind).unwrap_or_else(|error| {
        panic!("the GPU tests were asked to run on {kind:?} (feature `gpu` or {DEVICE_ENV}), which is not usable here: {error}")
    })
}

/// Largest input the tests give this device: everything on a GPU; on the emulator, sizes that keep
/// `cargo test` quick (still many tiles of every kernel; the GPU runs keep the large ones).
pub fn max_len(gpu: &Gpu) -> usize {
    if gpu.is_emulated() {
        1 << 18
    } else {
        usize::MAX
    }
}

/// Random values from a generator seeded by `seed`, drawn by `draw`.
pub fn random_vec<T>(len: usize, seed: u64, mut draw: impl FnMut(&mut SmallRng) -> T) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len).map(|_| draw(&mut rng)).collect()
}

/// Uniform f32 in [-1, 1).
pub fn uniform_f32(len: usize, seed: u64) -> Vec<f32> {
    random_vec(len, seed, |r| r.gen_range(-1.0f32..1.0))
}

/// Sizes at which every primitive is checked: empty, one, around a warp and a block, several blocks.
pub const EDGE_SIZES: [usize; 12] = [0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 4097, 100_003];

/// `n` device handles for the multi-device tests: CUDA GPUs 0, 1, ... with the `gpu` feature (a
/// machine of fewer GPUs gives GPU 0 again for the rest: the same device through another handle,
/// which the returned ordinals show), emulators without it.
pub fn gpus(n: usize) -> (Vec<Gpu>, Vec<usize>) {
    if gpu().is_emulated() {
        let gpus = (0..n as u64).map(|seed| Gpu::emulated(Schedule::Shuffled { seed })).collect();
        return (gpus, (0..n).collect());
    }
    (0..n)
        .map(|i| match Gpu::with_ordinal(i) {
            Ok(gpu) => (gpu, i),
            Err(_) => (gpu(), 0),
        })
        .unzip()
}
