//! The PTX link step that rustc's `nvptx64-nvidia-cuda` target calls as its linker.
//!
//! rustc runs `LINKER --export-symbol NAME... OBJ.o... LIB.rlib -L DIR --target nvptx64-nvidia-cuda
//! --target-cpu sm_80 -o OUT.ptx -O3 --debug`. The objects are LLVM bitcode; with fat LTO one object
//! holds everything used, so rlibs are ignored. The step is three LLVM tools:
//! `llvm-link` (merge), `opt` (internalize all but the exported kernels, then -O3), `llc` (emit PTX).
//! Tool names are `llvm-link-22` etc.; `PTX_LINKER_LLVM_SUFFIX` overrides the `-22`.

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
        .arg(&linked)
        .arg("-o")
        .arg(&optimised);
    run_tool(opt)?;

    let mut llc = Command::new(format!("llc{suffix}"));
    llc.arg("-O3").arg(format!("-mcpu={cpu}")).arg(&optimised).arg("-o").arg(&output);
    run_tool(llc)?;
    Ok(())
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
