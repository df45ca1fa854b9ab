//! A tree over external-memory pages that do not fit the device together ([`grow_streamed`]): the
//! pages streamed a level at a time, as XGBoost's GPU `hist` does over `ExtMemQuantileDMatrix`
//! without sampling. Each page keeps its own row order (page-local rows, each node's a range) and
//! its rows' gradients (`f32` pairs, put in fixed point a page at a time by the tree's quantiser on
//! the device: the host's integers), on the host for the first tree, then on the device while they fit
//! half of what that tree's peak left. A level is one pass: every page copied to the device (the
//! next page's words and host-held state on a copy stream while the kernels read the current
//! one: two buffers), its bins unpacked into the builder's layout (or its copy in that layout
//! from host memory copied, [`super::host_bins`]), its rows
//! partitioned by the level's splits (`super::partition`'s kernels), and the histograms of both
//! children of each split built from them and added into the level's buffer. Fixed-point sums add
//! in any order, so the summed histograms are the in-core ones bit for bit, and so is the tree; no
//! subtraction (the smaller child is known only once every page is counted). Split evaluation is
//! the in-core backend's ([`GpuBackend`], which here holds no rows). A level's last partition is
//! never run: the rows' leaves come from a walk of the pages.

use std::time::Instant;

use primitives::ops::GradientPair;
use primitives::{CopyStream, DeviceBuffer, Gpu};

use boost_kernels::entry;
use boost_kernels::evaluate::SplitContext;
use boost_kernels::reduce;
use boost_kernels::split::Split;

use super::grow::GpuBackend;
use super::histogram::{add_histograms, NodeRows};
use super::pages::{gather_page, DevicePage, DevicePages, Staging};
use super::partition::{enqueue_partition, PartitionRows, RowBuffers};
use super::{warp_per_block_config, BinLayout, DeviceBins, Fixed, GpuTrainer};
use crate::fixed_point::GradientQuantiser;
use crate::param::TreeParams;
use crate::tree::grow::{self, ChildHistograms, Expansion, GrowBackend, RowOrder, SplitRequest};
use crate::tree::Tree;
use crate::{Error, Result};

/// Bytes a row of a page's state: its place in the order and its fixed-point gradient.
const STATE_BYTES: usize = 4 + size_of::<GradientPair<f32>>();

/// Where a page's state lives: on the device, or in page-locked host memory (copied at the bus's
/// speed).
enum Held<T> {
    Device(DeviceBuffer<T>),
    Host(Staging<T>),
}

/// One page's rows during a tree.
struct PageRows {
    rows: usize,
    order: Held<u32>,
    ranges: RowOrder,
    gradients: Held<GradientPair<f32>>,
}

/// The device buffers of a page's copy: its bins in the builder's layout (copied, or unpacked from
/// its words), its words when they are neither kept on the device nor copied as bins, and its order
/// and gradients when they are held on the host.
struct PageSlot {
    /// A buffer of each page size (the histogram kernels take a matrix's rows from it): the
    /// pages' usual size, and the last other one asked.
    bins: Vec<DeviceBins>,
    words: DeviceBuffer<u64>,
    order: DeviceBuffer<u32>,
    gradients: DeviceBuffer<GradientPair<f32>>,
}

/// Each page's state, made at the first streamed tree and kept for the run.
pub(super) struct Streamed {
    pages: Vec<PageRows>,
    /// Whether the states were placed ([`Streamed::keep_on_device`]).
    placed: bool,
}

