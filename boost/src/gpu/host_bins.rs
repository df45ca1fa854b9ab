//! The pages in the builder's packed layout, page-locked in host memory and mapped into the
//! device's address space ([`HostBins`]): a second copy of each page that external-memory training
//! keeps in host memory, made once on the device from the page's ELLPACK words
//! (`boost_kernels::ellpack::gather_kernel`, every row) and read back. Each pass over the pages then
//! copies fewer bytes (28 features of 256 bins: 9-bit ids of each feature's bins, 32 bytes a row,
//! against 13-bit global symbols, 45.5 bytes): the walk for every row's leaf
//! ([`boost_kernels::predict::packed_kernel`]) and the level passes of a streamed tree
//! ([`super::paged`]) read it as it is; and a tree's sampled rows are gathered by the device from
//! the mapped copy in place ([`gather_packed`]), so the bus carries those rows only, not every page.
//!
//! A page is copied so only where its packed rows take no more bytes than its words (sparse rows
//! can take fewer as ELLPACK symbols) and its words are in host memory (not the cache file); the
//! copies are made at the first tree and those of the pages the device then keeps are freed.

use boost_kernels::entry;
use primitives::{DeviceBuffer, Gpu, HostMapped};

use super::pages::{faulted_in, gather_page, DevicePages};
use super::{element_config, BinLayout, DeviceBins};
use crate::Result;

/// Each page's rows in the builder's layout, where it has such a copy.
pub(super) struct HostBins {
    pages: Vec<Option<HostMapped<u32>>>,
}

impl HostBins {
    /// The copies of `pages` (of `cut_ptrs`' cuts, in `layout`), each page's bins unpacked on the
    /// device and read back.
    pub(super) fn transcode(
        gpu: &Gpu,
        pages: &DevicePages,
        (cut_ptrs, layout): (&DeviceBuffer<u32>, BinLayout),
    ) -> Result<Self> {
        let views = pages.views()?;
        let in_memory = pages.matrix.store.in_memory();
        let copied = |rows: usize, words: &[u64]| {
            rows > 0 && layout.row_words > 0 && rows * layout.row_words * 4 <= std::mem::size_of_val(words)
        };
        let largest = views.iter().map(|v| v.page.rows).max().unwrap_or(0);
        let identity = gpu.upload(&(0..largest as u32).collect::<Vec<_>>())?;
        let mut copies = Vec::with_capacity(views.len());
        for (view, host) in views.iter().zip(in_memory) {
            let rows = view.page.rows;
            if !host || !copied(rows, view.page.words()) {
                copies.push(None);
                continue;
            }
            let uploaded;
            let words = match view.kept {
                Some(words) => words,
                None => {
                    uploaded = gpu.upload(view.page.words())?;
                    &uploaded
                }
            };
            let bins = DeviceBins { words: gpu.alloc_uninitialized(rows * layout.row_words)?, layout };
            gather_page(gpu, (&view.page, words), 0, cut_ptrs, (&identity, 0..rows), &bins)?;
            let len = bins.words.len();
            let mut mapped = gpu.map_host(faulted_in(len))?;
            bins.words.copy_range_to_host(gpu, 0..len, mapped.host_mut())?;
            copies.push(Some(mapped));
        }
        Ok(HostBins { pages: copies })
    }

    /// Frees page `k`'s copy (a page the device keeps). No copy of it may be in flight.
    pub(super) fn release(&mut self, k: usize) {
        if let Some(page) = self.pages.get_mut(k) {
            *page = None;
        }
    }

    /// Page `k`'s copy, if it has one.
    pub(super) fn page(&self, k: usize) -> Option<&HostMapped<u32>> {
        self.pages.get(k)?.as_ref()
    }
}

/// Rows `rows[span]` (increasing, of the matrix) of a page's mapped copy `page` whose first row is
/// `first` into the same rows of `bins`, read by the device in place
/// ([`boost_kernels::bins::gather_rows_kernel`]).
pub(super) fn gather_packed(
    gpu: &Gpu,
    (page, first): (&HostMapped<u32>, usize),
    (rows, span): (&DeviceBuffer<u32>, std::ops::Range<usize>),
    bins: &DeviceBins,
) -> Result<()> {
    let row_words = bins.layout.row_words;
    let words = span.len() * row_words;
    let args = entry::boost_bins_gather_packed::args(
        page.device().as_ptr(),
        row_words as u64,
        first as u64,
        rows.as_ptr().wrapping_add(span.start),
        span.len() as u64,
        bins.words.as_mut_ptr().wrapping_add(span.start * row_words),
    );
    // SAFETY: `span` rows of the matrix that lie in the page (at least `first`, less `first` a
    // row of its copy), and as many rows of `bins`, whose layout is the copy's.
    unsafe { gpu.launch_kernel(crate::KERNELS, element_config(words)?, args)? };
    Ok(())
}
