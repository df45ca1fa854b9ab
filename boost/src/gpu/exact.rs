//! The exact method on the GPU (Mitchell & Frank 2017's sorting mode): each feature's values sorted
//! once (the CPU's [`SortedColumns`], uploaded), then a level at a time for all its nodes:
//! - *find splits*: the entries are grouped by (feature, node), values increasing within a group;
//!   their gradients are gathered and scanned (a segmented scan of fixed-point pairs: exact), and a
//!   thread an entry evaluates the boundaries before it in both missing directions with
//!   `boost_kernels::exact`'s arithmetic (the CPU's), a warp's runs and then atomics keeping each
//!   group's first best; a thread a node picks over its features;
//! - *update positions*: rows of a split node go to the default side, then the split feature's
//!   group sends its present rows by the threshold;
//! - *re-sort*: each group is split stably into its node's children (flags, an exclusive scan, the
//!   children's group sizes and offsets, a scatter), rows of nodes that stop are dropped, so the
//!   next level's groups are again sorted by value.
//!
//! The first `exact_interleaved_levels` levels may run the paper's interleaved algorithm instead:
//! the entries stay in each feature's value order, and each node's candidates come from a masked
//! pass (its gradients scanned within every feature, and the place of its last entry up to each
//! entry, which finds an entry's predecessor in its node), a pass a node; the change to the
//! sorting layout is then one stable segmented radix sort of each feature's entries by next node.
//!
//! The sums are exact, so the splits are the CPU's ([`crate::tree::exact`]) bit for bit.

use std::time::Instant;

use boost_kernels::entry;
use boost_kernels::evaluate::{DeviceSplit, SplitContext};
use boost_kernels::exact::ExactExpansion;
use boost_kernels::split::{Bounds, Split};
use primitives::ops::{Max, Sum};
use primitives::kernels::KernelArgs;
use primitives::{DeviceBuffer, DeviceScan, DeviceSegmentedSort, Gpu, SegmentHeads, SortOrder};
use rand::Rng;

use super::{element_config, ptr, Fixed};
use crate::fixed_point::GradientQuantiser;
use crate::param::TreeParams;
use crate::phases::PhaseTimes;
use crate::tree::exact::SortedColumns;
use crate::tree::grow::{self, ChildHistograms, Expansion, GrowBackend, SplitRequest};
use crate::tree::hist::BuiltTree;
use crate::{Error, Result};

/// The training rows' sorted columns on a GPU, and the buffers of a tree's levels, kept for a
/// training run.
pub struct GpuExact<'g> {
    gpu: &'g Gpu,
    rows: usize,
    features: usize,
    /// The sorted columns as uploaded (each tree starts from them) and their offsets.
    start_values: DeviceBuffer<f32>,
    start_rows: DeviceBuffer<u32>,
    start_segments: DeviceBuffer<u32>,
    forward: DeviceBuffer<u8>,
    /// The level's entries and their doubles (the re-sort scatters into them, then they swap).
    values: DeviceBuffer<f32>,
    entry_rows: DeviceBuffer<u32>,
    values_next: DeviceBuffer<f32>,
    rows_next: DeviceBuffer<u32>,
    /// Each entry's next slot, the left flags and their exclusive sums (`entries + 1`).
    targets: DeviceBuffer<u32>,
    lefts: DeviceBuffer<u32>,
    before: DeviceBuffer<u32>,
    /// Each row's node.
    positions: DeviceBuffer<u32>,
}

impl<'g> GpuExact<'g> {
    /// Uploads `columns` (of `rows` rows) to `gpu`.
    pub fn new(gpu: &'g Gpu, columns: &SortedColumns, rows: usize) -> Result<Self> {
        let entries = columns.values.len();
        if entries >= u32::MAX as usize || rows >= u32::MAX as usize {
            return Err(Error::InvalidData(format!(
                "{entries} present values in {rows} rows: the GPU's exact method indexes them in 32 bits"
            )));
        }
        let offsets: Vec<u32> = columns.offsets.iter().map(|&o| o as u32).collect();
        let forward: Vec<u8> = columns.forward.iter().map(|&f| f as u8).collect();
        Ok(GpuExact {
            gpu,
            rows,
            features: columns.features(),
            start_values: gpu.upload(&columns.values)?,
            start_rows: gpu.upload(&columns.rows)?,
            start_segments: gpu.upload(&offsets)?,
            forward: gpu.upload(&forward)?,
            values: gpu.alloc_uninitialized(entries.max(1))?,
            entry_rows: gpu.alloc_uninitialized(entries.max(1))?,
            values_next: gpu.alloc_uninitialized(entries.max(1))?,
            rows_next: gpu.alloc_uninitialized(entries.max(1))?,
            targets: gpu.alloc_uninitialized(entries.max(1))?,
            lefts: gpu.alloc_uninitialized(entries + 1)?,
            before: gpu.alloc_uninitialized(entries + 1)?,
            positions: gpu.alloc_zeroed(rows.max(1))?,
        })
    }

