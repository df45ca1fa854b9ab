//! The binarised applier's side on the host (`boost_kernels::binarised`): a model of oblivious
//! trees laid out once as the kernel reads it (each split feature's distinct conditions, the
//! staged columns of its codes, every level's column and addend, every tree's leaf values by
//! slot), and its launch over dense rows in device memory.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use boost_kernels::binarised::{
    self, BinarisedFeature, BinarisedTree, LevelSplit, MAX_LEVELS, MAX_THRESHOLDS, NO_COLUMN, ROWS_PER_THREAD,
};
use boost_kernels::entry;
use primitives::{DeviceBuffer, Gpu, LaunchConfig};

use super::{eval::grouped_by_output, ptr, ptr_mut};
use crate::tree::oblivious::ObliviousTree;
use crate::tree::Tree;
use crate::{Error, Result};

/// A model's trees as the binarised applier reads them, on the host.
#[derive(Debug, Default, PartialEq)]
struct Layout {
    features: Vec<BinarisedFeature>,
    /// Each feature's conditions, ascending, padded with `+inf` to `2^steps - 1`.
    thresholds: Vec<f32>,
    steps: u32,
    trees: Vec<BinarisedTree>,
    splits: Vec<[LevelSplit; 2]>,
    leaf_values: Vec<f32>,
    columns: usize,
}

impl Layout {
    /// The layout of `trees` (each with its output), or `None` when the applier cannot take them:
    /// a tree that is not oblivious or is deeper than [`MAX_LEVELS`], a NaN condition, or a
    /// feature of more than [`MAX_THRESHOLDS`] distinct conditions (such as an exact-method model's).
    fn of(trees: &[(Tree, u32)]) -> Option<Self> {
        let oblivious: Vec<ObliviousTree> =
            trees.iter().map(|(tree, _)| ObliviousTree::of(tree)).collect::<Option<_>>()?;
        let mut conditions: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
        let mut directions = BTreeSet::new();
        for tree in &oblivious {
            if tree.levels.len() > MAX_LEVELS {
                return None;
            }
            for &(feature, condition, missing_left) in &tree.levels {
                if condition.is_nan() {
                    return None;
                }
                conditions.entry(feature).or_default().push(condition);
                directions.insert((feature, missing_left));
            }
        }
        for values in conditions.values_mut() {
            values.sort_by(f32::total_cmp);
            values.dedup_by(|a, b| a == b);
        }
        let most = conditions.values().map(Vec::len).max().unwrap_or(0);
        if most > MAX_THRESHOLDS || directions.len() >= NO_COLUMN as usize {
            return None;
        }
        let steps = usize::BITS - most.leading_zeros();
        let column = |key: (u32, bool)| directions.iter().position(|&d| d == key).map(|c| c as u32);
        let mut layout = Layout { steps, columns: directions.len(), ..Default::default() };
        for (&feature, values) in &conditions {
            let columns =
                column((feature, false)).unwrap_or(NO_COLUMN) | column((feature, true)).unwrap_or(NO_COLUMN) << 16;
            let thresholds = u32::try_from(layout.thresholds.len()).ok()?;
            layout.features.push(BinarisedFeature { feature, thresholds, count: values.len() as u32, columns });
            layout.thresholds.extend(values);
            layout.thresholds.extend(std::iter::repeat_n(f32::INFINITY, (1 << steps) - 1 - values.len()));
        }
        for (tree, &(_, output)) in oblivious.iter().zip(trees) {
            let levels: Vec<LevelSplit> = tree
                .levels
                .iter()
                .map(|&(feature, condition, missing_left)| {
                    let index = conditions[&feature].partition_point(|&c| c < condition) as u32;
                    LevelSplit::new(column((feature, missing_left)).unwrap_or(0), index, missing_left)
                })
                .collect();
            let depth = levels.len() as u32;
            layout.trees.push(BinarisedTree {
                splits: u32::try_from(layout.splits.len()).ok()?,
                levels: depth,
                leaves: u32::try_from(layout.leaf_values.len()).ok()?,
                output,
            });
            layout.splits.extend(levels.chunks(2).map(|pair| [pair[0], pair.get(1).copied().unwrap_or_default()]));
            let slots = 0..1u32 << depth;
            // A slot's bits are the index's reversed, and so the other way round.
            layout.leaf_values.extend(slots.map(|s| tree.leaves[binarised::slot_of_index(s, depth) as usize]));
        }
        Some(layout)
    }
}

/// Trees of a model laid out for the binarised applier, on the device.
pub(super) struct BinarisedTrees {
    features: DeviceBuffer<BinarisedFeature>,
    thresholds: DeviceBuffer<f32>,
    steps: u32,
    trees: DeviceBuffer<BinarisedTree>,
    /// The same table on the host, for launches that take the trees grouped by output.
    table: Vec<BinarisedTree>,
    splits: DeviceBuffer<[LevelSplit; 2]>,
    leaf_values: DeviceBuffer<f32>,
    columns: usize,
}

