//! Names of partitions and their directories.
//!
//! A partition directory is `<topic>-<partition>`, parsed by splitting at the last `-`.
//! Directories on their way out or in carry a suffix after a unique id:
//! `<topic>-<partition>.<uuid32>-delete` (queued for deletion), `-future` (a replica moving
//! between data dirs) and `-stray` (a replica the cluster no longer assigns here).

use std::fmt;
use std::path::Path;

use crate::error::{Result, StorageError};

/// A topic name and a partition number.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// The topic's name.
    pub topic: String,
    /// The partition's number within its topic, from 0.
    pub partition: i32,
}

impl TopicPartition {
    /// Partition `partition` of `topic`.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }

    /// The directory name of the partition's live log.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// What a partition directory's suffix says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionDirKind {
    /// No suffix: the partition's live log.
    Live,
    /// `-delete`: queued for deletion.
    Delete,
    /// `-future`: a replica moving between data dirs.
    Future,
    /// `-stray`: a replica the cluster no longer assigns here.
    Stray,
}

impl PartitionDirKind {
    fn suffix(self) -> &'static str {
        match self {
            Self::Live => "",
            Self::Delete => "-delete",
            Self::Future => "-future",
            Self::Stray => "-stray",
        }
    }
}

/// Longest file name most file systems allow; `-delete` and `-stray` names are cut to fit.
const MAX_FILE_NAME_BYTES: usize = 255;

/// Parses a partition directory name into its partition and kind.
pub fn parse_partition_dir(dir: &Path) -> Result<(TopicPartition, PartitionDirKind)> {
    let invalid = |reason: &str| StorageError::InvalidPartitionDir {
        path: dir.to_path_buf(),
        reason: reason.to_owned(),
    };
    let name = dir
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| invalid("the name is empty or not UTF-8"))?;
    let (kind, stem) = [
        PartitionDirKind::Delete,
        PartitionDirKind::Future,
        PartitionDirKind::Stray,
    ]
    .into_iter()
    .find_map(|kind| name.strip_suffix(kind.suffix()).map(|stem| (kind, stem)))
    .unwrap_or((PartitionDirKind::Live, name));
    let topic_partition = if kind == PartitionDirKind::Live {
        name
    } else {
        // `^(\S+)-(\S+)\.(\S+)<suffix>$`: the part before the last `.` is topic-partition.
        if stem.chars().any(char::is_whitespace) {
            return Err(invalid("whitespace in a suffixed name"));
        }
        let (topic_partition, unique_id) = stem
            .rsplit_once('.')
            .ok_or_else(|| invalid("a suffixed name needs .<unique id> before the suffix"))?;
        if unique_id.is_empty() {
            return Err(invalid("empty unique id"));
        }
        topic_partition
    };
    let (topic, partition) = topic_partition
        .rsplit_once('-')
        .ok_or_else(|| invalid("no '-' between topic and partition"))?;
    if topic.is_empty() {
        return Err(invalid("empty topic"));
    }
    if partition.is_empty() {
        return Err(invalid("empty partition"));
    }
    let partition: i32 = partition
        .parse()
        .map_err(|_| invalid("the partition is not an integer"))?;
    Ok((TopicPartition::new(topic, partition), kind))
}

/// The name a partition's directory takes while it waits for deletion:
/// `<topic>-<partition>.<uuid32>-delete`, the topic cut so the name fits in 255 bytes.
pub fn delete_dir_name(topic_partition: &TopicPartition, unique_id: &str) -> String {
    suffixed_dir_name(topic_partition, unique_id, PartitionDirKind::Delete)
}

/// The name of a partition's copy growing in another data directory while it moves there:
/// `<topic>-<partition>.<uuid32>-future` (not cut: Kafka does not cut it either).
pub fn future_dir_name(topic_partition: &TopicPartition, unique_id: &str) -> String {
    format!(
        "{}.{unique_id}{}",
        topic_partition.dir_name(),
        PartitionDirKind::Future.suffix()
    )
}

/// The unique id of a `-delete`, `-future` or `-stray` directory name (the part between the
/// last `.` and the suffix).
pub fn dir_unique_id(name: &str) -> Option<&str> {
    let stem = [
        PartitionDirKind::Delete,
        PartitionDirKind::Future,
        PartitionDirKind::Stray,
    ]
    .into_iter()
    .find_map(|kind| name.strip_suffix(kind.suffix()))?;
    let (_, unique_id) = stem.rsplit_once('.')?;
    (!unique_id.is_empty()).then_some(unique_id)
}

fn suffixed_dir_name(tp: &TopicPartition, unique_id: &str, kind: PartitionDirKind) -> String {
    let tail = format!("-{}.{}{}", tp.partition, unique_id, kind.suffix());
    let room = MAX_FILE_NAME_BYTES.saturating_sub(tail.len());
    let mut cut = tp.topic.len().min(room);
    while !tp.topic.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{}", &tp.topic[..cut], tail)
}

/// A fresh 32-hex-digit unique id, as Kafka's `Uuid` without dashes.
pub fn random_unique_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn parse(name: &str) -> Result<(TopicPartition, PartitionDirKind)> {
        parse_partition_dir(&PathBuf::from("/data").join(name))
    }

    #[test]
    fn parse_topic_partition_name_accepts_plain_and_dashed_topics() {
        assert_eq!(parse("foo-0").unwrap().0, TopicPartition::new("foo", 0));
        assert_eq!(
            parse("my-topic-12").unwrap().0,
            TopicPartition::new("my-topic", 12)
        );
        assert_eq!(
            parse("__consumer_offsets-49").unwrap().0,
            TopicPartition::new("__consumer_offsets", 49)
        );
    }

    #[test]
    fn parse_topic_partition_name_rejects_malformed_names() {
        for bad in [
            "foo",
            "-1",
            "foo-",
            "foo-bar",
            "",
            "foo-1.abc-delete ",
            "foo-1-delete",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn parse_topic_partition_name_accepts_dotted_topics_with_delete_suffix() {
        let id = random_unique_id();
        let (tp, kind) = parse(&format!("a.b.c-3.{id}-delete")).unwrap();
        assert_eq!(tp, TopicPartition::new("a.b.c", 3));
        assert_eq!(kind, PartitionDirKind::Delete);
        let (tp, kind) = parse(&format!("t-1.{id}-future")).unwrap();
        assert_eq!(
            (tp, kind),
            (TopicPartition::new("t", 1), PartitionDirKind::Future)
        );
        assert_eq!(
            parse(&format!("t-1.{id}-stray")).unwrap().1,
            PartitionDirKind::Stray
        );
    }

    #[test]
    fn parse_topic_partition_name_rejects_bad_suffixed_names() {
        for bad in [
            "t-1.-delete",
            "t.abc-delete",
            "-1.abc-delete",
            "t-x.abc-delete",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn delete_dir_name_of_an_overly_long_topic_fits_and_parses_back() {
        let topic = "t".repeat(253);
        let tp = TopicPartition::new(topic, 7);
        let name = delete_dir_name(&tp, &random_unique_id());
        assert!(name.len() <= MAX_FILE_NAME_BYTES, "{} bytes", name.len());
        let (parsed, kind) = parse(&name).unwrap();
        assert_eq!(kind, PartitionDirKind::Delete);
        assert_eq!(parsed.partition, 7);
        assert!(tp.topic.starts_with(&parsed.topic));
    }
}
