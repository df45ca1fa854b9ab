//! The GPU backend of `boost`: [`GpuTrainer`] keeps the cuts, the bins and the row order on the
//! device for a training run and grows each tree there ([`GpuBackend`]), with the gradient
//! quantiser and, for element-wise and softmax objectives, the gradients, margins and row-wise
//! metrics on the device too. The kernels are `boost-kernels`', whose arithmetic is the CPU
//! builder's, so both write the same trees. Runs on a CUDA device or, in tests, on the SIMT
//! emulator; the GPU test suite (`tests/tests/gpu/boost_split.rs`, `boost_train.rs`) checks it
//! against the CPU backend, on the emulator in `cargo test` and on a GPU with `--features gpu`.
//!
//! A file a step, as XGBoost's `src/tree/gpu_hist/`:
//!
//! | file | step |
//! | --- | --- |
//! | `trainer.rs` | a run: [`GpuTrainer`], device rounds (gradients, leaves, margins) |
//! | `grow.rs` | one tree: [`GpuBackend`], the expansion driver's backend |
//! | `quantiser.rs` | gradients to fixed point |
//! | `histogram.rs` | node histograms, the subtraction trick |
//! | `evaluate.rs` | split evaluation ([`evaluate_splits`]) |
//! | `partition.rs` | the row partition ([`RowBuffers`]) |
//! | `sketch.rs`, `bins.rs`, `csr.rs` | quantile cuts and the quantised matrix from device rows, or host rows in pieces |
//! | `exact.rs` | the exact method ([`GpuExact`]) |
//! | `pages.rs` | external-memory pages, a sampled page a tree ([`GpuPages`]) |
//! | `paged.rs` | pages that do not fit, streamed a level at a time (double-buffered copies) |
//! | `multi.rs`, `nccl.rs`, `peer.rs` | several GPUs ([`MultiGpuTrainer`]) |
//! | `predict.rs`, `eval.rs`, `metrics.rs`, `rank.rs` | prediction, evaluation sets, metrics, ranking gradients |
//! | `timers.rs` | each step's device time (CUDA events), beside the host's |

mod binarised;
mod bins;
mod csr;
mod device_threads;
mod encode;
mod eval;
mod evaluate;
mod exact;
mod grow;
mod histogram;
mod host_bins;
mod host_rows;
mod metrics;
mod multi;
mod nccl;
mod paged;
mod pages;
mod partition;
mod peer;
mod predict;
mod quantiser;
mod rank;
mod sample;
mod shap;
mod sketch;
mod timers;
mod trainer;

use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, Gpu, LaunchConfig};

pub use boost_kernels::evaluate::{DeviceSplit, SplitContext};
pub use boost_kernels::sampling::RowSampler;
pub use crate::sample::TreeSampler;

use crate::quantile::QuantileCuts;

use crate::{Error, Result};
pub(crate) use bins::csr_is_checked;
pub use bins::{local_bins, BinLayout, DeviceBins};
pub use csr::DeviceCsr;
pub(crate) use encode::ordered_statistics;
pub use eval::{DeviceEvalSet, DeviceTrees, PredictLaunch};
pub use evaluate::{evaluate_splits, EvaluationScratch, HistogramLayout, NodeToEvaluate};
pub use exact::GpuExact;
pub use grow::GpuBackend;
pub use metrics::InitialMargins;
pub use multi::{shards, Communicator, HostStaged, MultiGpuTrainer};
pub use nccl::Nccl;
pub use pages::GpuPages;
pub use partition::RowBuffers;
pub use peer::PeerSum;
pub use predict::{transform_on_device, DeviceData, DeviceModel, OutputTransform};
#[doc(hidden)]
pub(crate) use shap::{explain, ExplainRows};
pub use sketch::device_cuts_within;
pub use sketch::{device_cuts, device_cuts_csr, device_cuts_typed, host_dense_cuts};
pub use trainer::{build_tree, GpuTrainer};

type Fixed = GradientPair<i64>;

/// [`QuantileCuts`] in device memory.
pub struct DeviceCuts {
    cut_ptrs: DeviceBuffer<u32>,
    cut_values: DeviceBuffer<f32>,
    features: usize,
    total_bins: usize,
    /// The most bins of one feature.
    max_bins: usize,
    /// The bins' upper bounds on the host (an oblivious level's threshold).
    host_values: Vec<f32>,
    /// The features' first bins on the host, and which features are categorical.
    host_ptrs: Vec<u32>,
    categorical: Vec<bool>,
}

