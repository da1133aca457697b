//! A group's own configs through Kafka 4.4's `kafka-configs` against `ferrolog serve` and Kafka
//! 4.4 side by side: the same alteration is taken by both, `--describe` (the group's own values)
//! and `--describe --all` (each `consumer.*` key with its source and synonyms) print the same,
//! a value outside the broker's bounds is refused by both with Kafka's message, and a delete
//! puts the broker's value back. The broker sets `group.consumer.heartbeat.interval.ms` in its
//! file on both, so a synonym from the file shows too. ferrolog keeps the values across a
//! restart.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool};

const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";
const SETTINGS: &[&str] = &["group.consumer.heartbeat.interval.ms=6000"];

/// Runs `kafka-configs` on the group `g` of `bootstrap` with `args`: whether it succeeded, and
/// its stdout with the stderr's first line naming an exception's message.
fn configs(bootstrap: &str, args: &[&str]) -> (bool, String) {
    let mut all = vec![
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "groups",
        "--entity-name",
        "g",
    ];
    all.extend_from_slice(args);
    let output = kafka_tool(CONFIGS, &all, b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let refusal = stderr
        .lines()
        .find(|line| line.contains("InvalidConfigurationException"))
        .unwrap_or("")
        .to_owned();
    (
        output.status.success(),
        format!("{}{refusal}", String::from_utf8_lossy(&output.stdout)),
    )
}

/// `--describe --all`, less Kafka's keys of streams groups and of the share groups' dead-letter
/// queue, which ferrolog does not take.
fn all_consumer_keys(bootstrap: &str) -> String {
    let (ok, out) = configs(bootstrap, &["--describe", "--all"]);
    assert!(ok, "{out}");
    out.lines()
        .filter(|line| {
            !line.starts_with("  ")
                || line.starts_with("  consumer.")
                || line.starts_with("  share.")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The scenario on one broker: what each step printed.
fn scenario(bootstrap: &str) -> Vec<(bool, String)> {
    vec![
        configs(
            bootstrap,
            &[
                "--alter",
                "--add-config",
                "consumer.session.timeout.ms=50000,consumer.assignment.interval.ms=0",
            ],
        ),
        configs(bootstrap, &["--describe"]),
        (true, all_consumer_keys(bootstrap)),
        configs(
            bootstrap,
            &[
                "--alter",
                "--add-config",
                "consumer.session.timeout.ms=30000",
            ],
        ),
        configs(
            bootstrap,
            &[
                "--alter",
                "--add-config",
                "consumer.heartbeat.interval.ms=60000",
            ],
        ),
        configs(
            bootstrap,
            &[
                "--alter",
                "--delete-config",
                "consumer.assignment.interval.ms",
            ],
        ),
        configs(bootstrap, &["--describe"]),
        // Share groups' keys: a string, a duration, a bounded integer.
        configs(
            bootstrap,
            &[
                "--alter",
                "--add-config",
                "share.record.lock.duration.ms=20000,share.auto.offset.reset=by_duration:PT1H,share.isolation.level=read_committed",
            ],
        ),
        configs(
            bootstrap,
            &["--alter", "--add-config", "share.session.timeout.ms=40000"],
        ),
        configs(
            bootstrap,
            &["--alter", "--add-config", "share.auto.offset.reset=none"],
        ),
        (true, all_consumer_keys(bootstrap)),
    ]
}

#[test]
fn kafka_configs_alters_and_describes_a_groups_configs_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("ferrolog");
    let server = Server::start_with(&dir, SETTINGS);
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), SETTINGS);
    let ours = scenario(&format!("127.0.0.1:{}", server.port));
    let theirs = scenario(&kafka.bootstrap());
    assert_eq!(ours, theirs, "ferrolog against Kafka 4.4");
    // The scenario did what it says, on both.
    assert_eq!(
        ours[0],
        (true, "Completed updating config for group g.\n".to_owned())
    );
    assert!(ours[2].1.contains("consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={STATIC_BROKER_CONFIG:group.consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}"), "{}", ours[2].1);
    assert!(
        !ours[3].0
            && ours[3].1.contains(
                "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."
            ),
        "{:?}",
        ours[3]
    );
    assert!(ours[6].1.contains("consumer.session.timeout.ms=50000"));
    assert!(!ours[6].1.contains("consumer.assignment.interval.ms"));

    // ferrolog keeps them across a restart; streams groups' keys are not taken.
    let before = configs(&format!("127.0.0.1:{}", server.port), &["--describe"]);
    assert!(
        before.1.contains("share.record.lock.duration.ms=20000"),
        "{}",
        before.1
    );
    server.stop();
    let server = Server::start_with(&dir, SETTINGS);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    assert_eq!(configs(&bootstrap, &["--describe"]), before);
    let (ok, out) = configs(
        &bootstrap,
        &[
            "--alter",
            "--add-config",
            "streams.session.timeout.ms=50000",
        ],
    );
    assert!(
        !ok && out.contains("Unknown group config name: streams.session.timeout.ms"),
        "{out}"
    );
}
