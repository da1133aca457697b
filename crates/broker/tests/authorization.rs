//! Authorization with Kafka's StandardAuthorizer semantics, over the wire: the ACL APIs (what
//! `kafka-acls` sends), ACLs surviving a restart, and every API the broker serves refused
//! without the ACL Kafka checks for it and served with it.
//!
//! Every connection here is `User:ANONYMOUS` (a PLAINTEXT listener); the ACLs tell clients
//! apart by host: the administrator connects from 127.0.0.1, the client under test from
//! 127.0.0.2.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;

use common::{Broker, Client};
use ferrolog_broker::BrokerConfig;
use ferrolog_broker::authz::{
    AccessEntry, AclBinding, AclOperation, AuthorizerConfig, PatternType, Permission,
    ResourcePattern, ResourceType,
};
use ferrolog_broker::dispatch::SUPPORTED;
use ferrolog_broker::probes;
use ferrolog_storage::manager::ManagerConfig;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::net::TcpSocket;

const TOPIC: &str = "orders";
const GROUP: &str = "billing";
const ADMIN_HOST: &str = "127.0.0.1";
const CLIENT_HOST: &str = "127.0.0.2";
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const INVALID_REQUEST: i16 = 42;
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
    Broker::start_with(
        ManagerConfig {
            log_dirs: vec![dir.to_path_buf()],
            ..ManagerConfig::default()
        },
        BrokerConfig {
            authorizer: Some(AuthorizerConfig::default()),
            ..BrokerConfig::default()
        },
    )
    .await
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

fn creation(
    resource_type: i8,
    name: &str,
    pattern_type: i8,
    host: &str,
    operation: i8,
    permission: i8,
) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(text(name))
        .with_resource_pattern_type(pattern_type)
        .with_principal(text("User:ANONYMOUS"))
        .with_host(text(host))
        .with_operation(operation)
        .with_permission_type(permission)
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
        creation(2, "orders-", 4, CLIENT_HOST, 3, 3),
        // GROUP billing LITERAL, ALL denied from anywhere.
        creation(3, GROUP, 3, "*", 2, 2),
        // Refused as Kafka refuses them: a cluster not named kafka-cluster, an empty name,
        // operation ANY.
        creation(4, "other", 3, "*", 7, 3),
        creation(2, "", 3, "*", 3, 3),
        creation(2, "t", 3, "*", 1, 3),
    ]);
    let created: CreateAclsResponse = admin.send(ApiKey::CreateAcls, 3, &request).await;
    let codes: Vec<i16> = created.results.iter().map(|r| r.error_code).collect();
    assert_eq!(
        codes,
        [0, 0, INVALID_REQUEST, INVALID_REQUEST, INVALID_REQUEST]
    );
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
            &CreateAclsRequest::default().with_creations(vec![creation(2, "t", 3, "*", 3, 3)]),
        )
        .await;
    assert_eq!(created.results[0].error_code, SECURITY_DISABLED);
}

/// Sends `api`'s authorization probe; the error codes of the answer, or `None` for the APIs
/// without one.
async fn probe(client: &mut Client, api: ApiKey) -> Option<Vec<i16>> {
    let probe = probes::probe(api, TOPIC, GROUP)?;
    let frame = common::raw_frame(api, probe.version, &probe.body);
    client.send_raw(&frame).await;
    let mut answer = client.read_frame().await.expect("an answer");
    ResponseHeader::decode(&mut answer, api.response_header_version(probe.version)).unwrap();
    Some(probe.answer_codes(answer).unwrap())
}

