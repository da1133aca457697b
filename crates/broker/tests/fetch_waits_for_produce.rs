//! A fetch at the log end waits (long-poll) and is answered by the next produce, with its
//! records, well before `max_wait_ms`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{SystemClock, TopicPartition};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_fetch_is_answered_by_the_next_produce() {
    let temp = tempfile::tempdir().unwrap();
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![temp.path().to_path_buf()],
                ..ManagerConfig::default()
            },
            Arc::new(SystemClock),
        )
        .unwrap(),
    );
    let context = Arc::new(Context::new(Arc::clone(&manager), BrokerConfig::default()).unwrap());
    let log = manager
        .get_or_create(&TopicPartition::new("wait", 0))
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(ferrolog_broker::serve(listener, Arc::clone(&context)));

    // A fetch at offset 0 of an empty log, willing to wait a minute for one byte.
    let request = FetchRequest::default()
        .with_max_wait_ms(60_000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("wait")))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let mut frame = BytesMut::new();
    let version = 11;
    RequestHeader::default()
        .with_request_api_key(ApiKey::Fetch as i16)
        .with_request_api_version(version)
        .with_correlation_id(5)
        .encode(&mut frame, ApiKey::Fetch.request_header_version(version))
        .unwrap();
    request.encode(&mut frame, version).unwrap();
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream
        .write_all(&(frame.len() as i32).to_be_bytes())
        .await
        .unwrap();
    stream.write_all(&frame).await.unwrap();

    // The produce arrives a little later, through the produce path's notification.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let producer = Arc::clone(&context);
    tokio::task::spawn_blocking(move || {
        let batch = ferrolog_testkit::numbered_batch(0, 3, 1_700_000_000_000);
        log.append_as_leader(batch).unwrap();
        log.maybe_increment_high_watermark(log.log_end_offset());
        producer.fetch_waiters.wake(&TopicPartition::new("wait", 0));
    })
    .await
    .unwrap();

    let size = tokio::time::timeout(Duration::from_secs(30), stream.read_i32())
        .await
        .expect("answered before max_wait")
        .unwrap();
    let mut response = vec![0u8; size as usize];
    stream.read_exact(&mut response).await.unwrap();
    let mut response = Bytes::from(response);
    let header = ResponseHeader::decode(
        &mut response,
        ApiKey::Fetch.response_header_version(version),
    )
    .unwrap();
    assert_eq!(header.correlation_id, 5);
    let body = FetchResponse::decode(&mut response, version).unwrap();
    let partition = &body.responses[0].partitions[0];
    assert_eq!(partition.high_watermark, 3);
    assert!(
        partition
            .records
            .as_ref()
            .is_some_and(|records| !records.is_empty()),
        "the records came with the answer"
    );
    assert_eq!(
        context.fetch_waiters.partitions(),
        0,
        "an answered fetch leaves the waiters"
    );
    server.abort();
    manager.shutdown().unwrap();
}
