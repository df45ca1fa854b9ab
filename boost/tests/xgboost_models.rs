//! XGBoost compatibility of `boost::model`: models written by XGBoost 3.4.1 (and a 2.x-style file) load
//! and predict XGBoost's values; models written here are what XGBoost writes; corrupt and foreign
//! files are typed errors.
//!
//! The fixtures in `tests/data/xgboost/` come from `scripts/make_xgboost_fixtures.py` (XGBoost 3.4.1,
//! fixed seeds): per case a model, its input rows (CSV, empty field = missing) and XGBoost's outputs.
//! The other direction (XGBoost loads our files) runs XGBoost itself when `BOOST_XGBOOST_CHECK=1`,
//! see [`xgboost_loads_our_models_checked_by_python_when_boost_xgboost_check_is_set`].

use std::path::{Path, PathBuf};
use std::process::Command;

use boost::data::{CsrMatrix, DenseMatrix, FeatureMatrix};
use boost::model::{ImportanceType, Model, Tree, XGBOOST_FORMAT_VERSION};
use boost::{Booster, DMatrix, Error, PredictOptions};
use serde_json::{json, Value};

const CASES: [&str; 6] = [
    "binary_logistic",
    "reg_squarederror",
    "multi_softprob",
    "reg_exact_forest",
    "legacy_2x_multi",
    "categorical_splits",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/xgboost").join(name)
}

/// A fresh directory under the system's temporary directory.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("boost-xgboost-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fixture's rows as a dense matrix (NaN = missing).
fn read_rows(path: &Path) -> DenseMatrix {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let cols = lines.next().unwrap().split(',').count();
    let mut values = Vec::new();
    let mut rows = 0;
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), cols, "{}: {line}", path.display());
        values.extend(fields.iter().map(|f| if f.is_empty() { f32::NAN } else { f.parse::<f32>().unwrap() }));
        rows += 1;
    }
    DenseMatrix::new(rows, cols, values)
}

/// The same rows as CSR, missing values left out.
fn to_csr(m: &DenseMatrix) -> CsrMatrix {
    let mut csr = CsrMatrix { rows: m.rows, cols: m.cols, row_ptr: vec![0], ..Default::default() };
    for i in 0..m.rows {
        for (j, &v) in m.row(i).iter().enumerate() {
            if !v.is_nan() {
                csr.col_indices.push(j as u32);
                csr.values.push(v);
            }
        }
        csr.row_ptr.push(csr.values.len());
    }
    csr
}

fn write_rows(path: &Path, m: &DenseMatrix) {
    let mut text = (0..m.cols).map(|j| format!("f{j}")).collect::<Vec<_>>().join(",");
    text.push('\n');
    for i in 0..m.rows {
        let fields: Vec<String> =
            m.row(i).iter().map(|v| if v.is_nan() { String::new() } else { format!("{v:E}") }).collect();
        text.push_str(&fields.join(","));
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

fn expected(case: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(&format!("{case}.expected.json"))).unwrap()).unwrap()
}

