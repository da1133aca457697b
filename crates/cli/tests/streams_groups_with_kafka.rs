//! Kafka Streams' own group protocol (KIP-1071, `group.protocol=streams`) against `ferrolog
//! serve` and Kafka 4.4 side by side. A word count (a repartition topic and a state store with
//! its changelog) runs as two instances of one application on each broker: the broker creates
//! the internal topics, holds the first assignment for the initial delay, then splits the four
//! tasks two and two; every final count is right, and the group as Kafka's Admin client
//! describes it (state, assignor, topology with the internal topics' partitions, members at the
//! group epoch holding their targets) prints the same from both. Then `kafka-streams-groups`
//! lists, describes, resets the input offsets of and deletes the group, with the same output
//! from both.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool, kafka_tool_ok};

const STREAMS_GROUPS: &str = "org.apache.kafka.tools.streams.StreamsGroupCommand";
const APP: &str = "words";

/// The word count with two instances on `bootstrap`: the lines each instance's tasks were
/// printed on, and the rest of what it printed.
fn word_count(bootstrap: &str, state: &std::path::Path) -> (Vec<String>, String) {
    let state = state.to_str().unwrap();
    let out = kafka_tool_ok(
        "WordCountCheck",
        &[bootstrap, APP, state, "streams", "2"],
        b"",
    );
    let (instances, rest): (Vec<&str>, Vec<&str>) =
        out.lines().partition(|line| line.starts_with("instance "));
    (
        instances.into_iter().map(str::to_owned).collect(),
        rest.join("\n"),
    )
}

/// Each instance holds two of the four tasks, none held twice (which instance holds which
/// depends on the members' random ids, on either broker).
fn assert_split(instances: &[String], broker: &str) {
    let mut all = BTreeSet::new();
    assert_eq!(instances.len(), 2, "{broker}: {instances:?}");
    for line in instances {
        let tasks = line.split_once("active [").unwrap().1.trim_end_matches(']');
        let tasks: Vec<&str> = tasks.split(", ").collect();
        assert_eq!(tasks.len(), 2, "{broker}: {line}");
        all.extend(tasks);
    }
    assert_eq!(
        all,
        BTreeSet::from(["0_0", "0_1", "1_0", "1_1"]),
        "{broker}: {instances:?}"
    );
}

/// `kafka-streams-groups` with `args` on `bootstrap`: stdout, and stderr's lines naming an
/// error; the coordinator's address (its port differs) is taken out.
fn streams_groups(bootstrap: &str, args: &[&str]) -> String {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let output = kafka_tool(STREAMS_GROUPS, &all, b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Error")).collect();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        errors.join("\n")
    )
    .replace(bootstrap, "BROKER")
}

/// The tool's steps on one broker, after the application stopped.
fn tool_steps(bootstrap: &str) -> Vec<String> {
    let input = format!("{APP}-lines");
    vec![
        streams_groups(bootstrap, &["--list"]),
        streams_groups(bootstrap, &["--describe", "--group", APP, "--state"]),
        streams_groups(bootstrap, &["--describe", "--group", APP]),
        streams_groups(
            bootstrap,
            &[
                "--reset-offsets",
                "--group",
                APP,
                "--input-topic",
                &input,
                "--to-earliest",
                "--dry-run",
            ],
        ),
        streams_groups(
            bootstrap,
            &[
                "--reset-offsets",
                "--group",
                APP,
                "--input-topic",
                &input,
                "--to-offset",
                "5",
                "--execute",
            ],
        ),
        streams_groups(bootstrap, &["--delete", "--group", APP]),
        streams_groups(bootstrap, &["--list"]),
    ]
}

#[test]
fn a_kafka_streams_application_runs_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let server = Server::start(&temp.path().join("ferrolog"));
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), &[]);
    let ours = format!("127.0.0.1:{}", server.port);
    let theirs = kafka.bootstrap();
    let (our_instances, our_run) = word_count(&ours, &temp.path().join("state-ferrolog"));
    let (their_instances, their_run) = word_count(&theirs, &temp.path().join("state-kafka"));
    assert_split(&their_instances, "Kafka 4.4");
    assert_split(&our_instances, "ferrolog");
    assert!(their_run.contains("every final count right"), "{their_run}");
    assert_eq!(our_run, their_run, "ferrolog:\n{}", server.stderr());
    assert!(
        our_run.contains(&format!("group {APP}: Stable, 2 members, assignor sticky")),
        "{our_run}"
    );
    let their_steps = tool_steps(&theirs);
    let our_steps = tool_steps(&ours);
    assert!(
        their_steps[0].lines().any(|line| line == APP),
        "{their_steps:?}"
    );
    assert!(their_steps[5].contains("was successful"), "{their_steps:?}");
    assert_eq!(our_steps, their_steps);
}
