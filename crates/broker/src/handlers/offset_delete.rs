//! OffsetDelete: removes a group's committed offsets for some partitions, except for topics its
//! members are subscribed to (GROUP_SUBSCRIBED_TO_TOPIC). Needs DELETE on the group
//! (GROUP_AUTHORIZATION_FAILED for the request) and READ on each topic
//! (TOPIC_AUTHORIZATION_FAILED on its partitions).

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

use crate::Context;
use crate::authz::Asked;
use crate::authz::ResourceType;

/// The topics a member subscribes to, from its consumer-protocol metadata (`i16` version, then
/// the subscription). Other protocol types subscribe to nothing Kafka can see.
fn subscribed_topics(protocol_type: &str, metadata: &[u8]) -> Vec<String> {
    if protocol_type != "consumer" {
        return Vec::new();
    }
    ferrolog_protocol::consumer_protocol::decode_subscription(metadata)
        .map(|subscription| subscription.topics)
        .unwrap_or_default()
}

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    // READ on each topic; the refused ones are answered without being looked at.
    let readable: Vec<bool> = request
        .topics
        .iter()
        .map(|topic| asked.allows(ResourceType::Topic, &topic.name.0))
        .collect();
    let partitions: Vec<(String, i32)> = request
        .topics
        .iter()
        .zip(&readable)
        .filter(|(_, readable)| **readable)
        .flat_map(|(topic, _)| {
            topic
                .partitions
                .iter()
                .map(|p| (topic.name.0.to_string(), p.partition_index))
        })
        .collect();
    let (error, results) =
        context
            .groups
            .delete_offsets(&request.group_id.0, &partitions, subscribed_topics);
    if error != 0 {
        return OffsetDeleteResponse::default().with_error_code(error);
    }
    let mut results = results.into_iter();
    let topics = request
        .topics
        .into_iter()
        .zip(readable)
        .map(|(topic, readable)| {
            OffsetDeleteResponseTopic::default()
                .with_partitions(
                    topic
                        .partitions
                        .iter()
                        .map(|p| {
                            let error = if readable {
                                results.next().unwrap_or_default()
                            } else {
                                crate::errors::TOPIC_AUTHORIZATION_FAILED
                            };
                            OffsetDeleteResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(error)
                        })
                        .collect(),
                )
                .with_name(topic.name)
        })
        .collect();
    OffsetDeleteResponse::default().with_topics(topics)
}

crate::refuse::refused_at_top_level!(OffsetDeleteRequest => OffsetDeleteResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::offset_delete_request::{
        OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetDeleteRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for OffsetDeleteRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            let request = OffsetDeleteRequest::default()
                .with_group_id(GroupId(text(group)))
                .with_topics(vec![
                    OffsetDeleteRequestTopic::default()
                        .with_name(TopicName(text(topic)))
                        .with_partitions(vec![OffsetDeleteRequestPartition::default()]),
                ]);
            (0, request)
        }
    }
}
