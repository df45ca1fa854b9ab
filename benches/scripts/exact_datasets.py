#!/usr/bin/env python3
"""The exact method on the shipped datasets: boost on the GPU and on the CPU against XGBoost's CPU
`exact` with every core, the same parameters (depth 6, eta 0.3, 100 rounds unless given), the same
numbers (the numeric columns, written once as CSV for boost and held by NumPy for XGBoost), in one
run: training time (data in memory to a model; reading not timed) and the test metric.

usage: exact_datasets.py PATH/TO/boost DATA_DIR [ROUNDS (default 100)] [DEPTH (default 6)]
                         [GPU: 1 (default) or 0 to leave the GPU out]
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import xgboost as xgb

boost, data_dir = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 100
depth = sys.argv[4] if len(sys.argv) > 4 else "6"
threads = os.cpu_count()
with_gpu = (sys.argv[5] if len(sys.argv) > 5 else "1") == "1"

# name, train, test, delimiter, header lines, label column, objective, metric, extra parameters
CASES = [
    ("higgs", "higgs_lgbm_sample/binary.train", "higgs_lgbm_sample/binary.test", "\t", 0, 0,
     "binary:logistic", "auc", {}),
    ("california_housing", "california_housing/housing.train.csv", "california_housing/housing.test.csv", ",", 1, 8,
     "reg:squarederror", "rmse", {}),
    ("lgbm_multiclass", "lgbm_multiclass/multiclass.train", "lgbm_multiclass/multiclass.test", "\t", 0, 0,
     "multi:softprob", "mlogloss", {"num_class": "5"}),
    ("dna", "dna/dna.train.csv", "dna/dna.test.csv", ",", 1, -1, "multi:softprob", "mlogloss", {"num_class": "3"}),
]


def load(path, delimiter, header, label):
    """The file's feature columns that are numbers everywhere (float32, empty fields NaN) and the
    label column's fields; `label` a column index, -1 the last."""
    with open(path) as f:
        rows = [line.split(delimiter) for line in f.read().splitlines()[header:] if line.strip()]
    at = label if label >= 0 else len(rows[0]) - 1
    labels = [r[at].strip() for r in rows]

    def number(text):
        try:
            return float(text)
        except ValueError:
            return None

    features = [r[:at] + r[at + 1:] for r in rows]
    columns = list(zip(*features))
    keep = [j for j, col in enumerate(columns) if all(v == "" or number(v) is not None for v in col)]
    x = np.array([[number(r[j]) if r[j] != "" else np.nan for j in keep] for r in features], dtype=np.float32)
    return x, labels


def write_csv(path, x, y):
    with open(path, "w") as f:
        for features, label in zip(x, y):
            f.write(",".join([repr(float(label))] + ["" if np.isnan(v) else repr(float(v)) for v in features]) + "\n")


def boost_run(tmp, name, train, test, params, device):
    model = os.path.join(tmp, f"{name}-{device}.json")
    args = [boost, "train", train, "--rounds", str(rounds), "--verbose-eval", "0", "-o", model]
    args += [f"{k}={v}" for k, v in params.items()] + [f"device={device}", f"nthread={threads}", "verbosity=2"]
    run = subprocess.run(args, check=True, capture_output=True, text=True)
    seconds = float(re.search(r"trees in ([0-9.]+) s", run.stderr).group(1))
    evaluation = subprocess.run([boost, "eval", "-m", model, test, "--metric", params["eval_metric"]], check=True,
                                capture_output=True, text=True).stdout
    value = float(re.search(re.escape(params["eval_metric"]) + r"[^0-9]*([0-9.e+-]+)", evaluation).group(1))
    return seconds, value


print(f"exact method, {rounds} rounds, depth {depth}, eta 0.3, {threads} threads, xgboost {xgb.__version__}")
print("| dataset | rows x features | boost GPU s | boost CPU s | XGBoost CPU s | XGBoost / boost GPU | "
      "XGBoost / boost CPU | metric: boost GPU, CPU, XGBoost |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
with tempfile.TemporaryDirectory() as tmp:
    for name, train_file, test_file, delimiter, header, label, objective, metric, extra in CASES:
        x, y = load(os.path.join(data_dir, train_file), delimiter, header, label)
        tx, ty = load(os.path.join(data_dir, test_file), delimiter, header, label)
        if objective.startswith("multi:"):
            classes = {c: k for k, c in enumerate(sorted(set(y) | set(ty)))}
            y, ty = [np.array([classes[c] for c in labels], dtype=np.float32) for labels in (y, ty)]
        else:
            y, ty = np.array(y, dtype=np.float32), np.array(ty, dtype=np.float32)
        train, test = os.path.join(tmp, f"{name}.train.csv"), os.path.join(tmp, f"{name}.test.csv")
        write_csv(train, x, y)
        write_csv(test, tx, ty)
        params = dict({"objective": objective, "tree_method": "exact", "max_depth": depth, "eta": "0.3",
                       "eval_metric": metric}, **extra)
        gpu_s, gpu_metric = boost_run(tmp, name, train, test, params, "cuda") if with_gpu else (float("nan"),) * 2
        cpu_s, cpu_metric = boost_run(tmp, name, train, test, params, "cpu")
        dtrain, dtest = xgb.DMatrix(x, label=y, nthread=threads), xgb.DMatrix(tx, label=ty, nthread=threads)
        start = time.perf_counter()
        booster = xgb.train(dict(params, nthread=threads, device="cpu"), dtrain, rounds)
        theirs = time.perf_counter() - start
        theirs_metric = float(booster.eval(dtest, "test").split(":")[-1])
        print(f"| {name} | {x.shape[0]} x {x.shape[1]} | {gpu_s:.3f} | {cpu_s:.3f} | {theirs:.3f} | "
              f"{theirs / gpu_s:.2f}x | {theirs / cpu_s:.2f}x | {gpu_metric:.6f}, {cpu_metric:.6f}, {theirs_metric:.6f} |")
