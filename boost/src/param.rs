//! Training parameters with XGBoost's names, aliases, defaults and ranges.

use crate::{Error, Result};

/// How the tree grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowPolicy {
    /// Level by level (XGBoost's default).
    Depthwise,
    /// The leaf with the largest loss reduction first.
    Lossguide,
}

/// The tree method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeMethod {
    Hist,
}

/// Parameters of one tree's construction.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeParams {
    pub eta: f32,
    pub gamma: f32,
    pub max_depth: u32,
    pub max_leaves: u32,
    pub min_child_weight: f32,
    pub max_delta_step: f32,
    pub lambda: f32,
    pub alpha: f32,
    pub subsample: f32,
    pub colsample_bytree: f32,
    pub colsample_bylevel: f32,
    pub colsample_bynode: f32,
    pub grow_policy: GrowPolicy,
    pub max_bin: u32,
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
            colsample_bytree: 1.0,
            colsample_bylevel: 1.0,
            colsample_bynode: 1.0,
            grow_policy: GrowPolicy::Depthwise,
            max_bin: 256,
        }
    }
}

/// Where training runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    Cpu,
    /// CUDA when a GPU is usable (falls back to the CPU otherwise, saying so).
    Cuda,
}

/// Everything `train` takes besides the data.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub tree: TreeParams,
    pub tree_method: TreeMethod,
    pub objective: String,
    /// Objective-specific parameters (`num_class`, `scale_pos_weight`, `huber_slope`, ...), passed on.
    pub objective_params: Vec<(String, String)>,
    /// `None`: estimated from the labels (XGBoost's `boost_from_average`).
    pub base_score: Option<f32>,
    pub eval_metrics: Vec<String>,
    pub disable_default_eval_metric: bool,
    pub seed: u64,
    pub nthread: usize,
    pub device: Device,
    pub verbosity: u32,
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
            device: Device::Cpu,
            verbosity: 1,
        }
    }
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| Error::param(name, format!("`{value}` is not a valid number")))
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
                t.eta = number(name, value)?;
                check(name, t.eta > 0.0 && t.eta.is_finite(), "must be > 0", value)?;
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
            "colsample_bytree" => t.colsample_bytree = fraction(name, value)?,
            "colsample_bylevel" => t.colsample_bylevel = fraction(name, value)?,
            "colsample_bynode" => t.colsample_bynode = fraction(name, value)?,
            "max_bin" => {
                t.max_bin = number(name, value)?;
                check(name, t.max_bin >= 2, "must be >= 2", value)?;
            }
            "grow_policy" => {
                t.grow_policy = match value {
                    "depthwise" => GrowPolicy::Depthwise,
                    "lossguide" => GrowPolicy::Lossguide,
                    _ => return Err(Error::param(name, format!("`{value}`: expected depthwise or lossguide"))),
                }
            }
            "tree_method" => {
                self.tree_method = match value {
                    "hist" | "auto" => TreeMethod::Hist,
                    _ => return Err(Error::param(name, format!("`{value}` is not supported yet (hist is)"))),
                }
            }
            "booster" => {
                if value != "gbtree" {
                    return Err(Error::param(name, format!("`{value}`: only gbtree is supported")));
                }
            }
            "num_parallel_tree" => {
                if value != "1" {
                    return Err(Error::param(name, "only 1 is supported (no random forests yet)"));
                }
            }
            "objective" => self.objective = value.into(),
            "base_score" => {
                let v: f32 = number(name, value)?;
                check(name, v.is_finite(), "must be finite", value)?;
                self.base_score = Some(v);
            }
            "eval_metric" => self.eval_metrics.push(value.into()),
            "disable_default_eval_metric" => {
                self.disable_default_eval_metric = matches!(value, "1" | "true" | "True");
            }
            "seed" | "random_state" => self.seed = number(name, value)?,
            "nthread" | "n_jobs" => self.nthread = number(name, value)?,
            "device" => {
                self.device = match value {
                    "cpu" => Device::Cpu,
                    "cuda" | "gpu" => Device::Cuda,
                    v if v.starts_with("cuda:") => Device::Cuda,
                    _ => return Err(Error::param(name, format!("`{value}`: expected cpu or cuda"))),
                }
            }
            "verbosity" => self.verbosity = number(name, value)?,
            "sampling_method" => {
                if value != "uniform" {
                    return Err(Error::param(name, format!("`{value}`: only uniform is supported")));
                }
            }
            "validate_parameters" | "silent" => {}
            // Passed on to the objective and the metrics, which check the values.
            _ if crate::objective::OBJECTIVE_PARAMETERS.contains(&name)
                || crate::metric::METRIC_PARAMETERS.contains(&name) =>
            {
                self.objective_params.push((name.into(), value.into()))
            }
            _ => return Err(Error::param(name, "unknown parameter")),
        }
        Ok(())
    }

    /// Checks combinations of parameters.
    pub fn validate(&self) -> Result<()> {
        let t = &self.tree;
        if t.grow_policy == GrowPolicy::Depthwise && t.max_depth == 0 {
            return Err(Error::param("max_depth", "0 (unlimited) needs grow_policy=lossguide"));
        }
        if t.grow_policy == GrowPolicy::Lossguide && t.max_depth == 0 && t.max_leaves == 0 {
            return Err(Error::param("max_leaves", "lossguide with max_depth=0 needs max_leaves > 0"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            (vec![("eta", "0")], "eta"),
            (vec![("eta", "abc")], "eta"),
            (vec![("subsample", "1.5")], "subsample"),
            (vec![("max_depth", "0")], "max_depth"),
            (vec![("grow_policy", "sideways")], "grow_policy"),
            (vec![("no_such_thing", "1")], "no_such_thing"),
            (vec![("lambda", "-1")], "lambda"),
        ] {
            match Params::from_pairs(&pairs) {
                Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{pairs:?}: {other:?}"),
            }
        }
        assert!(Params::from_pairs(&[("max_depth", "0"), ("grow_policy", "lossguide"), ("max_leaves", "31")]).is_ok());
    }
}
