"""XGBoost 3.4.1 as the oracle: the same test metrics on shipped data, each library loading the
other's model files with the same predictions, bit for bit."""

import json

import numpy as np
import pytest

import twinboost as tb

PARAMS = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1, "eval_metric": ["logloss", "auc"],
          "tree_method": "hist", "nthread": 2}


def test_higgs_test_metrics_equal_xgboosts(xgb, higgs):
    (X, y, w), (Xt, yt, wt) = higgs
    ours, theirs = {}, {}
    tb.train(PARAMS, tb.DMatrix(X, label=y, weight=w), 30,
             evals=[(tb.DMatrix(Xt, label=yt, weight=wt), "test")], evals_result=ours, verbose_eval=False)
    xgb.train(PARAMS, xgb.DMatrix(X, label=y, weight=w), 30,
              evals=[(xgb.DMatrix(Xt, label=yt, weight=wt), "test")], evals_result=theirs, verbose_eval=False)
    assert list(ours) == list(theirs) == ["test"]
    assert list(ours["test"]) == list(theirs["test"]) == ["logloss", "auc"]
    for metric in ("logloss", "auc"):
        np.testing.assert_allclose(ours["test"][metric], theirs["test"][metric], rtol=1e-6, atol=0)


def test_xgboost_loads_our_model_and_predicts_our_bits(xgb, higgs, tmp_path):
    (X, y, w), (Xt, _, _) = higgs
    booster = tb.train(PARAMS, tb.DMatrix(X, label=y, weight=w), 20, verbose_eval=False)
    path = tmp_path / "ours.json"
    booster.save_model(path)
    theirs = xgb.Booster(model_file=str(path))
    for margin in (False, True):
        ours = booster.predict(tb.DMatrix(Xt), output_margin=margin)
        np.testing.assert_array_equal(ours, theirs.predict(xgb.DMatrix(Xt), output_margin=margin))
    leaves = booster.predict(tb.DMatrix(Xt), pred_leaf=True)
    np.testing.assert_array_equal(leaves, theirs.predict(xgb.DMatrix(Xt), pred_leaf=True))


@pytest.mark.parametrize("objective,num_class", [("multi:softprob", 5), ("reg:squarederror", 0)])
def test_we_load_xgboosts_model_and_predict_its_bits(xgb, higgs, tmp_path, objective, num_class):
    (X, y, _), (Xt, _, _) = higgs
    if num_class:
        y = (np.abs(X[:, 0] * 3).astype(np.int64) % num_class).astype(np.float32)
    params = {"objective": objective, "max_depth": 4, "tree_method": "hist", "nthread": 2}
    if num_class:
        params["num_class"] = num_class
    theirs = xgb.train(params, xgb.DMatrix(X, label=y), 10)
    path = tmp_path / "theirs.json"
    theirs.save_model(str(path))
    ours = tb.Booster(model_file=path)
    expected = theirs.predict(xgb.DMatrix(Xt))
    got = ours.predict(tb.DMatrix(Xt))
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    for strict in (False, True):
        assert ours.predict(tb.DMatrix(Xt), strict_shape=strict).shape == \
            theirs.predict(xgb.DMatrix(Xt), strict_shape=strict).shape
        assert ours.predict(tb.DMatrix(Xt), pred_leaf=True, strict_shape=strict).shape == \
            theirs.predict(xgb.DMatrix(Xt), pred_leaf=True, strict_shape=strict).shape


def test_the_evaluation_log_is_xgboosts_line(xgb, higgs, capsys):
    (X, y, w), (Xt, yt, wt) = higgs
    params = dict(PARAMS, eval_metric="auc")
    tb.train(params, tb.DMatrix(X, label=y), 5, evals=[(tb.DMatrix(Xt, label=yt), "test")], verbose_eval=2)
    ours = capsys.readouterr().out.splitlines()
    xgb.train(params, xgb.DMatrix(X, label=y), 5, evals=[(xgb.DMatrix(Xt, label=yt), "test")], verbose_eval=2)
    theirs = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in ours] == [line.split(":")[0] for line in theirs] == \
        ["[0]\ttest-auc", "[2]\ttest-auc", "[4]\ttest-auc"]
    for a, b in zip(ours, theirs):
        assert abs(float(a.split(":")[1]) - float(b.split(":")[1])) <= 1e-5


def test_early_stopping_matches_xgboosts_rounds(xgb, higgs):
    (X, y, w), (Xt, yt, wt) = higgs
    params = dict(PARAMS, eta=0.6, max_depth=8, eval_metric="logloss")
    ours = tb.train(params, tb.DMatrix(X, label=y), 200, evals=[(tb.DMatrix(Xt, label=yt), "test")],
                    early_stopping_rounds=5, verbose_eval=False)
    theirs = xgb.train(params, xgb.DMatrix(X, label=y), 200, evals=[(xgb.DMatrix(Xt, label=yt), "test")],
                       early_stopping_rounds=5, verbose_eval=False)
    assert ours.best_iteration == theirs.best_iteration
    assert ours.num_boosted_rounds() == theirs.num_boosted_rounds() == ours.best_iteration + 6
    assert ours.best_score == pytest.approx(theirs.best_score, rel=1e-6)


def test_slices_predict_as_xgboosts_slices(xgb, higgs, tmp_path):
    (X, y, w), (Xt, yt, _) = higgs
    booster = tb.train(PARAMS, tb.DMatrix(X, label=y, weight=w), 12, verbose_eval=False)
    booster.set_attr(note="kept", best_iteration="11", best_score="0.5")
    path = tmp_path / "ours.json"
    booster.save_model(path)
    theirs = xgb.Booster(model_file=str(path))
    for index in (slice(2, 8, 2), slice(None, 5), slice(7, None), 3):
        ours_slice, their_slice = booster[index], theirs[index]
        assert ours_slice.num_boosted_rounds() == their_slice.num_boosted_rounds()
        assert ours_slice.attributes() == their_slice.attributes() == {"note": "kept"}
        np.testing.assert_array_equal(ours_slice.predict(tb.DMatrix(Xt), output_margin=True),
                                      their_slice.predict(xgb.DMatrix(Xt), output_margin=True))
    with pytest.raises(IndexError):
        booster[5:13]
    with pytest.raises(ValueError):
        booster[4:4]


