//! Share groups (KIP-932, Kafka's queues) against `ferrolog serve` and Kafka 4.4 side by side:
//! four `KafkaShareConsumer`s of one group read while a producer writes (`ShareGroupCheck`),
//! and the same invariants hold on both brokers.
//!
//! - Implicit acknowledgement, one partition: every record delivered once and accepted once,
//!   each with the delivery count its deliveries say.
//! - Explicit acknowledgement, eight partitions: every 13th record rejected (never delivered
//!   again), every other 7th released at its first delivery (delivered again, count 2), every
//!   other record accepted exactly once.
//!
//! The group's `share.auto.offset.reset=earliest` is set through IncrementalAlterConfigs on
//! both, as an operator would.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool_ok};

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
    }
}
