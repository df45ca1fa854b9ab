//! The library's front door, in XGBoost's words: a [`DMatrix`] holds the features with their
//! labels, weights, query groups and base margins; [`Booster::train`] fits a model to it on the
//! CPU or a GPU (the `device` parameter; the same model either way); a [`Booster`] predicts
//! ([`PredictOptions`]: transformed values, margins or leaves, an iteration range, a device), saves
//! and loads XGBoost's JSON model format.
//!
//! Under it, [`crate::learner::train`] with [`TrainOptions`] gives a run's whole report (device,
//! phases, memory), and [`crate::model::Model`] the trees.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use primitives::{DeviceBuffer, Gpu};

use crate::data::{
    read_data, Categories, CsrMatrix, Dataset, DenseMatrix, FeatureMatrix, FeatureValues, MetaInfo, ReadOptions,
};
use crate::external::{BatchSource, ExternalMatrix, ExternalMemory, PagesInfo};
use crate::gpu::{self, transform_on_device, DeviceCsr, DeviceData, DeviceModel, ExplainRows};
use crate::learner::{self, RoundLog, TrainOptions, TrainingCallback};
use crate::metric::{self, Metric};
use crate::model::{CategoryEncoder, FeatureScore, ImportanceType, Model, PackedTrees};
use crate::objective::{self, Objective};
use crate::param::{Device, Params};
use crate::rows::{Features, Rows};
use crate::{Error, Result};

/// Training or prediction data: features (dense or CSR; NaN and absent CSR entries are missing)
/// in host memory or in a GPU's, with the labels, weights, query groups and base margins training
/// needs. Every constructor and `with_` method checks its shape and values and names what is wrong.
#[derive(Clone, Debug)]
pub struct DMatrix {
    features: Stored,
    info: MetaInfo,
    /// The string columns' codes of a CSV file (none for other data).
    categories: Categories,
}

/// Where a [`DMatrix`]'s features are.
#[derive(Clone)]
enum Stored {
    Host(FeatureMatrix),
    Device(Arc<DeviceRows>),
    /// Quantised pages of batches ([`DMatrix::from_batches`]).
    Pages(Arc<ExternalMatrix>),
}

/// Rows a caller filled in a GPU's memory, with that GPU.
struct DeviceRows {
    gpu: Arc<Gpu>,
    values: DeviceValues,
}

enum DeviceValues {
    Dense { values: DeviceBuffer<f32>, rows: usize, cols: usize },
    Csr(DeviceCsr),
}

impl DeviceRows {
    fn data(&self) -> DeviceData<'_> {
        match &self.values {
            DeviceValues::Dense { values, rows, cols } => DeviceData::Dense { values, rows: *rows, cols: *cols },
            DeviceValues::Csr(csr) => DeviceData::Csr(csr),
        }
    }
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stored::Host(features) => features.fmt(f),
            Stored::Device(rows) => {
                let data = rows.data();
                write!(f, "{} x {} rows on {}", data.rows(), data.cols(), learner::describe(&rows.gpu))
            }
            Stored::Pages(matrix) => {
                let (host, disk) = matrix.store.bytes();
                let pages = matrix.store.len();
                write!(
                    f,
                    "{} x {} rows in {pages} pages ({host} bytes in memory, {disk} on disk)",
                    matrix.rows(),
                    matrix.cols()
                )
            }
        }
    }
}

