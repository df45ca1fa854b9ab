#!/usr/bin/env python3
"""XGBoost 3.4.1's CPU `hist` against its own GPU `hist` on `boost generate --categorical 8` data
(8 numeric and 8 categorical columns): the first tree's first 15 nodes of each (split feature,
type, condition, the size and first codes of a categorical set, default direction, loss change,
hessian sum) and the test AUC after ROUNDS rounds (1M test rows, seed 1). Where our models equal
XGBoost's CPU ones, this shows where its GPU run parts from them.

usage: xgboost_cpu_against_gpu.py PATH/TO/boost ROWS ROUNDS
"""
import json
import subprocess
import sys
import time

import numpy as np
import xgboost as xgb

boost, rows, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cols, categorical = 16, 8
types = ["q"] * (cols - categorical) + ["c"] * categorical


def generate(path, n, seed):
    subprocess.run([boost, "generate", "--rows", str(n), "--cols", str(cols), "--categorical", str(categorical),
                    "--seed", str(seed), "--raw", path], check=True)
    table = np.fromfile(path, dtype="<f4").reshape(n, -1)
    return table[:, 1:], table[:, 0]


def first_nodes(booster, count=15):
    tree = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"][0]
    sets = dict(zip(tree["categories_nodes"], zip(tree["categories_segments"], tree["categories_sizes"])))
    for i in range(min(len(tree["left_children"]), count)):
        if tree["left_children"][i] == -1:
            yield i, "leaf", round(tree["base_weights"][i], 6), round(tree["sum_hessian"][i], 3)
            continue
        at = sets.get(i)
        codes = tree["categories"][at[0]:at[0] + min(at[1], 5)] if at else None
        yield (i, tree["split_indices"][i], tree["split_type"][i], round(tree["split_conditions"][i], 6),
               at[1] if at else None, codes, tree["default_left"][i], round(tree["loss_changes"][i], 4),
               round(tree["sum_hessian"][i], 3))


X, y = generate("/tmp/train.f32", rows, 0)
Xt, yt = generate("/tmp/test.f32", 1_000_000, 1)
dtrain = xgb.DMatrix(X, y, feature_types=types, enable_categorical=True)
dtest = xgb.DMatrix(Xt, yt, feature_types=types, enable_categorical=True)
for device in ["cpu", "cuda"]:
    params = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1, "max_bin": 256, "tree_method": "hist",
              "device": device, "eval_metric": "auc"}
    print(device, "tree 0:", flush=True)
    for node in first_nodes(xgb.train(params, dtrain, 1)):
        print("  ", node, flush=True)
    start = time.perf_counter()
    booster = xgb.train(params, dtrain, rounds)
    print(device, f"{rounds} rounds {time.perf_counter() - start:.1f} s", booster.eval(dtest, "test"), flush=True)
