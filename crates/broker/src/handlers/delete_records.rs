//! DeleteRecords: raises each partition's log start offset (−1 means the high watermark; never
//! past it), then drops the segments wholly below it.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse, RequestHeader};

use ferrolog_storage::TopicPartition;

use crate::{Context, errors};

pub fn handle(
    context: &Context,
    _header: &RequestHeader,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let name = topic.name.0.to_string();
            let partitions = topic
                .partitions
                .into_iter()
                .map(|partition| {
                    let result = DeleteRecordsPartitionResult::default()
                        .with_partition_index(partition.partition_index);
                    let Some(log) = context.manager.get(&TopicPartition::new(
                        name.clone(),
                        partition.partition_index,
                    )) else {
                        return result
                            .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                            .with_low_watermark(-1);
                    };
                    let offset = if partition.offset == -1 {
                        log.high_watermark()
                    } else {
                        partition.offset
                    };
                    let outcome = log
                        .maybe_increment_log_start_offset(offset)
                        .and_then(|_| log.delete_old_segments().map(|_| ()));
                    match outcome {
                        Ok(()) => result.with_low_watermark(log.log_start_offset()),
                        Err(error) => result
                            .with_error_code(errors::code_of(&error))
                            .with_low_watermark(-1),
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
