//! DeleteTopics (by name): every partition's log is removed through the LogManager (renamed
//! `-delete` at once, its files removed after `file.delete.delay.ms`), the topic's configs
//! forgotten, and every group's committed offsets for it removed.
//!
//! Authorization as Kafka's: DELETE on the cluster allows every topic; otherwise a topic
//! without DESCRIBE is TOPIC_AUTHORIZATION_FAILED (existing or not), a missing one
//! UNKNOWN_TOPIC_OR_PARTITION, and an existing one without DELETE TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse};
use kafka_protocol::protocol::StrBytes;

use ferrolog_storage::TopicPartition;

use super::{internal_topics, partitions_of, throttling};
use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let version = asked.version();
    // DELETE on the cluster covers every topic; otherwise each needs DESCRIBE to learn anything
    // and DELETE to be deleted.
    let every_topic = asked.may_on_cluster(AclOperation::Delete);
    let may =
        |operation, topic: &str| every_topic || asked.may(operation, ResourceType::Topic, topic);
    let mut quota = throttling::mutations(context, asked, STRICT_QUOTA_FROM);
    let responses = request
        .topic_names
        .into_iter()
        .map(|name| {
            let topic = name.0.to_string();
            let partitions = partitions_of(context, &topic);
            let mut result = DeletableTopicResult::default().with_name(Some(name));
            let denied = |result: DeletableTopicResult| {
                let result = result.with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
                if version >= 5 {
                    result.with_error_message(Some(StrBytes::from_static_str(
                        "Topic authorization failed.",
                    )))
                } else {
                    result
                }
            };
            if !may(AclOperation::Describe, &topic) {
                return denied(result);
            }
            if partitions.is_empty() {
                return result.with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
            }
            if !may(AclOperation::Delete, &topic) {
                return denied(result);
            }
            if let Some((code, message)) = internal_topics::deletion_refusal(&topic, version) {
                result = result.with_error_code(code);
                if version >= 5 {
                    result = result.with_error_message(Some(StrBytes::from_string(message)));
                }
                return result;
            }
            if !quota.admit(partitions.len(), throttling::now_ms(context)) {
                // Kafka leaves out the text of a spent quota, its error's own.
                return result.with_error_code(errors::THROTTLING_QUOTA_EXCEEDED);
            }
            for partition in partitions {
                if let Err(error) = context
                    .manager
                    .delete(&TopicPartition::new(topic.clone(), partition))
                {
                    result = result.with_error_code(errors::code_of(&error));
                    if version >= 5 {
                        result = result
                            .with_error_message(Some(StrBytes::from_string(error.to_string())));
                    }
                    return result;
                }
            }
            if let Err(error) = context.manager.topic_configs().forget(&topic) {
                return result.with_error_code(errors::code_of(&error));
            }
            let offsets = context.groups.forget_topic(&topic);
            tracing::info!(topic, removed_group_offsets = offsets, "deleted topic");
            result
        })
        .collect();
    let throttle = throttling::mutated(asked.session(), &quota);
    DeleteTopicsResponse::default()
        .with_responses(responses)
        .with_throttle_time_ms(throttle)
}

/// The first version whose topics are refused once the client's controller mutation quota is
/// spent (older ones are only throttled), as in Kafka.
const STRICT_QUOTA_FROM: i16 = 5;

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{DeleteTopicsRequest, TopicName};

    use crate::probes::{Probed, doomed_topic, text};

    impl Probed for DeleteTopicsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            // A topic that does not exist: the answer must not tell, unless it may be described.
            let request = DeleteTopicsRequest::default()
                .with_timeout_ms(30_000)
                .with_topic_names(vec![TopicName(text(&doomed_topic(topic)))]);
            (5, request)
        }
    }
}
