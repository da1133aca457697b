//! ferrolog's data in Kafka 4.4. Kafka's own `kafka-dump-log` (DumpLogSegments) reads every
//! file ferrolog writes without a complaint: segments in every codec, from an idempotent
//! producer, a compacted topic after ferrolog's cleaner ran, a log start moved by
//! DeleteRecords, producer snapshots, indexes (checked against their segments, and by
//! `--index-sanity-check`) and `__consumer_offsets` (through Kafka's offsets decoder). Then
//! `ferrolog move-to-kafka` carries the stopped ferrolog's directory into a Kafka 4.4 broker,
//! which answers ListOffsets, Fetch (every byte) and OffsetFetch as ferrolog did, and
//! ConsumerGroupDescribe of a live KIP-848 group (its member SIGKILLed) as ferrolog did: the
//! same epochs, members and assignments, under Kafka's own topic ids, and the group's own
//! session timeout.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::answers::{answers, assert_same_answers, wait_until_serving};
use common::consumer_groups::{consumer_groups, live_member};
use common::kafka::{KafkaPeer, kafka_available, kafka_tool, kafka_tool_ok};
use common::wire::{connect, create_topic, name, send};
use common::{Server, kcat, kcat_lines};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::{ApiKey, DeleteRecordsRequest, DeleteRecordsResponse, TopicName};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
const RECORDS_PER_TOPIC: usize = 3000;

/// The files of `dir`'s partition directories whose names end in one of `extensions`.
fn files(dir: &Path, prefix: &str, extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for partition in std::fs::read_dir(dir).unwrap() {
        let partition = partition.unwrap().path();
        let partition_name = partition
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !partition.is_dir() || !partition_name.starts_with(prefix) {
            continue;
        }
        for file in std::fs::read_dir(&partition).unwrap() {
            let file = file.unwrap().path();
            if file
                .extension()
                .is_some_and(|e| extensions.contains(&e.to_string_lossy().as_ref()))
            {
                found.push(file);
            }
        }
    }
    found.sort();
    found
}

/// Runs DumpLogSegments over `files` with `options`; fails on any complaint and returns what it
/// printed.
fn dump_log(files: &[PathBuf], options: &[&str]) -> String {
    let list = files
        .iter()
        .map(|file| file.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(",");
    let mut args = vec!["--files", list.as_str()];
    args.extend_from_slice(options);
    let output = kafka_tool("org.apache.kafka.tools.DumpLogSegments", &args, b"");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "kafka-dump-log {options:?} failed:\n{stderr}"
    );
    let complaints = complaints(&stderr);
    assert!(
        complaints.is_empty(),
        "kafka-dump-log {options:?} complained:\n{}",
        complaints.join("\n")
    );
    for complaint in [
        "invalid bytes",
        "Mismatches",
        "mismatch",
        "not found",
        "out of order",
    ] {
        assert!(
            !stdout.contains(complaint),
            "kafka-dump-log {options:?}: {complaint}:\n{stdout}"
        );
    }
    stdout
}

/// What DumpLogSegments wrote to stderr, less one note Kafka 4.4's tool makes of every
/// segment after a log's first, its own as much as ferrolog's: with `--deep-iteration`, it
/// reports "Non-consecutive offsets in <segment>" followed by "-1 is followed by <the first
/// offset in the segment>" (it compares each segment's first record with an initial -1). Any
/// further pair under that heading is a real gap and stays a complaint.
fn complaints(stderr: &str) -> Vec<String> {
    let mut complaints = Vec::new();
    let mut segment_base: Option<i64> = None;
    for line in stderr.lines().filter(|line| !line.trim().is_empty()) {
        if let Some(file) = line.strip_prefix("Non-consecutive offsets in ") {
            segment_base = Path::new(file)
                .file_stem()
                .and_then(|stem| stem.to_str()?.parse().ok());
            continue;
        }
        let first_record = line
            .trim()
            .strip_prefix("-1 is followed by ")
            .and_then(|offset| offset.parse::<i64>().ok());
        match (segment_base.take(), first_record) {
            (Some(base), Some(first)) if first >= base => {}
            _ => complaints.push(line.to_owned()),
        }
    }
    complaints
}

/// Segments of 64 KiB, below the 1 MiB `segment.bytes` may be: Kafka's key for tests.
const SMALL_SEGMENTS: (&str, &str) = ("internal.segment.bytes", "65536");

fn create_compacted_topic(port: u16) {
    let created = create_topic(
        port,
        "compacted",
        1,
        &[
            ("cleanup.policy", "compact"),
            SMALL_SEGMENTS,
            ("min.cleanable.dirty.ratio", "0.01"),
        ],
    );
    assert_eq!(created, 0);
}

