//! The broker keys that set the topics' defaults (`log.retention.hours` for `retention.ms`,
//! `message.max.bytes` for `max.message.bytes`, ...), as Kafka's `ServerTopicConfigSynonyms`
//! pairs them, and deriving the defaults from them.

use std::collections::BTreeMap;

use super::config::invalid;
use crate::config::LogConfig;
use crate::error::{Result, StorageError};

/// Broker keys that set a topic-level default directly: (broker key, topic key).
pub(super) const DIRECT_SYNONYMS: &[(&str, &str)] = &[
    ("log.segment.bytes", "segment.bytes"),
    ("log.retention.bytes", "retention.bytes"),
    ("log.cleanup.policy", "cleanup.policy"),
    ("log.index.size.max.bytes", "segment.index.bytes"),
    ("log.index.interval.bytes", "index.interval.bytes"),
    ("log.flush.interval.messages", "flush.messages"),
    ("log.segment.delete.delay.ms", "file.delete.delay.ms"),
    ("log.preallocate", "preallocate"),
    ("message.max.bytes", "max.message.bytes"),
    ("log.message.timestamp.type", "message.timestamp.type"),
    (
        "log.message.timestamp.before.max.ms",
        "message.timestamp.before.max.ms",
    ),
    (
        "log.message.timestamp.after.max.ms",
        "message.timestamp.after.max.ms",
    ),
    ("compression.type", "compression.type"),
    (
        "log.cleaner.min.cleanable.ratio",
        "min.cleanable.dirty.ratio",
    ),
    ("log.cleaner.delete.retention.ms", "delete.retention.ms"),
    ("log.cleaner.min.compaction.lag.ms", "min.compaction.lag.ms"),
    ("log.cleaner.max.compaction.lag.ms", "max.compaction.lag.ms"),
];

/// Broker keys with unit variants, most specific first: (topic key, [(broker key, ms per unit)]).
pub(super) const TIMED_SYNONYMS: &[(&str, &[(&str, i64)])] = &[
    (
        "segment.ms",
        &[("log.roll.ms", 1), ("log.roll.hours", 3_600_000)],
    ),
    (
        "segment.jitter.ms",
        &[
            ("log.roll.jitter.ms", 1),
            ("log.roll.jitter.hours", 3_600_000),
        ],
    ),
    (
        "retention.ms",
        &[
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000),
        ],
    ),
    (
        "flush.ms",
        &[
            ("log.flush.interval.ms", 1),
            ("log.flush.scheduler.interval.ms", 1),
        ],
    ),
];

/// `base` with the topic defaults the broker keys in `properties` set (`log.retention.hours`,
/// `message.max.bytes`, ...), as Kafka derives them: of a key's unit variants the most
/// specific set wins (`log.retention.ms` over `log.retention.minutes` over
/// `log.retention.hours`), wherever each was set. Errors name the broker key.
pub fn topic_defaults_from(
    base: &LogConfig,
    properties: &BTreeMap<String, String>,
) -> Result<LogConfig> {
    let mut defaults = base.clone();
    for (broker_key, topic_key) in DIRECT_SYNONYMS {
        if let Some(value) = properties.get(*broker_key) {
            LogConfig::check_kafka_minimums(topic_key, value)
                .and_then(|()| defaults.set(topic_key, value))
                .map_err(|error| rename_key(error, broker_key))?;
        }
    }
    for (topic_key, variants) in TIMED_SYNONYMS {
        if let Some((broker_key, unit_ms, value)) = variants
            .iter()
            .find_map(|(key, unit)| properties.get(*key).map(|value| (*key, *unit, value)))
        {
            let amount: i64 = value
                .trim()
                .parse()
                .map_err(|_| invalid(broker_key, value, "not an integer"))?;
            let ms = if amount < 0 {
                amount
            } else {
                amount.saturating_mul(unit_ms)
            };
            defaults
                .set(topic_key, &ms.to_string())
                .map_err(|error| rename_key(error, broker_key))?;
        }
    }
    Ok(defaults)
}

/// The broker keys that set `topic_key`'s default, most specific first (Kafka's synonyms of
/// a topic config: `retention.ms` has `log.retention.ms`, `log.retention.minutes` and
/// `log.retention.hours`); empty for a key no broker key sets.
pub fn broker_synonyms(topic_key: &str) -> Vec<&'static str> {
    let direct = DIRECT_SYNONYMS
        .iter()
        .filter(|(_, topic)| *topic == topic_key)
        .map(|(broker, _)| *broker);
    let timed = TIMED_SYNONYMS
        .iter()
        .filter(|(topic, _)| *topic == topic_key)
        .flat_map(|(_, variants)| variants.iter().map(|(broker, _)| *broker));
    direct.chain(timed).collect()
}

/// Whether the broker key `broker_key` sets a topic's default.
pub fn sets_topic_default(broker_key: &str) -> bool {
    DIRECT_SYNONYMS
        .iter()
        .any(|(broker, _)| *broker == broker_key)
        || TIMED_SYNONYMS
            .iter()
            .any(|(_, variants)| variants.iter().any(|(broker, _)| *broker == broker_key))
}

/// Reports a topic-key validation error under the broker key the user wrote.
fn rename_key(error: StorageError, broker_key: &str) -> StorageError {
    match error {
        StorageError::InvalidConfig { value, reason, .. } => StorageError::InvalidConfig {
            key: broker_key.to_owned(),
            value,
            reason,
        },
        other => other,
    }
}
