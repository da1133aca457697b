//! The LogManager's configuration, parsed from Kafka broker keys (`server.properties`).
//!
//! Broker-level `log.*` keys set the defaults every topic starts from; topics override them
//! under Kafka's topic-level names (see [`crate::config::LogConfig`]). For keys with `ms`,
//! `minutes` and `hours` variants the most specific one set wins, as in Kafka.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::cleaner_config::{CLEANER_KEYS, cleaner_config_from};
use super::topic_defaults::{DIRECT_SYNONYMS, TIMED_SYNONYMS, topic_defaults_from};
use crate::cleaner::CleanerConfig;
use crate::config::LogConfig;
use crate::error::{Result, StorageError};

/// How a new partition's data directory is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlacementPolicy {
    /// Kafka's rule: the directory holding the fewest partitions (ties to the first listed).
    #[default]
    FewestPartitions,
    /// The directory with the most free bytes: balances disks of unequal size or fill.
    MostFreeBytes,
}

/// Configuration of the LogManager. Field docs give the broker key and default.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerConfig {
    /// `log.dirs` (else `log.dir`): data directories. Default `/tmp/kafka-logs`.
    pub log_dirs: Vec<PathBuf>,
    /// `num.recovery.threads.per.data.dir`. Default 2, as in Kafka 4.
    pub recovery_threads_per_data_dir: usize,
    /// `ferrolog.recovery.salvage`: whether recovery salvages damaged segments rather than
    /// cutting them (`ferrolog recover --salvage` salvages every segment). Default off.
    pub salvage: crate::log::Salvage,
    /// `node.id` (or `broker.id`): refuse directories of another node. Default: taken from the
    /// directories, 0 for fresh ones.
    pub node_id: Option<i32>,
    /// `ferrolog.log.dir.placement.policy`: `partition-count` (default) or `free-bytes`.
    pub placement: PlacementPolicy,
    /// The broker-level defaults of every topic.
    pub log_defaults: LogConfig,
    /// Periods of the background jobs.
    pub background: BackgroundConfig,
    /// The log cleaner (`log.cleaner.*`).
    pub cleaner: CleanerConfig,
    /// `ferrolog.max.partitions`: the most partition logs this node creates (logs already on
    /// disk always load). Every partition holds at least one open file and its memory maps.
    /// Default 10000.
    pub max_partitions: usize,
    /// `ferrolog.max.open.sealed.segments`: sealed segments whose `.log` may be open, or
    /// indexes mapped, at once, over every log; the coldest are closed beyond it (see
    /// [`crate::segment::OpenFiles`]). Default 1,000.
    pub max_open_sealed_segments: usize,
    /// `ferrolog.decompression.memory.bytes`: memory every append together may decompress
    /// produced batches into; one append at most all of it, whatever its topic's
    /// `max.message.bytes` (see [`crate::decompression`]). Default 256 MiB.
    pub decompression_memory_bytes: u64,
    /// `replica.alter.log.dirs.io.max.bytes.per.second`: bytes per second copied into future
    /// logs, all moves together. Default unlimited (Kafka's `Long.MAX_VALUE`).
    pub move_max_bytes_per_second: f64,
    /// The scrubber's settings (`ferrolog.scrub.*`).
    pub scrub: super::ScrubConfig,
}

/// Periods of the scheduler's jobs. Field docs give the broker key and default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackgroundConfig {
    /// `log.initial.task.delay.ms`: before any job first runs. Default 30 s.
    pub initial_delay: Duration,
    /// `log.retention.check.interval.ms`: retention, and rolling idle segments. Default 5 min.
    pub retention_check_interval: Duration,
    /// `log.flush.scheduler.interval.ms`: how often logs are checked against `flush.ms`;
    /// `None` never (Kafka's `Long.MAX_VALUE`). Default never.
    pub flush_check_interval: Option<Duration>,
    /// `log.flush.offset.checkpoint.interval.ms`: recovery-point checkpoints. Default 60 s.
    pub recovery_point_checkpoint_interval: Duration,
    /// `log.flush.start.offset.checkpoint.interval.ms`: log-start-offset checkpoints.
    /// Default 60 s.
    pub log_start_offset_checkpoint_interval: Duration,
    /// `producer.id.expiration.ms`: an idempotent producer idle this long is forgotten.
    /// Default a day.
    pub producer_id_expiration: Duration,
    /// `producer.id.expiration.check.interval.ms`: how often that is checked. Default 10 min.
    pub producer_id_expiration_check_interval: Duration,
}

