//! KIP-848 consumer groups as the tests compare them between brokers.

use std::path::Path;
use std::time::{Duration, Instant};

use kafka_protocol::messages::consumer_group_describe_response::Assignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, GroupId,
};

use super::wire::{connect, name, send};

/// The KIP-848 groups as ConsumerGroupDescribe shows them, in words both brokers share: state,
/// epochs, assignor, then each member (by id) with its epoch and assignments by topic name;
/// last, what DescribeGroups (version 6, the classic protocol's) says of each.
pub fn consumer_groups(port: u16, groups: &[&str]) -> Vec<String> {
    let request = ConsumerGroupDescribeRequest::default()
        .with_group_ids(groups.iter().map(|g| GroupId(name(g))).collect());
    let response: ConsumerGroupDescribeResponse = send(
        &mut connect(port),
        ApiKey::ConsumerGroupDescribe,
        1,
        &request,
    )
    .unwrap();
    let assignment = |a: &Assignment| {
        let mut topics: Vec<String> = a
            .topic_partitions
            .iter()
            .map(|t| {
                let mut partitions = t.partitions.clone();
                partitions.sort_unstable();
                format!("{}{partitions:?}", t.topic_name.0)
            })
            .collect();
        topics.sort();
        topics.join(",")
    };
    let mut lines = Vec::new();
    for group in response.groups {
        lines.push(format!(
            "{} error {} {} epoch {} assignment epoch {} assignor {}",
            group.group_id.0,
            group.error_code,
            group.group_state,
            group.group_epoch,
            group.assignment_epoch,
            group.assignor_name
        ));
        let mut members: Vec<String> = group
            .members
            .iter()
            .map(|m| {
                format!(
                    "  {} {:?} type {} epoch {} owns {} target {} subscribed {:?}",
                    m.member_id,
                    m.instance_id,
                    m.member_type,
                    m.member_epoch,
                    assignment(&m.assignment),
                    assignment(&m.target_assignment),
                    m.subscribed_topic_names
                )
            })
            .collect();
        members.sort();
        lines.extend(members);
    }
    let request = DescribeGroupsRequest::default()
        .with_groups(groups.iter().map(|g| GroupId(name(g))).collect());
    let classic: DescribeGroupsResponse =
        send(&mut connect(port), ApiKey::DescribeGroups, 6, &request).unwrap();
    for group in classic.groups {
        lines.push(format!(
            "describe-groups {} {} error {} {:?}",
            group.group_id.0, group.group_state, group.error_code, group.error_message
        ));
    }
    lines
}

/// A static member (`pod-live`) of the KIP-848 group `group` that consumes `topic` until its
/// group is stable, then is SIGKILLed: the broker keeps it as a member until its session
/// lapses.
pub fn live_member(bootstrap: &str, port: u16, topic: &str, group: &str) {
    let mut consumer = std::process::Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh"),
    )
    .args([
        "run",
        "ConsumerProtocolCheck",
        "consume",
        bootstrap,
        topic,
        group,
        "-",
        "pod-live",
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let started = Instant::now();
    let stable = format!("{group} error 0 Stable");
    while !consumer_groups(port, &[group])
        .iter()
        .any(|line| line.starts_with(&stable))
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the live group never got stable"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    consumer.kill().unwrap();
    consumer.wait().unwrap();
}
