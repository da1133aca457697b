//! The share groups' keys of the group configs (Kafka 4.4's `share.*` group configs): their
//! checks, with Kafka's messages; what a share group runs with (its own values clamped to the
//! broker's current bounds, else the broker's `group.share.*` settings); and how DescribeConfigs
//! shows them. The dead-letter queue's keys are not served (see docs/operations.md).

use std::collections::BTreeMap;

use super::rules::{
    DEFAULT_CONFIG, DescribedGroupConfig, GROUP_CONFIG, GroupConfigKey, STATIC_BROKER_CONFIG,
};
use crate::group::share::ShareGroupConfig;

pub const SESSION_TIMEOUT: &str = "share.session.timeout.ms";
pub const HEARTBEAT_INTERVAL: &str = "share.heartbeat.interval.ms";
pub const ASSIGNMENT_INTERVAL: &str = "share.assignment.interval.ms";
pub const LOCK_DURATION: &str = "share.record.lock.duration.ms";
pub const DELIVERY_COUNT_LIMIT: &str = "share.delivery.count.limit";
pub const MAX_RECORD_LOCKS: &str = "share.partition.max.record.locks";
pub const AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";
pub const ISOLATION_LEVEL: &str = "share.isolation.level";
pub const RENEW_ENABLE: &str = "share.renew.acknowledge.enable";

/// DescribeConfigs' types.
const BOOLEAN: i8 = 1;
const STRING: i8 = 2;
const INT: i8 = 3;

const fn key(
    name: &'static str,
    broker_key: &'static str,
    config_type: i8,
    documentation: &'static str,
) -> GroupConfigKey {
    GroupConfigKey {
        name,
        broker_key,
        documentation,
        config_type,
    }
}

/// The keys, in name order, with the broker setting each overrides (itself when the broker has
/// none).
pub const SHARE_KEYS: [GroupConfigKey; 9] = [
    key(
        ASSIGNMENT_INTERVAL,
        "group.share.assignment.interval.ms",
        INT,
        "The interval between assignment updates for a share group.",
    ),
    key(
        AUTO_OFFSET_RESET,
        AUTO_OFFSET_RESET,
        STRING,
        "The strategy to initialize the share-partition start offset.",
    ),
    key(
        DELIVERY_COUNT_LIMIT,
        "group.share.delivery.count.limit",
        INT,
        "The maximum number of delivery attempts for a record delivered to a share group.",
    ),
    key(
        HEARTBEAT_INTERVAL,
        "group.share.heartbeat.interval.ms",
        INT,
        "The heartbeat interval given to the members of a share group.",
    ),
    key(
        ISOLATION_LEVEL,
        ISOLATION_LEVEL,
        STRING,
        "Controls how to read records written transactionally.",
    ),
    key(
        MAX_RECORD_LOCKS,
        "group.share.partition.max.record.locks",
        INT,
        "Share-group record lock limit per share-partition.",
    ),
    key(
        LOCK_DURATION,
        "group.share.record.lock.duration.ms",
        INT,
        "The record acquisition lock duration in milliseconds for share groups.",
    ),
    key(
        RENEW_ENABLE,
        RENEW_ENABLE,
        BOOLEAN,
        "Whether the renew acknowledge type is enabled for the share group.",
    ),
    key(
        SESSION_TIMEOUT,
        "group.share.session.timeout.ms",
        INT,
        "The timeout to detect client failures when using the share group protocol.",
    ),
];

/// An integer key's least value by Kafka's definition, its broker bounds, the broker's value
/// and Kafka's default.
fn int_rules(name: &str, broker: &ShareGroupConfig) -> Option<(i32, (i32, i32), i32, i32)> {
    let b = &broker.bounds;
    Some(match name {
        SESSION_TIMEOUT => (1, b.session, broker.session_timeout_ms, 45_000),
        HEARTBEAT_INTERVAL => (1, b.heartbeat, broker.heartbeat_interval_ms, 5_000),
        ASSIGNMENT_INTERVAL => (
            0,
            b.assignment,
            i32::try_from(broker.assignment_interval_ms).unwrap_or(i32::MAX),
            1_000,
        ),
        LOCK_DURATION => (
            1_000,
            b.lock_duration,
            broker.record_lock_duration_ms,
            30_000,
        ),
        DELIVERY_COUNT_LIMIT => (
            2,
            b.delivery_count,
            i32::from(broker.delivery_count_limit),
            5,
        ),
        MAX_RECORD_LOCKS => (
            100,
            b.record_locks,
            i32::try_from(broker.partition_max_record_locks).unwrap_or(i32::MAX),
            2_000,
        ),
        _ => return None,
    })
}

