//! Produce requests sent one after another on a connection without waiting for answers, to a
//! partition with `flush.messages=1`: the broker appends each in turn while earlier ones wait for
//! their fsync, answers them in the order sent (another request among them too), and
//! acknowledges only what is on disk: a failed fsync is the error of every produce it was to
//! acknowledge.
//!
//! The fault test needs the `failpoints` feature (the points are process-wide, so with it each
//! test here holds a `FailScenario`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use bytes::Bytes;
use common::{Broker, Client};
use ferrolog_broker::BrokerConfig;
use ferrolog_records::BatchBuilder;
use ferrolog_storage::manager::ManagerConfig;
use ferrolog_storage::{Offset, TopicPartition};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, ProduceRequest, ProduceResponse, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::AsyncWriteExt;

const TOPIC: &str = "synced";
const PRODUCE_VERSION: i16 = 9;

fn one_record(value: &str) -> Bytes {
    let mut builder = BatchBuilder::new(0);
    builder
        .append(1_700_000_000_000, None, Some(value.as_bytes()), &[])
        .unwrap();
    Bytes::from(builder.build().unwrap())
}

fn produce_request(value: &str) -> ProduceRequest {
    produce_request_of(one_record(value))
}

fn produce_request_of(records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(records)),
                ]),
        ])
}

/// Sends every frame in one write, as a client that does not wait for answers does.
async fn send_all(client: &mut Client, frames: &[Vec<u8>]) {
    let mut bytes = Vec::new();
    for frame in frames {
        bytes.extend_from_slice(&(frame.len() as i32).to_be_bytes());
        bytes.extend_from_slice(frame);
    }
    client.stream.write_all(&bytes).await.unwrap();
}

/// The next response's correlation id and body.
async fn next_response(client: &mut Client, header_version: i16) -> (i32, Bytes) {
    let mut frame = client.read_frame().await.expect("a response");
    let header = ResponseHeader::decode(&mut frame, header_version).unwrap();
    (header.correlation_id, frame)
}

/// (error code, base offset) of a one-partition produce response.
fn produce_answer(mut body: Bytes) -> (i16, i64) {
    let response = ProduceResponse::decode(&mut body, PRODUCE_VERSION).unwrap();
    let answer = &response.responses[0].partition_responses[0];
    (answer.error_code, answer.base_offset)
}

/// The synced topic's one partition.
fn synced_log(broker: &Broker) -> std::sync::Arc<ferrolog_storage::log::Log> {
    broker
        .context
        .manager
        .get(&TopicPartition::new(TOPIC, 0))
        .unwrap()
}

async fn broker_with_synced_topic(dir: &std::path::Path) -> (Broker, Client) {
    broker_with_synced_topic_and(dir, BrokerConfig::default()).await
}

