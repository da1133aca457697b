//! What the broker's in-process tests share: a broker serving on a free loopback port over a
//! LogManager in a temp dir, and a client that sends any request and decodes its response.

#![allow(dead_code, reason = "each test file uses part of this")]

pub mod quotas;
pub mod sasl;

use std::path::Path;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, ProduceRequest, ProduceResponse,
    RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A broker serving on `port` until dropped.
pub struct Broker {
    pub context: Arc<Context>,
    pub port: u16,
    pub server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Broker {
    /// A broker over one data directory `dir` with the default broker settings.
    pub async fn start(dir: &Path) -> Self {
        Self::start_with(
            ManagerConfig {
                log_dirs: vec![dir.to_path_buf()],
                ..ManagerConfig::default()
            },
            BrokerConfig::default(),
        )
        .await
    }

    pub async fn start_with(manager: ManagerConfig, config: BrokerConfig) -> Self {
        let manager = Arc::new(LogManager::open(manager, Arc::new(SystemClock)).unwrap());
        let context = Arc::new(Context::new(manager, config).unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(ferrolog_broker::serve(listener, Arc::clone(&context)));
        Self {
            context,
            port,
            server,
        }
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.port).await
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.server.abort();
        let _ = self.context.manager.shutdown();
    }
}

/// One connection speaking the Kafka protocol.
pub struct Client {
    pub stream: TcpStream,
    correlation_id: i32,
    /// The client id its requests name (`test` unless set).
    pub client_id: &'static str,
}

impl Client {
    pub async fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Self::from_stream(stream)
    }

    /// A client over a connection already made.
    pub fn from_stream(stream: TcpStream) -> Self {
        Self {
            stream,
            correlation_id: 0,
            client_id: "test",
        }
    }

    /// Sends `frame` (header and body) with its size prefix.
    pub async fn send_raw(&mut self, frame: &[u8]) {
        let mut framed = (frame.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(frame);
        self.stream.write_all(&framed).await.unwrap();
    }

    /// Sends `request` as `api` at `version` and decodes the response.
    pub async fn send<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: impl Key,
        version: i16,
        request: &Req,
    ) -> Resp {
        self.correlation_id += 1;
        let mut frame = header_of(api, version, self.correlation_id, self.client_id);
        request.encode(&mut frame, version).unwrap();
        let frame = frame.to_vec();
        // One write: a size prefix sent alone waits out Nagle's algorithm against the broker's
        // delayed acknowledgement, some 40 ms a request.
        let mut framed = (frame.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(&frame);
        self.stream.write_all(&framed).await.unwrap();
        let mut response = self.read_frame().await.expect("a response");
        let header =
            ResponseHeader::decode(&mut response, response_header_version(api, version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation_id);
        Resp::decode(&mut response, version).unwrap()
    }

    /// CreateTopics (v5) of `topic` with `partitions` and `configs`; the topic's result.
    pub async fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
        configs: &[(&str, &str)],
    ) -> CreatableTopicResult {
        let text = |text: &str| StrBytes::from_string(text.to_owned());
        let configs = configs
            .iter()
            .map(|(key, value)| {
                CreatableTopicConfig::default()
                    .with_name(text(key))
                    .with_value(Some(text(value)))
            })
            .collect();
        let request = CreateTopicsRequest::default().with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(text(topic)))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(configs),
        ]);
        let mut response: CreateTopicsResponse = self.send(ApiKey::CreateTopics, 5, &request).await;
        response.topics.remove(0)
    }

    /// Produce (v9, acks=1) of `records` to `topic`-`partition`; the partition's answer.
    pub async fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        records: Bytes,
    ) -> PartitionProduceResponse {
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(partition)
                            .with_records(Some(records)),
                    ]),
            ]);
        let mut response: ProduceResponse = self.send(ApiKey::Produce, 9, &request).await;
        response.responses.remove(0).partition_responses.remove(0)
    }

    /// Fetch (v11, no wait) of `topic`-`partition` from `offset`; the partition's answer.
    pub async fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> kafka_protocol::messages::fetch_response::PartitionData {
        use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
        let request = kafka_protocol::messages::FetchRequest::default()
            .with_max_wait_ms(0)
            .with_max_bytes(1 << 20)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(partition)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]);
        let mut response: kafka_protocol::messages::FetchResponse =
            self.send(ApiKey::Fetch, 11, &request).await;
        response.responses.remove(0).partitions.remove(0)
    }

    /// The next response frame, or `None` when the broker closed the connection.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let size = self.stream.read_i32().await.ok()?;
        let mut body = vec![0u8; usize::try_from(size).ok()?];
        self.stream.read_exact(&mut body).await.ok()?;
        Some(Bytes::from(body))
    }
}

