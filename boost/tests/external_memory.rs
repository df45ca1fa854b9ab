//! External memory (`DMatrix::from_batches`): rows read batch by batch into quantised pages, in
//! host memory or an unnamed cache file, train the model the same rows in memory train, byte for
//! byte, for any batch and page size; what pages cannot do is a typed error naming why.

use std::path::Path;

use boost::data::synthetic::{generate, SyntheticSpec, SyntheticTask};
use boost::data::{
    read_data, Column, CsrMatrix, CsvBatches, CsvOptions, Dataset, DenseMatrix, FeatureMatrix, ReadOptions, SideFiles,
};
use boost::param::Params;
use boost::{Batch, BatchSource, Booster, DMatrix, Error, ExternalMemory};

/// A dataset's rows cut into batches of `size` rows (the last shorter), read again on `reset`.
struct Batches<'a> {
    data: &'a Dataset,
    size: usize,
    next: usize,
}

impl BatchSource for Batches<'_> {
    fn reset(&mut self) -> boost::Result<()> {
        self.next = 0;
        Ok(())
    }

    fn next_batch(&mut self) -> boost::Result<Option<Batch>> {
        let (begin, end) = (self.next, (self.next + self.size).min(self.data.rows()));
        if begin >= end {
            return Ok(None);
        }
        self.next = end;
        let info = &self.data.info;
        let weights = if info.weights.is_empty() { Vec::new() } else { info.weights[begin..end].to_vec() };
        let features = rows_of(&self.data.features, begin, end);
        Ok(Some(Batch { features, labels: info.labels[begin..end].to_vec(), weights }))
    }
}

fn rows_of(features: &FeatureMatrix, begin: usize, end: usize) -> FeatureMatrix {
    match features {
        FeatureMatrix::Dense(m) => {
            FeatureMatrix::Dense(DenseMatrix::new(end - begin, m.cols, m.values[begin * m.cols..end * m.cols].to_vec()))
        }
        FeatureMatrix::Sparse(m) => {
            let (a, b) = (m.row_ptr[begin], m.row_ptr[end]);
            FeatureMatrix::Sparse(CsrMatrix {
                rows: end - begin,
                cols: m.cols,
                row_ptr: m.row_ptr[begin..=end].iter().map(|p| p - a).collect(),
                col_indices: m.col_indices[a..b].to_vec(),
                values: m.values[a..b].to_vec(),
            })
        }
    }
}

/// `features` (dense) with about one entry in seven left out of each row.
fn sparse_of(features: &FeatureMatrix) -> CsrMatrix {
    let FeatureMatrix::Dense(m) = features else { panic!("dense rows") };
    let mut csr = CsrMatrix { rows: m.rows, cols: m.cols, row_ptr: vec![0], col_indices: vec![], values: vec![] };
    for i in 0..m.rows {
        for (j, &v) in m.row(i).iter().enumerate() {
            if (i + j) % 7 != 0 && !v.is_nan() {
                csr.col_indices.push(j as u32);
                csr.values.push(v);
            }
        }
        csr.row_ptr.push(csr.values.len());
    }
    csr
}

fn shipped(path: &str, label: Column) -> Dataset {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data").join(path);
    let options = ReadOptions { csv: CsvOptions { label, ..Default::default() }, ..Default::default() };
    read_data(&file, &options).expect("read").0
}

fn model(params: &[(&str, &str)], data: &DMatrix) -> String {
    let params = Params::from_pairs(params).expect("params");
    let booster = Booster::train(&params, data, 8, &[]).expect("train");
    booster.model().to_json_string().expect("json")
}

/// Pages, bytes in host memory and bytes on disk, as the matrix describes itself.
fn layout(d: &DMatrix) -> (usize, usize, usize) {
    let text = format!("{d:?}");
    let start = text.find("rows in ").expect("pages") + "rows in ".len();
    let end = start + text[start..].find(" on disk)").expect("pages");
    let numbers: Vec<usize> = text[start..end]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect();
    (numbers[0], numbers[1], numbers[2])
}

fn paged(data: &Dataset, batch: usize, options: &ExternalMemory) -> DMatrix {
    let mut source = Batches { data, size: batch, next: 0 };
    let mut d = DMatrix::from_batches(&mut source, options).expect("pages");
    if !data.info.group_ptr.is_empty() {
        let sizes: Vec<usize> = data.info.group_ptr.windows(2).map(|w| w[1] - w[0]).collect();
        d.set_groups(&sizes).unwrap();
    }
    d
}

/// A case's name, rows and parameters.
type Case<'a> = (&'a str, &'a Dataset, Vec<(&'a str, &'a str)>);

