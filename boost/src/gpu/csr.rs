//! Rows in device memory checked on the device: CSR rows ([`DeviceCsr`]) once when made, so that
//! every kernel that reads them may trust their offsets and columns; dense rows' values finite
//! ([`check_dense_finite`]). Missing values are NaN; XGBoost refuses `inf` as we do.

use primitives::ops::Element;
use primitives::{DeviceBuffer, Gpu};

use boost_kernels::entry;
use boost_kernels::sketch::{CSR_BAD_COLUMN, CSR_BAD_OFFSETS, CSR_INFINITE, CSR_PROBLEMS, CSR_UNORDERED};

use super::element_config;
use crate::data::CsrMatrix;
use crate::{Error, Result};

/// Sparse rows in device memory, in CSR form: `rows + 1` entry offsets (from 0 to the entry
/// count), each entry's column (strictly increasing within a row, below `cols`) and value (NaN:
/// missing, as an absent entry is). Made by [`DeviceCsr::new`], which checks all of that on the
/// device and names the first row that breaks it.
pub struct DeviceCsr {
    pub(crate) row_ptr: DeviceBuffer<u64>,
    pub(crate) col_indices: DeviceBuffer<u32>,
    pub(crate) values: DeviceBuffer<f32>,
    pub(crate) cols: usize,
}

impl DeviceCsr {
    /// CSR rows of `cols` columns from buffers the caller filled on `gpu`.
    pub fn new(
        gpu: &Gpu,
        row_ptr: DeviceBuffer<u64>,
        col_indices: DeviceBuffer<u32>,
        values: DeviceBuffer<f32>,
        cols: usize,
    ) -> Result<Self> {
        if row_ptr.is_empty() {
            return Err(Error::InvalidData("CSR offsets: `rows + 1` of them, none given".into()));
        }
        if col_indices.len() != values.len() {
            return Err(Error::InvalidData(format!(
                "CSR entries: {} columns and {} values",
                col_indices.len(),
                values.len()
            )));
        }
        check_on(gpu, &row_ptr, "CSR offsets")?;
        check_on(gpu, &col_indices, "CSR column indices")?;
        check_on(gpu, &values, "CSR values")?;
        let csr = DeviceCsr { row_ptr, col_indices, values, cols };
        if csr.rows() >= u32::MAX as usize || csr.nnz() >= u32::MAX as usize || cols > (u32::MAX / 2) as usize {
            return Err(Error::InvalidData(format!(
                "CSR of {} rows, {} entries and {cols} columns: the device takes fewer than 2^32 rows and entries, \
                 2^31 columns",
                csr.rows(),
                csr.nnz()
            )));
        }
        csr.check(gpu)?;
        Ok(csr)
    }

    /// A copy of host CSR rows on `gpu`, checked as [`DeviceCsr::new`] checks it.
    pub fn upload(gpu: &Gpu, m: &CsrMatrix) -> Result<Self> {
        let row_ptr: Vec<u64> = m.row_ptr.iter().map(|&p| p as u64).collect();
        Self::new(gpu, gpu.upload(&row_ptr)?, gpu.upload(&m.col_indices)?, gpu.upload(&m.values)?, m.cols)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// Whether these rows belong to `gpu`, as an error naming them if not.
    pub(crate) fn check_on(&self, gpu: &Gpu) -> Result<()> {
        check_on(gpu, &self.values, "CSR rows")
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The kernels' view: offsets, columns, values, rows, entries, columns.
    pub(crate) fn args(&self) -> (*const u64, *const u32, *const f32, u64, u64, u64) {
        let (rows, nnz, cols) = (self.rows() as u64, self.nnz() as u64, self.cols as u64);
        (self.row_ptr.as_ptr(), self.col_indices.as_ptr(), self.values.as_ptr(), rows, nnz, cols)
    }

    fn check(&self, gpu: &Gpu) -> Result<()> {
        if self.rows() == 0 {
            return Ok(());
        }
        let problems = gpu.upload(&[u32::MAX; CSR_PROBLEMS])?;
        let (row_ptr, col_indices, values, rows, nnz, cols) = self.args();
        let out = problems.as_mut_ptr();
        let args = entry::boost_csr_check::args(row_ptr, col_indices, values, rows, nnz, cols, out);
        // SAFETY: `rows + 1` offsets, `nnz` entries (the kernel reads entries only within them),
        // the problem words.
        unsafe { gpu.launch_kernel(crate::KERNELS, element_config(self.rows())?, args)? };
        let problems = problems.to_vec(gpu)?;
        let (nnz, cols) = (self.nnz(), self.cols);
        let reasons = [
            (CSR_BAD_OFFSETS, format!("its offsets decrease or leave 0..={nnz} (the first must be 0, the last {nnz})")),
            (CSR_BAD_COLUMN, format!("a column index at or past the {cols} columns")),
            (CSR_UNORDERED, "its column indices do not strictly increase".to_string()),
            (CSR_INFINITE, "an infinite value (missing values are NaN)".to_string()),
        ];
        match reasons.into_iter().find(|(p, _)| problems[*p] != u32::MAX) {
            Some((p, reason)) => Err(Error::InvalidData(format!("CSR row {}: {reason}", problems[p]))),
            None => Ok(()),
        }
    }
}

/// An error naming the first row of `rows x cols` dense values in device memory that holds an
/// infinite value, and its column.
pub(crate) fn check_dense_finite(gpu: &Gpu, values: &DeviceBuffer<f32>, (rows, cols): (usize, usize)) -> Result<()> {
    match first_infinite(gpu, values, (rows, cols))? {
        None => Ok(()),
        Some((row, col, value)) => Err(infinite_value(row, col, value)),
    }
}

/// The first infinite value of `rows x cols` dense row-major values in device memory (row-major
/// order), with its row and column.
pub(crate) fn first_infinite(
    gpu: &Gpu,
    values: &DeviceBuffer<f32>,
    (rows, cols): (usize, usize),
) -> Result<Option<(usize, usize, f32)>> {
    check_on(gpu, values, "the rows' values")?;
    let n = rows * cols;
    if n == 0 {
        return Ok(None);
    }
    if rows >= u32::MAX as usize || n != values.len() {
        return Err(Error::InvalidData(format!("{} device values for {rows} rows of {cols}", values.len())));
    }
    let first_row = gpu.upload(&[u32::MAX])?;
    let args = entry::boost_check_dense::args(values.as_ptr(), n as u64, cols as u64, first_row.as_mut_ptr());
    // SAFETY: `n` values, one word.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(n)?, args)? };
    let row = first_row.to_vec(gpu)?[0];
    if row == u32::MAX {
        return Ok(None);
    }
    let row = row as usize;
    let values = values.range_to_vec(gpu, row * cols..(row + 1) * cols)?;
    let col = values.iter().position(|v| v.is_infinite()).unwrap_or(0);
    Ok(Some((row, col, values[col])))
}

/// The error of an infinite feature value, naming its row and feature.
pub(crate) fn infinite_value(row: usize, col: usize, value: f32) -> Error {
    Error::InvalidData(format!("row {row}, feature {col}: {value} is infinite (missing values are NaN)"))
}

/// An error when `buffer` (named `what`) belongs to another device than `gpu`.
pub(crate) fn check_on<T: Element>(gpu: &Gpu, buffer: &DeviceBuffer<T>, what: &str) -> Result<()> {
    if buffer.is_on(gpu) {
        return Ok(());
    }
    Err(Error::InvalidData(format!("{what}: a buffer of another device than {}", gpu.properties().name)))
}
