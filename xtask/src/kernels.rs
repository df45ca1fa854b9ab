//! `cargo xtask kernels [--check]`: builds the kernel crates to PTX with the kernel toolchain and our
//! own link step (`ptx-linker`), one PTX module per kernel family, compiles each to machine code
//! (SASS) for every shipped architecture with `ptxas`, and writes them compressed (zstd) into the
//! host crate that embeds them, with `manifest.json` (what they were built from) and `families.rs`
//! (the index the host crate `include!`s). `--check` rebuilds and compares with the committed files.

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::setup;

pub const TARGET: &str = "nvptx64-nvidia-cuda";
/// The PTX's target: the oldest architecture served, and what the driver JIT-compiles for a GPU
/// no shipped machine code fits.
pub const CPU: &str = "sm_80";
/// Architectures shipped as machine code, each compiled by `ptxas` from the `sm_80` PTX: Ampere
/// (A100; RTX 30 / A10 / A40), Ada (RTX 40 / L4 / L40), Hopper (H100 / H200), Blackwell (B200; RTX 50).
/// Machine code runs on its own major version from its minor up, so this covers every GPU from
/// compute capability 8.0 without a JIT; newer majors take the PTX.
pub const SASS_ARCHES: [&str; 6] = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"];
/// Flags for every crate of the kernel build. JumpThreading is off because it can duplicate a block
/// barrier into divergent branches (rust-lang/rust#137086).
const RUSTFLAGS: &str = "-C target-cpu=sm_80 -Zmir-enable-passes=-JumpThreading";
/// zstd level of the committed images: the densest of the regular levels (a family's cubins shrink
/// about 12x); decompression speed does not depend on it.
const ZSTD_LEVEL: i32 = 19;

/// A kernel family: a name and the entry-name prefixes it claims (the longest matching prefix wins).
pub type Family = (&'static str, &'static [&'static str]);

/// A kernel crate, the sources its PTX depends on, where its images go, and its families.
pub struct KernelCrate {
    pub package: &'static str,
    pub artifact: &'static str,
    /// Crate directories (relative to the workspace root) whose `Cargo.toml` and `src/` are hashed.
    pub sources: &'static [&'static str],
    /// Directory (relative to the workspace root) receiving the images, the manifest and the index.
    pub destination: &'static str,
    /// The modules the host loads separately, each when one of its kernels is first launched: a
    /// program that only reduces loads only the reduce kernels. Every kernel must be in one.
    pub families: &'static [Family],
}

pub const KERNEL_CRATES: [KernelCrate; 2] = [
    KernelCrate {
        package: "primitives-kernels",
        artifact: "primitives_kernels",
        sources: &["primitives-kernels"],
        destination: "primitives/kernels",
        families: &[
            ("reduce", &["primitives_reduce_"]),
            ("scan", &["primitives_scan_"]),
            ("select", &["primitives_select_", "primitives_partition_", "primitives_run_"]),
            ("segmented_reduce", &["primitives_segmented_reduce_", "primitives_heads_", "primitives_select_head_"]),
            ("segmented_scan", &["primitives_segmented_scan_", "primitives_offsets_"]),
            ("multi", &["primitives_multi_"]),
            ("sort", &["primitives_radix_", "primitives_sequence_", "primitives_gather_"]),
            ("histogram", &["primitives_histogram_"]),
            // Kernels of experiments and benchmarks only (precision study, scan variants): see
            // `EXPERIMENTS_FAMILY`.
            ("experimental", &["primitives_experimental_", "primitives_scanvariant_"]),
        ],
    },
    KernelCrate {
        package: "boost-kernels",
        artifact: "boost_kernels",
        sources: &["boost-kernels", "primitives-kernels"],
        destination: "boost/kernels",
        families: &[
            ("split", &["boost_split_"]),
            // The exact method's levels (sorted feature values, every boundary a candidate).
            ("exact", &["boost_exact_"]),
            ("partition", &["boost_partition_"]),
            ("histogram", &["boost_histogram_"]),
            ("quantise", &["boost_quantise_"]),
            // The per-row kernels of a round: gradients, the margin update, the metrics.
            ("objective", &["boost_objective_", "boost_metric_", "boost_sample_"]),
            // Tree walks over feature values: evaluation sets' margins during training.
            ("predict", &["boost_predict_"]),
            // The training features quantised on the device, once a run.
            ("bins", &["boost_bins_"]),
            // The quantile cuts of data in device memory (XGBoost's sketch), once a run; CSR checks.
            ("sketch", &["boost_sketch_", "boost_csr_", "boost_check_"]),
            // Synthetic rows made on the device (the benchmarks' data); categorical columns
            // encoded by ordered target statistics.
            ("data", &["boost_synthetic_", "boost_encode_"]),
            // Explanations: SHAP values and interaction values over the trees' paths.
            ("shap", &["boost_shap_"]),
        ],
    },
];

/// What the committed images of one kernel crate were built from.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Manifest {
    pub package: String,
    pub target: String,
    pub cpu: String,
    pub rustflags: String,
    pub rustc: String,
    pub llvm: String,
    pub ptxas: String,
    /// SHA-256 over the hashed source files (see [`source_hash`]).
    pub source_sha256: String,
    pub hashed_sources: Vec<String>,
    pub families: Vec<FamilyManifest>,
}

