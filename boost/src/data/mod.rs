//! Training and prediction data: a dense or CSR feature matrix and the per-row meta information
//! (labels, weights, base margins, ranking groups).
//!
//! Missing values: NaN in a dense matrix; in a CSR matrix an absent entry is **missing**, not zero
//! (XGBoost's choice for libsvm input; LightGBM's default differs).

/// A dense row-major `f32` matrix; NaN marks a missing value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DenseMatrix {
    pub rows: usize,
    pub cols: usize,
    /// `rows * cols` values, row after row.
    pub values: Vec<f32>,
}

impl DenseMatrix {
    /// A matrix from its row-major values; `values.len()` must be `rows * cols`.
    pub fn new(rows: usize, cols: usize, values: Vec<f32>) -> Self {
        assert_eq!(values.len(), rows * cols, "dense matrix: values for {rows} x {cols}");
        Self { rows, cols, values }
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.values[i * self.cols..(i + 1) * self.cols]
    }
}

/// A compressed sparse row matrix; entries not stored are missing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsrMatrix {
    pub rows: usize,
    pub cols: usize,
    /// `rows + 1` offsets into `col_indices` and `values`.
    pub row_ptr: Vec<usize>,
    /// Column of each stored entry, increasing within a row.
    pub col_indices: Vec<u32>,
    pub values: Vec<f32>,
}

impl CsrMatrix {
    /// The stored entries of row `i` as (column, value).
    pub fn row(&self, i: usize) -> impl Iterator<Item = (u32, f32)> + '_ {
        let range = self.row_ptr[i]..self.row_ptr[i + 1];
        self.col_indices[range.clone()].iter().copied().zip(self.values[range].iter().copied())
    }
}

/// The features of a dataset.
#[derive(Clone, Debug, PartialEq)]
pub enum FeatureMatrix {
    Dense(DenseMatrix),
    Sparse(CsrMatrix),
}

impl FeatureMatrix {
    pub fn rows(&self) -> usize {
        match self {
            FeatureMatrix::Dense(m) => m.rows,
            FeatureMatrix::Sparse(m) => m.rows,
        }
    }

    pub fn cols(&self) -> usize {
        match self {
            FeatureMatrix::Dense(m) => m.cols,
            FeatureMatrix::Sparse(m) => m.cols,
        }
    }

    /// Calls `f(column, value)` for every present (non-missing) value of row `i`, in column order.
    pub fn for_each_present(&self, i: usize, mut f: impl FnMut(usize, f32)) {
        match self {
            FeatureMatrix::Dense(m) => {
                for (j, &v) in m.row(i).iter().enumerate() {
                    if !v.is_nan() {
                        f(j, v);
                    }
                }
            }
            FeatureMatrix::Sparse(m) => {
                for (j, v) in m.row(i) {
                    if !v.is_nan() {
                        f(j as usize, v);
                    }
                }
            }
        }
    }

    /// Row `i` written into `out` (length `cols()`), NaN where missing.
    pub fn fill_row(&self, i: usize, out: &mut [f32]) {
        match self {
            FeatureMatrix::Dense(m) => out.copy_from_slice(m.row(i)),
            FeatureMatrix::Sparse(m) => {
                out.fill(f32::NAN);
                for (j, v) in m.row(i) {
                    if (j as usize) < out.len() {
                        out[j as usize] = v;
                    }
                }
            }
        }
    }
}

/// Per-row information besides the features.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetaInfo {
    /// One label per row.
    pub labels: Vec<f32>,
    /// One weight per row, or empty (every weight 1). For ranking, XGBoost takes one weight per
    /// group; then this holds one per group.
    pub weights: Vec<f32>,
    /// `rows * outputs` initial margins, or empty.
    pub base_margin: Vec<f32>,
    /// Ranking groups as offsets (`groups + 1` entries from 0 to `rows`), or empty.
    pub group_ptr: Vec<usize>,
}

impl MetaInfo {
    /// The weight of row `i` (1 when no weights are set).
    pub fn weight(&self, i: usize) -> f32 {
        if self.weights.is_empty() {
            1.0
        } else {
            self.weights[i]
        }
    }
}

/// Features and meta information, as XGBoost's `DMatrix`.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub features: FeatureMatrix,
    pub info: MetaInfo,
}

impl Dataset {
    pub fn rows(&self) -> usize {
        self.features.rows()
    }
    pub fn cols(&self) -> usize {
        self.features.cols()
    }
}
