//! Leader epochs over the wire: OffsetForLeaderEpoch answered from the partition's epoch cache,
//! the partition's epoch in Metadata, ListOffsets and new batches, and the current epoch a
//! request sends checked as Kafka checks it (FENCED_LEADER_EPOCH below, UNKNOWN_LEADER_EPOCH
//! above; −1, and for Fetch any negative, skips the check).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use bytes::Bytes;
use common::{Broker, Client};
use ferrolog_records::{BatchBuilder, EntryIter, FileEntry};
use ferrolog_storage::TopicPartition;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

fn records(count: usize) -> Bytes {
    Bytes::from(ferrolog_testkit::numbered_batch(
        0,
        count,
        1_700_000_000_000,
    ))
}

/// OffsetForLeaderEpoch v4 of `t`-`partition`: (error, epoch, end offset).
async fn epoch_end(
    client: &mut Client,
    partition: i32,
    current: i32,
    asked: i32,
) -> (i16, i32, i64) {
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            OffsetForLeaderTopic::default()
                .with_topic(topic_name("t"))
                .with_partitions(vec![
                    OffsetForLeaderPartition::default()
                        .with_partition(partition)
                        .with_current_leader_epoch(current)
                        .with_leader_epoch(asked),
                ]),
        ]);
    let answer: OffsetForLeaderEpochResponse =
        client.send(ApiKey::OffsetForLeaderEpoch, 4, &request).await;
    let partition = &answer.topics[0].partitions[0];
    (
        partition.error_code,
        partition.leader_epoch,
        partition.end_offset,
    )
}

/// ListOffsets v7 of `t`-0 at `timestamp`: (error, offset, leader epoch).
async fn list_offsets(client: &mut Client, timestamp: i64, current: i32) -> (i16, i64, i32) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic_name("t"))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_timestamp(timestamp)
                        .with_current_leader_epoch(current),
                ]),
        ]);
    let answer: ListOffsetsResponse = client.send(ApiKey::ListOffsets, 7, &request).await;
    let partition = &answer.topics[0].partitions[0];
    (
        partition.error_code,
        partition.offset,
        partition.leader_epoch,
    )
}

#[tokio::test]
async fn epochs_are_answered_from_the_cache_and_current_epochs_checked() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1, &[]).await.error_code, 0);
    assert_eq!(client.produce("t", 0, records(2)).await.error_code, 0);
    // Records copied in from a leader of epoch 3 (as a move or a directory from Kafka brings
    // them): the partition goes on in epoch 3.
    let log = broker
        .context
        .manager
        .get(&TopicPartition::new("t", 0))
        .unwrap();
    let mut copied = BatchBuilder::new(2).partition_leader_epoch(3);
    copied
        .append(1_700_000_000_000, None, Some(b"x"), &[])
        .unwrap();
    copied
        .append(1_700_000_000_000, None, Some(b"y"), &[])
        .unwrap();
    log.append_as_follower(&copied.build().unwrap()).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());

    let metadata: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
        .await;
    assert_eq!(metadata.topics[0].partitions[0].leader_epoch, 3);

    assert_eq!(epoch_end(&mut client, 0, -1, 0).await, (0, 0, 2));
    assert_eq!(
        epoch_end(&mut client, 0, 3, 1).await,
        (0, 0, 2),
        "the epoch below"
    );
    assert_eq!(
        epoch_end(&mut client, 0, 3, 3).await,
        (0, 3, 4),
        "the latest: the log end"
    );
    assert_eq!(
        epoch_end(&mut client, 0, 3, 4).await,
        (0, -1, -1),
        "above the latest"
    );
    assert_eq!(epoch_end(&mut client, 0, 3, -1).await, (0, -1, -1));
    assert_eq!(
        epoch_end(&mut client, 0, 2, 3).await,
        (FENCED_LEADER_EPOCH, -1, -1)
    );
    assert_eq!(
        epoch_end(&mut client, 0, 4, 3).await,
        (UNKNOWN_LEADER_EPOCH, -1, -1)
    );
    assert_eq!(
        epoch_end(&mut client, 0, -2, 3).await,
        (FENCED_LEADER_EPOCH, -1, -1),
        "only -1 skips"
    );
    assert_eq!(
        epoch_end(&mut client, 7, -1, 0).await,
        (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    );

    // New batches carry the partition's epoch; the latest epoch ends at the new log end.
    assert_eq!(client.produce("t", 0, records(3)).await.error_code, 0);
    let fetched = client.fetch("t", 0, 0).await;
    let bytes = fetched.records.unwrap();
    let epochs: Vec<i32> = EntryIter::new(&bytes)
        .map(|entry| match entry.unwrap().1 {
            FileEntry::V2(batch) => batch.partition_leader_epoch(),
            FileEntry::Legacy(_) => panic!("a legacy entry"),
        })
        .collect();
    assert_eq!(epochs, [0, 3, 3]);
    assert_eq!(epoch_end(&mut client, 0, -1, 3).await, (0, 3, 7));

    assert_eq!(list_offsets(&mut client, -1, -1).await, (0, 7, 3), "latest");
    assert_eq!(
        list_offsets(&mut client, -2, 3).await,
        (0, 0, 0),
        "earliest"
    );
    assert_eq!(
        list_offsets(&mut client, -1, 2).await.0,
        FENCED_LEADER_EPOCH
    );
    assert_eq!(
        list_offsets(&mut client, -1, 9).await.0,
        UNKNOWN_LEADER_EPOCH
    );
}

