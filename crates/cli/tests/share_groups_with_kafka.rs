//! Share groups (KIP-932, Kafka's queues) against `ferrolog serve` and Kafka 4.4 side by side:
//! four `KafkaShareConsumer`s of one group read while a producer writes (`ShareGroupCheck`),
//! and the same invariants hold on both brokers.
//!
//! - Implicit acknowledgement, one partition: every record delivered once and accepted once,
//!   each with the delivery count its deliveries say.
//! - `share.acquire.mode=record_limit` (KIP-1206): no poll holds more than `max.poll.records`,
//!   every record once.
//! - Explicit acknowledgement, eight partitions: every 13th record rejected (never delivered
//!   again), every other 7th released at its first delivery (delivered again, count 2), every
//!   other record accepted exactly once.
//!
//! The group's `share.auto.offset.reset=earliest` is set through IncrementalAlterConfigs on
//! both, as an operator would. Then `kafka-share-groups` lists the groups, describes one's state
//! and members, resets its offsets to the earliest, describes them, deletes them and deletes the
//! group, printing the same on both.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool, kafka_tool_ok};

const SHARE_GROUPS: &str = "org.apache.kafka.tools.consumer.group.ShareGroupCommand";

/// `kafka-share-groups` with `args` on `bootstrap`: its output, the broker's address taken out
/// and `--list`'s lines sorted (Kafka lists in hash order).
fn share_groups(bootstrap: &str, args: &[&str]) -> String {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let output = kafka_tool(SHARE_GROUPS, &all, b"");
    let out = String::from_utf8_lossy(&output.stdout).replace(bootstrap, "BROKER");
    if args == ["--list"] {
        let mut lines: Vec<&str> = out.lines().collect();
        lines.sort_unstable();
        return lines.join("\n");
    }
    out
}

/// The tool's steps on one broker, once the consumers have closed.
fn tool_steps(bootstrap: &str) -> Vec<String> {
    fn with<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [args, &["--group", "queue-eight"]].concat()
    }
    vec![
        share_groups(bootstrap, &["--list"]),
        share_groups(bootstrap, &with(&["--describe", "--state"])),
        share_groups(bootstrap, &with(&["--describe", "--members"])),
        share_groups(
            bootstrap,
            &with(&[
                "--reset-offsets",
                "--topic",
                "jobs-eight",
                "--to-earliest",
                "--execute",
            ]),
        ),
        share_groups(bootstrap, &with(&["--describe"])),
        share_groups(
            bootstrap,
            &with(&["--delete-offsets", "--topic", "jobs-eight"]),
        ),
        share_groups(bootstrap, &with(&["--describe"])),
        share_groups(bootstrap, &with(&["--delete"])),
        share_groups(bootstrap, &["--list"]),
    ]
}

/// One run of `ShareGroupCheck`: its counts by name.
fn run(
    bootstrap: &str,
    group: &str,
    topic: &str,
    partitions: u32,
    mode: &str,
    count: u32,
) -> BTreeMap<String, u64> {
    let out = kafka_tool_ok(
        "ShareGroupCheck",
        &[
            "run",
            bootstrap,
            group,
            topic,
            &partitions.to_string(),
            "4",
            &count.to_string(),
            "120",
            mode,
        ],
        b"",
    );
    let line = out
        .lines()
        .find(|line| line.starts_with("produced="))
        .unwrap_or_else(|| panic!("{out}"));
    line.split_whitespace()
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap();
            (name.to_owned(), value.parse().unwrap())
        })
        .collect()
}

fn assert_counts(counts: &BTreeMap<String, u64>, expected: &[(&str, u64)], broker: &str) {
    for (name, value) in expected {
        assert_eq!(counts[*name], *value, "{broker}: {name} in {counts:?}");
    }
}

#[test]
fn share_consumers_see_each_record_as_kafka_delivers_it() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &[]);
    let server = Server::start(&temp.path().join("ferrolog"));
    let ferrolog = format!("127.0.0.1:{}", server.port);
    let mut steps = Vec::new();
    for (broker, bootstrap) in [
        ("ferrolog", ferrolog.as_str()),
        ("Kafka", kafka.bootstrap().as_str()),
    ] {
        let implicit = run(bootstrap, "queue-one", "jobs-one", 1, "implicit", 1000);
        assert_counts(
            &implicit,
            &[
                ("accepted", 1000),
                ("accepted_twice", 0),
                ("wrong_delivery_count", 0),
            ],
            broker,
        );
        let explicit = run(bootstrap, "queue-eight", "jobs-eight", 8, "explicit", 2000);
        // 2000 records: 154 multiples of 13 rejected, 264 other multiples of 7 released once.
        assert_counts(
            &explicit,
            &[
                ("accepted", 1846),
                ("accepted_twice", 0),
                ("rejected", 154),
                ("rejected_redelivered", 0),
                ("redelivered_released", 264),
                ("wrong_delivery_count", 0),
            ],
            broker,
        );
        // KIP-1206's record_limit: never more than max.poll.records in a poll, each once.
        let limited = kafka_tool_ok(
            "ShareGroupCheck",
            &[
                "limited",
                bootstrap,
                "queue-limited",
                "jobs-limited",
                "1000",
                "7",
            ],
            b"",
        );
        assert!(
            limited.contains("accepted=1000 accepted_twice=0 largest_poll=7"),
            "{broker}: {limited}"
        );
        steps.push(tool_steps(bootstrap));
    }
    assert_eq!(
        steps[0], steps[1],
        "kafka-share-groups on ferrolog against Kafka 4.4"
    );
    assert!(
        steps[0][4].contains("jobs-eight      0          0"),
        "{}",
        steps[0][4]
    );
    assert!(
        steps[0][6].contains("has no offset information"),
        "{}",
        steps[0][6]
    );
    assert_eq!(steps[0][8], "queue-limited\nqueue-one");
}

/// librdkafka's share consumer (confluent-kafka's `ShareConsumer`): three consumers with
/// explicit acknowledgements over two partitions, the same counts from ferrolog as from Kafka.
#[test]
fn librdkafka_share_consumers_see_each_record_as_kafka_delivers_it() {
    let Some(python) = common::python_with_confluent_kafka() else {
        return;
    };
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &[]);
    let server = Server::start(&temp.path().join("ferrolog"));
    let script = "share_consumer_confluent_kafka.py";
    let args = ["rd-queue", "rd-jobs", "1000"];
    let ours = common::run_script(&python, script, server.port, &args);
    let theirs = common::run_script(&python, script, kafka.port, &args);
    // 1000 records: 91 multiples of 11 rejected, 181 other multiples of 5 released once.
    let expected = "accepted=909 accepted_twice=0 rejected=91 released_again=181 rejected_again=0";
    assert_eq!(theirs.trim(), expected, "Kafka 4.4");
    assert_eq!(ours.trim(), expected, "ferrolog:\n{}", server.stderr());
}
