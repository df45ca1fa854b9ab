#!/usr/bin/env python3
"""Multireduce/multiscan against the bucket count, next to the alternatives: a histogram
(torch.bincount with weights, atomics) for multireduce, and sort plus segmented scan for multiscan
(our radix sort of the pairs by bucket id over the id's bits, and torch.sort by bucket, stable, plus
a gather, timed here; our segmented scan of sorted data, timed by `bandwidth multi`). Same GPU, same
run, CUDA events, medians.

usage: multi_side_by_side.py PATH/TO/bandwidth [MAX_LOG2] [CSV_OUT]
"""
import csv
import io
import subprocess
import sys

import torch

from torch_timing import timed as timed_with  # the script's own folder is on sys.path


def timed(fn):
    return timed_with(fn, warmup=2, repeats=10)


def main():
    binary = sys.argv[1]
    max_log2 = sys.argv[2] if len(sys.argv) > 2 else "26"
    csv_out = sys.argv[3] if len(sys.argv) > 3 else None
    ours = subprocess.run([binary, "multi", max_log2], check=True, capture_output=True, text=True)
    sys.stderr.write(ours.stderr)
    rows = {}
    for row in csv.DictReader(io.StringIO(ours.stdout)):
        rows[(row["op"], int(row["buckets"]))] = (int(row["n"]), float(row["median_us"]))
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'B':>3} {'multireduce us':>14} {'bincount us':>11} {'multiscan us':>12} {'our sort us':>11} {'torch sort us':>13} {'segscan us':>10} {'our sort+segscan us':>19}")
    out = []
    for b in sorted({k[1] for k in rows}):
        n, mr = rows[("multireduce", b)]
        _, ms = rows[("multiscan", b)]
        _, ss = rows[("segmented_scan_sorted", b)]
        _, our_sort = rows[("sort_by_bucket", b)]
        values = torch.randint(0, 1000, (n,), device="cuda", dtype=torch.int32)
        ids = torch.randint(0, b, (n,), device="cuda", dtype=torch.int64)
        weights = values.to(torch.float32)
        bincount_us = timed(lambda: torch.bincount(ids, weights=weights, minlength=b))
        sort_us = timed(lambda: values[torch.sort(ids, stable=True).indices])
        print(f"{b:>3} {mr:>14.1f} {bincount_us:>11.1f} {ms:>12.1f} {our_sort:>11.1f} {sort_us:>13.1f} {ss:>10.1f} {our_sort + ss:>19.1f}", flush=True)
        out.append([b, n, mr, bincount_us, ms, our_sort, sort_us, ss])
        del values, ids, weights
        torch.cuda.empty_cache()
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["buckets", "n", "multireduce_us", "bincount_us", "multiscan_us", "our_sort_us", "torch_sort_gather_us", "segmented_scan_sorted_us"])
            w.writerows(out)


if __name__ == "__main__":
    main()
