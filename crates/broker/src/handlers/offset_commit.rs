//! OffsetCommit: a group's consumed positions, stored in `__consumer_offsets`. A generation of
//! -1 with no member id is a standalone commit (a consumer using `assign()`), allowed while the
//! group has no members.

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, RequestHeader};

use crate::Context;
use crate::group::CommitEntry;

pub fn handle(
    context: &Context,
    header: &RequestHeader,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let entries: Vec<CommitEntry> = request
        .topics
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(|partition| CommitEntry {
                topic: topic.name.0.to_string(),
                partition: partition.partition_index,
                offset: partition.committed_offset,
                leader_epoch: partition.committed_leader_epoch,
                metadata: partition
                    .committed_metadata
                    .as_deref()
                    .unwrap_or_default()
                    .to_owned(),
            })
        })
        .collect();
    // Versions 2–4 may ask for a retention time; -1 means the broker's default.
    let retention = (header.request_api_version <= 4 && request.retention_time_ms >= 0)
        .then_some(request.retention_time_ms);
    let mut results = context
        .groups
        .commit(
            &request.group_id.0,
            request.generation_id_or_member_epoch,
            &request.member_id,
            request.group_instance_id.as_deref(),
            retention,
            &entries,
        )
        .into_iter();
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|partition| {
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(partition.partition_index)
                        .with_error_code(results.next().unwrap_or_default())
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
