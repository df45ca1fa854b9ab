//! XGBoost 3.1+'s category encoder (`gradient_booster.model.cats`): for each feature, the categories
//! a categorical feature's codes stand for (strings from pandas or a CSV file; integers from pandas'
//! integer categories), so that rows whose categories are coded otherwise are recoded to the
//! model's codes before the trees see them (XGBoost refuses a category it never saw).
//!
//! The JSON is XGBoost's, written as it writes it: `enc` a column each (`{"offsets", "values"}`:
//! the strings' UTF-8 bytes as signed 8-bit integers, one after the other; `{"type", "values"}`
//! for integers; a numeric feature has no strings), `feature_segments` the running count of
//! categories, `sorted_idx` each feature's categories in sorted order (the index XGBoost searches).

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::data::{Categories, FeatureMatrix};
use crate::{Error, Result};

/// One feature's categories in the encoder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeatureCategories {
    /// Strings: code `k` is `strings[k]` (none for a numeric feature).
    Strings(Vec<String>),
    /// Integers: code `k` is `values[k]`.
    Integers {
        /// XGBoost's type code of the integers (its `CatIndexType`).
        kind: i64,
        /// The categories by code.
        values: Vec<i64>,
    },
}

/// The encoder: empty (a model without named categories), or one entry a feature.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CategoryEncoder {
    /// A feature's categories each (none for a model without an encoder).
    pub features: Vec<FeatureCategories>,
}

impl CategoryEncoder {
    /// The encoder of named categories (`None`: a numeric feature, or codes without names); empty
    /// when no feature has names.
    pub fn from_names(names: &[Option<Vec<String>>]) -> Self {
        if names.iter().all(Option::is_none) {
            return Self::default();
        }
        let features = names.iter().map(|n| FeatureCategories::Strings(n.clone().unwrap_or_default())).collect();
        CategoryEncoder { features }
    }

    /// The encoder of a data set's categories: strings, or integers where [`Categories::kinds`]
    /// gives XGBoost's type of a feature's integer categories (their names are then their decimal
    /// values). Names that are not integers of a feature typed so are an error naming it.
    pub fn of(categories: &Categories) -> Result<Self> {
        let mut encoder = Self::from_names(&categories.features);
        for (f, kind) in categories.kinds.iter().enumerate() {
            let (Some(kind), Some(FeatureCategories::Strings(names))) = (kind, encoder.features.get(f)) else {
                continue;
            };
            let values =
                names.iter().map(|n| n.parse::<i64>()).collect::<std::result::Result<Vec<_>, _>>().map_err(|_| {
                    Error::InvalidData(format!("feature {f}: integer categories named by non-integers"))
                })?;
            encoder.features[f] = FeatureCategories::Integers { kind: *kind, values };
        }
        Ok(encoder)
    }

    /// Whether no feature has named categories.
    pub fn is_empty(&self) -> bool {
        self.features.iter().all(|f| f.len() == 0)
    }

    /// `cats` as read from a model file (`path` names it in errors).
    pub fn from_json(cats: &Value, path: &str) -> Result<Self> {
        let bad = |what: String| Error::Model(format!("`{path}`: {what}"));
        let enc = match cats.get("enc") {
            None => return Ok(Self::default()),
            Some(e) => e.as_array().ok_or_else(|| bad("`enc` is not an array".into()))?,
        };
        let mut features = Vec::with_capacity(enc.len());
        for (f, column) in enc.iter().enumerate() {
            let ints = |key: &str| -> Result<Vec<i64>> {
                let values = column.get(key).and_then(Value::as_array);
                let values = values.ok_or_else(|| bad(format!("feature {f}: no `{key}` array")))?;
                values.iter().map(|v| v.as_i64().ok_or_else(|| bad(format!("feature {f}: `{key}` {v}")))).collect()
            };
            if column.get("offsets").is_some() {
                features.push(FeatureCategories::Strings(
                    strings(&ints("offsets")?, &ints("values")?).map_err(|what| bad(format!("feature {f}: {what}")))?,
                ));
            } else {
                let kind = column.get("type").and_then(Value::as_i64);
                let kind = kind.ok_or_else(|| bad(format!("feature {f}: neither `offsets` nor `type`")))?;
                features.push(FeatureCategories::Integers { kind, values: ints("values")? });
            }
        }
        Ok(CategoryEncoder { features })
    }

