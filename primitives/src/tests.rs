//! The crate-wide checks: every host kernel name is an embedded entry point with a host version,
//! and the embedded images load.

use super::*;
use crate::kernels::{ImageKind, PRIMITIVES_MODULE};
use crate::ops::{GradientPair, Max, Min, Sum};

fn entry_points() -> Vec<&'static str> {
    PRIMITIVES_MODULE.families.iter().flat_map(|family| family.entry_points.iter().copied()).collect()
}

/// The names of the reduce and scan kernels of every (type, operator) the facades offer.
fn reduce_and_scan_names(names: &mut Vec<&'static str>) {
    macro_rules! collect {
        ($($t:ty),*) => {$(
            names.extend([<Sum as ReduceKernel<$t>>::KERNEL, <Min as ReduceKernel<$t>>::KERNEL, <Max as ReduceKernel<$t>>::KERNEL]);
            names.extend([<Sum as ScanKernel<$t>>::INCLUSIVE, <Min as ScanKernel<$t>>::INCLUSIVE, <Max as ScanKernel<$t>>::INCLUSIVE]);
            names.extend([<Sum as ScanKernel<$t>>::EXCLUSIVE, <Min as ScanKernel<$t>>::EXCLUSIVE, <Max as ScanKernel<$t>>::EXCLUSIVE]);
        )*};
    }
    collect!(f32, f64, i32, u32, i64, u64);
    for (inclusive, exclusive) in [
        (<Sum as ScanKernel<GradientPair<f32>>>::INCLUSIVE, <Sum as ScanKernel<GradientPair<f32>>>::EXCLUSIVE),
        (<Sum as ScanKernel<GradientPair<f64>>>::INCLUSIVE, <Sum as ScanKernel<GradientPair<f64>>>::EXCLUSIVE),
        (<Sum as ScanKernel<GradientPair<i64>>>::INCLUSIVE, <Sum as ScanKernel<GradientPair<i64>>>::EXCLUSIVE),
    ] {
        names.extend([inclusive, exclusive]);
    }
}

/// The names of the select, partition and run-length kernels.
fn select_names(names: &mut Vec<&'static str>) {
    macro_rules! selects {
        ($($t:ty),*) => {$(
            names.extend([<$t as SelectKernel>::SELECT_FLAGGED, <$t as SelectKernel>::PARTITION_FLAGGED]);
        )*};
    }
    macro_rules! compares {
        ($($t:ty),*) => {$(
            names.extend([<$t as CompareKernel>::SELECT_IF, <$t as CompareKernel>::PARTITION_IF, <$t as CompareKernel>::OFFSETS_IF]);
            names.extend([<$t as CompareKernel>::RUN_HEADS, <$t as CompareKernel>::RUN_LENGTHS]);
        )*};
    }
    selects!(f32, f64, i32, u32, i64, u64, GradientPair<f32>, GradientPair<f64>, GradientPair<i64>);
    compares!(f32, f64, i32, u32, i64, u64);
}

/// The names of the segmented reduce and scan kernels.
fn segmented_names(names: &mut Vec<&'static str>) {
    macro_rules! segmented {
        ($($t:ty),*) => {$(
            for name in [
                <Sum as SegmentedReduceKernel<$t>>::MAIN, <Sum as SegmentedReduceKernel<$t>>::HUGE, <Sum as SegmentedReduceKernel<$t>>::FIXUP,
            ] {
                names.push(name);
            }
        )*};
    }
    macro_rules! segmented_min_max {
        ($($t:ty),*) => {$(
            for name in [
                <Min as SegmentedReduceKernel<$t>>::MAIN, <Min as SegmentedReduceKernel<$t>>::HUGE, <Min as SegmentedReduceKernel<$t>>::FIXUP,
                <Max as SegmentedReduceKernel<$t>>::MAIN, <Max as SegmentedReduceKernel<$t>>::HUGE, <Max as SegmentedReduceKernel<$t>>::FIXUP,
            ] {
                names.push(name);
            }
        )*};
    }
    segmented!(f32, f64, i32, u32, i64, u64, GradientPair<f32>, GradientPair<f64>, GradientPair<i64>);
    segmented_min_max!(f32, f64, i32, u32, i64, u64);
    macro_rules! segmented_scans {
        ($($t:ty),*) => {$(
            names.extend([<Sum as SegmentedScanKernel<$t>>::KERNEL, <Min as SegmentedScanKernel<$t>>::KERNEL, <Max as SegmentedScanKernel<$t>>::KERNEL]);
        )*};
    }
    segmented_scans!(f32, f64, i32, u32, i64, u64);
    names.extend([
        <Sum as SegmentedScanKernel<GradientPair<f32>>>::KERNEL,
        <Sum as SegmentedScanKernel<GradientPair<f64>>>::KERNEL,
        <Sum as SegmentedScanKernel<GradientPair<i64>>>::KERNEL,
    ]);
}

