//! Where a run's trees grow, behind two traits: [`TreeBackend`] grows a tree from the host's
//! gradients (the CPU's hist and exact builders, one GPU, several GPUs, the exact method on a GPU);
//! [`DeviceRounds`] is a backend that also keeps the training rows' labels and margins where its
//! rows are and computes the gradients there (one GPU, several).

use primitives::ops::GradientPair;
use primitives::Gpu;
use rand_chacha::ChaCha8Rng;

use boost_kernels::metric::Transform;

use super::device::on_device;
use crate::data::MetaInfo;
use crate::fixed_point;
use crate::gpu::{GpuExact, GpuPages, GpuTrainer, InitialMargins, MultiGpuTrainer};
use crate::metric::DeviceMetric;
use crate::objective::DeviceObjective;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::sample::TreeSampler;
use crate::tree::exact::{ExactBuilder, SortedColumns};
use crate::tree::hist::{BinPages, BuiltTree, HistBuilder, HistogramPrecision};
use crate::tree::Tree;
use crate::Result;

/// Grows one tree at a time from the host's gradients.
pub(super) trait TreeBackend<'g> {
    /// One output's tree from `gradients` (one a row, zero for the rows sampling left out), with
    /// each row's leaf.
    fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut ChaCha8Rng,
    ) -> Result<BuiltTree>;

    /// Bytes of what the builder reads for every tree (the quantised matrix, the sorted columns).
    fn matrix_bytes(&self) -> usize;

    /// The GPU growing the trees (the first of several), if one does.
    fn gpu(&self) -> Option<&'g Gpu> {
        None
    }

    /// Every GPU growing the trees.
    fn gpus(&self) -> Vec<&'g Gpu> {
        self.gpu().into_iter().collect()
    }

    /// Phases the backend timed itself (with their device time where it records it), reported
    /// once at the end of the run.
    fn phases(&mut self) -> Result<PhaseTimes> {
        Ok(PhaseTimes::default())
    }

    /// The backend as [`DeviceRounds`], when it can be.
    fn device_rounds(&mut self) -> Option<&mut dyn DeviceRounds<'g>> {
        None
    }
}

/// Rounds computed where the rows are: gradients, trees, margins and the training metrics.
pub(super) trait DeviceRounds<'g> {
    /// The device (the first of several).
    fn gpu(&self) -> &'g Gpu;

    /// Whether the device computes `objective`'s gradients.
    fn takes(&self, objective: DeviceObjective) -> bool;

    /// Whether the device computes `metric` of the training rows.
    fn evaluates(&self, metric: &DeviceMetric) -> bool;

    /// Whether the evaluation sets' margins and metrics are the device's too in the rounds of
    /// `objective` (not where the training rows are streamed through it).
    fn keeps_evaluation_sets(&self, _objective: DeviceObjective) -> bool {
        true
    }

    /// Keeps the training rows' labels, weights and margins where the device's rounds read them.
    fn keep_rows_on_device(
        &mut self,
        objective: DeviceObjective,
        info: &MetaInfo,
        margins: InitialMargins<'_>,
    ) -> Result<()>;

    /// The round's gradients of every output.
    fn compute_gradients(&mut self, round: usize) -> Result<()>;

    /// Output `output`'s tree, its leaves added to the rows' margins.
    fn boost_tree(
        &mut self,
        params: &TreeParams,
        output: usize,
        sampler: TreeSampler,
        features: &[u32],
        rng: &mut ChaCha8Rng,
    ) -> Result<Tree>;

    /// The training rows' margins, read back.
    fn margins(&self) -> Result<Vec<f32>>;

    /// `metric` of the training rows' predictions (`transform` of the margins).
    fn evaluate(&mut self, metric: DeviceMetric, transform: Transform) -> Result<f64>;
}

