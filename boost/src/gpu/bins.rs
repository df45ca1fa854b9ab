//! The quantised matrix on the device ([`DeviceBins`]): each row's bins within their features,
//! bit-packed (primitives' `PackedBinMatrix`, XGBoost's ELLPACK layout), made by
//! `boost_kernels::bins` from the features on the device (the CPU's bin search, so the same
//! bins) or, as the oracle, from the CPU's ELLPACK matrix ([`local_bins`]).
//!
//! Packed rows against a `u16` a (row, feature): 9 bits for 256 bins (28 features in 8 words a row,
//! not 14), and the multi-feature histogram is 1.56-1.59x faster on them where rows are gathered
//! (every node below the root), 1.05x slower at the root (H200, docs/benchmarks.md).

use rayon::prelude::*;

use boost_kernels::bins::{packed_row_word, PackedRows};
use boost_kernels::entry;
use primitives::{DeviceBuffer, Gpu, PackedBinMatrix};

use super::{element_config, ptr, ptr_mut, DeviceCsr, DeviceCuts};
use crate::data::{CsrMatrix, FeatureMatrix};
use crate::ellpack::EllpackMatrix;
use crate::quantile::QuantileCuts;
use crate::{Error, Result};

/// The shape of the packed rows: `features` ids a row of `bits` bits, the smallest width with an
/// id to spare above the largest feature's bins, whose all-ones value marks a missing value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinLayout {
    /// Ids a row: the cuts' features.
    pub features: usize,
    /// The most bins of a feature (at least 1): a row of the padded histograms.
    pub bins_per_feature: usize,
    /// Bits an id, 1 to 16.
    pub bits: u32,
    /// Words a row: `ceil(features * bits / 32)`.
    pub row_words: usize,
}

impl BinLayout {
    /// The layout of the bins of `cuts`.
    pub fn of(cuts: &QuantileCuts) -> Result<Self> {
        let bins_per_feature = (0..cuts.features()).map(|f| cuts.bins(f)).max().unwrap_or(0).max(1);
        // The widest packed ids leave one id above the bins for a missing value.
        let most = (1usize << boost_kernels::bins::MAX_PACKED_BITS) - 1;
        if bins_per_feature >= most {
            // A categorical feature has a bin a code, up to its largest: name it, not `max_bin`.
            if let Some(f) = (0..cuts.features()).find(|&f| cuts.is_categorical(f) && cuts.bins(f) >= most) {
                return Err(Error::InvalidData(format!(
                    "categorical feature {f} has codes up to {}: the GPU builder takes codes below {}",
                    cuts.bins(f) - 1,
                    most - 1
                )));
            }
            return Err(Error::param(
                "max_bin",
                format!("{bins_per_feature} bins a feature: the GPU builder takes fewer than {most}"),
            ));
        }
        // The smallest width whose all-ones id lies above every bin: 2^bits > bins_per_feature.
        let bits = u32::BITS - (bins_per_feature as u32).leading_zeros();
        let features = cuts.features();
        Ok(BinLayout { features, bins_per_feature, bits, row_words: PackedRows::row_words(features, bits) })
    }

    /// The id of a missing value.
    pub fn missing(&self) -> u32 {
        (1u32 << self.bits) - 1
    }

    /// The kernels' arguments `features, bits, row_words`.
    fn shape_args(&self) -> [u64; 3] {
        [self.features as u64, self.bits as u64, self.row_words as u64]
    }
}

/// Every row's bins on the device, packed as [`BinLayout`] says.
pub struct DeviceBins {
    pub(crate) words: DeviceBuffer<u32>,
    pub(crate) layout: BinLayout,
}

impl DeviceBins {
    /// The matrix as the histogram kernels read it.
    pub fn matrix(&self) -> PackedBinMatrix<'_> {
        let BinLayout { features, bins_per_feature, bits, row_words } = self.layout;
        PackedBinMatrix { words: &self.words, row_words, bits, features, bins_per_feature }
    }

    /// Bytes on the device.
    pub fn bytes(&self) -> usize {
        self.words.len() * size_of::<u32>()
    }

    /// Uploads packed words made on the host.
    pub fn upload(gpu: &Gpu, (words, layout): (Vec<u32>, BinLayout)) -> Result<Self> {
        Ok(DeviceBins { words: gpu.upload(&words)?, layout })
    }

    /// The bins of `rows` rows, uninitialised.
    fn alloc(gpu: &Gpu, rows: usize, layout: BinLayout) -> Result<Self> {
        Ok(DeviceBins { words: gpu.alloc_uninitialized::<u32>(rows * layout.row_words)?, layout })
    }

    /// The address of row `row`'s first word.
    fn row_at(&self, row: usize) -> u64 {
        self.words.device_ptr() + (row * self.layout.row_words * size_of::<u32>()) as u64
    }
}

/// The packed bins of the CPU's quantised matrix: the oracle of the device's quantisation, and its
/// path for CSR rows whose columns do not increase.
pub fn local_bins(matrix: &EllpackMatrix, cuts: &QuantileCuts) -> Result<(Vec<u32>, BinLayout)> {
    let layout = BinLayout::of(cuts)?;
    let mut words = vec![0u32; matrix.rows * layout.row_words];
    pack_rows(&matrix.view(), |i| i, cuts, &layout, &mut words);
    Ok((words, layout))
}

