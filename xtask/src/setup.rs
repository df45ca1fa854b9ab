//! `cargo xtask setup`: installs the kernel toolchain of ../shared/docs/toolchain.md.
//!
//! Debian 12's `rustc-web`, `cargo-web` and `rust-web-src` (a newer rustc than the host's, with the
//! library source that `-Zbuild-std=core` needs) and `llvm-22` (llvm-link, opt, llc for the PTX link
//! step). The host toolchain (rustup's stable) stays first on PATH and is untouched.
//!
//! Also NVIDIA's `ptxas`, which turns the PTX into machine code (SASS) for each shipped GPU
//! architecture: from the `nvidia-cuda-nvcc-cu12` wheel on PyPI (no CUDA install), pinned, since
//! the committed cubins are checked byte for byte against a fresh build. It goes into
//! `target/tools/`; `PTXAS` names another one.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

pub const KERNEL_RUSTC: &str = "/usr/bin/rustc";
pub const KERNEL_CARGO: &str = "/usr/bin/cargo";
const LIBRARY_SOURCE: &str = "/usr/lib/rustlib/src/rust/library/core";
const LLVM_TOOLS: [&str; 3] = ["/usr/bin/llvm-link-22", "/usr/bin/opt-22", "/usr/bin/llc-22"];
const PACKAGES: [&str; 4] = ["rustc-web", "cargo-web", "rust-web-src", "llvm-22"];

/// What is missing from the kernel toolchain, as paths.
fn missing() -> Vec<&'static str> {
    [KERNEL_RUSTC, KERNEL_CARGO, LIBRARY_SOURCE]
        .into_iter()
        .chain(LLVM_TOOLS)
        .filter(|p| !Path::new(p).exists())
        .collect()
}

/// The pinned wheel that carries `ptxas`, and where it is installed.
const PTXAS_WHEEL: &str = "nvidia-cuda-nvcc-cu12==12.9.86";
const PTXAS_DIR: &str = "target/tools/cuda-nvcc-12.9.86";
const PTXAS_IN_WHEEL: &str = "nvidia/cuda_nvcc/bin/ptxas";

/// The `ptxas` the kernel build uses: `$PTXAS`, else the one `setup` installed.
pub fn ptxas() -> std::path::PathBuf {
    match std::env::var_os("PTXAS") {
        Some(path) => path.into(),
        None => crate::workspace_root().join(PTXAS_DIR).join(PTXAS_IN_WHEEL),
    }
}

fn install_ptxas() -> Result<()> {
    if ptxas().exists() {
        println!("ptxas already installed");
    } else {
        let target = crate::workspace_root().join(PTXAS_DIR);
        println!("installing ptxas: pip install {PTXAS_WHEEL} into {}", target.display());
        let status = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"])
            .arg(&target)
            .arg(PTXAS_WHEEL)
            .status()
            .context("running python3 -m pip (needed to fetch ptxas)")?;
        if !status.success() || !ptxas().exists() {
            bail!("installing {PTXAS_WHEEL} failed ({status}); ptxas is needed for the kernel build");
        }
    }
    println!("ptxas: {}", ptxas_version()?);
    Ok(())
}

/// "Cuda compilation tools, release 12.9, V12.9.86" from `ptxas --version`.
pub fn ptxas_version() -> Result<String> {
    let path = ptxas();
    let text = version(&path.to_string_lossy(), &["--version"])?;
    Ok(text.lines().map(str::trim).find(|l| l.starts_with("Cuda compilation tools")).unwrap_or("unknown").to_string())
}

pub fn run() -> Result<()> {
    install_apt_packages()?;
    install_ptxas()
}

fn install_apt_packages() -> Result<()> {
    let before = missing();
    if before.is_empty() {
        println!("kernel toolchain already installed; nothing to do");
    } else {
        println!("missing: {}", before.join(", "));
        println!("installing Debian packages: {}", PACKAGES.join(" "));
        let root = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n").unwrap_or(false);
        let apt = |args: &[&str]| -> Result<()> {
            let mut command = if root { Command::new("apt-get") } else { Command::new("sudo") };
            if !root {
                command.arg("apt-get");
            }
            command.env("DEBIAN_FRONTEND", "noninteractive").args(args);
            let status = command.status().with_context(|| format!("running apt-get {args:?}"))?;
            if !status.success() {
                bail!("apt-get {args:?} failed with {status}");
            }
            Ok(())
        };
        apt(&["update", "-q"])?;
        let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
        install.extend(PACKAGES);
        apt(&install)?;
        let after = missing();
        if !after.is_empty() {
            bail!("still missing after installing {}: {}", PACKAGES.join(" "), after.join(", "));
        }
        println!("installed: {}", PACKAGES.join(" "));
    }
    println!("kernel rustc: {}", version(KERNEL_RUSTC, &["--version"])?);
    println!("kernel cargo: {}", version(KERNEL_CARGO, &["--version"])?);
    println!("llvm: {}", llvm_version()?);
    println!("library source for -Zbuild-std: {LIBRARY_SOURCE}");
    Ok(())
}

pub fn ensure_installed() -> Result<()> {
    let mut gone = missing();
    let ptxas = ptxas();
    if !ptxas.exists() {
        gone.push("ptxas");
    }
    if !gone.is_empty() {
        bail!("the kernel toolchain is not installed (missing {}); run `cargo xtask setup`", gone.join(", "));
    }
    Ok(())
}

pub fn version(program: &str, args: &[&str]) -> Result<String> {
    let output = Command::new(program).args(args).output().with_context(|| format!("running {program}"))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// "Debian LLVM version 22.1.8" from `llc-22 --version`.
pub fn llvm_version() -> Result<String> {
    let text = version(LLVM_TOOLS[2], &["--version"])?;
    Ok(text.lines().map(str::trim).find(|l| l.contains("LLVM version")).unwrap_or("LLVM version unknown").to_string())
}