def test_save_best_keeps_xgboosts_rounds(xgb, higgs):
    (X, y, _), (Xt, yt, _) = higgs
    params = dict(PARAMS, eta=0.6, max_depth=8, eval_metric="logloss")
    stop = [tb.callback.EarlyStopping(rounds=5, save_best=True)]
    ours = tb.train(params, tb.DMatrix(X, label=y), 200, evals=[(tb.DMatrix(Xt, label=yt), "test")],
                    callbacks=stop, verbose_eval=False)
    theirs = xgb.train(params, xgb.DMatrix(X, label=y), 200, evals=[(xgb.DMatrix(Xt, label=yt), "test")],
                       callbacks=[xgb.callback.EarlyStopping(rounds=5, save_best=True)], verbose_eval=False)
    assert ours.num_boosted_rounds() == theirs.num_boosted_rounds() == ours.best_iteration + 1
    assert ours.best_iteration == theirs.best_iteration


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softmax"])
def test_a_custom_metric_sees_and_logs_what_xgboosts_does(xgb, higgs, objective):
    (X, y, _), (Xt, yt, _) = higgs
    params = {"objective": objective, "max_depth": 3, "nthread": 2, "disable_default_eval_metric": 1}
    if objective == "multi:softmax":
        params["num_class"] = 2

    def mean_prediction(predt, dmatrix):
        assert predt.shape == (dmatrix.num_row(),)
        return "mean-prediction", float(np.mean(predt))

    logs = {}
    for name, lib in (("ours", tb), ("theirs", xgb)):
        logs[name] = {}
        lib.train(params, lib.DMatrix(X, label=y), 5, evals=[(lib.DMatrix(Xt, label=yt), "test")],
                  custom_metric=mean_prediction, evals_result=logs[name], verbose_eval=False)
    assert list(logs["ours"]["test"]) == list(logs["theirs"]["test"]) == ["mean-prediction"]
    np.testing.assert_allclose(logs["ours"]["test"]["mean-prediction"], logs["theirs"]["test"]["mean-prediction"],
                               rtol=1e-6)


def test_a_custom_metric_with_a_custom_objective_sees_margins(xgb, higgs):
    (X, y, _), _ = higgs
    params = {"max_depth": 3, "nthread": 2, "disable_default_eval_metric": 1, "base_score": 0.5}

    def squared_error(predt, dtrain):
        return predt - dtrain.get_label(), np.ones_like(predt)

    def rmse(predt, dmatrix):
        return "my-rmse", float(np.sqrt(np.mean((predt - dmatrix.get_label()) ** 2)))

    logs = {}
    for name, lib in (("ours", tb), ("theirs", xgb)):
        logs[name] = {}
        d = lib.DMatrix(X, label=y)
        lib.train(params, d, 6, evals=[(d, "train")], obj=squared_error, custom_metric=rmse, evals_result=logs[name],
                  verbose_eval=False)
    np.testing.assert_allclose(logs["ours"]["train"]["my-rmse"], logs["theirs"]["train"]["my-rmse"], rtol=1e-6)


def test_a_raising_custom_metric_raises_its_exception(higgs):
    (X, y, _), _ = higgs

    def broken(predt, dmatrix):
        raise LookupError("in the metric")

    d = tb.DMatrix(X, label=y)
    with pytest.raises(LookupError, match="in the metric"):
        tb.train({"nthread": 2}, d, 5, evals=[(d, "train")], custom_metric=broken, verbose_eval=False)


def test_inplace_predict_is_xgboosts(xgb, higgs, tmp_path):
    (X, y, w), (Xt, _, _) = higgs
    booster = tb.train(PARAMS, tb.DMatrix(X, label=y, weight=w), 10, verbose_eval=False)
    path = tmp_path / "ours.json"
    booster.save_model(path)
    theirs = xgb.Booster(model_file=str(path))
    for rows in (Xt[:1], Xt[:1000], Xt.astype(np.float64)):
        for kind in ("value", "margin"):
            np.testing.assert_array_equal(booster.inplace_predict(rows, predict_type=kind),
                                          theirs.inplace_predict(rows, predict_type=kind))
    np.testing.assert_array_equal(booster.inplace_predict(Xt, iteration_range=(2, 7), strict_shape=True),
                                  theirs.inplace_predict(Xt, iteration_range=(2, 7), strict_shape=True))


def test_a_quantile_dmatrix_trains_xgboosts_quantile_dmatrix_model(xgb, higgs):
    (X, y, w), (Xt, yt, _) = higgs
    logs = {}
    for name, lib in (("ours", tb), ("theirs", xgb)):
        dtrain = lib.QuantileDMatrix(X, label=y, weight=w, max_bin=64)
        dtest = lib.QuantileDMatrix(Xt, label=yt, ref=dtrain, max_bin=64)
        logs[name] = {}
        lib.train({"objective": "binary:logistic", "eval_metric": "auc", "nthread": 2, "max_bin": 64}, dtrain, 10,
                  evals=[(dtest, "test")], evals_result=logs[name], verbose_eval=False)
    np.testing.assert_allclose(logs["ours"]["test"]["auc"], logs["theirs"]["test"]["auc"], rtol=1e-6)
    with pytest.raises(tb.ParameterError, match="max_bin"):
        tb.train({"max_bin": 32}, tb.QuantileDMatrix(X, label=y, max_bin=64), 1, verbose_eval=False)


