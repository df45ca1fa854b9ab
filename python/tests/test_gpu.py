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


def test_categorical_training_on_the_gpu_writes_the_cpu_model(device):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    rows = 200_000 if ON_GPU else 2000
    colour = rng.choice([f"c{i}" for i in range(30)], rows)
    shade = rng.integers(0, 300, rows).astype(np.float32)
    x = rng.normal(size=rows).astype(np.float32)
    effect = {f"c{i}": (i * 7 % 11) / 5 - 1 for i in range(30)}
    y = (np.array([effect[c] for c in colour]) + np.sin(shade) + x > 0).astype(np.float32)
    frame = pd.DataFrame({"colour": pd.Categorical(colour), "shade": shade, "x": x})
    params = {"objective": "binary:logistic", "max_depth": 5, "max_cat_threshold": 16}
    models = {}
    for where in ("cpu", device):
        train = tb.DMatrix(frame, label=y, enable_categorical=True, feature_types=["c", "c", "q"])
        models[where] = tb.train(dict(params, device=where), train, 4, verbose_eval=False)
    assert models[device].save_raw() == models["cpu"].save_raw()
    text = bytes(models["cpu"].save_raw("json")).decode()
    assert text.count('"categories_nodes":[') > text.count('"categories_nodes":[]')


def test_a_gpu_that_cannot_be_opened_is_a_device_error(monkeypatch):
    monkeypatch.setenv("PRIMITIVES_DEVICE", "cuda:97")
    X = np.arange(20, dtype=np.float32).reshape(10, 2)
    with pytest.raises(tb.DeviceError, match="device"):
        tb.train({"device": "cuda:97"}, tb.DMatrix(X, label=np.arange(10)), 1, verbose_eval=False)


class HostBackedDeviceArray:
    """A stand-in for a CuPy array on the emulator, whose device memory is host memory: the CUDA
    array interface (version 3) over a NumPy array's buffer."""

    def __init__(self, array, stream=None, mask=None):
        self.array, self.stream, self.mask = array, stream, mask

    @property
    def __cuda_array_interface__(self):
        strides = None if self.array.flags.c_contiguous else self.array.strides
        return {"shape": self.array.shape, "typestr": self.array.dtype.str, "version": 3,
                "data": (self.array.ctypes.data, False), "strides": strides, "stream": self.stream,
                "mask": self.mask}


def device_array(values):
    """``values`` in device memory: a CuPy array on a GPU, host memory the emulator reads."""
    if ON_GPU:
        import cupy
        return cupy.asarray(values)
    return HostBackedDeviceArray(np.ascontiguousarray(values, dtype=np.float32))


def to_host(values):
    return values.get() if hasattr(values, "get") else np.asarray(values)


def test_training_from_a_device_array_reads_it_in_place_and_writes_the_cpu_model(device, higgs):
    (X, y, _), (Xt, yt, _) = higgs
    rows = None if ON_GPU else 1200
    X, y = X[:rows], y[:rows]
    params = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": "logloss"}
    rounds = 30 if ON_GPU else 3
    on_device = tb.DMatrix(device_array(X), label=y)
    assert on_device._handle.on_device() and on_device._handle.reads_in_place()
    assert (on_device.num_row(), on_device.num_col()) == X.shape
    logs = {"cpu": {}, device: {}}
    gpu = tb.train(dict(params, device=device), on_device, rounds, evals=[(on_device, "train")],
                   evals_result=logs[device], verbose_eval=False)
    host = tb.DMatrix(X, label=y)
    cpu = tb.train(dict(params, device="cpu"), host, rounds, evals=[(host, "train")], evals_result=logs["cpu"],
                   verbose_eval=False)
    assert gpu.save_raw() == cpu.save_raw()
    assert logs[device]["train"] == logs["cpu"]["train"]
    # Predicted in place on the GPU, left in device memory; the CPU's values.
    expected = cpu.predict(tb.DMatrix(Xt))
    predictions = gpu.inplace_predict(device_array(Xt))
    assert not isinstance(predictions, np.ndarray)
    assert predictions.shape == (Xt.shape[0],)
    np.testing.assert_array_equal(to_host(predictions), expected)
    margins = gpu.inplace_predict(device_array(Xt), predict_type="margin", iteration_range=(0, 2))
    np.testing.assert_array_equal(to_host(margins), cpu.predict(tb.DMatrix(Xt), output_margin=True,
                                                                iteration_range=(0, 2)))
    # device="cpu" reads the rows back, as XGBoost falls back to a DMatrix.
    gpu.set_param({"device": "cpu"})
    np.testing.assert_array_equal(to_host(gpu.inplace_predict(device_array(Xt))), expected)


def test_multiclass_device_predictions_have_a_column_a_class(device):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32) + (X[:, 1] > 0.5)
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 3}
    cpu = tb.train(params, tb.DMatrix(X, label=y), 3)
    gpu = tb.train(dict(params, device=device), tb.DMatrix(X, label=y), 3)
    predictions = gpu.inplace_predict(device_array(X))
    assert predictions.shape == (300, 3)
    np.testing.assert_array_equal(to_host(predictions), cpu.predict(tb.DMatrix(X)))
    strict = tb.train(dict(params, device=device, objective="binary:logistic", num_class=1),
                      tb.DMatrix(X, label=y > 0), 2).inplace_predict(device_array(X), strict_shape=True)
    assert strict.shape == (300, 1)


