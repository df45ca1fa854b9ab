//! Criterion benchmark of CPU training (the `hist` method) on the synthetic generator's data: time
//! per boosting round (depth 8, 256 bins, binary:logistic) at 1M x 28 and 100k x 28, on the rayon
//! pool's threads. The side-by-side with XGBoost's CPU hist at 100 rounds is
//! `benches/scripts/train_side_by_side.py`.

use boost::data::synthetic::{generate, SyntheticSpec};
use boost::learner::{train, TrainOptions};
use boost::param::Params;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;

fn boost_train(c: &mut Criterion) {
    let mut group = c.benchmark_group("boost_train_hist_depth8");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(20));
    let params =
        Params::from_pairs(&[("objective", "binary:logistic"), ("max_depth", "8"), ("eta", "0.3")]).expect("params");
    for rows in [100_000usize, 1_000_000] {
        let data = generate(&SyntheticSpec { rows, ..Default::default() }).expect("synthetic data");
        for rounds in [1usize, 10] {
            let options = TrainOptions { num_boost_round: rounds, verbose_eval: 0, ..Default::default() };
            group.bench_function(BenchmarkId::new(format!("{rows}x28"), format!("{rounds} rounds")), |b| {
                b.iter(|| train(&params, &data, &[], &options, &mut []).expect("train"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, boost_train);
criterion_main!(benches);
