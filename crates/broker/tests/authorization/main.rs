//! Authorization with Kafka's StandardAuthorizer semantics, over the wire: the ACL APIs (what
//! `kafka-acls` sends), ACLs surviving a restart, and every API the broker serves refused
//! without the ACL Kafka checks for it and served with it: exactly the operations the API
//! table declares, each necessary, all of them enough.
//!
//! Every connection here is `User:ANONYMOUS` (a PLAINTEXT listener); the ACLs tell clients
//! apart by host: the administrator connects from 127.0.0.1, the client under test from
//! 127.0.0.2.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeSet;

use common::{Broker, Client};
use ferrolog_broker::BrokerConfig;
use ferrolog_broker::authz::{
    AccessEntry, AclBinding, AclOperation, AuthorizerConfig, PatternType, Permission,
    ResourcePattern, ResourceType, allow_covers,
};
use ferrolog_broker::dispatch::{self, SUPPORTED};
use ferrolog_broker::probes;
use ferrolog_broker::protocol::ApiKey;
use ferrolog_storage::manager::ManagerConfig;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::net::TcpSocket;

mod every_api;
mod exact_needs;
mod limits;

use exact_needs::grant_client;
use limits::start_limited;

const TOPIC: &str = "orders";
const GROUP: &str = "billing";
const ADMIN_HOST: &str = "127.0.0.1";
const CLIENT_HOST: &str = "127.0.0.2";
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const INVALID_REQUEST: i16 = 42;
const POLICY_VIOLATION: i16 = 44;
const UNKNOWN_SERVER_ERROR: i16 = -1;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const SECURITY_DISABLED: i16 = 54;
const AUTHORIZATION_CODES: [i16; 4] = [
    TOPIC_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED,
    CLUSTER_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
];

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

fn topic_name(value: &str) -> TopicName {
    TopicName(text(value))
}

fn acl(resource_type: ResourceType, name: &str, host: &str, operation: AclOperation) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type,
            name: name.to_owned(),
            pattern_type: PatternType::Literal,
        },
        entry: AccessEntry {
            principal: "User:ANONYMOUS".to_owned(),
            host: host.to_owned(),
            operation,
            permission: Permission::Allow,
        },
    }
}

async fn start(dir: &std::path::Path) -> Broker {
    start_limited(dir, BrokerConfig::default().max_acls).await
}

/// A connection from `host` (a loopback address), so ACLs can tell it apart.
async fn connect_from(broker: &Broker, host: &str) -> Client {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{host}:0").parse().unwrap()).unwrap();
    let stream = socket
        .connect(format!("127.0.0.1:{}", broker.port).parse().unwrap())
        .await
        .unwrap();
    stream.set_nodelay(true).unwrap();
    Client::from_stream(stream)
}

/// Lets the administrator (127.0.0.1) do everything; set in the store directly, as an
/// operator's first ACLs would be by a super user.
fn grant_admin(broker: &Broker) {
    let admin = [
        acl(
            ResourceType::Cluster,
            "kafka-cluster",
            ADMIN_HOST,
            AclOperation::All,
        ),
        acl(ResourceType::Topic, "*", ADMIN_HOST, AclOperation::All),
        acl(ResourceType::Group, "*", ADMIN_HOST, AclOperation::All),
    ];
    broker
        .context
        .access
        .acls()
        .unwrap()
        .create(&admin)
        .unwrap();
}

/// A broker with the authorizer, the administrator allowed everything, `topics` created, and a
/// connection from the administrator's host and one from the client's.
struct Scene {
    /// Declared first, dropped last: the broker's files outlive it.
    _dir: tempfile::TempDir,
    broker: Broker,
    admin: Client,
    client: Client,
}