    /// The GPU.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// Bytes of device memory held.
    pub fn bytes(&self) -> usize {
        self.start_values.len() * 8 * 3 + self.targets.len() * 12 + self.positions.len() * 4
    }

    /// Grows a tree from fixed-point gradients (one a row) over `features` with the shared
    /// expansion driver; returns it with each row's leaf.
    pub fn build_tree(
        &mut self,
        params: &TreeParams,
        quantiser: &GradientQuantiser,
        gradients: &[Fixed],
        features: &[u32],
        rng: &mut impl Rng,
    ) -> Result<BuiltTree> {
        if gradients.len() != self.rows {
            return Err(Error::InvalidData(format!("{} gradients for {} rows", gradients.len(), self.rows)));
        }
        let gpu = self.gpu;
        let start = Instant::now();
        let context = SplitContext { params: params.split(), quantiser: *quantiser, categorical: params.categorical() };
        let mut level = Level {
            context: gpu.upload(std::slice::from_ref(&context))?,
            gradients: gpu.upload(gradients)?,
            root: gradients.iter().fold(Fixed::new(0, 0), |a, &g| boost_kernels::fixed_point::add(a, g)),
            segments: gpu.alloc_uninitialized(1)?,
            slots: 1,
            len: 0,
            nodes: vec![0],
            expansions: Vec::new(),
            depth: 0,
            interleaved: false,
            interleaved_levels: params.exact_interleaved_levels,
            phases: PhaseTimes::default(),
            exact: self,
        };
        level.phases.add("tree: gradients to the device", start.elapsed());
        let tree = grow::grow(&mut level, params, quantiser, features, gradients.len(), rng)?;
        let mut phases = level.phases;
        let start = Instant::now();
        let positions = self.positions.range_to_vec(gpu, 0..self.rows)?;
        phases.add("tree: positions", start.elapsed());
        Ok(BuiltTree { tree, positions, phases })
    }
}

/// One tree's levels: the layout of the current level's entries (`slots` nodes, segments by
/// (feature, slot)) and the level's split nodes.
struct Level<'a, 'g> {
    exact: &'a mut GpuExact<'g>,
    context: DeviceBuffer<SplitContext>,
    gradients: DeviceBuffer<Fixed>,
    root: Fixed,
    /// `features * slots + 1` offsets of the current level's segments.
    segments: DeviceBuffer<u32>,
    slots: usize,
    /// Entries of the current level.
    len: usize,
    /// The node id of each slot.
    nodes: Vec<usize>,
    /// The level's split nodes, as the partition uploaded them.
    expansions: Vec<ExactExpansion>,
    /// The level's depth, and whether its entries are in each feature's value order (the
    /// interleaved layout: `features + 1` segments, every row's entries, `targets` their slots)
    /// rather than grouped by (feature, slot).
    depth: u32,
    interleaved: bool,
    /// Levels `0..interleaved_levels` are interleaved.
    interleaved_levels: u32,
    phases: PhaseTimes,
}

/// The per-level arguments of `boost_exact_level` before its stage's own.
struct LevelBuffers<'b> {
    prefix: u64,
    totals: Option<&'b DeviceBuffer<Fixed>>,
    gains: Option<&'b DeviceBuffer<f32>>,
    uses: Option<&'b DeviceBuffer<u8>>,
    /// Monotone constraints: each slot's bounds and each feature's direction.
    monotone: Option<&'b (DeviceBuffer<Bounds>, DeviceBuffer<i32>)>,
}

