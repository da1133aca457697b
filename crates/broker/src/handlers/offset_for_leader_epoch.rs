//! OffsetForLeaderEpoch: where a leader epoch of a partition ends, from its leader-epoch cache.
//! Consumers ask it to validate their positions (KIP-320): an epoch that ends below a position
//! means the log they read was cut there.
//!
//! As Kafka answers it: CLUSTER_ACTION on the cluster allows every topic, otherwise each topic
//! needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED on each partition named); the replica id is not
//! looked at. Per partition, in order: an unknown partition is UNKNOWN_TOPIC_OR_PARTITION, one
//! in an offline directory KAFKA_STORAGE_ERROR; a current leader epoch other than −1 that is
//! below the partition's is FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH; otherwise the
//! epoch found and its end offset (the log end, not the high watermark, for the latest
//! epoch), or −1 and −1 when the cache has no answer.

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use ferrolog_storage::log::Log;

use super::with_logs;
use crate::authz::{AclOperation, Asked, ResourceType};
use crate::{Context, errors};

/// The current leader epoch a request sends when it has none to check.
const NO_CURRENT_EPOCH: i32 = -1;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let cluster_action = asked.may_on_cluster(AclOperation::ClusterAction);
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let described = cluster_action || asked.allows(ResourceType::Topic, &topic.topic.0);
            let partitions = with_logs(context, &topic.topic.0, topic.partitions, |p| p.partition)
                .map(|(asked_for, log)| {
                    let answer = EpochEndOffset::default()
                        .with_partition(asked_for.partition)
                        .with_leader_epoch(-1)
                        .with_end_offset(-1);
                    if !described {
                        return answer.with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
                    }
                    let Some(log) = log else {
                        return answer.with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
                    };
                    match epoch_end(&log, asked_for.current_leader_epoch, asked_for.leader_epoch) {
                        Ok((epoch, end_offset)) => {
                            answer.with_leader_epoch(epoch).with_end_offset(end_offset)
                        }
                        Err(code) => answer.with_error_code(code),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}

/// Where `requested` ends in `log`, after the current-epoch check, or the error code.
fn epoch_end(log: &Log, current: i32, requested: i32) -> Result<(i32, i64), i16> {
    log.ensure_online()
        .map_err(|error| errors::code_of(&error))?;
    check_current_epoch(log.leader_epoch().value(), current)?;
    let end = log.end_offset_for_epoch(requested);
    Ok((end.epoch, end.end_offset))
}

/// Kafka's check of the leader epoch a client believes current against the partition's: −1
/// skips it.
pub fn check_current_epoch(leader_epoch: i32, current: i32) -> Result<(), i16> {
    if current == NO_CURRENT_EPOCH || current == leader_epoch {
        Ok(())
    } else if current < leader_epoch {
        Err(errors::FENCED_LEADER_EPOCH)
    } else {
        Err(errors::UNKNOWN_LEADER_EPOCH)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::OffsetForLeaderEpochRequest;
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };

    use crate::probes::{Probed, text};

    impl Probed for OffsetForLeaderEpochRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = OffsetForLeaderEpochRequest::default()
                .with_replica_id(kafka_protocol::messages::BrokerId(-1))
                .with_topics(vec![
                    OffsetForLeaderTopic::default()
                        .with_topic(TopicName(text(topic)))
                        .with_partitions(vec![
                            OffsetForLeaderPartition::default()
                                .with_current_leader_epoch(-1)
                                .with_leader_epoch(0),
                        ]),
                ]);
            (4, request)
        }
    }
}
