"""train, Booster and the callbacks: the command line's model bytes, continuation, custom
objectives, stopping, Ctrl-C, pickling, shapes."""

import copy
import os
import pickle
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import twinboost as tb
from conftest import DATA

PARAMS = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3, "nthread": 2}


def _train(X, y, rounds=10, params=PARAMS, **kwargs):
    return tb.train(params, tb.DMatrix(X, label=y), rounds, verbose_eval=False, **kwargs)


@pytest.mark.parametrize("sampling", [{}, {"subsample": "0.3", "sampling_method": "gradient_based", "seed": "5"}])
def test_the_model_file_is_the_command_lines(cli, tmp_path, sampling):
    data = DATA / "higgs_lgbm_sample" / "binary.train"
    cli_model, py_model = tmp_path / "cli.json", tmp_path / "py.json"
    subprocess.run([cli, "train", str(data), "--rounds", "15", "-o", str(cli_model), "--verbose-eval", "0",
                    "objective=binary:logistic", "max_depth=5", "eta=0.2", "device=cpu"]
                   + [f"{k}={v}" for k, v in sampling.items()], check=True)
    booster = tb.train({"objective": "binary:logistic", "max_depth": 5, "eta": 0.2, **sampling},
                       tb.DMatrix(str(data)), 15, verbose_eval=False)
    booster.save_model(py_model)
    assert py_model.read_bytes() == cli_model.read_bytes()


def test_numpy_rows_train_the_files_model(higgs):
    (X, y, w), _ = higgs
    from_array = tb.train(PARAMS, tb.DMatrix(X, label=y, weight=w), 10, verbose_eval=False)
    from_file = tb.train(PARAMS, tb.DMatrix(str(DATA / "higgs_lgbm_sample" / "binary.train")), 10, verbose_eval=False)
    assert from_array.save_raw() == from_file.save_raw()
    # float64, Fortran order and a list of rows are the same rows.
    for data in (X.astype(np.float64), np.asfortranarray(X)):
        assert tb.train(PARAMS, tb.DMatrix(data, label=y, weight=w), 10, verbose_eval=False).save_raw() \
            == from_array.save_raw()


def test_sparse_rows_train_the_dense_model(higgs):
    scipy_sparse = pytest.importorskip("scipy.sparse")
    (X, y, _), _ = higgs
    X = X[:2000].copy()
    X[X < 0] = np.nan  # missing in the dense rows, absent in the sparse ones
    csr = scipy_sparse.csr_matrix(np.where(np.isnan(X), 0, X))
    csr.data[csr.data == 0] = 0  # explicit zeros stay present
    dense = _train(X, y[:2000])
    present = ~np.isnan(X)
    sparse = scipy_sparse.csr_matrix((X[present], np.nonzero(present)[1], np.r_[0, np.cumsum(present.sum(1))]),
                                     shape=X.shape)
    assert _train(sparse, y[:2000]).save_raw() == dense.save_raw()
    assert _train(sparse.tocsc(), y[:2000]).save_raw() == dense.save_raw()
    np.testing.assert_array_equal(dense.predict(tb.DMatrix(sparse)), dense.predict(tb.DMatrix(X)))


def test_continued_training_is_one_run(higgs):
    (X, y, _), _ = higgs
    whole = _train(X, y, 12)
    first = _train(X, y, 5)
    assert _train(X, y, 7, xgb_model=first).save_raw() == whole.save_raw()
    assert first.num_boosted_rounds() == 5 and whole.num_boosted_rounds() == 12


def test_a_custom_objective_of_squared_error_is_the_builtins_model(higgs):
    (X, y, _), _ = higgs
    params = {"objective": "reg:squarederror", "max_depth": 4, "nthread": 2}

    def squared_error(predt, dtrain):
        return predt - dtrain.get_label(), np.ones_like(predt)

    builtin = _train(X, y, 8, params)
    custom = _train(X, y, 8, params, obj=squared_error)
    assert custom.save_raw() == builtin.save_raw()


