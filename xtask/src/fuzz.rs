//! `cargo xtask fuzz [--cases N]`: the reader fuzz tests (`boost/tests/fuzz_readers.rs`) with many
//! more cases than `cargo test` gives them (64 per target), in a release build. Each target prints
//! what it covered: cases, inputs read, inputs refused with an error, and the largest memory peak.

use anyhow::{bail, Context, Result};
use std::process::Command;

const DEFAULT_CASES: usize = 20_000;

pub fn run(args: &[&str]) -> Result<()> {
    let cases = match args {
        [] => DEFAULT_CASES,
        ["--cases", n] => n.parse().with_context(|| format!("--cases {n}: not a number"))?,
        _ => bail!("usage: cargo xtask fuzz [--cases N] (default {DEFAULT_CASES} per target)"),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let start = std::time::Instant::now();
    let status = Command::new(cargo)
        .current_dir(crate::workspace_root())
        .env("PROPTEST_CASES", cases.to_string())
        .args(["test", "--release", "--package", "boost", "--test", "fuzz_readers", "--", "--nocapture"])
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("the fuzz tests failed ({status}); the failing input is printed above");
    }
    println!("fuzzed every reader with {cases} cases per target in {:.0} s", start.elapsed().as_secs_f64());
    Ok(())
}
