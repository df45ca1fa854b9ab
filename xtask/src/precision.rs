//! `cargo xtask precision`: how accurate are float sums of the sizes gradient boosting makes, and
//! what does that do to the trees? Three experiments (issue 7; docs/precision.md has the results):
//!
//! 1. [`sums`]: Mitchell & Frank's Table 8 (10 million uniform numbers in `[-1, 1]`, 100 repeats),
//!    against a correctly rounded exact sum ([`exact`]): sequential, pairwise, device-reduce order,
//!    Kahan in `f32`; sequential and device-reduce order in `f64`; 64-bit fixed point with XGBoost's
//!    rounding factor; our GPU reduce in `f32` and `f64`. Then the same against `n` (10^3 to 10^8).
//! 2. [`histograms`]: a 256-bin histogram of 10M logistic-loss gradient pairs, accumulated in `f32`,
//!    `f64` and fixed point, on the CPU in row order and on the GPU with atomics (run to run).
//! 3. [`models`]: `boost` trained with histograms in fixed point, `f64` and `f32` on the HIGGS sample
//!    and a 1M-row synthetic set: splits that differ from the fixed-point model, test metrics.
//!
//! Every table is printed and written as CSV, and all of them as one Markdown file, under `--out`.
//! The GPU columns need `--device cuda` (on a machine without a GPU that is an error, never a silent
//! skip); `--device emulator` runs them on the SIMT emulator (small sizes only: the tests do that).

mod exact;
mod histograms;
mod models;
mod sums;

use anyhow::{bail, Context, Result};
use primitives::{DeviceKind, Gpu};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use exact::ExactSum;

pub const USAGE: &str = "\
usage: cargo xtask precision [OPTIONS]

  --device cpu|cuda|cuda:N|emulator   where the GPU columns run (default cpu: no GPU columns)
  --gpu                               the same as --device cuda
  --parts sums,histograms,models      which experiments (default: all three)
  --n N                               numbers per sum in the Table 8 experiment (default 10000000)
  --repeats R                         repeats of it (default 100)
  --sizes N,N,...                     sizes of the error-against-n table (default 1e3,1e4,...,1e8)
  --size-repeats R                    repeats per size (default 10)
  --hist-rows N --bins B --hist-runs R  histogram experiment (default 10000000 rows, 256 bins, 10 runs)
  --model-rows N --rounds R --max-depth D  model experiment (default 1000000 synthetic rows, 100 rounds, depth 6)
  --sms N                             multiprocessors for the CPU replay of the device reduce's order
                                      (default: the GPU's, else 132 as an H100 SXM or H200)
  --seed S                            (default 42)
  --data DIR                          the shipped datasets (default: the workspace's data/, else ./data)
  --out DIR                           where the CSV and Markdown go (default target/precision)
  --quick                             small sizes for CI (1e5 numbers, 5 repeats, ...); later options override";

/// What to run, and how big.
#[derive(Clone, Debug)]
pub struct Options {
    pub device: Option<DeviceKind>,
    pub sums: bool,
    pub histograms: bool,
    pub models: bool,
    pub n: usize,
    pub repeats: usize,
    pub sizes: Vec<usize>,
    pub size_repeats: usize,
    pub hist_rows: usize,
    pub bins: usize,
    pub hist_runs: usize,
    pub model_rows: usize,
    pub rounds: usize,
    pub max_depth: u32,
    pub sms: Option<u32>,
    pub seed: u64,
    pub data: Option<PathBuf>,
    pub out: PathBuf,
    /// The command line, for the report.
    pub command: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            device: None,
            sums: true,
            histograms: true,
            models: true,
            n: 10_000_000,
            repeats: 100,
            sizes: (3..=8).map(|e| 10usize.pow(e)).collect(),
            size_repeats: 10,
            hist_rows: 10_000_000,
            bins: 256,
            hist_runs: 10,
            model_rows: 1_000_000,
            rounds: 100,
            max_depth: 6,
            sms: None,
            seed: 42,
            data: None,
            out: crate::workspace_root().join("target/precision"),
            command: "cargo xtask precision".into(),
        }
    }
}

