//! `ferrolog serve` with unmodified Kafka clients: kafka-python (every codec, headers, offsets
//! by time, admin), confluent-kafka (admin, acks=all and acks=0, assign(), watermarks, offsets
//! by time) and kcat (metadata, keyed produce and consume), then a clean stop (SIGTERM) and a
//! restart that serves the same records. Skipped with a message when a client is missing,
//! except under CI, where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;

use common::{Server, kcat, kcat_lines, python, python_with_confluent_kafka};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/kafka_python_clients.py")
}

#[test]
fn kafka_python_produces_and_consumes_every_codec() {
    let Some(python) = python() else { return };
    let temp = tempfile::tempdir().unwrap();
    let server = Server::start(&temp.path().join("data"));
    let output = Command::new(&python)
        .arg(script())
        .arg(server.port.to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("offsets by time: ok") && stdout.contains("admin: ok"),
        "{stdout}"
    );
    server.stop();
}

#[test]
fn confluent_kafka_creates_produces_with_each_acks_consumes_and_configs_survive_restart() {
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/confluent_kafka_clients.py");
    let run = |port: u16, phase: &[&str], expected: &str| {
        let output = Command::new(&python)
            .arg(&script)
            .arg(port.to_string())
            .args(phase)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains(expected),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let server = Server::start(&data);
    run(server.port, &[], "confluent-kafka ok");
    server.stop();
    let restarted = Server::start(&data);
    run(
        restarted.port,
        &["after-restart"],
        "confluent-kafka after restart ok",
    );
    restarted.stop();
}

fn kcat_consume(kcat: &Path, port: u16, topic: &str) -> Vec<String> {
    kcat_lines(
        kcat,
        port,
        &[
            "-C",
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%k=%s\\n",
        ],
    )
}

#[test]
fn kcat_lists_produces_and_consumes_and_the_data_survives_restarts_clean_and_sigkill() {
    let Some(kcat) = kcat() else { return };
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let server = Server::start(&data_dir);
    let bootstrap = format!("127.0.0.1:{}", server.port);

    let mut producer = Command::new(&kcat)
        .args(["-b", &bootstrap, "-P", "-t", "keyed", "-K:"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let stdin = producer.stdin.as_mut().unwrap();
        for i in 0..5000 {
            writeln!(stdin, "k{i}:v{i}").unwrap();
        }
    }
    assert!(producer.wait().unwrap().success());
    let expected: Vec<String> = (0..5000).map(|i| format!("k{i}=v{i}")).collect();
    assert_eq!(kcat_consume(&kcat, server.port, "keyed"), expected);

    let metadata = Command::new(&kcat)
        .args(["-b", &bootstrap, "-L"])
        .output()
        .unwrap();
    let metadata = String::from_utf8_lossy(&metadata.stdout).into_owned();
    assert!(
        metadata.contains("topic \"keyed\" with 1 partitions"),
        "{metadata}"
    );
    assert!(
        metadata.contains(&format!("broker 0 at {bootstrap}")),
        "{metadata}"
    );

    server.stop();
    assert!(
        data_dir.join(".kafka_cleanshutdown").exists(),
        "SIGTERM shuts down cleanly"
    );
    let server = Server::start(&data_dir);
    assert_eq!(
        kcat_consume(&kcat, server.port, "keyed"),
        expected,
        "the same records after a restart"
    );

    // Then a SIGKILL right after more acknowledged records: the restart recovers them all.
    let bootstrap = format!("127.0.0.1:{}", server.port);
    let mut producer = Command::new(&kcat)
        .args([
            "-b", &bootstrap, "-P", "-t", "keyed", "-K:", "-X", "acks=all",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let stdin = producer.stdin.as_mut().unwrap();
        for i in 5000..8000 {
            writeln!(stdin, "k{i}:v{i}").unwrap();
        }
    }
    assert!(
        producer.wait().unwrap().success(),
        "kcat exits 0 once every record is acknowledged"
    );
    server.kill();
    assert!(!data_dir.join(".kafka_cleanshutdown").exists());
    let server = Server::start(&data_dir);
    let all: Vec<String> = (0..8000).map(|i| format!("k{i}=v{i}")).collect();
    assert_eq!(
        kcat_consume(&kcat, server.port, "keyed"),
        all,
        "every acknowledged record after SIGKILL"
    );
    server.stop();
}
