//! Exactly-once processing with Kafka 4.4's Java clients against ferrolog, through SIGKILLs of
//! the applications and of the broker (`tools/kafka/apps/ExactlyOnceCheck.java`): a Kafka
//! Streams application with `processing.guarantee=exactly_once_v2` counting records per key, and
//! a consume-transform-produce loop of the plain Java clients copying records, both running,
//! while their input arrives, as the applications are killed three times and the broker three
//! times. The output, read_committed, must be exactly right: every count once and in order,
//! every record copied once. Once with the classic group protocol, once with Kafka 4's own
//! (the application in a streams group, the loop in a consumer group).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::kafka::{kafka_available, kafka_tool};
use common::wire::{connect, latest_offsets};
use common::{Server, free_port};
use ferrolog_testkit::crash::KillDelays;

const RECORDS: &str = "20000";

/// Starts `ExactlyOnceCheck mode bootstrap name state_dir protocol`, its output discarded.
fn application(mode: &str, bootstrap: &str, name: &str, state: &Path, protocol: &str) -> Child {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh"))
        .args(["run", "ExactlyOnceCheck", mode, bootstrap, name])
        .arg(state)
        .arg(protocol)
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

/// The sum of the high watermarks of `topic`'s two partitions; 0 before the application
/// created it (on a loaded machine its first output may come after the first kill).
fn output_end(port: u16, topic: &str) -> i64 {
    latest_offsets(&mut connect(port), topic, 2, 0).map_or(0, |ends| ends.iter().sum())
}

#[test]
fn exactly_once_v2_streams_and_a_java_transactional_loop_survive_sigkills() {
    survive_sigkills(["classic", "classic"], &[]);
}

/// The same on Kafka 4's group protocols: the application's group a streams group (KIP-1071),
/// the loop's a consumer group (KIP-848), their members fenced after 6 s.
#[test]
fn the_same_on_the_streams_and_consumer_group_protocols() {
    survive_sigkills(
        ["streams", "consumer"],
        &[
            "group.streams.min.session.timeout.ms=6000",
            "group.streams.session.timeout.ms=6000",
            "group.streams.min.heartbeat.interval.ms=1000",
            "group.streams.heartbeat.interval.ms=1000",
            "group.consumer.min.session.timeout.ms=6000",
            "group.consumer.session.timeout.ms=6000",
            "group.consumer.min.heartbeat.interval.ms=1000",
            "group.consumer.heartbeat.interval.ms=1000",
        ],
    );
}

/// The scenario, the application's group and the loop's on `protocols`, the broker with
/// `settings`.
fn survive_sigkills(protocols: [&str; 2], settings: &[&str]) {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let port = free_port();
    let start = || Server::start_on(port, &[], &dir, settings, "warn");
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
    let run = |mode: &str, name: &str, state: &Path| {
        let protocol = if mode == "streams" {
            protocols[0]
        } else {
            protocols[1]
        };
        application(mode, &bootstrap, name, state, protocol)
    };
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