/// A count written as `10000000`, `1e7` or `10_000_000`.
fn parse_count(text: &str) -> Result<usize> {
    let clean = text.replace('_', "");
    if let Ok(n) = clean.parse::<usize>() {
        return Ok(n);
    }
    let value: f64 = clean.parse().with_context(|| format!("`{text}` is not a count"))?;
    if !(value >= 0.0 && value.fract() == 0.0 && value < 1e15) {
        bail!("`{text}` is not a count");
    }
    Ok(value as usize)
}

impl Options {
    /// Small sizes that run in seconds in a debug build (CI).
    pub fn quick() -> Self {
        Self {
            n: 100_000,
            repeats: 5,
            sizes: vec![1_000, 10_000, 100_000],
            size_repeats: 3,
            hist_rows: 100_000,
            hist_runs: 3,
            model_rows: 20_000,
            rounds: 5,
            ..Self::default()
        }
    }

    pub fn parse(args: &[&str]) -> Result<Self> {
        let mut options = if args.contains(&"--quick") { Self::quick() } else { Self::default() };
        options.command =
            std::iter::once("cargo xtask precision").chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
        let mut rest = args.iter().copied();
        while let Some(flag) = rest.next() {
            let mut value = || rest.next().with_context(|| format!("{flag} needs a value\n{USAGE}"));
            match flag {
                "--quick" => {}
                "--gpu" => options.device = Some(DeviceKind::Cuda { ordinal: 0 }),
                "--device" => {
                    let v = value()?;
                    options.device = if v == "cpu" { None } else { Some(DeviceKind::parse(v)?) };
                }
                "--parts" => {
                    let v = value()?;
                    (options.sums, options.histograms, options.models) = (false, false, false);
                    for part in v.split(',') {
                        match part.trim() {
                            "sums" => options.sums = true,
                            "histograms" | "hist" => options.histograms = true,
                            "models" => options.models = true,
                            other => bail!("unknown part `{other}` (sums, histograms, models)"),
                        }
                    }
                }
                "--n" => options.n = parse_count(value()?)?,
                "--repeats" => options.repeats = parse_count(value()?)?,
                "--sizes" => options.sizes = value()?.split(',').map(parse_count).collect::<Result<_>>()?,
                "--size-repeats" => options.size_repeats = parse_count(value()?)?,
                "--hist-rows" => options.hist_rows = parse_count(value()?)?,
                "--bins" => options.bins = parse_count(value()?)?,
                "--hist-runs" => options.hist_runs = parse_count(value()?)?,
                "--model-rows" => options.model_rows = parse_count(value()?)?,
                "--rounds" => options.rounds = parse_count(value()?)?,
                "--max-depth" => options.max_depth = parse_count(value()?)? as u32,
                "--sms" => options.sms = Some(parse_count(value()?)? as u32),
                "--seed" => options.seed = value()?.parse().context("--seed")?,
                "--data" => options.data = Some(PathBuf::from(value()?)),
                "--out" => options.out = PathBuf::from(value()?),
                other => bail!("unknown option `{other}`\n{USAGE}"),
            }
        }
        if options.repeats == 0 || options.size_repeats == 0 || options.hist_runs == 0 || options.n == 0 {
            bail!("sizes and repeats must be at least 1");
        }
        if options.bins == 0 {
            bail!("--bins must be at least 1");
        }
        Ok(options)
    }

    /// The shipped datasets' directory.
    pub fn data_dir(&self) -> PathBuf {
        if let Some(dir) = &self.data {
            return dir.clone();
        }
        let built_in = crate::workspace_root().join("data");
        if built_in.is_dir() {
            built_in
        } else {
            PathBuf::from("data")
        }
    }
}

