//! Data directories that Apache Kafka 4.4 itself wrote, opened by ferrolog: Kafka's own
//! producer in every codec (idempotent, as its defaults are), keyed records in a compacted topic
//! that Kafka's cleaner has cleaned, several segments per partition, committed offsets of a
//! classic group, of a KIP-848 consumer group and of a simple committer, and DeleteRecords
//! moving a log start. Kafka answers ListOffsets (earliest, latest, max timestamp, by
//! timestamp), Fetch (every record byte, read from the log start to the end) and OffsetFetch;
//! and Metadata (topic ids); then ferrolog, on a copy of the directory, must answer the same,
//! after a clean stop and after a SIGKILL. Kafka's files that ferrolog does not use stay byte for byte as they were.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::answers::{Answers, answers, assert_same_answers, batches, wait_until_serving};
use common::consumer_groups::{consumer_groups, live_member};
use common::epochs::{EpochAnswers, epoch_answers};
use common::kafka::{KafkaPeer, kafka_available, kafka_tool_ok};
use common::wire::{connect, name, send};
use common::{Server, copy_dir};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse,
    GroupId, OffsetCommitRequest, OffsetCommitResponse, TopicName,
};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
const COMPACTED: &str = "keyed-compacted";
const GROUPS: [&str; 3] = ["classic-readers", "kip848-readers", "simple-commits"];
/// KIP-848 groups: one its member left, one whose member was SIGKILLed (still a member).
const CONSUMER_GROUPS: [&str; 2] = ["kip848-readers", "kip848-live"];
fn topics() -> Vec<(String, i32)> {
    let mut topics: Vec<(String, i32)> = CODECS
        .iter()
        .map(|codec| (format!("codec-{codec}"), 2))
        .collect();
    topics.push((COMPACTED.to_owned(), 1));
    topics
}

/// Lines `key:value` with `count` values of `width` characters that compress no better than
/// real payloads do (base64-like, from a fixed xorshift sequence), keys cycling over `keys`.
fn lines(count: usize, width: usize, keys: usize, seed: u64) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = seed | 1;
    let mut out = Vec::with_capacity(count * (width + 8));
    for index in 0..count {
        write!(out, "k{}:", index % keys).unwrap();
        for _ in 0..width {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.push(ALPHABET[(state % 64) as usize]);
        }
        out.push(b'\n');
    }
    out
}

/// Kafka's console producer (its Java client, idempotent by default) writes `input` to `topic`.
fn console_produce(bootstrap: &str, topic: &str, codec: &str, input: &[u8]) {
    kafka_tool_ok(
        "org.apache.kafka.tools.ConsoleProducer",
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--compression-codec",
            codec,
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
            "--producer-property",
            "linger.ms=20",
        ],
        input,
    );
}

/// Kafka's console consumer reads `count` records of `topic` in `group` and commits.
fn console_consume(bootstrap: &str, topic: &str, group: &str, protocol: &str, count: usize) {
    kafka_tool_ok(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--from-beginning",
            "--max-messages",
            &count.to_string(),
            "--consumer-property",
            &format!("group.protocol={protocol}"),
            "--formatter-property",
            "print.value=false",
        ],
        b"",
    );
}

fn create_topics(stream: &mut TcpStream) {
    let config = |key: &str, value: &str| {
        CreatableTopicConfig::default()
            .with_name(name(key))
            .with_value(Some(name(value)))
    };
    let mut request = CreateTopicsRequest::default().with_timeout_ms(30_000);
    for (topic, partitions) in topics() {
        let mut configs = vec![config("segment.bytes", "1048576")];
        if topic == COMPACTED {
            configs.push(config("cleanup.policy", "compact"));
            configs.push(config("min.cleanable.dirty.ratio", "0.01"));
        }
        request.topics.push(
            CreatableTopic::default()
                .with_name(TopicName(name(&topic)))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(configs),
        );
    }
    let created: CreateTopicsResponse = send(stream, ApiKey::CreateTopics, 5, &request).unwrap();
    for topic in created.topics {
        assert_eq!(topic.error_code, 0, "{:?}", topic.name);
    }
}

