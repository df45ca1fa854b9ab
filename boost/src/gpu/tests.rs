//! The GPU backend's unit tests on the emulator: the device quantiser (and kept rows), metrics and
//! quantised features against the host's, the split index sweep, bad batches.

use boost_kernels::metric::Transform;
use boost_kernels::objective::ElementwiseObjective;
use boost_kernels::partition::SPLIT_INDEX_SHIFT;

use super::partition::split_index;
use super::*;
use crate::data::{FeatureMatrix, MetaInfo};
use crate::ellpack::EllpackMatrix;
use crate::fixed_point::GradientQuantiser;
use crate::metric::DeviceMetric;
use crate::objective::DeviceObjective;
use primitives::Schedule;

#[test]
fn the_device_quantiser_is_the_hosts_bit_for_bit() {
    use rand::{Rng, SeedableRng};
    let gpu = Gpu::emulated(Schedule::Deterministic);
    let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0], ..Default::default() };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    // Sizes around a block (1024) and a warp, with signs, zeros and magnitudes mixed.
    for n in [0usize, 1, 31, 33, 1024, 1025, 5000] {
        let gradients: Vec<GradientPair<f32>> = (0..n)
            .map(|i| match i % 7 {
                0 => GradientPair::new(0.0, 0.0),
                3 if i % 5 == 0 => GradientPair::new(-0.0, 0.0),
                4 if i % 3 == 0 => GradientPair::new(0.0, -0.0),
                1 => GradientPair::new(-rng.gen_range(0.0..1e3f32), rng.gen_range(0.0..1e-3)),
                _ => GradientPair::new(rng.gen_range(-1.0..1.0f32), rng.gen_range(-0.1..1.0)),
            })
            .collect();
        let features: Vec<f32> = (0..n).map(|i| (i % 3) as f32).collect();
        let matrix = EllpackMatrix::new(
            &crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(n, 1, features)),
            &cuts,
        );
        let mut trainer = GpuTrainer::new(&gpu, &matrix, &cuts).unwrap();
        let (quantiser, fixed, root) = trainer.quantise(&gradients).unwrap();
        let host = GradientQuantiser::new(&gradients);
        assert_eq!(quantiser, host, "{n} gradients");
        let host_fixed: Vec<Fixed> = gradients.iter().map(|&g| host.to_fixed(g)).collect();
        assert_eq!(fixed.to_vec(&gpu).unwrap(), host_fixed, "{n} gradients");
        let host_root = host_fixed.iter().fold(Fixed::default(), |a, &b| crate::fixed_point::add(a, b));
        assert_eq!(root, host_root, "{n} gradients");

        // The kept rows (external memory): the host's rows, compacted, and their sum.
        let (host_quantiser, runs) = crate::fixed_point::quantiser_and_kept_rows(&gradients);
        let device_gradients = gpu.upload(&gradients).unwrap();
        // SAFETY: the buffer holds `n` pairs and outlives the call.
        let kept = unsafe { trainer.quantise_kept(device_gradients.device_ptr(), n).unwrap() };
        let rows = runs.concat();
        assert!(rows.len() < n.max(1), "{n} gradients: some rows are left out");
        assert_eq!(kept.quantiser, host_quantiser, "{n} gradients");
        assert_eq!(kept.rows.to_vec(&gpu).unwrap(), rows, "{n} gradients");
        let kept_fixed: Vec<Fixed> = rows.iter().map(|&r| host_fixed[r as usize]).collect();
        assert_eq!(kept.fixed.to_vec(&gpu).unwrap(), kept_fixed, "{n} gradients");
        assert_eq!(kept.root, host_root, "{n} gradients: zeros add nothing");
    }
}

