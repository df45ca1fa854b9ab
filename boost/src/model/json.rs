//! XGBoost's JSON model format: reading 2.x and 3.x `gbtree` files, writing the 3.4 layout.
//!
//! What XGBoost 3.4.1 writes, as 3.2 did (and requires when it loads; keys sorted, no spaces):
//!
//! ```text
//! {"learner":{"attributes":{..},"feature_names":[..],"feature_types":[..],
//!   "gradient_booster":{"model":{"cats":{"enc":[],"feature_segments":[],"sorted_idx":[]},
//!     "gbtree_model_param":{"num_parallel_tree":"1","num_trees":"N"},
//!     "iteration_indptr":[0,..,N],"tree_info":[..],"trees":[{..},..]},"name":"gbtree"},
//!   "learner_model_param":{"base_score":"[5E-1]","boost_from_average":"1","num_class":"0",
//!     "num_feature":"F","num_target":"1"},
//!   "objective":{"name":"..",..}},
//!  "version":[3,4,1]}
//! ```
//!
//! A tree holds `base_weights`, `categories`, `categories_nodes`, `categories_segments`,
//! `categories_sizes`, `default_left` (0/1), `id`, `left_children`, `loss_changes`, `parents`,
//! `right_children`, `split_conditions`, `split_indices`, `split_type`, `sum_hessian` and
//! `tree_param` (`num_deleted`, `num_feature`, `num_nodes`, `size_leaf_vector`). Parameters are
//! strings; floats are written in the shortest form that reads back to the same `f32`, as `1.25E1`.
//! A categorical split (`split_type` 1) keeps its categories (the ones that go right) in
//! `categories`, at `categories_segments`/`categories_sizes` in the order of `categories_nodes`:
//! [`crate::tree::CategoricalSplits`]. The category encoder (`cats`: the strings of pandas' or a CSV
//! file's categories) is [`super::CategoryEncoder`].
//!
//! `base_score` is a string holding a JSON number (XGBoost 2.x, `"5E-1"`) or an array of one value or
//! one per output (3.x, `"[5E-1]"`, `"[1E-1,2E-1,3E-1]"`); XGBoost 3.2 broadcasts a single value to every
//! output, and so does [`Model::from_json_value`]. XGBoost places each tree at its `id`, and so does
//! the reader here. Files without `iteration_indptr` (before 2.0) get one round per
//! `num_parallel_tree * outputs` trees.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value};

use super::{CategoryEncoder, Model, TargetStatistics, TARGET_STATISTICS_BOOSTER, XGBOOST_FORMAT_VERSION};
use crate::tree::{CategoricalSplits, Tree};
use crate::{Error, Result};

/// XGBoost's `split_indices` value for a node that the pruner deleted (the node stays in the arrays).
const DELETED_SPLIT_INDEX: u32 = i32::MAX as u32;

/// Most outputs (classes or targets) a model file may declare.
pub const MAX_OUTPUTS: usize = 1 << 24;

impl Model {
    /// Reads an XGBoost JSON model file.
    pub fn load_json(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let value: Value = serde_json::from_slice(&quote_non_finite(&text))
            .map_err(|e| Error::Model(format!("{}: not a JSON model: {e}", path.display())))?;
        Self::from_json_value(&value).map_err(|e| match e {
            Error::Model(m) => Error::Model(format!("{}: {m}", path.display())),
            e => e,
        })
    }

    /// A model from the text of an XGBoost JSON model.
    pub fn from_json_str(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_slice(&quote_non_finite(text.as_bytes()))
            .map_err(|e| Error::Model(format!("not a JSON model: {e}")))?;
        Self::from_json_value(&value)
    }

