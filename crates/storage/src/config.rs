//! Per-topic log configuration under Kafka's topic-level names, with Kafka's defaults, parsed
//! and validated once. A bad value is an error naming the key, the value and the rule.

use std::time::Duration;

use ferrolog_records::{Compression, TimestampType};

use crate::clock::{kafka_ms, millis};
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
    pub segment_age: Duration,
    /// `segment.jitter.ms`: the most a segment's roll time is brought forward at random. Default 0.
    pub segment_jitter: Duration,
    /// `segment.index.bytes`: size each index file is preallocated to. Default 10 MiB.
    pub segment_index_bytes: u32,
    /// `index.interval.bytes`: bytes between offset-index entries. Default 4096.
    pub index_interval_bytes: u32,
    /// `flush.messages`: fsync after this many unflushed messages. Default never
    /// (`Long.MAX_VALUE`).
    pub flush_messages: i64,
    /// `flush.ms`: fsync when the last flush is this old (checked by the scheduler); `None`
    /// never (Kafka's `Long.MAX_VALUE`). Default never.
    pub flush_interval: Option<Duration>,
    /// `retention.bytes`: size limit per partition; `None` none (Kafka's negative values).
    /// Default none.
    pub retention_bytes: Option<u64>,
    /// `retention.ms`: age limit; `None` none (Kafka's −1). Default 7 days.
    pub retention_age: Option<Duration>,
    /// `cleanup.policy`. Default `delete`.
    pub cleanup_policy: CleanupPolicy,
    /// `max.message.bytes`: largest batch a producer may append. Default 1048588.
    pub max_message_bytes: u32,
    /// `message.timestamp.type`. Default CreateTime.
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far in the past a CreateTime may be. Default
    /// unlimited (`Long.MAX_VALUE` ms).
    pub message_timestamp_before_max: Duration,
    /// `message.timestamp.after.max.ms`: how far in the future a CreateTime may be. Default
    /// one hour, as in Kafka 4.
    pub message_timestamp_after_max: Duration,
    /// `file.delete.delay.ms`: how long deleted segment files linger as `.deleted`. Default 60 s.
    pub file_delete_delay: Duration,
    /// `preallocate`: create `.log` files at full `segment.bytes` size. Default false.
    pub preallocate: bool,
    /// `compression.type`. Default `producer`.
    pub compression_type: TargetCompression,
    /// `min.cleanable.dirty.ratio`. Default 0.5.
    pub min_cleanable_dirty_ratio: f64,
    /// `delete.retention.ms`: how long tombstones survive compaction. Default 1 day.
    pub delete_retention: Duration,
    /// `min.compaction.lag.ms`: how old a record must be before compaction may remove it.
    /// Default 0.
    pub min_compaction_lag: Duration,
    /// `max.compaction.lag.ms`: how old a dirty record may grow before its log is compacted
    /// regardless of the dirty ratio. Default unlimited (`Long.MAX_VALUE` ms).
    pub max_compaction_lag: Duration,
    /// `internal.segment.bytes`: Kafka 4.4's segment size for tests, below the 1 MiB
    /// `segment.bytes` may not go; when set, segments roll at it instead. Default unset.
    pub internal_segment_bytes: Option<u64>,
    /// `ferrolog.max.producers.per.partition` (a broker key, no topic's): idempotent producers
    /// whose state a partition keeps, the least recently seen forgotten beyond (see
    /// [`crate::producer::ProducerState::evict_beyond`]). Default 1,000.
    pub max_producers: usize,
}

const DAY: Duration = Duration::from_secs(24 * 60 * 60);
/// Kafka's `Long.MAX_VALUE` milliseconds: the default of limits that are off.
const UNLIMITED: Duration = Duration::from_millis(i64::MAX as u64);

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1024 * 1024 * 1024,
            segment_age: DAY * 7,
            segment_jitter: Duration::ZERO,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            flush_messages: i64::MAX,
            flush_interval: None,
            retention_bytes: None,
            retention_age: Some(DAY * 7),
            cleanup_policy: CleanupPolicy::DELETE,
            max_message_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max: UNLIMITED,
            message_timestamp_after_max: Duration::from_secs(3_600),
            file_delete_delay: Duration::from_secs(60),
            preallocate: false,
            compression_type: TargetCompression::Producer,
            min_cleanable_dirty_ratio: 0.5,
            delete_retention: DAY,
            min_compaction_lag: Duration::ZERO,
            max_compaction_lag: UNLIMITED,
            internal_segment_bytes: None,
            max_producers: 1000,
        }
    }
}

/// Every topic-level key [`LogConfig::set`] accepts and DescribeConfigs lists; it also accepts
/// Kafka's `internal.segment.bytes`, which, as an internal key, is not listed.
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

fn parse_duration(key: &str, value: &str, min_ms: i64) -> Result<Duration> {
    parse_long(key, value, min_ms.max(0)).map(millis)
}

fn parse_int(key: &str, value: &str, min: i64) -> Result<u32> {
    let parsed = parse_long(key, value, min)?;
    i32::try_from(parsed)
        .map(|fits| fits as u32)
        .map_err(|_| invalid(key, value, "must fit in a 32-bit signed integer"))
}

/// Kafka 4.4's smallest `segment.bytes` (and `log.segment.bytes`): 1 MiB. Clients and the
/// broker's settings are held to it ([`LogConfig::check_kafka_minimums`]); a library user
/// setting the field may go lower, and tests use `internal.segment.bytes`, as Kafka's do.
pub const MIN_SEGMENT_BYTES: u64 = 1 << 20;

impl LogConfig {
    /// The size segments roll at: `internal.segment.bytes` when set, else `segment.bytes`.
    pub fn segment_size(&self) -> u64 {
        self.internal_segment_bytes.unwrap_or(self.segment_bytes)
    }

