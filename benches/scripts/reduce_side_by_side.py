#!/usr/bin/env python3
"""Device reduce side by side: our kernels (`bandwidth reduce`) against CuPy's CUB sum and
torch.sum, on the same GPU in the same run, timed the same way (CUDA events, median of 50 after 5
warm-ups, rotating input copies so the working set exceeds the L2).

usage: reduce_side_by_side.py PATH/TO/bandwidth [MAX_LOG2] [CSV_OUT]
"""
import csv
import io
import os
import subprocess
import sys

os.environ.setdefault("CUPY_ACCELERATORS", "cub")
import cupy as cp  # noqa: E402
import torch  # noqa: E402

WARMUP, REPEATS = 5, 50


def rotation(nbytes):
    return max(1, min(64, -(-(256 << 20) // max(nbytes, 1))))


def time_torch(fn, copies):
    for i in range(WARMUP):
        fn(copies[i % len(copies)])
    samples = []
    for i in range(REPEATS):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(copies[(WARMUP + i) % len(copies)])
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1000.0)
    samples.sort()
    return samples[len(samples) // 2]


def time_cupy(fn, copies):
    for i in range(WARMUP):
        fn(copies[i % len(copies)])
    samples = []
    stream = cp.cuda.get_current_stream()
    for i in range(REPEATS):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        fn(copies[(WARMUP + i) % len(copies)])
        stop.record(stream)
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop) * 1000.0)
    samples.sort()
    return samples[len(samples) // 2]


def peers(dtype, op, n):
    tdtype = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32}[dtype]
    gen = torch.Generator(device="cuda").manual_seed(n)
    if dtype.startswith("float"):
        base = torch.rand(n, device="cuda", generator=gen, dtype=tdtype) * 2 - 1
    else:
        base = torch.randint(-1000, 1000, (n,), device="cuda", generator=gen, dtype=tdtype)
    nbytes = base.numel() * base.element_size()
    copies = [base.clone() for _ in range(rotation(nbytes))]
    torch_fn = {"sum": lambda x: torch.sum(x), "max": lambda x: torch.max(x)}[op]
    torch_us = time_torch(torch_fn, copies)
    cupy_copies = [cp.from_dlpack(c) for c in copies]
    cupy_fn = {"sum": lambda x: cp.sum(x), "max": lambda x: cp.max(x)}[op]
    cupy_us = time_cupy(cupy_fn, cupy_copies)
    del copies, cupy_copies
    torch.cuda.empty_cache()
    cp.get_default_memory_pool().free_all_blocks()
    return nbytes, cupy_us, torch_us


def main():
    binary = sys.argv[1]
    max_log2 = sys.argv[2] if len(sys.argv) > 2 else "28"
    csv_out = sys.argv[3] if len(sys.argv) > 3 else None
    ours = subprocess.run([binary, "reduce", max_log2], check=True, capture_output=True, text=True)
    sys.stderr.write(ours.stderr)
    rows = []
    print(f"device: {torch.cuda.get_device_name()}")
    header = f"{'dtype':8} {'op':4} {'n':>10} {'ours GB/s':>10} {'CUB GB/s':>9} {'torch GB/s':>10} {'ours/CUB':>8} {'ours/torch':>10}"
    print(header)
    for row in csv.DictReader(io.StringIO(ours.stdout)):
        n = int(row["n"])
        nbytes, cupy_us, torch_us = peers(row["dtype"], row["op"], n)
        ours_us = float(row["median_us"])
        ours_gbps, cub_gbps, torch_gbps = (nbytes / (t * 1e-6) / 1e9 for t in (ours_us, cupy_us, torch_us))
        rows.append([row["dtype"], row["op"], n, ours_us, cupy_us, torch_us, ours_gbps, cub_gbps, torch_gbps])
        print(f"{row['dtype']:8} {row['op']:4} {n:>10} {ours_gbps:>10.1f} {cub_gbps:>9.1f} {torch_gbps:>10.1f} "
              f"{cupy_us / ours_us:>8.3f} {torch_us / ours_us:>10.3f}", flush=True)
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["dtype", "op", "n", "ours_us", "cub_us", "torch_us", "ours_gbps", "cub_gbps", "torch_gbps"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
