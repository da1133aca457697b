//! A topic's configs: DescribeConfigs of a topic (every topic-level key ferrolog supports, with
//! its value in force, Kafka's type, its source and synonyms) and IncrementalAlterConfigs'
//! changes of a topic's overrides, SET, DELETE, APPEND and SUBTRACT, as Kafka's
//! `ConfigAdminManager` makes them.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
use kafka_protocol::protocol::StrBytes;

use ferrolog_storage::config::TOPIC_CONFIG_KEYS;

use super::broker_configs;
use crate::dynamic_configs::{Kind, changed_list};
use crate::{Context, errors};

type Refusal = (i16, String);

/// Config sources and operations, as Kafka numbers them.
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const DEFAULT_CONFIG: i8 = 5;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

/// Kafka's type of a topic-level key (`LogConfig`'s definitions); `None` for a key this does
/// not know (described with type UNKNOWN).
pub fn config_type(key: &str) -> Option<Kind> {
    let kind = match key {
        "segment.bytes" | "segment.index.bytes" | "index.interval.bytes" | "max.message.bytes" => {
            Kind::Int
        }
        "segment.ms"
        | "segment.jitter.ms"
        | "flush.messages"
        | "flush.ms"
        | "retention.bytes"
        | "retention.ms"
        | "message.timestamp.before.max.ms"
        | "message.timestamp.after.max.ms"
        | "file.delete.delay.ms"
        | "delete.retention.ms"
        | "min.compaction.lag.ms"
        | "max.compaction.lag.ms" => Kind::Long,
        "cleanup.policy" => Kind::List,
        "message.timestamp.type" | "compression.type" => Kind::String,
        "preallocate" => Kind::Boolean,
        "min.cleanable.dirty.ratio" => Kind::Double,
        _ => return None,
    };
    Some(kind)
}

/// The value a list key starts from when the topic does not set it: Kafka's default of the
/// topic-level key (not the broker's setting).
fn list_default(key: &str) -> &'static str {
    match key {
        "cleanup.policy" => "delete",
        _ => "",
    }
}

/// A topic's configs (those `keys` names, or all), each with its source: its own override, a
/// broker setting of the key's default (dynamic or from `server.properties`), or the default.
pub(super) fn describe(
    context: &Context,
    result: DescribeConfigsResult,
    name: &str,
    keys: Option<Vec<StrBytes>>,
    synonyms_wanted: bool,
) -> DescribeConfigsResult {
    let config = context.manager.topic_configs().config(name);
    let overrides = context.manager.topic_configs().overrides(name);
    let wanted = keys.map(|keys| keys.iter().map(ToString::to_string).collect::<Vec<_>>());
    let configs = TOPIC_CONFIG_KEYS
        .iter()
        .filter(|key| {
            wanted
                .as_ref()
                .is_none_or(|wanted| wanted.iter().any(|w| w == *key))
        })
        .map(|key| {
            let value = config.get(key).map(StrBytes::from_string);
            // As Kafka: the topic's own value, then the broker's synonyms of the key.
            let own = overrides.contains_key(*key).then(|| {
                DescribeConfigsSynonym::default()
                    .with_name(StrBytes::from_static_str(key))
                    .with_value(value.clone())
                    .with_source(DYNAMIC_TOPIC_CONFIG)
            });
            let broker = context.dynamic_configs.topic_synonyms(key);
            let synonyms: Vec<DescribeConfigsSynonym> = own
                .into_iter()
                .chain(broker.into_iter().map(broker_configs::synonym_of))
                .collect();
            let source = synonyms
                .first()
                .map_or(DEFAULT_CONFIG, |first| first.source);
            DescribeConfigsResourceResult::default()
                .with_name(StrBytes::from_static_str(key))
                .with_value(value)
                .with_config_source(source)
                .with_config_type(config_type(key).map_or(0, |kind| kind as i8))
                .with_synonyms(if synonyms_wanted {
                    synonyms
                } else {
                    Vec::new()
                })
        })
        .collect();
    result.with_configs(configs)
}

