#!/usr/bin/env python3
"""Kernel times from an Nsight Compute CSV (`ncu --csv --page raw --metrics gpu__time_duration.sum
--log-file FILE ...`): each kernel name's launches and total time, largest first, and the total.

usage: ncu_kernel_times.py FILE [TREES]   (TREES: divide the totals by the trees the run grew)
"""
import collections
import csv
import sys

lines = open(sys.argv[1]).read().splitlines()
trees = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
rows = list(csv.reader(lines[start:]))
header, body = rows[0], rows[2:]  # the second row holds the units
name, time = header.index("Kernel Name"), header.index("gpu__time_duration.sum")
totals = collections.defaultdict(lambda: [0, 0.0])
for row in body:
    totals[row[name]][0] += 1
    totals[row[name]][1] += float(row[time].replace(",", "")) / 1000.0  # ns -> us
grand = sum(t for _, t in totals.values())
per = " a tree" if trees != 1.0 else ""
print(f"{'us' + per:>12} {'launches' + per:>16}  kernel")
for kernel, (count, total) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
    print(f"{total / trees:12.1f} {count / trees:16.1f}  {kernel[:110]}")
print(f"{grand / trees:12.1f} {sum(c for c, _ in totals.values()) / trees:16.1f}  (all kernels)")