    /// A model from a parsed XGBoost JSON model; checked with [`Model::validate`].
    pub fn from_json_value(value: &Value) -> Result<Self> {
        let root = object(value, "the model file")?;
        let version = match root.get("version") {
            None => [0, 0, 0],
            Some(v) => {
                let parts: Vec<u32> = int_array(v, "version")?;
                <[u32; 3]>::try_from(parts.as_slice())
                    .map_err(|_| Error::Model(format!("`version` has {} numbers, not 3", parts.len())))?
            }
        };
        let learner = object(required(root, "learner", "")?, "learner")?;

        let LearnerParams { num_feature, num_class, num_target, boost_from_average, outputs, base_score } =
            learner_params(learner)?;

        let objective = required(learner, "objective", "learner")?.clone();
        let objective_name = object(&objective, "learner.objective")?
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Model("`learner.objective.name` is missing or not a string".into()))?
            .to_string();

        let attributes = match learner.get("attributes") {
            None => BTreeMap::new(),
            Some(v) => object(v, "learner.attributes")?
                .iter()
                .map(|(k, v)| match v.as_str() {
                    Some(s) => Ok((k.clone(), s.to_string())),
                    None => Err(Error::Model(format!("`learner.attributes.{k}` is not a string"))),
                })
                .collect::<Result<_>>()?,
        };
        let feature_names = optional_strings(learner, "feature_names")?;
        let feature_types = optional_strings(learner, "feature_types")?;

        let Trees { trees, tree_info, iteration_indptr, num_parallel_tree, cats, target_statistics } =
            trees(learner, outputs)?;

        let model = Model {
            trees,
            tree_info,
            iteration_indptr,
            num_feature,
            num_class,
            num_target,
            base_score,
            boost_from_average,
            num_parallel_tree,
            objective_name,
            objective,
            feature_names,
            feature_types,
            attributes,
            categories: cats,
            target_statistics,
            version,
        };
        model.validate()?;
        Ok(model)
    }

    /// The model as XGBoost 3.4's JSON text (compact, keys sorted, as XGBoost writes it: a file that
    /// XGBoost wrote and this crate read is written back byte for byte; a non-finite float of a tree
    /// as XGBoost writes it, `-Infinity`, `Infinity` or `NaN`). Fails with [`Error::Model`] when the
    /// model does not validate or its base score is not finite.
    pub fn to_json_string(&self) -> Result<String> {
        self.validate()?;
        let mut w = String::with_capacity(256 + self.trees.iter().map(|t| t.len() * 120).sum::<usize>());
        w.push_str("{\"learner\":{\"attributes\":");
        write_value(&mut w, &serde_json::to_value(&self.attributes).map_err(json_error)?)?;
        w.push_str(",\"feature_names\":");
        write_strings(&mut w, &self.feature_names)?;
        w.push_str(",\"feature_types\":");
        write_strings(&mut w, &self.feature_types)?;
        w.push_str(",\"gradient_booster\":{\"model\":{\"cats\":");
        write_value(&mut w, &self.categories.to_json())?;
        let _ = write!(
            w,
            ",\"gbtree_model_param\":{{\"num_parallel_tree\":\"{}\",\"num_trees\":\"{}\"}}",
            self.num_parallel_tree,
            self.trees.len()
        );
        w.push_str(",\"iteration_indptr\":");
        write_ints(&mut w, &self.iteration_indptr);
        w.push_str(",\"tree_info\":");
        write_ints(&mut w, &self.tree_info);
        w.push_str(",\"trees\":[");
        for (i, tree) in self.trees.iter().enumerate() {
            if i > 0 {
                w.push(',');
            }
            write_tree(&mut w, tree, i, self.num_feature)?;
        }
        if self.target_statistics.is_empty() {
            w.push_str("]},\"name\":\"gbtree\"}");
        } else {
            let _ = write!(w, "]}},\"name\":\"{TARGET_STATISTICS_BOOSTER}\",\"target_statistics\":");
            self.target_statistics.write_json(&mut w);
            w.push('}');
        }
        w.push_str(",\"learner_model_param\":{\"base_score\":\"[");
        for (k, &b) in self.base_score.iter().enumerate() {
            if !b.is_finite() {
                return Err(Error::Model(format!("`base_score[{k}]` is {b}")));
            }
            if k > 0 {
                w.push(',');
            }
            write_float(&mut w, b);
        }
        let _ = write!(
            w,
            "]\",\"boost_from_average\":\"{}\",\"num_class\":\"{}\",\"num_feature\":\"{}\",\"num_target\":\"{}\"}}",
            u8::from(self.boost_from_average),
            self.num_class,
            self.num_feature,
            self.num_target
        );
        w.push_str(",\"objective\":");
        write_value(&mut w, &self.objective)?;
        let [major, minor, patch] = XGBOOST_FORMAT_VERSION;
        let _ = write!(w, "}},\"version\":[{major},{minor},{patch}]}}");
        Ok(w)
    }

    /// The model as a parsed XGBoost JSON document (the text of [`Model::to_json_string`], parsed).
    pub fn to_json_value(&self) -> Result<Value> {
        serde_json::from_slice(&quote_non_finite(self.to_json_string()?.as_bytes())).map_err(json_error)
    }

    /// Writes the model as an XGBoost 3.4 JSON file. The text goes to a temporary file of a unique
    /// name in the same directory, which is synced and then renamed over `path`: a failure leaves
    /// either the old file or none, never a partial model ([`crate::output::write_file`]).
    pub fn save_json(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::output::write_file(path.as_ref(), self.to_json_string()?.as_bytes())
    }
}

