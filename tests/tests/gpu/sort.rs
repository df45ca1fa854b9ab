//! Radix sort and segmented sort against the CPU oracles (bit for bit, so float keys are compared by
//! their bits: `-0.0` and NaN payloads must come out as they went in), on the GPU with `--features
//! gpu`, else on the SIMT emulator (sizes capped).

use primitives::ops::Element;
use primitives::{cpu, DeviceRadixSort, DeviceSegmentedSort, Error, Gpu, SortKey, SortOrder};
use rand::Rng;
use tests::{gpu, random_vec};

/// Largest sort the emulator gets (it runs every GPU thread as a coroutine).
fn cap(gpu: &Gpu) -> usize {
    if gpu.is_emulated() {
        40_000
    } else {
        usize::MAX
    }
}

fn sizes<K: SortKey>(gpu: &Gpu) -> Vec<usize> {
    let tile = DeviceRadixSort::tile_items::<K, u32>();
    let block = DeviceRadixSort::block_sort_items::<K, u32>();
    [0, 1, 2, 31, 33, 257, block, block + 1, tile - 1, tile, tile + 1, 3 * tile + 5, 1 << 20, (1 << 24) + 3]
        .into_iter()
        .filter(|&n| n <= cap(gpu))
        .collect()
}

fn bytes<T: Element>(items: &[T]) -> &[u8] {
    bytemuck::cast_slice(items)
}

/// Input shapes: uniform, many duplicates, all equal, sorted, reverse sorted.
fn shapes<K: SortKey>(
    n: usize,
    seed: u64,
    draw: impl Fn(&mut rand::rngs::SmallRng) -> K + Copy,
) -> Vec<(&'static str, Vec<K>)> {
    let uniform = random_vec(n, seed, draw);
    let few: Vec<K> = random_vec(n, seed + 1, draw).into_iter().take(7).collect();
    let duplicates =
        if few.is_empty() { Vec::new() } else { random_vec(n, seed + 2, |r| few[r.gen_range(0..few.len())]) };
    let equal = vec![uniform.first().copied().unwrap_or_else(K::zeroed); n];
    let sorted = cpu::sort_keys(&uniform, SortOrder::ascending());
    let reversed = cpu::sort_keys(&uniform, SortOrder::descending());
    vec![("uniform", uniform), ("duplicates", duplicates), ("equal", equal), ("sorted", sorted), ("reversed", reversed)]
}

fn check_keys<K: SortKey>(gpu: &Gpu, keys: &[K], order: SortOrder, what: &str) {
    let input = gpu.upload(keys).unwrap();
    let mut output = gpu.alloc_zeroed::<K>(keys.len()).unwrap();
    DeviceRadixSort::sort_keys(gpu, &input, &mut output, order).unwrap();
    let want = cpu::sort_keys(keys, order);
    assert!(
        bytes(&output.to_vec(gpu).unwrap()) == bytes(&want),
        "sort_keys {} {what}, n = {}, {order:?}",
        K::NAME,
        keys.len()
    );
    assert!(bytes(&input.to_vec(gpu).unwrap()) == bytes(keys), "the input must stay as it was");
}

fn check_pairs<K: SortKey, V: Element + PartialEq + std::fmt::Debug>(
    gpu: &Gpu,
    keys: &[K],
    values: &[V],
    order: SortOrder,
    what: &str,
) {
    let n = keys.len();
    let (key_buffer, value_buffer) = (gpu.upload(keys).unwrap(), gpu.upload(values).unwrap());
    let mut sorted_keys = gpu.alloc_zeroed::<K>(n).unwrap();
    let mut sorted_values = gpu.alloc_zeroed::<V>(n).unwrap();
    DeviceRadixSort::sort_pairs(gpu, &key_buffer, &mut sorted_keys, &value_buffer, &mut sorted_values, order).unwrap();
    let (want_keys, want_values) = cpu::sort_pairs(keys, values, order);
    assert!(
        bytes(&sorted_keys.to_vec(gpu).unwrap()) == bytes(&want_keys),
        "sort_pairs keys {} {what}, n = {n}, {order:?}",
        K::NAME
    );
    assert!(
        sorted_values.to_vec(gpu).unwrap() == want_values,
        "sort_pairs values {} {what}, n = {n}, {order:?}",
        K::NAME
    );
}

fn every_shape_and_order<K: SortKey>(gpu: &Gpu, draw: impl Fn(&mut rand::rngs::SmallRng) -> K + Copy) {
    for n in sizes::<K>(gpu) {
        for (what, keys) in shapes(n, n as u64, draw) {
            for order in [SortOrder::ascending(), SortOrder::descending()] {
                check_keys(gpu, &keys, order, what);
                let values: Vec<u32> = (0..n as u32).collect();
                check_pairs(gpu, &keys, &values, order, what);
            }
        }
    }
}