impl DMatrix {
    /// `rows x cols` dense row-major values: a `Vec<f32>`, or memory of the caller's read in place
    /// ([`crate::data::FeatureValues::shared`]).
    pub fn from_dense(values: impl Into<FeatureValues>, rows: usize, cols: usize) -> Result<Self> {
        let values = values.into();
        if rows.checked_mul(cols) != Some(values.len()) {
            return Err(Error::InvalidData(format!("{} values for {rows} rows of {cols} features", values.len())));
        }
        Self::from_features(FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values)))
    }

    /// CSR rows of `cols` features: `row_ptr` (`rows + 1` offsets from 0), each entry's column
    /// (below `cols`; increasing within a row lets a GPU sketch them) and value.
    pub fn from_csr(row_ptr: Vec<usize>, col_indices: Vec<u32>, values: Vec<f32>, cols: usize) -> Result<Self> {
        let rows = row_ptr.len().checked_sub(1).ok_or_else(|| Error::InvalidData("CSR offsets: none given".into()))?;
        let features = FeatureMatrix::Sparse(CsrMatrix { rows, cols, row_ptr, col_indices, values });
        crate::model::check_features(&features, cols)?;
        Ok(Self::of(Stored::Host(features)))
    }

    /// `rows x cols` dense row-major values the caller filled in the memory of `gpu` (checked
    /// there: the shape, no infinities). Training on them runs on `gpu` (unless `device=cpu`,
    /// which reads them back), sketching and quantising them in place; predictions walk them
    /// there. The model is the one the same rows train on the CPU:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use boost::{Booster, DMatrix, Device, Params, PredictOptions};
    /// use primitives::{Gpu, Schedule};
    ///
    /// // A program opens a CUDA device (`Gpu::new()`); the SIMT emulator runs the same kernels.
    /// let gpu = Arc::new(Gpu::emulated(Schedule::Deterministic));
    /// let (rows, cols) = (64, 2);
    /// let values: Vec<f32> = (0..rows * cols).map(|i| ((i * 7) % 17) as f32).collect();
    /// let labels: Vec<f32> = (0..rows).map(|r| f32::from(values[2 * r] > 8.0)).collect();
    /// let on_device = DMatrix::from_device_dense(gpu.clone(), gpu.upload(&values)?, rows, cols)?;
    /// let on_device = on_device.with_labels(labels.clone())?;
    /// let on_host = DMatrix::from_dense(values, rows, cols)?.with_labels(labels)?;
    /// let pairs = [("objective", "binary:logistic"), ("max_depth", "2")];
    /// let mut params = Params::from_pairs(&pairs)?;
    /// let cpu_model = Booster::train(&params, &on_host, 3, &[])?;
    /// params.set("device", "cuda")?;
    /// let gpu_model = Booster::train(&params, &on_device, 3, &[])?;
    /// assert_eq!(gpu_model.model().to_json_string()?, cpu_model.model().to_json_string()?);
    /// // Predictions of the device rows are computed there (the CPU's bits).
    /// let options = PredictOptions::default().device(Device::Cuda { ordinal: 0 });
    /// assert_eq!(gpu_model.predict(&on_device, &options)?, cpu_model.predict(&on_host, &PredictOptions::default())?);
    /// # Ok::<(), boost::Error>(())
    /// ```
    pub fn from_device_dense(gpu: Arc<Gpu>, values: DeviceBuffer<f32>, rows: usize, cols: usize) -> Result<Self> {
        let rows = DeviceRows { gpu, values: DeviceValues::Dense { values, rows, cols } };
        rows.data().check(&rows.gpu)?;
        Ok(Self::of(Stored::Device(Arc::new(rows))))
    }

    /// CSR rows in the memory of `gpu` ([`DeviceCsr::new`] checked them), as
    /// [`DMatrix::from_device_dense`] takes dense ones.
    pub fn from_device_csr(gpu: Arc<Gpu>, csr: DeviceCsr) -> Result<Self> {
        let rows = DeviceRows { gpu, values: DeviceValues::Csr(csr) };
        rows.data().check(&rows.gpu)?;
        Ok(Self::of(Stored::Device(Arc::new(rows))))
    }

    /// A CSV or LibSVM file, as `boost train` reads it (the format from the name unless `options`
    /// say; the label column, query groups, weights from `options` or sibling files). A CSV file's
    /// string columns are coded as they come; read a test file with the training file's codes by
    /// passing [`DMatrix::categories`] in `options.csv.categories`.
    pub fn from_file(path: impl AsRef<Path>, options: &ReadOptions<'_>) -> Result<Self> {
        let (data, categories) = read_data(path.as_ref(), options)?;
        Ok(DMatrix { features: Stored::Host(data.features), info: data.info, categories })
    }

    /// Rows that arrive in batches (XGBoost's `ExtMemQuantileDMatrix`): `source` is read three
    /// times (counts and layout, sketch, pages), by a thread of its own a batch ahead of each
    /// pass's work, and its rows are kept only as quantised pages, in host
    /// memory or, past `options.host_bytes`, in an unnamed file of `options.cache_dir`. Training
    /// (`tree_method=hist`, the same `max_bin`) writes the model the rows in memory would. Bad
    /// batches are errors naming the batch and row; a cache directory that cannot be written, or
    /// fills up, an error naming it.
    pub fn from_batches(source: &mut dyn BatchSource, options: &ExternalMemory) -> Result<Self> {
        let (matrix, info) = ExternalMatrix::from_batches(source, options)?;
        Ok(DMatrix { features: Stored::Pages(Arc::new(matrix)), info, categories: Categories::default() })
    }

    /// A dataset's rows and labels (weights, groups, base margins), as read or generated.
    pub fn from_dataset(data: Dataset) -> Result<Self> {
        data.features.check_finite()?;
        Ok(DMatrix { features: Stored::Host(data.features), info: data.info, categories: Categories::default() })
    }

    /// The rows with every value equal to `missing` made missing (XGBoost's `missing`: a value
    /// such as `-999` that means "not measured"; NaN always does). Rows in host memory only: rows
    /// in device memory are the caller's to mark (NaN) where they lie.
    pub fn with_missing(mut self, missing: f32) -> Result<Self> {
        match &mut self.features {
            Stored::Host(features) => {
                features.mark_missing(missing);
                Ok(self)
            }
            Stored::Device(_) | Stored::Pages(_) => Err(Error::InvalidData(
                "`missing` marks rows in host memory; set missing values to NaN in device memory or in the batches"
                    .into(),
            )),
        }
    }

    fn from_features(features: FeatureMatrix) -> Result<Self> {
        features.check_finite()?;
        Ok(Self::of(Stored::Host(features)))
    }

    fn of(features: Stored) -> Self {
        DMatrix { features, info: MetaInfo::default(), categories: Categories::default() }
    }

    /// The codes of the string columns of the CSV file this was read from, or the names
    /// [`DMatrix::set_category_names`] gave (empty otherwise).
    pub fn categories(&self) -> &Categories {
        &self.categories
    }

    /// Names the categories of categorical features: `names[f][k]` is what code `k` of feature
    /// `f` stands for (`None`: a numeric feature or codes without names; an empty list clears
    /// them). A model trained on these rows keeps them (XGBoost's category encoder), and rows
    /// named otherwise are recoded to its codes when predicted.
    pub fn set_category_names(&mut self, names: Vec<Option<Vec<String>>>) -> Result<()> {
        if !names.is_empty() && names.len() != self.cols() {
            return Err(Error::InvalidData(format!("category names for {} features of {}", names.len(), self.cols())));
        }
        self.categories.features = names;
        self.categories.kinds.clear();
        Ok(())
    }

    /// Marks features whose category names are integers in decimal (pandas' categories of an
    /// integer dtype): `kinds[f]` is XGBoost's type code of their dtype (9 to 16: `i8`, `u8`,
    /// `i16`, `u16`, `i32`, `u32`, `i64`, `u64`), `None` for strings. A model trained on these rows
    /// writes them as XGBoost's typed integers. Call after [`DMatrix::set_category_names`].
    pub fn set_category_kinds(&mut self, kinds: Vec<Option<i64>>) -> Result<()> {
        if !kinds.is_empty() && kinds.len() != self.categories.features.len() {
            return Err(Error::InvalidData(format!(
                "category kinds for {} features of {} named",
                kinds.len(),
                self.categories.features.len()
            )));
        }
        if let Some(k) = kinds.iter().flatten().find(|k| !(9..=16).contains(*k)) {
            return Err(Error::param("category kinds", format!("{k} is not an integer type of XGBoost's (9 to 16)")));
        }
        self.categories.kinds = kinds;
        CategoryEncoder::of(&self.categories)?;
        Ok(())
    }

    /// With a label a row (finite).
    pub fn with_labels(mut self, labels: Vec<f32>) -> Result<Self> {
        self.set_labels(labels)?;
        Ok(self)
    }

    /// Sets a label a row (finite), as [`DMatrix::with_labels`].
    pub fn set_labels(&mut self, labels: Vec<f32>) -> Result<()> {
        self.check_rows("labels", labels.len())?;
        if let Some(i) = labels.iter().position(|y| !y.is_finite()) {
            return Err(Error::InvalidData(format!("row {i}: label {} is not finite", labels[i])));
        }
        self.info.labels = labels;
        Ok(())
    }

    /// With a weight a row (finite, non-negative), or a weight a query group once groups are set.
    pub fn with_weights(mut self, weights: Vec<f32>) -> Result<Self> {
        self.set_weights(weights)?;
        Ok(self)
    }

    /// Sets the weights, as [`DMatrix::with_weights`].
    pub fn set_weights(&mut self, weights: Vec<f32>) -> Result<()> {
        if let Stored::Pages(_) = self.features {
            // The sketch weighed the rows by the batches' weights.
            return Err(Error::InvalidData("the weights of batches are given with the batches".into()));
        }
        let groups = self.info.group_ptr.len().saturating_sub(1);
        if weights.len() != self.rows() && (groups == 0 || weights.len() != groups) {
            return Err(Error::InvalidData(format!("{} weights for {} rows", weights.len(), self.rows())));
        }
        crate::objective::check_weights(&weights, "row")?;
        self.info.weights = weights;
        Ok(())
    }

    /// With query groups for ranking: the sizes of consecutive groups of rows, which sum to the rows.
    pub fn with_groups(mut self, sizes: &[usize]) -> Result<Self> {
        self.set_groups(sizes)?;
        Ok(self)
    }

    /// Sets the query groups, as [`DMatrix::with_groups`].
    pub fn set_groups(&mut self, sizes: &[usize]) -> Result<()> {
        let mut group_ptr = vec![0];
        for &size in sizes {
            group_ptr.push(group_ptr[group_ptr.len() - 1] + size);
        }
        self.check_rows("query group sizes (their sum)", group_ptr[group_ptr.len() - 1])?;
        self.info.group_ptr = group_ptr;
        Ok(())
    }

    /// With each row's starting margins (`rows * outputs`, row-major) instead of the base score.
    pub fn with_base_margin(mut self, base_margin: Vec<f32>) -> Result<Self> {
        self.set_base_margin(base_margin)?;
        Ok(self)
    }

    /// Sets the starting margins, as [`DMatrix::with_base_margin`].
    pub fn set_base_margin(&mut self, base_margin: Vec<f32>) -> Result<()> {
        if self.rows() == 0 || !base_margin.len().is_multiple_of(self.rows()) {
            return Err(Error::InvalidData(format!("{} base margins for {} rows", base_margin.len(), self.rows())));
        }
        if let Some(i) = base_margin.iter().position(|m| !m.is_finite()) {
            return Err(Error::InvalidData(format!("base margin {i} ({}) is not finite", base_margin[i])));
        }
        self.info.base_margin = base_margin;
        Ok(())
    }

    /// Sets the features' names (one a feature, none empty or repeated; an empty list clears
    /// them): a model trained on these rows saves them, as XGBoost does.
    pub fn set_feature_names(&mut self, names: Vec<String>) -> Result<()> {
        if !names.is_empty() && names.len() != self.cols() {
            return Err(Error::InvalidData(format!("{} feature names for {} features", names.len(), self.cols())));
        }
        if let Some(i) = names.iter().position(|n| n.is_empty()) {
            return Err(Error::InvalidData(format!("feature name {i} is empty")));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(name) = names.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(Error::InvalidData(format!("feature name `{name}` is repeated")));
        }
        self.info.feature_names = names;
        Ok(())
    }

    /// Sets each feature's weight in column sampling (`colsample_by*`; XGBoost's `feature_weights`:
    /// a feature of twice the weight is drawn about twice as often), finite and non-negative, one
    /// a feature; an empty list clears them.
    pub fn set_feature_weights(&mut self, weights: Vec<f32>) -> Result<()> {
        MetaInfo::check_feature_weights(&weights, self.cols())?;
        self.info.feature_weights = weights;
        Ok(())
    }

    /// With `survival:aft`'s label intervals ([`DMatrix::set_label_bounds`]).
    pub fn with_label_bounds(mut self, lower: Vec<f32>, upper: Vec<f32>) -> Result<Self> {
        self.set_label_bounds(lower, upper)?;
        Ok(self)
    }

    /// Sets each row's label interval for `survival:aft` (XGBoost's `label_lower_bound` and
    /// `label_upper_bound`): equal bounds for an event, `+∞` above a right-censored row, 0 below a
    /// left-censored one. Labels may stay unset for it. Errors name the row: a NaN, an infinite
    /// lower bound, a lower bound above the upper.
    pub fn set_label_bounds(&mut self, lower: Vec<f32>, upper: Vec<f32>) -> Result<()> {
        crate::objective::check_bounds(&lower, &upper, self.rows())?;
        (self.info.label_lower_bound, self.info.label_upper_bound) = (lower, upper);
        Ok(())
    }

    /// Sets the features' types by XGBoost's names (one a feature; an empty list clears them):
    /// `c` marks a categorical feature, whose values are category codes split by
    /// [`boost_kernels::categorical`]; `q`, `float`, `int` and `i` are numeric. A model trained on
    /// these rows saves them, as XGBoost does.
    pub fn set_feature_types(&mut self, types: Vec<String>) -> Result<()> {
        let categorical = crate::data::categorical_features(&types, self.cols())?;
        if matches!(&self.features, Stored::Pages(m) if m.categorical != categorical) {
            return Err(Error::param("feature_types", "the batches' pages were cut with other feature types"));
        }
        self.info.feature_types = types;
        Ok(())
    }

    fn check_rows(&self, what: &str, n: usize) -> Result<()> {
        if n != self.rows() {
            return Err(Error::InvalidData(format!("{n} {what} for {} rows", self.rows())));
        }
        Ok(())
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows_view().rows()
    }

    /// Features.
    pub fn cols(&self) -> usize {
        self.rows_view().cols()
    }

    /// The labels, weights, query groups and base margins.
    pub fn info(&self) -> &MetaInfo {
        &self.info
    }

    /// The features when they are in host memory (`None` for rows in a GPU's).
    pub fn features(&self) -> Option<&FeatureMatrix> {
        match &self.features {
            Stored::Host(features) => Some(features),
            Stored::Device(_) | Stored::Pages(_) => None,
        }
    }

    /// Where the pages of external-memory rows ([`DMatrix::from_batches`]) are; `None` for others.
    pub fn pages(&self) -> Option<PagesInfo> {
        let Stored::Pages(matrix) = &self.features else { return None };
        let (host_bytes, disk_bytes) = matrix.store.bytes();
        Some(PagesInfo { pages: matrix.store.len(), host_bytes, disk_bytes })
    }

    /// The rows as the training loop takes them.
    pub(crate) fn rows_view(&self) -> Rows<'_> {
        let features = match &self.features {
            Stored::Host(features) => Features::Host(features),
            Stored::Device(rows) => Features::Device { gpu: &rows.gpu, data: rows.data() },
            Stored::Pages(matrix) => Features::Pages(matrix),
        };
        Rows::new(features, &self.info)
    }
}

