//! Transactions from real clients, against Kafka 4.4 and against ferrolog, which must answer
//! alike: confluent-kafka (librdkafka) commits, aborts, is fenced by a newer instance, has a
//! transaction aborted by the coordinator past its timeout, and runs a consume-transform-produce
//! loop with its positions in the transactions (`python/transactions_confluent_kafka.py`). A
//! read_committed consumer sees every committed record once and nothing aborted; the group's
//! offsets are those of committed transactions only. Kafka's Java producer (on transactions v2:
//! both brokers finalize `transaction.version` 2) does the same as `TransactionsCheck`, with the
//! same transcript, and so does kafka-python (`python/transactions_kafka_python.py`); franz-go's
//! transactional session copies records exactly once on both (`tools/goclients`). Kafka's
//! `kafka-transactions` tool lists,
//! describes, finds hanging transactions and aborts one by its start offset alike.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool_ok};
use common::{python_with_confluent_kafka, run_script};

const TRANSACTIONS_COMMAND: &str = "org.apache.kafka.tools.TransactionsCommand";

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

/// A table `kafka-transactions` printed: its rows of trimmed cells, the header first.
fn table(printed: &str) -> Vec<Vec<String>> {
    printed
        .lines()
        .map(|line| {
            line.split('\t')
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

/// Of each row, the cells in `columns` (by header name), rows sorted; the header first.
fn columns(rows: &[Vec<String>], columns: &[&str]) -> Vec<Vec<String>> {
    let header = &rows[0];
    let at: Vec<usize> = columns
        .iter()
        .map(|name| header.iter().position(|cell| cell == name).unwrap())
        .collect();
    let pick = |row: &Vec<String>| at.iter().map(|&i| row[i].clone()).collect::<Vec<_>>();
    let mut body: Vec<Vec<String>> = rows[1..].iter().map(pick).collect();
    body.sort();
    std::iter::once(pick(header)).chain(body).collect()
}

/// What `kafka-transactions` shows of a broker holding `transactional_history.py`'s history,
/// before and after it aborts the open transaction by its start offset; the producer ids and
/// times, which differ between brokers, are left out.
fn tool_answers(port: u16) -> Vec<Vec<Vec<String>>> {
    let bootstrap = format!("127.0.0.1:{port}");
    let tool = |args: &[&str]| {
        let mut all = vec!["--bootstrap-server", bootstrap.as_str()];
        all.extend_from_slice(args);
        table(&kafka_tool_ok(TRANSACTIONS_COMMAND, &all, b""))
    };
    let listed = columns(&tool(&["list"]), &["TransactionalId", "TransactionState"]);
    let described = columns(
        &tool(&["describe", "--transactional-id", "history-open"]),
        &[
            "TransactionalId",
            "ProducerEpoch",
            "TransactionState",
            "TransactionTimeoutMs",
            "TopicPartitions",
        ],
    );
    let producer_columns = [
        "ProducerEpoch",
        "LatestCoordinatorEpoch",
        "LastSequence",
        "CurrentTransactionStartOffset",
    ];
    let producers = tool(&[
        "describe-producers",
        "--topic",
        "history",
        "--partition",
        "0",
    ]);
    let open_at = columns(&producers, &["CurrentTransactionStartOffset"])
        .into_iter()
        .skip(1)
        .map(|row| row[0].clone())
        .find(|offset| offset != "None")
        .expect("the open transaction's start offset");
    let hanging = tool(&["find-hanging", "--topic", "history"]);
    tool(&[
        "abort",
        "--topic",
        "history",
        "--partition",
        "0",
        "--start-offset",
        &open_at,
    ]);
    let after_abort = tool(&[
        "describe-producers",
        "--topic",
        "history",
        "--partition",
        "0",
    ]);
    vec![
        listed,
        described,
        columns(&producers, &producer_columns),
        hanging,
        columns(&after_abort, &producer_columns),
    ]
}

#[test]
fn kafka_transactions_tool_answers_as_kafka() {
    if !kafka_available() {
        return;
    }
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), &[]);
    let written = run_script(
        &python,
        "transactional_history.py",
        kafka.port,
        &["history"],
    );
    assert_eq!(written.trim(), "ok");
    let kafka_answers = tool_answers(kafka.port);
    drop(kafka);
    let server = Server::start(&temp.path().join("ferrolog"));
    let written = run_script(
        &python,
        "transactional_history.py",
        server.port,
        &["history"],
    );
    assert_eq!(written.trim(), "ok");
    let answers = tool_answers(server.port);
    assert_eq!(
        answers, kafka_answers,
        "kafka-transactions against ferrolog (left) and Kafka 4.4 (right)"
    );
    // What was compared is worth comparing: one transaction open, then none.
    let open: Vec<&Vec<String>> = answers[0]
        .iter()
        .filter(|row| row[1] == "Ongoing")
        .collect();
    assert_eq!(
        open,
        [&vec!["history-open".to_owned(), "Ongoing".to_owned()]]
    );
    let open_producers =
        |rows: &[Vec<String>]| rows.iter().skip(1).filter(|row| row[3] != "None").count();
    assert_eq!(open_producers(&answers[2]), 1, "{:?}", answers[2]);
    assert_eq!(open_producers(&answers[4]), 0, "{:?}", answers[4]);
}

#[test]
fn java_transactions_answer_as_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), SETTINGS);
    let check = |port: u16| {
        kafka_tool_ok(
            "TransactionsCheck",
            &[&format!("127.0.0.1:{port}"), "java-txn"],
            b"",
        )
    };
    let kafka_transcript = check(kafka.port);
    drop(kafka);
    let server = Server::start_with(&temp.path().join("ferrolog"), SETTINGS);
    let transcript = check(server.port);
    assert_eq!(
        transcript, kafka_transcript,
        "ferrolog (left) and Kafka 4.4 (right) answer the Java producer's transactions differently"
    );
    // Kafka's Java client speaks transactions v2 to both: a commit of a transaction the
    // coordinator aborted past its timeout is INVALID_TXN_STATE in Kafka 4.4.0 (KAFKA-20785
    // makes it PRODUCER_FENCED later).
    assert_eq!(
        transcript.lines().collect::<Vec<_>>(),
        [
            "committed",
            "aborted",
            "offset after abort 2",
            "empty transactions ended",
            "zombie commit refused: ProducerFencedException",
            "successor committed",
            "timed-out commit refused: InvalidTxnStateException",
            "read_committed [commit-1, commit-2, commit-3, successor-1]",
            "read_uncommitted [commit-1, commit-2, commit-3, abort-1, abort-2, fenced-1, successor-1, timed-out-1]",
            "offset at the end 2",
        ]
    );
}

