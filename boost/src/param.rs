//! Training parameters with XGBoost's names, aliases, defaults and ranges.
//!
//! Ranges are XGBoost's (its `TrainParam` and learner parameters), checked when a value is set; a
//! value out of range is an [`Error::InvalidParameter`] naming the parameter. Where we are stricter,
//! it is because the value cannot give a useful model here: `subsample=0` (XGBoost's range starts at
//! 0, and the tree then has no rows). `max_depth=0` (no depth limit) needs a leaf limit, as in
//! XGBoost: `max_leaves > 0`, with either growth policy. The test `xgboost_ranges` is the table.

use crate::{Error, Result};

/// How the tree grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowPolicy {
    /// Level by level (XGBoost's default).
    Depthwise,
    /// The leaf with the largest loss reduction first.
    Lossguide,
    /// Level by level, every node of a level split on the same feature and threshold (CatBoost's
    /// symmetric trees: `2^depth` leaves, a leaf's index one bit a level); spelled `oblivious`
    /// or `SymmetricTree`.
    Oblivious,
}

/// How `subsample` draws a tree's rows (`sampling_method`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SamplingMethod {
    /// Every row with probability `subsample` (XGBoost's default).
    #[default]
    Uniform,
    /// Rows with large gradients more often, the drawn ones' gradients scaled up: minimal variance
    /// sampling (`boost_kernels::mvs`), XGBoost's `gradient_based`. Good trees from a smaller
    /// `subsample` than uniform sampling needs.
    GradientBased,
}

/// The tree method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeMethod {
    /// XGBoost's histogram method.
    Hist,
    /// XGBoost's exact greedy method: every boundary between distinct values is a candidate
    /// (depthwise growth only).
    Exact,
}

/// The default of [`TreeParams::exact_interleaved_levels`]: measured on an H200 (docs/benchmarks.md).
pub const EXACT_INTERLEAVED_LEVELS: u32 = 0;

/// Parameters of one tree's construction.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeParams {
    /// Learning rate: each leaf value is scaled by it.
    pub eta: f32,
    /// Minimum loss reduction of a split (`min_split_loss`).
    pub gamma: f32,
    /// Maximum depth (0: no limit, with `lossguide`).
    pub max_depth: u32,
    /// Maximum leaves (0: no limit).
    pub max_leaves: u32,
    /// Minimum hessian sum of a child.
    pub min_child_weight: f32,
    /// Maximum step of a leaf value (0: none).
    pub max_delta_step: f32,
    /// L2 regularisation of leaf values (`reg_lambda`).
    pub lambda: f32,
    /// L1 regularisation of leaf values (`reg_alpha`).
    pub alpha: f32,
    /// Share of rows sampled for each tree.
    pub subsample: f32,
    /// How the rows are sampled.
    pub sampling_method: SamplingMethod,
    /// Share of features sampled for each tree.
    pub colsample_bytree: f32,
    /// Share of the tree's features sampled for each level.
    pub colsample_bylevel: f32,
    /// Share of the level's features sampled for each node.
    pub colsample_bynode: f32,
    /// Depth-wise or loss-guided growth.
    pub grow_policy: GrowPolicy,
    /// Bins a feature's values are quantised into.
    pub max_bin: u32,
    /// Categorical features with fewer categories get one-hot splits, the others partition splits
    /// (`boost_kernels::categorical`).
    pub max_cat_to_onehot: u32,
    /// The most categories a partition split's scan considers on either side.
    pub max_cat_threshold: u32,
    /// The exact method on a GPU: levels `0..exact_interleaved_levels` find their splits with the
    /// entries in each feature's value order (Mitchell & Frank's interleaved algorithm: a masked
    /// scan a node), deeper levels with them grouped by node (the sorting algorithm). The CPU's
    /// walk is always in value order.
    pub exact_interleaved_levels: u32,
    /// XGBoost's `monotone_constraints`: each feature's direction (1 increasing, -1 decreasing,
    /// 0 none); features past the end have none.
    pub monotone_constraints: Vec<i32>,
    /// XGBoost's `interaction_constraints`: sets of features that may appear together on a path
    /// (`tree::constraints`); empty for none.
    pub interaction_constraints: Vec<Vec<u32>>,
    /// Each feature's weight in column sampling, from the training data's
    /// `MetaInfo::feature_weights` (empty: uniform).
    pub feature_weights: Vec<f32>,
    /// Trees grown a round for each output (XGBoost's `num_parallel_tree`; more than 1: a random
    /// forest a round), each from the round's gradients with `eta / num_parallel_tree`.
    pub num_parallel_tree: u32,
}

