//! A run between its setup and its report ([`Run`]): the model so far, the backend, the training
//! rows' margins, the one generator every random draw comes from, and one boosting round.

use std::time::Instant;

use primitives::ops::GradientPair;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::backend::TreeBackend;
use super::device::{on_device, Devices};
use super::evaluation::{Evaluation, RoundsOn};
use super::setup::Checked;
use super::{initial_margins, RoundLog, TrainOptions, Trained};
use crate::gpu::DeviceModel;
use crate::model::Model;
use crate::objective::{DeviceObjective, Objective};
use crate::param::{Params, TreeParams};
use crate::phases::PhaseTimes;
use crate::rows::{Features, Rows};
use crate::sample::TreeSampler;
use crate::tree::Tree;
use crate::{Error, Result};

/// A training run after its setup.
pub(super) struct Run<'a, 'g> {
    options: &'a TrainOptions,
    train: &'a Rows<'a>,
    objective: Box<dyn Objective>,
    /// The model so far (a continued model's trees first).
    pub(super) model: Model,
    backend: Box<dyn TreeBackend<'g> + 'g>,
    /// The objective's form on the device when the device computes the rounds (gradients, trees and
    /// margins where the rows are; the margins come back only for the log).
    device_objective: Option<DeviceObjective>,
    /// The training rows' margins on the host, `rows * outputs`.
    margins: Vec<f32>,
    /// The host's gradients, when the host computes them.
    gradients: Vec<GradientPair<f32>>,
    /// One output's gradients of the tree being grown, sampled (host rounds of several outputs).
    column: Vec<GradientPair<f32>>,
    /// The gradient magnitudes of gradient-based sampling (host rounds), kept across trees.
    magnitudes: Vec<f32>,
    rng: ChaCha8Rng,
    all_features: Vec<u32>,
    evaluation: Evaluation<'a>,
    phases: PhaseTimes,
    /// The trees' parameters: `params.tree`, with the learning rate a callback set.
    tree_params: TreeParams,
}

