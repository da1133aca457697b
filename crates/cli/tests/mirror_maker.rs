//! Online migration with MirrorMaker 2: a live ferrolog replicated into Kafka 4.4 with its
//! consumer group's offsets synced, and the group moving to Kafka, as a cut-over goes: Kafka's
//! console producer writes 600 records to ferrolog and a group reads them and commits;
//! MirrorMaker (dedicated mode, topic names kept) copies the topic and translates the group's
//! offsets into Kafka; producers write 400 more to ferrolog, which MirrorMaker copies too; then
//! the group, consuming from Kafka, reads exactly the 400 it had not read, each once.
//! (MirrorMaker translates the offsets of a group far behind the newest records only
//! approximately, rounding down, so a cut-over moves groups while they are caught up.)

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Server;
use common::answers::{LATEST, answers, committed_offsets, list_offsets};
use common::kafka::{KafkaPeer, kafka_available, kafka_tool_ok};
use common::wire::{connect, name, send};
use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest, FindCoordinatorResponse};

const TOPIC: &str = "orders";
const GROUP: &str = "billing";
const RECORDS: usize = 1000;
/// Written, read and committed on ferrolog before MirrorMaker starts.
const READ_ON_FERROLOG: usize = 600;

/// MirrorMaker 2 in dedicated mode, replicating `source` into `target`; killed when dropped.
struct MirrorMaker(Child);

impl MirrorMaker {
    fn start(config_dir: &Path, source: &str, target: &str) -> Self {
        let config = config_dir.join("mm2.properties");
        std::fs::write(
            &config,
            format!(
                "clusters = ferrolog, kafka
ferrolog.bootstrap.servers = {source}
kafka.bootstrap.servers = {target}
ferrolog->kafka.enabled = true
kafka->ferrolog.enabled = false
ferrolog->kafka.topics = {TOPIC}
ferrolog->kafka.groups = {GROUP}
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 1
emit.checkpoints.interval.seconds = 1
emit.heartbeats.enabled = false
refresh.topics.interval.seconds = 1
refresh.groups.interval.seconds = 1
sync.topic.acls.enabled = false
offset.lag.max = 0
offset-syncs.topic.location = target
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
tasks.max = 1
"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(config_dir.join("mirror-maker.log")).unwrap();
        let child =
            Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh"))
                .arg("mirror-maker")
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap();
        Self(child)
    }
}

impl Drop for MirrorMaker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mirror_maker_available() -> bool {
    let complete =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/kafka/mirror-libs/.complete");
    if complete.exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "MirrorMaker 2 (scripts/kafka.sh install) is required under CI"
    );
    eprintln!("skipped: MirrorMaker 2 is not installed (scripts/kafka.sh install)");
    false
}

/// Kafka's console producer writes records `range` (keyed) to the topic.
fn produce(bootstrap: &str, range: std::ops::Range<usize>) {
    let input: String = range.map(|i| format!("k{i}:order-{i}\n")).collect();
    kafka_tool_ok(
        "org.apache.kafka.tools.ConsoleProducer",
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            TOPIC,
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
        ],
        input.as_bytes(),
    );
}

/// Polls `done` until it holds, for three minutes at most (MirrorMaker's log on failure). The
/// group's offsets first appear in Kafka about a minute after MirrorMaker starts here.
fn wait_for(temp: &tempfile::TempDir, what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "MirrorMaker did not copy {what}:\n{}",
            std::fs::read_to_string(temp.path().join("mirror-maker.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Asks the broker for a group coordinator until it has one (making its offsets topic).
fn wait_for_group_coordinator(stream: &mut std::net::TcpStream) {
    let request = FindCoordinatorRequest::default()
        .with_key(name(GROUP))
        .with_key_type(0);
    let started = Instant::now();
    loop {
        let found: FindCoordinatorResponse =
            send(stream, ApiKey::FindCoordinator, 3, &request).unwrap();
        if found.error_code == 0 {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no group coordinator"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Values the console consumer printed, one per line.
fn consume(bootstrap: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--bootstrap-server",
        bootstrap,
        "--topic",
        TOPIC,
        "--group",
        GROUP,
    ];
    args.extend_from_slice(extra);
    kafka_tool_ok(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &args,
        b"",
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

#[test]
fn a_consumer_group_moves_from_ferrolog_to_kafka_through_mirror_maker() {
    if !kafka_available() || !mirror_maker_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &[]);
    let server = Server::start(&temp.path().join("ferrolog"));
    let ferrolog = format!("127.0.0.1:{}", server.port);

    kafka_tool_ok(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &ferrolog,
            "--create",
            "--topic",
            TOPIC,
            "--partitions",
            "2",
        ],
        b"",
    );
    // The group reads everything written so far and commits.
    produce(&ferrolog, 0..READ_ON_FERROLOG);
    let read_on_ferrolog = consume(
        &ferrolog,
        &[
            "--from-beginning",
            "--max-messages",
            &READ_ON_FERROLOG.to_string(),
        ],
    );
    assert_eq!(read_on_ferrolog.len(), READ_ON_FERROLOG);
    let topics = [(TOPIC.to_owned(), 2)];
    let committed_on_ferrolog = answers(server.port, &topics, &[GROUP]).groups[GROUP].clone();

    // MirrorMaker copies the topic and the group's offsets, into a Kafka cluster that has its
    // offsets topic (MirrorMaker's admin client otherwise waits out its timeout, a minute, for
    // a group coordinator while Kafka makes it).
    let mut stream = connect(kafka.port);
    wait_for_group_coordinator(&mut stream);
    let mirror = MirrorMaker::start(temp.path(), &ferrolog, &kafka.bootstrap());
    let replicated = |stream: &mut std::net::TcpStream, records: usize| {
        let ends: i64 = (0..2)
            .map(|partition| list_offsets(stream, TOPIC, partition, LATEST))
            .map(|(error, end, _)| if error == 0 { end } else { 0 })
            .sum();
        ends == records as i64
    };
    wait_for(&temp, "the topic and the group's offsets", || {
        // The group's coordinator may not be there yet (its offsets topic is made on demand).
        let committed = committed_offsets(&mut stream, &[GROUP])
            .remove(GROUP)
            .and_then(Result::ok)
            .unwrap_or_default();
        replicated(&mut stream, READ_ON_FERROLOG) && committed == committed_on_ferrolog
    });
    // Producers go on writing to ferrolog until they too move; MirrorMaker keeps copying.
    produce(&ferrolog, READ_ON_FERROLOG..RECORDS);
    wait_for(&temp, "the records written meanwhile", || {
        replicated(&mut stream, RECORDS)
    });
    drop(mirror);

    // The group goes on in Kafka from where it stopped on ferrolog: exactly the records it
    // had not read, each once.
    let mut read_on_kafka = consume(&kafka.bootstrap(), &["--timeout-ms", "10000"]);
    read_on_kafka.sort();
    let mut unread: Vec<String> = (READ_ON_FERROLOG..RECORDS)
        .map(|i| format!("order-{i}"))
        .collect();
    unread.sort();
    assert_eq!(read_on_kafka, unread);
    let read: BTreeSet<&String> = read_on_ferrolog.iter().collect();
    assert_eq!(read.len(), READ_ON_FERROLOG);
    drop(kafka);
    server.stop();
}