fn json_error(e: serde_json::Error) -> Error {
    Error::Model(format!("JSON: {e}"))
}

// ---- reading ----

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| Error::Model(format!("`{path}` is not a JSON object")))
}

/// Field `key` of object `o` found at `path` (empty for the root).
fn required<'a>(o: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a Value> {
    o.get(key).ok_or_else(|| {
        if path.is_empty() {
            Error::Model(format!("missing `{key}`: not an XGBoost model"))
        } else {
            Error::Model(format!("missing `{path}.{key}`"))
        }
    })
}

/// An XGBoost parameter holding a count: a string of digits (as XGBoost writes them) or a number.
fn param_usize(v: &Value, path: &str) -> Result<usize> {
    let parsed = match v {
        Value::String(s) => s.trim().parse::<usize>().ok(),
        Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        _ => None,
    };
    parsed.ok_or_else(|| Error::Model(format!("`{path}` is {v}, not a count")))
}

fn param_bool(v: &Value, path: &str) -> Result<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if matches!(s.trim(), "1" | "true") => Ok(true),
        Value::String(s) if matches!(s.trim(), "0" | "false") => Ok(false),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(true),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(false),
        _ => Err(Error::Model(format!("`{path}` is {v}, not a boolean"))),
    }
}

/// `base_score`: a string holding a JSON number or array (or, leniently, a bare number), broadcast
/// from one value to every output.
fn parse_base_score(v: &Value, outputs: usize) -> Result<Vec<f32>> {
    let path = "learner.learner_model_param.base_score";
    let parsed: Value = match v {
        Value::String(s) => serde_json::from_str(s.trim())
            .map_err(|e| Error::Model(format!("`{path}` is \"{s}\", not a number or an array: {e}")))?,
        other => other.clone(),
    };
    let values: Vec<f32> = match &parsed {
        Value::Array(_) => float_array(&parsed, path)?,
        _ => vec![float(&parsed, path)?],
    };
    match values.len() {
        1 => Ok(vec![values[0]; outputs]),
        n if n == outputs => Ok(values),
        n => Err(Error::Model(format!("`{path}` has {n} values for a model of {outputs} outputs"))),
    }
}