/// `overrides` with `changes` made in order, as Kafka makes them: APPEND adds the items not
/// there yet to the topic's own list (or the key's default), SUBTRACT takes items out of it;
/// both only on list keys (`INVALID_CONFIG` otherwise, in Kafka's words,
/// which differ from a broker config's).
pub(super) fn apply_incremental(
    mut overrides: BTreeMap<String, String>,
    changes: &[AlterableConfig],
) -> Result<BTreeMap<String, String>, Refusal> {
    for change in changes {
        let key = change.name.to_string();
        let value = change
            .value
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let operation = change.config_operation;
        if matches!(operation, APPEND | SUBTRACT) && config_type(&key) != Some(Kind::List) {
            let verb = if operation == APPEND {
                "APPEND"
            } else {
                "SUBTRACT"
            };
            return Err((
                errors::INVALID_CONFIG,
                format!("Can't {verb} to key {key} because its type is not LIST."),
            ));
        }
        match operation {
            SET => {
                overrides.insert(key, value);
            }
            DELETE => {
                overrides.remove(&key);
            }
            APPEND | SUBTRACT => {
                let current = overrides
                    .get(&key)
                    .map_or(list_default(&key), String::as_str);
                let list = changed_list(current, &value, operation == APPEND);
                overrides.insert(key, list);
            }
            other => {
                return Err((
                    errors::INVALID_REQUEST,
                    format!("config operation {other} on {key} is not supported"),
                ));
            }
        }
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(key: &str, operation: i8, value: &str) -> AlterableConfig {
        AlterableConfig::default()
            .with_name(StrBytes::from_string(key.to_owned()))
            .with_config_operation(operation)
            .with_value(Some(StrBytes::from_string(value.to_owned())))
    }

    fn policy(overrides: &BTreeMap<String, String>) -> Option<&str> {
        overrides.get("cleanup.policy").map(String::as_str)
    }

    #[test]
    fn lists_are_appended_to_and_subtracted_from_as_kafka_does() {
        // Unset: APPEND starts from the key's default.
        let appended = apply_incremental(
            BTreeMap::new(),
            &[change("cleanup.policy", APPEND, "compact")],
        )
        .unwrap();
        assert_eq!(policy(&appended), Some("delete,compact"));
        // An item already there is not added twice; SUBTRACT may leave the list empty.
        let again =
            apply_incremental(appended, &[change("cleanup.policy", APPEND, "delete")]).unwrap();
        assert_eq!(policy(&again), Some("delete,compact"));
        let emptied = apply_incremental(
            again,
            &[change("cleanup.policy", SUBTRACT, "delete,compact")],
        )
        .unwrap();
        assert_eq!(policy(&emptied), Some(""));
        // Unset: SUBTRACT starts from the key's default too.
        let subtracted = apply_incremental(
            BTreeMap::new(),
            &[change("cleanup.policy", SUBTRACT, "compact")],
        )
        .unwrap();
        assert_eq!(policy(&subtracted), Some("delete"));
    }

    #[test]
    fn only_lists_take_append_and_subtract() {
        let refused = apply_incremental(BTreeMap::new(), &[change("segment.bytes", APPEND, "1")])
            .unwrap_err();
        assert_eq!(
            refused,
            (
                errors::INVALID_CONFIG,
                "Can't APPEND to key segment.bytes because its type is not LIST.".to_owned()
            )
        );
        let refused = apply_incremental(BTreeMap::new(), &[change("retention.ms", SUBTRACT, "1")])
            .unwrap_err();
        assert_eq!(refused.0, errors::INVALID_CONFIG);
    }

    #[test]
    fn every_topic_key_has_kafkas_type() {
        for key in TOPIC_CONFIG_KEYS {
            assert!(config_type(key).is_some(), "{key} has no type");
        }
        assert_eq!(config_type("segment.bytes"), Some(Kind::Int));
        assert_eq!(config_type("retention.ms"), Some(Kind::Long));
        assert_eq!(config_type("cleanup.policy"), Some(Kind::List));
        assert_eq!(config_type("min.cleanable.dirty.ratio"), Some(Kind::Double));
        assert_eq!(config_type("preallocate"), Some(Kind::Boolean));
        assert_eq!(config_type("compression.type"), Some(Kind::String));
    }
}
