//! Where an external-memory matrix keeps its pages: in host memory up to a byte budget, past it in
//! one unnamed file of a cache directory (`tempfile::tempfile_in`: the system removes it when the
//! matrix is dropped or the process ends, however it ends, so a run leaves no cache files behind).
//! The file is mapped into memory once written: pages are read in place (no copy; the system
//! keeps in memory what fits and reads the rest again when it is visited).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memmap2::Mmap;

use crate::ellpack::EllpackMatrix;
use crate::{Error, Result};

/// A page's first row and the page, its words borrowed.
pub type PageAt<'a> = (usize, EllpackMatrix<&'a [u64]>);

/// Pages of consecutive rows, in row order.
#[derive(Debug)]
pub struct PageStore {
    pages: Vec<Page>,
    rows: usize,
    /// Bytes of pages that stay in host memory before the cache file takes the others.
    host_budget: usize,
    host_bytes: usize,
    cache: Option<CacheFile>,
}

#[derive(Debug)]
struct Page {
    first_row: usize,
    place: Place,
}

#[derive(Debug)]
enum Place {
    Host(EllpackMatrix),
    /// `words` 64-bit words at byte `offset` of the cache file; `header` is the page without its
    /// words.
    Disk { header: EllpackMatrix, offset: u64, words: usize },
}

/// The cache file and the directory it was made in (what errors name); mapped once read.
#[derive(Debug)]
struct CacheFile {
    dir: PathBuf,
    file: File,
    len: u64,
    mapped: OnceLock<Mmap>,
}

impl PageStore {
    /// A store keeping pages in host memory up to `host_budget` bytes and the others in an unnamed
    /// file made now in `cache_dir` (so that a directory that does not exist or cannot be written
    /// is an error before any row is read). Without a directory every page stays in host memory.
    pub fn new(cache_dir: Option<&Path>, host_budget: usize) -> Result<Self> {
        let cache = cache_dir
            .map(|dir| {
                let file = tempfile::tempfile_in(dir).map_err(|e| cache_error(dir, "cannot make a file in it", e))?;
                Ok::<_, Error>(CacheFile { dir: dir.to_path_buf(), file, len: 0, mapped: OnceLock::new() })
            })
            .transpose()?;
        Ok(PageStore { pages: Vec::new(), rows: 0, host_budget, host_bytes: 0, cache })
    }

    /// Adds `page`, the rows after those already stored.
    pub fn push(&mut self, page: EllpackMatrix) -> Result<()> {
        let first_row = self.rows;
        self.rows += page.rows;
        let place = match &mut self.cache {
            Some(cache) if self.host_bytes + page.bytes() > self.host_budget => cache.write(page)?,
            _ => {
                self.host_bytes += page.bytes();
                Place::Host(page)
            }
        };
        self.pages.push(Page { first_row, place });
        Ok(())
    }

    /// Rows of all the pages.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Pages.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether there is no page.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Bytes of the pages in host memory and in the cache file.
    pub fn bytes(&self) -> (usize, u64) {
        (self.host_bytes, self.cache.as_ref().map_or(0, |c| c.len))
    }

    /// The words of the pages kept in host memory (those a GPU run page-locks for its copies).
    pub fn host_words(&self) -> impl Iterator<Item = &[u64]> {
        self.pages.iter().filter_map(|page| match &page.place {
            Place::Host(matrix) => Some(matrix.words()),
            Place::Disk { .. } => None,
        })
    }

    /// Every page with its first row, in row order, pages in the cache file read in place from its
    /// mapping.
    pub fn pages(&self) -> Result<Vec<PageAt<'_>>> {
        let mut pages = Vec::with_capacity(self.pages.len());
        for page in &self.pages {
            let matrix = match &page.place {
                Place::Host(matrix) => matrix.view(),
                Place::Disk { header, offset, words } => {
                    let cache = self.cache.as_ref().expect("a page on disk has its cache file");
                    let start = (*offset / 8) as usize;
                    header.with_words(&cache.words()?[start..start + words])
                }
            };
            pages.push((page.first_row, matrix));
        }
        Ok(pages)
    }

    /// Whether each page's words are in host memory (not in the cache file), in row order.
    pub fn in_memory(&self) -> Vec<bool> {
        self.pages.iter().map(|page| matches!(page.place, Place::Host(_))).collect()
    }

    /// Calls `visit(first row, page)` on every page in row order ([`PageStore::pages`]).
    pub fn for_each(&self, mut visit: impl FnMut(usize, EllpackMatrix<&[u64]>)) -> Result<()> {
        self.pages()?.into_iter().for_each(|(first, page)| visit(first, page));
        Ok(())
    }
}