    /// `cats` as XGBoost writes it.
    pub fn to_json(&self) -> Value {
        let mut segments = Vec::new();
        let mut sorted = Vec::new();
        if !self.features.is_empty() {
            segments.push(0);
        }
        let enc: Vec<Value> = self
            .features
            .iter()
            .map(|feature| {
                let n = feature.len();
                let mut order: Vec<usize> = (0..n).collect();
                match feature {
                    FeatureCategories::Strings(s) => order.sort_by(|&a, &b| s[a].as_bytes().cmp(s[b].as_bytes())),
                    FeatureCategories::Integers { values, .. } => order.sort_by_key(|&i| values[i]),
                }
                sorted.extend(order);
                segments.push(segments.last().copied().unwrap_or(0) + n);
                match feature {
                    FeatureCategories::Strings(s) => {
                        let mut offsets = if s.is_empty() { Vec::new() } else { vec![0] };
                        let mut bytes: Vec<i64> = Vec::new();
                        for string in s {
                            // XGBoost keeps the bytes as signed 8-bit integers.
                            bytes.extend(string.bytes().map(|b| b as i8 as i64));
                            offsets.push(bytes.len());
                        }
                        json!({"offsets": offsets, "values": bytes})
                    }
                    FeatureCategories::Integers { kind, values } => json!({"type": kind, "values": values}),
                }
            })
            .collect();
        let mut cats = Map::new();
        cats.insert("enc".into(), Value::Array(enc));
        cats.insert("feature_segments".into(), json!(segments));
        cats.insert("sorted_idx".into(), json!(sorted));
        Value::Object(cats)
    }

    /// `features` with the codes of the features both name recoded to the model's: `names[f][k]`
    /// is what code `k` of feature `f` stands for in the rows. A category the model does not have
    /// is an error naming the feature and the category; features without names on either side,
    /// and codes outside the rows' names, are kept.
    pub fn recode<'a>(
        &self,
        features: &'a FeatureMatrix,
        names: &[Option<Vec<String>>],
    ) -> Result<Cow<'a, FeatureMatrix>> {
        let mut maps: Vec<(usize, Vec<f32>)> = Vec::new();
        for (f, rows) in names.iter().enumerate() {
            let (Some(rows), Some(model)) = (rows, self.features.get(f)) else { continue };
            let model = model.names();
            if *rows == *model || model.is_empty() {
                continue;
            }
            let index: HashMap<&str, usize> = model.iter().enumerate().map(|(k, s)| (s.as_str(), k)).collect();
            let map = rows
                .iter()
                .map(|s| match index.get(s.as_str()) {
                    Some(&k) => Ok(k as f32),
                    None => Err(Error::InvalidData(format!(
                        "feature {f}: category `{s}` is not one of the {} the model was trained on",
                        model.len()
                    ))),
                })
                .collect::<Result<_>>()?;
            maps.push((f, map));
        }
        if maps.is_empty() {
            return Ok(Cow::Borrowed(features));
        }
        let mut recoded = features.clone();
        recoded.try_map_values(|f, v| {
            if let Some((_, map)) = maps.iter().find(|(g, _)| *g == f) {
                if v.fract() == 0.0 && *v >= 0.0 && (*v as usize) < map.len() {
                    *v = map[*v as usize];
                }
            }
            Ok(())
        })?;
        Ok(Cow::Owned(recoded))
    }
}

impl FeatureCategories {
    /// The categories by code as text (integers in decimal, as rows name them).
    fn names(&self) -> Cow<'_, [String]> {
        match self {
            FeatureCategories::Strings(s) => Cow::Borrowed(s),
            FeatureCategories::Integers { values, .. } => Cow::Owned(values.iter().map(i64::to_string).collect()),
        }
    }

    fn len(&self) -> usize {
        match self {
            FeatureCategories::Strings(s) => s.len(),
            FeatureCategories::Integers { values, .. } => values.len(),
        }
    }
}

