//! AlterShareGroupOffsets (KIP-932): an empty share group's partitions start again at new
//! offsets (their in-flight state dropped), as `kafka-share-groups --reset-offsets` asks. READ
//! on the group (the router) and on each topic (its partitions answered
//! TOPIC_AUTHORIZATION_FAILED); a topic or partition that does not exist is answered
//! UNKNOWN_TOPIC_OR_PARTITION; a group with members NON_EMPTY_GROUP, as Kafka answers.

use ferrolog_coordinator::group::share::offsets::AlterTopic;
use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::{Asked, ResourceType};
use crate::features::{SHARE_VERSION, UNSUPPORTED_MESSAGE};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: AlterShareGroupOffsetsRequest,
) -> AlterShareGroupOffsetsResponse {
    if !context.features.serves(SHARE_VERSION) {
        return AlterShareGroupOffsetsResponse::default()
            .with_error_code(errors::UNSUPPORTED_VERSION)
            .with_error_message(Some(StrBytes::from_static_str(UNSUPPORTED_MESSAGE)));
    }
    let group = request.group_id.0.to_string();
    if group.is_empty() {
        return AlterShareGroupOffsetsResponse::default().with_error_code(errors::INVALID_GROUP_ID);
    }
    let mut answers: Vec<AlterShareGroupOffsetsResponseTopic> = Vec::new();
    let mut valid: Vec<AlterTopic> = Vec::new();
    for topic in &request.topics {
        let name = topic.topic_name.0.to_string();
        let refuse_all = |code: i16| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    AlterShareGroupOffsetsResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                })
                .collect();
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(topic.topic_name.clone())
                .with_partitions(partitions)
        };
        if !asked.allows(ResourceType::Topic, &name) {
            answers.push(refuse_all(errors::TOPIC_AUTHORIZATION_FAILED));
            continue;
        }
        let Some(id) = context.manager.topic_id(&name) else {
            answers.push(refuse_all(errors::UNKNOWN_TOPIC_OR_PARTITION));
            continue;
        };
        let existing = context.manager.partitions_of(&name);
        let (known, unknown): (Vec<_>, Vec<_>) = topic
            .partitions
            .iter()
            .partition(|p| existing.contains(&p.partition_index));
        if !unknown.is_empty() {
            let partitions = unknown
                .iter()
                .map(|p| {
                    AlterShareGroupOffsetsResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                })
                .collect();
            answers.push(
                AlterShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(topic.topic_name.clone())
                    .with_topic_id(uuid::Uuid::from_bytes(id.0))
                    .with_partitions(partitions),
            );
        }
        valid.push(AlterTopic {
            id,
            name,
            offsets: known
                .iter()
                .map(|p| (p.partition_index, p.start_offset))
                .collect(),
        });
    }
    let results = match context.groups.alter_share_offsets(&group, &valid) {
        Ok(results) => results,
        Err((code, message)) => {
            return AlterShareGroupOffsetsResponse::default()
                .with_error_code(code)
                .with_error_message((!message.is_empty()).then(|| StrBytes::from_string(message)));
        }
    };
    // The partitions start afresh: whatever this broker held of them in memory goes.
    context.shares.forget_group(&group);
    merge(&mut answers, valid, &results);
    AlterShareGroupOffsetsResponse::default().with_responses(answers)
}

/// Adds the coordinator's `results` for the `valid` topics to the `answers` the broker made.
fn merge(
    answers: &mut Vec<AlterShareGroupOffsetsResponseTopic>,
    valid: Vec<AlterTopic>,
    results: &[((ferrolog_storage::manager::TopicId, i32), i16)],
) {
    for topic in valid {
        let partitions = results
            .iter()
            .filter(|((id, _), _)| *id == topic.id)
            .map(|((_, partition), code)| {
                AlterShareGroupOffsetsResponsePartition::default()
                    .with_partition_index(*partition)
                    .with_error_code(*code)
            })
            .collect::<Vec<_>>();
        match answers
            .iter_mut()
            .find(|t| t.topic_name.0.as_str() == topic.name)
        {
            Some(existing) => existing.partitions.extend(partitions),
            None => answers.push(
                AlterShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(kafka_protocol::messages::TopicName(StrBytes::from_string(
                        topic.name,
                    )))
                    .with_topic_id(uuid::Uuid::from_bytes(topic.id.0))
                    .with_partitions(partitions),
            ),
        }
    }
}

crate::refuse::refused_at_top_level!(AlterShareGroupOffsetsRequest => AlterShareGroupOffsetsResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::alter_share_group_offsets_request::{
        AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
    };
    use kafka_protocol::messages::{AlterShareGroupOffsetsRequest, GroupId, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for AlterShareGroupOffsetsRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            let partition = AlterShareGroupOffsetsRequestPartition::default()
                .with_partition_index(0)
                .with_start_offset(0);
            let topic = AlterShareGroupOffsetsRequestTopic::default()
                .with_topic_name(TopicName(text(topic)))
                .with_partitions(vec![partition]);
            (
                0,
                AlterShareGroupOffsetsRequest::default()
                    .with_group_id(GroupId(text(&crate::probes::share_group_of(group))))
                    .with_topics(vec![topic]),
            )
        }
    }
}