/// Where a prediction's trees walk the rows (see `Booster::where_to_walk`).
enum Walk<'d> {
    Host(Cow<'d, FeatureMatrix>),
    Upload(Arc<Gpu>, Cow<'d, FeatureMatrix>),
    InPlace(&'d DeviceRows),
}

/// What [`Booster::predict`] returns for each row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PredictOutput {
    /// The objective's outputs: probabilities, class ids, ... (XGBoost's default).
    #[default]
    Value,
    /// Raw margins (`output_margin`).
    Margin,
}

/// How [`Booster::predict`] predicts: built from the default with its methods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PredictOptions {
    /// Values (the objective's outputs) or margins.
    pub output: PredictOutput,
    /// Rounds `begin..end` of the model (`(0, 0)`: all).
    pub iteration_range: (usize, usize),
    /// Where the trees are walked: the CPU, a GPU, or `auto` (the GPU when one can be opened); the
    /// same values, bit for bit.
    pub device: Device,
    /// Explanations by Saabas' approximation instead of SHAP values (XGBoost's `approx_contribs`;
    /// on the CPU only, as XGBoost's).
    pub approximate: bool,
}

impl PredictOptions {
    /// Raw margins instead of the objective's outputs.
    pub fn margin(self) -> Self {
        Self { output: PredictOutput::Margin, ..self }
    }

