#!/usr/bin/env python3
"""The Python package against the Rust API and against XGBoost, in one run on one machine.

usage: python_side_by_side.py PATH/TO/train_raw [ROWS (default 10000000)] [ROUNDS (default 100)]
                              [DEVICE: cuda (default) or cpu] [NAME=VALUE ...]

1. Training from a NumPy array: `twinboost.DMatrix(X)` + `twinboost.train` against the Rust API
   (`benches/src/bin/train_raw`: `DMatrix::from_dense` + `Booster::train`) on the same rows (ROWS x
   28 float32, standard normal, 5% missing in 4 columns, a noisy nonlinear binary target; depth 8,
   eta 0.1, 256 bins), each in a fresh process: seconds, peak resident memory (the rows included:
   a second copy of them would add their size) and the model file's SHA-256 (the same bytes).
2. `inplace_predict` of the trained model (100 rounds unless ROUNDS says otherwise), ours against
   XGBoost 3.4.1 loading the same file: the median latency of 1 and 1,000 rows, and the throughput
   of every row, from a host NumPy array, on DEVICE and on the CPU.
3. With DEVICE cuda and CuPy installed, the same from device memory: training from a CuPy array
   (`DMatrix(cupy_array)` + `train`) against the Rust API from rows already on the GPU (`train_raw
   --device-rows`: `DMatrix::from_device_dense` + `Booster::train`), with the peak host memory
   while training (reset once the rows are on the device and their host copy is freed: a host
   copy of the rows would add their size); and `inplace_predict` of CuPy rows, ours against
   XGBoost's, results left on the device.
"""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def make_rows(rows, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 28), dtype=np.float32)
    for c in (3, 9, 17, 25):
        X[rng.random(rows) < 0.05, c] = np.nan
    Z = np.nan_to_num(X)
    margin = Z[:, 0] * Z[:, 1] + np.sin(Z[:, 2]) + 0.5 * Z[:, 4] ** 2 - Z[:, 5] + 0.3 * rng.standard_normal(rows)
    y = (margin > np.median(margin)).astype(np.float32)
    return X, y


def resident_mib():
    """(VmRSS, VmHWM) of this process in MiB."""
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return tuple(round(int(fields[k].split()[0]) / 1024) for k in ("VmRSS", "VmHWM"))


def python_training(values_path, labels_path, rounds, params):
    """Runs in its own process: the rows from the file, then DMatrix + train timed."""
    import twinboost as tb

    X = np.fromfile(values_path, dtype=np.float32).reshape(-1, 28)
    y = np.fromfile(labels_path, dtype=np.float32)
    stages = {"rows read": resident_mib()}
    start = time.perf_counter()
    dtrain = tb.DMatrix(X, label=y)
    stages["DMatrix"] = resident_mib()
    booster = tb.train(params, dtrain, rounds, verbose_eval=False)
    seconds = time.perf_counter() - start
    stages["trained"] = resident_mib()
    print("python resident MiB (now, peak) by stage:", stages, file=sys.stderr)
    # VmHWM, not getrusage's ru_maxrss, which on Linux keeps the parent's size from before exec.
    peak = resident_mib()[1]
    raw = bytes(booster.save_raw())
    return {"seconds": seconds, "peak_rss_mib": peak, "model_sha": hashlib.sha256(raw).hexdigest(), "raw": raw}


