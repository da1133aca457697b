//! File-system primitives with durability spelled out. Every fsync and rename result is
//! returned to the caller; none is ignored.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Result, StorageError};

/// fsyncs a directory so that creations, renames and deletions of its entries are durable.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    OpenDir::open(dir)?.fsync()
}

/// A directory opened for an fsync later: opened while its path is known to be right (under the
/// log's writer lock, which a move's renames take and a deletion's closing of the log does),
/// fsynced after that lock is released.
#[derive(Debug)]
pub struct OpenDir {
    handle: File,
    path: PathBuf,
}

impl OpenDir {
    /// Opens `dir` for a later [`fsync`](Self::fsync).
    pub fn open(dir: &Path) -> Result<Self> {
        let handle = File::open(dir).map_err(StorageError::io("open directory", dir))?;
        Ok(Self {
            handle,
            path: dir.to_path_buf(),
        })
    }

    /// fsyncs the directory so that creations, renames and deletions of its entries are
    /// durable. The error names the path it was opened at.
    pub fn fsync(&self) -> Result<()> {
        crate::fault::point("fs.fsync_dir")
            .and_then(|()| self.handle.sync_all())
            .map_err(StorageError::sync("fsync directory", &self.path))
    }
}

/// Replaces `target` with `contents` so that a crash leaves either the old or the new file:
/// write `<target>.tmp`, fsync it, rename it over `target`, fsync the parent directory.
pub fn atomic_write(target: &Path, contents: &[u8]) -> Result<()> {
    replace(target, contents, true)
}

/// [`atomic_write`] of a file only its owner may read or write (mode 0600, whatever the
/// process's umask): the documents that hold credentials and authorization.
pub fn atomic_write_private(target: &Path, contents: &[u8]) -> Result<()> {
    replace_with_mode(target, contents, true, Some(0o600))
}

/// Replaces `target` through a temp file and a rename, like [`atomic_write`], but without the
/// fsyncs: readers never see a partial file, and a crash may leave an empty or torn one, so the
/// contents must carry their own checksum. The caller fsyncs later ([`fsync_file_if_exists`]
/// and [`fsync_dir`]) when it wants the file durable.
pub fn replace_unsynced(target: &Path, contents: &[u8]) -> Result<()> {
    replace(target, contents, false)
}

/// fsyncs `path` if it still exists.
pub fn fsync_file_if_exists(path: &Path) -> Result<()> {
    match File::open(path) {
        Ok(file) => crate::fault::point("fs.fsync")
            .and_then(|()| file.sync_all())
            .map_err(StorageError::sync("fsync", path)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(StorageError::io("open", path)(error)),
    }
}

fn replace(target: &Path, contents: &[u8], durable: bool) -> Result<()> {
    replace_with_mode(target, contents, durable, None)
}

fn replace_with_mode(
    target: &Path,
    contents: &[u8],
    durable: bool,
    mode: Option<u32>,
) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut tmp_name = target.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = Path::new(&tmp_name);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(tmp)
        .map_err(StorageError::io("create", tmp))?;
    if let Some(mode) = mode {
        // Set on the file itself: a leftover temporary file keeps the mode it was made with.
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(StorageError::io("set permissions of", tmp))?;
    }
    crate::fault::point("fs.write")
        .and_then(|()| file.write_all(contents))
        .map_err(StorageError::io("write", tmp))?;
    if durable {
        crate::fault::point("fs.fsync")
            .and_then(|()| file.sync_all())
            .map_err(StorageError::sync("fsync", tmp))?;
    }
    drop(file);
    rename(tmp, target).map_err(StorageError::io("rename into place", target))?;
    if durable && let Some(parent) = target.parent() {
        fsync_dir(parent)?;
    }
    Ok(())
}

/// Renames `from` to `to`; a missing `from` is not an error (lazily created index files may
/// never have existed).
pub fn rename_if_exists(from: &Path, to: &Path) -> Result<bool> {
    match rename(from, to) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(StorageError::io("rename", from)(error)),
    }
}

/// Deletes `path`; a missing file is not an error.
pub fn remove_if_exists(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(StorageError::io("delete", path)(error)),
    }
}

/// The text of `path`, or `None` when it does not exist. Bytes that are not UTF-8 are reported as
/// a malformed file.
pub fn read_text_if_exists(path: &Path) -> Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| StorageError::MalformedFile {
                path: path.to_path_buf(),
                line: 1,
                reason: "not UTF-8 text".into(),
            }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(StorageError::io("read", path)(error)),
    }
}

/// `rename(2)`, with the `fs.rename` fault point in front.
pub(crate) fn rename(from: &Path, to: &Path) -> std::io::Result<()> {
    crate::fault::point("fs.rename")?;
    fs::rename(from, to)
}