    /// Only rounds `begin..end`.
    pub fn iteration_range(self, begin: usize, end: usize) -> Self {
        Self { iteration_range: (begin, end), ..self }
    }

    /// On `device`.
    pub fn device(self, device: Device) -> Self {
        Self { device, ..self }
    }

    /// Explanations by Saabas' approximation ([`PredictOptions::approximate`]).
    pub fn approximate(self) -> Self {
        Self { approximate: true, ..self }
    }
}

/// A trained or loaded model with its objective: predicts, saves, reports. The trees of a GPU
/// prediction are laid out on the device once and kept for later calls on that device.
pub struct Booster {
    model: Model,
    objective: Box<dyn Objective>,
    history: Vec<RoundLog>,
    best_iteration: Option<usize>,
    best_score: Option<f64>,
    /// The device the last prediction by `device` opened.
    gpu: Mutex<Option<(Device, Arc<Gpu>)>>,
    /// The model's trees on the device of the last GPU prediction.
    trees: Mutex<Option<Arc<DeviceModel>>>,
    /// The model's trees packed for the CPU's walk, made by the first CPU prediction.
    packed: OnceLock<Option<PackedTrees>>,
}

impl Booster {
    /// Trains `num_boost_round` rounds on `dtrain` with `params` (XGBoost's names: see
    /// [`Params::from_pairs`]), logging each round's metrics of `evals` (data, name) to standard
    /// error as XGBoost does.
    pub fn train(
        params: &Params,
        dtrain: &DMatrix,
        num_boost_round: usize,
        evals: &[(&DMatrix, &str)],
    ) -> Result<Self> {
        let options = TrainOptions { num_boost_round, ..Default::default() };
        Self::train_with(params, dtrain, evals, &options, &mut [])
    }

    /// [`Booster::train`] with the rest of the options (early stopping, a model to continue, an
    /// opened device, the log's period) and the caller's `callbacks`, called before the ones the
    /// options add (XGBoost's `train(..., callbacks=)`: an [`crate::EvaluationMonitor`] writing the
    /// log elsewhere, an [`crate::EarlyStopping`] watching another metric, a progress bar).
    pub fn train_with(
        params: &Params,
        dtrain: &DMatrix,
        evals: &[(&DMatrix, &str)],
        options: &TrainOptions,
        callbacks: &mut [&mut dyn TrainingCallback],
    ) -> Result<Self> {
        let mut trained = learner::train_matrix(params, dtrain, evals, options, callbacks)?;
        if options.xgb_model.is_none() {
            // The rows' category names (a CSV file's strings, pandas' categories) go with the model,
            // as XGBoost keeps them, so that rows coded otherwise are recoded when predicted.
            trained.model.categories = CategoryEncoder::of(&dtrain.categories)?;
        }
        Ok(Booster {
            model: trained.model,
            objective: trained.objective,
            history: trained.history,
            best_iteration: trained.best_iteration,
            best_score: trained.best_score,
            gpu: Mutex::new(None),
            trees: Mutex::new(None),
            packed: OnceLock::new(),
        })
    }

    /// Trains `num_boost_round` more rounds on `dtrain`, appending their trees to this booster's
    /// (XGBoost's `train(..., xgb_model=booster)`): the same model as training all the rounds at
    /// once when the parameters and data are the same. The history is the new rounds'.
    pub fn continue_training(
        self,
        params: &Params,
        dtrain: &DMatrix,
        num_boost_round: usize,
        evals: &[(&DMatrix, &str)],
    ) -> Result<Self> {
        let options = TrainOptions { num_boost_round, xgb_model: Some(self.model), ..Default::default() };
        Self::train_with(params, dtrain, evals, &options, &mut [])
    }

    /// A model saved by [`Booster::save_model`] or by XGBoost (JSON or UBJSON, by content).
    pub fn load_model(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_model(Model::load(path)?)
    }

    /// A booster of `model`, with the objective its JSON names.
    pub fn from_model(model: Model) -> Result<Self> {
        let objective = objective::from_json(&model.objective)?;
        model.check_objective(objective.as_ref())?;
        Ok(Booster {
            model,
            objective,
            history: Vec::new(),
            best_iteration: None,
            best_score: None,
            gpu: Mutex::new(None),
            trees: Mutex::new(None),
            packed: OnceLock::new(),
        })
    }

    /// Writes the model as XGBoost does: JSON for a `.json` path, else UBJSON (to a temporary
    /// name, then renamed).
    pub fn save_model(&self, path: impl AsRef<Path>) -> Result<()> {
        self.model.save(path)
    }

    /// Each row's predictions, `rows * outputs` row-major (`outputs` is the number of classes for
    /// `multi:softprob`, else 1), from `data`'s base margins when it has them. Rows in a GPU's
    /// memory are predicted on that GPU (`device=cpu` reads them back first).
    pub fn predict(&self, data: &DMatrix, options: &PredictOptions) -> Result<Vec<f32>> {
        let range = options.iteration_range;
        let info = &data.info;
        let base_margin = (!info.base_margin.is_empty()).then_some(info.base_margin.as_slice());
        let to_margin = |b| self.objective.prob_to_margin(b);
        let (gpu, margins, rows) = match self.where_to_walk(data, options.device)? {
            Walk::Host(features) => {
                let packed = self.packed.get_or_init(|| self.model.pack()).as_ref();
                let margins = self.model.predict_margin_with(&features, base_margin, to_margin, range, packed)?;
                return Ok(self.transform(margins, options.output));
            }
            Walk::Upload(gpu, features) => {
                let margins =
                    self.trees_on(&gpu)?.predict_margin_uploaded(&gpu, &features, base_margin, to_margin, range)?;
                (gpu, margins, features.rows())
            }
            Walk::InPlace(rows) => {
                let data = rows.data();
                let trees = self.trees_on(&rows.gpu)?;
                let margins = trees.predict_margin_on_device(&rows.gpu, data, base_margin, to_margin, range)?;
                (rows.gpu.clone(), margins, data.rows())
            }
        };
        Ok(self.device_values(&gpu, margins, rows, options.output)?.to_vec(&gpu)?)
    }

