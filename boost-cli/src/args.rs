//! The command line's subcommands and their options (clap).

use std::path::PathBuf;

use clap::Args;

use boost::data::SideFiles;
use boost::{METRIC_NAMES, OBJECTIVE_NAMES};

/// What `boost train --help` lists after the options: the parameters, objectives and metrics.
pub(crate) fn train_help() -> String {
    format!(
        "Parameters (NAME=VALUE, XGBoost's names): {}.\n\nObjectives: {}.\n\nMetrics (eval_metric=): {} \
         (error@T, ndcg@K, ndcg@K-, map@K take an argument).",
        boost::param::PARAMETER_NAMES,
        OBJECTIVE_NAMES.join(", "),
        METRIC_NAMES.join(", ")
    )
}

#[derive(Args)]
pub(crate) struct ImportanceArgs {
    /// The model (XGBoost JSON or UBJSON).
    #[arg(long, short)]
    pub(crate) model: PathBuf,
    /// weight, gain, cover, total_gain or total_cover.
    #[arg(long = "type", default_value = "gain")]
    pub(crate) kind: String,
}

#[derive(Args)]
pub(crate) struct DumpArgs {
    /// The model (XGBoost JSON or UBJSON).
    pub(crate) model: PathBuf,
    /// `text` or `json` (XGBoost's `dump_format`).
    #[arg(long, default_value = "text")]
    pub(crate) format: String,
    /// Each node's statistics: the split's gain and every node's cover.
    #[arg(long)]
    pub(crate) with_stats: bool,
    /// A feature map: `index name type` a line (`q`, `i`, `int`, `float` or `c`); without it, the
    /// model's feature names and types.
    #[arg(long)]
    pub(crate) fmap: Option<PathBuf>,
    /// Where to write the dump (default: standard output).
    #[arg(long, short)]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct GenerateArgs {
    /// Output CSV file (label first, then the features; empty fields are missing); none with
    /// `--raw` alone.
    #[arg(required_unless_present = "raw")]
    pub(crate) output: Option<PathBuf>,
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) rows: usize,
    #[arg(long, default_value_t = 28)]
    pub(crate) cols: usize,
    /// Standard deviation of the noise on the margin (the difficulty).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) noise: f64,
    /// Regression target (the margin) instead of a 0/1 label.
    #[arg(long, conflicts_with = "classes")]
    pub(crate) regression: bool,
    /// Class ids `0..K` (classes of about equal size, ordered by the margin) instead of a 0/1 label.
    #[arg(long, value_name = "K")]
    pub(crate) classes: Option<u32>,
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// The last N columns hold category codes (10, 100, 1,000, 10,000, 100,000, 1,000,000, 10 and
    /// 1,000 categories, then again), each category an effect on the target.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) categorical: usize,
    /// Also write the same table as little-endian `f32`, row after row (label first, NaN where a value
    /// is missing): what NumPy's `fromfile` reads in a moment, where parsing the CSV takes minutes.
    #[arg(long, value_name = "PATH")]
    pub(crate) raw: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct DataArgs {
    /// Label column of CSV/TSV files: a 0-based index or a header name.
    #[arg(long, default_value = "0")]
    pub(crate) label: String,
    /// survival:aft's intervals: the CSV/TSV column (index or name) of the labels' upper bounds
    /// (`inf` above right-censored rows); the --label column holds the lower bounds.
    #[arg(long, value_name = "COLUMN")]
    pub(crate) label_upper_bound: Option<String>,
    /// A CSV/TSV column of categories (0-based index or header name; repeatable): read as strings
    /// even where its fields parse as numbers. Without it, a column is categorical only when none of
    /// its fields is a number, and a non-number in a column of numbers is an error.
    #[arg(long = "categorical", value_name = "COLUMN")]
    pub(crate) categorical: Vec<String>,
    /// File format (detected from the name and content when not given).
    #[arg(long, value_parser = ["csv", "libsvm"])]
    pub(crate) format: Option<String>,
    /// Weights of the data file's rows (one a line; for ranking, one a group). Without it,
    /// `DATA.weight` is read when it exists.
    #[arg(long, value_name = "FILE")]
    pub(crate) weights: Option<PathBuf>,
    /// Query group sizes of the data file (one a line, consecutive rows). Without it, `DATA.query`
    /// is read when it exists.
    #[arg(long, value_name = "FILE")]
    pub(crate) groups: Option<PathBuf>,
    /// Read no `DATA.weight` / `DATA.query` files beside the data.
    #[arg(long, conflicts_with_all = ["weights", "groups"])]
    pub(crate) no_side_files: bool,
    /// A number that means a missing value in the data files (XGBoost's `missing`, such as -999),
    /// besides empty fields, `NA` and the like; NaN by default.
    #[arg(long, value_name = "VALUE", allow_negative_numbers = true)]
    pub(crate) missing: Option<f32>,
}

impl DataArgs {
    /// Where the main data file's weights and groups come from (evaluation sets: beside them).
    pub(crate) fn side_files(&self) -> SideFiles {
        match (&self.weights, &self.groups, self.no_side_files) {
            (_, _, true) => SideFiles::Ignored,
            (None, None, false) => SideFiles::Beside,
            (weights, groups, false) => SideFiles::Given { weights: weights.clone(), groups: groups.clone() },
        }
    }
}

