//! A tree over external-memory pages that do not fit the device together ([`grow_streamed`]): the
//! pages streamed a level at a time, as XGBoost's GPU `hist` does over `ExtMemQuantileDMatrix`
//! without sampling. Each page keeps its own row order (page-local rows, each node's a range) and
//! its rows' fixed-point gradients, on the host for the first tree, then on the device while they fit
//! half of what that tree's peak left. A level is one pass: every page copied to the device (the
//! next page's words and host-held state on a copy stream while the kernels read the current
//! one: two buffers), its bins unpacked into the builder's layout, its rows
//! partitioned by the level's splits (`super::partition`'s kernels), and the histograms of both
//! children of each split built from them and added into the level's buffer. Fixed-point sums add
//! in any order, so the summed histograms are the in-core ones bit for bit, and so is the tree; no
//! subtraction (the smaller child is known only once every page is counted). Split evaluation is
//! the in-core backend's ([`GpuBackend`], which here holds no rows). A level's last partition is
//! never run: the rows' leaves come from a walk of the pages.

use std::time::Instant;

use primitives::{CopyStream, DeviceBuffer, Gpu};

use boost_kernels::evaluate::SplitContext;
use boost_kernels::split::Split;

use super::grow::GpuBackend;
use super::histogram::{add_histograms, NodeRows};
use super::pages::{gather_page, DevicePage, DevicePages, Staging};
use super::partition::{enqueue_partition, PartitionRows, RowBuffers};
use super::{BinLayout, DeviceBins, Fixed, GpuTrainer};
use crate::fixed_point::GradientQuantiser;
use crate::param::TreeParams;
use crate::tree::grow::{self, ChildHistograms, Expansion, GrowBackend, RowOrder, SplitRequest};
use crate::tree::Tree;
use crate::{Error, Result};

/// Bytes a row of a page's state: its place in the order and its fixed-point gradient.
const STATE_BYTES: usize = 4 + size_of::<Fixed>();

/// Where a page's state lives: on the device, or in page-locked host memory (copied at the bus's
/// speed).
enum Held<T> {
    Device(DeviceBuffer<T>),
    Host(Staging<T>),
}

/// One page's rows during a tree.
struct PageRows {
    rows: usize,
    /// The page's bins in the builder's layout, page-locked on the host (for a page whose words
    /// are in host memory): a pass copies them and unpacks nothing.
    bins: Option<Staging<u32>>,
    order: Held<u32>,
    ranges: RowOrder,
    gradients: Held<Fixed>,
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
    gradients: DeviceBuffer<Fixed>,
}

/// The device buffers of one page at a time, sized for the largest page, and each page's state:
/// made at the first streamed tree and kept for the run.
pub(super) struct Streamed {
    pages: Vec<PageRows>,
    /// The partition's buffers; `spare` one row longer than `rows`, so that a partition of a whole
    /// page copies its scatter back instead of swapping it with the page's order.
    buffers: RowBuffers,
    /// Two pages' copies: the next page's is copied into one, on its own stream, while the kernels
    /// read the other (double buffering).
    slots: [PageSlot; 2],
    copies: CopyStream,
    /// Whether the states were placed ([`Streamed::keep_on_device`]).
    placed: bool,
}

