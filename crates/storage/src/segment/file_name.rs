//! Segment file names: the base offset as 20 zero-padded decimal digits, then a suffix
//! (`00000000000000001234.log`). Transient suffixes are appended to the whole name
//! (`…1234.log.deleted`). The base offset is the text before the first `.`.

use std::path::{Path, PathBuf};

/// A segment's records: batches back to back.
pub const LOG_SUFFIX: &str = ".log";
/// A segment's offset index: offset → byte position in the `.log`.
pub const INDEX_SUFFIX: &str = ".index";
/// A segment's time index: timestamp → offset.
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
/// Kafka's transaction index of aborted transactions; ferrolog writes none.
pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
/// Producer-state snapshots, named after the offset they are as of.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// Files removed from the log, waiting for `file.delete.delay.ms`.
pub const DELETED_SUFFIX: &str = ".deleted";
/// Cleaner or split output being written.
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// Completed cleaner or split output being swapped in.
pub const SWAP_SUFFIX: &str = ".swap";
/// An atomic write in flight.
pub const TMP_SUFFIX: &str = ".tmp";

/// `00000000000000001234` for 1234.
pub fn offset_text(offset: i64) -> String {
    format!("{offset:020}")
}

/// `<dir>/<20-digit base><suffix>`.
pub fn segment_path(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{}{suffix}", offset_text(base_offset)))
}

/// The base offset a segment file name starts with, or `None` when the text before the first
/// `.` is not a non-negative integer.
pub fn parse_base_offset(file_name: &str) -> Option<i64> {
    let (digits, _) = file_name.split_once('.')?;
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The path with `suffix` appended to its file name (`a.log` + `.deleted` = `a.log.deleted`).
pub fn with_added_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The path with a trailing `suffix` removed, when it has one.
pub fn without_suffix(path: &Path, suffix: &str) -> Option<PathBuf> {
    let text = path.to_str()?;
    text.strip_suffix(suffix).map(PathBuf::from)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn names_are_twenty_digits_and_parse_back() {
        let path = segment_path(Path::new("/d"), 1234, LOG_SUFFIX);
        assert_eq!(path, Path::new("/d/00000000000000001234.log"));
        assert_eq!(parse_base_offset("00000000000000001234.log"), Some(1234));
        assert_eq!(
            parse_base_offset("00000000000000001234.log.deleted"),
            Some(1234)
        );
        assert_eq!(parse_base_offset("leader-epoch-checkpoint"), None);
        assert_eq!(parse_base_offset("partition.metadata"), None);
        assert_eq!(parse_base_offset("-0001.log"), None);
    }

    #[test]
    fn suffixes_are_added_and_removed_on_the_whole_name() {
        let path = Path::new("/d/00000000000000000000.index");
        let deleted = with_added_suffix(path, DELETED_SUFFIX);
        assert_eq!(deleted, Path::new("/d/00000000000000000000.index.deleted"));
        assert_eq!(
            without_suffix(&deleted, DELETED_SUFFIX).as_deref(),
            Some(path)
        );
    }
}