impl Default for TreeParams {
    fn default() -> Self {
        Self {
            eta: 0.3,
            gamma: 0.0,
            max_depth: 6,
            max_leaves: 0,
            min_child_weight: 1.0,
            max_delta_step: 0.0,
            lambda: 1.0,
            alpha: 0.0,
            subsample: 1.0,
            sampling_method: SamplingMethod::Uniform,
            colsample_bytree: 1.0,
            colsample_bylevel: 1.0,
            colsample_bynode: 1.0,
            grow_policy: GrowPolicy::Depthwise,
            max_bin: 256,
            max_cat_to_onehot: 4,
            max_cat_threshold: 64,
            exact_interleaved_levels: EXACT_INTERLEAVED_LEVELS,
            monotone_constraints: Vec::new(),
            interaction_constraints: Vec::new(),
            feature_weights: Vec::new(),
            num_parallel_tree: 1,
        }
    }
}

impl TreeParams {
    /// The monotone direction of `feature` (0 when unconstrained).
    #[inline]
    pub fn monotone(&self, feature: u32) -> i32 {
        self.monotone_constraints.get(feature as usize).copied().unwrap_or(0)
    }

    /// The parameters of gains and leaf weights, as the shared split arithmetic
    /// (`boost_kernels::split`) takes them.
    pub fn split(&self) -> boost_kernels::split::SplitParams {
        boost_kernels::split::SplitParams {
            eta: self.eta,
            gamma: self.gamma,
            min_child_weight: self.min_child_weight,
            max_delta_step: self.max_delta_step,
            lambda: self.lambda,
            alpha: self.alpha,
        }
    }

    /// The categorical split parameters, as the shared arithmetic (`boost_kernels::categorical`)
    /// takes them.
    pub fn categorical(&self) -> boost_kernels::categorical::CategoricalParams {
        boost_kernels::categorical::CategoricalParams {
            max_cat_to_onehot: self.max_cat_to_onehot,
            max_cat_threshold: self.max_cat_threshold,
        }
    }
}

/// Where training runs (`device=`): XGBoost's `cpu`, `cuda`, `cuda:N` (`gpu`, `gpu:N`), and `auto`, a
/// GPU when one can be opened, else the CPU. The trees are the same on either (the CPU backend is
/// the GPU backend's oracle, bit for bit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Device {
    #[default]
    /// The CPU (XGBoost's default).
    Cpu,
    /// The CUDA GPU with this ordinal; training fails with [`crate::Error::Device`] when it cannot be
    /// opened. `PRIMITIVES_DEVICE` (`cuda:N`, `emulator`) overrides which device that is, so that the
    /// tests can train on the SIMT emulator.
    Cuda {
        /// The device's index among the CUDA devices (0 first).
        ordinal: usize,
    },
    /// CUDA device 0 when it can be opened, otherwise the CPU ([`crate::learner::Trained::device`]
    /// says which, and why).
    Auto,
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda { ordinal } => write!(f, "cuda:{ordinal}"),
            Device::Auto => write!(f, "auto"),
        }
    }
}

impl std::str::FromStr for Device {
    type Err = Error;

    /// XGBoost's names: `cpu`, `cuda`, `cuda:N`, `gpu`, `gpu:N`, `auto`.
    fn from_str(value: &str) -> Result<Self> {
        let ordinal = value.strip_prefix("cuda:").or_else(|| value.strip_prefix("gpu:"));
        Ok(match (value, ordinal.map(str::parse::<usize>)) {
            ("cpu", _) => Device::Cpu,
            ("cuda" | "gpu", _) => Device::Cuda { ordinal: 0 },
            ("auto", _) => Device::Auto,
            (_, Some(Ok(ordinal))) => Device::Cuda { ordinal },
            _ => {
                return Err(Error::param(
                    "device",
                    format!("`{value}`: expected cpu, cuda, cuda:N, gpu, gpu:N or auto"),
                ))
            }
        })
    }
}

/// Everything `train` takes besides the data.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// The tree-building parameters.
    pub tree: TreeParams,
    /// `hist` or `exact`.
    pub tree_method: TreeMethod,
    /// The objective's XGBoost name (`binary:logistic`, ...).
    pub objective: String,
    /// Objective-specific parameters (`num_class`, `scale_pos_weight`, `huber_slope`, ...), passed on.
    pub objective_params: Vec<(String, String)>,
    /// `None`: estimated from the labels (XGBoost's `boost_from_average`).
    pub base_score: Option<f32>,
    /// `eval_metric`s, in log order.
    pub eval_metrics: Vec<String>,
    /// No default metric when `eval_metric` names none.
    pub disable_default_eval_metric: bool,
    /// The seed of row and column sampling.
    pub seed: u64,
    /// CPU threads (0: every core).
    pub nthread: usize,
    /// Where the trees are built.
    pub device: Device,
    /// The CUDA devices of a `hist` run, from `device`'s ordinal on (XGBoost's old `n_gpus`, which
    /// XGBoost 1.0 removed): the rows split evenly over them, the trees the one device's.
    pub n_gpus: usize,
    /// The most device memory a GPU run's buffers may hold at once on each device, in bytes
    /// (`device_memory_limit`: a count of bytes or a size such as `2GiB`, `512MB`); `None`: what
    /// the device has. Training that would pass it stops with an error naming the phase.
    pub device_memory_limit: Option<u64>,
    /// How much is logged (0 to 3); 2 adds the run's phases with their host time (the CLI's
    /// summary), 3 their device time on a GPU too (CUDA events around each step).
    pub verbosity: u32,
    /// How categorical features with partition splits' many categories are trained.
    pub categorical_encoding: CategoricalEncoding,
    /// The prior's weight, in rows, of [`CategoricalEncoding::OrderedTarget`].
    pub ordered_target_prior_weight: f64,
}