/// A level's node inputs on the device: sums, gains, sampled features and, with monotone
/// constraints, bounds and directions.
struct NodeInputs {
    totals: DeviceBuffer<Fixed>,
    gains: DeviceBuffer<f32>,
    uses: DeviceBuffer<u8>,
    monotone: Option<(DeviceBuffer<Bounds>, DeviceBuffer<i32>)>,
}

impl NodeInputs {
    /// The level's buffers over these inputs, with the prefix sums at `prefix`.
    fn buffers(&self, prefix: u64) -> LevelBuffers<'_> {
        LevelBuffers {
            prefix,
            totals: Some(&self.totals),
            gains: Some(&self.gains),
            uses: Some(&self.uses),
            monotone: self.monotone.as_ref(),
        }
    }
}

impl Level<'_, '_> {
    /// The stage's arguments: the level's, then the stage's own words (`p0..p5`, each stage's
    /// meaning in `boost_kernels::exact`).
    fn args(&self, b: &LevelBuffers<'_>, stage: u64, [p0, p1, p2, p3, p4, p5]: [u64; 6]) -> KernelArgs {
        let e = &self.exact;
        entry::boost_exact_level::args(
            e.values.as_ptr(),
            e.entry_rows.as_ptr(),
            ptr(b.prefix),
            self.len as u64,
            self.segments.as_ptr(),
            self.slots as u64,
            e.features as u64,
            b.totals.map_or(std::ptr::null(), DeviceBuffer::as_ptr),
            b.gains.map_or(std::ptr::null(), DeviceBuffer::as_ptr),
            b.monotone.map_or(std::ptr::null(), |m| m.0.as_ptr()),
            b.monotone.map_or(std::ptr::null(), |m| m.1.as_ptr()),
            b.uses.map_or(std::ptr::null(), DeviceBuffer::as_ptr),
            e.forward.as_ptr(),
            self.context.as_ptr(),
            stage,
            p0,
            p1,
            p2,
            p3,
            p4,
            p5,
        )
    }

    /// Launches stage `stage` of `boost_exact_level` over `threads` threads.
    ///
    /// # Safety
    /// The arguments satisfy the stage's kernel's contract.
    unsafe fn launch(&self, b: &LevelBuffers<'_>, stage: u64, threads: usize, rest: [u64; 6]) -> Result<()> {
        let args = self.args(b, stage, rest);
        // SAFETY: forwarded to the caller.
        unsafe { self.exact.gpu.launch_kernel(crate::KERNELS, element_config(threads)?, args)? };
        Ok(())
    }

    const NO_BUFFERS: LevelBuffers<'static> =
        LevelBuffers { prefix: 0, totals: None, gains: None, uses: None, monotone: None };

    /// The level's node inputs on the device (`nodes` in slot order).
    fn node_inputs(&self, nodes: &[SplitRequest<Fixed>]) -> Result<NodeInputs> {
        let (gpu, features) = (self.exact.gpu, self.exact.features);
        let mut uses = vec![0u8; nodes.len() * features];
        let mut directions = vec![0i32; features];
        for (slot, n) in nodes.iter().enumerate() {
            for (k, &f) in n.features.iter().enumerate() {
                uses[slot * features + f as usize] = 1;
                directions[f as usize] = n.monotone.get(k).copied().unwrap_or(0);
            }
        }
        let monotone = if nodes.iter().any(|n| !n.monotone.is_empty()) {
            let bounds: Vec<Bounds> = nodes.iter().map(|n| n.parent.bounds).collect();
            Some((gpu.upload(&bounds)?, gpu.upload(&directions)?))
        } else {
            None
        };
        let totals: Vec<Fixed> = nodes.iter().map(|n| n.sum).collect();
        let gains: Vec<f32> = nodes.iter().map(|n| n.parent.gain).collect();
        Ok(NodeInputs { totals: gpu.upload(&totals)?, gains: gpu.upload(&gains)?, uses: gpu.upload(&uses)?, monotone })
    }