#[test]
fn kafka_python_transactions_answer_as_kafka() {
    if !kafka_available() {
        return;
    }
    let Some(python) = common::python() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), SETTINGS);
    let kafka_transcript = run_script(&python, "transactions_kafka_python.py", kafka.port, &["kp"]);
    drop(kafka);
    let server = Server::start_with(&temp.path().join("ferrolog"), SETTINGS);
    let transcript = run_script(
        &python,
        "transactions_kafka_python.py",
        server.port,
        &["kp"],
    );
    assert_eq!(
        transcript, kafka_transcript,
        "ferrolog (left) and Kafka 4.4 (right) answer kafka-python's transactions differently"
    );
    assert_eq!(
        transcript.lines().collect::<Vec<_>>(),
        [
            "committed",
            "aborted",
            "offset after abort 1",
            "zombie commit refused: ProducerFencedError",
            "transformed 2",
            "read_committed ['commit-1', 'commit-2', 'commit-3', 'IN-1', 'IN-2']",
            "read_uncommitted ['IN-1', 'IN-2', 'abort-1', 'abort-2', 'commit-1', 'commit-2', 'commit-3', 'fenced-1']",
            "offset at the end 3",
        ]
    );
}

#[test]
fn franz_go_transactional_session_copies_exactly_once_on_kafka_and_ferrolog() {
    let Some(go_clients) = common::kafka::go_clients() else {
        return;
    };
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), &[]);
    let server = Server::start(&temp.path().join("ferrolog"));
    for broker in [kafka.bootstrap(), format!("127.0.0.1:{}", server.port)] {
        let output = std::process::Command::new(&go_clients)
            .args(["franz-transactions", &broker, "franz-txn"])
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{broker}: {printed}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            printed.contains("300 records copied exactly once, the aborted ones unseen"),
            "{broker}: {printed}"
        );
    }
}
