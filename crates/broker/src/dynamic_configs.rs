//! Broker configs changed at run time through IncrementalAlterConfigs on a BROKER resource, as
//! Kafka's dynamic broker configs: a value for this broker (resource name = its node id) wins
//! over the cluster-wide default (empty name), and both over `server.properties`. The keys are
//! the replication throttles `kafka-reassign-partitions` sets and clears:
//! `replica.alter.log.dirs.io.max.bytes.per.second` limits moves between data directories; the
//! leader and follower replication rates are taken and kept but limit nothing on a single node,
//! which has no replication. ferrolog adds `ferrolog.scrub.bytes.per.second`, the scrubber's
//! rate (0 pauses it). Values live until the broker stops (Kafka keeps them in its metadata
//! log).

use std::collections::BTreeMap;

use parking_lot::Mutex;

/// Bytes per second copied into future logs, over every move.
pub const MOVE_RATE: &str = "replica.alter.log.dirs.io.max.bytes.per.second";
/// Bytes per second the scrubber re-reads sealed segments at (0 pauses it).
pub const SCRUB_RATE: &str = "ferrolog.scrub.bytes.per.second";
/// The keys that may change at run time.
pub const DYNAMIC_BROKER_KEYS: &[&str] = &[
    MOVE_RATE,
    SCRUB_RATE,
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
];

/// Whose value a change sets: this broker's, or every broker's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Resource name: this broker's node id.
    Broker,
    /// Resource name: empty.
    ClusterDefault,
}

/// One change of an IncrementalAlterConfigs resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// SET `key` to the value.
    Set(String, String),
    /// DELETE `key`.
    Delete(String),
}

/// The dynamic values, by scope and key.
#[derive(Debug, Default)]
pub struct DynamicBrokerConfigs {
    values: Mutex<BTreeMap<(Scope, String), String>>,
}

impl DynamicBrokerConfigs {
    /// Checks every change, then (unless `validate_only`) applies them all. Refused as Kafka
    /// refuses a key that cannot change at run time or a value out of range (INVALID_CONFIG,
    /// with the reason).
    pub fn apply(
        &self,
        scope: Scope,
        changes: &[Change],
        validate_only: bool,
    ) -> Result<(), String> {
        for change in changes {
            let key = match change {
                Change::Set(key, _) | Change::Delete(key) => key,
            };
            if !DYNAMIC_BROKER_KEYS.contains(&key.as_str()) {
                return Err(format!(
                    "{key} cannot be changed at run time; these can: {}",
                    DYNAMIC_BROKER_KEYS.join(", ")
                ));
            }
            if let Change::Set(_, value) = change {
                parse_rate(key, value)?;
            }
        }
        if validate_only {
            return Ok(());
        }
        let mut values = self.values.lock();
        for change in changes {
            match change {
                Change::Set(key, value) => {
                    values.insert((scope, key.clone()), value.trim().to_owned());
                }
                Change::Delete(key) => {
                    values.remove(&(scope, key.clone()));
                }
            }
        }
        Ok(())
    }

    /// The rate in force for `key`: this broker's value, else the cluster default, else none
    /// (the configured one applies).
    pub fn rate(&self, key: &str) -> Option<f64> {
        let values = self.values.lock();
        [Scope::Broker, Scope::ClusterDefault]
            .iter()
            .find_map(|scope| values.get(&(*scope, key.to_owned())))
            .and_then(|value| parse_rate(key, value).ok())
    }
}

/// A rate in bytes per second: an integer of at least 0, as Kafka's (0 copies nothing).
fn parse_rate(key: &str, value: &str) -> Result<f64, String> {
    value
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|rate| *rate >= 0)
        .map(|rate| rate as f64)
        .ok_or_else(|| {
            format!("invalid value {value:?} for {key}: must be an integer of at least 0")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_broker_value_wins_over_the_default_and_deleting_it_uncovers_the_default() {
        let configs = DynamicBrokerConfigs::default();
        assert_eq!(configs.rate(MOVE_RATE), None);
        configs
            .apply(
                Scope::ClusterDefault,
                &[Change::Set(MOVE_RATE.into(), "1000".into())],
                false,
            )
            .unwrap();
        configs
            .apply(
                Scope::Broker,
                &[Change::Set(MOVE_RATE.into(), "50".into())],
                false,
            )
            .unwrap();
        assert_eq!(configs.rate(MOVE_RATE), Some(50.0));
        configs
            .apply(Scope::Broker, &[Change::Delete(MOVE_RATE.into())], false)
            .unwrap();
        assert_eq!(configs.rate(MOVE_RATE), Some(1000.0));
    }

    #[test]
    fn other_keys_bad_values_and_validate_only_change_nothing() {
        let configs = DynamicBrokerConfigs::default();
        let bad = [
            Change::Set("log.retention.ms".into(), "1".into()),
            Change::Set(MOVE_RATE.into(), "-1".into()),
            Change::Set(MOVE_RATE.into(), "fast".into()),
        ];
        for change in bad {
            assert!(
                configs
                    .apply(Scope::Broker, std::slice::from_ref(&change), false)
                    .is_err(),
                "{change:?}"
            );
        }
        configs
            .apply(
                Scope::Broker,
                &[Change::Set(MOVE_RATE.into(), "7".into())],
                true,
            )
            .unwrap();
        assert_eq!(configs.rate(MOVE_RATE), None);
    }
}
