//! Early stopping on the last metric of the last evaluation set, as XGBoost: training stops once that
//! metric has not improved for `early_stopping_rounds` rounds, keeps every tree it built, and records
//! the best round in the model's attributes.

use std::path::Path;

use boost::data::{read_data, ReadOptions};
use boost::learner::{train, TrainOptions};
use boost::param::Params;

#[test]
fn stops_after_the_patience_and_records_the_best_round() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/higgs_lgbm_sample");
    let (train_data, _) = read_data(&dir.join("binary.train"), &ReadOptions::default()).expect("train");
    let (test_data, _) = read_data(&dir.join("binary.test"), &ReadOptions::default()).expect("test");
    // Deep trees and a large step overfit 7000 rows within a few dozen rounds.
    let params = Params::from_pairs(&[
        ("objective", "binary:logistic"),
        ("max_depth", "8"),
        ("eta", "0.5"),
        ("eval_metric", "auc"),
        ("eval_metric", "logloss"),
    ])
    .expect("params");
    let options =
        TrainOptions { num_boost_round: 500, early_stopping_rounds: Some(5), verbose_eval: 0, ..Default::default() };
    let evals = [(&train_data, "train"), (&test_data, "test")];
    let trained = train(&params, &train_data, &evals, &options, |_| {}).expect("train");
    let rounds = trained.history.len();
    assert!(rounds < 100, "stopped early ({rounds} rounds)");
    assert_eq!(trained.model.num_rounds(), rounds, "every round's trees are kept");
    // The stopping metric is test-logloss (last metric, last set); lower is better.
    let losses: Vec<f64> = trained.history.iter().map(|log| log.values.last().unwrap().2).collect();
    assert!(trained.history.iter().all(|log| log.values.last().unwrap().1 == "logloss"));
    let best = (0..rounds).min_by(|&a, &b| losses[a].total_cmp(&losses[b]).then(a.cmp(&b))).unwrap();
    assert_eq!(trained.best_iteration, Some(best));
    assert_eq!(rounds - 1 - best, 5, "stopped 5 rounds after the best");
    assert_eq!(trained.best_score, Some(losses[best]));
    assert_eq!(trained.model.attributes.get("best_iteration"), Some(&best.to_string()));
}