/// XGBoost writes a non-finite float as a bare `NaN`, `Infinity` or `-Infinity` (GPU-trained trees
/// have `-Infinity` split conditions: every present value goes right), which JSON lacks: outside
/// strings, these tokens are quoted so that serde_json reads them as strings, which [`float`] takes.
fn quote_non_finite(text: &[u8]) -> Cow<'_, [u8]> {
    const TOKENS: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];
    if !text.windows(3).any(|w| w == b"NaN" || w == b"Inf") {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len() + 64);
    let (mut i, mut in_string) = (0, false);
    while i < text.len() {
        let byte = text[i];
        if in_string {
            out.push(byte);
            if byte == b'\\' && i + 1 < text.len() {
                out.push(text[i + 1]);
                i += 1;
            } else if byte == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if let Some(token) = TOKENS.iter().find(|t| text[i..].starts_with(t)) {
            out.push(b'"');
            out.extend_from_slice(token);
            out.push(b'"');
            i += token.len();
            continue;
        }
        in_string = byte == b'"';
        out.push(byte);
        i += 1;
    }
    Cow::Owned(out)
}

fn float(v: &Value, path: &str) -> Result<f32> {
    match v.as_str() {
        Some("NaN") => return Ok(f32::NAN),
        Some("Infinity") => return Ok(f32::INFINITY),
        Some("-Infinity") => return Ok(f32::NEG_INFINITY),
        _ => {}
    }
    let x = v.as_f64().ok_or_else(|| Error::Model(format!("`{path}` is {v}, not a number")))?;
    // Narrowing the parsed double gives back the `f32` that XGBoost printed (its shortest decimal).
    let f = x as f32;
    if !f.is_finite() {
        return Err(Error::Model(format!("`{path}` is {v}, outside the range of f32")));
    }
    Ok(f)
}

fn array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>> {
    v.as_array().ok_or_else(|| Error::Model(format!("`{path}` is not an array")))
}

fn float_array(v: &Value, path: &str) -> Result<Vec<f32>> {
    array(v, path)?.iter().enumerate().map(|(i, x)| float(x, &format!("{path}[{i}]"))).collect()
}

fn int_array<T: TryFrom<i64>>(v: &Value, path: &str) -> Result<Vec<T>> {
    array(v, path)?
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_i64()
                .and_then(|n| T::try_from(n).ok())
                .ok_or_else(|| Error::Model(format!("`{path}[{i}]` is {x}, not an integer in range")))
        })
        .collect()
}

/// `default_left`: 0/1 (XGBoost 1.6+) or booleans (older files).
fn bool_array(v: &Value, path: &str) -> Result<Vec<bool>> {
    array(v, path)?
        .iter()
        .enumerate()
        .map(|(i, x)| match x {
            Value::Bool(b) => Ok(*b),
            Value::Number(n) if n.as_u64() == Some(0) => Ok(false),
            Value::Number(n) if n.as_u64() == Some(1) => Ok(true),
            _ => Err(Error::Model(format!("`{path}[{i}]` is {x}, not 0 or 1"))),
        })
        .collect()
}

fn optional_strings(learner: &Map<String, Value>, key: &str) -> Result<Vec<String>> {
    let Some(v) = learner.get(key) else { return Ok(Vec::new()) };
    array(v, &format!("learner.{key}"))?
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_str()
                .map(str::to_string)
                .ok_or_else(|| Error::Model(format!("`learner.{key}[{i}]` is {x}, not a string")))
        })
        .collect()
}

/// Reads the trees and puts each at its `id` (position when a tree has none), as XGBoost does.
fn place_trees(trees_json: &[Value]) -> Result<Vec<Tree>> {
    let n = trees_json.len();
    let mut slots: Vec<Option<Tree>> = vec![None; n];
    for (t, tj) in trees_json.iter().enumerate() {
        let path = format!("learner.gradient_booster.model.trees[{t}]");
        let to = object(tj, &path)?;
        let id = match to.get("id") {
            None => t,
            Some(v) => v
                .as_u64()
                .and_then(|id| usize::try_from(id).ok())
                .filter(|&id| id < n)
                .ok_or_else(|| Error::Model(format!("`{path}.id` is {v}, not a tree index below {n}")))?,
        };
        if slots[id].is_some() {
            return Err(Error::Model(format!("`{path}.id`: two trees have id {id}")));
        }
        slots[id] = Some(tree_from_json(to, &path, id)?);
    }
    // Every slot is filled: n trees with distinct ids below n.
    Ok(slots.into_iter().flatten().collect())
}

