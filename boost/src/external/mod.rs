//! Training data bigger than memory: rows that arrive in batches ([`BatchSource`], XGBoost's
//! `DataIter`), quantised without ever being held whole ([`quantise`]: the whole matrix's cuts and
//! ELLPACK rows, bit for bit), into pages kept in host memory or, past a byte budget, in an unnamed
//! file of a cache directory ([`store`]). The CPU builder visits the pages one at a time
//! ([`BinPages`]), so the model is the in-core one byte for byte.

pub mod quantise;
pub mod store;

use std::path::PathBuf;

use crate::quantile::QuantileCuts;
use crate::tree::hist::{BinPages, PageView};
use crate::{Error, Result};
pub use quantise::{Batch, BatchSource};
use store::PageStore;

/// How [`crate::DMatrix::from_batches`] quantises the batches and keeps their pages (XGBoost's
/// `ExtMemQuantileDMatrix` arguments).
#[derive(Clone, Debug)]
pub struct ExternalMemory {
    /// Bins a feature: the training's `max_bin` must be the same (the pages are quantised once).
    pub max_bin: u32,
    /// XGBoost's feature types (`q`, `c`, ...; empty: all numeric), fixed with the cuts.
    pub feature_types: Vec<String>,
    /// Consecutive batches are joined into pages of at least this many bytes of packed rows.
    pub page_bytes: usize,
    /// Where pages go once `host_bytes` of them are in host memory: an unnamed file in this
    /// directory, which the system removes when the matrix is dropped or the process ends. Without
    /// it every page stays in host memory.
    pub cache_dir: Option<PathBuf>,
    /// Bytes of pages kept in host memory before the cache directory takes the others.
    pub host_bytes: usize,
}

impl Default for ExternalMemory {
    /// 256 bins, numeric features, pages of 64 MiB, all in host memory.
    fn default() -> Self {
        ExternalMemory { max_bin: 256, feature_types: Vec::new(), page_bytes: 64 << 20, cache_dir: None, host_bytes: 0 }
    }
}

impl ExternalMemory {
    fn check(&self) -> Result<()> {
        if self.max_bin < 2 {
            return Err(Error::param("max_bin", format!("{} bins: at least 2", self.max_bin)));
        }
        Ok(())
    }
}

/// Where an external-memory matrix's pages are ([`crate::DMatrix::pages`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagesInfo {
    /// Pages.
    pub pages: usize,
    /// Bytes of packed rows in host memory.
    pub host_bytes: usize,
    /// Bytes of packed rows in the cache file.
    pub disk_bytes: u64,
}

impl std::fmt::Display for PagesInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = |b: f64| b / 1e6;
        write!(
            f,
            "{} pages, {:.1} MB in memory, {:.1} MB on disk",
            self.pages,
            mb(self.host_bytes as f64),
            mb(self.disk_bytes as f64)
        )
    }
}

/// The quantised rows of a [`BatchSource`]: the cuts and the pages.
#[derive(Debug)]
pub struct ExternalMatrix {
    /// The whole matrix's cuts.
    pub cuts: QuantileCuts,
    /// The pages, in row order.
    pub store: PageStore,
    /// The `max_bin` the cuts were made with.
    pub max_bin: u32,
    /// Which features are categorical (as the feature types said).
    pub categorical: Vec<bool>,
}

impl ExternalMatrix {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.store.rows()
    }

    /// Features.
    pub fn cols(&self) -> usize {
        self.cuts.features()
    }

    /// Bytes of the packed pages (host memory and cache file).
    pub fn bytes(&self) -> usize {
        let (host, disk) = self.store.bytes();
        host + disk as usize
    }
}

/// The CPU builder's view: every page read packed, in place.
impl BinPages for ExternalMatrix {
    fn rows(&self) -> usize {
        self.store.rows()
    }

    fn visit(&self, visit: &mut dyn FnMut(usize, PageView<'_>)) -> Result<()> {
        self.store.for_each(|first, page| visit(first, PageView::Packed(page)))
    }
}