    /// Margins on `gpu` to what `output` asks for, computed there.
    fn device_values(
        &self,
        gpu: &Gpu,
        margins: DeviceBuffer<f32>,
        rows: usize,
        output: PredictOutput,
    ) -> Result<DeviceBuffer<f32>> {
        match output {
            PredictOutput::Margin => Ok(margins),
            PredictOutput::Value => {
                transform_on_device(gpu, &margins, rows, self.objective.outputs(), self.objective.output_transform())
            }
        }
    }

    /// [`Booster::predict`] of rows the caller keeps in the memory of `gpu` (dense or CSR),
    /// borrowed for the call, the predictions left in device memory (XGBoost's `inplace_predict`
    /// of CuPy arrays): the objective's values are computed there too, the host's bits.
    pub fn predict_device_data(
        &self,
        gpu: &Gpu,
        data: DeviceData<'_>,
        options: &PredictOptions,
    ) -> Result<DeviceBuffer<f32>> {
        let to_margin = |b| self.objective.prob_to_margin(b);
        let range = options.iteration_range;
        let margins = if self.model.target_statistics.is_empty() {
            self.trees_on(gpu)?.predict_margin_on_device(gpu, data, None, to_margin, range)?
        } else {
            // The encoder is a table lookup a value: the rows are encoded on the host, the trees
            // still walk on the GPU.
            let features = self.model.target_statistics.apply(&data.to_host(gpu)?)?.into_owned();
            self.trees_on(gpu)?.predict_margin_uploaded(gpu, &features, None, to_margin, range)?
        };
        self.device_values(gpu, margins, data.rows(), options.output)
    }

    /// The leaf each row reaches in each tree of `options.iteration_range` on `options.device`:
    /// `rows * trees` node indices, row-major (XGBoost's `pred_leaf`; `options.output` does not
    /// apply).
    pub fn predict_leaf(&self, data: &DMatrix, options: &PredictOptions) -> Result<Vec<u32>> {
        let range = options.iteration_range;
        match self.where_to_walk(data, options.device)? {
            Walk::Host(features) => self.model.predict_leaf(&features, range),
            Walk::Upload(gpu, features) => self.trees_on(&gpu)?.predict_leaf(&gpu, &features, range),
            Walk::InPlace(rows) => self.trees_on(&rows.gpu)?.predict_leaf_on_device(&rows.gpu, rows.data(), range),
        }
    }

    /// Each row's SHAP values (XGBoost's `pred_contribs`): `rows x outputs x (features + 1)`,
    /// the bias last, each block summing to the row's margin; on `options.device` (the same values
    /// on the CPU and a GPU, bit for bit), of the rounds of `options.iteration_range`; Saabas'
    /// approximation with `options.approximate` (`options.output` does not apply).
    pub fn predict_contributions(&self, data: &DMatrix, options: &PredictOptions) -> Result<Vec<f32>> {
        self.explain(data, options, false)
    }

    /// Each row's SHAP interaction values (XGBoost's `pred_interactions`): `rows x outputs x
    /// (features + 1)^2`, a symmetric matrix a row and output, the bias last on the diagonal;
    /// as [`Booster::predict_contributions`] otherwise.
    pub fn predict_interactions(&self, data: &DMatrix, options: &PredictOptions) -> Result<Vec<f32>> {
        self.explain(data, options, true)
    }

    fn explain(&self, data: &DMatrix, options: &PredictOptions, interactions: bool) -> Result<Vec<f32>> {
        let range = options.iteration_range;
        let base_margin = (!data.info.base_margin.is_empty()).then_some(data.info.base_margin.as_slice());
        let to_margin = |b| self.objective.prob_to_margin(b);
        let model = &self.model;
        if options.approximate {
            if matches!(options.device, Device::Cuda { .. }) {
                let reason = "Saabas' approximation runs on the CPU only (as XGBoost's): ask for device=cpu or auto";
                return Err(Error::InvalidParameter { name: "approx_contribs".into(), reason: reason.into() });
            }
            let Walk::Host(features) = self.where_to_walk(data, Device::Cpu)? else { unreachable!("the CPU's rows") };
            return match interactions {
                false => model.predict_approx_contributions(&features, base_margin, to_margin, range),
                true => model.predict_approx_interactions(&features, base_margin, to_margin, range),
            };
        }
        let (gpu, rows) = match self.where_to_walk(data, options.device)? {
            Walk::Host(features) => {
                return match interactions {
                    false => model.predict_contributions(&features, base_margin, to_margin, range),
                    true => model.predict_interactions(&features, base_margin, to_margin, range),
                }
            }
            Walk::Upload(gpu, features) => {
                return gpu::explain(
                    &gpu,
                    model,
                    ExplainRows::Host(&features),
                    base_margin,
                    to_margin,
                    range,
                    interactions,
                )
            }
            Walk::InPlace(rows) => (rows.gpu.clone(), ExplainRows::Device(rows.data())),
        };
        gpu::explain(&gpu, model, rows, base_margin, to_margin, range, interactions)
    }

    /// The model's metrics on `data` (XGBoost's `Booster.eval`): each of `metrics` by XGBoost's
    /// names (`auc`, `ndcg@10`, `error@0.7`, ...), or the objective's default metric when none is
    /// named; computed on the CPU.
    pub fn evaluate(&self, data: &DMatrix, metrics: &[&str]) -> Result<Vec<(String, f64)>> {
        let info = crate::objective::with_bound_labels(self.objective.name(), &data.info);
        self.objective.validate(&info)?;
        let margins = self.predict(data, &PredictOptions::default().margin())?;
        let predictions = self.objective.eval_transform(&margins);
        let metrics = if metrics.is_empty() {
            vec![metric::default_metric_for(self.objective.as_ref())?]
        } else {
            let params = metric::objective_metric_params(self.objective.as_ref());
            metrics.iter().map(|name| metric::from_name_with_params(name, &params)).collect::<Result<_>>()?
        };
        let outputs = self.model.num_outputs();
        let evaluate = |m: &dyn Metric| {
            m.check(predictions.len(), &info, outputs)?;
            Ok((m.name(), m.evaluate(&predictions, &info, outputs)))
        };
        metrics.iter().map(|m| evaluate(m.as_ref())).collect()
    }

    /// Opens the device that predictions on `device` run on (kept for them) and names it: the
    /// GPU's name and ordinal, or `cpu` (also for `auto` without a usable GPU). A GPU that
    /// `cuda:N` names but that cannot be opened is an error.
    pub fn open_device(&self, device: Device) -> Result<String> {
        Ok(match self.open(device)? {
            Some(gpu) => learner::describe(&gpu),
            None => "cpu".into(),
        })
    }

