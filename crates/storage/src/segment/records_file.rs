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
//! Two ways to walk the file: [`RecordsFile::read_entry_header`] reads just the first bytes of
//! one entry (offset lookups touch only headers), and [`RecordsFile::scan`] streams whole
//! entries through a reusable buffer (compaction, timestamp search, producer state).
//!
//! Every byte below the valid size belongs to a whole entry; that is what the appender
//! publishes. So a walk that meets bytes which are not a whole, well-formed entry has met
//! damage, never the end of the data, and both walks return it as an error naming the file and
//! byte position. Only recovery expects a torn tail; it and the offline checks use
//! [`RecordsFile::scan_to_damage`], which returns the damage as data to act on.

use std::fs::{File, OpenOptions};
use std::io;
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ferrolog_records::batch::{BATCH_HEADER_LEN, MAGIC_V2, field};
use ferrolog_records::{EntryHeader, FileEntry, HEADER_SIZE_UP_TO_MAGIC};
use parking_lot::Mutex;

use super::open_files::{OpenFiles, SegmentSlot};
use crate::error::{Result, StorageError};

/// Header fields of one entry, read without its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntrySummary {
    /// Byte position of the entry in the file.
    pub position: u64,
    /// Whole size, 12-byte overhead included.
    pub size: u32,
    /// The entry's `magic`: 2 for a v2 batch, 0 or 1 for a legacy message.
    pub magic: u8,
    /// First offset when the header tells it (v2 and uncompressed legacy); for a legacy wrapper
    /// the header only tells the last.
    pub offset_field: i64,
    /// The offset of the entry's last record (`baseOffset` + `lastOffsetDelta` in v2).
    pub last_offset: i64,
    /// The entry's `maxTimestamp` (v2) or message timestamp (v1); −1 for v0, which has none.
    pub max_timestamp: i64,
    /// The producer id of a v2 batch (−1 for none, and for legacy entries).
    pub producer_id: i64,
}

impl EntrySummary {
    /// The offset after the entry's last record.
    pub fn next_offset(&self) -> i64 {
        self.last_offset.saturating_add(1)
    }
    /// Byte position just past the entry, where the next one starts.
    pub fn end_position(&self) -> u64 {
        self.position + u64::from(self.size)
    }
}

