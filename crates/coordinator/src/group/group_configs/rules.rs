//! The rules of dynamic group configs, as pure functions of a group's stored values and the
//! broker's settings: which keys exist, how a group's whole set is checked before a change is
//! taken (Kafka's `GroupConfig.validate`: each message is Kafka's), what a consumer group
//! actually runs with (values clamped to the broker's current bounds, as Kafka's
//! `GroupConfig.evaluate`), and how DescribeConfigs shows each key.

use std::collections::BTreeMap;

use crate::group::consumer::ConsumerGroupConfig;

/// One group config key and the broker setting it overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupConfigKey {
    pub name: &'static str,
    /// The `group.consumer.*` setting whose value applies when the group sets none.
    pub broker_key: &'static str,
    /// Kafka's documentation of the key.
    pub documentation: &'static str,
    /// DescribeConfigs' type of its values (3: INT, 2: STRING, 1: BOOLEAN).
    pub config_type: i8,
}

pub const SESSION_TIMEOUT: &str = "consumer.session.timeout.ms";
pub const HEARTBEAT_INTERVAL: &str = "consumer.heartbeat.interval.ms";
pub const ASSIGNMENT_INTERVAL: &str = "consumer.assignment.interval.ms";

/// The consumer groups' keys, in the order Kafka 4.4's DescribeConfigs lists them (the share
/// groups' are in `share_rules`). Kafka's `streams.*` and `errors.deadletterqueue.*` keys are
/// refused as unknown (see docs/operations.md).
pub const GROUP_CONFIG_KEYS: [GroupConfigKey; 3] = [
    GroupConfigKey {
        name: SESSION_TIMEOUT,
        broker_key: "group.consumer.session.timeout.ms",
        documentation: "The timeout to detect client failures when using the consumer group protocol.",
        config_type: 3,
    },
    GroupConfigKey {
        name: ASSIGNMENT_INTERVAL,
        broker_key: "group.consumer.assignment.interval.ms",
        documentation: "The interval between assignment updates for a consumer group.",
        config_type: 3,
    },
    GroupConfigKey {
        name: HEARTBEAT_INTERVAL,
        broker_key: "group.consumer.heartbeat.interval.ms",
        documentation: "The heartbeat interval given to the members of a consumer group.",
        config_type: 3,
    },
];

/// Config sources, as DescribeConfigs numbers them.
pub const STATIC_BROKER_CONFIG: i8 = 4;
pub const DEFAULT_CONFIG: i8 = 5;
pub const GROUP_CONFIG: i8 = 8;

/// The timing a consumer group runs with: its own values where it set them, clamped to the
/// broker's bounds, and the broker's settings elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerTiming {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub assignment_interval_ms: i64,
}

/// The bounds and defaults of one key under `broker`: (min, max, broker value, Kafka default).
fn bounds(key: &str, broker: &ConsumerGroupConfig) -> (i32, i32, i32, i32) {
    let b = &broker.bounds;
    match key {
        SESSION_TIMEOUT => (b.session.0, b.session.1, broker.session_timeout_ms, 45_000),
        HEARTBEAT_INTERVAL => (
            b.heartbeat.0,
            b.heartbeat.1,
            broker.heartbeat_interval_ms,
            5_000,
        ),
        _ => (
            b.assignment.0,
            b.assignment.1,
            i32::try_from(broker.assignment_interval_ms).unwrap_or(i32::MAX),
            1_000,
        ),
    }
}

/// The least value Kafka's definition of `key` allows, whatever the broker's bounds.
fn at_least(key: &str) -> i32 {
    if key == ASSIGNMENT_INTERVAL { 0 } else { 1 }
}