fn floats(v: &Value, key: &str) -> Vec<f32> {
    v[key].as_array().unwrap_or_else(|| panic!("no `{key}`")).iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

fn ints(v: &Value, key: &str) -> Vec<u32> {
    v[key].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

fn range(v: &Value) -> (usize, usize) {
    let r = v["iteration_range"].as_array().unwrap();
    (r[0].as_u64().unwrap() as usize, r[1].as_u64().unwrap() as usize)
}

/// XGBoost's `ProbToMargin` of the fixtures' objectives, in `f32` as XGBoost computes it.
fn prob_to_margin(objective: &str) -> fn(f32) -> f32 {
    match objective {
        "binary:logistic" => |p| -(1.0 / p - 1.0).ln(),
        _ => |b| b,
    }
}

/// The objectives' transformations (test-private: the crate's objectives are written elsewhere).
fn transform(objective: &str, margins: &[f32], outputs: usize) -> Vec<f32> {
    match objective {
        "binary:logistic" => margins.iter().map(|&m| 1.0 / (1.0 + (-m).exp())).collect(),
        "multi:softprob" => margins
            .chunks(outputs)
            .flat_map(|row| {
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let exp: Vec<f32> = row.iter().map(|&m| (m - max).exp()).collect();
                let sum: f32 = exp.iter().sum();
                exp.into_iter().map(move |e| e / sum)
            })
            .collect(),
        _ => margins.to_vec(),
    }
}

/// Within 1e-6, relative for values above 1 in magnitude; returns how many are bit-identical.
fn assert_close(what: &str, ours: &[f32], theirs: &[f32]) -> usize {
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
    for (i, (&a, &b)) in ours.iter().zip(theirs).enumerate() {
        assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{what}[{i}]: ours {a}, XGBoost {b}");
    }
    ours.iter().zip(theirs).filter(|(a, b)| a.to_bits() == b.to_bits()).count()
}

fn check_case(case: &str) {
    let model = Model::load_json(fixture(&format!("{case}.model.json"))).unwrap();
    let exp = expected(case);
    let rows = read_rows(&fixture(&format!("{case}.rows.csv")));
    let outputs = exp["num_outputs"].as_u64().unwrap() as usize;
    assert_eq!(model.num_outputs(), outputs, "{case}");
    assert_eq!(model.num_rounds(), exp["num_rounds"].as_u64().unwrap() as usize, "{case}");
    let p2m = prob_to_margin(&model.objective_name);
    let dense = FeatureMatrix::Dense(rows.clone());
    let sparse = FeatureMatrix::Sparse(to_csr(&rows));

    let margin = model.predict_margin(&dense, None, p2m, (0, 0)).unwrap();
    let exact = assert_close(&format!("{case} margin"), &margin, &floats(&exp, "margin"));
    println!("{case}: {exact} of {} margins bit-identical to XGBoost's", margin.len());
    assert_eq!(exact, margin.len(), "{case}: margins are not bit-identical to XGBoost's");
    assert_eq!(model.predict_margin(&sparse, None, p2m, (0, 0)).unwrap(), margin, "{case}: CSR");

    let prediction = transform(&model.objective_name, &margin, outputs);
    assert_close(&format!("{case} prediction"), &prediction, &floats(&exp, "prediction"));

    let leaf = model.predict_leaf(&dense, (0, 0)).unwrap();
    assert_eq!(leaf, ints(&exp, "leaf"), "{case}: leaves");
    assert_eq!(model.predict_leaf(&sparse, (0, 0)).unwrap(), leaf, "{case}: CSR leaves");

    let (begin, end) = range(&exp);
    let margin_range = model.predict_margin(&dense, None, p2m, (begin, end)).unwrap();
    let exact = assert_close(&format!("{case} margin {begin}..{end}"), &margin_range, &floats(&exp, "margin_range"));
    assert_eq!(exact, margin_range.len(), "{case}: iteration_range margins are not bit-identical");
    assert_eq!(model.predict_leaf(&dense, (0, end)).unwrap(), ints(&exp, "leaf_range"), "{case}: leaves 0..{end}");

    // Given base margins replace the base score; pure f32 additions, bit-identical everywhere.
    let base_margin = floats(&exp, "base_margin");
    let with_base = model.predict_margin(&sparse, Some(&base_margin), p2m, (0, 0)).unwrap();
    let exact = assert_close(&format!("{case} base_margin"), &with_base, &floats(&exp, "margin_with_base_margin"));
    assert_eq!(exact, with_base.len(), "{case}: margins with base_margin are not bit-identical");

    for kind in ImportanceType::ALL {
        let theirs = exp["importance"][kind.name()].as_object().unwrap();
        let ours = model.feature_importance(kind).unwrap();
        assert_eq!(ours.len(), theirs.len(), "{case} {kind}: features");
        for score in ours {
            let t = theirs[&score.key()].as_f64().unwrap() as f32;
            assert_eq!(score.score, t, "{case} {kind} {}", score.key());
        }
    }
}

#[test]
fn binary_logistic_with_missing_values_predicts_as_xgboost() {
    check_case("binary_logistic");
    let model = Model::load_json(fixture("binary_logistic.model.json")).unwrap();
    assert_eq!(model.feature_names[2], "score");
    assert_eq!(model.feature_types, ["float", "float", "q", "int", "float", "float"]);
    assert_eq!(model.attributes["best_iteration"], "14");
    assert_eq!(model.base_score, [0.54]);
    assert_eq!(model.objective["reg_loss_param"]["scale_pos_weight"], "1");
}

#[test]
fn reg_squarederror_depth_6_predicts_as_xgboost() {
    check_case("reg_squarederror");
}

#[test]
fn multi_softprob_3_classes_predicts_as_xgboost() {
    check_case("multi_softprob");
    let model = Model::load_json(fixture("multi_softprob.model.json")).unwrap();
    assert_eq!((model.num_class, model.base_score.len()), (3, 3));
    assert_eq!(model.tree_info[..6], [0, 1, 2, 0, 1, 2]);
    assert_eq!(model.iteration_indptr[..3], [0, 3, 6]);
}

#[test]
fn exact_pruned_forest_with_deleted_nodes_predicts_as_xgboost() {
    check_case("reg_exact_forest");
    let model = Model::load_json(fixture("reg_exact_forest.model.json")).unwrap();
    assert_eq!(model.num_parallel_tree, 2);
    assert_eq!(model.iteration_indptr, [0, 2, 4, 6, 8, 10, 12]);
}

#[test]
fn xgboost_2x_layout_with_scalar_base_score_loads() {
    check_case("legacy_2x_multi");
    let model = Model::load_json(fixture("legacy_2x_multi.model.json")).unwrap();
    assert_eq!(model.version, [2, 1, 4]);
    assert_eq!(model.base_score, [0.5, 0.5, 0.5], "\"5E-1\" is broadcast to the 3 classes");
    // Files before 2.0 have no `iteration_indptr`: whole rounds of num_parallel_tree * outputs trees.
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("legacy_2x_multi.model.json")).unwrap()).unwrap();
    v["learner"]["gradient_booster"]["model"].as_object_mut().unwrap().remove("iteration_indptr");
    v["learner"]["gradient_booster"]["model"]["trees"][0]["default_left"] = json!(vec![false; 15]);
    let old = Model::from_json_value(&v).unwrap();
    assert_eq!(old.iteration_indptr, model.iteration_indptr);
    assert!(old.trees[0].default_left.iter().all(|d| !d));
}