#[test]
fn keys_and_pairs_of_every_key_type() {
    let gpu = gpu();
    every_shape_and_order::<u32>(&gpu, |r| r.gen());
    every_shape_and_order::<i32>(&gpu, |r| r.gen());
    every_shape_and_order::<u64>(&gpu, |r| r.gen());
    every_shape_and_order::<i64>(&gpu, |r| r.gen());
    every_shape_and_order::<f32>(&gpu, |r| r.gen_range(-1e6f32..1e6));
    every_shape_and_order::<f64>(&gpu, |r| r.gen_range(-1e300f64..1e300));
}

/// Floats with NaNs of both signs and payloads, signed zeros and infinities.
fn special_f32(r: &mut rand::rngs::SmallRng) -> f32 {
    match r.gen_range(0..10) {
        0 => f32::from_bits(0x7fc0_0000 | r.gen_range(0..1000)),
        1 => f32::from_bits(0xffc0_0000 | r.gen_range(0..1000)),
        2 => -0.0,
        3 => 0.0,
        4 => f32::INFINITY,
        5 => f32::NEG_INFINITY,
        6 => f32::from_bits(r.gen_range(1..0x0080_0000)), // subnormal
        _ => r.gen_range(-10.0f32..10.0),
    }
}

#[test]
fn nan_and_signed_zeros() {
    let gpu = gpu();
    for n in sizes::<f32>(&gpu) {
        let keys = random_vec(n, 7 + n as u64, special_f32);
        let values: Vec<u32> = (0..n as u32).collect();
        for order in [SortOrder::ascending(), SortOrder::descending()] {
            check_keys(&gpu, &keys, order, "special");
            check_pairs(&gpu, &keys, &values, order, "special");
        }
        let wide: Vec<f64> = keys
            .iter()
            .map(|&k| if k.is_nan() { f64::from_bits((k.to_bits() as u64) << 32) } else { k as f64 })
            .collect();
        check_pairs(&gpu, &wide, &values, SortOrder::ascending(), "special");
    }
}

#[test]
fn partial_bit_ranges() {
    let gpu = gpu();
    let n = 3 * DeviceRadixSort::tile_items::<u64, u32>() + 11;
    let keys32: Vec<u32> = random_vec(n, 3, |r| r.gen());
    let keys64: Vec<u64> = random_vec(n, 4, |r| r.gen());
    let values: Vec<u32> = (0..n as u32).collect();
    for (begin, end) in [(0, 0), (0, 1), (0, 3), (4, 12), (5, 13), (16, 32), (31, 32)] {
        for order in [SortOrder::ascending(), SortOrder::descending()] {
            check_pairs(&gpu, &keys32, &values, order.bits(begin, end), "bits");
            check_pairs(&gpu, &keys32[..100], &values[..100], order.bits(begin, end), "bits");
        }
    }
    for (begin, end) in [(0, 8), (20, 50), (40, 64), (63, 64)] {
        check_pairs(&gpu, &keys64, &values, SortOrder::ascending().bits(begin, end), "bits");
    }
}

/// A value of an odd size (gathered by index after the sort).
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Triple([u32; 3]);

#[test]
fn values_of_every_size() {
    let gpu = gpu();
    let tile = DeviceRadixSort::tile_items::<u32, u64>();
    for n in [0, 5, tile + 7, 5 * tile + 1] {
        let keys: Vec<u32> = random_vec(n, 11, |r| r.gen_range(0..1000));
        let v8: Vec<u64> = random_vec(n, 12, |r| r.gen());
        let v16: Vec<[u32; 4]> = random_vec(n, 13, |r| r.gen());
        let v12: Vec<Triple> = random_vec(n, 14, |r| Triple(r.gen()));
        let v2: Vec<u16> = random_vec(n, 15, |r| r.gen());
        let v1: Vec<u8> = random_vec(n, 16, |r| r.gen());
        for order in [SortOrder::ascending(), SortOrder::descending()] {
            check_pairs(&gpu, &keys, &v8, order, "u64 values");
            check_pairs(&gpu, &keys, &v16, order, "16-byte values");
            check_pairs(&gpu, &keys, &v12, order, "12-byte values");
            check_pairs(&gpu, &keys, &v2, order, "u16 values");
            check_pairs(&gpu, &keys, &v1, order, "u8 values");
            let keys64: Vec<f64> = keys.iter().map(|&k| k as f64 - 500.0).collect();
            check_pairs(&gpu, &keys64, &v16, order, "f64 keys, 16-byte values");
        }
    }
}

