//! The scrubber's check of one sealed segment: every entry of its `.log` is read and checked
//! as recovery checks it (framing, checksum, offsets following each other within the
//! segment), and each entry of its offset and time indexes against the entries: an offset
//! index entry must name a batch's start and its last offset, a time index entry the largest
//! timestamp up to a batch's last offset. The first problem found ends the check of the
//! segment, named by its byte position.
//!
//! The `.log` is read through a descriptor of its own, with `O_DIRECT` where the file system
//! allows it, so the scrub neither fills the page cache nor evicts what readers keep there;
//! where it does not (tmpfs, some network file systems), each chunk read is dropped from the
//! cache after it is checked (`POSIX_FADV_DONTNEED`). Reads go a chunk at a time, each paced
//! by the caller, who may stop the check between chunks.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use ferrolog_records::{EntryHeader, HEADER_SIZE_UP_TO_MAGIC};

use super::salvage::check_next;
use super::{OffsetPosition, SegmentSpan, TimestampOffset};
use crate::error::{Result, StorageError};

/// Bytes read at a time.
const CHUNK: usize = 1 << 20;
/// The alignment `O_DIRECT` asks of offsets, lengths and buffers.
const ALIGN: usize = 4096;

/// What a check of one segment found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SegmentScrub {
    /// Bytes of the `.log` read.
    pub bytes: u64,
    /// Entries checked.
    pub entries: u64,
    /// The first problem: its byte position in the `.log` and what is wrong.
    pub damage: Option<(u64, String)>,
}

/// The indexes of a segment, checked beside its entries.
#[derive(Debug, Clone, Default)]
pub struct SegmentIndexes {
    /// The offset index's entries, in order.
    pub offsets: Vec<OffsetPosition>,
    /// The time index's entries, in order.
    pub times: Vec<TimestampOffset>,
}

/// Checks the sealed segment whose `.log` is `log`. `pace` is told the bytes of each chunk
/// read; when it answers false the check stops and `None` is returned.
pub fn scrub_segment(
    log: &Path,
    span: SegmentSpan,
    indexes: &SegmentIndexes,
    mut pace: impl FnMut(u64) -> bool,
) -> Result<Option<SegmentScrub>> {
    let reader = UncachedReader::open(log)?;
    let size = reader.size()?;
    let mut check = Check::new(span, indexes);
    let mut window: Vec<u8> = Vec::new();
    let mut window_start = 0u64;
    let mut read_to = 0u64;
    let mut chunk = AlignedChunk::new();
    while read_to < size {
        let read = reader.read_chunk(&mut chunk, read_to, size)?;
        window.extend_from_slice(&chunk.bytes()[..read]);
        read_to += read as u64;
        check.scrub.bytes += read as u64;
        let at_end = read_to >= size;
        let consumed = check.entries(&window, window_start, size, at_end);
        window.drain(..consumed);
        window_start += consumed as u64;
        if check.scrub.damage.is_some() || !pace(read as u64) {
            return Ok(check.scrub.damage.is_some().then_some(check.scrub));
        }
    }
    check.indexes_past(size);
    Ok(Some(check.scrub))
}

/// The state of one segment's check.
struct Check<'a> {
    span: SegmentSpan,
    previous_last: i64,
    max_timestamp: i64,
    offsets: std::slice::Iter<'a, OffsetPosition>,
    times: std::iter::Peekable<std::slice::Iter<'a, TimestampOffset>>,
    next_offset_entry: Option<&'a OffsetPosition>,
    scrub: SegmentScrub,
}

impl<'a> Check<'a> {
    fn new(span: SegmentSpan, indexes: &'a SegmentIndexes) -> Self {
        let mut offsets = indexes.offsets.iter();
        let next_offset_entry = offsets.next();
        Self {
            span,
            previous_last: span.base_offset - 1,
            max_timestamp: -1,
            offsets,
            times: indexes.times.iter().peekable(),
            next_offset_entry,
            scrub: SegmentScrub::default(),
        }
    }

    /// Checks the whole entries of `window` (file bytes from `start`, of a file of `size`);
    /// returns the bytes they cover. Damage ends the check.
    fn entries(&mut self, window: &[u8], start: u64, size: u64, at_end: bool) -> usize {
        let mut used = 0;
        while used < window.len() && self.scrub.damage.is_none() {
            let rest = &window[used..];
            let position = start + used as u64;
            let whole = match entry_size(rest, size - position) {
                Ok(Some(total)) if total <= rest.len() => total,
                Ok(_) if !at_end => break,
                Ok(_) => {
                    self.damage(position, "the data ends inside an entry".into());
                    break;
                }
                Err(reason) => {
                    self.damage(position, reason);
                    break;
                }
            };
            match check_next(&rest[..whole], self.previous_last, self.span) {
                Ok(entry) => self.entry_checked(position, entry),
                Err(reason) => self.damage(position, reason),
            }
            used += whole;
        }
        used
    }

