//! `cargo xtask`: the project's build tool (run through the alias in `.cargo/config.toml`).
//!
//! ```text
//! cargo xtask setup              install the kernel toolchain (Debian packages) and report it
//! cargo xtask kernels            build both kernel crates to PTX, write PTX + manifest into the host crates
//! cargo xtask kernels --check    rebuild the PTX and compare with what is committed (ptxas only
//!                                for families whose PTX changed; `--full`: every family)
//! cargo xtask gpu-bundle         build GPU test and bench executables into .gpu/ with a run script
//! cargo xtask precision [...]    float-summation precision experiments (docs/precision.md; --help)
//! cargo xtask fuzz [--cases N]   the reader fuzz tests with many cases (release build)
//! ```

mod bundle;
mod fuzz;
mod kernels;
mod precision;
mod setup;

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

const USAGE: &str =
    "usage: cargo xtask <setup | kernels [--check [--full]] | gpu-bundle | precision [--help] | fuzz [--cases N]>";

fn main() {
    if let Err(error) = run() {
        eprintln!("xtask: error: {error:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["setup"] => setup::run(),
        ["kernels"] => kernels::build(kernels::Mode::Build),
        ["kernels", "--check"] => kernels::build(kernels::Mode::Check),
        ["kernels", "--check", "--full"] => kernels::build(kernels::Mode::CheckFull),
        ["gpu-bundle"] => bundle::run(),
        ["precision", rest @ ..] => precision::run(rest),
        ["fuzz", rest @ ..] => fuzz::run(rest),
        ["help" | "--help" | "-h"] | [] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => bail!("unknown arguments {args:?}\n{USAGE}"),
    }
}

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives inside the workspace").to_path_buf()
}
