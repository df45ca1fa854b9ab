//! `cargo xtask gpu-bundle`: builds the GPU test and benchmark executables (release, feature `gpu`)
//! and a release `xtask` (for `precision --device cuda`) into `.gpu/` (ignored by git) with `run.sh`,
//! so that one call on a lent GPU machine, which has no Rust toolchain, runs them all:
//! `bash .gpu/run.sh [tests|bench|all|precision]`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const RUN_SCRIPT: &str = r#"#!/usr/bin/env bash
# Made by `cargo xtask gpu-bundle`. Runs the GPU tests and/or benchmarks; the exit status is non-zero
# when any of them fails. Usage: bash .gpu/run.sh [tests|bench|all|first-call] [BENCH_MAX_LOG2]
#   or: bash .gpu/run.sh precision [OPTIONS of cargo xtask precision]  (GPU columns; CSV and Markdown
#       into $OUT/precision; run from the repository root, which has data/)
#   or: bash .gpu/run.sh train [ROWS] [ROUNDS] [MAX_DEPTH]  (`boost train` on synthetic data with
#       device=cpu and device=cuda, cold; the two model files must be byte-identical)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Executables travel gzipped (each embeds the PTX and the emulator's kernels): unpack them once.
for packed in "$here"/tests/*.gz "$here"/criterion/*.gz "$here"/bin/*.gz; do
  [[ -e $packed ]] || continue
  gunzip -f "$packed" && chmod +x "${packed%.gz}"
done
what=${1:-all}
max_log2=${2:-28}
status=0
out=${OUT:-/tmp}
# Kernel module loads (one line each on stderr) are summed after the tests.
loads_log="$out/module_loads.log"
: > "$loads_log"
if [[ $what == all || $what == first-call ]]; then
  echo "=== first call in a fresh process, cold (CUDA_CACHE_DISABLE=1): machine code"
  time CUDA_CACHE_DISABLE=1 "$here/bin/bandwidth" first-call || status=1
  echo "=== the same, loading the PTX instead (PRIMITIVES_KERNEL_IMAGE=ptx)"
  time CUDA_CACHE_DISABLE=1 PRIMITIVES_KERNEL_IMAGE=ptx "$here/bin/bandwidth" first-call || status=1
fi
if [[ $what == all || $what == tests ]]; then
  for test in "$here"/tests/*; do
    echo "=== test $(basename "$test")"
    CUDA_CACHE_DISABLE=1 PRIMITIVES_LOG_LOADS=1 "$test" 2> >(tee -a "$loads_log" >&2) || status=1
  done
  grep -h 'primitives: loaded' "$loads_log" | awk '{ for (i = 2; i <= NF; i++) if ($i == "ms") total += $(i - 1) }
    END { printf "=== kernel module loading over the tests (cold): %d loads, %.1f ms in total\n", NR, total }'
fi
if [[ $what == precision ]]; then
  echo "=== precision experiments (cargo xtask precision --device cuda)"
  "$here/bin/xtask" precision --device cuda --data "$here/../data" --out "$out/precision" "${@:2}" || status=1
fi
if [[ $what == train ]]; then
  rows=${2:-1000000}; rounds=${3:-20}; depth=${4:-8}
  "$here/bin/boost" generate "$out/train.csv" --rows "$rows" || status=1
  for device in cpu cuda; do
    echo "=== boost train, $rows rows, $rounds rounds, depth $depth, device=$device (cold)"
    CUDA_CACHE_DISABLE=1 PRIMITIVES_LOG_LOADS=1 "$here/bin/boost" train "$out/train.csv" --rounds "$rounds" \
      --verbose-eval "$rounds" -o "$out/model-$device.json" objective=binary:logistic eval_metric=logloss \
      max_depth="$depth" eta=0.1 max_bin=256 device="$device" verbosity=2 || status=1
  done
  if cmp -s "$out/model-cpu.json" "$out/model-cuda.json"; then
    echo "=== the device=cpu and device=cuda model files are byte-identical"
  else
    echo "=== the device=cpu and device=cuda model files DIFFER"; status=1
  fi
  rm -f "$out/train.csv"
fi
if [[ $what == all || $what == bench ]]; then
  echo "=== side by side: device reduce"
  python3 "$here/scripts/reduce_side_by_side.py" "$here/bin/bandwidth" "$max_log2" "$out/reduce_side_by_side.csv" || status=1
  echo "=== side by side: device scan"
  python3 "$here/scripts/scan_side_by_side.py" "$here/bin/bandwidth" "$max_log2" "$out/scan_side_by_side.csv" || status=1
  echo "=== side by side: select and partition"
  python3 "$here/scripts/select_side_by_side.py" "$here/bin/bandwidth" "$max_log2" "$out/select_side_by_side.csv" || status=1
  echo "=== side by side: segmented reduce"
  python3 "$here/scripts/segmented_side_by_side.py" "$here/bin/bandwidth" "$max_log2" "$out/segmented_side_by_side.csv" || status=1
  echo "=== multireduce and multiscan against the bucket count"
  python3 "$here/scripts/multi_side_by_side.py" "$here/bin/bandwidth" 26 "$out/multi_side_by_side.csv" || status=1
  echo "=== side by side: radix sort and segmented sort"
  python3 "$here/scripts/sort_side_by_side.py" "$here/bin/bandwidth" "$max_log2" "$out/sort_side_by_side.csv" || status=1
  echo "=== side by side: histograms"
  python3 "$here/scripts/histogram_side_by_side.py" "$here/bin/bandwidth" "$max_log2" "$out/histogram_side_by_side.csv" || status=1
  for bench in "$here"/criterion/*; do
    echo "=== criterion $(basename "$bench")"
    "$bench" --bench --noplot || status=1
  done
fi
echo "=== run.sh finished with status $status"
exit $status
"#;

/// An executable that cargo built, as reported by `--message-format=json`.
struct Artifact {
    name: String,
    kind: String,
    path: PathBuf,
}

fn build(root: &Path, args: &[&str]) -> Result<Vec<Artifact>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    println!("cargo {}", args.join(" "));
    let output = Command::new(cargo)
        .current_dir(root)
        .args(args)
        .arg("--message-format=json-render-diagnostics")
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo")?;
    if !output.status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    let mut artifacts = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" {
            continue;
        }
        let target = &message["target"];
        if let (Some(path), Some(name), Some(kind)) =
            (message["executable"].as_str(), target["name"].as_str(), target["kind"][0].as_str())
        {
            artifacts.push(Artifact { name: name.to_string(), kind: kind.to_string(), path: PathBuf::from(path) });
        }
    }
    Ok(artifacts)
}

/// Copies each executable gzipped (`run.sh` unpacks them on the GPU machine).
fn copy_all(artifacts: &[Artifact], destination: &Path) -> Result<()> {
    std::fs::create_dir_all(destination)?;
    for artifact in artifacts {
        let target = destination.join(format!("{}.gz", artifact.name));
        let bytes = std::fs::read(&artifact.path).with_context(|| format!("reading {}", artifact.path.display()))?;
        let file = std::fs::File::create(&target).with_context(|| format!("creating {}", target.display()))?;
        let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        std::io::Write::write_all(&mut encoder, &bytes)?;
        encoder.finish()?;
        println!("  {}", target.display());
    }
    Ok(())
}

pub fn run() -> Result<()> {
    let root = crate::workspace_root();
    let bundle = root.join(".gpu");
    if bundle.exists() {
        std::fs::remove_dir_all(&bundle).context("clearing .gpu")?;
    }
    let tests = build(&root, &["test", "--release", "--package", "tests", "--features", "gpu", "--no-run"])?;
    // Only the integration tests that exercise the GPU; the library's own unit tests run in CI.
    let tests: Vec<Artifact> = tests.into_iter().filter(|a| a.kind == "test" && a.name.starts_with("gpu")).collect();
    let criterion = build(&root, &["bench", "--package", "benches", "--features", "gpu", "--no-run"])?;
    let mut binaries = build(&root, &["build", "--release", "--package", "benches", "--features", "gpu", "--bins"])?;
    // `xtask precision --device cuda`: the GPU columns of the precision experiments (docs/precision.md).
    let xtask = build(&root, &["build", "--release", "--package", "xtask", "--bin", "xtask"])?;
    binaries.extend(xtask.into_iter().filter(|a| a.kind == "bin" && a.name == "xtask"));
    // `run.sh train`: the `boost` CLI on both devices.
    let boost = build(&root, &["build", "--release", "--package", "boost-cli", "--bin", "boost"])?;
    binaries.extend(boost.into_iter().filter(|a| a.kind == "bin" && a.name == "boost"));
    copy_all(&tests, &bundle.join("tests"))?;
    copy_all(&criterion.into_iter().filter(|a| a.kind == "bench").collect::<Vec<_>>(), &bundle.join("criterion"))?;
    copy_all(&binaries, &bundle.join("bin"))?;
    let scripts = bundle.join("scripts");
    std::fs::create_dir_all(&scripts)?;
    for entry in std::fs::read_dir(root.join("benches/scripts"))? {
        let entry = entry?;
        std::fs::copy(entry.path(), scripts.join(entry.file_name()))?;
    }
    std::fs::write(bundle.join("run.sh"), RUN_SCRIPT)?;
    let bytes: u64 = walk_size(&bundle)?;
    println!(
        "wrote .gpu/ ({:.1} MiB); on the GPU machine: bash .gpu/run.sh [tests|bench|all|first-call|precision|train]",
        bytes as f64 / 1048576.0
    );
    if bytes > 60 << 20 {
        println!("warning: the bundle is close to the 64 MiB the device tool carries");
    }
    Ok(())
}

fn walk_size(path: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        total += if entry.file_type()?.is_dir() { walk_size(&entry.path())? } else { entry.metadata()?.len() };
    }
    Ok(total)
}
