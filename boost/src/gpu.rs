//! The GPU backend of `boost`, being built (issue: "boost trains on the GPU"): device copies of
//! the cuts and split evaluation for a batch of nodes, over the kernels of `boost-kernels`, whose
//! arithmetic is the CPU builder's (`boost_kernels::split`). Runs on a CUDA device or, in tests, on
//! the SIMT emulator. The GPU test suite (`tests/tests/gpu/boost_split.rs`) checks it against the
//! CPU builder's choice, on the emulator in `cargo test` and on a GPU with `--features gpu`.

use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, Gpu, LaunchConfig};

pub use boost_kernels::evaluate::{DeviceSplit, SplitContext};
use boost_kernels::split::Split;

use crate::quantile::QuantileCuts;
use crate::{Error, Result};

type Fixed = GradientPair<i64>;

/// Threads per block of the evaluation kernels (one thread per (node, feature) pair or per node).
const EVALUATE_THREADS: u32 = 128;

/// [`QuantileCuts`] in device memory.
pub struct DeviceCuts {
    cut_ptrs: DeviceBuffer<u32>,
    cut_values: DeviceBuffer<f32>,
    min_values: DeviceBuffer<f32>,
    features: usize,
    total_bins: usize,
}

impl DeviceCuts {
    /// Copies `cuts` to `gpu`.
    pub fn upload(gpu: &Gpu, cuts: &QuantileCuts) -> Result<Self> {
        Ok(DeviceCuts {
            cut_ptrs: gpu.upload(&cuts.cut_ptrs)?,
            cut_values: gpu.upload(&cuts.cut_values)?,
            min_values: gpu.upload(&cuts.min_values)?,
            features: cuts.features(),
            total_bins: cuts.total_bins(),
        })
    }

    /// Bins over all features: the length of one node's histogram.
    pub fn total_bins(&self) -> usize {
        self.total_bins
    }
}

fn blocks(items: usize) -> u32 {
    items.div_ceil(EVALUATE_THREADS as usize).max(1) as u32
}

/// The best split of each node of a batch, as the CPU builder chooses it: node `n` has the
/// histogram `histograms[n * total_bins..][..total_bins]` and the sums `totals[n]`, and tries the
/// features `features[n]` (increasing). `None` where no split passes the limits.
pub fn evaluate_splits(
    gpu: &Gpu,
    cuts: &DeviceCuts,
    histograms: &DeviceBuffer<Fixed>,
    totals: &DeviceBuffer<Fixed>,
    features: &[Vec<u32>],
    context: &SplitContext,
) -> Result<Vec<Option<Split<Fixed>>>> {
    let nodes = features.len();
    if totals.len() < nodes || histograms.len() < nodes * cuts.total_bins {
        return Err(Error::InvalidData(format!(
            "split evaluation of {nodes} nodes needs {nodes} totals and {} histogram bins; got {} and {}",
            nodes * cuts.total_bins,
            totals.len(),
            histograms.len()
        )));
    }
    let mut pairs = Vec::new();
    let mut offsets = Vec::with_capacity(nodes + 1);
    offsets.push(0u32);
    for (node, list) in features.iter().enumerate() {
        if let Some(&bad) = list.iter().find(|&&f| f as usize >= cuts.features) {
            return Err(Error::InvalidData(format!("feature {bad} of node {node}: the cuts have {}", cuts.features)));
        }
        if !list.is_sorted_by(|a, b| a < b) {
            return Err(Error::InvalidData(format!("the features of node {node} are not increasing")));
        }
        pairs.extend(list.iter().flat_map(|&f| [node as u32, f]));
        offsets.push((pairs.len() / 2) as u32);
    }
    let num_pairs = pairs.len() / 2;
    if nodes == 0 {
        return Ok(Vec::new());
    }
    let pairs_buffer = gpu.upload(if pairs.is_empty() { &[0u32, 0] } else { &pairs })?;
    let offsets_buffer = gpu.upload(&offsets)?;
    let context_buffer = gpu.upload(std::slice::from_ref(context))?;
    let candidates = gpu.alloc_zeroed::<DeviceSplit>(num_pairs.max(1))?;
    let best = gpu.alloc_zeroed::<DeviceSplit>(nodes)?;
    let module = crate::KERNELS;
    let config = |items: usize| LaunchConfig {
        grid_dim: (blocks(items), 1, 1),
        block_dim: (EVALUATE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    if num_pairs > 0 {
        let args = [
            histograms.device_ptr(),
            totals.device_ptr(),
            cuts.cut_ptrs.device_ptr(),
            cuts.cut_values.device_ptr(),
            cuts.min_values.device_ptr(),
            pairs_buffer.device_ptr(),
            num_pairs as u64,
            cuts.total_bins as u64,
            context_buffer.device_ptr(),
            candidates.device_ptr(),
        ];
        // SAFETY: the buffers are sized as `boost_split_features` requires: every pair names a node
        // below `nodes` (checked: totals and histograms hold that many) and a feature of the cuts.
        unsafe { gpu.launch(module, "boost_split_features", config(num_pairs), &args)? };
    }
    let args = [
        candidates.device_ptr(),
        offsets_buffer.device_ptr(),
        nodes as u64,
        context_buffer.device_ptr(),
        best.device_ptr(),
    ];
    // SAFETY: `offsets` has `nodes + 1` entries up to `num_pairs`, the candidates that many.
    unsafe { gpu.launch(module, "boost_split_nodes", config(nodes), &args)? };
    Ok(best.to_vec(gpu)?.iter().map(DeviceSplit::split).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use boost_kernels::fixed_point::GradientQuantiser;
    use primitives::Schedule;

    #[test]
    fn bad_batches_are_errors_not_faults() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let cuts = QuantileCuts { cut_ptrs: vec![0, 2], cut_values: vec![1.0, 2.0], min_values: vec![0.0] };
        let device_cuts = DeviceCuts::upload(&gpu, &cuts).unwrap();
        let h = gpu.upload(&[Fixed::default(); 2]).unwrap();
        let t = gpu.upload(&[Fixed::default()]).unwrap();
        let context = SplitContext {
            params: crate::param::TreeParams::default().split(),
            quantiser: GradientQuantiser::new(&[GradientPair::new(1.0, 1.0)]),
        };
        let run = |features: &[Vec<u32>]| evaluate_splits(&gpu, &device_cuts, &h, &t, features, &context);
        assert!(matches!(run(&[vec![1]]), Err(Error::InvalidData(_))));
        assert!(matches!(run(&[vec![0], vec![0]]), Err(Error::InvalidData(_))));
        assert!(run(&[]).unwrap().is_empty());
        assert_eq!(run(&[vec![]]).unwrap(), vec![None]);
    }
}