/// Dense, sparse, weighted and categorical data, every growth policy and both samplers, pages of
/// a batch each, joined, and partly in a cache file: the in-memory model file, byte for byte.
#[test]
fn pages_train_the_in_memory_model() {
    let higgs = shipped("higgs_lgbm_sample/binary.train", Column::Index(0));
    let mut weighted = higgs.clone();
    weighted.info.weights = (0..higgs.rows()).map(|i| 0.5 + (i % 5) as f32 * 0.25).collect();
    let sparse = Dataset { features: FeatureMatrix::Sparse(sparse_of(&higgs.features)), info: higgs.info.clone() };
    let spec = SyntheticSpec {
        rows: 6000,
        cols: 12,
        categorical: 3,
        max_categories: 40,
        task: SyntheticTask::MultiClass { classes: 3 },
        ..Default::default()
    };
    let categorical = generate(&spec).unwrap();
    let binary = [("objective", "binary:logistic"), ("max_depth", "5"), ("max_bin", "64")];
    let cases: Vec<Case> = vec![
        ("higgs", &higgs, binary.to_vec()),
        ("weighted", &weighted, [&binary[..], &[("grow_policy", "lossguide"), ("max_leaves", "20")]].concat()),
        ("sparse", &sparse, [&binary[..], &[("subsample", "0.5"), ("colsample_bynode", "0.7")]].concat()),
        (
            "gradient-based",
            &higgs,
            [&binary[..], &[("subsample", "0.2"), ("sampling_method", "gradient_based")]].concat(),
        ),
        ("oblivious", &higgs, [&binary[..], &[("grow_policy", "oblivious")]].concat()),
        (
            "categorical",
            &categorical,
            vec![("objective", "multi:softprob"), ("num_class", "3"), ("max_depth", "4"), ("max_bin", "64")],
        ),
    ];
    let cache = tempfile::tempdir().unwrap();
    for (name, data, params) in cases {
        let max_bin = params.iter().find(|p| p.0 == "max_bin").unwrap().1.parse().unwrap();
        let mut memory = DMatrix::from_dataset(data.clone()).unwrap();
        memory.set_feature_types(data.info.feature_types.clone()).unwrap();
        let want = model(&params, &memory);
        assert!(want.len() > 20_000, "{name}: a real model ({} bytes)", want.len());
        let options = |page_bytes, cache_dir: Option<&Path>, host_bytes| ExternalMemory {
            max_bin,
            feature_types: data.info.feature_types.clone(),
            page_bytes,
            cache_dir: cache_dir.map(Path::to_path_buf),
            host_bytes,
        };
        for (batch, options) in [
            (1000, options(1, None, 0)),
            (333, options(20_000, Some(cache.path()), 30_000)),
            (2500, options(1, Some(cache.path()), 0)),
        ] {
            let d = paged(data, batch, &options);
            let (pages, host, disk) = layout(&d);
            let placed = (pages, host, disk);
            assert!(pages > 1 && (options.cache_dir.is_none() || disk > 0), "{name}: {placed:?}");
            assert!(options.host_bytes == 0 || host > 0, "{name}: {placed:?}");
            let got = model(&params, &d);
            assert!(got == want, "{name}: batches of {batch}, {options:?}");
        }
    }
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "no cache file is left");
}

/// What needs raw values or other cuts is refused, naming the parameter or the step.
#[test]
fn pages_refuse_what_needs_raw_values() {
    let data = shipped("higgs_lgbm_sample/binary.train", Column::Index(0));
    let d = paged(&data, 2000, &ExternalMemory { max_bin: 64, ..Default::default() });
    let train = |pairs: &[(&str, &str)]| Booster::train(&Params::from_pairs(pairs).unwrap(), &d, 2, &[]);
    let named = |result: boost::Result<Booster>, name: &str| match result {
        Err(Error::InvalidParameter { name: n, reason }) => assert_eq!(n, name, "{reason}"),
        other => panic!("{name}: {:?}", other.map(|_| ())),
    };
    named(train(&[("max_bin", "256")]), "max_bin");
    named(train(&[("max_bin", "64"), ("tree_method", "exact")]), "tree_method");
    let booster = train(&[("max_bin", "64")]).unwrap();
    let error = booster.predict(&d, &Default::default()).unwrap_err().to_string();
    assert!(error.contains("prediction needs raw features"), "{error}");
    let mut d = d;
    assert!(matches!(d.set_weights(vec![1.0; data.rows()]), Err(Error::InvalidData(_))));
    let missing = ExternalMemory { cache_dir: Some("/nonexistent/cache".into()), ..Default::default() };
    let mut source = Batches { data: &data, size: 100, next: 0 };
    match DMatrix::from_batches(&mut source, &missing) {
        Err(Error::Io { path, .. }) => assert_eq!(path, Path::new("/nonexistent/cache")),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// A CSV file read in batches (string columns learned in a first read, the `.weight` sibling):
/// the codes, weights and model of the file read whole; a stopped pass starts again cleanly.
#[test]
fn a_csv_file_read_in_batches_trains_the_whole_files_model() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    let cases = [
        ("adult/adult_train.csv", Column::Name("income".into())),
        ("higgs_lgbm_sample/binary.train", Column::Index(0)),
    ];
    for (file, label) in cases {
        let path = root.join(file);
        let csv = CsvOptions { label, ..Default::default() };
        let options = ReadOptions { csv: csv.clone(), ..Default::default() };
        let whole = DMatrix::from_file(&path, &options).unwrap();
        let params = [("objective", "binary:logistic"), ("max_depth", "4"), ("max_bin", "32")];
        let want = model(&params, &whole);
        let mut source = CsvBatches::open(&path, &csv, &SideFiles::Beside, 1500).unwrap();
        assert_eq!(source.categories(), whole.categories(), "{file}");
        assert_eq!(source.rows(), whole.rows());
        source.reset().unwrap();
        let first = source.next_batch().unwrap().unwrap();
        assert_eq!((first.features.rows(), first.labels.len()), (1500, 1500));
        assert_eq!(first.weights, whole.info().weights.get(..1500).unwrap_or_default(), "{file}");
        let memory = ExternalMemory {
            max_bin: 32,
            feature_types: source.info().feature_types.clone(),
            page_bytes: 1,
            ..Default::default()
        };
        let mut paged = DMatrix::from_batches(&mut source, &memory).unwrap();
        // What the file's header and strings name, as `boost train` gives them.
        paged.set_feature_names(source.info().feature_names.clone()).unwrap();
        paged.set_category_names(source.categories().features.clone()).unwrap();
        assert!(!whole.info().feature_types.is_empty() || file.contains("higgs"), "adult has string columns");
        assert!(model(&params, &paged) == want, "{file}");
    }
}
