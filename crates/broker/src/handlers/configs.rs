//! DescribeConfigs and IncrementalAlterConfigs for topics: every topic-level key ferrolog
//! supports with its effective value, and changes (SET, DELETE) validated by the storage's own
//! rules and applied to the live logs at once. Broker resources describe as empty and refuse
//! changes: broker settings come from `server.properties`.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{
    DescribeConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, RequestHeader,
};
use kafka_protocol::protocol::StrBytes;

use ferrolog_storage::config::TOPIC_CONFIG_KEYS;

use super::partitions_of;
use crate::{Context, errors};

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
/// Config sources, as Kafka numbers them.
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const DEFAULT_CONFIG: i8 = 5;
const SET: i8 = 0;
const DELETE: i8 = 1;

pub fn describe(
    context: &Context,
    _header: &RequestHeader,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let results = request
        .resources
        .into_iter()
        .map(|resource| {
            let name = resource.resource_name.to_string();
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            match resource.resource_type {
                TOPIC if !partitions_of(context, &name).is_empty() => {
                    let config = context.manager.topic_config(&name);
                    let overrides = context.manager.topic_overrides(&name);
                    let wanted = resource
                        .configuration_keys
                        .map(|keys| keys.iter().map(ToString::to_string).collect::<Vec<_>>());
                    let configs = TOPIC_CONFIG_KEYS
                        .iter()
                        .filter(|key| {
                            wanted
                                .as_ref()
                                .is_none_or(|wanted| wanted.iter().any(|w| w == *key))
                        })
                        .map(|key| {
                            DescribeConfigsResourceResult::default()
                                .with_name(StrBytes::from_static_str(key))
                                .with_value(config.get(key).map(StrBytes::from_string))
                                .with_config_source(if overrides.contains_key(*key) {
                                    DYNAMIC_TOPIC_CONFIG
                                } else {
                                    DEFAULT_CONFIG
                                })
                        })
                        .collect();
                    result.with_configs(configs)
                }
                TOPIC => result
                    .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                    .with_error_message(Some(StrBytes::from_string(format!(
                        "topic {name} does not exist"
                    )))),
                BROKER => result,
                other => result
                    .with_error_code(errors::INVALID_REQUEST)
                    .with_error_message(Some(StrBytes::from_string(format!(
                        "resource type {other} is not supported"
                    )))),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

pub fn incremental_alter(
    context: &Context,
    _header: &RequestHeader,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let responses = request
        .resources
        .into_iter()
        .map(|resource| {
            let name = resource.resource_name.to_string();
            let response = AlterConfigsResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            let outcome = alter_topic(
                context,
                &name,
                resource.resource_type,
                &resource.configs,
                request.validate_only,
            );
            match outcome {
                Ok(()) => response,
                Err((code, message)) => response
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
            }
        })
        .collect();
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

fn alter_topic(
    context: &Context,
    name: &str,
    resource_type: i8,
    changes: &[kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig],
    validate_only: bool,
) -> Result<(), (i16, String)> {
    if resource_type != TOPIC {
        return Err((
            errors::INVALID_REQUEST,
            "only topic configs can be changed at run time".into(),
        ));
    }
    if partitions_of(context, name).is_empty() {
        return Err((
            errors::UNKNOWN_TOPIC_OR_PARTITION,
            format!("topic {name} does not exist"),
        ));
    }
    let mut overrides: BTreeMap<String, String> = context.manager.topic_overrides(name);
    for change in changes {
        let key = change.name.to_string();
        match change.config_operation {
            SET => {
                let value = change
                    .value
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                overrides.insert(key, value);
            }
            DELETE => {
                overrides.remove(&key);
            }
            other => {
                return Err((
                    errors::INVALID_REQUEST,
                    format!("config operation {other} on {key} is not supported"),
                ));
            }
        }
    }
    let mut config = context.manager.config().log_defaults.clone();
    for (key, value) in &overrides {
        config
            .set(key, value)
            .map_err(|error| (errors::INVALID_CONFIG, error.to_string()))?;
    }
    if validate_only {
        return Ok(());
    }
    context
        .manager
        .set_topic_overrides(name, overrides)
        .map(|_| ())
        .map_err(|error| (errors::INVALID_CONFIG, error.to_string()))
}
