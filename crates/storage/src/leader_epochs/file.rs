//! Kafka's `leader-epoch-checkpoint`, one per partition directory:
//!
//! ```text
//! 0          <- version
//! 2          <- number of entries
//! 0 0        <- epoch, start offset (any whitespace between), oldest first
//! 3 1200
//! ```
//!
//! Read as Kafka reads it: a missing or empty file, or one that ends before its count line,
//! holds no entry; a line that is not what its place needs, a wrong version or a count that
//! does not match is an error naming the file and line. Entries go through
//! [`LeaderEpochs::assign`], as Kafka loads them, so a file out of order keeps what Kafka would.
//! Writes are atomic: a temp file, fsynced, renamed over the file, then the directory fsynced.

use std::path::Path;

use super::{EpochEntry, LeaderEpochs};
use crate::error::{Result, StorageError};
use crate::fs::{atomic_write, read_text_if_exists};

/// The file's name in a partition directory.
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";
const VERSION: i32 = 0;

/// Parses the file's text; `path` only names the file in errors.
pub fn parse(text: &str, path: &Path) -> Result<LeaderEpochs> {
    let malformed = |line: usize, reason: String| StorageError::MalformedFile {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line));
    let Some((_, version)) = lines.next() else {
        return Ok(LeaderEpochs::default());
    };
    match version.parse::<i32>() {
        Ok(VERSION) => {}
        Ok(other) => {
            let reason = format!("unsupported version {other}, expected {VERSION}");
            return Err(malformed(1, reason));
        }
        Err(_) => return Err(malformed(1, format!("version {version:?} is not a number"))),
    }
    let Some((_, count)) = lines.next() else {
        return Ok(LeaderEpochs::default());
    };
    let count: usize = count
        .parse()
        .map_err(|_| malformed(2, format!("entry count {count:?} is not a count")))?;
    let mut epochs = LeaderEpochs::default();
    let mut found = 0usize;
    for (number, line) in lines {
        let entry = parse_entry(line).map_err(|reason| malformed(number, reason))?;
        epochs.assign(entry.epoch, entry.start_offset);
        found += 1;
    }
    if found != count {
        return Err(malformed(
            2,
            format!("{count} entries announced, {found} found"),
        ));
    }
    Ok(epochs)
}

/// One `epoch start_offset` line: two non-negative numbers, nothing before the first.
fn parse_entry(line: &str) -> std::result::Result<EpochEntry, String> {
    let mut fields = line.split_whitespace();
    let (false, Some(epoch), Some(start), None) = (
        line.starts_with(char::is_whitespace),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return Err(format!("{line:?} is not an epoch and a start offset"));
    };
    let epoch: i32 = epoch
        .parse()
        .map_err(|_| format!("epoch {epoch:?} is not a number"))?;
    let start: i64 = start
        .parse()
        .map_err(|_| format!("start offset {start:?} is not a number"))?;
    if epoch < 0 || start < 0 {
        return Err(format!("negative epoch {epoch} or start offset {start}"));
    }
    Ok(EpochEntry::new(epoch, start))
}

/// The file's text for `epochs`.
pub fn format(epochs: &LeaderEpochs) -> String {
    let mut text = format!("{VERSION}\n{}\n", epochs.entries().len());
    for entry in epochs.entries() {
        text.push_str(&format!("{} {}\n", entry.epoch, entry.start_offset));
    }
    text
}

/// Reads the checkpoint of the partition directory `dir`; none there is an empty cache.
pub fn read(dir: &Path) -> Result<LeaderEpochs> {
    let path = dir.join(LEADER_EPOCH_CHECKPOINT);
    match read_text_if_exists(&path)? {
        Some(text) => parse(&text, &path),
        None => Ok(LeaderEpochs::default()),
    }
}

/// Replaces the checkpoint of the partition directory `dir`, durably.
pub fn write(dir: &Path, epochs: &LeaderEpochs) -> Result<()> {
    atomic_write(
        &dir.join(LEADER_EPOCH_CHECKPOINT),
        format(epochs).as_bytes(),
    )
}
