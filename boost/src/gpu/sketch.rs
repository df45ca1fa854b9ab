//! The quantile cuts of dense rows in device memory: XGBoost 3.4's CPU sketch (what
//! [`QuantileCuts::build`] computes on the host), on the device, giving the same cuts bit for bit.
//!
//! The steps (`boost_kernels::sketch`): each column's present values with a weight are gathered in
//! row order, column after column (a thread a piece of rows and a column counts, then writes);
//! runs of equal values are numbered (a head flag a value, an inclusive scan); a thread a column
//! finds where each of its queues starts, as the host's queue fills (`2 limit` entries, the next
//! value starting the next); a thread a value writes the entries of the queues (a run's weights
//! added in order); each queue's entries are sorted by value (our stable segmented sort); a block
//! a queue makes its exact summary and prunes it; the summaries are carried up the sketch's levels
//! as the host carries them: as a binary tree built a round at a time, every column's nodes of a
//! round at once (a block a node), which is the host's binary counter while every combine carries,
//! or else, for a column where one did not, by a block walking the column's binary counter in
//! order; then a block a column carries the last queue's summary up the levels and merges them, the
//! lowest first (`GetSummary`); the whole block on each prune and combine. The host reads each
//! column's merged summary back and makes the cuts from it with the host's own code (`MakeCuts`).

use std::ops::Range;

use rayon::prelude::*;

use primitives::{DeviceBuffer, DeviceRadixSort, DeviceScan, DeviceSegmentedSort, Gpu, LaunchConfig, SortOrder};

use boost_kernels::entry;
use boost_kernels::sketch::{SketchEntry, SketchQueue, MERGE_SCRATCH, MERGE_SHARED_BYTES, TREE_ROUNDS};

use super::csr::{self, check_dense_finite, check_on};
use super::{element_config, DeviceCsr};
use crate::quantile::{cuts_of_summary, sketch_limit, QuantileCuts};
use crate::{Error, Result};

/// Rows of a piece: a thread gathers one column of one piece.
const PIECE_ROWS: usize = 1024;

/// Threads of a block of the summaries and the merge (a queue or a column a block).
const BLOCK_THREADS: u32 = 512;

/// A block a queue, node or column of `kernel`, with the block's shared memory: [`BLOCK_THREADS`]
/// threads, or the most whole warps the kernel's registers allow on this device.
fn block_config(gpu: &Gpu, kernel: &'static str, blocks: usize) -> Result<LaunchConfig> {
    let grid = u32::try_from(blocks).ok().filter(|&b| b < i32::MAX as u32);
    let grid = grid.ok_or_else(|| Error::InvalidData(format!("{blocks} sketch blocks are too many for one launch")))?;
    let threads = BLOCK_THREADS.min(gpu.max_block_threads(crate::KERNELS, kernel)? / 32 * 32).max(32);
    Ok(LaunchConfig {
        grid_dim: (grid.max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: MERGE_SHARED_BYTES as u32,
    })
}

/// Device bytes the sketch holds a present value at its peak (the summaries' launch: the gathered
/// values, weights and run numbers, the sorted entries, their exact summaries, the pruned
/// summaries and the merge trees' nodes; 47 measured without weights, 10M x 28 on an H100); the
/// columns are sketched in groups that keep this under [`sketch_budget`].
const SKETCH_BYTES_PER_VALUE: usize = 52;

/// Device bytes the sketch may hold at once: a quarter of the free memory, at most 1.5 GiB, and
/// under a memory limit ([`Gpu::set_memory_limit`]) half of what it leaves. A group costs a few
/// milliseconds however narrow (its merge trees' top rounds and its columns' final merge are
/// latency-bound): at 10M x 28 on an H200, 1.5 GiB (groups of 3 columns) took the cuts 0.03-0.05 s
/// longer than 8 GiB (2 groups), about 1% of a 500-round run, and the run's peak from 8.6 GB to
/// about 2.5 GB (`docs/benchmarks.md`).
fn sketch_budget(gpu: &Gpu) -> Result<usize> {
    let free = gpu.memory_usage()?.map_or(usize::MAX, |m| m.free_bytes as usize);
    let left = gpu.memory_limit().map_or(usize::MAX, |limit| limit.saturating_sub(gpu.memory_in_use()) / 2);
    Ok((free / 4).min(3 << 29).min(left))
}

/// The cuts of `rows x cols` dense row-major values in device memory (NaN: missing; an infinite
/// value is an error naming its row and column), weighting row `i` by `weights[i]` (`None`: all
/// 1): [`QuantileCuts::build`]'s cuts of the same rows. The
/// columns are sketched a group at a time, each group's buffers within a share of the device's
/// memory.
pub fn device_cuts(
    gpu: &Gpu,
    values: &DeviceBuffer<f32>,
    (rows, cols): (usize, usize),
    weights: Option<&DeviceBuffer<f32>>,
    max_bin: usize,
) -> Result<QuantileCuts> {
    device_cuts_within(gpu, values, (rows, cols), weights, max_bin, sketch_budget(gpu)?)
}

/// [`device_cuts`] with the `categorical` features' cuts a bin a category, codes 0 up to the
/// column's largest ([`QuantileCuts::build_typed`]'s): a thread a piece of a categorical column
/// finds its largest code and the first row holding no category (an error naming row, feature and
/// value, as the host's).
pub fn device_cuts_typed(
    gpu: &Gpu,
    values: &DeviceBuffer<f32>,
    (rows, cols): (usize, usize),
    weights: Option<&DeviceBuffer<f32>>,
    max_bin: usize,
    categorical: &[bool],
) -> Result<QuantileCuts> {
    let cuts = device_cuts(gpu, values, (rows, cols), weights, max_bin)?;
    let columns: Vec<u32> = (0..cols as u32).filter(|&f| categorical.get(f as usize) == Some(&true)).collect();
    if columns.is_empty() {
        return Ok(cuts);
    }
    let (most, bad) = (gpu.alloc_zeroed::<u32>(columns.len())?, gpu.upload(&vec![u32::MAX; columns.len()])?);
    let pieces = rows.div_ceil(PIECE_ROWS);
    if pieces > 0 {
        let device_columns = gpu.upload(&columns)?;
        let args = entry::boost_sketch_category_max::args(
            values.as_ptr(),
            rows as u64,
            cols as u64,
            device_columns.as_ptr(),
            columns.len() as u64,
            PIECE_ROWS as u64,
            most.as_mut_ptr(),
            bad.as_mut_ptr(),
        );
        // SAFETY: `rows x cols` values (checked by `device_cuts`), columns below `cols`, a word a
        // column in `most` and `bad`; a thread a (piece, column).
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(pieces * columns.len())?, args)? };
    }
    let (most, bad) = (most.to_vec(gpu)?, bad.to_vec(gpu)?);
    if let Some((k, &row)) = bad.iter().enumerate().find(|&(_, &row)| row != u32::MAX) {
        let f = columns[k] as usize;
        let value = values.range_to_vec(gpu, row as usize * cols + f..row as usize * cols + f + 1)?[0];
        return Err(crate::quantile::not_a_category(Some(row as usize), f, value));
    }
    let mut per_feature: Vec<Vec<f32>> =
        (0..cols).map(|f| cuts.cut_values[cuts.cut_ptrs[f] as usize..cuts.cut_ptrs[f + 1] as usize].to_vec()).collect();
    for (&f, &most) in columns.iter().zip(&most) {
        per_feature[f as usize] = (1..=most).map(|c| c as f32).collect();
    }
    let mut typed = QuantileCuts::from_features(per_feature);
    typed.categorical = (0..cols).map(|f| categorical.get(f) == Some(&true)).collect();
    Ok(typed)
}