/// Kafka's `share.auto.offset.reset`: earliest, latest, or `by_duration:` an ISO-8601 duration.
pub fn parse_offset_reset(value: &str) -> Option<OffsetReset> {
    match value.trim().to_ascii_lowercase().as_str() {
        "earliest" => Some(OffsetReset::Earliest),
        "latest" => Some(OffsetReset::Latest),
        other => other
            .strip_prefix("by_duration:")
            .and_then(parse_duration_ms)
            .map(OffsetReset::ByDuration),
    }
}

/// Where a share partition without a start offset starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    Earliest,
    Latest,
    /// The first record no older than this many milliseconds.
    ByDuration(i64),
}

/// An ISO-8601 duration as Java's `Duration.parse` reads it (`PnDTnHnMn.nS`), non-negative.
fn parse_duration_ms(text: &str) -> Option<i64> {
    let text = text.strip_prefix('p')?;
    let (days, time) = match text.split_once('t') {
        Some((days, time)) => (days, time),
        None => (text, ""),
    };
    let mut millis: f64 = 0.0;
    if !days.is_empty() {
        millis += days.strip_suffix('d')?.parse::<f64>().ok()? * 86_400_000.0;
    }
    let mut rest = time;
    for (unit, scale) in [('h', 3_600_000.0), ('m', 60_000.0), ('s', 1_000.0)] {
        if let Some((number, after)) = rest.split_once(unit) {
            millis += number.parse::<f64>().ok()? * scale;
            rest = after;
        }
    }
    (rest.is_empty() && (!days.is_empty() || !time.is_empty()) && millis >= 0.0)
        .then_some(millis as i64)
}

/// Checks the share keys among a group's values, as Kafka's `GroupConfig.validate` does.
pub fn validate(
    values: &BTreeMap<String, String>,
    broker: &ShareGroupConfig,
) -> Result<(), String> {
    let mut ints = BTreeMap::new();
    for (name, raw) in values {
        if let Some((least, (min, max), _, _)) = int_rules(name, broker) {
            let value: i32 = raw.trim().parse().map_err(|_| {
                format!("Invalid value {raw} for configuration {name}: Not a number of type INT")
            })?;
            if value < least {
                return Err(format!(
                    "Invalid value {raw} for configuration {name}: Value must be at least {least}"
                ));
            }
            if value < min || value > max {
                return Err(format!(
                    "{name} must be in the range {min} to {max} inclusive."
                ));
            }
            ints.insert(name.as_str(), value);
        }
    }
    if let Some(raw) = values.get(AUTO_OFFSET_RESET)
        && parse_offset_reset(raw).is_none()
    {
        return Err(format!(
            "Invalid value {raw} for configuration {AUTO_OFFSET_RESET}: Invalid value `{raw}` for configuration {AUTO_OFFSET_RESET}. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
        ));
    }
    if let Some(raw) = values.get(ISOLATION_LEVEL)
        && !matches!(raw.trim(), "read_committed" | "read_uncommitted")
    {
        return Err(format!(
            "Invalid value {raw} for configuration {ISOLATION_LEVEL}: String must be one of: read_committed, read_uncommitted"
        ));
    }
    if let Some(raw) = values.get(RENEW_ENABLE)
        && !matches!(raw.trim().to_ascii_lowercase().as_str(), "true" | "false")
    {
        return Err(format!(
            "Invalid value {raw} for configuration {RENEW_ENABLE}: Expected value to be either true or false"
        ));
    }
    let (session, heartbeat) = (ints.get(SESSION_TIMEOUT), ints.get(HEARTBEAT_INTERVAL));
    if (session.is_some() || heartbeat.is_some())
        && *session.unwrap_or(&broker.session_timeout_ms)
            <= *heartbeat.unwrap_or(&broker.heartbeat_interval_ms)
    {
        return Err(format!(
            "{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}"
        ));
    }
    Ok(())
}

/// What a share group runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareGroupSettings {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub assignment_interval_ms: i64,
    pub lock_duration_ms: i32,
    pub delivery_count_limit: i16,
    pub max_record_locks: i32,
    pub offset_reset: OffsetReset,
    pub read_committed: bool,
    pub renew_enabled: bool,
}