/// `categorical_encoding`: how categorical features with at least `max_cat_to_onehot` categories
/// (those XGBoost gives partition splits) are trained. Features with fewer keep one-hot splits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CategoricalEncoding {
    /// `native`: XGBoost's partition splits over the categories sorted by gradient statistics.
    #[default]
    Native,
    /// `ordered_target`: CatBoost's ordered target statistics, a number a category that the trees
    /// split like any numeric feature (the model keeps the statistics; XGBoost cannot read it).
    OrderedTarget,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            tree: TreeParams::default(),
            tree_method: TreeMethod::Hist,
            objective: "reg:squarederror".into(),
            objective_params: Vec::new(),
            base_score: None,
            eval_metrics: Vec::new(),
            disable_default_eval_metric: false,
            seed: 0,
            nthread: 0,
            n_gpus: 1,
            device_memory_limit: None,
            device: Device::Cpu,
            verbosity: 1,
            categorical_encoding: CategoricalEncoding::Native,
            ordered_target_prior_weight: 1.0,
        }
    }
}

/// A size in bytes (of parameter `name`, which errors name): a whole number, or a number with a unit (`B`, `KB`, `MB`, `GB`, `TB` in
/// powers of 1000; `KiB`, `MiB`, `GiB`, `TiB` in powers of 1024), at least 1 MiB.
pub fn byte_size(name: &str, value: &str) -> Result<u64> {
    let text = value.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
    let (number, unit) = (text[..split].trim(), &text[split..]);
    let scale: u64 = match unit {
        "" | "B" => 1,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        _ => return Err(Error::param(name, format!("`{value}`: unknown unit `{unit}` (B, MB, GB, MiB, GiB, ...)"))),
    };
    let bytes = number.parse::<f64>().ok().map(|n| n * scale as f64).filter(|b| b.is_finite());
    match bytes {
        Some(b) if b >= (1u64 << 20) as f64 && b < u64::MAX as f64 => Ok(b as u64),
        Some(_) => Err(Error::param(name, format!("`{value}`: must be at least 1 MiB"))),
        None => Err(Error::param(name, format!("`{value}` is not a size in bytes (e.g. 2GiB)"))),
    }
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| {
        // An unsigned parameter given a negative or fractional number says what it takes.
        let kind = match value.trim().parse::<f64>() {
            Ok(v) if v < 0.0 && "0".parse::<T>().is_ok() && "-1".parse::<T>().is_err() => "must be a whole number >= 0",
            Ok(_) if "1.5".parse::<T>().is_err() => "must be a whole number",
            _ => "is not a number",
        };
        Error::param(name, format!("`{value}` {kind}"))
    })
}

/// XGBoost 3.4's tree-booster and learning parameters that [`Params::set`] does not take yet: named
/// as such rather than as unknown.
const XGBOOST_PARAMETERS_NOT_YET: [&str; 9] = [
    "enable_categorical",
    "max_cat_to_onehot",
    "max_cat_threshold",
    "multi_strategy",
    "max_cached_hist_node",
    "refresh_leaf",
    "process_type",
    "updater",
    "sketch_ratio",
];

/// The parameters [`Params::set`] takes, by XGBoost's names (aliases after a slash), for help texts.
pub const PARAMETER_NAMES: &str = "eta/learning_rate, gamma/min_split_loss, max_depth, max_leaves, \
min_child_weight, max_delta_step, lambda/reg_lambda, alpha/reg_alpha, subsample, colsample_bytree, \
colsample_bylevel, colsample_bynode, monotone_constraints, interaction_constraints, max_bin, max_cat_to_onehot, max_cat_threshold, grow_policy, tree_method, booster, num_parallel_tree, \
objective, base_score, eval_metric, disable_default_eval_metric, seed/random_state, nthread/n_jobs, \
n_gpus, device, device_memory_limit, verbosity, sampling_method, categorical_encoding, ordered_target_prior_weight, validate_parameters, and the objectives' and metrics' \
(scale_pos_weight, huber_slope, num_class, lambdarank_*, ndcg_exp_gain)";