fn tree_from_json(o: &Map<String, Value>, path: &str, id: usize) -> Result<Tree> {
    let field = |key: &str| required(o, key, path);
    let p = |key: &str| format!("{path}.{key}");
    let tree = Tree {
        left_children: int_array(field("left_children")?, &p("left_children"))?,
        right_children: int_array(field("right_children")?, &p("right_children"))?,
        parents: int_array(field("parents")?, &p("parents"))?,
        split_indices: int_array(field("split_indices")?, &p("split_indices"))?,
        split_conditions: float_array(field("split_conditions")?, &p("split_conditions"))?,
        default_left: bool_array(field("default_left")?, &p("default_left"))?,
        base_weights: float_array(field("base_weights")?, &p("base_weights"))?,
        loss_changes: float_array(field("loss_changes")?, &p("loss_changes"))?,
        sum_hessian: float_array(field("sum_hessian")?, &p("sum_hessian"))?,
        categorical: Default::default(),
    };
    let n = tree.left_children.len();
    let tparam = object(field("tree_param")?, &p("tree_param"))?;
    let num_nodes = param_usize(required(tparam, "num_nodes", &p("tree_param"))?, &p("tree_param.num_nodes"))?;
    if num_nodes != n {
        return Err(Error::Model(format!(
            "tree {id}: `{path}.tree_param.num_nodes` is {num_nodes} but `left_children` has {n} entries"
        )));
    }
    if let Some(v) = tparam.get("size_leaf_vector") {
        // 0 in files before 2.0, 1 since; more is a vector-leaf (multi_output_tree) model.
        let size = param_usize(v, &p("tree_param.size_leaf_vector"))?;
        if size > 1 {
            return Err(Error::Model(format!(
                "tree {id}: `size_leaf_vector` is {size}: vector-leaf trees (multi_output_tree) are not supported"
            )));
        }
    }
    let split_type: Vec<i64> = match o.get("split_type") {
        Some(v) => int_array(v, &p("split_type"))?,
        None => vec![0; n],
    };
    if split_type.len() != n {
        return Err(Error::Model(format!(
            "tree {id}: `split_type` has {} entries, `left_children` {n}",
            split_type.len()
        )));
    }
    let mut tree = tree;
    tree.categorical = categorical_splits(o, &split_type, path, id)?;
    Ok(tree)
}

