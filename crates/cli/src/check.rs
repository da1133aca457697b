//! Checks of segment files against each other, shared by `dump-log` (which prints what it
//! finds) and `verify` (which only counts and reports problems). Every problem names its byte
//! position; nothing here panics on damaged input.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use anyhow::Context;
use ferrolog_records::FileEntry;
use ferrolog_storage::segment::{
    Damage, DamageKind, EntrySummary, INDEX_SUFFIX, IndexEntry, LOG_SUFFIX, OffsetPosition,
    RecordsFile, TIME_INDEX_SUFFIX, TimestampOffset, parse_base_offset,
};
use ferrolog_storage::{FilePosition, Offset, StorageError};

/// The base offset in a segment file's name.
pub fn base_offset_of(path: &Path) -> anyhow::Result<i64> {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    parse_base_offset(name)
        .with_context(|| format!("{} does not start with a base offset", path.display()))
}

/// An index file's entries and what is wrong with them.
#[derive(Debug, Default)]
pub struct IndexCheck<E> {
    pub entries: Vec<E>,
    /// Zero entries after the last real one: the preallocated tail of an active index.
    pub zero_tail: usize,
    /// Whether a `.log` was beside it to check the entries against.
    pub had_log: bool,
    pub problems: Vec<String>,
}

/// An index file's entries, without its zero tail; the count of zero entries in that tail; and
/// the count of bytes after the last whole entry.
fn read_entries(path: &Path, entry_size: usize) -> anyhow::Result<(Vec<Vec<u8>>, usize, usize)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let trailing = bytes.len() % entry_size;
    let mut entries: Vec<Vec<u8>> = bytes.chunks_exact(entry_size).map(<[u8]>::to_vec).collect();
    // An active segment's index is preallocated with zeros, which stay past its last entry (on
    // disk after a crash, too). No real entry is all zeros: the first offset-index entry lies
    // past position 0, and a time-index entry for timestamp 0 at the base offset, if a
    // producer ever wrote one, is only skipped, never misread.
    let zeros = entries
        .iter()
        .rev()
        .take_while(|entry| entry.iter().all(|byte| *byte == 0))
        .count();
    entries.truncate(entries.len() - zeros);
    Ok((entries, zeros, trailing))
}

/// The `.log` beside an index file, when it exists.
pub fn log_beside(index_path: &Path, suffix: &str) -> Option<PathBuf> {
    let text = index_path.to_str()?;
    let log = PathBuf::from(format!("{}{LOG_SUFFIX}", text.strip_suffix(suffix)?));
    log.is_file().then_some(log)
}

fn open_log_beside(index_path: &Path, suffix: &str) -> Option<RecordsFile> {
    log_beside(index_path, suffix).and_then(|log| RecordsFile::open(&log, None).ok())
}

/// An `.index`: (offset, position) entries, each checked to point at the batch that ends at
/// that offset in the `.log` beside it.
pub fn offset_index(path: &Path) -> anyhow::Result<IndexCheck<(Offset, FilePosition)>> {
    let base = Offset::new(base_offset_of(path)?);
    let entry_bytes = OffsetPosition::BYTES;
    let (entries, zero_tail, trailing) = read_entries(path, entry_bytes)?;
    let log = open_log_beside(path, INDEX_SUFFIX);
    let mut check = IndexCheck {
        had_log: log.is_some(),
        zero_tail,
        ..IndexCheck::default()
    };
    if trailing != 0 {
        check.problems.push(format!(
            "the file ends with {trailing} bytes that are not a whole {entry_bytes}-byte entry"
        ));
    }
    let mut previous = None;
    for (slot, entry) in entries.iter().enumerate() {
        let OffsetPosition { offset, position } = OffsetPosition::decode(entry, base);
        check.entries.push((offset, position));
        let at = slot * entry_bytes;
        if previous.is_some_and(|previous| offset <= previous) {
            check.problems.push(format!(
                "entry {slot} (byte {at}): offset {offset} does not increase"
            ));
        }
        previous = Some(offset);
        if let Some(log) = &log {
            match log.read_entry_header(position.bytes(), log.size()) {
                Ok(Some(EntrySummary { last_offset, .. })) if last_offset == offset.value() => {}
                Ok(Some(summary)) => check.problems.push(format!(
                    "entry {slot} (byte {at}): offset {offset} points at position {position}, where the batch's last offset is {}",
                    summary.last_offset
                )),
                Ok(None) => check.problems.push(format!(
                    "entry {slot} (byte {at}): position {position} is past the end of the log ({} bytes)",
                    log.size()
                )),
                Err(error) => check.problems.push(format!("entry {slot} (byte {at}): {error}")),
            }
        }
    }
    Ok(check)
}

