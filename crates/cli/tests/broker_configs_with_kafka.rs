//! Dynamic broker configs through Kafka 4.4's `kafka-configs`, against `ferrolog serve` and
//! Kafka 4.4 side by side, both started with the same `log.retention.ms` and
//! `log.segment.bytes` in their configuration: topic defaults changed for the cluster and for
//! the broker, refusals of keys that cannot change at run time and of values of the wrong type
//! (Kafka's messages), `--describe` of the broker, of the cluster default and of a topic whose
//! defaults changed, with sources and synonyms, and a deleted value gone. Every step prints the
//! same on both (lines only Kafka has, for settings ferrolog does not have, are left out).
//! Then the cleaner's threads and the connection creation rates change, or are refused, alike,
//! and the Java Admin client changes, refuses and describes broker, topic, quota, logger and
//! client-metrics configs alike (`AdminConfigsCheck`).
//! ferrolog keeps the values across a restart, and its live logs take them at once.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Server;
use common::kafka::{CONFIG_COMMAND, KafkaPeer, TOPIC_COMMAND, kafka_available, kafka_tool};

/// What both brokers are started with.
const STATIC: &[&str] = &["log.retention.ms=600000", "log.segment.bytes=2097152"];

/// The settings whose lines are compared in `--all` listings: both brokers have them, set
/// alike.
const COMPARED: &[&str] = &[
    "compression.type",
    "log.cleaner.min.cleanable.ratio",
    "log.retention.bytes",
    "log.retention.hours",
    "log.retention.minutes",
    "log.retention.ms",
    "log.roll.hours",
    "log.roll.ms",
    "log.segment.bytes",
    "message.max.bytes",
    "cleanup.policy",
    "max.message.bytes",
    "min.cleanable.dirty.ratio",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.ms",
];

/// Runs `kafka-configs` against `bootstrap` with `args`: whether it succeeded, and its stdout's
/// lines (those of `COMPARED` settings only, for `--all`), with the line naming a refusal.
fn configs(bootstrap: &str, args: &[&str]) -> (bool, String) {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let output = kafka_tool(CONFIG_COMMAND, &all, b"");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let listing_all = args.contains(&"--all");
    let lines: Vec<&str> = stdout
        .lines()
        // Kafka 4.4 sets `min.insync.replicas` for the cluster when it is formatted; a single
        // node has no replicas to count.
        .filter(|line| !line.contains("min.insync.replicas"))
        .filter(|line| {
            !listing_all
                || !line.starts_with("  ")
                || COMPARED
                    .iter()
                    .any(|key| line.starts_with(&format!("  {key}=")))
        })
        .collect();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let refusal = stderr
        .lines()
        .find(|line| line.starts_with("Caused by"))
        .unwrap_or("");
    (
        output.status.success(),
        format!("{}\n{refusal}", lines.join("\n")),
    )
}

/// The scenario on one broker: what each step printed.
fn scenario(bootstrap: &str) -> Vec<(bool, String)> {
    let broker = ["--entity-type", "brokers", "--entity-name", "0"];
    let default = ["--entity-type", "brokers", "--entity-default"];
    let topic = ["--entity-type", "topics", "--entity-name", "t"];
    let step = |args: &[&[&str]]| configs(bootstrap, &args.concat());
    let mut steps = vec![
        step(&[
            &["--alter"],
            &default,
            &[
                "--add-config",
                "log.retention.ms=1000,log.cleaner.min.cleanable.ratio=0.3",
            ],
        ]),
        step(&[
            &["--alter"],
            &broker,
            &["--add-config", "log.segment.bytes=3145728"],
        ]),
        step(&[
            &["--alter"],
            &broker,
            &["--add-config", "log.retention.hours=3"],
        ]),
        step(&[
            &["--alter"],
            &broker,
            &["--add-config", "log.dirs=/elsewhere"],
        ]),
        step(&[
            &["--alter"],
            &broker,
            &["--add-config", "log.retention.ms=abc"],
        ]),
        step(&[
            &["--alter"],
            &default,
            &["--add-config", "ssl.keystore.location=/k"],
        ]),
    ];
    let created = kafka_tool(
        TOPIC_COMMAND,
        &[
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            "t",
            "--config",
            "segment.bytes=4194304",
        ],
        b"",
    );
    assert!(created.status.success(), "{created:?}");
    steps.extend([
        step(&[&["--describe"], &topic, &["--all"]]),
        step(&[&["--describe"], &broker]),
        step(&[&["--describe"], &default]),
        step(&[&["--describe"], &broker, &["--all"]]),
        step(&[
            &["--alter"],
            &broker,
            &["--delete-config", "log.segment.bytes"],
        ]),
        step(&[&["--describe"], &broker]),
        step(&[&["--describe"], &topic, &["--all"]]),
    ]);
    // The cleaner's threads and the connection creation rates, with Kafka's refusals.
    let alter = |config: &str| step(&[&["--alter"], &broker, &["--add-config", config]]);
    steps.extend([
        alter("log.cleaner.threads=3"),
        alter("log.cleaner.dedupe.buffer.size=1048576"),
        alter("log.cleaner.threads=2"),
        alter("max.connection.creation.rate=-1"),
        alter("listener.name.plaintext.max.connections=0"),
        alter("listener.name.plaintext.max.connection.creation.rate=0"),
        alter("max.connection.creation.rate=500,listener.name.plaintext.max.connection.creation.rate=200"),
        step(&[&["--describe"], &broker]),
    ]);
    steps
}

