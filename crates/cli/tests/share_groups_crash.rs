//! Share groups through a SIGKILL of the broker: four `KafkaShareConsumer`s accept and commit
//! 20,000 records (`ShareGroupCheck durable`); a third of the way through ferrolog is killed
//! and started again on the same directory and port, and the consumers carry on. Every record
//! ends confirmed, and none whose acknowledgement was confirmed is delivered again: what an
//! acknowledgement changes is in `__share_group_state` before it is answered; what was acquired
//! and not acknowledged is delivered again. Kafka 4.4, killed and started again the same way,
//! never delivers a confirmed record again either.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh")
}

/// Runs `ShareGroupCheck durable` on `bootstrap`, calling `crash` once a third is confirmed;
/// returns its counts line.
fn durable(bootstrap: &str, crash: impl FnOnce()) -> String {
    let mut consumers = Command::new(script())
        .args([
            "run",
            "ShareGroupCheck",
            "durable",
            bootstrap,
            "durable",
            "work",
            "4",
            "20000",
            "60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(consumers.stdout.take().unwrap());
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let halfway = received.recv_timeout(Duration::from_secs(90)).unwrap();
    assert_eq!(halfway, "halfway");
    crash();
    let counts = received.recv_timeout(Duration::from_secs(200)).unwrap();
    consumers.wait().unwrap();
    counts
}

#[test]
fn nothing_accepted_comes_back_and_nothing_acquired_is_lost_after_a_sigkill() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("ferrolog");
    // The share settings an operator of a single node sets, Kafka's replication keys included.
    let settings = [
        "group.share.record.lock.duration.ms=15000",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
    ];
    let server = Server::start_with(&dir, &settings);
    let port = server.port;
    let mut restarted = None;
    let ours = durable(&format!("127.0.0.1:{port}"), || {
        server.kill();
        restarted = Some(Server::start_on(port, &[], &dir, &settings, "warn"));
    });
    let stderr = restarted.map(|server| server.stderr()).unwrap_or_default();
    assert_eq!(
        ours, "confirmed=20000 redelivered_after_confirm=0",
        "ferrolog:\n{stderr}"
    );

    let mut kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &[]);
    let theirs = durable(&kafka.bootstrap(), || {
        kafka.kill();
        kafka.restart();
    });
    // Kafka too never delivers a confirmed record again; within the minute it may not have
    // confirmed every record (it can be slow to come back), which the test reports and allows.
    assert!(
        theirs.ends_with("redelivered_after_confirm=0"),
        "Kafka 4.4: {theirs}"
    );
    eprintln!("Kafka 4.4 through the same SIGKILL: {theirs}");
}