/// A tree's device buffers for one page at a time, sized for the largest page: made once the
/// tree's gradients are in the pages' states (its device copy freed first), dropped with the tree.
struct PageBuffers {
    /// The partition's buffers; `spare` one row longer than `rows`, so that a partition of a whole
    /// page copies its scatter back instead of swapping it with the page's order.
    rows: RowBuffers,
    /// Two pages' copies: the next page's is copied into one, on the copy stream, while the kernels
    /// read the other (double buffering); one where the device has no room for two.
    slots: Vec<PageSlot>,
    /// A page's gradients in fixed point, the tree's quantiser, and the quantising kernel's block
    /// totals (not read).
    fixed: DeviceBuffer<Fixed>,
    quantiser: DeviceBuffer<GradientQuantiser>,
    totals: DeviceBuffer<Fixed>,
    /// Whether the first page's copies are in the first slot already: with two slots, a pass
    /// ends by copying them for the next, during the split evaluation between the two.
    first_copied: bool,
}

/// A tree's gradients, every row's in row order: on the host, or on the device from an element of a
/// buffer.
pub(super) enum TreeGradients<'a> {
    Host(&'a [GradientPair<f32>]),
    Device(&'a DeviceBuffer<GradientPair<f32>>, usize),
}

impl Streamed {
    /// Each page's state, on the host until [`Streamed::keep_on_device`].
    pub(super) fn new(gpu: &Gpu, pages: &DevicePages) -> Result<Self> {
        let pages = pages
            .views()?
            .iter()
            .map(|view| {
                let rows = view.page.rows;
                let (mut order, mut gradients) = (Staging::new(), Staging::new());
                // Sized and page-locked once.
                order.take(gpu, rows)?;
                gradients.take(gpu, rows)?;
                let (order, gradients) = (Held::Host(order), Held::Host(gradients));
                Ok(PageRows { rows, order, ranges: RowOrder::ranges_only(rows), gradients })
            })
            .collect::<Result<_>>()?;
        Ok(Streamed { pages, placed: false })
    }

    /// Rows of the largest page.
    fn largest(&self) -> usize {
        self.pages.iter().map(|p| p.rows).max().unwrap_or(0)
    }

    /// The copy buffers of a tree: two, or one where the device's memory (or its limit) has no
    /// room for the second.
    fn slots(&self, gpu: &Gpu, pages: &DevicePages, layout: BinLayout) -> Result<Vec<PageSlot>> {
        let largest = self.largest();
        // Words are copied only for the pages that are neither kept on the device nor in the
        // builder's layout; orders and gradients only where some page holds them on the host.
        let views = pages.views()?;
        let copied = views.iter().filter(|v| v.kept.is_none() && v.bins.is_none());
        let words = copied.map(|v| v.page.words().len()).max().unwrap_or(0);
        let host = self.pages.iter().any(|p| matches!(p.order, Held::Host(_)) || matches!(p.gradients, Held::Host(_)));
        let state = if host { largest } else { 0 };
        let slot = || -> primitives::Result<PageSlot> {
            let bins = vec![DeviceBins { words: gpu.alloc_zeroed(largest * layout.row_words)?, layout }];
            let (words, order) = (gpu.alloc_zeroed(words)?, gpu.alloc_zeroed(state)?);
            Ok(PageSlot { bins, words, order, gradients: gpu.alloc_zeroed(state)? })
        };
        let mut slots = vec![slot()?];
        match slot() {
            Ok(second) => slots.push(second),
            Err(primitives::Error::MemoryLimit { .. } | primitives::Error::OutOfMemory { .. }) => {}
            Err(error) => return Err(error.into()),
        }
        Ok(slots)
    }

    /// Once, after the first tree: each page's state moved to the device, in order, while they
    /// take at most half of `room` bytes (what the first tree's peak left).
    pub(super) fn keep_on_device(&mut self, gpu: &Gpu, room: usize) -> Result<()> {
        if std::mem::replace(&mut self.placed, true) {
            return Ok(());
        }
        let mut bytes = 0;
        for page in &mut self.pages {
            bytes += page.rows * STATE_BYTES;
            if bytes > room / 2 {
                break;
            }
            page.order = Held::Device(gpu.alloc_zeroed(page.rows)?);
            page.gradients = Held::Device(gpu.alloc_zeroed(page.rows)?);
        }
        Ok(())
    }

    /// The bins buffer of a page of `rows` rows.
    fn bins_for<'b>(bins: &'b mut Vec<DeviceBins>, gpu: &Gpu, rows: usize) -> Result<&'b mut DeviceBins> {
        let layout = bins[0].layout;
        let words = rows * layout.row_words;
        match bins.iter().position(|b| b.words.len() == words) {
            Some(i) => Ok(&mut bins[i]),
            None => {
                bins.truncate(1);
                bins.push(DeviceBins { words: gpu.alloc_zeroed(words)?, layout });
                Ok(&mut bins[1])
            }
        }
    }

    /// Enqueues the copies of page `k` of `views` (when there is one) into `slot`, on `copies`
    /// after the device's work so far (the slot's last readers): its bins in the builder's
    /// layout, or its words unless kept on the device; its order and gradients when held on the
    /// host.
    fn prefetch(
        &mut self,
        (gpu, copies): (&Gpu, &CopyStream),
        views: &[DevicePage],
        k: usize,
        slot: &mut PageSlot,
    ) -> Result<()> {
        let (Some(DevicePage { page, kept, bins, .. }), Some(state)) = (views.get(k), self.pages.get_mut(k)) else {
            return Ok(());
        };
        // SAFETY: the pages' words and the states' host copies stay (page-locked) for the run; the
        // slot is read, and a state's host copy written, only after the device waits for these
        // copies (`pass`), and the order read back only by the device's stream, after that wait.
        unsafe {
            match (bins, kept) {
                (Some(bins), _) => {
                    let to = Self::bins_for(&mut slot.bins, gpu, page.rows)?;
                    copies.upload_at(gpu, &mut to.words, 0, bins.host())?;
                }
                (None, Some(_)) => {}
                (None, None) => copies.upload_at(gpu, &mut slot.words, 0, page.words())?,
            }
            if let Held::Host(order) = &mut state.order {
                copies.upload_at(gpu, &mut slot.order, 0, order.take(gpu, page.rows)?)?;
            }
            if let Held::Host(gradients) = &mut state.gradients {
                copies.upload_at(gpu, &mut slot.gradients, 0, gradients.take(gpu, page.rows)?)?;
            }
        }
        Ok(())
    }

    /// Every page's rows in its root, in order, with their gradients of this tree.
    fn start_tree(&mut self, gpu: &Gpu, gradients: TreeGradients, identity: &DeviceBuffer<u32>) -> Result<()> {
        let mut first = 0;
        for page in &mut self.pages {
            let span = first..first + page.rows;
            first = span.end;
            page.ranges = RowOrder::ranges_only(page.rows);
            match &mut page.order {
                Held::Device(order) => order.copy_range_from_device(gpu, identity, 0..page.rows, 0)?,
                Held::Host(order) => {
                    order.take(gpu, page.rows)?.iter_mut().enumerate().for_each(|(i, r)| *r = i as u32)
                }
            }
            match (&mut page.gradients, &gradients) {
                (Held::Device(to), &TreeGradients::Device(from, at)) => {
                    to.copy_range_from_device(gpu, from, at + span.start..at + span.end, 0)?
                }
                (Held::Device(to), TreeGradients::Host(from)) => to.copy_from_host(gpu, &from[span])?,
                (Held::Host(to), &TreeGradients::Device(from, at)) => {
                    from.copy_range_to_host(gpu, at + span.start..at + span.end, to.take(gpu, span.len())?)?
                }
                (Held::Host(to), TreeGradients::Host(from)) => to.take(gpu, span.len())?.copy_from_slice(&from[span]),
            }
        }
        Ok(())
    }
}

