//! A full disk as clients see it: on a small file system filled by another program, Produce
//! answers KAFKA_STORAGE_ERROR (retriable: clients retry), while Fetch still returns every
//! acknowledged record, Metadata still shows the partition led, and DescribeLogDirs shows the
//! directory healthy; once space is freed, Produce succeeds again.
//!
//! Mounting needs root; where it cannot be done the test says it was skipped.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use bytes::Bytes;
use common::{Broker, Client};
use ferrolog_broker::BrokerConfig;
use ferrolog_records::EntryIter;
use ferrolog_storage::LogConfig;
use ferrolog_storage::manager::ManagerConfig;
use ferrolog_testkit::{FileSystemKind, SmallFileSystem, fill_disk};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, DescribeLogDirsRequest, DescribeLogDirsResponse, FetchRequest, FetchResponse,
    MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const KAFKA_STORAGE_ERROR: i16 = 56;

fn topic() -> TopicName {
    TopicName(StrBytes::from_static_str("events"))
}

async fn produce(client: &mut Client, round: usize) -> i16 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let batch = ferrolog_testkit::sized_batch(4000 + round % 7, now);
    client
        .produce("events", 0, Bytes::from(batch))
        .await
        .error_code
}

/// Batches a fetch loop reads from offset 0 to the end.
async fn fetch_all(client: &mut Client) -> usize {
    let mut offset = 0;
    let mut batches = 0;
    loop {
        let response: FetchResponse = client
            .send(
                ApiKey::Fetch,
                12,
                &FetchRequest::default()
                    .with_max_bytes(1 << 20)
                    .with_topics(vec![
                        FetchTopic::default()
                            .with_topic(topic())
                            .with_partitions(vec![
                                FetchPartition::default()
                                    .with_fetch_offset(offset)
                                    .with_partition_max_bytes(1 << 20),
                            ]),
                    ]),
            )
            .await;
        let partition = &response.responses[0].partitions[0];
        assert_eq!(
            partition.error_code, 0,
            "reads go on while the disk is full"
        );
        let records = partition.records.clone().unwrap_or_default();
        if records.is_empty() {
            return batches;
        }
        for entry in EntryIter::new(&records) {
            let (_, entry) = entry.unwrap();
            entry.validate().unwrap();
            offset = entry.next_offset();
            batches += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_are_told_of_a_full_disk_and_readers_are_served() {
    let Some(disk) = SmallFileSystem::mount(FileSystemKind::Ext4, 24) else {
        return;
    };
    let broker = Broker::start_with(
        ManagerConfig {
            log_dirs: vec![disk.path().join("data")],
            log_defaults: LogConfig {
                segment_bytes: 4 << 20,
                ..LogConfig::default()
            },
            ..ManagerConfig::default()
        },
        BrokerConfig::default(),
    )
    .await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("events", 1, &[]).await.error_code, 0);
    let mut acknowledged = 0;
    for round in 0..300 {
        assert_eq!(produce(&mut client, round).await, 0);
        acknowledged += 1;
    }

    let filler = disk.path().join("filler");
    fill_disk(&filler);
    let mut refused = 0;
    for round in 0..2000 {
        match produce(&mut client, round).await {
            0 => acknowledged += 1,
            KAFKA_STORAGE_ERROR => refused += 1,
            other => panic!("a full disk answered error {other}"),
        }
        if refused >= 20 {
            break;
        }
    }
    assert!(refused >= 20, "the disk filled");
    assert_eq!(fetch_all(&mut client).await, acknowledged);

    let metadata: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(topic())),
            ])),
        )
        .await;
    let partition = &metadata.topics[0].partitions[0];
    assert_eq!((partition.error_code, partition.leader_id.0), (0, 0));
    let dirs: DescribeLogDirsResponse = client
        .send(
            ApiKey::DescribeLogDirs,
            4,
            &DescribeLogDirsRequest::default(),
        )
        .await;
    assert_eq!(
        dirs.results[0].error_code, 0,
        "a full disk is not a failed one"
    );

    std::fs::remove_file(&filler).unwrap();
    for round in 0..20 {
        assert_eq!(produce(&mut client, round).await, 0, "appends resume");
        acknowledged += 1;
    }
    assert_eq!(fetch_all(&mut client).await, acknowledged);
}
