//! Consumer groups that mix Kafka's two group protocols, as Kafka 4.4 serves them, against
//! `ferrolog serve` and Kafka 4.4 with Kafka's Java consumers
//! (tools/kafka/apps/ConsumerProtocolCheck.java), in three scenarios: a consumer-protocol
//! member first, then a classic one joins its consumer group, and the classic one leaves; a
//! classic member first, then a consumer-protocol one joins, upgrading the classic group
//! online, and the classic one leaves; and a consumer-protocol member first, a classic one
//! joins, then the consumer-protocol one leaves, downgrading the group to a classic group
//! online. Each time the two share the partitions while a producer writes
//! (ConsumerGroupDescribe shows one member of each type). Afterwards, on both brokers: every
//! record was processed exactly once, the committed offsets are the end offsets, and the group
//! is stable, of the expected type, its one member holding every partition.

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

/// What one broker made of it.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    member_types_while_mixed: Vec<String>,
    every_record_processed_once: bool,
    lag_after: String,
    described: String,
}

/// One scenario: `first` starts, `second` joins, then the member at `leaving` (0 or 1)
/// leaves.
struct Scenario {
    group: &'static str,
    first: Client,
    second: Client,
    leaving: usize,
    described: &'static str,
}

fn run(bootstrap: &str, port: u16, scenario: &Scenario) -> Outcome {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh");
    let group = scenario.group;
    let topic = format!("{group}-topic");
    let mut producer = Command::new(script)
        .args(["run", "ConsumerProtocolCheck", "produce", bootstrap, &topic])
        .args(["8", &RECORDS.to_string(), "20"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    let arguments = [bootstrap, &topic, group, "uniform", "-"];
    let mut consumers = vec![Consumer::start(&scenario.first, arguments)];
    std::thread::sleep(Duration::from_secs(4));
    consumers.push(Consumer::start(&scenario.second, arguments));
    // Both members hold partitions once the classic one joined, synced and took what the
    // other let go of.
    let started = Instant::now();
    let member_types = || -> Vec<String> {
        let mut types: Vec<String> = consumer_groups(port, &[group])
            .iter()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let at = fields.iter().position(|f| *f == "type")?;
                let owns = fields.iter().position(|f| *f == "owns")?;
                let holds = fields[owns + 1].starts_with(&topic);
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
    consumers[scenario.leaving].signal("-TERM");
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
    let described = describe_state(bootstrap, group);
    consumers[1 - scenario.leaving].signal("-TERM");
    let mut processed: Vec<usize> = consumers.iter().flat_map(Consumer::processed).collect();
    processed.sort_unstable();
    let lag = kafka_tool_ok(
        "ConsumerProtocolCheck",
        &["committed", bootstrap, &topic, group],
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
fn classic_and_consumer_members_share_a_group_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    // Kafka's test peer starts first rebalances at once; so does ferrolog here.
    let mut settings = GROUP_SETTINGS.to_vec();
    settings.push("group.initial.rebalance.delay.ms=0");
    let server = Server::start_with(&temp.path().join("ferrolog"), &settings);
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), GROUP_SETTINGS);
    let scenarios = [
        Scenario {
            group: "mixed",
            first: Client::Java,
            second: Client::JavaClassic,
            leaving: 1,
            described: "mixed uniform Stable 1 Consumer holding 8",
        },
        Scenario {
            group: "upgraded",
            first: Client::JavaClassic,
            second: Client::Java,
            leaving: 0,
            described: "upgraded uniform Stable 1 Consumer holding 8",
        },
        Scenario {
            group: "downgraded",
            first: Client::Java,
            second: Client::JavaClassic,
            leaving: 0,
            described: "downgraded range Stable 1 Classic holding 8",
        },
    ];
    for scenario in &scenarios {
        let ours = run(&format!("127.0.0.1:{}", server.port), server.port, scenario);
        let theirs = run(&kafka.bootstrap(), kafka.port, scenario);
        let expected = Outcome {
            member_types_while_mixed: vec![
                "type 0 holding true".to_owned(),
                "type 1 holding true".to_owned(),
            ],
            every_record_processed_once: true,
            lag_after: "lag 0 []".to_owned(),
            described: scenario.described.to_owned(),
        };
        let group = scenario.group;
        assert_eq!(theirs, expected, "Kafka 4.4, {group}:\n{}", kafka.log());
        assert_eq!(ours, expected, "ferrolog, {group}:\n{}", server.stderr());
    }
}
