//! XGBoost's UBJSON models (`.ubj`, its default format since 2.1): the JSON document of
//! [`Model::to_json_string`] in Universal Binary JSON, as XGBoost's `UBJWriter` writes it, so that
//! XGBoost and this crate read each other's files and a model written both ways has the same content.
//!
//! XGBoost's flavour: big-endian numbers; every string and key is `L` and an `i64` length, then
//! the bytes; arrays carry a count (`#L`), and a tree's numeric fields are typed arrays
//! (`[$d#L n` and `n` `f32`s; `$l` for `i32`, `$L` for `i64`, `$U` for `u8`, `$i` for `i8`), which
//! this writer chooses by the field's name as XGBoost's model types them; integers take the
//! smallest of `i`, `I`, `l`, `L` that holds them (XGBoost's strict bounds), other numbers `d`.
//! No maintained Rust crate writes these typed arrays, so the codec is here (about 200 lines).

use std::path::Path;

use serde_json::{Map, Number, Value};

use super::Model;
use crate::{Error, Result};

impl Model {
    /// The model as XGBoost's UBJSON bytes (the content of [`Model::to_json_string`]).
    pub fn to_ubjson(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(64 + self.trees.iter().map(|t| t.len() * 40).sum::<usize>());
        write_value(&mut out, &self.to_json_value()?, "", None)?;
        Ok(out)
    }

    /// A model from XGBoost's UBJSON bytes; checked as [`Model::from_json_value`] checks JSON.
    pub fn from_ubjson(bytes: &[u8]) -> Result<Self> {
        let mut reader = Reader { bytes, at: 0 };
        let value = reader.value()?;
        if reader.at != bytes.len() {
            return Err(reader.error("bytes after the model"));
        }
        Self::from_json_value(&value)
    }

    /// Reads an XGBoost model file, UBJSON or JSON by its content (XGBoost's rule: a UBJSON
    /// document starts with `{L`; JSON text with `{"` or white space).
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        if is_ubjson(&bytes) {
            Self::from_ubjson(&bytes).map_err(|e| match e {
                Error::Model(m) => Error::Model(format!("{}: {m}", path.display())),
                e => e,
            })
        } else {
            Self::load_json(path)
        }
    }

    /// Writes the model as XGBoost 3.x's `save_model` writes `path`: JSON for a `.json` file,
    /// else UBJSON (`.ubj`, its default); under a unique temporary name, renamed over `path`
    /// ([`crate::output::write_file`]).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            self.save_json(path)
        } else {
            crate::output::write_file(path, &self.to_ubjson()?)
        }
    }
}

/// Whether `bytes` are a UBJSON document (an object whose first key is length-prefixed).
pub fn is_ubjson(bytes: &[u8]) -> bool {
    bytes.starts_with(b"{L") || bytes.starts_with(b"{}")
}

/// The typed array a numeric array field is, by its name (and, for a category encoder's `values`,
/// its sibling `type` or `offsets`).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Typed {
    F32,
    I8,
    U8,
    I16,
    I32,
    I64,
}

fn typed_field(key: &str, parent: Option<&Map<String, Value>>) -> Option<Typed> {
    Some(match key {
        "base_weights" | "loss_changes" | "split_conditions" | "sum_hessian" => Typed::F32,
        "categories" | "categories_nodes" | "left_children" | "right_children" | "parents" | "split_indices"
        | "feature_segments" | "sorted_idx" | "offsets" => Typed::I32,
        "categories_segments" | "categories_sizes" => Typed::I64,
        "default_left" | "split_type" => Typed::U8,
        "values" => match parent.and_then(|p| p.get("type")).and_then(Value::as_i64) {
            // XGBoost's `CatIndexType` codes; unsigned ones wider than a byte go as the signed.
            Some(9) => Typed::I8,
            Some(10) => Typed::U8,
            Some(11 | 12) => Typed::I16,
            Some(13 | 14) => Typed::I32,
            Some(15 | 16) => Typed::I64,
            Some(_) => return None,
            // A string column: its UTF-8 bytes as `i8`.
            None => Typed::I8,
        },
        _ => return None,
    })
}

