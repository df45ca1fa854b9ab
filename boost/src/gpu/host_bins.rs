//! The pages in the builder's packed layout, page-locked in host memory ([`HostBins`]): a second
//! copy of each page that external-memory training keeps in host memory, made once on the device
//! from the page's ELLPACK words (`boost_kernels::ellpack::gather_kernel`, every row) and read
//! back. Each pass over the pages then copies fewer bytes (28 features of 256 bins: 9-bit ids of
//! each feature's bins, 32 bytes a row, against 13-bit global symbols, 45.5 bytes): the walk
//! for every row's leaf ([`boost_kernels::predict::packed_kernel`]) and the level passes of a
//! streamed tree ([`super::paged`]) read it as it is; and a tree's sampled rows are gathered on
//! the host, whole rows copied ([`gather_rows`]), so the bus carries those rows only, not every
//! page.
//!
//! A page is copied so only where its packed rows take no more bytes than its words (sparse rows
//! can take fewer as ELLPACK symbols) and its words are in host memory (not the cache file).

use rayon::prelude::*;

use primitives::{DeviceBuffer, Gpu};

use super::pages::{gather_page, DevicePages, Staging};
use super::{BinLayout, DeviceBins};
use crate::Result;

/// Each page's rows in the builder's layout, where it has such a copy.
pub(super) struct HostBins {
    pages: Vec<Option<(usize, Staging<u32>)>>,
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
            let (mut staging, len) = (Staging::new(), bins.words.len());
            bins.words.copy_range_to_host(gpu, 0..len, staging.take_with_room(gpu, len, 0)?)?;
            copies.push(Some((len, staging)));
        }
        Ok(HostBins { pages: copies })
    }

    /// Page `k`'s copy, if it has one.
    pub(super) fn page(&self, k: usize) -> Option<&[u32]> {
        self.pages.get(k)?.as_ref().map(|(len, staging)| staging.slice(*len))
    }
}

/// The rows `sampled` (increasing, of the matrix) of a page's copy `bins` whose first row is
/// `first`, `row_words` words a row, into `out`, in order.
pub(super) fn gather_rows(bins: &[u32], row_words: usize, first: usize, sampled: &[u32], out: &mut [u32]) {
    // Enough rows a task that the scheduling costs little beside the copies.
    const ROWS_A_TASK: usize = 4096;
    out.par_chunks_mut(ROWS_A_TASK * row_words).zip(sampled.par_chunks(ROWS_A_TASK)).for_each(|(out, rows)| {
        for (to, &row) in out.chunks_exact_mut(row_words).zip(rows) {
            let at = (row as usize - first) * row_words;
            to.copy_from_slice(&bins[at..at + row_words]);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::gather_rows;

    #[test]
    fn gathered_rows_are_the_sampled_ones_in_order() {
        let (row_words, first) = (3, 100);
        let bins: Vec<u32> = (0..20 * row_words as u32).collect();
        let sampled = [100u32, 103, 104, 119];
        let mut out = vec![0; sampled.len() * row_words];
        gather_rows(&bins, row_words, first, &sampled, &mut out);
        assert_eq!(out, [0, 1, 2, 9, 10, 11, 12, 13, 14, 57, 58, 59]);
    }
}
