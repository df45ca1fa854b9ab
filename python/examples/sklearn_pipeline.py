"""The scikit-learn estimator in a pipeline with a small grid search, on the shipped HIGGS sample
(string labels, to show that the classifier maps any labels). Run from anywhere:
``python python/examples/sklearn_pipeline.py``."""

import pathlib

import numpy as np
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from twinboost import XGBClassifier

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "higgs_lgbm_sample"


def load(name):
    table = np.loadtxt(DATA / name, dtype=np.float32)
    return table[:, 1:], np.where(table[:, 0] > 0.5, "signal", "background")


X, y = load("binary.train")
X_test, y_test = load("binary.test")
# A log-scaled copy of the momenta beside the features, as a preprocessing step would add.
pipeline = make_pipeline(
    FunctionTransformer(lambda X: np.hstack([X, np.log1p(np.abs(X[:, :4]))])),
    XGBClassifier(n_estimators=60, learning_rate=0.2, n_jobs=2),
)
search = GridSearchCV(pipeline, {"xgbclassifier__max_depth": [3, 5]}, cv=3, scoring="roc_auc").fit(X, y)
model = search.best_estimator_
accuracy = (model.predict(X_test) == y_test).mean()
print(f"best {search.best_params_}: cross-validated auc {search.best_score_:.4f}, test accuracy {accuracy:.4f}")
print("classes:", list(model[-1].classes_))
assert accuracy > 0.7, "HIGGS sample test accuracy"
