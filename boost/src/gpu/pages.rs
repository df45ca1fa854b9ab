//! External-memory pages on one GPU ([`GpuPages`]), as Ou's out-of-core GPU boosting does with
//! gradient-based sampling: each tree's rows with a gradient (the sampled ones) are gathered from
//! every page into one device page, the in-core builder ([`GpuTrainer`]) grows the tree on it,
//! and every row's leaf is then found by walking the tree over the pages.
//!
//! Rows without a gradient add nothing to any histogram (fixed-point sums), so the tree is the one
//! grown over all rows: with the same gradients, the CPU's tree ([`crate::tree::hist`]) bit for
//! bit. The gathering and the leaf walk read the pages on the host, where they are (host memory or
//! the mapped cache file), and only the sampled rows cross to the device: a tenth of the pages
//! with `subsample=0.1`. The sampled page, its gradients and the builder's buffers are what the
//! device holds, so `device_memory_limit` bounds the sampled rows; without sampling every row is
//! one, and the pages must fit (streaming them a level at a time is not built yet).

use std::sync::Arc;
use std::time::Instant;

use boost_kernels::reduce::BlockSum;
use primitives::ops::GradientPair;
use primitives::Gpu;
use rayon::prelude::*;

use boost_kernels::bins::packed_row_word;
use super::{BinLayout, DeviceBins, DeviceCuts, Fixed, GpuTrainer};
use crate::ellpack::EllpackMatrix;
use crate::external::ExternalMatrix;
use crate::fixed_point::GradientQuantiser;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::quantile::QuantileCuts;
use crate::tree::hist::BuiltTree;
use crate::tree::Tree;
use crate::Result;

/// A training run over external-memory pages on one GPU.
pub struct GpuPages<'g> {
    matrix: Arc<ExternalMatrix>,
    layout: BinLayout,
    /// The builder of the sampled rows: the cuts uploaded once, its rows replaced every tree.
    trainer: GpuTrainer<'g>,
    /// The most rows a tree has sampled so far.
    most_sampled: usize,
    reader: RowReader,
}

impl<'g> GpuPages<'g> {
    /// Uploads the cuts of `matrix`.
    pub fn new(gpu: &'g Gpu, matrix: Arc<ExternalMatrix>) -> Result<Self> {
        let layout = BinLayout::of(&matrix.cuts)?;
        let cuts = DeviceCuts::upload(gpu, &matrix.cuts)?;
        let bins = DeviceBins::upload(gpu, (Vec::new(), layout))?;
        let trainer = GpuTrainer::with_bins(gpu, cuts, &matrix.cuts, 0, bins)?;
        let reader = RowReader::new(&matrix.cuts);
        Ok(GpuPages { matrix, layout, trainer, most_sampled: 0, reader })
    }

