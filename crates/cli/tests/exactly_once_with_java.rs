//! Exactly-once processing with Kafka 4.4's Java clients against ferrolog, through SIGKILLs of
//! the applications and of the broker (`tools/kafka/apps/ExactlyOnceCheck.java`): a Kafka
//! Streams application with `processing.guarantee=exactly_once_v2` counting records per key, and
//! a consume-transform-produce loop of the plain Java clients copying records, both running,
//! while their input arrives, as the applications are killed three times and the broker three
//! times. The output,
//! read_committed, must be exactly right: every count once and in order, every record copied
//! once.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::kafka::{kafka_available, kafka_tool};
use common::wire::{connect, latest_offsets};
use common::{Server, free_port};
use ferrolog_testkit::crash::KillDelays;

const RECORDS: &str = "20000";

/// Starts `ExactlyOnceCheck mode bootstrap name state_dir`, its output discarded.
fn application(mode: &str, bootstrap: &str, name: &str, state: &Path) -> Child {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh"))
        .args(["run", "ExactlyOnceCheck", mode, bootstrap, name])
        .arg(state)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn kill(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Runs a check mode of `ExactlyOnceCheck`; its output line, asserting it succeeded.
fn check(mode: &str, bootstrap: &str, name: &str) -> String {
    let output = kafka_tool("ExactlyOnceCheck", &[mode, bootstrap, name, RECORDS], b"");
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{mode}: {printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    printed
}

/// The sum of the high watermarks of `topic`'s two partitions.
fn output_end(port: u16, topic: &str) -> i64 {
    latest_offsets(&mut connect(port), topic, 2, 0)
        .unwrap()
        .iter()
        .sum()
}

#[test]
fn exactly_once_v2_streams_and_a_java_transactional_loop_survive_sigkills() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let port = free_port();
    let start = || Server::start_on(port, &[], &dir, &[], "warn");
    let mut server = start();
    let bootstrap = format!("127.0.0.1:{port}");
    // The input arrives over 30 seconds, through the kills, from the Java producer (idempotent:
    // its retries across broker restarts write each record once).
    let feeders: Vec<Child> = ["eos-streams", "eos-loop"]
        .iter()
        .map(|name| {
            Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh"))
                .args([
                    "run",
                    "ExactlyOnceCheck",
                    "produce",
                    &bootstrap,
                    name,
                    RECORDS,
                    "30",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let streams_state = temp.path().join("streams-state");
    let loop_state = temp.path().join("loop-state");
    let run = |mode: &str, name: &str, state: &Path| application(mode, &bootstrap, name, state);
    let mut streams = run("streams", "eos-streams", &streams_state);
    let mut copier = run("loop", "eos-loop", &loop_state);
    let mut delays = KillDelays::new(0xe05_c0de, 4_000, 4_000);
    for round in 0..6 {
        std::thread::sleep(delays.next_delay());
        let ends = [
            output_end(port, "eos-streams-output"),
            output_end(port, "eos-loop-output"),
        ];
        eprintln!("round {round}: output ends {ends:?}");
        if round < 2 {
            // The kills come while both are still at work (the ends count markers too).
            assert!(ends.iter().all(|end| *end < 20_000), "{ends:?}");
        }
        if round % 2 == 0 {
            kill(streams);
            kill(copier);
            streams = run("streams", "eos-streams", &streams_state);
            copier = run("loop", "eos-loop", &loop_state);
        } else {
            server.kill();
            server = start();
        }
    }
    for feeder in feeders {
        let output = feeder.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "the input was not all written: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
    let counted = check("check-streams", &bootstrap, "eos-streams");
    assert!(counted.contains("every count exactly once"), "{counted}");
    let copied = check("check-loop", &bootstrap, "eos-loop");
    assert!(copied.contains("every value exactly once"), "{copied}");
    kill(streams);
    kill(copier);
    drop(server);
}
