#!/usr/bin/env python3
"""Partition and select side by side: ours (`bandwidth select`) against the device-to-device copy
bandwidth and torch's boolean-mask selection (x[mask], CUB-based) on the same GPU in the same run.
Bandwidth counts bytes that must move (see benches/src/bin/bandwidth/select.rs); copy counts bytes read + written.

usage: select_side_by_side.py PATH/TO/bandwidth [MAX_LOG2] [CSV_OUT]
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
    ours = subprocess.run([binary, "select", max_log2], check=True, capture_output=True, text=True)
    sys.stderr.write(ours.stderr)
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'op':16} {'n':>10} {'ours GB/s':>10} {'copy GB/s':>10} {'ours/copy':>9} {'torch mask GB/s':>15} {'ours/torch':>10}")
    rows = []
    for row in csv.DictReader(io.StringIO(ours.stdout)):
        n, ours_us = int(row["n"]), float(row["median_us"])
        x = torch.randint(0, 2**31 - 1, (n,), device="cuda", dtype=torch.int32)
        mask = torch.rand(n, device="cuda") < 0.5
        out = torch.empty_like(x)
        copy_us = timed(lambda: out.copy_(x))
        copy_gbps = 8 * n / (copy_us * 1e-6) / 1e9
        torch_us = timed(lambda: x[mask])
        ours_gbps = float(row["gbps"])
        nbytes = ours_gbps * 1e9 * ours_us * 1e-6
        torch_gbps = nbytes / (torch_us * 1e-6) / 1e9
        print(f"{row['op']:16} {n:>10} {ours_gbps:>10.1f} {copy_gbps:>10.1f} {ours_gbps / copy_gbps:>9.3f} "
              f"{torch_gbps:>15.1f} {torch_us / ours_us:>10.3f}", flush=True)
        rows.append([row["op"], n, ours_us, copy_us, torch_us, ours_gbps, copy_gbps, torch_gbps])
        del x, mask, out
        torch.cuda.empty_cache()
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["op", "n", "ours_us", "copy_us", "torch_mask_us", "ours_gbps", "copy_gbps", "torch_gbps"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