def reset_peak_mib():
    """Resets this process's peak resident memory (VmHWM) to the current (VmRSS), returned in MiB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return resident_mib()[0]


def cupy_training(values_path, labels_path, rounds, params):
    """Runs in its own process: the rows uploaded with CuPy and their host copy freed, then
    DMatrix(cupy rows) + train timed, the host peak measured from there."""
    import gc

    import cupy
    import twinboost as tb

    X = np.fromfile(values_path, dtype=np.float32).reshape(-1, 28)
    y = np.fromfile(labels_path, dtype=np.float32)
    X_device = cupy.asarray(X)
    cupy.cuda.Device().synchronize()
    del X
    gc.collect()
    base = reset_peak_mib()
    start = time.perf_counter()
    dtrain = tb.DMatrix(X_device, label=y)
    booster = tb.train(params, dtrain, rounds, verbose_eval=False)
    seconds = time.perf_counter() - start
    raw = bytes(booster.save_raw())
    return {"seconds": seconds, "peak_rss_mib": resident_mib()[1], "base_rss_mib": base,
            "model_sha": hashlib.sha256(raw).hexdigest(), "raw": raw}


def device_prediction(model_path, X):
    """inplace_predict of CuPy rows, ours against XGBoost's (each call waited for)."""
    import cupy
    import twinboost as tb
    import xgboost as xgb

    ours, theirs = tb.Booster(model_file=model_path), xgb.Booster(model_file=model_path)
    ours.set_param({"device": "cuda"})
    theirs.set_param({"device": "cuda"})
    reference = xgb.Booster(model_file=model_path)
    reference.set_param({"device": "cpu"})
    X_device = cupy.asarray(X)
    check = ours.inplace_predict(X_device[:100_000])
    assert isinstance(check, cupy.ndarray)
    np.testing.assert_array_equal(check.get(), reference.inplace_predict(X[:100_000]))
    np.testing.assert_allclose(theirs.inplace_predict(X_device[:100_000]).get(),
                               reference.inplace_predict(X[:100_000]), rtol=1e-6)
    synchronize = cupy.cuda.Device().synchronize

    def timed(booster, rows):
        return lambda: (booster.inplace_predict(rows), synchronize())

    print("\ninplace_predict on cuda of CuPy rows (results left on the device; ours XGBoost's CPU bits, checked):")
    print("| rows | twinboost | XGBoost 3.4.1 | ratio |")
    print("| --- | --- | --- | --- |")
    for n, repeats in ((1, 300), (1000, 100)):
        rows = X_device[:n]
        timed(ours, rows)(), timed(theirs, rows)()
        a, b = median_seconds(timed(ours, rows), repeats), median_seconds(timed(theirs, rows), repeats)
        print(f"| {n} | {a * 1e6:.0f} us | {b * 1e6:.0f} us | {b / a:.2f}x faster |")
    a, b = median_seconds(timed(ours, X_device), 3), median_seconds(timed(theirs, X_device), 3)
    n = X.shape[0]
    print(f"| {n} | {n / a / 1e6:.1f} M rows/s | {n / b / 1e6:.1f} M rows/s | {b / a:.2f}x faster |")


def train_both(rust_command, python_mode, values, labels, rounds, params):
    """The Rust side (`train_raw` and its flags) and the Python side (this script in `python_mode`)
    trained in fresh processes on the same files: each one's `key=value` / JSON results."""
    rust = subprocess.run(rust_command + [values, labels, "28", str(rounds)] + [f"{k}={v}" for k, v in params.items()],
                          check=True, capture_output=True, text=True).stdout
    python = subprocess.run([sys.executable, __file__, python_mode, values, labels, str(rounds), json.dumps(params)],
                            check=True, stdout=subprocess.PIPE, text=True).stdout
    return dict(kv.split("=") for kv in rust.split()), json.loads(python.strip().splitlines()[-1])


def from_cupy(train_raw, values, labels, rounds, params, X):
    """Part 3: training from device memory, Rust API against CuPy, and CuPy rows predicted."""
    rust, python = train_both([train_raw, "--device-rows"], "--cupy-training", values, labels, rounds, params)
    r, p = float(rust["seconds"]), python["seconds"]
    print("\nfrom device memory:")
    print("| run | seconds | host MiB at start -> peak while training |")
    print("| --- | --- | --- |")
    print(f"| Rust API (DMatrix::from_device_dense + Booster::train) | {r:.2f} | "
          f"{float(rust['base_rss_mib']):.0f} -> {float(rust['peak_rss_mib']):.0f} |")
    print(f"| Python (DMatrix(cupy_array) + train) | {p:.2f} ({p / r:.3f}x) | "
          f"{python['base_rss_mib']:.0f} -> {python['peak_rss_mib']:.0f} |")
    same = rust["model_sha"] == python["model_sha"]
    print(f"the same model file: {same}")
    device_prediction(values + ".model.json", X)
    return same


