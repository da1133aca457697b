//! ShareGroupHeartbeat (KIP-932): a member of a share group joins, heartbeats and hears the
//! partitions it consumes, or leaves. Needs READ on the group (GROUP_AUTHORIZATION_FAILED),
//! a member id of at most 36 characters (INVALID_REQUEST), and DESCRIBE on every topic it
//! subscribes to (TOPIC_AUTHORIZATION_FAILED), checked in that order, as Kafka checks them;
//! those refusals carry no message, as Kafka's do not.

use ferrolog_coordinator::group::share::ShareHeartbeat;
use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::{AclOperation, Asked, ResourceType};
use crate::features::SHARE_VERSION;
use crate::{Context, errors};

/// The longest member id Kafka accepts (a UUID's text).
const MAX_MEMBER_ID_CHARS: usize = 36;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    let refused = |code| ShareGroupHeartbeatResponse::default().with_error_code(code);
    if !context.features.serves(SHARE_VERSION) {
        return refused(errors::UNSUPPORTED_VERSION);
    }
    let member_id = request.member_id.to_string();
    if member_id.is_empty() || member_id.encode_utf16().count() > MAX_MEMBER_ID_CHARS {
        return refused(errors::INVALID_REQUEST);
    }
    let names: Vec<String> = request
        .subscribed_topic_names
        .iter()
        .flatten()
        .map(|name| name.0.to_string())
        .collect();
    if names
        .iter()
        .any(|name| !asked.may(AclOperation::Describe, ResourceType::Topic, name))
    {
        return refused(errors::TOPIC_AUTHORIZATION_FAILED);
    }
    let heartbeat = ShareHeartbeat {
        group_id: request.group_id.0.to_string(),
        member_id,
        member_epoch: request.member_epoch,
        rack_id: request.rack_id.map(|id| id.to_string()),
        topic_names: request.subscribed_topic_names.map(|_| names),
        client_id: asked
            .header()
            .client_id
            .as_deref()
            .unwrap_or_default()
            .to_owned(),
        client_host: format!("/{}", asked.session().host()),
    };
    let answer = context.groups.share_heartbeat(heartbeat);
    ShareGroupHeartbeatResponse::default()
        .with_error_code(answer.error)
        .with_error_message(answer.message.map(StrBytes::from_string))
        .with_member_id(answer.member_id.map(StrBytes::from_string))
        .with_member_epoch(answer.member_epoch)
        .with_heartbeat_interval_ms(answer.heartbeat_interval_ms)
        .with_assignment(answer.assignment.map(|partitions| {
            let topics = partitions
                .into_iter()
                .map(|(topic, partitions)| {
                    TopicPartitions::default()
                        .with_topic_id(uuid::Uuid::from_bytes(topic.0))
                        .with_partitions(partitions.into_iter().collect())
                })
                .collect();
            Assignment::default().with_topic_partitions(topics)
        }))
}

crate::refuse::refused_at_top_level!(ShareGroupHeartbeatRequest => ShareGroupHeartbeatResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{GroupId, ShareGroupHeartbeatRequest};

    use crate::probes::{Probed, text};

    impl Probed for ShareGroupHeartbeatRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = ShareGroupHeartbeatRequest::default()
                .with_group_id(GroupId(text(group)))
                .with_member_id(text("nobody"))
                .with_member_epoch(1);
            (1, request)
        }
    }
}
