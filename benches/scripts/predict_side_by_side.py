#!/usr/bin/env python3
"""Prediction side by side: boost's device predictor against XGBoost's `inplace_predict` on the same
model (trained by XGBoost, saved as JSON, loaded by both) and the same rows, in one run.

usage: predict_side_by_side.py PATH/TO/predict [ROWS (default 10000000)] [ROUNDS (default 500)]
                               [MAX_DEPTH (default 8)] [CLASSES (default 1: binary:logistic; K > 1:
                               multi:softprob with K classes)]

The rows: 28 standard-normal features, 5% missing in 4 columns (as `boost generate`). The model is
trained by XGBoost on the GPU on the first min(ROWS, 1M) rows (eta 0.1, 256 bins), not timed. Both
sides then predict margins (`predict_type="margin"`) for batches of every row, 100k rows and 1k rows,
from device memory (a CuPy array; ours a `DeviceBuffer`) and from host memory (a NumPy array; ours a
`FeatureMatrix`, uploaded and read back in the call); each figure is the best of several synchronised
calls after a warm-up (ours also with each launch shape forced: see `benches/src/bin/predict.rs`).
Our margins must be the CPU predictor's bits, which are XGBoost's CPU predictor's: the script counts
the margins of the first min(ROWS, 1M) rows that differ from XGBoost's CPU `inplace_predict` (and, for
information, from its GPU predictor, which sums the trees in another order). With KEEP_DATA=DIR the model and the rows (`model.json`, `values.f32`)
are written to DIR and kept (for profiling), instead of a temporary directory.
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
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 500
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 8
classes = int(sys.argv[5]) if len(sys.argv) > 5 else 1
cols = 28


def features(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, cols), dtype=np.float32)
    for c in range(4):
        x[rng.random(n) < 0.05, c] = np.nan
    return x


def labels(x, seed):
    rng = np.random.default_rng(seed)
    v = np.nan_to_num(x)
    margin = v[:, 0] * v[:, 1] + np.sin(v[:, 2]) + 0.5 * v[:, 3] ** 2 - v[:, 4] + rng.standard_normal(len(x))
    if classes == 1:
        return (margin > 0.5).astype(np.float32)
    ranks = np.argsort(np.argsort(margin))
    return (ranks * classes // len(x)).astype(np.float32)


def best_of(fn, batch):
    calls = 50 if batch <= 100_000 else 5
    fn()
    cp.cuda.Device().synchronize()
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - start)
    return best


x = features(rows, 0)
train_rows = min(rows, 1_000_000)
params = {"max_depth": depth, "eta": 0.1, "max_bin": 256, "tree_method": "hist", "device": "cuda"}
if classes == 1:
    params["objective"] = "binary:logistic"
else:
    params.update(objective="multi:softprob", num_class=classes)
dtrain = xgb.QuantileDMatrix(cp.asarray(x[:train_rows]), label=cp.asarray(labels(x[:train_rows], 1)))
start = time.perf_counter()
booster = xgb.train(params, dtrain, rounds)
print(f"XGBoost {xgb.__version__} trained {rounds} rounds (depth {depth}, {classes} class(es)) in "
      f"{time.perf_counter() - start:.1f} s")
del dtrain

with tempfile.TemporaryDirectory() as scratch:
    tmp = os.environ.get("KEEP_DATA", scratch)
    os.makedirs(tmp, exist_ok=True)
    model_path = os.path.join(tmp, "model.json")
    booster.save_model(model_path)
    values_path = os.path.join(tmp, "values.f32")
    x.tofile(values_path)
    margins_path = os.path.join(tmp, "margins.f32")
    batches = sorted({min(b, rows) for b in (rows, 1_000_000, 100_000, 10_000, 1_000)}, reverse=True)
    run = subprocess.run([ours, model_path, values_path, str(cols), ",".join(str(b) for b in batches), margins_path],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"predict failed:\n{run.stdout}\n{run.stderr}")
    print(run.stdout.strip())
    our_seconds = {}
    for line in run.stdout.splitlines():
        if line.startswith("batch="):
            fields = dict(f.split("=") for f in line.split())
            if fields["launch"] == "auto":
                our_seconds[(int(fields["batch"]), fields["source"])] = float(fields["seconds"])
    our_margins = np.fromfile(margins_path, dtype=np.float32)

checked = min(rows, 1_000_000)
booster.set_param({"device": "cpu"})
cpu = np.asarray(booster.inplace_predict(x[:checked], predict_type="margin"), dtype=np.float32).reshape(-1)
ours_checked = our_margins[:len(cpu)]
differ = int(np.count_nonzero(cpu.view(np.uint32) != ours_checked.view(np.uint32)))
print(f"margins of the first {checked} rows: {differ} of {len(cpu)} differ in any bit from XGBoost's CPU predictor")
booster.set_param({"device": "cuda"})
x_device = cp.asarray(x)
gpu = cp.asnumpy(booster.inplace_predict(x_device[:checked], predict_type="margin")).reshape(-1)
gpu_differ = int(np.count_nonzero(gpu.view(np.uint32) != ours_checked.view(np.uint32)))
print(f"  and {gpu_differ} from XGBoost's GPU predictor (largest difference "
      f"{float(np.max(np.abs(gpu - ours_checked))):.3g})")

print(f"| batch | source | XGBoost {xgb.__version__} | boost | boost / XGBoost speed | boost rows/s |")
print("| ---: | --- | ---: | ---: | ---: | ---: |")
for batch in batches:
    for source in ("device", "host"):
        data = x_device[:batch] if source == "device" else x[:batch]
        theirs_s = best_of(lambda: booster.inplace_predict(data, predict_type="margin"), batch)
        ours_s = our_seconds[(batch, source)]
        print(f"| {batch} | {source} | {theirs_s * 1e3:.3f} ms | {ours_s * 1e3:.3f} ms | "
              f"{theirs_s / ours_s:.2f}x | {batch / ours_s / 1e6:.1f} M |")
