//! The SIMT emulator's own tests: CUDA-documented results of warp collectives with partial masks,
//! atomics from many blocks, a planted missing barrier found by the shuffled schedule, and each of the
//! checks a GPU would not give.
// Safety of every `unsafe` here: pointers are emulator allocations sized for their launch, and the
// emulator checks each access (reporting a fault rather than touching memory outside them).
#![allow(clippy::undocumented_unsafe_blocks)]

use primitives_kernels::emu::{DeviceMemory, Emulator, EmulatorError, Fault, LaunchConfig, Schedule};
use primitives_kernels::ops::{AssociativeOp, Sum};
use primitives_kernels::{arch, block, kernel, warp};

fn config(grid_dim: u32, block_dim: u32, shared_mem_bytes: u32) -> LaunchConfig {
    LaunchConfig { grid_dim, block_dim, shared_mem_bytes }
}

fn read_u32(memory: &DeviceMemory, len: usize) -> Vec<u32> {
    let mut out = vec![0u32; len];
    memory.read_bytes(bytemuck::cast_slice_mut(&mut out));
    out
}

fn u32_buffer(device: &Emulator, values: &[u32]) -> DeviceMemory {
    let mut memory = device.alloc(values.len() * 4);
    memory.write_bytes(bytemuck::cast_slice(values));
    memory
}

kernel! {
    /// Lanes in `mask` record shfl down/up/xor/idx and vote results; 7 words per lane.
    pub unsafe fn warp_collectives(mask: u32, out: *mut u32) {
        let lane = arch::lane_id();
        if mask & (1 << lane) == 0 {
            return;
        }
        let value = 100 + lane;
        let results = [
            arch::shfl_down_sync_u32(mask, value, 1),
            arch::shfl_up_sync_u32(mask, value, 2),
            arch::shfl_xor_sync_u32(mask, value, 1),
            arch::shfl_idx_sync_u32(mask, value, 3),
            arch::ballot_sync(mask, lane.is_multiple_of(3)),
            arch::vote_all_sync(mask, lane < 16) as u32,
            arch::vote_any_sync(mask, lane == 5) as u32,
        ];
        for (k, r) in results.into_iter().enumerate() {
            unsafe { arch::store(out.add(lane as usize * 7 + k), r) };
        }
    }
}

fn run_collectives(mask: u32) -> Vec<u32> {
    let device = Emulator::new(Schedule::Shuffled { seed: 3 });
    let out = u32_buffer(&device, &[0; 32 * 7]);
    let o = out.address();
    device.launch("warp_collectives", config(1, 32, 0), &|| unsafe { warp_collectives(mask, o as *mut u32) }).unwrap();
    read_u32(&out, 32 * 7)
}

#[test]
fn collectives_with_a_full_mask() {
    let r = run_collectives(u32::MAX);
    let ballot = (0..32).filter(|l| l % 3 == 0).fold(0u32, |b, l| b | 1 << l);
    for lane in 0..32u32 {
        let row = &r[lane as usize * 7..][..7];
        let own = 100 + lane;
        assert_eq!(row[0], if lane + 1 < 32 { own + 1 } else { own }, "down, lane {lane}");
        assert_eq!(row[1], if lane >= 2 { own - 2 } else { own }, "up, lane {lane}");
        assert_eq!(row[2], 100 + (lane ^ 1), "xor, lane {lane}");
        assert_eq!(row[3], 103, "idx, lane {lane}");
        assert_eq!(row[4], ballot, "ballot, lane {lane}");
        assert_eq!(row[5], 0, "all (lanes >= 16 say no), lane {lane}");
        assert_eq!(row[6], 1, "any (lane 5 says yes), lane {lane}");
    }
}