    /// Splits of the level's nodes (`nodes` in slot order).
    fn find_splits(&mut self, nodes: &[SplitRequest<Fixed>]) -> Result<Vec<Option<Split<Fixed>>>> {
        if nodes.is_empty() {
            return Ok(Vec::new());
        }
        if nodes.len() != self.slots || nodes.iter().zip(&self.nodes).any(|(n, &id)| n.node != id) {
            return Err(Error::InvalidData(format!(
                "the exact method's level is evaluated out of its node order: {:?} against {:?}",
                nodes.iter().map(|n| n.node).collect::<Vec<_>>(),
                self.nodes
            )));
        }
        if self.len == 0 {
            return Ok(vec![None; nodes.len()]);
        }
        let (gpu, features) = (self.exact.gpu, self.exact.features);
        let inputs = self.node_inputs(nodes)?;
        if self.interleaved {
            return self.find_interleaved(&inputs);
        }
        let gathered = gpu.alloc_uninitialized::<Fixed>(self.len)?;
        let (rows, gradients) = (self.exact.entry_rows.as_ptr(), self.gradients.as_ptr());
        let args = entry::boost_exact_gather::args(rows, self.len as u64, gradients, gathered.as_mut_ptr());
        // SAFETY: `len` entries and as many gathered pairs; every entry's row has a gradient.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(self.len)?, args)? };
        let mut prefix = gpu.alloc_uninitialized::<Fixed>(self.len)?;
        DeviceScan::inclusive_segmented_scan::<Fixed, Sum>(
            gpu,
            &gathered,
            SegmentHeads::Offsets(&self.segments),
            &mut prefix,
        )?;
        drop(gathered);
        let b = inputs.buffers(prefix.device_ptr());
        let best = gpu.alloc_zeroed::<u64>(features * self.slots)?;
        let out = gpu.alloc_uninitialized::<DeviceSplit>(self.slots)?;
        // SAFETY: the level's layout with its prefix sums, totals, gains and uses by slot; a key per
        // segment, zeroed; whole warps (element_config's blocks).
        unsafe { self.launch(&b, 0, self.len, [best.device_ptr(), 0, 0, 0, 0, 0])? };
        // SAFETY: as above, after the keys; a split per slot.
        unsafe { self.launch(&b, 1, self.slots, [best.device_ptr(), out.device_ptr(), 0, 0, 0, 0])? };
        Ok(out.to_vec(gpu)?.iter().map(DeviceSplit::split).collect())
    }

    /// The rows of the split nodes to their children.
    fn update_positions(&mut self, expanded: &[Expansion<Fixed>]) -> Result<()> {
        let gpu = self.exact.gpu;
        let slot_of = |node: usize| self.nodes.iter().position(|&n| n == node);
        let mut expansions = Vec::with_capacity(expanded.len());
        let mut plan = vec![-1i32; expanded.iter().map(|e| e.node + 1).max().unwrap_or(0)];
        let mut expansion_of = vec![-1i32; self.slots];
        for (i, e) in expanded.iter().enumerate() {
            let slot = slot_of(e.node)
                .ok_or_else(|| Error::InvalidData(format!("node {} is split outside its level", e.node)))?;
            plan[e.node] = i as i32;
            expansion_of[slot] = i as i32;
            expansions.push(ExactExpansion {
                slot: slot as u32,
                feature: e.split.feature,
                threshold: e.split.threshold,
                default_left: e.split.default_left as u32,
                left: e.left as u32,
                right: e.right as u32,
            });
        }
        let (plan_d, expansions_d, expansion_of_d) =
            (gpu.upload(&plan)?, gpu.upload(&expansions)?, gpu.upload(&expansion_of)?);
        let rows = self.exact.rows;
        let args = entry::boost_exact_default_positions::args(
            self.exact.positions.as_mut_ptr(),
            rows as u64,
            plan_d.as_ptr(),
            plan.len() as u64,
            expansions_d.as_ptr(),
        );
        // SAFETY: a position a row; the plan names expansions by node id.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(rows)?, args)? };
        let e = &self.exact;
        if self.len > 0 && self.interleaved {
            let rest = [
                e.targets.device_ptr(),
                e.positions.device_ptr(),
                expansion_of_d.device_ptr(),
                expansions_d.device_ptr(),
                0,
                0,
            ];
            // SAFETY: the interleaved layout with this level's targets (its splits' search made
            // them); a position a row; an expansion index (or -1) a slot.
            unsafe { self.launch(&Self::NO_BUFFERS, 10, self.len, rest)? };
        } else if self.len > 0 {
            let rest = [e.positions.device_ptr(), expansion_of_d.device_ptr(), expansions_d.device_ptr(), 0, 0, 0];
            // SAFETY: the level's layout; a position a row; an expansion index (or -1) a slot.
            unsafe { self.launch(&Self::NO_BUFFERS, 2, self.len, rest)? };
        }
        self.expansions = expansions;
        Ok(())
    }

