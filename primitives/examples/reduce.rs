//! Sums 2^26 random f32 values on the GPU when one is usable, else on the CPU, and checks the result
//! against the CPU oracle and an exact (compensated) sum.
//!
//! `cargo run --release -p primitives --example reduce`

use primitives::ops::{Max, Sum};
use primitives::{cpu, DeviceReduce, Gpu};
use std::time::Instant;

fn main() -> Result<(), primitives::Error> {
    let n = 1usize << 26;
    // A fixed linear congruential sequence mapped to [-1, 1): reproducible without extra crates.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let values: Vec<f32> = (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect();
    let exact = cpu::compensated_sum(values.iter().map(|&x| x as f64));

    let start = Instant::now();
    let oracle = cpu::reduce::<f32, Sum>(&values);
    println!("CPU oracle: sum = {oracle} in {:?} (exact {exact:.3})", start.elapsed());

    match Gpu::new() {
        Ok(gpu) => {
            let props = gpu.properties();
            println!("GPU: {} ({} multiprocessors)", props.name, props.multiprocessors);
            let input = gpu.upload(&values)?;
            let mut output = gpu.alloc_zeroed::<f32>(1)?;
            DeviceReduce::sum(&gpu, &input, &mut output)?; // warm-up: loads the module
            gpu.synchronize()?;
            let start = Instant::now();
            DeviceReduce::sum(&gpu, &input, &mut output)?;
            gpu.synchronize()?;
            let elapsed = start.elapsed();
            let sum = output.to_vec(&gpu)?[0];
            let gbps = (n * 4) as f64 / elapsed.as_secs_f64() / 1e9;
            println!("GPU reduce: sum = {sum} in {elapsed:?} ({gbps:.0} GB/s including the launch)");
            println!("GPU max = {}", gpu.reduce::<f32, Max>(&input)?);
            println!(
                "|GPU - exact| = {:.3e}, |oracle - exact| = {:.3e}",
                (sum as f64 - exact).abs(),
                (oracle as f64 - exact).abs()
            );
        }
        Err(reason) => println!("no GPU ({reason}); the CPU result above stands"),
    }
    Ok(())
}