/// The [`DeviceRounds`] methods a trainer has of its own, by the same names.
macro_rules! device_rounds_by_delegation {
    ($trainer:ident) => {
        fn keep_rows_on_device(
            &mut self,
            objective: DeviceObjective,
            info: &MetaInfo,
            margins: InitialMargins<'_>,
        ) -> Result<()> {
            $trainer::keep_rows_on_device(self, objective, info, margins)
        }

        fn compute_gradients(&mut self, round: usize) -> Result<()> {
            $trainer::compute_gradients(self, round)
        }

        fn boost_tree(
            &mut self,
            params: &TreeParams,
            output: usize,
            sampler: TreeSampler,
            features: &[u32],
            rng: &mut ChaCha8Rng,
        ) -> Result<Tree> {
            $trainer::boost_tree(self, params, output, sampler, features, rng)
        }

        fn margins(&self) -> Result<Vec<f32>> {
            $trainer::margins(self)
        }

        fn evaluate(&mut self, metric: DeviceMetric, transform: Transform) -> Result<f64> {
            $trainer::evaluate(self, metric, transform)
        }
    };
}

/// The CPU's hist method: the quantised rows, unpacked for the builder (in core) or a page at a
/// time (external memory).
pub(super) struct CpuHist {
    pub cuts: QuantileCuts,
    pub pages: Box<dyn BinPages + Send>,
    /// Bytes of the packed (ELLPACK) matrix.
    pub bytes: usize,
    /// Fixed point in training; the others are `cargo xtask precision`'s experiment.
    pub precision: HistogramPrecision,
}

impl TreeBackend<'_> for CpuHist {
    fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut ChaCha8Rng,
    ) -> Result<BuiltTree> {
        let (quantiser, fixed) = fixed_point::quantise(gradients);
        let builder = HistBuilder { pages: self.pages.as_ref(), cuts: &self.cuts, params, quantiser: &quantiser };
        match self.precision {
            HistogramPrecision::FixedPoint => builder.build(&fixed, features, rng),
            HistogramPrecision::F64 => {
                let wide: Vec<GradientPair<f64>> =
                    gradients.iter().map(|g| GradientPair::new(g.grad as f64, g.hess as f64)).collect();
                builder.build(&wide, features, rng)
            }
            HistogramPrecision::F32 => builder.build(gradients, features, rng),
        }
    }

    fn matrix_bytes(&self) -> usize {
        self.bytes
    }
}

/// The CPU's exact method: the columns sorted once.
impl TreeBackend<'_> for SortedColumns {
    fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut ChaCha8Rng,
    ) -> Result<BuiltTree> {
        let (quantiser, fixed) = fixed_point::quantise(gradients);
        Ok(ExactBuilder { columns: self, params, quantiser: &quantiser }.build(&fixed, features, rng))
    }

    fn matrix_bytes(&self) -> usize {
        self.bytes()
    }
}

/// The exact method on a GPU, from the host's gradients.
impl<'g> TreeBackend<'g> for GpuExact<'g> {
    fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut ChaCha8Rng,
    ) -> Result<BuiltTree> {
        let (quantiser, fixed) = fixed_point::quantise(gradients);
        let gpu = GpuExact::gpu(self);
        on_device(gpu, "growing an exact tree", || {
            GpuExact::build_tree(self, params, &quantiser, &fixed, features, rng)
        })
    }

    fn matrix_bytes(&self) -> usize {
        self.bytes()
    }

    fn gpu(&self) -> Option<&'g Gpu> {
        Some(GpuExact::gpu(self))
    }
}

/// External-memory pages on one GPU: the host's gradients quantised as the CPU's, each tree
/// grown on the device from its sampled rows.
impl<'g> TreeBackend<'g> for GpuPages<'g> {
    fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut ChaCha8Rng,
    ) -> Result<BuiltTree> {
        let gpu = GpuPages::gpu(self);
        on_device(gpu, "growing a tree from the sampled rows of the pages", || {
            GpuPages::build_tree(self, params, gradients, features, rng)
        })
    }

    fn matrix_bytes(&self) -> usize {
        self.pages_bytes()
    }

    fn gpu(&self) -> Option<&'g Gpu> {
        Some(GpuPages::gpu(self))
    }

    fn phases(&mut self) -> Result<PhaseTimes> {
        GpuPages::phases(self)
    }

    fn device_rounds(&mut self) -> Option<&mut dyn DeviceRounds<'g>> {
        Some(self)
    }
}

