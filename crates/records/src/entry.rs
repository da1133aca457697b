//! One entry of a `.log` file, whatever its format. Every entry starts with `offset i64` and
//! `size i32`, and byte 16 is always the magic, so a reader can tell the format before parsing.
//!
//! File iteration follows Kafka's rules: fewer than [`HEADER_SIZE_UP_TO_MAGIC`] bytes left, or
//! an entry that runs past the end, is a quiet end of the data (a torn write or a zero-filled
//! preallocated tail); a `size` below the smallest possible message is corruption.

use crate::batch::{LOG_OVERHEAD, MAGIC_V2, RecordBatch, Records, TimestampType};
use crate::be;
use crate::error::RecordsError;
use crate::legacy::{LegacyEntry, LegacyRecords, MESSAGE_OVERHEAD_V0};
use crate::record::Record;

/// Bytes needed to see an entry's offset, size and magic.
pub const HEADER_SIZE_UP_TO_MAGIC: usize = 17;

/// What the first 17 bytes of an entry say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// The `offset` field: a v2 batch's base offset, a legacy message's (last) offset.
    pub offset_field: i64,
    /// Size of the whole entry including the 12-byte overhead.
    pub total_size: usize,
    pub magic: u8,
}

impl EntryHeader {
    /// Reads the header at the start of `buf`. `Ok(None)` means fewer than 17 bytes remain,
    /// which ends file data quietly; a size too small for any message is corruption.
    pub fn read(buf: &[u8]) -> Result<Option<Self>, RecordsError> {
        if buf.len() < HEADER_SIZE_UP_TO_MAGIC {
            return Ok(None);
        }
        let size = be::i32_at(buf, 8);
        if size < MESSAGE_OVERHEAD_V0 as i32 {
            return Err(RecordsError::InvalidLength {
                what: "entry size",
                value: i64::from(size),
            });
        }
        Ok(Some(Self {
            offset_field: be::i64_at(buf, 0),
            total_size: LOG_OVERHEAD + size as usize,
            magic: buf[16],
        }))
    }
}

/// One entry of any supported magic.
#[derive(Debug, Clone, Copy)]
pub enum FileEntry<'a> {
    V2(RecordBatch<'a>),
    Legacy(LegacyEntry<'a>),
}

impl<'a> FileEntry<'a> {
    /// Views the entry at the start of `buf` (which may hold more bytes after it).
    pub fn parse_prefix(buf: &'a [u8]) -> Result<Self, RecordsError> {
        let header = EntryHeader::read(buf)?.ok_or(RecordsError::Truncated {
            what: "entry header",
            needed: HEADER_SIZE_UP_TO_MAGIC,
            available: buf.len(),
        })?;
        match header.magic {
            MAGIC_V2 => RecordBatch::parse_prefix(buf).map(Self::V2),
            0 | 1 => LegacyEntry::parse_prefix(buf).map(Self::Legacy),
            other => Err(RecordsError::UnsupportedMagic(other)),
        }
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        match self {
            Self::V2(batch) => batch.as_bytes(),
            Self::Legacy(entry) => entry.as_bytes(),
        }
    }
    pub fn size_in_bytes(&self) -> usize {
        self.as_bytes().len()
    }
    pub fn magic(&self) -> u8 {
        match self {
            Self::V2(batch) => batch.magic(),
            Self::Legacy(entry) => entry.magic(),
        }
    }
    /// The last offset the entry holds.
    pub fn last_offset(&self) -> i64 {
        match self {
            Self::V2(batch) => batch.last_offset(),
            Self::Legacy(entry) => entry.offset(),
        }
    }
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }
    /// The largest timestamp in the entry (−1 when it has none, as magic 0 messages).
    pub fn max_timestamp(&self) -> i64 {
        match self {
            Self::V2(batch) => batch.max_timestamp(),
            Self::Legacy(entry) => entry.timestamp(),
        }
    }
    pub fn timestamp_type(&self) -> TimestampType {
        match self {
            Self::V2(batch) => batch.timestamp_type(),
            Self::Legacy(entry) => entry.timestamp_type(),
        }
    }
    /// Checks the entry's checksum and header consistency.
    pub fn validate(&self) -> Result<(), RecordsError> {
        match self {
            Self::V2(batch) => batch.validate(),
            Self::Legacy(entry) => entry.validate(),
        }
    }
    /// The entry's records, decompressed if needed.
    pub fn records(&self, max_decompressed_bytes: usize) -> Result<EntryRecords<'a>, RecordsError> {
        match self {
            Self::V2(batch) => batch.records(max_decompressed_bytes).map(EntryRecords::V2),
            Self::Legacy(entry) => entry
                .records(max_decompressed_bytes)
                .map(EntryRecords::Legacy),
        }
    }
}

/// The records of one entry, of either format.
#[derive(Debug)]
pub enum EntryRecords<'a> {
    V2(Records<'a>),
    Legacy(LegacyRecords<'a>),
}

impl EntryRecords<'_> {
    /// Every record, or the first error met.
    pub fn to_vec(&self) -> Result<Vec<Record<'_>>, RecordsError> {
        match self {
            Self::V2(records) => records.iter().collect(),
            Self::Legacy(records) => records.to_vec(),
        }
    }
}

/// Iterates over the entries of an in-memory buffer laid out like a `.log` file, yielding each
/// with its byte position. Ends quietly at a partial tail; yields an error (then ends) on a
/// corrupt entry. Checksums are not checked here: call [`FileEntry::validate`].
#[derive(Debug)]
pub struct EntryIter<'a> {
    buf: &'a [u8],
    position: usize,
    failed: bool,
}

impl<'a> EntryIter<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            position: 0,
            failed: false,
        }
    }
    /// Byte position of the next entry (after the last one yielded).
    pub fn position(&self) -> usize {
        self.position
    }
}

impl<'a> Iterator for EntryIter<'a> {
    type Item = Result<(usize, FileEntry<'a>), (usize, RecordsError)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = &self.buf[self.position..];
        let header = match EntryHeader::read(rest) {
            Ok(Some(header)) => header,
            Ok(None) => return None,
            Err(error) => {
                self.failed = true;
                return Some(Err((self.position, error)));
            }
        };
        if header.total_size > rest.len() {
            return None;
        }
        match FileEntry::parse_prefix(rest) {
            Ok(entry) => {
                let position = self.position;
                self.position += entry.size_in_bytes();
                Some(Ok((position, entry)))
            }
            Err(error) => {
                self.failed = true;
                Some(Err((self.position, error)))
            }
        }
    }
}