impl<'a, 'g> Run<'a, 'g> {
    /// The model to grow (new, or the one to continue), every set's margins before the first round,
    /// and the training rows (and evaluation sets) on the device when it computes the rounds.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        params: &'a Params,
        train: &'a Rows<'a>,
        evals: &'a [(Rows<'a>, &'a str)],
        options: &'a TrainOptions,
        (objective, metrics): Checked,
        mut backend: Box<dyn TreeBackend<'g> + 'g>,
        mut phases: PhaseTimes,
    ) -> Result<Self> {
        let start = Instant::now();
        let outputs = objective.outputs();
        let model = initial_model(params, train, options, objective.as_ref())?;
        // A random forest's trees share the round's gradients, which the device's element-wise
        // kernels compute afresh for each tree from the margins the trees before it moved: its
        // rounds take the host's gradients (the trees still grow on the device).
        let device_objective = objective
            .device_objective()
            .filter(|_| options.custom_objective.is_none() && params.tree.num_parallel_tree == 1)
            .filter(|&o| backend.device_rounds().is_some_and(|rounds| rounds.takes(o)));
        // Rows start at the model's base margins unless the data gives its own or a model's trees
        // are continued; the device then makes such margins itself instead of receiving them.
        let base_margins = model.base_margins(|b| objective.prob_to_margin(b));
        let from_base = device_objective.is_some() && model.trees.is_empty() && base_margins.len() == outputs;
        let at_base = |data: &Rows| from_base && data.info.base_margin.is_empty();
        let initial = |data: &Rows| margins_of(&model, data, objective.as_ref());
        let margins = if at_base(train) { Vec::new() } else { initial(train)? };
        // An evaluation set that is the training data itself (`train` in the log) reads the training
        // margins, which the rows' leaves keep up to date: the same values prediction would give.
        // Sets the device does not keep (rows streamed through it) start on the host.
        let sets_on_device = device_objective
            .is_some_and(|o| backend.device_rounds().is_some_and(|rounds| rounds.keeps_evaluation_sets(o)));
        let eval_margins = evals
            .iter()
            .map(|(d, _)| if train.is(d) || (at_base(d) && sets_on_device) { Ok(Vec::new()) } else { initial(d) })
            .collect::<Result<_>>()?;
        let gradients = match device_objective {
            Some(_) => Vec::new(),
            None => vec![GradientPair::new(0f32, 0f32); train.rows() * outputs],
        };
        phases.add("base score and initial margins", start.elapsed());
        let device = match (device_objective, backend.device_rounds()) {
            (Some(device_objective), Some(rounds)) => {
                let start = Instant::now();
                on_device(rounds.gpu(), "uploading the labels and margins", || {
                    let margins = initial_margins(at_base(train), &base_margins, &margins);
                    rounds.keep_rows_on_device(device_objective, train.info, margins)
                })?;
                phases.add("labels and margins to the device", start.elapsed());
                Some((rounds, device_objective))
            }
            _ => None,
        };
        let rounds = RoundsOn { device, base_margins: &base_margins, from_base };
        let evaluation = Evaluation::new(train, evals, metrics, objective.as_ref(), eval_margins, rounds, &mut phases)?;
        Ok(Run {
            options,
            train,
            objective,
            model,
            backend,
            device_objective,
            margins,
            gradients,
            column: Vec::new(),
            magnitudes: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            all_features: (0..train.cols() as u32).collect(),
            evaluation,
            phases,
            tree_params: TreeParams { feature_weights: train.info.feature_weights.clone(), ..params.tree.clone() },
        })
    }

    /// What the evaluation log holds.
    pub(super) fn layout(&self) -> super::EvalLayout {
        self.evaluation.layout()
    }

    /// The learning rate (`eta`) of the rounds from now on, as a callback sets it: finite and not
    /// negative, as the parameter.
    pub(super) fn set_learning_rate(&mut self, eta: f32) -> Result<()> {
        if !eta.is_finite() || eta < 0.0 {
            return Err(Error::param(
                "learning_rate",
                format!("{eta} set by a callback: expected a finite value >= 0"),
            ));
        }
        self.tree_params.eta = eta;
        Ok(())
    }

    /// Round `round`: one tree an output, every set's margins moved on by them.
    pub(super) fn boost_round(&mut self, round: usize) -> Result<()> {
        let trees = match self.device_objective {
            Some(_) => self.boost_on_device(round)?,
            None => self.boost_on_host(round)?,
        };
        let start = Instant::now();
        let gpu = self.backend.gpu();
        self.evaluation.add_round(&mut self.model, trees, gpu, self.objective.as_ref())?;
        self.phases.add("margins", start.elapsed());
        Ok(())
    }

    /// The round's trees where the rows are: the device's gradients, trees and margins.
    fn boost_on_device(&mut self, round: usize) -> Result<Vec<(Tree, u32)>> {
        let tree_params = &self.tree_params;
        let reads_margins = self.evaluation.reads_train_margins();
        let rounds = self.backend.device_rounds().ok_or_else(|| Error::Model("no device rounds".into()))?;
        let gpu = rounds.gpu();
        let start = Instant::now();
        on_device(gpu, "computing the gradients", || rounds.compute_gradients(round))?;
        self.phases.add("gradients", start.elapsed());
        let mut trees = Vec::new();
        for k in 0..self.objective.outputs() {
            let start = Instant::now();
            // The same draws, in the same order, as the host's rounds.
            let sampler = TreeSampler::draw(tree_params, &mut self.rng);
            let (fraction, weights) = (tree_params.colsample_bytree, &tree_params.feature_weights);
            let features = sample_features(&self.all_features, fraction, weights, &mut self.rng);
            self.phases.add("gradients", start.elapsed());
            let start = Instant::now();
            let rng = &mut self.rng;
            let tree = on_device(gpu, "growing a tree", || rounds.boost_tree(tree_params, k, sampler, &features, rng))?;
            trees.push((tree, k as u32));
            self.phases.add("trees", start.elapsed());
        }
        if reads_margins {
            let start = Instant::now();
            self.margins = on_device(gpu, "reading the margins back", || rounds.margins())?;
            self.phases.add("margins", start.elapsed());
        }
        Ok(trees)
    }

    /// The round's trees from the host's gradients, grown by the backend; the host's margins moved
    /// on by each.
    fn boost_on_host(&mut self, round: usize) -> Result<Vec<(Tree, u32)>> {
        let (tree_params, info, outputs) = (&self.tree_params, self.train.info, self.objective.outputs());
        let start = Instant::now();
        match &self.options.custom_objective {
            Some(custom) => custom.gradients_into(&self.margins, info, &mut self.gradients)?,
            None => self.objective.gradients(&self.margins, info, round, &mut self.gradients),
        }
        self.phases.add("gradients", start.elapsed());
        // A random forest's trees (XGBoost's `num_parallel_tree`) each take `eta / trees`.
        let forest = tree_params.num_parallel_tree;
        let forest_params;
        let tree_params = if forest > 1 {
            forest_params = TreeParams { eta: tree_params.eta / forest as f32, ..tree_params.clone() };
            &forest_params
        } else {
            tree_params
        };
        let mut trees = Vec::new();
        for (k, _) in (0..outputs).flat_map(|k| (0..forest).map(move |t| (k, t))) {
            let start = Instant::now();
            let sampler = TreeSampler::draw(tree_params, &mut self.rng);
            // One tree a round of one output samples the gradients themselves in place (the next
            // round writes them again); otherwise each tree's are copied, one buffer for every
            // tree: a new one would cost its page faults again each time.
            let column = if outputs == 1 && forest == 1 {
                &mut self.gradients
            } else {
                let (gradients, column) = (&self.gradients, &mut self.column);
                column.resize(self.train.rows(), GradientPair::new(0.0, 0.0));
                column.par_iter_mut().enumerate().for_each(|(i, g)| *g = gradients[i * outputs + k]);
                column
            };
            sampler.sample_on_host(column, &mut self.magnitudes)?;
            let column = &*column;
            let (fraction, weights) = (tree_params.colsample_bytree, &tree_params.feature_weights);
            let features = sample_features(&self.all_features, fraction, weights, &mut self.rng);
            self.phases.add("sampling", start.elapsed());
            let start = Instant::now();
            let built = self.backend.build_tree(tree_params, column, &features, &mut self.rng)?;
            self.phases.add("trees", start.elapsed());
            self.phases.merge(&built.phases);
            let start = Instant::now();
            let leaves = &built.tree.split_conditions;
            self.margins
                .par_chunks_mut(outputs)
                .zip(built.positions.par_iter())
                .with_min_len(1 << 14)
                .for_each(|(row, &leaf)| row[k] += leaves[leaf as usize]);
            self.phases.add("margins", start.elapsed());
            trees.push((built.tree, k as u32));
        }
        Ok(trees)
    }

    /// Round `round`'s evaluation log (no values when there is nothing to evaluate).
    pub(super) fn evaluate(&mut self, round: usize) -> Result<RoundLog> {
        if self.evaluation.is_empty() {
            return Ok(RoundLog { round, values: Vec::new() });
        }
        let start = Instant::now();
        let gpu = self.backend.gpu();
        let rounds = match self.device_objective {
            Some(_) => self.backend.device_rounds(),
            None => None,
        };
        let (log, on_the_device) = self.evaluation.log(round, &self.margins, rounds, gpu, self.objective.as_ref())?;
        self.phases.add(if on_the_device { "metrics on the device" } else { "metrics" }, start.elapsed());
        Ok(log)
    }

    /// The report: the model, the log, the phases and each device's peak memory.
    /// `carried`: the continued model's best round, put back when this run found none.
    pub(super) fn finish(
        mut self,
        history: Vec<RoundLog>,
        devices: &Devices<'_>,
        carried: Vec<(String, String)>,
    ) -> Result<Trained> {
        let gpu = self.backend.gpu();
        let phases = match gpu {
            Some(gpu) => on_device(gpu, "reading the phases' device times", || self.backend.phases())?,
            None => self.backend.phases()?,
        };
        self.phases.merge(&phases);
        let mut peak_device_bytes_each = Vec::new();
        for gpu in self.backend.gpus() {
            let usage = on_device(gpu, "reading the peak memory", || Ok(gpu.memory_usage()?))?;
            peak_device_bytes_each.extend(usage.map(|usage| usage.peak_bytes));
        }
        let attribute = |name: &str| self.model.attributes.get(name);
        let best_iteration = attribute("best_iteration").and_then(|v| v.parse().ok());
        let best_score = attribute("best_score").and_then(|v| v.parse().ok());
        if best_iteration.is_none() {
            self.model.attributes.extend(carried);
        }
        Ok(Trained {
            best_iteration,
            best_score,
            peak_device_bytes: peak_device_bytes_each.first().copied(),
            peak_device_bytes_each,
            ellpack_bytes: self.backend.matrix_bytes(),
            dense_f32_bytes: self.train.rows() * self.train.cols() * 4,
            device: devices.description.clone(),
            phases: self.phases,
            history,
            objective: self.objective,
            model: self.model,
        })
    }
}

