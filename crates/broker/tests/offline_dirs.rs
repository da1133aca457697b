//! A data directory going offline, as clients see it: its partitions have no leader in
//! Metadata (LEADER_NOT_AVAILABLE, leader −1, this node among the offline replicas), Produce
//! to them answers KAFKA_STORAGE_ERROR, DescribeLogDirs reports the directory's error, a move
//! into it is refused, the other directory serves on; and once every directory is offline the broker stops.
//! Moves of partitions that do not exist are answered without growing the broker's memory.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::Broker;
use ferrolog_broker::BrokerConfig;
use ferrolog_storage::manager::ManagerConfig;
use ferrolog_storage::{StorageError, TopicPartition};
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, ApiKey, BrokerId,
    DescribeLogDirsRequest, DescribeLogDirsResponse, MetadataRequest, MetadataResponse,
    ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LEADER_NOT_AVAILABLE: i16 = 5;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const KAFKA_STORAGE_ERROR: i16 = 56;
const LOG_DIR_NOT_FOUND: i16 = 57;

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_directory_shows_in_metadata_and_the_broker_stops_when_all_are() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start_with(
        ManagerConfig {
            log_dirs: vec![temp.path().join("a"), temp.path().join("b")],
            ..ManagerConfig::default()
        },
        BrokerConfig::default(),
    )
    .await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("events", 4, &[]).await.error_code, 0);

    let manager = &broker.context.manager;
    let failed = &manager.data_dirs()[0];
    failed
        .health()
        .mark_offline(&StorageError::Fatal("a disk failure, for the test".into()));
    let in_failed_dir = |partition: i32| {
        std::sync::Arc::ptr_eq(
            manager
                .dir_of(&TopicPartition::new("events", partition))
                .unwrap(),
            failed,
        )
    };

    let metadata: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(topic_name("events"))),
            ])),
        )
        .await;
    let partitions = &metadata.topics[0].partitions;
    assert_eq!(partitions.len(), 4);
    let node = BrokerId(manager.node_id());
    for partition in partitions {
        if in_failed_dir(partition.partition_index) {
            assert_eq!(partition.error_code, LEADER_NOT_AVAILABLE);
            assert_eq!(partition.leader_id, BrokerId(-1));
            assert_eq!(partition.offline_replicas, vec![node]);
        } else {
            assert_eq!(partition.error_code, 0);
            assert_eq!(partition.leader_id, node);
            assert!(partition.offline_replicas.is_empty());
        }
    }
    assert!(
        (0..4).any(in_failed_dir) && !(0..4).all(in_failed_dir),
        "the partitions are spread over both directories"
    );

    let batch = Bytes::from(ferrolog_testkit::numbered_batch(0, 1, 1_700_000_000_000));
    let produced: ProduceResponse = client
        .send(
            ApiKey::Produce,
            9,
            &ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(1000)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(topic_name("events"))
                        .with_partition_data(
                            (0..4)
                                .map(|index| {
                                    PartitionProduceData::default()
                                        .with_index(index)
                                        .with_records(Some(batch.clone()))
                                })
                                .collect(),
                        ),
                ]),
        )
        .await;
    for partition in &produced.responses[0].partition_responses {
        let expected = if in_failed_dir(partition.index) {
            KAFKA_STORAGE_ERROR
        } else {
            0
        };
        assert_eq!(
            partition.error_code, expected,
            "partition {}",
            partition.index
        );
    }

    let dirs: DescribeLogDirsResponse = client
        .send(
            ApiKey::DescribeLogDirs,
            4,
            &DescribeLogDirsRequest::default(),
        )
        .await;
    let errors: Vec<i16> = dirs.results.iter().map(|dir| dir.error_code).collect();
    assert_eq!(errors, vec![KAFKA_STORAGE_ERROR, 0]);

    // A move into the offline directory is refused as Kafka refuses it; a path that is not a
    // data directory at all is another error.
    let online = (0..4).find(|partition| !in_failed_dir(*partition)).unwrap();
    let offline_path = failed.path().display().to_string();
    for (path, expected) in [
        (offline_path.as_str(), KAFKA_STORAGE_ERROR),
        ("/nowhere", LOG_DIR_NOT_FOUND),
    ] {
        let altered: AlterReplicaLogDirsResponse = client
            .send(
                ApiKey::AlterReplicaLogDirs,
                2,
                &AlterReplicaLogDirsRequest::default().with_dirs(vec![
                    AlterReplicaLogDir::default()
                        .with_path(StrBytes::from_string(path.to_owned()))
                        .with_topics(vec![
                            AlterReplicaLogDirTopic::default()
                                .with_name(topic_name("events"))
                                .with_partitions(vec![online]),
                        ]),
                ]),
            )
            .await;
        assert_eq!(
            altered.results[0].partitions[0].error_code, expected,
            "a move to {path}"
        );
    }
    assert!(
        !manager
            .moves()
            .is_moving(&TopicPartition::new("events", online))
    );

    // The last directory fails: nothing can be served, and the broker stops.
    manager.data_dirs()[1]
        .health()
        .mark_offline(&StorageError::Fatal("the other disk, for the test".into()));
    let mut broker = broker;
    let stopped = tokio::time::timeout(Duration::from_secs(5), &mut broker.server)
        .await
        .expect("the broker stops")
        .unwrap();
    let error = stopped.unwrap_err().to_string();
    assert!(error.contains("every data directory is offline"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_of_partitions_that_do_not_exist_are_answered_and_bounded() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start_with(
        ManagerConfig {
            log_dirs: vec![temp.path().join("a"), temp.path().join("b")],
            max_partitions: 100,
            ..ManagerConfig::default()
        },
        BrokerConfig::default(),
    )
    .await;
    let mut client = broker.client().await;
    let target = broker.context.manager.data_dirs()[1]
        .path()
        .display()
        .to_string();
    let request = |topic: &str, partitions: Vec<i32>| {
        AlterReplicaLogDirsRequest::default().with_dirs(vec![
            AlterReplicaLogDir::default()
                .with_path(StrBytes::from_string(target.clone()))
                .with_topics(vec![
                    AlterReplicaLogDirTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(partitions),
                ]),
        ])
    };
    // 100,000 partitions of a topic that does not exist: each is answered, and the wishes
    // kept for later creation stop at ferrolog.max.partitions (100 here).
    let altered: AlterReplicaLogDirsResponse = client
        .send(
            ApiKey::AlterReplicaLogDirs,
            2,
            &request("ghost", (0..100_000).collect()),
        )
        .await;
    let partitions = &altered.results[0].partitions;
    assert_eq!(partitions.len(), 100_000);
    assert!(
        partitions
            .iter()
            .all(|p| p.error_code == UNKNOWN_TOPIC_OR_PARTITION)
    );
    // A name Kafka would never create, and a negative partition.
    let bad: AlterReplicaLogDirsResponse = client
        .send(ApiKey::AlterReplicaLogDirs, 2, &request("no/such", vec![0]))
        .await;
    assert_eq!(
        bad.results[0].partitions[0].error_code,
        INVALID_TOPIC_EXCEPTION
    );
    let negative: AlterReplicaLogDirsResponse = client
        .send(ApiKey::AlterReplicaLogDirs, 2, &request("ghost", vec![-1]))
        .await;
    assert_eq!(
        negative.results[0].partitions[0].error_code,
        UNKNOWN_TOPIC_OR_PARTITION
    );
    // The kept wishes are honoured at creation: the first partitions land in directory b.
    assert_eq!(client.create_topic("ghost", 2, &[]).await.error_code, 0);
    for partition in 0..2 {
        let dir = broker
            .context
            .manager
            .dir_of(&TopicPartition::new("ghost", partition))
            .unwrap();
        assert_eq!(dir.path().display().to_string(), target);
    }
}
