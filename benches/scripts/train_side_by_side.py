#!/usr/bin/env python3
"""Training side by side: boost's hist method against XGBoost's hist on the same synthetic data
(`boost generate`: 28 standard-normal features, 5% missing in 4 columns, a noisy nonlinear binary
target), the same parameters, the same thread count and device, in one run.

usage: train_side_by_side.py PATH/TO/boost [ROWS (default 1000000)] [ROUNDS (default 100)] [THREADS]
                             [DEVICE: cpu (default) or cuda] [MAX_DEPTH (default 8)] [ETA (default 0.3)]

With DEVICE cuda both train on the GPU (XGBoost's `device=cuda`, from a host `DMatrix`, so its
quantile sketch and ELLPACK are built on the GPU inside `train`; ours are built on the host).

Both sides are timed from data in memory to a trained model, the quantile cuts and quantised matrix
included (XGBoost builds them inside its first `train` round); reading the CSV is not timed. Prints
the times, the ratio, and the final training logloss of each (they should agree closely: the same
cuts and split rules).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import xgboost as xgb

boost = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 100
threads = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else os.cpu_count()
device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
depth = sys.argv[6] if len(sys.argv) > 6 else "8"
eta = sys.argv[7] if len(sys.argv) > 7 else "0.3"
params = {"objective": "binary:logistic", "max_depth": depth, "eta": eta, "max_bin": "256",
          "tree_method": "hist", "nthread": str(threads), "device": device}

with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "synthetic.csv")
    raw = os.path.join(tmp, "synthetic.f32")
    # The same table as raw f32 for NumPy: parsing the CSV with NumPy takes minutes at 10M rows.
    subprocess.run([boost, "generate", data, "--rows", str(rows), "--raw", raw], check=True)
    model = os.path.join(tmp, "model.json")
    args = [boost, "train", data, "--rounds", str(rounds), "--verbose-eval", str(rounds), "-o", model]
    args += [f"{k}={v}" for k, v in params.items()] + ["verbosity=2"]
    run = subprocess.run(args, check=True, capture_output=True, text=True)
    ours = float(re.search(r"trees in ([0-9.]+) s", run.stderr).group(1))
    ours_log = run.stdout.strip().splitlines()[-1]
    ours_phases = re.search(r"phases: (.*)", run.stderr).group(1)
    ours_device = re.search(r"trees in [0-9.]+ s on (.*); model", run.stderr).group(1)

    table = np.fromfile(raw, dtype="<f4").reshape(rows, -1)
    label, features = table[:, 0], table[:, 1:]
    dtrain = xgb.DMatrix(features, label=label, nthread=threads)
    start = time.perf_counter()
    history = {}
    xgb.train({k: v for k, v in params.items()}, dtrain, rounds, evals=[(dtrain, "train")],
              evals_result=history, verbose_eval=False)
    theirs = time.perf_counter() - start

print(f"rows {rows}, features 28, depth {depth}, eta {eta}, {rounds} rounds, {threads} threads, device {device}, "
      f"xgboost {xgb.__version__}")
print(f"boost   {ours:8.2f} s   last log line: {ours_log}   (on {ours_device})")
print(f"boost phases: {ours_phases}")
print(f"xgboost {theirs:8.2f} s   train-logloss {history['train']['logloss'][-1]:.5f}")
print(f"boost / xgboost speed: {theirs / ours:.3f}x")