impl Scene {
    async fn new(topics: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let broker = start(dir.path()).await;
        grant_admin(&broker);
        let mut admin = connect_from(&broker, ADMIN_HOST).await;
        for topic in topics {
            assert_eq!(admin.create_topic(topic, 1, &[]).await.error_code, 0);
        }
        let client = connect_from(&broker, CLIENT_HOST).await;
        Self {
            _dir: dir,
            broker,
            admin,
            client,
        }
    }
}

async fn describe_all(client: &mut Client) -> DescribeAclsResponse {
    client
        .send(ApiKey::DescribeAcls, 3, &probes::match_any_acl())
        .await
}

#[tokio::test]
async fn acls_are_created_described_deleted_and_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    grant_admin(&broker);
    let mut admin = connect_from(&broker, ADMIN_HOST).await;

    let request = CreateAclsRequest::default().with_creations(vec![
        // TOPIC orders-* PREFIXED, READ allowed from the client host.
        probes::creation(2, "orders-", 4, CLIENT_HOST, 3, 3),
        // GROUP billing LITERAL, ALL denied from anywhere.
        probes::creation(3, GROUP, 3, "*", 2, 2),
        // Refused one by one as Kafka refuses them: a cluster not named kafka-cluster, an
        // empty name, a principal without a colon.
        probes::creation(4, "other", 3, "*", 7, 3),
        probes::creation(2, "", 3, "*", 3, 3),
        probes::creation(2, "t", 3, "*", 3, 3).with_principal(text("alice")),
    ]);
    let created: CreateAclsResponse = admin.send(ApiKey::CreateAcls, 3, &request).await;
    let codes: Vec<i16> = created.results.iter().map(|r| r.error_code).collect();
    assert_eq!(
        codes,
        [0, 0, INVALID_REQUEST, INVALID_REQUEST, INVALID_REQUEST]
    );
    // ANY where an ACL needs a value: Kafka cannot build it and fails the whole request.
    let with_any: CreateAclsResponse = admin
        .send(
            ApiKey::CreateAcls,
            3,
            &CreateAclsRequest::default().with_creations(vec![
                probes::creation(2, "fine", 3, "*", 3, 3),
                probes::creation(2, "t", 3, "*", 1, 3),
            ]),
        )
        .await;
    for result in &with_any.results {
        assert_eq!(result.error_code, UNKNOWN_SERVER_ERROR, "{with_any:?}");
        assert_eq!(
            result.error_message.as_deref(),
            Some("operation must not be ANY")
        );
    }
    assert_eq!(created.results[0].error_message, None);
    assert!(
        created.results[2]
            .error_message
            .as_deref()
            .unwrap()
            .contains("kafka-cluster")
    );

    // A filter by resource type and name finds the one ACL it names.
    let described: DescribeAclsResponse = admin
        .send(
            ApiKey::DescribeAcls,
            3,
            &probes::match_any_acl()
                .with_resource_type_filter(3)
                .with_resource_name_filter(Some(text(GROUP))),
        )
        .await;
    assert_eq!((described.error_code, described.error_message), (0, None));
    assert_eq!(described.resources.len(), 1);
    let resource = &described.resources[0];
    assert_eq!(
        (
            resource.resource_type,
            resource.resource_name.as_str(),
            resource.pattern_type
        ),
        (3, GROUP, 3)
    );
    assert_eq!(
        (resource.acls[0].operation, resource.acls[0].permission_type),
        (2, 2)
    );
    // MATCH finds the prefixed ACL for a topic under the prefix.
    let matched: DescribeAclsResponse = admin
        .send(
            ApiKey::DescribeAcls,
            3,
            &probes::match_any_acl()
                .with_resource_type_filter(2)
                .with_resource_name_filter(Some(text("orders-eu")))
                .with_pattern_type_filter(2),
        )
        .await;
    assert_eq!(matched.resources.len(), 2, "orders-* and the admin's *");

    // The client host may not see or change ACLs.
    let mut client = connect_from(&broker, CLIENT_HOST).await;
    assert_eq!(
        describe_all(&mut client).await.error_code,
        CLUSTER_AUTHORIZATION_FAILED
    );
    let refused: CreateAclsResponse = client.send(ApiKey::CreateAcls, 3, &request).await;
    assert!(
        refused
            .results
            .iter()
            .all(|r| r.error_code == CLUSTER_AUTHORIZATION_FAILED)
    );
    drop((admin, client));
    let before = {
        let mut admin = connect_from(&broker, ADMIN_HOST).await;
        let all = describe_all(&mut admin).await;
        assert_eq!(all.error_code, 0, "{all:?}");
        all.resources
    };
    assert_eq!(before.len(), 5, "{before:?}");
    drop(broker);

    // After a restart the same ACLs are in force, and deleting removes what the filter selects.
    let broker = start(dir.path()).await;
    let mut admin = connect_from(&broker, ADMIN_HOST).await;
    assert_eq!(describe_all(&mut admin).await.resources, before);
    let deleted: DeleteAclsResponse = admin
        .send(
            ApiKey::DeleteAcls,
            3,
            &DeleteAclsRequest::default().with_filters(vec![
                DeleteAclsFilter::default()
                    .with_principal_filter(None)
                    .with_host_filter(None)
                    .with_resource_type_filter(2)
                    .with_resource_name_filter(Some(text("orders-")))
                    .with_pattern_type_filter(4)
                    .with_operation(1)
                    .with_permission_type(1),
            ]),
        )
        .await;
    let result = &deleted.filter_results[0];
    assert_eq!(result.error_code, 0);
    assert_eq!(result.matching_acls.len(), 1);
    assert_eq!(result.matching_acls[0].host.as_str(), CLIENT_HOST);
    let left = describe_all(&mut admin).await.resources;
    assert_eq!(left.len(), before.len() - 1);

    // A code Kafka does not define makes the request one Kafka cannot parse: the connection
    // is closed.
    let mut garbled = connect_from(&broker, ADMIN_HOST).await;
    let frame = common::frame(
        ApiKey::DescribeAcls,
        3,
        1,
        &probes::match_any_acl().with_operation(99),
    );
    garbled.send_raw(&frame).await;
    assert!(garbled.read_frame().await.is_none());
}

