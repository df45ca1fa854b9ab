//! XGBoost's model dumps (`Booster.get_dump`, `dump_model`, `xgboost dump`): each tree as text or
//! JSON, written as XGBoost 3.4.1's `TextGenerator` and `JsonGenerator` write them, character for
//! character (floats as `%.9g`, a split's `yes` child the one taken when the condition holds), with
//! the statistics (`gain`, `cover`) on request and the features named by a feature map: a file of
//! `index name type` lines (`q` or `float`: a number, `i`: an indicator, `int`: an integer
//! threshold, `c`: categories), else the model's own names and types, else `f0`, `f1`, ...

use std::fmt::Write as _;
use std::path::Path;

use super::Model;
use crate::objective::format_g;
use crate::tree::Tree;
use crate::{Error, Result};

/// A dump's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// XGBoost's text dump (`0:[f1<0.5] yes=1,no=2,missing=1`, leaves indented by tabs).
    Text,
    /// XGBoost's JSON dump (a nested object a tree, `children` arrays).
    Json,
}

impl DumpFormat {
    /// `text` or `json` (XGBoost's `dump_format`); the error names `dump_format`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(Error::param("dump_format", format!("`{other}`: use text or json"))),
        }
    }
}

/// How a feature map types a feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeatureKind {
    /// `i`: a 0/1 indicator (`[name]`, `yes` the branch of a present feature).
    Indicator,
    /// `q` or `float`: a number compared with the threshold.
    Quantitive,
    /// `int`: an integer, the threshold rounded up.
    Integer,
    /// `c`: categories.
    Categorical,
}

/// XGBoost's feature map: each feature's name and kind, feature `k` on line `k`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureMap {
    /// Name and kind by feature index.
    pub features: Vec<(String, FeatureKind)>,
}

impl FeatureMap {
    /// Reads a feature map file (`fmap.txt`: `index name type` a line, indices from 0 in order).
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::parse(&text).map_err(|e| Error::InvalidData(format!("{}: {e}", path.display())))
    }

    /// A feature map from its text; the error names the line.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut features = Vec::new();
        for (line, content) in text.lines().enumerate() {
            let fields: Vec<&str> = content.split_whitespace().collect();
            if fields.is_empty() {
                continue;
            }
            let [index, name, kind] = fields[..] else {
                return Err(format!("line {}: expected `index name type`, got `{content}`", line + 1));
            };
            if index.parse::<usize>() != Ok(features.len()) {
                return Err(format!("line {}: feature index `{index}`, expected {}", line + 1, features.len()));
            }
            let kind = match kind {
                "i" => FeatureKind::Indicator,
                "q" | "float" => FeatureKind::Quantitive,
                "int" => FeatureKind::Integer,
                "c" => FeatureKind::Categorical,
                other => {
                    return Err(format!("line {}: unknown feature type `{other}` (i, q, int, float, c)", line + 1))
                }
            };
            features.push((name.to_string(), kind));
        }
        Ok(Self { features })
    }

    /// The map XGBoost makes of a model without one: its feature names (else `f{i}`) and types
    /// (else `q`).
    pub fn of_model(model: &Model) -> Self {
        let features = (0..model.num_feature)
            .map(|i| {
                let name = model.feature_names.get(i).cloned().unwrap_or_else(|| format!("f{i}"));
                let kind = match model.feature_types.get(i).map(String::as_str) {
                    Some("i") => FeatureKind::Indicator,
                    Some("int") => FeatureKind::Integer,
                    Some("c") => FeatureKind::Categorical,
                    _ => FeatureKind::Quantitive,
                };
                (name, kind)
            })
            .collect();
        Self { features }
    }
}

impl Model {
    /// Each tree's dump, as XGBoost's `get_dump(fmap, with_stats, dump_format)` gives them; the
    /// features named by `fmap`, else by [`FeatureMap::of_model`]. A node whose kind differs from
    /// its feature's in the map is an error, as in XGBoost.
    pub fn dump(&self, fmap: Option<&FeatureMap>, with_stats: bool, format: DumpFormat) -> Result<Vec<String>> {
        let own;
        let fmap = match fmap {
            Some(f) => f,
            None => {
                own = FeatureMap::of_model(self);
                &own
            }
        };
        let dumper = Dumper { fmap, with_stats };
        self.trees
            .iter()
            .map(|tree| match format {
                DumpFormat::Text => Ok(format!("{}\n", dumper.text(tree, 0, 0)?)),
                DumpFormat::Json => dumper.json(tree, 0, 0),
            })
            .collect()
    }

