//! CSR rows in device memory ([`DeviceCsr`]), checked on the device once when made, so that every
//! kernel that reads them may trust their offsets and columns.

use primitives::{DeviceBuffer, Gpu};

use boost_kernels::sketch::{CSR_BAD_COLUMN, CSR_BAD_OFFSETS, CSR_UNORDERED};

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

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The kernels' view: offsets, columns, values, rows, entries, columns.
    pub(crate) fn args(&self) -> [u64; 6] {
        [
            self.row_ptr.device_ptr(),
            self.col_indices.device_ptr(),
            self.values.device_ptr(),
            self.rows() as u64,
            self.nnz() as u64,
            self.cols as u64,
        ]
    }

    fn check(&self, gpu: &Gpu) -> Result<()> {
        if self.rows() == 0 {
            return Ok(());
        }
        let problems = gpu.upload(&[u32::MAX; 3])?;
        let mut args = self.args().to_vec();
        args.push(problems.device_ptr());
        // SAFETY: `rows + 1` offsets, `nnz` entries (the kernel reads entries only within them),
        // three problem words.
        unsafe { gpu.launch(crate::KERNELS, "boost_csr_check", element_config(self.rows())?, &args)? };
        let problems = problems.to_vec(gpu)?;
        let (nnz, cols) = (self.nnz(), self.cols);
        let reasons = [
            (CSR_BAD_OFFSETS, format!("its offsets decrease or leave 0..={nnz} (the first must be 0, the last {nnz})")),
            (CSR_BAD_COLUMN, format!("a column index at or past the {cols} columns")),
            (CSR_UNORDERED, "its column indices do not strictly increase".to_string()),
        ];
        match reasons.into_iter().find(|(p, _)| problems[*p] != u32::MAX) {
            Some((p, reason)) => Err(Error::InvalidData(format!("CSR row {}: {reason}", problems[p]))),
            None => Ok(()),
        }
    }
}
