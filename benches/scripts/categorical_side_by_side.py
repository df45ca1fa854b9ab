#!/usr/bin/env python3
"""Categorical training side by side on the GPU: boost against XGBoost 3.4.1 (`device=cuda`,
`enable_categorical`, its native splits) on `boost generate --categorical` data: 8 numeric and 8
categorical columns (10, 100, 1,000, 10,000, 100,000, 1,000,000, 10 and 1,000 categories, codes
skewed toward the small ones, each category an effect on the margin), a binary target.

usage: categorical_side_by_side.py PATH/TO/boost PATH/TO/train_synthetic [ROWS (default 10000000)]
                                   [ROUNDS (default 500)] [MAX_DEPTH (default 8)] [NAME=VALUE ...]

Ours trains from the same rows made in the GPU's memory (`train_synthetic`, the benches' binary:
no model file, whose partition splits over a million categories would list most of them each),
timed from the rows in device memory to the trained booster (the cuts, the quantised matrix and
the trees); XGBoost from a `QuantileDMatrix` of the same rows as CuPy arrays, timed from building
that matrix to the trained booster (the same work). Both give the test AUC on another 1M rows
(seed 1); ours reports its memory pool's peak, XGBoost's is `nvidia-smi`'s (every 20 ms, less what
was in use before). Each side prints as soon as it is done. `SIDES=boost` or `SIDES=xgboost`
runs one side only; `ENCODINGS=native,ordered_target` trains ours with each `categorical_encoding`.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

boost, trainer = sys.argv[1], sys.argv[2]
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000_000
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 500
depth = sys.argv[5] if len(sys.argv) > 5 else "8"
cols, categorical = 16, 8
params = {"objective": "binary:logistic", "max_depth": depth, "eta": "0.1", "max_bin": "256",
          "tree_method": "hist", "device": "cuda"}
params.update(dict(arg.split("=", 1) for arg in sys.argv[6:]))
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


def generate(path, n, seed):
    """`boost generate`'s rows as (features, labels)."""
    subprocess.run([boost, "generate", "--rows", str(n), "--cols", str(cols), "--categorical",
                    str(categorical), "--seed", str(seed), "--raw", path], check=True)
    table = np.fromfile(path, dtype="<f4").reshape(n, -1)
    return table[:, 1:], table[:, 0]


print(f"rows {rows}, {cols - categorical} numeric + {categorical} categorical features, depth {depth}, "
      f"{rounds} rounds, eta {params['eta']} {' '.join(sys.argv[6:])}", flush=True)
sides = os.environ.get("SIDES", "boost,xgboost").split(",")
ours = None
for encoding in os.environ.get("ENCODINGS", "native").split(","):
    if "boost" not in sides:
        break
    run = subprocess.run([trainer, str(rows), str(cols), str(categorical), str(rounds)]
                         + [f"{k}={v}" for k, v in params.items()] + [f"categorical_encoding={encoding}"],
                         check=True, capture_output=True, text=True)
    result = dict(field.split("=") for field in run.stdout.split())
    ours = ours or result
    print(f"boost ({encoding}) {float(result['seconds']):8.2f} s   test auc {result['test_auc']}   "
          f"peak device memory {result['peak_device_mib']} MiB (its pool)", flush=True)
if "xgboost" not in sides:
    sys.exit(0)
import cupy  # noqa: E402 (only the XGBoost side needs them)
import xgboost as xgb  # noqa: E402

print(f"xgboost {xgb.__version__}", flush=True)

with tempfile.TemporaryDirectory() as tmp:
    test_features, test_labels = generate(os.path.join(tmp, "test.f32"), min(rows, 1_000_000), 1)
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
print(f"xgboost {theirs:8.2f} s   test auc {theirs_auc:.5f}   peak device memory {theirs_memory.peak} MiB (nvidia-smi)")
if ours:
    print(f"time ratio boost / xgboost: {float(ours['seconds']) / theirs:.3f}")