#[test]
fn collectives_with_a_partial_mask() {
    // Lanes 0..16 only: votes and ballots see those lanes alone; a shuffle whose source lane is
    // outside the mask reads an undefined value (the emulator's 0xdeadbeef), inside it the source.
    let mask = 0x0000_ffff;
    let r = run_collectives(mask);
    let ballot = (0..16).filter(|l| l % 3 == 0).fold(0u32, |b, l| b | 1 << l);
    for lane in 0..16u32 {
        let row = &r[lane as usize * 7..][..7];
        let own = 100 + lane;
        assert_eq!(row[0], if lane + 1 < 16 { own + 1 } else { 0xdead_beef }, "down, lane {lane}");
        assert_eq!(row[1], if lane >= 2 { own - 2 } else { own }, "up, lane {lane}");
        assert_eq!(row[2], 100 + (lane ^ 1), "xor, lane {lane}");
        assert_eq!(row[4], ballot, "ballot, lane {lane}");
        assert_eq!(row[5], 1, "all lanes of the mask are < 16, lane {lane}");
        assert_eq!(row[6], 1, "any, lane {lane}");
    }
    assert!(r[16 * 7..].iter().all(|&x| x == 0), "lanes outside the mask wrote nothing");
}

kernel! {
    pub unsafe fn atomic_sum(counter: *mut u32, total: *mut u64) {
        let id = arch::block_idx_x() * arch::block_dim_x() + arch::thread_idx_x();
        unsafe {
            arch::atomic_add_u32_gpu(counter, 1);
            arch::atomic_add_u64_gpu(total, id as u64 + 1);
        }
    }
}

#[test]
fn atomics_from_many_blocks_sum_correctly() {
    for schedule in [Schedule::Deterministic, Schedule::Shuffled { seed: 11 }] {
        let device = Emulator::new(schedule);
        let counter = device.alloc(4);
        let total = device.alloc(8);
        let (c, t) = (counter.address(), total.address());
        device
            .launch("atomic_sum", config(64, 96, 0), &|| unsafe { atomic_sum(c as *mut u32, t as *mut u64) })
            .unwrap();
        let threads = 64 * 96u64;
        assert_eq!(read_u32(&counter, 1)[0] as u64, threads);
        let mut sum = [0u64];
        total.read_bytes(bytemuck::cast_slice_mut(&mut sum));
        assert_eq!(sum[0], threads * (threads + 1) / 2);
    }
}

kernel! {
    /// Thread 0 publishes a value through shared memory; everyone copies it out. With `barrier` false
    /// the barrier between the write and the reads is missing.
    pub unsafe fn broadcast(barrier: u32, out: *mut u32) {
        let shared = arch::dynamic_shared_memory().cast::<u32>();
        let tid = arch::thread_idx_x();
        // Give every thread a scheduling point first, as real kernels have (a warp reduce, say).
        arch::sync_warp(arch::active_mask());
        if tid == 0 {
            unsafe { arch::store(shared, 42 + arch::block_idx_x()) };
        }
        if barrier != 0 {
            arch::sync_threads();
        }
        let value = unsafe { arch::load(shared) };
        unsafe { arch::store(out.add((arch::block_idx_x() * arch::block_dim_x() + tid) as usize), value) };
    }
}

fn broadcast_ok(schedule: Schedule, barrier: bool) -> bool {
    let device = Emulator::new(schedule);
    let out = device.alloc(4 * 4 * 64);
    let o = out.address();
    device.launch("broadcast", config(4, 64, 4), &|| unsafe { broadcast(barrier as u32, o as *mut u32) }).unwrap();
    let values = read_u32(&out, 4 * 64);
    values.iter().enumerate().all(|(i, &v)| v == 42 + i as u32 / 64)
}

#[test]
fn shuffled_schedule_finds_a_missing_barrier() {
    // In index order thread 0 writes before anyone reads, so the bug hides.
    assert!(broadcast_ok(Schedule::Deterministic, false));
    // A shuffled order exposes it at once, whatever the seed.
    for seed in 0..5 {
        assert!(!broadcast_ok(Schedule::Shuffled { seed }, false), "seed {seed} missed the race");
    }
    // With the barrier every schedule is right.
    for seed in 0..5 {
        assert!(broadcast_ok(Schedule::Shuffled { seed }, true), "seed {seed}");
    }
}

fn fault_of(result: Result<(), EmulatorError>) -> EmulatorError {
    result.expect_err("the launch should have faulted")
}