/// XGBoost's `monotone_constraints` string: `(1,-1,0)` (or with brackets, or bare), each 1, -1 or 0;
/// empty for none.
fn monotone_constraints(value: &str) -> Result<Vec<i32>> {
    let name = "monotone_constraints";
    let inner = value.trim().trim_start_matches(['(', '[']).trim_end_matches([')', ']']);
    let directions: Vec<i32> = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.parse::<i32>() {
            Ok(d @ -1..=1) => Ok(d),
            _ => Err(Error::param(name, format!("`{s}` in `{value}`: each must be 1, -1 or 0"))),
        })
        .collect::<Result<_>>()?;
    Ok(if directions.iter().all(|&d| d == 0) { Vec::new() } else { directions })
}

/// XGBoost's `interaction_constraints` string: a JSON list of lists of feature indices, such as
/// `[[0, 1], [2, 3, 4]]`.
fn interaction_constraints(value: &str) -> Result<Vec<Vec<u32>>> {
    let name = "interaction_constraints";
    if value.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str::<Vec<Vec<u32>>>(value).map_err(|e| {
        Error::param(
            name,
            format!("`{value}`: expected a list of lists of feature indices such as [[0, 1], [2, 3]] ({e})"),
        )
    })
}

/// Checks the constraints against the training data's `features`: XGBoost's rules (a monotone
/// vector no longer than the features, interaction sets of existing features).
pub fn check_constraints(t: &TreeParams, features: usize) -> Result<()> {
    if t.monotone_constraints.len() > features {
        let n = t.monotone_constraints.len();
        return Err(Error::param("monotone_constraints", format!("{n} directions for {features} features")));
    }
    if let Some(&f) = t.interaction_constraints.iter().flatten().find(|&&f| f as usize >= features) {
        return Err(Error::param(
            "interaction_constraints",
            format!("feature {f} does not exist (the data has {features})"),
        ));
    }
    Ok(())
}

fn check(name: &str, ok: bool, rule: &str, value: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::param(name, format!("{value} is out of range: {rule}")))
    }
}

fn fraction(name: &str, value: &str) -> Result<f32> {
    let v: f32 = number(name, value)?;
    check(name, v > 0.0 && v <= 1.0, "must be in (0, 1]", value)?;
    Ok(v)
}

/// A column sampling ratio: XGBoost's `[0, 1]`; 0 keeps one feature, as XGBoost's sampler does.
fn column_fraction(name: &str, value: &str) -> Result<f32> {
    let v: f32 = number(name, value)?;
    check(name, (0.0..=1.0).contains(&v), "must be in [0, 1]", value)?;
    Ok(v)
}

fn flag(name: &str, value: &str) -> Result<bool> {
    match value.trim() {
        "1" | "true" | "True" => Ok(true),
        "0" | "false" | "False" => Ok(false),
        _ => Err(Error::param(name, format!("`{value}`: expected 0, 1, true or false"))),
    }
}

fn non_negative(name: &str, value: &str) -> Result<f32> {
    let v: f32 = number(name, value)?;
    check(name, v >= 0.0 && v.is_finite(), "must be >= 0", value)?;
    Ok(v)
}

impl Params {
    /// Parameters from XGBoost-named (name, value) pairs over the defaults; unknown names and values
    /// out of range are errors naming the parameter.
    pub fn from_pairs<S: AsRef<str>>(pairs: &[(S, S)]) -> Result<Self> {
        let mut p = Params::default();
        for (name, value) in pairs {
            p.set(name.as_ref(), value.as_ref())?;
        }
        p.validate()?;
        Ok(p)
    }

