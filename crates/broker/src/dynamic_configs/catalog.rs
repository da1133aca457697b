//! What the broker knows of each of its keys: Kafka's type, the default in force when the key
//! is not set (both as DescribeConfigs shows them; the table is `catalog_table.rs`), whether
//! ferrolog changes it at run time, and Kafka's synonyms between broker keys.

use super::catalog_table::BROKER_KEYS;

/// Kafka's `ConfigDef.Type`, numbered as DescribeConfigs' `config_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Boolean = 1,
    String = 2,
    Int = 3,
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    Class = 8,
    Password = 9,
}

impl Kind {
    /// Kafka's name of the type, as its parse errors give it.
    fn name(self) -> &'static str {
        match self {
            Self::Boolean => "BOOLEAN",
            Self::String => "STRING",
            Self::Int => "INT",
            Self::Short => "SHORT",
            Self::Long => "LONG",
            Self::Double => "DOUBLE",
            Self::List => "LIST",
            Self::Class => "CLASS",
            Self::Password => "PASSWORD",
        }
    }
}

/// One broker key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerKey {
    pub name: &'static str,
    pub kind: Kind,
    /// The value in force when the key is not set; `None` where Kafka shows null.
    pub default: Option<&'static str>,
}

impl BrokerKey {
    pub const fn new(name: &'static str, kind: Kind, default: Option<&'static str>) -> Self {
        Self {
            name,
            kind,
            default,
        }
    }

    /// Whether DescribeConfigs hides the value, as Kafka hides its passwords.
    pub fn is_sensitive(&self) -> bool {
        self.kind == Kind::Password
    }
}

/// Every broker key, by name.
pub fn all() -> &'static [BrokerKey] {
    BROKER_KEYS
}

/// The key `name`, or for a listener's own key (`listener.name.<l>.ssl.keystore.location`)
/// the key it stands for.
pub fn key(name: &str) -> Option<&'static BrokerKey> {
    let base = listener_base(name).unwrap_or(name);
    BROKER_KEYS
        .binary_search_by(|key| key.name.cmp(base))
        .ok()
        .map(|index| &BROKER_KEYS[index])
}

/// The key a listener's own key stands for: `ssl.keystore.location` for
/// `listener.name.external.ssl.keystore.location`.
pub fn listener_base(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("listener.name.")?;
    let (listener, base) = rest.split_once('.')?;
    (!listener.is_empty() && !base.is_empty()).then_some(base)
}

/// The broker keys ferrolog changes at run time: the topics' defaults (the first of each
/// topic key's synonyms, as in Kafka: `log.retention.ms`, not `log.retention.hours`), the
/// cleaner's threads, buffer and rate, the connection limits, and the throttles.
pub const DYNAMIC_KEYS: &[&str] = &[
    "compression.type",
    "ferrolog.scrub.bytes.per.second",
    "follower.replication.throttled.rate",
    "leader.replication.throttled.rate",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.threads",
    "log.cleanup.policy",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.message.timestamp.after.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.type",
    "log.preallocate",
    "log.retention.bytes",
    "log.retention.ms",
    "log.roll.jitter.ms",
    "log.roll.ms",
    "log.segment.bytes",
    "log.segment.delete.delay.ms",
    "max.connection.creation.rate",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "message.max.bytes",
    "replica.alter.log.dirs.io.max.bytes.per.second",
];

/// The throttles Kafka keeps only as dynamic configs: listed when set, typed LONG.
pub const THROTTLE_KEYS: &[&str] = &[
    "follower.replication.throttled.rate",
    "leader.replication.throttled.rate",
];

/// Keys Kafka lists only when they are set: its internal ones, and the authorizer's (which
/// Kafka's broker does not define, so it gives them no type and hides their values).
pub const LISTED_WHEN_SET: &[&str] = &[
    "allow.everyone.if.no.acl.found",
    "log.initial.task.delay.ms",
    "producer.id.expiration.check.interval.ms",
    "super.users",
];

/// The authorizer's keys, of no type Kafka's broker knows.
pub const UNTYPED: &[&str] = &["allow.everyone.if.no.acl.found", "super.users"];

/// Whether `name` may change at run time (Kafka's test is on the exact name: a synonym of a
/// dynamic key is not dynamic itself), a listener's own connection limits included.
pub fn is_dynamic(name: &str) -> bool {
    DYNAMIC_KEYS.contains(&name)
        || ferrolog_net::network::limits::listener_limit_key(name).is_some()
}

/// Kafka's synonyms of a broker key, the key itself first: the unit variants of the retention,
/// roll and flush periods, and for a listener's own key the key it stands for.
pub fn synonyms(name: &str) -> Vec<String> {
    const GROUPS: &[&[&str]] = &[
        &["log.roll.ms", "log.roll.hours"],
        &["log.roll.jitter.ms", "log.roll.jitter.hours"],
        &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
        &[
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
        ],
    ];
    if let Some(base) = listener_base(name) {
        return vec![name.to_owned(), base.to_owned()];
    }
    match GROUPS.iter().find(|group| group.contains(&name)) {
        Some(group) => group.iter().map(|key| (*key).to_owned()).collect(),
        None => vec![name.to_owned()],
    }
}

/// Checks `value` against `key`'s type as Kafka parses it; the refusal is Kafka's message.
pub fn check_type(key: &BrokerKey, name: &str, value: &str) -> Result<(), String> {
    let text = value.trim();
    let parses = match key.kind {
        Kind::Boolean => text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false"),
        Kind::Int => text.parse::<i32>().is_ok(),
        Kind::Short => text.parse::<i16>().is_ok(),
        Kind::Long => text.parse::<i64>().is_ok(),
        Kind::Double => text.parse::<f64>().is_ok_and(f64::is_finite),
        Kind::String | Kind::List | Kind::Class | Kind::Password => true,
    };
    if parses {
        return Ok(());
    }
    let expected = match key.kind {
        Kind::Boolean => "Expected value to be either true or false".to_owned(),
        kind => format!("Not a number of type {}", kind.name()),
    };
    Err(format!(
        "Invalid value {value} for configuration {name}: {expected}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_without_repeats_and_every_dynamic_key_is_in_it() {
        for pair in BROKER_KEYS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} then {}",
                pair[0].name,
                pair[1].name
            );
        }
        for name in DYNAMIC_KEYS {
            assert!(
                key(name).is_some() || THROTTLE_KEYS.contains(name),
                "{name} is not in the table"
            );
        }
    }

    #[test]
    fn listener_keys_stand_for_their_base_key_and_units_are_synonyms() {
        let own = "listener.name.external.ssl.keystore.location";
        assert_eq!(key(own).map(|key| key.name), Some("ssl.keystore.location"));
        assert_eq!(synonyms(own), [own, "ssl.keystore.location"]);
        assert_eq!(
            synonyms("log.retention.hours"),
            [
                "log.retention.ms",
                "log.retention.minutes",
                "log.retention.hours"
            ]
        );
        assert_eq!(synonyms("log.segment.bytes"), ["log.segment.bytes"]);
        assert!(key("listener.name..x").is_none());
    }

    #[test]
    fn values_are_checked_against_kafkas_types_with_kafkas_message() {
        let retention = key("log.retention.ms").unwrap();
        assert_eq!(
            check_type(retention, "log.retention.ms", "abc").unwrap_err(),
            "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"
        );
        assert!(check_type(retention, "log.retention.ms", "-1").is_ok());
        let preallocate = key("log.preallocate").unwrap();
        assert!(check_type(preallocate, "log.preallocate", "TRUE").is_ok());
        assert!(check_type(preallocate, "log.preallocate", "yes").is_err());
    }
}
