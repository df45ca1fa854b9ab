//! `boost generate`.

use boost::data::synthetic::{self, SyntheticSpec, SyntheticTask};
use boost::Result;

use crate::args::GenerateArgs;

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
    let data = synthetic::generate(&spec)?;
    let csv = args.output.is_some();
    let mut text = String::with_capacity(if csv { data.rows() * (data.cols() + 1) * 8 } else { 0 });
    let mut row = vec![0f32; data.cols()];
    let mut raw = Vec::with_capacity(if args.raw.is_some() { data.rows() * (data.cols() + 1) } else { 0 });
    for i in 0..data.rows() {
        data.features.fill_row(i, &mut row);
        if args.raw.is_some() {
            raw.push(data.info.labels[i]);
            raw.extend_from_slice(&row);
        }
        if !csv {
            continue;
        }
        text.push_str(&data.info.labels[i].to_string());
        for v in &row {
            text.push(',');
            if !v.is_nan() {
                text.push_str(&v.to_string());
            }
        }
        text.push('\n');
    }
    if let Some(output) = &args.output {
        boost::output::write_file(output, text.as_bytes())?;
    }
    if let Some(path) = &args.raw {
        let bytes: Vec<u8> = raw.iter().flat_map(|v| v.to_le_bytes()).collect();
        boost::output::write_file(path, &bytes)?;
    }
    Ok(())
}