/// The model the rounds are added to: `options.xgb_model` (checked against the objective and the
/// data), or a new one at the base score (the parameter's, or the objective's from the labels).
fn initial_model(
    params: &Params,
    train: &Rows<'_>,
    options: &TrainOptions,
    objective: &dyn Objective,
) -> Result<Model> {
    let outputs = objective.outputs();
    if let Some(previous) = &options.xgb_model {
        if previous.num_outputs() != outputs || previous.objective_name != objective.name() {
            return Err(Error::param(
                "xgb_model",
                format!(
                    "the model to continue has objective {} with {} outputs, the parameters {} with {outputs}",
                    previous.objective_name,
                    previous.num_outputs(),
                    objective.name()
                ),
            ));
        }
        if previous.num_feature > train.cols() {
            return Err(Error::InvalidData(format!(
                "the model to continue has {} features, the training data {}",
                previous.num_feature,
                train.cols()
            )));
        }
        if previous.trees.iter().any(|t| !t.categorical.is_empty()) {
            return Err(Error::param(
                "xgb_model",
                "the model to continue has categorical splits, which training does not make yet",
            ));
        }
        if previous.num_parallel_tree != params.tree.num_parallel_tree as usize {
            let (before, now) = (previous.num_parallel_tree, params.tree.num_parallel_tree);
            return Err(Error::param("num_parallel_tree", format!("{now}, but the model continued grew {before}")));
        }
        let mut model = previous.clone();
        model.num_feature = train.cols();
        return Ok(model);
    }
    let base_score = match params.base_score {
        Some(b) => {
            objective.check_base_score(b)?;
            vec![b]
        }
        None => objective.initial_base_scores(train.info),
    };
    let num_class = if outputs > 1 && !objective.multi_target() { outputs } else { 0 };
    let mut model = if num_class == 0 && outputs > 1 {
        // Several targets of one label (quantiles): XGBoost's `num_target`, a base score each.
        let mut model = Model::new(objective.to_json(), train.cols(), 0, vec![0.0])?;
        model.num_target = outputs;
        model.base_score = match base_score.len() {
            1 => vec![base_score[0]; outputs],
            _ => base_score,
        };
        model
    } else {
        Model::new(objective.to_json(), train.cols(), num_class, base_score)?
    };
    model.boost_from_average = params.base_score.is_none();
    model.num_parallel_tree = params.tree.num_parallel_tree as usize;
    if train.info.feature_types.len() == train.cols() {
        model.feature_types = train.info.feature_types.clone();
    }
    if train.info.feature_names.len() == train.cols() {
        model.feature_names = train.info.feature_names.clone();
    }
    Ok(model)
}

