//! Random, mutated and truncated request frames thrown at the decoder and at a running server:
//! nothing panics, a bad request closes only its own connection, and the server keeps serving.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use common::api_versions_request;
use ferrolog_broker::session::Session;
use ferrolog_broker::{BrokerConfig, Context, dispatch, frame_shape};
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterConfigsRequest, ApiKey, ApiVersionsResponse, FindCoordinatorRequest, GroupId,
    HeartbeatRequest, JoinGroupRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest,
    ProduceRequest, RequestHeader, ResponseHeader, SyncGroupRequest, TopicName,
};
use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn context(dir: &std::path::Path) -> Arc<Context> {
    let manager = LogManager::open(
        ManagerConfig {
            log_dirs: vec![dir.to_path_buf()],
            ..ManagerConfig::default()
        },
        Arc::new(SystemClock),
    )
    .unwrap();
    Arc::new(
        Context::new(
            Arc::new(manager),
            BrokerConfig {
                socket_request_max_bytes: 1 << 20,
                // The ACL APIs answer only with an authorizer; with no ACL found everything is
                // allowed, so the other handlers run as well.
                authorizer: Some(ferrolog_broker::authz::AuthorizerConfig {
                    allow_everyone_if_no_acl_found: true,
                    ..Default::default()
                }),
                ..BrokerConfig::default()
            },
        )
        .unwrap(),
    )
}

fn frame<R: Encodable>(api: ApiKey, version: i16, correlation_id: i32, request: &R) -> Vec<u8> {
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("fuzz")))
        .encode(&mut body, api.request_header_version(version))
        .unwrap();
    request.encode(&mut body, version).unwrap();
    body.to_vec()
}

/// Valid requests to mutate: ApiVersions, Metadata, and a Produce carrying a real batch.
fn seeds() -> Vec<Vec<u8>> {
    let batch = ferrolog_testkit::numbered_batch(0, 3, 1_700_000_000_000);
    let produce = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(1000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("fuzz")))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(Bytes::from(batch))),
                ]),
        ]);
    // A topic config whose value would break a line-oriented file if it were stored.
    let alter_configs = AlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("fuzz"))
            .with_configs(vec![
                AlterableConfig::default()
                    .with_name(StrBytes::from_static_str("retention.ms"))
                    .with_value(Some(StrBytes::from_static_str("1\nfuzz x y"))),
            ]),
    ]);
    let group = GroupId(StrBytes::from_static_str("fuzz-group"));
    let join = JoinGroupRequest::default()
        .with_group_id(group.clone())
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(Bytes::from_static(&[0, 1, 0, 0, 0, 1, 0, 1, b'f'])),
        ]);
    let commit = OffsetCommitRequest::default()
        .with_group_id(group.clone())
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("fuzz")))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default().with_committed_offset(5),
                ]),
        ]);
    vec![
        frame(ApiKey::ApiVersions, 3, 1, &api_versions_request()),
        frame(ApiKey::Metadata, 9, 2, &MetadataRequest::default()),
        frame(ApiKey::Produce, 8, 3, &produce),
        frame(ApiKey::AlterConfigs, 2, 4, &alter_configs),
        frame(
            ApiKey::FindCoordinator,
            3,
            5,
            &FindCoordinatorRequest::default(),
        ),
        frame(ApiKey::JoinGroup, 5, 6, &join),
        frame(
            ApiKey::SyncGroup,
            3,
            7,
            &SyncGroupRequest::default().with_group_id(group.clone()),
        ),
        frame(
            ApiKey::Heartbeat,
            3,
            8,
            &HeartbeatRequest::default().with_group_id(group.clone()),
        ),
        frame(ApiKey::OffsetCommit, 8, 9, &commit),
        frame(
            ApiKey::OffsetFetch,
            5,
            10,
            &OffsetFetchRequest::default().with_group_id(group),
        ),
        frame(
            ApiKey::CreateAcls,
            3,
            11,
            &CreateAclsRequest::default().with_creations(vec![
                AclCreation::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str("fuzz-topic"))
                    .with_resource_pattern_type(4)
                    .with_principal(StrBytes::from_static_str("User:fuzz"))
                    .with_host(StrBytes::from_static_str("*"))
                    .with_operation(3)
                    .with_permission_type(3),
            ]),
        ),
        frame(
            ApiKey::DescribeAcls,
            3,
            12,
            &DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_resource_name_filter(None)
                .with_pattern_type_filter(2)
                .with_operation(1)
                .with_permission_type(1),
        ),
        frame(
            ApiKey::DeleteAcls,
            3,
            13,
            &DeleteAclsRequest::default().with_filters(vec![
                DeleteAclsFilter::default()
                    .with_resource_type_filter(2)
                    .with_pattern_type_filter(1)
                    .with_operation(3)
                    .with_permission_type(3),
            ]),
        ),
    ]
}

