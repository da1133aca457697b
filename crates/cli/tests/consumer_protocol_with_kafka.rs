//! Kafka 4.4's Java consumer with `group.protocol=consumer` (KIP-848) against `ferrolog serve`
//! and against Kafka 4.4, the same churn on both (`tools/kafka/apps/ConsumerProtocolCheck.java`):
//! while a producer writes, consumers join one after another (one of them static), one is
//! SIGKILLed and its static instance comes back after its session, one leaves; with each server
//! assignor. Afterwards, on both brokers: every record was processed, a record was processed
//! twice only if the killed consumer had processed it (it could not commit), the committed
//! offsets are the end offsets, and `kafka-consumer-groups --describe --state` prints the same
//! state, assignor and member count.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool_ok};

const RECORDS: usize = 12_000;
const PARTITIONS: &str = "8";

/// The same group settings on both brokers: a short session so a killed member is fenced in
/// seconds, and a heartbeat to match.
const GROUP_SETTINGS: &[&str] = &[
    "group.consumer.min.session.timeout.ms=6000",
    "group.consumer.session.timeout.ms=6000",
    "group.consumer.min.heartbeat.interval.ms=1000",
    "group.consumer.heartbeat.interval.ms=1000",
];

/// A consumer process; its stdout (the records it processed) goes to a file.
struct Consumer {
    child: Child,
    output: tempfile::NamedTempFile,
}

impl Consumer {
    fn start(bootstrap: &str, topic: &str, group: &str, assignor: &str, instance: &str) -> Self {
        let output = tempfile::NamedTempFile::new().unwrap();
        let child =
            Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh"))
                .args([
                    "run",
                    "ConsumerProtocolCheck",
                    "consume",
                    bootstrap,
                    topic,
                    group,
                    assignor,
                    instance,
                ])
                .stdout(output.reopen().unwrap())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
        Self { child, output }
    }

    /// The values it printed as processed.
    fn processed(&self) -> Vec<usize> {
        std::fs::read_to_string(self.output.path())
            .unwrap()
            .lines()
            .filter_map(|line| line.strip_prefix("R ")?.parse().ok())
            .collect()
    }

    fn signal(&mut self, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status();
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none()
            && started.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// What one broker made of the churn.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    every_record_processed: bool,
    duplicates_only_from_the_killed_consumer: bool,
    lag_after: String,
    described: String,
}

fn run(bootstrap: &str, assignor: &str) -> Outcome {
    let topic = format!("churn-{assignor}");
    let group = format!("group-{assignor}");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh");
    let mut producer = Command::new(&script)
        .args([
            "run",
            "ConsumerProtocolCheck",
            "produce",
            bootstrap,
            &topic,
            PARTITIONS,
        ])
        .arg(RECORDS.to_string())
        .arg("20")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    let start = |instance: &str| Consumer::start(bootstrap, &topic, &group, assignor, instance);
    let mut consumers = vec![start("-")];
    std::thread::sleep(Duration::from_secs(3));
    consumers.push(start("pod-1"));
    std::thread::sleep(Duration::from_secs(3));
    consumers.push(start("-"));
    std::thread::sleep(Duration::from_secs(4));
    // The static member dies without leaving; its instance returns once its session is over.
    consumers[1].signal("-KILL");
    let killed: BTreeSet<usize> = consumers[1].processed().into_iter().collect();
    std::thread::sleep(Duration::from_secs(9));
    consumers.push(start("pod-1"));
    std::thread::sleep(Duration::from_secs(3));
    // The first member leaves cleanly.
    consumers[0].signal("-TERM");
    assert!(producer.wait().unwrap().success(), "the producer failed");
    let started = Instant::now();
    let all = |consumers: &[Consumer]| {
        let mut seen = BTreeSet::new();
        for consumer in consumers {
            seen.extend(consumer.processed());
        }
        seen
    };
    while all(&consumers).len() < RECORDS && started.elapsed() < Duration::from_secs(90) {
        std::thread::sleep(Duration::from_millis(500));
    }
    // Settled: the remaining members stable, before they leave.
    std::thread::sleep(Duration::from_secs(4));
    let described = kafka_tool_ok(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            &group,
            "--state",
        ],
        b"",
    );
    let described = described
        .lines()
        .filter(|line| line.starts_with(&group))
        .map(|line| {
            // Group, coordinator (its address differs), assignor, state, members.
            let fields: Vec<&str> = line.split_whitespace().collect();
            format!("{} {}", fields[0], fields[fields.len() - 3..].join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n");
    for consumer in &mut consumers[2..] {
        consumer.signal("-TERM");
    }
    let mut processed: Vec<usize> = Vec::new();
    for consumer in &consumers {
        processed.extend(consumer.processed());
    }
    let mut once = BTreeSet::new();
    let twice: BTreeSet<usize> = processed
        .iter()
        .copied()
        .filter(|v| !once.insert(*v))
        .collect();
    let lag = kafka_tool_ok(
        "ConsumerProtocolCheck",
        &["committed", bootstrap, &topic, &group],
        b"",
    );
    Outcome {
        every_record_processed: once == (0..RECORDS).collect(),
        duplicates_only_from_the_killed_consumer: twice.is_subset(&killed),
        lag_after: lag.trim().to_owned(),
        described,
    }
}

#[test]
fn java_consumers_of_the_consumer_protocol_churn_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let overrides: Vec<&str> = GROUP_SETTINGS.to_vec();
    let server = Server::start_with(&temp.path().join("ferrolog"), &overrides);
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), GROUP_SETTINGS);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    for assignor in ["uniform", "range"] {
        let ours = run(&bootstrap, assignor);
        let theirs = run(&kafka.bootstrap(), assignor);
        let expected = Outcome {
            every_record_processed: true,
            duplicates_only_from_the_killed_consumer: true,
            lag_after: "lag 0 []".to_owned(),
            described: format!("group-{assignor} {assignor} Stable 2"),
        };
        assert_eq!(
            theirs,
            expected,
            "Kafka 4.4 with {assignor}:\n{}",
            kafka.log()
        );
        assert_eq!(
            ours,
            expected,
            "ferrolog with {assignor}:\n{}",
            server.stderr()
        );
    }
}