/// Checks a group's whole set of values after a change, as Kafka does: unknown keys, values
/// that are not integers or are below the key's least, values outside the broker's bounds,
/// and a session no longer than the heartbeat interval. The error is Kafka's message (all are
/// INVALID_CONFIG).
pub fn validate(
    values: &BTreeMap<String, String>,
    broker: &ConsumerGroupConfig,
) -> Result<(), String> {
    let known = |key: &str| {
        GROUP_CONFIG_KEYS
            .iter()
            .chain(&super::share_rules::SHARE_KEYS)
            .any(|k| k.name == key)
    };
    if let Some(unknown) = values.keys().find(|key| !known(key)) {
        return Err(format!("Unknown group config name: {unknown}"));
    }
    let mut parsed = BTreeMap::new();
    for key in [SESSION_TIMEOUT, HEARTBEAT_INTERVAL, ASSIGNMENT_INTERVAL] {
        let Some(raw) = values.get(key) else {
            continue;
        };
        let value: i32 = raw.trim().parse().map_err(|_| {
            format!("Invalid value {raw} for configuration {key}: Not a number of type INT")
        })?;
        if value < at_least(key) {
            return Err(format!(
                "Invalid value {raw} for configuration {key}: Value must be at least {}",
                at_least(key)
            ));
        }
        parsed.insert(key, value);
    }
    for key in [HEARTBEAT_INTERVAL, SESSION_TIMEOUT, ASSIGNMENT_INTERVAL] {
        let (min, max, _, _) = bounds(key, broker);
        if let Some(value) = parsed.get(key)
            && (*value < min || *value > max)
        {
            return Err(format!(
                "{key} must be in the range {min} to {max} inclusive."
            ));
        }
    }
    let session = parsed.get(SESSION_TIMEOUT).copied();
    let heartbeat = parsed.get(HEARTBEAT_INTERVAL).copied();
    if (session.is_some() || heartbeat.is_some())
        && session.unwrap_or(broker.session_timeout_ms)
            <= heartbeat.unwrap_or(broker.heartbeat_interval_ms)
    {
        return Err(format!(
            "{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}"
        ));
    }
    Ok(())
}

/// What a consumer group runs with: each value it set (one that no longer parses, which
/// validation keeps out, counts as unset), clamped to the broker's current bounds, else the
/// broker's setting.
pub fn consumer_timing(
    values: Option<&BTreeMap<String, String>>,
    broker: &ConsumerGroupConfig,
) -> ConsumerTiming {
    let value = |key: &str| {
        let (min, max, setting, _) = bounds(key, broker);
        values
            .and_then(|values| values.get(key))
            .and_then(|raw| raw.trim().parse::<i32>().ok())
            .map_or(setting, |own| own.clamp(min, max.max(min)))
    };
    ConsumerTiming {
        session_timeout_ms: value(SESSION_TIMEOUT),
        heartbeat_interval_ms: value(HEARTBEAT_INTERVAL),
        assignment_interval_ms: i64::from(value(ASSIGNMENT_INTERVAL)),
    }
}

/// One key as DescribeConfigs shows it for a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroupConfig {
    pub key: GroupConfigKey,
    pub value: String,
    /// GROUP_CONFIG when the group set it, else where the broker's value comes from.
    pub source: i8,
    /// (name, value, source), most specific first: the group's own value, the broker's
    /// setting from `server.properties`, Kafka's default.
    pub synonyms: Vec<(&'static str, String, i8)>,
}

/// Every key for a group with the stored `values` (as stored, unclamped, as Kafka shows them).
pub fn describe(
    values: Option<&BTreeMap<String, String>>,
    broker: &ConsumerGroupConfig,
) -> Vec<DescribedGroupConfig> {
    GROUP_CONFIG_KEYS
        .iter()
        .map(|key| {
            let (_, _, setting, default) = bounds(key.name, broker);
            let mut synonyms = Vec::new();
            let own = values.and_then(|values| values.get(key.name));
            if let Some(own) = own {
                let shown = own
                    .trim()
                    .parse::<i32>()
                    .map_or(own.clone(), |v| v.to_string());
                synonyms.push((key.name, shown, GROUP_CONFIG));
            }
            if broker.set_in_properties.iter().any(|k| k == key.broker_key) {
                synonyms.push((key.broker_key, setting.to_string(), STATIC_BROKER_CONFIG));
            }
            synonyms.push((key.broker_key, default.to_string(), DEFAULT_CONFIG));
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
