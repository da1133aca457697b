//! Requests Kafka 4.4 refuses, sent to `ferrolog serve` and to Kafka 4.4 alike, with the same
//! answers (error codes, and messages where Kafka sends one): CreateTopics with manual replica
//! assignments (a valid one, an unknown broker, a broker twice, gaps, a count given too, an
//! empty list), `segment.bytes` under 1 MiB and Kafka's `internal.segment.bytes`,
//! CreatePartitions with too few assignments, Produce with `acks=7` and with two batches in
//! one partition, AlterReplicaLogDirs for a partition that does not exist and a directory
//! that is not one, and a JoinGroup beyond `group.max.size` (1 on both brokers).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use bytes::Bytes;
use common::Server;
use common::kafka::{KafkaPeer, kafka_available};
use common::wire::{connect, name, send};
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, ApiKey, BrokerId,
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    GroupId, JoinGroupRequest, JoinGroupResponse, ProduceRequest, ProduceResponse, TopicName,
};

/// Both brokers' node id (scripts/kafka.sh and ferrolog's default).
const NODE: i32 = 0;

fn assigned(partitions: &[(i32, &[i32])]) -> Vec<CreatableReplicaAssignment> {
    partitions
        .iter()
        .map(|(partition, brokers)| {
            CreatableReplicaAssignment::default()
                .with_partition_index(*partition)
                .with_broker_ids(brokers.iter().map(|id| BrokerId(*id)).collect())
        })
        .collect()
}

fn topic(name_: &str) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(TopicName(name(name_)))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
}

/// What CreateTopics answers for each topic, in words both brokers share.
fn create_topics(port: u16, topics: Vec<CreatableTopic>) -> Vec<String> {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(topics);
    let answer: CreateTopicsResponse =
        send(&mut connect(port), ApiKey::CreateTopics, 5, &request).unwrap();
    answer
        .topics
        .iter()
        .map(|topic| {
            let message = topic.error_message.as_deref().unwrap_or("");
            let partitions = if topic.error_code == 0 {
                topic.num_partitions
            } else {
                -1
            };
            format!(
                "{}: {} {message:?} partitions {partitions}",
                topic.name.0, topic.error_code
            )
        })
        .collect()
}

fn create_partitions(port: u16) -> String {
    let request = CreatePartitionsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            CreatePartitionsTopic::default()
                .with_name(TopicName(name("grown")))
                .with_count(3)
                .with_assignments(Some(vec![
                    CreatePartitionsAssignment::default().with_broker_ids(vec![BrokerId(NODE)]),
                ])),
        ]);
    let answer: CreatePartitionsResponse =
        send(&mut connect(port), ApiKey::CreatePartitions, 3, &request).unwrap();
    let result = &answer.results[0];
    format!(
        "{} {:?}",
        result.error_code,
        result.error_message.as_deref().unwrap_or("")
    )
}

fn produce(port: u16, acks: i16, records: Vec<u8>) -> String {
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(name("grown")))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(Bytes::from(records))),
                ]),
        ]);
    let answer: ProduceResponse = send(&mut connect(port), ApiKey::Produce, 9, &request).unwrap();
    let partition = &answer.responses[0].partition_responses[0];
    format!("{} offset {}", partition.error_code, partition.base_offset)
}

fn alter_log_dir(port: u16, path: &str, topic: &str) -> i16 {
    let request = AlterReplicaLogDirsRequest::default().with_dirs(vec![
        AlterReplicaLogDir::default()
            .with_path(name(path))
            .with_topics(vec![
                AlterReplicaLogDirTopic::default()
                    .with_name(TopicName(name(topic)))
                    .with_partitions(vec![0]),
            ]),
    ]);
    let answer: AlterReplicaLogDirsResponse =
        send(&mut connect(port), ApiKey::AlterReplicaLogDirs, 2, &request).unwrap();
    answer.results[0].partitions[0].error_code
}

