//! `boost train --external-memory`: the training file read in batches into quantised pages, with
//! a progress bar for each pass over it.

use indicatif::{ProgressBar, ProgressStyle};

use boost::data::{Categories, CsvBatches, DataFormat, DataFormat::Libsvm};
use boost::param::byte_size;
use boost::{Batch, BatchSource, DMatrix, Error, ExternalMemory, Params, Result};

use crate::args::TrainArgs;
use crate::read::{csv_options, format, spool_if_not_a_file, ForModel};

/// The training file's pages and its string codes (`categories`: a continued model's).
pub(crate) fn read_pages(
    args: &TrainArgs,
    params: &Params,
    categories: Option<&Categories>,
) -> Result<(DMatrix, Categories)> {
    // Standard input and pipes are read several times: a copy on disk (never in memory).
    let spooled = spool_if_not_a_file(&args.data)?;
    let path = spooled.as_deref().unwrap_or(&args.data);
    let detected = format(&args.input).map_or_else(|| DataFormat::detect(path), Ok)?;
    if detected == Libsvm {
        return Err(Error::InvalidParameter {
            name: "--external-memory".into(),
            reason: "reads CSV/TSV files for now: convert the libsvm file, or train without it".into(),
        });
    }
    let for_model = ForModel { categories, has_label: true, ..Default::default() };
    eprintln!("boost: reading {} for its columns, rows and string codes", args.data.display());
    let mut source =
        CsvBatches::open(path, &csv_options(&args.input, &for_model), &args.input.side_files(), args.batch_rows)?;
    let host_bytes = args.host_cache.as_deref().map(|size| byte_size("--host-cache", size)).transpose()?;
    let memory = ExternalMemory {
        max_bin: params.tree.max_bin,
        feature_types: source.info().feature_types.clone(),
        cache_dir: args.cache_dir.clone(),
        host_bytes: host_bytes.unwrap_or(0) as usize,
        ..Default::default()
    };
    let rows = source.rows();
    let mut passes =
        Passes { source: &mut source, bar: ProgressBar::new(rows as u64), pass: 0, missing: args.input.missing };
    passes.bar.set_style(
        ProgressStyle::with_template("{msg:>14} {bar:40} {pos}/{len} rows, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let pages = DMatrix::from_batches(&mut passes, &memory);
    passes.bar.finish_and_clear();
    let mut pages = pages?;
    pages.set_feature_names(source.info().feature_names.clone())?;
    let groups = &source.info().group_ptr;
    if !groups.is_empty() {
        let sizes: Vec<usize> = groups.windows(2).map(|g| g[1] - g[0]).collect();
        pages.set_groups(&sizes)?;
    }
    if let Some(info) = pages.pages() {
        eprintln!("boost: {} rows in {info}", pages.rows());
    }
    Ok((pages, source.categories().clone()))
}

/// The batches of a file, each pass shown on a progress bar.
struct Passes<'s> {
    source: &'s mut CsvBatches,
    bar: ProgressBar,
    pass: usize,
    /// `--missing`, marked in each batch.
    missing: Option<f32>,
}

/// What `DMatrix::from_batches`'s passes do, in order (a column without bins but with values,
/// all weightless, takes a pass more, before the pages').
const PASSES: [&str; 3] = ["counting", "sketching", "packing pages"];

impl BatchSource for Passes<'_> {
    fn reset(&mut self) -> Result<()> {
        self.bar.set_position(0);
        self.bar.set_message(PASSES.get(self.pass).copied().unwrap_or("reading"));
        self.pass += 1;
        self.source.reset()
    }

    fn next_batch(&mut self) -> Result<Option<Batch>> {
        let mut batch = self.source.next_batch()?;
        if let Some(batch) = &mut batch {
            self.bar.inc(batch.features.rows() as u64);
            if let Some(missing) = self.missing {
                batch.features.mark_missing(missing);
            }
        }
        Ok(batch)
    }
}