/// [`device_cuts`] with the sketch's buffers within `budget` bytes (at least a column at a time),
/// for the benchmarks and tests of the column groups.
#[doc(hidden)]
pub fn device_cuts_within(
    gpu: &Gpu,
    values: &DeviceBuffer<f32>,
    (rows, cols): (usize, usize),
    weights: Option<&DeviceBuffer<f32>>,
    max_bin: usize,
    budget: usize,
) -> Result<QuantileCuts> {
    check_shape(gpu, ("device values", values.len()), (rows, cols), weights)?;
    check_dense_finite(gpu, values, (rows, cols))?;
    let max_bin = max_bin.max(1);
    let group = (budget / SKETCH_BYTES_PER_VALUE / rows.max(1)).clamp(1, cols.max(1));
    let mut per_feature = Vec::with_capacity(cols);
    for first in (0..cols).step_by(group) {
        let columns = first..(first + group).min(cols);
        let (merged, kept) = column_summaries(gpu, values, (rows, cols), columns, weights, max_bin)?;
        per_feature.extend(merged.iter().zip(kept).map(|(m, k)| cuts_of_summary(m, k, max_bin)));
    }
    Ok(QuantileCuts::from_features(per_feature))
}

/// [`device_cuts`] of `rows x cols` dense row-major values in host memory, never all on the device:
/// each group of columns is copied (page-locked) and uploaded on its own, its buffers and its
/// values within the sketch's share of the device's memory, the next group gathered on the host
/// while the device sketches this one. The same cuts (a column's summary reads only its own
/// values), and the same error for the first infinite value.
pub fn host_dense_cuts(
    gpu: &Gpu,
    values: &[f32],
    (rows, cols): (usize, usize),
    weights: Option<&DeviceBuffer<f32>>,
    max_bin: usize,
) -> Result<QuantileCuts> {
    host_dense_cuts_within(gpu, values, (rows, cols), weights, max_bin, sketch_budget(gpu)?)
}

/// [`host_dense_cuts`] with a group's buffers and values within `budget` bytes (at least a column).
fn host_dense_cuts_within(
    gpu: &Gpu,
    values: &[f32],
    (rows, cols): (usize, usize),
    weights: Option<&DeviceBuffer<f32>>,
    max_bin: usize,
    budget: usize,
) -> Result<QuantileCuts> {
    check_shape(gpu, ("values", values.len()), (rows, cols), weights)?;
    let (max_bin, bytes) = (max_bin.max(1), SKETCH_BYTES_PER_VALUE + size_of::<f32>());
    let group = (budget / bytes / rows.max(1)).clamp(1, cols.max(1));
    // Two page-locked buffers: the host gathers the next group's columns into one while the
    // device sketches the group uploaded from the other.
    let mut staged = [vec![0f32; rows * group], vec![0f32; rows * group]];
    // SAFETY: the buffers neither move nor are freed before their pins, dropped first below.
    let pins = [unsafe { gpu.pin_host(&staged[0]) }?, unsafe { gpu.pin_host(&staged[1]) }?];
    let gather = |out: &mut [f32], first: usize| {
        let width = group.min(cols - first);
        out[..rows * width].par_chunks_mut(width.max(1)).enumerate().for_each(|(r, out)| {
            out.copy_from_slice(&values[r * cols + first..r * cols + first + width]);
        });
    };
    let firsts: Vec<usize> = (0..cols).step_by(group).collect();
    if let Some(&first) = firsts.first() {
        gather(&mut staged[0], first);
    }
    let (mut per_feature, mut first_infinite) = (Vec::with_capacity(cols), None::<(usize, usize, f32)>);
    for (g, &first) in firsts.iter().enumerate() {
        let width = group.min(cols - first);
        let [even, odd] = &mut staged;
        let (current, next) = if g % 2 == 0 { (even, odd) } else { (odd, even) };
        let device = gpu.upload(&current[..rows * width])?;
        // The copy from page-locked memory runs on after the call: done before that buffer is
        // gathered into again.
        gpu.synchronize()?;
        let sketched = std::thread::scope(|scope| {
            if let Some(&following) = firsts.get(g + 1) {
                scope.spawn(move || gather(next, following));
            }
            group_cuts(gpu, &device, (rows, width), weights, max_bin, first_infinite.is_none())
        })?;
        match sketched {
            GroupCuts::Infinite(row, col, value) => {
                // The first in row-major order: the lowest row, then column (groups go left to right).
                let found = (row, first + col, value);
                first_infinite = Some(match first_infinite {
                    Some(before) if before.0 <= found.0 => before,
                    _ => found,
                });
            }
            GroupCuts::Cuts(cuts) => per_feature.extend(cuts),
            GroupCuts::Skipped => {}
        }
    }
    drop(pins);
    match first_infinite {
        Some((row, col, value)) => Err(csr::infinite_value(row, col, value)),
        None => Ok(QuantileCuts::from_features(per_feature)),
    }
}

