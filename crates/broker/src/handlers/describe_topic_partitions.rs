//! DescribeTopicPartitions (v0), which Kafka 4's admin client uses to describe topics: each
//! requested topic (or every topic), sorted by name, with its partitions, in pages of at most
//! `max.request.partition.size.limit` (2000) partitions, as Kafka pages them: a page that ends
//! inside a topic, or just before one, names where the next starts (`next_cursor`).
//!
//! Every partition is led by this node, its only replica; it has no eligible leader replicas
//! (a single node has no other replica to elect). A partition whose data directory is offline
//! has no leader and this node among its offline replicas, as in Metadata.
//!
//! A topic named without DESCRIBE is TOPIC_AUTHORIZATION_FAILED, existing or not; asked for
//! every topic, those the session may not describe are left out.

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};

use kafka_protocol::protocol::StrBytes;

use super::internal_topics::is_internal;
use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::{Context, errors};

/// Kafka's `max.request.partition.size.limit` default: the most partitions one answer holds.
const MAX_PARTITIONS_PER_RESPONSE: i32 = 2000;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let every_topic = request.topics.is_empty();
    let (cursor_topic, cursor_partition) = request
        .cursor
        .as_ref()
        .map_or((String::new(), 0), |cursor| {
            (cursor.topic_name.0.to_string(), cursor.partition_index)
        });
    let describable = |name: &str| asked.allows(ResourceType::Topic, name);
    let mut names = named_or_all(context, &request, &describable);
    names.retain(|name| *name >= cursor_topic);
    names.sort();
    names.dedup();
    let cursor_missing = request.cursor.is_some() && !every_topic && !names.contains(&cursor_topic);
    if cursor_missing || cursor_partition < 0 {
        return refused_whole(request);
    }

    let node = BrokerId(context.manager.node_id());
    let any_dir_offline = context.manager.offline_dir_count() > 0;
    let mut remaining = request
        .response_partition_limit
        .clamp(1, MAX_PARTITIONS_PER_RESPONSE);
    let mut topics = Vec::new();
    let mut next_cursor = None;
    for name in names {
        if remaining == 0 {
            next_cursor = Some(cursor_at(&name, 0));
            break;
        }
        if !every_topic && !describable(&name) {
            // Named: refused, existing or not.
            topics.push(
                DescribeTopicPartitionsResponseTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(name))))
                    .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED),
            );
            continue;
        }
        let partitions = context.manager.partitions_of(&name);
        let topic = DescribeTopicPartitionsResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
            .with_is_internal(is_internal(&name))
            .with_topic_authorized_operations(
                asked.authorized_operations(ResourceType::Topic, &name),
            );
        if partitions.is_empty() {
            if !every_topic {
                topics.push(topic.with_error_code(missing_topic_code(&name)));
            }
            continue;
        }
        let start = if name == cursor_topic {
            cursor_partition
        } else {
            0
        };
        let count = partitions.len() as i32;
        let end = count.min(start.saturating_add(remaining));
        let described: Vec<_> = (start..end)
            .filter(|partition| partitions.contains(partition))
            .map(|partition| {
                let offline = super::in_offline_dir(context, any_dir_offline, &name, partition);
                let epoch = super::leader_epoch_of(context, &name, partition);
                describe_partition(node, (partition, epoch), offline)
            })
            .collect();
        remaining -= described.len() as i32;
        let id = context
            .manager
            .topic_id(&name)
            .map(|id| uuid::Uuid::from_bytes(id.0));
        topics.push(
            topic
                .with_topic_id(id.unwrap_or_default())
                .with_partitions(described),
        );
        if end < count {
            next_cursor = Some(cursor_at(&name, end));
            break;
        }
    }
    DescribeTopicPartitionsResponse::default()
        .with_topics(topics)
        .with_next_cursor(next_cursor)
}

/// The topics named, or every topic the session may describe when none is (left out before
/// paging, so that no cursor names a topic the session may not see).
fn named_or_all(
    context: &Context,
    request: &DescribeTopicPartitionsRequest,
    describable: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    if request.topics.is_empty() {
        // Left out before paging, so that no cursor names a topic the session may not see.
        context
            .manager
            .topics()
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| describable(name))
            .collect()
    } else {
        request
            .topics
            .iter()
            .map(|topic| topic.name.0.to_string())
            .collect()
    }
}

/// Kafka refuses a request with a bad cursor whole; every topic named carries the error.
fn refused_whole(request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            DescribeTopicPartitionsResponseTopic::default()
                .with_error_code(errors::INVALID_REQUEST)
                .with_name(Some(topic.name))
        })
        .collect();
    DescribeTopicPartitionsResponse::default().with_topics(topics)
}

/// The error of a topic named that has no partitions here.
fn missing_topic_code(name: &str) -> i16 {
    if errors::is_valid_topic_name(name) {
        errors::UNKNOWN_TOPIC_OR_PARTITION
    } else {
        errors::INVALID_TOPIC_EXCEPTION
    }
}

fn cursor_at(topic: &str, partition: i32) -> Cursor {
    Cursor::default()
        .with_topic_name(TopicName(StrBytes::from_string(topic.to_owned())))
        .with_partition_index(partition)
}

fn describe_partition(
    node: BrokerId,
    (partition, leader_epoch): (i32, i32),
    offline: bool,
) -> DescribeTopicPartitionsResponsePartition {
    DescribeTopicPartitionsResponsePartition::default()
        .with_partition_index(partition)
        .with_leader_id(if offline { BrokerId(-1) } else { node })
        .with_leader_epoch(leader_epoch)
        .with_replica_nodes(vec![node])
        .with_isr_nodes(vec![node])
        .with_eligible_leader_replicas(Some(Vec::new()))
        .with_last_known_elr(Some(Vec::new()))
        .with_offline_replicas(if offline { vec![node] } else { Vec::new() })
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::describe_topic_partitions_request::TopicRequest;
    use kafka_protocol::messages::{DescribeTopicPartitionsRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for DescribeTopicPartitionsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = DescribeTopicPartitionsRequest::default()
                .with_response_partition_limit(100)
                .with_topics(vec![
                    TopicRequest::default().with_name(TopicName(text(topic))),
                ]);
            (0, request)
        }
    }
}