    /// The next level's layout: each segment split stably into its node's children's, the rows of
    /// nodes that stop dropped; `children` are the expansions' in order.
    fn resort(&mut self, children: &[ChildHistograms]) -> Result<()> {
        if children.len() != self.expansions.len()
            || children
                .iter()
                .zip(&self.expansions)
                .any(|(c, x)| (c.left, c.right) != (x.left as usize, x.right as usize))
        {
            return Err(Error::InvalidData("the exact method's children differ from the level's splits".into()));
        }
        let (gpu, features) = (self.exact.gpu, self.exact.features);
        let new_slots = 2 * children.len();
        let mut slot_of = vec![u32::MAX; children.iter().map(|c| c.right.max(c.left) + 1).max().unwrap_or(0)];
        for (i, c) in children.iter().enumerate() {
            slot_of[c.left] = 2 * i as u32;
            slot_of[c.right] = 2 * i as u32 + 1;
        }
        let next_interleaved = self.depth + 1 < self.interleaved_levels;
        self.depth += 1;
        if next_interleaved {
            // The entries stay in value order; the next level finds its nodes' slots itself.
            (self.interleaved, self.slots) = (true, new_slots);
            self.nodes = children.iter().flat_map(|c| [c.left, c.right]).collect();
            return Ok(());
        }
        if self.interleaved {
            return self.change_to_sorting_layout(&slot_of, new_slots, children);
        }
        let parent_slot: Vec<u32> = self.expansions.iter().map(|x| x.slot).collect();
        let (slot_of_d, parent_slot_d) = (gpu.upload(&slot_of)?, gpu.upload(&parent_slot)?);
        let e = &self.exact;
        let (targets, lefts, before) = (e.targets.device_ptr(), e.lefts.device_ptr(), e.before.device_ptr());
        let rest = [e.positions.device_ptr(), slot_of_d.device_ptr(), slot_of.len() as u64, targets, lefts, 0];
        // SAFETY: the level's layout; `len` targets, `len + 1` flags; the slot table's length.
        unsafe { self.launch(&Self::NO_BUFFERS, 3, self.len + 1, rest)? };
        let e = &mut *self.exact;
        DeviceScan::exclusive_sum_n(gpu, &e.lefts, &mut e.before, self.len + 1)?;
        let count = features * new_slots;
        let sizes = gpu.alloc_uninitialized::<u32>(count + 1)?;
        let rest = [before, parent_slot_d.device_ptr(), new_slots as u64, sizes.device_ptr(), 0, 0];
        // SAFETY: the level's layout and the flags' sums; a parent slot a pair; `count + 1` sizes.
        unsafe { self.launch(&Self::NO_BUFFERS, 4, count + 1, rest)? };
        let mut segments = gpu.alloc_uninitialized::<u32>(count + 1)?;
        DeviceScan::exclusive_sum_n(gpu, &sizes, &mut segments, count + 1)?;
        let len = segments.range_to_vec(gpu, count..count + 1)?[0] as usize;
        let e = &self.exact;
        let rest = [
            targets,
            before,
            segments.device_ptr(),
            new_slots as u64,
            e.values_next.device_ptr(),
            e.rows_next.device_ptr(),
        ];
        // SAFETY: the level's layout, targets and flags' sums; the next segments' offsets; the
        // doubles hold every entry.
        unsafe { self.launch(&Self::NO_BUFFERS, 5, self.len, rest)? };
        let e = &mut *self.exact;
        std::mem::swap(&mut e.values, &mut e.values_next);
        std::mem::swap(&mut e.entry_rows, &mut e.rows_next);
        self.segments = segments;
        self.slots = new_slots;
        self.len = len;
        self.nodes = children.iter().flat_map(|c| [c.left, c.right]).collect();
        Ok(())
    }
}

