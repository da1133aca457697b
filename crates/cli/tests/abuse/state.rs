//! State a client can make the broker keep: partitions, moves of partitions that do not exist,
//! idempotent producers.

use bytes::Bytes;
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, ApiKey, CreateTopicsRequest,
    CreateTopicsResponse, DescribeLogDirsRequest, DescribeLogDirsResponse,
};

use super::common::wire::{connect_from, send};
use super::{POLICY_VIOLATION, produce, topic};

/// The topic the idempotent producers write to, and its partitions.
pub const PRODUCERS_TOPIC: &str = "producers";
pub const PRODUCERS_PARTITIONS: i32 = 10;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

pub fn huge_create_topics(port: u16) {
    let mut stream = connect_from("127.0.0.3", port).unwrap();
    for _ in 0..20 {
        let created: CreateTopicsResponse = send(
            &mut stream,
            ApiKey::CreateTopics,
            5,
            &CreateTopicsRequest::default().with_topics(vec![
                CreatableTopic::default()
                    .with_name(topic("a-million"))
                    .with_num_partitions(1_000_000)
                    .with_replication_factor(1),
            ]),
        )
        .unwrap();
        assert_eq!(created.topics[0].error_code, POLICY_VIOLATION);
    }
}

pub fn moves_of_missing_partitions(port: u16) {
    // Eighty requests to move 100,000 partitions each (a request's share of the request
    // memory allows no more here), eight million in all, of topics that do not exist, into the
    // broker's data directory: each partition is answered, and what is kept for their
    // creation stops at ferrolog.max.partitions.
    let mut stream = connect_from("127.0.0.6", port).unwrap();
    let dirs: DescribeLogDirsResponse = send(
        &mut stream,
        ApiKey::DescribeLogDirs,
        1,
        &DescribeLogDirsRequest::default(),
    )
    .unwrap();
    let dir = dirs.results[0].log_dir.clone();
    for request in 0..80 {
        let moved: AlterReplicaLogDirsResponse = send(
            &mut stream,
            ApiKey::AlterReplicaLogDirs,
            2,
            &AlterReplicaLogDirsRequest::default().with_dirs(vec![
                AlterReplicaLogDir::default()
                    .with_path(dir.clone())
                    .with_topics(vec![
                        AlterReplicaLogDirTopic::default()
                            .with_name(topic(&format!("ghost-{request}")))
                            .with_partitions((0..100_000).collect()),
                    ]),
            ]),
        )
        .unwrap();
        let partitions = &moved.results[0].partitions;
        assert_eq!(partitions.len(), 100_000);
        assert!(
            partitions
                .iter()
                .all(|partition| partition.error_code == UNKNOWN_TOPIC_OR_PARTITION)
        );
    }
}

pub fn producer_ids(port: u16) {
    // Four connections, each 500 produces of one batch per partition from a new idempotent
    // producer: 20,000 producer ids, 2,000 per partition, twice what a partition keeps
    // (ferrolog.max.producers.per.partition); the least recently seen are forgotten.
    std::thread::scope(|scope| {
        for connection in 0..4i64 {
            scope.spawn(move || {
                let mut stream = connect_from("127.0.0.7", port).unwrap();
                for request in 0..500i64 {
                    let first_id = 1_000 + (connection * 500 + request) * 10;
                    let records = (0..PRODUCERS_PARTITIONS)
                        .map(|partition| (partition, idempotent(first_id + i64::from(partition))))
                        .collect();
                    let answers = produce(&mut stream, PRODUCERS_TOPIC, records);
                    assert_eq!(answers, [0; PRODUCERS_PARTITIONS as usize]);
                }
            });
        }
    });
}

/// A batch of one record, the first of idempotent producer `producer_id`.
fn idempotent(producer_id: i64) -> Bytes {
    let mut builder = ferrolog_records::BatchBuilder::new(0).producer(producer_id, 0, 0);
    builder
        .append(1_700_000_000_000, None, Some(b"value"), &[])
        .unwrap();
    Bytes::from(builder.build().unwrap())
}
