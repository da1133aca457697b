//! DescribeTopicPartitions, which Kafka 4's admin client (and so `kafka-topics --describe`)
//! uses: pages of partitions across topics sorted by name, continued from a cursor, as Kafka
//! pages them; unknown topics named; each topic with the id Metadata gives.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Broker;
use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
use kafka_protocol::messages::{
    ApiKey, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, MetadataRequest,
    MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn name(text: &str) -> TopicName {
    TopicName(StrBytes::from_string(text.to_owned()))
}

/// A page: each topic with its partitions, and where the next page starts.
type Page = (Vec<(String, Vec<i32>)>, Option<(String, i32)>);

fn page(response: &DescribeTopicPartitionsResponse) -> Page {
    let topics = response
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic.partitions.iter().map(|p| p.partition_index).collect();
            (topic.name.as_ref().unwrap().0.to_string(), partitions)
        })
        .collect();
    let next = response
        .next_cursor
        .as_ref()
        .map(|cursor| (cursor.topic_name.0.to_string(), cursor.partition_index));
    (topics, next)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_come_in_pages_across_topics_from_a_cursor() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    for (topic, partitions) in [("b", 4), ("a", 2), ("c", 1)] {
        assert_eq!(
            client.create_topic(topic, partitions, &[]).await.error_code,
            0
        );
    }
    let ask = |limit: i32, cursor: Option<(&str, i32)>| {
        DescribeTopicPartitionsRequest::default()
            .with_response_partition_limit(limit)
            .with_cursor(cursor.map(|(topic, partition)| {
                Cursor::default()
                    .with_topic_name(name(topic))
                    .with_partition_index(partition)
            }))
    };
    let first: DescribeTopicPartitionsResponse = client
        .send(ApiKey::DescribeTopicPartitions, 0, &ask(3, None))
        .await;
    let s = |text: &str| text.to_owned();
    assert_eq!(
        page(&first),
        (
            vec![(s("a"), vec![0, 1]), (s("b"), vec![0])],
            Some((s("b"), 1))
        )
    );
    let second: DescribeTopicPartitionsResponse = client
        .send(ApiKey::DescribeTopicPartitions, 0, &ask(3, Some(("b", 1))))
        .await;
    assert_eq!(
        page(&second),
        (vec![(s("b"), vec![1, 2, 3])], Some((s("c"), 0)))
    );
    let last: DescribeTopicPartitionsResponse = client
        .send(ApiKey::DescribeTopicPartitions, 0, &ask(3, Some(("c", 0))))
        .await;
    assert_eq!(page(&last), (vec![(s("c"), vec![0])], None));
    let partition = &last.topics[0].partitions[0];
    assert_eq!(partition.leader_id.0, 0);
    assert_eq!(partition.eligible_leader_replicas.as_deref(), Some(&[][..]));

    // Named topics: the unknown one is named with its error; ids are Metadata's.
    let named = DescribeTopicPartitionsRequest::default()
        .with_response_partition_limit(2000)
        .with_topics(
            ["c", "nope", "a"]
                .iter()
                .map(|topic| TopicRequest::default().with_name(name(topic)))
                .collect(),
        );
    let answer: DescribeTopicPartitionsResponse = client
        .send(ApiKey::DescribeTopicPartitions, 0, &named)
        .await;
    let codes: Vec<(String, i16)> = answer
        .topics
        .iter()
        .map(|topic| (topic.name.as_ref().unwrap().0.to_string(), topic.error_code))
        .collect();
    assert_eq!(
        codes,
        [
            (s("a"), 0),
            (s("c"), 0),
            (s("nope"), UNKNOWN_TOPIC_OR_PARTITION)
        ]
    );
    let metadata: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
        .await;
    for topic in &answer.topics[..2] {
        let listed = metadata
            .topics
            .iter()
            .find(|listed| listed.name == topic.name)
            .unwrap();
        assert!(!topic.topic_id.is_nil());
        assert_eq!(topic.topic_id, listed.topic_id);
    }
}