/// One tree from `gradients` over every page of `pages`, streamed a level at a time: the tree
/// [`GpuTrainer::grow`] grows over the same rows in one device page.
#[allow(clippy::too_many_arguments)]
pub(super) fn grow_streamed(
    trainer: &mut GpuTrainer,
    pages: &DevicePages,
    streamed: &mut Streamed,
    params: &TreeParams,
    (quantiser, gradients, root): (GradientQuantiser, TreeGradients, Fixed),
    features: &[u32],
    rng: &mut impl rand::Rng,
) -> Result<Tree> {
    let gpu = trainer.gpu;
    let start = Instant::now();
    let largest = streamed.largest();
    let mut rows = RowBuffers::new(gpu, largest)?;
    rows.spare = gpu.alloc_zeroed(largest + 1)?;
    streamed.start_tree(gpu, gradients, &rows.identity)?;
    trainer.phases.add("pages: each page's rows and gradients", start.elapsed());
    let slots = streamed.slots(gpu, pages, trainer.bins.layout)?;
    let (fixed, totals) = (gpu.alloc_zeroed(largest)?, gpu.alloc_zeroed(reduce::blocks(largest))?);
    let quantiser_on_device = gpu.upload(std::slice::from_ref(&quantiser))?;
    let work = PageBuffers { slots, rows, fixed, quantiser: quantiser_on_device, totals, first_copied: false };
    let context = SplitContext { params: params.split(), quantiser, categorical: params.categorical() };
    let no_rows = gpu.alloc_zeroed::<Fixed>(0)?;
    let (cuts, bins, first_bins) = (&trainer.cuts, &trainer.bins, &trainer.first_bins);
    let mut evaluator = GpuBackend::new(gpu, cuts, bins, first_bins, &no_rows, root, &mut trainer.buffers, context)?;
    evaluator.timers = std::mem::take(&mut trainer.timers);
    let mut backend = StreamedBackend { evaluator, pages, streamed, work, pending: None };
    let rows = pages.matrix.rows();
    let tree = grow::grow(&mut backend, params, &quantiser, features, rows, rng)?;
    // The last pass copied the first page for a next one: done before the next tree writes the
    // states' host copies (the read back below waits for it).
    pages.copies.wait(gpu)?;
    let evaluator = &mut backend.evaluator;
    let bad = evaluator.bad_row.to_vec(gpu)?[0];
    if bad != u32::MAX {
        return Err(Error::InvalidData(format!("a page's row order position {bad} holds no row of it")));
    }
    evaluator.timers.read(&mut evaluator.phases)?;
    trainer.timers = std::mem::take(&mut evaluator.timers);
    trainer.phases.merge(&evaluator.phases);
    Ok(tree)
}

