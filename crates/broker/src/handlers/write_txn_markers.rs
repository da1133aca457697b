//! WriteTxnMarkers (v1): COMMIT or ABORT markers written straight to partitions, what a
//! transaction coordinator sends partition leaders and what `kafka-transactions abort` sends to
//! end a hanging transaction. Needs ALTER on the cluster, or CLUSTER_ACTION as the table
//! declares (CLUSTER_AUTHORIZATION_FAILED on every partition). Each partition's marker is
//! checked against its producer state as a coordinator's is (an older producer epoch is
//! INVALID_PRODUCER_EPOCH, an older coordinator epoch TRANSACTION_COORDINATOR_FENCED); a
//! partition this broker does not hold is UNKNOWN_TOPIC_OR_PARTITION; a marker for a group's
//! `__consumer_offsets` partition also ends the producer's pending offsets there.

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};

use ferrolog_storage::log::MarkerRequest;
use ferrolog_storage::producer::MarkerKind;
use ferrolog_storage::{CoordinatorEpoch, ProducerEpoch, TopicPartition};

use crate::authz::Asked;
use crate::group::offsets_topic::OFFSETS_TOPIC;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    _asked: &Asked<'_>,
    request: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    let markers = request
        .markers
        .into_iter()
        .map(|marker| {
            let request = MarkerRequest {
                producer_id: marker.producer_id.0,
                epoch: ProducerEpoch::new(marker.producer_epoch),
                coordinator_epoch: CoordinatorEpoch::new(marker.coordinator_epoch),
                kind: if marker.transaction_result {
                    MarkerKind::Commit
                } else {
                    MarkerKind::Abort
                },
            };
            let topics = marker
                .topics
                .into_iter()
                .map(|topic| {
                    let partitions = topic
                        .partition_indexes
                        .iter()
                        .map(|&partition| {
                            let code = write(context, &topic.name.0, partition, request);
                            WritableTxnMarkerPartitionResult::default()
                                .with_partition_index(partition)
                                .with_error_code(code)
                        })
                        .collect();
                    WritableTxnMarkerTopicResult::default()
                        .with_name(topic.name)
                        .with_partitions(partitions)
                })
                .collect();
            WritableTxnMarkerResult::default()
                .with_producer_id(marker.producer_id)
                .with_topics(topics)
        })
        .collect();
    WriteTxnMarkersResponse::default().with_markers(markers)
}

/// Writes one marker; its error code.
fn write(context: &Context, topic: &str, partition: i32, marker: MarkerRequest) -> i16 {
    let topic_partition = TopicPartition::new(topic, partition);
    let written = if topic == OFFSETS_TOPIC {
        context.groups.complete_txn(partition, marker, false)
    } else {
        match context.manager.get(&topic_partition) {
            Some(log) => log.append_marker(marker, false).map(|_| true),
            None => Ok(false),
        }
    };
    match written {
        Ok(true) => {
            context.fetch_waiters.wake(&topic_partition);
            errors::NONE
        }
        Ok(false) => errors::UNKNOWN_TOPIC_OR_PARTITION,
        Err(error) => {
            tracing::debug!(partition = %topic_partition, %error, "a transaction marker was refused");
            errors::code_of(&error)
        }
    }
}

impl crate::refuse::Refuse for WriteTxnMarkersRequest {
    /// Every partition is answered with the refusal.
    fn refused(&self, _version: i16, code: i16) -> WriteTxnMarkersResponse {
        let markers = self
            .markers
            .iter()
            .map(|marker| {
                let topics = marker
                    .topics
                    .iter()
                    .map(|topic| {
                        let partitions = topic
                            .partition_indexes
                            .iter()
                            .map(|&partition| {
                                WritableTxnMarkerPartitionResult::default()
                                    .with_partition_index(partition)
                                    .with_error_code(code)
                            })
                            .collect();
                        WritableTxnMarkerTopicResult::default()
                            .with_name(topic.name.clone())
                            .with_partitions(partitions)
                    })
                    .collect();
                WritableTxnMarkerResult::default()
                    .with_producer_id(marker.producer_id)
                    .with_topics(topics)
            })
            .collect();
        WriteTxnMarkersResponse::default().with_markers(markers)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::write_txn_markers_request::{
        WritableTxnMarker, WritableTxnMarkerTopic,
    };
    use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};

    use crate::probes::{Probed, text};

    impl Probed for WriteTxnMarkersRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            // An ABORT for a producer the partition does not know: harmless once allowed.
            let request = WriteTxnMarkersRequest::default().with_markers(vec![
                WritableTxnMarker::default()
                    .with_producer_id(ProducerId(i64::MAX))
                    .with_topics(vec![
                        WritableTxnMarkerTopic::default()
                            .with_name(TopicName(text(topic)))
                            .with_partition_indexes(vec![0]),
                    ]),
            ]);
            (1, request)
        }
    }
}