def median_seconds(call, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def prediction(model_path, X, device):
    import twinboost as tb
    import xgboost as xgb

    ours = tb.Booster(model_file=model_path)
    ours.set_param({"device": device})
    theirs = xgb.Booster(model_file=model_path)
    theirs.set_param({"device": device})
    # Ours are XGBoost's CPU predictor's bits on either device; XGBoost's GPU predictor differs from
    # its CPU one in the last bit of some rows.
    reference = xgb.Booster(model_file=model_path)
    reference.set_param({"device": "cpu"})
    np.testing.assert_array_equal(ours.inplace_predict(X[:100_000]), reference.inplace_predict(X[:100_000]))
    np.testing.assert_allclose(theirs.inplace_predict(X[:100_000]), reference.inplace_predict(X[:100_000]), rtol=1e-6)
    print(f"\ninplace_predict on {device} (rows from a host NumPy array; ours XGBoost's CPU bits, checked):")
    print("| rows | twinboost | XGBoost 3.4.1 | ratio |")
    print("| --- | --- | --- | --- |")
    for n, repeats in ((1, 300), (1000, 100)):
        rows = X[:n]
        ours.inplace_predict(rows), theirs.inplace_predict(rows)
        a = median_seconds(lambda: ours.inplace_predict(rows), repeats)
        b = median_seconds(lambda: theirs.inplace_predict(rows), repeats)
        print(f"| {n} | {a * 1e6:.0f} us | {b * 1e6:.0f} us | {b / a:.2f}x faster |")
    a = median_seconds(lambda: ours.inplace_predict(X), 3)
    b = median_seconds(lambda: theirs.inplace_predict(X), 3)
    n = X.shape[0]
    print(f"| {n} | {n / a / 1e6:.1f} M rows/s | {n / b / 1e6:.1f} M rows/s | {b / a:.2f}x faster |")


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("--python-training", "--cupy-training"):
        mode, values, labels, rounds, params = sys.argv[1:]
        run = python_training if mode == "--python-training" else cupy_training
        result = run(values, labels, int(rounds), json.loads(params))
        if mode == "--python-training":
            with open(values + ".model.json", "wb") as f:
                f.write(result.pop("raw"))
        result.pop("raw", None)
        print(json.dumps(result))
        return
    train_raw = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    device = sys.argv[4] if len(sys.argv) > 4 else "cuda"
    params = {"objective": "binary:logistic", "max_depth": "8", "eta": "0.1", "max_bin": "256",
              "tree_method": "hist", "device": device}
    params.update(dict(arg.split("=", 1) for arg in sys.argv[5:]))
    with tempfile.TemporaryDirectory() as tmp:
        X, y = make_rows(rows)
        values, labels = os.path.join(tmp, "X.f32"), os.path.join(tmp, "y.f32")
        X.tofile(values)
        y.tofile(labels)
        print(f"rows {rows} x 28 ({X.nbytes / 2**20:.0f} MiB of float32), {rounds} rounds, device {device}, {params}")
        rust, python = train_both([train_raw], "--python-training", values, labels, rounds, params)
        r, p = float(rust["seconds"]), python["seconds"]
        print("| run | seconds | peak resident MiB (rows included) |")
        print("| --- | --- | --- |")
        print(f"| Rust API (DMatrix::from_dense + Booster::train) | {r:.2f} | {float(rust['peak_rss_mib']):.0f} |")
        print(f"| Python (DMatrix(X) + train) | {p:.2f} ({p / r:.3f}x) | {python['peak_rss_mib']:.0f} |")
        same = rust["model_sha"] == python["model_sha"]
        print(f"the same model file: {same}")
        model_path = values + ".model.json"
        prediction(model_path, X, device)
        if device != "cpu":
            prediction(model_path, X, "cpu")
            if importlib.util.find_spec("cupy") is None:
                print("\nCuPy is not installed: no training or prediction from device memory")
            else:
                same = from_cupy(train_raw, values, labels, rounds, params, X) and same
        if not same:
            sys.exit("the model files differ")


if __name__ == "__main__":
    main()
