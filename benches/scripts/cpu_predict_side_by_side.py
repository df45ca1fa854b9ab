#!/usr/bin/env python3
"""CPU `inplace_predict` throughput and 1,000-row latency, twinboost against XGBoost 3.4.1, each
measurement in a fresh process (the rows made there), for one or more twinboost installs (an A/B
of two wheels: `pip install --target DIR wheel` each).

usage: cpu_predict_side_by_side.py SITE [SITE ...]

The model: 100 rounds of depth 8, eta 0.1, 256 bins, trained on the GPU from the first SITE's
package on 10M rows of `python_side_by_side.make_rows`; predicted: those 10M rows (median of 5
calls) and their first 1,000 (median of 200), on every core. Ours are checked equal to XGBoost's
on 100k rows. XGBoost is imported from `/tmp/site` when it is there.
"""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, "/tmp/site")
MODEL = "/tmp/cpu_predict_model.json"
ROWS = 10_000_000


def measure(site):
    sys.path.insert(0, site)
    import twinboost as tb
    import xgboost as xgb
    from python_side_by_side import make_rows, median_seconds

    X, _ = make_rows(ROWS)
    ours, theirs = tb.Booster(model_file=MODEL), xgb.Booster(model_file=MODEL)
    ours.set_param({"device": "cpu"})
    theirs.set_param({"device": "cpu"})
    np.testing.assert_array_equal(ours.inplace_predict(X[:100_000]), theirs.inplace_predict(X[:100_000]))
    a, b = (median_seconds(lambda m=m: m.inplace_predict(X), 5) for m in (ours, theirs))
    c, d = (median_seconds(lambda m=m: m.inplace_predict(X[:1000]), 200) for m in (ours, theirs))
    return {"M rows/s": round(ROWS / a / 1e6, 2), "XGBoost M rows/s": round(ROWS / b / 1e6, 2),
            "ratio": round(b / a, 3), "1000 rows us": round(c * 1e6), "XGBoost 1000 rows us": round(d * 1e6)}


def main():
    if sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2])))
        return
    sites = sys.argv[1:]
    sys.path.insert(0, sites[0])
    import twinboost as tb
    from python_side_by_side import make_rows

    X, y = make_rows(ROWS)
    params = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "max_bin": 256, "device": "cuda"}
    tb.train(params, tb.DMatrix(X, label=y), 100).save_model(MODEL)
    del X, y
    for turn in range(2):
        for site in sites:
            out = subprocess.run([sys.executable, __file__, "--measure", site], capture_output=True, text=True)
            print(turn, site, out.stdout.strip() or out.stderr[-2000:], flush=True)


if __name__ == "__main__":
    main()
