//! A custom objective (XGBoost's `obj=`) and metric (`custom_metric`): logistic loss and the error
//! rate written by hand, as XGBoost's `custom_objective` demo does, on the shipped agaricus data
//! (the custom metric is logged after the built-in ones, and early stopping would watch it). The
//! named objective
//! (`binary:logistic`) still gives the base score, the output transform (the sigmoid), the default
//! metric and the model file's objective, as in XGBoost: `cargo run --example custom_objective`.

use std::path::Path;

use boost::data::{MetaInfo, ReadOptions};
use boost::{Booster, CustomMetric, CustomObjective, DMatrix, GradientPair, Params, PredictOptions, TrainOptions};

/// The gradient and hessian of the logistic loss at each margin.
fn logistic(margins: &[f32], info: &MetaInfo) -> Vec<GradientPair<f32>> {
    margins
        .iter()
        .zip(&info.labels)
        .map(|(&m, &y)| {
            let p = 1.0 / (1.0 + (-m).exp());
            GradientPair::new(p - y, (p * (1.0 - p)).max(1e-16))
        })
        .collect()
}

/// The share of rows on the wrong side of 0.5 (the predictions are probabilities: the named
/// objective's transform of the margins).
fn error_rate(predictions: &[f32], info: &MetaInfo) -> f64 {
    let wrong = predictions.iter().zip(&info.labels).filter(|(p, y)| (**p > 0.5) != (**y > 0.5)).count();
    wrong as f64 / predictions.len() as f64
}

fn main() -> boost::Result<()> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/agaricus");
    let dtrain = DMatrix::from_file(data.join("agaricus.txt.train"), &ReadOptions::default())?;
    let dtest = DMatrix::from_file(data.join("agaricus.txt.test"), &ReadOptions::default())?;
    let params = Params::from_pairs(&[("objective", "binary:logistic"), ("max_depth", "2"), ("eta", "1")])?;
    let options = TrainOptions {
        num_boost_round: 10,
        verbose_eval: 2,
        custom_objective: Some(CustomObjective::new(logistic)),
        custom_metric: Some(CustomMetric::new("my-error", false, error_rate)),
        ..Default::default()
    };
    let booster = Booster::train_with(&params, &dtrain, &[(&dtest, "test")], &options, &mut [])?;
    let probabilities = booster.predict(&dtest, &PredictOptions::default())?;
    let labels = &dtest.info().labels;
    let wrong = probabilities.iter().zip(labels).filter(|(p, y)| (**p > 0.5) != (**y > 0.5)).count();
    println!("test error {:.5} ({wrong} of {})", wrong as f64 / labels.len() as f64, labels.len());
    assert!(wrong * 100 < labels.len(), "XGBoost's demo: test error about 0.0006 to 0.02");
    Ok(())
}
