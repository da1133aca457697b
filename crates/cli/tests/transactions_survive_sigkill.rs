//! Transactions through SIGKILLs of the broker: a confluent-kafka transactional producer keeps
//! committing (and aborting every third) transactions of four records over two partitions while
//! `ferrolog serve` is killed with SIGKILL and restarted on the same port ten times, in whatever
//! coordinator state each kill finds it (ongoing, preparing, markers half written, complete).
//! After the last restart every transaction is finished: each partition's last stable offset
//! reaches its high watermark, and never went backwards from one restart to the next; a
//! `read_committed` consumer sees every transaction the producer saw committed exactly once,
//! no aborted one, and each transaction whole or not at all.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::wire::{connect, latest_offsets};
use common::{Server, free_port, python_with_confluent_kafka, run_script};
use ferrolog_testkit::crash::KillDelays;

const TOPIC: &str = "through-kills";
const KILLS: usize = 10;

/// ListOffsets latest of both partitions at `isolation_level` (0: the high watermark, 1: the
/// last stable offset); `None` while the partitions are not there yet.
fn latest(stream: &mut TcpStream, isolation_level: i8) -> Option<Vec<i64>> {
    latest_offsets(stream, TOPIC, 2, isolation_level)
}

fn start(port: u16, dir: &Path) -> Server {
    Server::start_on(port, &[], dir, &[], "warn")
}

#[test]
fn transactions_finish_as_their_producer_saw_them_through_sigkills() {
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let port = free_port();
    let mut server = start(port, &dir);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/transactions_through_kills.py");
    let mut producer = Command::new(&python)
        .arg(&script)
        .args([&port.to_string(), TOPIC, "produce", "40"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = producer.stdout.take().unwrap();
    let lines = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map(Result::unwrap)
            .collect::<Vec<String>>()
    });

    let mut delays = KillDelays::new(0x5eed_7a11, 1_500, 1_500);
    let mut stable_before = vec![0i64; 2];
    for _ in 0..KILLS {
        std::thread::sleep(delays.next_delay());
        server.kill();
        server = start(port, &dir);
        // Once the coordinator has loaded, the last stable offsets are at least what they were
        // before the kill.
        let mut stream = connect(port);
        if let Some(stable) = latest(&mut stream, 1) {
            for partition in 0..2 {
                assert!(
                    stable[partition] >= stable_before[partition],
                    "partition {partition}'s last stable offset went back from {} to {}",
                    stable_before[partition],
                    stable[partition]
                );
            }
            stable_before = stable;
        }
    }
    let outcomes: BTreeMap<u64, String> = lines
        .join()
        .unwrap()
        .iter()
        .map(|line| {
            let (txn, outcome) = line.split_once(' ').unwrap();
            (txn.parse().unwrap(), outcome.to_owned())
        })
        .collect();
    assert!(producer.wait().unwrap().success());
    let committed: BTreeSet<u64> = outcomes
        .iter()
        .filter(|(_, outcome)| *outcome == "committed")
        .map(|(txn, _)| *txn)
        .collect();
    let aborted: BTreeSet<u64> = outcomes
        .iter()
        .filter(|(_, outcome)| *outcome == "aborted")
        .map(|(txn, _)| *txn)
        .collect();
    eprintln!(
        "{} transactions: {} committed, {} aborted, {} unknown",
        outcomes.len(),
        committed.len(),
        aborted.len(),
        outcomes.len() - committed.len() - aborted.len()
    );
    assert!(
        committed.len() >= 20 && aborted.len() >= 5,
        "the producer got through too little: {outcomes:?}"
    );

    // Every transaction ends: the last stable offsets reach the high watermarks.
    let mut stream = connect(port);
    let started = Instant::now();
    loop {
        let (end, stable) = (latest(&mut stream, 0), latest(&mut stream, 1));
        if end.is_some() && end == stable {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "transactions left open: high watermarks {end:?}, last stable offsets {stable:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let read = run_script(
        &python,
        "transactions_through_kills.py",
        port,
        &[TOPIC, "read", "read_committed"],
    );
    let mut records_of: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for value in read.lines() {
        let txn = value.split('-').next().unwrap().parse().unwrap();
        records_of.entry(txn).or_default().push(value.to_owned());
    }
    for (txn, records) in &records_of {
        let mut sorted = records.clone();
        sorted.sort();
        let whole: Vec<String> = (0..4).map(|k| format!("{txn}-{k}")).collect();
        assert_eq!(
            sorted, whole,
            "transaction {txn}: each record once, all or none"
        );
        assert!(
            !aborted.contains(txn),
            "transaction {txn} was aborted, yet read_committed sees it"
        );
    }
    for txn in &committed {
        assert!(
            records_of.contains_key(txn),
            "transaction {txn} was committed, yet read_committed does not see it"
        );
    }
}
