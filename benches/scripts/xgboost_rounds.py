#!/usr/bin/env python3
"""XGBoost's training alone, for a profiler: `boost generate`'s raw table (`--raw`) loaded into a
`QuantileDMatrix` on the GPU, then ROUNDS rounds of `device=cuda` hist training with the given
parameters. Under `ncu --csv --page raw --metrics gpu__time_duration.sum`, the kernels of the
matrix's construction come first; compare with `ncu_kernel_times.py`.

usage: xgboost_rounds.py RAW ROWS ROUNDS [NAME=VALUE ...]
"""
import sys

import cupy
import numpy as np
import xgboost as xgb

raw, rows, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
params = {"objective": "binary:logistic", "max_depth": "8", "eta": "0.1", "max_bin": "256", "tree_method": "hist",
          "device": "cuda"}
params.update(dict(arg.split("=", 1) for arg in sys.argv[4:]))
table = np.fromfile(raw, dtype="<f4").reshape(rows, -1)
quantised = xgb.QuantileDMatrix(cupy.asarray(table[:, 1:]), label=cupy.asarray(table[:, 0]), max_bin=256)
xgb.train(params, quantised, rounds, evals=[(quantised, "train")], verbose_eval=False)