/// Read size for streaming scans; entries larger than this grow the buffer to fit.
const SCAN_CHUNK_BYTES: usize = 1 << 20;

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

    /// The header of the entry at `position`, reading no further than `end`. `Ok(None)` only
    /// when `position` is at (or past) `end`: bytes there that are not the start of an entry
    /// lying wholly before `end` are damage, reported with their position.
    pub fn read_entry_header(&self, position: u64, end: u64) -> Result<Option<EntrySummary>> {
        let remaining = end.saturating_sub(position);
        if remaining == 0 {
            return Ok(None);
        }
        if remaining < HEADER_SIZE_UP_TO_MAGIC as u64 {
            return Err(self.corrupt(position, trailing_bytes(remaining)));
        }
        let mut buf = [0u8; BATCH_HEADER_LEN];
        let want = (remaining as usize).min(BATCH_HEADER_LEN);
        self.read_exact_at(&mut buf[..want], position)?;
        let header = EntryHeader::read(&buf[..want])
            .map_err(|error| self.corrupt(position, error.to_string()))?
            .ok_or_else(|| self.corrupt(position, "short header".into()))?;
        if header.total_size as u64 > remaining {
            return Err(self.corrupt(position, runs_past(header.total_size, remaining)));
        }
        let size = u32::try_from(header.total_size)
            .map_err(|_| self.corrupt(position, format!("entry of {} bytes", header.total_size)))?;
        let read_i64 = |at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&buf[at..at + 8]);
            i64::from_be_bytes(bytes)
        };
        let (last_offset, max_timestamp) = match header.magic {
            MAGIC_V2 => {
                if header.total_size < BATCH_HEADER_LEN {
                    return Err(self.corrupt(
                        position,
                        format!(
                            "v2 batch of {} bytes is smaller than its 61-byte header",
                            header.total_size
                        ),
                    ));
                }
                let mut delta = [0u8; 4];
                delta.copy_from_slice(&buf[field::LAST_OFFSET_DELTA..field::LAST_OFFSET_DELTA + 4]);
                let delta = i64::from(i32::from_be_bytes(delta));
                (
                    header.offset_field.saturating_add(delta),
                    read_i64(field::MAX_TIMESTAMP),
                )
            }
            1 if header.total_size >= 26 => (header.offset_field, read_i64(18)),
            0 | 1 => (header.offset_field, -1),
            other => return Err(self.corrupt(position, format!("unknown magic {other}"))),
        };
        Ok(Some(EntrySummary {
            position,
            size,
            magic: header.magic,
            offset_field: header.offset_field,
            last_offset,
            max_timestamp,
            producer_id: if header.magic == MAGIC_V2 {
                read_i64(field::PRODUCER_ID)
            } else {
                -1
            },
        }))
    }

    /// Walks entry headers from `position` to `end`, calling `visit` with each until it breaks.
    /// Returns the entry the walk stopped at, or `None` when it reached `end`. Damage on the
    /// way is an error naming its position.
    pub fn walk_headers(
        &self,
        mut position: u64,
        end: u64,
        mut visit: impl FnMut(&EntrySummary) -> ControlFlow<()>,
    ) -> Result<Option<EntrySummary>> {
        while let Some(summary) = self.read_entry_header(position, end)? {
            if visit(&summary).is_break() {
                return Ok(Some(summary));
            }
            position = summary.end_position();
        }
        Ok(None)
    }

    /// Streams whole entries from `position` to `end` through a reusable buffer, calling
    /// `visit(position, entry)` for each, until the visitor breaks or `end` is reached. Bytes on
    /// the way that are not a whole, well-formed entry (a damaged header, an entry running past
    /// `end`, a few stray bytes before it) are an error naming their position: a reader of a
    /// segment cannot mistake damage for the end of its data. Recovery, which expects a torn
    /// tail, uses [`RecordsFile::scan_to_damage`] instead.
    pub fn scan(
        &self,
        position: u64,
        end: u64,
        visit: impl FnMut(u64, &FileEntry<'_>) -> ControlFlow<()>,
    ) -> Result<()> {
        match self.scan_to_damage(position, end, visit)?.damage {
            Some(damage) => Err(self.corrupt(damage.position, damage.reason)),
            None => Ok(()),
        }
    }

    /// Like [`RecordsFile::scan`], but damage ends the scan as data rather than as an error, for
    /// the readers whose job is to find it: recovery (which cuts the file there) and the
    /// offline checks (which report it).
    pub fn scan_to_damage(
        &self,
        position: u64,
        end: u64,
        mut visit: impl FnMut(u64, &FileEntry<'_>) -> ControlFlow<()>,
    ) -> Result<ScanOutcome> {
        let mut window = ScanWindow {
            buf: Vec::new(),
            start: position,
            len: 0,
            consumed: 0,
        };
        let outcome = |valid_end, damage| ScanOutcome { valid_end, damage };
        loop {
            let entry_position = window.position();
            let remaining = end.saturating_sub(entry_position);
            if remaining == 0 {
                return Ok(outcome(entry_position, None));
            }
            let damage = |kind, reason| {
                Some(Damage {
                    position: entry_position,
                    kind,
                    reason,
                })
            };
            if remaining < HEADER_SIZE_UP_TO_MAGIC as u64 {
                return Ok(outcome(
                    entry_position,
                    damage(DamageKind::Truncated, trailing_bytes(remaining)),
                ));
            }
            window.ensure(self, HEADER_SIZE_UP_TO_MAGIC, end)?;
            let header = match EntryHeader::read(window.rest()) {
                Ok(Some(header)) => header,
                Ok(None) => {
                    return Ok(outcome(
                        entry_position,
                        damage(DamageKind::Truncated, trailing_bytes(remaining)),
                    ));
                }
                Err(error) => {
                    return Ok(outcome(
                        entry_position,
                        damage(DamageKind::Malformed, error.to_string()),
                    ));
                }
            };
            if header.total_size as u64 > remaining {
                return Ok(outcome(
                    entry_position,
                    damage(
                        DamageKind::Truncated,
                        runs_past(header.total_size, remaining),
                    ),
                ));
            }
            window.ensure(self, header.total_size, end)?;
            match FileEntry::parse_prefix(window.rest()) {
                Ok(entry) => {
                    if visit(entry_position, &entry).is_break() {
                        return Ok(outcome(entry_position, None));
                    }
                    window.consumed += entry.size_in_bytes();
                }
                Err(error) => {
                    return Ok(outcome(
                        entry_position,
                        damage(DamageKind::Malformed, error.to_string()),
                    ));
                }
            }
        }
    }

    fn corrupt(&self, position: u64, reason: String) -> StorageError {
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

/// A reusable read buffer over a stretch of the file: `buf[consumed..len]` holds the bytes
/// from file position `start + consumed` on.
struct ScanWindow {
    buf: Vec<u8>,
    start: u64,
    len: usize,
    consumed: usize,
}

impl ScanWindow {
    fn position(&self) -> u64 {
        self.start + self.consumed as u64
    }
    fn rest(&self) -> &[u8] {
        &self.buf[self.consumed..self.len]
    }
    /// Makes at least `needed` unvisited bytes available (the caller has checked the file
    /// holds them before `end`), reading a whole chunk at a time.
    fn ensure(&mut self, file: &RecordsFile, needed: usize, end: u64) -> Result<()> {
        if self.len - self.consumed >= needed {
            return Ok(());
        }
        self.buf.copy_within(self.consumed..self.len, 0);
        self.start += self.consumed as u64;
        self.len -= self.consumed;
        self.consumed = 0;
        let left_in_range = usize::try_from(end - self.start).unwrap_or(usize::MAX);
        let capacity = needed.max(SCAN_CHUNK_BYTES.min(left_in_range));
        if self.buf.len() < capacity {
            self.buf.resize(capacity, 0);
        }
        let fill = (self.buf.len() as u64).min(end - self.start) as usize;
        file.read_exact_at(&mut self.buf[self.len..fill], self.start + self.len as u64)?;
        self.len = fill;
        Ok(())
    }
}

/// Bytes a scan found where a whole, well-formed entry should start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Byte position where the entry should start.
    pub position: u64,
    /// Which kind of damage it is.
    pub kind: DamageKind,
    /// What is wrong there, for an error or a report.
    pub reason: String,
}

/// What kind of damage a scan met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DamageKind {
    /// The entry's header does not parse (a size no entry can have, an unknown magic, ...).
    Malformed,
    /// The entry runs past the end of the data, or fewer bytes than a header remain: a torn
    /// write at the end of a file, or a damaged size field in its middle.
    Truncated,
}

/// How a [`RecordsFile::scan_to_damage`] ended.
#[must_use = "a scan's damage must be handled"]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanOutcome {
    /// The position after the last whole entry visited (the valid length when scanning from
    /// the start), or the entry the visitor stopped at.
    pub valid_end: u64,
    /// What ended the scan early, if anything did.
    pub damage: Option<Damage>,
}

fn trailing_bytes(remaining: u64) -> String {
    format!("{remaining} bytes remain, fewer than an entry header")
}

fn runs_past(size: usize, remaining: u64) -> String {
    format!("an entry of {size} bytes runs past the end of the data, {remaining} bytes away")
}
