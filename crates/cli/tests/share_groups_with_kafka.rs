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
//!
//! Beside those: locks renewed with `AcknowledgeType.RENEW` (KIP-1222) outlast the lock
//! duration while a lapsed lock hands its records on; a group with
//! `share.isolation.level=read_committed` under a transactional producer sees only what was
//! committed; and `kafka-console-share-consumer` prints the same from both, accepting, releasing
//! and rejecting.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::ops::Range;

use common::Server;
use common::kafka::{CONFIG_COMMAND, KafkaPeer, kafka_available, kafka_tool, kafka_tool_ok};

const SHARE_GROUPS: &str = "org.apache.kafka.tools.consumer.group.ShareGroupCommand";
const CONSOLE_SHARE_CONSUMER: &str = "org.apache.kafka.tools.consumer.ConsoleShareConsumer";

/// Both brokers let a group's `share.record.lock.duration.ms` go down to 5 s (Kafka's least is
/// 15 s by default), so that a test outlasts a few lock durations in seconds.
const LOCK_MINIMUM: &str = "group.share.min.record.lock.duration.ms=5000";

/// The lines of `text` sorted, for output whose order Kafka does not set.
fn sorted(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines.join("\n")
}

/// `kafka-share-groups` with `args` on `bootstrap`: its output, the broker's address taken out
/// and `--list`'s lines sorted (Kafka lists in hash order).
fn share_groups(bootstrap: &str, args: &[&str]) -> String {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let output = kafka_tool(SHARE_GROUPS, &all, b"");
    let out = String::from_utf8_lossy(&output.stdout).replace(bootstrap, "BROKER");
    if args == ["--list"] {
        return sorted(&out);
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
    counts(&out, "produced")
}

/// The counts of `ShareGroupCheck`'s line that begins with `first=`, by name.
fn counts(out: &str, first: &str) -> BTreeMap<String, u64> {
    let line = out
        .lines()
        .find(|line| line.starts_with(&format!("{first}=")))
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

/// KIP-1222's RENEW through the Java client (`ShareGroupCheck renew`), the group's lock duration
/// at its least (5 s): one member renews the locks of its ten records every second until a
/// bystander member has shared their partition for two and a half lock durations, then accepts
/// them and leaves. The bystander never gets one of them, neither while they are renewed nor
/// once the renewer has left (which would release any not accepted after all), yet in the same
/// time it gets the ten records another member acquired and then left alone, their locks lapsed
/// (delivery count 2): the control that shows it was there to take whatever lapsed. The fetch
/// answers with the group's lock duration, not the broker's default.
#[test]
fn renewed_locks_outlast_the_lock_duration_as_on_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &[LOCK_MINIMUM]);
    let server = Server::start_with(&temp.path().join("ferrolog"), &[LOCK_MINIMUM]);
    let ferrolog = format!("127.0.0.1:{}", server.port);
    for (broker, bootstrap) in [
        ("ferrolog", ferrolog.as_str()),
        ("Kafka", kafka.bootstrap().as_str()),
    ] {
        let args = [
            "renew",
            bootstrap,
            "renewing",
            "renewed-jobs",
            "idle-jobs",
            "10",
            "5000",
        ];
        let renew = counts(&kafka_tool_ok("ShareGroupCheck", &args, b""), "held");
        assert_counts(
            &renew,
            &[
                ("lock_timeout_ms", 5000),
                ("bystander_shared", 1),
                ("renew_failed", 0),
                ("accepted", 10),
                ("renewed_redelivered", 0),
                ("lapsed_redelivered", 10),
                ("wrong_delivery_count", 0),
            ],
            broker,
        );
        // Held for two and a half lock durations at least, renewed more than twice.
        assert!(
            renew["held_ms"] >= 12_500 && renew["renewals"] >= 3,
            "{broker}: {renew:?}"
        );
    }
}

/// A group given `share.isolation.level=read_committed` (IncrementalAlterConfigs) under Kafka's
/// transactional producer (`ShareGroupCheck read_committed`): five records committed, five
/// aborted, five left open while the group reads, five committed behind the open ones. The
/// group's consumer gets the five committed and nothing else (the last stable offset holds back
/// even the committed records behind the open transaction) until the open transaction commits,
/// then those ten; never an aborted one. A group left read_uncommitted sees all twenty
/// meanwhile: the records were there to be seen.
#[test]
fn a_read_committed_share_group_sees_only_committed_records_as_on_kafka() {
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
        let args = ["read_committed", bootstrap, "committed-only", "transacted"];
        let seen = counts(&kafka_tool_ok("ShareGroupCheck", &args, b""), "committed");
        assert_counts(
            &seen,
            &[
                ("committed", 5),
                ("open_before_commit", 0),
                ("behind_before_commit", 0),
                ("aborted", 0),
                ("open", 5),
                ("behind", 5),
                ("delivered_twice", 0),
                ("uncommitted_group_saw", 20),
            ],
            broker,
        );
    }
}