/// What the device made of a column group of host rows.
enum GroupCuts {
    /// Its first infinite value in row-major order (row, column within the group, value).
    Infinite(usize, usize, f32),
    /// Each column's cuts.
    Cuts(Vec<Vec<f32>>),
    /// Not sketched: an earlier group held an infinite value.
    Skipped,
}

/// The cuts of the `rows x width` values of a column group on the device (when `sketch`), or where
/// its first infinite value is.
fn group_cuts(
    gpu: &Gpu,
    device: &DeviceBuffer<f32>,
    (rows, width): (usize, usize),
    weights: Option<&DeviceBuffer<f32>>,
    max_bin: usize,
    sketch: bool,
) -> Result<GroupCuts> {
    if let Some((row, col, value)) = csr::first_infinite(gpu, device, (rows, width))? {
        return Ok(GroupCuts::Infinite(row, col, value));
    }
    if !sketch {
        return Ok(GroupCuts::Skipped);
    }
    let (merged, kept) = column_summaries(gpu, device, (rows, width), 0..width, weights, max_bin)?;
    Ok(GroupCuts::Cuts(merged.iter().zip(kept).map(|(m, k)| cuts_of_summary(m, k, max_bin)).collect()))
}

/// An error unless `values` (named, and how many) are `rows x cols` and the weights, if any, one a
/// row on this device.
fn check_shape(
    gpu: &Gpu,
    (name, values): (&str, usize),
    (rows, cols): (usize, usize),
    weights: Option<&DeviceBuffer<f32>>,
) -> Result<()> {
    if rows.checked_mul(cols) != Some(values) {
        return Err(Error::InvalidData(format!("{values} {name} for {rows} rows of {cols}")));
    }
    if let Some(w) = weights.filter(|w| w.len() != rows) {
        return Err(Error::InvalidData(format!("{} device weights for {rows} rows", w.len())));
    }
    weights.map(|w| check_on(gpu, w, "the rows' weights")).transpose()?;
    Ok(())
}

/// The sketch summaries (the host's `quantile::sketch`) of columns `columns` of the rows, and
/// their values with a weight.
fn column_summaries(
    gpu: &Gpu,
    values: &DeviceBuffer<f32>,
    (rows, stride): (usize, usize),
    columns: Range<usize>,
    weights: Option<&DeviceBuffer<f32>>,
    max_bin: usize,
) -> Result<(Vec<Vec<SketchEntry>>, Vec<usize>)> {
    summarize_columns(gpu, gather_columns(gpu, values, (rows, stride), columns, weights)?, max_bin)
}

/// The sketch summaries of gathered columns, and their values with a weight.
fn summarize_columns(gpu: &Gpu, columns: Columns, max_bin: usize) -> Result<(Vec<Vec<SketchEntry>>, Vec<usize>)> {
    let cols = columns.present.len();
    let total = columns.starts[cols] as usize;
    let kept = columns.starts.windows(2).map(|w| (w[1] - w[0]) as usize).collect();
    if total == 0 {
        return Ok((vec![Vec::new(); cols], kept));
    }
    if total >= u32::MAX as usize {
        return Err(Error::InvalidData(format!("{total} present values: the device sketch takes fewer than 2^32")));
    }
    let limits: Vec<u32> = columns.present.iter().map(|&n| sketch_limit(n, max_bin) as u32).collect();
    let queues = find_queues(gpu, &columns, &limits)?;
    let summaries = queue_summaries(gpu, &columns, &queues, &limits)?;
    let diverged = build_trees(gpu, &summaries, &limits)?;
    Ok((merge_columns(gpu, &queues, &summaries, &limits, &diverged)?, kept))
}

/// The cuts of CSR rows in device memory (absent entries and NaN: missing), weighting row `i` by
/// `weights[i]` (`None`: all 1): [`QuantileCuts::build`]'s cuts of the same rows. Every column at
/// once (its buffers about 60 bytes a present value).
pub fn device_cuts_csr(
    gpu: &Gpu,
    csr: &DeviceCsr,
    weights: Option<&DeviceBuffer<f32>>,
    max_bin: usize,
) -> Result<QuantileCuts> {
    if let Some(w) = weights.filter(|w| w.len() != csr.rows()) {
        return Err(Error::InvalidData(format!("{} device weights for {} rows", w.len(), csr.rows())));
    }
    csr.check_on(gpu)?;
    weights.map(|w| check_on(gpu, w, "the rows' weights")).transpose()?;
    let max_bin = max_bin.max(1);
    let (merged, kept) = summarize_columns(gpu, gather_csr(gpu, csr, weights)?, max_bin)?;
    let per_feature = merged.iter().zip(kept).map(|(m, k)| cuts_of_summary(m, k, max_bin)).collect();
    Ok(QuantileCuts::from_features(per_feature))
}

/// Each column's weighted present values in row order, column after column.
struct Columns {
    values: DeviceBuffer<f32>,
    /// `None`: every weight 1.
    weights: Option<DeviceBuffer<f32>>,
    /// `cols + 1` offsets of the columns in `values`.
    starts: Vec<u64>,
    /// Present values a column (what the sketch's size counts, zero weights included).
    present: Vec<usize>,
    /// The run numbers of the values: inclusive sums of the run heads.
    runs: DeviceBuffer<u32>,
}