/// Gives `topic` the `segment.bytes` of 64 KiB an earlier ferrolog allowed and Kafka 4.4
/// refuses, as a data directory from before the limit holds it; the broker is stopped.
fn as_an_earlier_ferrolog_left_it(dir: &Path, topic: &str) {
    use ferrolog_storage::manager::{LogManager, ManagerConfig};
    let manager = LogManager::open(
        ManagerConfig {
            log_dirs: vec![dir.to_path_buf()],
            ..ManagerConfig::default()
        },
        std::sync::Arc::new(ferrolog_storage::SystemClock),
    )
    .unwrap();
    let mut overrides = manager.topic_configs().overrides(topic);
    overrides.remove(SMALL_SEGMENTS.0);
    overrides.insert("segment.bytes".into(), "65536".into());
    manager.topic_configs().set(topic, overrides).unwrap();
    manager.shutdown().unwrap();
}

fn delete_records(port: u16, topic: &str, before: i64) {
    let request = DeleteRecordsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            DeleteRecordsTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partitions(vec![
                    DeleteRecordsPartition::default()
                        .with_partition_index(0)
                        .with_offset(before),
                ]),
        ]);
    let deleted: DeleteRecordsResponse =
        send(&mut connect(port), ApiKey::DeleteRecords, 2, &request).unwrap();
    assert_eq!(deleted.topics[0].partitions[0].error_code, 0);
}

