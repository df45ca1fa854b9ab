//! `boost`: train, predict and evaluate gradient-boosted trees from the command line, with XGBoost's
//! parameter names (`boost train data/higgs_lgbm_sample/binary.train objective=binary:logistic eta=0.1`).
//!
//! A thin layer over the `boost` library: `args` (the options), `read` (data files), one file per
//! subcommand, `plot` (the learning curve).

mod args;
mod external;
mod generate;
mod plot;
mod predict;
mod read;
mod train;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use args::{DumpArgs, EvalArgs, GenerateArgs, ImportanceArgs, PredictArgs, TrainArgs};
use boost::{Error, Params, Result};

#[derive(Parser)]
#[command(
    name = "boost",
    version,
    about = "Gradient-boosted trees, XGBoost-compatible: hist, exact and oblivious trees on the CPU or a GPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a model; parameters are XGBoost's (`objective=binary:logistic max_depth=6 eta=0.3 ...`).
    #[command(after_help = args::train_help())]
    Train(TrainArgs),
    /// Predict with a model: one line per row (outputs separated by commas).
    Predict(PredictArgs),
    /// Evaluate a model on labelled data with XGBoost's metrics.
    Eval(EvalArgs),
    /// Feature importance of a model (XGBoost's `get_score`), highest first.
    Importance(ImportanceArgs),
    /// Dump a model's trees as XGBoost's `dump_model` writes them (text or JSON).
    Dump(DumpArgs),
    /// Write a synthetic dataset (dense, with missing values; label in column 0) as CSV.
    Generate(GenerateArgs),
}

/// Writes a line to standard output. A closed pipe (`boost predict ... | head`) ends the output
/// quietly instead of panicking, as command-line tools do.
pub(crate) fn print_line(line: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("boost: writing to standard output: {e}");
        std::process::exit(1);
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("boost: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Train(args) => train::train(args),
        Command::Predict(args) => predict::predict(args),
        Command::Eval(args) => predict::eval(args),
        Command::Importance(args) => predict::importance(args),
        Command::Dump(args) => predict::dump(args),
        Command::Generate(args) => generate::generate(args),
    }
}

/// `NAME=VALUE` pairs as parameters.
pub(crate) fn parse_params(pairs: &[String]) -> Result<Params> {
    let mut split = Vec::with_capacity(pairs.len());
    for p in pairs {
        let (name, value) = p
            .split_once('=')
            .ok_or_else(|| Error::InvalidParameter { name: p.clone(), reason: "expected NAME=VALUE".into() })?;
        split.push((name.trim().to_string(), value.trim().to_string()));
    }
    Params::from_pairs(&split)
}

/// `BEGIN:END` as an iteration range.
pub(crate) fn parse_range(text: &str) -> Result<(usize, usize)> {
    let bad = || Error::InvalidParameter {
        name: "--iteration-range".into(),
        reason: format!("`{text}`: expected BEGIN:END"),
    };
    let (b, e) = text.split_once(':').ok_or_else(bad)?;
    Ok((b.trim().parse().map_err(|_| bad())?, e.trim().parse().map_err(|_| bad())?))
}
