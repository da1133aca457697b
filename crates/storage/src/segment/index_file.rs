//! A memory-mapped file of fixed-size entries sorted by offset: the shared machinery of the
//! offset index and the time index.
//!
//! A new file is preallocated (sparse) to `max_index_bytes` rounded down to whole entries, so
//! appends never extend the file. An existing file is taken at its length: every whole entry
//! in it counts, which is why inactive segments' indexes are trimmed to their valid entries,
//! and why the active segment's indexes are grown back after loading.
//!
//! No file descriptor is kept once the file is mapped (the mapping stays valid without one),
//! as in Kafka: a broker with many segments would otherwise run out of descriptors. Resizing and
//! fsync reopen the file by path.
//!
//! Not thread-safe by itself; [`crate::segment::Segment`] guards each index with a lock.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use crate::error::{Result, StorageError};

#[derive(Debug)]
pub(crate) struct IndexFile {
    path: PathBuf,
    /// `None` when the file is empty (an empty mapping is not allowed).
    mmap: Option<MmapMut>,
    entry_size: usize,
    entries: usize,
    max_entries: usize,
}

impl IndexFile {
    /// Opens `path`, creating and preallocating it when missing.
    pub(crate) fn open(path: &Path, max_index_bytes: u32, entry_size: usize) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(StorageError::io("open index", path))?;
        let mut length = file
            .metadata()
            .map_err(StorageError::io("stat index", path))?
            .len();
        let newly_created = length == 0;
        if newly_created {
            length = round_down(u64::from(max_index_bytes), entry_size);
            file.set_len(length)
                .map_err(StorageError::io("preallocate index", path))?;
        }
        let mmap = map(&file, length, path)?;
        let max_entries = (length / entry_size as u64) as usize;
        Ok(Self {
            path: path.to_path_buf(),
            mmap,
            entry_size,
            entries: if newly_created { 0 } else { max_entries },
            max_entries,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
    pub(crate) fn set_path(&mut self, path: PathBuf) {
        self.path = path;
    }
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }
    pub(crate) fn max_entries(&self) -> usize {
        self.max_entries
    }
    pub(crate) fn length_bytes(&self) -> u64 {
        (self.max_entries * self.entry_size) as u64
    }
    pub(crate) fn file_length(&self) -> Result<u64> {
        std::fs::metadata(&self.path)
            .map(|metadata| metadata.len())
            .map_err(StorageError::io("stat index", &self.path))
    }

    /// A sanity-check failure of this index.
    pub(crate) fn corrupt(&self, reason: String) -> StorageError {
        StorageError::Corrupt {
            path: self.path.clone(),
            position: 0,
            reason,
        }
    }

    /// The part of Kafka's sanity check both indexes share: the file holds whole entries.
    pub(crate) fn check_whole_entries(&self) -> Result<()> {
        let length = self.file_length()?;
        if length % self.entry_size as u64 != 0 {
            return Err(self.corrupt(format!(
                "length {length} is not a multiple of {}",
                self.entry_size
            )));
        }
        Ok(())
    }

    fn reopen(&self) -> Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(StorageError::io("open index", &self.path))
    }

    /// The bytes of entry `n`, which must be below [`Self::entries`] or the file's capacity.
    pub(crate) fn slot(&self, n: usize) -> &[u8] {
        let start = n * self.entry_size;
        match &self.mmap {
            Some(mmap) => &mmap[start..start + self.entry_size],
            None => &[],
        }
    }

    /// Writes one entry after the last. The caller has checked ordering and capacity.
    pub(crate) fn push(&mut self, entry: &[u8]) -> Result<()> {
        if self.entries >= self.max_entries {
            return Err(StorageError::InvalidIndexAppend {
                path: self.path.clone(),
                reason: format!("the index is full at {} entries", self.max_entries),
            });
        }
        let start = self.entries * self.entry_size;
        if let Some(mmap) = &mut self.mmap {
            mmap[start..start + self.entry_size].copy_from_slice(entry);
        }
        self.entries += 1;
        Ok(())
    }

