//! The answers a broker gives about a set of partitions and groups, gathered in Kafka's
//! protocol so that two brokers (ferrolog and Kafka itself) serving the same data can be
//! compared: ListOffsets (earliest, latest, max timestamp, by timestamp), every record byte
//! from the log start to the end, OffsetFetch and the topic ids in Metadata.

use std::collections::BTreeMap;
use std::net::TcpStream;

use ferrolog_records::batch::RecordBatch;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, GroupId, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};

use super::wire::{connect, name, send};

/// ListOffsets' special timestamps.
pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;

/// What a broker answers about one partition.
#[derive(Debug, PartialEq, Eq)]
pub struct PartitionAnswers {
    /// (timestamp asked, error, offset, timestamp) for earliest, latest and max timestamp.
    pub special_offsets: Vec<(i64, i16, i64, i64)>,
    /// (timestamp asked, error, offset, timestamp) for record timestamps.
    pub by_timestamp: Vec<(i64, i16, i64, i64)>,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    /// Every record batch from the log start to the end, as fetched.
    pub records: Vec<u8>,
}

/// (topic, partition) -> (offset, metadata, error), as OffsetFetch answers.
pub type CommittedOffsets = BTreeMap<(String, i32), (i64, Option<String>, i16)>;

/// What a broker answers about every topic and group.
#[derive(Debug, PartialEq, Eq)]
pub struct Answers {
    pub partitions: BTreeMap<(String, i32), PartitionAnswers>,
    /// Per group, its committed offsets.
    pub groups: BTreeMap<String, CommittedOffsets>,
    /// Every topic's id, as Metadata (v12) gives it.
    pub topic_ids: BTreeMap<String, String>,
    /// KIP-848 groups as ConsumerGroupDescribe shows them, for the tests that read them.
    pub consumer_groups: Vec<String>,
}

pub fn list_offsets(
    stream: &mut TcpStream,
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> (i16, i64, i64) {
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
    (answer.error_code, answer.offset, answer.timestamp)
}

/// Fetches `topic`/`partition` from `offset`: (records, high watermark, log start).
pub fn fetch(
    stream: &mut TcpStream,
    topic: &str,
    partition: i32,
    offset: i64,
) -> (Vec<u8>, i64, i64) {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(64 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(name(topic)))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(64 << 20),
                ]),
        ]);
    let answer: FetchResponse = send(stream, ApiKey::Fetch, 12, &request).unwrap();
    let answer = &answer.responses[0].partitions[0];
    assert_eq!(
        answer.error_code, 0,
        "fetch {topic}-{partition} at {offset}"
    );
    (
        answer
            .records
            .as_ref()
            .map(|r| r.to_vec())
            .unwrap_or_default(),
        answer.high_watermark,
        answer.log_start_offset,
    )
}

/// The batches in `records`: (base offset, first timestamp, next offset).
pub fn batches(records: &[u8]) -> Vec<(i64, i64, i64)> {
    let mut found = Vec::new();
    let mut rest = records;
    while let Ok(batch) = RecordBatch::parse_prefix(rest) {
        found.push((
            batch.base_offset(),
            batch.base_timestamp(),
            batch.next_offset(),
        ));
        rest = &rest[batch.size_in_bytes()..];
    }
    assert!(rest.is_empty(), "whole batches only");
    found
}

pub fn partition_answers(stream: &mut TcpStream, topic: &str, partition: i32) -> PartitionAnswers {
    let (_, earliest, _) = list_offsets(stream, topic, partition, EARLIEST);
    let mut records = Vec::new();
    let mut offset = earliest;
    let (high_watermark, log_start_offset) = loop {
        let (bytes, watermark, start) = fetch(stream, topic, partition, offset);
        let Some(&(_, _, next)) = batches(&bytes).last() else {
            break (watermark, start);
        };
        records.extend_from_slice(&bytes);
        offset = next;
    };
    // Timestamps to look up: before everything, the first record of the middle batch, and
    // after everything.
    let all = batches(&records);
    let middle = all.get(all.len() / 2).map_or(0, |batch| batch.1);
    let mut ask = |timestamps: &[i64]| -> Vec<(i64, i16, i64, i64)> {
        timestamps
            .iter()
            .map(|&timestamp| {
                let (error, offset, found) = list_offsets(stream, topic, partition, timestamp);
                (timestamp, error, offset, found)
            })
            .collect()
    };
    PartitionAnswers {
        special_offsets: ask(&[EARLIEST, LATEST, MAX_TIMESTAMP]),
        by_timestamp: ask(&[0, middle, i64::MAX / 2]),
        high_watermark,
        log_start_offset,
        records,
    }
}