    /// Sets one parameter.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let t = &mut self.tree;
        match name {
            "eta" | "learning_rate" => {
                // XGBoost's lower bound is 0 (inclusive): eta=0 trains trees that change nothing.
                t.eta = non_negative(name, value)?;
            }
            "gamma" | "min_split_loss" => t.gamma = non_negative(name, value)?,
            "max_depth" => t.max_depth = number(name, value)?,
            "max_leaves" => t.max_leaves = number(name, value)?,
            "min_child_weight" => t.min_child_weight = non_negative(name, value)?,
            "max_delta_step" => {
                t.max_delta_step = non_negative(name, value)?;
                self.objective_params.push((name.into(), value.into()));
            }
            "lambda" | "reg_lambda" => t.lambda = non_negative(name, value)?,
            "alpha" | "reg_alpha" => t.alpha = non_negative(name, value)?,
            "subsample" => t.subsample = fraction(name, value)?,
            "colsample_bytree" => t.colsample_bytree = column_fraction(name, value)?,
            "colsample_bylevel" => t.colsample_bylevel = column_fraction(name, value)?,
            "colsample_bynode" => t.colsample_bynode = column_fraction(name, value)?,
            "exact_interleaved_levels" => t.exact_interleaved_levels = number(name, value)?,
            "monotone_constraints" => t.monotone_constraints = monotone_constraints(value)?,
            "interaction_constraints" => t.interaction_constraints = interaction_constraints(value)?,
            "max_bin" => {
                t.max_bin = number(name, value)?;
                check(name, t.max_bin >= 2, "must be >= 2", value)?;
            }
            "max_cat_to_onehot" => {
                t.max_cat_to_onehot = number(name, value)?;
                check(name, t.max_cat_to_onehot >= 1, "must be >= 1", value)?;
            }
            "max_cat_threshold" => {
                t.max_cat_threshold = number(name, value)?;
                check(name, t.max_cat_threshold >= 1, "must be >= 1", value)?;
            }
            "grow_policy" => {
                t.grow_policy = match value {
                    "depthwise" => GrowPolicy::Depthwise,
                    "lossguide" => GrowPolicy::Lossguide,
                    "oblivious" | "SymmetricTree" => GrowPolicy::Oblivious,
                    _ => {
                        return Err(Error::param(
                            name,
                            format!("`{value}`: expected depthwise, lossguide or oblivious (SymmetricTree)"),
                        ))
                    }
                }
            }
            "tree_method" => {
                self.tree_method = match value {
                    "hist" | "auto" => TreeMethod::Hist,
                    "exact" => TreeMethod::Exact,
                    _ => return Err(Error::param(name, format!("`{value}`: expected hist, auto or exact"))),
                }
            }
            "booster" => {
                if value != "gbtree" {
                    return Err(Error::param(name, format!("`{value}`: only gbtree is supported")));
                }
            }
            "num_parallel_tree" => {
                t.num_parallel_tree = number(name, value)?;
                check(name, t.num_parallel_tree >= 1, "must be at least 1", value)?;
            }
            "objective" => self.objective = value.into(),
            "base_score" => {
                let v: f32 = number(name, value)?;
                check(name, v.is_finite(), "must be finite", value)?;
                self.base_score = Some(v);
            }
            "eval_metric" => self.eval_metrics.push(value.into()),
            "disable_default_eval_metric" => self.disable_default_eval_metric = flag(name, value)?,
            // XGBoost's seed is a signed 64-bit integer; its bits seed the generator.
            "seed" | "random_state" => self.seed = number::<i64>(name, value)? as u64,
            "nthread" | "n_jobs" => self.nthread = number(name, value)?,
            "n_gpus" => {
                self.n_gpus = number(name, value)?;
                check(name, self.n_gpus >= 1, "must be at least 1", value)?;
            }
            "device" => self.device = value.parse()?,
            "device_memory_limit" => self.device_memory_limit = Some(byte_size(name, value)?),
            "verbosity" => {
                self.verbosity = number(name, value)?;
                check(name, self.verbosity <= 3, "must be 0 (silent) to 3 (debug)", value)?;
            }
            "categorical_encoding" => {
                self.categorical_encoding = match value.trim() {
                    "native" => CategoricalEncoding::Native,
                    "ordered_target" => CategoricalEncoding::OrderedTarget,
                    _ => return Err(Error::param(name, format!("`{value}`: expected native or ordered_target"))),
                }
            }
            "ordered_target_prior_weight" => {
                let v: f64 = number(name, value)?;
                check(name, v > 0.0 && v.is_finite(), "must be a finite number > 0", value)?;
                self.ordered_target_prior_weight = v;
            }
            "sampling_method" => {
                self.tree.sampling_method = match value.trim() {
                    "uniform" => SamplingMethod::Uniform,
                    "gradient_based" => SamplingMethod::GradientBased,
                    _ => return Err(Error::param(name, format!("`{value}`: expected uniform or gradient_based"))),
                }
            }
            "validate_parameters" | "silent" => {}
            // Passed on to the objective and the metrics, which check the values.
            _ if crate::objective::OBJECTIVE_PARAMETERS.contains(&name)
                || crate::metric::METRIC_PARAMETERS.contains(&name) =>
            {
                self.objective_params.push((name.into(), value.into()))
            }
            "feature_weights" => {
                let how = "belongs to the data: `DMatrix::set_feature_weights`, Python's `DMatrix(feature_weights=)`";
                return Err(Error::param(name, how));
            }
            "missing" => {
                let how = "belongs to the data: `DMatrix::with_missing`, `--missing VALUE` on the command line, \
                           Python's `DMatrix(missing=)`";
                return Err(Error::param(name, how));
            }
            _ if XGBOOST_PARAMETERS_NOT_YET.contains(&name) => {
                return Err(Error::param(name, "an XGBoost parameter that is not supported yet"))
            }
            _ => return Err(Error::param(name, "unknown parameter (see `boost train --help` for the supported ones)")),
        }
        Ok(())
    }

    /// Checks combinations of parameters.
    pub fn validate(&self) -> Result<()> {
        let t = &self.tree;
        if self.tree_method == TreeMethod::Exact {
            // XGBoost's exact method grows a level at a time, every node of it.
            if t.grow_policy != GrowPolicy::Depthwise {
                return Err(Error::param("grow_policy", "the exact tree method grows depthwise only"));
            }
            if t.max_leaves > 0 {
                return Err(Error::param("max_leaves", "the exact tree method grows depthwise: leave max_leaves 0"));
            }
        }
        if t.grow_policy == GrowPolicy::Oblivious {
            // Every node of a level splits: the depth bounds the tree, the leaves are 2^depth.
            if t.max_depth == 0 {
                return Err(Error::param("max_depth", "0: an oblivious tree needs a depth limit"));
            }
            if t.max_leaves > 0 {
                return Err(Error::param("max_leaves", "an oblivious tree has 2^max_depth leaves; leave max_leaves 0"));
            }
        }
        let constrained = !t.monotone_constraints.is_empty() || !t.interaction_constraints.is_empty();
        if constrained && t.grow_policy == GrowPolicy::Oblivious {
            // A level shares one split, so one node's bounds or path cannot decide it.
            let name =
                if t.monotone_constraints.is_empty() { "interaction_constraints" } else { "monotone_constraints" };
            return Err(Error::param(name, "oblivious trees take no constraints: use depthwise or lossguide"));
        }
        if t.max_depth == 0 && t.max_leaves == 0 {
            // XGBoost refuses an unbounded tree: with depthwise, max_depth=0 needs max_leaves.
            return Err(Error::param("max_depth", "0 (no depth limit) needs max_leaves > 0 to bound the tree"));
        }
        Ok(())
    }
}

