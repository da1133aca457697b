//! AddPartitionsToTxn (v0–3, the client's form): the partitions a transactional producer is
//! about to write join its ongoing transaction, as Kafka checks it: WRITE on the transactional
//! id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), WRITE on each topic (internal
//! topics always refused, TOPIC_AUTHORIZATION_FAILED), each partition known
//! (UNKNOWN_TOPIC_OR_PARTITION); if any partition fails, the others get OPERATION_NOT_ATTEMPTED
//! and nothing is added. Otherwise the coordinator's answer goes to every partition. Versions 4
//! and 5, which brokers send each other, are not served: ferrolog has no other brokers.

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};

use ferrolog_storage::{ProducerEpoch, TopicPartition};

use super::internal_topics;
use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let transactional_id = request.v3_and_below_transactional_id.0.to_string();
    let topics = &request.v3_and_below_topics;
    // Each partition's own refusal, if any (WRITE on the transactional id was checked before).
    let refusals: Vec<Vec<Option<i16>>> = topics
        .iter()
        .map(|topic| {
            let name = topic.name.0.as_str();
            let topic_refusal = if internal_topics::is_internal(name) {
                Some(errors::TOPIC_AUTHORIZATION_FAILED)
            } else {
                asked.refusal(ResourceType::Topic, name)
            };
            topic
                .partitions
                .iter()
                .map(|partition| {
                    topic_refusal.or_else(|| {
                        let known = context
                            .manager
                            .get(&TopicPartition::new(name, *partition))
                            .is_some();
                        (!known).then_some(errors::UNKNOWN_TOPIC_OR_PARTITION)
                    })
                })
                .collect()
        })
        .collect();
    let any_refused = refusals.iter().flatten().any(Option::is_some);
    let all = if any_refused {
        errors::OPERATION_NOT_ATTEMPTED
    } else if transactional_id.is_empty() {
        errors::INVALID_REQUEST
    } else {
        let partitions: Vec<(String, i32)> = topics
            .iter()
            .flat_map(|topic| {
                topic
                    .partitions
                    .iter()
                    .map(|partition| (topic.name.0.to_string(), *partition))
            })
            .collect();
        let code = context.transactions.add_partitions(
            &transactional_id,
            request.v3_and_below_producer_id.0,
            ProducerEpoch::new(request.v3_and_below_producer_epoch),
            &partitions,
            0,
        );
        super::downgrade_producer_fenced(code, asked.version(), 2)
    };
    let results = request
        .v3_and_below_topics
        .into_iter()
        .zip(refusals)
        .map(|(topic, refusals)| {
            let partitions = topic
                .partitions
                .iter()
                .zip(refusals)
                .map(|(partition, refusal)| {
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*partition)
                        .with_partition_error_code(refusal.unwrap_or(all))
                })
                .collect();
            AddPartitionsToTxnTopicResult::default()
                .with_name(topic.name)
                .with_results_by_partition(partitions)
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results)
}

impl crate::refuse::Refuse for AddPartitionsToTxnRequest {
    /// Every partition is answered with the refusal.
    fn refused(&self, _version: i16, code: i16) -> AddPartitionsToTxnResponse {
        let results = self
            .v3_and_below_topics
            .iter()
            .map(|topic| {
                let partitions = topic
                    .partitions
                    .iter()
                    .map(|partition| {
                        AddPartitionsToTxnPartitionResult::default()
                            .with_partition_index(*partition)
                            .with_partition_error_code(code)
                    })
                    .collect();
                AddPartitionsToTxnTopicResult::default()
                    .with_name(topic.name.clone())
                    .with_results_by_partition(partitions)
            })
            .collect();
        AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    use kafka_protocol::messages::{
        AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId,
    };

    use crate::probes::{Probed, text};

    impl Probed for AddPartitionsToTxnRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            let request = AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(text(group)))
                .with_v3_and_below_producer_id(ProducerId(0))
                .with_v3_and_below_topics(vec![
                    AddPartitionsToTxnTopic::default()
                        .with_name(TopicName(text(topic)))
                        .with_partitions(vec![0]),
                ]);
            (3, request)
        }
    }
}
