#!/usr/bin/env python3
"""Quantile cuts side by side: boost's device sketch (`boost::gpu::device_cuts`, XGBoost's CPU sketch
computed on the device, the same cuts bit for bit as boost's host sketch) against XGBoost's
`QuantileDMatrix` on the same rows, in one run.

usage: cuts_side_by_side.py PATH/TO/sketch [ROWS (default 10000000)] [MAX_BIN (default 256)]

The rows: 28 standard-normal features, 5% missing in 4 columns (as `boost generate`). XGBoost:
`QuantileDMatrix` of CuPy arrays (device memory; best of 3) and of NumPy arrays (host memory; one
call), which build its cuts and its quantised matrix. Ours: the cuts of rows already in device
memory (best of 3), and the host's cuts of the same rows on every core (one call); the program
checks that the two are the same bits.
"""
import os
import subprocess
import sys
import tempfile
import time

import cupy as cp
import numpy as np
import xgboost as xgb

ours = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
max_bin = int(sys.argv[3]) if len(sys.argv) > 3 else 256
cols = 28

rng = np.random.default_rng(0)
x = rng.standard_normal((rows, cols), dtype=np.float32)
for c in range(4):
    x[rng.random(rows) < 0.05, c] = np.nan

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "values.f32")
    x.tofile(path)
    run = subprocess.run([ours, path, str(cols), str(max_bin)], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"sketch failed:\n{run.stdout}\n{run.stderr}")
    print(run.stdout.strip())

x_device = cp.asarray(x)
best = float("inf")
for _ in range(3):
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    xgb.QuantileDMatrix(x_device, max_bin=max_bin)
    cp.cuda.Device().synchronize()
    best = min(best, time.perf_counter() - start)
print(f"XGBoost {xgb.__version__} QuantileDMatrix from device memory: {best:.3f} s")
start = time.perf_counter()
xgb.QuantileDMatrix(x, max_bin=max_bin, nthread=os.cpu_count())
print(f"XGBoost {xgb.__version__} QuantileDMatrix from host memory: {time.perf_counter() - start:.3f} s")