    fn entry_checked(&mut self, position: u64, entry: super::salvage::CheckedEntry) {
        self.scrub.entries += 1;
        self.previous_last = entry.last_offset;
        self.max_timestamp = self.max_timestamp.max(entry.max_timestamp);
        while let Some(indexed) = self.next_offset_entry {
            let at = indexed.position.bytes();
            if at > position {
                break;
            }
            if at < position || indexed.offset.value() != entry.last_offset {
                let what = format!(
                    "the offset index names offset {} at position {at}, where the batch at {position} ends at offset {}",
                    indexed.offset, entry.last_offset
                );
                self.damage(position, what);
                return;
            }
            self.next_offset_entry = self.offsets.next();
        }
        while let Some(timed) = self
            .times
            .next_if(|timed| timed.offset.value() <= entry.last_offset)
        {
            let matches =
                timed.offset.value() == entry.last_offset && timed.timestamp == self.max_timestamp;
            if !matches && timed.offset.value() < entry.last_offset {
                let what = format!(
                    "the time index names offset {}, where no batch ends",
                    timed.offset
                );
                self.damage(position, what);
                return;
            }
            if !matches {
                let what = format!(
                    "the time index gives timestamp {} at offset {}, where the largest timestamp so far is {}",
                    timed.timestamp, timed.offset, self.max_timestamp
                );
                self.damage(position, what);
                return;
            }
        }
    }

    /// Index entries left once the log is read point past its end.
    fn indexes_past(&mut self, size: u64) {
        if self.scrub.damage.is_some() {
            return;
        }
        if let Some(indexed) = self.next_offset_entry {
            let what = format!(
                "the offset index names offset {} at position {}, past the last batch",
                indexed.offset, indexed.position
            );
            self.damage(size, what);
        } else if let Some(timed) = self.times.next() {
            let what = format!(
                "the time index names offset {}, past the last batch",
                timed.offset
            );
            self.damage(size, what);
        }
    }

    fn damage(&mut self, position: u64, reason: String) {
        self.scrub.damage.get_or_insert((position, reason));
    }
}

/// The whole size of the entry at the start of `rest` (`remaining` bytes of the file from
/// there), `None` while fewer bytes than a header are in `rest`. An entry running past the
/// end of the file is damage.
fn entry_size(rest: &[u8], remaining: u64) -> std::result::Result<Option<usize>, String> {
    if remaining < HEADER_SIZE_UP_TO_MAGIC as u64 {
        return Err(format!(
            "{remaining} bytes remain, fewer than an entry header"
        ));
    }
    match EntryHeader::read(rest) {
        Ok(None) => Ok(None),
        Ok(Some(header)) if header.total_size as u64 > remaining => Err(format!(
            "an entry of {} bytes runs past the end of the data, {remaining} bytes away",
            header.total_size
        )),
        Ok(Some(header)) => Ok(Some(header.total_size)),
        Err(error) => Err(error.to_string()),
    }
}

/// A buffer for one chunk, aligned for `O_DIRECT`.
struct AlignedChunk {
    storage: Vec<u8>,
    offset: usize,
}

impl AlignedChunk {
    fn new() -> Self {
        let storage = vec![0u8; CHUNK + ALIGN];
        let offset = storage.as_ptr().align_offset(ALIGN);
        Self { storage, offset }
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.offset..self.offset + CHUNK]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.offset..self.offset + CHUNK]
    }
}

/// A `.log` read without keeping its pages in the page cache.
struct UncachedReader {
    file: File,
    path: std::path::PathBuf,
    direct: bool,
}

impl UncachedReader {
    fn open(path: &Path) -> Result<Self> {
        let direct = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path);
        let (file, direct) = match direct {
            Ok(file) => (file, true),
            Err(_) => (
                File::open(path).map_err(StorageError::io("open", path))?,
                false,
            ),
        };
        Ok(Self {
            file,
            path: path.to_path_buf(),
            direct,
        })
    }

    fn size(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(StorageError::io("stat", &self.path))?
            .len())
    }

    /// Reads the chunk at `position` (a multiple of the chunk size) into `chunk`; returns
    /// the bytes read, the file's `size` bounding them.
    fn read_chunk(&self, chunk: &mut AlignedChunk, position: u64, size: u64) -> Result<usize> {
        let want = (size - position).min(CHUNK as u64) as usize;
        let mut filled = 0;
        while filled < want {
            // O_DIRECT reads whole aligned blocks; the last may run past the end of the file.
            let ask = if self.direct {
                (want - filled).div_ceil(ALIGN) * ALIGN
            } else {
                want - filled
            };
            let buffer = &mut chunk.bytes_mut()[filled..filled + ask.min(CHUNK - filled)];
            let read = self
                .file
                .read_at(buffer, position + filled as u64)
                .map_err(StorageError::io("read", &self.path))?;
            if read == 0 {
                break;
            }
            filled += read;
        }
        let filled = filled.min(want);
        if !self.direct {
            let length = std::num::NonZeroU64::new(filled as u64);
            // Advice only: a failure leaves the pages cached, which costs memory, not data.
            let _ = rustix::fs::fadvise(&self.file, position, length, rustix::fs::Advice::DontNeed);
        }
        Ok(filled)
    }
}

#[cfg(test)]
mod tests;
