//! The admin APIs a single node answers as a single-node KRaft Kafka does: ElectLeaders (no
//! election is ever needed; unknown topics and partitions named), DescribeQuorum (this node the
//! one voter; other topics not hosted), and ListConfigResources (Kafka's types and order).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Broker;
use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{
    ApiKey, DescribeQuorumRequest, DescribeQuorumResponse, ElectLeadersRequest,
    ElectLeadersResponse, ListConfigResourcesRequest, ListConfigResourcesResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

fn name(text: &str) -> TopicName {
    TopicName(StrBytes::from_string(text.to_owned()))
}

#[tokio::test]
async fn elections_are_never_needed_and_unknowns_are_named() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 2, &[]).await.error_code, 0);
    let asked = |topic: &str, partitions: Vec<i32>| {
        TopicPartitions::default()
            .with_topic(name(topic))
            .with_partitions(partitions)
    };
    let request = ElectLeadersRequest::default()
        .with_election_type(1)
        .with_topic_partitions(Some(vec![
            asked("t", vec![1, 0, 5]),
            asked("nope", vec![0]),
        ]));
    let answer: ElectLeadersResponse = client.send(ApiKey::ElectLeaders, 2, &request).await;
    let results: Vec<(String, i32, i16, String)> = answer
        .replica_election_results
        .iter()
        .flat_map(|topic| {
            topic.partition_result.iter().map(|partition| {
                (
                    topic.topic.0.to_string(),
                    partition.partition_id,
                    partition.error_code,
                    partition.error_message.as_deref().unwrap_or("").to_owned(),
                )
            })
        })
        .collect();
    let not_needed = "Leader election not needed for topic partition.".to_owned();
    assert_eq!(
        results,
        vec![
            ("t".to_owned(), 1, 84, not_needed.clone()),
            ("t".to_owned(), 0, 84, not_needed),
            ("t".to_owned(), 5, 3, "No such partition as t-5".to_owned()),
            ("nope".to_owned(), 0, 3, "No such topic as nope".to_owned()),
        ]
    );
    let bad = ElectLeadersRequest::default().with_election_type(7);
    let answer: ElectLeadersResponse = client.send(ApiKey::ElectLeaders, 2, &bad).await;
    assert_eq!(answer.error_code, 42);
    let all = ElectLeadersRequest::default().with_topic_partitions(None);
    let answer: ElectLeadersResponse = client.send(ApiKey::ElectLeaders, 2, &all).await;
    let topics: Vec<(String, usize)> = answer
        .replica_election_results
        .iter()
        .map(|topic| (topic.topic.0.to_string(), topic.partition_result.len()))
        .collect();
    assert_eq!(topics, vec![("t".to_owned(), 0)]);
}

#[tokio::test]
async fn the_quorum_is_this_node_alone() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    let ask = |topic: &str| {
        DescribeQuorumRequest::default().with_topics(vec![
            TopicData::default()
                .with_topic_name(name(topic))
                .with_partitions(vec![PartitionData::default().with_partition_index(0)]),
        ])
    };
    let answer: DescribeQuorumResponse = client
        .send(ApiKey::DescribeQuorum, 2, &ask("__cluster_metadata"))
        .await;
    let partition = &answer.topics[0].partitions[0];
    assert_eq!((partition.error_code, partition.leader_id.0), (0, 0));
    assert_eq!(partition.current_voters.len(), 1);
    assert!(partition.observers.is_empty());
    let answer: DescribeQuorumResponse = client.send(ApiKey::DescribeQuorum, 2, &ask("t")).await;
    let partition = &answer.topics[0].partitions[0];
    assert_eq!(partition.error_code, 3);
    assert_eq!(
        partition.error_message.as_deref(),
        Some("This server does not host this topic-partition.")
    );
}

#[tokio::test]
async fn config_resources_are_listed_by_type_in_kafkas_order() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("b", 1, &[]).await.error_code, 0);
    assert_eq!(client.create_topic("a", 1, &[]).await.error_code, 0);
    let list = |types: Vec<i8>| ListConfigResourcesRequest::default().with_resource_types(types);
    let answer: ListConfigResourcesResponse = client
        .send(ApiKey::ListConfigResources, 1, &list(Vec::new()))
        .await;
    let listed: Vec<(i8, String)> = answer
        .config_resources
        .iter()
        .map(|resource| (resource.resource_type, resource.resource_name.to_string()))
        .collect();
    assert_eq!(
        listed,
        vec![
            (8, "0".to_owned()),
            (4, "0".to_owned()),
            (2, "a".to_owned()),
            (2, "b".to_owned())
        ]
    );
    let answer: ListConfigResourcesResponse = client
        .send(ApiKey::ListConfigResources, 1, &list(vec![2, 4]))
        .await;
    assert_eq!(answer.config_resources.len(), 3);
    let answer: ListConfigResourcesResponse = client
        .send(ApiKey::ListConfigResources, 1, &list(vec![1]))
        .await;
    assert_eq!(answer.error_code, 35);
    assert!(answer.config_resources.is_empty());
    // Version 0 lists client-metrics subscriptions only: none.
    let answer: ListConfigResourcesResponse = client
        .send(ApiKey::ListConfigResources, 0, &list(Vec::new()))
        .await;
    assert_eq!((answer.error_code, answer.config_resources.len()), (0, 0));
}