/// A model that XGBoost wrote is written back byte for byte; a second save of what we wrote and read
/// back is identical again, and loads to the same model.
#[test]
fn save_load_round_trip_is_byte_identical() {
    let dir = temp_dir("round-trip");
    for case in CASES {
        let original_path = fixture(&format!("{case}.model.json"));
        let original = std::fs::read(&original_path).unwrap();
        let model = Model::load_json(&original_path).unwrap();
        let first = dir.join(format!("{case}.1.json"));
        model.save_json(&first).unwrap();
        let reloaded = Model::load_json(&first).unwrap();
        assert_eq!(reloaded, Model { version: XGBOOST_FORMAT_VERSION, ..model.clone() }, "{case}");
        if case != "legacy_2x_multi" {
            assert!(std::fs::read(&first).unwrap() == original, "{case}: our file differs from XGBoost's");
        }
        let second = dir.join(format!("{case}.2.json"));
        reloaded.save_json(&second).unwrap();
        assert!(std::fs::read(&first).unwrap() == std::fs::read(&second).unwrap(), "{case}: second save differs");
        assert_eq!(Model::from_json_str(&reloaded.to_json_string().unwrap()).unwrap(), reloaded);
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failed_save_keeps_the_old_file() {
    let dir = temp_dir("failed-save");
    let path = dir.join("model.json");
    let model = Model::load_json(fixture("reg_squarederror.model.json")).unwrap();
    model.save_json(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let mut broken = model.clone();
    // A child outside its tree: the model does not validate, so nothing is written.
    broken.trees[3].left_children[0] = 1000;
    assert!(matches!(broken.save_json(&path), Err(Error::Model(m)) if m.contains("tree 3")));
    assert!(std::fs::read(&path).unwrap() == before);
    let missing_dir = dir.join("no/such/dir/model.json");
    assert!(matches!(model.save_json(&missing_dir), Err(Error::Io { .. })));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "only model.json");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn more_features_than_the_model_is_an_error_naming_both_counts() {
    let model = Model::load_json(fixture("reg_squarederror.model.json")).unwrap();
    let x = FeatureMatrix::Dense(DenseMatrix::new(1, 6, vec![0.0; 6]));
    let err = model.predict_margin(&x, None, |b| b, (0, 0)).unwrap_err();
    assert!(matches!(&err, Error::InvalidData(m) if m.contains('6') && m.contains('5')), "{err}");
    let err = model.predict_leaf(&x, (0, 0)).unwrap_err();
    assert!(matches!(err, Error::InvalidData(_)));
    assert!(model.predict_margin(&x, None, |b| b, (0, 13)).is_err(), "12 rounds");
}

// ---- corrupt and foreign files ----

fn base_model() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("multi_softprob.model.json")).unwrap()).unwrap()
}

