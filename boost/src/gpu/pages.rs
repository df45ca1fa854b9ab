//! External-memory pages on one GPU ([`GpuPages`]), as Ou's out-of-core GPU boosting does with
//! gradient-based sampling: each tree's rows with a gradient (the sampled ones) are gathered from
//! every page into one device page, the in-core builder ([`GpuTrainer`]) grows the tree on it,
//! and every page is then walked on the device for every row's leaf
//! ([`boost_kernels::predict::ellpack_kernel`]).
//!
//! Rows without a gradient add nothing to any histogram (fixed-point sums), so the tree is the one
//! grown over all rows: with the same gradients, the CPU's tree ([`crate::tree::hist`]) bit for
//! bit. The gathering reads the pages on the host, where they are (host memory or the mapped cache
//! file), so that only the sampled rows cross to the device for the tree. Host pages are
//! page-locked for the walk's copies, and the sampled page and the leaves pass through
//! page-locked staging buffers. The device holds the sampled page, its gradients, the builder's
//! buffers and one page being walked, which `device_memory_limit` bounds; without sampling every
//! row is sampled, and the pages must fit (streaming them a level at a time is not built yet).
//! The gradients and the sample are the host's (the learner's host rounds).

use std::sync::Arc;
use std::time::Instant;

use boost_kernels::bins::packed_row_word;
use boost_kernels::entry;
use boost_kernels::reduce::BlockSum;
use primitives::ops::GradientPair;
use primitives::{DeviceBuffer, Gpu, HostPin};
use rayon::prelude::*;

use super::{element_config, BinLayout, DeviceBins, DeviceCuts, DeviceTrees, Fixed, GpuTrainer};
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
    /// The pages in host memory, page-locked so that their copies run at the bus's speed; first,
    /// so that they are unlocked before `matrix` may free them.
    _pinned: Vec<HostPin>,
    matrix: Arc<ExternalMatrix>,
    layout: BinLayout,
    /// The builder of the sampled rows: the cuts uploaded once, its rows replaced every tree.
    trainer: GpuTrainer<'g>,
    reader: RowReader,
    /// [`bin_values`] of the cuts, on the device for every tree's walk.
    bin_values: DeviceBuffer<f32>,
    /// Page-locked host buffers of a tree's sampled bins and gradients and of every row's leaf.
    staged_words: Staging<u32>,
    staged_fixed: Staging<GradientPair<i64>>,
    staged_leaves: Staging<u32>,
}

/// A host buffer page-locked for the device's copies, kept across trees and grown (a quarter
/// more than asked) when a tree needs more.
struct Staging<T> {
    data: Vec<T>,
    pin: Option<HostPin>,
}

impl<T: bytemuck::Pod> Staging<T> {
    fn new() -> Self {
        Staging { data: Vec::new(), pin: None }
    }

    /// The first `len` elements, the buffer grown first if it is shorter.
    fn take(&mut self, gpu: &Gpu, len: usize) -> Result<&mut [T]> {
        if self.data.len() < len {
            self.pin = None;
            self.data = vec![T::zeroed(); len + len / 4];
            // SAFETY: the vector is neither moved nor freed while pinned: it is replaced only
            // after the pin is dropped (above), and `drop` unpins it first.
            self.pin = Some(unsafe { gpu.pin_host(&self.data) }?);
        }
        Ok(&mut self.data[..len])
    }
}

impl<T> Drop for Staging<T> {
    fn drop(&mut self) {
        // Unpinned before the vector is freed.
        self.pin = None;
    }
}

