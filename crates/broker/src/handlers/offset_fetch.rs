//! OffsetFetch: a group's committed offsets, for the listed partitions or (topics null) for all
//! of them. A partition without a commit answers offset -1. Versions 1–7 name one group; 8 and
//! later a list, in which a group named again is answered INVALID_REQUEST: its offsets, answered
//! once per name, would let a small request build a response of any size.
//!
//! Authorization as Kafka's: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED: the group's
//! error from v8, the response's in v2–7, each partition's in v1), then DESCRIBE on each named
//! topic (TOPIC_AUTHORIZATION_FAILED on its partitions); asked for every topic, the answer
//! leaves out those the session may not describe.
//!
//! Offsets a transaction committed are invisible until it commits; asked for stable offsets
//! (v7+), a partition with such offsets pending is answered UNSTABLE_OFFSET_COMMIT, as Kafka
//! answers it, and the client asks again.

use std::collections::BTreeMap;

use ferrolog_records::consumer_offsets::OffsetValue;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::group::Fetched;
use crate::{Context, errors};

/// One partition's answer: offset, leader epoch, metadata, error code.
type Committed = (i64, i32, String, i16);

fn committed(value: Option<OffsetValue>) -> Committed {
    value.map_or((-1, -1, String::new(), errors::NONE), |v| {
        (v.offset, v.leader_epoch, v.metadata, errors::NONE)
    })
}

/// Kafka's answer for a partition of a topic the session may not describe.
const UNAUTHORIZED: Committed = (-1, -1, String::new(), errors::TOPIC_AUTHORIZATION_FAILED);

/// Kafka's answer, to a request for stable offsets (v7+ `require_stable`), for a partition
/// whose offsets an open transaction committed: the client asks again later.
const UNSTABLE: Committed = (-1, -1, String::new(), errors::UNSTABLE_OFFSET_COMMIT);

/// Offsets by topic, by name. Named topics the session may not describe are answered
/// TOPIC_AUTHORIZATION_FAILED; with every topic asked for, they are left out.
fn lookup(
    context: &Context,
    asked: &Asked<'_>,
    group: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
) -> BTreeMap<String, Vec<(i32, Committed)>> {
    let describable = |topic: &str| asked.allows(ResourceType::Topic, topic);
    let mut by_topic: BTreeMap<String, Vec<(i32, Committed)>> = BTreeMap::new();
    let topics = topics.map(|topics| {
        let (allowed, denied): (Vec<_>, Vec<_>) = topics
            .into_iter()
            .partition(|(topic, _)| describable(topic));
        for (topic, partitions) in denied {
            let answers = by_topic.entry(topic).or_default();
            answers.extend(
                partitions
                    .into_iter()
                    .map(|partition| (partition, UNAUTHORIZED)),
            );
        }
        allowed
    });
    let fetched = context
        .groups
        .fetch_offsets_stable(group, topics.as_deref(), require_stable);
    for (topic, partition, fetched) in fetched {
        if topics.is_none() && !describable(&topic) {
            continue;
        }
        let answer = match fetched {
            Fetched::Committed(value) => committed(value),
            Fetched::Unstable => UNSTABLE,
        };
        by_topic.entry(topic).or_default().push((partition, answer));
    }
    by_topic
}