/// Parameters by typed methods, XGBoost's names: each method records `(name, value)` and
/// [`ParamsBuilder::build`] reads them as [`Params::from_pairs`] does, so both ways check the same
/// ranges. [`ParamsBuilder::set`] takes any other parameter by name.
///
/// ```
/// use boost::{Device, Params};
///
/// let params = Params::builder().objective("binary:logistic").max_depth(6).eta(0.1).eval_metric("auc").build()?;
/// assert_eq!((params.tree.max_depth, params.eval_metrics.as_slice()), (6, &["auc".to_string()][..]));
/// assert!(Params::builder().subsample(1.5).build().is_err(), "subsample is in (0, 1]");
/// let on_gpu = Params::builder().device(Device::Cuda { ordinal: 0 }).build()?;
/// assert_eq!(on_gpu.device, Device::Cuda { ordinal: 0 });
/// # Ok::<(), boost::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ParamsBuilder {
    pairs: Vec<(String, String)>,
}

macro_rules! typed_parameters {
    ($($(#[$doc:meta])* $method:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        pub fn $method(self, value: $ty) -> Self {
            self.set(stringify!($method), &value.to_string())
        }
    )*};
}

impl ParamsBuilder {
    /// Any parameter by its XGBoost name (`num_class`, `huber_slope`, `lambdarank_pair_method`, ...).
    pub fn set(mut self, name: &str, value: &str) -> Self {
        self.pairs.push((name.into(), value.into()));
        self
    }

    typed_parameters! {
        /// The objective (`reg:squarederror`, `binary:logistic`, `multi:softprob`, `rank:ndcg`, ...).
        objective: &str;
        /// A metric of the evaluation log (each call adds one).
        eval_metric: &str;
        /// Learning rate.
        eta: f32;
        /// Minimum loss reduction of a split.
        gamma: f32;
        /// Maximum depth.
        max_depth: u32;
        /// Maximum leaves (with `grow_policy` `lossguide`).
        max_leaves: u32;
        /// Minimum hessian sum of a child.
        min_child_weight: f32;
        /// Maximum step of a leaf value.
        max_delta_step: f32;
        /// L2 regularisation of leaf values.
        lambda: f32;
        /// L1 regularisation of leaf values.
        alpha: f32;
        /// Share of rows sampled for each tree.
        subsample: f32;
        /// Share of features sampled for each tree.
        colsample_bytree: f32;
        /// Share of the tree's features sampled for each level.
        colsample_bylevel: f32;
        /// Share of the level's features sampled for each node.
        colsample_bynode: f32;
        /// `depthwise` or `lossguide`.
        grow_policy: &str;
        /// `uniform` or `gradient_based`.
        sampling_method: &str;
        /// Bins a feature.
        max_bin: u32;
        /// Categorical features with fewer categories get one-hot splits.
        max_cat_to_onehot: u32;
        /// The most categories a partition split's scan considers on either side.
        max_cat_threshold: u32;
        /// Classes of a multiclass objective.
        num_class: u32;
        /// The base score (in the objective's output space).
        base_score: f32;
        /// The seed of row and column sampling.
        seed: u64;
        /// CPU threads (0: every core).
        nthread: usize;
        /// CUDA devices of the run, from `device`'s ordinal on.
        n_gpus: usize;
        /// How much is logged (0 to 3).
        verbosity: u32;
    }