/// A tree's categorical splits (`split_type` 1), checked: each listed once, in node order, with
/// its categories sorted, distinct and below `MAX_CATEGORY`, inside `categories`.
fn categorical_splits(o: &Map<String, Value>, split_type: &[i64], path: &str, id: usize) -> Result<CategoricalSplits> {
    let p = |key: &str| format!("{path}.{key}");
    let array = |key: &str| o.get(key).map_or(Ok(Vec::new()), |v| int_array::<u64>(v, &p(key)));
    let nodes: Vec<u32> = array("categories_nodes")?.into_iter().map(|n| n.min(u32::MAX as u64) as u32).collect();
    let segments: Vec<usize> = array("categories_segments")?.into_iter().map(|s| s as usize).collect();
    let sizes: Vec<usize> = array("categories_sizes")?.into_iter().map(|s| s as usize).collect();
    let categories = array("categories")?;
    let bad = |what: String| Err(Error::Model(format!("tree {id}: {what}")));
    if segments.len() != nodes.len() || sizes.len() != nodes.len() {
        return bad(format!("{} categorical nodes, {} segments, {} sizes", nodes.len(), segments.len(), sizes.len()));
    }
    let split: Vec<usize> = (0..split_type.len()).filter(|&n| split_type[n] != 0).collect();
    if let Some(&node) = split.iter().find(|&&n| split_type[n] != 1) {
        return bad(format!("node {node} has `split_type` {}: expected 0 or 1", split_type[node]));
    }
    if split.iter().map(|&n| n as u32).ne(nodes.iter().copied()) {
        return bad("`categories_nodes` is not the nodes whose `split_type` is 1, in order".into());
    }
    let max = boost_kernels::predict::MAX_CATEGORY as u64;
    for (i, (&start, &size)) in segments.iter().zip(&sizes).enumerate() {
        let Some(own) = start.checked_add(size).and_then(|end| categories.get(start..end)) else {
            return bad(format!(
                "categorical node {}: categories {start}..+{size} past the {}",
                nodes[i],
                categories.len()
            ));
        };
        if own.windows(2).any(|w| w[0] >= w[1]) || own.last().is_some_and(|&c| c >= max) {
            return bad(format!("categorical node {}: categories not sorted, distinct and below {max}", nodes[i]));
        }
    }
    let categories: Vec<u32> = categories.into_iter().map(|c| c as u32).collect();
    let lists: Vec<&[u32]> =
        segments.iter().zip(&sizes).map(|(&start, &size)| &categories[start..start + size]).collect();
    Ok(CategoricalSplits::from_lists(nodes, &lists))
}

// ---- writing ----

fn write_value(w: &mut String, v: &Value) -> Result<()> {
    w.push_str(&serde_json::to_string(v).map_err(json_error)?);
    Ok(())
}

fn write_strings(w: &mut String, v: &[String]) -> Result<()> {
    w.push_str(&serde_json::to_string(v).map_err(json_error)?);
    Ok(())
}

fn write_ints<T: std::fmt::Display>(w: &mut String, v: &[T]) {
    w.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            w.push(',');
        }
        let _ = write!(w, "{x}");
    }
    w.push(']');
}

/// A finite `f32` as XGBoost writes it: the shortest decimal that reads back to the same value,
/// chosen as Ryu chooses (XGBoost's `to_chars` is Ryu's: of two equally short candidates equally
/// near the exact value, the even last digit; Rust's `{:E}` takes the other one), in scientific
/// notation (`-6.253355E-1`, `1.6535312E3` for 1653.53125, `0E0`).
pub(crate) fn write_float(w: &mut String, x: f32) {
    if x == 0.0 {
        w.push_str(if x.is_sign_negative() { "-0E0" } else { "0E0" });
        return;
    }
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(x);
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    // Ryu writes `1653.5312`, `1.0E-7` or `1e30`-like forms: split into digits and exponent.
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = whole.chars().chain(fraction.chars()).collect();
    let leading = digits.len() - digits.trim_start_matches('0').len();
    let digits = digits.trim_start_matches('0').trim_end_matches('0');
    // The first significant digit's power of ten.
    let power = exponent + whole.len() as i32 - 1 - leading as i32;
    if negative {
        w.push('-');
    }
    w.push_str(&digits[..1]);
    if digits.len() > 1 {
        w.push('.');
        w.push_str(&digits[1..]);
    }
    let _ = write!(w, "E{power}");
}

/// Floats as XGBoost writes them: the shortest decimal that reads back to the same `f32`, in
/// scientific notation (`-6.253355E-1`, `0E0`); non-finite ones as XGBoost's bare `NaN`,
/// `Infinity`, `-Infinity`.
fn write_floats(w: &mut String, v: &[f32]) {
    w.push('[');
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            w.push(',');
        }
        match x {
            x if x.is_nan() => w.push_str("NaN"),
            f32::INFINITY => w.push_str("Infinity"),
            f32::NEG_INFINITY => w.push_str("-Infinity"),
            x => write_float(w, x),
        }
    }
    w.push(']');
}

