"""Trains on the shipped HIGGS sample with early stopping, saves the model, loads it back and
checks that the loaded model predicts the same values. Run from the repository's root:
``python python/examples/quickstart.py [cpu|cuda]``."""

import pathlib
import sys
import tempfile

import numpy as np

import twinboost as tb

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "higgs_lgbm_sample"
device = sys.argv[1] if len(sys.argv) > 1 else "cpu"

# The files' reader takes the label column and the `.weight` side files, as the command line does.
dtrain = tb.DMatrix(str(DATA / "binary.train"))
dtest = tb.DMatrix(str(DATA / "binary.test"))
params = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1, "eval_metric": ["logloss", "auc"],
          "device": device}
log = {}
booster = tb.train(params, dtrain, 200, evals=[(dtest, "test")], early_stopping_rounds=10, evals_result=log,
                   verbose_eval=25)
print(f"best round {booster.best_iteration}: test auc {log['test']['auc'][booster.best_iteration]:.5f}")
assert log["test"]["auc"][booster.best_iteration] > 0.78, "HIGGS sample test auc"

with tempfile.TemporaryDirectory() as directory:
    path = pathlib.Path(directory) / "model.json"
    booster.save_model(path)
    loaded = tb.Booster(model_file=path)
    np.testing.assert_array_equal(loaded.predict(dtest), booster.predict(dtest))
print("saved and loaded: the same predictions")