    /// Where the trees are built.
    pub fn device(self, device: Device) -> Self {
        self.set("device", &device.to_string())
    }

    /// The parameters, each checked as [`Params::from_pairs`] checks it.
    pub fn build(self) -> Result<Params> {
        Params::from_pairs(&self.pairs)
    }
}

impl Params {
    /// A [`ParamsBuilder`] over the defaults.
    pub fn builder() -> ParamsBuilder {
        ParamsBuilder::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_in_xgboost_spellings() {
        let p =
            Params::from_pairs(&[("monotone_constraints", "(1,-1, 0)"), ("interaction_constraints", "[[0, 2], [1]]")]);
        let t = p.unwrap().tree;
        assert_eq!((t.monotone_constraints.as_slice(), t.monotone(1), t.monotone(7)), (&[1, -1, 0][..], -1, 0));
        assert_eq!(t.interaction_constraints, [vec![0, 2], vec![1]]);
        let t = Params::from_pairs(&[("monotone_constraints", "[0,0]")]).unwrap().tree;
        assert!(t.monotone_constraints.is_empty(), "all zeros is no constraint");
        assert!(check_constraints(&t, 1).is_ok());
        let t = Params::from_pairs(&[("monotone_constraints", "(1,-1)")]).unwrap().tree;
        assert!(
            matches!(check_constraints(&t, 1), Err(Error::InvalidParameter { name, .. }) if name == "monotone_constraints")
        );
        let t = Params::from_pairs(&[("interaction_constraints", "[[0, 5]]")]).unwrap().tree;
        let e = check_constraints(&t, 5).unwrap_err();
        assert!(e.to_string().contains("feature 5"), "{e}");
    }

    #[test]
    fn xgboost_names_aliases_and_defaults() {
        let p = Params::from_pairs(&[("learning_rate", "0.1"), ("reg_lambda", "2"), ("max_depth", "8")]).unwrap();
        assert_eq!((p.tree.eta, p.tree.lambda, p.tree.max_depth), (0.1, 2.0, 8));
        assert_eq!(p.tree.max_bin, 256);
        assert_eq!(p.objective, "reg:squarederror");
        let p = Params::from_pairs(&[("objective", "multi:softprob"), ("num_class", "3")]).unwrap();
        assert_eq!(p.objective_params, vec![("num_class".to_string(), "3".to_string())]);
    }

    #[test]
    fn bad_parameters_name_themselves() {
        for (pairs, name) in [
            (vec![("eta", "-1")], "eta"),
            (vec![("eta", "abc")], "eta"),
            (vec![("subsample", "1.5")], "subsample"),
            (vec![("max_depth", "0")], "max_depth"),
            (vec![("grow_policy", "sideways")], "grow_policy"),
            (vec![("grow_policy", "oblivious"), ("max_leaves", "8")], "max_leaves"),
            (vec![("grow_policy", "SymmetricTree"), ("max_depth", "0"), ("max_leaves", "8")], "max_depth"),
            (vec![("tree_method", "exact"), ("grow_policy", "lossguide")], "grow_policy"),
            (vec![("tree_method", "exact"), ("grow_policy", "oblivious")], "grow_policy"),
            (vec![("tree_method", "exact"), ("max_leaves", "16")], "max_leaves"),
            (vec![("no_such_thing", "1")], "no_such_thing"),
            (vec![("lambda", "-1")], "lambda"),
            (vec![("monotone_constraints", "(1,2)")], "monotone_constraints"),
            (vec![("monotone_constraints", "(1,a)")], "monotone_constraints"),
            (vec![("monotone_constraints", "(1)"), ("grow_policy", "oblivious")], "monotone_constraints"),
            (vec![("interaction_constraints", "[[0, -1]]")], "interaction_constraints"),
            (vec![("interaction_constraints", "[0, 1]")], "interaction_constraints"),
            (vec![("interaction_constraints", "[[0], [1]]"), ("grow_policy", "oblivious")], "interaction_constraints"),
        ] {
            match Params::from_pairs(&pairs) {
                Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{pairs:?}: {other:?}"),
            }
        }
        assert!(Params::from_pairs(&[("max_depth", "0"), ("grow_policy", "lossguide"), ("max_leaves", "31")]).is_ok());
    }

    /// Every parameter we accept, at and beyond the edges of XGBoost's range: (name, value,
    /// accepted). Where we differ from XGBoost the row says so.
    #[test]
    fn xgboost_ranges() {
        let table: &[(&str, &str, bool)] = &[
            ("eta", "0", true),
            ("eta", "1.5", true),
            ("eta", "-0.1", false),
            ("learning_rate", "nan", false),
            ("gamma", "0", true),
            ("min_split_loss", "-1", false),
            ("max_depth", "0", false), // unbounded without max_leaves, as XGBoost
            ("max_depth", "1", true),
            ("max_depth", "-1", false),
            ("max_leaves", "0", true),
            ("max_leaves", "-2", false),
            ("max_bin", "2", true),
            ("max_bin", "1", false),
            ("max_bin", "65536", true),
            ("min_child_weight", "0", true),
            ("min_child_weight", "-0.5", false),
            ("max_delta_step", "0", true),
            ("max_delta_step", "-1", false),
            ("lambda", "0", true),
            ("reg_lambda", "-1", false),
            ("alpha", "0", true),
            ("reg_alpha", "inf", false),
            ("subsample", "1", true),
            ("subsample", "0", false), // XGBoost accepts 0; a tree of no rows is useless
            ("subsample", "1.01", false),
            ("colsample_bytree", "0", true), // one feature, as XGBoost's sampler
            ("colsample_bylevel", "1", true),
            ("colsample_bynode", "1.1", false),
            ("colsample_bynode", "-0.1", false),
            ("grow_policy", "lossguide", true),
            ("grow_policy", "leafwise", false),
            ("grow_policy", "oblivious", true),
            ("grow_policy", "SymmetricTree", true),
            ("tree_method", "hist", true),
            ("tree_method", "auto", true),
            ("tree_method", "exact", true),
            ("tree_method", "approx", false),
            ("booster", "gbtree", true),
            ("booster", "dart", false),
            ("num_parallel_tree", "1", true),
            ("num_parallel_tree", "2", true),
            ("num_parallel_tree", "0", false),
            ("base_score", "0.5", true),
            ("base_score", "inf", false),
            ("disable_default_eval_metric", "1", true),
            ("disable_default_eval_metric", "yes", false),
            ("seed", "-7", true),
            ("seed", "1.5", false),
            ("nthread", "0", true),
            ("nthread", "-1", false),
            ("n_gpus", "2", true),
            ("n_gpus", "0", false),
            ("device", "cpu", true),
            ("device", "cuda", true),
            ("device", "cuda:1", true),
            ("device", "gpu:0", true),
            ("device", "auto", true),
            ("device", "cuda:x", false),
            ("device", "tpu", false),
            ("verbosity", "3", true),
            ("verbosity", "4", false),
            ("sampling_method", "uniform", true),
            ("sampling_method", "gradient_based", true),
            ("sampling_method", "goss", false),
            ("device_memory_limit", "2GiB", true),
            ("device_memory_limit", "1500 MB", true),
            ("device_memory_limit", "1048576", true),
            ("device_memory_limit", "1000", false),
            ("device_memory_limit", "2 parsecs", false),
            ("device_memory_limit", "-1GB", false),
        ];
        let device = |value: &str| Params::from_pairs(&[("device", value)]).unwrap().device;
        assert_eq!(device("gpu"), Device::Cuda { ordinal: 0 });
        assert_eq!(device("cuda:3"), Device::Cuda { ordinal: 3 });
        assert_eq!(device("auto"), Device::Auto);
        let limit = |value: &str| Params::from_pairs(&[("device_memory_limit", value)]).unwrap().device_memory_limit;
        assert_eq!(
            (limit("1.5GiB"), limit("300MB"), limit(" 2097152 ")),
            (Some(3 << 29), Some(300_000_000), Some(2 << 20))
        );
        assert_eq!(Params::default().device, Device::Cpu, "XGBoost's default");
        for &(name, value, accepted) in table {
            match Params::from_pairs(&[(name, value)]) {
                Ok(_) => assert!(accepted, "{name}={value} was accepted"),
                Err(Error::InvalidParameter { name: named, .. }) => {
                    assert!(!accepted, "{name}={value} was refused");
                    assert_eq!(named, if name == "max_depth" && value == "0" { "max_depth" } else { name });
                }
                Err(other) => panic!("{name}={value}: {other:?}"),
            }
        }
        // max_depth=0 with a leaf limit, either policy.
        for policy in ["depthwise", "lossguide"] {
            let pairs = [("max_depth", "0"), ("max_leaves", "8"), ("grow_policy", policy)];
            assert!(Params::from_pairs(&pairs).is_ok(), "{policy}");
        }
    }
}
