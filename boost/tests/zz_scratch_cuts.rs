// SCRATCH: not to be committed.
use boost::data::{read_data, Column, CsvOptions, LibsvmOptions, ReadOptions};
use boost::learner::{train, TrainOptions};
use boost::metric;
use boost::param::Params;
use std::path::Path;

#[test]
fn scratch() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    for (name, tr, te, params, m, cuts) in [
        ("higgs", "higgs_lgbm_sample/binary.train", "higgs_lgbm_sample/binary.test", vec![("objective", "binary:logistic")], "auc", "/tmp/qx/higgs_cuts.txt"),
        ("multi", "lgbm_multiclass/multiclass.train", "lgbm_multiclass/multiclass.test", vec![("objective", "multi:softprob"), ("num_class", "5")], "mlogloss", "/tmp/qx/multi_cuts.txt"),
    ] {
        let options = |categories| ReadOptions {
            format: None,
            csv: CsvOptions { label: Column::Index(0), categories, ..Default::default() },
            libsvm: LibsvmOptions::default(),
        };
        let (train_data, cats) = read_data(&dir.join(tr), &options(None)).unwrap();
        let (test_data, _) = read_data(&dir.join(te), &options(Some(&cats))).unwrap();
        let mut pairs: Vec<(&str, &str)> = vec![("max_depth", "6"), ("eta", "0.3"), ("tree_method", "hist"), ("max_bin", "256")];
        pairs.extend_from_slice(&params);
        let params = Params::from_pairs(&pairs).unwrap();
        for use_file in [false, true] {
            if use_file { std::env::set_var("BOOST_DEBUG_CUTS", cuts); } else { std::env::remove_var("BOOST_DEBUG_CUTS"); }
            let options = TrainOptions { num_boost_round: 100, verbose_eval: 0, ..Default::default() };
            let trained = train(&params, &train_data, &[], &options, |_| {}).unwrap();
            let margins = trained.model.predict_dataset_margin(&test_data, trained.objective.as_ref(), (0, 0)).unwrap();
            let predictions = trained.objective.eval_transform(&margins);
            let mm = metric::from_name(m).unwrap();
            let value = mm.evaluate(&predictions, &test_data.info, trained.model.num_outputs());
            eprintln!("SCRATCH {name} xgb_cuts={use_file}: {m} = {value:.6}");
        }
    }
    std::env::remove_var("BOOST_DEBUG_CUTS");
}