impl<'g> GpuPages<'g> {
    /// Uploads the cuts of `matrix`.
    pub fn new(gpu: &'g Gpu, matrix: Arc<ExternalMatrix>) -> Result<Self> {
        let layout = BinLayout::of(&matrix.cuts)?;
        let cuts = DeviceCuts::upload(gpu, &matrix.cuts)?;
        let bins = DeviceBins::upload(gpu, (Vec::new(), layout))?;
        let trainer = GpuTrainer::with_bins(gpu, cuts, &matrix.cuts, 0, bins)?;
        let (reader, bin_values) = (RowReader::new(&matrix.cuts), gpu.upload(&bin_values(&matrix.cuts))?);
        // SAFETY: the pages' words never move or change while `matrix` lives, and the pins are
        // dropped with it.
        let pinned = matrix.store.host_words().map(|words| unsafe { gpu.pin_host(words) });
        let pinned = pinned.collect::<std::result::Result<_, primitives::Error>>()?;
        Ok(GpuPages {
            matrix,
            layout,
            trainer,
            reader,
            bin_values,
            _pinned: pinned,
            staged_words: Staging::new(),
            staged_fixed: Staging::new(),
            staged_leaves: Staging::new(),
        })
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

    /// One tree from `gradients` (one a row of the pages, zero for the rows sampling left out) in
    /// fixed point by `quantiser` (theirs: [`crate::fixed_point::quantiser`]), with every row's
    /// leaf: the tree the CPU's builder grows from the same gradients.
    pub fn build_tree(
        &mut self,
        params: &TreeParams,
        quantiser: GradientQuantiser,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<BuiltTree> {
        let start = Instant::now();
        let gpu = self.trainer.gpu();
        let sampled = sampled_rows(gradients);
        let words = self.staged_words.take(gpu, sampled.len() * self.layout.row_words)?;
        gather(&self.matrix, &self.reader, &self.layout, &sampled, words)?;
        let gathered = self.staged_fixed.take(gpu, sampled.len())?;
        gathered.par_iter_mut().zip(&sampled).for_each(|(g, &r)| *g = quantiser.to_fixed(gradients[r as usize]));
        let root = gathered.iter().copied().fold(Fixed::zero(), BlockSum::plus);
        self.trainer.phases.add("pages: gather the sampled rows", start.elapsed());

        let start = Instant::now();
        let layout = self.layout;
        let words = &*words;
        self.trainer.replace_rows(sampled.len(), || Ok(DeviceBins { words: gpu.upload(words)?, layout }))?;
        let device_fixed = gpu.upload(gathered)?;
        // Copies from page-locked memory run on after the call returns: the staging buffers are
        // written again only once they are done.
        gpu.synchronize()?;
        self.trainer.phases.add("pages: upload the sampled page", start.elapsed());

        let (tree, _) = self.trainer.grow(params, quantiser, &device_fixed, root, features, false, rng)?;
        drop(device_fixed);

        let start = Instant::now();
        let positions = self.leaves(&tree)?;
        self.trainer.phases.add("pages: every row's leaf", start.elapsed());
        Ok(BuiltTree { tree, positions, phases: PhaseTimes::default() })
    }

    /// Every row's leaf of `tree`: each page uploaded and walked on the device
    /// ([`boost_kernels::predict::ellpack_kernel`]), the leaves read back.
    fn leaves(&mut self, tree: &Tree) -> Result<Vec<u32>> {
        let gpu = self.trainer.gpu();
        let trees = DeviceTrees::upload(gpu, &[(tree.clone(), 0)])?;
        let (cut_ptrs, bin_values) = (&self.trainer.cuts.cut_ptrs, &self.bin_values);
        let positions = self.staged_leaves.take(gpu, self.matrix.rows())?;
        let mut failed = None;
        self.matrix.store.for_each(|first, page| {
            if failed.is_none() {
                let out = &mut positions[first..first + page.rows];
                let walked = walk_page(gpu, &page, (cut_ptrs, bin_values), &trees, out);
                failed = walked.err();
            }
        })?;
        match failed {
            Some(error) => Err(error),
            None => Ok(positions.par_iter().copied().collect()),
        }
    }
}

/// The leaf of `trees`' one tree that each row of `page` reaches, into `out`.
fn walk_page(
    gpu: &Gpu,
    page: &EllpackMatrix<&[u64]>,
    (cut_ptrs, bin_values): (&DeviceBuffer<u32>, &DeviceBuffer<f32>),
    trees: &DeviceTrees,
    out: &mut [u32],
) -> Result<()> {
    if page.rows == 0 {
        return Ok(());
    }
    let words = gpu.upload(page.words())?;
    let leaves = gpu.alloc_zeroed::<u32>(page.rows)?;
    let args = entry::boost_predict_ellpack::args(
        words.as_ptr(),
        page.rows as u64,
        page.row_stride as u64,
        page.symbol_bits as u64,
        u64::from(page.is_dense),
        cut_ptrs.as_ptr(),
        (cut_ptrs.len() - 1) as u64,
        bin_values.as_ptr(),
        trees.trees.as_ptr(),
        1,
        trees.nodes.as_ptr(),
        trees.categories.as_ptr(),
        leaves.as_mut_ptr(),
    );
    // SAFETY: the page's words and rows as packed, the cuts' offsets and a value a bin of the
    // matrix the page belongs to, one tree checked at its upload, a leaf a row.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(page.rows)?, args)? };
    leaves.copy_range_to_host(gpu, 0..page.rows, out)?;
    Ok(())
}

/// The packed bins ([`BinLayout`]) of the `sampled` rows (increasing) of every page of `matrix`,
/// into `out` (`layout.row_words` words a row).
fn gather(
    matrix: &ExternalMatrix,
    reader: &RowReader,
    layout: &BinLayout,
    sampled: &[u32],
    out: &mut [u32],
) -> Result<()> {
    let cuts = &matrix.cuts;
    if layout.row_words == 0 {
        return Ok(());
    }
    let mut done = 0;
    matrix.store.for_each(|first, page| {
        let end = sampled.partition_point(|&r| (r as usize) < first + page.rows);
        let rows = &sampled[done..end];
        let out = &mut out[done * layout.row_words..end * layout.row_words];
        out.par_chunks_mut(CHUNK * layout.row_words).enumerate().for_each(|(chunk, out)| {
            let mut bins = vec![0u32; layout.features];
            for (i, packed) in out.chunks_mut(layout.row_words).enumerate() {
                reader.row_bins(&page, rows[chunk * CHUNK + i] as usize - first, &mut bins);
                for (w, word) in packed.iter_mut().enumerate() {
                    *word = packed_row_word(w, layout.features, layout.bits, |f| match bins[f] {
                        MISSING => layout.missing(),
                        bin => bin - cuts.cut_ptrs[f],
                    });
                }
            }
        });
        done = end;
    })
}

/// Rows a task of the host's gather.
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

/// The rows with a gradient (sampling zeroes the others), increasing: the others add nothing to
/// any sum (a gradient too small for fixed point adds zero, whichever rows hold it).
fn sampled_rows(gradients: &[GradientPair<f32>]) -> Vec<u32> {
    let zero = GradientPair::new(0.0, 0.0);
    (0..gradients.len() as u32).into_par_iter().filter(|&r| gradients[r as usize] != zero).collect()
}

/// A value for each global bin of `cuts` that lies on the same side of every split condition as
/// all of the bin's values: its lowest (the bin below's cut; minus infinity for a feature's first
/// bin), or a category's code. The device walks pages with it.
fn bin_values(cuts: &QuantileCuts) -> Vec<f32> {
    let mut values = Vec::with_capacity(cuts.cut_values.len());
    for f in 0..cuts.features() {
        let (lo, hi) = (cuts.cut_ptrs[f], cuts.cut_ptrs[f + 1]);
        values.extend((lo..hi).map(|bin| match bin {
            _ if cuts.is_categorical(f) => (bin - lo) as f32,
            _ if bin == lo => f32::NEG_INFINITY,
            _ => cuts.cut_values[bin as usize - 1],
        }));
    }
    values
}
