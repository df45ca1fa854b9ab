//! Trees grown over several devices (`boost::gpu::MultiGpuTrainer`: rows in shards, histograms
//! summed over the devices) are the one device's, node for node and row for row: depthwise,
//! lossguide and oblivious growth, on the emulators in `cargo test` and on the GPUs of a machine
//! (the sums through host memory, and through NCCL where there are two GPUs).

use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
use boost::gpu::{Communicator, GpuTrainer, HostStaged, MultiGpuTrainer, Nccl};
use boost::param::Params;
use boost::quantile::QuantileCuts;
use boost::GradientPair;
use rand::SeedableRng;

#[test]
fn trees_over_devices_are_the_one_devices() {
    let (gpus, ordinals) = tests::gpus(2);
    let rows = if gpus[0].is_emulated() { 6000 } else { 300_000 };
    let spec = SyntheticSpec {
        rows,
        cols: 10,
        task: SyntheticTask::Regression,
        seed: 8,
        missing_columns: 3,
        ..Default::default()
    };
    let data = generate(&spec).expect("synthetic data");
    let cuts = QuantileCuts::build(&data.features, &[], 256);
    let gradients: Vec<GradientPair<f32>> =
        data.info.labels.iter().enumerate().map(|(i, &y)| GradientPair::new(0.5 - y, 0.25 + (i % 4) as f32)).collect();
    let features: Vec<u32> = (0..10).collect();
    let policies: [&[(&str, &str)]; 3] = [
        &[("max_depth", "6")],
        &[("grow_policy", "lossguide"), ("max_leaves", "31"), ("max_depth", "0")],
        &[("grow_policy", "oblivious"), ("max_depth", "5")],
    ];
    for policy in policies {
        let params = Params::from_pairs(policy).expect("params").tree;
        let mut one = GpuTrainer::from_features(&gpus[0], &data.features, &cuts).expect("one device");
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let expected = one.build_tree(&params, &gradients, &features, &mut rng).expect("one device's tree");
        assert!(expected.tree.len() > 15, "{policy:?}: a tree worth comparing");
        // NCCL takes distinct CUDA devices: with fewer than two GPUs only the host's sums run.
        let distinct = !gpus[0].is_emulated() && ordinals[0] != ordinals[1];
        let mut communicators: Vec<(&str, Box<dyn Communicator>)> = vec![("host", Box::new(HostStaged))];
        if distinct {
            communicators.push(("nccl", Box::new(Nccl::new(&gpus).expect("NCCL over the machine's GPUs"))));
        } else {
            eprintln!("devices {ordinals:?}: the NCCL sums need two GPUs and are not run here");
        }
        for (name, communicator) in communicators {
            let mut multi = MultiGpuTrainer::from_features(&gpus, &data.features, &cuts, communicator)
                .expect("the devices' shards");
            assert_eq!(multi.shards().len(), 2);
            let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
            let got = multi.build_tree(&params, &gradients, &features, &mut rng).expect("the devices' tree");
            assert_eq!(got.tree, expected.tree, "{policy:?} over devices {ordinals:?}, {name} sums");
            assert_eq!(got.positions, expected.positions, "{policy:?} over devices {ordinals:?}, {name} sums");
        }
    }
}