impl Default for BackgroundConfig {
    fn default() -> Self {
        Self {
            initial_delay: Duration::from_secs(30),
            retention_check_interval: Duration::from_secs(300),
            flush_check_interval: None,
            recovery_point_checkpoint_interval: Duration::from_secs(60),
            log_start_offset_checkpoint_interval: Duration::from_secs(60),
            producer_id_expiration: Duration::from_secs(86_400),
            producer_id_expiration_check_interval: Duration::from_secs(600),
        }
    }
}

impl Default for ManagerConfig {
    fn default() -> Self {
        Self {
            log_dirs: vec![PathBuf::from("/tmp/kafka-logs")],
            recovery_threads_per_data_dir: 2,
            salvage: crate::log::Salvage::Off,
            node_id: None,
            placement: PlacementPolicy::default(),
            log_defaults: LogConfig::default(),
            background: BackgroundConfig::default(),
            cleaner: CleanerConfig::default(),
            max_partitions: 10_000,
            max_open_sealed_segments: crate::segment::DEFAULT_MAX_OPEN_SEALED,
            decompression_memory_bytes: crate::decompression::DEFAULT_DECOMPRESSION_MEMORY,
            move_max_bytes_per_second: f64::MAX,
            scrub: super::ScrubConfig::default(),
        }
    }
}

/// `key`'s value when it is set: `what` (an integer, a number of bytes) of at least
/// `minimum`, or an error naming the key.
pub(super) fn at_least<T>(
    properties: &BTreeMap<String, String>,
    key: &str,
    minimum: T,
    what: &str,
) -> Result<Option<T>>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let Some(value) = properties.get(key) else {
        return Ok(None);
    };
    match value.trim().parse::<T>() {
        Ok(parsed) if parsed >= minimum => Ok(Some(parsed)),
        _ => Err(invalid(
            key,
            value,
            &format!("must be {what} of at least {minimum}"),
        )),
    }
}

