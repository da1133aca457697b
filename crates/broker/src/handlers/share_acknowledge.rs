//! ShareAcknowledge (KIP-932): a share consumer's acknowledgements outside a fetch, under its
//! session (epoch 0 is not one; −1 ends the session after them, releasing what the member still
//! holds). Checks as ShareFetch's: a group id, READ on the group, a member id of 1 to 36
//! characters, then per topic a known id and READ on it.

use std::sync::Arc;

use ferrolog_protocol::messages::share_acknowledge_response::{
    PartitionData, ShareAcknowledgeTopicResponse,
};
use ferrolog_protocol::messages::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use ferrolog_storage::manager::TopicId;

use super::share_common::{
    Access, ack_batches, acknowledge_all, release_session, share_settings, valid_member,
};
use crate::authz::{Asked, ResourceType};
use crate::features::SHARE_VERSION;
use crate::{Context, errors};

pub async fn handle(
    context: &Arc<Context>,
    asked: &Asked<'_>,
    request: ShareAcknowledgeRequest,
) -> ShareAcknowledgeResponse {
    let top = |code: i16| ShareAcknowledgeResponse {
        error_code: code,
        ..ShareAcknowledgeResponse::default()
    };
    if !context.features.serves(SHARE_VERSION) {
        return top(errors::UNSUPPORTED_VERSION);
    }
    let Some(group) = request.group_id.clone() else {
        return top(errors::INVALID_REQUEST);
    };
    if !asked.allows(ResourceType::Group, &group) {
        return top(errors::GROUP_AUTHORIZATION_FAILED);
    }
    let Some(member) = valid_member(request.member_id.as_deref()) else {
        return top(errors::INVALID_REQUEST);
    };
    let key = (group.clone(), member.clone());
    if let Err(code) = context
        .share_sessions
        .acknowledge_context(&key, request.share_session_epoch)
    {
        return top(code);
    }
    let renewing = asked.version() >= 2 && request.is_renew_ack;
    let acks: Vec<((TopicId, i32), _)> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    (TopicId(t.topic_id.into_bytes()), p.partition_index),
                    ack_batches(&p.acknowledgement_batches),
                )
            })
        })
        .collect();
    let access = Access::check(context, asked, acks.iter().map(|(p, _)| p.0));
    let partitions: Vec<(TopicId, i32)> = acks.iter().map(|(p, _)| *p).collect();
    let results = acknowledge_all(context, asked, &access, &group, &member, acks, renewing).await;
    if request.share_session_epoch == -1 {
        release_session(context, &key, &partitions).await;
    }
    let mut topics: Vec<ShareAcknowledgeTopicResponse> = Vec::new();
    for ((topic, partition), code) in results {
        let data = PartitionData {
            partition_index: partition,
            error_code: code,
            ..PartitionData::default()
        };
        let topic_id = uuid::Uuid::from_bytes(topic.0);
        match topics.iter_mut().find(|t| t.topic_id == topic_id) {
            Some(existing) => existing.partitions.push(data),
            None => topics.push(ShareAcknowledgeTopicResponse {
                topic_id,
                partitions: vec![data],
            }),
        }
    }
    let lock_ms = share_settings(context, &group).limits.lock_duration_ms;
    ShareAcknowledgeResponse {
        acquisition_lock_timeout_ms: i32::try_from(lock_ms).unwrap_or(i32::MAX),
        responses: topics,
        ..ShareAcknowledgeResponse::default()
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use ferrolog_protocol::messages::ShareAcknowledgeRequest;
    use ferrolog_protocol::messages::share_acknowledge_request::{
        AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch,
    };

    use crate::probes::Probed;

    impl Probed for ShareAcknowledgeRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            Self::probe_by_id(topic, group, uuid::Uuid::nil())
        }

        fn probe_by_id(_topic: &str, group: &str, topic_id: uuid::Uuid) -> (i16, Self) {
            let batch = AcknowledgementBatch {
                first_offset: 0,
                last_offset: 0,
                acknowledge_types: vec![1],
            };
            let request = ShareAcknowledgeRequest {
                group_id: Some(group.to_owned()),
                member_id: Some("nobody".to_owned()),
                share_session_epoch: 1,
                topics: vec![AcknowledgeTopic {
                    topic_id,
                    partitions: vec![AcknowledgePartition {
                        partition_index: 0,
                        acknowledgement_batches: vec![batch],
                    }],
                }],
                ..ShareAcknowledgeRequest::default()
            };
            (1, request)
        }
    }
}
