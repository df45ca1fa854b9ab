"""Bad input raises an exception of the right class naming the problem; nothing crashes and no
user file is replaced."""

import numpy as np
import pytest

import twinboost as tb

X = np.arange(40, dtype=np.float32).reshape(10, 4)
y = (np.arange(10) % 2).astype(np.float32)


def _train(params, dtrain=None, rounds=2):
    return tb.train(params, dtrain or tb.DMatrix(X, label=y), rounds, verbose_eval=False)


@pytest.mark.parametrize("params,named", [
    ({"max_depth": -1}, "max_depth"),
    ({"eta": "fast"}, "eta"),
    ({"objective": "binary:nonsense"}, "objective"),
    ({"no_such_parameter": 1}, "no_such_parameter"),
    ({"device": "tpu"}, "device"),
    ({"device_memory_limit": "2 parsecs"}, "device_memory_limit"),
    ({"sampling_method": "goss"}, "sampling_method"),
])
def test_a_bad_parameter_is_a_value_error_naming_it(params, named):
    with pytest.raises(tb.ParameterError, match=named) as raised:
        _train(params)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("label,message", [
    (np.where(np.arange(10) == 3, np.nan, 0), "row 3"),
    (np.where(np.arange(10) == 4, np.inf, 0), "row 4"),
    (np.zeros(9), "9 values for 10 rows"),
])
def test_bad_labels_are_data_errors(label, message):
    with pytest.raises(tb.DataError, match=message):
        tb.DMatrix(X, label=label)


def test_bad_data_is_refused_with_its_problem():
    with pytest.raises(tb.DataError, match="2-D"):
        tb.DMatrix(np.zeros(5, dtype=np.float32))
    with pytest.raises(TypeError, match="not numeric"):
        tb.DMatrix(np.array([["a", "b"]], dtype=object))
    with pytest.raises(TypeError, match="not numeric"):
        tb.DMatrix(np.array([["a", "b"]]))
    with pytest.raises(tb.DataError, match="not finite|infinit"):
        tb.DMatrix(np.array([[1.0, np.inf]]))
    with pytest.raises(tb.DataError, match="qid"):
        tb.DMatrix(X, label=y, qid=[2, 2, 1, 1, 1, 3, 3, 3, 3, 3])
    with pytest.raises(TypeError, match="DMatrix"):
        tb.train({}, X, 1)


def test_more_features_than_the_model_is_refused():
    booster = _train({"objective": "binary:logistic"})
    with pytest.raises(ValueError):
        booster.predict(tb.DMatrix(np.zeros((2, 6), dtype=np.float32)))


def test_files_errors_are_os_errors(tmp_path):
    with pytest.raises(tb.FileError) as raised:
        tb.Booster(model_file=tmp_path / "absent.json")
    assert isinstance(raised.value, OSError) and "absent.json" in str(raised.value)
    with pytest.raises(tb.FileError):
        tb.DMatrix(str(tmp_path / "absent.csv"))
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    with pytest.raises(tb.ModelError):
        tb.Booster(model_file=corrupt)


def test_saving_over_a_directory_keeps_it(tmp_path):
    booster = _train({"objective": "binary:logistic"})
    directory = tmp_path / "a_directory.json"
    directory.mkdir()
    with pytest.raises(tb.FileError):
        booster.save_model(directory)
    assert directory.is_dir()


def test_a_raising_objective_raises_its_exception():
    def objective(predt, dtrain):
        raise ZeroDivisionError("in the objective")

    with pytest.raises(ZeroDivisionError, match="in the objective"):
        tb.train({}, tb.DMatrix(X, label=y), 3, obj=objective, verbose_eval=False)

    def wrong_length(predt, dtrain):
        return predt[:3], predt[:3]

    with pytest.raises(tb.DataError, match="gradients"):
        tb.train({}, tb.DMatrix(X, label=y), 3, obj=wrong_length, verbose_eval=False)
