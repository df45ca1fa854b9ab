//! The quantile cuts of rows in device memory (`boost::gpu::device_cuts`, XGBoost's sketch on the
//! device) are the host's (`QuantileCuts::build`, XGBoost 3.4's CPU cuts), bit for bit: every
//! shipped dataset (its rows as dense values, absent entries missing; its weights when it has
//! them), at 256 and at 16 bins (many sketch queues a column); and the same rows as CSR in device
//! memory (`device_cuts_csr`, the missing values left out). The unit tests in
//! `boost::gpu::sketch` covers the adversarial columns on the emulator.

use boost::data::{read_data, CsrMatrix, DenseMatrix, FeatureMatrix};
use boost::gpu::{device_cuts, device_cuts_csr, device_cuts_typed, DeviceCsr};
use boost::quantile::QuantileCuts;
use tests::gpu;

use crate::boost_train::SHIPPED;

#[test]
fn device_cuts_are_the_hosts_on_every_shipped_dataset() {
    let gpu = gpu();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    for case in SHIPPED {
        let (data, _) = read_data(&dir.join(case.file), &case.read_options()).expect(case.file);
        // The emulator runs a thread at a time: the first rows and columns there.
        let rows = if gpu.is_emulated() { data.rows().min(500) } else { data.rows() };
        let all_cols = data.cols();
        let cols = if gpu.is_emulated() { all_cols.min(16) } else { all_cols };
        let mut values = vec![0f32; rows * cols];
        let mut full_row = vec![0f32; all_cols];
        for (i, row) in values.chunks_mut(cols.max(1)).enumerate().take(rows) {
            data.features.fill_row(i, &mut full_row);
            row.copy_from_slice(&full_row[..row.len()]);
        }
        let weights: Vec<f32> = data.info.weights.iter().take(rows).copied().collect();
        let device_values = gpu.upload(&values).expect("upload");
        let device_weights = (!weights.is_empty()).then(|| gpu.upload(&weights).expect("upload"));
        let csr = DeviceCsr::upload(&gpu, &csr_of(&values, rows, cols)).expect(case.file);
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
        for max_bin in [256, 16] {
            let host = QuantileCuts::build(&features, &weights, max_bin);
            let device =
                device_cuts(&gpu, &device_values, (rows, cols), device_weights.as_ref(), max_bin).expect(case.file);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(device.cut_ptrs, host.cut_ptrs, "{}, {max_bin} bins", case.file);
            assert_eq!(bits(&device.cut_values), bits(&host.cut_values), "{}, {max_bin} bins", case.file);
            let from_csr = device_cuts_csr(&gpu, &csr, device_weights.as_ref(), max_bin).expect(case.file);
            assert_eq!(from_csr, host, "{}, {max_bin} bins, CSR", case.file);
        }
        // Categorical columns (the data's string columns): a bin a code, as the host's.
        let categorical = data.info.categorical_features(all_cols).expect(case.file);
        let categorical = &categorical[..cols.min(categorical.len())];
        if categorical.contains(&true) {
            let host = QuantileCuts::build_typed(&features, &weights, 256, categorical).expect(case.file);
            let shape = (rows, cols);
            let device = device_cuts_typed(&gpu, &device_values, shape, device_weights.as_ref(), 256, categorical);
            assert_eq!(device.expect(case.file), host, "{}, categorical", case.file);
        }
    }
}

/// A categorical column holding a value that is no category is the host's error, naming the row.
#[test]
fn a_bad_category_on_the_device_is_the_hosts_error() {
    let gpu = gpu();
    let (rows, cols) = (700, 3);
    let mut values: Vec<f32> = (0..rows * cols).map(|i| (i % 11) as f32).collect();
    values[5 * cols + 1] = f32::NAN;
    for bad in [-1.0f32, 2.5, 16_777_216.0] {
        values[612 * cols + 2] = bad;
        values[650 * cols + 2] = 3.5;
        let categorical = [false, true, true];
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values.clone()));
        let host = QuantileCuts::build_typed(&features, &[], 256, &categorical).expect_err("a bad category");
        let device_values = gpu.upload(&values).expect("upload");
        let device = device_cuts_typed(&gpu, &device_values, (rows, cols), None, 256, &categorical);
        let device = device.expect_err("a bad category");
        assert_eq!(device.to_string(), host.to_string());
        assert!(host.to_string().contains("row 612, feature 2"), "{host}");
    }
}

/// The present (non-NaN) values of dense rows as CSR.
fn csr_of(values: &[f32], rows: usize, cols: usize) -> CsrMatrix {
    let (mut row_ptr, mut col_indices, mut present) = (vec![0], Vec::new(), Vec::new());
    for i in 0..rows {
        for (c, &v) in values[i * cols..(i + 1) * cols].iter().enumerate() {
            if !v.is_nan() {
                col_indices.push(c as u32);
                present.push(v);
            }
        }
        row_ptr.push(col_indices.len());
    }
    CsrMatrix { rows, cols, row_ptr, col_indices, values: present }
}