/// A tree's gradients, every row's in row order.
pub(super) enum TreeGradients<'a> {
    Host(&'a [Fixed]),
    Device(&'a DeviceBuffer<Fixed>),
}

impl Streamed {
    /// Buffers for `pages`' largest page, each page in host memory in the builder's layout
    /// ([`Streamed::transcode`]), and each page's state on the host until
    /// [`Streamed::keep_on_device`].
    pub(super) fn new(gpu: &Gpu, pages: &DevicePages, cut_ptrs: &DeviceBuffer<u32>, layout: BinLayout) -> Result<Self> {
        let views = pages.views()?;
        let largest = views.iter().map(|p| p.page.rows).max().unwrap_or(0);
        let mut buffers = RowBuffers::new(gpu, largest)?;
        buffers.spare = gpu.alloc_zeroed(largest + 1)?;
        let in_memory = pages.matrix.store.in_memory();
        let bins = Self::transcode(gpu, &views, &in_memory, cut_ptrs, layout)?;
        // Words are copied only for the pages on disk that the device does not keep.
        let copied = views.iter().zip(&in_memory).filter(|(p, &host)| p.kept.is_none() && !host);
        let words = copied.map(|(p, _)| p.page.words().len()).max().unwrap_or(0);
        let slot = || {
            let bins = vec![DeviceBins { words: gpu.alloc_zeroed(largest * layout.row_words)?, layout }];
            let (words, order) = (gpu.alloc_zeroed(words)?, gpu.alloc_zeroed(largest)?);
            Ok::<_, Error>(PageSlot { bins, words, order, gradients: gpu.alloc_zeroed(largest)? })
        };
        let slots = [slot()?, slot()?];
        let pages = views
            .iter()
            .zip(bins)
            .map(|(view, bins)| {
                let rows = view.page.rows;
                let (mut order, mut gradients) = (Staging::new(), Staging::new());
                // Sized and page-locked once.
                order.take(gpu, rows)?;
                gradients.take(gpu, rows)?;
                let (order, gradients) = (Held::Host(order), Held::Host(gradients));
                Ok(PageRows { rows, bins, order, ranges: RowOrder::ranges_only(rows), gradients })
            })
            .collect::<Result<_>>()?;
        Ok(Streamed { pages, buffers, slots, copies: gpu.copy_stream()?, placed: false })
    }

    /// Each page whose words are in host memory unpacked once on the device into the builder's
    /// layout and kept page-locked on the host: fewer bytes a pass copies than the page's symbols
    /// (9-bit ids of each feature's bins against 13-bit global symbols at 28 features of 256
    /// bins), and no unpacking in the pass. Host memory: `row_words` words a row more.
    fn transcode(
        gpu: &Gpu,
        views: &[DevicePage],
        in_memory: &[bool],
        cut_ptrs: &DeviceBuffer<u32>,
        layout: BinLayout,
    ) -> Result<Vec<Option<Staging<u32>>>> {
        let identity: Vec<u32> = (0..views.iter().map(|p| p.page.rows).max().unwrap_or(0) as u32).collect();
        let identity = gpu.upload(&identity)?;
        views
            .iter()
            .zip(in_memory)
            .map(|(view, &host)| {
                let rows = view.page.rows;
                if !host || rows == 0 || layout.row_words == 0 {
                    return Ok(None);
                }
                let copied;
                let words = match view.kept {
                    Some(words) => words,
                    None => {
                        copied = gpu.upload(view.page.words())?;
                        &copied
                    }
                };
                let bins = DeviceBins { words: gpu.alloc_zeroed(rows * layout.row_words)?, layout };
                gather_page(gpu, (&view.page, words), 0, cut_ptrs, (&identity, 0..rows), &bins)?;
                let mut staging = Staging::new();
                let len = bins.words.len();
                bins.words.copy_range_to_host(gpu, 0..len, staging.take(gpu, len)?)?;
                Ok(Some(staging))
            })
            .collect()
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

    /// Enqueues the copies of page `k` of `views` (when there is one) into slot `k % 2`, on the copy
    /// stream after the device's work so far (the slot's last readers): its words unless kept on
    /// the device, its order and gradients when held on the host.
    fn prefetch(&mut self, gpu: &Gpu, views: &[DevicePage], k: usize) -> Result<()> {
        let (Some(DevicePage { page, kept, .. }), Some(state)) = (views.get(k), self.pages.get_mut(k)) else { return Ok(()) };
        let slot = &mut self.slots[k % 2];
        // SAFETY: the pages' words stay (page-locked) for the run; the slot is read, and a state's
        // host copy written, only after the device waits for these copies (`pass`), and the order
        // read back only by the device's stream, after that wait.
        unsafe {
            match (&mut state.bins, kept) {
                (Some(bins), _) => {
                    let to = Self::bins_for(&mut slot.bins, gpu, page.rows)?;
                    let len = to.words.len();
                    self.copies.upload_at(gpu, &mut to.words, 0, bins.take(gpu, len)?)?;
                }
                (None, Some(_)) => {}
                (None, None) => self.copies.upload_at(gpu, &mut slot.words, 0, page.words())?,
            }
            if let Held::Host(order) = &mut state.order {
                self.copies.upload_at(gpu, &mut slot.order, 0, order.take(gpu, page.rows)?)?;
            }
            if let Held::Host(gradients) = &mut state.gradients {
                self.copies.upload_at(gpu, &mut slot.gradients, 0, gradients.take(gpu, page.rows)?)?;
            }
        }
        Ok(())
    }

    /// Every page's rows in its root, in order, with their gradients of this tree.
    fn start_tree(&mut self, gpu: &Gpu, gradients: TreeGradients) -> Result<()> {
        let mut first = 0;
        for page in &mut self.pages {
            let span = first..first + page.rows;
            first = span.end;
            page.ranges = RowOrder::ranges_only(page.rows);
            match &mut page.order {
                Held::Device(order) => order.copy_range_from_device(gpu, &self.buffers.identity, 0..page.rows, 0)?,
                Held::Host(order) => {
                    order.take(gpu, page.rows)?.iter_mut().enumerate().for_each(|(i, r)| *r = i as u32)
                }
            }
            match (&mut page.gradients, &gradients) {
                (Held::Device(to), TreeGradients::Device(from)) => to.copy_range_from_device(gpu, from, span, 0)?,
                (Held::Device(to), TreeGradients::Host(from)) => to.copy_from_host(gpu, &from[span])?,
                (Held::Host(to), TreeGradients::Device(from)) => {
                    from.copy_range_to_host(gpu, span.clone(), to.take(gpu, span.len())?)?
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
    streamed.start_tree(gpu, gradients)?;
    trainer.phases.add("pages: each page's rows and gradients", start.elapsed());
    let context = SplitContext { params: params.split(), quantiser, categorical: params.categorical() };
    let no_rows = gpu.alloc_zeroed::<Fixed>(0)?;
    let (cuts, bins, first_bins) = (&trainer.cuts, &trainer.bins, &trainer.first_bins);
    let mut evaluator = GpuBackend::new(gpu, cuts, bins, first_bins, &no_rows, root, &mut trainer.buffers, context)?;
    evaluator.timers = std::mem::take(&mut trainer.timers);
    let mut backend = StreamedBackend { evaluator, pages, streamed, pending: None };
    let rows = pages.matrix.rows();
    let tree = grow::grow(&mut backend, params, &quantiser, features, rows, rng)?;
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

/// The expansion driver's backend over streamed pages.
struct StreamedBackend<'a, 'p> {
    /// The level's summed histograms and their evaluation; its own rows are none.
    evaluator: GpuBackend<'a>,
    pages: &'a DevicePages<'p>,
    streamed: &'a mut Streamed,
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
        let views = self.pages.views()?;
        let s = &mut *self.streamed;
        if s.pages.len() != views.len() {
            return Err(Error::InvalidData("a page without its rows' state".into()));
        }
        s.prefetch(gpu, &views, 0)?;
        for (k, DevicePage { page, kept, .. }) in views.iter().enumerate() {
            s.copies.wait(gpu)?;
            s.prefetch(gpu, &views, k + 1)?;
            let (state, slot) = (&mut s.pages[k], &mut s.slots[k % 2]);
            if page.rows == 0 {
                continue;
            }
            let bins = &*Streamed::bins_for(&mut slot.bins, gpu, page.rows)?;
            let buffers = &mut s.buffers;
            if state.bins.is_none() {
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
            let rows = NodeRows { gpu, bins, gradients, rows: &buffers.rows };
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
        Ok(())
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

impl GrowBackend<Fixed> for StreamedBackend<'_, '_> {
    type Error = Error;

    fn total(&mut self) -> Result<Fixed> {
        Ok(self.evaluator.root)
    }

    fn root_histogram(&mut self) -> Result<()> {
        self.timed("pages: a level's pass (copy, bins, partition, histograms)", |b| {
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
        self.timed("pages: a level's pass (copy, bins, partition, histograms)", |b| {
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
