"""External memory: XGBoost's ``DataIter`` and ``ExtMemQuantileDMatrix`` train the model of the
same rows in a ``DMatrix``, byte for byte, with the pages in host memory or a cache file; a
``DataIter`` that raises stops with its own exception."""

import os

import numpy as np
import pytest

import twinboost as tb

PARAMS = {"objective": "binary:logistic", "max_depth": 4, "max_bin": 64, "nthread": 2}


def _rows(rows=3000, cols=6, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.random((rows, cols), dtype=np.float32)
    X[rng.random((rows, cols)) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 1).astype(np.float32)
    w = rng.random(rows).astype(np.float32) + 0.5
    return X, y, w


class Batches(tb.DataIter):
    """Rows in batches of ``size``; ``sparse``: SciPy CSR batches; ``fail_at``: the batch whose
    ``next`` raises."""

    def __init__(self, X, y, w, size, sparse=False, fail_at=None, **kwargs):
        super().__init__(**kwargs)
        self.X, self.y, self.w, self.size, self.sparse, self.fail_at = X, y, w, size, sparse, fail_at
        self.at = 0

    def next(self, input_data):
        if self.at >= len(self.y):
            return False
        if self.fail_at is not None and self.at // self.size == self.fail_at:
            raise KeyError("no such batch")
        end = self.at + self.size
        X = self.X[self.at:end]
        if self.sparse:
            import scipy.sparse
            X = scipy.sparse.csr_matrix(np.nan_to_num(X, nan=0.0))
        input_data(data=X, label=self.y[self.at:end], weight=self.w[self.at:end], feature_names=list("abcdef"))
        self.at = end
        return True

    def reset(self):
        self.at = 0


def _model(dtrain):
    return tb.train(PARAMS, dtrain, 6, verbose_eval=False).save_raw()


@pytest.mark.parametrize("on_host", [True, False])
def test_batches_train_the_dmatrix_model(tmp_path, on_host):
    X, y, w = _rows()
    want = _model(tb.DMatrix(X, label=y, weight=w, feature_names=list("abcdef")))
    it = Batches(X, y, w, 700, on_host=on_host, cache_prefix=os.fspath(tmp_path / "cache"), min_cache_page_bytes=1)
    pages = tb.ExtMemQuantileDMatrix(it, max_bin=64)
    count, host, disk = pages.pages()
    assert count == 5 and (disk > 0) == (not on_host) and (host > 0) == on_host
    assert pages.feature_names == list("abcdef")
    assert _model(pages) == want
    assert os.listdir(tmp_path) == [], "no cache file is left"


def test_sparse_batches_train_the_csr_model():
    scipy = pytest.importorskip("scipy.sparse")
    X, y, w = _rows()
    whole = scipy.csr_matrix(np.nan_to_num(X, nan=0.0))
    want = _model(tb.DMatrix(whole, label=y, weight=w, feature_names=list("abcdef")))
    assert _model(tb.ExtMemQuantileDMatrix(Batches(X, y, w, 1000, sparse=True), max_bin=64)) == want


def test_what_pages_cannot_do_is_an_error_of_its_kind():
    X, y, w = _rows()
    with pytest.raises(KeyError, match="no such batch"):
        tb.ExtMemQuantileDMatrix(Batches(X, y, w, 700, fail_at=2))
    pages = tb.ExtMemQuantileDMatrix(Batches(X, y, w, 700), max_bin=64)
    with pytest.raises(tb.ParameterError, match="max_bin"):
        tb.train({**PARAMS, "max_bin": 32}, pages, 2)
    booster = tb.train(PARAMS, pages, 2, verbose_eval=False)
    with pytest.raises(tb.DataError, match="raw features"):
        booster.predict(pages)
    with pytest.raises(TypeError):
        tb.ExtMemQuantileDMatrix(X)
