//! The client quotas beyond byte rates: partitions created and deleted past a client's
//! controller mutation quota are refused or throttled (KIP-599), a client's requests past its
//! request quota are throttled one window at most, and connections past their address's
//! creation rate are closed unserved (KIP-612).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::quotas::{SPECIFIED, alter, describe, entry, fast_windows, text};
use common::{Broker, Client};
use kafka_protocol::messages::ApiKey;

fn creatable(
    name: &str,
    partitions: i32,
) -> kafka_protocol::messages::create_topics_request::CreatableTopic {
    kafka_protocol::messages::create_topics_request::CreatableTopic::default()
        .with_name(kafka_protocol::messages::TopicName(text(name)))
        .with_num_partitions(partitions)
        .with_replication_factor(1)
}

#[tokio::test]
async fn partitions_created_and_deleted_past_the_mutation_quota_are_refused_or_throttled() {
    use kafka_protocol::messages::{
        CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
        TopicName,
    };
    let temp = tempfile::tempdir().unwrap();
    let broker = fast_windows(temp.path()).await;
    let mut admin = broker.client().await;
    // 10 partitions a second for every client id: a burst of 2 over the two 100 ms samples.
    let set = alter(
        &mut admin,
        vec![entry(
            &[("client-id", None)],
            &[("controller_mutation_rate", Some(10.0))],
        )],
        false,
    )
    .await;
    assert_eq!(set[0].1, 0);

    // Strict (v7): the first topic takes the bucket to -10 (a second owed), unthrottled; the
    // next finds the quota spent and is refused, and the request throttled.
    let mut strict = broker.client().await;
    strict.client_id = "strict";
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5_000)
        .with_topics(vec![creatable("first", 12), creatable("second", 1)]);
    let created: CreateTopicsResponse = strict.send(ApiKey::CreateTopics, 7, &request).await;
    // Throttled once the second topic finds the quota spent: the 10 owed, less what the
    // bucket refilled (10 a second) while the first was being created, which a loaded
    // machine makes longer.
    assert!(
        (1..=1_000).contains(&created.throttle_time_ms),
        "{}",
        created.throttle_time_ms
    );
    assert_eq!(created.topics[0].error_code, 0);
    assert_eq!(
        created.topics[1].error_code, 89,
        "THROTTLING_QUOTA_EXCEEDED"
    );
    assert_eq!(created.topics[1].error_message, None);

    // Permissive (v5): admitted, and throttled.
    let mut permissive = broker.client().await;
    permissive.client_id = "permissive";
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5_000)
        .with_topics(vec![creatable("third", 12), creatable("fourth", 2)]);
    let created: CreateTopicsResponse = permissive.send(ApiKey::CreateTopics, 5, &request).await;
    assert!(created.topics.iter().all(|topic| topic.error_code == 0));
    // 14 partitions against a burst of 2: 1.2 s owed, less what the bucket refilled (10 a
    // second) while the first topic was being created.
    assert!(
        (1_000..=1_200).contains(&created.throttle_time_ms),
        "{}",
        created.throttle_time_ms
    );

    // Deleting counts the topic's partitions (v5, strict).
    let mut deleter = broker.client().await;
    deleter.client_id = "deleter";
    let request = DeleteTopicsRequest::default()
        .with_timeout_ms(5_000)
        .with_topic_names(vec![TopicName(text("first")), TopicName(text("third"))]);
    let deleted: DeleteTopicsResponse = deleter.send(ApiKey::DeleteTopics, 5, &request).await;
    assert_eq!(deleted.responses[0].error_code, 0);
    assert_eq!(deleted.responses[1].error_code, 89);
    assert!(
        (1..=1_000).contains(&deleted.throttle_time_ms),
        "{}",
        deleted.throttle_time_ms
    );

    // A client id under no quota is never counted.
    let removed = alter(
        &mut admin,
        vec![entry(
            &[("client-id", None)],
            &[("controller_mutation_rate", None)],
        )],
        false,
    )
    .await;
    assert_eq!(removed[0].1, 0);
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5_000)
        .with_topics(vec![creatable("fifth", 50)]);
    let created: CreateTopicsResponse = admin.send(ApiKey::CreateTopics, 7, &request).await;
    assert_eq!(
        (created.throttle_time_ms, created.topics[0].error_code),
        (0, 0)
    );
}

#[tokio::test]
async fn a_client_over_its_request_quota_is_throttled_one_window_at_most() {
    use kafka_protocol::messages::{MetadataRequest, MetadataResponse};
    let temp = tempfile::tempdir().unwrap();
    let broker = fast_windows(temp.path()).await;
    let mut admin = broker.client().await;
    // A millionth of a thread's time: any request is over it.
    let set = alter(
        &mut admin,
        vec![entry(
            &[("client-id", Some("busy"))],
            &[("request_percentage", Some(0.0001))],
        )],
        false,
    )
    .await;
    assert_eq!(set[0].1, 0);
    let mut busy = broker.client().await;
    busy.client_id = "busy";
    let request = MetadataRequest::default().with_topics(None);
    let answered: MetadataResponse = busy.send(ApiKey::Metadata, 12, &request).await;
    // Kafka caps the request quota's throttle at one window (100 ms here).
    assert_eq!(answered.throttle_time_ms, 100);
    let answered: MetadataResponse = admin.send(ApiKey::Metadata, 12, &request).await;
    assert_eq!(answered.throttle_time_ms, 0);
}

#[tokio::test]
async fn connections_over_their_addresss_creation_rate_are_closed_unserved() {
    let temp = tempfile::tempdir().unwrap();
    // Kafka's windows: a new address's first connections are spread over ten seconds.
    let broker = Broker::start(temp.path()).await;
    let mut admin = broker.client().await;
    // One connection a second from 127.0.0.1: ten at once, then the eleventh is over.
    let set = alter(
        &mut admin,
        vec![entry(
            &[("ip", Some("127.0.0.1"))],
            &[("connection_creation_rate", Some(1.0))],
        )],
        false,
    )
    .await;
    assert_eq!(set[0].1, 0);
    let mut answered = 0;
    let mut closed = 0;
    for _ in 0..12 {
        let mut client = Client::connect(broker.port).await;
        let request = common::frame(ApiKey::ApiVersions, 3, 1, &common::api_versions_request());
        client.send_raw(&request).await;
        match client.read_frame().await {
            Some(_) => answered += 1,
            None => closed += 1,
        }
    }
    assert_eq!((answered, closed), (10, 2));
    // The connection made before is served as ever.
    let listed = describe(&mut admin, &[("ip", SPECIFIED, None)], false).await;
    assert_eq!(
        listed,
        vec!["ip=127.0.0.1 connection_creation_rate=1".to_owned()]
    );
}
