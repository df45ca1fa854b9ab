//! Loading a model XGBoost trained (its JSON format) and predicting with it, on the CPU and, when
//! one can be opened, on a GPU with the same bits: `cargo run --example xgboost_model`.

use std::path::Path;

use boost::{Booster, DMatrix, Device, PredictOptions};

fn main() -> boost::Result<()> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/xgboost");
    // A binary:logistic model XGBoost 3.x saved, and rows it was evaluated on (CSV with a header,
    // an empty field is missing).
    let booster = Booster::load_model(fixtures.join("binary_logistic.model.json"))?;
    let text = std::fs::read_to_string(fixtures.join("binary_logistic.rows.csv"))
        .map_err(|source| boost::Error::Io { path: fixtures.join("binary_logistic.rows.csv"), source })?;
    let mut lines = text.lines();
    let cols = lines.next().map_or(0, |header| header.split(',').count());
    let values: Vec<f32> =
        lines.flat_map(|line| line.split(',').map(|f| f.parse().unwrap_or(f32::NAN)).collect::<Vec<_>>()).collect();
    let data = DMatrix::from_dense(values, text.lines().count() - 1, cols)?;
    let probabilities = booster.predict(&data, &PredictOptions::default())?;
    println!(
        "{} rows, {} trees; first predictions {:?}",
        data.rows(),
        booster.model().trees.len(),
        &probabilities[..4]
    );

    // `device=auto`: the GPU when one can be opened (the trees laid out there once), else the CPU;
    // the same values either way.
    let anywhere = booster.predict(&data, &PredictOptions::default().device(Device::Auto))?;
    assert_eq!(anywhere, probabilities, "the GPU predicts the CPU's bits");
    Ok(())
}
