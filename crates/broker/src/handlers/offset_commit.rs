//! OffsetCommit: a group's consumed positions, stored in `__consumer_offsets`. A generation of
//! -1 with no member id is a standalone commit (a consumer using `assign()`), allowed while the
//! group has no members. Needs READ on the group (GROUP_AUTHORIZATION_FAILED on every
//! partition) and on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions).

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};

use crate::Context;
use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::group::CommitEntry;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    // READ on the group was checked first (refused: every partition says so), then on each
    // topic.
    let refusals: Vec<Option<i16>> = request
        .topics
        .iter()
        .map(|topic| asked.refusal(ResourceType::Topic, &topic.name.0))
        .collect();
    let entries: Vec<CommitEntry> = request
        .topics
        .iter()
        .zip(&refusals)
        .filter(|(_, refusal)| refusal.is_none())
        .flat_map(|(topic, _)| {
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
    let retention = (asked.version() <= 4 && request.retention_time_ms >= 0)
        .then_some(request.retention_time_ms);
    let mut results = if entries.is_empty() {
        Vec::new()
    } else {
        context.groups.commit(
            &request.group_id.0,
            asked.version(),
            request.generation_id_or_member_epoch,
            &request.member_id,
            request.group_instance_id.as_deref(),
            retention,
            &entries,
        )
    }
    .into_iter();
    let topics = request
        .topics
        .into_iter()
        .zip(refusals)
        .map(|(topic, refusal)| {
            let partitions = topic
                .partitions
                .iter()
                .map(|partition| {
                    let error = match refusal {
                        Some(code) => code,
                        None => results.next().unwrap_or_default(),
                    };
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(partition.partition_index)
                        .with_error_code(error)
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}

impl crate::refuse::Refuse for OffsetCommitRequest {
    /// Every partition is answered with the refusal.
    fn refused(&self, _version: i16, code: i16) -> OffsetCommitResponse {
        let topics = self
            .topics
            .iter()
            .map(|topic| {
                let partitions = topic
                    .partitions
                    .iter()
                    .map(|partition| {
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(partition.partition_index)
                            .with_error_code(code)
                    })
                    .collect();
                OffsetCommitResponseTopic::default()
                    .with_name(topic.name.clone())
                    .with_partitions(partitions)
            })
            .collect();
        OffsetCommitResponse::default().with_topics(topics)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for OffsetCommitRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            let request = OffsetCommitRequest::default()
                .with_group_id(GroupId(text(group)))
                .with_generation_id_or_member_epoch(-1)
                .with_topics(vec![
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(text(topic)))
                        .with_partitions(vec![
                            OffsetCommitRequestPartition::default().with_committed_offset(0),
                        ]),
                ]);
            (8, request)
        }
    }
}
