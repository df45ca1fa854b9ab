"""The scikit-learn estimators: scikit-learn's own estimator checks, and XGBoost's estimators as
the oracle of what they train."""

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from twinboost.sklearn import XGBClassifier, XGBRanker, XGBRegressor  # noqa: E402

# Checks expected to fail, with the reason (scikit-learn reports them as xfail). scikit-learn
# itself skips its array-API checks unless SCIPY_ARRAY_API=1.
_WEIGHTS_MULTIPLY = ("a weight multiplies its row's gradient in float32, and the fixed-point sums of repeated rows "
                     "round differently: the models differ in the last bits (relative 1e-6), above the check's 1e-7")
_GROUP_WEIGHTS = "ranking takes one weight a query group (XGBoost's meaning), the check one a row"
EXPECTED_FAILURES = {
    "XGBClassifier": {
        "check_sample_weight_equivalence_on_dense_data": _WEIGHTS_MULTIPLY,
        "check_sample_weight_equivalence_on_sparse_data": _WEIGHTS_MULTIPLY,
    },
    "XGBRanker": {
        "check_sample_weight_equivalence_on_dense_data": _GROUP_WEIGHTS,
        "check_sample_weight_equivalence_on_sparse_data": _GROUP_WEIGHTS,
        "check_sample_weights_pandas_series": _GROUP_WEIGHTS,
        "check_sample_weights_not_an_array": _GROUP_WEIGHTS,
        "check_sample_weights_list": _GROUP_WEIGHTS,
        "check_sample_weights_shape": _GROUP_WEIGHTS,
        "check_sample_weights_not_overwritten": _GROUP_WEIGHTS,
        "check_all_zero_sample_weights_error": _GROUP_WEIGHTS,
    },
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks([XGBRegressor(n_jobs=2), XGBClassifier(n_jobs=2), XGBRanker(n_jobs=2)],
                         expected_failed_checks=_expected_failed_checks)
def test_scikit_learns_estimator_checks(estimator, check):
    check(estimator)


def test_the_classifier_trains_xgboosts_model_and_maps_labels(xgb, higgs):
    (X, y, _), (Xt, _, _) = higgs
    labels = np.where(y > 0.5, "signal", "background")
    ours = XGBClassifier(n_estimators=20, max_depth=4, n_jobs=2).fit(X, labels)
    theirs = xgb.XGBClassifier(n_estimators=20, max_depth=4, n_jobs=2).fit(X, y.astype(int))
    assert list(ours.classes_) == ["background", "signal"]
    assert ours.get_booster().save_raw() == XGBClassifier(n_estimators=20, max_depth=4, n_jobs=2).fit(X, y) \
        .get_booster().save_raw()
    np.testing.assert_allclose(ours.predict_proba(Xt), theirs.predict_proba(Xt), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(Xt) == "signal", theirs.predict(Xt) == 1)
    np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_, rtol=1e-4, atol=1e-7)


def test_the_regressor_stops_early_and_predicts_with_the_best_round(xgb, higgs):
    (X, y, _), (Xt, yt, _) = higgs
    kwargs = dict(n_estimators=300, learning_rate=0.5, max_depth=6, early_stopping_rounds=5, n_jobs=2)
    ours = XGBRegressor(**kwargs).fit(X, y, eval_set=[(Xt, yt)], verbose=False)
    theirs = xgb.XGBRegressor(**kwargs).fit(X, y, eval_set=[(Xt, yt)], verbose=False)
    assert ours.best_iteration == theirs.best_iteration
    assert list(ours.evals_result()) == list(theirs.evals_result()) == ["validation_0"]
    np.testing.assert_allclose(ours.predict(Xt), theirs.predict(Xt), rtol=1e-5, atol=1e-6)


def test_the_ranker_trains_xgboosts_model(xgb):
    rng = np.random.default_rng(5)
    X = rng.random((300, 5), dtype=np.float32)
    y = rng.integers(0, 4, 300)
    qid = np.repeat(np.arange(10), 30)
    ours = XGBRanker(n_estimators=10, n_jobs=2).fit(X, y, qid=qid)
    theirs = xgb.XGBRanker(n_estimators=10, n_jobs=2).fit(X, y, qid=qid)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-5, atol=1e-6)
    assert 0 < ours.score(X, y, qid=qid) <= 1


def test_pipelines_grid_search_and_cross_validation():
    rng = np.random.default_rng(9)
    X = rng.random((240, 4))
    y = (X[:, 0] + X[:, 2] > 1).astype(int)
    pipeline = make_pipeline(StandardScaler(), XGBClassifier(n_estimators=10, n_jobs=2))
    assert cross_val_score(pipeline, X, y, cv=3).mean() > 0.8
    search = GridSearchCV(XGBClassifier(n_estimators=10, n_jobs=2), {"max_depth": [2, 4]}, cv=3).fit(X, y)
    assert search.best_params_["max_depth"] in (2, 4)
    cloned = clone(XGBRegressor(max_depth=3, reg_lambda=2.0))
    assert cloned.get_params()["max_depth"] == 3 and cloned.get_params()["reg_lambda"] == 2.0


@pytest.mark.parametrize("objective", ["multi:softmax", "multi:softprob"])
def test_multiclass_objectives_give_xgboosts_probabilities(xgb, objective):
    rng = np.random.default_rng(2)
    X = rng.random((300, 4), dtype=np.float32)
    y = (X[:, 0] * 3).astype(int)
    ours = XGBClassifier(objective=objective, n_estimators=8, n_jobs=2).fit(X, y)
    theirs = xgb.XGBClassifier(objective=objective, n_estimators=8, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