/// One family's module: its kernels, its PTX and its machine code per architecture.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct FamilyManifest {
    pub name: String,
    pub entry_points: Vec<String>,
    pub ptx: Image,
    pub sass: Vec<Image>,
}

/// A committed image: `arch` (`compute_80` for PTX, `sm_90` for machine code), the zstd file, and
/// the size and SHA-256 of its uncompressed content.
#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
pub struct Image {
    pub arch: String,
    pub file: String,
    pub bytes: usize,
    pub sha256: String,
}

impl Image {
    fn new(family: &str, arch: &str, extension: &str, content: &[u8]) -> Self {
        Image {
            arch: arch.into(),
            file: format!("{family}.{arch}.{extension}.zst"),
            bytes: content.len(),
            sha256: hex(&Sha256::digest(content)),
        }
    }
}

impl Manifest {
    pub fn entry_points(&self) -> impl Iterator<Item = &str> {
        self.families.iter().flat_map(|f| f.entry_points.iter().map(String::as_str))
    }
}

/// SHA-256 over `Cargo.toml` and every file under `src/` of each source crate: relative path, a NUL,
/// the bytes, a NUL, in sorted path order. Independent of the checkout's location.
pub fn source_hash(root: &Path, crates: &[&str]) -> Result<String> {
    let mut files = Vec::new();
    for krate in crates {
        files.push(PathBuf::from(krate).join("Cargo.toml"));
        collect_files(root, &PathBuf::from(krate).join("src"), &mut files)?;
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in files {
        let bytes = std::fs::read(root.join(&file)).with_context(|| format!("reading {}", file.display()))?;
        let name = file.to_string_lossy().replace('\\', "/");
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(&bytes);
        hasher.update([0]);
    }
    Ok(hex(&hasher.finalize()))
}

fn collect_files(root: &Path, relative: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(root.join(relative)).with_context(|| format!("listing {}", relative.display()))? {
        let entry = entry?;
        let path = relative.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            collect_files(root, &path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `.entry` names declared in a PTX text.
pub fn entry_points(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| {
            let rest = line
                .trim_start()
                .strip_prefix(".visible .entry ")
                .or_else(|| line.trim_start().strip_prefix(".entry "))?;
            Some(rest.split('(').next()?.trim().to_string())
        })
        .collect()
}

pub fn read_manifest(root: &Path, krate: &KernelCrate) -> Result<Manifest> {
    let path = root.join(krate.destination).join("manifest.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn build_linker(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--quiet", "--package", "xtask", "--bin", "ptx-linker"])
        .status()
        .context("building ptx-linker")?;
    if !status.success() {
        bail!("building ptx-linker failed");
    }
    Ok(root.join("target/debug/ptx-linker"))
}

/// Builds one kernel crate and returns each family's PTX text, in the crate's family order.
fn build_ptx(root: &Path, linker: &Path, krate: &KernelCrate) -> Result<Vec<(String, String)>> {
    let target_dir = root.join("target/kernels");
    let deps = target_dir.join(TARGET).join("kernel").join("deps");
    // The link step writes the family modules, and cargo runs it only when it links anew: remove
    // what the last link wrote so that it does (the family table may change without the sources).
    if let Ok(entries) = std::fs::read_dir(&deps) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(krate.artifact) && name.ends_with(".ptx") {
                std::fs::remove_file(entry.path()).with_context(|| format!("removing {name}"))?;
            }
        }
    }
    let families: Vec<String> =
        krate.families.iter().map(|(name, prefixes)| format!("{name}={}", prefixes.join(","))).collect();
    let mut command = Command::new(setup::KERNEL_CARGO);
    command
        .current_dir(root)
        .env("RUSTC", setup::KERNEL_RUSTC)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", RUSTFLAGS)
        .env("CARGO_TARGET_NVPTX64_NVIDIA_CUDA_LINKER", linker)
        .env("PTX_LINKER_FAMILIES", families.join(";"))
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTUP_TOOLCHAIN")
        .args(["rustc", "--quiet", "--package", krate.package, "--features", "entry-points", "--crate-type", "cdylib"])
        .args(["--profile", "kernel", "-Zbuild-std=core", "--target", TARGET, "--target-dir"])
        .arg(&target_dir);
    println!("building {} for {TARGET} ({CPU})", krate.package);
    let status = command.status().with_context(|| format!("running {}", setup::KERNEL_CARGO))?;
    if !status.success() {
        bail!("kernel build of {} failed", krate.package);
    }
    krate
        .families
        .iter()
        .map(|(name, _)| {
            let path = deps.join(format!("{}.{name}.ptx", krate.artifact));
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {} (does family `{name}` claim any kernel?)", path.display()))?;
            Ok((name.to_string(), text))
        })
        .collect()
}