    /// Forgets entries from `n` on.
    pub(crate) fn truncate_entries(&mut self, n: usize) {
        self.entries = self.entries.min(n);
    }

    /// Sets the file to `new_bytes` rounded down to whole entries and remaps it. Returns
    /// whether the size changed.
    pub(crate) fn resize(&mut self, new_bytes: u64) -> Result<bool> {
        let length = round_down(new_bytes, self.entry_size);
        if length == self.length_bytes() && length == self.file_length()? {
            return Ok(false);
        }
        let file = self.reopen()?;
        self.mmap = None;
        file.set_len(length)
            .map_err(StorageError::io("resize index", &self.path))?;
        self.mmap = map(&file, length, &self.path)?;
        self.max_entries = (length / self.entry_size as u64) as usize;
        self.entries = self.entries.min(self.max_entries);
        Ok(true)
    }

    /// Shrinks the file to its valid entries (done when a segment stops being active).
    pub(crate) fn trim_to_valid_size(&mut self) -> Result<bool> {
        self.resize((self.entries * self.entry_size) as u64)
    }

    /// Writes the mapped pages back to the file (msync) and fsyncs the file.
    pub(crate) fn flush(&self) -> Result<()> {
        if let Some(mmap) = &self.mmap {
            mmap.flush()
                .map_err(StorageError::io("flush index", &self.path))?;
        }
        match self.reopen() {
            Ok(file) => file
                .sync_all()
                .map_err(StorageError::io("fsync index", &self.path)),
            // The segment was deleted meanwhile (retention, compaction): nothing to make
            // durable. Flushes run outside the log's lock, so they can meet this race.
            Err(StorageError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// Largest-lower-bound search: the highest slot whose key is ≤ `target`, where `key` reads
    /// a slot's sort key; `None` when every entry is above `target` or there are none.
    pub(crate) fn largest_lower_bound(
        &self,
        target: i64,
        key: impl Fn(&[u8]) -> i64,
    ) -> Option<usize> {
        if self.entries == 0 || key(self.slot(0)) > target {
            return None;
        }
        let (mut low, mut high) = (0usize, self.entries - 1);
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if key(self.slot(mid)) <= target {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        Some(low)
    }

    /// Smallest-upper-bound search: the lowest slot whose key is ≥ `target`.
    pub(crate) fn smallest_upper_bound(
        &self,
        target: i64,
        key: impl Fn(&[u8]) -> i64,
    ) -> Option<usize> {
        if self.entries == 0 || key(self.slot(self.entries - 1)) < target {
            return None;
        }
        let (mut low, mut high) = (0usize, self.entries - 1);
        while low < high {
            let mid = low + (high - low) / 2;
            if key(self.slot(mid)) >= target {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        Some(low)
    }
}

fn round_down(bytes: u64, entry_size: usize) -> u64 {
    bytes - bytes % entry_size as u64
}

#[allow(unsafe_code)]
fn map(file: &File, length: u64, path: &Path) -> Result<Option<MmapMut>> {
    if length == 0 {
        return Ok(None);
    }
    // SAFETY: the mapping is private to this IndexFile, which owns the file handle and is the
    // only writer; every access is bounds-checked against `max_entries`, which never exceeds
    // the mapped length. The data directory's lock keeps other ferrolog or Kafka processes
    // from truncating the file underneath the mapping.
    let mmap = unsafe {
        memmap2::MmapOptions::new()
            .len(length as usize)
            .map_mut(file)
    }
    .map_err(StorageError::io("mmap index", path))?;
    Ok(Some(mmap))
}

pub(crate) fn be_i64_at(bytes: &[u8], at: usize) -> i64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    i64::from_be_bytes(buf)
}

pub(crate) fn be_i32_at(bytes: &[u8], at: usize) -> i32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&bytes[at..at + 4]);
    i32::from_be_bytes(buf)
}
