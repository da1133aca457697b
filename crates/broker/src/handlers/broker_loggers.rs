//! The BROKER_LOGGER config resource (type 8): DescribeConfigs lists this broker's loggers and
//! their levels, IncrementalAlterConfigs sets and deletes levels, as Kafka's brokers answer
//! them (`ConfigHelper`, `ConfigAdminManager`), with Kafka's checks, codes and messages; the
//! legacy AlterConfigs does not take the type. The loggers are [`crate::loggers`]'. Both need
//! the cluster's DESCRIBE_CONFIGS or ALTER_CONFIGS, checked by the caller.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
use kafka_protocol::protocol::StrBytes;

use crate::loggers::LoggerChange;
use crate::{Context, errors};

/// Kafka's config source of a broker logger's level.
const DYNAMIC_BROKER_LOGGER_CONFIG: i8 = 6;

/// Describes the loggers `keys` names (every one when none), after Kafka's checks of the
/// resource name.
pub fn describe(
    context: &Context,
    result: DescribeConfigsResult,
    name: &str,
    keys: Option<&[StrBytes]>,
    version: i16,
) -> DescribeConfigsResult {
    let node = context.manager.node_id();
    let refusal = if name.is_empty() {
        Some("Broker id must not be empty".to_owned())
    } else {
        match name.parse::<i32>() {
            Err(_) => Some(format!("Broker id must be an integer, but it is: {name}")),
            Ok(id) if id != node => Some(format!(
                "Unexpected broker id, expected {node} but received {id}"
            )),
            Ok(_) => None,
        }
    };
    if let Some(message) = refusal {
        return result
            .with_error_code(errors::INVALID_REQUEST)
            .with_error_message(Some(StrBytes::from_string(message)));
    }
    let wanted = |logger: &str| {
        keys.is_none_or(|keys| keys.is_empty() || keys.iter().any(|key| key.as_str() == logger))
    };
    let configs = context
        .loggers
        .levels()
        .into_iter()
        .filter(|(logger, _)| wanted(logger))
        .map(|(logger, level)| {
            let entry = DescribeConfigsResourceResult::default()
                .with_name(StrBytes::from_string(logger))
                .with_value(Some(StrBytes::from_string(level)))
                .with_config_source(DYNAMIC_BROKER_LOGGER_CONFIG);
            if version >= 3 {
                entry.with_documentation(Some(StrBytes::from_static_str("")))
            } else {
                entry
            }
        })
        .collect();
    result.with_configs(configs)
}

/// Changes the loggers' levels as `configs` asks, every change checked before any is made.
pub fn alter(
    context: &Context,
    name: &str,
    configs: &[AlterableConfig],
    validate_only: bool,
) -> Result<(), (i16, String)> {
    super::configs::refuse_repeats_and_nulls(configs)?;
    let node = context.manager.node_id();
    match name.parse::<i32>() {
        Err(_) => {
            return Err((
                errors::INVALID_REQUEST,
                format!("Node id must be an integer, but it is: {name}"),
            ));
        }
        Ok(id) if id != node => {
            return Err((
                errors::INVALID_REQUEST,
                format!("Unexpected node id. Expected {node}, but received {id}"),
            ));
        }
        Ok(_) => {}
    }
    let changes = configs
        .iter()
        .map(|config| {
            let logger = config.name.to_string();
            match config.config_operation {
                0 => Ok((logger, config.value.as_ref().map(ToString::to_string))),
                1 => Ok((logger, None)),
                2 | 3 => Err((
                    errors::INVALID_REQUEST,
                    format!(
                        "{} operation is not allowed for the BROKER_LOGGER resource",
                        if config.config_operation == 2 { "APPEND" } else { "SUBTRACT" }
                    ),
                )),
                other => Err((
                    errors::INVALID_REQUEST,
                    format!("Unknown operation type {other} is not allowed for the BROKER_LOGGER resource"),
                )),
            }
        })
        .collect::<Result<Vec<LoggerChange>, _>>()?;
    context.loggers.change(&changes, validate_only)
}