fn check_segmented<K: SortKey>(gpu: &Gpu, keys: &[K], offsets: &[u32], order: SortOrder, what: &str) {
    let n = keys.len();
    let values: Vec<u32> = (0..n as u32).collect();
    let (key_buffer, value_buffer, offset_buffer) =
        (gpu.upload(keys).unwrap(), gpu.upload(&values).unwrap(), gpu.upload(offsets).unwrap());
    // Items outside the segments keep what the outputs held before.
    let mut sorted_keys = gpu.upload(keys).unwrap();
    let mut sorted_values = gpu.upload(&values).unwrap();
    DeviceSegmentedSort::sort_pairs(
        gpu,
        &key_buffer,
        &mut sorted_keys,
        &value_buffer,
        &mut sorted_values,
        &offset_buffer,
        order,
    )
    .unwrap();
    let (want_keys, want_values) = cpu::segmented_sort_pairs(keys, &values, offsets, order);
    assert!(bytes(&sorted_keys.to_vec(gpu).unwrap()) == bytes(&want_keys), "segmented keys {what}, n = {n}, {order:?}");
    assert!(sorted_values.to_vec(gpu).unwrap() == want_values, "segmented values {what}, n = {n}, {order:?}");

    let (mut host_keys, mut host_values) = (gpu.upload(keys).unwrap(), gpu.upload(&values).unwrap());
    DeviceSegmentedSort::sort_pairs_host_offsets(
        gpu,
        &key_buffer,
        &mut host_keys,
        &value_buffer,
        &mut host_values,
        offsets,
        order,
    )
    .unwrap();
    assert!(bytes(&host_keys.to_vec(gpu).unwrap()) == bytes(&want_keys), "host offsets' keys {what}, n = {n}");
    assert!(host_values.to_vec(gpu).unwrap() == want_values, "host offsets' values {what}, n = {n}");

    let mut only_keys = gpu.upload(keys).unwrap();
    DeviceSegmentedSort::sort_keys(gpu, &key_buffer, &mut only_keys, &offset_buffer, order).unwrap();
    assert!(bytes(&only_keys.to_vec(gpu).unwrap()) == bytes(&want_keys), "segmented keys only {what}, n = {n}");
}

/// CSR offsets of segments with lengths drawn by `len`, up to `n` items.
fn layout(n: usize, seed: u64, mut len: impl FnMut(&mut rand::rngs::SmallRng) -> usize) -> Vec<u32> {
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed);
    let mut offsets = vec![0u32];
    let mut at = 0;
    while at < n {
        at = (at + len(&mut rng)).min(n);
        offsets.push(at as u32);
    }
    offsets
}

#[test]
fn segmented_sorts_of_mixed_layouts() {
    let gpu = gpu();
    let tile = DeviceRadixSort::block_sort_items::<u32, u32>();
    let n = if gpu.is_emulated() { 12_000 } else { 1 << 22 };
    let keys: Vec<u32> = random_vec(n, 21, |r| r.gen());
    let floats: Vec<f32> = random_vec(n, 22, special_f32);
    let layouts = [
        // Thousands of segments of at most 4 items; on the emulator over the first sixth of the
        // items (the rest outside every segment), as its warps a segment took 12 s a sort.
        ("tiny", layout(if gpu.is_emulated() { n / 6 } else { n }, 1, |r| r.gen_range(0..5))),
        ("small", layout(n, 2, |r| r.gen_range(0..300))),
        ("around a tile", layout(n, 3, |r| r.gen_range(tile - 3..tile + 3))),
        ("mixed", layout(n, 4, |r| if r.gen_bool(0.02) { r.gen_range(tile..6 * tile) } else { r.gen_range(0..40) })),
        ("one huge among tiny", {
            let mut o: Vec<u32> = (0..=50).collect();
            o.push(n as u32 - 50);
            o.extend((n as u32 - 49)..=n as u32);
            o
        }),
        ("one segment", vec![0, n as u32]),
        ("empty ones and a gap", vec![0, 0, 10, 10, 10, 500, (n / 2) as u32, (n / 2) as u32]),
        ("no segment", vec![0]),
    ];
    for (what, offsets) in &layouts {
        for order in [SortOrder::ascending(), SortOrder::descending(), SortOrder::ascending().bits(3, 11)] {
            check_segmented(&gpu, &keys, offsets, order, what);
        }
        check_segmented(&gpu, &floats, offsets, SortOrder::ascending(), what);
    }
}

