//! The connection limits changed at run time, as Kafka's `SocketServer` and its listeners'
//! `ListenerConnectionQuota`s take them: `max.connections`, `max.connections.per.ip`,
//! `max.connections.per.ip.overrides`, `max.connection.creation.rate`, and a listener's own
//! `listener.name.<l>.max.connections` and `listener.name.<l>.max.connection.creation.rate`
//! (at the cluster default too, as in Kafka). A listener without its own rate takes the
//! broker's, as Kafka's inherit it.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_auth::quotas::rate::Sampling;
use ferrolog_net::network::limits::{ConnectionLimits, listener_limit_key};
use ferrolog_net::network::live_limits::LiveLimits;

use super::{DynamicBrokerConfigs, Refused};

/// The limits no listener may be left with 0 of.
const BROKER_LIMITS: [&str; 2] = ["max.connections", "max.connection.creation.rate"];

impl DynamicBrokerConfigs {
    /// The connection limits the listeners hold to, from `base` (`server.properties`'s) and
    /// the values set at run time, with rates measured over `sampling`; made once, at the
    /// first call.
    pub fn live_limits(&self, base: &ConnectionLimits, sampling: Sampling) -> Arc<LiveLimits> {
        let (_, live) = self.connections.get_or_init(|| {
            let live = LiveLimits::new(base.clone(), sampling);
            (base.clone(), live)
        });
        self.publish_limits();
        Arc::clone(live)
    }

    /// Puts the connection limits in force, once installed.
    pub(super) fn publish_limits(&self) {
        let Some((base, live)) = self.connections.get() else {
            return;
        };
        match ConnectionLimits::from_properties(base, &self.merged(&self.values())) {
            Ok(limits) => live.set(limits),
            Err(error) => tracing::warn!(error, "connection limits set at run time are not used"),
        }
    }

    /// Refuses connection limits in `merged` (every value in force after a change) as Kafka
    /// refuses them, once the limits are installed.
    pub(super) fn check_limits(&self, merged: &BTreeMap<String, String>) -> Result<(), Refused> {
        let Some((base, live)) = self.connections.get() else {
            return Ok(());
        };
        check(merged, &live.listener_names())?;
        ConnectionLimits::from_properties(base, merged).map_err(Refused::request)?;
        Ok(())
    }
}

/// Kafka's checks, in its order: a value below 0 (its validator); then a served listener left
/// with 0 connections or 0 a second, its own value or the broker's it takes (its listener
/// quota's refusal, wrapped as Kafka wraps a reconfiguration's). Then ferrolog's own: a
/// per-listener key naming a listener not served here, which Kafka keeps without effect.
fn check(merged: &BTreeMap<String, String>, served: &[String]) -> Result<(), Refused> {
    let number = |key: &str| merged.get(key).and_then(|v| v.trim().parse::<i64>().ok());
    for (key, value) in merged {
        let base = listener_limit_key(key).map_or(key.as_str(), |(_, setting)| setting);
        if BROKER_LIMITS.contains(&base) && number(key).is_some_and(|n| n < 0) {
            return Err(Refused::request(format!(
                "Invalid value {value} for configuration {base}: Value must be at least 0"
            )));
        }
    }
    // Before any listener accepts, the broker's own values are checked: a name that names no
    // listener finds no per-listener key, and falls back to them.
    let listeners: Vec<&str> = if served.is_empty() {
        vec![""]
    } else {
        served.iter().map(String::as_str).collect()
    };
    for listener in listeners {
        for base in BROKER_LIMITS {
            let effective =
                number(&format!("listener.name.{listener}.{base}")).or_else(|| number(base));
            if effective == Some(0) {
                return Err(Refused::request(format!(
                    "Invalid value org.apache.kafka.common.config.ConfigException: Invalid {base} 0 for configuration Invalid dynamic configuration"
                )));
            }
        }
    }
    // Once the listeners accept (their names known).
    for key in merged.keys().filter(|_| !served.is_empty()) {
        if let Some((listener, _)) = listener_limit_key(key)
            && !served.iter().any(|name| name == listener)
        {
            return Err(Refused::request(format!(
                "{key} names listener {listener}, which is not served here (per-listener keys name it in lower case)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(pairs: &[(&str, &str)]) -> Option<String> {
        let merged = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        check(&merged, &["plaintext".to_owned(), "ssl".to_owned()])
            .err()
            .map(|refused| refused.message)
    }

    #[test]
    fn limits_are_refused_in_kafkas_words_and_order() {
        assert_eq!(
            refusal(&[("max.connection.creation.rate", "-1")]).unwrap(),
            "Invalid value -1 for configuration max.connection.creation.rate: Value must be at least 0"
        );
        assert_eq!(
            refusal(&[("listener.name.ssl.max.connections", "-1")]).unwrap(),
            "Invalid value -1 for configuration max.connections: Value must be at least 0"
        );
        assert_eq!(
            refusal(&[("listener.name.plaintext.max.connection.creation.rate", "0")]).unwrap(),
            "Invalid value org.apache.kafka.common.config.ConfigException: Invalid max.connection.creation.rate 0 for configuration Invalid dynamic configuration"
        );
        assert_eq!(
            refusal(&[("max.connections", "0")]).unwrap(),
            "Invalid value org.apache.kafka.common.config.ConfigException: Invalid max.connections 0 for configuration Invalid dynamic configuration"
        );
        assert!(
            refusal(&[("listener.name.PLAINTEXT.max.connections", "3")])
                .unwrap()
                .contains("names listener PLAINTEXT, which is not served here")
        );
        assert!(refusal(&[("listener.name.other.max.connections", "3")]).is_some());
    }

    #[test]
    fn a_broker_rate_of_zero_is_taken_when_every_listener_has_its_own() {
        assert!(refusal(&[("max.connection.creation.rate", "0")]).is_some());
        assert_eq!(
            refusal(&[
                ("max.connection.creation.rate", "0"),
                ("listener.name.plaintext.max.connection.creation.rate", "5"),
                ("listener.name.ssl.max.connection.creation.rate", "5"),
            ]),
            None
        );
        assert_eq!(
            refusal(&[
                ("max.connection.creation.rate", "5"),
                ("listener.name.plaintext.max.connections", "3"),
            ]),
            None
        );
    }
}