impl DeviceCuts {
    /// Copies `cuts` to `gpu`.
    pub fn upload(gpu: &Gpu, cuts: &QuantileCuts) -> Result<Self> {
        Ok(DeviceCuts {
            cut_ptrs: gpu.upload(&cuts.cut_ptrs)?,
            cut_values: gpu.upload(&cuts.cut_values)?,
            features: cuts.features(),
            total_bins: cuts.total_bins(),
            max_bins: (0..cuts.features()).map(|f| cuts.bins(f)).max().unwrap_or(0),
            host_values: cuts.cut_values.clone(),
            host_ptrs: cuts.cut_ptrs.clone(),
            categorical: (0..cuts.features()).map(|f| cuts.is_categorical(f)).collect(),
        })
    }

    /// Bins over all features: the length of one node's histogram in the global layout.
    pub fn total_bins(&self) -> usize {
        self.total_bins
    }

    /// The layout of the builder's histograms: padded to `bins_per_feature` bins a feature (the
    /// multi-feature kernel's fastest), unless categorical features make the padding more than
    /// the bins themselves (a feature of a million categories beside numeric ones of 256): then
    /// the global layout, each feature's bins after the previous one's.
    pub(super) fn histogram_layout(&self, bins_per_feature: usize) -> HistogramLayout {
        if self.categorical.contains(&true) && self.features * bins_per_feature > 2 * self.total_bins {
            HistogramLayout::Global
        } else {
            HistogramLayout::Padded { bins_per_feature }
        }
    }
}

/// A device buffer kept between uses and grown when one needs more (a lossguide tree runs hundreds
/// of batches, and each allocation and free is a driver call the host makes while the device
/// waits). Reuse is safe because every use is ordered on the one stream.
pub struct Kept<T>(Option<DeviceBuffer<T>>);

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept(None)
    }
}

impl<T: primitives::ops::Element> Kept<T> {
    /// At least `len` elements, their values whatever the last use left.
    fn at_least(&mut self, gpu: &Gpu, len: usize) -> Result<&mut DeviceBuffer<T>> {
        if self.0.as_ref().is_none_or(|buffer| buffer.len() < len) {
            self.0 = Some(gpu.alloc_uninitialized::<T>(len.max(1).next_power_of_two())?);
        }
        Ok(self.0.as_mut().expect("allocated above"))
    }

    /// The buffer, once a use has made it.
    fn get(&self) -> Option<&DeviceBuffer<T>> {
        self.0.as_ref()
    }

    /// `data` at the buffer's start.
    fn upload(&mut self, gpu: &Gpu, data: &[T]) -> Result<&DeviceBuffer<T>> {
        let buffer = self.at_least(gpu, data.len())?;
        buffer.copy_from_host(gpu, data)?;
        Ok(buffer)
    }
}

/// A device address kept as a number (it crosses the device threads, or lies in an upload) as a
/// kernel's typed parameter that reads.
fn ptr<T>(address: u64) -> *const T {
    address as usize as *const T
}

/// [`ptr`] of a parameter that writes.
fn ptr_mut<T>(address: u64) -> *mut T {
    address as usize as *mut T
}

/// Threads per block of the partition and subtraction kernels (one thread per element).
const ELEMENT_THREADS: u32 = 256;

fn element_config(items: usize) -> Result<LaunchConfig> {
    let blocks = items.div_ceil(ELEMENT_THREADS as usize).max(1);
    if blocks > i32::MAX as usize {
        return Err(Error::InvalidData(format!("{items} elements are too many for one launch")));
    }
    Ok(LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (ELEMENT_THREADS, 1, 1), shared_mem_bytes: 0 })
}

/// One warp per block of [`reduce::SUM_BLOCK`] items, four warps a block.
fn warp_per_block_config(warps: usize) -> Result<LaunchConfig> {
    const WARPS: usize = 4;
    let blocks = warps.div_ceil(WARPS).max(1);
    if blocks > i32::MAX as usize {
        return Err(Error::InvalidData(format!("{warps} warps are too many for one launch")));
    }
    Ok(LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (32 * WARPS as u32, 1, 1), shared_mem_bytes: 0 })
}

#[cfg(test)]
mod tests;