/// The rounds of external-memory pages on the device, where every row's labels, margins and
/// gradients fit (see [`GpuPages::takes`]).
impl<'g> DeviceRounds<'g> for GpuPages<'g> {
    fn gpu(&self) -> &'g Gpu {
        GpuPages::gpu(self)
    }

    fn takes(&self, objective: DeviceObjective) -> bool {
        GpuPages::takes(self, objective)
    }

    /// The metrics that are sums of row terms (no sort of every row's prediction), where the
    /// rows are on the device.
    fn evaluates(&self, metric: &DeviceMetric) -> bool {
        self.evaluates_on_device() && matches!(metric, DeviceMetric::Elementwise(_) | DeviceMetric::MultiClass(_))
    }

    fn keeps_evaluation_sets(&self, objective: DeviceObjective) -> bool {
        self.fits(objective)
    }

    device_rounds_by_delegation!(GpuPages);
}

/// One GPU's hist method; it quantises the host's gradients itself (the same quantiser).
impl<'g> TreeBackend<'g> for GpuTrainer<'g> {
    fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut ChaCha8Rng,
    ) -> Result<BuiltTree> {
        let gpu = GpuTrainer::gpu(self);
        on_device(gpu, "growing a tree", || GpuTrainer::build_tree(self, params, gradients, features, rng))
    }

    fn matrix_bytes(&self) -> usize {
        self.bins_bytes()
    }

    fn gpu(&self) -> Option<&'g Gpu> {
        Some(GpuTrainer::gpu(self))
    }

    fn phases(&mut self) -> Result<PhaseTimes> {
        GpuTrainer::phases(self)
    }

    fn device_rounds(&mut self) -> Option<&mut dyn DeviceRounds<'g>> {
        Some(self)
    }
}

impl<'g> DeviceRounds<'g> for GpuTrainer<'g> {
    fn gpu(&self) -> &'g Gpu {
        GpuTrainer::gpu(self)
    }

    fn takes(&self, _objective: DeviceObjective) -> bool {
        true
    }

    fn evaluates(&self, _metric: &DeviceMetric) -> bool {
        true
    }

    device_rounds_by_delegation!(GpuTrainer);
}

/// Several GPUs, each over its shard of the rows.
impl<'g> TreeBackend<'g> for MultiGpuTrainer<'g> {
    fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut ChaCha8Rng,
    ) -> Result<BuiltTree> {
        let gpu = MultiGpuTrainer::gpu(self);
        on_device(gpu, "growing a tree", || MultiGpuTrainer::build_tree(self, params, gradients, features, rng))
    }

    fn matrix_bytes(&self) -> usize {
        self.bins_bytes()
    }

    fn gpu(&self) -> Option<&'g Gpu> {
        Some(MultiGpuTrainer::gpu(self))
    }

    fn gpus(&self) -> Vec<&'g Gpu> {
        MultiGpuTrainer::gpus(self)
    }

    fn phases(&mut self) -> Result<PhaseTimes> {
        MultiGpuTrainer::phases(self)
    }

    fn device_rounds(&mut self) -> Option<&mut dyn DeviceRounds<'g>> {
        Some(self)
    }
}

impl<'g> DeviceRounds<'g> for MultiGpuTrainer<'g> {
    fn gpu(&self) -> &'g Gpu {
        MultiGpuTrainer::gpu(self)
    }

    fn takes(&self, objective: DeviceObjective) -> bool {
        MultiGpuTrainer::takes(objective)
    }

    /// The metrics that are sums of row terms: each device's block sums, added in row order.
    fn evaluates(&self, metric: &DeviceMetric) -> bool {
        matches!(metric, DeviceMetric::Elementwise(_) | DeviceMetric::MultiClass(_))
    }

    device_rounds_by_delegation!(MultiGpuTrainer);
}
