//! boost on the device against the CPU builder: split evaluation (`boost::gpu::evaluate_splits`,
//! the kernels of `boost-kernels`) over the same histograms gives the same split, bit for bit
//! (gain, threshold, direction, child sums), for every node; and whole trees grown by the GPU
//! backend (`boost::gpu::build_tree`) are the CPU builder's, node for node, row for row. On the emulator in `cargo test`,
//! on the GPU with `--features gpu` (where floating-point contraction or a different rounding would
//! show).

use boost::gpu::{build_tree, evaluate_splits, DeviceCuts, HistogramLayout, NodeToEvaluate, SplitContext};
use boost::param::TreeParams;
use boost::quantile::QuantileCuts;
use boost_kernels::fixed_point::{self, GradientQuantiser};
use boost_kernels::split::{self, Bounds, Parent, SliceBins, Split};
use primitives::ops::GradientPair;
use rand::{Rng, SeedableRng};
use tests::gpu;

type Fixed = GradientPair<i64>;

/// The CPU builder's choice for one node (`HistBuilder::evaluate`, over slices).
fn cpu_best(
    cuts: &QuantileCuts,
    hist: &[Fixed],
    node: &NodeToEvaluate,
    context: &SplitContext,
) -> Option<Split<Fixed>> {
    let (p, q) = (&context.params, &context.quantiser);
    let total = node.total;
    let mut best = None;
    for (k, &f) in node.features.iter().enumerate() {
        let parent = node.parent.with_monotone(node.monotone.get(k).copied().unwrap_or(0));
        let (b, e) = (cuts.cut_ptrs[f as usize] as usize, cuts.cut_ptrs[f as usize + 1] as usize);
        if b == e {
            continue;
        }
        let bins = SliceBins { feature: f, first_bin: b as u32, hist: &hist[b..e], cut_values: &cuts.cut_values[b..e] };
        if let Some(s) = split::best_split_of_feature(&bins, total, &parent, p, q) {
            if split::replaces(&s, best.as_ref()) {
                best = Some(s);
            }
        }
    }
    best.filter(|b| split::is_valid(b, p))
}

#[test]
fn split_evaluation_is_the_cpu_builders() {
    let gpu = gpu();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(19);
    // Features with 0 (never seen), 1, a few and many bins.
    let bins_per_feature = [0usize, 1, 3, 17, 64, 2, 255];
    let mut cuts = QuantileCuts { cut_ptrs: vec![0], ..Default::default() };
    for &n in &bins_per_feature {
        let mut v = rng.gen_range(-5.0f32..0.0);
        for _ in 0..n {
            v += rng.gen_range(0.01f32..1.0);
            cuts.cut_values.push(v);
        }
        cuts.cut_ptrs.push(cuts.cut_values.len() as u32);
    }
    let total_bins = cuts.total_bins();
    let gradients: Vec<GradientPair<f32>> =
        (0..5000).map(|_| GradientPair::new(rng.gen_range(-1.0..1.0), rng.gen_range(0.01..0.3))).collect();
    let quantiser = GradientQuantiser::new(&gradients);
    // A depth-8 level's batch on a GPU; a few nodes on the emulator.
    let nodes = if gpu.is_emulated() { 9 } else { 256 };
    let mut histograms = vec![Fixed::default(); nodes * total_bins];
    let mut totals = vec![Fixed::default(); nodes];
    for n in 0..nodes {
        // Each node's rows land in random bins of every feature, some missing (so the totals
        // exceed a feature's bins), some nodes tiny (min_child_weight decides).
        let rows = if n % 3 == 0 { 4 } else { rng.gen_range(50..800) };
        for g in gradients.iter().take(rows) {
            let fixed = quantiser.to_fixed(*g);
            totals[n] = fixed_point::add(totals[n], fixed);
            for f in 0..bins_per_feature.len() {
                let (b, e) = (cuts.cut_ptrs[f] as usize, cuts.cut_ptrs[f + 1] as usize);
                if b == e || rng.gen_bool(0.1) {
                    continue;
                }
                let slot = &mut histograms[n * total_bins + rng.gen_range(b..e)];
                *slot = fixed_point::add(*slot, fixed);
            }
        }
    }
    let features: Vec<Vec<u32>> = (0..nodes)
        .map(|n| (0..bins_per_feature.len() as u32).filter(|f| n == 0 || !(f + n as u32).is_multiple_of(4)).collect())
        .collect();
    // The last configuration bounds each node's children's weights and constrains the features'
    // directions (monotone constraints), the node's gain one within its parent's bounds.
    for (alpha, max_delta_step, gamma, constrained) in
        [(0.0, 0.0, 0.0, false), (0.3, 0.0, 0.1, false), (0.0, 0.7, 0.0, false), (0.1, 0.0, 0.0, true)]
    {
        let params = TreeParams { alpha, max_delta_step, gamma, ..Default::default() };
        let context = SplitContext { params: params.split(), quantiser, categorical: params.categorical() };
        let device_cuts = DeviceCuts::upload(&gpu, &cuts).unwrap();
        let h = gpu.upload(&histograms).unwrap();
        // Node n's histogram in slot n, but asked for in reverse order: slots are followed.
        let batch: Vec<NodeToEvaluate> = (0..nodes)
            .rev()
            .map(|n| {
                let mut node = NodeToEvaluate::unconstrained(n as u32, totals[n], features[n].clone(), &context);
                if constrained {
                    let bounds = Bounds { lower: -0.01 * (n % 5) as f32, upper: 0.01 * (n % 4) as f32 };
                    let t = quantiser.to_float(totals[n]);
                    let w = bounds.clip(split::calc_weight(&context.params, t.grad, t.hess) as f32 * 2.0);
                    let gain = split::gain_given_weight(&context.params, t.grad, t.hess, w);
                    node.parent = Parent { gain, bounds, monotone: 0 };
                    node.monotone = node.features.iter().map(|f| (f % 3) as i32 - 1).collect();
                }
                node
            })
            .collect();
        let mut device = evaluate_splits(&gpu, &device_cuts, &h, HistogramLayout::Global, &batch, &context).unwrap();
        device.reverse();
        let mut found = 0;
        for n in 0..nodes {
            let hist = &histograms[n * total_bins..(n + 1) * total_bins];
            let expected = cpu_best(&cuts, hist, &batch[nodes - 1 - n], &context);
            assert_eq!(device[n], expected, "node {n}, alpha {alpha}, max_delta_step {max_delta_step}");
            found += expected.is_some() as usize;
        }
        assert!(found >= nodes / 2, "most nodes split ({found} of {nodes})");
    }
}

