#!/usr/bin/env python3
"""Training side by side: boost against XGBoost (hist, or any tree method both have) on the same synthetic data
(`boost generate`: 28 standard-normal features, 5% missing in 4 columns, a noisy nonlinear binary
target), the same parameters, the same thread count and device, in one run.

usage: train_side_by_side.py PATH/TO/boost [ROWS (default 1000000)] [ROUNDS (default 100)]
                             [THREADS: a count or a list, e.g. 1,2,4,8,16 (default: every core)]
                             [DEVICE: cpu (default) or cuda] [MAX_DEPTH (default 8)] [ETA (default 0.3)]
                             [NAME=VALUE ...]  (more parameters for both, e.g. grow_policy=lossguide
                             max_leaves=255 max_depth=0; objective=multi:softprob num_class=K makes the
                             labels K classes of about equal size, ordered by the margin; evals=test
                             evaluates the test set after every round on both sides, as a second
                             evaluation set; tree_method=exact the exact method; xgboost_device=cpu
                             trains XGBoost on the CPU whatever DEVICE says, as for exact, which
                             XGBoost has on the CPU only)

Both sides are timed from data in memory to a trained model, the quantile cuts and quantised matrix
included (XGBoost builds them inside its first `train` round, from a host `DMatrix`); reading the
CSV is not timed. With DEVICE cuda the script also times training from the quantised matrix already
on the device: XGBoost from a `QuantileDMatrix` of CuPy arrays (built on the GPU, not timed, in a
process whose CUDA context exists), ours as the whole run minus the phases that open the device
and build the cuts, the ELLPACK matrix and the device matrix. It
With a list of thread counts both sides train once per count, and a scaling table (each side's
time, speed-up over the first count, parallel efficiency, the ratio, and our phases) ends the
output. It reports each side's test AUC (another 1M rows of the same distribution, seed 1; XGBoost's AUC from
`Booster.eval`, ours from `boost eval`) and peak device memory (`nvidia-smi` sampled every 20 ms
during training, less what was in use before; ours also as the library reports it). With
BOOST_VERBOSITY=3 in the environment our run also reports the device's time by step (CUDA events).
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
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 100
thread_counts = [int(t) for t in sys.argv[4].split(",")] if len(sys.argv) > 4 and sys.argv[4] else [os.cpu_count()]
threads = thread_counts[0]
device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
depth = sys.argv[6] if len(sys.argv) > 6 else "8"
eta = sys.argv[7] if len(sys.argv) > 7 else "0.3"
params = {"objective": "binary:logistic", "max_depth": depth, "eta": eta, "max_bin": "256",
          "tree_method": "hist", "nthread": str(threads), "device": device}
params.update(dict(arg.split("=", 1) for arg in sys.argv[8:]))
evaluate_test = params.pop("evals", None) == "test"
xgboost_device = params.pop("xgboost_device", device)
test_rows = min(rows, 1_000_000)


class MemoryPeak:
    """Peak GPU memory in use (MiB) while the block runs, less what was in use before it."""

    def __init__(self):
        self.peak = None

    def used(self):
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    def __enter__(self):
        if device == "cuda":
            self.before = self.used()
            self.poll = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                          "-i", "0", "-lms", "20"], stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc):
        if device == "cuda":
            self.poll.terminate()
            samples = [int(line) for line in self.poll.communicate()[0].split() if line.strip().isdigit()]
            self.peak = max(samples + [self.before]) - self.before


def load(raw, n):
    table = np.fromfile(raw, dtype="<f4").reshape(n, -1)
    return table[:, 1:], table[:, 0]


def train_both(tmp, data, raw, test, test_raw, features, label, test_features, test_label, threads):
    """One run of each side at `threads` threads: (ours, phases line, log line, device, peak, reported peak,
    auc, device phases line), (theirs, history, auc, peak), theirs from the quantised matrix on the device."""
    params["nthread"] = str(threads)
    model = os.path.join(tmp, "model.json")
    args = [boost, "train", data, "--rounds", str(rounds), "--verbose-eval", str(rounds), "-o", model]
    # Verbosity 2 for our phases (the setup they subtract); BOOST_VERBOSITY=3 adds the device's
    # time by step (CUDA events, which cost lossguide's run time).
    args += [f"{k}={v}" for k, v in params.items()] + [f"verbosity={os.environ.get('BOOST_VERBOSITY', '2')}"]
    if evaluate_test:
        args += ["--eval", f"test={test}"]
    with MemoryPeak() as ours_memory:
        run = subprocess.run(args, check=True, capture_output=True, text=True)
    ours = float(re.search(r"trees in ([0-9.]+) s", run.stderr).group(1))
    ours_log = run.stdout.strip().splitlines()[-1]
    ours_phases = re.search(r"phases: (.*)", run.stderr).group(1)
    # The device's time by step (CUDA events; the GPU's runs at verbosity 3).
    device_phases = re.search(r"device time by phase: (.*)", run.stderr)
    ours_device = re.search(r"trees in [0-9.]+ s on (.*); model", run.stderr).group(1)
    reported_peak = re.search(r"peak device memory ([0-9.]+) MiB", run.stderr)
    evaluation = subprocess.run([boost, "eval", "-m", model, test, "--metric", "auc"], check=True,
                                capture_output=True, text=True).stdout
    ours_auc = float(re.search(r"auc[^0-9]*([0-9.]+)", evaluation).group(1))

    dtrain = xgb.DMatrix(features, label=label, nthread=threads)
    dtest = xgb.DMatrix(test_features, label=test_label, nthread=threads)
    history = {}
    evals = [(dtrain, "train")] + ([(dtest, "test")] if evaluate_test else [])
    with MemoryPeak() as theirs_memory:
        start = time.perf_counter()
        booster = xgb.train(dict(params, device=xgboost_device), dtrain, rounds, evals=evals, evals_result=history,
                            verbose_eval=False)
        theirs = time.perf_counter() - start
    booster.set_param({"eval_metric": "auc"})
    theirs_auc = float(booster.eval(dtest, "test").split(":")[-1])

    theirs_quantised = None
    if device == "cuda" and xgboost_device == "cuda":
        import cupy
        quantised = xgb.QuantileDMatrix(cupy.asarray(features), label=cupy.asarray(label), max_bin=256)
        evals = [(quantised, "train")]
        if evaluate_test:
            evals.append((xgb.QuantileDMatrix(cupy.asarray(test_features), label=cupy.asarray(test_label),
                                              ref=quantised), "test"))
        start = time.perf_counter()
        xgb.train(dict(params), quantised, rounds, evals=evals, verbose_eval=False)
        theirs_quantised = time.perf_counter() - start
    return ((ours, ours_phases, ours_log, ours_device, ours_memory.peak, reported_peak, ours_auc,
             device_phases.group(1) if device_phases else None),
            (theirs, history, theirs_auc, theirs_memory.peak), theirs_quantised)


def report(threads, ours_run, theirs_run, theirs_quantised):
    ours, ours_phases, ours_log, ours_device, ours_peak, reported_peak, ours_auc, device_phases = ours_run
    theirs, history, theirs_auc, theirs_peak = theirs_run
    phase = {name.strip(" ,"): float(value) for name, value in re.findall(r"([a-z:, ]+?) ([0-9.]+) s(?:,|$)", ours_phases)}
    setup = sum(phase.get(name, 0.0) for name in ["device open", "cuts", "ellpack", "matrix for the tree builder",
                                                   "sorted columns", "sorted columns to the device"])
    extra = " ".join(sys.argv[8:])
    print(f"rows {rows}, features 28, depth {depth}, eta {eta}, {rounds} rounds, {threads} threads, device {device}, "
          f"xgboost {xgb.__version__} {extra}")
    print(f"boost   {ours:8.2f} s   last log line: {ours_log}   (on {ours_device})   test auc {ours_auc:.5f}")
    print(f"boost phases: {ours_phases}")
    if device_phases:
        print(f"boost device time by phase: {device_phases}")
    last = "   ".join(f"{name}-{metric} {values[-1]:.5f}" for name, log in history.items() for metric, values in log.items())
    print(f"xgboost {theirs:8.2f} s   {last}   test auc {theirs_auc:.5f}   (device {xgboost_device})")
    print(f"boost / xgboost speed, whole run: {theirs / ours:.3f}x")
    if theirs_quantised is not None:
        print(f"from the quantised matrix on the device: boost {ours - setup:.2f} s, xgboost {theirs_quantised:.2f} s, "
              f"time ratio boost / xgboost {(ours - setup) / theirs_quantised:.3f}")
    if ours_peak is not None:
        reported = f", {reported_peak.group(1)} MiB by its pool" if reported_peak else ""
        print(f"peak device memory (nvidia-smi, MiB): boost {ours_peak}{reported}; xgboost {theirs_peak}")


with tempfile.TemporaryDirectory() as tmp:
    data, raw = os.path.join(tmp, "train.csv"), os.path.join(tmp, "train.f32")
    test, test_raw = os.path.join(tmp, "test.csv"), os.path.join(tmp, "test.f32")
    # The same tables as raw f32 for NumPy: parsing the CSV with NumPy takes minutes at 10M rows.
    classes = ["--classes", params["num_class"]] if "num_class" in params else []
    subprocess.run([boost, "generate", data, "--rows", str(rows), "--raw", raw] + classes, check=True)
    subprocess.run([boost, "generate", test, "--rows", str(test_rows), "--seed", "1", "--raw", test_raw] + classes,
                   check=True)
    features, label = load(raw, rows)
    test_features, test_label = load(test_raw, test_rows)
    results = []
    for threads in thread_counts:
        result = train_both(tmp, data, raw, test, test_raw, features, label, test_features, test_label, threads)
        report(threads, *result)
        results.append((threads, result))

if len(results) > 1:
    print(f"\nscaling ({rows} rows, {rounds} rounds, depth {depth}, device {device}): time in s, speed-up over "
          f"{results[0][0]} thread(s), parallel efficiency")
    print("| threads | boost | speed-up | efficiency | XGBoost | speed-up | efficiency | boost / XGBoost speed |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    (t0, ((ours0, *_), (theirs0, *_), _)) = results[0]
    for threads, ((ours, *_), (theirs, *_), _) in results:
        scale = threads / t0
        print(f"| {threads} | {ours:.2f} | {ours0 / ours:.2f}x | {ours0 / ours / scale:.0%} | {theirs:.2f} | "
              f"{theirs0 / theirs:.2f}x | {theirs0 / theirs / scale:.0%} | {theirs / ours:.3f}x |")
    print("\nour phases by thread count:")
    for threads, ((_, phases, *_), *_) in results:
        print(f"{threads:>3}: {phases}")
