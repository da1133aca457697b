//! The `.log` file of a segment: record batches back to back, no file header.
//!
//! Appends go through positional writes at the published size, so readers (positional reads,
//! any thread) and the single appender never share a file cursor. The published size only
//! grows after the bytes are written, so a reader bounded by it never sees a partial batch.
//!
//! Disk blocks are reserved ahead of the data with `fallocate(FALLOC_FL_KEEP_SIZE)`: a write
//! into blocks the file system has already allocated skips its delayed-allocation bookkeeping,
//! about 40% of what a buffered append costs the kernel on ext4. The file's size stays the size of
//! its data, so nothing on disk or seen by readers changes; the reservation (none below
//! [`RESERVE_AFTER_BYTES`] of data, at most [`MAX_RESERVE_AHEAD_BYTES`], and never more than the
//! data already written) is released by [`RecordsFile::trim`] when the segment rolls or closes.
//!
//! Walks over the entries are in the `scan` module.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::open_files::{OpenFiles, SegmentSlot};
use crate::error::{Result, StorageError};

/// A file starts reserving once its data reaches this size, so thousands of quiet partitions
/// hold no reserved blocks at all.
pub const RESERVE_AFTER_BYTES: u64 = 1 << 20;
/// The most disk space reserved past the data of one file. A reservation reaches as far past
/// the data as the data is long, up to this cap, so a busy partition makes one `fallocate` call
/// per 16 MiB appended.
pub const MAX_RESERVE_AHEAD_BYTES: u64 = 16 << 20;
/// `reserved_end` once reserving has failed for this file: appends never reach it.
const RESERVATION_OFF: u64 = u64::MAX;

/// The `.log` of a segment: positional reads by any thread, appends by a single appender. A
/// sealed segment's file is opened when read and may be closed again ([`OpenFiles`]).
#[derive(Debug)]
pub struct RecordsFile {
    path: Mutex<PathBuf>,
    slot: Arc<SegmentSlot>,
    /// Where a sealed segment's file is counted; `None` while the segment is active.
    files: Mutex<Option<Arc<OpenFiles>>>,
    size: AtomicU64,
    /// File position up to which blocks are reserved (or [`RESERVATION_OFF`]). Only the single
    /// appender moves it, so relaxed ordering suffices.
    reserved_end: AtomicU64,
    /// Whether blocks may be allocated past the data: reserved by this process, or by one that
    /// stopped without trimming (set when recovery decides the size).
    blocks_past_end: AtomicBool,
}

impl RecordsFile {
    /// Opens (creating if missing) the file. A newly created file is preallocated to
    /// `preallocate_bytes` when given; its valid size starts at 0. An existing file's valid
    /// size is its length until recovery says otherwise.
    pub fn open(path: &Path, preallocate_bytes: Option<u64>) -> Result<Self> {
        let file = crate::fault::point("log.open")
            .and_then(|()| {
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(path)
            })
            .map_err(StorageError::io("open", path))?;
        let length = file
            .metadata()
            .map_err(StorageError::io("stat", path))?
            .len();
        let size = match preallocate_bytes {
            Some(bytes) if length == 0 => {
                file.set_len(bytes)
                    .map_err(StorageError::io("preallocate", path))?;
                0
            }
            _ => length,
        };
        Ok(Self {
            path: Mutex::new(path.to_path_buf()),
            slot: SegmentSlot::open(file),
            files: Mutex::new(None),
            size: AtomicU64::new(size),
            reserved_end: AtomicU64::new(0),
            blocks_past_end: AtomicBool::new(false),
        })
    }

    /// A sealed segment's existing file, not opened until something reads it; counted in
    /// `files` while open. Its valid size is its length until recovery says otherwise.
    pub fn sealed(path: &Path, files: &Arc<OpenFiles>) -> Result<Self> {
        let length = std::fs::metadata(path)
            .map_err(StorageError::io("stat", path))?
            .len();
        Ok(Self {
            path: Mutex::new(path.to_path_buf()),
            slot: SegmentSlot::closed(),
            files: Mutex::new(Some(Arc::clone(files))),
            size: AtomicU64::new(length),
            reserved_end: AtomicU64::new(0),
            blocks_past_end: AtomicBool::new(false),
        })
    }