#[tokio::test]
async fn a_fetch_naming_another_epoch_is_refused() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1, &[]).await.error_code, 0);
    assert_eq!(client.produce("t", 0, records(2)).await.error_code, 0);
    for (current, expected, count) in [
        (0, 0, 2),
        (-1, 0, 2),
        (-7, 0, 2),
        (1, UNKNOWN_LEADER_EPOCH, 0),
    ] {
        let request = kafka_protocol::messages::FetchRequest::default()
            .with_max_wait_ms(0)
            .with_max_bytes(1 << 20)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(topic_name("t"))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_fetch_offset(0)
                            .with_current_leader_epoch(current)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]);
        let answer: kafka_protocol::messages::FetchResponse =
            client.send(ApiKey::Fetch, 12, &request).await;
        let partition = &answer.responses[0].partitions[0];
        let records = partition.records.clone().unwrap_or_default();
        let fetched = ferrolog_testkit::fetched_records(&records).0.len();
        assert_eq!(
            (partition.error_code, fetched),
            (expected, count),
            "current leader epoch {current}"
        );
    }
}

#[tokio::test]
async fn a_restart_after_an_unclean_stop_starts_a_new_epoch_at_the_log_end() {
    let temp = tempfile::tempdir().unwrap();
    {
        let broker = Broker::start(temp.path()).await;
        let mut client = broker.client().await;
        assert_eq!(client.create_topic("t", 1, &[]).await.error_code, 0);
        assert_eq!(client.produce("t", 0, records(3)).await.error_code, 0);
    }
    // A clean stop cut nothing: the partition goes on in its epoch.
    {
        let broker = Broker::start(temp.path()).await;
        let mut client = broker.client().await;
        assert_eq!(epoch_end(&mut client, 0, 0, 0).await, (0, 0, 3));
        assert_eq!(client.produce("t", 0, records(1)).await.error_code, 0);
    }
    // Without the clean-shutdown marker the stop was unclean: recovery may have cut the log.
    std::fs::remove_file(temp.path().join(".kafka_cleanshutdown")).unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    let metadata: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
        .await;
    assert_eq!(metadata.topics[0].partitions[0].leader_epoch, 2);
    assert_eq!(client.produce("t", 0, records(2)).await.error_code, 0);
    // Epoch 0 ends where the log ended at the restart, whatever was written since.
    assert_eq!(epoch_end(&mut client, 0, 2, 0).await, (0, 0, 4));
    assert_eq!(epoch_end(&mut client, 0, 2, 1).await, (0, 0, 4));
    assert_eq!(epoch_end(&mut client, 0, 2, 2).await, (0, 2, 6));
    // A client that still believes epoch 0 current is fenced.
    assert_eq!(epoch_end(&mut client, 0, 0, 0).await.0, FENCED_LEADER_EPOCH);
    assert_eq!(
        list_offsets(&mut client, -1, 0).await.0,
        FENCED_LEADER_EPOCH
    );
}
