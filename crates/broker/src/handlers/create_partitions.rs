//! CreatePartitions: more partitions for an existing topic, all on this node, any manual
//! assignment checked as Kafka's controller checks it (one list per added partition, this
//! node's id alone). Needs ALTER on each topic (TOPIC_AUTHORIZATION_FAILED, whether it exists
//! or not).

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;

use ferrolog_storage::TopicPartition;

use super::{internal_topics, partitions_of, replica_assignment, throttling};
use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::quotas::mutations::Mutations;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let alterable: Vec<bool> = request
        .topics
        .iter()
        .map(|topic| asked.allows(ResourceType::Topic, &topic.name.0))
        .collect();
    let existing: Vec<i32> = request
        .topics
        .iter()
        .map(|topic| partitions_of(context, &topic.name.0).len() as i32)
        .collect();
    let requested: i64 = request
        .topics
        .iter()
        .zip(&existing)
        .zip(&alterable)
        .filter(|(_, alterable)| **alterable)
        .map(|((topic, existing), _)| (i64::from(topic.count) - i64::from(*existing)).max(0))
        .sum();
    let too_many = requested > errors::MAX_PARTITIONS_PER_REQUEST;
    let mut quota = throttling::mutations(context, asked, STRICT_QUOTA_FROM);
    let results = request
        .topics
        .into_iter()
        .zip(existing)
        .zip(alterable)
        .map(|((topic, existing), alterable)| {
            let name = topic.name.0.to_string();
            let result = CreatePartitionsTopicResult::default().with_name(topic.name.clone());
            if !alterable {
                // Whether the topic exists or not; Kafka sends no message with it.
                return result.with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
            }
            let outcome = if too_many {
                Err((
                    errors::POLICY_VIOLATION,
                    errors::TOO_MANY_PARTITIONS_PER_REQUEST.to_owned(),
                ))
            } else {
                grow(
                    context,
                    &name,
                    &topic,
                    existing,
                    (request.validate_only, &mut quota),
                )
            };
            match outcome {
                Ok(()) => result,
                // Kafka leaves out the text of a spent quota, its error's own.
                Err((errors::THROTTLING_QUOTA_EXCEEDED, _)) => {
                    result.with_error_code(errors::THROTTLING_QUOTA_EXCEEDED)
                }
                Err((code, message)) => result
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
            }
        })
        .collect();
    let throttle = throttling::mutated(asked.session(), &quota);
    CreatePartitionsResponse::default()
        .with_results(results)
        .with_throttle_time_ms(throttle)
}

/// The first version whose topics are refused once the client's controller mutation quota is
/// spent (older ones are only throttled), as in Kafka.
const STRICT_QUOTA_FROM: i16 = 3;

/// Grows `name` from `existing` partitions to the count `topic` asks for, after Kafka's
/// checks (only checking when `validate_only`); the error code and message otherwise.
fn grow(
    context: &Context,
    name: &str,
    topic: &kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic,
    existing: i32,
    (validate_only, quota): (bool, &mut Mutations<'_>),
) -> Result<(), (i16, String)> {
    if existing == 0 {
        return Err((
            errors::UNKNOWN_TOPIC_OR_PARTITION,
            format!("topic {name} does not exist"),
        ));
    }
    if let Some(refusal) = internal_topics::repartition_refusal(name) {
        return Err(refusal);
    }
    if topic.count <= existing {
        return Err((
            errors::INVALID_PARTITIONS,
            format!("topic {name} has {existing} partitions; the count can only grow"),
        ));
    }
    // An empty list is taken for none, as some clients send one instead of null.
    if let Some(assignments) = topic.assignments.as_ref().filter(|a| !a.is_empty()) {
        let assignments: Vec<Vec<i32>> = assignments
            .iter()
            .map(|a| a.broker_ids.iter().map(|id| id.0).collect())
            .collect();
        let node = context.manager.node_id();
        replica_assignment::added_partitions(&assignments, topic.count - existing, 1, node)?;
    }
    let refusal =
        |error: ferrolog_storage::StorageError| (errors::code_of(&error), error.to_string());
    context
        .manager
        .check_room_for((topic.count - existing) as usize)
        .map_err(refusal)?;
    // Counted once the growth passed its checks, validate-only too, as Kafka counts it.
    let added = (topic.count - existing) as usize;
    if !quota.admit(added, throttling::now_ms(context)) {
        return Err((errors::THROTTLING_QUOTA_EXCEEDED, String::new()));
    }
    if validate_only {
        return Ok(());
    }
    let added: Vec<TopicPartition> = (existing..topic.count)
        .map(|partition| TopicPartition::new(name.to_owned(), partition))
        .collect();
    context.manager.create_all(&added).map_err(refusal)?;
    tracing::info!(topic = name, partitions = topic.count, "added partitions");
    Ok(())
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
    use kafka_protocol::messages::{CreatePartitionsRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for CreatePartitionsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = CreatePartitionsRequest::default()
                .with_timeout_ms(30_000)
                .with_validate_only(true)
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(TopicName(text(topic)))
                        .with_count(2),
                ]);
            (3, request)
        }
    }
}
