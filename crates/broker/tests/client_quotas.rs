//! Client quotas over the wire: AlterClientQuotas checks each entry as Kafka's controller does
//! and applies the rest together, DescribeClientQuotas lists them through Kafka's filters, they
//! survive a restart; and a producer or consumer over its quota is answered with a throttle
//! time, its connection reading nothing more until it is up, while a client under no quota
//! goes on as before.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Broker, Client};
use ferrolog_broker::BrokerConfig;
use ferrolog_broker::quotas::Sampling;
use ferrolog_storage::manager::ManagerConfig;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;

fn text(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// An entry: the entity's (type, name) parts and (key, value) ops, a `None` value removing.
fn entry(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> EntryData {
    EntryData::default()
        .with_entity(
            entity
                .iter()
                .map(|(kind, name)| {
                    EntityData::default()
                        .with_entity_type(text(kind))
                        .with_entity_name(name.map(text))
                })
                .collect(),
        )
        .with_ops(
            ops.iter()
                .map(|(key, value)| {
                    OpData::default()
                        .with_key(text(key))
                        .with_value(value.unwrap_or(0.0))
                        .with_remove(value.is_none())
                })
                .collect(),
        )
}

/// Each entry's outcome: its entity as `type=name` parts, and its error code and message.
async fn alter(
    client: &mut Client,
    entries: Vec<EntryData>,
    validate_only: bool,
) -> Vec<(String, i16, Option<String>)> {
    let request = AlterClientQuotasRequest::default()
        .with_entries(entries)
        .with_validate_only(validate_only);
    let response: AlterClientQuotasResponse =
        client.send(ApiKey::AlterClientQuotas, 1, &request).await;
    response
        .entries
        .into_iter()
        .map(|entry| {
            let entity: Vec<String> = entry
                .entity
                .iter()
                .map(|part| {
                    let name = part.entity_name.as_deref().unwrap_or("<default>");
                    format!("{}={name}", part.entity_type.as_str())
                })
                .collect();
            let message = entry.error_message.map(|message| message.to_string());
            (entity.join(","), entry.error_code, message)
        })
        .collect()
}

/// The entities a filter lists, each as `type=name` parts then `key=value`s, sorted.
async fn describe(
    client: &mut Client,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> Vec<String> {
    let request = DescribeClientQuotasRequest::default()
        .with_components(
            components
                .iter()
                .map(|(kind, match_type, name)| {
                    ComponentData::default()
                        .with_entity_type(text(kind))
                        .with_match_type(*match_type)
                        .with_match(name.map(text))
                })
                .collect(),
        )
        .with_strict(strict);
    let response: DescribeClientQuotasResponse =
        client.send(ApiKey::DescribeClientQuotas, 1, &request).await;
    assert_eq!(response.error_code, 0, "{:?}", response.error_message);
    let mut listed: Vec<String> = response
        .entries
        .unwrap()
        .iter()
        .map(|entry| {
            let mut parts: Vec<String> = entry
                .entity
                .iter()
                .map(|part| {
                    let name = part.entity_name.as_deref().unwrap_or("<default>");
                    format!("{}={name}", part.entity_type.as_str())
                })
                .collect();
            parts.sort();
            parts.extend(
                entry
                    .values
                    .iter()
                    .map(|value| format!("{}={}", value.key.as_str(), value.value)),
            );
            parts.join(" ")
        })
        .collect();
    listed.sort();
    listed
}

const EXACT: i8 = 0;
const DEFAULT: i8 = 1;
const SPECIFIED: i8 = 2;

#[tokio::test]
async fn quotas_are_checked_set_listed_and_kept() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    let outcomes = alter(
        &mut client,
        vec![
            entry(
                &[("user", Some("alice"))],
                &[("producer_byte_rate", Some(1024.0))],
            ),
            entry(
                &[("user", Some("alice")), ("client-id", None)],
                &[
                    ("consumer_byte_rate", Some(2048.0)),
                    ("request_percentage", Some(12.5)),
                ],
            ),
            entry(
                &[("client-id", None)],
                &[("controller_mutation_rate", Some(5.0))],
            ),
            entry(
                &[("ip", Some("10.0.0.7"))],
                &[("connection_creation_rate", Some(20.0))],
            ),
            entry(&[("user", Some(""))], &[("producer_byte_rate", Some(1.0))]),
            entry(
                &[("user", Some("bob"))],
                &[("producer_byte_rate", Some(10.5))],
            ),
            entry(
                &[("user", Some("carol"))],
                &[("consumer_byte_rate", Some(-1.0))],
            ),
            entry(
                &[("user", Some("dave"))],
                &[("connection_creation_rate", Some(1.0))],
            ),
            entry(&[("ip", Some("10.0.0.8")), ("user", Some("x"))], &[]),
        ],
        false,
    )
    .await;
    let expected: Vec<(String, i16, Option<String>)> = [
        ("user=alice", 0, None),
        ("client-id=<default>,user=alice", 0, None),
        ("client-id=<default>", 0, None),
        ("ip=10.0.0.7", 0, None),
        ("user=", 42, Some("Empty user not supported")),
        ("user=bob", 42, Some("producer_byte_rate cannot be a fractional value.")),
        ("user=carol", 42, Some("Quota consumer_byte_rate must be greater than 0")),
        ("user=dave", 42, Some("Invalid configuration key connection_creation_rate")),
        (
            "user=x,ip=10.0.0.8",
            42,
            Some("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
        ),
    ]
    .iter()
    .map(|(entity, code, message)| ((*entity).to_owned(), *code, message.map(str::to_owned)))
    .collect();
    assert_eq!(outcomes, expected);

    // A repeated entity is refused, as Kafka refuses it; validate-only changes nothing.
    let repeated = alter(
        &mut client,
        vec![
            entry(
                &[("user", Some("erin"))],
                &[("producer_byte_rate", Some(1.0))],
            ),
            entry(
                &[("user", Some("erin"))],
                &[("producer_byte_rate", Some(2.0))],
            ),
        ],
        true,
    )
    .await;
    assert_eq!(repeated.len(), 1);
    assert_eq!(
        repeated[0].2.as_deref(),
        Some("Ignoring duplicate entity ClientQuotaEntity(entries={user=erin})")
    );
    let checked = alter(
        &mut client,
        vec![entry(
            &[("user", Some("frank"))],
            &[("producer_byte_rate", Some(1.0))],
        )],
        true,
    )
    .await;
    assert_eq!(checked[0].1, 0);

    let alice_only = vec!["user=alice producer_byte_rate=1024".to_owned()];
    assert_eq!(
        describe(&mut client, &[("user", EXACT, Some("alice"))], true).await,
        alice_only
    );
    assert_eq!(
        describe(&mut client, &[("user", EXACT, Some("alice"))], false).await,
        vec![
            "client-id=<default> user=alice consumer_byte_rate=2048 request_percentage=12.5"
                .to_owned(),
            "user=alice producer_byte_rate=1024".to_owned(),
        ]
    );
    assert_eq!(
        describe(&mut client, &[("client-id", DEFAULT, None)], true).await,
        vec!["client-id=<default> controller_mutation_rate=5".to_owned()]
    );
    assert_eq!(
        describe(&mut client, &[("ip", SPECIFIED, None)], false).await,
        vec!["ip=10.0.0.7 connection_creation_rate=20".to_owned()]
    );
    assert_eq!(describe(&mut client, &[], false).await.len(), 4);

    // Removing the last quota forgets the entity; removing an absent key is no error.
    let removed = alter(
        &mut client,
        vec![entry(
            &[("user", Some("alice"))],
            &[("producer_byte_rate", None), ("consumer_byte_rate", None)],
        )],
        false,
    )
    .await;
    assert_eq!(removed[0].1, 0);
    assert!(
        describe(&mut client, &[("user", EXACT, Some("alice"))], true)
            .await
            .is_empty()
    );
    drop(client);

    // Kept across a restart.
    drop(broker);
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(describe(&mut client, &[], false).await.len(), 3);
}

/// A broker whose quota rates are measured over two 100 ms windows, so a test sees
/// throttles of a few hundred milliseconds.
async fn fast_windows(dir: &std::path::Path) -> Broker {
    let config = BrokerConfig {
        quota_sampling: Sampling {
            samples: 2,
            window_ms: 100,
        },
        controller_quota_sampling: Sampling {
            samples: 2,
            window_ms: 100,
        },
        ..BrokerConfig::default()
    };
    let manager = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    Broker::start_with(manager, config).await
}

fn batch(bytes: usize) -> Bytes {
    let mut builder = ferrolog_records::BatchBuilder::new(0);
    builder
        .append(0, None, Some(&vec![b'x'; bytes]), &[])
        .unwrap();
    Bytes::from(builder.build().unwrap())
}

#[tokio::test]
async fn a_producer_over_its_quota_is_throttled_and_muted() {
    let temp = tempfile::tempdir().unwrap();
    let broker = fast_windows(temp.path()).await;
    let mut admin = broker.client().await;
    assert_eq!(admin.create_topic("quoted", 1, &[]).await.error_code, 0);
    let set = alter(
        &mut admin,
        vec![entry(
            &[("client-id", Some("slow"))],
            &[("producer_byte_rate", Some(100_000.0))],
        )],
        false,
    )
    .await;
    assert_eq!(set[0].1, 0);

    let mut slow = broker.client().await;
    slow.client_id = "slow";
    // 50 KB at once: 500 KB/s over the 100 ms window, four times over the bound, so the
    // throttle is about 400 ms.
    let request = produce_request(batch(50_000));
    let response: kafka_protocol::messages::ProduceResponse =
        slow.send(ApiKey::Produce, 9, &request).await;
    let throttle = response.throttle_time_ms;
    assert!((300..=500).contains(&throttle), "{throttle}");
    assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    // The next request is read only once the throttle is up.
    let sent = Instant::now();
    let _: kafka_protocol::messages::ProduceResponse = slow
        .send(ApiKey::Produce, 9, &produce_request(batch(10)))
        .await;
    let waited = sent.elapsed();
    assert!(
        waited >= Duration::from_millis(u64::try_from(throttle).unwrap() * 8 / 10),
        "answered after {waited:?}, throttled {throttle} ms"
    );

    // Another client id is under no quota: never throttled.
    let mut other = broker.client().await;
    other.client_id = "other";
    let response: kafka_protocol::messages::ProduceResponse = other
        .send(ApiKey::Produce, 9, &produce_request(batch(50_000)))
        .await;
    assert_eq!(response.throttle_time_ms, 0);
}

#[tokio::test]
async fn a_consumer_over_its_quota_gets_an_empty_throttled_fetch() {
    let temp = tempfile::tempdir().unwrap();
    let broker = fast_windows(temp.path()).await;
    let mut admin = broker.client().await;
    assert_eq!(admin.create_topic("quoted", 1, &[]).await.error_code, 0);
    for _ in 0..10 {
        assert_eq!(
            admin.produce("quoted", 0, batch(10_000)).await.error_code,
            0
        );
    }
    let set = alter(
        &mut admin,
        vec![entry(
            &[("client-id", Some("reader"))],
            &[("consumer_byte_rate", Some(200_000.0))],
        )],
        false,
    )
    .await;
    assert_eq!(set[0].1, 0);

    let mut reader = broker.client().await;
    reader.client_id = "reader";
    // At most 200 KB/s × one 100 ms window at once: two of the 10 KB batches.
    let first = fetch(&mut reader, 0).await;
    assert_eq!(first.throttle_time_ms, 0);
    let records = first.responses[0].partitions[0].records.clone().unwrap();
    assert!(records.len() <= 20_000 + 200, "{}", records.len());
    assert!(!records.is_empty());
    // Reading on at once takes the rate over the bound: answered empty, with the throttle.
    let mut throttled = None;
    for _ in 0..5 {
        let next = fetch(&mut reader, 0).await;
        if next.throttle_time_ms > 0 {
            throttled = Some(next);
            break;
        }
    }
    let throttled = throttled.expect("a throttled fetch");
    assert!(throttled.responses.is_empty());
}

fn produce_request(records: Bytes) -> kafka_protocol::messages::ProduceRequest {
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    kafka_protocol::messages::ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(text("quoted")))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(records)),
                ]),
        ])
}

async fn fetch(client: &mut Client, offset: i64) -> kafka_protocol::messages::FetchResponse {
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    let request = kafka_protocol::messages::FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(text("quoted")))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    client.send(ApiKey::Fetch, 11, &request).await
}

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
    // bucket refilled (10 a second) while the first was being created.
    assert!(
        (900..=1_000).contains(&created.throttle_time_ms),
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
        (900..=1_000).contains(&deleted.throttle_time_ms),
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