fn gather_columns(
    gpu: &Gpu,
    values: &DeviceBuffer<f32>,
    (rows, stride): (usize, usize),
    columns: Range<usize>,
    weights: Option<&DeviceBuffer<f32>>,
) -> Result<Columns> {
    let (cols, pieces) = (columns.len(), rows.div_ceil(PIECE_ROWS));
    let threads = pieces * cols;
    let weights_ptr = weights.map_or(std::ptr::null(), |w| w.as_ptr());
    let first = values.as_ptr().wrapping_add(columns.start);
    let data = (first, rows as u64, cols as u64, weights_ptr, stride as u64, PIECE_ROWS as u64);
    let (present, kept) = (gpu.alloc_zeroed::<u32>(threads.max(1))?, gpu.alloc_zeroed::<u32>(threads.max(1))?);
    if threads > 0 {
        let (values, rows, cols, weights, stride, piece_rows) = data;
        let (present, kept) = (present.as_mut_ptr(), kept.as_mut_ptr());
        let args = entry::boost_sketch_count::args(values, rows, cols, weights, stride, piece_rows, present, kept);
        // SAFETY: `rows` rows of `stride` values from the group's first column, `rows` weights
        // (checked by the caller), a count a thread.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(threads)?, args)? };
    }
    let (present, kept) = (present.to_vec(gpu)?, kept.to_vec(gpu)?);
    let mut offsets = Vec::with_capacity(threads);
    let mut starts = vec![0u64];
    let mut total = 0u64;
    for c in 0..cols {
        for &k in &kept[c * pieces..(c + 1) * pieces] {
            offsets.push(total);
            total += u64::from(k);
        }
        starts.push(total);
    }
    let present: Vec<usize> =
        (0..cols).map(|c| present[c * pieces..(c + 1) * pieces].iter().map(|&p| p as usize).sum()).collect();
    let n = total as usize;
    let out_values = gpu.alloc_uninitialized::<f32>(n.max(1))?;
    let out_weights = weights.map(|_| gpu.alloc_uninitialized::<f32>(n.max(1))).transpose()?;
    if n > 0 {
        let offsets = gpu.upload(&offsets)?;
        let (values, rows, cols, weights, stride, piece_rows) = data;
        let out_weights = out_weights.as_ref().map_or(std::ptr::null_mut(), |w| w.as_mut_ptr());
        let args = entry::boost_sketch_scatter::args(
            values,
            rows,
            cols,
            weights,
            stride,
            piece_rows,
            offsets.as_ptr(),
            out_values.as_mut_ptr(),
            out_weights,
        );
        // SAFETY: the counts' exclusive sums, within `n` values (and weights).
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(threads)?, args)? };
    }
    let runs = number_runs(gpu, &out_values, &starts)?;
    Ok(Columns { values: out_values, weights: out_weights, starts, present, runs })
}

/// The run numbers of the gathered `values` (columns at `starts`): the inclusive sums of the flags
/// of the values that start a run of equal values.
fn number_runs(gpu: &Gpu, values: &DeviceBuffer<f32>, starts: &[u64]) -> Result<DeviceBuffer<u32>> {
    let (n, cols) = (starts.last().map_or(0, |&n| n as usize), starts.len().saturating_sub(1));
    let mut runs = gpu.alloc_zeroed::<u32>(n.max(1))?;
    if n == 0 {
        return Ok(runs);
    }
    let device_starts = gpu.upload(starts)?;
    let heads = gpu.alloc_uninitialized::<u32>(n)?;
    let args = entry::boost_sketch_heads::args(
        values.as_ptr(),
        n as u64,
        device_starts.as_ptr(),
        cols as u64,
        heads.as_mut_ptr(),
    );
    // SAFETY: `n` values and flags, `cols + 1` offsets ending at `n`.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
    DeviceScan::inclusive_sum(gpu, &heads, &mut runs)?;
    Ok(runs)
}

/// Each column's weighted present values of checked CSR rows, gathered in row order, column after
/// column: a stable radix sort of the entries by a key of their column (see
/// `boost_kernels::sketch::csr_keys_kernel`), the bounds of the keys, a gather.
fn gather_csr(gpu: &Gpu, csr: &DeviceCsr, weights: Option<&DeviceBuffer<f32>>) -> Result<Columns> {
    let (nnz, cols) = (csr.nnz(), csr.cols());
    let weights_ptr = weights.map_or(std::ptr::null(), |w| w.as_ptr());
    let (row_ptr, col_indices, values, rows, nnz_arg, cols_arg) = csr.args();
    let (keys, indices) = (gpu.alloc_uninitialized::<u32>(nnz.max(1))?, gpu.alloc_uninitialized::<u32>(nnz.max(1))?);
    let (mut sorted_keys, mut sorted_indices) =
        (gpu.alloc_uninitialized::<u32>(nnz.max(1))?, gpu.alloc_uninitialized::<u32>(nnz.max(1))?);
    if nnz > 0 {
        let args = entry::boost_sketch_csr_keys::args(
            row_ptr,
            col_indices,
            values,
            rows,
            nnz_arg,
            cols_arg,
            weights_ptr,
            keys.as_mut_ptr(),
            indices.as_mut_ptr(),
        );
        // SAFETY: checked rows (`DeviceCsr::new`), `rows` weights (checked by the caller), `nnz`
        // keys and indices.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(nnz)?, args)? };
        let bits = u32::BITS - (2 * cols as u32).leading_zeros();
        let order = SortOrder::ascending().bits(0, bits.max(1));
        DeviceRadixSort::sort_pairs(gpu, &keys, &mut sorted_keys, &indices, &mut sorted_indices, order)?;
    }
    drop((keys, indices));
    let bounds = gpu.alloc_zeroed::<u64>(2 * cols + 1)?;
    let args = entry::boost_sketch_csr_bounds::args(sorted_keys.as_ptr(), nnz as u64, cols as u64, bounds.as_mut_ptr());
    // SAFETY: `nnz` sorted keys, `2 cols + 1` bounds.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(2 * cols + 1)?, args)? };
    let bounds = bounds.to_vec(gpu)?;
    let starts = bounds[..=cols].to_vec();
    let present = (0..cols).map(|c| (bounds[c + 1] - bounds[c] + bounds[cols + c + 1] - bounds[cols + c]) as usize);
    let present = present.collect();
    let n = bounds[cols] as usize;
    let out_values = gpu.alloc_uninitialized::<f32>(n.max(1))?;
    let out_weights = weights.map(|_| gpu.alloc_uninitialized::<f32>(n.max(1))).transpose()?;
    if n > 0 {
        let out_weights = out_weights.as_ref().map_or(std::ptr::null_mut(), |w| w.as_mut_ptr());
        let args = entry::boost_sketch_csr_gather::args(
            row_ptr,
            col_indices,
            values,
            rows,
            nnz_arg,
            cols_arg,
            weights_ptr,
            sorted_indices.as_ptr(),
            n as u64,
            out_values.as_mut_ptr(),
            out_weights,
        );
        // SAFETY: the first `n` sorted entry indices (below `nnz`), `n` outputs.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
    }
    let runs = number_runs(gpu, &out_values, &starts)?;
    Ok(Columns { values: out_values, weights: out_weights, starts, present, runs })
}