/// The first `rows` of `gradients` in fixed point by the tree's `quantiser` into `fixed`: the
/// integers the host's [`GradientQuantiser::to_fixed`] gives (`totals`, a block's, are not read).
fn quantise_page(
    gpu: &Gpu,
    (gradients, rows): (&DeviceBuffer<GradientPair<f32>>, usize),
    (quantiser, fixed, totals): (&DeviceBuffer<GradientQuantiser>, &DeviceBuffer<Fixed>, &DeviceBuffer<Fixed>),
) -> Result<()> {
    if rows > gradients.len().min(fixed.len()) || reduce::blocks(rows) > totals.len() {
        return Err(Error::InvalidData(format!("a page of {rows} rows outgrows its gradients' buffers")));
    }
    let config = warp_per_block_config(reduce::blocks(rows))?;
    let args = entry::boost_quantise_fixed::args(
        gradients.as_ptr(),
        rows as u64,
        quantiser.as_ptr(),
        fixed.as_mut_ptr(),
        totals.as_mut_ptr(),
    );
    // SAFETY: `rows` gradients and fixed-point slots, one quantiser, a total per block (checked
    // above); the grid is whole warps.
    unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
    Ok(())
}

/// The expansion driver's backend over streamed pages.
struct StreamedBackend<'a, 'p> {
    /// The level's summed histograms and their evaluation; its own rows are none.
    evaluator: GpuBackend<'a>,
    pages: &'a DevicePages<'p>,
    streamed: &'a mut Streamed,
    work: PageBuffers,
    /// The last batch's expansions, partitioned in the pass that builds their children's
    /// histograms (or never, when none are asked: their children are leaves).
    pending: Option<Vec<Expansion<Fixed>>>,
}