/// The committed machine code of each family (`None` where it cannot be reused): reusable when the
/// family's PTX is byte for byte the committed one, the same ptxas built it, every architecture of
/// [`SASS_ARCHES`] is there and each image decompresses to its recorded hash.
fn committed_sass(
    root: &Path,
    krate: &KernelCrate,
    families: &[(String, String)],
    ptxas: &str,
) -> Vec<Option<Vec<Vec<u8>>>> {
    let Ok(committed) = read_manifest(root, krate) else { return vec![None; families.len()] };
    let destination = root.join(krate.destination);
    families
        .iter()
        .map(|(name, text)| {
            let old = committed.families.iter().find(|f| &f.name == name)?;
            let same_ptx = old.ptx.sha256 == hex(&Sha256::digest(text.as_bytes()));
            let arches: Vec<&str> = old.sass.iter().map(|image| image.arch.as_str()).collect();
            if committed.ptxas != ptxas || !same_ptx || arches != SASS_ARCHES {
                return None;
            }
            old.sass
                .iter()
                .map(|image| {
                    let bytes = std::fs::read(destination.join(&image.file)).ok()?;
                    let content = zstd::decode_all(bytes.as_slice()).ok()?;
                    (hex(&Sha256::digest(&content)) == image.sha256).then_some(content)
                })
                .collect()
        })
        .collect()
}