    /// The dump as XGBoost's `dump_model` writes it to a file: `booster[k]:` before each text
    /// tree; a JSON array of the JSON trees.
    pub fn dump_text(&self, fmap: Option<&FeatureMap>, with_stats: bool, format: DumpFormat) -> Result<String> {
        let trees = self.dump(fmap, with_stats, format)?;
        Ok(match format {
            DumpFormat::Text => {
                let mut out = String::new();
                for (k, tree) in trees.iter().enumerate() {
                    let _ = write!(out, "booster[{k}]:\n{tree}");
                }
                out
            }
            DumpFormat::Json => format!("[\n{}\n]", trees.join(",\n")),
        })
    }
}

/// Floats as XGBoost's `ToStr` prints them: `%.9g`.
fn float(v: f32) -> String {
    format_g(v as f64, 9)
}

/// What a split node is, by its feature's kind in the map (or by the node, past the map's end).
enum NodeKind {
    Plain,
    Indicator,
    Integer,
    Categorical(Vec<u32>),
}

struct Dumper<'a> {
    fmap: &'a FeatureMap,
    with_stats: bool,
}

impl Dumper<'_> {
    fn name(&self, feature: u32) -> String {
        match self.fmap.features.get(feature as usize) {
            Some((name, _)) => escape(name),
            None => format!("f{feature}"),
        }
    }

    fn kind(&self, tree: &Tree, node: usize) -> Result<NodeKind> {
        let feature = tree.split_indices[node] as usize;
        let categories = tree.categorical.categories(node);
        let mismatch = |what: &str| {
            Error::Model(format!("feature {feature} is {what} in the feature map but node {node} splits otherwise"))
        };
        Ok(match (self.fmap.features.get(feature).map(|f| f.1), categories) {
            (None, Some(c)) | (Some(FeatureKind::Categorical), Some(c)) => NodeKind::Categorical(c),
            (None, None) => NodeKind::Plain,
            (Some(FeatureKind::Categorical), None) => return Err(mismatch("categorical")),
            (Some(_), Some(_)) => return Err(mismatch("numerical")),
            (Some(FeatureKind::Indicator), None) => NodeKind::Indicator,
            (Some(FeatureKind::Integer), None) => NodeKind::Integer,
            (Some(FeatureKind::Quantitive), None) => NodeKind::Plain,
        })
    }

    fn children(tree: &Tree, node: usize) -> (usize, usize, usize) {
        let (left, right) = (tree.left_children[node] as usize, tree.right_children[node] as usize);
        (left, right, if tree.default_left[node] { left } else { right })
    }

    fn text(&self, tree: &Tree, node: usize, depth: usize) -> Result<String> {
        let tabs = "\t".repeat(depth);
        if tree.is_leaf(node) {
            let stats =
                if self.with_stats { format!(",cover={}", float(tree.sum_hessian[node])) } else { String::new() };
            return Ok(format!("{tabs}{node}:leaf={}{stats}", float(tree.split_conditions[node])));
        }
        let (left, right, missing) = Self::children(tree, node);
        let name = self.name(tree.split_indices[node]);
        let cond = tree.split_conditions[node];
        let split = match self.kind(tree, node)? {
            NodeKind::Plain => format!("{tabs}{node}:[{name}<{}] yes={left},no={right},missing={missing}", float(cond)),
            NodeKind::Integer => {
                format!("{tabs}{node}:[{name}<{}] yes={left},no={right},missing={missing}", integer_threshold(cond))
            }
            // XGBoost prints no tabs here, and `yes` is the branch of a present (non-default) value.
            NodeKind::Indicator => {
                let yes = if tree.default_left[node] { right } else { left };
                format!("{node}:[{name}] yes={yes},no={missing}")
            }
            NodeKind::Categorical(c) => {
                let set = c.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
                format!("{tabs}{node}:[{name}:{{{set}}}] yes={right},no={left},missing={missing}")
            }
        };
        let stats = if self.with_stats {
            format!(",gain={},cover={}", float(tree.loss_changes[node]), float(tree.sum_hessian[node]))
        } else {
            String::new()
        };
        Ok(format!("{split}{stats}\n{}\n{}", self.text(tree, left, depth + 1)?, self.text(tree, right, depth + 1)?))
    }

    fn json(&self, tree: &Tree, node: usize, depth: usize) -> Result<String> {
        let indent = "  ".repeat(depth + 1);
        let newline = if depth == 0 { "" } else { "\n" };
        if tree.is_leaf(node) {
            let stats = if self.with_stats {
                format!(", \"cover\": {} ", float(tree.sum_hessian[node]))
            } else {
                String::new()
            };
            return Ok(format!(
                "{newline}{indent}{{ \"nodeid\": {node}, \"leaf\": {} {stats}}}",
                float(tree.split_conditions[node])
            ));
        }
        let (left, right, missing) = Self::children(tree, node);
        let name = self.name(tree.split_indices[node]);
        let cond = tree.split_conditions[node];
        let head = format!(" \"nodeid\": {node}, \"depth\": {depth}, \"split\": \"{name}\", ");
        let properties = match self.kind(tree, node)? {
            NodeKind::Plain => {
                format!(
                    "{head}\"split_condition\": {}, \"yes\": {left}, \"no\": {right}, \"missing\": {missing}",
                    float(cond)
                )
            }
            NodeKind::Integer => format!(
                "{head}\"split_condition\": {}, \"yes\": {left}, \"no\": {right}, \"missing\": {missing}",
                integer_threshold(cond)
            ),
            NodeKind::Indicator => {
                let yes = if tree.default_left[node] { right } else { left };
                format!(
                    " \"nodeid\": {node}, \"depth\": {depth}, \"split\": \"{name}\", \"yes\": {yes}, \"no\": {missing}"
                )
            }
            NodeKind::Categorical(c) => {
                let set = c.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
                format!("{head}\"split_condition\": [{set}], \"yes\": {right}, \"no\": {left}, \"missing\": {missing}")
            }
        };
        let stats = if self.with_stats {
            format!(", \"gain\": {}, \"cover\": {}", float(tree.loss_changes[node]), float(tree.sum_hessian[node]))
        } else {
            String::new()
        };
        Ok(format!(
            "{newline}{indent}{{{properties} {stats}, \"children\": [{}, {}\n{indent}]}}",
            self.json(tree, left, depth + 1)?,
            self.json(tree, right, depth + 1)?
        ))
    }
}