impl StreamedBackend<'_, '_> {
    /// One pass over the pages: each page's bins, `expanded` partitioned (when any), and the
    /// histograms of `slots` (each a node whose rows are a range of every page's order) added into
    /// `histograms`, slot by slot. The next page's copies run on the copy stream meanwhile.
    fn pass(
        &mut self,
        expanded: &[Expansion<Fixed>],
        slots: &[usize],
        histograms: &mut DeviceBuffer<Fixed>,
    ) -> Result<()> {
        let e = &mut self.evaluator;
        let (gpu, cuts, first_bins, layout) = (e.gpu, e.cuts, e.first_bins, e.layout);
        let (views, copies) = (self.pages.views()?, self.pages.copies);
        let (s, work) = (&mut *self.streamed, &mut self.work);
        if s.pages.len() != views.len() {
            return Err(Error::InvalidData("a page without its rows' state".into()));
        }
        let double = work.slots.len() == 2;
        for (k, DevicePage { page, kept, bins: host_bins, .. }) in views.iter().enumerate() {
            if (k == 0 && !work.first_copied) || !double {
                s.prefetch((gpu, copies), &views, k, &mut work.slots[0])?;
            }
            copies.wait(gpu)?;
            if double {
                s.prefetch((gpu, copies), &views, k + 1, &mut work.slots[(k + 1) % 2])?;
            }
            let slot = if double { k % 2 } else { 0 };
            let (state, slot) = (&mut s.pages[k], &mut work.slots[slot]);
            if page.rows == 0 {
                continue;
            }
            let bins = &*Streamed::bins_for(&mut slot.bins, gpu, page.rows)?;
            let buffers = &mut work.rows;
            if host_bins.is_none() {
                let words = kept.unwrap_or(&slot.words);
                gather_page(gpu, (page, words), 0, &cuts.cut_ptrs, (&buffers.identity, 0..page.rows), bins)?;
            }
            match &mut state.order {
                Held::Device(order) => std::mem::swap(order, &mut buffers.rows),
                Held::Host(_) => std::mem::swap(&mut slot.order, &mut buffers.rows),
            }
            if !expanded.is_empty() {
                let rows = PartitionRows { gpu, bins, first_bins, order: &state.ranges };
                if let Some(pending) = enqueue_partition(&rows, buffers, expanded, |_| Ok(0))? {
                    let lefts = pending.read_lefts(gpu, buffers)?;
                    state.ranges.split(expanded, &lefts);
                }
            }
            let ranges: Vec<(u32, u32)> = slots
                .iter()
                .map(|&node| {
                    let (begin, end) = state.ranges.range(node);
                    (begin as u32, end as u32)
                })
                .collect();
            let gradients = match &state.gradients {
                Held::Device(gradients) => gradients,
                Held::Host(_) => &slot.gradients,
            };
            quantise_page(gpu, (gradients, page.rows), (&work.quantiser, &work.fixed, &work.totals))?;
            let rows = NodeRows { gpu, bins, gradients: &work.fixed, rows: &buffers.rows };
            add_histograms(&rows, (layout, first_bins), &ranges, histograms, &mut e.bad_row)?;
            match &mut state.order {
                Held::Device(order) => std::mem::swap(order, &mut buffers.rows),
                Held::Host(order) => {
                    if !expanded.is_empty() {
                        buffers.rows.copy_range_to_host(gpu, 0..page.rows, order.take(gpu, page.rows)?)?;
                    }
                    std::mem::swap(&mut slot.order, &mut buffers.rows);
                }
            }
        }
        // The next pass's first copies run during the evaluation between the two (each page's
        // order and gradients are as the next pass reads them).
        work.first_copied = double && !views.is_empty();
        if work.first_copied {
            s.prefetch((gpu, copies), &views, 0, &mut work.slots[0])?;
        }
        Ok(())
    }

