//! DescribeShareGroupOffsets (KIP-932): each share partition's start offset, leader epoch and
//! (version 1, KIP-1226) lag — the high watermark less the start offset less the records done
//! after it. DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); with topics named, DESCRIBE
//! on each (its partitions answered TOPIC_AUTHORIZATION_FAILED, listed last), without, the
//! group's initialized partitions of the topics the session may describe. As Kafka, a group
//! that is not a share group, or a partition without state, answers a start offset of −1.

use ferrolog_coordinator::share_state::ShareKey;
use ferrolog_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use ferrolog_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use ferrolog_protocol::messages::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
};
use ferrolog_storage::TopicPartition;
use ferrolog_storage::manager::TopicId;

use crate::authz::{AclOperation, Asked, ResourceType};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeShareGroupOffsetsRequest,
) -> DescribeShareGroupOffsetsResponse {
    let groups = request
        .groups
        .into_iter()
        .map(|group| describe_group(context, asked, group))
        .collect();
    DescribeShareGroupOffsetsResponse {
        groups,
        ..DescribeShareGroupOffsetsResponse::default()
    }
}

fn describe_group(
    context: &Context,
    asked: &Asked<'_>,
    group: DescribeShareGroupOffsetsRequestGroup,
) -> DescribeShareGroupOffsetsResponseGroup {
    let id = group.group_id;
    if !context.features.serves(crate::features::SHARE_VERSION) {
        return DescribeShareGroupOffsetsResponseGroup {
            group_id: id,
            error_code: errors::UNSUPPORTED_VERSION,
            ..Default::default()
        };
    }
    if !asked.allows(ResourceType::Group, &id) {
        return DescribeShareGroupOffsetsResponseGroup {
            group_id: id,
            error_code: errors::GROUP_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let topics = match group.topics {
        None => context
            .groups
            .share_initialized(&id)
            .into_iter()
            .filter_map(|(topic_id, named)| {
                let name = context.manager.topic_with_id(topic_id)?;
                asked
                    .may(AclOperation::Describe, ResourceType::Topic, &name)
                    .then(|| {
                        topic(
                            context,
                            &id,
                            &name,
                            Some(topic_id),
                            named.partitions.into_iter().collect(),
                        )
                    })
            })
            .collect(),
        Some(asked_topics) => {
            let (allowed, denied): (Vec<_>, Vec<_>) = asked_topics
                .into_iter()
                .partition(|t| asked.allows(ResourceType::Topic, &t.topic_name));
            let mut topics: Vec<_> = allowed
                .into_iter()
                .map(|t| {
                    let topic_id = context.manager.topic_id(&t.topic_name);
                    topic(context, &id, &t.topic_name, topic_id, t.partitions)
                })
                .collect();
            topics.extend(denied.into_iter().map(|t| {
                DescribeShareGroupOffsetsResponseTopic {
                    topic_name: t.topic_name,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| DescribeShareGroupOffsetsResponsePartition {
                            partition_index: *p,
                            start_offset: -1,
                            lag: -1,
                            error_code: errors::TOPIC_AUTHORIZATION_FAILED,
                            error_message: Some("Topic authorization failed.".to_owned()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            }));
            topics
        }
    };
    DescribeShareGroupOffsetsResponseGroup {
        group_id: id,
        topics,
        ..Default::default()
    }
}

/// One topic's partitions: their share state's summary and lag (−1s where there is none).
fn topic(
    context: &Context,
    group: &str,
    name: &str,
    topic_id: Option<TopicId>,
    partitions: Vec<i32>,
) -> DescribeShareGroupOffsetsResponseTopic {
    let partitions = partitions
        .into_iter()
        .map(|partition| {
            let summary = topic_id.and_then(|id| {
                context
                    .groups
                    .share_state()
                    .summary(&ShareKey::new(group, id, partition))
            });
            let high_watermark = context
                .manager
                .get(&TopicPartition::new(name, partition))
                .map(|log| log.high_watermark().value());
            let (start_offset, leader_epoch, lag) = match (summary, high_watermark) {
                (Some(s), Some(hw)) if s.start_offset != -1 && s.delivery_complete_count != -1 => (
                    s.start_offset,
                    s.leader_epoch,
                    hw - s.start_offset - i64::from(s.delivery_complete_count),
                ),
                (Some(s), _) => (s.start_offset, s.leader_epoch, -1),
                (None, _) => (-1, 0, -1),
            };
            DescribeShareGroupOffsetsResponsePartition {
                partition_index: partition,
                start_offset,
                leader_epoch,
                lag,
                ..Default::default()
            }
        })
        .collect();
    DescribeShareGroupOffsetsResponseTopic {
        topic_name: name.to_owned(),
        topic_id: topic_id.map_or(uuid::Uuid::nil(), |id| uuid::Uuid::from_bytes(id.0)),
        partitions,
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use ferrolog_protocol::messages::DescribeShareGroupOffsetsRequest;
    use ferrolog_protocol::messages::describe_share_group_offsets_request::{
        DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
    };

    use crate::probes::Probed;

    impl Probed for DescribeShareGroupOffsetsRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            let group = DescribeShareGroupOffsetsRequestGroup {
                group_id: group.to_owned(),
                topics: Some(vec![DescribeShareGroupOffsetsRequestTopic {
                    topic_name: topic.to_owned(),
                    partitions: vec![0],
                }]),
            };
            (
                1,
                DescribeShareGroupOffsetsRequest {
                    groups: vec![group],
                },
            )
        }
    }
}