    /// The limits Kafka 4.4 holds a topic-level key to beyond what [`LogConfig::set`] takes:
    /// `segment.bytes` at least [`MIN_SEGMENT_BYTES`], with Kafka's message.
    pub fn check_kafka_minimums(key: &str, value: &str) -> Result<()> {
        if key == "segment.bytes"
            && value
                .trim()
                .parse::<i64>()
                .is_ok_and(|bytes| bytes < MIN_SEGMENT_BYTES as i64)
        {
            return Err(StorageError::InvalidConfig {
                key: key.to_owned(),
                value: value.to_owned(),
                reason: format!("Value must be at least {MIN_SEGMENT_BYTES}"),
            });
        }
        Ok(())
    }

    /// Sets one topic-level key. Unknown keys and invalid values are errors naming the key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        match key {
            "segment.bytes" => self.segment_bytes = u64::from(parse_int(key, value, 14)?),
            "segment.ms" => self.segment_age = parse_duration(key, value, 1)?,
            "segment.jitter.ms" => self.segment_jitter = parse_duration(key, value, 0)?,
            "segment.index.bytes" => self.segment_index_bytes = parse_int(key, value, 4)?,
            "index.interval.bytes" => self.index_interval_bytes = parse_int(key, value, 0)?,
            "flush.messages" => self.flush_messages = parse_long(key, value, 1)?,
            "flush.ms" => {
                let ms = parse_long(key, value, 0)?;
                self.flush_interval = (ms != i64::MAX).then(|| millis(ms));
            }
            "retention.bytes" => {
                self.retention_bytes = u64::try_from(parse_long(key, value, i64::MIN)?).ok();
            }
            "retention.ms" => {
                self.retention_age = match parse_long(key, value, -1)? {
                    -1 => None,
                    ms => Some(millis(ms)),
                }
            }
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
                self.message_timestamp_before_max = parse_duration(key, value, 0)?
            }
            "message.timestamp.after.max.ms" => {
                self.message_timestamp_after_max = parse_duration(key, value, 0)?
            }
            "file.delete.delay.ms" => self.file_delete_delay = parse_duration(key, value, 0)?,
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
            "delete.retention.ms" => self.delete_retention = parse_duration(key, value, 0)?,
            "min.compaction.lag.ms" => self.min_compaction_lag = parse_duration(key, value, 0)?,
            "max.compaction.lag.ms" => self.max_compaction_lag = parse_duration(key, value, 1)?,
            "internal.segment.bytes" => {
                self.internal_segment_bytes = Some(u64::from(parse_int(key, value, 14)?));
            }
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
            "segment.ms" => kafka_ms(self.segment_age).to_string(),
            "segment.jitter.ms" => kafka_ms(self.segment_jitter).to_string(),
            "segment.index.bytes" => self.segment_index_bytes.to_string(),
            "index.interval.bytes" => self.index_interval_bytes.to_string(),
            "flush.messages" => self.flush_messages.to_string(),
            "flush.ms" => self.flush_interval.map_or(i64::MAX, kafka_ms).to_string(),
            "retention.bytes" => self
                .retention_bytes
                .map_or(-1, |bytes| i64::try_from(bytes).unwrap_or(i64::MAX))
                .to_string(),
            "retention.ms" => self.retention_age.map_or(-1, kafka_ms).to_string(),
            "cleanup.policy" => self.cleanup_policy.name().to_owned(),
            "max.message.bytes" => self.max_message_bytes.to_string(),
            "message.timestamp.type" => self.message_timestamp_type.name().to_owned(),
            "message.timestamp.before.max.ms" => {
                kafka_ms(self.message_timestamp_before_max).to_string()
            }
            "message.timestamp.after.max.ms" => {
                kafka_ms(self.message_timestamp_after_max).to_string()
            }
            "file.delete.delay.ms" => kafka_ms(self.file_delete_delay).to_string(),
            "preallocate" => self.preallocate.to_string(),
            "compression.type" => match self.compression_type {
                TargetCompression::Producer => "producer".to_owned(),
                TargetCompression::Codec(Compression::None) => "uncompressed".to_owned(),
                TargetCompression::Codec(codec) => codec.name().to_owned(),
            },
            "min.cleanable.dirty.ratio" => self.min_cleanable_dirty_ratio.to_string(),
            "delete.retention.ms" => kafka_ms(self.delete_retention).to_string(),
            "min.compaction.lag.ms" => kafka_ms(self.min_compaction_lag).to_string(),
            "max.compaction.lag.ms" => kafka_ms(self.max_compaction_lag).to_string(),
            "internal.segment.bytes" => self.internal_segment_bytes?.to_string(),
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
    fn kafka_sentinels_become_absent_limits_and_come_back_as_kafka_shows_them() {
        let config = LogConfig::default()
            .with([
                ("retention.ms", "-1"),
                ("retention.bytes", "-1"),
                ("flush.ms", "9223372036854775807"),
                ("max.compaction.lag.ms", "9223372036854775807"),
            ])
            .unwrap();
        assert_eq!(config.retention_age, None);
        assert_eq!(config.retention_bytes, None);
        assert_eq!(config.flush_interval, None);
        assert_eq!(config.max_compaction_lag, UNLIMITED);
        assert_eq!(config.get("retention.ms").unwrap(), "-1");
        assert_eq!(config.get("flush.ms").unwrap(), "9223372036854775807");
        let config = config
            .with([("retention.ms", "1500"), ("flush.ms", "250")])
            .unwrap();
        assert_eq!(config.retention_age, Some(Duration::from_millis(1_500)));
        assert_eq!(config.flush_interval, Some(Duration::from_millis(250)));
        assert!(LogConfig::default().set("retention.ms", "-2").is_err());
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
