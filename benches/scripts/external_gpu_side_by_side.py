#!/usr/bin/env python3
"""External memory on the GPU, ours against XGBoost 3.4.1's ``ExtMemQuantileDMatrix``, in one call.

usage: external_gpu_side_by_side.py PATH/TO/train_external ROWS ROUNDS [RUN ...]

The rows (ROWS x 28 float32, standard normal, 5% missing in 4 columns, a nonlinear binary target:
`python_side_by_side.py`'s) are written once as batch files of BATCH rows (default 1M) under DATA
(default /tmp/extmem; kept when present with the same shape), with 1M test rows. Each RUN is a
fresh process reading the batch files one at a time (never the whole set, but for the in-core
runs); depth 8, eta 0.1, 256 bins, `binary:logistic`:

  ours-ext-gb     pages (host memory), device=cuda, gradient_based subsample=0.1,
                  device_memory_limit=LIMIT (default 1GiB)
  ours-ext        pages, device=cuda, no sampling (every row on the device)
  ours-ext-lim    pages, device=cuda, no sampling, device_memory_limit=LIMIT: where the rows do
                  not fit, the pages streamed a level at a time
  ours-core-gb    the rows in memory (DMatrix), device=cuda, gradient_based subsample=0.1
  ours-core       the rows in memory, device=cuda, no sampling: the in-core model
  xgb-ext-gb      XGBoost's ExtMemQuantileDMatrix (host cache), device=cuda, gradient_based 0.1
  xgb-ext         the same without sampling

Default runs: all. Prints a line a run: seconds to build the matrix and to train, training rows
per second (ROWS x ROUNDS / train seconds), test AUC, peak device memory (ours: its pool's peak;
XGBoost's: nvidia-smi's, every 20 ms, less what was in use before), peak resident memory; and our
runs' phases.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

PARAMS = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "max_bin": 256, "tree_method": "hist"}
GB = {"sampling_method": "gradient_based", "subsample": 0.1}


def make_rows(rows, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 28), dtype=np.float32)
    for c in (3, 9, 17, 25):
        X[rng.random(rows) < 0.05, c] = np.nan
    Z = np.nan_to_num(X)
    margin = Z[:, 0] * Z[:, 1] + np.sin(Z[:, 2]) + 0.5 * Z[:, 4] ** 2 - Z[:, 5] + 0.3 * rng.standard_normal(rows)
    # A fixed threshold (the median of this margin's distribution, about 0.455), so that batches
    # agree without seeing each other.
    return X, (margin > 0.455).astype(np.float32)


def write_data(data, rows, batch):
    shape = {"rows": rows, "batch": batch}
    stamp = os.path.join(data, "shape.json")
    if os.path.exists(stamp) and json.load(open(stamp)) == shape:
        return
    os.makedirs(data, exist_ok=True)
    start = time.perf_counter()
    for i, begin in enumerate(range(0, rows, batch)):
        X, y = make_rows(min(batch, rows - begin), seed=1000 + i)
        X.tofile(f"{data}/x.{i}.f32")
        y.tofile(f"{data}/y.{i}.f32")
    X, y = make_rows(1_000_000, seed=7)
    X.tofile(f"{data}/test_x.f32")
    y.tofile(f"{data}/test_y.f32")
    json.dump(shape, open(stamp, "w"))
    print(f"data: {rows} rows in batches of {batch} written in {time.perf_counter() - start:.1f} s", flush=True)


class MemoryPeak:
    """Peak GPU memory in use (MiB) while the block runs, less what was in use before it."""

    def used(self):
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    def __enter__(self):
        self.before = self.used()
        self.poll = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                      "-i", "0", "-lms", "20"], stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc):
        self.poll.terminate()
        samples = [int(line) for line in self.poll.communicate()[0].split() if line.strip().isdigit()]
        self.peak = max(samples + [self.before]) - self.before


def auc(scores, labels):
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    # Ties share their mean rank.
    sorted_scores = scores[order]
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    for f, c in zip(first[counts > 1], counts[counts > 1]):
        ranks[order[f:f + c]] = f + (c + 1) / 2
    pos = labels > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def xgboost_run(data, batches, rounds, sampled):
    """In its own process: XGBoost's ExtMemQuantileDMatrix from the batch files, then training."""
    import cupy as cp
    import xgboost as xgb

    class Files(xgb.DataIter):
        def __init__(self):
            super().__init__(cache_prefix=os.path.join(data, "xgb-cache"), on_host=True)
            self.at = 0

        def next(self, input_data):
            if self.at == batches:
                return False
            X = np.fromfile(f"{data}/x.{self.at}.f32", dtype=np.float32).reshape(-1, 28)
            y = np.fromfile(f"{data}/y.{self.at}.f32", dtype=np.float32)
            # XGBoost's GPU pages must be made from device arrays.
            input_data(data=cp.asarray(X), label=cp.asarray(y))
            self.at += 1
            return True

        def reset(self):
            self.at = 0

    params = dict(PARAMS, device="cuda", **(GB if sampled else {}))
    start = time.perf_counter()
    with xgb.config_context(use_rmm=False):
        dtrain = xgb.ExtMemQuantileDMatrix(Files(), max_bin=256)
        built = time.perf_counter() - start
        start = time.perf_counter()
        booster = xgb.train(params, dtrain, rounds)
        trained = time.perf_counter() - start
    X = np.fromfile(f"{data}/test_x.f32", dtype=np.float32).reshape(-1, 28)
    y = np.fromfile(f"{data}/test_y.f32", dtype=np.float32)
    booster.set_param({"device": "cpu"})
    scores = booster.inplace_predict(X)
    hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0].split()[1]
    print(json.dumps({"pages_s": built, "train_s": trained, "test_auc": float(auc(scores, y)),
                      "peak_rss_mib": int(hwm) // 1024}))


def ours_run(binary, data, batches, rounds, run, limit):
    params = dict(PARAMS, device="cuda")
    if run.endswith("-gb"):
        params.update(GB)
    args = [binary, data, str(batches), "28", str(rounds)]
    if run.startswith("ours-core"):
        args.append("--in-core")
    elif run in ("ours-ext-gb", "ours-ext-lim"):
        params["device_memory_limit"] = limit
    args += [f"{k}={v}" for k, v in params.items()]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout)[-600:]}
    result, phases = {}, []
    for line in out.stdout.splitlines():
        if line.startswith("phase "):
            name, seconds = line[len("phase "):].rsplit(" ", 1)
            phases.append((name.strip('"'), float(seconds)))
            continue
        for word in line.split():
            if "=" in word:
                k, v = word.split("=", 1)
                result[k] = v
        if line.startswith("pages_s="):
            result["pages"] = line.split(" ", 1)[1]
    result["phases"] = sorted(phases, key=lambda p: -p[1])[:16]
    return result


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--xgboost":
        data, batches, rounds, sampled = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
        xgboost_run(data, batches, rounds, sampled)
        return
    binary, rows, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    runs = sys.argv[4:] or ["ours-ext-gb", "ours-core-gb", "ours-core", "ours-ext", "xgb-ext-gb", "xgb-ext"]
    data, batch = os.environ.get("DATA", "/tmp/extmem"), int(os.environ.get("BATCH", 1_000_000))
    limit = os.environ.get("LIMIT", "1GiB")
    write_data(data, rows, batch)
    batches = -(-rows // batch)
    print(f"{rows} rows x 28 in {batches} batches, {rounds} rounds, depth 8, eta 0.1, 256 bins", flush=True)
    for run in runs:
        start = time.perf_counter()
        with MemoryPeak() as memory:
            if run.startswith("xgb"):
                cmd = [sys.executable, __file__, "--xgboost", data, str(batches), str(rounds),
                       "1" if run.endswith("-gb") else "0"]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode == 0:
                    result = json.loads(out.stdout.strip().splitlines()[-1])
                else:
                    # XGBoost's message, without its backtrace.
                    lines = [line for line in out.stderr.splitlines() if "[bt]" not in line and line.strip()]
                    result = {"error": "\n".join(lines)[-1500:]}
            else:
                result = ours_run(binary, data, batches, rounds, run, limit)
        wall = time.perf_counter() - start
        if "error" in result:
            print(f"{run}: failed after {wall:.1f} s: {result['error']}", flush=True)
            continue
        train_s = float(result["train_s"])
        device = result.get("peak_device_mib", "-")
        print(f"{run:13} matrix {float(result.get('pages_s', 0)):7.2f} s  train {train_s:7.2f} s  "
              f"{rows * rounds / train_s / 1e6:8.1f} M rows/s  test auc {float(result['test_auc']):.5f}  "
              f"device peak {device} MiB (pool) {memory.peak} MiB (nvidia-smi)  "
              f"rss {result.get('peak_rss_mib')} MiB  wall {wall:.1f} s", flush=True)
        if result.get("pages"):
            print(f"    {result['pages']}; passes {result.get('pages_passes_s')} s "
                  f"(count and lay out, sketch, pack), of which reading the files {result.get('pages_reading_s')} s")
        for name, seconds in result.get("phases", []):
            print(f"    {name:45} {seconds:8.3f} s")


if __name__ == "__main__":
    main()
