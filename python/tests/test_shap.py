"""SHAP values, interaction values and Saabas' approximation against XGBoost 3.4.1's
(``pred_contribs``, ``pred_interactions``, ``approx_contribs``) on XGBoost's models and ours."""

import numpy as np
import pytest

import twinboost as tb

# XGBoost's exact SHAP runs an 8-point quadrature in float32; ours sums exact path values in
# float64: the same values to float precision (the HIGGS features are standardised).
ATOL, RTOL = 1e-5, 1e-5


def _xgb_model(xgb, tmp_path, params, X, y, rounds, **dmatrix):
    theirs = xgb.train({"nthread": 2, **params}, xgb.DMatrix(X, label=y, **dmatrix), rounds)
    path = tmp_path / "theirs.json"
    theirs.save_model(str(path))
    return theirs, tb.Booster(model_file=str(path))


def _assert_explanations_equal(xgb, theirs, ours, X, **kwargs):
    for options in ({"pred_contribs": True}, {"pred_interactions": True},
                    {"pred_contribs": True, "approx_contribs": True},
                    {"pred_interactions": True, "approx_contribs": True}):
        for strict in (False, True):
            expected = theirs.predict(xgb.DMatrix(X, **kwargs), strict_shape=strict, **options)
            got = ours.predict(tb.DMatrix(X, **kwargs), strict_shape=strict, **options)
            assert got.shape == expected.shape, (options, strict)
            if options.get("approx_contribs"):
                # XGBoost's Saabas values divide by a node's cover, NaN under a node without any
                # (an oblivious tree's empty branches); ours take the mean of its children, as
                # XGBoost's exact SHAP does.
                assert np.isfinite(got).all()
                expected = np.where(np.isnan(expected), got, expected)
            np.testing.assert_allclose(got, expected, atol=ATOL, rtol=RTOL, err_msg=str(options))


@pytest.mark.parametrize("params", [
    {"objective": "binary:logistic", "max_depth": 6},
    {"objective": "reg:squarederror", "max_depth": 8, "grow_policy": "lossguide", "max_leaves": 48},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 4},
    {"objective": "binary:logistic", "max_depth": 4, "tree_method": "exact"},
])
def test_explanations_of_xgboosts_models_are_xgboosts(xgb, higgs, tmp_path, params):
    (X, y, _), (Xt, _, _) = higgs
    X, Xt = X[:, :12].copy(), Xt[:400, :12].copy()
    X[::7, 3] = np.nan  # missing values take the default direction
    Xt[::5, 3] = np.nan
    if params.get("num_class"):
        y = (np.abs(X[:, 0] * 2).astype(np.int64) % 3).astype(np.float32)
    theirs, ours = _xgb_model(xgb, tmp_path, params, X, y, 12)
    _assert_explanations_equal(xgb, theirs, ours, Xt)
    for begin, end in ((0, 5), (3, 9)):
        # XGBoost explains only ranges from round 0: a slice of its model for the others.
        expected = theirs[begin:end].predict(xgb.DMatrix(Xt), pred_contribs=True)
        got = ours.predict(tb.DMatrix(Xt), pred_contribs=True, iteration_range=(begin, end))
        np.testing.assert_allclose(got, expected, atol=ATOL, rtol=RTOL)
    margin = ours.predict(tb.DMatrix(Xt), output_margin=True)
    contributions = ours.predict(tb.DMatrix(Xt), pred_contribs=True)
    np.testing.assert_allclose(contributions.sum(axis=-1), margin, atol=1e-5, rtol=1e-5)


def test_explanations_of_our_models_are_xgboosts(xgb, higgs, tmp_path):
    (X, y, w), (Xt, _, _) = higgs
    X, Xt = X[:, :10], Xt[:300, :10]
    for policy in ("depthwise", "oblivious"):
        ours = tb.train({"objective": "binary:logistic", "max_depth": 5, "grow_policy": policy, "nthread": 2},
                        tb.DMatrix(X, label=y, weight=w), 15, verbose_eval=False)
        path = tmp_path / f"{policy}.json"
        ours.save_model(path)
        theirs = xgb.Booster(model_file=str(path))
        margin = np.linspace(-1, 1, Xt.shape[0]).astype(np.float32)
        _assert_explanations_equal(xgb, theirs, ours, Xt, base_margin=margin)


def test_explanations_of_xgboosts_categorical_model_are_xgboosts(xgb, tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    X = np.column_stack([rng.integers(0, 30, n), rng.integers(0, 3, n), rng.normal(size=n)]).astype(np.float32)
    X[rng.random(n) < 0.05, 0] = np.nan
    effect = rng.normal(size=30)
    y = (effect[np.nan_to_num(X[:, 0]).astype(int)] + X[:, 1] + X[:, 2] > 0.5).astype(np.float32)
    types = ["c", "c", "q"]
    theirs, ours = _xgb_model(xgb, tmp_path, {"objective": "binary:logistic", "max_depth": 5, "max_cat_to_onehot": 4},
                              X, y, 10, feature_types=types, enable_categorical=True)
    _assert_explanations_equal(xgb, theirs, ours, X[:500], feature_types=types, enable_categorical=True)


def test_approximate_explanations_refuse_the_gpu(higgs):
    (X, y, _), _ = higgs
    booster = tb.train({"objective": "binary:logistic"}, tb.DMatrix(X[:200], label=y[:200]), 2, verbose_eval=False)
    booster.set_param({"device": "cuda:0"})
    with pytest.raises(tb.ParameterError, match="approx_contribs"):
        booster.predict(tb.DMatrix(X[:10]), pred_contribs=True, approx_contribs=True)
