//! DescribeConfigs, IncrementalAlterConfigs and AlterConfigs on GROUP resources: a group's own
//! config values, kept by the group coordinator (`ferrolog_coordinator::group::group_configs`),
//! answered as Kafka 4.4 answers them. The group need not exist; an empty name is Kafka's
//! "default group", which it refuses.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
use kafka_protocol::protocol::StrBytes;

use ferrolog_coordinator::group::group_configs::{Alteration, Refusal};

use crate::{Context, errors};

/// `result` filled for the group `name`: every key (or those of `wanted`), with synonyms and
/// documentation when asked for.
pub(super) fn describe(
    context: &Context,
    result: DescribeConfigsResult,
    name: &str,
    wanted: Option<&[StrBytes]>,
    (synonyms_wanted, documentation_wanted): (bool, bool),
) -> DescribeConfigsResult {
    if name.is_empty() {
        return result
            .with_error_code(errors::INVALID_REQUEST)
            .with_error_message(Some(StrBytes::from_static_str(
                "Group name must not be empty",
            )));
    }
    let groups = &context.groups;
    let configs = groups
        .group_configs()
        .describe(name, groups.broker_group_settings())
        .into_iter()
        .filter(|described| {
            wanted.is_none_or(|wanted| {
                wanted.is_empty() || wanted.iter().any(|key| key.as_str() == described.key.name)
            })
        })
        .map(|described| {
            let synonyms = if synonyms_wanted {
                described
                    .synonyms
                    .iter()
                    .map(|(name, value, source)| {
                        DescribeConfigsSynonym::default()
                            .with_name(StrBytes::from_static_str(name))
                            .with_value(Some(StrBytes::from_string(value.clone())))
                            .with_source(*source)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            DescribeConfigsResourceResult::default()
                .with_name(StrBytes::from_static_str(described.key.name))
                .with_value(Some(StrBytes::from_string(described.value)))
                .with_config_source(described.source)
                .with_config_type(described.key.config_type)
                .with_synonyms(synonyms)
                .with_documentation(
                    documentation_wanted
                        .then(|| StrBytes::from_static_str(described.key.documentation)),
                )
        })
        .collect();
    result
        .with_error_message(Some(StrBytes::default()))
        .with_configs(configs)
}

/// IncrementalAlterConfigs' changes as an alteration: SET and DELETE; APPEND and SUBTRACT
/// apply to no group key (none is a list), as Kafka answers. A key named twice, or a SET
/// without a value, is refused first, with Kafka's messages.
pub(super) fn incremental(changes: &[AlterableConfig]) -> Result<Alteration, (i16, String)> {
    super::configs::refuse_repeats_and_nulls(changes)?;
    let mut alteration = Vec::new();
    for change in changes {
        let key = change.name.to_string();
        let value = change.value.as_ref().map(ToString::to_string);
        match change.config_operation {
            0 => alteration.push((key, Some(value.unwrap_or_default()))),
            1 => alteration.push((key, None)),
            2 | 3 => {
                let operation = if change.config_operation == 2 {
                    "APPEND"
                } else {
                    "SUBTRACT"
                };
                return Err((
                    errors::INVALID_CONFIG,
                    format!("Can't {operation} to key {key} because its type is not LIST."),
                ));
            }
            other => {
                return Err((
                    errors::INVALID_REQUEST,
                    format!(
                        "config operation {other} on {key} is not one of SET, DELETE, APPEND, SUBTRACT"
                    ),
                ));
            }
        }
    }
    Ok(Alteration::Incremental(alteration))
}

/// AlterConfigs' whole set as an alteration.
pub(super) fn replacement(configs: BTreeMap<String, String>) -> Alteration {
    Alteration::Replace(configs)
}

/// Applies `alteration` to the group `name` (authorized by the caller).
pub(super) fn alter(
    context: &Context,
    name: &str,
    alteration: Alteration,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    if name.is_empty() {
        return Err((
            errors::INVALID_REQUEST,
            "Default group resources are not allowed.".to_owned(),
        ));
    }
    context
        .groups
        .alter_group_configs(name, alteration, validate_only)
        .map_err(|refusal| match refusal {
            Refusal::Invalid(message) => (errors::INVALID_CONFIG, message),
            Refusal::Limit(message) => (errors::POLICY_VIOLATION, message),
            Refusal::NotStored(reason) => (
                errors::KAFKA_STORAGE_ERROR,
                format!("the group's configs could not be stored: {reason}"),
            ),
        })
}
