#!/usr/bin/env python3
"""Categorical training side by side on the GPU: boost against XGBoost 3.4.1 (`device=cuda`,
`enable_categorical`, its native splits) on `boost generate --categorical` data: 8 numeric and 8
categorical columns (10, 100, 1,000, 10,000, 100,000, 1,000,000, 10 and 1,000 categories, codes
skewed toward the small ones, each category an effect on the margin), a binary target.

usage: categorical_side_by_side.py PATH/TO/boost [ROWS (default 10000000)] [ROUNDS (default 500)]
                                   [MAX_DEPTH (default 8)] [NAME=VALUE ...]  (more parameters for both)

Ours trains from `synthetic:ROWSx16:c8` (the same rows, made in the GPU's memory), timed by its
own report from the data in device memory to the model (the cuts, the quantised matrix and the
trees); XGBoost from a `QuantileDMatrix` of the same rows as CuPy arrays, timed from building
that matrix to the trained booster (the same work). Both report the test AUC on another 1M rows
(seed 1) and the peak device memory (`nvidia-smi` every 20 ms, less what was in use before).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import cupy
import numpy as np
import xgboost as xgb

boost = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 500
depth = sys.argv[4] if len(sys.argv) > 4 else "8"
cols, categorical = 16, 8
params = {"objective": "binary:logistic", "max_depth": depth, "eta": "0.1", "max_bin": "256",
          "tree_method": "hist", "device": "cuda"}
params.update(dict(arg.split("=", 1) for arg in sys.argv[5:]))
types = ["q"] * (cols - categorical) + ["c"] * categorical


class MemoryPeak:
    """Peak GPU memory in use (MiB) while the block runs, less what was in use before it."""

    def used(self):
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    def __enter__(self):
        self.before = self.used()
        self.poll = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                      "-i", "0", "-lms", "20"], stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc):
        self.poll.terminate()
        samples = [int(line) for line in self.poll.communicate()[0].split() if line.strip().isdigit()]
        self.peak = max(samples + [self.before]) - self.before


def generate(path, n, seed, csv=None):
    """`boost generate`'s rows as (features, labels); with `csv`, the CSV file too."""
    out = [csv] if csv else []
    subprocess.run([boost, "generate", *out, "--rows", str(n), "--cols", str(cols), "--categorical",
                    str(categorical), "--seed", str(seed), "--raw", path], check=True)
    table = np.fromfile(path, dtype="<f4").reshape(n, -1)
    return table[:, 1:], table[:, 0]


with tempfile.TemporaryDirectory() as tmp:
    test_rows = min(rows, 1_000_000)
    test_csv = os.path.join(tmp, "test.csv")
    test_features, test_labels = generate(os.path.join(tmp, "test.f32"), test_rows, 1, test_csv)
    model = os.path.join(tmp, "model.json")
    args = [boost, "train", f"synthetic:{rows}x{cols}:c{categorical}", "--rounds", str(rounds), "--verbose-eval",
            str(rounds), "-o", model] + [f"{k}={v}" for k, v in params.items()] + ["verbosity=2"]
    with MemoryPeak() as ours_memory:
        run = subprocess.run(args, check=True, capture_output=True, text=True)
    ours = float(re.search(r"trees in ([0-9.]+) s", run.stderr).group(1))
    ours_phases = re.search(r"phases: (.*)", run.stderr).group(1)
    evaluation = subprocess.run([boost, "eval", "-m", model, test_csv, "--metric", "auc"], check=True,
                                capture_output=True, text=True).stdout
    ours_auc = float(re.search(r"auc[^0-9]*([0-9.]+)", evaluation).group(1))

    features, labels = generate(os.path.join(tmp, "train.f32"), rows, 0)
    x, y = cupy.asarray(features), cupy.asarray(labels)
    del features
    xgb.train(dict(params), xgb.QuantileDMatrix(x[:1000], label=y[:1000], feature_types=types,
                                                enable_categorical=True), 1)  # the CUDA context, not timed
    with MemoryPeak() as theirs_memory:
        start = time.perf_counter()
        dtrain = xgb.QuantileDMatrix(x, label=y, feature_types=types, enable_categorical=True, max_bin=256)
        booster = xgb.train(dict(params), dtrain, rounds)
        theirs = time.perf_counter() - start
    dtest = xgb.DMatrix(test_features, label=test_labels, feature_types=types, enable_categorical=True)
    booster.set_param({"eval_metric": "auc"})
    theirs_auc = float(booster.eval(dtest, "test").split(":")[-1])

extra = " ".join(sys.argv[5:])
print(f"rows {rows}, {cols - categorical} numeric + {categorical} categorical features, depth {depth}, "
      f"{rounds} rounds, eta {params['eta']}, xgboost {xgb.__version__} {extra}")
print(f"boost   {ours:8.2f} s   test auc {ours_auc:.5f}   peak device memory {ours_memory.peak} MiB")
print(f"boost phases: {ours_phases}")
print(f"xgboost {theirs:8.2f} s   test auc {theirs_auc:.5f}   peak device memory {theirs_memory.peak} MiB")
print(f"time ratio boost / xgboost: {ours / theirs:.3f}")