#[test]
fn the_device_auc_is_the_hosts_bit_for_bit() {
    use crate::metric::from_name;
    use boost_kernels::auc::AucCurve;
    use rand::{Rng, SeedableRng};
    let gpu = Gpu::emulated(Schedule::Shuffled { seed: 7 });
    let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0], ..Default::default() };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    let objective =
        DeviceObjective::Elementwise(ElementwiseObjective { kind: ElementwiseObjective::LOGISTIC, parameter: 1.0 });
    // Sizes around a block and a sort tile; margins from a few values (large tie groups) or
    // continuous; labels 0/1 or fractional; with and without weights; one class only (NaN).
    for (case, n) in [1usize, 2, 33, 1025, 5000, 20_000].into_iter().enumerate() {
        let distinct = if case % 2 == 0 { 5 } else { 1 << 20 };
        let margins: Vec<f32> =
            (0..n).map(|_| rng.gen_range(0..distinct) as f32 / distinct as f32 * 8.0 - 4.0).collect();
        let labels: Vec<f32> = (0..n)
            .map(|i| {
                if case == 3 {
                    rng.gen_range(0..5) as f32 / 4.0
                } else if n == 2 {
                    1.0
                } else {
                    (i % 3 == 0) as u8 as f32
                }
            })
            .collect();
        let weights: Vec<f32> =
            if case % 3 == 1 { Vec::new() } else { (0..n).map(|_| rng.gen_range(0.1..3.0)).collect() };
        let info = MetaInfo { labels, weights, ..Default::default() };
        let matrix = EllpackMatrix::new(
            &crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(n, 1, vec![1.0; n])),
            &cuts,
        );
        let mut trainer = GpuTrainer::new(&gpu, &matrix, &cuts).unwrap();
        trainer.keep_rows_on_device(objective, &info, InitialMargins::Rows(&margins)).unwrap();
        let predictions: Vec<f32> = margins.iter().map(|&m| Transform::SIGMOID.apply(m)).collect();
        for (name, curve) in [("auc", AucCurve::ROC), ("aucpr", AucCurve::PR)] {
            let host = from_name(name).unwrap().evaluate(&predictions, &info, 1);
            let device = trainer.evaluate(DeviceMetric::Auc(curve), Transform::SIGMOID).unwrap();
            assert_eq!(device.to_bits(), host.to_bits(), "{name}, case {case}, {n} rows: {device} vs {host}");
            assert_eq!(host.is_nan(), n <= 2, "{name}, case {case}");
        }
    }
    // One-vs-rest over a softmax's 4 classes (class 3 has no rows in the first case: NaN).
    for (case, n) in [40usize, 3000].into_iter().enumerate() {
        let classes = 4;
        let margins: Vec<f32> = (0..n * classes).map(|_| rng.gen_range(0..6) as f32 - 3.0).collect();
        let labels: Vec<f32> = (0..n).map(|i| (i % (classes - 1 + case)) as f32).collect();
        let weights: Vec<f32> = (0..n).map(|_| rng.gen_range(0.5..2.0)).collect();
        let info = MetaInfo { labels, weights, ..Default::default() };
        let matrix = EllpackMatrix::new(
            &crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(n, 1, vec![1.0; n])),
            &cuts,
        );
        let mut trainer = GpuTrainer::new(&gpu, &matrix, &cuts).unwrap();
        trainer
            .keep_rows_on_device(DeviceObjective::Softmax { classes }, &info, InitialMargins::Rows(&margins))
            .unwrap();
        let predictions =
            crate::objective::Objective::eval_transform(&crate::objective::Softmax::new(classes, true), &margins);
        for (name, curve) in [("auc", AucCurve::ROC), ("aucpr", AucCurve::PR)] {
            let host = from_name(name).unwrap().evaluate(&predictions, &info, classes);
            let device = trainer.evaluate(DeviceMetric::Auc(curve), Transform::IDENTITY).unwrap();
            assert_eq!(device.to_bits(), host.to_bits(), "{name}, {classes} classes, {n} rows: {device} vs {host}");
            assert_eq!(host.is_nan(), case == 0, "{name}, case {case}");
        }
    }
}