#[tokio::test]
async fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path()).await;
    let mut client = broker.client().await;
    assert_eq!(
        describe_all(&mut client).await.error_code,
        SECURITY_DISABLED
    );
    let created: CreateAclsResponse = client
        .send(
            ApiKey::CreateAcls,
            3,
            &CreateAclsRequest::default()
                .with_creations(vec![probes::creation(2, "t", 3, "*", 3, 3)]),
        )
        .await;
    assert_eq!(created.results[0].error_code, SECURITY_DISABLED);
}

thread_local! {
    /// The id of [`TOPIC`] on the broker of the test running on this thread, for the probes
    /// of the APIs that name topics by id (nil until [`remember_topic_id`]).
    static PROBED_TOPIC_ID: std::cell::Cell<uuid::Uuid> = const { std::cell::Cell::new(uuid::Uuid::nil()) };
}

/// Remembers [`TOPIC`]'s id on `broker` for this thread's probes.
fn remember_topic_id(broker: &Broker) {
    if let Some(id) = broker.context.manager.topic_id(TOPIC) {
        PROBED_TOPIC_ID.set(uuid::Uuid::from_bytes(id.0));
    }
}

/// Sends `api`'s authorization probe; the error codes of the answer, or `None` for the APIs
/// without one.
async fn probe(client: &mut Client, api: ApiKey) -> Option<Vec<i16>> {
    if api == ApiKey::ShareAcknowledge {
        // Kafka checks the share session before the topics: the ShareFetch probe (epoch 0)
        // opens the session whose epoch 1 the acknowledgement probe names.
        Box::pin(probe(client, ApiKey::ShareFetch)).await;
    }
    let probe = probes::probe(api, TOPIC, GROUP, PROBED_TOPIC_ID.get())?;
    let frame = common::raw_frame(api, probe.version, &probe.body);
    client.send_raw(&frame).await;
    let mut answer = client.read_frame().await.expect("an answer");
    ResponseHeader::decode(&mut answer, api.response_header_version(probe.version)).unwrap();
    Some(probe.answer_codes(answer).unwrap())
}