/// Packs rows `row(0)`, `row(1)`, ... of `matrix` as `layout` says into `out` (a row's
/// `layout.row_words` words each, as many rows as `out` holds): [`local_bins`] of all the rows, or
/// of a page's sampled rows (external memory).
pub(super) fn pack_rows(
    matrix: &EllpackMatrix<&[u64]>,
    row: impl Fn(usize) -> usize + Sync,
    cuts: &QuantileCuts,
    layout: &BinLayout,
    out: &mut [u32],
) {
    if layout.row_words == 0 {
        return;
    }
    out.par_chunks_mut(layout.row_words).enumerate().for_each(|(i, packed)| {
        let row = row(i);
        for (w, word) in packed.iter_mut().enumerate() {
            *word = packed_row_word(w, layout.features, layout.bits, |f| {
                matrix.bin_of(row, f, cuts).map_or(layout.missing(), |bin| bin - cuts.cut_ptrs[f])
            });
        }
    });
}

/// Bytes of features uploaded at a time to be quantised: a run's peak memory holds one such chunk,
/// not the whole `f32` matrix. (Small in the unit tests, so that they quantise in many chunks.)
const BIN_CHUNK_BYTES: usize = if cfg!(test) { 1000 } else { 64 << 20 };

/// [`local_bins`] made on the device from host features: the dense values or the CSR entries
/// uploaded a chunk at a time ([`BIN_CHUNK_BYTES`]). CSR rows whose columns do not increase
/// strictly (which the readers never make) take the host's path.
pub(super) fn device_bins(
    gpu: &Gpu,
    features: &FeatureMatrix,
    cuts: &QuantileCuts,
    device_cuts: &DeviceCuts,
) -> Result<DeviceBins> {
    let (rows, nf) = (features.rows(), cuts.features());
    if features.cols() != nf {
        return Err(Error::InvalidData(format!("{} feature columns for cuts of {nf} features", features.cols())));
    }
    let host_path = match features {
        FeatureMatrix::Sparse(m) => rows * nf == 0 || !csr_is_checked(m),
        FeatureMatrix::Dense(_) => rows * nf == 0,
    };
    if host_path {
        return DeviceBins::upload(gpu, local_bins(&EllpackMatrix::new(features, cuts), cuts)?);
    }
    let bins = DeviceBins::alloc(gpu, rows, BinLayout::of(cuts)?)?;
    match features {
        FeatureMatrix::Dense(m) => {
            let chunk_rows = (BIN_CHUNK_BYTES / (nf * size_of::<f32>())).clamp(1, rows);
            let mut staging = gpu.alloc_uninitialized::<f32>(chunk_rows * nf)?;
            // Through page-locked memory: the bus's speed, not the driver's pageable copies.
            let mut host = vec![0f32; chunk_rows * nf];
            // SAFETY: `host` neither moves nor is freed while pinned (the pin is dropped first).
            let pin = unsafe { gpu.pin_host(&host) }?;
            for first in (0..rows).step_by(chunk_rows) {
                let end = (first + chunk_rows).min(rows);
                let chunk = &mut host[..(end - first) * nf];
                chunk.par_chunks_mut(1 << 16).zip(m.values[first * nf..end * nf].par_chunks(1 << 16)).for_each(
                    |(out, values)| out.copy_from_slice(values),
                );
                staging.copy_from_host(gpu, chunk)?;
                // SAFETY: `end - first` rows staged, their bins from row `first` on.
                unsafe { quantise_dense(gpu, staging.device_ptr(), end - first, device_cuts, &bins, first)? };
                // The copy from page-locked memory runs on after the call: done before the next.
                gpu.synchronize()?;
            }
            drop(pin);
        }
        FeatureMatrix::Sparse(m) => {
            let entry_bytes = size_of::<u32>() + size_of::<f32>();
            let mut first = 0;
            while first < rows {
                // Rows up to a chunk's worth of entries (at least one row).
                let base = m.row_ptr[first];
                let mut end = first + 1;
                while end < rows && (m.row_ptr[end + 1] - base) * entry_bytes <= BIN_CHUNK_BYTES {
                    end += 1;
                }
                let row_ptr: Vec<u64> = m.row_ptr[first..=end].iter().map(|&p| (p - base) as u64).collect();
                let entries = base..m.row_ptr[end];
                let (row_ptr, col_indices, values) = (
                    gpu.upload(&row_ptr)?,
                    gpu.upload(&m.col_indices[entries.clone()])?,
                    gpu.upload(&m.values[entries])?,
                );
                let csr = [row_ptr.device_ptr(), col_indices.device_ptr(), values.device_ptr()];
                // SAFETY: `end - first + 1` offsets into the chunk's entries, whose columns (checked
                // above) increase below `nf`; the bins of rows `first..end`.
                unsafe { quantise_csr(gpu, csr, end - first, device_cuts, &bins, first)? };
                first = end;
            }
        }
    }
    Ok(bins)
}

