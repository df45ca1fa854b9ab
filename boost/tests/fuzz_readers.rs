//! Fuzzing of every reader: CSV/TSV, libsvm, gzip input, the `.weight`/`.query` siblings and XGBoost
//! JSON models, with arbitrary bytes, token soups and random edits of the shipped files.
//!
//! The invariant: a reader returns data or a typed error. It never panics, never aborts, and never
//! holds more than a small multiple of its input (the decompressed input, for gzip) at once. A
//! counting allocator measures the last, per thread. `cargo test` runs a bounded number of cases
//! (64 per target); `cargo xtask fuzz` runs many more in a release build and prints, per target, the
//! cases run, how many were read and how many refused, and the largest allocation ratio seen.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::path::{Path, PathBuf};

use boost::data::{read_data, Categories, Column, CsvOptions, DataFormat, ReadOptions};
use boost::model::Model;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Bytes a reader may hold per byte of input, and beyond that for its buffers (the 256 KiB read
/// buffers, the 4 MiB detection sample, a gzip window). The multiple covers the worst shapes: a
/// string column of 2-byte distinct strings keeps each one twice with hash-map slots (about 20x), a
/// JSON array of one-digit numbers about 40 bytes per 2 input bytes.
const BYTES_PER_INPUT_BYTE: usize = 64;
const BUFFER_BYTES: usize = 8 << 20;

struct Counting;

thread_local! {
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn track(delta: isize) {
    // `try_with`: allocations while a thread's locals are torn down are not counted.
    let _ = CURRENT.try_with(|current| {
        let now = current.get() + delta;
        current.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are const-initialised
// thread locals (no allocation, no destructor), so counting cannot recurse into the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            track(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            track(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded; `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        track(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded; `ptr` came from this allocator with `layout`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            track(new_size as isize - layout.size() as isize);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the most bytes this thread held at once meanwhile, beyond
/// what it held before.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.with(Cell::get);
    PEAK.with(|peak| peak.set(base));
    let result = f();
    let peak = PEAK.with(Cell::get);
    (result, (peak - base).max(0) as usize)
}

fn config() -> Config {
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 64;
    }
    // Failures are reported with their input; nothing is written into the source tree.
    config.failure_persistence = None;
    config
}

/// What one target saw over its cases.
#[derive(Default)]
struct Tally {
    cases: usize,
    read: usize,
    refused: usize,
    /// The largest peak seen, and the input it was for.
    peak: (usize, usize),
}

impl Tally {
    fn record<T>(&mut self, result: &boost::Result<T>, input_bytes: usize, peak: usize) -> Result<(), TestCaseError> {
        self.cases += 1;
        match result {
            Ok(_) => self.read += 1,
            Err(_) => self.refused += 1,
        }
        self.peak = self.peak.max((peak, input_bytes));
        let allowed = BYTES_PER_INPUT_BYTE * input_bytes + BUFFER_BYTES;
        prop_assert!(peak <= allowed, "held {peak} bytes for {input_bytes} bytes of input (at most {allowed})");
        Ok(())
    }

    fn report(&self, target: &str) {
        println!(
            "fuzz {target}: {} cases, {} read, {} refused with an error; largest peak {:.1} KiB (for {} input bytes)",
            self.cases,
            self.read,
            self.refused,
            self.peak.0 as f64 / 1024.0,
            self.peak.1
        );
    }
}

/// A scratch directory per target, removed afterwards.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("boost-fuzz-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("scratch file");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn shipped(relative: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first lines (up to 6000 bytes) of shipped data files, the seeds of the near-valid inputs.
fn seeds() -> Vec<Vec<u8>> {
    let files = [
        "../data/iris/iris.train.csv",
        "../data/cpu_machine/machine.train.data",
        "../data/dermatology/dermatology.train.data",
        "../data/adult/adult_train.csv",
        "../data/agaricus/agaricus.txt.train",
        "../data/lgbm_rank/rank.train",
        "../data/lgbm_categorical/categorical.train",
        "../data/higgs_lgbm_sample/binary.train",
    ];
    files
        .iter()
        .map(|f| {
            let bytes = shipped(f);
            let cut = bytes.iter().take(6000).rposition(|&b| b == b'\n').map_or(bytes.len(), |i| i + 1);
            bytes[..cut].to_vec()
        })
        .collect()
}

/// Pieces that make near-valid data: numbers of every kind, separators, missing tokens, libsvm
/// fields (huge indices too), quotes and comments.
const TOKENS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2.5",
    "1e38",
    "1e39",
    "-0",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "NA",
    "?",
    "x",
    "red",
    ",",
    ",",
    " ",
    "\t",
    "\n",
    "\n",
    "\r\n",
    "\r",
    "\"",
    "\"\"",
    "#",
    ":",
    "0:",
    "1:",
    "7:",
    "qid:",
    "qid:3",
    "16777215:",
    "16777216:",
    "4000000000:",
    "99999999999:",
    "1:0.5",
    "label",
    "é",
    "\u{0}",
];

fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(proptest::sample::select(TOKENS), 0..400).prop_map(|t| t.concat().into_bytes())
}

/// An edit of a seed: overwrite, insert or delete a few bytes, or insert a token.
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Token(usize, &'static str),
}

fn edited_seed(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let edit = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<usize>(), 1usize..200).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<usize>(), proptest::sample::select(TOKENS)).prop_map(|(i, t)| Edit::Token(i, t)),
    ];
    (0..seeds.len(), proptest::collection::vec(edit, 0..4)).prop_map(move |(seed, edits)| {
        let mut bytes = seeds[seed].clone();
        for edit in edits {
            let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
            match edit {
                Edit::Flip(i, b) if !bytes.is_empty() => {
                    let i = i % bytes.len();
                    bytes[i] = b;
                }
                Edit::Flip(..) => {}
                Edit::Insert(i, b) => {
                    let i = at(i, bytes.len());
                    bytes.splice(i..i, b);
                }
                Edit::Delete(i, n) => {
                    let i = at(i, bytes.len());
                    let end = (i + n).min(bytes.len());
                    bytes.drain(i..end);
                }
                Edit::Token(i, t) => {
                    let i = at(i, bytes.len());
                    bytes.splice(i..i, t.bytes());
                }
            }
        }
        bytes
    })
}

fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..2048)
}

fn inputs() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![any_bytes(), token_soup(), edited_seed(seeds())]
}

/// Reads `bytes` as a data file with each format choice (detected, CSV, libsvm), checking the
/// invariant for each.
fn fuzz_data_file(target: &str, gzip: bool) {
    let scratch = Scratch::new(target);
    let tallies: RefCell<Vec<Tally>> = RefCell::new((0..3).map(|_| Tally::default()).collect());
    let mut runner = TestRunner::new(config());
    runner
        .run(&inputs(), |bytes| {
            let stored = if gzip { gzipped(&bytes) } else { bytes.clone() };
            let path = scratch.write("data.txt", &stored);
            for (tally, format) in
                tallies.borrow_mut().iter_mut().zip([None, Some(DataFormat::Csv), Some(DataFormat::Libsvm)])
            {
                let options = ReadOptions { format, ..ReadOptions::default() };
                let (result, peak) = peak_during(|| read_data(&path, &options));
                tally.record(&result, bytes.len(), peak)?;
            }
            Ok(())
        })
        .unwrap();
    for (tally, format) in tallies.borrow().iter().zip(["detected", "csv", "libsvm"]) {
        tally.report(&format!("{target} ({format})"));
    }
}

fn gzipped(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn data_files_are_read_or_refused_without_a_panic() {
    fuzz_data_file("data", false);
}

#[test]
fn gzip_data_files_are_read_or_refused_without_a_panic() {
    fuzz_data_file("gzip", true);
}

/// Damaged gzip streams: a valid one truncated or with bytes changed.
#[test]
fn damaged_gzip_streams_are_errors() {
    let scratch = Scratch::new("gzip-damage");
    let tally = RefCell::new(Tally::default());
    let good = gzipped(&shipped("../data/iris/iris.train.csv"));
    let strategy = (any::<usize>(), any::<u8>(), any::<bool>());
    TestRunner::new(config())
        .run(&strategy, |(at, byte, truncate)| {
            let mut bytes = good.clone();
            let i = 10 + at % (bytes.len() - 10);
            if truncate {
                bytes.truncate(i);
            } else {
                bytes[i] ^= byte | 1;
            }
            let path = scratch.write("data.csv.gz", &bytes);
            let (result, peak) = peak_during(|| read_data(&path, &ReadOptions::default()));
            tally.borrow_mut().record(&result, good.len() * 8, peak)
        })
        .unwrap();
    tally.borrow().report("gzip streams (truncated or changed)");
}

/// A valid data file with fuzzed `.weight` and `.query` siblings.
#[test]
fn sibling_files_are_read_or_refused_without_a_panic() {
    let scratch = Scratch::new("siblings");
    let tally = RefCell::new(Tally::default());
    let main = b"1 0:1\n0 0:2\n1 1:1\n0 1:3\n1 0:2 1:2\n0 0:1\n";
    // Arbitrary bytes, token soups, and lines of small numbers (often a valid file).
    let numbers = proptest::collection::vec(
        prop_oneof![Just("-1"), Just("0"), Just("1"), Just("2"), Just("3"), Just("0.5"), Just("x"), Just("")],
        0..9,
    )
    .prop_map(|lines| lines.join("\n").into_bytes());
    let sibling = prop_oneof![any_bytes(), token_soup(), numbers];
    TestRunner::new(config())
        .run(&(sibling.clone(), sibling, any::<bool>()), |(weights, groups, with_groups)| {
            let path = scratch.write("rank.txt", main);
            scratch.write("rank.txt.weight", &weights);
            let query = scratch.0.join("rank.txt.query");
            if with_groups {
                std::fs::write(&query, &groups).unwrap();
            } else {
                let _ = std::fs::remove_file(&query);
            }
            let (result, peak) = peak_during(|| read_data(&path, &ReadOptions::default()));
            tally.borrow_mut().record(&result, main.len() + weights.len() + groups.len(), peak)
        })
        .unwrap();
    tally.borrow().report("siblings (.weight, .query)");
}

/// A test file read with a training file's categories (the string columns' codes).
#[test]
fn csv_with_training_categories_is_read_or_refused_without_a_panic() {
    let scratch = Scratch::new("categories");
    let tally = RefCell::new(Tally::default());
    let categories = Categories {
        features: vec![Some(vec!["blue".into(), "red".into()]), None],
        kinds: Vec::new(),
        labels: Some(vec!["no".into(), "yes".into()]),
    };
    let seed = b"colour,size,class\nred,1,yes\nblue,2,no\n,3.5,yes\nred,,no\n".to_vec();
    let inputs = prop_oneof![any_bytes(), token_soup(), edited_seed(vec![seed])];
    TestRunner::new(config())
        .run(&inputs, |bytes| {
            let path = scratch.write("test.csv", &bytes);
            let label = Column::Name("class".into());
            let csv = CsvOptions { label, categories: Some(&categories), ..CsvOptions::default() };
            let options = ReadOptions { format: Some(DataFormat::Csv), csv, ..ReadOptions::default() };
            let (result, peak) = peak_during(|| read_data(&path, &options));
            tally.borrow_mut().record(&result, bytes.len(), peak)
        })
        .unwrap();
    tally.borrow().report("csv with training categories");
}

/// XGBoost JSON models: arbitrary bytes, and the shipped XGBoost-made models with random edits.
#[test]
fn models_are_loaded_or_refused_without_a_panic() {
    let scratch = Scratch::new("models");
    let tally = RefCell::new(Tally::default());
    let models: Vec<Vec<u8>> =
        ["tests/data/xgboost/binary_logistic.model.json", "tests/data/xgboost/legacy_2x_multi.model.json"]
            .iter()
            .map(|f| shipped(f))
            .collect();
    // Numbers (the counts, indices and ids a model declares) replaced by others, which keeps the
    // JSON valid, or a stretch of bytes replaced by a token, which mostly does not.
    let numbers: &'static [&'static str] = &[
        "0",
        "1",
        "-1",
        "2",
        "7",
        "1e400",
        "4294967296",
        "2147483647",
        "99999999999999999999",
        "0.5",
        "\"3\"",
        "null",
    ];
    let tokens: &'static [&'static str] = &["[", "]", "{", "}", ",", ":", "\"\"", "true"];
    let edit = (any::<usize>(), any::<bool>(), proptest::sample::select(numbers), proptest::sample::select(tokens));
    let edited = (0..models.len(), proptest::collection::vec(edit, 1..6)).prop_map(move |(m, edits)| {
        let mut bytes = models[m].clone();
        for (at, keep_json, number, token) in edits {
            let i = at % bytes.len();
            if keep_json {
                let Some(start) = bytes[i..].iter().position(|b| b.is_ascii_digit()).map(|p| p + i) else { continue };
                let end = bytes[start..]
                    .iter()
                    .position(|b| !(b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+')))
                    .map_or(bytes.len(), |p| p + start);
                bytes.splice(start..end, number.bytes());
            } else {
                let end = (i + at % 24).min(bytes.len());
                bytes.splice(i..end, token.bytes());
            }
        }
        bytes
    });
    TestRunner::new(config())
        .run(&prop_oneof![any_bytes(), edited], |bytes| {
            let path = scratch.write("model.json", &bytes);
            let (result, peak) = peak_during(|| Model::load_json(&path));
            tally.borrow_mut().record(&result, bytes.len(), peak)
        })
        .unwrap();
    tally.borrow().report("XGBoost JSON models");
}
