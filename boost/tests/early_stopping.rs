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
    let trained = train(&params, &train_data, &evals, &options, &mut []).expect("train");
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

/// The callbacks as XGBoost's: an `EarlyStopping` watching a named set and metric (larger is
/// better for AUC), a monitor showing every `period`-th round and the last, a caller's callback
/// ending training, and names the log does not have refused before any tree is grown.
#[test]
fn callbacks_watch_what_they_name_and_stop_training() {
    use std::ops::ControlFlow;

    use boost::model::Model;
    use boost::{EarlyStopping, EvalLayout, EvaluationMonitor, RoundLog, TrainingCallback};

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/higgs_lgbm_sample");
    let (train_data, _) = read_data(&dir.join("binary.train"), &ReadOptions::default()).expect("train");
    let (test_data, _) = read_data(&dir.join("binary.test"), &ReadOptions::default()).expect("test");
    let pairs = [("objective", "binary:logistic"), ("max_depth", "8"), ("eta", "0.5"), ("eval_metric", "auc")];
    let mut params = Params::from_pairs(&pairs).expect("params");
    params.set("eval_metric", "logloss").expect("a second metric");
    let options = TrainOptions { num_boost_round: 200, verbose_eval: 0, ..Default::default() };
    let evals = [(&train_data, "train"), (&test_data, "test")];

    // The test set's AUC, not its logloss (the last metric): the best round is the largest AUC.
    let mut stopping = EarlyStopping::new(4).data_name("test").metric_name("auc");
    let mut shown = Vec::new();
    let mut monitor = EvaluationMonitor::with_output(3, |log: &RoundLog| shown.push(log.round));
    let trained = train(&params, &train_data, &evals, &options, &mut [&mut stopping, &mut monitor]).expect("train");
    let aucs: Vec<f64> = trained.history.iter().map(|log| log.values[2].2).collect();
    assert!(trained.history.iter().all(|log| log.values[2].0 == "test" && log.values[2].1 == "auc"));
    let best = (0..aucs.len()).max_by(|&a, &b| aucs[a].total_cmp(&aucs[b]).then(b.cmp(&a))).unwrap();
    assert_eq!(trained.best_iteration, Some(best));
    assert_eq!(stopping.best(), Some((best, aucs[best])));
    assert_eq!(aucs.len() - 1 - best, 4, "stopped 4 rounds after the best");
    let last = aucs.len() - 1;
    let mut expected: Vec<usize> = (0..=last).step_by(3).collect();
    if !last.is_multiple_of(3) {
        expected.push(last);
    }
    drop(monitor);
    assert_eq!(shown, expected, "every third round and the last");

    // A caller's callback ends training after round 2; nothing else stops it.
    struct StopAfter(usize, Vec<usize>);
    impl TrainingCallback for StopAfter {
        fn before_training(&mut self, _model: &Model, layout: &EvalLayout) -> boost::Result<()> {
            assert_eq!(layout.sets, ["train", "test"]);
            let names: Vec<&str> = layout.metrics.iter().map(|(name, _)| name.as_str()).collect();
            assert_eq!(names, ["auc", "logloss"]);
            assert_eq!(layout.metrics.iter().map(|m| m.1).collect::<Vec<_>>(), [true, false]);
            Ok(())
        }
        fn after_iteration(&mut self, model: &Model, log: &RoundLog) -> boost::Result<ControlFlow<()>> {
            self.1.push(log.round);
            assert_eq!(model.num_rounds(), log.round + 1, "the round's trees are in the model");
            Ok(if log.round == self.0 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        }
    }
    let mut stop = StopAfter(2, Vec::new());
    let trained = train(&params, &train_data, &evals, &options, &mut [&mut stop]).expect("train");
    assert_eq!((trained.model.num_rounds(), stop.1), (3, vec![0, 1, 2]));
    assert_eq!(trained.best_iteration, None, "no early stopping ran");

    // Names the log does not have, and early stopping without an evaluation set.
    for (mut callback, named) in
        [(EarlyStopping::new(3).data_name("valid"), "`valid`"), (EarlyStopping::new(3).metric_name("rmse"), "`rmse`")]
    {
        let error = train(&params, &train_data, &evals, &options, &mut [&mut callback]).err().expect("refused");
        assert!(error.to_string().contains(named), "{error}");
    }
    let mut callback = EarlyStopping::new(3);
    let error = train(&params, &train_data, &[], &options, &mut [&mut callback]).err().expect("refused");
    assert!(error.to_string().contains("needs at least one evaluation set"), "{error}");
}

/// A callback's learning rate applies from the round it is set for (XGBoost's
/// `LearningRateScheduler`): a constant one gives the model of that `eta`, and a schedule's first
/// rounds are the model of their own rates.
#[test]
fn a_callbacks_learning_rate_applies_from_its_round() {
    use boost::TrainingCallback;

    struct Schedule(fn(usize) -> f32);
    impl TrainingCallback for Schedule {
        fn learning_rate(&mut self, round: usize) -> Option<f32> {
            Some((self.0)(round))
        }
    }

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/higgs_lgbm_sample");
    let (train_data, _) = read_data(&dir.join("binary.train"), &ReadOptions::default()).expect("train");
    let trained = |eta: &str, rounds: usize, schedule: Option<fn(usize) -> f32>| {
        let params = Params::from_pairs(&[("objective", "binary:logistic"), ("max_depth", "4"), ("eta", eta)]);
        let options = TrainOptions { num_boost_round: rounds, verbose_eval: 0, ..Default::default() };
        let mut callback = schedule.map(Schedule);
        let mut callbacks: Vec<&mut dyn TrainingCallback> = callback.iter_mut().map(|c| c as _).collect();
        train(&params.expect("params"), &train_data, &[], &options, &mut callbacks).expect("train").model
    };
    let constant = trained("0.5", 4, Some(|_| 0.25));
    assert_eq!(constant.trees, trained("0.25", 4, None).trees, "a constant rate is that eta's model");
    assert_ne!(constant.trees, trained("0.5", 4, None).trees);
    // Halved after the second round: the first two trees are eta 0.4's, the third is not.
    let halved = trained("0.4", 3, Some(|round| if round < 2 { 0.4 } else { 0.2 }));
    let plain = trained("0.4", 3, None);
    assert_eq!(halved.trees[..2], plain.trees[..2]);
    assert_ne!(halved.trees[2], plain.trees[2]);
    let leaves = |tree: &boost::model::Tree| -> Vec<f32> {
        (0..tree.len()).filter(|&n| tree.left_children[n] == -1).map(|n| tree.split_conditions[n]).collect()
    };
    // The same split finding (gain does not depend on eta), each leaf half as large.
    let (a, b) = (leaves(&halved.trees[2]), leaves(&plain.trees[2]));
    assert_eq!(a.len(), b.len());
    assert!(a.iter().zip(&b).all(|(x, y)| (x * 2.0 - y).abs() <= 1e-6 * y.abs().max(1e-3)), "{a:?} {b:?}");
}
