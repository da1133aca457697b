//! Transactions from real clients, against Kafka 4.4 and against ferrolog, which must answer
//! alike: confluent-kafka (librdkafka) commits, aborts, is fenced by a newer instance, has a
//! transaction aborted by the coordinator past its timeout, and runs a consume-transform-produce
//! loop with its positions in the transactions (`python/transactions_confluent_kafka.py`). A
//! read_committed consumer sees every committed record once and nothing aborted; the group's
//! offsets are those of committed transactions only.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available};
use common::{python_with_confluent_kafka, run_script};

/// The coordinator looks for transactions past their timeout every 500 ms (Kafka's default is
/// 10 s), so the test's one-second transaction is aborted within its four-second wait.
const SETTINGS: &[&str] = &["transaction.abort.timed.out.transaction.cleanup.interval.ms=500"];

#[test]
fn confluent_kafka_transactions_answer_as_kafka() {
    if !kafka_available() {
        return;
    }
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), SETTINGS);
    let kafka_transcript = run_script(
        &python,
        "transactions_confluent_kafka.py",
        kafka.port,
        &["ck"],
    );
    drop(kafka);
    let server = Server::start_with(&temp.path().join("ferrolog"), SETTINGS);
    let transcript = run_script(
        &python,
        "transactions_confluent_kafka.py",
        server.port,
        &["ck"],
    );
    assert_eq!(
        transcript, kafka_transcript,
        "ferrolog (left) and Kafka 4.4 (right) answer confluent-kafka's transactions differently"
    );
    let lines: Vec<&str> = transcript.lines().collect();
    let fenced = r#"{"name": "_FENCED", "fatal": true, "abortable": false}"#;
    assert_eq!(
        lines,
        [
            r#"["committed"]"#,
            r#"["aborted"]"#,
            r#"["offset after abort", 2]"#,
            &format!(r#"["zombie commit refused", {fenced}]"#),
            r#"["successor committed"]"#,
            &format!(r#"["timed-out commit refused", {fenced}]"#),
            r#"["transformed", 3]"#,
            r#"["offset after transform", 5]"#,
            r#"["read_committed", ["commit-1", "commit-2", "commit-3", "successor-1", "IN-2", "IN-3", "IN-4"]]"#,
            r#"["read_uncommitted", ["IN-2", "IN-3", "IN-4", "abort-1", "abort-2", "commit-1", "commit-2", "commit-3", "fenced-1", "successor-1", "timed-out-1"]]"#,
        ]
    );
}