/// Threads a block of the applier: two rows each.
const THREADS: usize = 128;

impl BinarisedTrees {
    /// The layout of `trees` on `gpu`, or `None` when the applier cannot take them (see
    /// `Layout::of`).
    pub(super) fn upload(gpu: &Gpu, trees: &[(Tree, u32)]) -> Result<Option<Self>> {
        let Some(layout) = Layout::of(trees) else { return Ok(None) };
        Ok(Some(BinarisedTrees {
            features: gpu.upload(&layout.features)?,
            thresholds: gpu.upload(&layout.thresholds)?,
            steps: layout.steps,
            trees: gpu.upload(&layout.trees)?,
            table: layout.trees,
            splits: gpu.upload(&layout.splits)?,
            leaf_values: gpu.upload(&layout.leaf_values)?,
            columns: layout.columns,
        }))
    }

    /// Adds the leaf values of the trees `range` to the margins (`rows * outputs` at `margins`,
    /// every tree's output below `outputs`) of the dense `rows x cols` values at `values`; `false`
    /// (nothing launched) when a block's staged columns would not fit `stage_bytes`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_margins(
        &self,
        gpu: &Gpu,
        (values, rows, cols): (u64, usize, usize),
        range: Range<usize>,
        (margins, outputs): (u64, usize),
        stage_bytes: usize,
    ) -> Result<bool> {
        let fits =
            [THREADS, THREADS / 2, 32].into_iter().find(|&t| binarised::staged_bytes(t, self.columns) <= stage_bytes);
        let Some(threads) = fits else { return Ok(false) };
        let blocks = rows.div_ceil(ROWS_PER_THREAD * threads);
        if blocks > i32::MAX as usize {
            return Err(Error::InvalidData(format!("{rows} rows are too many for one launch")));
        }
        let grouped = grouped_by_output(gpu, &self.table[range.clone()], |tree| tree.output)?;
        let first_tree =
            grouped.as_ref().map_or_else(|| self.trees.as_ptr().wrapping_add(range.start), DeviceBuffer::as_ptr);
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (threads as u32, 1, 1),
            shared_mem_bytes: binarised::staged_bytes(threads, self.columns) as u32,
        };
        let args = entry::boost_predict_binarised::args(
            ptr(values),
            rows as u64,
            cols as u64,
            self.features.as_ptr(),
            self.features.len() as u64,
            self.thresholds.as_ptr(),
            u64::from(self.steps),
            first_tree,
            range.len() as u64,
            self.splits.as_ptr(),
            self.leaf_values.as_ptr(),
            self.columns as u64,
            ptr_mut(margins),
            outputs as u64,
        );
        // SAFETY: `rows * cols` values and `rows * outputs` margins (the caller); the layout's
        // indices lie within its buffers (`Layout::of`), and the staged columns fit.
        unsafe { gpu.launch_kernel(crate::KERNELS, config, args)? };
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use primitives::Schedule;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A full tree whose level `l` splits every node on `levels[l]`, leaf `i` worth `leaves[i]`.
    pub(crate) fn oblivious_tree(levels: &[(u32, f32, bool)], leaves: &[f32]) -> Tree {
        let mut tree = Tree::leaf(0.0, 1.0);
        let mut node = 0;
        for &(feature, condition, missing_left) in levels {
            for _ in 0..(node + 1) {
                tree.split(node, feature, condition, missing_left, 1.0, (0.0, 1.0), (0.0, 1.0));
                node += 1;
            }
        }
        let first_leaf = tree.len() - leaves.len();
        tree.split_conditions[first_leaf..].copy_from_slice(leaves);
        tree
    }

    #[test]
    fn a_layout_shares_conditions_and_columns_and_lays_leaves_by_slot() {
        let a = oblivious_tree(&[(3, 0.5, false), (1, -2.0, true)], &[10.0, 11.0, 12.0, 13.0]);
        let b = oblivious_tree(&[(3, -1.0, false), (3, 0.5, true), (1, -2.0, true)], &[0.0; 8]);
        let layout = Layout::of(&[(a, 0), (b, 1)]).expect("oblivious trees");
        assert_eq!(layout.steps, 2, "at most 2 conditions a feature");
        assert_eq!(layout.thresholds, [-2.0, f32::INFINITY, f32::INFINITY, -1.0, 0.5, f32::INFINITY]);
        // Columns by (feature, missing left): (1, left) 0, (3, right) 1, (3, left) 2.
        assert_eq!(layout.columns, 3);
        assert_eq!(layout.features[0], BinarisedFeature { feature: 1, thresholds: 0, count: 1, columns: NO_COLUMN });
        assert_eq!(layout.features[1], BinarisedFeature { feature: 3, thresholds: 3, count: 2, columns: 1 | 2 << 16 });
        assert_eq!(layout.splits[0], [LevelSplit::new(1, 1, false), LevelSplit::new(0, 0, true)]);
        assert_eq!(layout.splits[2], [LevelSplit::new(0, 0, true), LevelSplit::default()]);
        assert_eq!(layout.trees[1], BinarisedTree { splits: 1, levels: 3, leaves: 4, output: 1 });
        // Slot 1 is level 0 right, level 1 left: index 0b10.
        assert_eq!(layout.leaf_values[..4], [10.0, 12.0, 11.0, 13.0]);
        let (depthwise, mut nan) = (Tree::leaf(1.0, 1.0), oblivious_tree(&[(0, 1.0, false)], &[0.0, 1.0]));
        let mut uneven = depthwise.clone();
        uneven.split(0, 0, 1.0, false, 1.0, (0.0, 1.0), (0.0, 1.0));
        uneven.split(1, 0, 0.0, false, 1.0, (0.0, 1.0), (0.0, 1.0));
        assert_eq!(Layout::of(&[(uneven, 0)]), None, "not oblivious");
        nan.split_conditions[0] = f32::NAN;
        assert_eq!(Layout::of(&[(nan, 0)]), None, "a NaN condition");
        let many: Vec<(Tree, u32)> =
            (0..=MAX_THRESHOLDS).map(|i| (oblivious_tree(&[(0, i as f32, false)], &[0.0, 1.0]), 0)).collect();
        assert_eq!(Layout::of(&many), None, "too many conditions of one feature");
        assert!(Layout::of(&many[1..]).is_some());
        assert!(Layout::of(&[(depthwise, 0)]).is_some_and(|l| l.features.is_empty() && l.leaf_values == [1.0]));
    }

    /// Random oblivious trees (depths 0 to 16, conditions and values from one small set so that
    /// values fall on conditions, -0 and 0 both, both missing directions on one feature, outputs
    /// interleaved) added by the kernel on the emulator give the generic walk's margins bit for
    /// bit: rows of fewer columns than the model, missing values, a last block part full.
    #[test]
    fn the_binarised_applier_adds_the_generic_walks_leaf_values() {
        let gpu = Gpu::emulated(Schedule::Shuffled { seed: 5 });
        let mut rng = SmallRng::seed_from_u64(21);
        let grid = [-2.5f32, -1.0, -0.0, 0.0, 0.25, 1.0, 3.0, 1e30];
        let (model_cols, cols, rows, outputs) = (7u32, 6usize, 1000usize, 3usize);
        let depths = [3usize, 0, 1, 9, 16, 5, 8, 2, 4, 7, 3, 6];
        let trees: Vec<(Tree, u32)> = depths
            .iter()
            .enumerate()
            .map(|(t, &depth)| {
                let levels: Vec<(u32, f32, bool)> = (0..depth)
                    .map(|_| (rng.gen_range(0..model_cols), grid[rng.gen_range(0..grid.len())], rng.gen()))
                    .collect();
                let leaves: Vec<f32> = (0..1 << depth).map(|_| rng.gen_range(-1.0..1.0)).collect();
                (oblivious_tree(&levels, &leaves), (t % outputs) as u32)
            })
            .collect();
        let values: Vec<f32> = (0..rows * cols)
            .map(|_| match rng.gen_range(0..10) {
                0 => f32::NAN,
                1..=5 => grid[rng.gen_range(0..grid.len())],
                _ => rng.gen_range(-3.0..3.0),
            })
            .collect();
        let binarised = BinarisedTrees::upload(&gpu, &trees).unwrap().expect("oblivious trees");
        let initial: Vec<f32> = (0..rows * outputs).map(|i| (i % 5) as f32 * 0.5).collect();
        for range in [0..trees.len(), 3..10] {
            let mut expected = initial.clone();
            for (row, margins) in values.chunks(cols).zip(expected.chunks_mut(outputs)) {
                let mut by_output: Vec<_> = trees[range.clone()].iter().collect();
                by_output.sort_by_key(|(_, output)| *output);
                for (tree, output) in by_output {
                    margins[*output as usize] += tree.predict_row(row);
                }
            }
            let (on_device, margins) = (gpu.upload(&values).unwrap(), gpu.upload(&initial).unwrap());
            let data = (on_device.device_ptr(), rows, cols);
            let launched = binarised.add_margins(&gpu, data, range.clone(), (margins.device_ptr(), outputs), 48 << 10);
            assert!(launched.unwrap(), "the staged columns fit");
            let got = margins.to_vec(&gpu).unwrap();
            let differ = expected.iter().zip(&got).position(|(e, g)| e.to_bits() != g.to_bits());
            assert_eq!(differ, None, "trees {range:?}: margin {differ:?}");
        }
        // Staged columns that fit no block: nothing is launched.
        let none = binarised.add_margins(&gpu, (0, rows, cols), 0..1, (0, outputs), 64);
        assert!(!none.unwrap());
    }
}