/// One table cell: text, an integer or a float (scientific notation).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Text(String),
    Int(u64),
    Float(f64),
    /// A float printed with a fixed number of decimals (metrics).
    Fixed(f64, usize),
}

impl Cell {
    fn markdown(&self) -> String {
        match self {
            // A `|` would end the cell.
            Cell::Text(t) => t.replace('|', "\\|"),
            Cell::Int(i) => i.to_string(),
            Cell::Float(x) if *x == 0.0 => "0".into(),
            Cell::Float(x) if x.is_nan() => "n/a".into(),
            Cell::Float(x) => format!("{x:.3e}"),
            Cell::Fixed(x, decimals) => format!("{x:.decimals$}"),
        }
    }

    fn csv(&self) -> String {
        match self {
            Cell::Text(t) if t.contains([',', '"', '\n']) => format!("\"{}\"", t.replace('"', "\"\"")),
            Cell::Text(t) => t.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::Float(x) => format!("{x:e}"),
            Cell::Fixed(x, _) => format!("{x}"),
        }
    }
}

impl From<&str> for Cell {
    fn from(t: &str) -> Self {
        Cell::Text(t.to_string())
    }
}
impl From<String> for Cell {
    fn from(t: String) -> Self {
        Cell::Text(t)
    }
}

/// A result table: printed, written as `<name>.csv`, and one section of the Markdown report.
#[derive(Clone, Debug)]
pub struct Table {
    pub name: &'static str,
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    /// Paragraphs under the table in the Markdown report.
    pub notes: Vec<String>,
}