    /// The device.
    pub fn gpu(&self) -> &'g Gpu {
        self.trainer.gpu()
    }

    /// Bytes of the packed pages.
    pub fn pages_bytes(&self) -> usize {
        self.matrix.bytes()
    }

    /// Wall time of the steps so far (the in-core builder's and the pages').
    pub fn phases(&self) -> &PhaseTimes {
        self.trainer.phases()
    }

    /// The most rows one tree's sampled page has held.
    pub fn most_sampled_rows(&self) -> usize {
        self.most_sampled
    }

    /// One tree from fixed-point gradients (one a row of the pages, `quantiser`'s), with every
    /// row's leaf: the tree the CPU's builder grows from the same gradients.
    pub fn build_tree(
        &mut self,
        params: &TreeParams,
        quantiser: GradientQuantiser,
        fixed: &[GradientPair<i64>],
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<BuiltTree> {
        let start = Instant::now();
        let sampled = sampled_rows(fixed);
        let words = self.gather(&sampled)?;
        let gathered: Vec<GradientPair<i64>> = sampled.par_iter().map(|&r| fixed[r as usize]).collect();
        let root = gathered.iter().copied().fold(Fixed::zero(), BlockSum::plus);
        self.trainer.phases.add("pages: gather the sampled rows", start.elapsed());

        let start = Instant::now();
        let gpu = self.trainer.gpu();
        self.trainer.replace_rows(sampled.len(), || DeviceBins::upload(gpu, (words, self.layout)))?;
        let device_fixed = gpu.upload(&gathered)?;
        self.most_sampled = self.most_sampled.max(sampled.len());
        self.trainer.phases.add("pages: upload the sampled page", start.elapsed());

        let (tree, _) = self.trainer.grow(params, quantiser, &device_fixed, root, features, false, rng)?;
        drop(device_fixed);

        let start = Instant::now();
        let positions = self.leaves(&tree)?;
        self.trainer.phases.add("pages: every row's leaf", start.elapsed());
        Ok(BuiltTree { tree, positions, phases: PhaseTimes::default() })
    }

    /// The packed bins ([`BinLayout`]) of the `sampled` rows (increasing) of every page.
    fn gather(&self, sampled: &[u32]) -> Result<Vec<u32>> {
        let (cuts, layout) = (&self.matrix.cuts, &self.layout);
        let mut words = vec![0u32; sampled.len() * layout.row_words];
        if layout.row_words == 0 {
            return Ok(words);
        }
        let mut done = 0;
        self.matrix.store.for_each(|first, page| {
            let end = sampled.partition_point(|&r| (r as usize) < first + page.rows);
            let rows = &sampled[done..end];
            let out = &mut words[done * layout.row_words..end * layout.row_words];
            out.par_chunks_mut(CHUNK * layout.row_words).enumerate().for_each(|(chunk, out)| {
                let mut bins = vec![0u32; layout.features];
                for (i, packed) in out.chunks_mut(layout.row_words).enumerate() {
                    self.reader.row_bins(&page, rows[chunk * CHUNK + i] as usize - first, &mut bins);
                    for (w, word) in packed.iter_mut().enumerate() {
                        *word = packed_row_word(w, layout.features, layout.bits, |f| match bins[f] {
                            MISSING => layout.missing(),
                            bin => bin - cuts.cut_ptrs[f],
                        });
                    }
                }
            });
            done = end;
        })?;
        Ok(words)
    }

    /// Every row's leaf of `tree`, page by page.
    fn leaves(&self, tree: &Tree) -> Result<Vec<u32>> {
        let cuts = &self.matrix.cuts;
        let mut positions = vec![0u32; self.matrix.rows()];
        self.matrix.store.for_each(|first, page| {
            let out = &mut positions[first..first + page.rows];
            out.par_chunks_mut(CHUNK).enumerate().for_each(|(chunk, out)| {
                let mut bins = vec![0u32; cuts.features()];
                for (i, leaf) in out.iter_mut().enumerate() {
                    self.reader.row_bins(&page, chunk * CHUNK + i, &mut bins);
                    *leaf = leaf_of_bins(tree, &bins, cuts) as u32;
                }
            });
        })?;
        Ok(positions)
    }
}

/// Rows a task of the host's page walks.
const CHUNK: usize = 4096;

/// A missing value in [`RowReader::row_bins`].
const MISSING: u32 = u32::MAX;

/// Reads a page's rows into their bins by feature.
struct RowReader {
    /// Each global bin's feature.
    feature_of: Vec<u32>,
}

impl RowReader {
    fn new(cuts: &QuantileCuts) -> Self {
        let feature_of = cuts.cut_ptrs.windows(2).enumerate().flat_map(|(f, w)| (w[0]..w[1]).map(move |_| f as u32));
        RowReader { feature_of: feature_of.collect() }
    }

    /// Row `row`'s global bin of every feature into `bins` ([`MISSING`] where it has none): one
    /// read of its symbols (a feature's bin search would read several a feature).
    #[inline]
    fn row_bins(&self, page: &EllpackMatrix<&[u64]>, row: usize, bins: &mut [u32]) {
        if page.is_dense {
            for (k, bin) in bins.iter_mut().enumerate() {
                *bin = page.get(row, k);
            }
            return;
        }
        bins.fill(MISSING);
        for k in 0..page.row_stride {
            let symbol = page.get(row, k);
            if symbol == page.null_symbol {
                break;
            }
            bins[self.feature_of[symbol as usize] as usize] = symbol;
        }
    }
}

/// The rows whose fixed-point gradient is not zero, increasing.
fn sampled_rows(fixed: &[GradientPair<i64>]) -> Vec<u32> {
    let zero = GradientPair::new(0, 0);
    (0..fixed.len() as u32).into_par_iter().filter(|&r| fixed[r as usize] != zero).collect()
}

/// The leaf of `tree` that a row of global `bins` (by feature) reaches. A bin stands for its
/// lowest value (the bin below's cut; minus infinity for a feature's first bin), which falls on the
/// same side of every cut as all of the bin's values; a category's bin is its code.
fn leaf_of_bins(tree: &Tree, bins: &[u32], cuts: &QuantileCuts) -> usize {
    tree.leaf_index(|f| match bins[f] {
        MISSING => f32::NAN,
        bin if cuts.is_categorical(f) => (bin - cuts.cut_ptrs[f]) as f32,
        bin if bin == cuts.cut_ptrs[f] => f32::NEG_INFINITY,
        bin => cuts.cut_values[bin as usize - 1],
    })
}