    /// Where the trees walk `data`'s rows for a prediction on `device`: host rows on the CPU or
    /// uploaded to the GPU `device` opens, device rows on their GPU or, for `device=cpu`, read back.
    /// Host rows whose categories are named otherwise than the model's are recoded to its codes
    /// first ([`crate::model::CategoryEncoder::recode`]).
    fn where_to_walk<'d>(&self, data: &'d DMatrix, device: Device) -> Result<Walk<'d>> {
        Ok(match &data.features {
            Stored::Device(rows) if device == Device::Cpu => Walk::Host(Cow::Owned(rows.data().to_host(&rows.gpu)?)),
            Stored::Device(rows) if !self.model.target_statistics.is_empty() => {
                let features = self.model.target_statistics.apply(&rows.data().to_host(&rows.gpu)?)?.into_owned();
                Walk::Upload(rows.gpu.clone(), Cow::Owned(features))
            }
            Stored::Device(rows) => Walk::InPlace(rows),
            Stored::Pages(_) => return Err(crate::rows::no_raw_features("prediction")),
            Stored::Host(features) => {
                let features = self.model.categories.recode(features, &data.categories.features)?;
                match self.open(device)? {
                    None => Walk::Host(features),
                    Some(gpu) => Walk::Upload(gpu, self.encoded(features)?),
                }
            }
        })
    }

    /// Host rows as the GPU's trees read them: a model's target statistics applied (the host's
    /// walk applies them itself).
    fn encoded<'d>(&self, features: Cow<'d, FeatureMatrix>) -> Result<Cow<'d, FeatureMatrix>> {
        Ok(match self.model.target_statistics.apply(&features)? {
            Cow::Borrowed(_) => features,
            Cow::Owned(encoded) => Cow::Owned(encoded),
        })
    }

    fn transform(&self, margins: Vec<f32>, output: PredictOutput) -> Vec<f32> {
        match output {
            PredictOutput::Margin => margins,
            PredictOutput::Value => self.objective.transform(&margins),
        }
    }

    /// The device `device` names, opened by the last call that named it or now: `None` for the
    /// CPU, and for `auto` without a usable GPU (a GPU that `cuda:N` names but cannot be opened is
    /// an error).
    fn open(&self, device: Device) -> Result<Option<Arc<Gpu>>> {
        let mut opened = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, gpu)) = opened.as_ref().filter(|(d, _)| *d == device) {
            return Ok(Some(gpu.clone()));
        }
        let Some(gpu) = learner::open_device(device, false)?.0 else { return Ok(None) };
        let gpu = Arc::new(gpu);
        *opened = Some((device, gpu.clone()));
        Ok(Some(gpu))
    }

    /// The model's trees laid out on `gpu`: those of the last GPU prediction when they are there.
    fn trees_on(&self, gpu: &Gpu) -> Result<Arc<DeviceModel>> {
        let mut kept = self.trees.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(trees) = kept.as_ref().filter(|t| t.is_on(gpu)) {
            return Ok(trees.clone());
        }
        let trees = Arc::new(DeviceModel::upload(gpu, &self.model)?);
        *kept = Some(trees.clone());
        Ok(trees)
    }

    /// The trees.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Each round's metrics of the evaluation sets.
    pub fn history(&self) -> &[RoundLog] {
        &self.history
    }

    /// The round with the best score of the last metric of the last evaluation set, and the score.
    pub fn best_iteration(&self) -> Option<(usize, f64)> {
        self.best_iteration.zip(self.best_score)
    }

    /// Sets a model attribute saved with the model (`None` removes it), as XGBoost's
    /// `Booster.set_attr`: `best_iteration` and `best_score` are the ones early stopping sets.
    pub fn set_attribute(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(value) => self.model.attributes.insert(key.into(), value.into()),
            None => self.model.attributes.remove(key),
        };
    }

    /// Sets the features' names saved with the model (one a feature, or none).
    pub fn set_feature_names(&mut self, names: Vec<String>) -> Result<()> {
        if !names.is_empty() && names.len() != self.model.num_feature {
            let features = self.model.num_feature;
            return Err(Error::InvalidData(format!(
                "{} feature names for a model of {features} features",
                names.len()
            )));
        }
        self.model.feature_names = names;
        Ok(())
    }

    /// Each used feature's importance of `kind` (`weight`, `gain`, `cover`, their totals).
    pub fn feature_importance(&self, kind: ImportanceType) -> Result<Vec<FeatureScore>> {
        self.model.feature_importance(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
    use crate::learner::{CustomMetric, CustomObjective};
    use primitives::ops::GradientPair;
    use primitives::Schedule;

    /// 300 rows of 3 features whose label is `x0 + x1 > 1`.
    fn binary() -> DMatrix {
        let rows = 300;
        let values: Vec<f32> = (0..rows * 3).map(|i| ((i * 37 + i / 7) % 101) as f32 / 100.0).collect();
        let labels = (0..rows).map(|r| f32::from(values[3 * r] + values[3 * r + 1] > 1.0)).collect();
        DMatrix::from_dense(values, rows, 3).unwrap().with_labels(labels).unwrap()
    }

    fn params() -> Params {
        Params::from_pairs(&[("objective", "binary:logistic"), ("max_depth", "3"), ("eta", "0.5")]).unwrap()
    }

    #[test]
    fn a_booster_predicts_what_the_lower_layers_predict_and_survives_a_save() {
        let data = binary();
        let options = TrainOptions { num_boost_round: 5, verbose_eval: 0, ..Default::default() };
        let booster = Booster::train_with(&params(), &data, &[(&data, "train")], &options, &mut []).unwrap();
        let dataset = Dataset { features: data.features().unwrap().clone(), info: data.info().clone() };
        let trained = learner::train(&params(), &dataset, &[], &options, &mut []).unwrap();
        let expected = trained.model.predict(&dataset, trained.objective.as_ref(), (0, 0)).unwrap();
        let values = booster.predict(&data, &PredictOptions::default()).unwrap();
        assert_eq!(values, expected);
        assert!(values.iter().all(|p| (0.0..=1.0).contains(p)));
        let margins = booster.predict(&data, &PredictOptions::default().margin()).unwrap();
        assert_eq!(booster.objective.transform(&margins), values);
        let first = booster.predict(&data, &PredictOptions::default().iteration_range(0, 1).margin()).unwrap();
        assert_ne!(first, margins);
        assert_eq!(booster.history().len(), 5);
        let path = std::env::temp_dir().join(format!("boost-booster-{}.json", std::process::id()));
        booster.save_model(&path).unwrap();
        let loaded = Booster::load_model(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(loaded.predict(&data, &PredictOptions::default()).unwrap(), values);
        let leaves = loaded.predict_leaf(&data, &PredictOptions::default().device(Device::Cpu)).unwrap();
        assert_eq!(leaves.len(), data.rows() * 5);
    }

    /// Five rounds and then three more write the model of eight rounds at once, byte for byte.
    #[test]
    fn continued_training_appends_the_rounds_training_at_once_would_build() {
        let data = binary();
        let quiet = |rounds| TrainOptions { num_boost_round: rounds, verbose_eval: 0, ..Default::default() };
        let at_once = Booster::train_with(&params(), &data, &[(&data, "train")], &quiet(8), &mut []).unwrap();
        let first = Booster::train_with(&params(), &data, &[], &quiet(5), &mut []).unwrap();
        let continued = first.continue_training(&params(), &data, 3, &[(&data, "train")]).unwrap();
        assert_eq!(continued.model().to_json_string().unwrap(), at_once.model().to_json_string().unwrap());
        assert_eq!(continued.history().len(), 3);
    }

    #[test]
    fn device_rows_predict_the_cpus_values_and_the_trees_are_laid_out_once() {
        let data = binary();
        let options = TrainOptions { num_boost_round: 4, verbose_eval: 0, ..Default::default() };
        let booster = Booster::train_with(&params(), &data, &[], &options, &mut []).unwrap();
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let Some(FeatureMatrix::Dense(m)) = data.features() else { unreachable!() };
        let values = gpu.upload(&m.values).unwrap();
        let on_device = DeviceData::Dense { values: &values, rows: m.rows, cols: m.cols };
        let got = booster.predict_device_data(&gpu, on_device, &PredictOptions::default()).unwrap();
        assert_eq!(got.to_vec(&gpu).unwrap(), booster.predict(&data, &PredictOptions::default()).unwrap());
        let kept = booster.trees_on(&gpu).unwrap();
        assert!(Arc::ptr_eq(&kept, &booster.trees_on(&gpu).unwrap()), "the trees are uploaded again");
        let other = Gpu::emulated(Schedule::Deterministic);
        assert!(!Arc::ptr_eq(&kept, &booster.trees_on(&other).unwrap()));
    }

    /// A custom objective that computes squared error's gradients builds the built-in objective's
    /// model, bit for bit, on the CPU and on the (emulated) GPU; a wrong count is an error.
    #[test]
    fn a_custom_objective_replaces_the_named_objectives_gradients() {
        let data = binary();
        let params = Params::from_pairs(&[("objective", "reg:squarederror"), ("max_depth", "3")]).unwrap();
        let squared_error = CustomObjective::new(|margins: &[f32], info: &MetaInfo| {
            margins.iter().zip(&info.labels).map(|(m, y)| GradientPair::new(m - y, 1.0)).collect()
        });
        let options = TrainOptions { num_boost_round: 4, verbose_eval: 0, ..Default::default() };
        let built_in = Booster::train_with(&params, &data, &[], &options, &mut []).unwrap();
        let custom = TrainOptions { custom_objective: Some(squared_error.clone()), ..options.clone() };
        let booster = Booster::train_with(&params, &data, &[], &custom, &mut []).unwrap();
        let json = |b: &Booster| b.model().to_json_string().unwrap();
        assert_eq!(json(&booster), json(&built_in));
        let gpu = Arc::new(Gpu::emulated(Schedule::Deterministic));
        let on_device = TrainOptions { gpu: Some(gpu), ..custom.clone() };
        assert_eq!(json(&Booster::train_with(&params, &data, &[], &on_device, &mut []).unwrap()), json(&built_in));
        let short = CustomObjective::new(|_: &[f32], _: &MetaInfo| vec![GradientPair::new(0.0, 1.0)]);
        let wrong = TrainOptions { custom_objective: Some(short), ..options };
        let refused = Booster::train_with(&params, &data, &[], &wrong, &mut []).err().map(|e| e.to_string());
        assert!(refused.is_some_and(|e| e.contains("gave 1 gradient pairs for 300 margins")));
    }

    /// A custom metric is logged after the named ones with the predictions the built-in metrics
    /// see (probabilities here): the error rate written by hand gives the built-in `error`'s values.
    #[test]
    fn a_custom_metric_is_logged_after_the_named_ones() {
        let data = binary();
        let error = CustomMetric::new("my-error", false, |predictions: &[f32], info: &MetaInfo| {
            let wrong = predictions.iter().zip(&info.labels).filter(|(p, y)| (**p > 0.5) != (**y > 0.5)).count();
            wrong as f64 / predictions.len() as f64
        });
        let mut params = params();
        params.set("eval_metric", "error").unwrap();
        let options =
            TrainOptions { num_boost_round: 3, verbose_eval: 1, custom_metric: Some(error), ..Default::default() };
        let booster = Booster::train_with(&params, &data, &[(&data, "train")], &options, &mut []).unwrap();
        for log in booster.history() {
            let names: Vec<&str> = log.values.iter().map(|(_, m, _)| m.as_str()).collect();
            assert_eq!(names, ["error", "my-error"]);
            assert_eq!(log.values[0].2, log.values[1].2, "round {}", log.round);
        }
    }

    /// `binary()`'s rows copied into the memory of `gpu` (dense), with its labels.
    fn on_device(gpu: &Arc<Gpu>, data: &DMatrix) -> DMatrix {
        let Some(FeatureMatrix::Dense(m)) = data.features() else { unreachable!() };
        let values = gpu.upload(&m.values).unwrap();
        DMatrix::from_device_dense(gpu.clone(), values, m.rows, m.cols)
            .unwrap()
            .with_labels(data.info().labels.clone())
            .unwrap()
    }

    /// Rows in (emulated) device memory train, in place on their GPU, the model host rows train
    /// on the CPU, byte for byte, with the same evaluation log (a device evaluation set beside a
    /// host one); continuing the model, predictions, leaves and `device=cpu`'s read-back agree.
    #[test]
    fn a_dmatrix_in_device_memory_trains_and_predicts_as_host_rows_do() {
        let data = binary();
        let gpu = Arc::new(Gpu::emulated(Schedule::Deterministic));
        let device_data = on_device(&gpu, &data);
        assert!(device_data.features().is_none());
        assert_eq!((device_data.rows(), device_data.cols()), (data.rows(), data.cols()));
        let mut on_gpu = params();
        on_gpu.set("device", "cuda").unwrap();
        let options = TrainOptions { num_boost_round: 4, verbose_eval: 0, ..Default::default() };
        let host = Booster::train_with(&params(), &data, &[(&data, "train"), (&data, "test")], &options, &mut []);
        let host = host.unwrap();
        let evals = [(&device_data, "train"), (&data, "test")];
        let device = Booster::train_with(&on_gpu, &device_data, &evals, &options, &mut []).unwrap();
        let json = |b: &Booster| b.model().to_json_string().unwrap();
        assert_eq!(json(&device), json(&host));
        assert_eq!(device.history(), host.history());
        // `device=cpu` reads the rows back and trains on the CPU: the same model again.
        let read_back = Booster::train_with(&params(), &device_data, &evals, &options, &mut []).unwrap();
        assert_eq!(json(&read_back), json(&host));
        assert_eq!(read_back.history(), host.history());
        // Continuing from the device rows predicts the model's margins there first.
        let more = |b: Booster, p: &Params, d: &DMatrix| b.continue_training(p, d, 2, &[]).unwrap();
        assert_eq!(json(&more(device, &on_gpu, &device_data)), json(&more(host, &params(), &data)));

        let booster = Booster::train_with(&params(), &data, &[], &options, &mut []).unwrap();
        let expected = booster.predict(&data, &PredictOptions::default()).unwrap();
        assert_eq!(booster.predict(&device_data, &PredictOptions::default()).unwrap(), expected);
        let on_cpu = PredictOptions::default().device(Device::Cpu);
        assert_eq!(booster.predict(&device_data, &on_cpu).unwrap(), expected);
        let leaves = booster.predict_leaf(&data, &on_cpu).unwrap();
        assert_eq!(booster.predict_leaf(&device_data, &PredictOptions::default()).unwrap(), leaves);
        let margins = vec![0.25; data.rows()];
        let with_base = |d: DMatrix| d.with_base_margin(margins.clone()).unwrap();
        let margin = PredictOptions::default().margin();
        let base_on_device = booster.predict(&with_base(on_device(&gpu, &data)), &margin).unwrap();
        assert_eq!(base_on_device, booster.predict(&with_base(data.clone()), &margin).unwrap());
    }

    /// CSR rows in device memory (columns checked there) train the host CSR rows' model; a
    /// custom objective's run, whose evaluation set the host predicts, reads device rows back.
    #[test]
    fn csr_rows_in_device_memory_train_the_host_csr_model() {
        let rows = 200;
        let (mut row_ptr, mut cols, mut values, mut labels) = (vec![0], Vec::new(), Vec::new(), Vec::new());
        for r in 0..rows {
            for c in 0..4u32 {
                if !(r + c as usize).is_multiple_of(3) {
                    cols.push(c);
                    values.push(((r * 31 + c as usize * 17) % 97) as f32 / 97.0);
                }
            }
            row_ptr.push(cols.len());
            labels.push(f32::from(r % 5 < 2));
        }
        let host = DMatrix::from_csr(row_ptr, cols, values, 4).unwrap().with_labels(labels.clone()).unwrap();
        let gpu = Arc::new(Gpu::emulated(Schedule::Deterministic));
        let Some(FeatureMatrix::Sparse(m)) = host.features() else { unreachable!() };
        let csr = DeviceCsr::upload(&gpu, m).unwrap();
        let device = DMatrix::from_device_csr(gpu.clone(), csr).unwrap().with_labels(labels).unwrap();
        let mut on_gpu = params();
        on_gpu.set("device", "cuda").unwrap();
        let squared_error = CustomObjective::new(|margins: &[f32], info: &MetaInfo| {
            margins.iter().zip(&info.labels).map(|(m, y)| GradientPair::new(m - y, 1.0)).collect()
        });
        for custom_objective in [None, Some(squared_error)] {
            let options = TrainOptions { num_boost_round: 3, verbose_eval: 0, custom_objective, ..Default::default() };
            let on_host = Booster::train_with(&params(), &host, &[(&host, "test")], &options, &mut []).unwrap();
            let on_device = Booster::train_with(&on_gpu, &device, &[(&device, "test")], &options, &mut []).unwrap();
            assert_eq!(on_device.model().to_json_string().unwrap(), on_host.model().to_json_string().unwrap());
            assert_eq!(on_device.history(), on_host.history());
        }
    }

    #[test]
    fn device_rows_that_are_bad_or_on_another_gpu_are_refused() {
        let gpu = Arc::new(Gpu::emulated(Schedule::Deterministic));
        let message = |r: Result<DMatrix>| r.err().map(|e| e.to_string()).unwrap_or_default();
        let values = gpu.upload(&[1.0, 2.0, f32::INFINITY, 4.0]).unwrap();
        assert!(message(DMatrix::from_device_dense(gpu.clone(), values, 2, 2)).contains("row 1, feature 0"));
        let values = gpu.upload(&[1.0; 5]).unwrap();
        assert!(message(DMatrix::from_device_dense(gpu.clone(), values, 2, 2)).contains("5 device values for 2 rows"));
        let other = Arc::new(Gpu::emulated(Schedule::Deterministic));
        let values = other.upload(&[1.0; 4]).unwrap();
        assert!(message(DMatrix::from_device_dense(gpu.clone(), values, 2, 2)).contains("a buffer of another device"));
        // An evaluation set on another GPU than the training rows'.
        let data = binary();
        let (train, test) = (on_device(&gpu, &data), on_device(&other, &data));
        let mut on_gpu = params();
        on_gpu.set("device", "cuda").unwrap();
        let options = TrainOptions { num_boost_round: 1, verbose_eval: 0, ..Default::default() };
        let refused = Booster::train_with(&on_gpu, &train, &[(&test, "test")], &options, &mut []).err();
        assert!(refused.is_some_and(|e| e.to_string().contains("a buffer of another device")));
    }

    #[test]
    fn bad_data_is_refused_naming_what_is_wrong() {
        let message = |r: Result<DMatrix>| r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message(DMatrix::from_dense(vec![1.0; 5], 2, 3)).contains("5 values for 2 rows of 3 features"));
        assert!(message(DMatrix::from_dense(vec![1.0, f32::INFINITY], 1, 2)).contains("row 0, feature 1"));
        let dense = || DMatrix::from_dense(vec![1.0; 4], 2, 2).unwrap();
        assert!(message(dense().with_labels(vec![1.0])).contains("1 labels for 2 rows"));
        assert!(message(dense().with_labels(vec![1.0, f32::NAN])).contains("row 1: label NaN is not finite"));
        assert!(message(dense().with_weights(vec![1.0, -1.0])).contains("row 1: weight -1"));
        assert!(message(dense().with_groups(&[1, 2])).contains("3 query group sizes (their sum) for 2 rows"));
        assert!(message(dense().with_base_margin(vec![0.0; 3])).contains("3 base margins for 2 rows"));
        assert!(dense().with_groups(&[1, 1]).unwrap().with_weights(vec![1.0, 2.0]).is_ok());
        let csr = DMatrix::from_csr(vec![0, 1, 2], vec![0, 5], vec![1.0, 2.0], 3);
        assert!(message(csr).contains("CSR column index 5 is not below the 3 columns"));
        let csr = DMatrix::from_csr(vec![0, 1, 3], vec![0, 0, 2], vec![1.0, 2.0, 3.0], 3).unwrap();
        assert_eq!((csr.rows(), csr.cols()), (2, 3));
    }
}