/// A dataset with a noisy non-linear target, missing values and a constant column.
fn dataset(rows: usize, cols: usize, seed: u64) -> (boost::data::FeatureMatrix, Vec<GradientPair<f32>>) {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut values = Vec::with_capacity(rows * cols);
    let mut gradients = Vec::with_capacity(rows);
    for _ in 0..rows {
        let row: Vec<f32> = (0..cols)
            .map(|c| match c {
                1 => 3.0,
                _ if rng.gen_bool(0.1) => f32::NAN,
                _ => rng.gen_range(-2.0..2.0),
            })
            .collect();
        let x0 = if row[0].is_nan() { 0.5 } else { row[0] };
        let signal = (x0 * 2.0).sin() + if row[2 % cols] > 0.3 { 0.8 } else { -0.4 };
        gradients.push(GradientPair::new(signal + rng.gen_range(-0.5..0.5), rng.gen_range(0.05..0.3)));
        values.extend(row);
    }
    (boost::data::FeatureMatrix::Dense(boost::data::DenseMatrix { rows, cols, values: values.into() }), gradients)
}

#[test]
fn trees_grown_on_the_device_are_the_cpu_builders() {
    use boost::ellpack::EllpackMatrix;
    use boost::param::GrowPolicy;
    use boost::tree::hist::HistBuilder;
    let gpu = gpu();
    let (rows, cols) = if gpu.is_emulated() { (3000, 6) } else { (200_000, 28) };
    let (features, gradients) = dataset(rows, cols, 23);
    for (policy, max_depth, max_leaves, colsample, max_bin) in [
        (GrowPolicy::Depthwise, 5, 0, 1.0, 64),
        (GrowPolicy::Lossguide, 0, 24, 1.0, 256),
        (GrowPolicy::Depthwise, 4, 0, 0.6, 16),
    ] {
        let cuts = QuantileCuts::build(&features, &[], max_bin);
        let matrix = EllpackMatrix::new(&features, &cuts);
        let bins = matrix.unpack(&cuts);
        let quantiser = GradientQuantiser::new(&gradients);
        let fixed: Vec<Fixed> = gradients.iter().map(|&g| quantiser.to_fixed(g)).collect();
        let params = TreeParams {
            grow_policy: policy,
            max_depth,
            max_leaves,
            colsample_bylevel: colsample,
            colsample_bynode: colsample,
            ..Default::default()
        };
        let all: Vec<u32> = (0..cols as u32).collect();
        let cpu = HistBuilder { pages: &bins, cuts: &cuts, params: &params, quantiser: &quantiser }
            .build(&fixed, &all, &mut rand::rngs::SmallRng::seed_from_u64(5))
            .unwrap();
        let device =
            build_tree(&gpu, &matrix, &cuts, &params, &gradients, &all, &mut rand::rngs::SmallRng::seed_from_u64(5))
                .unwrap();
        assert!(cpu.tree.len() > 7, "{policy:?}: a real tree ({} nodes)", cpu.tree.len());
        assert_eq!(device.tree, cpu.tree, "{policy:?}, max_bin {max_bin}");
        assert_eq!(device.positions, cpu.positions, "{policy:?}, max_bin {max_bin}");
    }
}
