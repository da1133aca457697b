//! `ferrolog serve` with unmodified Kafka clients: kafka-python (every codec, headers, offsets
//! by time, admin), confluent-kafka (admin, acks=all and acks=0, assign(), watermarks, offsets
//! by time) and kcat (metadata, keyed produce and consume), then a clean stop (SIGTERM) and a
//! restart that serves the same records. Skipped with a message when a client is missing,
//! except under CI, where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(data_dir: &Path) -> Self {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--log-dirs",
            ])
            .arg(data_dir)
            .env("FERROLOG_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the broker did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port }
    }

    /// SIGTERM, then wait for the clean shutdown to finish.
    fn stop(mut self) {
        let status = Command::new("kill")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "clean shutdown exits 0: {status:?}");
    }
}

impl Server {
    /// SIGKILL: no shutdown at all.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn python() -> Option<String> {
    let python = std::env::var("FERROLOG_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let ok = Command::new(&python)
        .args(["-c", "import kafka, lz4, zstandard, snappy"])
        .status()
        .is_ok_and(|status| status.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "kafka-python is required under CI"
    );
    eprintln!("skipped: no python with kafka-python (set FERROLOG_PYTHON)");
    None
}

fn kcat() -> Option<PathBuf> {
    let found = Command::new("kcat")
        .arg("-V")
        .output()
        .is_ok_and(|output| output.status.success());
    if found {
        return Some(PathBuf::from("kcat"));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "kcat is required under CI"
    );
    eprintln!("skipped: kcat is not installed");
    None
}

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
    let Some(python) = python() else { return };
    let has_client = Command::new(&python)
        .args(["-c", "import confluent_kafka"])
        .status()
        .is_ok_and(|status| status.success());
    if !has_client {
        assert!(
            std::env::var_os("CI").is_none(),
            "confluent-kafka is required under CI"
        );
        eprintln!("skipped: no confluent-kafka in {python}");
        return;
    }
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
    let output = Command::new(kcat)
        .args([
            "-b",
            &format!("127.0.0.1:{port}"),
            "-C",
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%k=%s\\n",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
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