#[tokio::test]
async fn every_api_is_refused_without_its_acl_and_served_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    grant_admin(&broker);
    let mut admin = connect_from(&broker, ADMIN_HOST).await;
    assert_eq!(admin.create_topic(TOPIC, 1, &[]).await.error_code, 0);
    let mut client = connect_from(&broker, CLIENT_HOST).await;

    // No ACL for the client's host: each API is refused with Kafka's code, the topic's
    // existence is not revealed, and what lists things leaves them out.
    let mut probed = BTreeSet::new();
    for (api, _, _) in SUPPORTED {
        let Some(codes) = probe(&mut client, *api).await else {
            continue;
        };
        probed.insert(format!("{api:?}"));
        assert!(
            codes.contains(&probes::refusal(*api)),
            "{api:?} without an ACL answered {codes:?}"
        );
    }
    for (api, _, _) in SUPPORTED {
        assert!(
            probed.contains(&format!("{api:?}")) || probes::NOT_PROBED.contains(api),
            "{api:?} is served but has no authorization probe"
        );
    }
    let all_topics: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
        .await;
    assert!(all_topics.topics.is_empty(), "{:?}", all_topics.topics);
    let described: DescribeClusterResponse = client
        .send(
            ApiKey::DescribeCluster,
            1,
            &DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
        )
        .await;
    assert_eq!(
        (
            described.error_code,
            described.cluster_authorized_operations
        ),
        (0, 0)
    );

    // An idempotent producer may also start with WRITE on any one topic instead of
    // IDEMPOTENT_WRITE on the cluster.
    let acls = broker.context.access.acls().unwrap();
    acls.create(&[acl(
        ResourceType::Topic,
        "elsewhere",
        CLIENT_HOST,
        AclOperation::Write,
    )])
    .unwrap();
    assert_eq!(
        probe(&mut client, ApiKey::InitProducerId).await.unwrap(),
        [0]
    );

    // With the ACLs Kafka checks, nothing is refused for authorization.
    acls.create(&[
        acl(ResourceType::Topic, TOPIC, CLIENT_HOST, AclOperation::All),
        acl(
            ResourceType::Topic,
            "orders-",
            CLIENT_HOST,
            AclOperation::All,
        ),
        acl(
            ResourceType::Topic,
            "orders-new",
            CLIENT_HOST,
            AclOperation::All,
        ),
        acl(
            ResourceType::Topic,
            "orders-gone",
            CLIENT_HOST,
            AclOperation::All,
        ),
        acl(ResourceType::Group, GROUP, CLIENT_HOST, AclOperation::All),
        acl(
            ResourceType::Cluster,
            "kafka-cluster",
            CLIENT_HOST,
            AclOperation::All,
        ),
    ])
    .unwrap();
    for (api, _, _) in SUPPORTED {
        let Some(codes) = probe(&mut client, *api).await else {
            continue;
        };
        assert!(
            !codes.iter().any(|code| AUTHORIZATION_CODES.contains(code)),
            "{api:?} with its ACL answered {codes:?}"
        );
    }
    let listed: ListGroupsResponse = client
        .send(ApiKey::ListGroups, 4, &ListGroupsRequest::default())
        .await;
    assert_eq!(listed.error_code, 0);
    let all_topics: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
        .await;
    let names: Vec<&str> = all_topics
        .topics
        .iter()
        .filter_map(|topic| topic.name.as_ref().map(|name| name.0.as_str()))
        .collect();
    assert!(names.contains(&TOPIC), "{names:?}");
}

#[tokio::test]
async fn a_deny_wins_and_a_describable_missing_topic_is_reported_missing() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    grant_admin(&broker);
    let mut admin = connect_from(&broker, ADMIN_HOST).await;
    assert_eq!(admin.create_topic(TOPIC, 1, &[]).await.error_code, 0);
    let acls = broker.context.access.acls().unwrap();
    let mut deny_write = acl(ResourceType::Topic, TOPIC, "*", AclOperation::Write);
    deny_write.entry.permission = Permission::Deny;
    acls.create(&[
        acl(ResourceType::Topic, "*", CLIENT_HOST, AclOperation::All),
        deny_write,
    ])
    .unwrap();
    let mut client = connect_from(&broker, CLIENT_HOST).await;
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
