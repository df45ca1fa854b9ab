#!/usr/bin/env python3
"""CPU training side by side: boost's hist method against XGBoost's CPU hist on the same synthetic data
(`boost generate`: 28 standard-normal features, 5% missing in 4 columns, a noisy nonlinear binary
target), the same parameters and the same thread count, in one run.

usage: train_side_by_side.py PATH/TO/boost [ROWS (default 1000000)] [ROUNDS (default 100)] [THREADS]

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
threads = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
params = {"objective": "binary:logistic", "max_depth": "8", "eta": "0.3", "max_bin": "256",
          "tree_method": "hist", "nthread": str(threads)}

with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "synthetic.csv")
    subprocess.run([boost, "generate", data, "--rows", str(rows)], check=True)
    model = os.path.join(tmp, "model.json")
    args = [boost, "train", data, "--rounds", str(rounds), "--verbose-eval", str(rounds), "-o", model]
    args += [f"{k}={v}" for k, v in params.items()]
    run = subprocess.run(args, check=True, capture_output=True, text=True)
    ours = float(re.search(r"trees in ([0-9.]+) s", run.stderr).group(1))
    ours_log = run.stdout.strip().splitlines()[-1]

    table = np.loadtxt(data, delimiter=",", dtype=np.float32, converters=lambda s: float(s) if s else np.nan)
    label, features = table[:, 0], table[:, 1:]
    dtrain = xgb.DMatrix(features, label=label, nthread=threads)
    start = time.perf_counter()
    history = {}
    xgb.train({k: v for k, v in params.items()}, dtrain, rounds, evals=[(dtrain, "train")],
              evals_result=history, verbose_eval=False)
    theirs = time.perf_counter() - start

print(f"rows {rows}, features 28, depth 8, {rounds} rounds, {threads} threads, xgboost {xgb.__version__}")
print(f"boost   {ours:8.2f} s   last log line: {ours_log}")
print(f"xgboost {theirs:8.2f} s   train-logloss {history['train']['logloss'][-1]:.5f}")
print(f"boost / xgboost speed: {theirs / ours:.3f}x")
