use super::*;
use crate::data::{CsrMatrix, DenseMatrix, FeatureMatrix};

fn objective() -> serde_json::Value {
    serde_json::json!({"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}})
}

/// Two rounds of two outputs: round 0 splits on feature 0 (missing left), round 1 on feature 1.
fn two_output_model() -> Model {
    let mut m = Model::new(objective(), 2, 0, vec![0.5]).unwrap();
    m.num_target = 2;
    m.base_score = vec![0.5, -1.0];
    let mut a = Tree::leaf(0.0, 4.0);
    a.split(0, 0, 1.0, true, 2.0, (-1.0, 2.0), (1.0, 2.0));
    let mut b = Tree::leaf(0.0, 4.0);
    b.split(0, 1, 0.0, false, 3.0, (0.25, 1.0), (0.75, 3.0));
    m.push_round(vec![(a.clone(), 0), (b.clone(), 1)]).unwrap();
    m.push_round(vec![(b, 0), (a, 1)]).unwrap();
    m
}

fn dense(rows: usize, cols: usize, values: Vec<f32>) -> FeatureMatrix {
    FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values))
}

#[test]
fn margins_add_trees_to_their_output_in_order() {
    let m = two_output_model();
    let x = dense(2, 2, vec![0.0, -1.0, f32::NAN, 5.0]);
    let margins = m.predict_margin(&x, None, |b| b, (0, 0)).unwrap();
    // row 0: out0 = 0.5 + (-1) + 0.25, out1 = -1 + 0.25 + (-1); row 1: f0 missing -> left.
    assert_eq!(margins, vec![0.5 - 1.0 + 0.25, -1.0 + 0.25 - 1.0, 0.5 - 1.0 + 0.75, -1.0 + 0.75 - 1.0]);
    let first = m.predict_margin(&x, None, |b| b, (0, 1)).unwrap();
    assert_eq!(first, vec![-0.5, -0.75, -0.5, -0.25]);
    let second = m.predict_margin(&x, Some(&[0.0; 4]), |b| b, (1, 0)).unwrap();
    assert_eq!(second, vec![0.25, -1.0, 0.75, -1.0]);
    let none = m.predict_margin(&x, None, |b| 2.0 * b, (1, 1)).unwrap();
    assert_eq!(none, vec![1.0, -2.0, 1.0, -2.0]);
    assert_eq!(m.predict_leaf(&x, (0, 0)).unwrap(), vec![1, 1, 1, 1, 1, 2, 2, 1]);
    assert_eq!(m.predict_leaf(&x, (1, 2)).unwrap(), vec![1, 1, 2, 1]);
}

#[test]
fn iteration_range_follows_xgboost() {
    let m = two_output_model();
    assert_eq!(m.tree_range((0, 0)).unwrap(), 0..4);
    assert_eq!(m.tree_range((1, 0)).unwrap(), 2..4);
    assert_eq!(m.tree_range((2, 2)).unwrap(), 4..4);
    assert!(matches!(m.tree_range((0, 3)), Err(Error::InvalidParameter { .. })));
    assert!(matches!(m.tree_range((2, 1)), Err(Error::InvalidParameter { .. })));
}

#[test]
fn sparse_rows_predict_as_dense_and_absent_columns_are_missing() {
    let m = two_output_model();
    let d = dense(3, 2, vec![0.0, -1.0, f32::NAN, 5.0, 2.0, f32::NAN]);
    let s = FeatureMatrix::Sparse(CsrMatrix {
        rows: 3,
        cols: 2,
        row_ptr: vec![0, 2, 3, 4],
        col_indices: vec![0, 1, 1, 0],
        values: vec![0.0, -1.0, 5.0, 2.0],
    });
    let md = m.predict_margin(&d, None, |b| b, (0, 0)).unwrap();
    assert_eq!(md, m.predict_margin(&s, None, |b| b, (0, 0)).unwrap());
    // One column only: feature 1 is missing everywhere (default right for tree b).
    let narrow = dense(3, 1, vec![0.0, f32::NAN, 2.0]);
    let wide_missing = dense(3, 2, vec![0.0, f32::NAN, f32::NAN, f32::NAN, 2.0, f32::NAN]);
    assert_eq!(
        m.predict_margin(&narrow, None, |b| b, (0, 0)).unwrap(),
        m.predict_margin(&wide_missing, None, |b| b, (0, 0)).unwrap()
    );
}

