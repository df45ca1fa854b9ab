//! Multiclass classification (5 classes, class probabilities) on the shipped LightGBM multiclass
//! example: `cargo run --example multiclass`.

use std::path::Path;

use boost::data::ReadOptions;
use boost::learner::TrainOptions;
use boost::{Booster, DMatrix, Params, PredictOptions};

fn main() -> boost::Result<()> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/lgbm_multiclass");
    let dtrain = DMatrix::from_file(data.join("multiclass.train"), &ReadOptions::default())?;
    let dtest = DMatrix::from_file(data.join("multiclass.test"), &ReadOptions::default())?;
    // The typed builder (`Params::from_pairs` takes the same names as strings).
    let params = Params::builder()
        .objective("multi:softprob")
        .num_class(5)
        .eval_metric("mlogloss")
        .max_depth(5)
        .eta(0.3)
        .build()?;
    let options = TrainOptions { num_boost_round: 30, verbose_eval: 10, ..Default::default() };
    let booster = Booster::train_with(&params, &dtrain, &[(&dtest, "test")], &options, &mut [])?;

    // `multi:softprob`: 5 probabilities a row, row-major.
    let probabilities = booster.predict(&dtest, &PredictOptions::default())?;
    let labels = &dtest.info().labels;
    let right = probabilities
        .chunks(5)
        .zip(labels)
        .filter(|(p, y)| {
            let class = p.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(c, _)| c);
            class as f32 == **y
        })
        .count();
    let accuracy = right as f64 / labels.len() as f64;
    println!("test accuracy {accuracy:.4} ({right} of {})", labels.len());
    assert!(accuracy > 0.3, "five classes, the largest 22% of the test rows");
    Ok(())
}
