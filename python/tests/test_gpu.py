"""device="cuda": the GPU backend writes the CPU's model file and predicts the CPU's values.

With TWINBOOST_GPU=1 these run on the machine's CUDA GPU (and fail without one); otherwise on the
SIMT emulator, which runs the same kernels on the CPU (PRIMITIVES_DEVICE=emulator)."""

import os

import numpy as np
import pytest

import twinboost as tb

ON_GPU = os.environ.get("TWINBOOST_GPU") == "1"


@pytest.fixture
def device(monkeypatch, higgs):
    if not ON_GPU:
        monkeypatch.setenv("PRIMITIVES_DEVICE", "emulator")
    return "cuda"


def test_gpu_training_writes_the_cpu_model_and_predicts_its_values(device, higgs):
    (X, y, w), (Xt, yt, _) = higgs
    rows = None if ON_GPU else 1500
    X, y, w = X[:rows], y[:rows], w[:rows]
    params = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.3, "eval_metric": "auc"}
    rounds = 50 if ON_GPU else 4
    logs = {}
    models = {}
    for where in ("cpu", device):
        logs[where] = {}
        models[where] = tb.train(dict(params, device=where), tb.DMatrix(X, label=y, weight=w), rounds,
                                 evals=[(tb.DMatrix(Xt, label=yt), "test")], evals_result=logs[where],
                                 verbose_eval=False)
    assert models[device].save_raw() == models["cpu"].save_raw()
    assert logs[device] == logs["cpu"]
    # The GPU-trained booster predicts on the GPU (its device parameter), with the CPU's bits.
    np.testing.assert_array_equal(models[device].predict(tb.DMatrix(Xt)), models["cpu"].predict(tb.DMatrix(Xt)))
    leaves = models[device].predict(tb.DMatrix(Xt), pred_leaf=True)
    np.testing.assert_array_equal(leaves, models["cpu"].predict(tb.DMatrix(Xt), pred_leaf=True))


def test_a_gpu_that_cannot_be_opened_is_a_device_error(monkeypatch):
    monkeypatch.setenv("PRIMITIVES_DEVICE", "cuda:97")
    X = np.arange(20, dtype=np.float32).reshape(10, 2)
    with pytest.raises(tb.DeviceError, match="device"):
        tb.train({"device": "cuda:97"}, tb.DMatrix(X, label=np.arange(10)), 1, verbose_eval=False)
