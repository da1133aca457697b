//! OffsetFetch: a group's committed offsets, for the listed partitions or (topics null) for all
//! of them. A partition without a commit answers offset -1. Versions 1–7 name one group; 8 and
//! later a list, in which a group named again is answered INVALID_REQUEST: its offsets, answered
//! once per name, would let a small request build a response of any size.

use std::collections::BTreeMap;

use ferrolog_records::consumer_offsets::OffsetValue;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, RequestHeader, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::{Context, errors};

/// One partition's answer: offset, leader epoch, metadata.
type Committed = (i64, i32, String);

fn committed(value: Option<OffsetValue>) -> Committed {
    value.map_or((-1, -1, String::new()), |v| {
        (v.offset, v.leader_epoch, v.metadata)
    })
}

/// Offsets by topic, in the order asked (or by name for "all").
fn lookup(
    context: &Context,
    group: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
) -> BTreeMap<String, Vec<(i32, Committed)>> {
    let mut by_topic: BTreeMap<String, Vec<(i32, Committed)>> = BTreeMap::new();
    for (topic, partition, value) in context.groups.fetch_offsets(group, topics.as_deref()) {
        by_topic
            .entry(topic)
            .or_default()
            .push((partition, committed(value)));
    }
    by_topic
}

pub fn handle(
    context: &Context,
    header: &RequestHeader,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    if header.request_api_version >= 8 {
        let mut seen = std::collections::HashSet::new();
        let groups = request
            .groups
            .into_iter()
            .map(|group| {
                if !seen.insert(group.group_id.0.clone()) {
                    return OffsetFetchResponseGroup::default()
                        .with_group_id(group.group_id)
                        .with_error_code(errors::INVALID_REQUEST);
                }
                let topics = group.topics.map(|topics| {
                    topics
                        .into_iter()
                        .map(|t| (t.name.0.to_string(), t.partition_indexes))
                        .collect()
                });
                let found = lookup(context, &group.group_id.0, topics);
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
                                            .map(|(index, (offset, epoch, metadata))| {
                                                OffsetFetchResponsePartitions::default()
                                                    .with_partition_index(index)
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
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let topics = request.topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes))
            .collect()
    });
    let found = lookup(context, &request.group_id.0, topics);
    OffsetFetchResponse::default().with_topics(
        found
            .into_iter()
            .map(|(topic, partitions)| {
                OffsetFetchResponseTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic)))
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|(index, (offset, epoch, metadata))| {
                                OffsetFetchResponsePartition::default()
                                    .with_partition_index(index)
                                    .with_committed_offset(offset)
                                    .with_committed_leader_epoch(epoch)
                                    .with_metadata(Some(StrBytes::from_string(metadata)))
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}