/// A `.timeindex`: (timestamp, offset) entries, each checked against the largest timestamp
/// of the `.log` beside it up to that offset.
pub fn time_index(path: &Path) -> anyhow::Result<IndexCheck<(i64, Offset)>> {
    let base = Offset::new(base_offset_of(path)?);
    let entry_bytes = TimestampOffset::BYTES;
    let (entries, zero_tail, trailing) = read_entries(path, entry_bytes)?;
    let log = open_log_beside(path, TIME_INDEX_SUFFIX);
    let mut check = IndexCheck {
        had_log: log.is_some(),
        zero_tail,
        ..IndexCheck::default()
    };
    if trailing != 0 {
        check.problems.push(format!(
            "the file ends with {trailing} bytes that are not a whole {entry_bytes}-byte entry"
        ));
    }
    let batches = match &log {
        Some(log) => {
            let mut all = Vec::new();
            // Entries are checked against the batch headers before any damage; the damage
            // itself is the `.log` check's to report.
            let walked = log.walk_headers(0, log.size(), |entry| {
                all.push((Offset::new(entry.last_offset), entry.max_timestamp));
                ControlFlow::Continue(())
            });
            match walked {
                Ok(_) | Err(StorageError::Corrupt { .. }) => {}
                Err(error) => return Err(error.into()),
            }
            all
        }
        None => Vec::new(),
    };
    let mut previous: Option<(i64, Offset)> = None;
    for (slot, entry) in entries.iter().enumerate() {
        let TimestampOffset { timestamp, offset } = TimestampOffset::decode(entry, base);
        check.entries.push((timestamp, offset));
        let at = slot * entry_bytes;
        if let Some((previous_timestamp, previous_offset)) = previous
            && (timestamp <= previous_timestamp || offset < previous_offset)
        {
            check.problems.push(format!(
                "entry {slot} (byte {at}): out of order after ({previous_timestamp}, {previous_offset})"
            ));
        }
        previous = Some((timestamp, offset));
        if log.is_some() {
            // The entry says: the largest timestamp up to `offset` is `timestamp`.
            let actual = batches
                .iter()
                .filter(|(last_offset, _)| *last_offset <= offset)
                .map(|(_, max_timestamp)| *max_timestamp)
                .max();
            if actual != Some(timestamp) {
                check.problems.push(format!(
                    "entry {slot} (byte {at}): indexed timestamp {timestamp} at offset {offset}, but the log's largest timestamp up to that offset is {}",
                    actual.map_or_else(|| "none".to_owned(), |t| t.to_string())
                ));
            }
        }
    }
    Ok(check)
}

/// A `.log`'s batches: checksums, offsets within the segment and increasing, and where the
/// scan stopped early, what stopped it.
#[derive(Debug, Default)]
pub struct LogCheck {
    pub batches: u64,
    pub bytes: u64,
    /// One past the last offset of the last whole batch (`None` when there is none).
    pub next_offset: Option<i64>,
    pub problems: Vec<String>,
    /// Bytes that are not whole batches, from the first of them to the end of the file.
    pub tail: Option<Tail>,
}

