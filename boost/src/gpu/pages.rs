//! External-memory pages on one GPU ([`GpuPages`]), as Ou's out-of-core GPU boosting does with
//! gradient-based sampling: each tree's rows with a gradient (the sampled ones) are gathered from
//! every page into one device page ([`boost_kernels::ellpack::gather_kernel`]), the in-core
//! builder ([`GpuTrainer`]) grows the tree on it, and every page is then walked on the device for
//! every row's leaf ([`boost_kernels::predict::ellpack_kernel`]).
//!
//! Rows without a gradient add nothing to any histogram (fixed-point sums), so the tree is the one
//! grown over all rows: with the same gradients, the CPU's tree ([`crate::tree::hist`]) bit for
//! bit. Each pass copies every page to the device where it is (host memory, page-locked so that
//! the copies run at the bus's speed, or the mapped cache file); the leaves come back through a
//! page-locked staging buffer. The device holds the sampled page, its gradients, the builder's
//! buffers and one page being read, which `device_memory_limit` bounds; without sampling every
//! row is sampled, and the pages must fit (streaming them a level at a time is not built yet).
//! The gradients and the sample are the host's (the learner's host rounds).

use std::sync::Arc;
use std::time::Instant;

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
    /// [`bin_values`] of the cuts, on the device for every tree's walk.
    bin_values: DeviceBuffer<f32>,
    /// Page-locked host buffers of a tree's sampled rows and their gradients and of every row's
    /// leaf.
    staged_rows: Staging<u32>,
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
        let bin_values = gpu.upload(&bin_values(&matrix.cuts))?;
        // SAFETY: the pages' words never move or change while `matrix` lives, and the pins are
        // dropped with it.
        let pinned = matrix.store.host_words().map(|words| unsafe { gpu.pin_host(words) });
        let pinned = pinned.collect::<std::result::Result<_, primitives::Error>>()?;
        Ok(GpuPages {
            matrix,
            layout,
            trainer,
            bin_values,
            _pinned: pinned,
            staged_rows: Staging::new(),
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

    /// One tree from `gradients` (one a row of the pages, zero for the rows sampling left out), in
    /// fixed point by the quantiser of all rows ([`crate::fixed_point::quantiser`]), with every
    /// row's leaf: the tree the CPU's builder grows from the same gradients.
    pub fn build_tree(
        &mut self,
        params: &TreeParams,
        gradients: &[GradientPair<f32>],
        features: &[u32],
        rng: &mut impl rand::Rng,
    ) -> Result<BuiltTree> {
        let start = Instant::now();
        let gpu = self.trainer.gpu();
        let (quantiser, runs) = crate::fixed_point::quantiser_and_kept_rows(gradients);
        let sampled = self.staged_rows.take(gpu, runs.iter().map(Vec::len).sum())?;
        let gathered = self.staged_fixed.take(gpu, sampled.len())?;
        let root = stage_sampled(&runs, gradients, &quantiser, sampled, gathered);
        let (sampled, gathered) = (&*sampled, &*gathered);
        let (device_fixed, device_rows) = (gpu.upload(gathered)?, gpu.upload(sampled)?);
        self.trainer.phases.add("pages: quantise and stage the sampled rows", start.elapsed());

        let start = Instant::now();
        let (matrix, layout) = (&self.matrix, self.layout);
        self.trainer.replace_rows(sampled.len(), |cuts| {
            let words = gpu.alloc_uninitialized(sampled.len() * layout.row_words)?;
            gather(gpu, matrix, &cuts.cut_ptrs, (sampled, &device_rows), DeviceBins { words, layout })
        })?;
        drop(device_rows);
        // Copies from page-locked memory run on after the call returns: the staging buffers are
        // written again only once they are done.
        gpu.synchronize()?;
        self.trainer.phases.add("pages: gather the sampled rows", start.elapsed());

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

/// The bins of the `sampled` rows (increasing; on the host and the device) of every page of
/// `matrix` into `bins`, each page copied to the device and its sampled rows gathered there
/// ([`boost_kernels::ellpack::gather_kernel`]).
fn gather(
    gpu: &Gpu,
    matrix: &ExternalMatrix,
    cut_ptrs: &DeviceBuffer<u32>,
    (sampled, device_rows): (&[u32], &DeviceBuffer<u32>),
    bins: DeviceBins,
) -> Result<DeviceBins> {
    let (mut done, mut failed) = (0, None);
    matrix.store.for_each(|first, page| {
        let end = sampled.partition_point(|&r| (r as usize) < first + page.rows);
        if failed.is_none() && end > done && bins.layout.row_words > 0 {
            failed = gather_page(gpu, &page, first, cut_ptrs, (device_rows, done..end), &bins).err();
        }
        done = end;
    })?;
    failed.map_or(Ok(bins), Err)
}

/// Rows `rows.0[span]` of `page` (whose first row is `first`) into the same rows of `bins`.
fn gather_page(
    gpu: &Gpu,
    page: &EllpackMatrix<&[u64]>,
    first: usize,
    cut_ptrs: &DeviceBuffer<u32>,
    (rows, span): (&DeviceBuffer<u32>, std::ops::Range<usize>),
    bins: &DeviceBins,
) -> Result<()> {
    let words = gpu.upload(page.words())?;
    let layout = &bins.layout;
    let args = entry::boost_bins_ellpack::args(
        words.as_ptr(),
        page.rows as u64,
        page.row_stride as u64,
        page.symbol_bits as u64,
        u64::from(page.is_dense),
        cut_ptrs.as_ptr(),
        first as u64,
        rows.as_ptr().wrapping_add(span.start),
        span.len() as u64,
        layout.features as u64,
        layout.bits as u64,
        layout.row_words as u64,
        bins.words.as_mut_ptr().wrapping_add(span.start * layout.row_words),
    );
    // SAFETY: the page's words and rows as packed, the cuts' offsets of its matrix, `span` rows of
    // the page (plus `first`) and as many rows of `bins`, whose layout is the cuts'.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(span.len())?, args)? };
    Ok(())
}

/// The sampled rows (`runs` concatenated) into `rows` and their gradients in fixed point into
/// `fixed`, a run a task; their sum, the root's (integers: in any order the same).
fn stage_sampled(
    runs: &[Vec<u32>],
    gradients: &[GradientPair<f32>],
    quantiser: &GradientQuantiser,
    mut rows: &mut [u32],
    mut fixed: &mut [Fixed],
) -> Fixed {
    let mut outs = Vec::with_capacity(runs.len());
    for run in runs {
        let (run_rows, rest_rows) = std::mem::take(&mut rows).split_at_mut(run.len());
        let (run_fixed, rest_fixed) = std::mem::take(&mut fixed).split_at_mut(run.len());
        outs.push((run, run_rows, run_fixed));
        (rows, fixed) = (rest_rows, rest_fixed);
    }
    outs.into_par_iter()
        .map(|(run, rows, fixed)| {
            rows.copy_from_slice(run);
            let mut sum = Fixed::zero();
            for (f, &r) in fixed.iter_mut().zip(run.iter()) {
                *f = quantiser.to_fixed(gradients[r as usize]);
                sum = sum.plus(*f);
            }
            sum
        })
        .reduce(Fixed::zero, BlockSum::plus)
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
