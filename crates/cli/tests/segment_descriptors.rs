//! A client that rolls a segment per record (Kafka's `internal.segment.bytes`, which any client
//! may set, at 100 bytes) cannot make the broker run out of file descriptors or memory
//! mappings: under a limit of 512 descriptors, 1,500 one-record produces leave the broker
//! holding far fewer, and at most two mappings for each of the 100 sealed segments it may keep
//! open; a new topic is created beside them, and every record reads back.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use bytes::Bytes;
use common::Server;
use common::wire::{connect, create_topic, name, send};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, TopicName,
};

const FILE_LIMIT: usize = 512;
const RECORDS: usize = 1500;

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// The offset and time indexes the broker has mapped now.
fn mapped_indexes(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap()
        .lines()
        .map(|line| line.trim_end_matches(" (deleted)"))
        .filter(|line| line.ends_with(".index") || line.ends_with(".timeindex"))
        .count()
}

#[test]
fn tiny_segments_by_the_thousand_leave_the_broker_descriptors_to_spare() {
    if !common::prlimit_works() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let limit = format!("--nofile={FILE_LIMIT}:{FILE_LIMIT}");
    let server = Server::start_under(
        &["prlimit", &limit],
        &temp.path().join("data"),
        &["ferrolog.max.open.sealed.segments=100"],
        "warn",
    );
    let port = server.port;
    assert_eq!(
        create_topic(port, "tiny", 1, &[("internal.segment.bytes", "100")]),
        0
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut stream = connect(port);
    for i in 0..RECORDS {
        let records = Bytes::from(ferrolog_testkit::numbered_batch(i, 1, now));
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(name("tiny")))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(records)),
                    ]),
            ]);
        let produced: ProduceResponse = send(&mut stream, ApiKey::Produce, 9, &request).unwrap();
        let answer = &produced.responses[0].partition_responses[0];
        assert_eq!(
            (answer.error_code, answer.base_offset),
            (0, i as i64),
            "record {i}"
        );
    }
    let held = open_descriptors(server.pid());
    assert!(held < 300, "{held} descriptors held for {RECORDS} segments");
    let mapped = mapped_indexes(server.pid());
    assert!(
        mapped <= 200,
        "{mapped} indexes mapped for {RECORDS} segments"
    );
    assert_eq!(
        create_topic(port, "beside", 4, &[]),
        0,
        "a new topic still gets its files"
    );

    // Every record reads back, segment after segment.
    let mut next = 0i64;
    while next < RECORDS as i64 {
        let request = FetchRequest::default()
            .with_max_wait_ms(0)
            .with_max_bytes(1 << 20)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(TopicName(name("tiny")))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_fetch_offset(next)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]);
        let fetched: FetchResponse = send(&mut stream, ApiKey::Fetch, 11, &request).unwrap();
        let partition = &fetched.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0);
        let records = partition.records.clone().unwrap_or_default();
        let (values, after) = ferrolog_testkit::fetched_records(&records);
        assert!(!values.is_empty(), "records at {next}");
        next = after.unwrap();
    }
    let held = open_descriptors(server.pid());
    assert!(
        held < 300,
        "{held} descriptors held after reading every segment"
    );
    let mapped = mapped_indexes(server.pid());
    assert!(
        mapped <= 200,
        "{mapped} indexes mapped after reading every segment"
    );
    server.stop();
}