    /// The segment no longer takes appends: its file may be closed while others are read
    /// (counted in `files`).
    pub fn seal(&self, files: &Arc<OpenFiles>) {
        *self.files.lock() = Some(Arc::clone(files));
        self.slot.seal(files);
    }

    /// A sealed segment's slot and the open segments it is counted in, where its indexes map
    /// themselves; `None` while the segment is active.
    pub(crate) fn sealed_slot(&self) -> Option<(Arc<SegmentSlot>, Arc<OpenFiles>)> {
        let files = self.files.lock().clone()?;
        Some((Arc::clone(&self.slot), files))
    }

    /// The file, opened again at its current path if it was closed.
    fn handle(&self) -> Result<Arc<File>> {
        let files = self.files.lock().clone();
        let path = self.path();
        self.slot
            .get(files.as_deref(), || {
                crate::fault::point("log.open")
                    .and_then(|()| OpenOptions::new().read(true).write(true).open(&path))
            })
            .map_err(StorageError::io("open", &path))
    }

    /// The file's current path, which follows the segment's suffix changes.
    pub fn path(&self) -> PathBuf {
        self.path.lock().clone()
    }
    pub(crate) fn set_path(&self, path: PathBuf) {
        *self.path.lock() = path;
    }
    /// Bytes of valid data.
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }
    /// The open file, for callers that send its bytes elsewhere (sendfile); holding it keeps
    /// it open.
    pub fn file(&self) -> Result<Arc<File>> {
        self.handle()
    }
    /// The file's length, longer than [`Self::size`] while a preallocated file is untrimmed.
    pub fn file_length(&self) -> Result<u64> {
        let path = self.path();
        std::fs::metadata(&path)
            .map(|metadata| metadata.len())
            .map_err(StorageError::io("stat", &path))
    }

    /// Writes `bytes` after the valid data without making them valid: readers, and the next
    /// write, still see the old size until [`RecordsFile::publish`], so an append that fails
    /// after this leaves nothing behind that counts. Returns the position they start at. Only
    /// the segment's single appender calls this.
    pub fn write_after_end(&self, bytes: &[u8]) -> Result<u64> {
        let position = self.size();
        let end = position + bytes.len() as u64;
        if end >= RESERVE_AFTER_BYTES && end > self.reserved_end.load(Ordering::Relaxed) {
            self.reserve_ahead(end);
        }
        let file = self.handle()?;
        self.slot.written();
        crate::fault::point("log.write")
            .and_then(|()| file.write_all_at(bytes, position))
            .map_err(StorageError::io("append to", self.path()))?;
        Ok(position)
    }

    /// Makes the data up to `end`, written by [`RecordsFile::write_after_end`], valid.
    pub fn publish(&self, end: u64) {
        self.size.store(end, Ordering::Release);
    }

    /// Reserves blocks from the current reservation (or `end`'s block) to past `end`. A failure
    /// (a file system without `fallocate`, a full disk) only turns reserving off for this file:
    /// the write that follows reports a real problem itself.
    fn reserve_ahead(&self, end: u64) {
        const BLOCK: u64 = 4096;
        let from = self
            .reserved_end
            .load(Ordering::Relaxed)
            .max(end / BLOCK * BLOCK);
        let ahead = end.min(MAX_RESERVE_AHEAD_BYTES);
        let to = (end + ahead).div_ceil(BLOCK) * BLOCK;
        let reserved = crate::fault::point("log.reserve").and_then(|()| {
            let file = self
                .handle()
                .map_err(|error| io::Error::other(error.to_string()))?;
            rustix::fs::fallocate(
                &*file,
                rustix::fs::FallocateFlags::KEEP_SIZE,
                from,
                to - from,
            )
            .map_err(std::io::Error::from)
        });
        match reserved {
            Ok(()) => {
                self.blocks_past_end.store(true, Ordering::Relaxed);
                self.reserved_end.store(to, Ordering::Relaxed);
            }
            Err(error) => {
                tracing::debug!(
                    path = %self.path().display(),
                    %error,
                    "reserving disk space ahead of appends failed; appending without"
                );
                self.reserved_end.store(RESERVATION_OFF, Ordering::Relaxed);
            }
        }
    }

    /// Reads exactly `buf.len()` bytes at `position`.
    pub fn read_exact_at(&self, buf: &mut [u8], position: u64) -> Result<()> {
        self.handle()?
            .read_exact_at(buf, position)
            .map_err(StorageError::io("read", self.path()))
    }

    /// Reads `length` bytes at `position`.
    pub fn read_bytes(&self, position: u64, length: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; length];
        self.read_exact_at(&mut buf, position)?;
        Ok(buf)
    }

    /// Cuts the valid data (and the file) to `size` bytes. Returns how many bytes went.
    pub fn truncate_to(&self, size: u64) -> Result<u64> {
        let current = self.size();
        if size > current {
            return Err(StorageError::Corrupt {
                path: self.path(),
                position: size,
                reason: format!("cannot truncate to {size} bytes: only {current} are valid"),
            });
        }
        if size < self.file_length()? {
            // Frees every block past `size`, reserved ones included.
            self.handle()?
                .set_len(size)
                .map_err(StorageError::io("truncate", self.path()))?;
            self.blocks_past_end.store(false, Ordering::Relaxed);
            self.forget_reservation();
        }
        self.size.store(size, Ordering::Release);
        Ok(current - size)
    }

    /// Declares how many bytes are valid, for recovery, which decides it by scanning.
    /// Recovery runs after an unclean stop, which may have left reserved blocks behind.
    pub(crate) fn set_size_for_recovery(&self, size: u64) {
        self.size.store(size, Ordering::Release);
        self.blocks_past_end.store(true, Ordering::Relaxed);
    }

    /// Shrinks a preallocated file to its valid data and releases the blocks reserved past it
    /// (truncating to the same size frees a file's blocks past its end).
    pub fn trim(&self) -> Result<()> {
        if self.file_length()? > self.size() || self.blocks_past_end.load(Ordering::Relaxed) {
            self.handle()?
                .set_len(self.size())
                .map_err(StorageError::io("trim", self.path()))?;
            self.blocks_past_end.store(false, Ordering::Relaxed);
            self.forget_reservation();
        }
        Ok(())
    }

    /// After a truncation the reserved blocks are gone; appends reserve afresh (unless
    /// reserving has failed for this file).
    fn forget_reservation(&self) {
        let _ = self
            .reserved_end
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |end| {
                (end != RESERVATION_OFF).then_some(0)
            });
    }

    /// Bytes of disk the file occupies (allocated blocks), reservation included.
    pub fn allocated_bytes(&self) -> Result<u64> {
        use std::os::unix::fs::MetadataExt;
        let path = self.path();
        std::fs::metadata(&path)
            .map(|metadata| metadata.blocks() * 512)
            .map_err(StorageError::io("stat", &path))
    }

    /// fdatasync: the data and the file's size are durable when this returns.
    pub fn flush(&self) -> Result<()> {
        let file = self.handle()?;
        crate::fault::point("log.fsync")
            .and_then(|()| file.sync_data())
            .map_err(StorageError::sync("fsync", self.path()))?;
        self.slot.synced();
        Ok(())
    }

    pub(super) fn corrupt(&self, position: u64, reason: String) -> StorageError {
        StorageError::Corrupt {
            path: self.path(),
            position,
            reason,
        }
    }
}

/// Whether the file system under `dir` reserves blocks with `fallocate(KEEP_SIZE)`; tests of
/// the reservation have nothing to check where it does not, and say so.
#[cfg(test)]
pub(crate) fn file_system_reserves_blocks(dir: &Path) -> bool {
    let probe = dir.join("fallocate-probe");
    let supported = File::create(&probe)
        .and_then(|file| {
            rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::KEEP_SIZE, 0, 4096)
                .map_err(std::io::Error::from)
        })
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    if !supported {
        println!(
            "skipped: the file system under {} does not reserve blocks",
            dir.display()
        );
    }
    supported
}