#[test]
fn the_device_quantises_the_features_as_the_cpu() {
    use crate::data::{CsrMatrix, DenseMatrix};
    use rand::{Rng, SeedableRng};
    let gpu = Gpu::emulated(Schedule::Shuffled { seed: 6 });
    let mut rng = rand::rngs::SmallRng::seed_from_u64(2);
    // Columns: continuous with missing values, all missing, constant, two values, heavy ties,
    // a column whose rows all have weight 0 in the cuts (no bins, values present).
    let (rows, cols) = (700, 6);
    let mut values = vec![0f32; rows * cols];
    for i in 0..rows {
        let row = &mut values[i * cols..(i + 1) * cols];
        row[0] = if i % 7 == 0 { f32::NAN } else { rng.gen_range(-3.0..3.0) };
        row[1] = f32::NAN;
        row[2] = 4.5;
        row[3] = if i % 2 == 0 { -1.0 } else { 1.0 };
        row[4] = rng.gen_range(0..5) as f32;
        row[5] = rng.gen_range(0.0..1.0);
    }
    let dense = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.clone()));
    for max_bin in [256usize, 3] {
        let cuts = QuantileCuts::build(&dense, &[], max_bin);
        let mut zero_weight_column = cuts.clone();
        zero_weight_column.cut_values.truncate(zero_weight_column.cut_ptrs[5] as usize);
        zero_weight_column.cut_ptrs[6] = zero_weight_column.cut_ptrs[5];
        for cuts in [cuts, zero_weight_column] {
            let ellpack = EllpackMatrix::new(&dense, &cuts);
            let (want, layout) = local_bins(&ellpack, &cuts).unwrap();
            // The host's packed rows against the CPU's bins, read bit by bit.
            for row in 0..rows {
                for f in 0..cols {
                    let id = (0..layout.bits as usize).fold(0u32, |id, b| {
                        let bit = f * layout.bits as usize + b;
                        id | ((want[row * layout.row_words + bit / 32] >> (bit % 32)) & 1) << b
                    });
                    let bin = ellpack.bin_of(row, f, &cuts).map_or(layout.missing(), |b| b - cuts.cut_ptrs[f]);
                    assert_eq!(id, bin, "row {row}, feature {f}, max_bin {max_bin}");
                }
            }
            let device_cuts = DeviceCuts::upload(&gpu, &cuts).unwrap();
            let got = bins::device_bins(&gpu, &dense, &cuts, &device_cuts).unwrap();
            assert_eq!(got.layout, layout);
            assert_eq!(got.words.to_vec(&gpu).unwrap(), want, "dense, max_bin {max_bin}");
            let on_device = gpu.upload(&values).unwrap();
            let got = bins::device_rows_bins(&gpu, &on_device, rows, &cuts, &device_cuts).unwrap();
            assert_eq!(got.words.to_vec(&gpu).unwrap(), want, "dense rows on the device, max_bin {max_bin}");
            // The same rows as CSR without their missing entries, and a few rows left empty.
            let mut csr = CsrMatrix { rows, cols, row_ptr: vec![0], col_indices: Vec::new(), values: Vec::new() };
            for i in 0..rows {
                for c in 0..cols {
                    let v = values[i * cols + c];
                    if !v.is_nan() && i % 50 != 3 {
                        csr.col_indices.push(c as u32);
                        csr.values.push(v);
                    }
                }
                csr.row_ptr.push(csr.values.len());
            }
            let sparse = FeatureMatrix::Sparse(csr);
            let want = local_bins(&EllpackMatrix::new(&sparse, &cuts), &cuts).unwrap().0;
            let got = bins::device_bins(&gpu, &sparse, &cuts, &device_cuts).unwrap();
            assert_eq!(got.words.to_vec(&gpu).unwrap(), want, "CSR, max_bin {max_bin}");
        }
    }
}

#[test]
fn the_device_ranking_metrics_are_the_hosts_bit_for_bit() {
    use crate::metric::{from_name, from_name_with_params, Metric, RankMetric, RankMetricKind};
    use boost_kernels::rank::LambdaRankParams;
    use rand::{Rng, SeedableRng};
    let gpu = Gpu::emulated(Schedule::Shuffled { seed: 4 });
    let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0], ..Default::default() };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(8);
    let params = LambdaRankParams {
        kind: LambdaRankParams::NDCG,
        mean: 0,
        num_pair: 1,
        normalization: 1,
        score_normalization: 1,
        exp_gain: 1,
    };
    // Groups of many sizes (empty, one document, longer than the truncations), or no groups (one
    // group of every row, beyond a sort tile); margins from a few values (ties ranked in row
    // order) or continuous; graded labels for NDCG, binary ones for MAP and the PR curve (some
    // groups without a relevant document); with and without group weights.
    for (case, n) in [60usize, 1500, 5000].into_iter().enumerate() {
        let mut group_ptr = vec![0];
        if case < 2 {
            for size in [0usize, 1, 37, 5, 80, 13, 2, 3].into_iter().cycle() {
                let last = *group_ptr.last().unwrap();
                if last + size >= n {
                    break;
                }
                group_ptr.push(last + size);
            }
            group_ptr.push(n);
        } else {
            group_ptr.clear();
        }
        let groups = group_ptr.len().max(2) - 1;
        let distinct = if case == 1 { 1 << 20 } else { 4 };
        let margins: Vec<f32> = (0..n).map(|_| rng.gen_range(0..distinct) as f32 / distinct as f32 - 0.5).collect();
        let graded: Vec<f32> = (0..n).map(|i| if i % 11 < 3 { 0.0 } else { rng.gen_range(0..5) as f32 }).collect();
        let binary: Vec<f32> = graded.iter().map(|&y| (y >= 3.0) as u8 as f32).collect();
        let weights: Vec<f32> =
            if case == 0 { Vec::new() } else { (0..groups).map(|_| rng.gen_range(0.1..3.0)).collect() };
        let matrix = EllpackMatrix::new(
            &crate::data::FeatureMatrix::Dense(crate::data::DenseMatrix::new(n, 1, vec![1.0; n])),
            &cuts,
        );
        for labels in [graded, binary] {
            let map = labels.iter().all(|&y| y <= 1.0);
            let info =
                MetaInfo { labels, weights: weights.clone(), group_ptr: group_ptr.clone(), ..Default::default() };
            let mut trainer = GpuTrainer::new(&gpu, &matrix, &cuts).unwrap();
            let objective = DeviceObjective::LambdaRank(params);
            trainer.keep_rows_on_device(objective, &info, InitialMargins::Rows(&margins)).unwrap();
            let mut metrics: Vec<Box<dyn Metric>> = if map {
                ["map", "map@2", "map@3-", "map@100"].iter().map(|m| from_name(m).unwrap()).collect()
            } else {
                ["ndcg", "ndcg@3", "ndcg@5-", "ndcg-"].iter().map(|m| from_name(m).unwrap()).collect()
            };
            if !map {
                let linear = [("ndcg_exp_gain".to_string(), "false".to_string())];
                metrics.push(from_name_with_params("ndcg@4", &linear).unwrap());
                metrics.push(Box::new(RankMetric::new(RankMetricKind::Ndcg, None, None, false, true)));
            } else {
                metrics.push(Box::new(RankMetric::new(RankMetricKind::Map, None, None, true, true)));
            }
            // The ranking AUC, per group (PR takes labels in [0, 1]).
            if !group_ptr.is_empty() {
                metrics.push(from_name("auc").unwrap());
                if map {
                    metrics.push(from_name("aucpr").unwrap());
                }
            }
            for metric in &metrics {
                let host = metric.evaluate(&margins, &info, 1);
                let Some(device_metric) = metric.device_metric() else {
                    panic!("{}: not on the device", metric.name())
                };
                let device = trainer.evaluate(device_metric, Transform::IDENTITY).unwrap();
                let name = metric.name();
                assert_eq!(device.to_bits(), host.to_bits(), "{name}, case {case}, {n} rows: {device} vs {host}");
                assert!((0.0..=1.0).contains(&host), "{name}, case {case}: {host}");
            }
        }
    }
}

