//! The PTX link step that rustc's `nvptx64-nvidia-cuda` target calls as its linker.
//!
//! rustc runs `LINKER --export-symbol NAME... OBJ.o... LIB.rlib -L DIR --target nvptx64-nvidia-cuda
//! --target-cpu sm_80 -o OUT.ptx -O3 --debug`. The objects are LLVM bitcode; with fat LTO one object
//! holds everything used, so rlibs are ignored. The step is three LLVM tools:
//! `llvm-link` (merge), `opt` (internalize all but the exported kernels, then -O3), `llc` (emit PTX).
//! Tool names are `llvm-link-22` etc.; `PTX_LINKER_LLVM_SUFFIX` overrides the `-22`.
//!
//! Rust cannot attach launch bounds to a kernel, so the step adds them to the PTX afterwards, from
//! [`LAUNCH_BOUNDS`] (tuning as data): `.maxntid` and `.minnctapersm` on the entries named there,
//! which make ptxas keep registers low enough for that many blocks per multiprocessor.
//!
//! Kernel families: with `PTX_LINKER_FAMILIES=name=prefix,prefix;name=prefix...` in the environment
//! (set by `cargo xtask kernels`), the step also writes one PTX module per family beside `OUT.ptx`
//! (`OUT.<name>.ptx`), holding the exported kernels whose names start with one of its prefixes (the
//! longest matching prefix decides) and what they call. Each is cut from the same optimised module
//! (internalize + global DCE, no further optimisation), so a kernel's code is the one of the whole
//! module; the host loads a family only when one of its kernels is first launched. An exported
//! kernel no family claims is an error, so a new kernel cannot be left out.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ptx-linker: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut exports = Vec::new();
    let mut objects = Vec::new();
    let mut output = None;
    let mut cpu = String::from("sm_80");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--export-symbol" => exports.push(args.next().ok_or("--export-symbol without a name")?),
            "-o" => output = Some(PathBuf::from(args.next().ok_or("-o without a path")?)),
            "--target-cpu" => cpu = args.next().ok_or("--target-cpu without a value")?,
            "-L" | "--target" => {
                args.next();
            }
            _ if arg.ends_with(".o") => objects.push(PathBuf::from(arg)),
            // -O3, --debug, rlibs (their code is already in the LTO object).
            _ => {}
        }
    }
    let output = output.ok_or("no -o OUT.ptx given")?;
    if objects.is_empty() {
        return Err("no bitcode objects given".into());
    }
    let suffix = std::env::var("PTX_LINKER_LLVM_SUFFIX").unwrap_or_else(|_| "-22".into());
    let work = output.with_extension("link");
    std::fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
    let linked = work.join("linked.bc");
    let optimised = work.join("optimised.bc");

    let mut link = Command::new(format!("llvm-link{suffix}"));
    link.args(&objects).arg("-o").arg(&linked);
    run_tool(link)?;

    let mut opt = Command::new(format!("opt{suffix}"));
    opt.arg(format!("--internalize-public-api-list={}", exports.join(",")))
        .arg("-passes=internalize,default<O3>")
        // Item loops (up to 22 items a thread, with warp collectives in the body: the radix rank's
        // nine votes per item) must unroll fully, or their per-item arrays land in local memory;
        // the default threshold (300) stops short, and 1500 did at 22 items.
        .arg("-unroll-threshold=3000")
        .arg(&linked)
        .arg("-o")
        .arg(&optimised);
    run_tool(opt)?;

    let mut llc = Command::new(format!("llc{suffix}"));
    llc.arg("-O3").arg(format!("-mcpu={cpu}")).arg(&optimised).arg("-o").arg(&output);
    run_tool(llc)?;
    add_launch_bounds(&output)?;

    let Ok(spec) = std::env::var("PTX_LINKER_FAMILIES") else { return Ok(()) };
    for (family, members) in split_into_families(&parse_families(&spec)?, &exports)? {
        let cut = work.join(format!("{family}.bc"));
        let mut opt = Command::new(format!("opt{suffix}"));
        opt.arg(format!("--internalize-public-api-list={}", members.join(",")))
            .arg("-passes=internalize,globaldce")
            .arg(&optimised)
            .arg("-o")
            .arg(&cut);
        run_tool(opt)?;
        let family_ptx = output.with_extension(format!("{family}.ptx"));
        let mut llc = Command::new(format!("llc{suffix}"));
        llc.arg("-O3").arg(format!("-mcpu={cpu}")).arg(&cut).arg("-o").arg(&family_ptx);
        run_tool(llc)?;
        add_launch_bounds(&family_ptx)?;
    }
    Ok(())
}