/// The exact tree method's case: rows of each feature segment (already in feature-value order)
/// stably re-sorted by their node id, a few low bits, keeping the value order within each node.
#[test]
fn stable_sort_by_node_inside_feature_segments() {
    let gpu = gpu();
    let (features, rows) = if gpu.is_emulated() { (3, 5000) } else { (28, 200_000) };
    let n = features * rows;
    let nodes: Vec<u32> = random_vec(n, 31, |r| r.gen_range(0..6));
    let positions: Vec<u32> = (0..n as u32).collect();
    let offsets: Vec<u32> = (0..=features).map(|f| (f * rows) as u32).collect();
    let (key_buffer, value_buffer, offset_buffer) =
        (gpu.upload(&nodes).unwrap(), gpu.upload(&positions).unwrap(), gpu.upload(&offsets).unwrap());
    let mut sorted_nodes = gpu.alloc_zeroed::<u32>(n).unwrap();
    let mut sorted_positions = gpu.alloc_zeroed::<u32>(n).unwrap();
    let order = SortOrder::ascending().bits(0, 3);
    DeviceSegmentedSort::sort_pairs(
        &gpu,
        &key_buffer,
        &mut sorted_nodes,
        &value_buffer,
        &mut sorted_positions,
        &offset_buffer,
        order,
    )
    .unwrap();
    let (sorted_nodes, sorted_positions) = (sorted_nodes.to_vec(&gpu).unwrap(), sorted_positions.to_vec(&gpu).unwrap());
    for f in 0..features {
        let range = f * rows..(f + 1) * rows;
        for i in range.start + 1..range.end {
            let (a, b) = (i - 1, i);
            assert!(sorted_nodes[a] <= sorted_nodes[b], "feature {f}: nodes out of order at {b}");
            if sorted_nodes[a] == sorted_nodes[b] {
                assert!(sorted_positions[a] < sorted_positions[b], "feature {f}: previous order lost at {b}");
            }
            assert!(range.contains(&(sorted_positions[b] as usize)), "feature {f}: a row left its segment");
        }
    }
    let want = cpu::segmented_sort_pairs(&nodes, &positions, &offsets, order);
    assert_eq!((sorted_nodes, sorted_positions), want);
}

#[test]
fn bad_arguments_are_typed_errors() {
    let gpu = gpu();
    let keys = gpu.upload(&[3u32, 1, 2]).unwrap();
    let mut out = gpu.alloc_zeroed::<u32>(3).unwrap();
    let short = gpu.alloc_zeroed::<u32>(2).unwrap();
    let mut short_out = gpu.alloc_zeroed::<u32>(2).unwrap();
    let invalid = |r: Result<(), Error>| matches!(r, Err(Error::InvalidArgument { .. }));
    assert!(invalid(DeviceRadixSort::sort_keys(&gpu, &keys, &mut out, SortOrder::ascending().bits(0, 33))));
    assert!(invalid(DeviceRadixSort::sort_keys(&gpu, &keys, &mut out, SortOrder::ascending().bits(9, 4))));
    assert!(invalid(DeviceRadixSort::sort_keys(&gpu, &keys, &mut short_out, SortOrder::ascending())));
    assert!(invalid(DeviceRadixSort::sort_pairs(
        &gpu,
        &keys,
        &mut out,
        &short,
        &mut short_out,
        SortOrder::ascending()
    )));
    for offsets in [vec![], vec![0, 2, 1], vec![0, 4], vec![1, 0, 3]] {
        let offsets = gpu.upload(&offsets).unwrap();
        assert!(invalid(DeviceSegmentedSort::sort_keys(&gpu, &keys, &mut out, &offsets, SortOrder::ascending())));
    }
}

/// Run after run, the same bits (the look-back order varies on a GPU; the result must not).
#[test]
fn repeated_sorts_are_identical() {
    let gpu = gpu();
    let n = if gpu.is_emulated() { 20_000 } else { 1 << 24 };
    let keys: Vec<u32> = random_vec(n, 41, |r| r.gen_range(0..1 << 20));
    let values: Vec<u32> = (0..n as u32).collect();
    let (key_buffer, value_buffer) = (gpu.upload(&keys).unwrap(), gpu.upload(&values).unwrap());
    let mut first = None;
    for _ in 0..3 {
        let mut sorted_keys = gpu.alloc_zeroed::<u32>(n).unwrap();
        let mut sorted_values = gpu.alloc_zeroed::<u32>(n).unwrap();
        DeviceRadixSort::sort_pairs(
            &gpu,
            &key_buffer,
            &mut sorted_keys,
            &value_buffer,
            &mut sorted_values,
            SortOrder::ascending(),
        )
        .unwrap();
        let result = (sorted_keys.to_vec(&gpu).unwrap(), sorted_values.to_vec(&gpu).unwrap());
        match &first {
            None => {
                assert_eq!(result, cpu::sort_pairs(&keys, &values, SortOrder::ascending()));
                first = Some(result);
            }
            Some(first) => assert!(*first == result),
        }
    }
}
