//! Requests in Kafka's protocol over a plain blocking socket, for tests that ask a broker
//! (ferrolog or Kafka itself) the same questions and compare the answers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// An API key, as the codec crate or the broker's own table names it.
pub trait Key: Copy {
    fn key(self) -> i16;
    fn request_header_version(self, version: i16) -> i16;
}

impl Key for ApiKey {
    fn key(self) -> i16 {
        self as i16
    }

    fn request_header_version(self, version: i16) -> i16 {
        ApiKey::request_header_version(&self, version)
    }
}

impl Key for ferrolog_broker::protocol::ApiKey {
    fn key(self) -> i16 {
        self as i16
    }

    fn request_header_version(self, version: i16) -> i16 {
        ferrolog_broker::protocol::ApiKey::request_header_version(self, version)
    }
}

/// `request` framed for the wire: its size, a request header (correlation id 1, client id
/// "ferrolog-test") and its body at `version`.
pub fn frame<R: Encodable>(api: impl Key, version: i16, request: &R) -> Vec<u8> {
    let mut body = BytesMut::new();
    request.encode(&mut body, version).unwrap();
    frame_body(api, version, &body)
}

/// A body already encoded, framed as [`frame`] frames a request.
pub fn frame_body(api: impl Key, version: i16, body: &[u8]) -> Vec<u8> {
    let mut header = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(api.key())
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("ferrolog-test")))
        .encode(&mut header, api.request_header_version(version))
        .unwrap();
    let mut framed = ((header.len() + body.len()) as i32).to_be_bytes().to_vec();
    framed.extend_from_slice(&header);
    framed.extend_from_slice(body);
    framed
}

/// Sends a framed request and returns the response frame (header and body), or `None` when
/// the broker closed the connection instead.
pub fn exchange(stream: &mut TcpStream, framed: &[u8]) -> Option<Bytes> {
    stream.write_all(framed).ok()?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let mut response = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut response).ok()?;
    Some(Bytes::from(response))
}

/// Sends `request` and decodes the response, or `None` when the broker closed the connection.
pub fn send<Req: Encodable, Resp: Decodable>(
    stream: &mut TcpStream,
    api: ApiKey,
    version: i16,
    request: &Req,
) -> Option<Resp> {
    let mut response = exchange(stream, &frame(api, version, request))?;
    ResponseHeader::decode(&mut response, api.response_header_version(version)).unwrap();
    Some(Resp::decode(&mut response, version).unwrap())
}

/// A connection to the broker on 127.0.0.1:`port` from the loopback address `source` (so that
/// a broker can tell it from others by address), waiting up to 10 s for each read.
pub fn connect_from(source: &str, port: u16) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    let source: std::net::IpAddr = source.parse().unwrap();
    socket.bind(&std::net::SocketAddr::new(source, 0).into())?;
    socket.connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)).into(),
        Duration::from_secs(2),
    )?;
    let stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    Ok(stream)
}

/// A connection to the broker on 127.0.0.1:`port` that waits up to 30 s for an answer.
pub fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

/// A protocol string from text.
pub fn name(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// ListOffsets latest (timestamp −1) of `topic`'s partitions `0..partitions` at
/// `isolation_level` (0: the high watermarks, 1: the last stable offsets); `None` when the
/// broker closed the connection or a partition answered an error (not there yet, say).
pub fn latest_offsets(
    stream: &mut TcpStream,
    topic: &str,
    partitions: i32,
    isolation_level: i8,
) -> Option<Vec<i64>> {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, ListOffsetsResponse, TopicName};
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(isolation_level)
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partitions(
                    (0..partitions)
                        .map(|partition| {
                            ListOffsetsPartition::default()
                                .with_partition_index(partition)
                                .with_timestamp(-1)
                        })
                        .collect(),
                ),
        ]);
    let answer: ListOffsetsResponse = send(stream, ApiKey::ListOffsets, 7, &request)?;
    let answered = &answer.topics.first()?.partitions;
    if answered.len() != partitions as usize || answered.iter().any(|p| p.error_code != 0) {
        return None;
    }
    Some(answered.iter().map(|p| p.offset).collect())
}

/// DescribeLogDirs of every partition: how many future logs there are, and each current log's
/// `topic-partition` with its directory, sorted.
pub fn log_dirs(stream: &mut TcpStream) -> (usize, Vec<(String, String)>) {
    use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
    let response: DescribeLogDirsResponse = send(
        stream,
        ApiKey::DescribeLogDirs,
        4,
        &DescribeLogDirsRequest::default().with_topics(None),
    )
    .unwrap();
    let mut futures = 0;
    let mut homes = Vec::new();
    for dir in &response.results {
        assert_eq!(dir.error_code, 0, "{}", dir.log_dir);
        for topic in &dir.topics {
            for partition in &topic.partitions {
                if partition.is_future_key {
                    futures += 1;
                } else {
                    homes.push((
                        format!("{}-{}", topic.name.0, partition.partition_index),
                        dir.log_dir.to_string(),
                    ));
                }
            }
        }
    }
    homes.sort();
    (futures, homes)
}

/// CreateTopics (v5) of `topic` with `partitions` and `configs` on the broker at `port`; the
/// topic's error code.
pub fn create_topic(port: u16, topic: &str, partitions: i32, configs: &[(&str, &str)]) -> i16 {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse, TopicName};
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(name(topic)))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(
                    configs
                        .iter()
                        .map(|(key, value)| {
                            CreatableTopicConfig::default()
                                .with_name(name(key))
                                .with_value(Some(name(value)))
                        })
                        .collect(),
                ),
        ]);
    let created: CreateTopicsResponse =
        send(&mut connect(port), ApiKey::CreateTopics, 5, &request).unwrap();
    created.topics[0].error_code
}

/// `topic`'s id on the broker on `port`, asked from the administrator's address; nil when the
/// broker does not name one.
pub fn topic_id(port: u16, topic: &str) -> uuid::Uuid {
    let mut stream = connect(port);
    let request = kafka_protocol::messages::MetadataRequest::default().with_topics(Some(vec![
        kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
            .with_name(Some(kafka_protocol::messages::TopicName(name(topic)))),
    ]));
    let answer: Option<kafka_protocol::messages::MetadataResponse> = send(
        &mut stream,
        kafka_protocol::messages::ApiKey::Metadata,
        12,
        &request,
    );
    answer
        .and_then(|metadata| metadata.topics.first().map(|t| t.topic_id))
        .unwrap_or_default()
}
