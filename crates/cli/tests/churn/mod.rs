#![allow(dead_code, reason = "each test file runs some of the clients")]

//! The churn the consumer-protocol tests run on `ferrolog serve` and on Kafka 4.4 alike, with
//! any of the clients that speak Kafka 4's consumer group protocol (KIP-848): while a producer
//! writes, consumers join one after another (one of them static), one is SIGKILLed and its
//! static instance comes back after its session, one leaves. Each consumer prints `R value`
//! for every record it processed, then commits it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::kafka::kafka_tool_ok;

pub const RECORDS: usize = 12_000;
const PARTITIONS: &str = "8";

/// The same group settings on both brokers: a short session so a killed member is fenced in
/// seconds, and a heartbeat to match.
pub const GROUP_SETTINGS: &[&str] = &[
    "group.consumer.min.session.timeout.ms=6000",
    "group.consumer.session.timeout.ms=6000",
    "group.consumer.min.heartbeat.interval.ms=1000",
    "group.consumer.heartbeat.interval.ms=1000",
];

/// A client of the consumer group protocol, and how to start one of its consumers.
#[derive(Debug, Clone)]
pub enum Client {
    /// Kafka 4.4's Java consumer (tools/kafka/apps/ConsumerProtocolCheck.java).
    Java,
    /// The same, speaking the classic protocol (`group.protocol=classic`).
    JavaClassic,
    /// confluent-kafka (librdkafka) under this Python interpreter.
    ConfluentKafka(String),
    /// franz-go, in the Go clients' runner at this path (tools/goclients).
    FranzGo(PathBuf),
}

impl Client {
    fn name(&self) -> &'static str {
        match self {
            Client::Java => "java",
            Client::JavaClassic => "classic",
            Client::ConfluentKafka(_) => "confluent",
            Client::FranzGo(_) => "franz",
        }
    }

    /// The command starting a consumer with `arguments` (bootstrap, topic, group, assignor,
    /// instance).
    fn command(&self, arguments: [&str; 5]) -> Command {
        let mut command = self.program();
        command.args(arguments);
        if let Client::JavaClassic = self {
            command.arg("classic");
        }
        command
    }

    fn program(&self) -> Command {
        match self {
            Client::Java | Client::JavaClassic => {
                let mut command = Command::new(script());
                command.args(["run", "ConsumerProtocolCheck", "consume"]);
                command
            }
            Client::ConfluentKafka(python) => {
                let mut command = Command::new(python);
                command.arg(
                    Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("tests/python/group_protocol_confluent_kafka.py"),
                );
                command
            }
            Client::FranzGo(runner) => {
                let mut command = Command::new(runner);
                command.arg("franz-group-protocol");
                command
            }
        }
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh")
}

/// A consumer process; its stdout (the records it processed) goes to a file.
pub struct Consumer {
    child: Child,
    output: tempfile::NamedTempFile,
}

impl Consumer {
    pub fn start(client: &Client, arguments: [&str; 5]) -> Self {
        let output = tempfile::NamedTempFile::new().unwrap();
        let child = client
            .command(arguments)
            .stdout(output.reopen().unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Self { child, output }
    }

    /// The values it printed as processed.
    pub fn processed(&self) -> Vec<usize> {
        std::fs::read_to_string(self.output.path())
            .unwrap()
            .lines()
            .filter_map(|line| line.strip_prefix("R ")?.parse().ok())
            .collect()
    }

    pub fn signal(&mut self, signal: &str) {
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
pub struct Outcome {
    every_record_processed: bool,
    duplicates_only_from_the_killed_consumer: bool,
    lag_after: String,
    described: String,
}

impl Outcome {
    /// What the churn should end in: everything processed once (or again only after the
    /// killed member), nothing left to commit, two stable members.
    pub fn expected(client: &Client, assignor: &str) -> Self {
        Outcome {
            every_record_processed: true,
            duplicates_only_from_the_killed_consumer: true,
            lag_after: "lag 0 []".to_owned(),
            described: format!(
                "{} {assignor} Stable 2 Consumer holding 4,4",
                group(client, assignor)
            ),
        }
    }
}

fn group(client: &Client, assignor: &str) -> String {
    format!("group-{}-{assignor}", client.name())
}

/// Runs the churn against `bootstrap` with `client`'s consumers and the server `assignor`.
pub fn run(bootstrap: &str, client: &Client, assignor: &str) -> Outcome {
    let topic = format!("churn-{}-{assignor}", client.name());
    let group = group(client, assignor);
    let mut producer = Command::new(script())
        .args(["run", "ConsumerProtocolCheck", "produce", bootstrap, &topic])
        .args([PARTITIONS, &RECORDS.to_string(), "20"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    let start =
        |instance: &str| Consumer::start(client, [bootstrap, &topic, &group, assignor, instance]);
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
    let described = describe_state(bootstrap, &group);
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

/// `kafka-consumer-groups --describe --state`: the group, its assignor, state and member count
/// (the coordinator's address differs between brokers); its type from `--list --type`; and the
/// partitions each member holds from `--describe --members`.
pub fn describe_state(bootstrap: &str, group: &str) -> String {
    let tool = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
    let described = kafka_tool_ok(
        tool,
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            group,
            "--state",
        ],
        b"",
    );
    // `--list --type` names the group's type: "Consumer", not "Classic", so no client fell
    // back to the classic protocol.
    let listed = kafka_tool_ok(
        tool,
        &["--bootstrap-server", bootstrap, "--list", "--type"],
        b"",
    );
    let group_type = listed
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.first() == Some(&group)).then(|| fields[1..].join(" "))
        })
        .collect::<Vec<_>>()
        .join(",");
    // `--describe --members`: how many partitions each member holds (their ids, hosts and
    // client ids differ between runs).
    let members = kafka_tool_ok(
        tool,
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            group,
            "--members",
        ],
        b"",
    );
    let mut held: Vec<&str> = members
        .lines()
        .filter(|line| line.starts_with(group))
        .filter_map(|line| line.split_whitespace().last())
        .collect();
    held.sort_unstable();
    described
        .lines()
        .filter(|line| line.starts_with(group))
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            format!(
                "{} {} {group_type} holding {}",
                fields[0],
                fields[fields.len() - 3..].join(" "),
                held.join(",")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