fn add_launch_bounds(path: &std::path::Path) -> Result<(), String> {
    let ptx = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    std::fs::write(path, with_launch_bounds(&ptx)).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// `name=prefix,prefix;name=prefix` into (name, prefixes).
fn parse_families(spec: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    spec.split(';')
        .filter(|part| !part.trim().is_empty())
        .map(|part| {
            let (name, prefixes) =
                part.split_once('=').ok_or_else(|| format!("PTX_LINKER_FAMILIES: `{part}` is not name=prefixes"))?;
            Ok((name.trim().to_string(), prefixes.split(',').map(|p| p.trim().to_string()).collect()))
        })
        .collect()
}

/// The exported kernels of each family (in family order; families that claim none are left out).
/// A kernel belongs to the family with its longest matching prefix.
fn split_into_families(
    families: &[(String, Vec<String>)],
    exports: &[String],
) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut members: Vec<Vec<String>> = vec![Vec::new(); families.len()];
    for export in exports {
        let owner = families
            .iter()
            .enumerate()
            .flat_map(|(index, (_, prefixes))| prefixes.iter().map(move |p| (index, p)))
            .filter(|(_, prefix)| export.starts_with(prefix.as_str()))
            .max_by_key(|(_, prefix)| prefix.len())
            .map(|(index, _)| index)
            .ok_or_else(|| format!("kernel `{export}` belongs to no family of PTX_LINKER_FAMILIES"))?;
        members[owner].push(export.clone());
    }
    Ok(families
        .iter()
        .zip(members)
        .filter(|(_, members)| !members.is_empty())
        .map(|((name, _), members)| (name.clone(), members))
        .collect())
}

/// Entries (name prefix, name suffixes) with (threads per block, blocks per multiprocessor) to ask
/// ptxas for.
///
/// The single-pass scans stage their tile in shared memory (`device::scan::staged_scan_kernel`, 144
/// bytes a thread), so shared memory sets the blocks per multiprocessor and the bound only has to
/// keep registers from lowering it. With rows of 9 vectors (H200, 2026-11-22, 2^28 f32): 256 x 6
/// (40 registers) 3315-3389 GB/s, 384 x 4 3347-3384, 512 x 3 3326-3362, all within run-to-run
/// noise; 256 it is, one block size for every type. Earlier, with rows of 8: 512 x 3 3203; 256 x 5
/// (48 registers) 3130; 384 x 4 3146; 768 x 2 3164; 256 threads with 256-byte rows, 3 per
/// multiprocessor, 2804. Elements of 8 and 16 bytes take 5 blocks per multiprocessor (their
/// look-back needs 48 registers). The host launches with `device::scan::staged_block_threads`,
/// which must agree. The staged variants (`primitives_scanvariant_rows8_/rows9_`) keep 512 x 3 so
/// that `bandwidth scan-variants` can launch them with 256 to 512 threads.
///
/// The warp-specialized scan variants (a look-back warp beside 512 row threads): 544 x 3, so
/// ptxas gives them 32 registers (13 warps on one scheduler); measured slower than the staged scan
/// (docs/benchmarks.md).
///
/// The register-tile scan (kept as a variant for comparison): 6 blocks of 256 threads (40
/// registers) gave f32 2446 GB/s against 2387 without the bound.
///
/// The radix sort's tile kernels hold their keys and ranks in registers. Onesweep: 3 blocks of 256
/// per multiprocessor (80 registers) gave u32 pairs 20.2 G/s against 18.2 with 2 (128 registers,
/// no spills); unbounded, ptxas once gave it 168 registers and one block (12 G pairs/s). The block
/// sort: 3 blocks (80 registers, no spills).
/// The multi-feature histogram runs 512 threads, which cannot launch above 128 registers.
const LAUNCH_BOUNDS: &[(&str, &[&str], u32, u32)] = &[
    ("primitives_scan_", &["_f32", "_i32", "_u32"], 256, 6),
    ("primitives_scan_", &[""], 256, 5),
    ("primitives_scanvariant_specialized_", &[""], 544, 3),
    ("primitives_scanvariant_registers_", &[""], 256, 6),
    ("primitives_scanvariant_timed_", &[""], 256, 6),
    ("primitives_scanvariant_rows8_", &[""], 512, 3),
    ("primitives_scanvariant_rows9_", &[""], 512, 3),
    ("primitives_select_", &[""], 256, 4),
    ("primitives_partition_", &[""], 256, 4),
    ("primitives_radix_onesweep_", &[""], 256, 3),
    ("primitives_radix_block_sort_", &[""], 256, 3),
    ("primitives_histogram_multi_", &[""], 512, 2),
];

/// `ptx` with the directives of [`LAUNCH_BOUNDS`] between each matching entry's parameter list and
/// its body.
fn with_launch_bounds(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 1024);
    let mut pending = None;
    for line in ptx.lines() {
        if let Some(name) = line.strip_prefix(".visible .entry ") {
            let name = name.split('(').next().unwrap_or(name);
            pending = LAUNCH_BOUNDS
                .iter()
                .find(|(prefix, suffixes, ..)| name.starts_with(prefix) && suffixes.iter().any(|s| name.ends_with(s)))
                .map(|&(_, _, threads, blocks)| (threads, blocks));
        }
        if line == "{" {
            if let Some((threads, blocks)) = pending.take() {
                out.push_str(&format!(".maxntid {threads}, 1, 1\n.minnctapersm {blocks}\n"));
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn run_tool(mut command: Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let status = command.status().map_err(|e| format!("cannot run {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed with {status}"))
    }
}