/// A share group's own values (clamped to the broker's bounds), else the broker's settings.
pub fn settings(
    values: Option<&BTreeMap<String, String>>,
    broker: &ShareGroupConfig,
) -> ShareGroupSettings {
    let own = |name: &str| {
        values
            .and_then(|values| values.get(name))
            .map(|raw| raw.trim())
    };
    let int = |name: &str| {
        let (_, (min, max), setting, _) = int_rules(name, broker).unwrap_or((0, (0, 0), 0, 0));
        own(name)
            .and_then(|raw| raw.parse::<i32>().ok())
            .map_or(setting, |v| v.clamp(min, max.max(min)))
    };
    ShareGroupSettings {
        session_timeout_ms: int(SESSION_TIMEOUT),
        heartbeat_interval_ms: int(HEARTBEAT_INTERVAL),
        assignment_interval_ms: i64::from(int(ASSIGNMENT_INTERVAL)),
        lock_duration_ms: int(LOCK_DURATION),
        delivery_count_limit: i16::try_from(int(DELIVERY_COUNT_LIMIT)).unwrap_or(i16::MAX),
        max_record_locks: int(MAX_RECORD_LOCKS),
        offset_reset: own(AUTO_OFFSET_RESET)
            .and_then(parse_offset_reset)
            .unwrap_or(OffsetReset::Latest),
        read_committed: own(ISOLATION_LEVEL) == Some("read_committed"),
        renew_enabled: own(RENEW_ENABLE).is_none_or(|raw| !raw.eq_ignore_ascii_case("false")),
    }
}

/// The share keys as DescribeConfigs shows them for a group with the stored `values`.
pub fn describe(
    values: Option<&BTreeMap<String, String>>,
    broker: &ShareGroupConfig,
) -> Vec<DescribedGroupConfig> {
    SHARE_KEYS
        .iter()
        .map(|key| {
            let mut synonyms = Vec::new();
            if let Some(own) = values.and_then(|values| values.get(key.name)) {
                synonyms.push((key.name, own.clone(), GROUP_CONFIG));
            }
            let default = match int_rules(key.name, broker) {
                Some((_, _, setting, default)) => {
                    if broker.set_in_properties.iter().any(|k| k == key.broker_key) {
                        synonyms.push((key.broker_key, setting.to_string(), STATIC_BROKER_CONFIG));
                    }
                    default.to_string()
                }
                None => match key.name {
                    AUTO_OFFSET_RESET => "latest".to_owned(),
                    ISOLATION_LEVEL => "read_uncommitted".to_owned(),
                    _ => "true".to_owned(),
                },
            };
            synonyms.push((key.broker_key, default, DEFAULT_CONFIG));
            let (value, source) = (synonyms[0].1.clone(), synonyms[0].2);
            DescribedGroupConfig {
                key: *key,
                value,
                source,
                synonyms,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_java_reads_them() {
        assert_eq!(
            parse_offset_reset("by_duration:PT1H"),
            Some(OffsetReset::ByDuration(3_600_000))
        );
        assert_eq!(
            parse_offset_reset("by_duration:P1DT30M"),
            Some(OffsetReset::ByDuration(88_200_000))
        );
        assert_eq!(
            parse_offset_reset("by_duration:PT0.5S"),
            Some(OffsetReset::ByDuration(500))
        );
        assert_eq!(parse_offset_reset("EARLIEST"), Some(OffsetReset::Earliest));
        assert_eq!(parse_offset_reset("by_duration:1H"), None);
        assert_eq!(parse_offset_reset("by_duration:P"), None);
        assert_eq!(parse_offset_reset("by_duration:PT-1S"), None);
        assert_eq!(parse_offset_reset("none"), None);
    }

    #[test]
    fn kafka_s_checks_and_messages() {
        let broker = ShareGroupConfig::default();
        let one = |key: &str, value: &str| {
            validate(
                &BTreeMap::from([(key.to_owned(), value.to_owned())]),
                &broker,
            )
        };
        assert_eq!(
            one(SESSION_TIMEOUT, "40000"),
            Err(
                "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."
                    .to_owned()
            )
        );
        assert_eq!(one(LOCK_DURATION, "500"), Err("Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000".to_owned()));
        assert!(
            one(AUTO_OFFSET_RESET, "none")
                .unwrap_err()
                .contains("'by_duration:<PnDTnHnMn.nS>'")
        );
        assert!(one(ISOLATION_LEVEL, "read_committed").is_ok());
        assert!(one(ISOLATION_LEVEL, "serializable").is_err());
        assert!(one(DELIVERY_COUNT_LIMIT, "10").is_ok());
        assert!(one(DELIVERY_COUNT_LIMIT, "11").is_err());
        let clamped = settings(
            Some(&BTreeMap::from([(
                AUTO_OFFSET_RESET.to_owned(),
                "earliest".to_owned(),
            )])),
            &broker,
        );
        assert_eq!(
            (clamped.offset_reset, clamped.lock_duration_ms),
            (OffsetReset::Earliest, 30_000)
        );
    }
}