def test_bad_device_arrays_are_refused_with_the_reason(device):
    X = np.arange(40, dtype=np.float32).reshape(20, 2)
    booster = tb.train({"device": device}, tb.DMatrix(X, label=np.arange(20) % 2), 1)
    with pytest.raises(tb.DataError, match="2-D"):
        tb.DMatrix(HostBackedDeviceArray(X[:, 0].copy()))
    with pytest.raises(TypeError, match="masked"):
        tb.DMatrix(HostBackedDeviceArray(X, mask=(0, False)))
    with pytest.raises(TypeError, match="not numeric"):
        tb.DMatrix(HostBackedDeviceArray(X.astype("datetime64[s]")))
    with pytest.raises(TypeError, match="float32"):
        tb.DMatrix(HostBackedDeviceArray(X.astype(np.float64)))
    with pytest.raises(tb.DataError, match="features"):
        booster.inplace_predict(device_array(np.ones((3, 5), dtype=np.float32)))
    infinite = X.copy()
    infinite[7, 1] = np.inf
    with pytest.raises(tb.DataError, match="inf"):
        tb.DMatrix(device_array(infinite))
    if ON_GPU:
        # Host memory, or memory freed, described as device memory: the driver does not know it.
        with pytest.raises(tb.DataError, match="device array"):
            tb.DMatrix(HostBackedDeviceArray(X))
        import cupy
        freed = cupy.asarray(X)
        interface = dict(freed.__cuda_array_interface__)
        del freed
        cupy.get_default_memory_pool().free_all_blocks()
        stale = type("Stale", (), {"__cuda_array_interface__": interface})()
        with pytest.raises(tb.DataError, match="device array"):
            tb.DMatrix(stale)


@pytest.mark.skipif(not ON_GPU, reason="PyTorch's CUDA tensors need a CUDA GPU (TWINBOOST_GPU=1)")
def test_pytorch_tensors_of_any_dtype_and_stream_train_and_predict_on_their_gpu():
    import torch

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        # float64 in Fortran order, written on a stream of its own: converted on the device.
        X = torch.randn(6, 3000, dtype=torch.float64, device="cuda", generator=None).T
        y = (X[:, 0] * X[:, 1] > 0).to(torch.float32)
    X_host = X.cpu().numpy()
    params = {"objective": "binary:logistic", "max_depth": 4}
    gpu = tb.train(dict(params, device="cuda"), tb.DMatrix(X, label=y), 10)
    cpu = tb.train(params, tb.DMatrix(X_host, label=y.cpu().numpy()), 10)
    assert gpu.save_raw() == cpu.save_raw()
    predictions = gpu.inplace_predict(X)
    assert isinstance(predictions, torch.Tensor) and predictions.is_cuda and predictions.shape == (3000,)
    np.testing.assert_array_equal(predictions.cpu().numpy(), cpu.predict(tb.DMatrix(X_host)))


def test_a_learning_rate_schedule_on_the_gpu_writes_the_cpus_model(device, higgs):
    (X, y, _), _ = higgs
    rows = None if ON_GPU else 1000
    X, y = X[:rows], y[:rows]
    schedule = [0.5, 0.25, 0.1, 0.05]
    models = [tb.train({"objective": "binary:logistic", "max_depth": 4, "eta": 0.5, "device": where},
                       tb.DMatrix(X, label=y), 4, callbacks=[tb.callback.LearningRateScheduler(schedule)])
              for where in ("cpu", device)]
    assert models[0].save_raw() == models[1].save_raw()


@pytest.mark.skipif(not ON_GPU or int(os.environ.get("TWINBOOST_GPUS", "1")) < 2,
                    reason="needs two CUDA GPUs (TWINBOOST_GPU=1 TWINBOOST_GPUS=2)")
def test_a_device_array_on_a_second_gpu_trains_and_predicts_there(higgs):
    import cupy

    (X, y, _), (Xt, _, _) = higgs
    with cupy.cuda.Device(1):
        X1, Xt1 = cupy.asarray(X), cupy.asarray(Xt)
    params = {"objective": "binary:logistic", "max_depth": 4}
    on_second = tb.train(dict(params, device="cuda:1"), tb.DMatrix(X1, label=y), 10)
    cpu = tb.train(params, tb.DMatrix(X, label=y), 10)
    assert on_second.save_raw() == cpu.save_raw()
    # Rows are predicted on the GPU that holds them, whichever the booster's device names.
    for device in ("cuda:1", "cuda:0"):
        on_second.set_param({"device": device})
        predictions = on_second.inplace_predict(Xt1)
        assert predictions.device.id == 1
        np.testing.assert_array_equal(predictions.get(), cpu.predict(tb.DMatrix(Xt)))


def test_external_memory_pages_on_the_gpu_train_the_cpu_model(device, tmp_path):
    from test_external_memory import Batches, _rows

    X, y, w = _rows(rows=20000 if ON_GPU else 3000)
    params = {"objective": "binary:logistic", "max_depth": 4, "max_bin": 64,
              "sampling_method": "gradient_based", "subsample": 0.2}
    models = {}
    for where in ("cpu", device):
        it = Batches(X, y, w, len(y) // 5, on_host=False, cache_prefix=str(tmp_path / "cache"), min_cache_page_bytes=1)
        pages = tb.ExtMemQuantileDMatrix(it, max_bin=64)
        models[where] = tb.train(dict(params, device=where), pages, 6 if ON_GPU else 3, verbose_eval=False).save_raw()
    assert models[device] == models["cpu"]
    assert len(models["cpu"]) > 5000