/// The queues of every column, in column order.
struct Queues {
    /// On the device and the host.
    device: DeviceBuffer<SketchQueue>,
    host: Vec<SketchQueue>,
    /// `cols + 1` offsets of each column's queues.
    column_queues: Vec<u64>,
    /// `queues + 1` offsets of each queue's entries.
    entry_offsets: Vec<u32>,
}

fn find_queues(gpu: &Gpu, columns: &Columns, limits: &[u32]) -> Result<Queues> {
    let cols = limits.len();
    // A full queue holds `2 limit` entries, so at least as many values.
    let capacity: Vec<u64> =
        (0..cols).map(|c| (columns.starts[c + 1] - columns.starts[c]) / (2 * u64::from(limits[c])) + 2).collect();
    let mut queue_offsets = vec![0u64];
    for &c in &capacity {
        queue_offsets.push(queue_offsets.last().unwrap_or(&0) + c);
    }
    let all = gpu.alloc_zeroed::<SketchQueue>(queue_offsets[cols] as usize)?;
    let counts = gpu.alloc_zeroed::<u32>(cols)?;
    let (device_starts, device_limits, device_offsets) =
        (gpu.upload(&columns.starts)?, gpu.upload(limits)?, gpu.upload(&queue_offsets)?);
    let args = entry::boost_sketch_queues::args(
        columns.runs.as_ptr(),
        device_starts.as_ptr(),
        cols as u64,
        device_limits.as_ptr(),
        device_offsets.as_ptr(),
        all.as_mut_ptr(),
        counts.as_mut_ptr(),
    );
    // SAFETY: the run numbers of the columns' values; room for each column's queues (its
    // capacity bounds them).
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(cols)?, args)? };
    let (counts, all) = (counts.to_vec(gpu)?, all.to_vec(gpu)?);
    let mut host = Vec::new();
    let mut column_queues = vec![0u64];
    for c in 0..cols {
        let first = queue_offsets[c] as usize;
        host.extend_from_slice(&all[first..first + counts[c] as usize]);
        column_queues.push(host.len() as u64);
    }
    let mut entry_offsets = vec![0u32];
    for q in &host {
        let last = *entry_offsets.last().unwrap_or(&0);
        entry_offsets
            .push(last.checked_add(q.entries).ok_or_else(|| Error::InvalidData("too many sketch entries".into()))?);
    }
    Ok(Queues { device: gpu.upload(&host)?, host, column_queues, entry_offsets })
}

/// Each queue's pruned summary, and where it lies; room for the merge trees' nodes after them.
struct Summaries {
    entries: DeviceBuffer<SketchEntry>,
    lens: DeviceBuffer<u32>,
    offsets: DeviceBuffer<u64>,
    tree: TreeLayout,
}

/// The rounds of the columns' merge trees, every column's nodes of a round in one launch: whether
/// each column's binary counter left the tree (a combine that did not carry).
fn build_trees(gpu: &Gpu, summaries: &Summaries, limits: &[u32]) -> Result<DeviceBuffer<u32>> {
    let diverged = gpu.alloc_zeroed::<u32>(limits.len().max(1))?;
    let device_limits = gpu.upload(limits)?;
    for tasks in &summaries.tree.rounds {
        let mut scratch_offsets = Vec::with_capacity(tasks.len());
        let mut scratch = 0u64;
        for task in tasks {
            scratch_offsets.push(scratch);
            scratch += 3 * u64::from(limits[task[3] as usize]);
        }
        let (device_tasks, device_offsets) = (gpu.upload(tasks)?, gpu.upload(&scratch_offsets)?);
        let scratch = gpu.alloc_uninitialized::<SketchEntry>(scratch as usize)?;
        let args = entry::boost_sketch_tree::args(
            device_tasks.as_ptr(),
            tasks.len() as u64,
            summaries.entries.as_mut_ptr(),
            summaries.offsets.as_ptr(),
            summaries.lens.as_mut_ptr(),
            device_limits.as_ptr(),
            scratch.as_mut_ptr(),
            device_offsets.as_ptr(),
            diverged.as_mut_ptr(),
        );
        // SAFETY: each task's children made before (the queues' summaries or the last round's
        // nodes), its node's room (its column's limit), `3 limit` of scratch; the shared memory.
        unsafe { gpu.launch_kernel(crate::KERNELS, block_config(gpu, "boost_sketch_tree", tasks.len())?, args)? };
    }
    Ok(diverged)
}

fn queue_summaries(gpu: &Gpu, columns: &Columns, queues: &Queues, limits: &[u32]) -> Result<Summaries> {
    let n = columns.starts[limits.len()] as usize;
    let count = queues.host.len();
    let entries = *queues.entry_offsets.last().unwrap_or(&0) as usize;
    let (keys, weights) = (gpu.alloc_uninitialized::<f32>(entries)?, gpu.alloc_uninitialized::<f32>(entries)?);
    let entry_offsets = gpu.upload(&queues.entry_offsets)?;
    let args = entry::boost_sketch_entries::args(
        columns.values.as_ptr(),
        columns.weights.as_ref().map_or(std::ptr::null(), |w| w.as_ptr()),
        columns.runs.as_ptr(),
        n as u64,
        queues.device.as_ptr(),
        count as u64,
        entry_offsets.as_ptr(),
        keys.as_mut_ptr(),
        weights.as_mut_ptr(),
    );
    // SAFETY: the queues cover the `n` values in order; `entries` entries.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
    // Stable: equal values keep their weights in queue order, the order the host adds them in.
    let (mut sorted_keys, mut sorted_weights) =
        (gpu.alloc_uninitialized::<f32>(entries)?, gpu.alloc_uninitialized::<f32>(entries)?);
    DeviceSegmentedSort::sort_pairs(
        gpu,
        &keys,
        &mut sorted_keys,
        &weights,
        &mut sorted_weights,
        &entry_offsets,
        SortOrder::ascending(),
    )?;
    drop((keys, weights));
    // A queue's limit (its column's) and the place of its pruned summary.
    let mut queue_limits = Vec::with_capacity(count);
    let mut offsets = Vec::with_capacity(count + 1);
    let mut total = 0u64;
    for (c, &limit) in limits.iter().enumerate() {
        for _ in queues.column_queues[c]..queues.column_queues[c + 1] {
            queue_limits.push(limit);
            offsets.push(total);
            total += u64::from(limit);
        }
    }
    let queue_entries = total;
    let tree = TreeLayout::new(queues, limits, &mut offsets, &mut total);
    let (queue_limits, offsets) = (gpu.upload(&queue_limits)?, gpu.upload(&offsets)?);
    let exact = gpu.alloc_uninitialized::<SketchEntry>(entries)?;
    let summaries = gpu.alloc_uninitialized::<SketchEntry>(total as usize)?;
    let words = gpu.alloc_uninitialized::<u32>(queue_entries as usize)?;
    let lens = gpu.alloc_zeroed::<u32>(tree.nodes)?;
    let args = entry::boost_sketch_summaries::args(
        sorted_keys.as_ptr(),
        sorted_weights.as_ptr(),
        entry_offsets.as_ptr(),
        queues.device.as_ptr(),
        count as u64,
        u64::from(columns.weights.is_none()),
        queue_limits.as_ptr(),
        offsets.as_ptr(),
        exact.as_mut_ptr(),
        summaries.as_mut_ptr(),
        lens.as_mut_ptr(),
        words.as_mut_ptr(),
    );
    // SAFETY: each queue's sorted entries and weights; room for its exact summary (as many as its
    // entries), its pruned one and its words (its limit); the block's shared memory.
    unsafe { gpu.launch_kernel(crate::KERNELS, block_config(gpu, "boost_sketch_summaries", count)?, args)? };
    Ok(Summaries { entries: summaries, lens, offsets, tree })
}

