//! DeleteRecords: raises each partition's log start offset (−1 means the high watermark; never
//! past it), then drops the segments wholly below it. As Kafka: another negative offset, or one
//! past the high watermark, is OFFSET_OUT_OF_RANGE; a compact-only topic is POLICY_VIOLATION;
//! an internal topic is INVALID_TOPIC_EXCEPTION; each with low watermark −1. Needs DELETE on
//! each topic (TOPIC_AUTHORIZATION_FAILED, checked before anything else).

use ferrolog_storage::Offset;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};

use super::{internal_topics, with_logs};
use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::{Context, errors};

/// The offset that means "up to the high watermark".
const HIGH_WATERMARK: i64 = -1;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let name = topic.name.0.to_string();
            let deletable = asked.allows(ResourceType::Topic, &name);
            let partitions = with_logs(context, &name, topic.partitions, |partition| {
                partition.partition_index
            })
            .map(|(partition, log)| {
                let result = DeleteRecordsPartitionResult::default()
                    .with_partition_index(partition.partition_index);
                if !deletable {
                    return result
                        .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
                        .with_low_watermark(-1);
                }
                let Some(log) = log else {
                    return result
                        .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                        .with_low_watermark(-1);
                };
                let refused = |code| result.clone().with_error_code(code).with_low_watermark(-1);
                if let Some((code, _)) = internal_topics::delete_records_refusal(&name) {
                    return refused(code);
                }
                if !log.config().cleanup_policy.delete {
                    // Kafka: records of a compact-only topic are not deleted by offset.
                    return refused(errors::POLICY_VIOLATION);
                }
                let offset = match partition.offset {
                    HIGH_WATERMARK => log.high_watermark(),
                    offset if offset < 0 => return refused(errors::OFFSET_OUT_OF_RANGE),
                    offset => Offset::new(offset),
                };
                let outcome = log
                    .maybe_increment_log_start_offset(offset)
                    .and_then(|_| log.delete_old_segments().map(|_| ()));
                match outcome {
                    Ok(()) => result.with_low_watermark(log.log_start_offset().value()),
                    Err(error) => refused(errors::code_of(&error)),
                }
            })
            .collect();
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    DeleteRecordsResponse::default().with_topics(topics)
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    use kafka_protocol::messages::{DeleteRecordsRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for DeleteRecordsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = DeleteRecordsRequest::default().with_topics(vec![
                DeleteRecordsTopic::default()
                    .with_name(TopicName(text(topic)))
                    .with_partitions(vec![DeleteRecordsPartition::default().with_offset(0)]),
            ]);
            (2, request)
        }
    }
}
