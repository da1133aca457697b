//! Moves between data directories under load from real clients: while a confluent-kafka
//! idempotent producer (acks=all) and a consumer work on a plain topic and on a compacted one
//! that the cleaner keeps cleaning (`tests/python/moves_under_load.py`), every partition is
//! moved to the other directory and back, three times, with AlterReplicaLogDirs; each round
//! waits until DescribeLogDirs shows no future log. Then:
//! - the script's checks: every produce acknowledged, the consumer saw no gap, and every
//!   acknowledged record is there exactly once at its offset (the compacted topic: each key's
//!   last value), and fewer compacted records are left than were written;
//! - the plain topic's logs left behind by each move (kept by `log.segment.delete.delay.ms`) hold
//!   exactly the bytes the partition's log now starts with.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::wire::{connect, log_dirs, name, send};
use common::{Server, python_with_confluent_kafka};
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, ApiKey, TopicName,
};

const TOPICS: [(&str, i32); 2] = [("busy", 3), ("compacted", 2)];
const ROUNDS: usize = 6;

/// The clients' process, killed if the test fails before it ends.
struct Clients(std::process::Child);

impl Drop for Clients {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Asks for every partition of both topics in `dir`; each must be answered NONE.
fn move_all(stream: &mut TcpStream, dir: &Path, server: &Server) {
    let request = AlterReplicaLogDirsRequest::default().with_dirs(vec![
        AlterReplicaLogDir::default()
            .with_path(name(dir.to_str().unwrap()))
            .with_topics(
                TOPICS
                    .iter()
                    .map(|(topic, partitions)| {
                        AlterReplicaLogDirTopic::default()
                            .with_name(TopicName(name(topic)))
                            .with_partitions((0..*partitions).collect())
                    })
                    .collect(),
            ),
    ]);
    let response: AlterReplicaLogDirsResponse =
        send(stream, ApiKey::AlterReplicaLogDirs, 2, &request).unwrap();
    for topic in &response.results {
        for partition in &topic.partitions {
            assert_eq!(partition.error_code, 0, "{topic:?}\n{}", server.stderr());
        }
    }
}

/// The bytes of a partition directory's segments, in offset order.
fn log_bytes(dir: &Path) -> Vec<u8> {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "log"))
        .collect();
    segments.sort();
    segments
        .iter()
        .flat_map(|segment| std::fs::read(segment).unwrap())
        .collect()
}

#[test]
fn clients_lose_nothing_while_every_partition_moves_back_and_forth() {
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let dirs = [temp.path().join("a"), temp.path().join("b")];
    let both = format!("{},{}", dirs[0].display(), dirs[1].display());
    let server = Server::start_with(
        Path::new(&both),
        &[
            "log.segment.delete.delay.ms=3600000",
            "log.cleaner.backoff.ms=100",
            // Slow enough that producers outrun a copy for a while.
            "replica.alter.log.dirs.io.max.bytes.per.second=20000000",
        ],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/moves_under_load.py");
    let mut clients = Clients(
        Command::new(&python)
            .arg(&script)
            .arg(server.port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(clients.0.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let mut stream = connect(server.port);
    std::thread::sleep(Duration::from_secs(2));

    // Where each plain partition is, and so how many times it moves: a round asks for every
    // partition in one directory, and those already there stay.
    let mut homes: std::collections::BTreeMap<String, String> = log_dirs(&mut stream)
        .1
        .into_iter()
        .filter(|(partition, _)| partition.starts_with("busy-"))
        .collect();
    let mut moves = 0;
    for round in 0..ROUNDS {
        let target = &dirs[(round + 1) % 2];
        for home in homes.values_mut() {
            if Path::new(home.as_str()) != target {
                moves += 1;
                *home = target.display().to_string();
            }
        }
        move_all(&mut stream, target, &server);
        let started = Instant::now();
        loop {
            let (futures, homes) = log_dirs(&mut stream);
            if futures == 0 {
                let ours = homes.iter().filter(|(partition, _)| {
                    TOPICS
                        .iter()
                        .any(|(topic, _)| partition.starts_with(&format!("{topic}-")))
                });
                assert!(
                    ours.clone().count() == 5
                        && ours.clone().all(|(_, dir)| Path::new(dir) == target),
                    "round {round}: {homes:?}"
                );
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "round {round}: {futures} moves did not finish"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    writeln!(clients.0.stdin.take().unwrap(), "stop").unwrap();
    let verdict: Vec<String> = lines.map(Result::unwrap).collect();
    let status = clients.0.wait().unwrap();
    assert!(
        status.success() && verdict.last().is_some_and(|line| line.starts_with("OK")),
        "{verdict:?}"
    );
    let summary = verdict.last().unwrap();
    eprintln!("{summary}");
    // The cleaner worked on the compacted topic meanwhile: fewer records are left than written.
    let numbers: Vec<u64> = summary
        .split(' ')
        .filter_map(|word| word.trim_end_matches(',').parse().ok())
        .collect();
    assert!(numbers[2] < numbers[1], "{summary}");

    // Each plain partition's logs left behind are what its log now starts with, byte for byte.
    let mut compared = Vec::new();
    for partition in 0..3 {
        let name = format!("busy-{partition}");
        let current = dirs
            .iter()
            .map(|dir| dir.join(&name))
            .find(|path| path.exists())
            .unwrap();
        let now = log_bytes(&current);
        for dir in &dirs {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
                if file_name.starts_with(&format!("{name}.")) && file_name.ends_with("-delete") {
                    let before = log_bytes(&path);
                    assert!(!before.is_empty());
                    assert!(
                        now.starts_with(&before),
                        "{file_name}: {} bytes are not where {name} starts",
                        before.len()
                    );
                    compared.push(file_name);
                }
            }
        }
    }
    assert_eq!(
        compared.len(),
        moves,
        "one log left behind per partition and move: {compared:?}\n{}",
        server.stderr()
    );
    server.stop();
}
