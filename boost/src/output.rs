//! Writing an output file (a model, predictions, a plot) so that nothing of the user's is lost.
//!
//! A regular file is written under a unique temporary name in its own directory (`tempfile`), synced
//! and renamed over the target, so a failed write leaves the old file whole and no other file is
//! touched; it keeps the old file's permissions, and a file the user could not write is refused, not
//! replaced. A symbolic link is followed (the file it names is replaced, the link stays). Anything
//! that is not a regular file (a pipe, a terminal, `/dev/null`), and paths under `/dev` and `/proc`,
//! are written in place; `/dev/stdout` is this process's standard output.

use std::fs::{OpenOptions, Permissions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Writes `bytes` to `path`, through a temporary file when `path` is (or will be) a regular file.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |file| file.write_all(bytes))
}

/// Like [`write_file`], with the content written by `fill` (which may write in pieces).
pub fn write_with(path: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let written = match destination(path)? {
        Destination::Stdout => {
            let mut out = io::stdout().lock();
            fill(&mut out).and_then(|()| out.flush())
        }
        Destination::InPlace { create } => OpenOptions::new()
            .write(true)
            .create(create)
            .open(path)
            .and_then(|mut file| fill(&mut file).and_then(|()| file.flush())),
        Destination::Replace { target, permissions } => replace(&target, permissions, fill),
    };
    written.map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// How an output path is written.
enum Destination {
    /// This process's standard output, whatever it is (a pipe, a terminal, a file opened for
    /// appending), through the handle it already has: `/dev/stdout`.
    Stdout,
    /// Opened and written where it is: a pipe, a device or a socket, a path the system resolves
    /// itself (`/dev/fd/N`, `/proc/self/fd/N`), or a link to a file yet to be made (`create`).
    InPlace { create: bool },
    /// A regular file (a link's target), replaced through a temporary file.
    Replace { target: PathBuf, permissions: Option<Permissions> },
}

fn destination(path: &Path) -> Result<Destination> {
    let error = |kind: io::ErrorKind, reason: String| Error::Io {
        path: path.to_path_buf(),
        source: io::Error::new(kind, reason),
    };
    if path.as_os_str().is_empty() {
        return Err(error(io::ErrorKind::InvalidInput, "an empty path names no file".into()));
    }
    if path == Path::new("/dev/stdout") {
        return Ok(Destination::Stdout);
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(error(io::ErrorKind::IsADirectory, "is a directory: give a file name".into())),
        Ok(meta) if !meta.is_file() || path.starts_with("/dev") || path.starts_with("/proc") => {
            Ok(Destination::InPlace { create: false })
        }
        Ok(meta) => {
            // Opening for writing (no truncation) asks the system whether the user may write it.
            if let Err(e) = OpenOptions::new().write(true).open(path) {
                return Err(error(e.kind(), format!("cannot be written ({e}); it is left as it was")));
            }
            // A symbolic link is followed: the file it names is replaced, the link stays.
            let target = std::fs::canonicalize(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
            Ok(Destination::Replace { target, permissions: Some(meta.permissions()) })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Ok(Destination::InPlace { create: true });
            }
            if path.as_os_str().to_string_lossy().ends_with('/') {
                return Err(error(io::ErrorKind::InvalidInput, "names a directory: give a file name".into()));
            }
            Ok(Destination::Replace { target: path.to_path_buf(), permissions: None })
        }
        Err(e) => Err(Error::Io { path: path.to_path_buf(), source: e }),
    }
}

/// Writes a temporary file beside `target` and renames it over `target`; the temporary file is
/// removed if anything fails.
fn replace(
    target: &Path,
    permissions: Option<Permissions>,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // A new file gets the usual mode (the umask applies at creation); an old one keeps its own.
        builder.permissions(permissions.clone().unwrap_or_else(|| Permissions::from_mode(0o666)));
    }
    let mut temp = builder.tempfile_in(dir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => io::Error::new(e.kind(), format!("the directory {} does not exist", dir.display())),
        _ => e,
    })?;
    fill(temp.as_file_mut())?;
    temp.as_file().sync_all()?;
    if let Some(permissions) = permissions {
        // Where the creation mode could not carry them (not Unix), set them now.
        temp.as_file().set_permissions(permissions)?;
    }
    temp.persist(target).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("boost-output-{name}-")).tempdir().unwrap()
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_file_is_written_and_no_temporary_file_is_left() {
        let dir = scratch("new");
        let path = dir.path().join("out.txt");
        write_file(&path, b"1\n2\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"1\n2\n");
        assert_eq!(entries(dir.path()), ["out.txt"]);
    }

    #[test]
    fn a_file_named_like_the_old_temporary_survives() {
        let dir = scratch("tmp");
        let path = dir.path().join("out.txt");
        let neighbour = dir.path().join("out.tmp");
        std::fs::write(&neighbour, b"keep me").unwrap();
        write_file(&path, b"new").unwrap();
        write_file(&path, b"newer").unwrap();
        assert_eq!(std::fs::read(&neighbour).unwrap(), b"keep me");
        assert_eq!(std::fs::read(&path).unwrap(), b"newer");
        assert_eq!(entries(dir.path()), ["out.tmp", "out.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_followed_and_kept() {
        let dir = scratch("link");
        let target = dir.path().join("real.txt");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        write_file(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_written_in_place() {
        let dir = scratch("fifo");
        let fifo = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_file(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn a_device_file_is_written_in_place() {
        if Path::new("/dev/null").exists() {
            write_file(Path::new("/dev/null"), b"gone").unwrap();
            assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        }
    }

    #[cfg(unix)]
    #[test]
    fn permissions_of_the_old_file_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("mode");
        let path = dir.path().join("out.txt");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o640)).unwrap();
        write_file(&path, b"new").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
    }

    #[test]
    fn a_directory_or_a_missing_directory_is_a_clear_error() {
        let dir = scratch("dir");
        let error = write_file(dir.path(), b"x").unwrap_err().to_string();
        assert!(error.contains("is a directory"), "{error}");
        let slash = format!("{}/new/", dir.path().display());
        let error = write_file(Path::new(&slash), b"x").unwrap_err().to_string();
        assert!(error.contains("give a file name"), "{error}");
        let missing = dir.path().join("no/such/out.txt");
        let error = write_file(&missing, b"x").unwrap_err().to_string();
        assert!(error.contains("does not exist"), "{error}");
        assert_eq!(entries(dir.path()), Vec::<String>::new());
    }
}
