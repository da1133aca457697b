//! Client quotas over the wire: AlterClientQuotas checks each entry as Kafka's controller does
//! and applies the rest together, DescribeClientQuotas lists them through Kafka's filters, they
//! survive a restart; and a producer or consumer over its quota is answered with a throttle
//! time, its connection reading nothing more until it is up, while a client under no quota
//! goes on as before. (The other quotas: `client_quota_limits`.)

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::quotas::{DEFAULT, EXACT, SPECIFIED, alter, describe, entry, fast_windows, text};
use common::{Broker, Client};
use kafka_protocol::messages::ApiKey;

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