/// XGBoost's integer threshold: the condition rounded up.
fn integer_threshold(cond: f32) -> i32 {
    let floored = cond.floor();
    if floored == cond {
        floored as i32
    } else {
        floored as i32 + 1
    }
}

/// A feature name as XGBoost's `EscapeU8` writes it: quotes, backslashes and control characters
/// escaped (as in JSON), the rest as is.
fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Model {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/xgboost");
        Model::load_json(dir.join(format!("{name}.model.json"))).unwrap()
    }

    #[test]
    fn feature_maps_parse_and_name_the_bad_line() {
        let map = FeatureMap::parse("0 age q\n\n1 smoker i\n2 visits int\n3 city c\n4 w float\n").unwrap();
        let kinds: Vec<FeatureKind> = map.features.iter().map(|f| f.1).collect();
        use FeatureKind::*;
        assert_eq!(kinds, [Quantitive, Indicator, Integer, Categorical, Quantitive]);
        assert!(FeatureMap::parse("0 a q\n2 b q\n").unwrap_err().starts_with("line 2:"));
        assert!(FeatureMap::parse("0 a x\n").unwrap_err().contains("unknown feature type `x`"));
        assert!(FeatureMap::parse("0 a\n").unwrap_err().starts_with("line 1:"));
        assert_eq!(integer_threshold(2.0), 2);
        assert_eq!(integer_threshold(2.5), 3);
        assert_eq!(integer_threshold(-0.5), 0);
    }

    #[test]
    fn dumps_follow_the_trees_and_refuse_a_map_that_contradicts_them() {
        let model = fixture("categorical_splits");
        let text = model.dump(None, true, DumpFormat::Text).unwrap();
        assert_eq!(text.len(), model.trees.len());
        assert!(text[0].starts_with("0:[") && text[0].ends_with('\n') && text[0].contains(",gain="));
        let json = model.dump_text(None, false, DumpFormat::Json).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed.as_array().unwrap().len(), model.trees.len());
        // Every feature numeric in the map: the categorical nodes contradict it.
        let numeric = FeatureMap {
            features: (0..model.num_feature).map(|i| (format!("x{i}"), FeatureKind::Quantitive)).collect(),
        };
        assert!(matches!(model.dump(Some(&numeric), false, DumpFormat::Text), Err(Error::Model(_))));
        assert!(DumpFormat::parse("dot").unwrap_err().to_string().contains("dump_format"));
    }
}
