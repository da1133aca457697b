//! Walks over a `.log` file's entries. [`RecordsFile::read_entry_header`] reads just the first
//! bytes of one entry (offset lookups touch only headers), and [`RecordsFile::scan`] streams
//! whole entries through a reusable buffer (compaction, timestamp search, producer state).
//!
//! Every byte below the valid size belongs to a whole entry; that is what the appender
//! publishes. So a walk that meets bytes which are not a whole, well-formed entry has met
//! damage, never the end of the data, and both walks return it as an error naming the file and
//! byte position. Only recovery expects a torn tail; it and the offline checks use
//! [`RecordsFile::scan_to_damage`], which returns the damage as data to act on.

use std::ops::ControlFlow;

use ferrolog_records::batch::{BATCH_HEADER_LEN, MAGIC_V2, field};
use ferrolog_records::{EntryHeader, FileEntry, HEADER_SIZE_UP_TO_MAGIC};

use super::records_file::RecordsFile;
use crate::error::Result;

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
    /// The partition leader epoch of a v2 batch (−1 for none, and for legacy entries).
    pub partition_leader_epoch: i32,
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

impl RecordsFile {
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
            partition_leader_epoch: if header.magic == MAGIC_V2 {
                let mut epoch = [0u8; 4];
                epoch.copy_from_slice(
                    &buf[field::PARTITION_LEADER_EPOCH..field::PARTITION_LEADER_EPOCH + 4],
                );
                i32::from_be_bytes(epoch)
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
