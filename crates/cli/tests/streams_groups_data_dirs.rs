//! Kafka Streams applications of Kafka Streams' own group protocol (KIP-1071) across brokers and
//! failures, each a word count with exactly-once processing (`exactly_once_v2`), instances run
//! as processes (tools/kafka/apps/StreamsGroupCheck.java):
//!
//! * churn, on ferrolog and on Kafka 4.4 in the same run: an instance starts, lines are
//!   produced, a second and a third join, one is SIGKILLed and another takes its place; every
//!   count comes out exactly right on both, and the group settles with its three members;
//! * Kafka 4.4 → ferrolog: the group running on Kafka, the broker stopped (the instance then
//!   SIGKILLed), its data directory opened by ferrolog, which describes the group as Kafka does
//!   when it loads the same directory (its epochs, declared topology, members and tasks); the
//!   instance then resumes on ferrolog and the counts stay exact;
//! * ferrolog → Kafka 4.4: the same the other way, through `ferrolog move-to-kafka`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool_ok};

const CHECK: &str = "StreamsGroupCheck";
const APP: &str = "counting";
/// Settings both brokers start with: few offsets partitions (a move needs the same count), and
/// streams sessions short enough that a killed instance's tasks move within the test.
const SETTINGS: &[&str] = &[
    "offsets.topic.num.partitions=3",
    "group.streams.min.session.timeout.ms=6000",
    "group.streams.session.timeout.ms=6000",
    "group.streams.min.heartbeat.interval.ms=1000",
    "group.streams.heartbeat.interval.ms=1000",
];

/// The settings of the moves: the same offsets partitions on both sides, and Kafka's session
/// timeout, long enough that the group a broker loads still has its member when described.
const MOVED: &[&str] = &["offsets.topic.num.partitions=3"];

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh")
}

/// One instance of the application, a process of its own.
struct Instance {
    child: Child,
}

impl Instance {
    /// Starts an instance and waits until it runs.
    fn start(bootstrap: &str, state: &Path) -> Self {
        let mut child = Command::new(script())
            .args([
                "run",
                CHECK,
                "run",
                bootstrap,
                APP,
                state.to_str().unwrap(),
                "exactly_once_v2",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (running, started) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if line == "running" {
                    let _ = running.send(());
                }
            }
        });
        if started.recv_timeout(Duration::from_secs(90)).is_err() {
            let _ = child.kill();
            panic!("an instance on {bootstrap} did not start running within 90 s");
        }
        Self { child }
    }

    /// Closes it cleanly: it leaves the group.
    fn stop(mut self) {
        drop(self.child.stdin.take());
        self.child.wait().unwrap();
    }

    /// SIGKILL: it stops heartbeating without a word.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn produce(bootstrap: &str, from: usize, count: usize) {
    kafka_tool_ok(
        CHECK,
        &[
            "produce",
            bootstrap,
            APP,
            &from.to_string(),
            &count.to_string(),
        ],
        b"",
    );
}

fn verify(bootstrap: &str, lines: usize) -> String {
    kafka_tool_ok(
        CHECK,
        &["verify", bootstrap, APP, &lines.to_string(), "120"],
        b"",
    )
}

fn describe(bootstrap: &str, members: usize) -> String {
    kafka_tool_ok(
        CHECK,
        &["describe", bootstrap, APP, &members.to_string(), "60"],
        b"",
    )
}

/// The churn on one broker: what verify and describe printed, member ids and epochs left out
/// (they are the broker's and the run's own).
fn churn(bootstrap: &str, state: &Path) -> (String, String) {
    // The input topic first: an application whose source topics are missing does not run.
    produce(bootstrap, 0, 200);
    let first = Instance::start(bootstrap, &state.join("a"));
    let second = Instance::start(bootstrap, &state.join("b"));
    produce(bootstrap, 200, 200);
    let third = Instance::start(bootstrap, &state.join("c"));
    produce(bootstrap, 400, 200);
    second.kill();
    let fourth = Instance::start(bootstrap, &state.join("d"));
    produce(bootstrap, 600, 200);
    let counted = verify(bootstrap, 800);
    let group = describe(bootstrap, 3);
    for instance in [first, third, fourth] {
        instance.stop();
    }
    let settled: Vec<String> = group
        .lines()
        .map(|line| match line.split_once(": epoch ") {
            // "member ID: epoch E, process P, active [..], target [..]": the tasks only.
            Some(_) => {
                let active = line.split_once(", active ").unwrap().1;
                format!("member: active {active}")
            }
            None => line.split(", group epoch").next().unwrap().to_owned(),
        })
        .collect();
    (counted, settled.join("\n"))
}

