//! ConsumerGroupHeartbeat (KIP-848): a member of a consumer group of the broker-driven
//! protocol joins, heartbeats, reports the partitions it owns and hears its assignment, or
//! leaves. Needs READ on the group (GROUP_AUTHORIZATION_FAILED), and DESCRIBE on every topic it
//! names (TOPIC_AUTHORIZATION_FAILED), as Kafka checks them.

use std::collections::BTreeMap;

use ferrolog_coordinator::group::consumer::{ConsumerHeartbeat, Partitions};
use ferrolog_storage::manager::TopicId;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::{AclOperation, Asked, ResourceType};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    if !super::consumer_groups_served(context) {
        return ConsumerGroupHeartbeatResponse::default()
            .with_error_code(errors::UNSUPPORTED_VERSION);
    }
    let names = request
        .subscribed_topic_names
        .as_deref()
        .unwrap_or_default();
    if names
        .iter()
        .any(|name| !asked.may(AclOperation::Describe, ResourceType::Topic, name))
    {
        return ConsumerGroupHeartbeatResponse::default()
            .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
    }
    let owned = request.topic_partitions.map(|topics| {
        let mut owned = Partitions::new();
        for topic in topics {
            owned
                .entry(TopicId(topic.topic_id.into_bytes()))
                .or_default()
                .extend(topic.partitions);
        }
        owned
    });
    let heartbeat = ConsumerHeartbeat {
        version: asked.version(),
        group_id: request.group_id.0.to_string(),
        member_id: request.member_id.to_string(),
        member_epoch: request.member_epoch,
        instance_id: request.instance_id.map(|id| id.to_string()),
        rack_id: request.rack_id.map(|id| id.to_string()),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        topic_names: request
            .subscribed_topic_names
            .map(|names| names.into_iter().map(|name| name.0.to_string()).collect()),
        topic_regex: request
            .subscribed_topic_regex
            .map(|regex| regex.to_string()),
        server_assignor: request.server_assignor.map(|name| name.to_string()),
        owned,
        client_id: asked
            .header()
            .client_id
            .as_deref()
            .unwrap_or_default()
            .to_owned(),
        client_host: format!("/{}", asked.session().host()),
        classic: None,
        hold_target: false,
    };
    // A regular expression resolves to the topics the member may describe, as in Kafka.
    let may_describe = |topic: &str| asked.may(AclOperation::Describe, ResourceType::Topic, topic);
    let answer = context.groups.consumer_heartbeat(heartbeat, &may_describe);
    ConsumerGroupHeartbeatResponse::default()
        .with_error_code(answer.error)
        .with_error_message(answer.message.map(StrBytes::from_string))
        .with_member_id(answer.member_id.map(StrBytes::from_string))
        .with_member_epoch(answer.member_epoch)
        .with_heartbeat_interval_ms(answer.heartbeat_interval_ms)
        .with_assignment(answer.assignment.map(|partitions| {
            Assignment::default().with_topic_partitions(topic_partitions(partitions))
        }))
}

fn topic_partitions(
    partitions: BTreeMap<TopicId, std::collections::BTreeSet<i32>>,
) -> Vec<TopicPartitions> {
    partitions
        .into_iter()
        .map(|(topic, partitions)| {
            TopicPartitions::default()
                .with_topic_id(uuid::Uuid::from_bytes(topic.0))
                .with_partitions(partitions.into_iter().collect())
        })
        .collect()
}

crate::refuse::refused_at_top_level!(ConsumerGroupHeartbeatRequest => ConsumerGroupHeartbeatResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, GroupId};

    use crate::probes::{Probed, text};

    impl Probed for ConsumerGroupHeartbeatRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(text(group)))
                .with_member_id(text("nobody"))
                .with_member_epoch(1);
            (1, request)
        }
    }
}
