//! The broker's loggers through Kafka 4.4's `kafka-configs --entity-type broker-loggers`: the
//! levels in force are listed, a level set at run time takes effect at once (a topic created
//! afterwards is logged, one created before was not), a level Kafka does not know and the
//! root's deletion are refused with Kafka's messages.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Server;
use common::kafka::{CONFIG_COMMAND, kafka_available, kafka_tool, kafka_tool_ok};

const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";

fn loggers(bootstrap: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "broker-loggers",
        "--entity-name",
        "0",
    ];
    all.extend_from_slice(args);
    kafka_tool(CONFIG_COMMAND, &all, b"")
}

fn create(bootstrap: &str, topic: &str) {
    kafka_tool_ok(
        TOPICS,
        &[
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            topic,
        ],
        b"",
    );
}

#[test]
fn levels_are_listed_and_changed_at_run_time() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    // Started with FERROLOG_LOG=warn: a topic's creation (logged at INFO) is not shown.
    let server = Server::start(&temp.path().join("data"));
    let bootstrap = format!("127.0.0.1:{}", server.port);
    let described = loggers(&bootstrap, &["--describe"]);
    let listed = String::from_utf8_lossy(&described.stdout).into_owned();
    assert!(described.status.success(), "{listed}");
    assert!(
        listed.contains("Dynamic configs for broker-logger 0 are:"),
        "{listed}"
    );
    assert!(
        listed.contains("  root=WARN sensitive=false synonyms={}"),
        "{listed}"
    );
    assert!(
        listed.contains("  ferrolog_broker=WARN sensitive=false synonyms={}"),
        "{listed}"
    );

    create(&bootstrap, "before");
    let set = loggers(
        &bootstrap,
        &["--alter", "--add-config", "ferrolog_broker=INFO"],
    );
    assert_eq!(
        String::from_utf8_lossy(&set.stdout).trim(),
        "Completed updating config for broker-logger 0."
    );
    create(&bootstrap, "after");
    let logged = server.stderr();
    assert!(
        logged.contains("created topic") && logged.contains("after"),
        "{logged}"
    );
    assert!(!logged.contains("before"), "{logged}");
    let listed = String::from_utf8_lossy(&loggers(&bootstrap, &["--describe"]).stdout).into_owned();
    assert!(listed.contains("  ferrolog_broker=INFO "), "{listed}");

    let refused = loggers(
        &bootstrap,
        &["--alter", "--add-config", "ferrolog_broker=LOUD"],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains(
            "Cannot set the log level of ferrolog_broker to LOUD as it is not a supported log level."
        ),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let refused = loggers(&bootstrap, &["--alter", "--delete-config", "root"]);
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("Removing the log level of the root logger is not allowed"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    // Deleting a level makes the logger follow the root again.
    let deleted = loggers(
        &bootstrap,
        &["--alter", "--delete-config", "ferrolog_broker"],
    );
    assert!(deleted.status.success());
    let listed = String::from_utf8_lossy(&loggers(&bootstrap, &["--describe"]).stdout).into_owned();
    assert!(listed.contains("  ferrolog_broker=WARN "), "{listed}");
}
