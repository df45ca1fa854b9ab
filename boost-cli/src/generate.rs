//! `boost generate`.

use std::io::{self, Write};
use std::path::Path;

use rayon::prelude::*;

use boost::data::synthetic::{self, SyntheticSpec, SyntheticTask, ROWS_PER_CHUNK};
use boost::Result;

use crate::args::GenerateArgs;

/// Rows made, formatted and written at a time: memory holds a block, never the table (40M x 28
/// rows held 16.5 GB before).
const BLOCK_ROWS: usize = 256 * ROWS_PER_CHUNK;

/// Writes the generator's rows as CSV and, with `--raw`, as raw `f32`.
pub(crate) fn generate(args: GenerateArgs) -> Result<()> {
    let spec = SyntheticSpec {
        rows: args.rows,
        cols: args.cols,
        noise: args.noise,
        task: match (args.regression, args.classes) {
            (true, _) => SyntheticTask::Regression,
            (false, Some(classes)) => SyntheticTask::MultiClass { classes },
            (false, None) => SyntheticTask::Binary,
        },
        seed: args.seed,
        categorical: args.categorical,
        ..Default::default()
    };
    // A spec out of range is refused before any file is opened.
    synthetic::generate_rows(&spec, 0..0)?;
    if let Some(output) = &args.output {
        write_blocks(&spec, output, csv_rows)?;
    }
    if let Some(path) = &args.raw {
        write_blocks(&spec, path, raw_rows)?;
    }
    Ok(())
}

/// How a block is written: its values, labels and columns to its bytes, in pieces.
type Format = fn(&[f32], &[f32], usize) -> Vec<Vec<u8>>;

/// The rows of `spec` into `path`, a block at a time, each block's bytes made by `format`.
fn write_blocks(spec: &SyntheticSpec, path: &Path, format: Format) -> Result<()> {
    boost::output::write_with(path, |out: &mut dyn Write| {
        for start in (0..spec.rows).step_by(BLOCK_ROWS) {
            let range = start..(start + BLOCK_ROWS).min(spec.rows);
            let (values, labels) = synthetic::generate_rows(spec, range).map_err(io::Error::other)?;
            for piece in format(&values, &labels, spec.cols) {
                out.write_all(&piece)?;
            }
        }
        Ok(())
    })
}

/// CSV lines, in pieces made in parallel: the label, then the values (empty where missing).
fn csv_rows(values: &[f32], labels: &[f32], cols: usize) -> Vec<Vec<u8>> {
    let lines =
        labels.par_chunks(ROWS_PER_CHUNK).zip(values.par_chunks(ROWS_PER_CHUNK * cols)).map(|(labels, values)| {
            let mut text = String::with_capacity(labels.len() * (cols + 1) * 8);
            for (label, row) in labels.iter().zip(values.chunks(cols)) {
                text.push_str(&label.to_string());
                for v in row {
                    text.push(',');
                    if !v.is_nan() {
                        text.push_str(&v.to_string());
                    }
                }
                text.push('\n');
            }
            text.into_bytes()
        });
    lines.collect()
}

/// Raw little-endian `f32`: the label, then the values, row after row.
fn raw_rows(values: &[f32], labels: &[f32], cols: usize) -> Vec<Vec<u8>> {
    let mut bytes = Vec::with_capacity((values.len() + labels.len()) * 4);
    for (label, row) in labels.iter().zip(values.chunks(cols)) {
        bytes.extend_from_slice(&label.to_le_bytes());
        row.iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
    }
    vec![bytes]
}
