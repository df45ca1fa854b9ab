"""Inputs: pandas DataFrames (names, nullable dtypes), missing values, per-row arrays."""

import numpy as np
import pytest

import twinboost as tb

PARAMS = {"objective": "reg:squarederror", "max_depth": 3, "nthread": 2}


def _rows():
    rng = np.random.default_rng(11)
    X = rng.random((400, 3), dtype=np.float32)
    X[rng.random((400, 3)) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1])
    return X, y.astype(np.float32)


def _model(data, y, **kwargs):
    return tb.train(PARAMS, tb.DMatrix(data, label=y, **kwargs), 5, verbose_eval=False).save_raw()


def test_a_dataframe_trains_the_arrays_model_with_its_column_names():
    pd = pytest.importorskip("pandas")
    X, y = _rows()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    assert _model(frame, pd.Series(y)) == _model(X, y, feature_names=["a", "b", "c"])
    assert tb.DMatrix(frame).feature_names == ["a", "b", "c"]


def test_nullable_dtypes_are_missing_values():
    pd = pytest.importorskip("pandas")
    X, y = _rows()
    frame = pd.DataFrame({
        "a": pd.array(X[:, 0], dtype="Float64"),
        "b": pd.array(np.where(np.isnan(X[:, 1]), None, np.round(X[:, 1] * 100)), dtype="Int64"),
        "c": pd.array(np.where(np.isnan(X[:, 2]), None, X[:, 2] > 0.5), dtype="boolean"),
    })
    expected = np.stack([X[:, 0], np.round(X[:, 1] * 100), np.where(np.isnan(X[:, 2]), np.nan, X[:, 2] > 0.5)], 1)
    assert _model(frame, y) == _model(expected.astype(np.float32), y, feature_names=["a", "b", "c"])


def test_object_columns_and_categories_without_enable_categorical_are_errors_naming_the_column():
    pd = pytest.importorskip("pandas")
    with pytest.raises(TypeError, match="'city'"):
        tb.DMatrix(pd.DataFrame({"x": [1.0, 2.0], "city": ["Oslo", "Lima"]}))
    with pytest.raises(ValueError, match="'kind'.*enable_categorical"):
        tb.DMatrix(pd.DataFrame({"kind": pd.Categorical(["a", "b"])}))
    with pytest.raises(NotImplementedError, match="'size'"):
        tb.DMatrix(pd.DataFrame({"size": pd.Categorical([3.5, 5.0])}), enable_categorical=True)


def test_a_missing_marker_other_than_nan():
    X, y = _rows()
    marked = np.where(np.isnan(X), -999.0, X).astype(np.float32)
    assert _model(marked, y, missing=-999.0) == _model(X, y)


def test_per_row_arrays_round_trip():
    X, y = _rows()
    w = np.linspace(0.5, 2, 400, dtype=np.float32)
    d = tb.DMatrix(X, label=y.reshape(-1, 1), weight=list(w), base_margin=np.full(400, 0.25))
    np.testing.assert_array_equal(d.get_label(), y)
    np.testing.assert_array_equal(d.get_weight(), w)
    np.testing.assert_array_equal(d.get_base_margin(), np.full(400, 0.25, dtype=np.float32))
    assert (d.num_row(), d.num_col()) == (400, 3)
    with pytest.raises(tb.DataError, match="weight"):
        d.set_weight(-w)


def test_float32_rows_in_c_order_are_read_in_place():
    X, y = _rows()
    assert tb.DMatrix(X)._handle.reads_in_place()
    # Other dtypes and orders are converted once (the DMatrix keeps the converted rows alive).
    converted = tb.DMatrix(X.astype(np.float64))
    assert converted._handle.reads_in_place()
    assert _model(X.astype(np.float64), y) == _model(X, y)
    # A view with strides is copied into C order first.
    wide = np.repeat(X, 2, axis=1)[:, ::2]
    assert not wide.flags.c_contiguous
    assert _model(wide, y) == _model(X, y)
