#!/usr/bin/env python3
"""Writes the XGBoost reference fixtures of boost/tests/xgboost_models.rs.

For each case: a model trained by XGBoost on small synthetic data (fixed seed), the rows to predict
(CSV, header `f0,f1,...`, an empty field is a missing value) and XGBoost's outputs for them
(`<case>.expected.json`: margins, transformed predictions, leaf indices, an `iteration_range` case, a
`base_margin` case and the five feature importances). Floats are written as the exact decimal of their
float32 value, so the Rust test reads back the very bits XGBoost produced.

Run from anywhere: `python3 boost/scripts/make_xgboost_fixtures.py [OUT_DIR]` (default:
boost/tests/data/xgboost next to this script). Needs numpy and xgboost (3.4.1 wrote the committed files).
"""

import json
import os
import sys

import numpy as np
import xgboost as xgb

SEED = 20240601
TEST_ROWS = 40
IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")


def f32_list(a):
    """float32 values as Python floats (exact: every float32 is a double)."""
    return [float(v) for v in np.asarray(a, dtype=np.float32).ravel()]


def write_rows(path, X):
    with open(path, "w", encoding="ascii") as f:
        f.write(",".join(f"f{j}" for j in range(X.shape[1])) + "\n")
        for row in X:
            # repr of the float32 is its shortest round-trip decimal.
            f.write(",".join("" if np.isnan(v) else repr(float(v)) for v in row.astype(np.float32)) + "\n")


def dmatrix(booster, X, **kw):
    categorical = "c" in (booster.feature_types or [])
    return xgb.DMatrix(X, missing=np.nan, feature_names=booster.feature_names, feature_types=booster.feature_types,
                       enable_categorical=categorical, **kw)


def expected_outputs(booster, X, iteration_range, base_margin):
    d = dmatrix(booster, X)
    rows = X.shape[0]
    margin = booster.predict(d, output_margin=True)
    out = {
        "xgboost_version": xgb.__version__,
        "num_rows": rows,
        "num_rounds": booster.num_boosted_rounds(),
        "margin": f32_list(margin),
        "prediction": f32_list(booster.predict(d)),
        "leaf": [int(v) for v in booster.predict(d, pred_leaf=True).ravel()],
        "iteration_range": list(iteration_range),
        "margin_range": f32_list(booster.predict(d, output_margin=True, iteration_range=iteration_range)),
        # XGBoost takes only ranges starting at round 0 for leaf predictions.
        "leaf_range": [int(v) for v in booster.predict(d, pred_leaf=True, iteration_range=(0, iteration_range[1])).ravel()],
        "base_margin": f32_list(base_margin),
    }
    db = dmatrix(booster, X, base_margin=base_margin)
    out["margin_with_base_margin"] = f32_list(booster.predict(db, output_margin=True))
    out["num_outputs"] = len(out["margin"]) // rows
    out["importance"] = {t: booster.get_score(importance_type=t) for t in IMPORTANCE_TYPES}
    return out


def save_case(out_dir, name, booster, X_test, iteration_range, rng, model_json=None):
    model_path = os.path.join(out_dir, f"{name}.model.json")
    if model_json is None:
        booster.save_model(model_path)
    else:
        with open(model_path, "w", encoding="ascii") as f:
            json.dump(model_json, f, separators=(",", ":"))
        booster = xgb.Booster(model_file=model_path)  # predictions of XGBoost's reading of this file
    outputs = booster.predict(dmatrix(booster, X_test[:1]), output_margin=True).size
    base_margin = rng.normal(scale=0.5, size=(X_test.shape[0], outputs) if outputs > 1 else X_test.shape[0])
    write_rows(os.path.join(out_dir, f"{name}.rows.csv"), X_test)
    expected = expected_outputs(booster, X_test, iteration_range, base_margin.astype(np.float32))
    with open(os.path.join(out_dir, f"{name}.expected.json"), "w", encoding="ascii") as f:
        json.dump(expected, f, separators=(",", ":"))