kernel! {
    pub unsafe fn early_exit_before_barrier() {
        if arch::thread_idx_x() == 5 {
            return;
        }
        arch::sync_threads();
    }
}

#[test]
fn barrier_not_reached_by_every_thread() {
    let device = Emulator::default();
    let error = fault_of(device.launch("early_exit", config(2, 64, 0), &|| unsafe { early_exit_before_barrier() }));
    assert_eq!(error.kernel, "early_exit");
    assert_eq!(error.block, 0);
    match &error.fault {
        Fault::BarrierNotReached { exited_thread, location, .. } => {
            assert_eq!(*exited_thread, 5);
            assert!(location.contains("emulator.rs"), "{location}");
        }
        other => panic!("wrong fault {other:?}"),
    }
    assert!(error.to_string().contains("kernel `early_exit`, block 0"), "{error}");
}

kernel! {
    /// Two call sites of the same barrier instruction: a bug that the branch structure hides.
    #[allow(clippy::if_same_then_else)]
    pub unsafe fn divergent_barriers() {
        if arch::thread_idx_x() < 32 {
            arch::sync_threads();
        } else {
            arch::sync_threads();
        }
    }
}

#[test]
fn barriers_at_different_call_sites() {
    let error =
        fault_of(Emulator::default().launch("divergent", config(1, 64, 0), &|| unsafe { divergent_barriers() }));
    assert!(matches!(error.fault, Fault::DivergentBarriers { .. }), "{error}");
}

kernel! {
    /// Lane 7 leaves, the others shuffle with a full mask.
    pub unsafe fn shuffle_with_exited_lane() {
        if arch::lane_id() == 7 {
            return;
        }
        arch::shfl_down_sync_u32(arch::FULL_MASK, 1, 1);
    }
}

kernel! {
    pub unsafe fn shuffle_mask_without_self() {
        arch::shfl_idx_sync_u32(0x1, 1, 0);
    }
}

#[test]
fn warp_collective_with_lanes_missing_from_its_mask() {
    let device = Emulator::default();
    let error = fault_of(device.launch("exited_lane", config(1, 32, 0), &|| unsafe { shuffle_with_exited_lane() }));
    match &error.fault {
        Fault::CollectiveMissingLane { lane, mask, .. } => {
            assert_eq!((*lane, *mask), (7, u32::MAX))
        }
        other => panic!("wrong fault {other:?}"),
    }
    // A full mask in a block of 20 threads names lanes that do not exist.
    let error = fault_of(device.launch("partial_warp", config(1, 20, 0), &|| unsafe { shuffle_with_exited_lane() }));
    assert!(matches!(error.fault, Fault::CollectiveMissingLane { .. }), "{error}");
    let error = fault_of(device.launch("not_in_mask", config(1, 32, 0), &|| unsafe { shuffle_mask_without_self() }));
    assert!(matches!(error.fault, Fault::LaneNotInMask { lane: 1, .. }), "{error}");
    assert_eq!(error.thread, Some(1));
}

kernel! {
    pub unsafe fn shared_overrun(words: u32) {
        let shared = arch::dynamic_shared_memory().cast::<u32>();
        unsafe { arch::store(shared.add((words + arch::thread_idx_x()) as usize), 1) };
    }
}

kernel! {
    pub unsafe fn global_overrun(buffer: *mut u32, len: u32) {
        unsafe { arch::store(buffer.add((len + arch::thread_idx_x()) as usize), 1) };
    }
}

kernel! {
    pub unsafe fn traps() {
        if arch::block_idx_x() == 2 && arch::thread_idx_x() == 3 {
            arch::trap();
        }
    }
}

#[test]
fn out_of_bounds_accesses_and_traps_are_reported() {
    let device = Emulator::default();
    let error = fault_of(device.launch("shared_overrun", config(1, 32, 64), &|| unsafe { shared_overrun(16) }));
    assert_eq!(error.fault, Fault::SharedOutOfBounds { offset: 64, size: 4, dynamic_size: 64 });
    assert_eq!(error.thread, Some(0));

    let buffer = device.alloc(40);
    let b = buffer.address();
    let error =
        fault_of(device.launch("global_overrun", config(1, 32, 0), &|| unsafe { global_overrun(b as *mut u32, 10) }));
    assert!(matches!(error.fault, Fault::GlobalOutOfBounds { size: 4, .. }), "{error}");
    assert!(error.to_string().contains("outside every device allocation"), "{error}");

    let error = fault_of(device.launch("traps", config(4, 32, 0), &|| unsafe { traps() }));
    assert_eq!((error.block, error.thread, error.fault), (2, Some(3), Fault::Trap));
}