/// Commits offsets as a client outside any group generation does (a "simple" committer).
fn simple_commit(stream: &mut TcpStream, offsets: [i64; 2]) {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(name("simple-commits")))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(name("codec-none")))
                .with_partitions(
                    offsets
                        .iter()
                        .enumerate()
                        .map(|(partition, offset)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(partition as i32)
                                .with_committed_offset(*offset)
                                .with_committed_metadata(Some(name("simple")))
                        })
                        .collect(),
                ),
        ]);
    let committed: OffsetCommitResponse = send(stream, ApiKey::OffsetCommit, 8, &request).unwrap();
    for partition in &committed.topics[0].partitions {
        assert_eq!(partition.error_code, 0);
    }
}

fn delete_records(stream: &mut TcpStream, topic: &str, partition: i32, before: i64) {
    let request = DeleteRecordsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![
            DeleteRecordsTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partitions(vec![
                    DeleteRecordsPartition::default()
                        .with_partition_index(partition)
                        .with_offset(before),
                ]),
        ]);
    let deleted: DeleteRecordsResponse = send(stream, ApiKey::DeleteRecords, 2, &request).unwrap();
    let answer = &deleted.topics[0].partitions[0];
    assert_eq!((answer.error_code, answer.low_watermark), (0, before));
}

/// Every file under `dir` (relative path -> bytes) that Kafka keeps and ferrolog does not use.
fn kafka_only_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(dir).unwrap().to_owned();
            let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
            let kept = relative.starts_with("__cluster_metadata-0")
                || matches!(
                    file_name.as_str(),
                    "partition.metadata" | "bootstrap.checkpoint" | "meta.properties"
                )
                || file_name.ends_with(".txnindex");
            if kept {
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Waits until Kafka's cleaner has cleaned the compacted topic up to its active segment.
fn wait_for_cleaning(data_dir: &Path) {
    let started = Instant::now();
    loop {
        let checkpoint =
            std::fs::read_to_string(data_dir.join("cleaner-offset-checkpoint")).unwrap_or_default();
        if checkpoint
            .lines()
            .any(|line| line.starts_with(&format!("{COMPACTED} 0 ")))
        {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "Kafka's cleaner did not clean {COMPACTED}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The metadata hash Kafka stored for `group` (subscribed to `topic`) is the one ferrolog
/// computes for that topic, so the group keeps its epoch at its first heartbeat in ferrolog.
fn assert_same_metadata_hash(dir: &Path, group: &str, topic: &str) {
    use ferrolog_broker::coordinator::{LoadEvent, loader};
    use ferrolog_broker::group::consumer::subscribed_topics_hash;
    use ferrolog_broker::group::offsets_topic::OffsetsCodec;
    use ferrolog_records::consumer_group_records::ConsumerGroupMetadata;
    use ferrolog_records::consumer_offsets::{ConsumerRecordType, OffsetsKey};
    use ferrolog_storage::manager::{LogManager, ManagerConfig};
    let manager = LogManager::open(
        ManagerConfig {
            log_dirs: vec![dir.to_path_buf()],
            ..ManagerConfig::default()
        },
        std::sync::Arc::new(ferrolog_storage::SystemClock),
    )
    .unwrap();
    let partitions = manager.partitions_of("__consumer_offsets").len() as i32;
    let mut stored = None;
    loader::load::<OffsetsCodec>(&manager, partitions, |_, event| {
        if let LoadEvent::Record {
            record:
                (
                    OffsetsKey::Consumer {
                        kind, group: of, ..
                    },
                    Some(value),
                ),
            ..
        } = event
            && kind == ConsumerRecordType::GroupMetadata
            && of == group
        {
            stored = Some(ConsumerGroupMetadata::decode(&value).unwrap());
        }
    })
    .unwrap();
    let stored = stored.unwrap_or_else(|| panic!("Kafka wrote no metadata of {group}"));
    assert_ne!(stored.metadata_hash, 0);
    assert_eq!(
        stored.metadata_hash,
        subscribed_topics_hash(&manager, &[topic.to_owned()]),
        "the metadata hash of {group}"
    );
    manager.shutdown().unwrap();
}

/// The leader-epoch checkpoint of every partition of [`topics`] in `dir`.
fn epoch_checkpoints(dir: &Path) -> BTreeMap<String, String> {
    topics()
        .into_iter()
        .flat_map(|(topic, count)| (0..count).map(move |partition| format!("{topic}-{partition}")))
        .map(|name| {
            let path = dir.join(&name).join("leader-epoch-checkpoint");
            (name, std::fs::read_to_string(path).unwrap())
        })
        .collect()
}

/// What Kafka answers about leader epochs, and the checkpoints it wrote: what ferrolog, starting
/// on a copy of its directory, must match. After a clean stop Kafka's as it stopped (ferrolog
/// goes on in the same epochs: nothing was cut); after a SIGKILL Kafka's once started again
/// (both begin a new epoch at each log's end: recovery may have cut it).
struct KafkaEpochs {
    epochs: BTreeMap<(String, i32), EpochAnswers>,
    checkpoints: BTreeMap<String, String>,
}

impl KafkaEpochs {
    fn of(kafka: &KafkaPeer, dir: &Path) -> Self {
        Self {
            epochs: epoch_answers(kafka.port, &topics()),
            checkpoints: epoch_checkpoints(dir),
        }
    }
}

/// ferrolog serves `copy`, a copy of a directory Kafka wrote, and must answer as Kafka did,
/// about leader epochs as `kafka_epochs` says.
fn ferrolog_answers_as_kafka(
    copy: &Path,
    expected: &Answers,
    kafka_epochs: &KafkaEpochs,
    when: &str,
) {
    let before = kafka_only_files(copy);
    let server = Server::start(copy);
    let epochs = epoch_answers(server.port, &topics());
    for (key, kafka) in &kafka_epochs.epochs {
        assert_eq!(&epochs[key], kafka, "{when}: {key:?} leader epochs");
    }
    assert_eq!(
        consumer_groups(server.port, &CONSUMER_GROUPS),
        expected.consumer_groups,
        "{when}: consumer groups of the KIP-848 protocol"
    );
    let answered = answers(server.port, &topics(), &GROUPS);
    let log = server.stderr();
    server.stop();
    assert!(
        !log.contains("WARN") && !log.contains("ERROR"),
        "{when}: ferrolog opened Kafka's directory without a warning:\n{log}"
    );
    assert_eq!(
        answered.partitions.keys().collect::<Vec<_>>(),
        expected.partitions.keys().collect::<Vec<_>>()
    );
    for (key, kafka) in &expected.partitions {
        assert_same_answers(key, kafka, &answered.partitions[key], &[COMPACTED], when);
    }
    assert_eq!(
        answered.groups, expected.groups,
        "{when}: committed offsets"
    );
    assert_eq!(
        epoch_checkpoints(copy),
        kafka_epochs.checkpoints,
        "{when}: leader-epoch checkpoints as Kafka's"
    );
    let after = kafka_only_files(copy);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "{when}: Kafka's own files"
    );
    assert!(
        before == after,
        "{when}: Kafka's own files are left byte for byte as they were"
    );
}

#[test]
fn a_data_dir_kafka_wrote_answers_the_same_in_ferrolog() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(
        &kafka_dir,
        &[
            "log.cleaner.backoff.ms=100",
            "offsets.topic.num.partitions=5",
        ],
    );
    let bootstrap = kafka.bootstrap();
    let mut admin = connect(kafka.port);
    create_topics(&mut admin);
    // 3 MiB per topic in 1 MiB segments: several segments per partition, every codec.
    for (seed, codec) in CODECS.iter().enumerate() {
        let input = lines(2000, 1500, 100, seed as u64 + 1);
        console_produce(&bootstrap, &format!("codec-{codec}"), codec, &input);
    }
    // A restart moves every partition to a new leader epoch: the records after it are of a
    // later epoch than those before.
    kafka.stop();
    kafka.restart();
    wait_until_serving(kafka.port, &topics(), &[]);
    let mut admin = connect(kafka.port);
    console_produce(&bootstrap, "codec-gzip", "gzip", &lines(200, 1500, 100, 7));
    // 20 keys written over and over: after cleaning, the sealed segments keep one of each.
    console_produce(&bootstrap, COMPACTED, "lz4", &lines(2500, 1500, 20, 99));
    wait_for_cleaning(&kafka_dir);
    console_consume(&bootstrap, "codec-gzip", "classic-readers", "classic", 700);
    console_consume(&bootstrap, "codec-zstd", "kip848-readers", "consumer", 900);
    simple_commit(&mut admin, [17, 23]);
    delete_records(&mut admin, "codec-snappy", 1, 150);
    drop(admin);
    live_member(&bootstrap, kafka.port, "codec-none", "kip848-live");

    let mut clean = answers(kafka.port, &topics(), &GROUPS);
    clean.consumer_groups = consumer_groups(kafka.port, &CONSUMER_GROUPS);
    let gzip = &epoch_answers(kafka.port, &topics())[&("codec-gzip".to_owned(), 0)];
    assert!(
        gzip.leader_epoch > 0 && gzip.epoch_ends.iter().any(|end| end.1 == 0 && end.4 > 0),
        "Kafka's restart gave codec-gzip-0 an epoch after 0: {gzip:?}"
    );
    // The answers are worth comparing: many segments, a moved log start, a cleaned log, and
    // every group's offsets.
    let segments = std::fs::read_dir(kafka_dir.join("codec-none-0"))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|e| e == "log")
        })
        .count();
    assert!(segments >= 2, "codec-none-0 has {segments} segments");
    assert_eq!(
        clean.partitions[&("codec-snappy".to_owned(), 1)].log_start_offset,
        150
    );
    let compacted = &clean.partitions[&(COMPACTED.to_owned(), 0)];
    let compacted_batches = batches(&compacted.records);
    assert!(
        compacted_batches[0].0 > compacted.log_start_offset,
        "Kafka's cleaner removed records of {COMPACTED}: {:?}\ncleaner checkpoint: {}",
        compacted_batches.iter().take(20).collect::<Vec<_>>(),
        std::fs::read_to_string(kafka_dir.join("cleaner-offset-checkpoint")).unwrap_or_default()
    );
    assert_eq!(
        clean
            .groups
            .values()
            .filter(|offsets| !offsets.is_empty())
            .count(),
        GROUPS.len(),
        "{:?}",
        clean.groups
    );
    assert!(
        clean.topic_ids.len() == topics().len() + 1
            && clean
                .topic_ids
                .values()
                .all(|id| id != "00000000-0000-0000-0000-000000000000"),
        "Kafka names every topic (and __consumer_offsets) with its id: {:?}",
        clean.topic_ids
    );
    let clean_epochs = epoch_answers(kafka.port, &topics());
    kafka.stop();
    let clean_kafka = KafkaEpochs {
        epochs: clean_epochs,
        checkpoints: epoch_checkpoints(&kafka_dir),
    };
    let copy = temp.path().join("after-clean-stop");
    copy_dir(&kafka_dir, &copy);
    let hashed = temp.path().join("hashed");
    copy_dir(&kafka_dir, &hashed);
    assert_same_metadata_hash(&hashed, "kip848-live", "codec-none");
    ferrolog_answers_as_kafka(&copy, &clean, &clean_kafka, "clean stop");
    kafka.restart();
    wait_until_serving(kafka.port, &topics(), &GROUPS);

    // More records and offsets, then SIGKILL: Kafka recovers the directory on its next start,
    // and ferrolog, on a copy, answers as that recovered Kafka does.
    console_produce(&bootstrap, "codec-lz4", "lz4", &lines(500, 1500, 100, 42));
    simple_commit(&mut connect(kafka.port), [31, 37]);
    kafka.kill();
    let killed = temp.path().join("after-sigkill");
    copy_dir(&kafka_dir, &killed);
    kafka.restart();
    wait_until_serving(kafka.port, &topics(), &GROUPS);
    let restarted = KafkaEpochs::of(&kafka, &kafka_dir);
    let mut recovered = answers(kafka.port, &topics(), &GROUPS);
    recovered.consumer_groups = consumer_groups(kafka.port, &CONSUMER_GROUPS);
    kafka.stop();
    assert_eq!(
        recovered.groups["simple-commits"][&("codec-none".to_owned(), 1)].0,
        37
    );
    ferrolog_answers_as_kafka(&killed, &recovered, &restarted, "SIGKILL");
}