/// The names of the multireduce and multiscan kernels.
fn multi_names(names: &mut Vec<&'static str>) {
    macro_rules! multis {
        ($($t:ty),*) => {$(
            for op_names in [
                [<Sum as MultiKernel<$t>>::PARTIALS, <Sum as MultiKernel<$t>>::COMBINE, <Sum as MultiKernel<$t>>::SCAN],
                [<Min as MultiKernel<$t>>::PARTIALS, <Min as MultiKernel<$t>>::COMBINE, <Min as MultiKernel<$t>>::SCAN],
                [<Max as MultiKernel<$t>>::PARTIALS, <Max as MultiKernel<$t>>::COMBINE, <Max as MultiKernel<$t>>::SCAN],
            ] {
                names.extend(op_names);
            }
        )*};
    }
    multis!(f32, f64, i32, u32, i64, u64);
    for t in ["gpf32", "gpf64", "gpi64"] {
        for kind in ["partials", "combine", "scan"] {
            let name: &'static str = Box::leak(format!("primitives_multi_{kind}_sum_{t}").into_boxed_str());
            names.push(name);
        }
    }
}

/// The experiments' kernels (the precision study's histograms, the scan's tile variants): embedded
/// only with the feature `experiments`.
#[cfg(feature = "experiments")]
fn experimental_names(names: &mut Vec<&'static str>) {
    names.extend([
        <f32 as HistogramExperimentKernel>::KERNEL,
        <f64 as HistogramExperimentKernel>::KERNEL,
        <i64 as HistogramExperimentKernel>::KERNEL,
    ]);
    // The scan variants of the side-by-side bench (`DeviceScan::inclusive_sum_variant`).
    names.extend([
        "primitives_scanvariant_registers_sum_f32",
        "primitives_scanvariant_specialized_d1_b0_sum_f32",
        "primitives_scanvariant_specialized_d1_b64_sum_f32",
        "primitives_scanvariant_specialized_d2_b0_sum_f32",
        "primitives_scanvariant_specialized_d2_b64_sum_f32",
        "primitives_scanvariant_specialized_d2_b512_sum_f32",
        "primitives_scanvariant_specialized_d4_b64_sum_f32",
        "primitives_scanvariant_specialized_d4_b512_sum_f32",
        "primitives_scanvariant_timed_sum_f32",
        "primitives_scanvariant_rows9_sum_f32",
        "primitives_scanvariant_rows8_sum_f32",
        "primitives_scanvariant_specialized_timed_sum_f32",
    ]);
}

#[test]
fn every_host_kernel_name_is_in_the_embedded_ptx() {
    let entries = entry_points();
    let mut names = Vec::new();
    reduce_and_scan_names(&mut names);
    select_names(&mut names);
    segmented_names(&mut names);
    multi_names(&mut names);
    #[cfg(feature = "experiments")]
    experimental_names(&mut names);
    names.extend(device::histogram_kernel_names());
    names.extend(device::sort_kernel_names());
    names.extend([
        "primitives_select_offsets_flagged_4",
        "primitives_select_offsets_flagged_8",
        "primitives_select_offsets_flagged_16",
        "primitives_select_head_flags",
        "primitives_heads_to_ends",
        "primitives_offsets_to_flags",
    ]);
    for name in &names {
        assert!(entries.contains(name), "{name} missing from the embedded PTX");
        assert!((PRIMITIVES_MODULE.host_kernel)(name).is_some(), "{name} has no host version");
    }
    let mut sorted = entries.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "the PTX has entry points no host API names");
}

#[test]
fn embedded_families_declare_their_entry_points_and_target_sm_80() {
    for family in PRIMITIVES_MODULE.families {
        let (kind, image) = family.image_for((8, 0), true).unwrap();
        assert_eq!(kind, ImageKind::Ptx);
        let ptx = String::from_utf8(gpu::decompress(image).unwrap()).unwrap();
        assert!(ptx.contains(".target sm_80"), "{}", family.name);
        let declared: Vec<&str> = ptx
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
            .filter_map(|l| l.split('(').next())
            .collect();
        assert_eq!(declared, family.entry_points, "{}", family.name);
        for sass in family.sass {
            let cubin = gpu::decompress(sass.image).unwrap();
            assert_eq!(&cubin[..4], b"\x7fELF", "{} {:?}", family.name, sass.compute_capability);
        }
    }
}