#[test]
fn intrinsics_outside_a_launch_panic_with_a_clear_message() {
    let message = std::panic::catch_unwind(arch::thread_idx_x).unwrap_err();
    let text =
        message.downcast_ref::<&str>().copied().map(String::from).or_else(|| message.downcast_ref::<String>().cloned());
    assert!(text.unwrap().contains("outside a kernel"));
}

kernel! {
    /// Each block reduces `values[block * block_dim ..][..block_dim]` with warp and block reduce.
    pub unsafe fn block_sums(values: *const u32, block_out: *mut u32, warp_out: *mut u32) {
        let storage = block::BlockReduce::<u32>::from_allocator(&mut block::DynamicShared::new());
        let index = (arch::block_idx_x() * arch::block_dim_x() + arch::thread_idx_x()) as usize;
        let value = unsafe { arch::load(values.add(index)) };
        let total = storage.reduce::<Sum>(value);
        if arch::thread_idx_x() == 0 {
            unsafe { arch::store(block_out.add(arch::block_idx_x() as usize), total) };
        }
        // Full warps only: the all-reduce gives every lane the warp's total.
        let warp_lanes = (arch::block_dim_x() - arch::warp_idx() * 32).min(32);
        let warp_total = if warp_lanes == 32 { warp::warp_all_reduce::<u32, Sum>(value) } else { 0 };
        unsafe { arch::store(warp_out.add(index), warp_total) };
    }
}

#[test]
fn block_and_warp_reduce_for_any_block_size() {
    for (i, threads) in [1u32, 2, 31, 32, 33, 64, 100, 255, 256, 1000, 1024].into_iter().enumerate() {
        let device = Emulator::new(Schedule::Shuffled { seed: i as u64 });
        let grid = 3;
        let values: Vec<u32> = (0..grid * threads).map(|x| x * 7 + 1).collect();
        let input = u32_buffer(&device, &values);
        let blocks = device.alloc(4 * grid as usize);
        let warps = device.alloc(4 * values.len());
        let (v, b, w) = (input.address(), blocks.address(), warps.address());
        let shared = block::BlockReduce::<u32>::SHARED_BYTES as u32;
        device
            .launch("block_sums", config(grid, threads, shared), &|| unsafe {
                block_sums(v as *const u32, b as *mut u32, w as *mut u32)
            })
            .unwrap_or_else(|e| panic!("{threads} threads: {e}"));
        let got = read_u32(&blocks, grid as usize);
        let warp_got = read_u32(&warps, values.len());
        for (block, chunk) in values.chunks(threads as usize).enumerate() {
            assert_eq!(
                got[block],
                chunk.iter().fold(0, |a, &x| Sum::combine(a, x)),
                "{threads} threads, block {block}"
            );
            for (w, lanes) in chunk.chunks(32).enumerate() {
                let expected = if lanes.len() == 32 { lanes.iter().sum::<u32>() } else { 0 };
                let start = block * threads as usize + w * 32;
                assert!(
                    warp_got[start..start + lanes.len()].iter().all(|&x| x == expected),
                    "{threads} threads, warp {w}"
                );
            }
        }
    }
}

/// Composition of affine maps `x -> m x + c` over wrapping `u32`: `combine(f, g)` applies `f`, then
/// `g`. Associative, not commutative, exact: any reordering of operands shows in the result.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Affine {
    m: u32,
    c: u32,
}

#[derive(Clone, Copy, Default)]
struct Compose;

impl AssociativeOp<Affine> for Compose {
    fn identity() -> Affine {
        Affine { m: 1, c: 0 }
    }
    fn combine(f: Affine, g: Affine) -> Affine {
        Affine { m: f.m.wrapping_mul(g.m), c: f.c.wrapping_mul(g.m).wrapping_add(g.c) }
    }
}