fn gbtree(v: &mut Value) -> &mut Value {
    &mut v["learner"]["gradient_booster"]["model"]
}

/// Loading `v` fails with `Error::Model` whose message contains every one of `needles`.
fn assert_model_error(v: &Value, needles: &[&str]) {
    match Model::from_json_value(v) {
        Err(Error::Model(m)) => {
            for n in needles {
                assert!(m.contains(n), "message `{m}` lacks `{n}`");
            }
        }
        other => panic!("expected Error::Model with {needles:?}, got {other:?}"),
    }
}

#[test]
fn not_json_is_a_model_error() {
    let dir = temp_dir("not-json");
    let path = dir.join("model.json");
    std::fs::write(&path, b"\x00binf garbage").unwrap();
    assert!(matches!(Model::load_json(&path), Err(Error::Model(m)) if m.contains("not a JSON model")));
    let text = std::fs::read_to_string(fixture("binary_logistic.model.json")).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    assert!(matches!(Model::load_json(&path), Err(Error::Model(m)) if m.contains("model.json")));
    assert!(matches!(Model::load_json(dir.join("absent.json")), Err(Error::Io { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn json_without_learner_is_a_model_error() {
    assert_model_error(&json!({"version": [3, 2, 0]}), &["`learner`"]);
    assert_model_error(&json!([1, 2, 3]), &["not a JSON object"]);
    let mut v = base_model();
    v["learner"].as_object_mut().unwrap().remove("learner_model_param");
    assert_model_error(&v, &["learner.learner_model_param"]);
}

#[test]
fn gblinear_booster_is_unsupported() {
    let mut v = base_model();
    v["learner"]["gradient_booster"] =
        json!({"name": "gblinear", "model": {"boosted_rounds": 1, "weights": [0.1, 0.2, 0.0]}});
    assert_model_error(&v, &["gblinear", "only `gbtree`"]);
}

#[test]
fn dart_booster_is_unsupported() {
    let mut v = base_model();
    let inner = v["learner"]["gradient_booster"].clone();
    v["learner"]["gradient_booster"] = json!({"name": "dart", "gbtree": inner, "weight_drop": [1.0]});
    assert_model_error(&v, &["dart"]);
}

/// XGBoost's categorical splits (one-hot and partition, feature types `c`): the same margins and
/// leaves bit for bit, unseen, negative and fractional categories and missing values included.
#[test]
fn categorical_splits_predict_as_xgboost() {
    check_case("categorical_splits");
    let model = Model::load_json(fixture("categorical_splits.model.json")).unwrap();
    assert_eq!(model.feature_types, ["c", "c", "q", "q"]);
    let sizes = || model.trees.iter().flat_map(|t| t.categorical.sizes());
    assert!(sizes().any(|s| s > 1) && sizes().any(|s| s == 1), "partition and one-hot splits");
}

#[test]
fn inconsistent_categorical_splits_are_model_errors() {
    let categorical = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(fixture("categorical_splits.model.json")).unwrap()).unwrap()
    };
    let mut v = base_model();
    gbtree(&mut v)["trees"][4]["split_type"][0] = json!(1);
    assert_model_error(&v, &["tree 4", "categories_nodes"]);
    gbtree(&mut v)["trees"][4]["split_type"][0] = json!(2);
    assert_model_error(&v, &["tree 4", "node 0", "split_type"]);
    let mut v = categorical();
    let sizes = gbtree(&mut v)["trees"][0]["categories_sizes"].as_array().unwrap().len();
    gbtree(&mut v)["trees"][0]["categories_segments"][sizes - 1] = json!(100000);
    assert_model_error(&v, &["tree 0", "past"]);
    let mut v = categorical();
    let first = gbtree(&mut v)["trees"][0]["categories"][0].clone();
    gbtree(&mut v)["trees"][0]["categories"][1] = first;
    assert_model_error(&v, &["tree 0", "sorted"]);
    // A category encoder (XGBoost's `cats`) that does not hold strings or integers, one a feature.
    let mut v = base_model();
    gbtree(&mut v)["cats"]["enc"] = json!([{"type": 1, "values": ["a", "b"]}]);
    assert_model_error(&v, &["cats", "feature 0", "values"]);
    gbtree(&mut v)["cats"]["enc"] = json!([{"offsets": [0, 2, 9], "values": [97, 98, 99]}]);
    assert_model_error(&v, &["cats", "feature 0", "offsets"]);
    gbtree(&mut v)["cats"]["enc"] = json!([{"offsets": [0, 1], "values": [-1]}]);
    assert_model_error(&v, &["cats", "UTF-8"]);
    gbtree(&mut v)["cats"]["enc"] = json!([{"offsets": [0, 1], "values": [97]}]);
    assert_model_error(&v, &["cats", "encodes 1 features", "num_feature"]);
}

#[test]
fn vector_leaf_trees_are_unsupported() {
    let mut v = base_model();
    gbtree(&mut v)["trees"][0]["tree_param"]["size_leaf_vector"] = json!("3");
    assert_model_error(&v, &["tree 0", "size_leaf_vector"]);
}

#[test]
fn inconsistent_array_lengths_are_model_errors() {
    let mut v = base_model();
    gbtree(&mut v)["trees"][2]["sum_hessian"].as_array_mut().unwrap().pop();
    assert_model_error(&v, &["tree 2", "sum_hessian"]);
    let mut v = base_model();
    gbtree(&mut v)["trees"][1]["tree_param"]["num_nodes"] = json!("3");
    assert_model_error(&v, &["tree 1", "num_nodes"]);
    let mut v = base_model();
    gbtree(&mut v)["tree_info"].as_array_mut().unwrap().pop();
    assert_model_error(&v, &["tree_info"]);
    let mut v = base_model();
    gbtree(&mut v)["trees"].as_array_mut().unwrap().pop();
    assert_model_error(&v, &["num_trees"]);
    let mut v = base_model();
    gbtree(&mut v)["iteration_indptr"] = json!([0, 3, 6, 9]);
    assert_model_error(&v, &["iteration_indptr"]);
    let mut v = base_model();
    v["learner"]["learner_model_param"]["base_score"] = json!("[1E-1,2E-1]");
    assert_model_error(&v, &["base_score", "2 values", "3 outputs"]);
    let mut v = base_model();
    v["learner"]["feature_names"] = json!(["a", "b"]);
    assert_model_error(&v, &["feature_names"]);
}

#[test]
fn bad_values_are_model_errors() {
    let mut v = base_model();
    gbtree(&mut v)["tree_info"][5] = json!(3);
    assert_model_error(&v, &["tree_info[5]"]);
    let mut v = base_model();
    v["learner"]["learner_model_param"]["base_score"] = json!("abc");
    assert_model_error(&v, &["base_score"]);
    let mut v = base_model();
    v["learner"]["learner_model_param"]["num_feature"] = json!("-4");
    assert_model_error(&v, &["num_feature"]);
    let mut v = base_model();
    v["learner"]["learner_model_param"]["num_feature"] = json!("99999999999");
    assert_model_error(&v, &["num_feature", "32 bits"]);
    let mut v = base_model();
    v["learner"]["learner_model_param"]["num_class"] = json!("4000000000");
    assert_model_error(&v, &["4000000000 outputs"]);
    let mut v = base_model();
    gbtree(&mut v)["trees"][3]["split_conditions"][0] = json!("x");
    assert_model_error(&v, &["trees[3].split_conditions[0]"]);
    let mut v = base_model();
    gbtree(&mut v)["trees"][3]["split_indices"][0] = json!(99);
    assert_model_error(&v, &["tree 3", "feature 99"]);
    let mut v = base_model();
    gbtree(&mut v)["trees"][1]["id"] = json!(0);
    assert_model_error(&v, &["two trees have id 0"]);
}

#[test]
fn child_index_out_of_range_is_a_model_error() {
    let mut v = base_model();
    gbtree(&mut v)["trees"][7]["right_children"][0] = json!(1000);
    assert_model_error(&v, &["tree 7", "right_children[0]", "1000"]);
    let mut v = base_model();
    gbtree(&mut v)["trees"][7]["left_children"][0] = json!(-5);
    assert_model_error(&v, &["tree 7", "left_children[0]"]);
    let mut v = base_model();
    gbtree(&mut v)["trees"][7]["parents"][3] = json!(77);
    assert_model_error(&v, &["tree 7", "parents[3]"]);
}

#[test]
fn cycles_are_model_errors() {
    // Node 1 (a split) points back to the root.
    let mut v = base_model();
    let tree = &mut gbtree(&mut v)["trees"][0];
    assert_ne!(tree["left_children"][1], json!(-1), "node 1 is a split in the fixture");
    tree["left_children"][1] = json!(0);
    assert_model_error(&v, &["tree 0", "node 0 is reached twice"]);
    // Two splits sharing a child: the walk meets it under node 2 first, where its parent disagrees.
    let mut v = base_model();
    let tree = &mut gbtree(&mut v)["trees"][0];
    let shared = tree["left_children"][1].clone();
    tree["left_children"][2] = shared.clone();
    assert_model_error(&v, &["tree 0", &format!("parents[{shared}]"), "node 2 has it as child"]);
    // The same with the parent moved along: now the second visit is caught.
    let tree = &mut gbtree(&mut v)["trees"][0];
    tree["parents"][shared.as_u64().unwrap() as usize] = json!(2);
    assert_model_error(&v, &["tree 0", "reached twice"]);
}

// ---- XGBoost loads our files ----

/// A 3-class model built here from scratch (hand-made trees, feature names, an attribute).
fn model_built_here() -> Model {
    let objective = json!({"name": "multi:softprob", "softmax_multiclass_param": {"num_class": "3"}});
    let mut model = Model::new(objective, 4, 3, vec![0.1, -0.2, 0.3]).unwrap();
    model.feature_names = ["a", "b", "c", "d"].map(String::from).to_vec();
    model.feature_types = vec!["float".into(); 4];
    model.attributes.insert("best_iteration".into(), "2".into());
    for round in 0..3u32 {
        let mut trees = Vec::new();
        for class in 0..3u32 {
            let s = (round * 3 + class) as f32;
            let mut t = Tree::leaf(0.0, 40.0);
            let (l, r) =
                t.split(0, class, 0.1 * s - 0.4, class % 2 == 0, 5.0 + s, (-0.3 + 0.01 * s, 20.0), (0.2, 20.0));
            t.split(l, 3, 0.5, true, 1.5, (0.05 * s, 8.0), (-0.125, 12.0));
            t.split(r, (class + 1) % 4, -0.25, false, 2.5, (0.375, 9.0), (-0.0625 * s, 11.0));
            trees.push((t, class));
        }
        model.push_round(trees).unwrap();
    }
    model
}

/// Deterministic rows with about one value in six missing.
fn synthetic_rows(rows: usize, cols: usize) -> DenseMatrix {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let values: Vec<f32> = (0..rows * cols)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if state.is_multiple_of(6) {
                f32::NAN
            } else {
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
            }
        })
        .collect();
    DenseMatrix::new(rows, cols, values)
}

/// Writes `model`, the rows and our predictions for `scripts/check_xgboost_loads_ours.py`.
/// A model trained by boost's learner (10 rounds, depth 5, with subsampling) on the shipped data
/// (`lgbm_multiclass`'s features; binary labels from its classes for the binary case), and 300 rows
/// of the test file with a few values knocked out so that the default directions are exercised.
fn model_trained_here(objective: &[(&str, &str)]) -> (Model, DenseMatrix) {
    use boost::data::{read_data, ReadOptions};
    use boost::learner::{train, TrainOptions};
    use boost::param::Params;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/lgbm_multiclass");
    let (mut data, _) = read_data(&dir.join("multiclass.train"), &ReadOptions::default()).unwrap();
    let binary = objective.iter().any(|&(_, v)| v == "binary:logistic");
    if binary {
        data.info.labels.iter_mut().for_each(|l| *l = (*l >= 2.0) as u8 as f32);
    }
    let mut pairs = vec![("max_depth", "5"), ("subsample", "0.8"), ("colsample_bynode", "0.8"), ("seed", "3")];
    pairs.extend_from_slice(objective);
    let params = Params::from_pairs(&pairs).unwrap();
    let options = TrainOptions { num_boost_round: 10, verbose_eval: 0, ..Default::default() };
    // Evaluated every round but without early stopping: the model must record no best iteration,
    // or XGBoost's scikit-learn API would predict with only the trees up to it.
    let model = train(&params, &data, &[(&data, "train")], &options, &mut []).unwrap().model;
    assert!(!model.attributes.contains_key("best_iteration"), "{:?}", model.attributes);
    let (test, _) = read_data(&dir.join("multiclass.test"), &ReadOptions::default()).unwrap();
    let cols = test.cols();
    let mut values = Vec::with_capacity(300 * cols);
    let mut row = vec![0f32; cols];
    for i in 0..300 {
        test.features.fill_row(i, &mut row);
        if i % 7 == 0 {
            row[i % cols] = f32::NAN;
        }
        values.extend_from_slice(&row);
    }
    (model, DenseMatrix::new(300, cols, values))
}

/// A model with categorical splits trained here: `lgbm_categorical` with LightGBM's categorical
/// columns (one-hot splits on those of fewer than 8 categories, partition splits on the others,
/// lossguide growth), and 300 test rows with missing values, unseen, negative and fractional codes.
fn model_trained_on_categories() -> (Model, DenseMatrix) {
    use boost::data::{read_data, ReadOptions};
    use boost::learner::{train, TrainOptions};
    use boost::param::Params;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/lgbm_categorical");
    let (mut data, _) = read_data(&dir.join("categorical.train"), &ReadOptions::default()).unwrap();
    let types: Vec<String> =
        (0..data.cols()).map(|f| if [0, 1, 4, 5, 6].contains(&f) { "c" } else { "q" }.into()).collect();
    data.info.feature_types = types;
    let pairs = [
        ("objective", "binary:logistic"),
        ("max_depth", "0"),
        ("max_leaves", "24"),
        ("grow_policy", "lossguide"),
        ("max_cat_to_onehot", "8"),
        ("max_cat_threshold", "32"),
    ];
    let params = Params::from_pairs(&pairs).unwrap();
    let options = TrainOptions { num_boost_round: 10, verbose_eval: 0, ..Default::default() };
    let model = train(&params, &data, &[], &options, &mut []).unwrap().model;
    assert!(model.trees.iter().any(|t| !t.categorical.is_empty()));
    let (test, _) = read_data(&dir.join("categorical.test"), &ReadOptions::default()).unwrap();
    let cols = test.cols();
    let mut values = Vec::with_capacity(300 * cols);
    let mut row = vec![0f32; cols];
    for i in 0..300 {
        test.features.fill_row(i, &mut row);
        let odd = [f32::NAN, 9999.0, -1.0, 2.5, 1e9];
        row[[0, 1, 4, 5, 6][i % 5]] = if i % 3 == 0 { odd[i % odd.len()] } else { row[[0, 1, 4, 5, 6][i % 5]] };
        values.extend_from_slice(&row);
    }
    (model, DenseMatrix::new(300, cols, values))
}

/// A model trained through the `Booster` on a CSV file of string columns (`adult`): categorical
/// splits, and the strings in XGBoost's category encoder; 300 test rows as codes.
fn model_trained_on_strings() -> (Model, DenseMatrix) {
    use boost::data::{Column, CsvOptions, ReadOptions};
    use boost::param::Params;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/adult");
    let csv = |categories| CsvOptions { label: Column::Name("income".into()), categories, ..Default::default() };
    let options = ReadOptions { csv: csv(None), ..Default::default() };
    let train = DMatrix::from_file(dir.join("adult_train.csv"), &options).unwrap();
    let params = Params::from_pairs(&[("objective", "binary:logistic"), ("max_depth", "4")]).unwrap();
    let model = Booster::train(&params, &train, 5, &[]).unwrap().model().clone();
    assert!(!model.categories.is_empty() && model.trees.iter().any(|t| !t.categorical.is_empty()));
    let options = ReadOptions { csv: csv(Some(train.categories())), ..Default::default() };
    let test = DMatrix::from_file(dir.join("adult_test.csv"), &options).unwrap();
    let FeatureMatrix::Dense(m) = test.features().unwrap() else { panic!("CSV rows are dense") };
    (model, DenseMatrix::new(300, m.cols, m.values.to_vec()[..300 * m.cols].to_vec()))
}

fn write_check_case(dir: &Path, name: &str, model: &Model, rows: &DenseMatrix, range: (usize, usize)) -> [PathBuf; 3] {
    let model_path = dir.join(format!("{name}.model.json"));
    model.save_json(&model_path).unwrap();
    let rows_path = dir.join(format!("{name}.rows.csv"));
    write_rows(&rows_path, rows);
    // Our side: the file we wrote reads back to the same model and predictions.
    let reread = Model::load_json(&model_path).unwrap();
    let written = Model { version: XGBOOST_FORMAT_VERSION, ..model.clone() };
    assert_eq!(reread, written, "{name}");
    let x = FeatureMatrix::Dense(rows.clone());
    let p2m = prob_to_margin(&model.objective_name);
    let margin = reread.predict_margin(&x, None, p2m, (0, 0)).unwrap();
    let booster = Booster::from_model(reread.clone()).unwrap();
    let dmatrix = DMatrix::from_dense(rows.values.clone(), rows.rows, rows.cols).unwrap();
    let ours = json!({
        // The objective's outputs too: XGBoost's sigmoid and softmax bit for bit (`exp::expf`).
        "prediction": booster.predict(&dmatrix, &PredictOptions::default()).unwrap(),
        "margin": margin,
        "leaf": reread.predict_leaf(&x, (0, 0)).unwrap(),
        "iteration_range": [range.0, range.1],
        "margin_range": reread.predict_margin(&x, None, p2m, range).unwrap(),
    });
    let ours_path = dir.join(format!("{name}.ours.json"));
    std::fs::write(&ours_path, serde_json::to_string(&ours).unwrap()).unwrap();
    [model_path, rows_path, ours_path]
}

/// Writes our models (the fixtures re-saved, and one built from scratch) with our predictions, and
/// checks our side (the files read back to the same models). Only with `BOOST_XGBOOST_CHECK=1`
/// does it also run `scripts/check_xgboost_loads_ours.py`, which loads each file in XGBoost, compares
/// XGBoost's predictions with ours and requires XGBoost's re-save of it to be byte-identical to our
/// file; then a missing `python3` or `xgboost` fails the test.
#[test]
fn xgboost_loads_our_models_checked_by_python_when_boost_xgboost_check_is_set() {
    let dir = temp_dir("xgboost-loads-ours");
    let mut cases = vec![write_check_case(&dir, "built_here", &model_built_here(), &synthetic_rows(200, 4), (1, 3))];
    for (name, objective) in [
        ("trained_binary", &[("objective", "binary:logistic")][..]),
        ("trained_multiclass", &[("objective", "multi:softprob"), ("num_class", "5")][..]),
        // Oblivious trees are ordinary trees to XGBoost.
        ("trained_oblivious", &[("objective", "binary:logistic"), ("grow_policy", "oblivious")][..]),
    ] {
        let (model, rows) = model_trained_here(objective);
        cases.push(write_check_case(&dir, name, &model, &rows, (2, 9)));
    }
    let (model, rows) = model_trained_on_categories();
    cases.push(write_check_case(&dir, "trained_categorical", &model, &rows, (2, 9)));
    let (model, rows) = model_trained_on_strings();
    cases.push(write_check_case(&dir, "trained_strings", &model, &rows, (1, 4)));
    for case in CASES {
        let model = Model::load_json(fixture(&format!("{case}.model.json"))).unwrap();
        let rows = read_rows(&fixture(&format!("{case}.rows.csv")));
        cases.push(write_check_case(&dir, case, &model, &rows, range(&expected(case))));
    }
    if std::env::var("BOOST_XGBOOST_CHECK").as_deref() != Ok("1") {
        println!("BOOST_XGBOOST_CHECK is not 1: checked our side only, XGBoost did not load the files");
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_xgboost_loads_ours.py");
    for [model, rows, ours] in &cases {
        let output = Command::new("python3")
            .arg(&script)
            .args(["--model".as_ref(), model.as_os_str(), "--rows".as_ref(), rows.as_os_str()])
            .args(["--ours".as_ref(), ours.as_os_str(), "--require-identical".as_ref()])
            .output()
            .unwrap_or_else(|e| panic!("BOOST_XGBOOST_CHECK=1 but `python3` cannot be run: {e}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        println!("{stdout}");
        assert!(
            output.status.success(),
            "XGBoost check of {} failed ({}; exit code 3 = python3 lacks numpy or xgboost):\n{stdout}\n{stderr}",
            model.display(),
            output.status
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