    /// The phase of a level's pass: with the copies beside the kernels (two copy buffers), or
    /// after them (one).
    fn pass_phase(&self) -> &'static str {
        match self.work.slots.len() {
            2 => "pages: a level's pass (copy, bins, partition, histograms)",
            _ => "pages: a level's pass, one copy buffer (copy, bins, partition, histograms)",
        }
    }

    /// Runs `step` between the device timers of phase `name`.
    fn timed<T>(&mut self, name: &'static str, step: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let start = self.evaluator.timers.start(self.evaluator.gpu)?;
        let out = step(self)?;
        let e = &mut self.evaluator;
        e.timers.stop(e.gpu, &mut e.phases, name, start)?;
        Ok(out)
    }
}

impl Drop for StreamedBackend<'_, '_> {
    fn drop(&mut self) {
        // Copies still in flight (the last pass copies the first page for a next one, and a
        // failed pass may leave some) write the slots: the device's stream waits for them before
        // it frees the slots. A failure here is a copy's, which the next wait reports.
        let _ = self.pages.copies.wait(self.evaluator.gpu);
    }
}

impl GrowBackend<Fixed> for StreamedBackend<'_, '_> {
    type Error = Error;

    fn total(&mut self) -> Result<Fixed> {
        Ok(self.evaluator.root)
    }

    fn root_histogram(&mut self) -> Result<()> {
        self.timed(self.pass_phase(), |b| {
            let mut histograms = b.evaluator.histograms.zeroed(b.evaluator.gpu, b.evaluator.slot_len())?;
            b.pass(&[], &[0], &mut histograms)?;
            b.evaluator.histograms.insert(histograms, &[(0, 0)]);
            Ok(())
        })
    }

    fn partition(&mut self, expanded: &[Expansion<Fixed>]) -> Result<()> {
        self.pending = Some(expanded.to_vec());
        Ok(())
    }

    fn children_histograms(&mut self, children: &[ChildHistograms]) -> Result<()> {
        let expanded = self.pending.take().unwrap_or_default();
        if children.is_empty() {
            return Ok(());
        }
        let all = children.len() == expanded.len()
            && children.iter().zip(&expanded).all(|(c, e)| (c.left, c.right, c.parent) == (e.left, e.right, e.node));
        if !all {
            return Err(Error::InvalidData(
                "the children's histograms of a batch are asked for some of its expansions, not all".into(),
            ));
        }
        self.timed(self.pass_phase(), |b| {
            let slots: Vec<usize> = children.iter().flat_map(|c| [c.left, c.right]).collect();
            let e = &mut b.evaluator;
            let mut histograms = e.histograms.zeroed(e.gpu, slots.len() * e.slot_len())?;
            b.pass(&expanded, &slots, &mut histograms)?;
            let e = &mut b.evaluator;
            children.iter().for_each(|c| e.histograms.release(c.parent));
            let nodes: Vec<(usize, u32)> = slots.iter().enumerate().map(|(i, &node)| (node, i as u32)).collect();
            e.histograms.insert(histograms, &nodes);
            Ok(())
        })
    }

    fn evaluate(&mut self, nodes: &[SplitRequest<Fixed>]) -> Result<Vec<Option<Split<Fixed>>>> {
        self.timed("tree: evaluation", |b| b.evaluator.evaluate_batch(nodes))
    }

    fn evaluate_level(&mut self, nodes: &[(usize, Fixed)], features: &[u32]) -> Result<Option<Vec<Split<Fixed>>>> {
        self.timed("tree: evaluation", |b| b.evaluator.evaluate_level_on_device(nodes, features))
    }

    fn release(&mut self, node: usize) {
        self.evaluator.histograms.release(node);
    }

    fn categories(&mut self, node: usize, split: &Split<Fixed>) -> Result<Vec<u32>> {
        self.evaluator.categories_of(node, split)
    }
}
