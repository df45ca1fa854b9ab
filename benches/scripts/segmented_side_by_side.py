#!/usr/bin/env python3
"""Segmented reduce side by side: ours (`bandwidth segmented`; it synchronises once per call to
report bad offsets, so its times include that) against torch.segment_reduce(sum) with lengths and the
device-to-device copy bandwidth, on the same GPU in the same run. Bandwidth counts items and offsets
read plus results written; copy counts bytes read + written.

usage: segmented_side_by_side.py PATH/TO/bandwidth [MAX_LOG2] [CSV_OUT]
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
    ours = subprocess.run([binary, "segmented", max_log2], check=True, capture_output=True, text=True)
    sys.stderr.write(ours.stderr)
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'n':>10} {'segment':>8} {'ours GB/s':>10} {'copy GB/s':>10} {'ours/copy':>9} {'torch GB/s':>10} {'ours/torch':>10}")
    rows = []
    copy_cache = {}
    for row in csv.DictReader(io.StringIO(ours.stdout)):
        n, segment, ours_us = int(row["n"]), int(row["segment"]), float(row["median_us"])
        if n not in copy_cache:
            x = torch.rand(n, device="cuda")
            y = torch.empty_like(x)
            copy_cache[n] = 8 * n / (timed(lambda: y.copy_(x)) * 1e-6) / 1e9
            del x, y
        x = torch.rand(n, device="cuda") * 2 - 1
        segments = -(-n // segment)
        lengths = torch.full((segments,), segment, device="cuda", dtype=torch.int64)
        lengths[-1] = n - segment * (segments - 1)
        try:
            torch_us = timed(lambda: torch.segment_reduce(x, "sum", lengths=lengths))
        except RuntimeError:
            torch_us = float("nan")
        ours_gbps = float(row["gbps"])
        nbytes = ours_gbps * 1e9 * ours_us * 1e-6
        torch_gbps = nbytes / (torch_us * 1e-6) / 1e9
        print(f"{n:>10} {segment:>8} {ours_gbps:>10.1f} {copy_cache[n]:>10.1f} {ours_gbps / copy_cache[n]:>9.3f} "
              f"{torch_gbps:>10.1f} {torch_us / ours_us:>10.3f}", flush=True)
        rows.append([n, segment, ours_us, torch_us, ours_gbps, copy_cache[n], torch_gbps])
        del x, lengths
        torch.cuda.empty_cache()
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["n", "segment", "ours_us", "torch_us", "ours_gbps", "copy_gbps", "torch_gbps"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