#[tokio::test]
async fn a_deny_wins_and_a_describable_missing_topic_is_reported_missing() {
    let Scene {
        _dir,
        broker,
        mut admin,
        mut client,
    } = Scene::new(&[TOPIC]).await;
    let acls = broker.context.access.acls().unwrap();
    let mut deny_write = acl(ResourceType::Topic, TOPIC, "*", AclOperation::Write);
    deny_write.entry.permission = Permission::Deny;
    acls.create(&[
        acl(ResourceType::Topic, "*", CLIENT_HOST, AclOperation::All),
        deny_write,
    ])
    .unwrap();
    let produced = client.produce(TOPIC, 0, bytes::Bytes::new()).await;
    assert_eq!(produced.error_code, TOPIC_AUTHORIZATION_FAILED);
    // DESCRIBE (implied by ALL) on a missing topic: Kafka tells it is missing.
    let missing: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default()
                .with_topics(Some(vec![
                    MetadataRequestTopic::default().with_name(Some(topic_name("nowhere"))),
                ]))
                .with_allow_auto_topic_creation(false),
        )
        .await;
    assert_eq!(missing.topics[0].error_code, 3);
    // The deny is the admin's too: it names every host.
    let produced = admin.produce(TOPIC, 0, bytes::Bytes::new()).await;
    assert_eq!(produced.error_code, TOPIC_AUTHORIZATION_FAILED);
}

#[tokio::test]
async fn a_damaged_acl_file_stops_startup_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    drop(start(dir.path()).await);
    std::fs::write(
        dir.path().join("ferrolog-acls"),
        "0\n3\nTOPIC LITERAL orders User:ANONYMOUS * READ ALLOW\nTOPIC LITERAL orders\n",
    )
    .unwrap();
    let manager = std::sync::Arc::new(
        ferrolog_storage::manager::LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.path().to_path_buf()],
                ..ManagerConfig::default()
            },
            std::sync::Arc::new(ferrolog_storage::SystemClock),
        )
        .unwrap(),
    );
    let config = BrokerConfig {
        authorizer: Some(AuthorizerConfig::default()),
        ..BrokerConfig::default()
    };
    let error = ferrolog_broker::Context::new(std::sync::Arc::clone(&manager), config)
        .unwrap_err()
        .to_string();
    manager.shutdown().unwrap();
    assert!(
        error.contains("ferrolog-acls") && error.contains("line 4") && error.contains("7 fields"),
        "{error}"
    );
}

#[tokio::test]
async fn paging_every_topic_never_names_one_the_client_may_not_describe() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    grant_admin(&broker);
    let mut admin = connect_from(&broker, ADMIN_HOST).await;
    for topic in ["a-visible", "b-hidden"] {
        assert_eq!(admin.create_topic(topic, 1, &[]).await.error_code, 0);
    }
    broker
        .context
        .access
        .acls()
        .unwrap()
        .create(&[acl(
            ResourceType::Topic,
            "a-visible",
            CLIENT_HOST,
            AclOperation::Describe,
        )])
        .unwrap();
    let mut client = connect_from(&broker, CLIENT_HOST).await;
    let page: DescribeTopicPartitionsResponse = client
        .send(
            ApiKey::DescribeTopicPartitions,
            0,
            &DescribeTopicPartitionsRequest::default().with_response_partition_limit(1),
        )
        .await;
    let names: Vec<&str> = page
        .topics
        .iter()
        .filter_map(|topic| topic.name.as_ref().map(|name| name.0.as_str()))
        .collect();
    assert_eq!(names, ["a-visible"]);
    assert!(page.next_cursor.is_none(), "{:?}", page.next_cursor);
}