impl Level<'_, '_> {
    /// `targets[e]`: each entry's slot by `slot_of` (node id to slot), `u32::MAX` for none.
    fn targets(&self, slot_of: &[u32]) -> Result<()> {
        let gpu = self.exact.gpu;
        let slot_of_d = gpu.upload(slot_of)?;
        let e = &self.exact;
        let rest = [
            e.positions.device_ptr(),
            slot_of_d.device_ptr(),
            slot_of.len() as u64,
            e.targets.device_ptr(),
            e.lefts.device_ptr(),
            0,
        ];
        // SAFETY: the level's layout; `len` targets, `len + 1` flags; the slot table's length.
        unsafe { self.launch(&Self::NO_BUFFERS, 3, self.len + 1, rest) }
    }

    /// The interleaved algorithm's splits: a masked scan of each node's gradients and places
    /// within every feature, its candidates' keys, its best split of each feature; then each node's
    /// pick over its features.
    fn find_interleaved(&mut self, inputs: &NodeInputs) -> Result<Vec<Option<Split<Fixed>>>> {
        let (gpu, features, len) = (self.exact.gpu, self.exact.features, self.len);
        let mut slot_of = vec![u32::MAX; self.nodes.iter().max().map_or(0, |&n| n + 1)];
        for (slot, &node) in self.nodes.iter().enumerate() {
            slot_of[node] = slot as u32;
        }
        self.targets(&slot_of)?;
        let targets = self.exact.targets.device_ptr();
        let (gathered, mut prefix) = (gpu.alloc_uninitialized::<Fixed>(len)?, gpu.alloc_uninitialized::<Fixed>(len)?);
        let (index, mut last) = (gpu.alloc_uninitialized::<u32>(len)?, gpu.alloc_uninitialized::<u32>(len)?);
        let best = gpu.alloc_zeroed::<u64>(features * self.slots)?;
        let splits = gpu.alloc_uninitialized::<DeviceSplit>(features * self.slots)?;
        let b = inputs.buffers(prefix.device_ptr());
        for k in 0..self.slots as u64 {
            let rest = [targets, k, self.gradients.device_ptr(), gathered.device_ptr(), index.device_ptr(), 0];
            // SAFETY: the interleaved layout and its targets; `len` gathered pairs and places.
            unsafe { self.launch(&b, 6, len, rest)? };
            let heads = SegmentHeads::Offsets(&self.segments);
            DeviceScan::inclusive_segmented_scan::<Fixed, Sum>(gpu, &gathered, heads, &mut prefix)?;
            DeviceScan::inclusive_segmented_scan::<u32, Max>(gpu, &index, heads, &mut last)?;
            let rest = [targets, k, last.device_ptr(), best.device_ptr(), 0, 0];
            // SAFETY: node `k`'s scans; a key per (feature, slot), zeroed; whole warps.
            unsafe { self.launch(&b, 7, len, rest)? };
            let rest = [k, last.device_ptr(), best.device_ptr(), splits.device_ptr(), 0, 0];
            // SAFETY: as above, after the keys; a split per (feature, slot).
            unsafe { self.launch(&b, 8, features, rest)? };
        }
        let out = gpu.alloc_uninitialized::<DeviceSplit>(self.slots)?;
        // SAFETY: every node's splits by feature; a split per slot.
        unsafe { self.launch(&b, 9, self.slots, [splits.device_ptr(), out.device_ptr(), 0, 0, 0, 0])? };
        Ok(out.to_vec(gpu)?.iter().map(DeviceSplit::split).collect())
    }