fn response_header_version(api: impl Key, version: i16) -> i16 {
    if api.key() == ApiKey::ApiVersions as i16 {
        0
    } else {
        api.response_header_version(version)
    }
}

/// An API key, as the codec crate or the broker's own table names it.
pub trait Key: Copy {
    fn key(self) -> i16;
    fn request_header_version(self, version: i16) -> i16;
    fn response_header_version(self, version: i16) -> i16;
}

impl Key for ApiKey {
    fn key(self) -> i16 {
        self as i16
    }

    fn request_header_version(self, version: i16) -> i16 {
        ApiKey::request_header_version(&self, version)
    }

    fn response_header_version(self, version: i16) -> i16 {
        ApiKey::response_header_version(&self, version)
    }
}

impl Key for ferrolog_broker::protocol::ApiKey {
    fn key(self) -> i16 {
        self as i16
    }

    fn request_header_version(self, version: i16) -> i16 {
        ferrolog_broker::protocol::ApiKey::request_header_version(self, version)
    }

    fn response_header_version(self, version: i16) -> i16 {
        ferrolog_broker::protocol::ApiKey::response_header_version(self, version)
    }
}

/// ApiVersions as clients send it from version 3, naming their software (Kafka refuses a
/// request without those names).
pub fn api_versions_request() -> kafka_protocol::messages::ApiVersionsRequest {
    kafka_protocol::messages::ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("ferrolog-tests"))
        .with_client_software_version(StrBytes::from_static_str("1.0"))
}

/// A request frame (header and body, without the size prefix).
pub fn frame<R: Encodable>(
    api: impl Key,
    version: i16,
    correlation_id: i32,
    request: &R,
) -> Vec<u8> {
    let mut body = BytesMut::new();
    request.encode(&mut body, version).unwrap();
    let mut frame = header(api, version, correlation_id);
    frame.extend_from_slice(&body);
    frame
}

/// A request frame around a body already encoded, with correlation id 1.
pub fn raw_frame(api: impl Key, version: i16, body: &[u8]) -> Vec<u8> {
    let mut frame = header(api, version, 1);
    frame.extend_from_slice(body);
    frame
}

fn header(api: impl Key, version: i16, correlation_id: i32) -> Vec<u8> {
    header_of(api, version, correlation_id, "test").to_vec()
}

fn header_of(
    api: impl Key,
    version: i16,
    correlation_id: i32,
    client_id: &'static str,
) -> BytesMut {
    let mut header = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(api.key())
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str(client_id)))
        .encode(&mut header, api.request_header_version(version))
        .unwrap();
    header
}

/// A LogManager over `dir` on `clock`, holding topic `topic` with `partitions` partitions when
/// one is named: what the coordinator tests on a manual clock start from.
pub fn manager_with_topic(
    dir: &Path,
    clock: Arc<ferrolog_storage::ManualClock>,
    topic: Option<(&str, i32)>,
) -> Arc<LogManager> {
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.to_path_buf()],
                ..ManagerConfig::default()
            },
            clock,
        )
        .unwrap(),
    );
    if let Some((name, partitions)) = topic {
        let all: Vec<ferrolog_storage::TopicPartition> = (0..partitions)
            .map(|p| ferrolog_storage::TopicPartition::new(name, p))
            .collect();
        manager.create_all(&all).unwrap();
    }
    manager
}

/// A classic consumer's subscription to `topics`, as its JoinGroup metadata carries it
/// (version 1, owning nothing).
pub fn consumer_subscription(topics: &[&str]) -> Vec<u8> {
    let mut bytes = BytesMut::new();
    bytes.extend_from_slice(&1i16.to_be_bytes());
    kafka_protocol::messages::ConsumerProtocolSubscription::default()
        .with_topics(
            topics
                .iter()
                .map(|t| StrBytes::from_string((*t).to_owned()))
                .collect(),
        )
        .encode(&mut bytes, 1)
        .unwrap();
    bytes.to_vec()
}