/// What the Java Admin client's steps (`tools/kafka/apps/AdminConfigsCheck.java`) print
/// against `bootstrap`: broker, topic, quota, logger and client-metrics configs changed,
/// refused and described.
fn admin_check(bootstrap: &str) -> String {
    let output = kafka_tool("AdminConfigsCheck", &[bootstrap], b"");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn kafka_configs_changes_and_lists_broker_configs_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("ferrolog");
    let server = Server::start_with(&dir, STATIC);
    let mut kafka = KafkaPeer::start(&temp.path().join("kafka"), STATIC);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    let ours = scenario(&bootstrap);
    let theirs = scenario(&kafka.bootstrap());
    let their_admin = admin_check(&kafka.bootstrap());
    kafka.stop();
    assert_eq!(admin_check(&bootstrap), their_admin);
    for line in [
        "topic refused: InvalidConfigurationException: Invalid value 10 for configuration segment.bytes: Value must be at least 1048576",
        "  cleanup.policy=compact,delete DYNAMIC_TOPIC_CONFIG sensitive=false readOnly=false type=LIST synonyms=[DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete]",
        "  {user=alice} {producer_byte_rate=1048576.0, request_percentage=50.0}",
        "  interval.ms=60000 DYNAMIC_CLIENT_METRICS_CONFIG sensitive=false readOnly=false type=INT synonyms=[DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=60000]",
    ] {
        assert!(
            their_admin.lines().any(|printed| printed == line),
            "{line}\n{their_admin}"
        );
    }
    for (step, (ours, theirs)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(ours, theirs, "step {step}: ferrolog against Kafka 4.4");
    }
    // The scenario did what it says.
    assert!(ours[0].0 && ours[1].0, "{ours:?}");
    assert!(
        ours[2]
            .1
            .contains("Cannot update these configs dynamically: [log.retention.hours]"),
        "{}",
        ours[2].1
    );
    assert!(
        ours[4]
            .1
            .contains("Invalid value abc for configuration log.retention.ms"),
        "{}",
        ours[4].1
    );
    assert!(ours[6].1.contains("  retention.ms=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000, STATIC_BROKER_CONFIG:log.retention.ms=600000, DEFAULT_CONFIG:log.retention.hours=168}"), "{}", ours[6].1);
    assert!(ours[6].1.contains("  segment.bytes=4194304 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=4194304, DYNAMIC_BROKER_CONFIG:log.segment.bytes=3145728, STATIC_BROKER_CONFIG:log.segment.bytes=2097152, DEFAULT_CONFIG:log.segment.bytes=1073741824}"), "{}", ours[6].1);
    assert!(
        ours[7]
            .1
            .contains("  log.segment.bytes=3145728 sensitive=false"),
        "{}",
        ours[7].1
    );
    assert!(!ours[11].1.contains("log.segment.bytes"), "{}", ours[11].1);
    assert!(
        ours[13].1.contains(
            "Log cleaner threads cannot be increased to more than double the current value 1"
        ),
        "{}",
        ours[13].1
    );
    assert!(ours[15].0 && ours[19].0, "{ours:?}");
    assert!(
        ours[20]
            .1
            .contains("  log.cleaner.threads=2 sensitive=false"),
        "{}",
        ours[20].1
    );

    // Kept across a restart.
    let default = ["--describe", "--entity-type", "brokers", "--entity-default"];
    let before = configs(&bootstrap, &default);
    server.stop();
    let server = Server::start_with(&dir, STATIC);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    assert_eq!(configs(&bootstrap, &default), before);
    assert!(before.1.contains("log.retention.ms=1000"), "{}", before.1);
}
