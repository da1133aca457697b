//! DescribeConfigs, IncrementalAlterConfigs and AlterConfigs on CLIENT_METRICS resources: the
//! client-metrics subscriptions ([`crate::telemetry`]), answered as Kafka 4.4 answers them.
//! A description lists all three keys, with the source `CLIENT_METRICS_CONFIG` for those the
//! subscription sets and `DEFAULT_CONFIG` for the others. Authorized by the caller (ALTER_CONFIGS
//! or DESCRIBE_CONFIGS on the cluster).

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
use kafka_protocol::protocol::StrBytes;

use crate::telemetry::Alteration;
use crate::telemetry::subscriptions::{DEFAULT_INTERVAL_MS, INTERVAL_MS, MATCH, METRICS};
use crate::{Context, errors};

const CLIENT_METRICS_CONFIG: i8 = 7;
const DEFAULT_CONFIG: i8 = 5;
/// DescribeConfigs' config types.
const INT: i8 = 3;
const LIST: i8 = 7;

/// `result` filled for the subscription `name`: every key (or those of `wanted`); a value set
/// is its own synonym, when synonyms are wanted, as Kafka lists it.
pub(super) fn describe(
    context: &Context,
    result: DescribeConfigsResult,
    name: &str,
    wanted: Option<&[StrBytes]>,
    synonyms_wanted: bool,
) -> DescribeConfigsResult {
    if name.is_empty() {
        return result
            .with_error_code(errors::INVALID_REQUEST)
            .with_error_message(Some(StrBytes::from_static_str(
                "Client metrics subscription name must not be empty",
            )));
    }
    let values = context.telemetry.values(name);
    let default_interval = DEFAULT_INTERVAL_MS.to_string();
    let keys = [
        (INTERVAL_MS, INT, default_interval.as_str()),
        (MATCH, LIST, ""),
        (METRICS, LIST, ""),
    ];
    let configs = keys
        .into_iter()
        .filter(|(key, _, _)| {
            wanted
                .is_none_or(|wanted| wanted.is_empty() || wanted.iter().any(|w| w.as_str() == *key))
        })
        .map(|(key, config_type, default)| {
            let (value, source) = match values.get(key) {
                Some(value) => (value.clone(), CLIENT_METRICS_CONFIG),
                None => (default.to_owned(), DEFAULT_CONFIG),
            };
            let value = Some(StrBytes::from_string(value));
            let synonyms = if synonyms_wanted && source == CLIENT_METRICS_CONFIG {
                vec![
                    DescribeConfigsSynonym::default()
                        .with_name(StrBytes::from_static_str(key))
                        .with_value(value.clone())
                        .with_source(source),
                ]
            } else {
                Vec::new()
            };
            DescribeConfigsResourceResult::default()
                .with_name(StrBytes::from_static_str(key))
                .with_value(value)
                .with_config_source(source)
                .with_config_type(config_type)
                .with_synonyms(synonyms)
        })
        .collect();
    result
        .with_error_message(Some(StrBytes::default()))
        .with_configs(configs)
}

/// IncrementalAlterConfigs on the subscription `name`: a key named twice, or a SET without a
/// value, is refused first, with Kafka's messages.
pub(super) fn incremental(
    context: &Context,
    name: &str,
    changes: &[AlterableConfig],
    validate_only: bool,
) -> Result<(), (i16, String)> {
    super::configs::refuse_repeats_and_nulls(changes)?;
    let changes = changes
        .iter()
        .map(|change| {
            (
                change.name.to_string(),
                change.config_operation,
                change.value.as_ref().map(ToString::to_string),
            )
        })
        .collect();
    context
        .telemetry
        .alter(name, Alteration::Incremental(changes), validate_only)
}

/// AlterConfigs: the subscription's whole set becomes `values`.
pub(super) fn replace(
    context: &Context,
    name: &str,
    values: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    context
        .telemetry
        .alter(name, Alteration::Replace(values), validate_only)
}
