//! Helpers shared by the integration tests: the GPU handle and deterministic random inputs.

use rand::{rngs::SmallRng, Rng, SeedableRng};

/// Opens the GPU for the GPU tests, or fails the test loudly: asking for the `gpu` feature without a
/// usable GPU is an error, never a silent pass.
pub fn gpu() -> primitives::Gpu {
    primitives::Gpu::new().unwrap_or_else(|error| {
        panic!("the GPU tests (feature `gpu`) need an NVIDIA GPU and driver, and none is usable here: {error}")
    })
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
