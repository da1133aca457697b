//! `ferrolog serve` killed with SIGKILL in each state of a transaction's end, held there by a
//! fault point (the `failpoints` build of the test command): ongoing; PrepareCommit or
//! PrepareAbort recorded with no marker written; one of its two markers written; both written
//! but the completion not recorded. After a restart each transaction ends as Kafka's rules
//! say — a prepared one is completed as prepared, an ongoing one aborted once its timeout
//! passes — every partition's last stable offset reaches its high watermark, and a
//! read_committed consumer sees the committed records once and the aborted ones never.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::wire::{connect, latest_offsets, name, send};
use common::{Server, free_port, python_with_confluent_kafka, run_script};
use kafka_protocol::messages::{
    ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse, TransactionalId,
};

/// The coordinator looks for transactions past their timeout every 500 ms.
const SETTINGS: &[&str] = &["transaction.abort.timed.out.transaction.cleanup.interval.ms=500"];

/// ListOffsets latest of partitions 0 and 1 at `isolation_level` (1: the last stable offset).
fn latest(stream: &mut TcpStream, topic: &str, isolation_level: i8) -> Vec<i64> {
    latest_offsets(stream, topic, 2, isolation_level).unwrap()
}

/// The state DescribeTransactions gives `topic`'s transactional id.
fn state(stream: &mut TcpStream, topic: &str) -> String {
    let request = DescribeTransactionsRequest::default()
        .with_transactional_ids(vec![TransactionalId(name(&format!("{topic}-txn")))]);
    let answer: DescribeTransactionsResponse =
        send(stream, ApiKey::DescribeTransactions, 0, &request).unwrap();
    answer.transaction_states[0].transaction_state.to_string()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "waited for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One case: the broker started with `failpoint` (or none), the transaction ended with `end`
/// (commit, abort, or left open), the broker killed once `reached` says the state is there,
/// then restarted; the transaction must end as `ends_as` with `visible` readable.
fn case(
    python: &str,
    topic: &str,
    failpoint: Option<&str>,
    end: &str,
    reached: impl Fn(&mut TcpStream) -> bool,
    ends_as: &str,
    visible: &[&str],
) -> bool {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let port = free_port();
    let armed = failpoint.map(|point| format!("FAILPOINTS={point}=sleep(120000)"));
    let wrapper: Vec<&str> = match &armed {
        Some(armed) => vec!["env", armed.as_str()],
        None => Vec::new(),
    };
    let server = Server::start_on(port, &wrapper, &dir, SETTINGS, "warn");
    if failpoint.is_some() && !server.stderr().contains("fault points armed") {
        assert!(
            std::env::var_os("CI").is_none(),
            "the failpoints build is required under CI"
        );
        eprintln!("skipped: this ferrolog was built without the failpoints feature");
        return false;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/transaction_to_kill.py");
    let mut client = Command::new(python)
        .arg(&script)
        .args([&port.to_string(), topic, end])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut sent = String::new();
    BufReader::new(client.stdout.take().unwrap())
        .read_line(&mut sent)
        .unwrap();
    assert_eq!(sent.trim(), "sent");
    let mut stream = connect(port);
    wait_until(&format!("{topic}: the state to kill in"), || {
        reached(&mut stream)
    });
    server.kill();
    client.kill().unwrap();
    client.wait().unwrap();

    let server = Server::start_on(port, &[], &dir, SETTINGS, "warn");
    let mut stream = connect(port);
    wait_until(&format!("{topic}: {ends_as}"), || {
        state(&mut stream, topic) == ends_as
    });
    wait_until(&format!("{topic}: the last stable offsets"), || {
        latest(&mut stream, topic, 1) == latest(&mut stream, topic, 0)
    });
    let read = run_script(
        python,
        "transactions_through_kills.py",
        port,
        &[topic, "read", "read_committed"],
    );
    let mut values: Vec<&str> = read.lines().collect();
    values.sort_unstable();
    assert_eq!(values, visible, "{topic}: read_committed");
    drop(server);
    true
}

#[test]
fn a_transaction_killed_in_each_state_ends_as_kafka_s_rules_say() {
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let both = ["r-0", "r-1"];
    let prepared =
        |want: &'static str| move |stream: &mut TcpStream| state(stream, want) == "PrepareCommit";
    // Ongoing: nothing prepared; the transaction times out after the restart and is aborted.
    let ongoing = |stream: &mut TcpStream| state(stream, "ongoing") == "Ongoing";
    if !case(
        &python,
        "ongoing",
        None,
        "open",
        ongoing,
        "CompleteAbort",
        &[],
    ) {
        return;
    }
    // PrepareCommit recorded, no marker written: completed after the restart.
    if !case(
        &python,
        "no-marker",
        Some("txn.markers"),
        "commit",
        prepared("no-marker"),
        "CompleteCommit",
        &both,
    ) {
        return;
    }
    // PrepareAbort recorded, no marker written: the abort completes.
    let aborting = |stream: &mut TcpStream| state(stream, "aborting") == "PrepareAbort";
    case(
        &python,
        "aborting",
        Some("txn.markers"),
        "abort",
        aborting,
        "CompleteAbort",
        &[],
    );
    // One of the two markers written (partition 0's): the other follows after the restart.
    let one_marker = |stream: &mut TcpStream| {
        let (stable, end) = (
            latest(stream, "one-marker", 1),
            latest(stream, "one-marker", 0),
        );
        state(stream, "one-marker") == "PrepareCommit" && stable[0] == end[0] && stable[1] < end[1]
    };
    case(
        &python,
        "one-marker",
        Some("txn.marker-written"),
        "commit",
        one_marker,
        "CompleteCommit",
        &both,
    );
    // Both markers written, the completion not recorded: the markers go again (a retry the
    // partitions take) and the completion is recorded.
    let both_markers = |stream: &mut TcpStream| {
        let (stable, end) = (
            latest(stream, "both-markers", 1),
            latest(stream, "both-markers", 0),
        );
        state(stream, "both-markers") == "PrepareCommit" && stable == end
    };
    case(
        &python,
        "both-markers",
        Some("txn.complete"),
        "commit",
        both_markers,
        "CompleteCommit",
        &both,
    );
}