pub(super) fn invalid(key: &str, value: &str, reason: &str) -> StorageError {
    StorageError::InvalidConfig {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Splits a `log.dirs` value: comma-separated, whitespace around entries ignored, empty
/// entries dropped, at least one required.
pub fn parse_log_dirs(key: &str, value: &str) -> Result<Vec<PathBuf>> {
    let dirs: Vec<PathBuf> = value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(PathBuf::from)
        .collect();
    if dirs.is_empty() {
        return Err(invalid(
            key,
            value,
            "at least one data directory is required",
        ));
    }
    Ok(dirs)
}

/// Background job periods, in milliseconds, and the minimum each accepts.
const INTERVAL_KEYS: &[&str] = &[
    "log.initial.task.delay.ms",
    "log.retention.check.interval.ms",
    "log.flush.offset.checkpoint.interval.ms",
    "log.flush.start.offset.checkpoint.interval.ms",
    "producer.id.expiration.ms",
    "producer.id.expiration.check.interval.ms",
];

/// Every broker key this module understands.
pub fn known_keys() -> impl Iterator<Item = &'static str> {
    DIRECT_SYNONYMS
        .iter()
        .map(|(broker, _)| *broker)
        .chain(
            TIMED_SYNONYMS
                .iter()
                .flat_map(|(_, variants)| variants.iter().map(|(key, _)| *key)),
        )
        .chain(INTERVAL_KEYS.iter().copied())
        .chain(CLEANER_KEYS.iter().copied())
        .chain(super::scrub_config::SCRUB_KEYS.iter().copied())
        .chain([
            "log.dirs",
            "log.dir",
            "num.recovery.threads.per.data.dir",
            "node.id",
            "broker.id",
            "ferrolog.log.dir.placement.policy",
            "ferrolog.recovery.salvage",
            "ferrolog.max.partitions",
            "ferrolog.max.open.sealed.segments",
            "ferrolog.max.producers.per.partition",
            "ferrolog.decompression.memory.bytes",
            "replica.alter.log.dirs.io.max.bytes.per.second",
        ])
}

impl ManagerConfig {
    /// Reads the keys this module knows from broker properties; other keys are left to the
    /// caller. Invalid values are errors naming the key.
    pub fn from_properties(properties: &BTreeMap<String, String>) -> Result<Self> {
        let mut config = Self::default();
        read_dirs_and_identity(&mut config, properties)?;
        read_limits(&mut config, properties)?;
        read_background(&mut config, properties)?;
        read_cleaner_and_log_defaults(&mut config, properties)?;
        super::scrub_config::read_scrub(&mut config.scrub, properties)?;
        Ok(config)
    }
}

/// `log.dirs`, recovery threads, the node id and the placement policy.
fn read_dirs_and_identity(
    config: &mut ManagerConfig,
    properties: &BTreeMap<String, String>,
) -> Result<()> {
    if let Some(value) = properties.get("log.dirs") {
        config.log_dirs = parse_log_dirs("log.dirs", value)?;
    } else if let Some(value) = properties.get("log.dir") {
        config.log_dirs = parse_log_dirs("log.dir", value)?;
    }
    if let Some(value) = at_least(
        properties,
        "num.recovery.threads.per.data.dir",
        1,
        "an integer",
    )? {
        config.recovery_threads_per_data_dir = value;
    }
    for key in ["node.id", "broker.id"] {
        if let Some(value) = properties.get(key) {
            let id = value
                .trim()
                .parse::<i32>()
                .ok()
                .filter(|id| *id >= 0)
                .ok_or_else(|| invalid(key, value, "must be a non-negative integer"))?;
            if config.node_id.is_some_and(|other| other != id) {
                return Err(invalid(key, value, "node.id and broker.id disagree"));
            }
            config.node_id = Some(id);
        }
    }
    if let Some(value) = properties.get("ferrolog.recovery.salvage") {
        config.salvage = match value.trim() {
            "true" => crate::log::Salvage::Recovery,
            "false" => crate::log::Salvage::Off,
            _ => {
                return Err(invalid(
                    "ferrolog.recovery.salvage",
                    value,
                    "expected true or false",
                ));
            }
        };
    }
    if let Some(value) = properties.get("ferrolog.log.dir.placement.policy") {
        config.placement = match value.trim() {
            "partition-count" => PlacementPolicy::FewestPartitions,
            "free-bytes" => PlacementPolicy::MostFreeBytes,
            _ => {
                return Err(invalid(
                    "ferrolog.log.dir.placement.policy",
                    value,
                    "expected partition-count or free-bytes",
                ));
            }
        };
    }
    Ok(())
}

/// ferrolog's own limits and the move throttle.
fn read_limits(config: &mut ManagerConfig, properties: &BTreeMap<String, String>) -> Result<()> {
    if let Some(value) = at_least(
        properties,
        "ferrolog.max.producers.per.partition",
        1,
        "an integer",
    )? {
        config.log_defaults.max_producers = value;
    }
    if let Some(value) = at_least(
        properties,
        "ferrolog.decompression.memory.bytes",
        1 << 20,
        "a number of bytes",
    )? {
        config.decompression_memory_bytes = value;
    }
    if let Some(value) = at_least(
        properties,
        "ferrolog.max.open.sealed.segments",
        1,
        "an integer",
    )? {
        config.max_open_sealed_segments = value;
    }
    if let Some(value) = at_least(properties, "ferrolog.max.partitions", 1, "an integer")? {
        config.max_partitions = value;
    }
    let move_rate_key = "replica.alter.log.dirs.io.max.bytes.per.second";
    if let Some(value) = properties.get(move_rate_key) {
        config.move_max_bytes_per_second = value
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|rate| *rate >= 1)
            // Kafka's default, Long.MAX_VALUE, is its way of saying unlimited.
            .map(|rate| {
                if rate == i64::MAX {
                    f64::MAX
                } else {
                    rate as f64
                }
            })
            .ok_or_else(|| invalid(move_rate_key, value, "must be an integer of at least 1"))?;
    }
    Ok(())
}

