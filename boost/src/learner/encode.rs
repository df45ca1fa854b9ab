//! `categorical_encoding=ordered_target`: before the trees are built, the training set's
//! categorical features with at least `max_cat_to_onehot` categories (those XGBoost would give
//! partition splits) become numeric features, their ordered target statistics
//! ([`boost_kernels::target_statistics`]), computed on the GPU that trains or on the CPU, the same
//! bits; the evaluation sets take the statistics of all training rows, as prediction does. The
//! trees then split the encoded features like any numeric one, and the model keeps the statistics
//! ([`TargetStatistics`]).

use rayon::prelude::*;

use boost_kernels::target_statistics::{key_category, sort_key, OrderedStatistics, MISSING};

use super::device::{on_device, Devices};
use super::TrainOptions;
use crate::data::{FeatureMatrix, MetaInfo};
use crate::model::{EncodedFeature, TargetStatistics};
use crate::objective::Objective;
use crate::param::{CategoricalEncoding, Params};
use crate::quantile::not_a_category;
use crate::rows::{Features, Rows};
use crate::{Error, Result};

/// The encoded sets: the training set's and the evaluation sets' features and infos (the encoded
/// features typed numeric), and the model's statistics.
pub(super) struct Encoded {
    pub statistics: TargetStatistics,
    train: (FeatureMatrix, MetaInfo),
    evals: Vec<Option<(FeatureMatrix, MetaInfo)>>,
}

impl Encoded {
    /// The rows to train on: the encoded sets (an evaluation set that is the training set stays
    /// so).
    pub fn rows<'e>(&'e self, evals: &[(Rows<'_>, &'e str)]) -> (Rows<'e>, Vec<(Rows<'e>, &'e str)>) {
        let train = Rows::new(Features::Host(&self.train.0), &self.train.1);
        let evals = evals
            .iter()
            .zip(&self.evals)
            .map(|((_, name), encoded)| match encoded {
                Some((m, info)) => (Rows::new(Features::Host(m), info), *name),
                None => (Rows::new(Features::Host(&self.train.0), &self.train.1), *name),
            })
            .collect();
        (train, evals)
    }
}