async fn broker_with_synced_topic_and(
    dir: &std::path::Path,
    config: BrokerConfig,
) -> (Broker, Client) {
    let broker = Broker::start_with(
        ManagerConfig {
            log_dirs: vec![dir.to_path_buf()],
            ..ManagerConfig::default()
        },
        config,
    )
    .await;
    let mut client = broker.client().await;
    let created = client
        .create_topic(TOPIC, 1, &[("flush.messages", "1")])
        .await;
    assert_eq!(created.error_code, 0);
    (broker, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produces_waiting_for_their_fsync_are_read_on_and_answered_in_order() {
    #[cfg(feature = "failpoints")]
    let scenario = fail::FailScenario::setup();
    let temp = tempfile::tempdir().unwrap();
    let (broker, mut client) = broker_with_synced_topic(temp.path()).await;

    // 12 produces, an ApiVersions among them, then 8 more: correlation ids 1 to 21.
    let mut frames = Vec::new();
    for index in 0..20 {
        if index == 12 {
            frames.push(common::frame(
                ApiKey::ApiVersions,
                3,
                100,
                &common::api_versions_request(),
            ));
        }
        frames.push(common::frame(
            ApiKey::Produce,
            PRODUCE_VERSION,
            index,
            &produce_request(&format!("record-{index}")),
        ));
    }
    send_all(&mut client, &frames).await;

    let produce_header = ApiKey::Produce.response_header_version(PRODUCE_VERSION);
    for index in 0..20 {
        if index == 12 {
            let (correlation_id, mut body) = next_response(&mut client, 0).await;
            assert_eq!(correlation_id, 100, "answered in the order asked");
            let versions = ApiVersionsResponse::decode(&mut body, 3).unwrap();
            assert_eq!(versions.error_code, 0);
        }
        let (correlation_id, body) = next_response(&mut client, produce_header).await;
        assert_eq!(correlation_id, index, "answered in the order asked");
        assert_eq!(
            produce_answer(body),
            (0, i64::from(index)),
            "appended in the order sent"
        );
    }
    let log = synced_log(&broker);
    assert_eq!(
        log.recovery_point(),
        Offset::new(20),
        "every acknowledged record was flushed"
    );
    #[cfg(feature = "failpoints")]
    scenario.teardown();
}

#[cfg(feature = "failpoints")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_produces_are_appended_while_an_fsync_runs_and_one_fsync_answers_them() {
    let scenario = fail::FailScenario::setup();
    let temp = tempfile::tempdir().unwrap();
    let (broker, mut client) = broker_with_synced_topic(temp.path()).await;
    let log = synced_log(&broker);

    // The first produce's fsync blocks until the point is removed.
    fail::cfg("log.fsync", "pause").unwrap();
    let frames: Vec<_> = (0..4)
        .map(|index| {
            common::frame(
                ApiKey::Produce,
                PRODUCE_VERSION,
                index,
                &produce_request(&format!("record-{index}")),
            )
        })
        .collect();
    send_all(&mut client, &frames).await;
    let waited = std::time::Instant::now();
    while log.log_end_offset() < Offset::new(4)
        && waited.elapsed() < std::time::Duration::from_secs(20)
    {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let (log_end, recovery_point) = (log.log_end_offset(), log.recovery_point());
    // Released before asserting: a paused fsync would hold the runtime's shutdown.
    fail::remove("log.fsync");
    assert_eq!(
        log_end,
        Offset::new(4),
        "the produces after the first were appended while its fsync ran"
    );
    assert_eq!(recovery_point, Offset::new(0), "nothing acknowledged yet");

    let produce_header = ApiKey::Produce.response_header_version(PRODUCE_VERSION);
    for index in 0..4 {
        let (correlation_id, body) = next_response(&mut client, produce_header).await;
        assert_eq!(correlation_id, index);
        assert_eq!(produce_answer(body), (0, i64::from(index)));
    }
    assert_eq!(log.recovery_point(), Offset::new(4));
    scenario.teardown();
}

#[cfg(feature = "failpoints")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fsync_is_the_error_of_every_produce_it_was_to_acknowledge() {
    const KAFKA_STORAGE_ERROR: i16 = 56;
    let scenario = fail::FailScenario::setup();
    let temp = tempfile::tempdir().unwrap();
    let (broker, mut client) = broker_with_synced_topic(temp.path()).await;
    let acknowledged = client.produce(TOPIC, 0, one_record("before")).await;
    assert_eq!((acknowledged.error_code, acknowledged.base_offset), (0, 0));

    fail::cfg("log.fsync", "return(EIO)").unwrap();
    let frames: Vec<_> = (1..=6)
        .map(|index| {
            common::frame(
                ApiKey::Produce,
                PRODUCE_VERSION,
                100 + index,
                &produce_request(&format!("record-{index}")),
            )
        })
        .collect();
    send_all(&mut client, &frames).await;
    let produce_header = ApiKey::Produce.response_header_version(PRODUCE_VERSION);
    for index in 1..=6 {
        let (correlation_id, body) = next_response(&mut client, produce_header).await;
        assert_eq!(correlation_id, 100 + index);
        let (error_code, _) = produce_answer(body);
        assert_eq!(
            error_code, KAFKA_STORAGE_ERROR,
            "produce {index} acknowledged without its fsync"
        );
    }
    fail::remove("log.fsync");
    assert!(broker.context.manager.data_dirs()[0].is_offline());
    scenario.teardown();
}

#[cfg(feature = "failpoints")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_held_back_are_written_when_memory_runs_short_and_when_the_client_closes_its_side()
{
    let scenario = fail::FailScenario::setup();
    let temp = tempfile::tempdir().unwrap();
    // Room for three of the produces below at a time.
    let config = BrokerConfig {
        queued_max_request_bytes: Some(64 * 1024),
        ..BrokerConfig::default()
    };
    let (broker, mut client) = broker_with_synced_topic_and(temp.path(), config).await;
    let log = synced_log(&broker);

    fail::cfg("log.fsync", "pause").unwrap();
    let frames: Vec<_> = (0..8)
        .map(|index| {
            let value = format!("{index}-{}", "v".repeat(16 * 1024));
            common::frame(
                ApiKey::Produce,
                PRODUCE_VERSION,
                index,
                &produce_request_of(one_record(&value)),
            )
        })
        .collect();
    send_all(&mut client, &frames).await;
    // The client sends nothing more and waits for its answers.
    client.stream.shutdown().await.unwrap();
    // The fourth request waits for memory its own connection holds in answers held back.
    let waited = std::time::Instant::now();
    while log.log_end_offset() < Offset::new(3)
        && waited.elapsed() < std::time::Duration::from_secs(20)
    {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let log_end = log.log_end_offset();
    fail::remove("log.fsync");
    assert!(log_end >= Offset::new(3), "log end {log_end}");

    let produce_header = ApiKey::Produce.response_header_version(PRODUCE_VERSION);
    for index in 0..8 {
        let (correlation_id, body) = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            next_response(&mut client, produce_header),
        )
        .await
        .unwrap_or_else(|_| panic!("no answer to produce {index}: the connection is stuck"));
        assert_eq!(correlation_id, index);
        assert_eq!(produce_answer(body), (0, i64::from(index)));
    }
    assert!(
        client.read_frame().await.is_none(),
        "the broker closes the connection after the last answer"
    );
    assert_eq!(log.recovery_point(), Offset::new(8));
    scenario.teardown();
}

#[cfg(feature = "failpoints")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_that_panics_closes_only_its_connection_and_the_next_flush_covers_its_append() {
    let scenario = fail::FailScenario::setup();
    let temp = tempfile::tempdir().unwrap();
    let (broker, mut client) = broker_with_synced_topic(temp.path()).await;

    fail::cfg("log.fsync", "1*panic(injected)").unwrap();
    let frame = common::frame(
        ApiKey::Produce,
        PRODUCE_VERSION,
        7,
        &produce_request("lost"),
    );
    send_all(&mut client, &[frame]).await;
    assert!(
        client.read_frame().await.is_none(),
        "a produce whose flush panicked was answered"
    );
    fail::remove("log.fsync");

    let mut next = broker.client().await;
    let acknowledged = next.produce(TOPIC, 0, one_record("after")).await;
    assert_eq!((acknowledged.error_code, acknowledged.base_offset), (0, 1));
    let log = synced_log(&broker);
    assert_eq!(log.log_end_offset(), Offset::new(2));
    assert!(
        log.recovery_point() >= Offset::new(2),
        "the next flush left the unanswered append off the disk"
    );
    scenario.teardown();
}
