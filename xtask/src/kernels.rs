//! `cargo xtask kernels [--check]`: builds the kernel crates to PTX with the kernel toolchain and our
//! own link step (`ptx-linker`), then writes `<crate>.sm_80.ptx` and `manifest.json` into the host
//! crate that embeds them. `--check` rebuilds and compares with the committed files instead.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::setup;

pub const TARGET: &str = "nvptx64-nvidia-cuda";
pub const CPU: &str = "sm_80";
/// Flags for every crate of the kernel build. JumpThreading is off because it can duplicate a block
/// barrier into divergent branches (rust-lang/rust#137086).
const RUSTFLAGS: &str = "-C target-cpu=sm_80 -Zmir-enable-passes=-JumpThreading";

/// A kernel crate, the sources its PTX depends on, and where the PTX goes.
pub struct KernelCrate {
    pub package: &'static str,
    pub artifact: &'static str,
    /// Crate directories (relative to the workspace root) whose `Cargo.toml` and `src/` are hashed.
    pub sources: &'static [&'static str],
    /// Directory (relative to the workspace root) receiving the PTX and the manifest.
    pub destination: &'static str,
}

pub const KERNEL_CRATES: [KernelCrate; 2] = [
    KernelCrate {
        package: "primitives-kernels",
        artifact: "primitives_kernels",
        sources: &["primitives-kernels"],
        destination: "primitives/kernels",
    },
    KernelCrate {
        package: "boost-kernels",
        artifact: "boost_kernels",
        sources: &["boost-kernels", "primitives-kernels"],
        destination: "boost/kernels",
    },
];

/// What a committed PTX file was built from.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Manifest {
    pub package: String,
    pub target: String,
    pub cpu: String,
    pub rustflags: String,
    pub rustc: String,
    pub llvm: String,
    /// SHA-256 over the hashed source files (see [`source_hash`]).
    pub source_sha256: String,
    pub hashed_sources: Vec<String>,
    pub ptx_file: String,
    pub ptx_sha256: String,
    pub entry_points: Vec<String>,
}

impl KernelCrate {
    pub fn ptx_file_name(&self) -> String {
        format!("{}.{CPU}.ptx", self.artifact)
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

/// Builds one kernel crate to PTX and returns the PTX text.
fn build_ptx(root: &Path, linker: &Path, krate: &KernelCrate) -> Result<String> {
    let target_dir = root.join("target/kernels");
    let mut command = Command::new(setup::KERNEL_CARGO);
    command
        .current_dir(root)
        .env("RUSTC", setup::KERNEL_RUSTC)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", RUSTFLAGS)
        .env("CARGO_TARGET_NVPTX64_NVIDIA_CUDA_LINKER", linker)
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
    let ptx_path = target_dir.join(TARGET).join("kernel").join(format!("{}.ptx", krate.artifact));
    std::fs::read_to_string(&ptx_path).with_context(|| format!("reading {}", ptx_path.display()))
}

pub fn build(check: bool) -> Result<()> {
    setup::ensure_installed()?;
    let root = crate::workspace_root();
    let linker = build_linker(&root)?;
    let rustc = setup::version(setup::KERNEL_RUSTC, &["--version"])?;
    let llvm = setup::llvm_version()?;
    let mut problems = Vec::new();
    for krate in &KERNEL_CRATES {
        let ptx = build_ptx(&root, &linker, krate)?;
        let manifest = Manifest {
            package: krate.package.into(),
            target: TARGET.into(),
            cpu: CPU.into(),
            rustflags: RUSTFLAGS.into(),
            rustc: rustc.clone(),
            llvm: llvm.clone(),
            source_sha256: source_hash(&root, krate.sources)?,
            hashed_sources: krate.sources.iter().map(|s| s.to_string()).collect(),
            ptx_file: krate.ptx_file_name(),
            ptx_sha256: hex(&Sha256::digest(ptx.as_bytes())),
            entry_points: entry_points(&ptx),
        };
        let destination = root.join(krate.destination);
        if check {
            problems.extend(compare(&root, krate, &manifest, &ptx));
        } else {
            std::fs::create_dir_all(&destination)?;
            write_atomically(&destination.join(krate.ptx_file_name()), ptx.as_bytes())?;
            let json = serde_json::to_string_pretty(&manifest)? + "\n";
            write_atomically(&destination.join("manifest.json"), json.as_bytes())?;
            println!(
                "wrote {}/{} ({} entry points) and manifest.json",
                krate.destination,
                krate.ptx_file_name(),
                manifest.entry_points.len()
            );
        }
    }
    if !problems.is_empty() {
        bail!(
            "committed PTX is out of date:\n  {}\nrun `cargo xtask kernels` and commit the result",
            problems.join("\n  ")
        );
    }
    if check {
        println!("committed PTX matches a fresh build");
    }
    Ok(())
}

/// Differences between a fresh build and the committed files. A different kernel toolchain version
/// cannot be expected to give byte-identical PTX, so then only the sources and entry points count.
fn compare(root: &Path, krate: &KernelCrate, fresh: &Manifest, ptx: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let committed = match read_manifest(root, krate) {
        Ok(manifest) => manifest,
        Err(error) => return vec![format!("{}: {error:#}", krate.package)],
    };
    if committed.source_sha256 != fresh.source_sha256 {
        problems.push(format!("{}: kernel sources changed since the PTX was built", krate.package));
    }
    if committed.entry_points != fresh.entry_points {
        problems.push(format!("{}: entry points differ from the committed PTX", krate.package));
    }
    let same_toolchain = committed.rustc == fresh.rustc && committed.llvm == fresh.llvm;
    if same_toolchain {
        let path = root.join(krate.destination).join(krate.ptx_file_name());
        match std::fs::read_to_string(&path) {
            Ok(text) if text == ptx => {}
            Ok(_) => problems.push(format!("{}: {} differs from a fresh build", krate.package, path.display())),
            Err(error) => problems.push(format!("{}: reading {}: {error}", krate.package, path.display())),
        }
    } else {
        println!(
            "note: {} was built with {} / {}; this machine has {} / {}: comparing sources and entry points only",
            krate.package, committed.rustc, committed.llvm, fresh.rustc, fresh.llvm
        );
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

    /// Fails when a kernel source changed without `cargo xtask kernels` being run (or the committed
    /// PTX was edited by hand).
    #[test]
    fn committed_ptx_matches_kernel_sources() {
        let root = crate::workspace_root();
        for krate in &KERNEL_CRATES {
            let manifest = read_manifest(&root, krate).unwrap();
            let current = source_hash(&root, krate.sources).unwrap();
            assert_eq!(
                manifest.source_sha256, current,
                "{}: kernel sources changed since {} was built; run `cargo xtask kernels`",
                krate.package, manifest.ptx_file
            );
            let ptx = std::fs::read(root.join(krate.destination).join(&manifest.ptx_file)).unwrap();
            assert_eq!(
                manifest.ptx_sha256,
                hex(&Sha256::digest(&ptx)),
                "{}: PTX edited after its build",
                krate.package
            );
            assert_eq!(manifest.entry_points, entry_points(&String::from_utf8(ptx).unwrap()));
        }
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