/// What follows the last whole batch of a `.log`, when the file does not end there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// Zeros to the end of the file: a file a crash extended before its data arrived (or space
    /// preallocated and never trimmed). Recovery cuts it when it ends the last segment after an
    /// unclean stop; anywhere else it is damage, as appends would go after it.
    Zeros { position: u64, bytes: u64 },
    /// A batch running past the end of the file, or too few bytes for a header: a write torn
    /// by a crash when it ends the last segment, damage anywhere else.
    Cut {
        position: u64,
        bytes: u64,
        reason: String,
    },
    /// Bytes that are not a batch at all: damage. Nothing after them can be read from this file.
    Damaged {
        position: u64,
        bytes: u64,
        reason: String,
    },
}

impl Tail {
    /// The tail described for a report.
    pub fn describe(&self) -> String {
        match self {
            Self::Zeros { position, bytes } => {
                format!("{bytes} zero bytes from position {position} on hold no batch")
            }
            Self::Cut {
                position,
                bytes,
                reason,
            } => format!(
                "the last {bytes} bytes, from position {position}, are not a whole batch: {reason}"
            ),
            Self::Damaged {
                position,
                bytes,
                reason,
            } => format!(
                "damaged batch at position {position}: {reason}; the {bytes} bytes from there to the end of the file cannot be read"
            ),
        }
    }
}

/// Checks every batch of a segment's `.log`. `visit` sees each batch (for printing).
pub fn log_file(
    path: &Path,
    mut visit: impl FnMut(u64, &FileEntry<'_>, Result<(), String>),
) -> anyhow::Result<LogCheck> {
    let base = base_offset_of(path)?;
    let file =
        RecordsFile::open(path, None).with_context(|| format!("opening {}", path.display()))?;
    let end = file.size();
    let mut check = LogCheck {
        bytes: end,
        ..LogCheck::default()
    };
    let mut previous_last: Option<i64> = None;
    let scan = file.scan_to_damage(0, end, |position, entry| {
        let valid = entry.validate().map_err(|error| error.to_string());
        if let Err(error) = &valid {
            check
                .problems
                .push(format!("batch at position {position}: {error}"));
        }
        let first = entry.last_offset() - i64::from(entry_offset_span(entry));
        if first < base {
            check.problems.push(format!(
                "batch at position {position}: offset {first} is below the segment's base offset {base}"
            ));
        }
        if let Some(previous) = previous_last
            && first <= previous
        {
            check.problems.push(format!(
                "batch at position {position}: offset {first} does not follow the previous batch's last offset {previous}"
            ));
        }
        previous_last = Some(entry.last_offset());
        check.batches += 1;
        visit(position, entry, valid);
        ControlFlow::Continue(())
    })?;
    check.tail = tail(scan.damage, end, &file)?;
    check.next_offset = previous_last.map(|last| last + 1);
    Ok(check)
}

/// How many offsets before its last one a batch starts (0 for legacy single messages).
fn entry_offset_span(entry: &FileEntry<'_>) -> i32 {
    match entry {
        FileEntry::V2(batch) => batch.last_offset_delta(),
        FileEntry::Legacy(_) => 0,
    }
}

/// Whether `[from, end)` of the file holds only zeros, read a MiB at a time.
fn all_zero(file: &RecordsFile, from: u64, end: u64) -> anyhow::Result<bool> {
    let mut position = from;
    while position < end {
        let length = (end - position).min(1 << 20);
        let chunk = file.read_bytes(position, length as usize)?;
        if chunk.iter().any(|byte| *byte != 0) {
            return Ok(false);
        }
        position += length;
    }
    Ok(true)
}

/// Classifies the damage a scan stopped at.
fn tail(damage: Option<Damage>, end: u64, file: &RecordsFile) -> anyhow::Result<Option<Tail>> {
    let Some(Damage {
        position,
        kind,
        reason,
    }) = damage
    else {
        return Ok(None);
    };
    let bytes = end - position;
    Ok(Some(if all_zero(file, position, end)? {
        Tail::Zeros { position, bytes }
    } else {
        match kind {
            DamageKind::Truncated => Tail::Cut {
                position,
                bytes,
                reason,
            },
            DamageKind::Malformed => Tail::Damaged {
                position,
                bytes,
                reason,
            },
        }
    }))
}
