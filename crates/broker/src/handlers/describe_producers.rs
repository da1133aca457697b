//! DescribeProducers: each partition's active producers as its producer state holds them (id,
//! epoch, last sequence, last timestamp, coordinator epoch, the first offset of an open
//! transaction), what `kafka-transactions describe-producers` and `find-hanging` read. As in
//! Kafka, it needs READ (not DESCRIBE) on each topic; a topic without it is
//! TOPIC_AUTHORIZATION_FAILED on every partition named.

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};

use ferrolog_storage::Offset;

use super::with_logs;
use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let readable = asked.allows(ResourceType::Topic, &topic.name.0);
            let partitions = with_logs(context, &topic.name.0, topic.partition_indexes, |p| *p)
                .map(|(partition, log)| {
                    let response = PartitionResponse::default().with_partition_index(partition);
                    if !readable {
                        return response.with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
                    }
                    let Some(log) = log else {
                        return response.with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
                    };
                    let active = log
                        .producer_state()
                        .entries()
                        .into_iter()
                        .map(|entry| {
                            ProducerState::default()
                                .with_producer_id(ProducerId(entry.producer_id))
                                .with_producer_epoch(i32::from(entry.epoch.value()))
                                .with_last_sequence(
                                    entry.batches.back().map_or(-1, |batch| batch.last_seq),
                                )
                                .with_last_timestamp(entry.last_timestamp())
                                .with_coordinator_epoch(entry.coordinator_epoch.value())
                                .with_current_txn_start_offset(
                                    entry.current_txn_first_offset.map_or(-1, Offset::value),
                                )
                        })
                        .collect();
                    response.with_active_producers(active)
                })
                .collect();
            TopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    DescribeProducersResponse::default().with_topics(topics)
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::describe_producers_request::TopicRequest;
    use kafka_protocol::messages::{DescribeProducersRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for DescribeProducersRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = DescribeProducersRequest::default().with_topics(vec![
                TopicRequest::default()
                    .with_name(TopicName(text(topic)))
                    .with_partition_indexes(vec![0]),
            ]);
            (0, request)
        }
    }
}
