//! Binary classification with an evaluation set and early stopping, on the shipped HIGGS sample:
//! `cargo run --example binary_early_stopping` (add `device=cuda` to the parameters for the GPU;
//! the model file is the same).

use std::path::Path;

use boost::data::ReadOptions;
use boost::learner::TrainOptions;
use boost::{Booster, DMatrix, EarlyStopping, EvaluationMonitor, Params, PredictOptions};

fn main() -> boost::Result<()> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/higgs_lgbm_sample");
    // TSV without a header, the label in column 0; `binary.train.weight` is read beside it.
    let dtrain = DMatrix::from_file(data.join("binary.train"), &ReadOptions::default())?;
    let dtest = DMatrix::from_file(data.join("binary.test"), &ReadOptions::default())?;
    let params = Params::from_pairs(&[
        ("objective", "binary:logistic"),
        ("eval_metric", "auc"),
        ("max_depth", "6"),
        ("eta", "0.1"),
        ("subsample", "0.8"),
    ])?;
    // Callbacks, as XGBoost's: stop when the test set's AUC has not improved for 10 rounds, and
    // print every 25th round's log to standard output. (`TrainOptions::early_stopping_rounds` and
    // `verbose_eval` add the same two, the log going to standard error.)
    let mut early_stopping = EarlyStopping::new(10).data_name("test").metric_name("auc");
    let mut monitor = EvaluationMonitor::with_output(25, |log| println!("{log}"));
    let options = TrainOptions { num_boost_round: 300, verbose_eval: 0, ..Default::default() };
    let evals = [(&dtrain, "train"), (&dtest, "test")];
    let booster = Booster::train_with(&params, &dtrain, &evals, &options, &mut [&mut early_stopping, &mut monitor])?;
    let (best, auc) = booster.best_iteration().expect("early stopping ran");
    println!("best iteration {best}: test auc {auc:.5}, {} rounds trained", booster.model().num_rounds());

    let probabilities = booster.predict(&dtest, &PredictOptions::default())?;
    let labels = &dtest.info().labels;
    let right = probabilities.iter().zip(labels).filter(|(p, y)| (**p > 0.5) == (**y > 0.5)).count();
    println!("test accuracy {:.4} ({right} of {})", right as f64 / labels.len() as f64, labels.len());
    assert!(auc > 0.75, "the HIGGS sample's test AUC is about 0.8");
    Ok(())
}