#[test]
fn the_split_index_sweep_is_the_entries_one_by_one() {
    use boost_kernels::partition::split_index_entry;
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    for splits in [1usize, 2, 5, 40, 128] {
        let mut begins: Vec<u32> = (0..splits).map(|_| rng.gen_range(0..1u32 << 20)).collect();
        begins.sort_unstable();
        begins[0] = rng.gen_range(0..3) << SPLIT_INDEX_SHIFT;
        let entries = ((1usize << 20) >> SPLIT_INDEX_SHIFT) + 2;
        let one_by_one: Vec<u32> = (0..entries).map(|b| split_index_entry(&begins, b)).collect();
        assert_eq!(split_index(&begins, entries), one_by_one, "{splits} splits");
    }
}

/// A categorical code past the GPU's widest bin ids is a data error naming the feature and code.
#[test]
fn codes_past_the_gpus_bin_ids_name_their_feature() {
    use crate::data::{DenseMatrix, FeatureMatrix};
    let top = (1u32 << boost_kernels::bins::MAX_PACKED_BITS) - 2;
    let features = FeatureMatrix::Dense(DenseMatrix::new(2, 2, vec![0.5, 3.0, 1.5, top as f32]));
    let cuts = QuantileCuts::build_typed(&features, &[], 256, &[false, true]).unwrap();
    let error = super::bins::BinLayout::of(&cuts).unwrap_err();
    assert!(matches!(error, Error::InvalidData(_)), "{error:?}");
    assert!(error.to_string().contains(&format!("categorical feature 1 has codes up to {top}")), "{error}");
}

#[test]
fn bad_batches_are_errors_not_faults() {
    let gpu = Gpu::emulated(Schedule::Deterministic);
    let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0], ..Default::default() };
    let device_cuts = DeviceCuts::upload(&gpu, &cuts).unwrap();
    let h = gpu.upload(&[Fixed::default(); 2]).unwrap();
    let context = SplitContext {
        params: crate::param::TreeParams::default().split(),
        quantiser: GradientQuantiser::new(&[GradientPair::new(1.0, 1.0)]),
        categorical: Default::default(),
    };
    let node = |slot, features: &[u32]| NodeToEvaluate::unconstrained(slot, Fixed::default(), features.to_vec(), &context);
    let run = |nodes: &[NodeToEvaluate], layout| evaluate_splits(&gpu, &device_cuts, &h, layout, nodes, &context);
    let global = HistogramLayout::Global;
    assert!(matches!(run(&[node(0, &[1])], global), Err(Error::InvalidData(_))));
    assert!(matches!(run(&[node(1, &[0])], global), Err(Error::InvalidData(_))));
    assert!(matches!(run(&[node(0, &[0, 0])], global), Err(Error::InvalidData(_))));
    let narrow = HistogramLayout::Padded { bins_per_feature: 1 };
    assert!(matches!(run(&[node(0, &[0])], narrow), Err(Error::InvalidData(_))));
    assert!(run(&[], global).unwrap().is_empty());
    assert_eq!(run(&[node(0, &[])], global).unwrap(), vec![None]);
}