#[test]
fn bad_prediction_inputs_are_errors() {
    let m = two_output_model();
    let wide = dense(1, 3, vec![0.0; 3]);
    let err = m.predict_margin(&wide, None, |b| b, (0, 0)).unwrap_err().to_string();
    assert!(err.contains("3 features") && err.contains("the model 2"), "{err}");
    let x = dense(2, 2, vec![0.0; 4]);
    let err = m.predict_margin(&x, Some(&[0.0; 3]), |b| b, (0, 0)).unwrap_err().to_string();
    assert!(err.contains("base_margin has 3 values"), "{err}");
    let bad_csr = FeatureMatrix::Sparse(CsrMatrix {
        rows: 2,
        cols: 2,
        row_ptr: vec![0, 3, 1],
        col_indices: vec![0],
        values: vec![1.0],
    });
    assert!(matches!(m.predict_margin(&bad_csr, None, |b| b, (0, 0)), Err(Error::InvalidData(_))));
    let bad_dense = FeatureMatrix::Dense(DenseMatrix { rows: 2, cols: 2, values: vec![0.0].into() });
    assert!(matches!(m.predict_leaf(&bad_dense, (0, 0)), Err(Error::InvalidData(_))));
}

#[test]
fn corrupt_trees_in_memory_are_errors_not_panics() {
    let x = dense(1, 2, vec![5.0, 5.0]);
    let mut cyc = two_output_model();
    cyc.trees[0].right_children[0] = 0;
    cyc.trees[0].parents[0] = 0;
    assert!(cyc.predict_margin(&x, None, |b| b, (0, 0)).unwrap_err().to_string().contains("cycle"));
    assert!(cyc.validate().is_err());
    let mut out_of_range = two_output_model();
    out_of_range.trees[1].right_children[0] = 7;
    let err = out_of_range.predict_leaf(&x, (0, 0)).unwrap_err().to_string();
    assert!(err.contains("tree 1") && err.contains("child 7"), "{err}");
    assert!(out_of_range.feature_importance(ImportanceType::Gain).is_err());
    let mut short = two_output_model();
    short.trees[2].sum_hessian.pop();
    assert!(short.predict_margin(&x, None, |b| b, (0, 0)).unwrap_err().to_string().contains("sum_hessian"));
    let mut info = two_output_model();
    info.tree_info[3] = 2;
    assert!(info.predict_leaf(&x, (0, 0)).unwrap_err().to_string().contains("tree_info[3]"));
}

#[test]
fn importance_counts_reachable_splits() {
    let mut m = two_output_model();
    m.feature_names = vec!["a".into(), "b".into()];
    let weight = m.feature_importance(ImportanceType::Weight).unwrap();
    assert_eq!(weight.iter().map(|s| (s.key(), s.score)).collect::<Vec<_>>(), [("a".into(), 2.0), ("b".into(), 2.0)]);
    let gain = m.feature_importance(ImportanceType::Gain).unwrap();
    assert_eq!(gain.iter().map(|s| s.score).collect::<Vec<_>>(), [2.0, 3.0]);
    let total_cover = m.feature_importance(ImportanceType::TotalCover).unwrap();
    assert_eq!(total_cover.iter().map(|s| s.score).collect::<Vec<_>>(), [8.0, 8.0]);
    assert_eq!("total_gain".parse::<ImportanceType>().unwrap(), ImportanceType::TotalGain);
    assert!("gini".parse::<ImportanceType>().is_err());
}

