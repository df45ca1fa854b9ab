"""Shared fixtures: the shipped datasets, XGBoost 3.4.1 as the oracle, the `boost` command line."""

import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def _required(variable, what):
    """Fails when ``variable`` is 1 (CI), else skips: a check that cannot run never passes silently."""
    if os.environ.get(variable) == "1":
        pytest.fail(f"{variable}=1 but {what}")
    pytest.skip(f"{what} ({variable}=1 makes this a failure)")


@pytest.fixture(scope="session")
def xgb():
    """XGBoost 3.4.1, the oracle of every XGBoost-compatible feature."""
    try:
        import xgboost
    except ImportError:
        _required("BOOST_XGBOOST_CHECK", "xgboost cannot be imported")
    assert xgboost.__version__ == "3.4.1", xgboost.__version__
    return xgboost


@pytest.fixture(scope="session")
def cli():
    """The `boost` command line (TWINBOOST_CLI, else target/{release,debug}/boost)."""
    path = os.environ.get("TWINBOOST_CLI")
    candidates = [path] if path else [ROOT / "target" / "release" / "boost", ROOT / "target" / "debug" / "boost"]
    for candidate in candidates:
        if candidate and pathlib.Path(candidate).is_file():
            return str(candidate)
    if path:
        pytest.fail(f"TWINBOOST_CLI={path} is not a file")
    pytest.skip("the boost binary is not built (cargo build -p boost-cli; CI sets TWINBOOST_CLI)")


def load_tsv(name):
    """A shipped LightGBM-style file: the label in the first column, then the features."""
    table = np.loadtxt(DATA / name, dtype=np.float64)
    return np.ascontiguousarray(table[:, 1:], dtype=np.float32), table[:, 0].astype(np.float32)


@pytest.fixture(scope="session")
def higgs():
    """The HIGGS sample: (X, y, w) train and test, float32 features and labels, row weights."""
    X, y = load_tsv("higgs_lgbm_sample/binary.train")
    Xt, yt = load_tsv("higgs_lgbm_sample/binary.test")
    w = np.loadtxt(DATA / "higgs_lgbm_sample/binary.train.weight", dtype=np.float32)
    wt = np.loadtxt(DATA / "higgs_lgbm_sample/binary.test.weight", dtype=np.float32)
    return (X, y, w), (Xt, yt, wt)