fn affine(i: u32) -> Affine {
    // Odd multipliers (invertible mod 2^32) and distinct offsets: no two orders agree by chance.
    Affine { m: i.wrapping_mul(0x9e37_79b9) | 1, c: i.wrapping_mul(0x85eb_ca6b).wrapping_add(17) }
}

kernel! {
    /// Each block reduces its items with block reduce; each warp (partial ones too) with warp reduce.
    pub unsafe fn affine_reduce(values: *const Affine, block_out: *mut Affine, warp_out: *mut Affine) {
        let storage = block::BlockReduce::<Affine>::from_allocator(&mut block::DynamicShared::new());
        let index = (arch::block_idx_x() * arch::block_dim_x() + arch::thread_idx_x()) as usize;
        let value = unsafe { arch::load(values.add(index)) };
        let total = storage.reduce::<Compose>(value);
        if arch::thread_idx_x() == 0 {
            unsafe { arch::store(block_out.add(arch::block_idx_x() as usize), total) };
        }
        let warp_lanes = (arch::block_dim_x() - arch::warp_idx() * 32).min(32);
        let warp_total = if warp_lanes == 32 {
            warp::warp_reduce::<Affine, Compose>(value)
        } else {
            warp::warp_reduce_partial::<Affine, Compose>(value, warp_lanes)
        };
        if arch::lane_id() == 0 {
            let slot = arch::block_idx_x() * arch::block_dim_x().div_ceil(32) + arch::warp_idx();
            unsafe { arch::store(warp_out.add(slot as usize), warp_total) };
        }
    }
}

#[test]
fn warp_and_block_reduce_keep_operand_order() {
    let fold = |items: &[Affine]| items.iter().fold(Compose::identity(), |a, &b| Compose::combine(a, b));
    for threads in [1u32, 2, 5, 31, 32, 33, 64, 100, 256, 1000, 1024] {
        let device = Emulator::new(Schedule::Shuffled { seed: threads as u64 });
        let grid = 2u32;
        let values: Vec<Affine> = (0..grid * threads).map(affine).collect();
        let mut input = device.alloc(values.len() * 8);
        input.write_bytes(bytemuck::cast_slice(&values));
        let warps_per_block = threads.div_ceil(32) as usize;
        let blocks = device.alloc(8 * grid as usize);
        let warps = device.alloc(8 * warps_per_block * grid as usize);
        let (v, b, w) = (input.address(), blocks.address(), warps.address());
        device
            .launch(
                "affine_reduce",
                config(grid, threads, block::BlockReduce::<Affine>::SHARED_BYTES as u32),
                &|| unsafe { affine_reduce(v as *const Affine, b as *mut Affine, w as *mut Affine) },
            )
            .unwrap_or_else(|e| panic!("{threads} threads: {e}"));
        let mut got = vec![Affine::default(); grid as usize];
        blocks.read_bytes(bytemuck::cast_slice_mut(&mut got));
        let mut warp_got = vec![Affine::default(); warps_per_block * grid as usize];
        warps.read_bytes(bytemuck::cast_slice_mut(&mut warp_got));
        for (block, chunk) in values.chunks(threads as usize).enumerate() {
            assert_eq!(got[block], fold(chunk), "{threads} threads, block {block}");
            for (w, lanes) in chunk.chunks(32).enumerate() {
                let slot = block * warps_per_block + w;
                assert_eq!(warp_got[slot], fold(lanes), "{threads} threads, block {block}, warp {w}");
            }
        }
    }
}

mod look_back {
    use super::*;
    use primitives_kernels::device::tile_status::{
        look_back, LookBackStats, PackedTileStatus, SplitTileStatus, TileStatus,
    };