/// Machine code of every family for every architecture of [`SASS_ARCHES`] (`[family][arch]`), by
/// `ptxas` processes in parallel; a family with `reusable` code is not compiled again.
fn compile_sass(
    root: &Path,
    krate: &KernelCrate,
    families: &[(String, String)],
    reusable: &[Option<Vec<Vec<u8>>>],
) -> Result<Vec<Vec<Vec<u8>>>> {
    let work = root.join("target/kernels/sass").join(krate.package);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    for (name, ptx) in families {
        std::fs::write(work.join(format!("{name}.ptx")), ptx)?;
    }
    let ptxas = setup::ptxas();
    let reused = |family: usize| reusable.get(family).is_some_and(Option::is_some);
    let jobs: Vec<(usize, &str)> = (0..families.len())
        .filter(|&family| !reused(family))
        .flat_map(|family| SASS_ARCHES.iter().map(move |&arch| (family, arch)))
        .collect();
    println!(
        "compiling {} of {} families for {} with {} (the others' machine code is unchanged)",
        jobs.len() / SASS_ARCHES.len(),
        families.len(),
        SASS_ARCHES.join(", "),
        ptxas.display()
    );
    let cubins = jobs
        .par_iter()
        .map(|&(family, arch)| {
            let name = &families[family].0;
            let input = work.join(format!("{name}.ptx"));
            let output = work.join(format!("{name}.{arch}.cubin"));
            let status = Command::new(&ptxas)
                .arg(format!("-arch={arch}"))
                .arg("-O3")
                .arg(&input)
                .arg("-o")
                .arg(&output)
                .status()
                .with_context(|| format!("running {}", ptxas.display()))?;
            if !status.success() {
                bail!("ptxas -arch={arch} {} failed with {status}", input.display());
            }
            std::fs::read(&output).with_context(|| format!("reading {}", output.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut cubins = cubins.into_iter();
    Ok((0..families.len())
        .map(|family| match reusable.get(family) {
            Some(Some(code)) => code.clone(),
            _ => cubins.by_ref().take(SASS_ARCHES.len()).collect(),
        })
        .collect())
}

/// The PTX's own architecture name, `compute_80` for `sm_80`.
fn ptx_arch() -> String {
    CPU.replace("sm_", "compute_")
}

/// What `cargo xtask kernels` does with the fresh build.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Write the images, manifest and index.
    Build,
    /// Compare with the committed files; ptxas runs only for families whose PTX changed.
    Check,
    /// Compare with the committed files, every family's machine code compiled afresh.
    CheckFull,
}

pub fn build(mode: Mode) -> Result<()> {
    let check = mode != Mode::Build;
    setup::ensure_installed()?;
    let root = crate::workspace_root();
    let linker = build_linker(&root)?;
    let rustc = setup::version(setup::KERNEL_RUSTC, &["--version"])?;
    let llvm = setup::llvm_version()?;
    let ptxas = setup::ptxas_version()?;
    let mut problems = Vec::new();
    for krate in &KERNEL_CRATES {
        let ptx = build_ptx(&root, &linker, krate)?;
        // The committed machine code of a family whose PTX and ptxas are unchanged is reused (its
        // images checked against their hashes): ptxas is deterministic, which `--check --full`
        // proves by compiling every family afresh.
        let reusable = match mode {
            Mode::CheckFull => Vec::new(),
            Mode::Build | Mode::Check => committed_sass(&root, krate, &ptx, &ptxas),
        };
        let sass = compile_sass(&root, krate, &ptx, &reusable)?;
        let families = ptx
            .iter()
            .zip(&sass)
            .map(|((name, text), cubins)| FamilyManifest {
                name: name.clone(),
                entry_points: entry_points(text),
                ptx: Image::new(name, &ptx_arch(), "ptx", text.as_bytes()),
                sass: SASS_ARCHES
                    .iter()
                    .zip(cubins)
                    .map(|(arch, cubin)| Image::new(name, arch, "cubin", cubin))
                    .collect(),
            })
            .collect();
        let manifest = Manifest {
            package: krate.package.into(),
            target: TARGET.into(),
            cpu: CPU.into(),
            rustflags: RUSTFLAGS.into(),
            rustc: rustc.clone(),
            llvm: llvm.clone(),
            ptxas: ptxas.clone(),
            source_sha256: source_hash(&root, krate.sources)?,
            hashed_sources: krate.sources.iter().map(|s| s.to_string()).collect(),
            families,
        };
        if check {
            problems.extend(compare(&root, krate, &manifest));
        } else {
            write(&root, krate, &manifest, &ptx, &sass)?;
        }
    }
    if !problems.is_empty() {
        bail!(
            "committed kernel images are out of date:\n  {}\nrun `cargo xtask kernels` and commit the result",
            problems.join("\n  ")
        );
    }
    if check {
        println!("committed kernel images match a fresh build");
    }
    Ok(())
}

/// Writes a crate's compressed images, its manifest and its index, and removes images of families
/// or architectures no longer built.
fn write(
    root: &Path,
    krate: &KernelCrate,
    manifest: &Manifest,
    ptx: &[(String, String)],
    sass: &[Vec<Vec<u8>>],
) -> Result<()> {
    let destination = root.join(krate.destination);
    std::fs::create_dir_all(&destination)?;
    let mut images: Vec<(&Image, &[u8])> = Vec::new();
    for ((family, (_, text)), cubins) in manifest.families.iter().zip(ptx).zip(sass) {
        images.push((&family.ptx, text.as_bytes()));
        images.extend(family.sass.iter().zip(cubins).map(|(image, cubin)| (image, cubin.as_slice())));
    }
    let compressed = images
        .par_iter()
        .map(|(image, content)| Ok((image.file.as_str(), compress(content)?)))
        .collect::<Result<Vec<_>>>()?;
    let kept: Vec<&str> = compressed.iter().map(|(file, _)| *file).collect();
    for entry in std::fs::read_dir(&destination)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let built_here = name.ends_with(".zst") || name.ends_with(".ptx");
        if built_here && !kept.contains(&name.as_str()) {
            std::fs::remove_file(destination.join(&name)).with_context(|| format!("removing stale {name}"))?;
        }
    }
    let mut total = 0;
    for (file, bytes) in &compressed {
        total += bytes.len();
        write_atomically(&destination.join(file), bytes)?;
    }
    let json = serde_json::to_string_pretty(manifest)? + "\n";
    write_atomically(&destination.join("manifest.json"), json.as_bytes())?;
    write_atomically(&destination.join("families.rs"), index_source(manifest).as_bytes())?;
    println!(
        "wrote {}: {} families, {} entry points, {} images ({:.1} MB compressed), manifest.json, families.rs",
        krate.destination,
        manifest.families.len(),
        manifest.entry_points().count(),
        compressed.len(),
        total as f64 / 1e6
    );
    Ok(())
}

/// A zstd frame with its content checksum, so that the host can tell a damaged image from a good
/// one before handing it to the driver.
fn compress(content: &[u8]) -> Result<Vec<u8>> {
    use std::io::Write;
    let mut encoder = zstd::Encoder::new(Vec::new(), ZSTD_LEVEL)?;
    encoder.include_checksum(true)?;
    encoder.include_contentsize(true)?;
    encoder.set_pledged_src_size(Some(content.len() as u64))?;
    encoder.write_all(content)?;
    Ok(encoder.finish()?)
}

/// `(major, minor)` of an architecture name: `sm_86` is (8, 6), `sm_120` (12, 0).
pub fn compute_capability(arch: &str) -> Option<(u32, u32)> {
    let digits = arch.strip_prefix("sm_").or_else(|| arch.strip_prefix("compute_"))?;
    let (major, minor) = digits.split_at(digits.len().checked_sub(1)?);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The family of experiments' and benchmarks' kernels: embedded only with the host crate's
/// `experiments` feature, so a user's binary carries none of them.
const EXPERIMENTS_FAMILY: &str = "experimental";

/// The Rust source of a crate's family index: a `&[KernelFamily]` expression with the images
/// included by `include_bytes!`, which the host crate `include!`s with `KernelFamily` and
/// `SassImage` in scope.
pub fn index_source(manifest: &Manifest) -> String {
    let mut out = format!(
        "// @generated by `cargo xtask kernels` from the kernel sources of {} (see manifest.json): its\n\
         // kernel families, each a module of its own that the host loads when one of its kernels is first\n\
         // launched, as zstd-compressed PTX and machine code per architecture. Do not edit.\n&[\n",
        manifest.package
    );
    for family in &manifest.families {
        if family.name == EXPERIMENTS_FAMILY {
            out.push_str("    #[cfg(feature = \"experiments\")]\n");
        }
        out.push_str(&format!("    KernelFamily {{\n        name: {:?},\n        entry_points: &[\n", family.name));
        for entry in &family.entry_points {
            out.push_str(&format!("            {entry:?},\n"));
        }
        out.push_str(&format!("        ],\n        ptx: include_bytes!({:?}),\n        sass: &[\n", family.ptx.file));
        for image in &family.sass {
            let (major, minor) = compute_capability(&image.arch).unwrap_or_default();
            out.push_str(&format!(
                "            SassImage {{ compute_capability: ({major}, {minor}), image: include_bytes!({:?}) }},\n",
                image.file
            ));
        }
        out.push_str("        ],\n    },\n");
    }
    out.push_str("]\n");
    out
}

/// Differences between a fresh build and the committed files. A different toolchain cannot be
/// expected to give byte-identical images, so then only the sources and entry points count: PTX is
/// compared when rustc and LLVM are the manifest's, machine code when ptxas is too.
fn compare(root: &Path, krate: &KernelCrate, fresh: &Manifest) -> Vec<String> {
    let committed = match read_manifest(root, krate) {
        Ok(manifest) => manifest,
        Err(error) => return vec![format!("{}: {error:#}", krate.package)],
    };
    let mut problems = verify_committed(root, krate, &committed);
    if committed.source_sha256 != fresh.source_sha256 {
        problems.push(format!("{}: kernel sources changed since the images were built", krate.package));
    }
    let names = |m: &Manifest| m.families.iter().map(|f| (f.name.clone(), f.entry_points.clone())).collect::<Vec<_>>();
    if names(&committed) != names(fresh) {
        problems.push(format!("{}: families or entry points differ from the committed ones", krate.package));
        return problems;
    }
    let same_ptx_toolchain = committed.rustc == fresh.rustc && committed.llvm == fresh.llvm;
    let same_ptxas = same_ptx_toolchain && committed.ptxas == fresh.ptxas;
    for (old, new) in committed.families.iter().zip(&fresh.families) {
        if same_ptx_toolchain && old.ptx != new.ptx {
            problems.push(format!("{}: {} differs from a fresh build", krate.package, old.ptx.file));
        }
        if same_ptxas && old.sass != new.sass {
            problems
                .push(format!("{}: machine code of family `{}` differs from a fresh build", krate.package, old.name));
        }
    }
    if !same_ptx_toolchain || !same_ptxas {
        println!(
            "note: {} was built with {} / {} / {}; this machine has {} / {} / {}: compared sources and entry points{}",
            krate.package,
            committed.rustc,
            committed.llvm,
            committed.ptxas,
            fresh.rustc,
            fresh.llvm,
            fresh.ptxas,
            if same_ptx_toolchain { " and PTX" } else { "" }
        );
    }
    problems
}

/// Problems with the committed files against their own manifest: every image decompresses to the
/// size and hash recorded, every family's PTX declares the entries recorded, and the index is the
/// one the manifest gives.
pub fn verify_committed(root: &Path, krate: &KernelCrate, manifest: &Manifest) -> Vec<String> {
    let destination = root.join(krate.destination);
    let mut problems = Vec::new();
    for family in &manifest.families {
        for image in std::iter::once(&family.ptx).chain(&family.sass) {
            let path = destination.join(&image.file);
            let content = std::fs::read(&path).map_err(anyhow::Error::from).and_then(|bytes| {
                zstd::decode_all(bytes.as_slice()).with_context(|| format!("decompressing {}", path.display()))
            });
            match content {
                Ok(content) if content.len() == image.bytes && hex(&Sha256::digest(&content)) == image.sha256 => {
                    if image.arch == ptx_arch()
                        && entry_points(&String::from_utf8_lossy(&content)) != family.entry_points
                    {
                        problems.push(format!("{}: entry points differ from the manifest's", path.display()));
                    }
                }
                Ok(_) => problems.push(format!("{}: content differs from the manifest (edited?)", path.display())),
                Err(error) => problems.push(format!("{}: {error:#}", path.display())),
            }
        }
    }
    match std::fs::read_to_string(destination.join("families.rs")) {
        Ok(index) if index == index_source(manifest) => {}
        Ok(_) => problems.push(format!("{}/families.rs differs from the manifest's index", krate.destination)),
        Err(error) => problems.push(format!("{}/families.rs: {error}", krate.destination)),
    }
    problems
}

/// Writes to a temporary name beside `path`, then renames, so a reader never sees a partial file.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, bytes).with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, path).with_context(|| format!("renaming to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails when a kernel source changed without `cargo xtask kernels` being run, or a committed
    /// image, the manifest or the index was edited by hand.
    #[test]
    fn committed_images_match_kernel_sources() {
        let root = crate::workspace_root();
        for krate in &KERNEL_CRATES {
            let manifest = read_manifest(&root, krate).unwrap();
            let current = source_hash(&root, krate.sources).unwrap();
            assert_eq!(
                manifest.source_sha256, current,
                "{}: kernel sources changed since its images were built; run `cargo xtask kernels`",
                krate.package
            );
            let problems = verify_committed(&root, krate, &manifest);
            assert!(problems.is_empty(), "{}", problems.join("\n"));
            let families: Vec<&str> = krate.families.iter().map(|(name, _)| *name).collect();
            let built: Vec<&str> = manifest.families.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(families, built, "{}: family table changed since the build", krate.package);
            for family in &manifest.families {
                let arches: Vec<&str> = family.sass.iter().map(|image| image.arch.as_str()).collect();
                assert_eq!(arches, SASS_ARCHES, "{}: shipped architectures changed", family.name);
            }
        }
    }

    #[test]
    fn compute_capabilities_of_architecture_names() {
        assert_eq!(compute_capability("sm_80"), Some((8, 0)));
        assert_eq!(compute_capability("sm_86"), Some((8, 6)));
        assert_eq!(compute_capability("sm_120"), Some((12, 0)));
        assert_eq!(compute_capability("compute_90"), Some((9, 0)));
        assert_eq!(compute_capability("sm_"), None);
        assert_eq!(compute_capability("gfx90a"), None);
    }

    #[test]
    fn entry_points_are_read_from_ptx() {
        let ptx =
            ".version 7.0\n.target sm_80\n.visible .entry first(\n\t.param .u64 a\n)\n{\n}\n.visible .entry second()\n";
        assert_eq!(entry_points(ptx), ["first", "second"]);
    }

    #[test]
    fn source_hash_depends_on_content_and_names() {
        let dir = std::env::temp_dir().join(format!("xtask-hash-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("k/src")).unwrap();
        std::fs::write(dir.join("k/Cargo.toml"), "[package]").unwrap();
        std::fs::write(dir.join("k/src/lib.rs"), "fn a() {}").unwrap();
        let first = source_hash(&dir, &["k"]).unwrap();
        std::fs::write(dir.join("k/src/lib.rs"), "fn b() {}").unwrap();
        let second = source_hash(&dir, &["k"]).unwrap();
        std::fs::rename(dir.join("k/src/lib.rs"), dir.join("k/src/main.rs")).unwrap();
        let third = source_hash(&dir, &["k"]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_ne!(first, second);
        assert_ne!(second, third);
    }
}
