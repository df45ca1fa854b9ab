//! Where an external-memory matrix keeps its pages: in host memory up to a byte budget, past it in
//! one unnamed file of a cache directory (`tempfile::tempfile_in`: the system removes it when the
//! matrix is dropped or the process ends, however it ends, so a run leaves no cache files behind).
//! Reading the pages back overlaps the next page's read with the caller's work on the current one.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::ellpack::EllpackMatrix;
use crate::{Error, Result};

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

/// The cache file and the directory it was made in (what errors name).
#[derive(Debug)]
struct CacheFile {
    dir: PathBuf,
    file: Mutex<File>,
    len: u64,
}

impl PageStore {
    /// A store keeping pages in host memory up to `host_budget` bytes and the others in an unnamed
    /// file made now in `cache_dir` (so that a directory that does not exist or cannot be written
    /// is an error before any row is read). Without a directory every page stays in host memory.
    pub fn new(cache_dir: Option<&Path>, host_budget: usize) -> Result<Self> {
        let cache = cache_dir
            .map(|dir| {
                let file = tempfile::tempfile_in(dir).map_err(|e| cache_error(dir, "cannot make a file in it", e))?;
                Ok::<_, Error>(CacheFile { dir: dir.to_path_buf(), file: Mutex::new(file), len: 0 })
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

    /// Calls `visit(first row, page)` on every page in row order; a page in the cache file is read
    /// while `visit` works on the one before.
    pub fn for_each(&self, mut visit: impl FnMut(usize, &EllpackMatrix)) -> Result<()> {
        std::thread::scope(|scope| {
            let mut next = self.pages.first().map(|page| self.load(page));
            for (i, page) in self.pages.iter().enumerate() {
                let current = next.take().expect("a page is loaded before it is visited")?;
                let ahead = self.pages.get(i + 1).map(|page| scope.spawn(|| self.load(page)));
                visit(page.first_row, &current);
                next = ahead.map(|read| read.join().expect("a page read does not panic"));
            }
            Ok(())
        })
    }

    fn load<'s>(&'s self, page: &'s Page) -> Result<Cow<'s, EllpackMatrix>> {
        match &page.place {
            Place::Host(matrix) => Ok(Cow::Borrowed(matrix)),
            Place::Disk { header, offset, words } => {
                let cache = self.cache.as_ref().expect("a page on disk has its cache file");
                Ok(Cow::Owned(header.with_words(cache.read(*offset, *words)?)))
            }
        }
    }
}

impl CacheFile {
    /// Appends `page`'s words to the file.
    fn write(&mut self, page: EllpackMatrix) -> Result<Place> {
        let (header, words) = page.into_words();
        let file = self.file.get_mut().expect("no reader panics holding the file");
        let written = file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| file.write_all(bytemuck::cast_slice(&words)));
        written.map_err(|e| cache_error(&self.dir, "cannot write a page to it", e))?;
        let offset = self.len;
        self.len += (words.len() * 8) as u64;
        Ok(Place::Disk { header, offset, words: words.len() })
    }

    /// `count` words from byte `offset`.
    fn read(&self, offset: u64, count: usize) -> Result<Vec<u64>> {
        let mut words = vec![0u64; count];
        let mut file = self.file.lock().expect("no reader panics holding the file");
        let read = file.seek(SeekFrom::Start(offset)).and_then(|_| file.read_exact(bytemuck::cast_slice_mut(&mut words)));
        read.map_err(|e| cache_error(&self.dir, "cannot read a page back", e))?;
        Ok(words)
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
        store.for_each(|first, page| seen.push((first, page.clone()))).unwrap();
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
        store.cache = Some(CacheFile { dir: "/the/cache".into(), file: Mutex::new(full), len: 0 });
        let error = store.push(pages(1).0.remove(0)).unwrap_err().to_string();
        assert!(error.contains("/the/cache: cache directory: cannot write a page to it: No space left"), "{error}");
    }
}
