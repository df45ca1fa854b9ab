//! Categorical features in training (XGBoost's feature type `c`): bad codes and types are typed
//! errors naming what is wrong, and the methods without categorical splits say so. That the trees
//! are XGBoost's is `accuracy.rs`'s check (adult and lgbm_categorical to six digits) and
//! `xgboost_models.rs`'s (XGBoost loads our categorical models and predicts their bits).

use boost::data::FeatureMatrix;
use boost::model::TARGET_STATISTICS_BOOSTER;
use boost::param::Params;
use boost::{Booster, DMatrix, Error};

/// 200 rows: a categorical column of 12 codes (with missing values) whose effect decides the
/// label, and a numeric one.
fn rows(bad: Option<(usize, f32)>) -> DMatrix {
    let mut values = Vec::new();
    let mut labels = Vec::new();
    for i in 0..200 {
        let code = if i % 17 == 0 { f32::NAN } else { ((i * 7) % 12) as f32 };
        values.extend_from_slice(&[code, (i % 10) as f32]);
        labels.push(if [1.0, 4.0, 6.0, 9.0].contains(&code) { 1.0 } else { 0.0 });
    }
    if let Some((row, v)) = bad {
        values[row * 2] = v;
    }
    let mut d = DMatrix::from_dense(values, 200, 2).unwrap();
    d.set_labels(labels).unwrap();
    d.set_feature_types(vec!["c".into(), "q".into()]).unwrap();
    d
}

fn train(d: &DMatrix, extra: &[(&str, &str)]) -> boost::Result<Booster> {
    let mut pairs = vec![("objective", "binary:logistic"), ("max_depth", "3")];
    pairs.extend_from_slice(extra);
    Booster::train(&Params::from_pairs(&pairs)?, d, 3, &[])
}

#[test]
fn a_partition_split_separates_the_categories_of_the_label() {
    let d = rows(None);
    let booster = train(&d, &[]).unwrap();
    let tree = &booster.model().trees[0];
    // The root splits on the categories: {1, 4, 6, 9} on one side, the other codes on the other.
    assert_eq!(tree.categorical.nodes.first(), Some(&0));
    let right = tree.categorical.categories(0).unwrap();
    assert!(right == [1, 4, 6, 9] || right == [0, 2, 3, 5, 7, 8, 10, 11], "{right:?}");
    assert_eq!(booster.model().feature_types, vec!["c", "q"]);
    let p = booster.predict(&d, &Default::default()).unwrap();
    let labels = d.info().labels.clone();
    assert!(p.iter().zip(&labels).all(|(p, l)| (p - l).abs() < 0.5));
}

#[test]
fn one_hot_splits_below_max_cat_to_onehot() {
    let booster = train(&rows(None), &[("max_cat_to_onehot", "13")]).unwrap();
    let tree = &booster.model().trees[0];
    assert_eq!(tree.categorical.categories(0).map(|c| c.len()), Some(1), "one category against the others");
}

#[test]
fn codes_that_are_no_categories_are_data_errors_naming_row_feature_and_value() {
    for (row, v) in [(5, -1.0), (8, 2.5), (13, 16_777_216.0)] {
        let Err(e) = train(&rows(Some((row, v))), &[]) else { panic!("{v} was taken as a category") };
        let text = e.to_string();
        assert!(matches!(e, Error::InvalidData(_)), "{e:?}");
        assert!(
            text.contains(&format!("row {row}")) && text.contains("feature 0") && text.contains(&v.to_string()),
            "{text}"
        );
    }
}

#[test]
fn unknown_feature_types_and_unsupported_methods_are_parameter_errors() {
    let mut d = rows(None);
    let e = d.set_feature_types(vec!["c".into(), "x".into()]).unwrap_err();
    assert!(e.to_string().contains("feature_types") && e.to_string().contains("`x`"), "{e}");
    let e = d.set_feature_types(vec!["c".into()]).unwrap_err();
    assert!(e.to_string().contains("1 types for 2 features"), "{e}");
    for (name, value) in [("tree_method", "exact"), ("grow_policy", "oblivious")] {
        let e = train(&d, &[(name, value)]).err().unwrap();
        assert!(e.to_string().contains(name), "{e}");
    }
}

/// On a device (the emulator in `cargo test`, which `PRIMITIVES_DEVICE` names), categorical trees
/// grow there and are the CPU's, byte for byte; a bad code is the same error naming its row.
#[test]
fn a_device_trains_the_cpus_categorical_trees() {
    if std::env::var("PRIMITIVES_DEVICE").is_err() {
        eprintln!("PRIMITIVES_DEVICE unset: no device to ask");
        return;
    }
    let d = rows(None);
    for extra in [&[][..], &[("max_cat_to_onehot", "13")], &[("grow_policy", "lossguide")]] {
        let cpu = train(&d, extra).unwrap().model().to_json_string().unwrap();
        let device = train(&d, &[extra, &[("device", "cuda")]].concat()).unwrap();
        assert!(!device.model().trees[0].categorical.is_empty(), "{extra:?}");
        assert_eq!(device.model().to_json_string().unwrap(), cpu, "{extra:?}");
    }
    let Err(e) = train(&rows(Some((8, 2.5))), &[("device", "cuda")]) else { panic!("2.5 was taken as a category") };
    assert!(e.to_string().contains("row 8, feature 0"), "{e}");
}