def test_a_custom_metric_of_several_pairs_logs_them_as_xgboost(xgb, higgs):
    (X, y, _), (Xt, yt, _) = higgs

    def moments(predt, dmatrix):
        return [("mean", float(np.mean(predt))), ("spread", float(np.std(predt)))]

    logs = {}
    for name, lib in (("ours", tb), ("theirs", xgb)):
        logs[name] = {}
        d, dt = lib.DMatrix(X, label=y), lib.DMatrix(Xt, label=yt)
        lib.train({"objective": "binary:logistic", "eval_metric": "logloss", "max_depth": 3, "nthread": 2}, d, 4,
                  evals=[(d, "train"), (dt, "test")], custom_metric=moments, evals_result=logs[name],
                  verbose_eval=False)
    for data in ("train", "test"):
        assert list(logs["ours"][data]) == list(logs["theirs"][data]) == ["logloss", "mean", "spread"]
        for metric in ("logloss", "mean", "spread"):
            np.testing.assert_allclose(logs["ours"][data][metric], logs["theirs"][data][metric], rtol=1e-5)


def test_a_learning_rate_schedule_trains_xgboosts_model(xgb, higgs):
    (X, y, w), (Xt, yt, wt) = higgs
    rates = [0.3 * 0.8 ** epoch for epoch in range(20)]
    ours, theirs = {}, {}
    booster = tb.train(PARAMS, tb.DMatrix(X, label=y, weight=w), 20, evals=[(tb.DMatrix(Xt, label=yt, weight=wt), "test")],
                       evals_result=ours, verbose_eval=False,
                       callbacks=[tb.callback.LearningRateScheduler(lambda epoch: rates[epoch])])
    reference = xgb.train(PARAMS, xgb.DMatrix(X, label=y, weight=w), 20,
                          evals=[(xgb.DMatrix(Xt, label=yt, weight=wt), "test")], evals_result=theirs,
                          verbose_eval=False, callbacks=[xgb.callback.LearningRateScheduler(rates)])
    for metric in ("logloss", "auc"):
        np.testing.assert_allclose(ours["test"][metric], theirs["test"][metric], rtol=1e-6, atol=0)
    np.testing.assert_allclose(booster.predict(tb.DMatrix(Xt)), reference.predict(xgb.DMatrix(Xt)), rtol=1e-5)
    # Not a constant rate: the schedule changed the model.
    plain = tb.train(PARAMS, tb.DMatrix(X, label=y, weight=w), 20, verbose_eval=False)
    assert plain.save_raw() != booster.save_raw()


def test_only_the_learning_rate_changes_during_training(higgs):
    (X, y, _), _ = higgs

    class SetDepth(tb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            model.set_param("max_depth", 3)

    with pytest.raises(tb.ParameterError, match="max_depth"):
        tb.train(PARAMS, tb.DMatrix(X[:500], label=y[:500]), 3, callbacks=[SetDepth()], verbose_eval=False)
    with pytest.raises(tb.ParameterError, match="learning_rate"):
        tb.train(PARAMS, tb.DMatrix(X[:500], label=y[:500]), 3, verbose_eval=False,
                 callbacks=[tb.callback.LearningRateScheduler(lambda epoch: -1.0)])


def test_text_file_uris_read_as_xgboosts(xgb, tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 4)).round(3)
    y = (X[:, 0] > 0).astype(float)
    csv = tmp_path / "rows.csv"
    np.savetxt(csv, np.column_stack([y, X]), delimiter=",", fmt="%.3f")
    libsvm = tmp_path / "rows.txt"
    libsvm.write_text("".join(f"{int(t)} " + " ".join(f"{j}:{v}" for j, v in enumerate(row) if v > -0.5) + "\n"
                              for t, row in zip(y, X)))
    # XGBoost 3.1 deprecated text input (it warns) but reads it as before.
    for uri in (f"{csv}?format=csv&label_column=0", f"{csv}?format=csv", f"{libsvm}?format=libsvm"):
        ours, theirs = tb.DMatrix(uri), xgb.DMatrix(uri)
        assert (ours.num_row(), ours.num_col()) == (theirs.num_row(), theirs.num_col()), uri
        np.testing.assert_array_equal(ours.get_label(), theirs.get_label())
        if theirs.get_label().size:
            params = {"objective": "binary:logistic", "max_depth": 3}
            np.testing.assert_allclose(tb.train(params, ours, 3).predict(ours),
                                       xgb.train(params, theirs, 3).predict(theirs), rtol=1e-6)
    with pytest.raises(tb.DataError, match="weight_column"):
        tb.DMatrix(f"{csv}?format=csv&weight_column=1")
    with pytest.raises(tb.DataError, match="format"):
        tb.DMatrix(f"{csv}?format=parquet")
    with pytest.raises(NotImplementedError, match="cache"):
        tb.DMatrix(f"{libsvm}?format=libsvm#rows.cache")


