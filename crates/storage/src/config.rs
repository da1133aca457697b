//! Per-topic log configuration under Kafka's topic-level names, with Kafka's defaults, parsed
//! and validated once. A bad value is an error naming the key, the value and the rule.

use ferrolog_records::{Compression, TimestampType};

use crate::error::{Result, StorageError};

/// What happens to old data: deleted by time and size, compacted by key, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// `delete`: segments past `retention.ms` or `retention.bytes` are deleted.
    pub delete: bool,
    /// `compact`: each key keeps only its latest record.
    pub compact: bool,
}

impl CleanupPolicy {
    /// `delete` alone, Kafka's default.
    pub const DELETE: Self = Self {
        delete: true,
        compact: false,
    };
    /// `compact` alone.
    pub const COMPACT: Self = Self {
        delete: false,
        compact: true,
    };

    /// Kafka's spelling: `delete`, `compact`, or both comma-separated.
    pub fn name(self) -> &'static str {
        match (self.compact, self.delete) {
            (true, true) => "compact,delete",
            (true, false) => "compact",
            _ => "delete",
        }
    }
}

/// How the broker stores batches regardless of how producers sent them (`compression.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetCompression {
    /// Keep the producer's codec (Kafka's default).
    Producer,
    /// Recompress everything with this codec (`uncompressed` is [`Compression::None`]).
    Codec(Compression),
}