fn write_tree(w: &mut String, tree: &Tree, id: usize, num_feature: usize) -> Result<()> {
    let n = tree.len();
    w.push_str("{\"base_weights\":");
    write_floats(w, &tree.base_weights);
    let categorical = &tree.categorical;
    // The sets as XGBoost lists them: each node's categories, increasing, one node after another.
    let sizes = categorical.sizes();
    let segments: Vec<usize> = sizes.iter().scan(0, |at, &size| Some(std::mem::replace(at, *at + size))).collect();
    let categories: Vec<u32> = categorical.sets.iter().flat_map(|set| crate::tree::members(set)).collect();
    w.push_str(",\"categories\":");
    write_ints(w, &categories);
    w.push_str(",\"categories_nodes\":");
    write_ints(w, &categorical.nodes);
    w.push_str(",\"categories_segments\":");
    write_ints(w, &segments);
    w.push_str(",\"categories_sizes\":");
    write_ints(w, &sizes);
    w.push_str(",\"default_left\":");
    write_ints(w, &tree.default_left.iter().map(|&d| u8::from(d)).collect::<Vec<_>>());
    let _ = write!(w, ",\"id\":{id},\"left_children\":");
    write_ints(w, &tree.left_children);
    w.push_str(",\"loss_changes\":");
    write_floats(w, &tree.loss_changes);
    w.push_str(",\"parents\":");
    write_ints(w, &tree.parents);
    w.push_str(",\"right_children\":");
    write_ints(w, &tree.right_children);
    w.push_str(",\"split_conditions\":");
    write_floats(w, &tree.split_conditions);
    w.push_str(",\"split_indices\":");
    write_ints(w, &tree.split_indices);
    w.push_str(",\"split_type\":");
    let mut split_type = vec![0u8; n];
    for &node in &categorical.nodes {
        if let Some(t) = split_type.get_mut(node as usize) {
            *t = 1;
        }
    }
    write_ints(w, &split_type);
    w.push_str(",\"sum_hessian\":");
    write_floats(w, &tree.sum_hessian);
    // XGBoost counts the nodes its pruner deleted by their marker split index (never the root).
    let deleted = tree.split_indices.iter().skip(1).filter(|&&s| s == DELETED_SPLIT_INDEX).count();
    let _ = write!(
        w,
        ",\"tree_param\":{{\"num_deleted\":\"{deleted}\",\"num_feature\":\"{num_feature}\",\"num_nodes\":\"{n}\",\"size_leaf_vector\":\"1\"}}}}"
    );
    Ok(())
}

/// `learner.learner_model_param`'s counts, flag and base score.
struct LearnerParams {
    num_feature: usize,
    num_class: usize,
    num_target: usize,
    boost_from_average: bool,
    outputs: usize,
    base_score: Vec<f32>,
}

fn learner_params(learner: &Map<String, Value>) -> Result<LearnerParams> {
    let mparam = object(required(learner, "learner_model_param", "learner")?, "learner.learner_model_param")?;
    let mp = "learner.learner_model_param";
    let num_feature = param_usize(required(mparam, "num_feature", mp)?, &format!("{mp}.num_feature"))?;
    if u32::try_from(num_feature).is_err() {
        // XGBoost counts features in 32 bits.
        return Err(Error::Model(format!("`{mp}.num_feature` is {num_feature}, more than 32 bits")));
    }
    let num_class = param_usize(required(mparam, "num_class", mp)?, &format!("{mp}.num_class"))?;
    let num_target = match mparam.get("num_target") {
        Some(v) => param_usize(v, &format!("{mp}.num_target"))?,
        None => 1,
    };
    let boost_from_average = match mparam.get("boost_from_average") {
        Some(v) => param_bool(v, &format!("{mp}.boost_from_average"))?,
        None => true,
    };
    let outputs = num_class.max(num_target).max(1);
    if outputs > MAX_OUTPUTS {
        // A corrupt count would otherwise size the base score (and every prediction) by it.
        return Err(Error::Model(format!(
            "`{mp}.num_class`/`num_target` ask for {outputs} outputs, more than the {MAX_OUTPUTS} supported"
        )));
    }
    let base_score = parse_base_score(required(mparam, "base_score", mp)?, outputs)?;
    Ok(LearnerParams { num_feature, num_class, num_target, boost_from_average, outputs, base_score })
}

