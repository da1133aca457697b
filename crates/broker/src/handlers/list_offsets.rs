//! ListOffsets: earliest (−2), latest (−1), max timestamp (−3), or the first offset at or after
//! a timestamp, per partition. Needs DESCRIBE on each topic; a topic without it is
//! TOPIC_AUTHORIZATION_FAILED on every partition named, whether it exists or not.
//!
//! As in Kafka, what a consumer of the request's isolation level may fetch bounds the answer:
//! latest is the high watermark, or for `read_committed` (1) the last stable offset, and a
//! lookup that lands at or past that bound finds nothing (offset and timestamp −1).
//!
//! From v4 a current leader epoch other than −1 is checked as OffsetForLeaderEpoch checks it
//! (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH), and the answer carries a leader epoch: the
//! partition's for the latest offset, the epoch the found record was written in otherwise.

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use ferrolog_storage::Offset;
use ferrolog_storage::log::special_timestamps;

use super::offset_for_leader_epoch::check_current_epoch;
use super::with_logs;
use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let version = asked.version();
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let described = asked.allows(ResourceType::Topic, &topic.name.0);
            let partitions = with_logs(context, &topic.name.0, topic.partitions, |partition| {
                partition.partition_index
            })
            .map(|(partition, log)| {
                let response = ListOffsetsPartitionResponse::default()
                    .with_partition_index(partition.partition_index);
                if !described {
                    return response
                        .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
                        .with_timestamp(-1)
                        .with_offset(-1);
                }
                let Some(log) = log else {
                    return response.with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
                };
                let leader_epoch = log.leader_epoch().value();
                if let Err(code) = check_current_epoch(leader_epoch, partition.current_leader_epoch)
                {
                    return response.with_error_code(code);
                }
                // The epoch of the offset found: the partition's for the latest, else the one
                // its record was written in (−1 where the cache does not know it).
                let epoch_of = |offset: i64| {
                    let epoch = log.epoch_for_offset(Offset::new(offset));
                    if version >= 4 {
                        epoch.map_or(-1, |epoch| epoch.value())
                    } else {
                        -1
                    }
                };
                let watermarks = log.watermarks();
                let fetchable = if request.isolation_level == 1 {
                    watermarks.last_stable_offset
                } else {
                    watermarks.high_watermark
                };
                if partition.timestamp == special_timestamps::LATEST {
                    return response
                        .with_timestamp(-1)
                        .with_offset(fetchable.value())
                        .with_leader_epoch(if version >= 4 { leader_epoch } else { -1 });
                }
                match log.fetch_offset_by_timestamp(partition.timestamp) {
                    Ok(Some(found))
                        if partition.timestamp == special_timestamps::EARLIEST
                            || found.offset < fetchable =>
                    {
                        response
                            .with_timestamp(found.timestamp)
                            .with_offset(found.offset.value())
                            .with_leader_epoch(epoch_of(found.offset.value()))
                    }
                    Ok(_) => response.with_timestamp(-1).with_offset(-1),
                    Err(error) => response.with_error_code(errors::code_of(&error)),
                }
            })
            .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for ListOffsetsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(vec![
                    ListOffsetsTopic::default()
                        .with_name(TopicName(text(topic)))
                        .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)]),
                ]);
            (7, request)
        }
    }
}