/// The encoded sets, or `None` when the parameters ask for no encoding or no feature needs it.
pub(super) fn encode(
    params: &Params,
    train: &Rows<'_>,
    evals: &[(Rows<'_>, &str)],
    devices: &Devices<'_>,
    options: &TrainOptions,
    objective: &dyn Objective,
) -> Result<Option<Encoded>> {
    let continued = options.xgb_model.as_ref().is_some_and(|m| !m.target_statistics.is_empty());
    if params.categorical_encoding != CategoricalEncoding::OrderedTarget {
        if continued {
            return Err(Error::param("xgb_model", "a model with target statistics cannot be trained further"));
        }
        return Ok(None);
    }
    let name = "categorical_encoding";
    if options.xgb_model.is_some() {
        return Err(Error::param(name, "ordered_target cannot continue a model (`xgb_model`)"));
    }
    if objective.outputs() > 1 || train.info.labels.len() != train.rows() {
        return Err(Error::param(name, "ordered_target takes one label a row (not multi-class or multi-target)"));
    }
    let features = train.host_features()?;
    let categorical = train.info.categorical_features(features.cols())?;
    let mut encoded = Vec::new();
    for f in (0..features.cols()).filter(|&f| categorical[f]) {
        let codes = column(features, f)?;
        let categories = codes.iter().filter(|c| !c.is_nan()).fold(0usize, |n, &c| n.max(c as usize + 1));
        if categories >= params.tree.max_cat_to_onehot as usize {
            encoded.push((f, codes, categories));
        }
    }
    if encoded.is_empty() {
        return Ok(None);
    }
    let labels = &train.info.labels;
    let stats = OrderedStatistics::new(params.seed, labels, params.ordered_target_prior_weight);
    let gpu = devices.first();
    let device_labels = match gpu {
        Some(gpu) => Some(on_device(gpu, "target statistics", || Ok(gpu.upload(labels)?))?),
        None => None,
    };
    let mut statistics = TargetStatistics {
        features: Vec::new(),
        prior: stats.prior_value(),
        prior_weight: params.ordered_target_prior_weight,
        seed: params.seed,
    };
    let mut columns = Vec::new();
    for (f, codes, categories) in encoded {
        let (values, table) = match (gpu, &device_labels) {
            (Some(gpu), Some(labels)) => on_device(gpu, "target statistics", || {
                crate::gpu::ordered_statistics(gpu, &codes, labels, &stats, categories)
            })?,
            _ => ordered_on_host(&codes, labels, &stats, categories),
        };
        statistics.features.push(EncodedFeature { feature: f, values: table });
        columns.push((f, values));
    }
    let info = |info: &MetaInfo| numeric_info(info, &statistics, features.cols());
    let train_set = (replace_columns(features, &columns), info(train.info));
    let evals = evals
        .iter()
        .map(|(data, _)| {
            if data.is(train) {
                return Ok(None);
            }
            Ok(Some((statistics.apply(data.host_features()?)?.into_owned(), info(data.info))))
        })
        .collect::<Result<_>>()?;
    Ok(Some(Encoded { statistics, train: train_set, evals }))
}

/// The CPU's encoding of one column: the same order and fixed-point sums as the device's
/// ([`crate::gpu::ordered_statistics`]), counted sequentially.
fn ordered_on_host(
    codes: &[f32],
    labels: &[f32],
    stats: &OrderedStatistics,
    categories: usize,
) -> (Vec<f32>, Vec<f32>) {
    let keys: Vec<u64> = codes.par_iter().enumerate().map(|(i, &c)| sort_key(c, stats.seed, i as u64)).collect();
    let mut order: Vec<u32> = (0..codes.len() as u32).collect();
    // Stable: rows of equal keys stay in index order, as the device's radix sort keeps them.
    order.par_sort_by_key(|&i| keys[i as usize]);
    let mut values = vec![f32::NAN; codes.len()];
    let mut table = vec![stats.prior_value(); categories];
    let (mut current, mut sum, mut count) = (MISSING, 0i64, 0i64);
    for &row in &order {
        let category = key_category(keys[row as usize]);
        if category == MISSING {
            break;
        }
        if category != current {
            (current, sum, count) = (category, 0, 0);
        }
        values[row as usize] = stats.value(sum, count);
        sum += stats.label(labels[row as usize]);
        count += 1;
        table[category as usize] = stats.value(sum, count);
    }
    (values, table)
}

/// Feature `f` of every row (`NaN` where missing), each a category code.
fn column(features: &FeatureMatrix, f: usize) -> Result<Vec<f32>> {
    let mut out = vec![f32::NAN; features.rows()];
    match features {
        FeatureMatrix::Dense(m) => {
            out.par_iter_mut().enumerate().for_each(|(r, v)| *v = m.values[r * m.cols + f]);
        }
        FeatureMatrix::Sparse(m) => {
            for (r, v) in out.iter_mut().enumerate() {
                if let Some((_, value)) = m.row(r).find(|&(c, _)| c as usize == f) {
                    *v = value;
                }
            }
        }
    }
    let code = |v: f32| v >= 0.0 && v.fract() == 0.0 && v < boost_kernels::predict::MAX_CATEGORY as f32;
    let bad = |&v: &f32| !(v.is_nan() || code(v));
    match out.iter().position(bad) {
        Some(r) => Err(not_a_category(Some(r), f, out[r])),
        None => Ok(out),
    }
}

/// `features` with the columns `(f, values)` replaced (a CSR matrix's stored entries only: an
/// absent entry is missing, and a missing code's encoding is missing too).
fn replace_columns(features: &FeatureMatrix, columns: &[(usize, Vec<f32>)]) -> FeatureMatrix {
    let mut out = features.clone();
    match &mut out {
        FeatureMatrix::Dense(m) => {
            let cols = m.cols;
            m.values.make_mut().par_chunks_mut(cols).enumerate().for_each(|(r, row)| {
                for (f, values) in columns {
                    row[*f] = values[r];
                }
            });
        }
        FeatureMatrix::Sparse(m) => {
            for r in 0..m.rows {
                for i in m.row_ptr[r]..m.row_ptr[r + 1] {
                    if let Some((_, values)) = columns.iter().find(|(f, _)| *f == m.col_indices[i] as usize) {
                        m.values[i] = values[r];
                    }
                }
            }
        }
    }
    out
}

/// `info` with the encoded features typed numeric (`q`).
fn numeric_info(info: &MetaInfo, statistics: &TargetStatistics, cols: usize) -> MetaInfo {
    let mut info = info.clone();
    if info.feature_types.len() == cols {
        for e in &statistics.features {
            info.feature_types[e.feature] = "q".into();
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use primitives::{Gpu, Schedule};

    use super::*;

    /// The device's sort and segmented scan (Onesweep at this size, blocks in shuffled order) give
    /// the host's running sums: the same values and table, bit for bit, real-valued labels included.
    #[test]
    fn the_device_encoding_is_the_hosts() {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 9 });
        let n = 20_000;
        let codes: Vec<f32> = (0..n).map(|i| if i % 13 == 0 { f32::NAN } else { ((i * 7919) % 701) as f32 }).collect();
        let labels: Vec<f32> = (0..n).map(|i| ((i * 31) % 17) as f32 * 0.37 - 2.0).collect();
        let stats = OrderedStatistics::new(42, &labels, 1.5);
        let host = ordered_on_host(&codes, &labels, &stats, 703);
        let device_labels = gpu.upload(&labels).unwrap();
        let device = crate::gpu::ordered_statistics(&gpu, &codes, &device_labels, &stats, 703).unwrap();
        assert_eq!(bits(&device.0), bits(&host.0));
        assert_eq!(bits(&device.1), bits(&host.1));
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// The statistics by their definition: each row's earlier rows of its category in the
    /// permutation, summed in floating point.
    #[test]
    fn the_host_encoding_is_the_definition() {
        let codes = [0.0, 1.0, 0.0, f32::NAN, 0.0, 1.0, 2.0, 0.0];
        let labels = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0];
        let stats = OrderedStatistics::new(11, &labels, 2.0);
        let (values, table) = ordered_on_host(&codes, &labels, &stats, 4);
        let prior = 5.0 / 8.0;
        let place = |r: usize| sort_key(codes[r], 11, r as u64) as u32;
        for r in 0..codes.len() {
            if codes[r].is_nan() {
                assert!(values[r].is_nan());
                continue;
            }
            let earlier: Vec<usize> =
                (0..codes.len()).filter(|&o| codes[o] == codes[r] && (place(o), o) < (place(r), r)).collect();
            let sum: f64 = earlier.iter().map(|&o| labels[o] as f64).sum();
            let expected = ((sum + 2.0 * prior) / (earlier.len() as f64 + 2.0)) as f32;
            assert_eq!(values[r], expected, "row {r}");
        }
        assert_eq!(
            table,
            [
                ((3.0 + 2.0 * prior) / 6.0) as f32,
                ((1.0 + 2.0 * prior) / 4.0) as f32,
                ((2.0 * prior) / 3.0) as f32,
                prior as f32
            ]
        );
    }
}
