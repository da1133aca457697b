//! A data directory in which Kafka 4.4 was killed (SIGKILL) in the middle of moving a
//! partition to its other data directory: a throttled `kafka-reassign-partitions` with
//! `log_dirs` has a `-future` log half copied when the broker dies. ferrolog opens a copy of
//! both directories, finds the future log beside the current one, goes on with the move and
//! swaps it in; Kafka, restarted on its own directories, does the same. Both end with the
//! partition in the second directory, serving the same record bytes from start to end.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::answers::partition_answers;
use common::kafka::{
    CONFIG_COMMAND, DELETE_MOVE_THROTTLE, KafkaPeer, kafka_available, kafka_tool_ok,
};
use common::wire::{connect, log_dirs};
use common::{Server, copy_dir};

const TOPIC: &str = "interrupted";
const RECORDS: &str = "8000";

/// The `-future` directory of the topic's partition in `dir`, if there is one.
fn future_dir(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.starts_with(&format!("{TOPIC}-0.")) && name.ends_with("-future")
        })
}

/// Bytes of the `.log` files in `dir`.
fn log_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "log"))
        .map(|path| std::fs::metadata(path).unwrap().len())
        .sum()
}

/// Waits until the broker on `port` lists no future log and the partition in `dir`.
fn wait_until_moved(port: u16, dir: &Path, who: &str) {
    let started = Instant::now();
    loop {
        let (futures, homes) = log_dirs(&mut connect(port));
        let home = homes
            .iter()
            .find(|(partition, _)| partition == &format!("{TOPIC}-0"))
            .map(|(_, home)| PathBuf::from(home));
        if futures == 0 && home.as_deref() == Some(dir) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{who}: the move did not finish ({futures} future logs, the partition in {home:?})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_move_kafka_was_killed_in_settles_in_ferrolog_as_in_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_dirs = [temp.path().join("kafka/a"), temp.path().join("kafka/b")];
    std::fs::create_dir_all(&kafka_dirs[1]).unwrap();
    let mut kafka = KafkaPeer::start(
        &kafka_dirs[0],
        &[&format!(
            "log.dirs={},{}",
            kafka_dirs[0].display(),
            kafka_dirs[1].display()
        )],
    );
    let bootstrap = kafka.bootstrap();
    let tool = |class: &str, args: &[&str]| {
        let mut all = vec!["--bootstrap-server", bootstrap.as_str()];
        all.extend_from_slice(args);
        kafka_tool_ok(class, &all, b"")
    };
    tool(
        "org.apache.kafka.tools.TopicCommand",
        &["--create", "--topic", TOPIC, "--partitions", "1"],
    );
    kafka_tool_ok(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            TOPIC,
            "--num-records",
            RECORDS,
            "--record-size",
            "1000",
            "--throughput",
            "-1",
            "--producer-props",
            &format!("bootstrap.servers={bootstrap}"),
        ],
        b"",
    );
    let (from, to) = if kafka_dirs[0].join(format!("{TOPIC}-0")).exists() {
        (0, 1)
    } else {
        (1, 0)
    };
    let total = log_bytes(&kafka_dirs[from].join(format!("{TOPIC}-0")));

    // A move at 1 MB/s; the broker dies with part of the log copied.
    let plan = temp.path().join("plan.json");
    std::fs::write(
        &plan,
        format!(
            r#"{{"version":1,"partitions":[{{"topic":"{TOPIC}","partition":0,"replicas":[0],"log_dirs":["{}"]}}]}}"#,
            kafka_dirs[to].display()
        ),
    )
    .unwrap();
    tool(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        &[
            "--execute",
            "--reassignment-json-file",
            plan.to_str().unwrap(),
            "--replica-alter-log-dirs-throttle",
            "1000000",
        ],
    );
    let started = Instant::now();
    let future = loop {
        if let Some(future) = future_dir(&kafka_dirs[to])
            && log_bytes(&future) > 0
        {
            break future;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no copy started:\n{}",
            kafka.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    kafka.kill();
    let copied = log_bytes(&future);
    assert!(
        copied > 0 && copied < total,
        "{copied} of {total} bytes copied"
    );

    // ferrolog, on a copy of both directories.
    let ferrolog_dirs = [
        temp.path().join("ferrolog-a"),
        temp.path().join("ferrolog-b"),
    ];
    for (kafka_dir, ours) in kafka_dirs.iter().zip(&ferrolog_dirs) {
        copy_dir(kafka_dir, ours);
    }
    let server = Server::start(Path::new(&format!(
        "{},{}",
        ferrolog_dirs[0].display(),
        ferrolog_dirs[1].display()
    )));
    wait_until_moved(server.port, &ferrolog_dirs[to], "ferrolog");
    assert!(ferrolog_dirs[to].join(format!("{TOPIC}-0")).is_dir());

    // Kafka, restarted, goes on with the move too (the throttle dropped, to be quick).
    kafka.restart();
    tool(CONFIG_COMMAND, DELETE_MOVE_THROTTLE);
    wait_until_moved(kafka.port, &kafka_dirs[to], "Kafka");

    let theirs = partition_answers(&mut connect(kafka.port), TOPIC, 0);
    let ours = partition_answers(&mut connect(server.port), TOPIC, 0);
    assert_eq!(ours.high_watermark, RECORDS.parse::<i64>().unwrap());
    assert_eq!(
        (ours.log_start_offset, ours.high_watermark),
        (theirs.log_start_offset, theirs.high_watermark)
    );
    assert!(ours.records == theirs.records, "the record bytes differ");
    server.stop();
}