/// `kafka-console-share-consumer` on `topic` of `bootstrap` as share group `topic`-group, printing
/// each record's partition, offset, delivery count, key and value: its stdout.
fn console_share_consumer(bootstrap: &str, topic: &str, args: &[&str]) -> String {
    let group = format!("{topic}-group");
    let mut all = vec![
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--group",
        group.as_str(),
    ];
    for property in [
        "print.partition=true",
        "print.offset=true",
        "print.delivery=true",
        "print.key=true",
    ] {
        all.extend(["--formatter-property", property]);
    }
    all.extend_from_slice(args);
    kafka_tool_ok(CONSOLE_SHARE_CONSUMER, &all, b"")
}

/// The console share consumer's steps on one broker, what each printed (the lines of several
/// partitions sorted, as they come in no set order). Each topic's group starts at the earliest
/// offset (kafka-configs), so the records produced before it are there for it.
fn console_steps(bootstrap: &str) -> Vec<String> {
    for (topic, partitions, count) in [("console-three", "3", 30), ("console-one", "1", 10)] {
        kafka_tool_ok(
            "org.apache.kafka.tools.TopicCommand",
            &[
                "--bootstrap-server",
                bootstrap,
                "--create",
                "--topic",
                topic,
                "--partitions",
                partitions,
            ],
            b"",
        );
        let input: String = (0..count).map(|i| format!("k{i}:v{i}\n")).collect();
        kafka_tool_ok(
            "org.apache.kafka.tools.ConsoleProducer",
            &[
                "--bootstrap-server",
                bootstrap,
                "--topic",
                topic,
                "--reader-property",
                "parse.key=true",
                "--reader-property",
                "key.separator=:",
            ],
            input.as_bytes(),
        );
        kafka_tool_ok(
            CONFIG_COMMAND,
            &[
                "--bootstrap-server",
                bootstrap,
                "--alter",
                "--entity-type",
                "groups",
                "--entity-name",
                &format!("{topic}-group"),
                "--add-config",
                "share.auto.offset.reset=earliest",
            ],
            b"",
        );
    }
    let three = |args: &[&str]| console_share_consumer(bootstrap, "console-three", args);
    let one = |args: &[&str]| console_share_consumer(bootstrap, "console-one", args);
    vec![
        sorted(&three(&["--max-messages", "30"])),
        three(&["--timeout-ms", "3000"]),
        one(&["--release", "--max-messages", "10"]),
        one(&["--reject", "--max-messages", "4"]),
        one(&["--max-messages", "6"]),
        one(&["--timeout-ms", "3000"]),
    ]
}

/// What the console share consumer prints for records `range` of the one-partition topic (the
/// producer wrote record i at offset i), each at its `delivery`th delivery.
fn one_partition_lines(range: Range<usize>, delivery: u32) -> String {
    range
        .map(|i| format!("Partition:0\tOffset:{i}\tDelivery:{delivery}\tk{i}\tv{i}\n"))
        .collect()
}

/// `kafka-console-share-consumer` against both brokers, the same steps on the same records:
/// `--max-messages` over three partitions (each record once, at its first delivery), then
/// nothing left; on one partition `--release` (all ten come back, a delivery later), `--reject`
/// of four (the consumer took all ten in its one fetch; the six it did not get to are released
/// as it closes, and their delivery counts stay), the six accepted, then nothing left (rejected
/// and accepted records are done with). It prints the same from both.
#[test]
fn kafka_console_share_consumer_prints_the_same_from_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &[]);
    let server = Server::start(&temp.path().join("ferrolog"));
    let ours = console_steps(&format!("127.0.0.1:{}", server.port));
    let theirs = console_steps(&kafka.bootstrap());
    assert_eq!(
        ours, theirs,
        "kafka-console-share-consumer on ferrolog (left) and Kafka 4.4 (right)"
    );
    let mut records: Vec<&str> = ours[0]
        .lines()
        .map(|line| {
            line.split_once("\tDelivery:1\t")
                .unwrap_or_else(|| panic!("{line}"))
                .1
        })
        .collect();
    records.sort_unstable();
    let mut produced: Vec<String> = (0..30).map(|i| format!("k{i}\tv{i}")).collect();
    produced.sort_unstable();
    assert_eq!(records, produced);
    assert_eq!(ours[1], "");
    assert_eq!(ours[2], one_partition_lines(0..10, 1));
    assert_eq!(ours[3], one_partition_lines(0..4, 2));
    assert_eq!(ours[4], one_partition_lines(4..10, 3));
    assert_eq!(ours[5], "");
}
