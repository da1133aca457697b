//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics: every topic-level key
//! ferrolog supports with its effective value, and changes validated by the storage's own rules,
//! kept across restarts and applied to the live logs at once (`topic_configs.rs`: a topic's
//! description, and IncrementalAlterConfigs' SET, DELETE, APPEND and SUBTRACT); the older
//! AlterConfigs replaces them all, as Kafka does (keys it does not name go back to their
//! defaults). Broker resources are `broker_configs.rs`'s.
//!
//! Each resource is authorized as Kafka does, before anything else about it: DESCRIBE_CONFIGS
//! (describe) or ALTER_CONFIGS (changes) on the topic or group, or on the cluster for broker
//! resources; denied, it answers TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED. GROUP resources
//! carry a group's own configs (`group_configs.rs`).

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, alter_configs_response,
};
use kafka_protocol::protocol::StrBytes;

use super::{
    broker_configs, broker_loggers, client_metrics_configs, group_configs, internal_topics,
    partitions_of, topic_configs,
};
use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};
use crate::{Context, errors};

/// Config resource types, as Kafka numbers them.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;
/// IncrementalAlterConfigs' DELETE operation, as Kafka numbers it.
const DELETE: i8 = 1;

pub fn describe(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    // Synonyms exist from v1.
    let synonyms_wanted = asked.version() >= 1 && request.include_synonyms;
    let mut seen = std::collections::HashSet::new();
    let results = request
        .resources
        .into_iter()
        .map(|resource| {
            let name = resource.resource_name.to_string();
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            // A resource named again is not described again: each answer lists every config,
            // and a request repeating a name must not multiply it.
            if !seen.insert((resource.resource_type, name.clone())) {
                return result
                    .with_error_code(errors::INVALID_REQUEST)
                    .with_error_message(Some(StrBytes::from_string(format!(
                        "resource {name} is named more than once"
                    ))));
            }
            if let Some((code, message)) = denied(
                context,
                asked,
                AclOperation::DescribeConfigs,
                resource.resource_type,
                &name,
            ) {
                return result
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_static_str(message)));
            }
            match resource.resource_type {
                TOPIC if !partitions_of(context, &name).is_empty() => topic_configs::describe(
                    context,
                    result,
                    &name,
                    resource.configuration_keys,
                    synonyms_wanted,
                ),
                TOPIC => result
                    .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                    .with_error_message(Some(StrBytes::from_string(format!(
                        "topic {name} does not exist"
                    )))),
                BROKER => broker_configs::describe(
                    context,
                    result,
                    &name,
                    resource.configuration_keys.as_deref(),
                    synonyms_wanted,
                ),
                BROKER_LOGGER => broker_loggers::describe(
                    context,
                    result,
                    &name,
                    resource.configuration_keys.as_deref(),
                    asked.version(),
                ),
                GROUP => group_configs::describe(
                    context,
                    result,
                    &name,
                    resource.configuration_keys.as_deref(),
                    (synonyms_wanted, request.include_documentation),
                ),
                CLIENT_METRICS => client_metrics_configs::describe(
                    context,
                    result,
                    &name,
                    resource.configuration_keys.as_deref(),
                    synonyms_wanted,
                ),
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
    asked: &Asked<'_>,
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
            let outcome = if resource.resource_type == BROKER {
                match denied(context, asked, AclOperation::AlterConfigs, BROKER, &name) {
                    Some((code, message)) => Err((code, message.to_owned())),
                    None => broker_configs::alter(
                        context,
                        &name,
                        &resource.configs,
                        request.validate_only,
                    ),
                }
            } else if resource.resource_type == BROKER_LOGGER {
                match denied(
                    context,
                    asked,
                    AclOperation::AlterConfigs,
                    BROKER_LOGGER,
                    &name,
                ) {
                    Some((code, message)) => Err((code, message.to_owned())),
                    None => broker_loggers::alter(
                        context,
                        &name,
                        &resource.configs,
                        request.validate_only,
                    ),
                }
            } else if resource.resource_type == GROUP {
                alter_group(context, asked, &name, request.validate_only, || {
                    group_configs::incremental(&resource.configs)
                })
            } else if resource.resource_type == CLIENT_METRICS {
                alter_client_metrics(context, asked, &name, || {
                    client_metrics_configs::incremental(
                        context,
                        &name,
                        &resource.configs,
                        request.validate_only,
                    )
                })
            } else {
                // Checked before anything else about the resource, as Kafka's preprocessing does.
                refuse_repeats_and_nulls(&resource.configs).and_then(|()| {
                    alter_topic(
                        context,
                        asked,
                        &name,
                        resource.resource_type,
                        request.validate_only,
                        |overrides| topic_configs::apply_incremental(overrides, &resource.configs),
                    )
                })
            };
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

/// The legacy AlterConfigs: each resource's configs become the topic's whole set of overrides.
pub fn alter(
    context: &Context,
    asked: &Asked<'_>,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let responses = request
        .resources
        .into_iter()
        .map(|resource| {
            let name = resource.resource_name.to_string();
            let response = alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            let replacement: BTreeMap<String, String> = resource
                .configs
                .iter()
                .map(|config| {
                    let value = config.value.as_ref().map(ToString::to_string);
                    (config.name.to_string(), value.unwrap_or_default())
                })
                .collect();
            let outcome = if resource.resource_type == BROKER {
                match denied(context, asked, AclOperation::AlterConfigs, BROKER, &name) {
                    Some((code, message)) => Err((code, message.to_owned())),
                    None => {
                        broker_configs::replace(context, &name, &replacement, request.validate_only)
                    }
                }
            } else if resource.resource_type == BROKER_LOGGER {
                // As Kafka: the legacy API does not know the type.
                Err((
                    errors::INVALID_REQUEST,
                    "Unknown resource type 8".to_owned(),
                ))
            } else if resource.resource_type == GROUP {
                alter_group(context, asked, &name, request.validate_only, || {
                    Ok(group_configs::replacement(replacement))
                })
            } else if resource.resource_type == CLIENT_METRICS {
                alter_client_metrics(context, asked, &name, || {
                    client_metrics_configs::replace(
                        context,
                        &name,
                        replacement,
                        request.validate_only,
                    )
                })
            } else {
                alter_topic(
                    context,
                    asked,
                    &name,
                    resource.resource_type,
                    request.validate_only,
                    |_current| Ok(replacement),
                )
            };
            match outcome {
                Ok(()) => response,
                Err((code, message)) => response
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
            }
        })
        .collect();
    AlterConfigsResponse::default().with_responses(responses)
}

type Refusal = (i16, String);

/// Kafka's check of a config resource: the cluster's `operation` for broker-wide resources
/// (BROKER, BROKER_LOGGER, CLIENT_METRICS), the topic's or the group's for theirs; the error
/// code and Kafka's message when denied. Other types are refused later for what they are.
fn denied(
    _context: &Context,
    asked: &Asked<'_>,
    operation: AclOperation,
    resource_type: i8,
    name: &str,
) -> Option<(i16, &'static str)> {
    let (allowed, refusal) = match resource_type {
        BROKER | BROKER_LOGGER | CLIENT_METRICS => (
            asked.may_on_cluster(operation),
            (
                errors::CLUSTER_AUTHORIZATION_FAILED,
                crate::errors::CLUSTER_REFUSED,
            ),
        ),
        TOPIC => (
            asked.may(operation, ResourceType::Topic, name),
            (
                errors::TOPIC_AUTHORIZATION_FAILED,
                "Topic authorization failed.",
            ),
        ),
        GROUP => (
            asked.may(operation, ResourceType::Group, name),
            (
                errors::GROUP_AUTHORIZATION_FAILED,
                "Group authorization failed.",
            ),
        ),
        _ => (true, (errors::NONE, "")),
    };
    (!allowed).then_some(refusal)
}

/// Authorizes the change of a client-metrics subscription (ALTER_CONFIGS on the cluster), then
/// makes it.
fn alter_client_metrics(
    context: &Context,
    asked: &Asked<'_>,
    name: &str,
    alteration: impl FnOnce() -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    match denied(
        context,
        asked,
        AclOperation::AlterConfigs,
        CLIENT_METRICS,
        name,
    ) {
        Some((code, message)) => Err((code, message.to_owned())),
        None => alteration(),
    }
}

/// IncrementalAlterConfigs' refusals of a resource's whole list of changes before any is
/// looked at, with Kafka's messages: a key named twice, a SET (or APPEND, SUBTRACT) without a
/// value.
pub(super) fn refuse_repeats_and_nulls(
    changes: &[kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig],
) -> Result<(), Refusal> {
    let mut names = std::collections::HashSet::new();
    if !changes
        .iter()
        .all(|change| names.insert(change.name.as_str()))
    {
        return Err((
            errors::INVALID_REQUEST,
            "Error due to duplicate config keys".to_owned(),
        ));
    }
    let unset: Vec<&str> = changes
        .iter()
        .filter(|change| change.config_operation != DELETE && change.value.is_none())
        .map(|change| change.name.as_str())
        .collect();
    if !unset.is_empty() {
        return Err((
            errors::INVALID_REQUEST,
            format!("Null value not supported for : {}", unset.join(", ")),
        ));
    }
    Ok(())
}

/// Authorizes the change of a group's configs (ALTER_CONFIGS on the group), then makes it.
fn alter_group(
    context: &Context,
    asked: &Asked<'_>,
    name: &str,
    validate_only: bool,
    alteration: impl FnOnce() -> Result<ferrolog_coordinator::group::group_configs::Alteration, Refusal>,
) -> Result<(), Refusal> {
    if let Some((code, message)) = denied(context, asked, AclOperation::AlterConfigs, GROUP, name) {
        return Err((code, message.to_owned()));
    }
    group_configs::alter(context, name, alteration()?, validate_only)
}

/// Authorizes the change of a resource's configs, then computes a topic's new overrides from its
/// current ones, validates them, and (unless `validate_only`) stores and applies them.
fn alter_topic(
    context: &Context,
    asked: &Asked<'_>,
    name: &str,
    resource_type: i8,
    validate_only: bool,
    change: impl FnOnce(BTreeMap<String, String>) -> Result<BTreeMap<String, String>, Refusal>,
) -> Result<(), Refusal> {
    if let Some((code, message)) = denied(
        context,
        asked,
        AclOperation::AlterConfigs,
        resource_type,
        name,
    ) {
        return Err((code, message.to_owned()));
    }
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
    let current = context.manager.topic_configs().overrides(name);
    let overrides = change(current.clone())?;
    // Only what this request sets is held to Kafka's minimums: a value kept from before (an
    // internal topic's own segment size, say) does not stop other changes.
    for (key, value) in &overrides {
        if current.get(key) != Some(value) {
            super::kafka_minimum(key, value)?;
        }
    }
    if let Some(refusal) = internal_topics::config_refusal(name, &overrides) {
        return Err(refusal);
    }
    context
        .manager
        .topic_configs()
        .validate(name, &overrides)
        .map_err(|error| (errors::INVALID_CONFIG, error.to_string()))?;
    if validate_only {
        return Ok(());
    }
    context
        .manager
        .topic_configs()
        .set(name, overrides)
        .map(|_| ())
        .map_err(|error| (errors::INVALID_CONFIG, error.to_string()))
}

/// The requests the authorization tests probe these APIs with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{
        AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
        alter_configs_request,
    };

    use crate::probes::{Probed, text};

    impl Probed for DescribeConfigsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = DescribeConfigsRequest::default().with_resources(vec![
                DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(text(topic)),
            ]);
            (4, request)
        }
    }

    impl Probed for AlterConfigsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = AlterConfigsRequest::default()
                .with_validate_only(true)
                .with_resources(vec![
                    alter_configs_request::AlterConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(text(topic)),
                ]);
            (2, request)
        }
    }

    impl Probed for IncrementalAlterConfigsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = IncrementalAlterConfigsRequest::default()
                .with_validate_only(true)
                .with_resources(vec![
                    AlterConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(text(topic))
                        .with_configs(vec![
                            AlterableConfig::default()
                                .with_name(text("retention.ms"))
                                .with_value(Some(text("60000"))),
                        ]),
                ]);
            (1, request)
        }
    }
}