const PEER: std::net::SocketAddr =
    std::net::SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    match rng.next() % 4 {
        0 => bytes.truncate((rng.next() % (bytes.len() as u64 + 1)) as usize),
        1 => {
            for _ in 0..1 + rng.next() % 8 {
                let at = (rng.next() % bytes.len() as u64) as usize;
                bytes[at] = rng.next() as u8;
            }
        }
        2 => bytes = (0..rng.next() % 200).map(|_| rng.next() as u8).collect(),
        _ => {
            let at = (rng.next() % bytes.len() as u64) as usize;
            bytes.splice(at..at, (0..rng.next() % 16).map(|_| 0xff));
        }
    }
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decoder_survives_mutated_requests() {
    let temp = tempfile::tempdir().unwrap();
    let context = context(temp.path());
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let seeds = seeds();
    let session = Arc::new(Session::anonymous(
        PEER,
        Arc::new(ferrolog_broker::listener::Listener::plaintext(
            "127.0.0.1",
            9092,
        )),
    ));
    for round in 0..3000 {
        let bytes = mutate(&mut rng, &seeds[round % seeds.len()]);
        // Whatever the outcome, it is a value, not a panic (nor an abort on a huge
        // allocation: what the check lets through is bounded by the frame's bytes).
        // A JoinGroup may rightly wait for a rebalance; only a panic would be a failure.
        let Ok(checked) = frame_shape::scan(Bytes::from(bytes)) else {
            continue;
        };
        let request = async {
            match dispatch::dispatch(&context, checked, &session).await {
                Ok(reply) => reply.into_response().await.map(|_| ()),
                Err(malformed) => Err(malformed),
            }
        };
        let _ = tokio::time::timeout(Duration::from_millis(100), request).await;
    }
    context.manager.shutdown().unwrap();
}

async fn api_versions_works(port: u16) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let request = frame(ApiKey::ApiVersions, 3, 77, &api_versions_request());
    stream
        .write_all(&(request.len() as i32).to_be_bytes())
        .await
        .unwrap();
    stream.write_all(&request).await.unwrap();
    let size = stream.read_i32().await.unwrap();
    let mut response = vec![0u8; size as usize];
    stream.read_exact(&mut response).await.unwrap();
    let mut response = Bytes::from(response);
    let header = ResponseHeader::decode(&mut response, 0).unwrap();
    assert_eq!(header.correlation_id, 77);
    let body = ApiVersionsResponse::decode(&mut response, 3).unwrap();
    assert_eq!(body.error_code, 0);
    assert!(
        body.api_keys
            .iter()
            .any(|key| key.api_key == ApiKey::Produce as i16)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_fed_garbage_closes_those_connections_and_keeps_serving() {
    let temp = tempfile::tempdir().unwrap();
    let context = context(temp.path());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(ferrolog_broker::serve(listener, Arc::clone(&context)));
    let mut rng = Rng(0xfeed_beef_0000_0001);
    let seeds = seeds();
    for round in 0..300 {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let body = mutate(&mut rng, &seeds[round % seeds.len()]);
        let size: i32 = match round % 5 {
            0 => -7,
            1 => i32::MAX,
            2 => body.len() as i32 + 5, // announces more than it sends
            _ => body.len() as i32,
        };
        let _ = stream.write_all(&size.to_be_bytes()).await;
        let _ = stream.write_all(&body).await;
        let _ = stream.shutdown().await;
        let mut sink = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut sink)).await;
    }
    api_versions_works(port).await;
    server.abort();
    context.manager.shutdown().unwrap();
}