/// The nodes of the columns' merge trees (`boost_kernels::sketch::tree_kernel`), after the
/// queues' summaries: round `r` of a column of `p` pushes (all its queues but the last) has `p >>
/// r` nodes, node `m` made of nodes `2m` (older) and `2m + 1` (newer) of round `r - 1`.
struct TreeLayout {
    /// Summaries: the queues' and the nodes'.
    nodes: usize,
    /// A round's tasks (older, newer, node, column), rounds from 1.
    rounds: Vec<Vec<[u32; 4]>>,
    /// A column's first summary of each round ([`TREE_ROUNDS`] a column).
    round_starts: Vec<u32>,
}

impl TreeLayout {
    /// Places the nodes after the queues' summaries: their offsets appended to `offsets`, `total`
    /// grown by a limit a node.
    fn new(queues: &Queues, limits: &[u32], offsets: &mut Vec<u64>, total: &mut u64) -> Self {
        let mut next = queues.host.len() as u32;
        let mut rounds: Vec<Vec<[u32; 4]>> = Vec::new();
        let mut round_starts = vec![0u32; limits.len() * TREE_ROUNDS];
        for (c, &limit) in limits.iter().enumerate() {
            let (first, end) = (queues.column_queues[c] as u32, queues.column_queues[c + 1] as u32);
            round_starts[c * TREE_ROUNDS] = first;
            let mut count = end.saturating_sub(first + 1);
            for r in 1..TREE_ROUNDS {
                count /= 2;
                if count == 0 {
                    break;
                }
                let below = round_starts[c * TREE_ROUNDS + r - 1];
                round_starts[c * TREE_ROUNDS + r] = next;
                if rounds.len() < r {
                    rounds.push(Vec::new());
                }
                for m in 0..count {
                    rounds[r - 1].push([below + 2 * m, below + 2 * m + 1, next, c as u32]);
                    offsets.push(*total);
                    *total += u64::from(limit);
                    next += 1;
                }
            }
        }
        TreeLayout { nodes: next as usize, rounds, round_starts }
    }
}

