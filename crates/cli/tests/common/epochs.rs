//! What a broker answers about its partitions' leader epochs, gathered in Kafka's protocol so
//! that ferrolog and Kafka serving the same data can be compared: the epoch Metadata gives,
//! the epochs ListOffsets gives with its earliest, latest and max-timestamp offsets, and
//! OffsetForLeaderEpoch around the partition's epoch, with the current epoch checked.

use std::collections::BTreeMap;
use std::net::TcpStream;

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, TopicName,
};

use super::wire::{connect, name, send};

/// One partition's epoch answers.
#[derive(Debug, PartialEq, Eq)]
pub struct EpochAnswers {
    /// The leader epoch Metadata (v12) gives.
    pub leader_epoch: i32,
    /// (timestamp asked, error, offset, leader epoch) for earliest, latest and max timestamp.
    pub list_offsets: Vec<(i64, i16, i64, i32)>,
    /// (current epoch sent, epoch asked, error, epoch answered, end offset).
    pub epoch_ends: Vec<(i32, i32, i16, i32, i64)>,
}

/// The epoch answers of every partition of `topics` (name, partition count).
pub fn epoch_answers(port: u16, topics: &[(String, i32)]) -> BTreeMap<(String, i32), EpochAnswers> {
    let mut stream = connect(port);
    let metadata: MetadataResponse = send(
        &mut stream,
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(None),
    )
    .unwrap();
    let mut epochs = BTreeMap::new();
    for topic in &metadata.topics {
        let topic_name = topic
            .name
            .as_ref()
            .map(|n| n.0.to_string())
            .unwrap_or_default();
        for partition in &topic.partitions {
            epochs.insert(
                (topic_name.clone(), partition.partition_index),
                partition.leader_epoch,
            );
        }
    }
    let mut answers = BTreeMap::new();
    for (topic, count) in topics {
        for partition in 0..*count {
            let leader_epoch = epochs[&(topic.clone(), partition)];
            let list_offsets = [-2, -1, -3]
                .into_iter()
                .map(|timestamp| list_offsets_epoch(&mut stream, topic, partition, timestamp))
                .collect();
            let mut asked: Vec<(i32, i32)> =
                [-1, 0, 1, leader_epoch - 1, leader_epoch, leader_epoch + 1]
                    .into_iter()
                    .map(|epoch| (leader_epoch, epoch))
                    .collect();
            asked.extend([
                (-1, leader_epoch),
                (leader_epoch - 1, 0),
                (leader_epoch + 1, 0),
            ]);
            asked.sort();
            asked.dedup();
            let epoch_ends = asked
                .into_iter()
                .map(|(current, epoch)| {
                    let (error, found, end) =
                        epoch_end(&mut stream, topic, partition, current, epoch);
                    (current, epoch, error, found, end)
                })
                .collect();
            answers.insert(
                (topic.clone(), partition),
                EpochAnswers {
                    leader_epoch,
                    list_offsets,
                    epoch_ends,
                },
            );
        }
    }
    answers
}

fn list_offsets_epoch(
    stream: &mut TcpStream,
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> (i64, i16, i64, i32) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(timestamp),
                ]),
        ]);
    let answer: ListOffsetsResponse = send(stream, ApiKey::ListOffsets, 7, &request).unwrap();
    let answer = &answer.topics[0].partitions[0];
    (
        timestamp,
        answer.error_code,
        answer.offset,
        answer.leader_epoch,
    )
}

/// OffsetForLeaderEpoch (v4) of one partition: (error, epoch, end offset).
pub fn epoch_end(
    stream: &mut TcpStream,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
    leader_epoch: i32,
) -> (i16, i32, i64) {
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            OffsetForLeaderTopic::default()
                .with_topic(TopicName(name(topic)))
                .with_partitions(vec![
                    OffsetForLeaderPartition::default()
                        .with_partition(partition)
                        .with_current_leader_epoch(current_leader_epoch)
                        .with_leader_epoch(leader_epoch),
                ]),
        ]);
    let answer: OffsetForLeaderEpochResponse =
        send(stream, ApiKey::OffsetForLeaderEpoch, 4, &request).unwrap();
    let answer = &answer.topics[0].partitions[0];
    (answer.error_code, answer.leader_epoch, answer.end_offset)
}
