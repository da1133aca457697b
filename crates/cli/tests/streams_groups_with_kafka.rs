//! Kafka Streams' own group protocol (KIP-1071, `group.protocol=streams`) against `ferrolog
//! serve` and Kafka 4.4 side by side. A word count (a repartition topic and a state store with
//! its changelog) runs as two instances of one application on each broker: the broker creates
//! the internal topics, holds the first assignment for the initial delay, then splits the four
//! tasks two and two; every final count is right, and the group as Kafka's Admin client
//! describes it (state, assignor, topology with the internal topics' partitions, members at the
//! group epoch holding their targets) prints the same from both. Then `kafka-streams-groups`
//! lists, describes, resets the input offsets of and deletes the group, with the same output
//! from both. Before that, a topology description sent for the group (API 93, KIP-1331) and a
//! describe asking for it are answered alike: neither broker keeps descriptions without a
//! plugin.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;

use bytes::Bytes;
use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool, kafka_tool_ok};
use common::wire::{connect, exchange, frame};
use ferrolog_broker::protocol::ApiKey;
use ferrolog_broker::protocol::messages::streams_group_describe_response::StreamsGroupDescribeResponse;
use ferrolog_broker::protocol::messages::streams_group_topology_description_update_response::StreamsGroupTopologyDescriptionUpdateResponse;
use ferrolog_broker::protocol::messages::{
    StreamsGroupDescribeRequest, StreamsGroupTopologyDescriptionUpdateRequest,
};
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::Decodable;

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

/// The body of the answer to `request`, sent at `version` on a new connection to `port`
/// (both APIs' responses have header v1).
fn ask<R: kafka_protocol::protocol::Encodable>(
    port: u16,
    api: ApiKey,
    version: i16,
    request: &R,
) -> Bytes {
    let mut response = exchange(&mut connect(port), &frame(api, version, request)).unwrap();
    ResponseHeader::decode(&mut response, 1).unwrap();
    response
}

/// What a broker answers to a topology description pushed for the running group, and to a
/// describe of the group asking for its description.
fn topology_description_answers(port: u16) -> String {
    let update = StreamsGroupTopologyDescriptionUpdateRequest {
        group_id: APP.to_owned(),
        member_id: "a-member".to_owned(),
        ..StreamsGroupTopologyDescriptionUpdateRequest::default()
    };
    let mut body = ask(
        port,
        ApiKey::StreamsGroupTopologyDescriptionUpdate,
        0,
        &update,
    );
    let pushed = StreamsGroupTopologyDescriptionUpdateResponse::decode(&mut body, 0).unwrap();
    let describe = StreamsGroupDescribeRequest {
        group_ids: vec![APP.to_owned()],
        include_topology_description: true,
        ..StreamsGroupDescribeRequest::default()
    };
    let mut body = ask(port, ApiKey::StreamsGroupDescribe, 1, &describe);
    let described = StreamsGroupDescribeResponse::decode(&mut body, 1).unwrap();
    let group = &described.groups[0];
    format!(
        "push: error {} {:?}; describe: error {}, description status {}, described {}",
        pushed.error_code,
        pushed.error_message,
        group.error_code,
        group.topology_description_status,
        group.topology_description.is_some()
    )
}

fn port_of(bootstrap: &str) -> u16 {
    bootstrap.rsplit(':').next().unwrap().parse().unwrap()
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
    let their_answers = topology_description_answers(port_of(&theirs));
    assert_eq!(
        their_answers,
        "push: error 35 Some(\"The broker has no streams group topology description plugin configured.\"); describe: error 0, description status 1, described false"
    );
    assert_eq!(topology_description_answers(server.port), their_answers);
    let their_steps = tool_steps(&theirs);
    let our_steps = tool_steps(&ours);
    assert!(
        their_steps[0].lines().any(|line| line == APP),
        "{their_steps:?}"
    );
    assert!(their_steps[5].contains("was successful"), "{their_steps:?}");
    assert_eq!(our_steps, their_steps);
}
