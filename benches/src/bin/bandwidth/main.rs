//! GPU bandwidth of the device primitives, for the side-by-side scripts in `benches/scripts/`: one
//! executable (each embeds the PTX) with a subcommand per primitive.
//!
//! Usage: bandwidth <first-call | driver-calls | reduce | scan | scan-variants | scan-timeline[-specialized] | select | segmented | multi | sort | sort-once> [MAX_LOG2 (default 28)]

mod driver_calls;
mod histogram;
mod multi;
mod reduce;
mod scan;
mod segmented;
mod select;
mod sort;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let max_log2: u32 = args.get(1).map(|a| a.parse().expect("MAX_LOG2 must be an integer")).unwrap_or(28);
    match args.first().map(String::as_str) {
        Some("first-call") => first_call(),
        Some("driver-calls") => driver_calls::run(),
        Some("histogram") => histogram::run(max_log2),
        Some("reduce") => reduce::run(max_log2),
        Some("scan") => scan::run(max_log2),
        Some("scan-variants") => scan::variants(max_log2),
        Some("scan-timeline") => scan::timeline(max_log2, false),
        Some("scan-timeline-specialized") => scan::timeline(max_log2, true),
        Some("select") => select::run(max_log2),
        Some("segmented") => segmented::run(max_log2),
        Some("multi") => multi::run(max_log2),
        Some("sort") => sort::run(max_log2),
        Some("sort-once") => sort::once(max_log2),
        _ => {
            eprintln!(
                "usage: bandwidth <first-call | driver-calls | reduce | scan | scan-variants | select | segmented | multi | sort | sort-once> [MAX_LOG2]"
            );
            std::process::exit(2);
        }
    }
}

/// The cost of a fresh process's first primitive: opening the device (context creation), then one
/// `DeviceReduce::sum` of 4096 floats, which loads the reduce family. Run it with
/// `CUDA_CACHE_DISABLE=1` for the cold case (no JIT cache), with `PRIMITIVES_KERNEL_IMAGE=ptx` to
/// see what loading the PTX instead of machine code costs.
fn first_call() {
    use primitives::{DeviceReduce, Gpu};
    use std::time::Instant;
    let start = Instant::now();
    let gpu = Gpu::new().expect("no usable GPU");
    let opened = start.elapsed();
    let input = gpu.upload(&vec![1.0f32; 4096]).expect("upload");
    let mut total = gpu.alloc_zeroed::<f32>(1).expect("alloc");
    DeviceReduce::sum(&gpu, &input, &mut total).expect("reduce");
    let result = total.to_vec(&gpu).expect("download")[0];
    let first = start.elapsed();
    assert_eq!(result, 4096.0);
    let again = Instant::now();
    DeviceReduce::sum(&gpu, &input, &mut total).expect("reduce");
    total.to_vec(&gpu).expect("download");
    let second = again.elapsed();
    println!("device: {}", gpu.properties().name);
    println!("open (context): {:.1} ms", opened.as_secs_f64() * 1e3);
    for load in gpu.module_loads() {
        println!("{load}");
    }
    println!("first DeviceReduce::sum including open: {:.1} ms", first.as_secs_f64() * 1e3);
    println!("second DeviceReduce::sum: {:.3} ms", second.as_secs_f64() * 1e3);
}
