#!/usr/bin/env python3
"""Device scan side by side: our single-pass scan (`bandwidth scan`) against torch.cumsum and
CuPy's cumsum (CUB's DeviceScan), same GPU, same run, timed the same way (CUDA events, median of 30
after 5 warm-ups, rotating input copies), with a device-to-device copy of the same bytes (torch
`out.copy_(x)`) as the bandwidth reference. Bandwidth counts bytes read plus bytes written.

usage: scan_side_by_side.py PATH/TO/bandwidth [MAX_LOG2] [CSV_OUT]
"""
import csv
import io
import os
import subprocess
import sys

os.environ.setdefault("CUPY_ACCELERATORS", "cub")
import cupy as cp  # noqa: E402
import torch  # noqa: E402

WARMUP, REPEATS = 5, 30


def rotation(nbytes):
    return max(1, min(64, -(-(256 << 20) // max(nbytes, 1))))


def timed(fn, copies, record, elapsed):
    for i in range(WARMUP):
        fn(copies[i % len(copies)])
    samples = []
    for i in range(REPEATS):
        start, stop = record()
        fn(copies[(WARMUP + i) % len(copies)])
        samples.append(elapsed(start, stop))
    samples.sort()
    return samples[len(samples) // 2]


def torch_events():
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    return start, stop


def torch_elapsed(start, stop):
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1000.0


def cupy_events():
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    return start, stop


def cupy_elapsed(start, stop):
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) * 1000.0


def peers(dtype, n):
    if dtype.startswith("pair"):
        return None, None, None, None
    tdtype = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32}[dtype]
    gen = torch.Generator(device="cuda").manual_seed(n)
    if dtype.startswith("float"):
        base = torch.rand(n, device="cuda", generator=gen, dtype=tdtype) * 2 - 1
    else:
        base = torch.randint(-1000, 1000, (n,), device="cuda", generator=gen, dtype=tdtype)
    nbytes = 2 * base.numel() * base.element_size()
    copies = [base.clone() for _ in range(rotation(nbytes // 2))]
    out = torch.empty_like(base)
    torch_us = timed(lambda x: torch.cumsum(x, 0, out=out), copies, torch_events, torch_elapsed)
    cupy_copies = [cp.from_dlpack(c) for c in copies]
    cupy_out = cp.from_dlpack(out)
    cupy_us = timed(lambda x: cp.cumsum(x, out=cupy_out), cupy_copies, cupy_events, cupy_elapsed)
    copy_us = timed(lambda x: out.copy_(x), copies, torch_events, torch_elapsed)
    del copies, cupy_copies, out, cupy_out
    torch.cuda.empty_cache()
    cp.get_default_memory_pool().free_all_blocks()
    return nbytes, cupy_us, torch_us, copy_us


def main():
    binary = sys.argv[1]
    max_log2 = sys.argv[2] if len(sys.argv) > 2 else "28"
    csv_out = sys.argv[3] if len(sys.argv) > 3 else None
    ours = subprocess.run([binary, "scan", max_log2], check=True, capture_output=True, text=True)
    sys.stderr.write(ours.stderr)
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'dtype':9} {'n':>10} {'ours GB/s':>10} {'CUB GB/s':>9} {'torch GB/s':>10} {'copy GB/s':>9} "
          f"{'ours/CUB':>8} {'ours/torch':>10} {'ours/copy':>9}")
    rows = []
    for row in csv.DictReader(io.StringIO(ours.stdout)):
        n, ours_us = int(row["n"]), float(row["median_us"])
        nbytes, cupy_us, torch_us, copy_us = peers(row["dtype"], n)
        if nbytes is None:
            print(f"{row['dtype']:9} {n:>10} {float(row['gbps']):>10.1f} {'-':>9} {'-':>10} {'-':>9} {'-':>8} {'-':>10} {'-':>9}",
                  flush=True)
            rows.append([row["dtype"], n, ours_us, "", "", "", row["gbps"], "", "", ""])
            continue
        ours_gbps, cub_gbps, torch_gbps, copy_gbps = (
            nbytes / (t * 1e-6) / 1e9 for t in (ours_us, cupy_us, torch_us, copy_us))
        print(f"{row['dtype']:9} {n:>10} {ours_gbps:>10.1f} {cub_gbps:>9.1f} {torch_gbps:>10.1f} {copy_gbps:>9.1f} "
              f"{cupy_us / ours_us:>8.3f} {torch_us / ours_us:>10.3f} {copy_us / ours_us:>9.3f}", flush=True)
        rows.append([row["dtype"], n, ours_us, cupy_us, torch_us, copy_us, ours_gbps, cub_gbps, torch_gbps, copy_gbps])
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["dtype", "n", "ours_us", "cub_us", "torch_us", "copy_us", "ours_gbps", "cub_gbps", "torch_gbps",
                        "copy_gbps"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