#[test]
fn instances_join_and_are_killed_with_every_count_exact_on_both_brokers() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let server = Server::start_with(&temp.path().join("ferrolog"), SETTINGS);
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), SETTINGS);
    let ours = format!("127.0.0.1:{}", server.port);
    let (their_counts, their_group) = churn(&kafka.bootstrap(), &temp.path().join("state-kafka"));
    let (our_counts, our_group) = churn(&ours, &temp.path().join("state-ferrolog"));
    assert!(
        their_counts.contains("counts right"),
        "Kafka: {their_counts}"
    );
    assert_eq!(our_counts, their_counts, "ferrolog:\n{}", server.stderr());
    assert!(
        their_group.starts_with(&format!("group {APP}: Stable, 3 members")),
        "{their_group}"
    );
    let tasks = |group: &str| {
        let mut all: Vec<String> = group
            .lines()
            .filter_map(|l| l.strip_prefix("member: active "))
            .map(|tasks| tasks.split(", target").next().unwrap().to_owned())
            .collect();
        all.sort();
        all
    };
    assert_eq!(our_group.lines().next(), their_group.lines().next());
    // Eight tasks over three members, each holding its target: three, three and two.
    for group in [&our_group, &their_group] {
        let counts: Vec<usize> = tasks(group).iter().map(|t| t.split(", ").count()).collect();
        let mut sorted = counts.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [2, 3, 3], "{group}");
    }
}

#[test]
fn a_live_streams_group_moves_from_kafka_to_ferrolog() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(&kafka_dir, MOVED);
    let bootstrap = kafka.bootstrap();
    produce(&bootstrap, 0, 300);
    let instance = Instance::start(&bootstrap, &temp.path().join("state"));
    verify(&bootstrap, 300);
    kafka.stop();
    instance.kill();
    // The group as Kafka loads it again: what the other broker must load too.
    kafka.restart();
    let in_kafka = describe(&bootstrap, 1);
    kafka.stop();
    let copy = temp.path().join("copy");
    common::copy_dir(&kafka_dir, &copy);
    let server = Server::start_with(&copy, MOVED);
    let ours = format!("127.0.0.1:{}", server.port);
    assert_eq!(
        describe(&ours, 1),
        in_kafka,
        "ferrolog:\n{}",
        server.stderr()
    );
    let resumed = Instance::start(&ours, &temp.path().join("state"));
    produce(&ours, 300, 300);
    let counted = verify(&ours, 600);
    resumed.stop();
    assert!(counted.contains("counts right"), "{counted}");
}

#[test]
fn a_live_streams_group_moves_from_ferrolog_to_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("ferrolog");
    let server = Server::start_with(&dir, MOVED);
    let ours = format!("127.0.0.1:{}", server.port);
    produce(&ours, 0, 300);
    let instance = Instance::start(&ours, &temp.path().join("state"));
    verify(&ours, 300);
    server.stop();
    instance.kill();
    // The group as ferrolog loads it again: what Kafka must load too.
    let server = Server::start_with(&dir, MOVED);
    let in_ferrolog = describe(&format!("127.0.0.1:{}", server.port), 1);
    server.stop();
    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(&kafka_dir, MOVED);
    let bootstrap = kafka.bootstrap();
    let data = dir.to_str().unwrap();
    common::move_to_kafka(&[
        "create-topics",
        "--log-dirs",
        data,
        "--bootstrap-server",
        &bootstrap,
    ]);
    kafka.stop();
    common::move_to_kafka(&[
        "copy",
        "--log-dirs",
        data,
        "--kafka-log-dirs",
        kafka_dir.to_str().unwrap(),
    ]);
    kafka.restart();
    assert_eq!(
        describe(&bootstrap, 1),
        in_ferrolog,
        "Kafka:\n{}",
        kafka.log()
    );
    let resumed = Instance::start(&bootstrap, &temp.path().join("state"));
    produce(&bootstrap, 300, 300);
    let counted = verify(&bootstrap, 600);
    resumed.stop();
    assert!(counted.contains("counts right"), "{counted}");
}