/// Configuration of one partition log. Field docs give Kafka's topic key and default.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes`: roll when the active segment would grow past this. Default 1 GiB.
    pub segment_bytes: u64,
    /// `segment.ms`: roll a segment this long after its first batch's timestamp. Default 7 days.
    pub segment_ms: i64,
    /// `segment.jitter.ms`: the most a segment's roll time is brought forward at random. Default 0.
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes`: size each index file is preallocated to. Default 10 MiB.
    pub segment_index_bytes: u32,
    /// `index.interval.bytes`: bytes between offset-index entries. Default 4096.
    pub index_interval_bytes: u32,
    /// `flush.messages`: fsync after this many unflushed messages. Default never.
    pub flush_messages: i64,
    /// `flush.ms`: fsync when the last flush is this old (checked by the scheduler). Default never.
    pub flush_ms: i64,
    /// `retention.bytes`: size limit per partition; −1 none. Default −1.
    pub retention_bytes: i64,
    /// `retention.ms`: age limit; −1 none. Default 7 days.
    pub retention_ms: i64,
    /// `cleanup.policy`. Default `delete`.
    pub cleanup_policy: CleanupPolicy,
    /// `max.message.bytes`: largest batch a producer may append. Default 1048588.
    pub max_message_bytes: u32,
    /// `message.timestamp.type`. Default CreateTime.
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far in the past a CreateTime may be. Default unlimited.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: how far in the future a CreateTime may be. Default unlimited.
    pub message_timestamp_after_max_ms: i64,
    /// `file.delete.delay.ms`: how long deleted segment files linger as `.deleted`. Default 60000.
    pub file_delete_delay_ms: i64,
    /// `preallocate`: create `.log` files at full `segment.bytes` size. Default false.
    pub preallocate: bool,
    /// `compression.type`. Default `producer`.
    pub compression_type: TargetCompression,
    /// `min.cleanable.dirty.ratio`. Default 0.5.
    pub min_cleanable_dirty_ratio: f64,
    /// `delete.retention.ms`: how long tombstones survive compaction. Default 1 day.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`. Default 0.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`. Default unlimited.
    pub max_compaction_lag_ms: i64,
}

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1024 * 1024 * 1024,
            segment_ms: 7 * DAY_MS,
            segment_jitter_ms: 0,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            retention_bytes: -1,
            retention_ms: 7 * DAY_MS,
            cleanup_policy: CleanupPolicy::DELETE,
            max_message_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            preallocate: false,
            compression_type: TargetCompression::Producer,
            min_cleanable_dirty_ratio: 0.5,
            delete_retention_ms: DAY_MS,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
        }
    }
}

/// Every topic-level key [`LogConfig::set`] accepts.
pub const TOPIC_CONFIG_KEYS: &[&str] = &[
    "segment.bytes",
    "segment.ms",
    "segment.jitter.ms",
    "segment.index.bytes",
    "index.interval.bytes",
    "flush.messages",
    "flush.ms",
    "retention.bytes",
    "retention.ms",
    "cleanup.policy",
    "max.message.bytes",
    "message.timestamp.type",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    "file.delete.delay.ms",
    "preallocate",
    "compression.type",
    "min.cleanable.dirty.ratio",
    "delete.retention.ms",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
];

fn invalid(key: &str, value: &str, reason: impl Into<String>) -> StorageError {
    StorageError::InvalidConfig {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.into(),
    }
}

fn parse_long(key: &str, value: &str, min: i64) -> Result<i64> {
    let parsed: i64 = value
        .trim()
        .parse()
        .map_err(|_| invalid(key, value, "not an integer"))?;
    if parsed < min {
        return Err(invalid(key, value, format!("must be at least {min}")));
    }
    Ok(parsed)
}

fn parse_int(key: &str, value: &str, min: i64) -> Result<u32> {
    let parsed = parse_long(key, value, min)?;
    i32::try_from(parsed)
        .map(|fits| fits as u32)
        .map_err(|_| invalid(key, value, "must fit in a 32-bit signed integer"))
}

impl LogConfig {
    /// Sets one topic-level key. Unknown keys and invalid values are errors naming the key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        match key {
            "segment.bytes" => self.segment_bytes = u64::from(parse_int(key, value, 14)?),
            "segment.ms" => self.segment_ms = parse_long(key, value, 1)?,
            "segment.jitter.ms" => self.segment_jitter_ms = parse_long(key, value, 0)?,
            "segment.index.bytes" => self.segment_index_bytes = parse_int(key, value, 4)?,
            "index.interval.bytes" => self.index_interval_bytes = parse_int(key, value, 0)?,
            "flush.messages" => self.flush_messages = parse_long(key, value, 1)?,
            "flush.ms" => self.flush_ms = parse_long(key, value, 0)?,
            "retention.bytes" => self.retention_bytes = parse_long(key, value, i64::MIN)?,
            "retention.ms" => self.retention_ms = parse_long(key, value, -1)?,
            "cleanup.policy" => {
                let mut policy = CleanupPolicy {
                    delete: false,
                    compact: false,
                };
                for part in value.split(',').map(str::trim) {
                    match part {
                        "delete" => policy.delete = true,
                        "compact" => policy.compact = true,
                        _ => return Err(invalid(key, value, "expected delete, compact or both")),
                    }
                }
                self.cleanup_policy = policy;
            }
            "max.message.bytes" => self.max_message_bytes = parse_int(key, value, 0)?,
            "message.timestamp.type" => {
                self.message_timestamp_type = match value.trim() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => return Err(invalid(key, value, "expected CreateTime or LogAppendTime")),
                }
            }
            "message.timestamp.before.max.ms" => {
                self.message_timestamp_before_max_ms = parse_long(key, value, 0)?
            }
            "message.timestamp.after.max.ms" => {
                self.message_timestamp_after_max_ms = parse_long(key, value, 0)?
            }
            "file.delete.delay.ms" => self.file_delete_delay_ms = parse_long(key, value, 0)?,
            "preallocate" => {
                self.preallocate = match value.trim() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid(key, value, "expected true or false")),
                }
            }
            "compression.type" => {
                self.compression_type = match value.trim() {
                    "producer" => TargetCompression::Producer,
                    "uncompressed" => TargetCompression::Codec(Compression::None),
                    name => Compression::from_name(name)
                        .filter(|codec| *codec != Compression::None)
                        .map(TargetCompression::Codec)
                        .ok_or_else(|| {
                            invalid(
                                key,
                                value,
                                "expected producer, uncompressed, gzip, snappy, lz4 or zstd",
                            )
                        })?,
                }
            }
            "min.cleanable.dirty.ratio" => {
                let ratio: f64 = value
                    .trim()
                    .parse()
                    .map_err(|_| invalid(key, value, "not a number"))?;
                if !(0.0..=1.0).contains(&ratio) {
                    return Err(invalid(key, value, "must be between 0 and 1"));
                }
                self.min_cleanable_dirty_ratio = ratio;
            }
            "delete.retention.ms" => self.delete_retention_ms = parse_long(key, value, 0)?,
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = parse_long(key, value, 0)?,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = parse_long(key, value, 1)?,
            _ => return Err(invalid(key, value, "unknown topic config")),
        }
        Ok(())
    }

    /// This config with every `(key, value)` applied in order.
    pub fn with<'k>(mut self, pairs: impl IntoIterator<Item = (&'k str, &'k str)>) -> Result<Self> {
        for (key, value) in pairs {
            self.set(key, value)?;
        }
        Ok(self)
    }

    /// The value of a topic-level key in Kafka's text form, for DescribeConfigs and tools.
    pub fn get(&self, key: &str) -> Option<String> {
        Some(match key {
            "segment.bytes" => self.segment_bytes.to_string(),
            "segment.ms" => self.segment_ms.to_string(),
            "segment.jitter.ms" => self.segment_jitter_ms.to_string(),
            "segment.index.bytes" => self.segment_index_bytes.to_string(),
            "index.interval.bytes" => self.index_interval_bytes.to_string(),
            "flush.messages" => self.flush_messages.to_string(),
            "flush.ms" => self.flush_ms.to_string(),
            "retention.bytes" => self.retention_bytes.to_string(),
            "retention.ms" => self.retention_ms.to_string(),
            "cleanup.policy" => self.cleanup_policy.name().to_owned(),
            "max.message.bytes" => self.max_message_bytes.to_string(),
            "message.timestamp.type" => self.message_timestamp_type.name().to_owned(),
            "message.timestamp.before.max.ms" => self.message_timestamp_before_max_ms.to_string(),
            "message.timestamp.after.max.ms" => self.message_timestamp_after_max_ms.to_string(),
            "file.delete.delay.ms" => self.file_delete_delay_ms.to_string(),
            "preallocate" => self.preallocate.to_string(),
            "compression.type" => match self.compression_type {
                TargetCompression::Producer => "producer".to_owned(),
                TargetCompression::Codec(Compression::None) => "uncompressed".to_owned(),
                TargetCompression::Codec(codec) => codec.name().to_owned(),
            },
            "min.cleanable.dirty.ratio" => self.min_cleanable_dirty_ratio.to_string(),
            "delete.retention.ms" => self.delete_retention_ms.to_string(),
            "min.compaction.lag.ms" => self.min_compaction_lag_ms.to_string(),
            "max.compaction.lag.ms" => self.max_compaction_lag_ms.to_string(),
            _ => return None,
        })
    }

    /// Entries each preallocated offset index can hold.
    pub fn max_offset_index_entries(&self) -> u32 {
        self.segment_index_bytes / 8
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn every_key_round_trips_through_set_and_get() {
        let defaults = LogConfig::default();
        for key in TOPIC_CONFIG_KEYS {
            let value = defaults.get(key).unwrap();
            let mut config = LogConfig::default();
            config.set(key, &value).unwrap();
            assert_eq!(config, defaults, "{key}={value}");
        }
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut config = LogConfig::default();
        let error = config.set("segment.bytes", "13").unwrap_err().to_string();
        assert!(
            error.contains("segment.bytes") && error.contains("at least 14"),
            "{error}"
        );
        let error = config
            .set("cleanup.policy", "shred")
            .unwrap_err()
            .to_string();
        assert!(error.contains("cleanup.policy"), "{error}");
        assert!(config.set("no.such.key", "1").is_err());
        assert!(config.set("segment.bytes", "99999999999").is_err());
        assert!(config.set("min.cleanable.dirty.ratio", "1.5").is_err());
    }

    #[test]
    fn cleanup_policy_accepts_both_orders() {
        let config = LogConfig::default()
            .with([("cleanup.policy", "delete, compact")])
            .unwrap();
        assert_eq!(
            config.cleanup_policy,
            CleanupPolicy {
                delete: true,
                compact: true
            }
        );
    }
}
