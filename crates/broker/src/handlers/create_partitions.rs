//! CreatePartitions: more partitions for an existing topic, all on this node.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse, RequestHeader};
use kafka_protocol::protocol::StrBytes;

use ferrolog_storage::TopicPartition;

use super::partitions_of;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    _header: &RequestHeader,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let results = request
        .topics
        .into_iter()
        .map(|topic| {
            let name = topic.name.0.to_string();
            let result = CreatePartitionsTopicResult::default().with_name(topic.name);
            let fail = |code: i16, message: String| {
                CreatePartitionsTopicResult::default()
                    .with_name(result.name.clone())
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message)))
            };
            let existing = partitions_of(context, &name).len() as i32;
            if existing == 0 {
                return fail(
                    errors::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("topic {name} does not exist"),
                );
            }
            if topic.count <= existing {
                return fail(
                    errors::INVALID_PARTITIONS,
                    format!("topic {name} has {existing} partitions; the count can only grow"),
                );
            }
            if request.validate_only {
                return result;
            }
            for partition in existing..topic.count {
                if let Err(error) = context
                    .manager
                    .get_or_create(&TopicPartition::new(name.clone(), partition))
                {
                    return fail(errors::code_of(&error), error.to_string());
                }
            }
            tracing::info!(topic = name, partitions = topic.count, "added partitions");
            result
        })
        .collect();
    CreatePartitionsResponse::default().with_results(results)
}
