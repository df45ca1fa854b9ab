#!/usr/bin/env python3
"""Writes boost/tests/data/xgboost_cuts.json: XGBoost's CPU `hist` cuts of a few features of the
shipped datasets, which `boost::quantile`'s test `cuts_are_xgboost_cuts_on_the_shipped_data` compares
with ours value for value.

For each feature: the column as boost reads it (float32, higgs weighted by binary.train.weight), an
`xgboost.DMatrix` of it, one round of `xgboost.train({tree_method: hist, max_bin: 256})` (the sketch a
training runs), then `DMatrix.get_quantile_cut()` (its leading lower bound, -inf, left out). Each column
is sketched alone by XGBoost, so a one-column DMatrix gives the column's cuts in the full matrix.

With `--cases`, prints instead the answers that quantile.rs's other tests hold (synthetic columns).

Run from anywhere: `python3 boost/scripts/make_xgboost_cuts.py [--cases]`. Needs numpy and xgboost
(3.4.1 wrote the committed file; the CPU wheel `xgboost-cpu` is enough).
"""

import csv
import json
import os
import sys

import numpy as np
import xgboost as xgb

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "..", "data")
MAX_BIN = 256

# (dataset, file, feature index, how to read the column)
FEATURES = [
    ("higgs", "higgs_lgbm_sample/binary.train", 0, "tsv"),
    ("higgs", "higgs_lgbm_sample/binary.train", 25, "tsv"),
    ("lgbm_multiclass", "lgbm_multiclass/multiclass.train", 14, "tsv"),
    ("lgbm_multiclass", "lgbm_multiclass/multiclass.train", 23, "tsv"),
    ("california_housing", "california_housing/housing.train.csv", 0, "csv"),
    ("california_housing", "california_housing/housing.train.csv", 7, "csv"),
    ("adult", "adult/adult_train.csv", 0, "csv"),
    ("adult", "adult/adult_train.csv", 2, "csv"),
]


def column(path, feature, kind):
    """Feature `feature` as boost numbers it: TSV with the label first; CSV columns in file order
    (the features used here come before the label column)."""
    with open(os.path.join(DATA, path), encoding="utf-8") as f:
        if kind == "tsv":
            rows = [line.split("\t")[1 + feature] for line in f if line.strip()]
        else:
            rows = [r[feature] for r in list(csv.reader(f))[1:]]
    return np.array([np.float32(v) if v.strip() else np.nan for v in rows], dtype=np.float32)


def cuts(x, weights=None, max_bin=MAX_BIN):
    d = xgb.DMatrix(x.reshape(-1, 1), label=np.zeros(len(x), np.float32), weight=weights, missing=np.nan)
    xgb.train({"tree_method": "hist", "max_bin": max_bin, "max_depth": 1, "nthread": 1}, d, num_boost_round=1)
    ptrs, values = d.get_quantile_cut()
    assert ptrs[0] == 0 and len(ptrs) == 2
    values = values[ptrs[0] : ptrs[1]]
    assert np.isneginf(values[0]), values[:3]
    return [float(v) for v in values[1:]]


def f32_text(v):
    """The shortest decimal that reads back as the same float32."""
    return str(np.float32(v))


def fixture():
    weights = np.loadtxt(os.path.join(DATA, "higgs_lgbm_sample/binary.train.weight"), dtype=np.float32)
    features = []
    for name, path, f, kind in FEATURES:
        x = column(path, f, kind)
        w = weights if name == "higgs" else None
        features.append({"dataset": name, "feature": f, "cuts": cuts(x, w)})
    header = {"xgboost": xgb.__version__, "max_bin": MAX_BIN, "generated_by": "boost/scripts/make_xgboost_cuts.py"}
    lines = [
        json.dumps({"dataset": e["dataset"], "feature": e["feature"]}, separators=(",", ":"))[:-1]
        + ',"cuts":['
        + ",".join(f32_text(v) for v in e["cuts"])
        + "]}"
        for e in features
    ]
    text = json.dumps(header, separators=(",", ":"))[:-1] + ',\n"features":[\n' + ",\n".join(lines) + "\n]}\n"
    json.loads(text)
    with open(os.path.join(ROOT, "tests/data/xgboost_cuts.json"), "w", encoding="ascii") as f:
        f.write(text)


def cases():
    """The synthetic columns of quantile.rs's tests, in float32 as Rust computes them."""
    n = np.arange(1000)
    x = n.astype(np.float32)
    for max_bin in (2, 3, 4, 16):
        print(f"0..1000, max_bin {max_bin}:", cuts(x, max_bin=max_bin))
    print("0..1000 upper half x3, max_bin 4:", cuts(x, np.where(n < 500, 1.0, 3.0).astype(np.float32), 4))
    for max_bin in (255, 256):
        c = np.array(cuts(x, max_bin=max_bin), dtype=np.float32)
        counts = np.bincount(np.searchsorted(c, x, side="right"), minlength=len(c))
        print(f"0..1000, max_bin {max_bin}: {len(c)} bins, {counts.min()}..{counts.max()} values a bin")
    i = np.arange(60_000)
    x = ((i * 7919) % 10007).astype(np.float32) * np.float32(0.01)
    print("60000, 16 bins:", cuts(x, max_bin=16))
    print("60000 weighted, 16 bins:", cuts(x, (1.0 + (i % 7) * 0.25).astype(np.float32), 16))
    i = np.arange(2097)
    x = (((i * 7919) % 1009).astype(np.float32) - np.float32(500.0)) / np.float32(7.0)
    choices = np.array([0.1, 0.3, 1.7, 2.9, 1000.0], dtype=np.float32)
    c = cuts(x, choices[(i * 31 + i // 3) % 5], 256)
    print(f"2097 f32 ranks: {len(c)} bins, first {c[:3]}, around 208 {c[206:211]}, last {c[-1]}")
    print("few distinct:", cuts(np.array([3, 1, 2, 3, 1], np.float32)), cuts(np.array([5, 5, 7], np.float32)))


if __name__ == "__main__":
    cases() if "--cases" in sys.argv[1:] else fixture()
