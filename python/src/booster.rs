//! `Booster`: a trained or loaded model; predicts, evaluates, saves and loads XGBoost's JSON.

use std::collections::BTreeMap;
use std::path::PathBuf;

use boost::model::{ImportanceType, Model};
use boost::{Device, PredictOptions};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::cuda::{DeviceArray, DeviceRows};
use crate::dmatrix::DMatrix;
use crate::errors::OrRaise;

/// A model (`boost::Booster`).
#[pyclass(module = "twinboost._core", name = "Booster")]
pub struct Booster {
    pub(crate) inner: boost::Booster,
}

impl Booster {
    fn of_model(py: Python<'_>, model: Model) -> PyResult<Self> {
        Ok(Booster { inner: boost::Booster::from_model(model).or_raise(py)? })
    }
}

/// What a prediction gives: values (or margins), or leaf indices.
enum Prediction {
    Values(Vec<f32>),
    Leaves(Vec<u32>),
}

#[pymethods]
impl Booster {
    /// A model file of ours or XGBoost's (JSON or UBJSON, by content).
    #[staticmethod]
    fn load_model(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let model = py.detach(|| Model::load(&path)).or_raise(py)?;
        Self::of_model(py, model)
    }

    /// A model from its JSON text or UBJSON bytes.
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &[u8]) -> PyResult<Self> {
        if boost::model::is_ubjson(text) {
            let model = py.detach(|| Model::from_ubjson(text)).or_raise(py)?;
            return Self::of_model(py, model);
        }
        let text = std::str::from_utf8(text)
            .map_err(|e| crate::errors::to_py(py, boost::Error::Model(format!("the model is not UTF-8: {e}"))))?;
        let model = py.detach(|| Model::from_json_str(text)).or_raise(py)?;
        Self::of_model(py, model)
    }

    /// Writes the model as XGBoost does (JSON for `.json`, else UBJSON) to `path` (a unique
    /// temporary name, then renamed).
    fn save_model(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.inner.save_model(&path)).or_raise(py)
    }

    /// The model's JSON, as `save_model` writes it.
    fn to_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let text = py.detach(|| self.inner.model().to_json_string()).or_raise(py)?;
        Ok(PyBytes::new(py, text.as_bytes()))
    }

    /// Each tree's dump (XGBoost's `get_dump`): `format` `text` or `json`, the features named by
    /// the feature map file `fmap` (empty: the model's own names and types).
    fn dump(&self, py: Python<'_>, fmap: PathBuf, with_stats: bool, format: &str) -> PyResult<Vec<String>> {
        py.detach(|| {
            let format = boost::model::DumpFormat::parse(format)?;
            let fmap = if fmap.as_os_str().is_empty() { None } else { Some(boost::model::FeatureMap::load(&fmap)?) };
            self.inner.model().dump(fmap.as_ref(), with_stats, format)
        })
        .or_raise(py)
    }

    /// The model's UBJSON, as `save_model` writes it.
    fn to_ubjson<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| self.inner.model().to_ubjson()).or_raise(py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Predictions of `data` (flat, `rows * outputs`): `kind` is `value`, `margin` or `leaf`
    /// (`rows * trees` leaf indices), of rounds `begin..end` (`end == 0`: the last), on `device`,
    /// the CPU's work on `nthread` threads (0: every core).
    #[pyo3(signature = (data, kind, begin, end, device, nthread=0))]
    #[allow(clippy::too_many_arguments)]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        data: &DMatrix,
        kind: &str,
        begin: usize,
        end: usize,
        device: &str,
        nthread: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let device: Device = device.parse().or_raise(py)?;
        let options = PredictOptions::default().iteration_range(begin, end).device(device);
        let data = &data.inner;
        let on_pool = |work: &(dyn Fn() -> boost::Result<Prediction> + Sync)| {
            py.detach(|| crate::pools::install(nthread, work))
                .map_err(|reason| crate::pools::refused(py, nthread, reason))
        };
        let prediction = match kind {
            "leaf" => on_pool(&|| self.inner.predict_leaf(data, &options).map(Prediction::Leaves))?,
            "contribs" | "interactions" | "approx_contribs" | "approx_interactions" => {
                let options = if kind.starts_with("approx") { options.approximate() } else { options };
                match kind.ends_with("interactions") {
                    false => on_pool(&|| self.inner.predict_contributions(data, &options).map(Prediction::Values))?,
                    true => on_pool(&|| self.inner.predict_interactions(data, &options).map(Prediction::Values))?,
                }
            }
            "margin" | "value" => {
                let options = if kind == "margin" { options.margin() } else { options };
                on_pool(&|| self.inner.predict(data, &options).map(Prediction::Values))?
            }
            _ => return Err(pyo3::exceptions::PyValueError::new_err(format!("prediction kind `{kind}`"))),
        };
        Ok(match prediction.or_raise(py)? {
            Prediction::Leaves(leaves) => PyArray1::from_vec(py, leaves).into_any(),
            Prediction::Values(values) => PyArray1::from_vec(py, values).into_any(),
        })
    }

    /// Predictions of dense rows in device memory (borrowed as `DMatrix.device_dense` borrows
    /// them), computed on their device and left there: `kind` is `value` or `margin`, of rounds
    /// `begin..end`.
    #[allow(clippy::too_many_arguments)]
    fn predict_device(
        &self,
        py: Python<'_>,
        address: u64,
        rows: usize,
        cols: usize,
        stream: Option<usize>,
        owner: Py<PyAny>,
        kind: &str,
        begin: usize,
        end: usize,
    ) -> PyResult<DeviceArray> {
        let options = PredictOptions::default().iteration_range(begin, end);
        let options = match kind {
            "value" => options,
            "margin" => options.margin(),
            _ => return Err(pyo3::exceptions::PyValueError::new_err(format!("prediction kind `{kind}`"))),
        };
        let (gpu, values) = py
            .detach(|| {
                let borrowed = DeviceRows::borrow(address, (rows, cols), stream, owner)?;
                let values = self.inner.predict_device_data(&borrowed.gpu, borrowed.data(), &options)?;
                // The rows are read before the caller may change them again.
                borrowed.gpu.synchronize()?;
                Ok((borrowed.gpu.clone(), values))
            })
            .or_raise(py)?;
        Ok(DeviceArray::new(gpu, values))
    }

    /// The model's metrics on `data` (the objective's default when `metrics` is empty).
    fn evaluate(&self, py: Python<'_>, data: &DMatrix, metrics: Vec<String>) -> PyResult<Vec<(String, f64)>> {
        let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
        py.detach(|| self.inner.evaluate(&data.inner, &names)).or_raise(py)
    }

    /// Each used feature's importance of `kind` (`weight`, `gain`, `cover`, `total_gain`,
    /// `total_cover`), keyed by name or `f{index}`.
    fn feature_importance(&self, py: Python<'_>, kind: &str) -> PyResult<Vec<(String, f32)>> {
        let kind: ImportanceType = kind.parse().or_raise(py)?;
        let scores = self.inner.feature_importance(kind).or_raise(py)?;
        Ok(scores.iter().map(|s| (s.key(), s.score)).collect())
    }

    /// The model's attributes (`best_iteration`, `best_score`, ...).
    fn attributes(&self) -> BTreeMap<String, String> {
        self.inner.model().attributes.clone()
    }

    /// Sets an attribute (`None` removes it).
    #[pyo3(signature = (key, value=None))]
    fn set_attribute(&mut self, key: &str, value: Option<&str>) {
        self.inner.set_attribute(key, value);
    }

    /// The features' names saved with the model.
    fn feature_names(&self) -> Vec<String> {
        self.inner.model().feature_names.clone()
    }

    /// Sets the features' names (one a feature, or none).
    fn set_feature_names(&mut self, py: Python<'_>, names: Vec<String>) -> PyResult<()> {
        self.inner.set_feature_names(names).or_raise(py)
    }

    /// The features' types saved with the model.
    fn feature_types(&self) -> Vec<String> {
        self.inner.model().feature_types.clone()
    }

    /// Boosting rounds.
    fn num_boosted_rounds(&self) -> usize {
        self.inner.model().num_rounds()
    }

    /// Features the model was trained on.
    fn num_features(&self) -> usize {
        self.inner.model().num_feature
    }

    /// Outputs a row (classes of a multi-class model, else 1).
    fn num_outputs(&self) -> usize {
        self.inner.model().num_outputs()
    }

    /// Trees.
    fn num_trees(&self) -> usize {
        self.inner.model().trees.len()
    }

    /// The objective's XGBoost name.
    fn objective(&self) -> String {
        self.inner.model().objective_name.clone()
    }

    /// The rounds `begin..end` every `step` as a model (XGBoost's slicing).
    fn slice(&self, py: Python<'_>, begin: usize, end: usize, step: usize) -> PyResult<Self> {
        let model = self.inner.model().slice(begin, end, step).or_raise(py)?;
        Self::of_model(py, model)
    }

    /// A copy of the model (without the training history).
    fn copy(&self, py: Python<'_>) -> PyResult<Self> {
        Self::of_model(py, self.inner.model().clone())
    }
}
