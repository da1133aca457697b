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
    /// The first damaged entry: its byte position in the `.log` and what is wrong.
    pub damage: Option<(u64, String)>,
    /// The first index entry that disagrees with the entries (the data may be whole): the
    /// position it concerns and what is wrong. Rebuilding the indexes mends it.
    pub index_problem: Option<(u64, String)>,
    /// Why the check stopped before the end without finding damage: an entry larger than
    /// it reads whole, or the file changing under it.
    pub unchecked: Option<String>,
}

/// The largest entry the check reads whole; a larger one (far beyond any producer's limit, so
/// most likely a damaged size field) ends the check of its segment, reported, not marked.
const LARGEST_ENTRY: usize = 64 << 20;

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
        if read == 0 || (read % ALIGN != 0 && read_to + (read as u64) < size) {
            check.scrub.unchecked = Some("the file changed while it was read".into());
            return Ok(Some(check.scrub));
        }
        window.extend_from_slice(&chunk.bytes()[..read]);
        read_to += read as u64;
        check.scrub.bytes += read as u64;
        let at_end = read_to >= size;
        let consumed = check.entries(&window, window_start, size, at_end);
        window.drain(..consumed);
        window_start += consumed as u64;
        let over = check.scrub.damage.is_some() || check.scrub.unchecked.is_some();
        if over || !pace(read as u64) {
            return Ok(over.then_some(check.scrub));
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
    /// The largest offset an offset index entry named so far.
    largest_indexed: i64,
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
            largest_indexed: i64::MIN,
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
                Ok(Some(total)) if total > LARGEST_ENTRY => {
                    let what = format!(
                        "an entry of {total} bytes at {position}, larger than the scrubber reads whole"
                    );
                    self.scrub.unchecked.get_or_insert(what);
                    break;
                }
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

    /// Takes in a valid entry, and the index entries that concern it. As Kafka's lookups rely
    /// on it: an offset index entry starts at an entry, and names an offset above every
    /// offset before that entry (the last offset of the batches appended together from
    /// there); a time index entry names an offset of the entry it falls in, with the largest
    /// timestamp up to that entry.
    fn entry_checked(&mut self, position: u64, entry: super::salvage::CheckedEntry) {
        let before = self.previous_last;
        self.scrub.entries += 1;
        self.previous_last = entry.last_offset;
        self.max_timestamp = self.max_timestamp.max(entry.max_timestamp);
        while let Some(indexed) = self.next_offset_entry {
            let at = indexed.position.bytes();
            if at > position {
                break;
            }
            let offset = indexed.offset.value();
            if at < position || offset <= before {
                let what = format!(
                    "the offset index names offset {offset} at position {at}, where no entry holding it starts"
                );
                self.index_problem(at, what);
            }
            self.largest_indexed = self.largest_indexed.max(offset);
            self.next_offset_entry = self.offsets.next();
        }
        while let Some(timed) = self
            .times
            .next_if(|timed| timed.offset.value() <= entry.last_offset)
        {
            if timed.offset.value() <= before || timed.timestamp != self.max_timestamp {
                let what = format!(
                    "the time index gives timestamp {} at offset {}, where the largest timestamp up to the entry holding it is {}",
                    timed.timestamp, timed.offset, self.max_timestamp
                );
                self.index_problem(position, what);
            }
        }
    }

    fn index_problem(&mut self, position: u64, reason: String) {
        self.scrub.index_problem.get_or_insert((position, reason));
    }

    /// Index entries left once the log is read point past its end.
    fn indexes_past(&mut self, size: u64) {
        if self.scrub.damage.is_some() {
            return;
        }
        if let Some(indexed) = self.next_offset_entry {
            let what = format!(
                "the offset index names offset {} at position {}, past the last entry",
                indexed.offset, indexed.position
            );
            self.index_problem(size, what);
        } else if self.largest_indexed > self.previous_last {
            let what = format!(
                "the offset index names offset {}, past the last entry's {}",
                self.largest_indexed, self.previous_last
            );
            self.index_problem(size, what);
        } else if let Some(timed) = self.times.next() {
            let what = format!(
                "the time index names offset {}, past the last entry",
                timed.offset
            );
            self.index_problem(size, what);
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
