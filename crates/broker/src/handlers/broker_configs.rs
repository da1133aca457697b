//! DescribeConfigs, IncrementalAlterConfigs and AlterConfigs on BROKER resources: this broker
//! (named by its node id) or the cluster-wide default (empty name), as Kafka answers them (see
//! `dynamic_configs` for what may change and how it is kept). ALTER_CONFIGS or
//! DESCRIBE_CONFIGS on the cluster is checked by the caller.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
use kafka_protocol::protocol::StrBytes;

use super::salvage_request;
use crate::dynamic_configs::describe::{Described, Synonym};
use crate::dynamic_configs::{Change, Scope};
use crate::{Context, errors};

type Refusal = (i16, String);

/// IncrementalAlterConfigs' operations, as Kafka numbers them.
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

/// The settings of the broker resource `name`: every one for this broker, the values set for
/// the cluster default; `keys` (when given and not empty) picks some by name.
pub(super) fn describe(
    context: &Context,
    result: DescribeConfigsResult,
    name: &str,
    keys: Option<&[StrBytes]>,
    synonyms_wanted: bool,
) -> DescribeConfigsResult {
    let described = if name.is_empty() {
        context.dynamic_configs.describe_cluster_default()
    } else {
        match name.parse::<i32>() {
            Ok(id) if id == context.manager.node_id() => context.dynamic_configs.describe_broker(),
            Ok(_) => {
                return refused(
                    result,
                    format!(
                        "Unexpected broker id, expected {} or empty string, but received {name}",
                        context.manager.node_id()
                    ),
                );
            }
            Err(_) => {
                return refused(
                    result,
                    format!("Broker id must be an integer, but it is: {name}"),
                );
            }
        }
    };
    let configs = described
        .into_iter()
        .filter(|entry| {
            keys.is_none_or(|keys| keys.is_empty() || keys.iter().any(|key| **key == *entry.name))
        })
        .map(|entry| entry_of(entry, synonyms_wanted))
        .collect();
    result
        .with_error_message(Some(StrBytes::default()))
        .with_configs(configs)
}

fn refused(result: DescribeConfigsResult, message: String) -> DescribeConfigsResult {
    result
        .with_error_code(errors::INVALID_REQUEST)
        .with_error_message(Some(StrBytes::from_string(message)))
}

fn entry_of(entry: Described, synonyms_wanted: bool) -> DescribeConfigsResourceResult {
    let synonyms = if synonyms_wanted {
        entry.synonyms.into_iter().map(synonym_of).collect()
    } else {
        Vec::new()
    };
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(entry.name))
        .with_value(entry.value.map(StrBytes::from_string))
        .with_config_source(entry.source as i8)
        .with_read_only(entry.read_only)
        .with_is_sensitive(entry.sensitive)
        .with_config_type(entry.kind.map_or(0, |kind| kind as i8))
        .with_synonyms(synonyms)
}

/// A synonym as DescribeConfigs carries it.
pub(super) fn synonym_of(synonym: Synonym) -> DescribeConfigsSynonym {
    DescribeConfigsSynonym::default()
        .with_name(StrBytes::from_string(synonym.name))
        .with_value(synonym.value.map(StrBytes::from_string))
        .with_source(synonym.source as i8)
}

/// The scope the resource `name` stands for: this broker (its node id) or the default; another
/// id is refused with Kafka's message.
fn scope_of(context: &Context, name: &str) -> Result<Scope, Refusal> {
    if name.is_empty() {
        return Ok(Scope::ClusterDefault);
    }
    let node_id = context.manager.node_id();
    match name.parse::<i32>() {
        Ok(id) if id == node_id => Ok(Scope::Broker),
        Ok(_) => Err((
            errors::INVALID_REQUEST,
            format!("Unexpected broker id, expected {node_id}, but received {name}"),
        )),
        Err(_) => Err((
            errors::INVALID_REQUEST,
            format!("Node id must be an integer, but it is: {name}"),
        )),
    }
}

/// IncrementalAlterConfigs on the broker resource `name`. `ferrolog.salvage.partitions` is a
/// request acted on at once (`salvage_request`), not a value kept.
pub(super) fn alter(
    context: &Context,
    name: &str,
    changes: &[AlterableConfig],
    validate_only: bool,
) -> Result<(), Refusal> {
    let scope = scope_of(context, name)?;
    let mut kept = Vec::new();
    let mut salvage = None;
    for change in changes {
        let key = change.name.to_string();
        let value = change.value.as_ref().map(ToString::to_string);
        if key == salvage_request::SALVAGE_PARTITIONS && change.config_operation == SET {
            salvage = Some(value.unwrap_or_default());
            continue;
        }
        kept.push(match (change.config_operation, value) {
            (DELETE, _) => Change::Delete(key),
            (SET, Some(value)) => Change::Set(key, value),
            (APPEND, Some(value)) => Change::Append(key, value),
            (SUBTRACT, Some(value)) => Change::Subtract(key, value),
            (SET | APPEND | SUBTRACT, None) => {
                return Err((
                    errors::INVALID_REQUEST,
                    format!("Null value not supported for : {key}"),
                ));
            }
            (other, _) => {
                return Err((
                    errors::INVALID_REQUEST,
                    format!("Unknown config operation {other} for {key}"),
                ));
            }
        });
    }
    let configs = &context.dynamic_configs;
    let refusal = |refused: crate::dynamic_configs::Refused| (refused.code, refused.message);
    // The whole request is checked before a salvage it asks for is done.
    configs.apply(scope, &kept, true).map_err(refusal)?;
    if let Some(partitions) = salvage {
        salvage_request::salvage(context, &partitions, validate_only)?;
    }
    configs.apply(scope, &kept, validate_only).map_err(refusal)
}

/// The legacy AlterConfigs on the broker resource `name`: its values become exactly the ones
/// given, as Kafka replaces them.
pub(super) fn replace(
    context: &Context,
    name: &str,
    replacement: &std::collections::BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), Refusal> {
    let scope = scope_of(context, name)?;
    context
        .dynamic_configs
        .replace(scope, replacement, validate_only)
        .map_err(|refused| (refused.code, refused.message))
}