/// Whether the session may see the group's offsets.
fn group_describable(_context: &Context, asked: &Asked<'_>, group: &str) -> bool {
    asked.allows(ResourceType::Group, group)
}

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    if asked.version() >= 8 {
        return OffsetFetchResponse::default().with_groups(groups_v8(context, asked, request));
    }
    let topics: Option<Vec<(String, Vec<i32>)>> = request.topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes))
            .collect()
    });
    if !group_describable(context, asked, &request.group_id.0) {
        // From v2 the refusal is the response's own error; v1 has none, so each partition
        // named carries it.
        if asked.version() >= 2 {
            return OffsetFetchResponse::default()
                .with_error_code(errors::GROUP_AUTHORIZATION_FAILED);
        }
        let refused = (-1, -1, String::new(), errors::GROUP_AUTHORIZATION_FAILED);
        let found = topics
            .unwrap_or_default()
            .into_iter()
            .map(|(topic, partitions)| {
                let answers = partitions
                    .into_iter()
                    .map(|partition| (partition, refused.clone()))
                    .collect();
                (topic, answers)
            })
            .collect();
        return OffsetFetchResponse::default().with_topics(v1_to_7_topics(found));
    }
    let require_stable = asked.version() >= 7 && request.require_stable;
    let found = lookup(context, asked, &request.group_id.0, topics, require_stable);
    OffsetFetchResponse::default().with_topics(v1_to_7_topics(found))
}

/// The answer of v8 and later: one per group, each group once.
fn groups_v8(
    context: &Context,
    asked: &Asked<'_>,
    request: OffsetFetchRequest,
) -> Vec<OffsetFetchResponseGroup> {
    let mut seen = std::collections::HashSet::new();
    request
        .groups
        .into_iter()
        .map(|group| {
            if !seen.insert(group.group_id.0.clone()) {
                return OffsetFetchResponseGroup::default()
                    .with_group_id(group.group_id)
                    .with_error_code(errors::INVALID_REQUEST);
            }
            if !group_describable(context, asked, &group.group_id.0) {
                return OffsetFetchResponseGroup::default()
                    .with_group_id(group.group_id)
                    .with_error_code(errors::GROUP_AUTHORIZATION_FAILED);
            }
            if asked.version() >= 9 {
                // A consumer group's member must be at its current epoch (KIP-848).
                let error = context.groups.check_offset_fetch(
                    &group.group_id.0,
                    group.member_id.as_deref(),
                    group.member_epoch,
                );
                if error != errors::NONE {
                    return OffsetFetchResponseGroup::default()
                        .with_group_id(group.group_id)
                        .with_error_code(error);
                }
            }
            let topics = group.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| (t.name.0.to_string(), t.partition_indexes))
                    .collect()
            });
            let found = lookup(
                context,
                asked,
                &group.group_id.0,
                topics,
                request.require_stable,
            );
            OffsetFetchResponseGroup::default()
                .with_group_id(group.group_id)
                .with_topics(
                    found
                        .into_iter()
                        .map(|(topic, partitions)| {
                            OffsetFetchResponseTopics::default()
                                .with_name(TopicName(StrBytes::from_string(topic)))
                                .with_partitions(
                                    partitions
                                        .into_iter()
                                        .map(|(index, (offset, epoch, metadata, error))| {
                                            OffsetFetchResponsePartitions::default()
                                                .with_partition_index(index)
                                                .with_error_code(error)
                                                .with_committed_offset(offset)
                                                .with_committed_leader_epoch(epoch)
                                                .with_metadata(Some(StrBytes::from_string(
                                                    metadata,
                                                )))
                                        })
                                        .collect(),
                                )
                        })
                        .collect(),
                )
        })
        .collect()
}

/// The answer's topics in the layout of versions 1–7.
fn v1_to_7_topics(found: BTreeMap<String, Vec<(i32, Committed)>>) -> Vec<OffsetFetchResponseTopic> {
    found
        .into_iter()
        .map(|(topic, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic)))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(index, (offset, epoch, metadata, error))| {
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(index)
                                .with_error_code(error)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(epoch)
                                .with_metadata(Some(StrBytes::from_string(metadata)))
                        })
                        .collect(),
                )
        })
        .collect()
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopics,
    };
    use kafka_protocol::messages::{GroupId, OffsetFetchRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for OffsetFetchRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            let request = OffsetFetchRequest::default().with_groups(vec![
                OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(text(group)))
                    .with_topics(Some(vec![
                        OffsetFetchRequestTopics::default()
                            .with_name(TopicName(text(topic)))
                            .with_partition_indexes(vec![0]),
                    ])),
            ]);
            (8, request)
        }
    }
}