    kernel! {
        /// Publishes tile states as given (0 = nothing, 1 = aggregate, 2 = inclusive, value = tile + 1
        /// for an aggregate and `inclusive_values[tile]` for an inclusive prefix), then one warp looks
        /// back from tile `tile` with seed 1000 and writes the prefix to `out`, under both layouts.
        pub unsafe fn look_back_probe(states: *const u32, inclusive_values: *const u32, tiles: u32, tile: u32, packed: *mut u8, split: *mut u8, out: *mut u32) {
            let packed_status = unsafe { PackedTileStatus::<u32>::new(packed, 7) };
            let split_status = unsafe { SplitTileStatus::<u32>::new(split, tiles as usize, 7) };
            if arch::thread_idx_x() == 0 {
                for t in 0..tiles {
                    match unsafe { arch::load(states.add(t as usize)) } {
                        1 => unsafe {
                            packed_status.publish_aggregate(t, t + 1);
                            split_status.publish_aggregate(t, t + 1);
                        },
                        2 => unsafe {
                            let v = arch::load(inclusive_values.add(t as usize));
                            packed_status.publish_inclusive(t, v);
                            split_status.publish_inclusive(t, v);
                        },
                        _ => {}
                    }
                }
            }
            arch::sync_warp(arch::FULL_MASK);
            let a = unsafe { look_back::<u32, Sum, _, 1>(&packed_status, tile, 1000, &mut LookBackStats::default()) };
            let b = unsafe { look_back::<u32, Sum, _, 1>(&split_status, tile, 1000, &mut LookBackStats::default()) };
            if arch::lane_id() == 0 {
                unsafe {
                    arch::store(out, a);
                    arch::store(out.add(1), b);
                }
            }
        }
    }

    fn probe(states: &[u32], inclusive: &[u32], tile: u32) -> [u32; 2] {
        let device = Emulator::default();
        let tiles = states.len() as u32;
        let s = u32_buffer(&device, states);
        let v = u32_buffer(&device, inclusive);
        let packed = device.alloc(<PackedTileStatus<u32> as TileStatus<u32>>::bytes(tiles as usize));
        let split = device.alloc(<SplitTileStatus<u32> as TileStatus<u32>>::bytes(tiles as usize));
        let out = device.alloc(8);
        let (sp, vp, pp, xp, op) = (s.address(), v.address(), packed.address(), split.address(), out.address());
        device
            .launch("look_back_probe", config(1, 32, 0), &|| unsafe {
                look_back_probe(
                    sp as *const u32,
                    vp as *const u32,
                    tiles,
                    tile,
                    pp as *mut u8,
                    xp as *mut u8,
                    op as *mut u32,
                )
            })
            .unwrap();
        let got = read_u32(&out, 2);
        [got[0], got[1]]
    }

    #[test]
    fn stops_at_the_nearest_inclusive_prefix_across_windows() {
        // 600 tiles; only aggregates except an inclusive prefix at tile 37 (value 5): the look-back
        // from tile 600 must walk back over several 128-tile windows and stop there.
        let tiles = 601;
        let mut states = vec![1u32; tiles];
        let mut inclusive = vec![0u32; tiles];
        states[37] = 2;
        inclusive[37] = 5;
        let want = 5 + (38..600).map(|t| t + 1).sum::<u32>();
        assert_eq!(probe(&states, &inclusive, 600), [want, want]);
        // A nearer inclusive prefix wins over a farther one.
        states[590] = 2;
        inclusive[590] = 9;
        let want = 9 + (591..600).map(|t| t + 1).sum::<u32>();
        assert_eq!(probe(&states, &inclusive, 600), [want, want]);
        // No inclusive prefix anywhere: down to the seed before tile 0.
        let states = vec![1u32; 300];
        let want = 1000 + (0..299).map(|t| t + 1).sum::<u32>();
        assert_eq!(probe(&states, &vec![0; 300], 299), [want, want]);
    }
}

mod look_back_order {
    use super::*;
    use primitives_kernels::device::segmented_scan::{Headed, Segmented};
    use primitives_kernels::device::tile_status::{
        look_back, LookBackStats, PackedTileStatus, SplitTileStatus, TileStatus,
    };
    use rand::{Rng, SeedableRng};

