#!/usr/bin/env python3
"""Learning to rank side by side: boost against XGBoost on the same synthetic query groups, the same
parameters and device, in one run.

usage: rank_side_by_side.py PATH/TO/boost [ROWS (default 500000)] [GROUP (default 100)]
                            [ROUNDS (default 100)] [DEVICE: cuda (default) or cpu] [NAME=VALUE ...]
                            (more parameters for both; the default objective is rank:ndcg)

The data: 20 standard-normal features, groups of GROUP consecutive rows (sizes varying by up to
half of GROUP), relevance degrees 0..4 from a noisy nonlinear score; a test set of a fifth as many
rows from the same distribution. Both sides train from the libsvm file (`qid:` fields), and each
is timed from its data in memory to a trained model (XGBoost's `train` from a `DMatrix`; ours the
"trees in ... s" line of `boost train`, which covers the cuts and the quantised matrix too, with
`disable_default_eval_metric=1`: neither side evaluates anything while training). XGBoost's CUDA
context is made before its clock starts (a round on the test set, whose quantised matrix its
`DMatrix` keeps, not the training set's); ours is made inside the run, so its `device open` phase
(BOOST_VERBOSITY=2) is also reported taken out.
With KEEP_DATA=DIR in the environment the libsvm files and our model stay in DIR (for a profiler's
run of `boost train` on the same data). Reports each side's ndcg@10 on the test set (XGBoost's from
`Booster.eval`, ours from `boost eval`): the same model up to the last bits of `expf` (XGBoost's C library, our `libm`).
With BOOST_VERBOSITY=2 (or 3) our run's phases are printed (3: with the device's time by step, CUDA
events, which cost some time).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import xgboost as xgb

boost = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 500_000
group = int(sys.argv[3]) if len(sys.argv) > 3 else 100
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 100
device = sys.argv[5] if len(sys.argv) > 5 else "cuda"
params = {"objective": "rank:ndcg", "max_depth": "8", "eta": "0.1", "max_bin": "256", "tree_method": "hist",
          "device": device}
params.update(dict(arg.split("=", 1) for arg in sys.argv[6:]))


def make(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 20), dtype=np.float32)
    score = x[:, 0] + np.sin(2 * x[:, 1]) + x[:, 2] * x[:, 3] + 0.5 * rng.standard_normal(n)
    labels = np.clip(np.floor(score + 2.0), 0, 4).astype(np.float32)
    sizes = []
    while sum(sizes) < n:
        sizes.append(int(rng.integers(group // 2, group + group // 2 + 1)))
    sizes[-1] -= sum(sizes) - n
    sizes = [s for s in sizes if s > 0]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    return x, labels, np.array(sizes), qid


def write_libsvm(path, x, labels, qid):
    cols = " ".join(f"{j}:%.7g" for j in range(x.shape[1]))
    np.savetxt(path, np.column_stack([labels, qid, x]), fmt=f"%d qid:%d {cols}")


with tempfile.TemporaryDirectory() as scratch:
    tmp = os.environ.get("KEEP_DATA") or scratch
    os.makedirs(tmp, exist_ok=True)
    train_path, test_path = os.path.join(tmp, "rank.train"), os.path.join(tmp, "rank.test")
    x, y, sizes, qid = make(rows, 0)
    tx, ty, tsizes, tqid = make(max(rows // 5, group), 1)
    write_libsvm(train_path, x, y, qid)
    write_libsvm(test_path, tx, ty, tqid)
    print(f"{rows} rows in {len(sizes)} groups (mean {rows / len(sizes):.0f}), {rounds} rounds, {params}")

    test = xgb.DMatrix(tx, label=ty, group=tsizes)
    # The CUDA context and kernels before timing, on the test set: a `DMatrix` keeps the quantised
    # matrix of its first `train`, so the timed run's must be new for its cuts and matrix to count,
    # as ours do.
    xgb.train(params, test, 1)
    train = xgb.DMatrix(x, label=y, group=sizes)
    start = time.perf_counter()
    booster = xgb.train(params, train, rounds)
    xgb_seconds = time.perf_counter() - start
    xgb_test = booster.eval(test, name="test").split()[1]

    model = os.path.join(tmp, "model.json")
    ours = [boost, "train", train_path, "--rounds", str(rounds), "--verbose-eval", "0", "-o", model]
    ours += [f"{k}={v}" for k, v in params.items() if k != "tree_method"]
    # XGBoost's `train` without evaluation sets computes no metric; ours would evaluate the training
    # set every round.
    ours += ["disable_default_eval_metric=1"]
    ours += [f"verbosity={os.environ['BOOST_VERBOSITY']}"] if "BOOST_VERBOSITY" in os.environ else []
    out = subprocess.run(ours, capture_output=True, text=True, check=True).stderr
    for line in out.splitlines():
        if "phases:" in line or "device time by phase" in line:
            print(line)
    seconds = float(re.search(r"trees in ([0-9.]+) s", out).group(1))
    # XGBoost's CUDA context was made before its clock started: ours, made inside the run, is
    # taken out when the phases say how long it took (verbosity 2 or more).
    device_open = re.search(r"device open ([0-9.]+) s", out)
    opened = float(device_open.group(1)) if device_open else 0.0
    metric = xgb_test.split(":")[0].removeprefix("test-")
    evaluated = subprocess.run([boost, "eval", "-m", model, test_path, "--metric", metric],
                               capture_output=True, text=True, check=True)
    ours_test = (evaluated.stdout + evaluated.stderr).strip().splitlines()[-1]
    print(f"xgboost {xgb.__version__}: {xgb_seconds:.3f} s, test {xgb_test}")
    print(f"boost: {seconds:.3f} s ({seconds - opened:.3f} s without opening the device), test {ours_test}")
    print(f"ratio boost/xgboost: {seconds / xgb_seconds:.2f} ({(seconds - opened) / xgb_seconds:.2f} without "
          f"opening the device: {xgb_seconds / (seconds - opened):.2f}x faster)")