def test_we_load_xgboosts_categorical_model_and_predict_its_bits(xgb, tmp_path):
    rng = np.random.default_rng(11)
    n = 2000
    X = np.column_stack([rng.integers(0, 40, n), rng.integers(0, 3, n), rng.normal(size=n)]).astype(np.float32)
    X[rng.random(n) < 0.05, 0] = np.nan
    effect = rng.normal(size=40)
    y = (effect[np.nan_to_num(X[:, 0]).astype(int)] + X[:, 1] + X[:, 2] > 0.5).astype(np.float32)
    types = ["c", "c", "q"]
    theirs = xgb.train({"objective": "binary:logistic", "max_depth": 5, "max_cat_to_onehot": 4},
                       xgb.DMatrix(X, y, feature_types=types, enable_categorical=True), 20)
    path = tmp_path / "categorical.json"
    theirs.save_model(path)
    ours = tb.Booster(model_file=str(path))
    rows = X.copy()
    rows[:5, 0] = [45, -3, 7.5, 1e9, np.nan]  # unseen, negative, fractional, huge, missing
    expected = theirs.predict(xgb.DMatrix(rows, feature_types=types, enable_categorical=True), output_margin=True)
    np.testing.assert_array_equal(ours.inplace_predict(rows, predict_type="margin"), expected)
    ours.save_model(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    with pytest.raises(tb.ParameterError, match="categorical"):
        tb.train({"objective": "binary:logistic"}, tb.DMatrix(X, label=y), 1, xgb_model=ours)


def test_we_train_xgboosts_categorical_trees(xgb, tmp_path):
    rng = np.random.default_rng(12)
    n = 3000
    X = np.column_stack([rng.integers(0, 50, n), rng.integers(0, 3, n), rng.normal(size=n)]).astype(np.float32)
    X[rng.random(n) < 0.05, 0] = np.nan
    effect = rng.normal(size=50)
    y = (effect[np.nan_to_num(X[:, 0]).astype(int)] + X[:, 1] + X[:, 2] > 0.5).astype(np.float32)
    types = ["c", "c", "q"]
    params = {"objective": "binary:logistic", "max_depth": 4, "max_cat_to_onehot": 4, "max_cat_threshold": 16}
    theirs = xgb.train(params, xgb.DMatrix(X, y, feature_types=types, enable_categorical=True), 10)
    d = tb.DMatrix(X, label=y, feature_types=types, enable_categorical=True)
    assert d.feature_types == types
    ours = tb.train(params, d, 10)
    assert ours.feature_types == types
    theirs.save_model(tmp_path / "theirs.json")
    ours.save_model(tmp_path / "ours.json")
    trees = [json.loads((tmp_path / f).read_text())["learner"]["gradient_booster"]["model"]["trees"]
             for f in ("theirs.json", "ours.json")]
    for a, b in zip(*trees):
        for key in ("split_indices", "split_type", "default_left", "categories_nodes", "categories"):
            assert a[key] == b[key], key
    rows = X.copy()
    rows[:4, 0] = [55, -3, 7.5, np.nan]  # unseen, negative, fractional, missing
    np.testing.assert_allclose(ours.predict(tb.DMatrix(rows, feature_types=types)),
                               theirs.predict(xgb.DMatrix(rows, feature_types=types, enable_categorical=True)),
                               rtol=1e-5)
    with pytest.raises(tb.ParameterError, match="feature_types"):
        tb.DMatrix(X, feature_types=["c", "x", "q"])
    X[7, 0] = 2.5
    with pytest.raises(tb.DataError, match="row 7, feature 0"):
        tb.train(params, tb.DMatrix(X, label=y, feature_types=types), 1)


def test_pandas_categories_train_xgboosts_trees_and_models_keep_their_strings(xgb, tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(13)
    n = 2000
    colors = np.array(["red", "green", "blue", "teal", "gold", "café"])
    frame = pd.DataFrame({
        "color": pd.Categorical(rng.choice(colors, n)),
        "x": rng.normal(size=n).astype(np.float32),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L", "XL"]),
    })
    frame.loc[rng.random(n) < 0.05, "color"] = None
    y = ((frame["color"] == "red") | (frame["color"] == "café")).astype(np.float32) + frame["x"] \
        + (frame["size"] == "L")
    params = {"objective": "reg:squarederror", "max_depth": 3}
    theirs = xgb.train(params, xgb.DMatrix(frame, y, enable_categorical=True), 5)
    ours = tb.train(params, tb.DMatrix(frame, label=y, enable_categorical=True), 5)
    theirs.save_model(tmp_path / "theirs.json")
    ours.save_model(tmp_path / "ours.json")
    load = lambda f: json.loads((tmp_path / f).read_text())["learner"]["gradient_booster"]["model"]
    assert load("ours.json")["cats"] == load("theirs.json")["cats"]
    for a, b in zip(load("theirs.json")["trees"], load("ours.json")["trees"]):
        assert (a["split_indices"], a["categories"]) == (b["split_indices"], b["categories"])
    # Rows whose categories are coded otherwise (fewer of them, another order) are recoded.
    rows = pd.DataFrame({"color": pd.Categorical(["café", "blue", None], categories=["gold", "café", "blue"]),
                         "x": np.zeros(3, dtype=np.float32), "size": pd.Categorical(["L", "S", "XL"])})
    expected = theirs.predict(xgb.DMatrix(rows, enable_categorical=True))
    np.testing.assert_allclose(ours.predict(tb.DMatrix(rows, enable_categorical=True)), expected, rtol=1e-6)
    np.testing.assert_allclose(ours.inplace_predict(rows), expected, rtol=1e-6)
    # Each library's file in the other, predicting the same.
    np.testing.assert_allclose(tb.Booster(model_file=str(tmp_path / "theirs.json")).inplace_predict(rows), expected,
                               rtol=1e-6)
    mine = xgb.Booster(model_file=str(tmp_path / "ours.json"))
    np.testing.assert_allclose(mine.inplace_predict(rows), ours.inplace_predict(rows), rtol=1e-6)
    # An evaluation set of categories in another order is recoded too, as XGBoost does.
    valid = frame.iloc[:300].copy()
    valid["color"] = valid["color"].cat.reorder_categories(list(reversed(valid["color"].cat.categories)))
    logs = [{}, {}]
    xgb.train(params, xgb.DMatrix(frame, y, enable_categorical=True), 3, verbose_eval=False, evals_result=logs[0],
              evals=[(xgb.DMatrix(valid, y[:300], enable_categorical=True), "valid")])
    tb.train(params, tb.DMatrix(frame, label=y, enable_categorical=True), 3, verbose_eval=False, evals_result=logs[1],
             evals=[(tb.DMatrix(valid, label=y[:300], enable_categorical=True), "valid")])
    np.testing.assert_allclose(logs[1]["valid"]["rmse"], logs[0]["valid"]["rmse"], rtol=1e-6)
    unseen = pd.DataFrame({"color": pd.Categorical(["mauve"]), "x": [0.0], "size": pd.Categorical(["S"])})
    with pytest.raises(tb.DataError, match="mauve"):
        ours.inplace_predict(unseen)


def test_pandas_integer_categories_are_xgboosts_both_ways(xgb, tmp_path):
    """Categories of an integer dtype: XGBoost's typed integers in the model's encoder, the same
    trees, each library's file predicting in the other, rows listing the categories in another
    order recoded by value."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(21)
    n = 2000
    zips = np.array([7, 1200, 55, 31000, 902, 4], dtype=np.int32)
    frame = pd.DataFrame({"zip": pd.Categorical(rng.choice(zips, n)), "x": rng.normal(size=n).astype(np.float32),
                          "floor": pd.Categorical(rng.integers(-2, 3, n).astype(np.int8))})
    y = frame["zip"].isin([55, 4]).astype(np.float32) + frame["x"] + (frame["floor"] == -1)
    params = {"objective": "reg:squarederror", "max_depth": 3}
    theirs = xgb.train(params, xgb.DMatrix(frame, y, enable_categorical=True), 5)
    ours = tb.train(params, tb.DMatrix(frame, label=y, enable_categorical=True), 5)
    theirs.save_model(tmp_path / "theirs.json")
    ours.save_model(tmp_path / "ours.json")
    load = lambda f: json.loads((tmp_path / f).read_text())["learner"]["gradient_booster"]["model"]
    assert load("ours.json")["cats"] == load("theirs.json")["cats"]
    assert [c.get("type") for c in load("ours.json")["cats"]["enc"]] == [13, None, 9]
    for a, b in zip(load("theirs.json")["trees"], load("ours.json")["trees"]):
        assert (a["split_indices"], a["categories"]) == (b["split_indices"], b["categories"])
    rows = pd.DataFrame({"zip": pd.Categorical([55, 7, None], categories=np.array([55, 902, 7], dtype=np.int32)),
                         "x": np.zeros(3, dtype=np.float32),
                         "floor": pd.Categorical(np.array([-1, 2, 0], dtype=np.int8))})
    expected = theirs.predict(xgb.DMatrix(rows, enable_categorical=True))
    np.testing.assert_allclose(ours.inplace_predict(rows), expected, rtol=1e-6)
    np.testing.assert_allclose(tb.Booster(model_file=str(tmp_path / "theirs.json")).inplace_predict(rows), expected,
                               rtol=1e-6)
    mine = xgb.Booster(model_file=str(tmp_path / "ours.json"))
    np.testing.assert_allclose(mine.inplace_predict(rows), ours.inplace_predict(rows), rtol=1e-6)


def test_ordered_target_statistics_models_are_ours_and_xgboost_refuses_them(xgb, tmp_path):
    """CatBoost's ordered target statistics (``categorical_encoding="ordered_target"``): a
    high-cardinality pandas column becomes numbers a category, the model file keeps them under its
    own booster name, which XGBoost refuses to load rather than predict from raw codes."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    n = 3000
    city = rng.integers(0, 300, n)
    effect = rng.normal(size=300)
    frame = pd.DataFrame({"city": pd.Categorical([f"c{k}" for k in city]), "x": rng.normal(size=n)})
    y = (effect[city] + 0.5 * frame["x"] + rng.normal(scale=0.5, size=n) > 0).astype(np.float32)
    params = {"objective": "binary:logistic", "max_depth": 4, "categorical_encoding": "ordered_target"}
    booster = tb.train(params, tb.DMatrix(frame[:2000], label=y[:2000], enable_categorical=True), 20)
    path = tmp_path / "ordered.json"
    booster.save_model(path)
    saved = json.loads(path.read_text())["learner"]["gradient_booster"]
    assert saved["name"] == "gbtree_target_statistics"
    assert [f["feature"] for f in saved["target_statistics"]["features"]] == [0]
    with pytest.raises(xgb.core.XGBoostError, match="gbtree_target_statistics"):
        xgb.Booster(model_file=str(path))
    held_out = tb.DMatrix(frame[2000:], label=y[2000:], enable_categorical=True)
    p = booster.predict(held_out)
    np.testing.assert_array_equal(tb.Booster(model_file=str(path)).predict(held_out), p)
    # The cities' effects are learnt: held-out AUC well above the numeric feature's alone.
    without_city = tb.train({**params, "categorical_encoding": "native"},
                            tb.DMatrix(frame[["x"]][:2000], label=y[:2000]), 20)
    auc = lambda q: _auc(y[2000:], q)
    assert auc(p) > auc(without_city.predict(tb.DMatrix(frame[["x"]][2000:]))) + 0.1


def _auc(y, p):
    """The probability that a positive row scores above a negative one (ties count half)."""
    pos, neg = p[y == 1], p[y == 0]
    return ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (len(pos) * len(neg))


def test_scikit_learn_estimators_take_pandas_categories_as_xgboosts(xgb):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(14)
    n = 1500
    frame = pd.DataFrame({"shop": pd.Categorical(rng.choice(["north", "south", "east", "west", "hub"], n)),
                          "x": rng.normal(size=n)})
    y = ((frame["shop"] == "hub") | (frame["x"] > 0.8)).astype(int).to_numpy()
    kwargs = {"n_estimators": 8, "max_depth": 3, "enable_categorical": True, "max_cat_to_onehot": 2}
    theirs = xgb.XGBClassifier(**kwargs).fit(frame, y)
    ours = tb.XGBClassifier(**kwargs).fit(frame, y)
    assert list(ours.feature_names_in_) == ["shop", "x"]
    rows = frame.iloc[:50].copy()
    rows["shop"] = rows["shop"].cat.reorder_categories(["west", "hub", "north", "south", "east"])
    np.testing.assert_allclose(ours.predict_proba(rows), theirs.predict_proba(rows), rtol=1e-6)
    with pytest.raises(ValueError, match="enable_categorical"):
        tb.XGBRegressor(n_estimators=2).fit(frame, y)


@pytest.mark.parametrize("objective,extra", [("reg:gamma", {}), ("reg:tweedie", {"tweedie_variance_power": 1.3}),
                                             ("reg:squaredlogerror", {}), ("binary:hinge", {}),
                                             ("reg:absoluteerror", {}),
                                             ("reg:quantileerror", {"quantile_alpha": [0.1, 0.5, 0.9]}),
                                             ("reg:expectileerror", {"expectile_alpha": [0.1, 0.5, 0.9]}),
                                             ("survival:cox", {})])
def test_models_of_xgboost_3_4_objectives_go_both_ways(xgb, higgs, tmp_path, objective, extra):
    (X, y, _), (Xt, yt, _) = higgs
    if objective != "binary:hinge":
        # Positive targets that depend on the features.
        y, yt = (np.abs(M[:, 0] * 2 + M[:, 3]) + 0.25 for M in (X, Xt))
    if objective == "survival:cox":
        # Survival times, a third of them censored (negative), ties included (rounded times).
        y, yt = (np.round(t, 1) * np.where(np.arange(len(t)) % 3 == 0, -1, 1) for t in (y, yt))
    params = {"objective": objective, "max_depth": 4, "tree_method": "hist", "nthread": 2, **extra}
    ours_log, theirs_log = {}, {}
    ours = tb.train(params, tb.DMatrix(X, label=y), 10, evals=[(tb.DMatrix(Xt, label=yt), "test")],
                    evals_result=ours_log, verbose_eval=False)
    theirs = xgb.train(params, xgb.DMatrix(X, label=y), 10, evals=[(xgb.DMatrix(Xt, label=yt), "test")],
                       evals_result=theirs_log, verbose_eval=False)
    assert list(ours_log["test"]) == list(theirs_log["test"])
    for metric, values in theirs_log["test"].items():
        np.testing.assert_allclose(ours_log["test"][metric], values, rtol=1e-6, atol=0)
    ours.save_model(tmp_path / "ours.json")
    theirs.save_model(str(tmp_path / "theirs.json"))
    loaded_by_xgboost = xgb.Booster(model_file=str(tmp_path / "ours.json"))
    loaded_by_us = tb.Booster(model_file=tmp_path / "theirs.json")
    for margin in (False, True):
        np.testing.assert_array_equal(loaded_by_xgboost.predict(xgb.DMatrix(Xt), output_margin=margin),
                                      ours.predict(tb.DMatrix(Xt), output_margin=margin))
        np.testing.assert_array_equal(loaded_by_us.predict(tb.DMatrix(Xt), output_margin=margin),
                                      theirs.predict(xgb.DMatrix(Xt), output_margin=margin))


def _intervals(t):
    """Survival intervals around times ``t``: events, right-, left- and interval-censored rows."""
    kind = np.arange(len(t)) % 4
    lower = np.where(kind == 2, 0.0, t).astype(np.float32)
    upper = np.select([kind == 0, kind == 1, kind == 2], [t, np.inf, t], 2 * t).astype(np.float32)
    return lower, upper


@pytest.mark.parametrize("distribution,scale", [("normal", 1.0), ("logistic", 0.7), ("extreme", 1.3)])
def test_aft_models_are_xgboosts_both_ways(xgb, higgs, tmp_path, distribution, scale):
    (X, _, w), (Xt, _, _) = higgs
    t, tt = (np.abs(M[:, 0] * 2 + M[:, 3]) + 0.25 for M in (X, Xt))
    params = {"objective": "survival:aft", "aft_loss_distribution": distribution,
              "aft_loss_distribution_scale": scale, "max_depth": 4, "tree_method": "hist", "nthread": 2,
              "eval_metric": ["aft-nloglik", "interval-regression-accuracy"]}
    logs = []
    for lib in (tb, xgb):
        # XGBoost's way: no labels, the bounds set one at a time (ours also as arguments).
        train, test = lib.DMatrix(X, weight=w), lib.DMatrix(Xt)
        for d, times in ((train, t), (test, tt)):
            lower, upper = _intervals(times)
            d.set_float_info("label_lower_bound", lower)
            d.set_float_info("label_upper_bound", upper)
        logs.append({})
        model = lib.train(params, train, 10, evals=[(test, "test")], evals_result=logs[-1], verbose_eval=False)
        model.save_model(str(tmp_path / f"{lib.__name__}.json"))
    ours, theirs = logs
    assert list(ours["test"]) == list(theirs["test"])
    for metric, values in theirs["test"].items():
        np.testing.assert_allclose(ours["test"][metric], values, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(tb.DMatrix(Xt, label_lower_bound=_intervals(tt)[0],
                                             label_upper_bound=_intervals(tt)[1]).get_float_info("label_upper_bound"),
                                  _intervals(tt)[1])
    ours_model, theirs_model = tb.Booster(model_file=tmp_path / "twinboost.json"), xgb.Booster(model_file=str(tmp_path / "xgboost.json"))
    by_xgboost = xgb.Booster(model_file=str(tmp_path / "twinboost.json"))
    by_us = tb.Booster(model_file=tmp_path / "xgboost.json")
    for margin in (False, True):
        np.testing.assert_array_equal(by_xgboost.predict(xgb.DMatrix(Xt), output_margin=margin),
                                      ours_model.predict(tb.DMatrix(Xt), output_margin=margin))
        np.testing.assert_array_equal(by_us.predict(tb.DMatrix(Xt), output_margin=margin),
                                      theirs_model.predict(xgb.DMatrix(Xt), output_margin=margin))


def test_aft_names_bad_intervals(higgs):
    (X, _, _), _ = higgs
    lower = np.ones(len(X), dtype=np.float32)
    upper = lower.copy()
    upper[7] = 0.5
    with pytest.raises(tb.DataError, match="row 7: label_lower_bound 1, label_upper_bound 0.5"):
        tb.DMatrix(X, label_lower_bound=lower, label_upper_bound=upper)
    with pytest.raises(tb.DataError, match="needs label_lower_bound"):
        tb.train({"objective": "survival:aft"}, tb.DMatrix(X, label=lower), 1)
    with pytest.raises(tb.ParameterError, match="aft_loss_distribution"):
        tb.train({"objective": "survival:aft", "aft_loss_distribution": "weibull"},
                 tb.DMatrix(X, label_lower_bound=lower, label_upper_bound=lower), 1)


def test_ubjson_models_go_both_ways_byte_for_byte(xgb, higgs, tmp_path):
    (X, y, _), (Xt, _, _) = higgs
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 4, "nthread": 2}
    y3 = (np.abs(X[:, 0] * 3).astype(np.int64) % 3).astype(np.float32)
    theirs = xgb.train(params, xgb.DMatrix(X, label=y3), 5)
    theirs.save_model(str(tmp_path / "theirs.ubj"))
    loaded = tb.Booster(model_file=tmp_path / "theirs.ubj")
    np.testing.assert_array_equal(loaded.predict(tb.DMatrix(Xt)), theirs.predict(xgb.DMatrix(Xt)))
    # Written back, it is XGBoost's file byte for byte (the same typed arrays and integer widths).
    assert bytes(loaded.save_raw("ubj")) == bytes(theirs.save_raw("ubj"))
    assert bytes(loaded.save_raw("json")) == bytes(theirs.save_raw("json"))
    ours = tb.train(params, tb.DMatrix(X, label=y3), 5)
    ours.save_model(tmp_path / "ours.ubj")
    assert (tmp_path / "ours.ubj").read_bytes()[:2] == b"{L"
    by_xgboost = xgb.Booster(model_file=str(tmp_path / "ours.ubj"))
    np.testing.assert_array_equal(by_xgboost.predict(xgb.DMatrix(Xt)), ours.predict(tb.DMatrix(Xt)))
    assert bytes(by_xgboost.save_raw("ubj")) == bytes(ours.save_raw("ubj"))
    # The bytes of save_raw load too.
    np.testing.assert_array_equal(tb.Booster(model_file=ours.save_raw()).predict(tb.DMatrix(Xt)),
                                  ours.predict(tb.DMatrix(Xt)))


def test_categorical_ubjson_models_are_xgboosts_bytes(xgb, tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.normal(size=500).astype(np.float32),
                          "s": pd.Categorical(rng.choice(["x", "yy", "zzz", "w"], 500)),
                          "i": pd.Categorical(rng.choice([3, 40, 700], 500))})
    y = ((frame["s"] == "yy") ^ (frame["a"] > 0)).astype(np.float32)
    theirs = xgb.train({"objective": "binary:logistic", "max_depth": 3, "max_cat_to_onehot": 2},
                       xgb.DMatrix(frame, label=y, enable_categorical=True), 4)
    theirs.save_model(str(tmp_path / "theirs.ubj"))
    loaded = tb.Booster(model_file=tmp_path / "theirs.ubj")
    assert bytes(loaded.save_raw("ubj")) == bytes(theirs.save_raw("ubj"))
    np.testing.assert_array_equal(loaded.predict(tb.DMatrix(frame, enable_categorical=True)),
                                  theirs.predict(xgb.DMatrix(frame, enable_categorical=True)))


@pytest.mark.parametrize("dump_format", ["text", "json"])
@pytest.mark.parametrize("with_stats", [False, True])
def test_dumps_are_xgboosts_character_for_character(xgb, tmp_path, dump_format, with_stats):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(9)
    frame = pd.DataFrame({"size": rng.normal(size=400).astype(np.float32),
                          "flag": rng.integers(0, 2, 400).astype(np.float32),
                          "count": rng.integers(0, 9, 400).astype(np.float32),
                          "colour": pd.Categorical(rng.choice(["red", "blue", "green"], 400))})
    y = (frame["size"] + frame["flag"] + (frame["colour"] == "red") > 1).astype(np.float32)
    theirs = xgb.train({"objective": "binary:logistic", "max_depth": 3, "max_cat_to_onehot": 1},
                       xgb.DMatrix(frame, label=y, enable_categorical=True), 3)
    theirs.save_model(str(tmp_path / "m.json"))
    ours = tb.Booster(model_file=tmp_path / "m.json")
    assert ours.get_dump(with_stats=with_stats, dump_format=dump_format) == \
        theirs.get_dump(with_stats=with_stats, dump_format=dump_format)
    # A feature map names and types the features: an indicator, an integer, the categories.
    fmap = tmp_path / "fmap.txt"
    fmap.write_text("0 size q\n1 flag i\n2 count int\n3 colour c\n")
    assert ours.get_dump(str(fmap), with_stats, dump_format) == theirs.get_dump(str(fmap), with_stats, dump_format)
    ours.dump_model(tmp_path / "ours.txt", str(fmap), with_stats, dump_format)
    theirs.dump_model(str(tmp_path / "theirs.txt"), str(fmap), with_stats, dump_format)
    assert (tmp_path / "ours.txt").read_text() == (tmp_path / "theirs.txt").read_text()


def test_the_command_line_dumps_as_xgboosts_dump_model(xgb, cli, higgs, tmp_path):
    import subprocess
    (X, y, _), _ = higgs
    theirs = xgb.train({"objective": "binary:logistic", "max_depth": 3}, xgb.DMatrix(X, label=y), 2)
    theirs.save_model(str(tmp_path / "m.ubj"))
    theirs.dump_model(str(tmp_path / "theirs.json"), with_stats=True, dump_format="json")
    subprocess.run([cli, "dump", str(tmp_path / "m.ubj"), "--format", "json", "--with-stats",
                    "--output", str(tmp_path / "ours.json")], check=True)
    assert (tmp_path / "ours.json").read_text() == (tmp_path / "theirs.json").read_text()


@pytest.mark.parametrize("constraints", [
    {"monotone_constraints": {"f0": 1, "f3": -1, "f5": 1}},
    {"monotone_constraints": (1, 0, 0, -1), "grow_policy": "lossguide", "max_leaves": 15},
    {"interaction_constraints": [["f0", "f1", "f2"], ["f3", "f4"], ["f2", "f5"]]},
    {"interaction_constraints": "[[0, 1], [2, 3, 4, 5]]", "monotone_constraints": "(1,0,0,-1)"},
])
def test_constraints_build_xgboosts_trees(xgb, higgs, constraints):
    (X, y, _), (Xt, yt, _) = higgs
    names = [f"f{i}" for i in range(X.shape[1])]
    params = {"objective": "binary:logistic", "max_depth": 4, "tree_method": "hist", "nthread": 2, **constraints}
    ours_log, theirs_log = {}, {}
    ours = tb.train(params, tb.DMatrix(X, label=y, feature_names=names), 10,
                    evals=[(tb.DMatrix(Xt, label=yt, feature_names=names), "test")], evals_result=ours_log,
                    verbose_eval=False)
    theirs = xgb.train(params, xgb.DMatrix(X, label=y, feature_names=names), 10,
                       evals=[(xgb.DMatrix(Xt, label=yt, feature_names=names), "test")], evals_result=theirs_log,
                       verbose_eval=False)
    np.testing.assert_allclose(ours_log["test"]["logloss"], theirs_log["test"]["logloss"], rtol=1e-6, atol=0)
    np.testing.assert_allclose(ours.predict(tb.DMatrix(Xt, feature_names=names)),
                               theirs.predict(xgb.DMatrix(Xt, feature_names=names)), rtol=1e-5, atol=1e-7)
    monotone = constraints.get("monotone_constraints")
    if isinstance(monotone, dict):
        # Moving one constrained feature up moves every prediction its way.
        for name, direction in monotone.items():
            f = names.index(name)
            low, high = Xt.copy(), Xt.copy()
            low[:, f], high[:, f] = np.min(X[:, f]), np.max(X[:, f])
            p_low, p_high = (ours.predict(tb.DMatrix(M, feature_names=names), output_margin=True) for M in (low, high))
            assert np.all(direction * (p_high - p_low) >= 0)


def test_constraints_name_what_is_wrong(higgs):
    (X, y, _), _ = higgs
    d = tb.DMatrix(X, label=y, feature_names=[f"f{i}" for i in range(X.shape[1])])
    for params, named in [({"monotone_constraints": {"nope": 1}}, "nope"),
                          ({"interaction_constraints": [["f0", "nope"]]}, "nope"),
                          ({"monotone_constraints": tuple([1] * (X.shape[1] + 1))}, "monotone_constraints"),
                          ({"monotone_constraints": "(1,2)"}, "monotone_constraints"),
                          ({"interaction_constraints": [[0, X.shape[1]]]}, "interaction_constraints")]:
        with pytest.raises(tb.ParameterError, match=named):
            tb.train(params, d, 1)


def test_feature_weights_choose_the_columns_as_xgboosts(xgb, higgs):
    (X, y, _), _ = higgs
    weights = np.zeros(X.shape[1], dtype=np.float32)
    weights[[1, 4, 6]] = [1.0, 2.0, 3.0]
    # Three features a node: only the three with weight.
    params = {"objective": "binary:logistic", "max_depth": 3, "colsample_bynode": 0.11, "nthread": 2}
    ours = tb.train(params, tb.DMatrix(X, label=y, feature_weights=weights), 5)
    theirs = xgb.train(params, xgb.DMatrix(X, label=y, feature_weights=weights), 5)
    allowed = {"f1", "f4", "f6"}
    assert set(ours.get_score(importance_type="weight")) == allowed
    assert set(theirs.get_score(importance_type="weight")) == allowed
    model = tb.XGBClassifier(n_estimators=5, max_depth=3, colsample_bytree=0.11, feature_weights=weights)
    used = set(model.fit(X, y).get_booster().get_score(importance_type="weight"))
    assert used and used <= allowed
    with pytest.raises(tb.DataError, match="feature weight"):
        tb.DMatrix(X, label=y, feature_weights=-weights - 1)
    with pytest.raises(tb.DataError, match="feature weights for"):
        tb.DMatrix(X, label=y, feature_weights=weights[:3])


def test_random_forests_go_both_ways(xgb, higgs, tmp_path):
    (X, y, _), (Xt, yt, _) = higgs
    params = {"objective": "binary:logistic", "num_parallel_tree": 4, "subsample": 0.8, "colsample_bynode": 0.8,
              "eta": 1.0, "max_depth": 5, "nthread": 2, "eval_metric": "logloss"}
    ours_log, theirs_log = {}, {}
    ours = tb.train(params, tb.DMatrix(X, label=y), 3, evals=[(tb.DMatrix(Xt, label=yt), "test")],
                    evals_result=ours_log, verbose_eval=False)
    theirs = xgb.train(params, xgb.DMatrix(X, label=y), 3, evals=[(xgb.DMatrix(Xt, label=yt), "test")],
                       evals_result=theirs_log, verbose_eval=False)
    assert ours.num_boosted_rounds() == 3 and len(ours.get_dump()) == 12
    # Other random draws than XGBoost's: forests of the same quality.
    np.testing.assert_allclose(ours_log["test"]["logloss"], theirs_log["test"]["logloss"], rtol=0.02)
    ours.save_model(tmp_path / "forest.json")
    by_xgboost = xgb.Booster(model_file=str(tmp_path / "forest.json"))
    assert by_xgboost.num_boosted_rounds() == 3
    np.testing.assert_array_equal(by_xgboost.predict(xgb.DMatrix(Xt)), ours.predict(tb.DMatrix(Xt)))
    # The first round of the forest is a model of its own, four trees.
    np.testing.assert_array_equal(by_xgboost[:1].predict(xgb.DMatrix(Xt)), ours[:1].predict(tb.DMatrix(Xt)))


def test_precision_at_k_is_xgboosts(xgb, higgs, tmp_path):
    (X, y, _), _ = higgs
    X, y = X[:3000], y[:3000]
    groups = [40] * 70 + [200]
    params = {"objective": "rank:pairwise", "max_depth": 3, "nthread": 2}
    weights = np.arange(1, len(groups) + 1, dtype=np.float32)
    theirs_data = xgb.DMatrix(X, label=y, group=groups, weight=weights)
    theirs = xgb.train(params, theirs_data, 5)
    theirs.save_model(str(tmp_path / "ranker.json"))
    ours = tb.Booster(model_file=tmp_path / "ranker.json")
    ours_data = tb.DMatrix(X, label=y, group=groups, weight=weights)
    for metric in ("pre", "pre@5", "pre@100", "pre@3-"):
        theirs.set_param({"eval_metric": metric})
        ours.set_param({"eval_metric": metric})
        expected = float(theirs.eval(theirs_data).split(":")[-1])
        assert ours.eval(ours_data).split("\t")[-1].startswith(f"eval-{metric}:")
        assert float(ours.eval(ours_data).split(":")[-1]) == pytest.approx(expected, abs=5e-6)  # 5 decimals printed
