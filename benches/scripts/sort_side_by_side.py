#!/usr/bin/env python3
"""Radix sort side by side: ours (`bandwidth sort`) against torch.sort on the same GPU in the same run.
torch.sort of int32 returns the sorted keys and their indices (a key-value sort); for the segmented
rows it sorts a (segments, n / segments) tensor along dim 1.

usage: sort_side_by_side.py PATH/TO/bandwidth [MAX_LOG2] [CSV_OUT]
"""
import csv
import io
import subprocess
import sys

import torch

from torch_timing import timed  # the script's own folder is on sys.path


def main():
    binary = sys.argv[1]
    max_log2 = sys.argv[2] if len(sys.argv) > 2 else "28"
    csv_out = sys.argv[3] if len(sys.argv) > 3 else None
    ours = subprocess.run([binary, "sort", max_log2], check=True, capture_output=True, text=True)
    sys.stderr.write(ours.stderr)
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'op':22} {'n':>10} {'segments':>8} {'ours Gkeys/s':>12} {'torch Gkeys/s':>13} {'ours/torch':>10}")
    rows = []
    for row in csv.DictReader(io.StringIO(ours.stdout)):
        n, segments, ours_us = int(row["n"]), int(row["segments"]), float(row["median_us"])
        x = torch.randint(-2**31, 2**31 - 1, (n,), device="cuda", dtype=torch.int32)
        if segments > 1:
            x2 = x.view(segments, n // segments)
            torch_us = timed(lambda: torch.sort(x2, dim=1))
        else:
            torch_us = timed(lambda: torch.sort(x))
        ours_rate, torch_rate = n / ours_us / 1e3, n / torch_us / 1e3
        print(f"{row['op']:22} {n:>10} {segments:>8} {ours_rate:>12.2f} {torch_rate:>13.2f} {torch_us / ours_us:>10.3f}",
              flush=True)
        rows.append([row["op"], n, segments, ours_us, torch_us, ours_rate, torch_rate])
        del x
        torch.cuda.empty_cache()
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["op", "n", "segments", "ours_us", "torch_us", "ours_gkeys", "torch_gkeys"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
