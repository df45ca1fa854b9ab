#!/usr/bin/env python3
"""Histograms side by side: ours (`bandwidth histogram`) against torch.bincount on the same GPU in the
same run. 256 bins of 2^MAX_LOG2 u8 samples (uniform, 95 % in one bin, all in one bin) against
torch.bincount of the same values as int32 and as uint8 tensors (minlength=256); then the block-histogram
layouts by bin count (the figures behind BlockHistogramLayout::select), the weighted and even-binned
histograms, and the multi-feature gradient histogram (10M rows x 28 features x 256 bins, 1 and 8 nodes)
in rows x features per second. Items per second count samples (or (row, feature) pairs).

usage: histogram_side_by_side.py PATH/TO/bandwidth [MAX_LOG2] [CSV_OUT]
"""
import csv
import io
import subprocess
import sys

import torch

from torch_timing import timed  # the script's own folder is on sys.path


def torch_inputs(n, distribution):
    """The distributions of bandwidth histogram (other draws, same shape): uniform, 95 % in bin 3, constant."""
    uniform = torch.randint(0, 256, (n,), device="cuda", dtype=torch.int32)
    if distribution == "uniform":
        return uniform
    hot = torch.full((n,), 3, device="cuda", dtype=torch.int32)
    if distribution == "constant":
        return hot
    return torch.where(torch.rand(n, device="cuda") < 0.95, hot, uniform)


def main():
    binary = sys.argv[1]
    max_log2 = sys.argv[2] if len(sys.argv) > 2 else "28"
    csv_out = sys.argv[3] if len(sys.argv) > 3 else None
    ours = subprocess.run([binary, "histogram", max_log2], check=True, capture_output=True, text=True)
    sys.stderr.write(ours.stderr)
    print(f"device: {torch.cuda.get_device_name()}")
    rows = list(csv.DictReader(io.StringIO(ours.stdout)))
    out = []

    print("\n256 bins of u8 samples, G items/s")
    print(f"{'input':10} {'n':>10} {'ours':>8} {'torch i32':>10} {'torch u8':>9} {'ours/i32':>9} {'ours/u8':>8}")
    for row in rows:
        if not row["op"].startswith("count_u8_"):
            continue
        distribution = row["op"][len("count_u8_"):]
        n, ours_us = int(row["n"]), float(row["median_us"])
        x32 = torch_inputs(n, distribution)
        x8 = x32.to(torch.uint8)
        i32_us = timed(lambda: torch.bincount(x32, minlength=256))
        u8_us = timed(lambda: torch.bincount(x8, minlength=256))
        rate = lambda us: n / (us * 1e-6) / 1e9
        print(f"{distribution:10} {n:>10} {rate(ours_us):>8.1f} {rate(i32_us):>10.1f} {rate(u8_us):>9.1f} "
              f"{i32_us / ours_us:>9.2f} {u8_us / ours_us:>8.2f}", flush=True)
        out.append([row["op"], row["layout"], n, 0, 256, 1, ours_us, i32_us, u8_us])
        del x32, x8
        torch.cuda.empty_cache()

    print("\nblock-histogram layouts by bin count, G items/s (auto = the selector's choice)")
    layouts = ["auto", "warp_columns", "atomic1", "atomic8"]
    table = {}
    for row in rows:
        if row["op"].startswith("layouts_"):
            table.setdefault((row["op"], int(row["bins"])), {})[row["layout"]] = float(row["g_items_per_s"])
            out.append([row["op"], row["layout"], int(row["n"]), 0, int(row["bins"]), 1, float(row["median_us"]), "", ""])
    print(f"{'input':20} {'bins':>5} " + " ".join(f"{name:>12}" for name in layouts))
    for (op, bins), rates in table.items():
        cells = " ".join(f"{rates[name]:>12.1f}" if name in rates else f"{'-':>12}" for name in layouts)
        print(f"{op:20} {bins:>5} {cells}")

    print("\nother histograms (256 bins), G items/s")
    for row in rows:
        if row["op"] in ("weighted_f32_u8", "weighted_gpi64_u8", "even_f32"):
            print(f"{row['op']:20} n = {row['n']:>10} {float(row['g_items_per_s']):>8.1f}")
            out.append([row["op"], row["layout"], int(row["n"]), 0, 256, 1, float(row["median_us"]), "", ""])

    print("\nmulti-feature gradient histogram (fixed point), G (rows x features)/s")
    for row in rows:
        if row["op"].startswith("multi_"):
            print(f"{row['op']:20} {row['n']} rows x {row['features']} features x {row['bins']} bins, "
                  f"{row['nodes']} node(s): {float(row['g_items_per_s']):.1f} ({float(row['median_us']):.0f} us)")
            out.append([row["op"], row["layout"], int(row["n"]), int(row["features"]), int(row["bins"]),
                        int(row["nodes"]), float(row["median_us"]), "", ""])

    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["op", "layout", "n", "features", "bins", "nodes", "ours_us", "torch_i32_us", "torch_u8_us"])
            w.writerows(out)


if __name__ == "__main__":
    main()