/// `data`'s margins under `model` (its base margins, or the base score, plus its trees): on the
/// device for device rows (the host's bits).
fn margins_of(model: &Model, data: &Rows<'_>, objective: &dyn Objective) -> Result<Vec<f32>> {
    let base = (!data.info.base_margin.is_empty()).then_some(data.info.base_margin.as_slice());
    let to_margin = |b: f32| objective.prob_to_margin(b);
    match data.features {
        Features::Host(features) => model.predict_encoded_margin(features, base, to_margin, (0, 0), None),
        Features::Device { gpu, data } => on_device(gpu, "predicting the initial margins", || {
            let trees = DeviceModel::upload(gpu, model)?;
            Ok(trees.predict_margin_on_device(gpu, data, base, to_margin, (0, 0))?.to_vec(gpu)?)
        }),
        // Pages start a run: from the base margins (continuing a model needs the raw features).
        Features::Pages(_) if model.trees.is_empty() => model.base_margins_of(data.rows(), base, to_margin),
        Features::Pages(_) => Err(crate::rows::no_raw_features("continuing a model")),
    }
}

fn sample_features(features: &[u32], fraction: f32, weights: &[f32], rng: &mut ChaCha8Rng) -> Vec<u32> {
    if fraction >= 1.0 {
        return features.to_vec();
    }
    if !weights.is_empty() {
        return crate::tree::grow::sample(features, fraction, weights, rng);
    }
    let count = ((features.len() as f64 * fraction as f64) as usize).max(1);
    let mut chosen: Vec<u32> =
        rand::seq::index::sample(rng, features.len(), count).into_iter().map(|i| features[i]).collect();
    chosen.sort_unstable();
    chosen
}
