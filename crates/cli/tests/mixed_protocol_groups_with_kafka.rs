//! A consumer group of Kafka 4's protocol (KIP-848) taking in a classic consumer, as Kafka 4.4
//! does, against `ferrolog serve` and Kafka 4.4 with Kafka's Java consumers
//! (tools/kafka/apps/ConsumerProtocolCheck.java): a consumer-protocol member starts, a classic
//! one joins the same group while a producer writes, and the two share the partitions
//! (ConsumerGroupDescribe shows one member of each type); then the classic member leaves.
//! Afterwards, on both brokers: every record was processed exactly once, the committed offsets
//! are the end offsets, and the group is a stable consumer group with its one member holding
//! every partition.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod churn;
mod common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use churn::{Client, Consumer, GROUP_SETTINGS, RECORDS, describe_state};
use common::Server;
use common::consumer_groups::consumer_groups;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool_ok};

const GROUP: &str = "mixed";
const TOPIC: &str = "mixed-topic";

/// What one broker made of it.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    member_types_while_mixed: Vec<String>,
    every_record_processed_once: bool,
    lag_after: String,
    described: String,
}

fn run(bootstrap: &str, port: u16) -> Outcome {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh");
    let mut producer = Command::new(script)
        .args(["run", "ConsumerProtocolCheck", "produce", bootstrap, TOPIC])
        .args(["8", &RECORDS.to_string(), "20"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    let arguments = [bootstrap, TOPIC, GROUP, "uniform", "-"];
    let mut consumers = vec![Consumer::start(&Client::Java, arguments)];
    std::thread::sleep(Duration::from_secs(4));
    consumers.push(Consumer::start(&Client::JavaClassic, arguments));
    // Both members hold partitions once the classic one joined, synced and took what the
    // other let go of.
    let started = Instant::now();
    let member_types = || -> Vec<String> {
        let mut types: Vec<String> = consumer_groups(port, &[GROUP])
            .iter()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let at = fields.iter().position(|f| *f == "type")?;
                let owns = fields.iter().position(|f| *f == "owns")?;
                let holds = fields[owns + 1].starts_with("mixed-topic");
                Some(format!("type {} holding {holds}", fields[at + 1]))
            })
            .collect();
        types.sort();
        types
    };
    let mixed = vec![
        "type 0 holding true".to_owned(),
        "type 1 holding true".to_owned(),
    ];
    while member_types() != mixed && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
    }
    let member_types_while_mixed = member_types();
    std::thread::sleep(Duration::from_secs(3));
    consumers[1].signal("-TERM");
    assert!(producer.wait().unwrap().success(), "the producer failed");
    let all = |consumers: &[Consumer]| {
        let mut seen = BTreeSet::new();
        for consumer in consumers {
            seen.extend(consumer.processed());
        }
        seen
    };
    let started = Instant::now();
    while all(&consumers).len() < RECORDS && started.elapsed() < Duration::from_secs(90) {
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(4));
    let described = describe_state(bootstrap, GROUP);
    consumers[0].signal("-TERM");
    let mut processed: Vec<usize> = consumers.iter().flat_map(Consumer::processed).collect();
    processed.sort_unstable();
    let lag = kafka_tool_ok(
        "ConsumerProtocolCheck",
        &["committed", bootstrap, TOPIC, GROUP],
        b"",
    );
    Outcome {
        member_types_while_mixed,
        every_record_processed_once: processed == (0..RECORDS).collect::<Vec<_>>(),
        lag_after: lag.trim().to_owned(),
        described,
    }
}

#[test]
fn a_classic_consumer_shares_a_consumer_group_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let server = Server::start_with(&temp.path().join("ferrolog"), GROUP_SETTINGS);
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), GROUP_SETTINGS);
    let ours = run(&format!("127.0.0.1:{}", server.port), server.port);
    let theirs = run(&kafka.bootstrap(), kafka.port);
    let expected = Outcome {
        member_types_while_mixed: vec![
            "type 0 holding true".to_owned(),
            "type 1 holding true".to_owned(),
        ],
        every_record_processed_once: true,
        lag_after: "lag 0 []".to_owned(),
        described: format!("{GROUP} uniform Stable 1 Consumer holding 8"),
    };
    assert_eq!(theirs, expected, "Kafka 4.4:\n{}", kafka.log());
    assert_eq!(ours, expected, "ferrolog:\n{}", server.stderr());
}