/// [`local_bins`] of `rows x cols` dense row-major values in device memory.
pub(super) fn device_rows_bins(
    gpu: &Gpu,
    values: &DeviceBuffer<f32>,
    rows: usize,
    cuts: &QuantileCuts,
    device_cuts: &DeviceCuts,
) -> Result<DeviceBins> {
    if values.len() != rows * cuts.features() {
        return Err(Error::InvalidData(format!(
            "{} values for {rows} rows of {} features",
            values.len(),
            cuts.features()
        )));
    }
    let bins = DeviceBins::alloc(gpu, rows, BinLayout::of(cuts)?)?;
    // SAFETY: `rows` rows of the cuts' features (checked), the bins of as many rows.
    unsafe { quantise_dense(gpu, values.device_ptr(), rows, device_cuts, &bins, 0)? };
    Ok(bins)
}

/// [`local_bins`] of checked CSR rows in device memory.
pub(super) fn device_csr_bins(
    gpu: &Gpu,
    csr: &DeviceCsr,
    cuts: &QuantileCuts,
    device_cuts: &DeviceCuts,
) -> Result<DeviceBins> {
    let rows = csr.rows();
    if csr.cols() != cuts.features() {
        return Err(Error::InvalidData(format!("CSR rows of {} features, cuts of {}", csr.cols(), cuts.features())));
    }
    let bins = DeviceBins::alloc(gpu, rows, BinLayout::of(cuts)?)?;
    let pointers = [csr.row_ptr.device_ptr(), csr.col_indices.device_ptr(), csr.values.device_ptr()];
    // SAFETY: checked rows (`DeviceCsr::new`: offsets from 0 to the entries, columns increasing
    // below the cuts' features, checked equal); the bins of `rows` rows.
    unsafe { quantise_csr(gpu, pointers, rows, device_cuts, &bins, 0)? };
    Ok(bins)
}

/// Whether CSR rows hold what [`DeviceCsr::new`] checks: columns strictly increasing within each
/// row and below the matrix's columns (the readers make no other; a matrix built in memory may).
pub(crate) fn csr_is_checked(m: &CsrMatrix) -> bool {
    (0..m.rows).into_par_iter().all(|i| {
        let cols = &m.col_indices[m.row_ptr[i]..m.row_ptr[i + 1]];
        cols.windows(2).all(|w| w[0] < w[1]) && cols.last().is_none_or(|&c| (c as usize) < m.cols)
    })
}

/// Launches `boost_bins_dense` over `rows` dense rows at `values` (the cuts' features each),
/// writing the packed bins of rows `first..first + rows` of `bins`.
///
/// # Safety
/// `values` holds `rows` rows of the cuts' features; `bins` has rows `first..first + rows`.
unsafe fn quantise_dense(
    gpu: &Gpu,
    values: u64,
    rows: usize,
    cuts: &DeviceCuts,
    bins: &DeviceBins,
    first: usize,
) -> Result<()> {
    let words = rows * bins.layout.row_words;
    if words == 0 {
        return Ok(());
    }
    let [features, bits, row_words] = bins.layout.shape_args();
    let (cut_ptrs, cut_values) = (cuts.cut_ptrs.as_ptr(), cuts.cut_values.as_ptr());
    let out = ptr_mut(bins.row_at(first));
    let args =
        entry::boost_bins_dense::args(ptr(values), rows as u64, features, bits, row_words, cut_ptrs, cut_values, out);
    // SAFETY: as the caller promises: `rows` rows of values and of packed words (a thread a word);
    // the cuts' `features + 1` offsets lie within their bounds, fewer bins a feature than the
    // missing id.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(words)?, args)? };
    Ok(())
}

/// Launches `boost_bins_csr` over `rows` CSR rows (`[row_ptr, col_indices, values]` device
/// addresses), writing the packed bins of rows `first..first + rows` of `bins`.
///
/// # Safety
/// `row_ptr` holds `rows + 1` non-decreasing offsets into the entries, whose columns increase
/// strictly within a row below the cuts' features; `bins` has rows `first..first + rows`.
unsafe fn quantise_csr(
    gpu: &Gpu,
    [row_ptr, col_indices, values]: [u64; 3],
    rows: usize,
    cuts: &DeviceCuts,
    bins: &DeviceBins,
    first: usize,
) -> Result<()> {
    if rows * bins.layout.row_words == 0 {
        return Ok(());
    }
    let [features, bits, row_words] = bins.layout.shape_args();
    let (cut_ptrs, cut_values) = (cuts.cut_ptrs.as_ptr(), cuts.cut_values.as_ptr());
    let args = entry::boost_bins_csr::args(
        ptr(row_ptr),
        ptr(col_indices),
        ptr(values),
        rows as u64,
        features,
        bits,
        row_words,
        cut_ptrs,
        cut_values,
        ptr_mut(bins.row_at(first)),
    );
    // SAFETY: as the caller promises (a thread a row); the cuts as for the dense kernel.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(rows)?, args)? };
    Ok(())
}
