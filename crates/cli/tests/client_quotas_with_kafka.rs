//! Client quotas through Kafka 4.4's `kafka-configs` against `ferrolog serve` and Kafka 4.4
//! side by side: quotas on users, client ids, both, their defaults and an IP address are set
//! alike, `--describe` lists the same for each kind of filter (the lines sorted: neither broker
//! promises an order), a fractional byte rate is refused by both with Kafka's message, and a
//! deleted quota is gone from both. ferrolog keeps them across a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Server;
use common::kafka::{CONFIG_COMMAND, KafkaPeer, kafka_available, kafka_tool};

/// Runs `kafka-configs` against `bootstrap` with `args`: whether it succeeded, and its stdout's
/// lines sorted, with the stderr's line naming a refusal.
fn configs(bootstrap: &str, args: &[&str]) -> (bool, String) {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let output = kafka_tool(CONFIG_COMMAND, &all, b"");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_unstable();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let refusal = stderr
        .lines()
        .find(|line| line.contains("Exception"))
        .unwrap_or("");
    (
        output.status.success(),
        format!("{}\n{refusal}", lines.join("\n")),
    )
}

/// The scenario on one broker: what each step printed.
fn scenario(bootstrap: &str) -> Vec<(bool, String)> {
    let alice = ["--entity-type", "users", "--entity-name", "alice"];
    let step = |args: &[&[&str]]| configs(bootstrap, &args.concat());
    vec![
        step(&[
            &["--alter"],
            &alice,
            &[
                "--add-config",
                "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            ],
        ]),
        step(&[
            &["--alter"],
            &alice,
            &[
                "--entity-type",
                "clients",
                "--entity-default",
                "--add-config",
                "request_percentage=12.5",
            ],
        ]),
        step(&[&[
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "reporting",
            "--add-config",
            "consumer_byte_rate=10000000",
        ]]),
        step(&[&[
            "--alter",
            "--entity-type",
            "users",
            "--entity-default",
            "--add-config",
            "producer_byte_rate=5000",
        ]]),
        step(&[&[
            "--alter",
            "--entity-type",
            "ips",
            "--entity-name",
            "10.0.0.7",
            "--add-config",
            "connection_creation_rate=20",
        ]]),
        step(&[&["--describe"], &alice]),
        step(&[&["--describe", "--entity-type", "users"]]),
        step(&[&["--describe"], &alice, &["--entity-type", "clients"]]),
        step(&[&["--describe", "--entity-type", "clients"]]),
        step(&[&["--describe", "--entity-type", "users", "--entity-default"]]),
        step(&[&["--describe", "--entity-type", "ips"]]),
        step(&[&[
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "bob",
            "--add-config",
            "producer_byte_rate=10.5",
        ]]),
        step(&[
            &["--alter"],
            &alice,
            &["--delete-config", "producer_byte_rate"],
        ]),
        step(&[&["--describe"], &alice]),
        step(&[&[
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            "nobody",
            "--delete-config",
            "consumer_byte_rate",
        ]]),
    ]
}

#[test]
fn kafka_configs_sets_and_lists_client_quotas_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("ferrolog");
    let server = Server::start(&dir);
    let mut kafka = KafkaPeer::start(&temp.path().join("kafka"), &[]);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    let ours = scenario(&bootstrap);
    let theirs = scenario(&kafka.bootstrap());
    kafka.stop();
    for (step, (ours, theirs)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(ours, theirs, "step {step}: ferrolog against Kafka 4.4");
    }
    // The scenario did what it says.
    assert!(ours[5].1.contains("Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"), "{}", ours[5].1);
    assert!(
        ours[8]
            .1
            .contains("Quota configs for client-id 'reporting' are consumer_byte_rate=1.0E7"),
        "{}",
        ours[8].1
    );
    assert!(
        !ours[11].0
            && ours[11]
                .1
                .contains("producer_byte_rate cannot be a fractional value."),
        "{:?}",
        ours[11]
    );
    assert!(!ours[13].1.contains("producer_byte_rate"), "{}", ours[13].1);

    // Kept across a restart.
    let before = configs(&bootstrap, &["--describe", "--entity-type", "users"]);
    server.stop();
    let server = Server::start(&dir);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    assert_eq!(
        configs(&bootstrap, &["--describe", "--entity-type", "users"]),
        before
    );
}