impl CacheFile {
    /// Appends `page`'s words to the file.
    fn write(&mut self, page: EllpackMatrix) -> Result<Place> {
        if self.mapped.get().is_some() {
            return Err(Error::InvalidData("a page added to external memory after its pages were read".into()));
        }
        let (header, words) = page.into_words();
        let written = self.file.write_all(bytemuck::cast_slice(&words));
        written.map_err(|e| cache_error(&self.dir, "cannot write a page to it", e))?;
        let offset = self.len;
        self.len += (words.len() * 8) as u64;
        Ok(Place::Disk { header, offset, words: words.len() })
    }

    /// The file's words, mapped the first time.
    fn words(&self) -> Result<&[u64]> {
        if self.mapped.get().is_none() {
            // SAFETY: the file has no name (`tempfile_in`) and only this store writes it, which it
            // no longer does once mapped (`write` refuses): nothing changes the mapped bytes.
            let map = unsafe { Mmap::map(&self.file) };
            let map = map.map_err(|e| cache_error(&self.dir, "cannot map the pages", e))?;
            let _ = self.mapped.set(map);
        }
        let map = self.mapped.get().expect("mapped above");
        // The mapping starts on a page boundary and holds whole words.
        Ok(bytemuck::cast_slice(&map[..]))
    }
}

/// An error of the cache directory `dir`: what failed and what the system said (a full disk is
/// `No space left on device`).
fn cache_error(dir: &Path, what: &str, source: std::io::Error) -> Error {
    let source = std::io::Error::new(source.kind(), format!("cache directory: {what}: {source}"));
    Error::io(dir, source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseMatrix, FeatureMatrix};
    use crate::quantile::QuantileCuts;

    fn pages(count: usize) -> (Vec<EllpackMatrix>, usize) {
        let (rows, cols) = (700, 5);
        let values: Vec<f32> = (0..rows * cols).map(|i| ((i * 37) % 101) as f32).collect();
        let features = FeatureMatrix::Dense(DenseMatrix::new(rows, cols, values));
        let cuts = QuantileCuts::build(&features, &[], 32);
        let page = EllpackMatrix::new(&features, &cuts);
        let bytes = page.bytes();
        (vec![page; count], bytes)
    }

    /// Pages past the host budget go to the cache file, which has no name in the directory, and
    /// every page reads back as it was stored.
    #[test]
    fn pages_past_the_budget_go_to_an_unnamed_file() {
        let dir = tempfile::tempdir().unwrap();
        let (list, bytes) = pages(5);
        let mut store = PageStore::new(Some(dir.path()), 2 * bytes).unwrap();
        for page in list.clone() {
            store.push(page).unwrap();
        }
        assert_eq!(store.bytes(), (2 * bytes, 3 * bytes as u64));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the cache file has no name");
        let mut seen = Vec::new();
        store.for_each(|first, page| seen.push((first, page.to_owned_matrix()))).unwrap();
        let want: Vec<(usize, EllpackMatrix)> = list.into_iter().enumerate().map(|(i, p)| (i * 700, p)).collect();
        assert!(seen == want);
    }

    /// A directory that does not exist, and a full disk (`/dev/full` as the cache file), are
    /// errors naming the directory.
    #[test]
    fn cache_faults_name_the_directory() {
        let missing = Path::new("/nonexistent/cache");
        let error = PageStore::new(Some(missing), 0).unwrap_err().to_string();
        assert!(error.starts_with("/nonexistent/cache: cache directory: cannot make a file in it"), "{error}");
        let Ok(full) = File::options().read(true).write(true).open("/dev/full") else { return };
        let mut store = PageStore::new(None, 0).unwrap();
        store.cache = Some(CacheFile { dir: "/the/cache".into(), file: full, len: 0, mapped: OnceLock::new() });
        let error = store.push(pages(1).0.remove(0)).unwrap_err().to_string();
        assert!(error.contains("/the/cache: cache directory: cannot write a page to it: No space left"), "{error}");
    }
}
