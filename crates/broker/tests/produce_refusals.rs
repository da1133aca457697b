//! Produce requests Kafka refuses, refused as Kafka refuses them: a partition whose records
//! hold more than one batch (INVALID_RECORD for that partition; the others are appended), and
//! `acks` other than -1, 0 and 1 (INVALID_REQUIRED_ACKS, nothing appended).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use bytes::Bytes;
use common::{Broker, Client};
use ferrolog_broker::errors;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

fn batch(first: usize) -> Vec<u8> {
    ferrolog_testkit::numbered_batch(first, 2, 1_700_000_000_000)
}

/// Produce v9 with `acks` to `topic`, one entry per `(partition, records)`; each partition's
/// (error, base offset).
async fn produce(
    client: &mut Client,
    acks: i16,
    topic: &str,
    partitions: Vec<(i32, Vec<u8>)>,
) -> Vec<(i16, i64)> {
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partition_data(
                    partitions
                        .into_iter()
                        .map(|(index, records)| {
                            PartitionProduceData::default()
                                .with_index(index)
                                .with_records(Some(Bytes::from(records)))
                        })
                        .collect(),
                ),
        ]);
    let response: ProduceResponse = client.send(ApiKey::Produce, 9, &request).await;
    response.responses[0]
        .partition_responses
        .iter()
        .map(|p| (p.error_code, p.base_offset))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_batches_in_one_partition_are_an_invalid_record_and_the_others_go_on() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 2, &[]).await.error_code, 0);
    let mut two = batch(0);
    two.extend(batch(2));
    let answers = produce(&mut client, 1, "t", vec![(0, two), (1, batch(0))]).await;
    assert_eq!(answers, [(errors::INVALID_RECORD, -1), (0, 0)]);
    let log = broker
        .context
        .manager
        .get(&ferrolog_storage::TopicPartition::new("t", 0))
        .unwrap();
    assert_eq!(
        log.log_end_offset().value(),
        0,
        "nothing of it was appended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_other_than_minus_one_zero_and_one_append_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1, &[]).await.error_code, 0);
    for acks in [7, 2, -2] {
        let answers = produce(&mut client, acks, "t", vec![(0, batch(0))]).await;
        assert_eq!(
            answers,
            [(errors::INVALID_REQUIRED_ACKS, -1)],
            "acks={acks}"
        );
    }
    // A partition refused before acks are looked at keeps its own error.
    let unknown = produce(&mut client, 7, "missing", vec![(0, batch(0))]).await;
    assert_eq!(unknown[0].0, errors::UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(
        produce(&mut client, -1, "t", vec![(0, batch(0))]).await,
        [(0, 0)]
    );
}

/// A batch of one record from idempotent producer `producer_id` at `sequence`.
fn idempotent(producer_id: i64, sequence: i32, value: &str) -> Vec<u8> {
    let mut builder = ferrolog_records::BatchBuilder::new(0).producer(producer_id, 0, sequence);
    builder
        .append(1_700_000_000_000, None, Some(value.as_bytes()), &[])
        .unwrap();
    builder.build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_ids_by_the_thousand_stay_bounded_and_an_active_producer_keeps_its_state() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1, &[]).await.error_code, 0);
    let active = 7_000_000;
    let mut active_sequence = 0;
    let mut last_active = (Vec::new(), 0);
    for fake in 0..3_000i64 {
        // A steady producer appends among a flood of producer ids each used once.
        if fake % 50 == 0 {
            let batch = idempotent(active, active_sequence, "steady");
            let answer = produce(&mut client, 1, "t", vec![(0, batch.clone())]).await;
            assert_eq!(answer[0].0, 0);
            last_active = (batch, answer[0].1);
            active_sequence += 1;
        }
        let answer = produce(&mut client, 1, "t", vec![(0, idempotent(fake, 0, "x"))]).await;
        assert_eq!(answer[0].0, 0, "producer {fake}");
    }
    let log = broker
        .context
        .manager
        .get(&ferrolog_storage::TopicPartition::new("t", 0))
        .unwrap();
    let held = log.producer_state().len();
    assert!(
        held <= 1000,
        "{held} producers kept: more than ferrolog.max.producers.per.partition"
    );
    // The steady producer's retry of its last batch is still known for what it is.
    let retried = produce(&mut client, 1, "t", vec![(0, last_active.0)]).await;
    assert_eq!(
        retried[0],
        (0, last_active.1),
        "a duplicate, answered with its offset"
    );
}
