//! DescribeTransactions: each transactional id's state as its coordinator holds it (state
//! name, producer id and epoch, timeout, when the transaction began, its partitions), what
//! `kafka-transactions describe` and `find-hanging` read. As Kafka checks it: DESCRIBE on each
//! id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), an empty id INVALID_REQUEST, an unknown one
//! TRANSACTIONAL_ID_NOT_FOUND; topics the session may not describe are left out of the answer.

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let states = request
        .transactional_ids
        .into_iter()
        .map(|id| {
            let answer = TransactionState::default().with_transactional_id(id.clone());
            if !asked.allows(ResourceType::TransactionalId, &id) {
                return answer.with_error_code(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
            }
            if id.is_empty() {
                return answer.with_error_code(errors::INVALID_REQUEST);
            }
            let Some(described) = context.transactions.describe(&id) else {
                return answer.with_error_code(errors::TRANSACTIONAL_ID_NOT_FOUND);
            };
            let mut topics: Vec<TopicData> = Vec::new();
            for (topic, partition) in described.partitions {
                if !asked.may(AclOperation::Describe, ResourceType::Topic, &topic) {
                    continue;
                }
                match topics.last_mut() {
                    Some(last) if last.topic.0.as_str() == topic => last.partitions.push(partition),
                    _ => topics.push(
                        TopicData::default()
                            .with_topic(TopicName(StrBytes::from_string(topic)))
                            .with_partitions(vec![partition]),
                    ),
                }
            }
            answer
                .with_transaction_state(StrBytes::from_static_str(described.state.name()))
                .with_transaction_timeout_ms(described.timeout_ms)
                .with_transaction_start_time_ms(described.start_ms)
                .with_producer_id(ProducerId(described.producer_id))
                .with_producer_epoch(described.producer_epoch.value())
                .with_topics(topics)
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{DescribeTransactionsRequest, TransactionalId};

    use crate::probes::{Probed, text};

    impl Probed for DescribeTransactionsRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![TransactionalId(text(group))]);
            (0, request)
        }
    }
}