#[tokio::test]
async fn transactional_batches_need_write_on_their_transactional_id() {
    let Scene {
        _dir,
        broker,
        admin: _,
        mut client,
    } = Scene::new(&[TOPIC]).await;
    broker
        .context
        .access
        .acls()
        .unwrap()
        .create(&[acl(
            ResourceType::Topic,
            TOPIC,
            CLIENT_HOST,
            AclOperation::Write,
        )])
        .unwrap();
    // A batch header whose attributes say transactional (bit 4); the rest does not matter,
    // the check comes first.
    let mut transactional = vec![0u8; 61];
    transactional[16] = 2;
    transactional[22] = 1 << 4;
    let produce = |records: Vec<u8>, id: Option<&str>| {
        ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5000)
            .with_transactional_id(id.map(|id| TransactionalId(text(id))))
            .with_topic_data(vec![
                kafka_protocol::messages::produce_request::TopicProduceData::default()
                    .with_name(TopicName(text(TOPIC)))
                    .with_partition_data(vec![
                        kafka_protocol::messages::produce_request::PartitionProduceData::default()
                            .with_records(Some(bytes::Bytes::from(records))),
                    ]),
            ])
    };
    for id in [None, Some("payments-1")] {
        let answer: ProduceResponse = client
            .send(ApiKey::Produce, 9, &produce(transactional.clone(), id))
            .await;
        let code = answer.responses[0].partition_responses[0].error_code;
        assert_eq!(code, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "{id:?}");
    }
    // A batch that is not transactional is not asked about the id it names.
    let answer: ProduceResponse = client
        .send(ApiKey::Produce, 9, &produce(Vec::new(), Some("payments-1")))
        .await;
    let code = answer.responses[0].partition_responses[0].error_code;
    assert!(!AUTHORIZATION_CODES.contains(&code), "{code}");
}

#[tokio::test]
async fn a_followers_fetch_needs_cluster_action_and_nothing_else() {
    let Scene {
        _dir,
        broker,
        admin: _,
        mut client,
    } = Scene::new(&[TOPIC]).await;
    let fetch = FetchRequest::default()
        .with_replica_id(BrokerId(0))
        .with_max_bytes(1 << 20)
        .with_topics(vec![
            kafka_protocol::messages::fetch_request::FetchTopic::default()
                .with_topic(TopicName(text(TOPIC)))
                .with_partitions(vec![
                    kafka_protocol::messages::fetch_request::FetchPartition::default()
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let refused: FetchResponse = client.send(ApiKey::Fetch, 12, &fetch).await;
    assert_eq!(
        refused.responses[0].partitions[0].error_code,
        TOPIC_AUTHORIZATION_FAILED
    );
    broker
        .context
        .access
        .acls()
        .unwrap()
        .create(&[acl(
            ResourceType::Cluster,
            "kafka-cluster",
            CLIENT_HOST,
            AclOperation::ClusterAction,
        )])
        .unwrap();
    let served: FetchResponse = client.send(ApiKey::Fetch, 12, &fetch).await;
    assert_eq!(served.responses[0].partitions[0].error_code, 0);
}

#[tokio::test]
async fn write_txn_markers_takes_alter_on_the_cluster_instead_of_cluster_action() {
    let Scene {
        _dir,
        broker,
        admin: _,
        mut client,
    } = Scene::new(&[TOPIC]).await;
    assert!(
        probe(&mut client, ApiKey::WriteTxnMarkers)
            .await
            .unwrap()
            .contains(&CLUSTER_AUTHORIZATION_FAILED)
    );
    grant_client(&broker, &[(ResourceType::Cluster, AclOperation::Alter)]);
    assert_eq!(
        probe(&mut client, ApiKey::WriteTxnMarkers).await.unwrap(),
        [0]
    );
}