fn write_len(out: &mut Vec<u8>, n: usize) {
    out.push(b'L');
    out.extend_from_slice(&(n as i64).to_be_bytes());
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    write_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn write_value(out: &mut Vec<u8>, value: &Value, key: &str, parent: Option<&Map<String, Value>>) -> Result<()> {
    match value {
        Value::Null => out.push(b'Z'),
        Value::Bool(b) => out.push(if *b { b'T' } else { b'F' }),
        Value::String(s) => {
            out.push(b'S');
            write_str(out, s);
        }
        Value::Number(n) => write_number(out, n),
        Value::Object(map) => {
            out.push(b'{');
            for (k, v) in map {
                write_str(out, k);
                write_value(out, v, k, Some(map))?;
            }
            out.push(b'}');
        }
        Value::Array(items) => match typed_field(key, parent) {
            Some(typed) => write_typed(out, items, typed, key)?,
            None => {
                out.extend_from_slice(b"[#");
                write_len(out, items.len());
                for item in items {
                    write_value(out, item, key, parent)?;
                }
            }
        },
    }
    Ok(())
}

/// An integer in the smallest of XGBoost's widths (bounds exclusive, as its writer tests them);
/// another number as `d` when an `f32` holds it exactly, else `D`.
fn write_number(out: &mut Vec<u8>, n: &Number) {
    if let Some(i) = n.as_i64() {
        if i > i8::MIN as i64 && i < i8::MAX as i64 {
            out.push(b'i');
            out.push(i as i8 as u8);
        } else if i > i16::MIN as i64 && i < i16::MAX as i64 {
            out.push(b'I');
            out.extend_from_slice(&(i as i16).to_be_bytes());
        } else if i > i32::MIN as i64 && i < i32::MAX as i64 {
            out.push(b'l');
            out.extend_from_slice(&(i as i32).to_be_bytes());
        } else {
            out.push(b'L');
            out.extend_from_slice(&i.to_be_bytes());
        }
        return;
    }
    let x = n.as_f64().unwrap_or(f64::NAN);
    if (x as f32) as f64 == x {
        out.push(b'd');
        out.extend_from_slice(&(x as f32).to_be_bytes());
    } else {
        out.push(b'D');
        out.extend_from_slice(&x.to_be_bytes());
    }
}

fn write_typed(out: &mut Vec<u8>, items: &[Value], typed: Typed, key: &str) -> Result<()> {
    let marker = match typed {
        Typed::F32 => b'd',
        Typed::I8 => b'i',
        Typed::U8 => b'U',
        Typed::I16 => b'I',
        Typed::I32 => b'l',
        Typed::I64 => b'L',
    };
    out.extend_from_slice(&[b'[', b'$', marker, b'#']);
    write_len(out, items.len());
    let bad = || Error::Model(format!("`{key}`: a value that is not a number of its type"));
    for item in items {
        if typed == Typed::F32 {
            let x = match item {
                Value::Number(n) => n.as_f64().ok_or_else(bad)? as f32,
                // Non-finite floats, which the JSON text writes bare and the parser takes as strings.
                Value::String(s) if s == "NaN" => f32::NAN,
                Value::String(s) if s == "Infinity" => f32::INFINITY,
                Value::String(s) if s == "-Infinity" => f32::NEG_INFINITY,
                _ => return Err(bad()),
            };
            out.extend_from_slice(&x.to_be_bytes());
            continue;
        }
        let i = item.as_i64().ok_or_else(bad)?;
        match typed {
            Typed::I8 => out.push(i8::try_from(i).map_err(|_| bad())? as u8),
            Typed::U8 => out.push(u8::try_from(i).map_err(|_| bad())?),
            Typed::I16 => out.extend_from_slice(&(i as i16).to_be_bytes()),
            Typed::I32 => out.extend_from_slice(&(i as i32).to_be_bytes()),
            _ => out.extend_from_slice(&i.to_be_bytes()),
        }
    }
    Ok(())
}

/// A UBJSON document read into the JSON value it stands for (typed arrays to arrays of numbers,
/// non-finite floats to XGBoost's `NaN`/`Infinity` strings as the JSON reader has them).
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn error(&self, what: &str) -> Error {
        Error::Model(format!("UBJSON at byte {}: {what}", self.at))
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| self.error("truncated"))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn peek(&self) -> Result<u8> {
        self.bytes.get(self.at).copied().ok_or_else(|| self.error("truncated"))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    /// A length or count: XGBoost writes `L`; any integer marker is read.
    fn count(&mut self) -> Result<usize> {
        let marker = self.byte()?;
        let n = self.integer(marker)?.ok_or_else(|| self.error("a length that is not an integer"))?;
        usize::try_from(n).map_err(|_| self.error("a negative length"))
    }

    fn integer(&mut self, marker: u8) -> Result<Option<i64>> {
        Ok(Some(match marker {
            b'i' => self.byte()? as i8 as i64,
            b'U' => self.byte()? as i64,
            b'I' => i16::from_be_bytes(self.array()?) as i64,
            b'l' => i32::from_be_bytes(self.array()?) as i64,
            b'L' => i64::from_be_bytes(self.array()?),
            _ => return Ok(None),
        }))
    }

    fn string(&mut self) -> Result<String> {
        let n = self.count()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| self.error("a string that is not UTF-8"))
    }

    fn float(x: f64) -> Value {
        match Number::from_f64(x) {
            Some(n) => Value::Number(n),
            None if x.is_nan() => Value::String("NaN".into()),
            None if x > 0.0 => Value::String("Infinity".into()),
            None => Value::String("-Infinity".into()),
        }
    }

    fn value(&mut self) -> Result<Value> {
        let marker = self.byte()?;
        self.value_of(marker)
    }

    fn value_of(&mut self, marker: u8) -> Result<Value> {
        if let Some(i) = self.integer(marker)? {
            return Ok(Value::Number(i.into()));
        }
        Ok(match marker {
            b'Z' => Value::Null,
            b'T' => Value::Bool(true),
            b'F' => Value::Bool(false),
            b'd' => Self::float(f32::from_be_bytes(self.array()?) as f64),
            b'D' => Self::float(f64::from_be_bytes(self.array()?)),
            b'S' => Value::String(self.string()?),
            b'{' => {
                let mut map = Map::new();
                while self.peek()? != b'}' {
                    let key = self.string()?;
                    map.insert(key, self.value()?);
                }
                self.at += 1;
                Value::Object(map)
            }
            b'[' => self.array_value()?,
            other => return Err(self.error(&format!("unknown marker `{}`", other.escape_ascii()))),
        })
    }

    fn array_value(&mut self) -> Result<Value> {
        match self.peek()? {
            b'$' => {
                self.at += 1;
                let typed = self.byte()?;
                if self.byte()? != b'#' {
                    return Err(self.error("a typed array without a count"));
                }
                let n = self.count()?;
                let width = match typed {
                    b'i' | b'U' => 1,
                    b'I' => 2,
                    b'l' | b'd' => 4,
                    b'L' | b'D' => 8,
                    other => return Err(self.error(&format!("typed arrays of `{}`", other.escape_ascii()))),
                };
                // Checked before allocating: a corrupt count is an error, not an allocation.
                if n.checked_mul(width).is_none_or(|b| b > self.bytes.len() - self.at) {
                    return Err(self.error("truncated typed array"));
                }
                (0..n).map(|_| self.value_of(typed)).collect::<Result<Vec<_>>>().map(Value::Array)
            }
            b'#' => {
                self.at += 1;
                let n = self.count()?;
                if n > self.bytes.len() - self.at {
                    return Err(self.error("truncated array"));
                }
                (0..n).map(|_| self.value()).collect::<Result<Vec<_>>>().map(Value::Array)
            }
            _ => {
                let mut items = Vec::new();
                while self.peek()? != b']' {
                    items.push(self.value()?);
                }
                self.at += 1;
                Ok(Value::Array(items))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Model {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/xgboost");
        Model::load_json(dir.join(format!("{name}.model.json"))).unwrap()
    }

    /// Every fixture (XGBoost 3.4.1's models: categorical splits and a category encoder, a forest,
    /// a multi-class model) goes to UBJSON and back to the same JSON text.
    #[test]
    fn fixtures_round_trip_through_ubjson() {
        for name in ["binary_logistic", "categorical_splits", "multi_softprob", "reg_exact_forest", "reg_squarederror"]
        {
            let model = fixture(name);
            let bytes = model.to_ubjson().unwrap();
            assert!(is_ubjson(&bytes), "{name}");
            let back = Model::from_ubjson(&bytes).unwrap();
            assert_eq!(back.to_json_string().unwrap(), model.to_json_string().unwrap(), "{name}");
        }
    }

    #[test]
    fn non_finite_floats_and_integer_widths_are_xgboosts() {
        let mut model = fixture("reg_squarederror");
        model.trees[0].split_conditions[0] = f32::NEG_INFINITY;
        let back = Model::from_ubjson(&model.to_ubjson().unwrap()).unwrap();
        assert_eq!(back.trees[0].split_conditions[0], f32::NEG_INFINITY);
        // XGBoost's bounds are exclusive: 127 is already an `I`, -128 too.
        let width = |i: i64| {
            let mut out = Vec::new();
            write_number(&mut out, &Number::from(i));
            (out[0], out.len())
        };
        assert_eq!(width(126), (b'i', 2));
        assert_eq!(width(127), (b'I', 3));
        assert_eq!(width(-128), (b'I', 3));
        assert_eq!(width(40_000), (b'l', 5));
        assert_eq!(width(i32::MAX as i64), (b'L', 9));
    }

    #[test]
    fn corrupt_bytes_are_model_errors_not_panics() {
        let bytes = fixture("binary_logistic").to_ubjson().unwrap();
        for cut in [1, 2, 10, bytes.len() / 3, bytes.len() - 1] {
            assert!(matches!(Model::from_ubjson(&bytes[..cut]), Err(Error::Model(_))), "cut at {cut}");
        }
        let mut huge = bytes.clone();
        // The first key's length, made enormous: an error, not an allocation.
        huge[2..10].copy_from_slice(&i64::MAX.to_be_bytes());
        assert!(Model::from_ubjson(&huge).is_err());
        let mut trailing = bytes;
        trailing.push(b'Z');
        assert!(Model::from_ubjson(&trailing).unwrap_err().to_string().contains("after the model"));
        assert!(Model::from_ubjson(b"{L\x00\x00\x00\x00\x00\x00\x00\x01x?}").is_err());
    }

    #[test]
    fn save_picks_the_format_by_extension_and_load_by_content() {
        let model = fixture("multi_softprob");
        let dir = tempfile::tempdir().unwrap();
        for (name, ubjson) in [("m.ubj", true), ("m.json", false), ("m.model", true), ("M.JSON", false)] {
            let path = dir.path().join(name);
            model.save(&path).unwrap();
            assert_eq!(is_ubjson(&std::fs::read(&path).unwrap()), ubjson, "{name}");
            assert_eq!(Model::load(&path).unwrap().to_json_string().unwrap(), model.to_json_string().unwrap());
        }
    }
}
