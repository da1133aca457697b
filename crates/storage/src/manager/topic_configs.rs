//! Topic-level configuration overrides, kept across restarts.
//!
//! Kafka keeps topic configs in its cluster metadata (the KRaft log or ZooKeeper), not in the
//! data directories. A single node has no metadata log, so ferrolog keeps them in a small text
//! file, `ferrolog-topic-configs`, written to every online data directory. Kafka ignores regular
//! files at the top of a data directory, so the file does not disturb a Kafka broker that later
//! opens the same directory (the topics then need their configs set in the cluster again).
//!
//! It is a document (see `documents`: the version and generation lines, written atomically to
//! every online directory, the newest copy winning). Format (lines):
//!
//! ```text
//! 0                      version
//! 7                      generation: raised by every write
//! 2                      number of entries
//! orders cleanup.policy compact
//! orders retention.ms 86400000
//! ```
//!
//! An entry is `<topic> <key> <value>`, the value being the rest of the line. Topic names and
//! keys never hold spaces, and values holding a line break are refused before they are stored.
//! Every copy carries a generation; at startup the highest wins, so a directory that was offline
//! while a config changed does not bring the old value back.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::error::{Result, StorageError};

/// The file holding the topic-level config overrides, in every online data directory.
pub const TOPIC_CONFIGS_FILE: &str = "ferrolog-topic-configs";
/// The body of a document starts on the file's third line (see `documents`).
const BODY_FIRST_LINE: usize = 3;

/// Every topic's overrides.
pub type TopicOverrides = HashMap<String, BTreeMap<String, String>>;

/// One directory's copy of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredTopicConfigs {
    pub generation: u64,
    pub overrides: TopicOverrides,
}

/// Refuses what the line format cannot hold.
pub fn check_storable(topic: &str, overrides: &BTreeMap<String, String>) -> Result<()> {
    let bad_value = overrides
        .iter()
        .find(|(key, value)| key.contains(char::is_whitespace) || value.contains(['\n', '\r']));
    if topic.is_empty() || topic.contains(char::is_whitespace) {
        return Err(StorageError::InvalidConfig {
            key: "topic".into(),
            value: topic.to_owned(),
            reason: "a topic name holds no whitespace".into(),
        });
    }
    if let Some((key, value)) = bad_value {
        return Err(StorageError::InvalidConfig {
            key: key.clone(),
            value: value.clone(),
            reason: "config keys hold no whitespace and values no line breaks".into(),
        });
    }
    Ok(())
}

/// The document's body: the entry count, then the entries in a stable order.
pub fn format_body(overrides: &TopicOverrides) -> String {
    let mut entries: Vec<(&str, &str, &str)> = overrides
        .iter()
        .flat_map(|(topic, overrides)| {
            overrides
                .iter()
                .map(move |(key, value)| (topic.as_str(), key.as_str(), value.as_str()))
        })
        .collect();
    entries.sort_unstable();
    let mut text = format!("{}\n", entries.len());
    for (topic, key, value) in entries {
        text.push_str(&format!("{topic} {key} {value}\n"));
    }
    text
}

/// Parses the document's body; `path` names the file in errors, whose lines count from the
/// file's first (the body starts on its third).
pub fn parse_body(body: &str, path: &Path) -> Result<TopicOverrides> {
    let malformed = |line: usize, reason: String| StorageError::MalformedFile {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut lines = body
        .lines()
        .enumerate()
        .map(|(index, line)| (index + BODY_FIRST_LINE, line));
    let (count_line, count) = lines.next().ok_or_else(|| {
        malformed(
            BODY_FIRST_LINE,
            "the file ends before the entry count".into(),
        )
    })?;
    let expected = count.trim().parse::<u64>().map_err(|_| {
        malformed(
            count_line,
            format!("expected the entry count, found {count:?}"),
        )
    })?;
    let mut overrides = TopicOverrides::new();
    let mut found = 0u64;
    for (number, line) in lines {
        let mut fields = line.splitn(3, ' ');
        let (Some(topic), Some(key), Some(value)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(malformed(
                number,
                format!("expected `<topic> <key> <value>`, found {line:?}"),
            ));
        };
        if topic.is_empty() || key.is_empty() {
            return Err(malformed(number, "empty topic or key".into()));
        }
        overrides
            .entry(topic.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
        found += 1;
    }
    if found != expected {
        return Err(malformed(
            count_line,
            format!("the header promises {expected} entries, the file holds {found}"),
        ));
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StoredTopicConfigs {
        let mut overrides = TopicOverrides::new();
        overrides.insert(
            "orders".into(),
            [
                ("cleanup.policy".to_owned(), "compact,delete".to_owned()),
                ("retention.ms".to_owned(), "86400000".to_owned()),
            ]
            .into(),
        );
        overrides.insert(
            "clicks".into(),
            [("segment.bytes".to_owned(), "1048576".to_owned())].into(),
        );
        StoredTopicConfigs {
            generation: 7,
            overrides,
        }
    }

    #[test]
    fn round_trips_in_a_stable_order() {
        let text = format_body(&sample().overrides);
        assert_eq!(
            text,
            "3\nclicks segment.bytes 1048576\norders cleanup.policy compact,delete\n\
             orders retention.ms 86400000\n"
        );
        assert_eq!(
            parse_body(&text, Path::new("f")).unwrap(),
            sample().overrides
        );
    }

    #[test]
    fn values_may_hold_spaces() {
        let text = "1\nt key a value with spaces\n";
        let overrides = parse_body(text, Path::new("f")).unwrap();
        assert_eq!(overrides["t"]["key"], "a value with spaces");
    }

    #[test]
    fn malformed_files_name_the_line() {
        let cases = [
            ("", 3, "entry count"),
            ("seven\n", 3, "entry count"),
            ("2\nt k v\n", 3, "promises 2 entries"),
            (
                "1\nonly-two fields\n",
                4,
                "expected `<topic> <key> <value>`",
            ),
        ];
        for (text, line, reason) in cases {
            match parse_body(text, Path::new("dir/ferrolog-topic-configs")) {
                Err(StorageError::MalformedFile {
                    line: found_line,
                    reason: found_reason,
                    ..
                }) => {
                    assert_eq!(found_line, line, "{text:?}");
                    assert!(found_reason.contains(reason), "{text:?}: {found_reason}");
                }
                other => panic!("{text:?} parsed as {other:?}"),
            }
        }
    }

    #[test]
    fn line_breaks_in_values_are_refused() {
        let overrides = [("retention.ms".to_owned(), "1\n2".to_owned())].into();
        assert!(check_storable("t", &overrides).is_err());
        assert!(check_storable("t t", &BTreeMap::new()).is_err());
        let fine = [("retention.ms".to_owned(), "100".to_owned())].into();
        assert!(check_storable("t", &fine).is_ok());
    }
}
