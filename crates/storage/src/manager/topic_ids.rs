//! Topic ids, kept as Kafka keeps them: a random 128-bit id given to a topic when it is
//! created, written to each of its partition directories as `partition.metadata`, returned by
//! Metadata, and checked by a KRaft Kafka against its cluster metadata when it opens a
//! directory (a partition whose id its metadata does not know is stray to it).
//!
//! The file, exactly as Kafka writes it (no trailing line break):
//!
//! ```text
//! version: 0
//! topic_id: g0tOZ8xEQPWysT0IsthcYw
//! ```
//!
//! The id is printed as Kafka prints a `Uuid`: its 16 bytes (most significant half first) in
//! URL-safe base64 without padding, 22 characters. Kafka never hands out the all-zero id (no
//! id), the id 1 (its metadata log's), or an id whose text starts with `-` (it would read as a
//! command-line option); neither does ferrolog.

use std::fmt;
use std::path::Path;

use super::log_map::LogMap;
use crate::error::{Result, StorageError};
use crate::fs::{atomic_write, read_text_if_exists};
use crate::types::TopicPartition;

/// The file holding the topic id in each partition directory (Kafka's name and format).
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A topic's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicId(pub [u8; 16]);

impl TopicId {
    /// A new id, as Kafka's `Uuid.randomUuid` draws one.
    pub fn random() -> Self {
        loop {
            let id = Self(rand::random());
            let reserved = id.0 == [0; 16] || u128::from_be_bytes(id.0) == 1;
            if !reserved && !id.to_string().starts_with('-') {
                return id;
            }
        }
    }

    /// The id from its 22-character text.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.as_bytes();
        if text.len() != 22 {
            return None;
        }
        let mut bits: u128 = 0;
        for (index, &symbol) in text.iter().enumerate() {
            let value = ALPHABET.iter().position(|&a| a == symbol)? as u128;
            if index == 21 {
                // The last symbol carries the last 2 bits; its low 4 bits are padding.
                if value & 0xf != 0 {
                    return None;
                }
                bits = (bits << 2) | (value >> 4);
            } else {
                bits = (bits << 6) | value;
            }
        }
        Some(Self(bits.to_be_bytes()))
    }
}

impl fmt::Display for TopicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = u128::from_be_bytes(self.0);
        let mut text = [0u8; 22];
        for (index, symbol) in text.iter_mut().enumerate().take(21) {
            *symbol = ALPHABET[((bits >> (122 - 6 * index)) & 0x3f) as usize];
        }
        text[21] = ALPHABET[((bits & 0x3) << 4) as usize];
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

/// The id in `partition_dir`'s `partition.metadata`; `None` when there is no such file. A
/// file that is there but unreadable is an error naming it.
pub fn read(partition_dir: &Path) -> Result<Option<TopicId>> {
    let path = partition_dir.join(PARTITION_METADATA_FILE);
    let Some(text) = read_text_if_exists(&path)? else {
        return Ok(None);
    };
    let corrupt = |reason: String| StorageError::Corrupt {
        path: path.clone(),
        position: 0,
        reason,
    };
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("version: 0") => {}
        other => return Err(corrupt(format!("expected \"version: 0\", found {other:?}"))),
    }
    let id_text = lines
        .next()
        .and_then(|line| line.trim().strip_prefix("topic_id: "))
        .ok_or_else(|| corrupt("no \"topic_id: \" line".into()))?;
    TopicId::parse(id_text.trim())
        .map(Some)
        .ok_or_else(|| corrupt(format!("{id_text:?} is not a topic id")))
}

/// Writes `partition.metadata` into `partition_dir` (replacing it whole, durably).
pub fn write(partition_dir: &Path, id: TopicId) -> Result<()> {
    let contents = format!("version: 0\ntopic_id: {id}");
    atomic_write(
        &partition_dir.join(PARTITION_METADATA_FILE),
        contents.as_bytes(),
    )
}

/// Gives every loaded topic its id: the one in its partitions' `partition.metadata` (as Kafka
/// or ferrolog wrote it), or, for a topic written before ids existed, a new one, written to
/// each of its partition directories as Kafka does when it first assigns an id. A file that
/// cannot be read is reported and left as it is.
pub(super) fn settle(logs: &mut LogMap) {
    for (topic, partitions) in logs.topics() {
        let mut found: Option<TopicId> = None;
        let mut missing = Vec::new();
        for partition in partitions {
            let Some(entry) = logs.get(&TopicPartition::new(&topic, partition)) else {
                continue;
            };
            let dir = entry.log.dir();
            match read(&dir) {
                Ok(Some(id)) if found.is_none_or(|first| first == id) => found = Some(id),
                Ok(Some(id)) => {
                    tracing::error!(%topic, partition, path = %dir.display(), %id, kept = %found.map(|id| id.to_string()).unwrap_or_default(), "a partition holds another topic id than the topic's other partitions; the first one found is used");
                }
                Ok(None) => missing.push(dir),
                Err(error) => {
                    tracing::error!(%topic, partition, error = %error, "unreadable topic id; the file is left as it is");
                }
            }
        }
        let id = found.unwrap_or_else(TopicId::random);
        for dir in missing {
            if let Err(error) = write(&dir, id) {
                tracing::warn!(%topic, path = %dir.display(), error = %error, "could not write the topic id");
            }
        }
        logs.set_topic_id(&topic, id);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn ids_print_and_parse_as_kafka_writes_them() {
        // Written by Kafka 4.4 (partition.metadata of a topic it created).
        let id = TopicId::parse("g0tOZ8xEQPWysT0IsthcYw").unwrap();
        assert_eq!(id.to_string(), "g0tOZ8xEQPWysT0IsthcYw");
        assert_eq!(id.0[0], 0x83, "the first byte is the first 6 + 2 bits");
        for _ in 0..1000 {
            let random = TopicId::random();
            assert_eq!(TopicId::parse(&random.to_string()), Some(random));
            assert!(!random.to_string().starts_with('-'));
        }
        for bad in [
            "",
            "g0tOZ8xEQPWysT0IsthcY",
            "g0tOZ8xEQPWysT0IsthcYx",
            "g0tOZ8xEQPWysT0Isth=Yw",
        ] {
            assert_eq!(TopicId::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_file_round_trips_byte_for_byte_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        let id = TopicId::parse("g0tOZ8xEQPWysT0IsthcYw").unwrap();
        write(dir.path(), id).unwrap();
        let path = dir.path().join(PARTITION_METADATA_FILE);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"version: 0\ntopic_id: g0tOZ8xEQPWysT0IsthcYw"
        );
        assert_eq!(read(dir.path()).unwrap(), Some(id));
        std::fs::write(&path, "version: 1\ntopic_id: g0tOZ8xEQPWysT0IsthcYw").unwrap();
        let error = read(dir.path()).unwrap_err().to_string();
        assert!(error.contains("partition.metadata"), "{error}");
        std::fs::write(&path, "version: 0\ntopic_id: nope").unwrap();
        assert!(read(dir.path()).is_err());
    }
}
