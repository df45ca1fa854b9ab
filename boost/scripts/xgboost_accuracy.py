#!/usr/bin/env python3
"""Trains XGBoost (CPU, hist) on datasets written by boost's accuracy test and prints the test metrics
as JSON, so that the test compares boost's metrics with XGBoost's on exactly the same numbers.

usage: xgboost_accuracy.py SPEC.json

SPEC.json: {"cases": [{"name", "train", "test", "params": {...}, "rounds", "metric", "feature_types", "seeds",
"label_bounds"}]} (`feature_types`: XGBoost's, "c" for a categorical feature; empty when all are numeric;
`label_bounds`: survival:aft's intervals are in `<data file minus .csv>.bounds.csv`, `lower,upper` a row). Each data file
is a CSV written by the test: a header line, then `label,weight,group,f0,f1,...` rows, with `nan` for a
missing value; `weight` is 1 when the data has none, `group` is the ranking group's index (or 0).
With `seeds` > 1 (sampling), the metric is the mean of the runs with seeds 0..seeds.
Prints {"name": metric value on the test set, ...} and {"xgboost": version}.
"""
import json
import sys

import numpy as np
import xgboost as xgb


def load(path):
    table = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    label, weight, group, features = table[:, 0], table[:, 1], table[:, 2], table[:, 3:].astype(np.float32)
    return label, weight, group.astype(np.int64), features


def dmatrix(path, ranking, feature_types, label_bounds=False):
    label, weight, group, features = load(path)
    if feature_types:
        d = xgb.DMatrix(features, label=label, missing=np.nan, feature_types=feature_types,
                        enable_categorical=True)
    else:
        d = xgb.DMatrix(features, label=label, missing=np.nan)
    if ranking:
        # Group sizes in row order; ranking weights are per group (the first row's weight).
        boundaries = np.flatnonzero(np.diff(group)) + 1
        starts = np.concatenate([[0], boundaries])
        sizes = np.diff(np.concatenate([starts, [len(group)]]))
        d.set_group(sizes)
        if not np.all(weight == 1.0):
            d.set_weight(weight[starts])
    elif not np.all(weight == 1.0):
        d.set_weight(weight)
    if label_bounds:
        bounds = np.loadtxt(path[:-len(".csv")] + ".bounds.csv", delimiter=",", skiprows=1, ndmin=2)
        d.set_float_info("label_lower_bound", bounds[:, 0])
        d.set_float_info("label_upper_bound", bounds[:, 1])
    return d


def main():
    spec = json.load(open(sys.argv[1]))
    results = {"xgboost": xgb.__version__}
    for case in spec["cases"]:
        ranking = case["params"]["objective"].startswith("rank:")
        types = case.get("feature_types") or None
        bounds = case.get("label_bounds", False)
        train = dmatrix(case["train"], ranking, types, bounds)
        test = dmatrix(case["test"], ranking, types, bounds)
        values = []
        # With sampling, the mean over seeds 0..seeds (the test's side averages the same seeds).
        seeds = case.get("seeds", 1)
        for seed in range(seeds):
            params = dict(case["params"], eval_metric=case["metric"], nthread=2)
            if seeds > 1:
                params["seed"] = seed
            evals_result = {}
            xgb.train(params, train, case["rounds"], evals=[(test, "test")], evals_result=evals_result,
                      verbose_eval=False)
            values.append(evals_result["test"][case["metric"]][-1])
        results[case["name"]] = sum(values) / len(values)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