    /// From the interleaved layout to the sorting one for the next level: each feature's entries
    /// sorted stably by their next slot (our segmented radix sort on the slot's bits, the stopped
    /// rows' `u32::MAX` last), counted by (feature, slot), and moved without the stopped rows.
    fn change_to_sorting_layout(
        &mut self,
        slot_of: &[u32],
        new_slots: usize,
        children: &[ChildHistograms],
    ) -> Result<()> {
        let (gpu, features, len) = (self.exact.gpu, self.exact.features, self.len);
        self.targets(slot_of)?;
        let packed = gpu.alloc_uninitialized::<u64>(len)?;
        // SAFETY: the interleaved layout; `len` packed entries.
        unsafe { self.launch(&Self::NO_BUFFERS, 11, len, [packed.device_ptr(), 0, 0, 0, 0, 0])? };
        let (mut keys, mut sorted) = (gpu.alloc_uninitialized::<u32>(len)?, gpu.alloc_uninitialized::<u64>(len)?);
        let bits = usize::BITS - new_slots.leading_zeros();
        let order = SortOrder::ascending().bits(0, bits);
        DeviceSegmentedSort::sort_pairs(
            gpu,
            &self.exact.targets,
            &mut keys,
            &packed,
            &mut sorted,
            &self.segments,
            order,
        )?;
        let count = features * new_slots;
        let counts = gpu.alloc_zeroed::<u32>(count + 1)?;
        let rest = [keys.device_ptr(), new_slots as u64, counts.device_ptr(), 0, 0, 0];
        // SAFETY: the sorted keys of the layout's entries; `count` counters.
        unsafe { self.launch(&Self::NO_BUFFERS, 12, len, rest)? };
        let mut segments = gpu.alloc_uninitialized::<u32>(count + 1)?;
        DeviceScan::exclusive_sum_n(gpu, &counts, &mut segments, count + 1)?;
        let new_len = segments.range_to_vec(gpu, count..count + 1)?[0] as usize;
        let e = &self.exact;
        let rest = [
            keys.device_ptr(),
            sorted.device_ptr(),
            segments.device_ptr(),
            new_slots as u64,
            e.values_next.device_ptr(),
            e.rows_next.device_ptr(),
        ];
        // SAFETY: the sorted entries and the next layout's offsets; the doubles hold its entries.
        unsafe { self.launch(&Self::NO_BUFFERS, 13, len, rest)? };
        let e = &mut *self.exact;
        std::mem::swap(&mut e.values, &mut e.values_next);
        std::mem::swap(&mut e.entry_rows, &mut e.rows_next);
        (self.segments, self.slots, self.len, self.interleaved) = (segments, new_slots, new_len, false);
        self.nodes = children.iter().flat_map(|c| [c.left, c.right]).collect();
        Ok(())
    }
}

impl GrowBackend<Fixed> for Level<'_, '_> {
    type Error = Error;

    fn total(&mut self) -> Result<Fixed> {
        Ok(self.root)
    }

    /// The root's layout: the sorted columns, a segment a feature; every row at the root.
    fn root_histogram(&mut self) -> Result<()> {
        let start = Instant::now();
        let gpu = self.exact.gpu;
        let e = &mut *self.exact;
        e.values.copy_from_device(gpu, &e.start_values)?;
        e.entry_rows.copy_from_device(gpu, &e.start_rows)?;
        e.positions.fill_zero(gpu)?;
        let mut segments = gpu.alloc_uninitialized::<u32>(e.features + 1)?;
        segments.copy_from_device(gpu, &e.start_segments)?;
        self.segments = segments;
        self.len = e.start_values.len();
        (self.slots, self.nodes) = (1, vec![0]);
        // The root's layout is both: one segment a feature.
        (self.depth, self.interleaved) = (0, false);
        self.phases.add("tree: exact layout", start.elapsed());
        Ok(())
    }

    fn partition(&mut self, expanded: &[Expansion<Fixed>]) -> Result<()> {
        let start = Instant::now();
        self.update_positions(expanded)?;
        self.phases.add("tree: exact positions", start.elapsed());
        Ok(())
    }

    fn children_histograms(&mut self, children: &[ChildHistograms]) -> Result<()> {
        if children.is_empty() {
            return Ok(());
        }
        let start = Instant::now();
        self.resort(children)?;
        self.phases.add("tree: exact re-sort", start.elapsed());
        Ok(())
    }

    fn evaluate(&mut self, nodes: &[SplitRequest<Fixed>]) -> Result<Vec<Option<Split<Fixed>>>> {
        let start = Instant::now();
        let splits = self.find_splits(nodes)?;
        self.phases.add("tree: exact splits", start.elapsed());
        Ok(splits)
    }

    /// Oblivious trees are grown from histograms: the parameters refuse them with `exact`.
    fn evaluate_level(&mut self, _nodes: &[(usize, Fixed)], _features: &[u32]) -> Result<Option<Vec<Split<Fixed>>>> {
        Err(Error::InvalidData("oblivious trees are not grown by the exact method".into()))
    }

    fn release(&mut self, _node: usize) {}
}