#[derive(Args)]
pub(crate) struct TrainArgs {
    /// Training data (CSV/TSV or libsvm, optionally gzip-compressed), or `synthetic:ROWS` (or
    /// `synthetic:ROWSxCOLS`, or `synthetic:ROWSxCOLS:cN` with the last N columns categorical):
    /// `boost generate`'s rows (binary labels, seed 0, 28 features unless given) made where the
    /// trees are built, in the GPU's memory on a GPU (no file to read).
    pub(crate) data: PathBuf,
    /// XGBoost parameters as NAME=VALUE (`device` defaults to `auto` here: a GPU when one is usable).
    pub(crate) params: Vec<String>,
    #[command(flatten)]
    pub(crate) input: DataArgs,
    /// An evaluation set as NAME=PATH (repeatable); the training set is always evaluated as `train`.
    #[arg(long = "eval")]
    pub(crate) evals: Vec<String>,
    /// Boosting rounds.
    #[arg(long, default_value_t = 10)]
    pub(crate) rounds: usize,
    /// Stop when the last metric on the last evaluation set has not improved for this many rounds.
    #[arg(long)]
    pub(crate) early_stopping_rounds: Option<usize>,
    /// Continue training this model.
    #[arg(long)]
    pub(crate) continue_from: Option<PathBuf>,
    /// Where to write the model: XGBoost JSON for a `.json` file, else UBJSON (`.ubj`).
    #[arg(long, short, default_value = "model.json")]
    pub(crate) output: PathBuf,
    /// Write the learning curve (every metric of every set against the round) as an SVG plot.
    #[arg(long)]
    pub(crate) plot: Option<PathBuf>,
    /// Print the evaluation log every N rounds (0: never).
    #[arg(long, default_value_t = 1)]
    pub(crate) verbose_eval: usize,
    /// Read the training file (CSV/TSV) in batches into quantised pages, never whole (external
    /// memory: `tree_method=hist`, on the CPU unless `device=cuda`, which grows each tree from its
    /// sampled rows; the model is the one of the whole file).
    #[arg(long)]
    pub(crate) external_memory: bool,
    /// Rows a batch with --external-memory.
    #[arg(long, default_value_t = 262_144, requires = "external_memory")]
    pub(crate) batch_rows: usize,
    /// With --external-memory: pages past --host-cache go to an unnamed file in this directory,
    /// which the system removes however the run ends.
    #[arg(long, value_name = "DIR", requires = "external_memory")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// With --cache-dir: bytes of pages kept in host memory first (such as 4GiB; default: none).
    #[arg(long, value_name = "SIZE", requires = "cache_dir")]
    pub(crate) host_cache: Option<String>,
}

#[derive(Args)]
pub(crate) struct PredictArgs {
    /// Data to predict.
    pub(crate) data: PathBuf,
    #[command(flatten)]
    pub(crate) input: DataArgs,
    /// The model (XGBoost JSON, written by `boost train` or by XGBoost).
    #[arg(long, short)]
    pub(crate) model: PathBuf,
    /// Where to write the predictions (default, or `-`: standard output).
    #[arg(long, short)]
    pub(crate) output: Option<PathBuf>,
    /// The data has no label column: every column is a feature.
    #[arg(long)]
    pub(crate) no_label: bool,
    /// Raw margins instead of transformed predictions.
    #[arg(long)]
    pub(crate) margin: bool,
    /// Leaf indices (one per tree) instead of predictions.
    #[arg(long, conflicts_with = "margin")]
    pub(crate) leaf: bool,
    /// SHAP values instead of predictions (XGBoost's pred_contribs): a column a feature and the
    /// bias (per output of a multi-output model), with a header; each row sums to the margin.
    #[arg(long, conflicts_with_all = ["margin", "leaf"])]
    pub(crate) contribs: bool,
    /// SHAP interaction values (XGBoost's pred_interactions): a column a pair of features
    /// (`a*b`, the bias last), with a header.
    #[arg(long, conflicts_with_all = ["margin", "leaf", "contribs"])]
    pub(crate) interactions: bool,
    /// With --contribs or --interactions: Saabas' approximation (XGBoost's approx_contribs).
    #[arg(long)]
    pub(crate) approx_contribs: bool,
    /// With --contribs: also write the SHAP summary plot (SVG): the features ranked by mean
    /// |SHAP value|, each row's value a dot coloured by the feature's value.
    #[arg(long, value_name = "FILE.svg", requires = "contribs")]
    pub(crate) shap_plot: Option<PathBuf>,
    /// Boosting rounds BEGIN:END to use (XGBoost's iteration_range; 0:0 = all).
    #[arg(long, default_value = "0:0")]
    pub(crate) iteration_range: String,
    /// Where to predict, in XGBoost's spelling: cpu, cuda, cuda:N, gpu, auto (a GPU when one is
    /// usable). The values are the same bits on either.
    #[arg(long, default_value = "cpu")]
    pub(crate) device: String,
}

#[derive(Args)]
pub(crate) struct EvalArgs {
    /// Labelled data.
    pub(crate) data: PathBuf,
    #[command(flatten)]
    pub(crate) input: DataArgs,
    /// The model (XGBoost JSON).
    #[arg(long, short)]
    pub(crate) model: PathBuf,
    /// Metrics (default: the objective's).
    #[arg(long = "metric")]
    pub(crate) metrics: Vec<String>,
}
