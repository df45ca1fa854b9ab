//! Experiment 3: what float histograms do to the model. `boost` trains with its histograms (and node
//! sums, subtraction trick and split evaluation) in 64-bit fixed point, `f64` and `f32`
//! (`boost::learner::train_with_precision`); each float model is compared split by split with the
//! fixed-point one and trained twice to see whether it repeats.

use anyhow::{Context, Result};
use boost::data::synthetic::{generate, SyntheticSpec};
use boost::data::{read_data, Column, CsvOptions, Dataset, ReadOptions};
use boost::learner::{train_with_precision, TrainOptions, Trained};
use boost::model::Model;
use boost::param::Params;
use boost::tree::hist::HistogramPrecision;
use boost::tree::Tree;

use super::{Cell, Options, Table};

const PRECISIONS: [HistogramPrecision; 3] =
    [HistogramPrecision::FixedPoint, HistogramPrecision::F64, HistogramPrecision::F32];

/// How a model's trees differ from a reference model's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Difference {
    /// Trees whose shape and every split (feature, threshold, default direction) are the reference's.
    pub identical_trees: usize,
    /// The first tree that is not, if any.
    pub first_different_tree: Option<usize>,
    /// Split nodes of the reference not found (same node id, feature, threshold, direction) here.
    pub different_splits: usize,
    /// Of those, the ones with the same feature and threshold that differ only in where missing
    /// values go (float sums make "no missing values" look like "some", see `HistBuilder`).
    pub direction_only: usize,
    pub reference_splits: usize,
}

fn same_split(a: &Tree, b: &Tree, node: usize) -> bool {
    node < b.len()
        && !b.is_leaf(node)
        && a.split_indices[node] == b.split_indices[node]
        && a.split_conditions[node].to_bits() == b.split_conditions[node].to_bits()
        && a.default_left[node] == b.default_left[node]
}

/// Compares `model`'s trees with `reference`'s, tree by tree and node by node.
pub fn compare(reference: &Model, model: &Model) -> Difference {
    let mut d = Difference::default();
    for (t, a) in reference.trees.iter().enumerate() {
        let b = model.trees.get(t);
        let mut identical = b.is_some_and(|b| a.left_children == b.left_children);
        for node in (0..a.len()).filter(|&n| !a.is_leaf(n)) {
            d.reference_splits += 1;
            if !b.is_some_and(|b| same_split(a, b, node)) {
                d.different_splits += 1;
                let direction_only = b.is_some_and(|b| {
                    node < b.len()
                        && !b.is_leaf(node)
                        && a.split_indices[node] == b.split_indices[node]
                        && a.split_conditions[node].to_bits() == b.split_conditions[node].to_bits()
                });
                d.direction_only += usize::from(direction_only);
                identical = false;
            }
        }
        if identical {
            d.identical_trees += 1;
        } else if d.first_different_tree.is_none() {
            d.first_different_tree = Some(t);
        }
    }
    d
}

fn predictions(trained: &Trained, data: &Dataset) -> Result<Vec<f32>> {
    let objective = trained.objective.as_ref();
    let margins = trained.model.predict_margin(&data.features, None, |b| objective.prob_to_margin(b), (0, 0))?;
    Ok(objective.eval_transform(&margins))
}

/// The datasets: the shipped HIGGS sample (train, test) and a synthetic set with a tenth as many
/// test rows.
fn datasets(options: &Options) -> Result<Vec<(String, Dataset, Dataset)>> {
    let dir = options.data_dir().join("higgs_lgbm_sample");
    let read = |name: &str| -> Result<Dataset> {
        let path = dir.join(name);
        let read_options =
            ReadOptions { csv: CsvOptions { label: Column::Index(0), ..Default::default() }, ..Default::default() };
        Ok(read_data(&path, &read_options).with_context(|| format!("reading {} (--data)", path.display()))?.0)
    };
    let higgs = (read("binary.train")?, read("binary.test")?);
    let rows = options.model_rows;
    let spec = |rows: usize, seed: u64| SyntheticSpec { rows, seed, ..Default::default() };
    let synthetic = (generate(&spec(rows, options.seed))?, generate(&spec((rows / 10).max(1000), options.seed + 1))?);
    Ok(vec![
        (format!("higgs_lgbm_sample ({} rows)", higgs.0.rows()), higgs.0, higgs.1),
        (format!("synthetic ({rows} rows)"), synthetic.0, synthetic.1),
    ])
}