/// kcat produces `count` keyed records (keys cycling over `keys`) to `topic`, idempotently.
fn produce(kcat: &Path, port: u16, topic: &str, codec: &str, count: usize, keys: usize) {
    let input = tempfile::NamedTempFile::new().unwrap();
    let lines: Vec<String> = (0..count)
        .map(|i| format!("k{}:{topic}-value-{i}-{}", i % keys, "v".repeat(100)))
        .collect();
    std::fs::write(input.path(), lines.join("\n") + "\n").unwrap();
    let output = std::process::Command::new(kcat)
        .args(["-b", &format!("127.0.0.1:{port}"), "-P", "-t", topic, "-K:"])
        .args([
            "-z",
            codec,
            "-X",
            "enable.idempotence=true",
            "-X",
            "batch.size=16384",
            "-l",
        ])
        .arg(input.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "kcat produce to {topic}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn wait_for_cleaning(dir: &Path) {
    let started = Instant::now();
    while !std::fs::read_to_string(dir.join("cleaner-offset-checkpoint"))
        .unwrap_or_default()
        .lines()
        .any(|line| line.starts_with("compacted 0 "))
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "ferrolog's cleaner did not clean"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

const GROUP: &str = "readers";
/// A KIP-848 group whose static member was SIGKILLed, so the move carries it live.
const LIVE_GROUP: &str = "kip848-moved";

fn topics() -> Vec<(String, i32)> {
    let mut topics: Vec<(String, i32)> = CODECS
        .iter()
        .map(|codec| (format!("codec-{codec}"), 1))
        .collect();
    topics.push(("compacted".to_owned(), 1));
    topics
}

/// Runs `ferrolog move-to-kafka` with `args`.
fn move_to_kafka(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .arg("move-to-kafka")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn kafka_reads_ferrolog_files_and_serves_them_after_a_move() {
    let Some(kcat) = kcat() else {
        return;
    };
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let server = Server::start_with(
        &dir,
        &[
            "log.cleaner.backoff.ms=100",
            "offsets.topic.num.partitions=3",
        ],
    );
    let port = server.port;
    for codec in CODECS {
        let created = create_topic(port, &format!("codec-{codec}"), 1, &[SMALL_SEGMENTS]);
        assert_eq!(created, 0);
        produce(
            &kcat,
            port,
            &format!("codec-{codec}"),
            codec,
            RECORDS_PER_TOPIC,
            50,
        );
    }
    create_compacted_topic(port);
    produce(&kcat, port, "compacted", "lz4", 4000, 25);
    wait_for_cleaning(&dir);
    delete_records(port, "codec-gzip", 1000);
    kcat_lines(
        &kcat,
        port,
        &[
            "-G",
            GROUP,
            "codec-zstd",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-X",
            "enable.auto.commit=true",
        ],
    );
    live_member(&format!("127.0.0.1:{port}"), port, "codec-none", LIVE_GROUP);
    let group_configs = |bootstrap: &str, args: &[&str]| {
        let mut all = vec!["--bootstrap-server", bootstrap, "--entity-type", "groups"];
        all.extend_from_slice(&["--entity-name", LIVE_GROUP]);
        all.extend_from_slice(args);
        kafka_tool_ok("org.apache.kafka.tools.ConfigCommand", &all, b"")
    };
    let session = "consumer.session.timeout.ms=50000";
    group_configs(
        &format!("127.0.0.1:{port}"),
        &["--alter", "--add-config", session],
    );
    let quotas = |bootstrap: &str, args: &[&str]| {
        let mut all = vec!["--bootstrap-server", bootstrap];
        all.extend_from_slice(args);
        kafka_tool_ok("org.apache.kafka.tools.ConfigCommand", &all, b"")
    };
    let on_alice = ["--entity-type", "users", "--entity-name", "alice"];
    quotas(
        &format!("127.0.0.1:{port}"),
        &[
            &on_alice[..],
            &["--alter", "--add-config", "producer_byte_rate=1048576"],
        ]
        .concat(),
    );
    quotas(
        &format!("127.0.0.1:{port}"),
        &[
            "--alter",
            "--entity-type",
            "clients",
            "--entity-default",
            "--add-config",
            "consumer_byte_rate=2097152",
        ],
    );
    // Topic defaults changed at run time, for the cluster and for the node.
    let brokers = |name: &str, setting: &str| {
        let target = if name.is_empty() {
            vec!["--entity-default"]
        } else {
            vec!["--entity-name", name]
        };
        let args = [
            &["--alter", "--entity-type", "brokers"][..],
            &target,
            &["--add-config", setting],
        ]
        .concat();
        quotas(&format!("127.0.0.1:{port}"), &args)
    };
    brokers("", "log.retention.ms=172800000");
    brokers("0", "message.max.bytes=2000000");
    let client_metrics = |bootstrap: &str, args: &[&str]| {
        let mut all = vec!["--bootstrap-server", bootstrap];
        all.extend_from_slice(args);
        kafka_tool_ok("org.apache.kafka.tools.ClientMetricsCommand", &all, b"")
    };
    let subscription = [
        "--name",
        "producers",
        "--metrics",
        "org.apache.kafka.producer.",
        "--interval",
        "5000",
    ];
    client_metrics(
        &format!("127.0.0.1:{port}"),
        &[&["--alter"][..], &subscription].concat(),
    );
    let ferrolog_groups = consumer_groups(port, &[LIVE_GROUP]);
    let ferrolog_answers = answers(port, &topics(), &[GROUP]);
    assert_eq!(
        ferrolog_answers.partitions[&("codec-gzip".to_owned(), 0)].log_start_offset,
        1000
    );
    assert!(!ferrolog_answers.groups[GROUP].is_empty());
    server.stop();

    let segments = files(&dir, "codec-", &["log"]);
    assert!(segments.len() >= 10, "{} segments", segments.len());
    let deep = dump_log(&segments, &["--deep-iteration"]);
    let records = deep
        .lines()
        .filter(|line| line.starts_with("| offset: "))
        .count();
    // Every record but the 1000 before codec-gzip's new log start, which may be gone with the
    // segments wholly before it.
    assert!(
        records >= CODECS.len() * RECORDS_PER_TOPIC - 1000,
        "{records} records dumped"
    );
    assert!(
        deep.lines()
            .any(|line| line.contains("producerId: ") && !line.contains("producerId: -1")),
        "batches of the idempotent producer carry its producer id"
    );

    let compacted = dump_log(&files(&dir, "compacted-", &["log"]), &["--deep-iteration"]);
    assert!(
        compacted
            .lines()
            .filter(|line| line.starts_with("| offset: "))
            .count()
            < 4000
    );

    let indexes = files(&dir, "", &["index", "timeindex"]);
    let sane = dump_log(&indexes, &["--index-sanity-check"]);
    assert_eq!(
        sane.lines()
            .filter(|line| line.ends_with("passed sanity check."))
            .count()
            + sane
                .lines()
                .filter(|line| line.ends_with(" is empty."))
                .count(),
        indexes.len(),
        "{sane}"
    );
    // Without --index-sanity-check, each index entry is checked against its segment.
    let mut checked = indexes.clone();
    checked.extend(files(&dir, "", &["log"]));
    dump_log(&checked, &[]);

    let snapshots = dump_log(&files(&dir, "codec-", &["snapshot"]), &[]);
    assert!(snapshots.contains("producerId: "), "{snapshots}");

    let offsets = dump_log(
        &files(&dir, "__consumer_offsets-", &["log"]),
        &["--deep-iteration", "--offsets-decoder"],
    );
    assert!(offsets.contains(GROUP), "{offsets}");

    // The move: topics created in a running Kafka, data copied while it is stopped.
    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(&kafka_dir, &["offsets.topic.num.partitions=3"]);
    let data = dir.to_str().unwrap();
    let bootstrap = kafka.bootstrap();
    let create = [
        "create-topics",
        "--log-dirs",
        data,
        "--bootstrap-server",
        &bootstrap,
    ];
    // Kafka 4.4 refuses segments under 1 MiB, which an earlier ferrolog allowed: the topic's
    // setting is named, and changed in ferrolog (with Kafka's own tool) before trying again.
    as_an_earlier_ferrolog_left_it(&dir, "compacted");
    let refused = move_to_kafka(&create);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success()
            && stderr.contains("compacted")
            && stderr.contains("segment.bytes"),
        "{stderr}"
    );
    let server = Server::start(&dir);
    kafka_tool_ok(
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            &format!("127.0.0.1:{}", server.port),
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "compacted",
            "--delete-config",
            "segment.bytes",
        ],
        b"",
    );
    server.stop();
    let created = common::move_to_kafka(&create);
    assert!(
        created.contains("codec-gzip already exists in Kafka"),
        "{created}"
    );
    assert!(
        created.contains("__consumer_offsets exists in Kafka with 3 partitions"),
        "{created}"
    );
    assert!(
        created.contains("set the configs of 1 groups in Kafka"),
        "{created}"
    );
    let described = group_configs(&bootstrap, &["--describe"]);
    assert!(described.contains(session), "{described}");
    assert!(
        created.contains("made 1 client-metrics subscriptions in Kafka"),
        "{created}"
    );
    let subscribed = client_metrics(&bootstrap, &["--describe", "--name", "producers"]);
    for line in ["interval.ms=5000", "metrics=org.apache.kafka.producer."] {
        assert!(subscribed.contains(line), "{subscribed}");
    }
    assert!(
        created.contains("as Kafka's cluster defaults: log.retention.ms, message.max.bytes"),
        "{created}"
    );
    let defaults = quotas(
        &bootstrap,
        &["--describe", "--entity-type", "brokers", "--entity-default"],
    );
    for setting in ["log.retention.ms=172800000", "message.max.bytes=2000000"] {
        assert!(defaults.contains(setting), "{defaults}");
    }
    assert!(
        created.contains("set the client quotas of 2 entities in Kafka"),
        "{created}"
    );
    let alice = quotas(&bootstrap, &[&on_alice[..], &["--describe"]].concat());
    assert!(
        alice.contains("Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0"),
        "{alice}"
    );
    let clients = quotas(
        &bootstrap,
        &["--describe", "--entity-type", "clients", "--entity-default"],
    );
    assert!(
        clients
            .contains("Quota configs for the default client-id are consumer_byte_rate=2097152.0"),
        "{clients}"
    );
    let copy = [
        "copy",
        "--log-dirs",
        data,
        "--kafka-log-dirs",
        kafka_dir.to_str().unwrap(),
    ];
    let refused = move_to_kafka(&copy);
    assert!(
        !refused.status.success()
            && String::from_utf8_lossy(&refused.stderr).contains("stop it cleanly first"),
        "a running Kafka's directory is refused"
    );
    kafka.stop();
    let copied = common::move_to_kafka(&copy);
    assert!(
        copied.contains(&format!("copied {} partitions", topics().len() + 3)),
        "{copied}"
    );
    // The member's target and current assignments, and the group's epoch (its topics' hash).
    assert!(
        copied.contains("3 group records rewritten for Kafka's topic ids"),
        "{copied}"
    );
    kafka.restart();
    wait_until_serving(kafka.port, &topics(), &[GROUP]);
    let kafka_answers = answers(kafka.port, &topics(), &[GROUP]);
    let started = Instant::now();
    let mut kafka_groups = consumer_groups(kafka.port, &[LIVE_GROUP]);
    while !kafka_groups[0].contains(" error 0 ") && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(200));
        kafka_groups = consumer_groups(kafka.port, &[LIVE_GROUP]);
    }
    kafka.stop();
    for (key, ours) in &ferrolog_answers.partitions {
        assert_same_answers(
            key,
            &kafka_answers.partitions[key],
            ours,
            &["compacted"],
            "moved",
        );
    }
    assert_eq!(
        kafka_answers.groups, ferrolog_answers.groups,
        "committed offsets in Kafka"
    );
    assert_eq!(kafka_groups, ferrolog_groups, "the live group in Kafka");
}
