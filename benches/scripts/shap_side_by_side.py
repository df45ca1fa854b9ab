#!/usr/bin/env python3
"""SHAP side by side: boost's device explanations against XGBoost's GPU `pred_contribs` and
`pred_interactions` (GPUTreeShap) on the same model (trained by XGBoost, saved as JSON, loaded by
both) and the same rows, in one run.

usage: shap_side_by_side.py PATH/TO/shap [ROWS (default 1000000)] [ROUNDS (default 500)]
                            [MAX_DEPTH (default 8)] [INTERACTION_ROWS (default ROWS)]
                            [GROW_POLICY (default depthwise; oblivious: our model of oblivious trees)]

The rows: 28 standard-normal features, 5% missing in 4 columns (as `boost generate`). The model is
trained by XGBoost on the GPU (eta 0.1, 256 bins) on the first min(ROWS, 1M) rows, not timed; with
GROW_POLICY=oblivious it is ours (`boost train grow_policy=oblivious`, which XGBoost loads), and
`shap` also times its contributions on the generic paths (the walk of oblivious trees switched off
by moving one node's threshold up a float), printed as the walk's speed-up. Both
sides explain rows in host memory (a NumPy array in an `xgboost.DMatrix`; ours a host `DMatrix`
with `device=cuda`), each in a process of its own: each figure is the best of three calls after a
warm-up, the upload and the values' copy back included on both sides. Peak device memory is
`nvidia-smi`'s, sampled every 20 ms during each process (its CUDA context included), less what
was in use before. The script checks that our values of the
first 2000 rows are XGBoost's CPU's to 1e-5 for contributions (absolute, relative to 1 + |value|)
and prints the largest differences against its GPU's and its CPU's values, and between those two;
`shap` checks that they are our CPU's bits.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import xgboost as xgb

if sys.argv[1] == "--xgboost":
    # The XGBoost side in a process of its own, as ours: MODEL VALUES ROWS KIND.
    model_file, values_file, n, kind = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    booster = xgb.Booster(model_file=model_file)
    booster.set_param({"device": "cuda"})
    data = xgb.DMatrix(np.fromfile(values_file, dtype="<f4").reshape(-1, 28)[:n])
    option = {"pred_contribs": True} if kind == "contribs" else {"pred_interactions": True}
    booster.predict(data, **option)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        booster.predict(data, **option)
        best = min(best, time.perf_counter() - start)
    print(f"seconds={best}")
    sys.exit(0)

ours = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 500
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 8
interaction_rows = int(sys.argv[5]) if len(sys.argv) > 5 else rows
policy = sys.argv[6] if len(sys.argv) > 6 else "depthwise"
cols, check = 28, 2000


def features(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, cols), dtype=np.float32)
    for c in range(4):
        x[rng.random(n) < 0.05, c] = np.nan
    return x


def labels(x, seed):
    rng = np.random.default_rng(seed)
    v = np.nan_to_num(x)
    margin = v[:, 0] * v[:, 1] + np.sin(v[:, 2]) + 0.5 * v[:, 3] ** 2 - v[:, 4] + rng.standard_normal(len(x))
    return (margin > 0.5).astype(np.float32)


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


differences = {}


def compare(name, got, expected):
    diff = np.abs(got - expected) / (1 + np.abs(expected))
    print(f"{name}: largest difference {diff.max():.3g} (relative to 1 + |value|) over {got.size} values")
    differences[name] = diff.max()


x = features(rows, 0)
train_rows = min(rows, 1_000_000)
with tempfile.TemporaryDirectory() as tmp:
    model_path = os.path.join(tmp, "model.json")
    if policy == "oblivious":
        boost = os.path.join(os.path.dirname(ours), "boost")
        csv = os.path.join(tmp, "train.csv")
        table = np.column_stack([labels(x[:train_rows], 1), x[:train_rows]])
        np.savetxt(csv, table, delimiter=",", fmt="%.7g")
        subprocess.run([boost, "train", csv, "-o", model_path, "objective=binary:logistic", f"max_depth={depth}",
                        "eta=0.1", "grow_policy=oblivious", "--rounds", str(rounds), "device=cuda"], check=True)
        booster = xgb.Booster(model_file=model_path)
    else:
        start = time.perf_counter()
        booster = xgb.train({"objective": "binary:logistic", "max_depth": depth, "eta": 0.1, "max_bin": 256,
                             "tree_method": "hist", "device": "cuda"},
                            xgb.DMatrix(x[:train_rows], label=labels(x[:train_rows], 1)), rounds)
        print(f"model: {rounds} rounds of depth {depth} trained by XGBoost in {time.perf_counter() - start:.1f} s")
        booster.save_model(model_path)
    values_path = os.path.join(tmp, "values.f32")
    x.astype("<f4").tofile(values_path)
    out = os.path.join(tmp, "ours")
    with MemoryPeak() as ours_memory:
        try:
            extra = ["paths"] if policy == "oblivious" else []
            result = subprocess.run([ours, model_path, values_path, str(cols), str(rows), str(interaction_rows),
                                     str(check), out] + extra, capture_output=True, text=True,
                                    timeout=float(os.environ.get("OURS_TIMEOUT", "1e9")))
        except subprocess.TimeoutExpired as e:
            print("ours timed out:", e.stdout, e.stderr, flush=True)
            raise
    print(result.stdout, result.stderr, flush=True)
    result.check_returncode()
    times = {}
    for line in result.stdout.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "kind" in fields:
            times[fields["kind"]] = float(fields["seconds"])

    booster.set_param({"device": "cuda"})
    theirs, memory = {}, {}
    for kind, n in (("contribs", rows), ("interactions", interaction_rows)):
        option = {"pred_contribs": True} if kind == "contribs" else {"pred_interactions": True}
        with MemoryPeak() as peak:
            child = subprocess.run([sys.executable, __file__, "--xgboost", model_path, values_path, str(n), kind],
                                   capture_output=True, text=True, check=True)
        theirs[kind] = float(child.stdout.split("seconds=")[1])
        memory[kind] = peak.peak
        sample = xgb.DMatrix(x[:check])
        got = np.fromfile(f"{out}.{kind}.f32", dtype="<f4")
        on_gpu = booster.predict(sample, **option).ravel()
        compare(f"{kind} against XGBoost's GPU", got, on_gpu)
        booster.set_param({"device": "cpu"})
        on_cpu = booster.predict(sample, **option).ravel()
        compare(f"{kind} against XGBoost's CPU", got, on_cpu)
        compare(f"{kind}: XGBoost's GPU against its CPU", on_gpu, on_cpu)
        booster.set_param({"device": "cuda"})

    for kind, n in (("contribs", rows), ("interactions", interaction_rows)):
        ratio = theirs[kind] / times[kind]
        print(f"{kind:>12} {n} rows: boost {times[kind]:.3f} s ({n / times[kind] / 1e6:.3f} M rows/s), "
              f"xgboost {theirs[kind]:.3f} s ({n / theirs[kind] / 1e6:.3f} M rows/s): {ratio:.2f}x")
    if "contribs_paths" in times:
        print(f"oblivious trees: contributions walked {times['contribs']:.3f} s, on their paths "
              f"{times['contribs_paths']:.3f} s: the walk {times['contribs_paths'] / times['contribs']:.2f}x faster")
    print(f"peak device memory (nvidia-smi, MiB): boost {ours_memory.peak} (both kinds, one process); "
          f"xgboost contribs {memory['contribs']}, interactions {memory['interactions']}")
    # Contributions: ours are XGBoost's CPU's to 1e-5. Interaction values: XGBoost's own GPU and
    # CPU differ by more than that (float quadratures), ours are exact (`boost`'s enumeration test).
    assert differences["contribs against XGBoost's CPU"] <= 1e-5, differences