/// `learner.gradient_booster`'s trees with their outputs and rounds.
struct Trees {
    trees: Vec<Tree>,
    tree_info: Vec<u32>,
    iteration_indptr: Vec<usize>,
    num_parallel_tree: usize,
    cats: CategoryEncoder,
    target_statistics: TargetStatistics,
}

fn trees(learner: &Map<String, Value>, outputs: usize) -> Result<Trees> {
    let booster = object(required(learner, "gradient_booster", "learner")?, "learner.gradient_booster")?;
    let booster_name = required(booster, "name", "learner.gradient_booster")?
        .as_str()
        .ok_or_else(|| Error::Model("`learner.gradient_booster.name` is not a string".into()))?;
    let target_statistics = match booster_name {
        "gbtree" => TargetStatistics::default(),
        TARGET_STATISTICS_BOOSTER => TargetStatistics::from_json(
            required(booster, "target_statistics", "learner.gradient_booster")?,
            "learner.gradient_booster.target_statistics",
        )?,
        _ => {
            return Err(Error::Model(format!(
                "`learner.gradient_booster.name` is `{booster_name}`: only `gbtree` models are supported"
            )))
        }
    };
    let gb = "learner.gradient_booster.model";
    let gbtree = object(required(booster, "model", "learner.gradient_booster")?, gb)?;
    let gparam = object(required(gbtree, "gbtree_model_param", gb)?, &format!("{gb}.gbtree_model_param"))?;
    let num_trees = param_usize(
        required(gparam, "num_trees", &format!("{gb}.gbtree_model_param"))?,
        &format!("{gb}.gbtree_model_param.num_trees"),
    )?;
    let num_parallel_tree = match gparam.get("num_parallel_tree") {
        Some(v) => param_usize(v, &format!("{gb}.gbtree_model_param.num_parallel_tree"))?,
        None => 1,
    };
    let cats = match gbtree.get("cats") {
        None => CategoryEncoder::default(),
        Some(c) => CategoryEncoder::from_json(c, &format!("{gb}.cats"))?,
    };

    let trees_json = required(gbtree, "trees", gb)?
        .as_array()
        .ok_or_else(|| Error::Model(format!("`{gb}.trees` is not an array")))?;
    if trees_json.len() != num_trees {
        return Err(Error::Model(format!(
            "`{gb}.gbtree_model_param.num_trees` is {num_trees} but `{gb}.trees` has {} trees",
            trees_json.len()
        )));
    }
    let trees = place_trees(trees_json)?;
    let tree_info: Vec<u32> = int_array(required(gbtree, "tree_info", gb)?, &format!("{gb}.tree_info"))?;
    let iteration_indptr = match gbtree.get("iteration_indptr") {
        Some(v) => int_array(v, &format!("{gb}.iteration_indptr"))?,
        None => {
            // Before XGBoost 2.0 every round had the same number of trees.
            let per_round = num_parallel_tree.saturating_mul(outputs);
            if per_round == 0 || trees.len() % per_round != 0 {
                return Err(Error::Model(format!(
                    "no `{gb}.iteration_indptr`, and {} trees are not whole rounds of {per_round}",
                    trees.len()
                )));
            }
            (0..=trees.len() / per_round).map(|r| r * per_round).collect()
        }
    };
    Ok(Trees { trees, tree_info, iteration_indptr, num_parallel_tree, cats, target_statistics })
}