#[test]
fn built_model_round_trips_through_json() {
    let mut m = two_output_model();
    m.attributes.insert("best_iteration".into(), "1".into());
    let text = m.to_json_string().unwrap();
    let back = Model::from_json_str(&text).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.to_json_string().unwrap(), text);
    assert_eq!(Model::from_json_value(&m.to_json_value().unwrap()).unwrap(), m);
    assert!(text.contains(r#""base_score":"[5E-1,-1E0]""#), "{text}");
}

/// XGBoost writes non-finite tree floats as bare `-Infinity`, `Infinity`, `NaN` (its GPU trees
/// split at `-Infinity` when every present value goes right): read, predicted with, and written
/// back the same; a non-finite base score stays an error, and the tokens inside strings are text.
#[test]
fn non_finite_tree_values_are_xgboosts_tokens() {
    let mut m = two_output_model();
    m.trees[1].split_conditions[0] = f32::NEG_INFINITY;
    m.trees[1].loss_changes[0] = f32::INFINITY;
    m.trees[0].sum_hessian[1] = f32::NAN;
    m.attributes.insert("note".into(), "NaN -Infinity \"Infinity\"".into());
    let text = m.to_json_string().unwrap();
    assert!(text.contains(r#""split_conditions":[-Infinity,"#), "{text}");
    assert!(text.contains(r#""loss_changes":[Infinity,"#), "{text}");
    let back = Model::from_json_str(&text).unwrap();
    assert_eq!(back.trees[1].split_conditions[0], f32::NEG_INFINITY);
    assert_eq!(back.trees[1].loss_changes[0], f32::INFINITY);
    assert!(back.trees[0].sum_hessian[1].is_nan());
    assert_eq!(back.attributes["note"], m.attributes["note"]);
    assert_eq!(back.to_json_string().unwrap(), text);
    // Tree 1 (output 1) at `-Infinity` sends every present value of feature 1 right (`-1e30` went
    // left at 0), and missing ones too (its default); tree 0 (output 0) sends both rows left.
    let x = dense(2, 2, vec![0.0, -1e30, f32::NAN, f32::NAN]);
    let margins = back.predict_margin(&x, None, |b| b, (0, 1)).unwrap();
    assert_eq!(margins, vec![0.5 - 1.0, -1.0 + 0.75, 0.5 - 1.0, -1.0 + 0.75]);
    m.base_score[1] = f32::NAN;
    assert!(m.to_json_string().unwrap_err().to_string().contains("base_score[1]"));
}

/// Floats are written in the shortest form and read back through serde_json's `f64` parser:
/// the round trip must give back every `f32` bit pattern (checked on a spread of them).
#[test]
fn f32_text_round_trip_is_exact() {
    let mut bits = 0x0080_0000u32; // smallest normal
    let mut checked = 0;
    while bits < 0x7f80_0000 {
        for x in [f32::from_bits(bits), -f32::from_bits(bits)] {
            let mut text = String::new();
            super::json::write_float(&mut text, x);
            let back = serde_json::from_str::<serde_json::Value>(&text).unwrap().as_f64().unwrap() as f32;
            assert_eq!(back.to_bits(), x.to_bits(), "{text}");
            checked += 1;
        }
        bits += 7919; // prime stride: every exponent, varied mantissas
    }
    assert!(checked > 500_000);
    let written = |x: f32| {
        let mut text = String::new();
        super::json::write_float(&mut text, x);
        text
    };
    for (x, want) in [
        (0.44f32, "4.4E-1"),
        (0.0, "0E0"),
        (-0.0, "-0E0"),
        (12.5, "1.25E1"),
        (1.0, "1E0"),
        (-6.253355E-1, "-6.253355E-1"),
        (1e-7, "1E-7"),
        (1.5e30, "1.5E30"),
        (123456790.0, "1.2345679E8"),
        (f32::MIN_POSITIVE / 8.0, "1.469368E-39"),
        // Exactly between two shortest candidates: Ryu's (and XGBoost's) even digit, where Rust's
        // `{:E}` writes 1.6535313E3.
        (1653.0 + 17.0 / 32.0, "1.6535312E3"),
    ] {
        assert_eq!(written(x), want, "{x:E}");
    }
    // Elsewhere the same digits as Rust's shortest form, for a spread of bit patterns.
    let mut bits = 0x0000_0001u32;
    while bits < 0x7f80_0000 {
        let x = f32::from_bits(bits);
        let (ours, rust) = (written(x), format!("{x:E}"));
        if ours != rust {
            // Only the tie case may differ: the same length, one unit apart in the last digit.
            let back = |t: &str| t.parse::<f32>().unwrap();
            assert!(ours.len() == rust.len() && back(&ours) == x, "{ours} against {rust}");
        }
        bits += 104_729;
    }
}

#[test]
fn new_and_push_round_check_their_arguments() {
    assert!(Model::new(serde_json::json!({"x": 1}), 2, 0, vec![0.5]).is_err());
    assert!(Model::new(objective(), 2, 3, vec![0.5, 0.5]).is_err());
    let mut m = Model::new(objective(), 2, 3, vec![0.5]).unwrap();
    assert_eq!((m.num_outputs(), m.base_score.len(), m.num_rounds()), (3, 3, 0));
    let mut t = Tree::leaf(0.0, 1.0);
    t.split(0, 2, 0.0, false, 1.0, (0.0, 0.5), (0.0, 0.5));
    assert!(m.push_round(vec![(t, 0)]).unwrap_err().to_string().contains("feature 2"));
    assert!(m.push_round(vec![(Tree::leaf(0.0, 1.0), 3)]).is_err());
    assert_eq!(m.num_rounds(), 0);
}

/// A stand-in objective (the crate's objectives are tested on their own): margins doubled by
/// `transform`, `prob_to_margin` adds 1.
struct Doubling(usize);

impl crate::objective::Objective for Doubling {
    fn name(&self) -> &'static str {
        "test:doubling"
    }
    fn outputs(&self) -> usize {
        self.0
    }
    fn validate(&self, _info: &crate::data::MetaInfo) -> Result<()> {
        Ok(())
    }
    fn gradients(
        &self,
        _margins: &[f32],
        _info: &crate::data::MetaInfo,
        _iteration: usize,
        _out: &mut [primitives::ops::GradientPair<f32>],
    ) {
    }
    fn output_transform(&self) -> crate::objective::OutputTransform {
        crate::objective::OutputTransform::Identity
    }
    fn transform(&self, margins: &[f32]) -> Vec<f32> {
        margins.iter().map(|m| 2.0 * m).collect()
    }
    fn prob_to_margin(&self, base_score: f32) -> f32 {
        base_score + 1.0
    }
    fn initial_base_score(&self, _info: &crate::data::MetaInfo) -> f32 {
        0.0
    }
    fn default_metric(&self) -> &'static str {
        "rmse"
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"name": self.name()})
    }
}

#[test]
fn dataset_prediction_uses_the_objective_and_the_base_margin() {
    use crate::data::{Dataset, MetaInfo};
    let m = two_output_model();
    let mut data = Dataset { features: dense(1, 2, vec![0.0, -1.0]), info: MetaInfo::default() };
    let margins = m.predict_dataset_margin(&data, &Doubling(2), (0, 0)).unwrap();
    assert_eq!(margins, vec![1.5 - 1.0 + 0.25, 0.0 + 0.25 - 1.0]);
    assert_eq!(m.predict(&data, &Doubling(2), (0, 0)).unwrap(), vec![1.5, -1.5]);
    data.info.base_margin = vec![10.0, 20.0];
    assert_eq!(m.predict_dataset_margin(&data, &Doubling(2), (0, 1)).unwrap(), vec![9.0, 20.25]);
    let err = m.predict(&data, &Doubling(1), (0, 0)).unwrap_err().to_string();
    assert!(err.contains("1 outputs") && err.contains("the model 2"), "{err}");
}