pub fn run(options: &Options) -> Result<Table> {
    let depth = options.max_depth.to_string();
    let seed = options.seed.to_string();
    let params = Params::from_pairs(&[
        ("objective", "binary:logistic"),
        ("eval_metric", "logloss"),
        ("eval_metric", "auc"),
        ("max_depth", depth.as_str()),
        ("eta", "0.1"),
        ("seed", seed.as_str()),
    ])?;
    let train_options = TrainOptions { num_boost_round: options.rounds, verbose_eval: 0, ..Default::default() };
    let mut table = Table::new(
        "models",
        format!(
            "binary:logistic, {} rounds, max_depth {}, eta 0.1, {} threads: models with histograms in each precision",
            options.rounds,
            options.max_depth,
            rayon::current_num_threads()
        ),
        &[
            "data",
            "histogram sums",
            "test logloss",
            "test AUC",
            "trees identical to fixed point's",
            "first different tree",
            "split nodes differing from fixed point's",
            "of which only the missing-value direction",
            "max abs. change of a test prediction",
            "same model when trained again",
            "training s",
        ],
    );
    for (name, train, test) in datasets(options)? {
        let evals = [(&test, "test")];
        let mut reference: Option<(Trained, Vec<f32>)> = None;
        for precision in PRECISIONS {
            let start = std::time::Instant::now();
            let trained = train_with_precision(&params, &train, &evals, &train_options, precision, &mut [])?;
            let seconds = start.elapsed().as_secs_f64();
            let again = train_with_precision(&params, &train, &evals, &train_options, precision, &mut [])?;
            let repeats = if again.model == trained.model { "yes" } else { "no" };
            let last = trained.history.last().context("no evaluation log")?;
            let metric = |m: &str| last.values.iter().find(|v| v.1 == m).map(|v| v.2).unwrap_or(f64::NAN);
            let predicted = predictions(&trained, &test)?;
            let (difference, max_change) = match &reference {
                None => (compare(&trained.model, &trained.model), 0.0),
                Some((fixed, fixed_predictions)) => {
                    let change =
                        predicted.iter().zip(fixed_predictions).map(|(a, b)| (a - b).abs() as f64).fold(0.0, f64::max);
                    (compare(&fixed.model, &trained.model), change)
                }
            };
            table.rows.push(vec![
                name.clone().into(),
                precision.name().into(),
                Cell::Fixed(metric("logloss"), 5),
                Cell::Fixed(metric("auc"), 5),
                format!("{}/{}", difference.identical_trees, trained.model.trees.len()).into(),
                difference.first_different_tree.map_or("-".to_string(), |t| t.to_string()).into(),
                format!("{}/{}", difference.different_splits, difference.reference_splits).into(),
                Cell::Int(difference.direction_only as u64),
                Cell::Float(max_change),
                repeats.into(),
                Cell::Fixed(seconds, 2),
            ]);
            if reference.is_none() {
                reference = Some((trained, predicted));
            }
        }
    }
    table.notes.push(
        "Float histograms use the float sums everywhere fixed point would be used: node totals, the \
         sibling by subtraction, the split scan and the gains. A tree that differs changes the \
         gradients of every later round, so differences compound after the first one; the \
         first different tree says when the first float rounding changed a decision."
            .into(),
    );
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_counts_changed_splits() {
        let mut a = Tree::leaf(0.0, 1.0);
        a.split(0, 3, 0.5, true, 1.0, (0.1, 1.0), (0.2, 1.0));
        let model = |trees: &[&Tree]| {
            let mut m = Model::new(serde_json::json!({"name": "reg:squarederror"}), 5, 0, vec![0.5]).unwrap();
            for &t in trees {
                m.push_round(vec![(t.clone(), 0)]).unwrap();
            }
            m
        };
        let reference = model(&[&a, &a]);
        let same = Difference { identical_trees: 2, reference_splits: 2, ..Default::default() };
        assert_eq!(compare(&reference, &reference), same);
        let mut other_threshold = a.clone();
        other_threshold.split_conditions[0] = 0.25;
        let mut other_direction = a.clone();
        other_direction.default_left[0] = false;
        let d = compare(&reference, &model(&[&other_direction, &other_threshold]));
        let want = Difference {
            identical_trees: 0,
            first_different_tree: Some(0),
            different_splits: 2,
            direction_only: 1,
            reference_splits: 2,
        };
        assert_eq!(d, want);
    }
}
