//! `cargo xtask setup`: installs the kernel toolchain of ../shared/docs/toolchain.md.
//!
//! Debian 12's `rustc-web`, `cargo-web` and `rust-web-src` (a newer rustc than the host's, with the
//! library source that `-Zbuild-std=core` needs) and `llvm-22` (llvm-link, opt, llc for the PTX link
//! step). The host toolchain (rustup's stable) stays first on PATH and is untouched.

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

pub fn run() -> Result<()> {
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
    let gone = missing();
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
