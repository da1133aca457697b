//! Fetch responses splice record bytes from the segment files into the encoded frame. With
//! either transfer (copy or sendfile) and in both the classic and the flexible encodings, a
//! client must decode exactly the bytes in the `.log`, for every partition of a response, and
//! the next response on the connection must start where this one ended, also after a response
//! whose limit left a partition nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use ferrolog_broker::transfer::FetchTransfer;
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{SystemClock, TopicPartition};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOPIC: &str = "spliced";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copied_fetches_carry_the_segment_bytes() {
    fetches_carry_the_segment_bytes(FetchTransfer::Copy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sendfile_fetches_carry_the_segment_bytes() {
    fetches_carry_the_segment_bytes(FetchTransfer::Sendfile).await;
}

async fn fetches_carry_the_segment_bytes(transfer: FetchTransfer) {
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
    // Partition 0 holds 40 batches (about 200 KiB), partition 1 three small ones.
    let mut expected = Vec::new();
    for (partition, batches) in [(0, 40), (1, 3)] {
        let log = manager
            .get_or_create(&TopicPartition::new(TOPIC, partition))
            .unwrap();
        for index in 0..batches {
            let mut batch = ferrolog_testkit::numbered_batch(index * 10, 10, 1_700_000_000_000);
            if partition == 0 {
                batch = ferrolog_testkit::sized_batch(5_000, 1_700_000_000_000);
            }
            log.append_as_leader(batch).unwrap();
        }
        log.maybe_increment_high_watermark(log.log_end_offset());
        let whole = log
            .read(FetchParams {
                start_offset: Offset::ZERO,
                max_bytes: u64::MAX,
                bound: FetchBound::HighWatermark,
                first_batch: FirstBatch::Whole,
            })
            .unwrap()
            .read_bytes()
            .unwrap();
        expected.push(whole);
    }
    let config = BrokerConfig {
        fetch_transfer: transfer,
        ..BrokerConfig::default()
    };
    let context = Arc::new(Context::new(Arc::clone(&manager), config).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(ferrolog_broker::serve(listener, Arc::clone(&context)));
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();

    // Several requests on one connection: classic (v11) and flexible (v12) encodings, each with
    // an unknown partition between the two real ones.
    for (correlation_id, version) in [(1, 11), (2, 12), (3, 11), (4, 12)] {
        let response = fetch(&mut stream, correlation_id, version, 4 << 20).await;
        let partitions = &response.responses[0].partitions;
        assert_eq!(partitions.len(), 3);
        assert_eq!(partitions[0].records.as_deref(), Some(&expected[0][..]));
        assert_eq!(partitions[1].error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(partitions[2].records.as_deref(), Some(&expected[1][..]));
    }
    // A response limit the first batch alone exceeds: that batch is sent whole, as Kafka does,
    // and the later partition's share is nothing: an empty record set, on a connection that
    // goes on serving.
    let first_batch =
        usize::try_from(i32::from_be_bytes(expected[0][8..12].try_into().unwrap())).unwrap() + 12;
    for (correlation_id, version) in [(5, 11), (6, 12)] {
        let response = fetch(&mut stream, correlation_id, version, 1).await;
        let partitions = &response.responses[0].partitions;
        assert_eq!(
            partitions[0].records.as_deref(),
            Some(&expected[0][..first_batch])
        );
        assert_eq!(partitions[2].error_code, 0);
        assert_eq!(partitions[2].records.as_deref(), Some(&[][..]));
    }
    server.abort();
    manager.shutdown().unwrap();
}

async fn fetch(
    stream: &mut tokio::net::TcpStream,
    correlation_id: i32,
    version: i16,
    max_bytes: i32,
) -> FetchResponse {
    let partition = |index: i32| {
        FetchPartition::default()
            .with_partition(index)
            .with_fetch_offset(0)
            .with_partition_max_bytes(1 << 20)
    };
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partitions(vec![partition(0), partition(7), partition(1)]),
        ]);
    let mut frame = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(ApiKey::Fetch as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .encode(&mut frame, ApiKey::Fetch.request_header_version(version))
        .unwrap();
    request.encode(&mut frame, version).unwrap();
    stream
        .write_all(&(frame.len() as i32).to_be_bytes())
        .await
        .unwrap();
    stream.write_all(&frame).await.unwrap();

    let size = stream.read_i32().await.unwrap();
    let mut body = vec![0; usize::try_from(size).unwrap()];
    stream.read_exact(&mut body).await.unwrap();
    let mut body = Bytes::from(body);
    let header =
        ResponseHeader::decode(&mut body, ApiKey::Fetch.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, correlation_id);
    let response = FetchResponse::decode(&mut body, version).unwrap();
    assert!(body.is_empty(), "the frame holds exactly one response");
    response
}

/// A segment cut shorter after a fetch chose its bytes (a truncation) cannot be sent: the size
/// prefix has promised them, so the write fails, naming the segment, and the connection is
/// closed rather than left out of step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_past_the_segment_end_fails_the_write_in_both_transfers() {
    use ferrolog_broker::response::{Chunk, FileRegion, ResponseFrame};
    use ferrolog_broker::transfer::FrameWriter;

    let temp = tempfile::tempdir().unwrap();
    let manager = LogManager::open(
        ManagerConfig {
            log_dirs: vec![temp.path().to_path_buf()],
            ..ManagerConfig::default()
        },
        Arc::new(SystemClock),
    )
    .unwrap();
    let log = manager
        .get_or_create(&TopicPartition::new("short", 0))
        .unwrap();
    log.append_as_leader(ferrolog_testkit::numbered_batch(0, 5, 1_700_000_000_000))
        .unwrap();
    let slice = log
        .read(FetchParams {
            start_offset: Offset::ZERO,
            max_bytes: 1 << 20,
            bound: FetchBound::LogEnd,
            first_batch: FirstBatch::Whole,
        })
        .unwrap()
        .slice
        .unwrap();
    let size = usize::try_from(log.view().segments[0].size()).unwrap();
    assert_eq!(
        slice.len(),
        size as u64,
        "the slice covers the whole segment"
    );
    for transfer in [FetchTransfer::Copy, FetchTransfer::Sendfile] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let reader = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut received = Vec::new();
            let _ = stream.read_to_end(&mut received).await;
            received.len()
        });
        let mut stream = ferrolog_broker::network::transport::Transport::Plain(
            tokio::net::TcpStream::connect(address).await.unwrap(),
        );
        let frame = ResponseFrame {
            chunks: vec![Chunk::File(FileRegion {
                slice: slice.clone(),
                length: size + 100,
            })],
        };
        let error = FrameWriter::new(transfer, None, Arc::default())
            .write(&mut stream, frame)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("shrank"),
            "{transfer:?}: {error}"
        );
        drop(stream);
        assert!(
            reader.await.unwrap() <= size,
            "no bytes beyond the segment were invented"
        );
    }
    manager.shutdown().unwrap();
}