/// `categorical_encoding=ordered_target`: the 12-category feature becomes its ordered target
/// statistics (CatBoost's), split like a number; the model keeps each category's statistic over all
/// training rows, written under its own booster name and read back; prediction encodes the codes
/// with them (a category training never saw takes the prior).
#[test]
fn ordered_target_statistics_train_numeric_splits_and_predict_from_the_model_statistics() {
    let d = rows(None);
    let booster = train(&d, &[("categorical_encoding", "ordered_target")]).unwrap();
    let model = booster.model();
    assert!(model.trees.iter().all(|t| t.categorical.is_empty()), "no categorical splits");
    assert_eq!(model.feature_types, vec!["c", "q"]);
    let ts = &model.target_statistics;
    assert_eq!(ts.features.len(), 1);
    assert_eq!(ts.features[0].feature, 0);
    // Each category's statistic by its definition: (label sum + prior) / (rows + 1), prior the mean.
    let labels = &d.info().labels;
    let FeatureMatrix::Dense(x) = d.features().unwrap() else { unreachable!() };
    let prior = labels.iter().map(|&y| y as f64).sum::<f64>() / labels.len() as f64;
    assert_eq!(ts.prior, prior as f32);
    for (c, &value) in ts.features[0].values.iter().enumerate() {
        let of_c: Vec<f64> = (0..200).filter(|&r| x.values[r * 2] == c as f32).map(|r| labels[r] as f64).collect();
        let expected = (of_c.iter().sum::<f64>() + prior) / (of_c.len() as f64 + 1.0);
        assert!((value as f64 - expected).abs() < 1e-6, "category {c}: {value} against {expected}");
    }
    let p = booster.predict(&d, &Default::default()).unwrap();
    assert!(p.iter().zip(labels).all(|(p, l)| (p - l).abs() < 0.5));
    // The file names its booster (XGBoost refuses it) and reads back to the same predictions.
    let text = model.to_json_string().unwrap();
    assert!(text.contains(&format!("\"name\":\"{TARGET_STATISTICS_BOOSTER}\"")));
    let reread = Booster::from_model(boost::model::Model::from_json_str(&text).unwrap()).unwrap();
    assert_eq!(reread.model(), model);
    assert_eq!(reread.predict(&d, &Default::default()).unwrap(), p);
    // An unseen category (12) is predicted as the prior; a code that is no category is an error.
    let unseen = DMatrix::from_dense(vec![12.0, 3.0, 400.0, 3.0], 2, 2).unwrap();
    let p = booster.predict(&unseen, &Default::default()).unwrap();
    assert_eq!(p[0], p[1]);
    let e = booster.predict(&DMatrix::from_dense(vec![-2.0, 3.0], 1, 2).unwrap(), &Default::default()).unwrap_err();
    assert!(e.to_string().contains("feature 0") && e.to_string().contains("-2"), "{e}");
}

#[test]
fn ordered_target_statistics_refuse_what_they_cannot_encode() {
    let d = rows(None);
    let e = train(&d, &[("categorical_encoding", "target")]).err().unwrap();
    assert!(e.to_string().contains("categorical_encoding") && e.to_string().contains("`target`"), "{e}");
    let e = train(&d, &[("ordered_target_prior_weight", "0")]).err().unwrap();
    assert!(e.to_string().contains("ordered_target_prior_weight"), "{e}");
    let multi = [("categorical_encoding", "ordered_target"), ("objective", "multi:softprob"), ("num_class", "2")];
    let e =
        Booster::train(&Params::from_pairs(&[multi.as_slice(), &[("max_depth", "3")]].concat()).unwrap(), &d, 1, &[])
            .err()
            .unwrap();
    assert!(matches!(e, Error::InvalidParameter { .. }) && e.to_string().contains("categorical_encoding"), "{e}");
    let Err(e) = train(&rows(Some((8, 2.5))), &[("categorical_encoding", "ordered_target")]) else {
        panic!("2.5 was taken as a category")
    };
    assert!(e.to_string().contains("row 8, feature 0"), "{e}");
}

/// On a device the statistics are computed there (sort, segmented scan) and are the CPU's bits, so
/// the model files are the same.
#[test]
fn a_device_computes_the_cpus_ordered_target_statistics() {
    if std::env::var("PRIMITIVES_DEVICE").is_err() {
        eprintln!("PRIMITIVES_DEVICE unset: no device to ask");
        return;
    }
    let d = rows(None);
    for extra in [&[("seed", "5")][..], &[("grow_policy", "lossguide"), ("ordered_target_prior_weight", "3")]] {
        let extra = [extra, &[("categorical_encoding", "ordered_target")]].concat();
        let cpu = train(&d, &extra).unwrap();
        assert!(!cpu.model().target_statistics.is_empty());
        let device = train(&d, &[&extra[..], &[("device", "cuda")]].concat()).unwrap();
        assert_eq!(device.model().to_json_string().unwrap(), cpu.model().to_json_string().unwrap(), "{extra:?}");
    }
}
