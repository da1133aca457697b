//! Consumer groups with unmodified clients against `ferrolog serve`: kafka-python and
//! confluent-kafka consumers commit and, after a clean restart and after a SIGKILL, resume
//! exactly after their last commit; two consumers split a topic, a third joins and one leaves,
//! and every message is read exactly once; kafka-python's admin lists, describes and deletes
//! groups and offsets; `kcat -G` consumes as a group and resumes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{Server, kcat, kcat_lines, python, python_with_confluent_kafka, run_script};

/// The first rebalance of a group would otherwise wait 3 s for more members (Kafka's default).
const NO_INITIAL_DELAY: &[&str] = &["group.initial.rebalance.delay.ms=0"];

/// Runs the script's phases with a broker on a data dir in `temp`; returns the broker, still
/// running, for more phases.
fn resume_across_restarts_then_split(
    python: &str,
    script: &str,
    temp: &tempfile::TempDir,
) -> Server {
    let data = temp.path().join("data");
    let server = Server::start_with(&data, NO_INITIAL_DELAY);
    run_script(python, script, server.port, &["produce"]);
    let out = run_script(python, script, server.port, &["consume", "250"]);
    assert!(out.contains("read 250 committed 250"), "{out}");

    server.stop();
    let server = Server::start_with(&data, NO_INITIAL_DELAY);
    let out = run_script(python, script, server.port, &["consume", "50"]);
    assert!(out.contains("read 50 committed 300"), "{out}");

    server.kill();
    let server = Server::start_with(&data, NO_INITIAL_DELAY);
    let out = run_script(python, script, server.port, &["rest"]);
    assert!(out.contains("read 100 committed 400"), "{out}");

    let out = run_script(python, script, server.port, &["split"]);
    assert!(out.contains("split ok: 1500 messages"), "{out}");
    server
}

#[test]
fn kafka_python_groups_resume_after_restarts_and_rebalance_without_loss() {
    let Some(python) = python() else { return };
    let script = "groups_kafka_python.py";
    let temp = tempfile::tempdir().unwrap();
    let server = resume_across_restarts_then_split(&python, script, &temp);
    // ListGroups, DescribeGroups, OffsetFetch for all, OffsetDelete and DeleteGroups.
    let out = run_script(&python, script, server.port, &["admin"]);
    assert!(out.contains("admin ok"), "{out}");
    server.stop();
}

#[test]
fn confluent_kafka_groups_resume_after_restarts_and_rebalance_without_loss() {
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    resume_across_restarts_then_split(&python, "groups_confluent_kafka.py", &temp).stop();
}

/// Offsets `kcat -G` printed, consuming `count` messages of `grouped` in `group`.
fn kcat_group_consume(kcat: &std::path::Path, port: u16, group: &str, count: usize) -> Vec<i64> {
    let count = count.to_string();
    kcat_lines(
        kcat,
        port,
        &[
            "-G",
            group,
            "-X",
            "auto.offset.reset=earliest",
            "-q",
            "-f",
            "%o\\n",
            "-c",
            &count,
            "grouped",
        ],
    )
    .iter()
    .map(|line| line.parse().unwrap())
    .collect()
}

#[test]
fn kcat_consumes_as_a_group_and_resumes_from_its_commit() {
    let Some(kcat) = kcat() else { return };
    let temp = tempfile::tempdir().unwrap();
    let server = Server::start_with(&temp.path().join("data"), NO_INITIAL_DELAY);
    let mut producer = Command::new(&kcat)
        .args(["-b", &format!("127.0.0.1:{}", server.port)])
        .args(["-P", "-t", "grouped"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let stdin = producer.stdin.as_mut().unwrap();
        for i in 0..200 {
            writeln!(stdin, "v{i}").unwrap();
        }
    }
    assert!(producer.wait().unwrap().success());

    // kcat commits what it consumed when it leaves; the next member resumes there.
    let first = kcat_group_consume(&kcat, server.port, "kcat-group", 120);
    assert_eq!(first, (0..120).collect::<Vec<i64>>());
    let second = kcat_group_consume(&kcat, server.port, "kcat-group", 80);
    assert_eq!(second, (120..200).collect::<Vec<i64>>());
    server.stop();
}
