//! An operator's request to salvage partitions of the running broker, sent as Kafka's tools
//! send a dynamic broker config: `kafka-configs --alter --entity-type brokers --entity-name
//! <id> --add-config ferrolog.salvage.partitions=orders-0,orders-3`. The value is not kept:
//! each named partition's damaged sealed segments are salvaged now (see the storage's
//! `LogManager::salvage_partition`), what is lost listed in each segment's `.salvaged` file and
//! logged. A partition this broker does not hold, or one that cannot be salvaged now, refuses
//! the whole request (INVALID_CONFIG, naming it) before any is touched, but for failures met
//! while salvaging, which name the partition and leave the ones before it salvaged.

use ferrolog_storage::TopicPartition;

use super::Context;
use crate::errors;

/// The key of the request.
pub const SALVAGE_PARTITIONS: &str = "ferrolog.salvage.partitions";

/// Salvages the partitions named in `value` (unless `validate_only`).
pub fn salvage(context: &Context, value: &str, validate_only: bool) -> Result<(), (i16, String)> {
    let partitions = parse(value).map_err(|reason| (errors::INVALID_CONFIG, reason))?;
    for partition in &partitions {
        if context.manager.get(partition).is_none() {
            return Err((
                errors::INVALID_CONFIG,
                format!("{SALVAGE_PARTITIONS}: this broker holds no partition {partition}"),
            ));
        }
    }
    if validate_only {
        return Ok(());
    }
    for partition in &partitions {
        match context.manager.salvage_partition(partition) {
            Ok(Some(salvaged)) => {
                tracing::info!(%partition, segments = salvaged.len(), "salvage asked by an operator done");
            }
            Ok(None) => {}
            Err(error) => {
                return Err((
                    errors::INVALID_CONFIG,
                    format!("{SALVAGE_PARTITIONS}: {partition}: {error}"),
                ));
            }
        }
    }
    Ok(())
}

/// `topic-partition` names, comma-separated.
fn parse(value: &str) -> Result<Vec<TopicPartition>, String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            let (topic, partition) = name
                .rsplit_once('-')
                .filter(|(topic, _)| !topic.is_empty())
                .ok_or_else(|| {
                    format!("{SALVAGE_PARTITIONS}: {name:?} is not a topic-partition name")
                })?;
            let partition = partition
                .parse::<i32>()
                .ok()
                .filter(|partition| *partition >= 0)
                .ok_or_else(|| {
                    format!("{SALVAGE_PARTITIONS}: {name:?} does not end with a partition number")
                })?;
            Ok(TopicPartition::new(topic, partition))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_are_read_as_kafka_names_its_directories() {
        assert_eq!(
            parse("orders-0, my-topic-12,").unwrap(),
            vec![
                TopicPartition::new("orders", 0),
                TopicPartition::new("my-topic", 12)
            ]
        );
        assert!(parse("orders").unwrap_err().contains("\"orders\""));
        assert!(parse("-3").is_err());
        assert!(parse("orders-x").is_err());
    }
}