/// What the broker on `port` answers about `topics` (name, partition count) and `groups`.
pub fn answers(port: u16, topics: &[(String, i32)], groups: &[&str]) -> Answers {
    let mut stream = connect(port);
    let mut partitions = BTreeMap::new();
    for (topic, count) in topics {
        for partition in 0..*count {
            partitions.insert(
                (topic.clone(), partition),
                partition_answers(&mut stream, topic, partition),
            );
        }
    }
    let groups = committed_offsets(&mut stream, groups)
        .into_iter()
        .map(|(group, offsets)| {
            let offsets =
                offsets.unwrap_or_else(|code| panic!("OffsetFetch of {group}: error {code}"));
            (group, offsets)
        })
        .collect();
    let metadata: MetadataResponse = send(
        &mut stream,
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(None),
    )
    .unwrap();
    let topic_ids = metadata
        .topics
        .iter()
        .map(|topic| {
            let name = topic
                .name
                .as_ref()
                .map(|name| name.0.to_string())
                .unwrap_or_default();
            (name, topic.topic_id.to_string())
        })
        .collect();
    Answers {
        partitions,
        groups,
        topic_ids,
        consumer_groups: Vec::new(),
    }
}

/// The answer a timestamp lookup must give, read off the fetched records themselves: the first
/// record from the log start on at or after `timestamp`, or none (offset and timestamp −1).
pub fn first_record_at_or_after(records: &[u8], log_start: i64, timestamp: i64) -> (i16, i64, i64) {
    let (records, _) = ferrolog_testkit::fetched_records(records);
    records
        .iter()
        .find(|record| record.offset >= log_start && record.timestamp >= timestamp)
        .map_or((0, -1, -1), |record| (0, record.offset, record.timestamp))
}

/// Checks ferrolog's answers about one partition against Kafka's, when both serve the same
/// data. Every answer must be the same but one, a deliberate difference (docs/operations.md):
/// Kafka 4.4 looks a timestamp up only in the first segment whose largest timestamp reaches
/// it, and takes an empty segment's file time for its largest timestamp, so behind a segment
/// its cleaner emptied (in a topic of `cleaned`) it answers "none" although later records
/// qualify. ferrolog answers the first record that qualifies. Both are checked against the
/// records themselves.
pub fn assert_same_answers(
    key: &(String, i32),
    kafka: &PartitionAnswers,
    ours: &PartitionAnswers,
    cleaned: &[&str],
    when: &str,
) {
    assert_eq!(
        ours.special_offsets, kafka.special_offsets,
        "{when}: {key:?} earliest, latest, max timestamp"
    );
    assert_eq!(
        (ours.high_watermark, ours.log_start_offset),
        (kafka.high_watermark, kafka.log_start_offset),
        "{when}: {key:?} high watermark and log start"
    );
    assert!(
        ours.records == kafka.records,
        "{when}: {key:?} fetched records differ from Kafka's"
    );
    for (ours, theirs) in ours.by_timestamp.iter().zip(&kafka.by_timestamp) {
        let (timestamp, error, offset, found) = *ours;
        let truth = first_record_at_or_after(&kafka.records, kafka.log_start_offset, timestamp);
        assert_eq!(
            (error, offset, found),
            truth,
            "{when}: {key:?} ferrolog's offset for timestamp {timestamp}"
        );
        let kafka_answer = (theirs.1, theirs.2, theirs.3);
        assert!(
            kafka_answer == truth
                || (cleaned.contains(&key.0.as_str()) && kafka_answer == (0, -1, -1)),
            "{when}: {key:?} Kafka's offset for timestamp {timestamp}: {kafka_answer:?}, the records say {truth:?}"
        );
    }
}

/// Every group's committed offsets, as OffsetFetch (v8, all topics) answers, or the group's
/// error code.
pub fn committed_offsets(
    stream: &mut TcpStream,
    groups: &[&str],
) -> BTreeMap<String, Result<CommittedOffsets, i16>> {
    let request = OffsetFetchRequest::default().with_groups(
        groups
            .iter()
            .map(|group| {
                OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(name(group)))
                    .with_topics(None)
            })
            .collect(),
    );
    let fetched: OffsetFetchResponse = send(stream, ApiKey::OffsetFetch, 8, &request).unwrap();
    let mut committed = BTreeMap::new();
    for group in fetched.groups {
        if group.error_code != 0 {
            committed.insert(group.group_id.to_string(), Err(group.error_code));
            continue;
        }
        let mut offsets = BTreeMap::new();
        for topic in group.topics {
            for partition in topic.partitions {
                offsets.insert(
                    (topic.name.to_string(), partition.partition_index),
                    (
                        partition.committed_offset,
                        partition.metadata.map(|m| m.to_string()),
                        partition.error_code,
                    ),
                );
            }
        }
        committed.insert(group.group_id.to_string(), Ok(offsets));
    }
    committed
}

/// Waits (a minute at most) until the broker on `port` leads every partition of `topics` and
/// has loaded the offsets of `groups`: a Kafka broker just restarted answers ApiVersions a
/// moment before its partitions have their leader and its group coordinator its offsets.
pub fn wait_until_serving(port: u16, topics: &[(String, i32)], groups: &[&str]) {
    let mut stream = connect(port);
    let started = std::time::Instant::now();
    loop {
        let led = topics.iter().all(|(topic, count)| {
            (0..*count).all(|partition| list_offsets(&mut stream, topic, partition, LATEST).0 == 0)
        });
        let loaded = committed_offsets(&mut stream, groups)
            .values()
            .all(Result::is_ok);
        if led && loaded {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the broker on {port} does not serve every partition and group"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