    kernel! {
        /// Publishes aggregates `Headed(values[t], heads[t])` for every tile below `tile` and an
        /// inclusive prefix `Headed(inclusive_value, head)` for tile `inclusive_tile`, then one warp
        /// looks back from `tile` with the non-commutative segmented operator, under both layouts.
        pub unsafe fn segmented_probe(values: *const u64, heads: *const u32, tile: u32, inclusive_tile: u32, inclusive_value: u64, packed: *mut u8, split: *mut u8, out: *mut Headed<u64>) {
            let packed_status = unsafe { PackedTileStatus::<Headed<u64>>::new(packed, 3) };
            let split_status = unsafe { SplitTileStatus::<Headed<u64>>::new(split, tile as usize + 1, 3) };
            if arch::thread_idx_x() == 0 {
                for t in 0..tile {
                    let item = Headed::new(unsafe { arch::load(values.add(t as usize)) }, unsafe { arch::load(heads.add(t as usize)) } != 0);
                    if t == inclusive_tile {
                        let inclusive = Headed::new(inclusive_value, true);
                        unsafe { packed_status.publish_inclusive(t, inclusive) };
                        unsafe { split_status.publish_inclusive(t, inclusive) };
                    } else {
                        unsafe { packed_status.publish_aggregate(t, item) };
                        unsafe { split_status.publish_aggregate(t, item) };
                    }
                }
            }
            arch::sync_warp(arch::FULL_MASK);
            let seed = Segmented::<Sum>::identity();
            let a = unsafe { look_back::<Headed<u64>, Segmented<Sum>, _, 1>(&packed_status, tile, seed, &mut LookBackStats::default()) };
            let b = unsafe { look_back::<Headed<u64>, Segmented<Sum>, _, 1>(&split_status, tile, seed, &mut LookBackStats::default()) };
            if arch::lane_id() == 0 {
                unsafe { arch::store(out, a) };
                unsafe { arch::store(out.add(1), b) };
            }
        }
    }

    /// On the emulator every tile normally finds its predecessor's inclusive prefix (blocks run one at
    /// a time), so the path that combines many aggregates is exercised here, with published states
    /// set by hand: random heads, the inclusive prefix windows away or in the same window.
    #[test]
    fn look_back_keeps_tile_order_for_a_non_commutative_operator() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        for case in 0..12 {
            let tile = rng.gen_range(2..300u32);
            let inclusive_tile =
                if case % 3 == 0 { tile - 1 - rng.gen_range(0..tile.min(32)) } else { rng.gen_range(0..tile) };
            let values: Vec<u64> = (0..tile).map(|_| rng.gen_range(0..1u64 << 40)).collect();
            let heads: Vec<u32> = (0..tile).map(|_| rng.gen_bool(0.05) as u32).collect();
            let inclusive_value = rng.gen::<u64>() >> 8;
            let mut want = Headed::new(inclusive_value, true);
            for t in inclusive_tile + 1..tile {
                want = Segmented::<Sum>::combine(want, Headed::new(values[t as usize], heads[t as usize] != 0));
            }

            let device = Emulator::default();
            let mut v = device.alloc(8 * tile as usize);
            v.write_bytes(bytemuck::cast_slice(&values));
            let h = u32_buffer(&device, &heads);
            let tiles = tile as usize + 1;
            let packed = device.alloc(<PackedTileStatus<Headed<u64>> as TileStatus<Headed<u64>>>::bytes(tiles));
            let split = device.alloc(<SplitTileStatus<Headed<u64>> as TileStatus<Headed<u64>>>::bytes(tiles));
            let out = device.alloc(32);
            let (vp, hp, pp, sp, op) = (v.address(), h.address(), packed.address(), split.address(), out.address());
            device
                .launch("segmented_probe", config(1, 32, 0), &|| unsafe {
                    segmented_probe(
                        vp as *const u64,
                        hp as *const u32,
                        tile,
                        inclusive_tile,
                        inclusive_value,
                        pp as *mut u8,
                        sp as *mut u8,
                        op as *mut Headed<u64>,
                    )
                })
                .unwrap();
            let mut got = [Headed::<u64>::default(); 2];
            out.read_bytes(bytemuck::cast_slice_mut(&mut got));
            assert_eq!(got, [want, want], "case {case}: tile {tile}, inclusive prefix at {inclusive_tile}");
        }
    }
}