/// JoinGroup (v5) of the static member `instance` into group "g": its error and member id.
fn join_group(port: u16, instance: &str) -> String {
    // A version-0 consumer subscription to topic "t".
    let subscription = vec![0, 0, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff];
    let request = JoinGroupRequest::default()
        .with_group_id(GroupId(name("g")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_group_instance_id(Some(name(instance)))
        .with_protocol_type(name("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(name("range"))
                .with_metadata(Bytes::from(subscription)),
        ]);
    let answer = common::group_member::while_coordinator_loads(
        || -> JoinGroupResponse {
            send(&mut connect(port), ApiKey::JoinGroup, 5, &request).unwrap()
        },
        |answer| answer.error_code,
    );
    format!("{} {:?}", answer.error_code, answer.member_id.as_str())
}

/// Every question, asked of the broker on `port` whose (only) data directory is `data_dir`.
fn answers(port: u16, data_dir: &str) -> Vec<String> {
    let mut lines = create_topics(
        port,
        vec![
            topic("assigned").with_assignments(assigned(&[
                (0, &[NODE]),
                (1, &[NODE]),
                (2, &[NODE]),
            ])),
            topic("unknown-broker").with_assignments(assigned(&[(0, &[7])])),
            topic("broker-twice").with_assignments(assigned(&[(0, &[NODE, NODE])])),
            topic("gap").with_assignments(assigned(&[(0, &[NODE]), (2, &[NODE])])),
            topic("partition-twice").with_assignments(assigned(&[(0, &[NODE]), (0, &[NODE])])),
            topic("empty-list").with_assignments(assigned(&[(0, &[])])),
            topic("count-too")
                .with_num_partitions(1)
                .with_assignments(assigned(&[(0, &[NODE])])),
            topic("tiny").with_configs(vec![
                CreatableTopicConfig::default()
                    .with_name(name("segment.bytes"))
                    .with_value(Some(name("100"))),
            ]),
            topic("internal-small").with_configs(vec![
                CreatableTopicConfig::default()
                    .with_name(name("internal.segment.bytes"))
                    .with_value(Some(name("65536"))),
            ]),
            topic("grown").with_num_partitions(1),
        ],
    );
    lines.push(format!(
        "CreatePartitions with too few assignments: {}",
        create_partitions(port)
    ));
    let batch = || ferrolog_testkit::numbered_batch(0, 1, 1_700_000_000_000);
    lines.push(format!("Produce acks=7: {}", produce(port, 7, batch())));
    let mut two = batch();
    two.extend(batch());
    lines.push(format!("Produce of two batches: {}", produce(port, 1, two)));
    // A new partition of Kafka's may answer NOT_LEADER_OR_FOLLOWER until its leader is known.
    let mut accepted = produce(port, 1, batch());
    for _ in 0..100 {
        if !accepted.starts_with("6 ") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        accepted = produce(port, 1, batch());
    }
    lines.push(format!("Produce: {accepted}"));
    lines.push(format!(
        "AlterReplicaLogDirs of a partition that does not exist: {}",
        alter_log_dir(port, data_dir, "no-such-topic")
    ));
    lines.push(format!(
        "AlterReplicaLogDirs to a directory that is not one: {}",
        alter_log_dir(port, "/nowhere", "grown")
    ));
    common::group_member::coordinator_ready(port, "g");
    let first = join_group(port, "a");
    lines.push(format!(
        "JoinGroup of the first member: {}",
        first.split(' ').next().unwrap_or_default()
    ));
    lines.push(format!(
        "JoinGroup beyond group.max.size: {}",
        join_group(port, "b")
    ));
    lines
}

#[test]
fn requests_kafka_refuses_are_refused_alike() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_dir = temp.path().join("kafka").join("data");
    let ferrolog_dir = temp.path().join("ferrolog");
    let kafka = KafkaPeer::start(&kafka_dir, &["group.max.size=1"]);
    let server = Server::start_with(
        &ferrolog_dir,
        &["group.max.size=1", "group.initial.rebalance.delay.ms=0"],
    );
    let kafka_path = kafka_dir.canonicalize().unwrap();
    let ferrolog_path = ferrolog_dir.canonicalize().unwrap();
    let from_kafka = answers(kafka.port, kafka_path.to_str().unwrap());
    let ours = answers(server.port, ferrolog_path.to_str().unwrap());
    for (theirs, mine) in from_kafka.iter().zip(&ours) {
        println!("kafka:    {theirs}\nferrolog: {mine}");
    }
    assert_eq!(ours, from_kafka);
    // What the trust round asked for, as Kafka answers it.
    assert!(
        from_kafka[0].starts_with("assigned: 0 "),
        "{}",
        from_kafka[0]
    );
    assert!(from_kafka[0].ends_with("partitions 3"), "{}", from_kafka[0]);
    assert!(
        from_kafka[1].starts_with("unknown-broker: 39 "),
        "{}",
        from_kafka[1]
    );
    assert!(from_kafka[7].starts_with("tiny: 40 "), "{}", from_kafka[7]);
    assert_eq!(
        from_kafka.last().unwrap(),
        "JoinGroup beyond group.max.size: 81 \"\""
    );
    server.stop();
}