/// The strings of XGBoost's `offsets` (empty, or from 0 up to the bytes) and `values` (bytes as
/// signed 8-bit integers, UTF-8).
fn strings(offsets: &[i64], values: &[i64]) -> std::result::Result<Vec<String>, String> {
    if offsets.is_empty() {
        return if values.is_empty() { Ok(Vec::new()) } else { Err("`values` without `offsets`".into()) };
    }
    let ordered = offsets[0] == 0 && offsets.windows(2).all(|w| w[0] <= w[1]);
    if !ordered || offsets.last() != Some(&(values.len() as i64)) {
        return Err(format!("`offsets` do not run from 0 to the {} bytes", values.len()));
    }
    let bytes: Vec<u8> = values
        .iter()
        .map(|&v| i8::try_from(v).map(|b| b as u8).or_else(|_| u8::try_from(v)))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| "a byte out of range in `values`".to_string())?;
    offsets
        .windows(2)
        .map(|w| {
            String::from_utf8(bytes[w[0] as usize..w[1] as usize].to_vec())
                .map_err(|_| "a category that is not UTF-8".to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseMatrix;

    #[test]
    fn xgboosts_encoding_round_trips() {
        // As XGBoost 3.4.1 writes a frame of a string column, a numeric one and a string column.
        let text = r#"{"enc": [{"offsets": [0, 4, 9, 12, 14], "values": [98, 108, 117, 101, 103, 114, 101, 101, 110, 114, 101, 100, 122, 122]}, {"offsets": [], "values": []}, {"offsets": [0, 1, 2, 3, 5], "values": [83, 77, 76, 88, 76]}], "feature_segments": [0, 4, 4, 8], "sorted_idx": [0, 1, 2, 3, 2, 1, 0, 3]}"#;
        let cats: Value = serde_json::from_str(text).unwrap();
        let encoder = CategoryEncoder::from_json(&cats, "cats").unwrap();
        let strings = |s: &[&str]| FeatureCategories::Strings(s.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            encoder.features,
            vec![strings(&["blue", "green", "red", "zz"]), strings(&[]), strings(&["S", "M", "L", "XL"])]
        );
        assert_eq!(encoder.to_json(), cats);
        // Bytes past ASCII are negative, as XGBoost's signed 8-bit array holds them.
        let accented = CategoryEncoder::from_names(&[Some(vec!["é".into()])]);
        assert_eq!(accented.to_json()["enc"][0]["values"], json!([-61, -87]));
        assert_eq!(CategoryEncoder::from_json(&accented.to_json(), "cats").unwrap(), accented);
    }

    #[test]
    fn rows_coded_otherwise_are_recoded_and_unseen_categories_are_errors() {
        let encoder = CategoryEncoder::from_names(&[Some(vec!["a".into(), "b".into(), "c".into()]), None]);
        let rows = FeatureMatrix::Dense(DenseMatrix::new(3, 2, vec![0.0, 5.0, 1.0, f32::NAN, f32::NAN, 0.0]));
        let names = [Some(vec!["c".to_string(), "a".to_string()]), None];
        let recoded = encoder.recode(&rows, &names).unwrap();
        let FeatureMatrix::Dense(m) = recoded.as_ref() else { unreachable!() };
        let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(m.values.to_vec()), bits(vec![2.0, 5.0, 0.0, f32::NAN, f32::NAN, 0.0]));
        let unseen = [Some(vec!["a".to_string(), "z".to_string()]), None];
        let e = encoder.recode(&rows, &unseen).unwrap_err().to_string();
        assert!(e.contains("feature 0") && e.contains("`z`"), "{e}");
        assert!(matches!(encoder.recode(&rows, &[None, None]).unwrap(), Cow::Borrowed(_)));
    }

    /// Integer categories (pandas' of an integer dtype): written as XGBoost's typed integers and
    /// matched by value when rows list them in another order.
    #[test]
    fn integer_categories_are_typed_and_recoded_by_value() {
        let names = |v: &[i64]| Some(v.iter().map(i64::to_string).collect::<Vec<_>>());
        let categories =
            Categories { features: vec![names(&[3, 10, -2]), None], kinds: vec![Some(15), None], labels: None };
        let encoder = CategoryEncoder::of(&categories).unwrap();
        assert_eq!(encoder.features[0], FeatureCategories::Integers { kind: 15, values: vec![3, 10, -2] });
        assert_eq!(encoder.to_json()["enc"][0], json!({"type": 15, "values": [3, 10, -2]}));
        let rows = FeatureMatrix::Dense(DenseMatrix::new(2, 2, vec![0.0, 1.0, 1.0, 1.0]));
        let recoded = encoder.recode(&rows, &[names(&[-2, 3]), None]).unwrap();
        let FeatureMatrix::Dense(m) = recoded.as_ref() else { unreachable!() };
        assert_eq!(m.values.to_vec(), [2.0, 1.0, 0.0, 1.0]);
        let bad = Categories { features: vec![Some(vec!["x".into()])], kinds: vec![Some(15)], labels: None };
        assert!(CategoryEncoder::of(&bad).unwrap_err().to_string().contains("feature 0"));
    }
}