def with_missing(rng, X, fraction):
    X = X.copy()
    X[rng.random(X.shape) < fraction] = np.nan
    return X


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "data", "xgboost")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(SEED)

    # binary:logistic, 20% missing values, feature names and types, early-stopping attributes.
    n, m = 400, 6
    X = with_missing(rng, rng.normal(size=(n + TEST_ROWS, m)).astype(np.float32), 0.2)
    z = np.nan_to_num(X[:, 0]) - 0.8 * np.nan_to_num(X[:, 2]) + 0.5 * np.isnan(X[:, 3]) + rng.normal(scale=0.7, size=len(X))
    y = (z > 0).astype(np.float32)
    names = ["age", "income", "score", "visits", "ratio", "tenure"]
    types = ["float", "float", "q", "int", "float", "float"]
    dtrain = xgb.DMatrix(X[:300], y[:300], missing=np.nan, feature_names=names, feature_types=types)
    dvalid = xgb.DMatrix(X[300:n], y[300:n], missing=np.nan, feature_names=names, feature_types=types)
    params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3, "seed": 1, "eval_metric": "logloss"}
    b = xgb.train(params, dtrain, 15, evals=[(dvalid, "valid")], early_stopping_rounds=100, verbose_eval=False)
    save_case(out_dir, "binary_logistic", b, X[n:], (3, 11), rng)

    # reg:squarederror, depth 6.
    n, m = 400, 5
    X = rng.normal(size=(n + TEST_ROWS, m)).astype(np.float32)
    y = 3 * X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + rng.normal(scale=0.3, size=len(X)) + 10
    params = {"objective": "reg:squarederror", "max_depth": 6, "eta": 0.2, "min_child_weight": 3, "seed": 2}
    b = xgb.train(params, xgb.DMatrix(X[:n], y[:n]), 12)
    save_case(out_dir, "reg_squarederror", b, X[n:], (2, 9), rng)

    # multi:softprob with 3 classes, depth 3, a few missing values.
    n, m = 450, 4
    X = with_missing(rng, rng.normal(size=(n + TEST_ROWS, m)).astype(np.float32), 0.05)
    y = np.digitize(np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(scale=0.5, size=len(X)), [-0.5, 0.6])
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "eta": 0.3, "seed": 3}
    b = xgb.train(params, xgb.DMatrix(X[:n], y[:n], missing=np.nan), 10)
    save_case(out_dir, "multi_softprob", b, X[n:], (4, 7), rng)

    # Exact method with pruning (the trees keep deleted nodes) and a forest of 2 trees per round.
    n, m = 300, 5
    X = rng.normal(size=(n + TEST_ROWS, m)).astype(np.float32)
    y = X[:, 0] - 2 * X[:, 4] + rng.normal(size=len(X))
    params = {"tree_method": "exact", "max_depth": 5, "gamma": 3.0, "num_parallel_tree": 2, "subsample": 0.8,
              "colsample_bytree": 0.8, "eta": 0.5, "seed": 4}
    b = xgb.train(params, xgb.DMatrix(X[:n], y[:n]), 6)
    trees = json.loads(b.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    assert any(t["tree_param"]["num_deleted"] != "0" for t in trees), "expected pruned (deleted) nodes"
    save_case(out_dir, "reg_exact_forest", b, X[n:], (1, 4), rng)

    # XGBoost 2.x layout: a scalar base_score string ("5E-1", prediction space, broadcast to every
    # class), no `cats`, version 2.1. The reference outputs are XGBoost 3.4.1's predictions for this file.
    with open(os.path.join(out_dir, "multi_softprob.model.json"), encoding="ascii") as f:
        legacy = json.load(f)
    legacy["version"] = [2, 1, 4]
    legacy["learner"]["learner_model_param"]["base_score"] = "5E-1"
    del legacy["learner"]["gradient_booster"]["model"]["cats"]
    X = with_missing(rng, rng.normal(size=(TEST_ROWS, 4)).astype(np.float32), 0.05)
    save_case(out_dir, "legacy_2x_multi", None, X, (0, 5), rng, model_json=legacy)

    # Categorical splits (feature types "c"): one-hot splits on a column of 3 categories (up to
    # max_cat_to_onehot), partition splits on one of 30; the rows to predict hold categories unseen
    # in training, negative and fractional codes, and missing values.
    n = 500
    X = np.column_stack([rng.integers(0, 3, n + TEST_ROWS), rng.integers(0, 30, n + TEST_ROWS),
                         rng.normal(size=n + TEST_ROWS), rng.normal(size=n + TEST_ROWS)]).astype(np.float32)
    X[:, 1][rng.random(n + TEST_ROWS) < 0.1] = np.nan
    effect = rng.normal(size=30)
    y = (X[:, 0] == 1) + effect[np.nan_to_num(X[:, 1], nan=0).astype(int)] + 0.5 * X[:, 2] + rng.normal(scale=0.3, size=len(X))
    types = ["c", "c", "q", "q"]
    dtrain = xgb.DMatrix(X[:n], y[:n], missing=np.nan, feature_types=types, enable_categorical=True)
    params = {"objective": "reg:squarederror", "max_depth": 4, "eta": 0.3, "max_cat_to_onehot": 4, "seed": 5}
    b = xgb.train(params, dtrain, 8)
    X_test = X[n:].copy()
    X_test[:8, 1] = [31, 45, -1, -0.5, 2.5, 1e8, np.nan, 29]
    X_test[8:12, 0] = [3, -2, 0.99, np.nan]
    save_case(out_dir, "categorical_splits", b, X_test, (2, 6), rng)


if __name__ == "__main__":
    main()
