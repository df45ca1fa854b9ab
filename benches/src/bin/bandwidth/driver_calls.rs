//! Host time of the driver calls a tree level makes on each device (`bandwidth driver-calls`):
//! what the multi-device trainer's per-level host work is made of, on one device and on every
//! device at once (a thread each), to see whether the calls of different devices contend.

use std::time::{Duration, Instant};

use primitives::{DeviceScan, Gpu};

const CALLS: u32 = 2000;

/// Mean host time of `f` over [`CALLS`] calls, after a warm-up call.
fn mean(mut f: impl FnMut()) -> Duration {
    f();
    let start = Instant::now();
    (0..CALLS).for_each(|_| f());
    start.elapsed() / CALLS
}

/// The per-call host times on `gpu`, one line each.
fn measure(gpu: &Gpu) -> Vec<(&'static str, Duration)> {
    let ints = gpu.upload(&vec![1u32; 1 << 20]).expect("upload");
    let mut sums = gpu.alloc_zeroed::<u32>(1 << 20).expect("alloc");
    let plan = vec![7u64; 256];
    let mut kept = gpu.alloc_zeroed::<u64>(256).expect("alloc");
    let small = gpu.alloc_zeroed::<u32>(16).expect("alloc");
    // A level's children's histograms at depth 7: 128 nodes x 28 features x 256 bins, 16 B each.
    let level = 128 * 28 * 256 * 2;
    let mut out = vec![
        ("idle synchronize", mean(|| gpu.synchronize().expect("sync"))),
        ("scan of 1M u32, enqueued (not waited)", {
            let t = mean(|| DeviceScan::exclusive_sum_n(gpu, &ints, &mut sums, 1 << 20).expect("scan"));
            gpu.synchronize().expect("sync");
            t
        }),
        ("2 KiB upload into a kept buffer", mean(|| kept.copy_from_host(gpu, &plan).expect("upload"))),
        ("2 KiB upload into a new buffer", mean(|| drop(gpu.upload(&plan).expect("upload")))),
        ("64 B read back (a wait on the idle stream)", mean(|| drop(small.to_vec(gpu).expect("read")))),
        ("alloc_uninitialized + free, 1.8 MiB", mean(|| drop(gpu.alloc_uninitialized::<u64>(level).expect("alloc")))),
        ("alloc_zeroed + free, 1.8 MiB", mean(|| drop(gpu.alloc_zeroed::<u64>(level).expect("alloc")))),
    ];
    gpu.synchronize().expect("sync");
    out.push((
        "scan enqueued + 64 B read back",
        mean(|| {
            DeviceScan::exclusive_sum_n(gpu, &ints, &mut sums, 1 << 20).expect("scan");
            drop(small.to_vec(gpu).expect("read"));
        }),
    ));
    out
}

pub fn run() {
    let count = cudarc::driver::CudaContext::device_count().expect("devices") as usize;
    let gpus: Vec<Gpu> = (0..count).map(|d| Gpu::with_ordinal(d).expect("device")).collect();
    println!("device: {} x{count}; {CALLS} calls each", gpus[0].properties().name);
    let alone = measure(&gpus[0]);
    let together: Vec<Vec<(&str, Duration)>> = std::thread::scope(|s| {
        gpus.iter()
            .map(|g| s.spawn(|| measure(g)))
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    print!("| call | one device alone |");
    (0..count).for_each(|d| print!(" device {d}, all at once |"));
    println!();
    println!("| --- | ---:{} |", " | ---:".repeat(count));
    for (i, (name, t)) in alone.iter().enumerate() {
        print!("| {name} | {:.1} µs |", t.as_secs_f64() * 1e6);
        together.iter().for_each(|m| print!(" {:.1} µs |", m[i].1.as_secs_f64() * 1e6));
        println!();
    }
}