def test_a_callback_stops_training_and_sees_the_model(higgs):
    (X, y, _), _ = higgs
    seen = []

    class StopAtThree(tb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            seen.append((epoch, model.num_boosted_rounds(), model.predict(tb.DMatrix(X[:5])).shape))
            return epoch == 3

    booster = _train(X, y, 50, callbacks=[StopAtThree()])
    assert booster.num_boosted_rounds() == 4
    assert seen == [(e, e + 1, (5,)) for e in range(4)]


def test_a_raising_callback_raises_its_exception(higgs):
    (X, y, _), _ = higgs

    class Fails(tb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            if epoch == 2:
                raise KeyError("from the callback")
            return False

    with pytest.raises(KeyError, match="from the callback"):
        _train(X, y, 10, callbacks=[Fails()])


def test_early_stopping_keeps_the_best_round(higgs):
    (X, y, _), (Xt, yt, _) = higgs
    log = {}
    params = dict(PARAMS, eta=0.8, max_depth=8, eval_metric="logloss")
    booster = _train(X, y, 300, params, evals=[(tb.DMatrix(Xt, label=yt), "test")], early_stopping_rounds=4,
                     evals_result=log)
    losses = log["test"]["logloss"]
    assert booster.best_iteration == int(np.argmin(losses))
    assert len(losses) == booster.best_iteration + 5 == booster.num_boosted_rounds()
    assert booster.best_score == losses[booster.best_iteration]
    # The attributes are saved with the model.
    assert tb.Booster(model_file=booster.save_raw()).best_iteration == booster.best_iteration


def test_ctrl_c_stops_training_with_keyboard_interrupt(higgs):
    (X, y, _), _ = higgs
    # Python's own Ctrl-C handler, whatever the run inherited: a job started in the background
    # by a non-interactive shell starts with SIGINT ignored, so no KeyboardInterrupt could come.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            _train(X, y, 100000, dict(PARAMS, max_depth=8))
        assert time.monotonic() - start < 30
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_pickle_and_copy_keep_the_model(higgs):
    (X, y, _), _ = higgs
    booster = _train(X, y, 5)
    booster.set_attr(note="kept")
    expected = booster.predict(tb.DMatrix(X))
    for other in (pickle.loads(pickle.dumps(booster)), booster.copy(), copy.deepcopy(booster)):
        np.testing.assert_array_equal(other.predict(tb.DMatrix(X)), expected)
        assert other.attr("note") == "kept"


def test_prediction_shapes_and_ranges(higgs):
    (X, y, _), _ = higgs
    booster = _train(X, y, 6)
    d = tb.DMatrix(X[:7])
    assert booster.predict(d).shape == (7,)
    assert booster.predict(d, strict_shape=True).shape == (7, 1)
    assert booster.predict(d, pred_leaf=True).shape == (7, 6)
    assert booster.predict(d, pred_leaf=True, strict_shape=True).shape == (7, 6, 1, 1)
    margins = booster.predict(d, output_margin=True)
    np.testing.assert_allclose(booster.predict(d), 1 / (1 + np.exp(-margins)), rtol=1e-6)
    first = booster.predict(d, output_margin=True, iteration_range=(0, 2))
    rest = booster.predict(d, output_margin=True, iteration_range=(2, 6))
    base = booster.predict(d, output_margin=True, iteration_range=(0, 0))
    assert not np.array_equal(first, base)
    assert rest.shape == first.shape


def test_feature_names_are_saved_and_checked(higgs):
    (X, y, _), _ = higgs
    names = [f"x{i}" for i in range(X.shape[1])]
    booster = tb.train(PARAMS, tb.DMatrix(X, label=y, feature_names=names), 3, verbose_eval=False)
    assert booster.feature_names == names
    assert set(booster.get_score()) <= set(names)
    other = list(reversed(names))
    with pytest.raises(ValueError, match="feature_names mismatch"):
        booster.predict(tb.DMatrix(X, feature_names=other))


def test_multiclass_predictions_are_rows_by_classes():
    rng = np.random.default_rng(7)
    X = rng.random((300, 3), dtype=np.float32)
    y = (X[:, 0] * 3).astype(np.int64).astype(np.float32)
    booster = _train(X, y, 5, {"objective": "multi:softprob", "num_class": 3, "nthread": 2})
    p = booster.predict(tb.DMatrix(X))
    assert p.shape == (300, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1, rtol=1e-5)
    assert (p.argmax(axis=1) == y).mean() > 0.9


def test_qid_gives_the_groups_sizes():
    rng = np.random.default_rng(3)
    X = rng.random((60, 4), dtype=np.float32)
    y = rng.integers(0, 3, 60).astype(np.float32)
    qid = np.repeat([1, 4, 9], [20, 25, 15])
    params = {"objective": "rank:ndcg", "nthread": 2}
    by_qid = tb.train(params, tb.DMatrix(X, label=y, qid=qid), 4, verbose_eval=False)
    by_group = tb.train(params, tb.DMatrix(X, label=y, group=[20, 25, 15]), 4, verbose_eval=False)
    assert by_qid.save_raw() == by_group.save_raw()
    np.testing.assert_array_equal(tb.DMatrix(X, label=y, qid=qid).get_group(), [20, 25, 15])


def _threads():
    return len(os.listdir("/proc/self/task"))


def test_nthread_sizes_a_pool_kept_for_the_booster(higgs):
    (X, y, _), _ = higgs
    booster = tb.train({"max_depth": 3, "nthread": 5}, tb.DMatrix(X[:500], label=y[:500]), 2, verbose_eval=False)
    before = _threads()
    booster.set_param({"nthread": 7})
    expected = booster.predict(tb.DMatrix(X))
    assert _threads() == before + 7, "a pool of 7 threads, made once"
    booster.predict(tb.DMatrix(X))
    assert _threads() == before + 7, "and kept"
    booster.set_param({"nthread": 0})
    np.testing.assert_array_equal(booster.predict(tb.DMatrix(X)), expected)