/// The intervals of the background tasks.
fn read_background(
    config: &mut ManagerConfig,
    properties: &BTreeMap<String, String>,
) -> Result<()> {
    for key in INTERVAL_KEYS {
        let Some(value) = properties.get(*key) else {
            continue;
        };
        let minimum = if *key == "log.initial.task.delay.ms" {
            0
        } else {
            1
        };
        let span = value
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|ms| *ms >= minimum)
            .map(crate::clock::millis)
            .ok_or_else(|| {
                invalid(
                    key,
                    value,
                    &format!("must be an integer of at least {minimum}"),
                )
            })?;
        let background = &mut config.background;
        match *key {
            "log.initial.task.delay.ms" => background.initial_delay = span,
            "log.retention.check.interval.ms" => background.retention_check_interval = span,
            "log.flush.offset.checkpoint.interval.ms" => {
                background.recovery_point_checkpoint_interval = span
            }
            "log.flush.start.offset.checkpoint.interval.ms" => {
                background.log_start_offset_checkpoint_interval = span
            }
            "producer.id.expiration.ms" => background.producer_id_expiration = span,
            _ => background.producer_id_expiration_check_interval = span,
        }
    }
    if let Some(value) = properties.get("log.flush.scheduler.interval.ms") {
        config.background.flush_check_interval = value
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|ms| *ms >= 1)
            .map(|ms| (ms != i64::MAX).then(|| crate::clock::millis(ms)))
            .ok_or_else(|| {
                invalid(
                    "log.flush.scheduler.interval.ms",
                    value,
                    "must be an integer of at least 1",
                )
            })?;
    }
    Ok(())
}

/// The cleaner's keys and the broker keys that set the topics' defaults.
fn read_cleaner_and_log_defaults(
    config: &mut ManagerConfig,
    properties: &BTreeMap<String, String>,
) -> Result<()> {
    config.cleaner = cleaner_config_from(&config.cleaner, properties)?;
    config.log_defaults = topic_defaults_from(&config.log_defaults, properties)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn log_dirs_are_split_trimmed_and_required() {
        let config = ManagerConfig::from_properties(&props(&[("log.dirs", " /a , ,/b,")])).unwrap();
        assert_eq!(
            config.log_dirs,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        let config = ManagerConfig::from_properties(&props(&[("log.dir", "/c")])).unwrap();
        assert_eq!(config.log_dirs, vec![PathBuf::from("/c")]);
        let error = ManagerConfig::from_properties(&props(&[("log.dirs", " , ")])).unwrap_err();
        assert!(error.to_string().contains("log.dirs"), "{error}");
    }

    #[test]
    fn broker_keys_set_topic_defaults_and_the_most_specific_unit_wins() {
        let config = ManagerConfig::from_properties(&props(&[
            ("log.retention.hours", "2"),
            ("log.retention.minutes", "30"),
            ("log.segment.bytes", "1048576"),
            ("log.roll.hours", "1"),
            ("log.cleanup.policy", "compact"),
        ]))
        .unwrap();
        assert_eq!(
            config.log_defaults.retention_age,
            Some(Duration::from_secs(30 * 60))
        );
        assert_eq!(config.log_defaults.segment_bytes, 1_048_576);
        assert_eq!(config.log_defaults.segment_age, Duration::from_secs(3_600));
        assert!(config.log_defaults.cleanup_policy.compact);
    }

    #[test]
    fn invalid_values_name_the_broker_key() {
        for (key, value) in [
            ("log.segment.bytes", "1"),
            ("log.segment.bytes", "1048575"),
            ("num.recovery.threads.per.data.dir", "0"),
            ("log.retention.hours", "soon"),
            ("node.id", "-3"),
            ("ferrolog.log.dir.placement.policy", "random"),
        ] {
            let error = ManagerConfig::from_properties(&props(&[(key, value)]))
                .unwrap_err()
                .to_string();
            assert!(error.contains(key), "{key}: {error}");
        }
    }
}
