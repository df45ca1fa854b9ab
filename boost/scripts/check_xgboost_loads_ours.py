#!/usr/bin/env python3
"""Checks that XGBoost loads a model file written by `boost` and predicts what `boost` predicts.

    python3 check_xgboost_loads_ours.py --model M.json --rows R.csv --ours P.json [--tolerance 1e-6]

`R.csv`: a header line, then one row per line, an empty field for a missing value. `P.json`: boost's
outputs for those rows: `margin` (rows * outputs, row-major), `leaf` (rows * trees), and
`margin_range` for `iteration_range` [begin, end], and `prediction` (the objective's outputs, compared bit
for bit). The script loads `M.json` with
`xgb.Booster(model_file=...)`, predicts the same things and compares (margins within the tolerance,
relative above 1 in magnitude; leaves exactly). It also saves the model from XGBoost and reports
whether XGBoost's file is byte-identical to ours: a failure with --require-identical, else information.

Exit status: 0 all match, 1 a mismatch or a model XGBoost refuses, 2 bad arguments, 3 numpy or
xgboost cannot be imported. Run by boost/tests/xgboost_models.rs when BOOST_XGBOOST_CHECK=1.
"""

import argparse
import json
import os
import sys
import tempfile

try:
    import numpy as np
    import xgboost as xgb
except ImportError as e:  # the Rust test reports exit code 3 as a missing dependency
    print(f"check_xgboost_loads_ours: cannot import numpy/xgboost: {e}", file=sys.stderr)
    sys.exit(3)


def read_rows(path):
    with open(path, encoding="ascii") as f:
        lines = f.read().splitlines()[1:]
    return np.array([[np.nan if v == "" else float(v) for v in line.split(",")] for line in lines], dtype=np.float32)


def compare(what, ours, theirs, tolerance):
    ours = np.asarray(ours, dtype=np.float32).ravel()
    theirs = np.asarray(theirs, dtype=np.float32).ravel()
    if ours.shape != theirs.shape:
        print(f"FAIL {what}: {ours.size} values from boost, {theirs.size} from XGBoost")
        return False
    diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    bound = tolerance * np.maximum(1.0, np.abs(theirs.astype(np.float64)))
    bad = np.flatnonzero(diff > bound)
    exact = int(np.sum(ours.view(np.uint32) == theirs.view(np.uint32)))
    if bad.size:
        i = bad[0]
        print(f"FAIL {what}: {bad.size} of {ours.size} differ; first at {i}: boost {ours[i]!r}, XGBoost {theirs[i]!r}")
        return False
    print(f"ok   {what}: {ours.size} values, {exact} bit-identical, max |diff| {diff.max(initial=0.0):.3g}")
    return True


def compare_bits(what, ours, theirs):
    """The same float32 values bit for bit (the objective's transform of the margins)."""
    ours = np.asarray(ours, dtype=np.float32).ravel()
    theirs = np.asarray(theirs, dtype=np.float32).ravel()
    if ours.shape != theirs.shape:
        print(f"FAIL {what}: {ours.size} values from boost, {theirs.size} from XGBoost")
        return False
    differ = np.flatnonzero(ours.view(np.uint32) != theirs.view(np.uint32))
    if differ.size:
        i = differ[0]
        print(f"FAIL {what}: {differ.size} of {ours.size} differ in their bits; first at {i}: "
              f"boost {ours[i]!r}, XGBoost {theirs[i]!r}")
        return False
    print(f"ok   {what}: {ours.size} values bit-identical")
    return True


def check_sklearn(path, booster, X, margin, tolerance):
    """XGBoost's scikit-learn API loads the file and predicts with every tree: it stops at a recorded
    `best_iteration`, which a model must hold only when early stopping ran."""
    objective = json.loads(booster.save_config())["learner"]["objective"]["name"]
    estimator = xgb.XGBClassifier() if objective.startswith(("binary:", "multi:")) else xgb.XGBRegressor()
    estimator.load_model(path)
    rounds = booster.num_boosted_rounds()
    used = estimator.get_booster().attr("best_iteration")
    if used is not None and int(used) + 1 < rounds:
        print(f"FAIL scikit-learn API: best_iteration {used} of {rounds} rounds limits its predictions")
        return False
    return compare("scikit-learn API margin", margin, estimator.predict(X, output_margin=True), tolerance)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--rows", required=True)
    parser.add_argument("--ours", required=True)
    parser.add_argument("--tolerance", type=float, default=1e-6)
    parser.add_argument("--require-identical", action="store_true",
                        help="fail unless XGBoost's re-save of the model is byte-identical to the file")
    args = parser.parse_args()

    print(f"xgboost {xgb.__version__}: {args.model}")
    try:
        booster = xgb.Booster(model_file=args.model)
    except xgb.core.XGBoostError as e:
        print(f"FAIL XGBoost refuses the model: {e}")
        return 1
    with open(args.ours, encoding="ascii") as f:
        ours = json.load(f)
    X = read_rows(args.rows)
    d = xgb.DMatrix(X, missing=np.nan, feature_names=booster.feature_names, feature_types=booster.feature_types)
    begin, end = ours["iteration_range"]
    ok = compare("margin", ours["margin"], booster.predict(d, output_margin=True), args.tolerance)
    ok &= compare("margin iteration_range", ours["margin_range"],
                  booster.predict(d, output_margin=True, iteration_range=(begin, end)), args.tolerance)
    if "prediction" in ours:
        ok &= compare_bits("prediction", ours["prediction"], booster.predict(d))
    ok &= check_sklearn(args.model, booster, X, ours["margin"], args.tolerance)
    leaf = booster.predict(d, pred_leaf=True).astype(np.int64).ravel()
    if list(leaf) == list(ours["leaf"]):
        print(f"ok   leaf: {leaf.size} indices equal")
    else:
        print("FAIL leaf indices differ")
        ok = False

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resaved.json")
        booster.save_model(path)
        with open(path, "rb") as f, open(args.model, "rb") as g:
            same = f.read() == g.read()
    status = "ok  " if same else ("FAIL" if args.require_identical else "info")
    print(f"{status} XGBoost's re-save of the model is {'byte-identical to' if same else 'different from'} ours")
    ok &= same or not args.require_identical
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