impl Table {
    pub fn new(name: &'static str, title: impl Into<String>, headers: &[&str]) -> Self {
        Self {
            name,
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn markdown(&self) -> String {
        let headers: Vec<String> = self.headers.iter().map(|h| Cell::Text(h.clone()).markdown()).collect();
        let mut text = format!("### {}\n\n| {} |\n|", self.title, headers.join(" | "));
        for (i, _) in self.headers.iter().enumerate() {
            text.push_str(if i == 0 { " --- |" } else { " ---: |" });
        }
        text.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(Cell::markdown).collect();
            let _ = writeln!(text, "| {} |", cells.join(" | "));
        }
        for note in &self.notes {
            let _ = write!(text, "\n{note}\n");
        }
        text
    }

    pub fn csv(&self) -> String {
        let mut text = self.headers.iter().map(|h| Cell::Text(h.clone()).csv()).collect::<Vec<_>>().join(",");
        text.push('\n');
        for row in &self.rows {
            text.push_str(&row.iter().map(Cell::csv).collect::<Vec<_>>().join(","));
            text.push('\n');
        }
        text
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock (civil-from-days, no time zone data).
fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Opens the device of `--device`; without a usable one this is an error (the GPU columns were
/// asked for).
fn open_device(kind: DeviceKind) -> Result<Gpu> {
    let name = match kind {
        DeviceKind::Cuda { ordinal } => format!("cuda:{ordinal}"),
        DeviceKind::Emulated(_) => "emulator".into(),
    };
    Gpu::with_kind(kind).map_err(|error| {
        anyhow::anyhow!(
            "--device {name} was asked for and is not usable here: {error}\n\
             (run without --device/--gpu for the CPU columns only)"
        )
    })
}

/// The report: what ran where, then the tables.
pub struct Report {
    pub header: Vec<String>,
    pub tables: Vec<Table>,
}

impl Report {
    pub fn markdown(&self) -> String {
        let mut text = String::from("# Precision experiments (`cargo xtask precision`)\n\n");
        for line in &self.header {
            let _ = writeln!(text, "- {line}");
        }
        for table in &self.tables {
            let _ = write!(text, "\n{}", table.markdown());
        }
        text
    }

    /// Writes every table as CSV and the whole report as `precision.md` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for table in &self.tables {
            let path = dir.join(format!("{}.csv", table.name));
            std::fs::write(&path, table.csv()).with_context(|| format!("writing {}", path.display()))?;
        }
        let path = dir.join("precision.md");
        std::fs::write(&path, self.markdown()).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }
}

/// Runs the experiments `options` asks for; prints each table as it is done and returns the report
/// (not yet written).
pub fn run_experiments(options: &Options) -> Result<Report> {
    let gpu = options.device.map(open_device).transpose()?;
    let sms = options.sms.or(gpu.as_ref().map(|g| g.properties().multiprocessors)).unwrap_or(sums::DEFAULT_SMS);
    let threads = rayon::current_num_threads();
    let mut header = vec![
        format!("Date (UTC): {}", today()),
        format!("Command: `{}`", options.command),
        format!("CPU: {} ({threads} threads)", cpu_name()),
        match &gpu {
            Some(g) => format!(
                "GPU: {} ({} multiprocessors, compute capability {}.{})",
                g.properties().name,
                g.properties().multiprocessors,
                g.properties().compute_capability.0,
                g.properties().compute_capability.1
            ),
            None => "GPU: none (GPU columns not run: `--device cuda` fills them)".into(),
        },
        format!("CPU replay of the device reduce's order for {sms} multiprocessors"),
    ];
    if cfg!(debug_assertions) {
        header.push("Debug build (timings, if any, are not representative)".into());
    }
    let mut tables = Vec::new();
    let emit = |table: Table, tables: &mut Vec<Table>| {
        println!("\n{}", table.markdown());
        tables.push(table);
    };
    if options.sums {
        let start = std::time::Instant::now();
        let (table8, checks) = sums::table8(options, gpu.as_ref(), sms)?;
        emit(table8, &mut tables);
        if let Some(checks) = checks {
            emit(checks, &mut tables);
        }
        emit(sums::against_n(options, gpu.as_ref(), sms)?, &mut tables);
        eprintln!("precision: sums in {:.1} s", start.elapsed().as_secs_f64());
    }
    if options.histograms {
        let start = std::time::Instant::now();
        emit(histograms::run(options, gpu.as_ref())?, &mut tables);
        eprintln!("precision: histograms in {:.1} s", start.elapsed().as_secs_f64());
    }
    if options.models {
        let start = std::time::Instant::now();
        emit(models::run(options)?, &mut tables);
        eprintln!("precision: models in {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(Report { header, tables })
}

/// `cargo xtask precision ARGS`.
pub fn run(args: &[&str]) -> Result<()> {
    if args.iter().any(|a| matches!(*a, "--help" | "-h")) {
        println!("{USAGE}");
        return Ok(());
    }
    let options = Options::parse(args)?;
    if cfg!(debug_assertions) && std::env::var_os("XTASK_PRECISION_DEBUG").is_none() {
        // `cargo xtask` builds in debug; the experiments sum billions of numbers. Run the release
        // build instead (XTASK_PRECISION_DEBUG=1 keeps the debug one).
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .current_dir(crate::workspace_root())
            .args(["run", "--release", "--quiet", "--package", "xtask", "--", "precision"])
            .args(args)
            .status()
            .context("running the release build of xtask")?;
        if !status.success() {
            bail!("the release build of `xtask precision` failed");
        }
        return Ok(());
    }
    let report = run_experiments(&options)?;
    report.write(&options.out)?;
    println!("\nwrote {} (CSV per table, precision.md)", options.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_counts_and_parts() {
        let o = Options::parse(&["--quick", "--n", "1e4", "--sizes", "1e3,2_000", "--parts", "sums,models"]).unwrap();
        assert_eq!((o.n, o.repeats, o.sizes.clone()), (10_000, 5, vec![1000, 2000]));
        assert!(o.sums && !o.histograms && o.models && o.device.is_none());
        assert_eq!(Options::parse(&["--gpu"]).unwrap().device, Some(DeviceKind::Cuda { ordinal: 0 }));
        assert!(Options::parse(&["--n", "1.5"]).is_err());
        assert!(Options::parse(&["--parts", "everything"]).is_err());
        assert!(Options::parse(&["--repeats"]).is_err());
    }

    #[test]
    fn date_is_plausible() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.as_str() >= "2025-01-01", "{d}");
    }

    #[test]
    fn tables_render_as_markdown_and_csv() {
        let mut t = Table::new("t", "A table", &["method", "error", "count"]);
        t.rows.push(vec!["f32, sequential".into(), Cell::Float(0.0694), Cell::Int(3)]);
        assert_eq!(t.csv(), "method,error,count\n\"f32, sequential\",6.94e-2,3\n");
        assert!(t.markdown().contains("| f32, sequential | 6.940e-2 | 3 |"), "{}", t.markdown());
    }

    #[test]
    fn asking_for_a_gpu_that_is_not_there_is_an_error() {
        if Gpu::new().is_ok() {
            return; // this machine has one: nothing to check
        }
        let options = Options { device: Some(DeviceKind::Cuda { ordinal: 0 }), ..Options::quick() };
        let error = run_experiments(&options).err().expect("the GPU columns cannot silently disappear");
        assert!(error.to_string().contains("--device cuda:0 was asked for and is not usable here"), "{error}");
    }

    /// The whole tool at tiny sizes, GPU columns on the SIMT emulator: every table comes out with
    /// real numbers, and the orderings the experiment exists to show hold.
    #[test]
    fn tool_runs_at_small_sizes_with_the_emulator() {
        let out = std::env::temp_dir().join(format!("xtask-precision-test-{}", std::process::id()));
        let options = Options {
            device: Some(DeviceKind::parse("emulator").unwrap()),
            n: 20_000,
            repeats: 3,
            sizes: vec![1_000, 20_000],
            size_repeats: 2,
            hist_rows: 20_000,
            bins: 16,
            hist_runs: 2,
            model_rows: 3_000,
            rounds: 3,
            out: out.clone(),
            ..Options::default()
        };
        let report = run_experiments(&options).unwrap();
        report.write(&out).unwrap();
        let names: Vec<&str> = report.tables.iter().map(|t| t.name).collect();
        assert_eq!(names, ["sums", "gpu_checks", "sums_vs_n", "histograms", "models"]);
        for name in &names {
            let csv = std::fs::read_to_string(out.join(format!("{name}.csv"))).unwrap();
            assert!(csv.lines().count() > 2, "{name}: {csv}");
        }
        let md = std::fs::read_to_string(out.join("precision.md")).unwrap();
        assert!(md.contains("GPU: SIMT emulator"), "{md}");

        let sums = &report.tables[0];
        let mean = |method: &str| -> f64 {
            let row =
                sums.rows.iter().find(|r| r[0] == Cell::Text(method.into())).unwrap_or_else(|| panic!("{method}"));
            match row[2] {
                Cell::Float(x) => x,
                ref other => panic!("{other:?}"),
            }
        };
        assert!(mean(sums::SEQUENTIAL_F32) > 3.0 * mean(sums::PAIRWISE_F32));
        assert!(mean(sums::PAIRWISE_F32) > 100.0 * mean(sums::SEQUENTIAL_F64));
        assert!(mean(sums::KAHAN_F32) < mean(sums::PAIRWISE_F32));
        // The emulated GPU reduce is bit for bit the CPU replay of its order.
        assert_eq!(mean(sums::GPU_F32), mean(sums::DEVICE_ORDER_F32));
        assert_eq!(mean(sums::GPU_F64), mean(sums::DEVICE_ORDER_F64));
        let checks = &report.tables[1];
        assert!(checks.rows.iter().all(|r| r[r.len() - 1] == Cell::Text("yes".into())), "{checks:?}");
        let _ = std::fs::remove_dir_all(&out);
    }
}
