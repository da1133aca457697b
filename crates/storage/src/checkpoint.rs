//! Kafka's offset checkpoint files (`recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `cleaner-offset-checkpoint`, `replication-offset-checkpoint`).
//!
//! ```text
//! 0                      <- version
//! 2                      <- number of entries
//! my-topic 0 1234        <- topic, partition, offset (any whitespace between)
//! other 3 56
//! ```
//!
//! UTF-8 with `\n` line ends; entries in any order. A missing or empty file, or one without the
//! count line, is an empty map. A wrong version, a malformed line or a wrong count is an error
//! naming the file and line. Writes are atomic (temp file, fsync, rename, fsync of the dir).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Result, StorageError};
use crate::fs::{atomic_write, read_text_if_exists};
use crate::types::TopicPartition;

/// The file of each log's recovery point: the first offset not known to be flushed, where
/// recovery after a crash starts.
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
/// The file of each log's log start offset, the lowest offset it serves.
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// The file of each compacted log's first dirty offset, where its next cleaning starts.
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
const VERSION: u32 = 0;

/// A checkpoint's entries: an offset per partition.
pub type OffsetMap = BTreeMap<TopicPartition, i64>;

/// Parses checkpoint text; `path` only names the file in errors.
pub fn parse_offset_checkpoint(text: &str, path: &Path) -> Result<OffsetMap> {
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
        return Ok(OffsetMap::new());
    };
    if version.trim().is_empty() {
        return Ok(OffsetMap::new());
    }
    match version.trim().parse::<u32>() {
        Ok(VERSION) => {}
        Ok(other) => {
            return Err(malformed(
                1,
                format!("unsupported checkpoint version {other}"),
            ));
        }
        Err(_) => {
            return Err(malformed(
                1,
                format!("expected the version, found {version:?}"),
            ));
        }
    }
    let Some((_, count)) = lines.next() else {
        return Ok(OffsetMap::new());
    };
    let expected: usize = count
        .trim()
        .parse()
        .map_err(|_| malformed(2, format!("expected the entry count, found {count:?}")))?;
    let mut entries = OffsetMap::new();
    let mut seen = 0usize;
    for (number, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let [topic, partition, offset] = tokens[..] else {
            return Err(malformed(
                number,
                format!("expected \"topic partition offset\", found {line:?}"),
            ));
        };
        let partition: i32 = partition
            .parse()
            .map_err(|_| malformed(number, format!("partition {partition:?} is not an integer")))?;
        let offset: i64 = offset
            .parse()
            .map_err(|_| malformed(number, format!("offset {offset:?} is not an integer")))?;
        entries.insert(TopicPartition::new(topic, partition), offset);
        seen += 1;
    }
    if seen != expected {
        return Err(malformed(
            2,
            format!("the count says {expected} entries but the file holds {seen}"),
        ));
    }
    Ok(entries)
}

/// Reads a checkpoint file; a missing file is an empty map.
pub fn read_offset_checkpoint(path: &Path) -> Result<OffsetMap> {
    match read_text_if_exists(path)? {
        Some(text) => parse_offset_checkpoint(&text, path),
        None => Ok(OffsetMap::new()),
    }
}

/// The text of a checkpoint holding `entries`.
pub fn format_offset_checkpoint(entries: &OffsetMap) -> String {
    let mut text = format!("{VERSION}\n{}\n", entries.len());
    for (topic_partition, offset) in entries {
        let _ = writeln!(
            text,
            "{} {} {offset}",
            topic_partition.topic, topic_partition.partition
        );
    }
    text
}

/// Replaces the checkpoint file atomically.
pub fn write_offset_checkpoint(path: &Path, entries: &OffsetMap) -> Result<()> {
    atomic_write(path, format_offset_checkpoint(entries).as_bytes())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_round_trips_and_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECOVERY_POINT_CHECKPOINT);
        let mut entries = OffsetMap::new();
        entries.insert(TopicPartition::new("a", 0), 10);
        entries.insert(TopicPartition::new("b.c-d", 7), 0);
        write_offset_checkpoint(&path, &entries).unwrap();
        assert_eq!(read_offset_checkpoint(&path).unwrap(), entries);
        entries.insert(TopicPartition::new("a", 0), 99);
        write_offset_checkpoint(&path, &entries).unwrap();
        assert_eq!(read_offset_checkpoint(&path).unwrap(), entries);
        assert!(
            !dir.path()
                .join(format!("{RECOVERY_POINT_CHECKPOINT}.tmp"))
                .exists()
        );
    }

    #[test]
    fn empty_file_and_empty_map_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cp");
        std::fs::write(&path, "").unwrap();
        assert!(read_offset_checkpoint(&path).unwrap().is_empty());
        std::fs::write(&path, "0\n").unwrap();
        assert!(read_offset_checkpoint(&path).unwrap().is_empty());
        write_offset_checkpoint(&path, &OffsetMap::new()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n0\n");
        assert!(
            read_offset_checkpoint(&dir.path().join("missing"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn unknown_version_is_an_error_naming_file_and_line() {
        let error = parse_offset_checkpoint("1\n0\n", Path::new("/d/cp"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("/d/cp, line 1") && error.contains("version 1"),
            "{error}"
        );
    }

    #[test]
    fn malformed_lines_and_wrong_counts_are_errors_naming_the_line() {
        let cases = [
            ("0\n1\nt 0\n", 3),
            ("0\n1\nt x 5\n", 3),
            ("0\n1\nt 0 five\n", 3),
            ("0\n2\nt 0 5\n", 2),
            ("0\nmany\n", 2),
        ];
        for (text, line) in cases {
            let error = parse_offset_checkpoint(text, Path::new("cp"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(&format!("line {line}")), "{text:?}: {error}");
        }
    }

    #[test]
    fn kafka_written_checkpoints_parse() {
        let text = "0\n3\n__consumer_offsets 22 0\nfirst_topic  2\t18\nnew_topic 0 2\n";
        let entries = parse_offset_checkpoint(text, Path::new("cp")).unwrap();
        assert_eq!(
            entries.get(&TopicPartition::new("first_topic", 2)),
            Some(&18)
        );
        assert_eq!(entries.len(), 3);
    }
}