/// Each column's merged summary, read back.
fn merge_columns(
    gpu: &Gpu,
    queues: &Queues,
    summaries: &Summaries,
    limits: &[u32],
    diverged: &DeviceBuffer<u32>,
) -> Result<Vec<Vec<SketchEntry>>> {
    let cols = limits.len();
    let mut levels = Vec::with_capacity(cols);
    let (mut scratch_offsets, mut merged_offsets) = (vec![], vec![]);
    let (mut scratch, mut merged) = (0u64, 0u64);
    for (c, &limit) in limits.iter().enumerate() {
        let pushes = queues.column_queues[c + 1] - queues.column_queues[c];
        // A binary counter of `pushes` carries to level `log2(pushes) + 1` at most.
        let height = (u64::BITS - pushes.leading_zeros()) + 2;
        levels.push(height);
        scratch_offsets.push(scratch);
        merged_offsets.push(merged);
        scratch += (u64::from(height) + MERGE_SCRATCH as u64) * u64::from(limit);
        merged += u64::from(limit);
    }
    let scratch_buffer = gpu.alloc_uninitialized::<SketchEntry>(scratch as usize)?;
    let merged_buffer = gpu.alloc_uninitialized::<SketchEntry>(merged as usize)?;
    let merged_lens = gpu.alloc_zeroed::<u32>(cols)?;
    let (column_queues, device_limits, device_levels) =
        (gpu.upload(&queues.column_queues)?, gpu.upload(limits)?, gpu.upload(&levels)?);
    let (device_scratch_offsets, device_merged_offsets) = (gpu.upload(&scratch_offsets)?, gpu.upload(&merged_offsets)?);
    let round_starts = gpu.upload(&summaries.tree.round_starts)?;
    let args = entry::boost_sketch_merge::args(
        cols as u64,
        summaries.entries.as_mut_ptr(),
        summaries.lens.as_ptr(),
        summaries.offsets.as_ptr(),
        column_queues.as_ptr(),
        device_limits.as_ptr(),
        scratch_buffer.as_mut_ptr(),
        device_scratch_offsets.as_ptr(),
        device_levels.as_ptr(),
        merged_buffer.as_mut_ptr(),
        device_merged_offsets.as_ptr(),
        merged_lens.as_mut_ptr(),
        diverged.as_ptr(),
        round_starts.as_ptr(),
    );
    let config = block_config(gpu, "boost_sketch_merge", cols)?;
    // SAFETY: each column's queue summaries; its scratch sized for its levels (at most 66: a
    // count of queues below 2^64); room for its merged summary (its limit); the block's shared
    // memory.
    unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
    let (all, lens) = (merged_buffer.to_vec(gpu)?, merged_lens.to_vec(gpu)?);
    Ok((0..cols).map(|c| all[merged_offsets[c] as usize..][..lens[c] as usize].to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, DenseMatrix, FeatureMatrix};
    use crate::quantile::{columns_of, sketch};
    use primitives::Schedule;
    use rand::{Rng, SeedableRng};

    /// CSR rows' cuts from the device are the host's: absent and NaN entries missing, a column
    /// with no entries, empty rows, weights with zeros, bin counts small enough for many queues.
    #[test]
    fn device_csr_cuts_are_the_hosts() {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 2 });
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let (rows, cols) = (2500, 6);
        let (mut row_ptr, mut col_indices, mut values) = (vec![0usize], Vec::new(), Vec::new());
        for i in 0..rows {
            for c in 0..cols {
                // Column 4 has no entries; row multiples of 7 none at all.
                if c == 4 || i % 7 == 0 || rng.gen_bool(0.3) {
                    continue;
                }
                col_indices.push(c as u32);
                values.push(match c {
                    0 => rng.gen::<f32>(),
                    1 => (rng.gen_range(0..5) as f32) * 0.5,
                    2 if rng.gen_bool(0.2) => f32::NAN,
                    3 => 1.25,
                    _ => rng.gen::<f32>() * 100.0 - 50.0,
                });
            }
            row_ptr.push(col_indices.len());
        }
        let device = DeviceCsr::new(
            &gpu,
            gpu.upload(&row_ptr.iter().map(|&p| p as u64).collect::<Vec<_>>()).unwrap(),
            gpu.upload(&col_indices).unwrap(),
            gpu.upload(&values).unwrap(),
            cols,
        )
        .unwrap();
        let features = FeatureMatrix::Sparse(CsrMatrix { rows, cols, row_ptr, col_indices, values });
        let weights: Vec<f32> = (0..rows).map(|i| if i % 11 == 0 { 0.0 } else { rng.gen::<f32>() }).collect();
        let device_weights = gpu.upload(&weights).unwrap();
        for max_bin in [2, 16, 256] {
            for weighted in [false, true] {
                let host = QuantileCuts::build(&features, if weighted { &weights } else { &[] }, max_bin);
                let cuts = device_cuts_csr(&gpu, &device, weighted.then_some(&device_weights), max_bin).unwrap();
                assert_eq!(cuts, host, "max_bin {max_bin}, weighted {weighted}");
            }
        }
        assert!(device_cuts_csr(&gpu, &device, Some(&gpu.upload(&[1.0f32; 3]).unwrap()), 16).is_err());
    }

    /// Bad CSR rows are refused when made, naming the first row at fault and what is wrong.
    #[test]
    fn bad_csr_rows_are_refused_naming_the_row() {
        let gpu = Gpu::emulated(Schedule::Deterministic);
        let make = |row_ptr: &[u64], cols_of: &[u32], cols: usize| {
            let values = vec![1.0f32; cols_of.len()];
            DeviceCsr::new(
                &gpu,
                gpu.upload(row_ptr).unwrap(),
                gpu.upload(cols_of).unwrap(),
                gpu.upload(&values).unwrap(),
                cols,
            )
        };
        let message = |r: Result<DeviceCsr>| r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(make(&[0, 2, 3], &[0, 2, 1], 3).is_ok());
        assert!(message(make(&[0, 2, 3], &[0, 3, 1], 3)).contains("CSR row 0: a column index at or past the 3 columns"));
        assert!(
            message(make(&[0, 1, 3], &[0, 2, 2], 3)).contains("CSR row 1: its column indices do not strictly increase")
        );
        assert!(message(make(&[0, 2, 1, 3], &[0, 1, 2], 3)).contains("CSR row 1: its offsets"));
        assert!(message(make(&[0, 2, 4], &[0, 1, 2], 3)).contains("CSR row 1: its offsets"));
        assert!(message(make(&[1, 2, 3], &[0, 1, 2], 3)).contains("CSR row 0: its offsets"));
        let values = gpu.upload(&[1.0, f32::NEG_INFINITY, 2.0]).unwrap();
        let infinite =
            DeviceCsr::new(&gpu, gpu.upload(&[0u64, 1, 3]).unwrap(), gpu.upload(&[0u32, 0, 1]).unwrap(), values, 2);
        assert!(message(infinite).contains("CSR row 1: an infinite value"));
        assert!(message(make(&[0, 1], &[0, 1], 3)).contains("CSR row 0: its offsets"));
        let (offsets, columns) = (gpu.upload(&[0u64, 2]).unwrap(), gpu.upload(&[0u32, 1]).unwrap());
        let mismatched = DeviceCsr::new(&gpu, offsets, columns, gpu.upload(&[1f32]).unwrap(), 3);
        assert!(message(mismatched).contains("CSR entries: 2 columns and 1 values"));
        assert!(make(&[], &[], 3).is_err());
    }

    /// Queues longer than a block's tile (`512 x 16` entries): the summaries' and the prune's passes
    /// carry their counts and ranks from tile to tile. Two columns of 40,000 rows, one continuous,
    /// one of runs of ties, 1024 bins (levels of 6145 entries); with and without weights.
    #[test]
    fn queues_of_many_tiles_give_the_hosts_summaries() {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 9 });
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let rows = 40_000;
        let values: Vec<f32> = (0..rows).flat_map(|i| [rng.gen::<f32>(), ((i / 3) % 5000) as f32]).collect();
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, 2, values.clone()));
        let weights: Vec<f32> = (0..rows).map(|_| rng.gen::<f32>()).collect();
        let device_values = gpu.upload(&values).unwrap();
        let device_weights = gpu.upload(&weights).unwrap();
        for weighted in [false, true] {
            let host_weights: &[f32] = if weighted { &weights } else { &[] };
            let (summaries, _) =
                column_summaries(&gpu, &device_values, (rows, 2), 0..2, weighted.then_some(&device_weights), 1024)
                    .unwrap();
            for (c, column) in columns_of(&features, host_weights).into_iter().enumerate() {
                let limit = sketch_limit(column.len(), 1024);
                assert!(2 * limit > 512 * 16, "a queue of {} entries fits one tile", 2 * limit);
                assert_eq!(summaries[c], sketch(&column, limit), "column {c}, weighted {weighted}");
            }
        }
    }

    /// The device's cuts are the host's for columns of every kind: continuous with missing values,
    /// constant, all missing, two values, heavy ties (runs across queue boundaries), a queue
    /// filled by its last entry's first value; with and without weights (zeros among them), and bin counts
    /// small enough for many queues a column.
    #[test]
    fn the_device_sketch_gives_the_hosts_cuts_unweighted() {
        device_sketch_against_the_hosts(false);
    }

    /// The same with weights (split from the unweighted case so that the test threads share them).
    #[test]
    fn the_device_sketch_gives_the_hosts_cuts_weighted() {
        device_sketch_against_the_hosts(true);
    }

    fn device_sketch_against_the_hosts(weighted: bool) {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 5 });
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        // Several of the sketch's queues a column (its tiles), small enough for the emulator.
        let rows = 1500;
        let cols = 8;
        let mut values = vec![0f32; rows * cols];
        for i in 0..rows {
            let row = &mut values[i * cols..(i + 1) * cols];
            row[0] = if rng.gen_bool(0.1) { f32::NAN } else { rng.gen::<f32>() * 10.0 - 5.0 };
            row[1] = 3.5;
            row[2] = f32::NAN;
            row[3] = if rng.gen_bool(0.5) { -1.0 } else { 2.0 };
            row[4] = (rng.gen_range(0..40) as f32) * 0.25;
            row[5] = if i < rows / 2 { 7.0 } else { (i % 13) as f32 };
            row[6] = if i % 3 == 0 {
                -0.0
            } else if i % 3 == 1 {
                0.0
            } else {
                rng.gen::<f32>()
            };
            // 193 distinct values, then one repeated: unweighted with 2 bins (a limit of 97), the
            // first queue's 194th entry is the repeated value, whose second copy starts a queue.
            row[7] = i.min(193) as f32;
        }
        let device_values = gpu.upload(&values).unwrap();
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
        let weights: Vec<f32> = (0..rows).map(|i| if i % 17 == 0 { 0.0 } else { rng.gen::<f32>() * 2.0 }).collect();
        let device_weights = gpu.upload(&weights).unwrap();
        for max_bin in [2, 3, 16, 256] {
            let host_weights: &[f32] = if weighted { &weights } else { &[] };
            let device_weights = weighted.then_some(&device_weights);
            // The summaries themselves (the cuts keep few of their entries).
            let (summaries, _) =
                column_summaries(&gpu, &device_values, (rows, cols), 0..cols, device_weights, max_bin).unwrap();
            for (c, column) in columns_of(&features, host_weights).into_iter().enumerate() {
                let host = if column.is_empty() {
                    Vec::new()
                } else {
                    sketch(&column, sketch_limit(column.len(), max_bin))
                };
                assert_eq!(summaries[c], host, "column {c}, max_bin {max_bin}, weighted {weighted}");
            }
            let host = QuantileCuts::build(&features, host_weights, max_bin);
            let device = device_cuts(&gpu, &device_values, (rows, cols), device_weights, max_bin).unwrap();
            // Three columns at a time (3, 3, 2): the same cuts.
            let budget = SKETCH_BYTES_PER_VALUE * rows * 3;
            let grouped =
                device_cuts_within(&gpu, &device_values, (rows, cols), device_weights, max_bin, budget).unwrap();
            assert_eq!(grouped, device, "max_bin {max_bin}, weighted {weighted}, in groups");
            // From host memory, three columns uploaded at a time (a limit leaving room for them).
            let FeatureMatrix::Dense(m) = &features else { unreachable!("dense rows") };
            let budget = (SKETCH_BYTES_PER_VALUE + 4) * rows * 3;
            let from_host = host_dense_cuts_within(&gpu, &m.values, (rows, cols), device_weights, max_bin, budget);
            assert_eq!(from_host.unwrap(), device, "max_bin {max_bin}, weighted {weighted}, from the host");
            let whole = host_dense_cuts(&gpu, &m.values, (rows, cols), device_weights, max_bin).unwrap();
            assert_eq!(whole, device, "max_bin {max_bin}, weighted {weighted}, from the host at once");
            assert_eq!(device.cut_ptrs, host.cut_ptrs, "max_bin {max_bin}, weighted {weighted}");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&device.cut_values), bits(&host.cut_values), "max_bin {max_bin}, weighted {weighted}");
        }
    }

    /// Empty data, a wrong shape, an infinite value and another device's buffers.
    #[test]
    fn the_device_sketch_refuses_bad_input() {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 5 });
        let device_values = gpu.upload(&[0f32; 16]).unwrap();
        let (rows, cols) = (2, 8);
        let empty = device_cuts(&gpu, &gpu.alloc_zeroed(0).unwrap(), (0, 3), None, 16).unwrap();
        assert_eq!(empty, QuantileCuts::build(&FeatureMatrix::Dense(DenseMatrix::new(0, 3, vec![])), &[], 16));
        assert!(device_cuts(&gpu, &device_values, (rows, cols + 1), None, 16).is_err());
        // An infinite value is refused, naming its row and column.
        let infinite = gpu.upload(&[1.0, 2.0, 3.0, f32::NAN, f32::INFINITY, 4.0]).unwrap();
        let refused = device_cuts(&gpu, &infinite, (3, 2), None, 16).err().map(|e| e.to_string());
        assert!(refused.is_some_and(|e| e.contains("row 2, feature 0: inf is infinite")));
        // From host memory a column at a time: the first in row-major order, whichever group.
        let values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, f32::NEG_INFINITY, f32::INFINITY, 0.0, 0.0, 0.0];
        let budget = SKETCH_BYTES_PER_VALUE + 4;
        let refused = host_dense_cuts_within(&gpu, &values, (3, 4), None, 16, budget).err().map(|e| e.to_string());
        assert!(refused.is_some_and(|e| e.contains("row 1, feature 3: -inf is infinite")));
        // Another device's buffers are refused before any launch.
        let other = Gpu::emulated(Schedule::Deterministic);
        let foreign = other.upload(&[1.0f32, 2.0]).unwrap();
        let refused = device_cuts(&gpu, &foreign, (1, 2), None, 16).err().map(|e| e.to_string());
        assert!(refused.is_some_and(|e| e.contains("a buffer of another device")));
        let offsets = other.upload(&[0u64, 1]).unwrap();
        let csr = DeviceCsr::new(&gpu, offsets, gpu.upload(&[0u32]).unwrap(), gpu.upload(&[1f32]).unwrap(), 1);
        assert!(csr.err().is_some_and(|e| e.to_string().contains("CSR offsets: a buffer of another device")));
    }
}
