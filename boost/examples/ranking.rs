//! Learning to rank with query groups (LambdaMART, NDCG) on the shipped LightGBM lambdarank
//! example: `cargo run --example ranking`. The groups come from the `.query` files beside the data
//! (`DMatrix::with_groups` sets them for data built in memory).

use std::path::Path;

use boost::data::ReadOptions;
use boost::learner::TrainOptions;
use boost::{Booster, DMatrix, Params};

fn main() -> boost::Result<()> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/lgbm_rank");
    let dtrain = DMatrix::from_file(data.join("rank.train"), &ReadOptions::default())?;
    let dtest = DMatrix::from_file(data.join("rank.test"), &ReadOptions::default())?;
    let params = Params::from_pairs(&[
        ("objective", "rank:ndcg"),
        ("eval_metric", "ndcg@10"),
        ("max_depth", "6"),
        ("eta", "0.1"),
    ])?;
    let options = TrainOptions { num_boost_round: 40, verbose_eval: 10, ..Default::default() };
    let booster = Booster::train_with(&params, &dtrain, &[(&dtest, "test")], &options, &mut [])?;
    let last = booster.history().last().expect("a round was logged");
    let (_, metric, ndcg) = &last.values[0];
    println!("after {} rounds: test {metric} {ndcg:.5}", last.round + 1);
    assert!(*ndcg > 0.5, "test NDCG@10 of the lambdarank example is about 0.6-0.7");
    Ok(())
}
