//! DeleteShareGroupOffsets (KIP-932): the share state of topics goes from an empty share group,
//! as `kafka-share-groups --delete-offsets` asks. DELETE on the group (the router), READ on each
//! topic (TOPIC_AUTHORIZATION_FAILED for it); a group with members NON_EMPTY_GROUP; a topic that
//! does not exist, or without share state in the group, UNKNOWN_TOPIC_OR_PARTITION with Kafka's
//! messages.

use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::{
    DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::authz::{Asked, ResourceType};
use crate::features::{SHARE_VERSION, UNSUPPORTED_MESSAGE};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DeleteShareGroupOffsetsRequest,
) -> DeleteShareGroupOffsetsResponse {
    if !context.features.serves(SHARE_VERSION) {
        return DeleteShareGroupOffsetsResponse::default()
            .with_error_code(errors::UNSUPPORTED_VERSION)
            .with_error_message(Some(StrBytes::from_static_str(UNSUPPORTED_MESSAGE)));
    }
    let group = request.group_id.0.to_string();
    if group.is_empty() {
        return DeleteShareGroupOffsetsResponse::default()
            .with_error_code(errors::INVALID_GROUP_ID);
    }
    let mut refused = Vec::new();
    let mut topics = Vec::new();
    for topic in &request.topics {
        let name = topic.topic_name.0.to_string();
        if !asked.allows(ResourceType::Topic, &name) {
            refused.push(
                DeleteShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(topic.topic_name.clone())
                    .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
                    .with_error_message(Some(StrBytes::from_static_str(
                        "Topic authorization failed.",
                    ))),
            );
            continue;
        }
        let found = context
            .manager
            .topic_id(&name)
            .map(|id| (id, context.manager.partitions_of(&name).len() as i32));
        topics.push((name, found));
    }
    let deleted = match context.groups.delete_share_offsets(&group, &topics) {
        Ok(deleted) => deleted,
        Err((code, message)) => {
            return DeleteShareGroupOffsetsResponse::default()
                .with_error_code(code)
                .with_error_message((!message.is_empty()).then(|| StrBytes::from_string(message)));
        }
    };
    context.shares.forget_group(&group);
    refused.extend(deleted.into_iter().map(|topic| {
        DeleteShareGroupOffsetsResponseTopic::default()
            .with_topic_name(TopicName(StrBytes::from_string(topic.name)))
            .with_topic_id(
                topic
                    .id
                    .map_or(uuid::Uuid::nil(), |id| uuid::Uuid::from_bytes(id.0)),
            )
            .with_error_code(topic.error)
            .with_error_message(topic.message.map(StrBytes::from_string))
    }));
    DeleteShareGroupOffsetsResponse::default().with_responses(refused)
}

crate::refuse::refused_at_top_level!(DeleteShareGroupOffsetsRequest => DeleteShareGroupOffsetsResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
    use kafka_protocol::messages::{DeleteShareGroupOffsetsRequest, GroupId, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for DeleteShareGroupOffsetsRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            let topic = DeleteShareGroupOffsetsRequestTopic::default()
                .with_topic_name(TopicName(text(topic)));
            (
                0,
                DeleteShareGroupOffsetsRequest::default()
                    .with_group_id(GroupId(text(&crate::probes::share_group_of(group))))
                    .with_topics(vec![topic]),
            )
        }
    }
}
