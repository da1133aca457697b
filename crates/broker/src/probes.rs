//! Authorization probes: for each API the broker serves, one request Kafka refuses with an
//! authorization error when the principal lacks the ACL Kafka checks for it, and the error
//! codes of any answer. Tests send the same probes to ferrolog and to Kafka 4.4 and compare;
//! built only with the `probes` feature.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_topic_partitions_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::authz::ResourceType;
use crate::error_codes::ErrorCodes;
use crate::errors::{
    CLUSTER_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
};

/// The APIs without a probe: ApiVersions, DescribeCluster, SaslHandshake and SaslAuthenticate
/// need no ACL (the last two are answered ILLEGAL_SASL_STATE outside a SASL exchange), and
/// ListGroups and ListTransactions refuse by leaving groups and transactional ids out.
pub const NOT_PROBED: &[ApiKey] = &[
    ApiKey::ApiVersions,
    ApiKey::DescribeCluster,
    ApiKey::ListGroups,
    ApiKey::ListTransactions,
    ApiKey::SaslHandshake,
    ApiKey::SaslAuthenticate,
];

/// The topic the DeleteTopics probe deletes, once it is allowed to: the test creates it, so that
/// an ALLOW that covers DESCRIBE but not DELETE meets an existing topic (refused), not a
/// missing one (UNKNOWN_TOPIC_OR_PARTITION).
pub fn doomed_topic(topic: &str) -> String {
    format!("{topic}-doomed")
}

/// One request: its API, version and encoded body (without the request header).
#[derive(Clone, Debug)]
pub struct Probe {
    /// The API.
    pub api: ApiKey,
    /// The version it is sent at.
    pub version: i16,
    /// The body.
    pub body: Bytes,
}

impl Probe {
    fn new<R: Encodable>(api: ApiKey, version: i16, request: &R) -> Self {
        let mut body = BytesMut::new();
        // Encoding a request built here at a version the broker serves cannot fail.
        #[allow(clippy::expect_used, reason = "built here, at a served version")]
        request.encode(&mut body, version).expect("a probe encodes");
        Self {
            api,
            version,
            body: body.freeze(),
        }
    }

    /// The error codes of an answer to this probe (the response body, after its header), in
    /// the order the response carries them, `NONE` included.
    pub fn answer_codes(&self, mut body: Bytes) -> Result<Vec<i16>, String> {
        macro_rules! decode {
            ($($key:ident => $response:ty,)*) => {
                match self.api {
                    $(ApiKey::$key => <$response>::decode(&mut body, self.version)
                        .map(|response| response.error_codes())
                        .map_err(|error| format!("{:?} v{}: {error}", self.api, self.version)),)*
                    other => Err(format!("{other:?} has no probe")),
                }
            };
        }
        decode! {
            Produce => ProduceResponse,
            Fetch => FetchResponse,
            ListOffsets => ListOffsetsResponse,
            Metadata => MetadataResponse,
            CreateTopics => CreateTopicsResponse,
            CreatePartitions => CreatePartitionsResponse,
            DeleteTopics => DeleteTopicsResponse,
            DeleteRecords => DeleteRecordsResponse,
            DescribeConfigs => DescribeConfigsResponse,
            AlterConfigs => AlterConfigsResponse,
            IncrementalAlterConfigs => IncrementalAlterConfigsResponse,
            DescribeLogDirs => DescribeLogDirsResponse,
            AlterReplicaLogDirs => AlterReplicaLogDirsResponse,
            AlterPartitionReassignments => AlterPartitionReassignmentsResponse,
            ListPartitionReassignments => ListPartitionReassignmentsResponse,
            InitProducerId => InitProducerIdResponse,
            FindCoordinator => FindCoordinatorResponse,
            JoinGroup => JoinGroupResponse,
            SyncGroup => SyncGroupResponse,
            Heartbeat => HeartbeatResponse,
            LeaveGroup => LeaveGroupResponse,
            OffsetCommit => OffsetCommitResponse,
            OffsetFetch => OffsetFetchResponse,
            DescribeGroups => DescribeGroupsResponse,
            DeleteGroups => DeleteGroupsResponse,
            OffsetDelete => OffsetDeleteResponse,
            DescribeTopicPartitions => DescribeTopicPartitionsResponse,
            DescribeAcls => DescribeAclsResponse,
            CreateAcls => CreateAclsResponse,
            DeleteAcls => DeleteAclsResponse,
            DescribeUserScramCredentials => DescribeUserScramCredentialsResponse,
            AlterUserScramCredentials => AlterUserScramCredentialsResponse,
            DescribeClientQuotas => DescribeClientQuotasResponse,
            DescribeProducers => DescribeProducersResponse,
            AddPartitionsToTxn => AddPartitionsToTxnResponse,
            AddOffsetsToTxn => AddOffsetsToTxnResponse,
            EndTxn => EndTxnResponse,
            TxnOffsetCommit => TxnOffsetCommitResponse,
            DescribeTransactions => DescribeTransactionsResponse,
            WriteTxnMarkers => WriteTxnMarkersResponse,
        }
    }
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

/// A DescribeAcls filter matching every ACL.
pub fn match_any_acl() -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_resource_type_filter(1)
        .with_pattern_type_filter(1)
        .with_operation(1)
        .with_permission_type(1)
}

/// A CreateAcls entry for `User:ANONYMOUS`, in Kafka's codes.
pub fn creation(
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

/// A request of `api` about `topic` (and names starting with it) and `group` (also the
/// transactional id of the transactional APIs) that Kafka refuses with an authorization error
/// when the principal lacks the ACL it checks; `None` for the APIs that need nothing
/// (ApiVersions, DescribeCluster) or refuse by leaving things out (ListGroups).
pub fn probe(api: ApiKey, topic: &str, group_id: &str) -> Option<Probe> {
    data_probe(api, topic)
        .or_else(|| config_probe(api, topic, group_id))
        .or_else(|| group_probe(api, topic, group_id))
        .or_else(|| security_probe(api, topic))
        .or_else(|| txn_probe(api, topic, group_id))
}

/// Produce, fetch, offsets, metadata and the topic-changing APIs.
fn data_probe(api: ApiKey, topic: &str) -> Option<Probe> {
    let topic_name = |name: &str| TopicName(text(name));
    let probe = match api {
        ApiKey::Produce => {
            let request = ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(5000)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(topic_name(topic))
                        .with_partition_data(vec![PartitionProduceData::default()]),
                ]);
            Probe::new(api, 9, &request)
        }
        ApiKey::Fetch => {
            let request = FetchRequest::default()
                .with_max_bytes(1 << 20)
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(topic_name(topic))
                        .with_partitions(vec![
                            FetchPartition::default().with_partition_max_bytes(1 << 20),
                        ]),
                ]);
            Probe::new(api, 12, &request)
        }
        ApiKey::ListOffsets => {
            let request = ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(vec![
                    ListOffsetsTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)]),
                ]);
            Probe::new(api, 7, &request)
        }
        ApiKey::Metadata => {
            let request = MetadataRequest::default()
                .with_topics(Some(vec![
                    MetadataRequestTopic::default().with_name(Some(topic_name(topic))),
                ]))
                .with_allow_auto_topic_creation(false);
            Probe::new(api, 12, &request)
        }
        ApiKey::CreateTopics => {
            let request = CreateTopicsRequest::default()
                .with_validate_only(true)
                .with_topics(vec![
                    CreatableTopic::default()
                        .with_name(topic_name(&format!("{topic}-new")))
                        .with_num_partitions(1)
                        .with_replication_factor(1),
                ]);
            Probe::new(api, 7, &request)
        }
        ApiKey::CreatePartitions => {
            let request = CreatePartitionsRequest::default()
                .with_timeout_ms(30_000)
                .with_validate_only(true)
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(topic_name(topic))
                        .with_count(2),
                ]);
            Probe::new(api, 3, &request)
        }
        ApiKey::DeleteTopics => {
            // A topic that does not exist: the answer must not tell, unless it may be described.
            let request = DeleteTopicsRequest::default()
                .with_timeout_ms(30_000)
                .with_topic_names(vec![topic_name(&doomed_topic(topic))]);
            Probe::new(api, 5, &request)
        }
        ApiKey::DeleteRecords => {
            let request = DeleteRecordsRequest::default().with_topics(vec![
                DeleteRecordsTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(vec![DeleteRecordsPartition::default().with_offset(0)]),
            ]);
            Probe::new(api, 2, &request)
        }
        _ => return None,
    };
    Some(probe)
}

/// Configs, log directories, reassignments, producer ids and coordinators.
fn config_probe(api: ApiKey, topic: &str, group_id: &str) -> Option<Probe> {
    let probe = match api {
        ApiKey::DescribeConfigs => {
            let request = DescribeConfigsRequest::default().with_resources(vec![
                DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(text(topic)),
            ]);
            Probe::new(api, 4, &request)
        }
        ApiKey::AlterConfigs => {
            let request = AlterConfigsRequest::default()
                .with_validate_only(true)
                .with_resources(vec![
                    kafka_protocol::messages::alter_configs_request::AlterConfigsResource::default(
                    )
                    .with_resource_type(2)
                    .with_resource_name(text(topic)),
                ]);
            Probe::new(api, 2, &request)
        }
        ApiKey::IncrementalAlterConfigs => {
            let request = IncrementalAlterConfigsRequest::default()
                .with_validate_only(true)
                .with_resources(vec![
                    AlterConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(text(topic))
                        .with_configs(vec![
                            AlterableConfig::default()
                                .with_name(text("retention.ms"))
                                .with_value(Some(text("60000"))),
                        ]),
                ]);
            Probe::new(api, 1, &request)
        }
        ApiKey::DescribeLogDirs => {
            Probe::new(api, 4, &DescribeLogDirsRequest::default().with_topics(None))
        }
        ApiKey::AlterReplicaLogDirs => {
            // Allowed, it names no directory of either broker: LOG_DIR_NOT_FOUND.
            let request = AlterReplicaLogDirsRequest::default().with_dirs(vec![
                alter_replica_log_dirs_request::AlterReplicaLogDir::default()
                    .with_path(text("/no-such-log-dir"))
                    .with_topics(vec![
                        alter_replica_log_dirs_request::AlterReplicaLogDirTopic::default()
                            .with_name(TopicName(text(topic)))
                            .with_partitions(vec![0]),
                    ]),
            ]);
            Probe::new(api, 2, &request)
        }
        ApiKey::AlterPartitionReassignments => {
            // Allowed, it cancels a reassignment neither broker has: NO_REASSIGNMENT_IN_PROGRESS.
            let request = AlterPartitionReassignmentsRequest::default().with_topics(vec![
                alter_partition_reassignments_request::ReassignableTopic::default()
                    .with_name(TopicName(text(topic)))
                    .with_partitions(vec![
                        alter_partition_reassignments_request::ReassignablePartition::default()
                            .with_partition_index(0)
                            .with_replicas(None),
                    ]),
            ]);
            Probe::new(api, 0, &request)
        }
        ApiKey::ListPartitionReassignments => Probe::new(
            api,
            0,
            &ListPartitionReassignmentsRequest::default().with_topics(None),
        ),
        ApiKey::InitProducerId => {
            let request = InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            Probe::new(api, 4, &request)
        }
        ApiKey::FindCoordinator => {
            let request =
                FindCoordinatorRequest::default().with_coordinator_keys(vec![text(group_id)]);
            Probe::new(api, 4, &request)
        }
        _ => return None,
    };
    Some(probe)
}

/// The group APIs, and DescribeTopicPartitions.
fn group_probe(api: ApiKey, topic: &str, group_id: &str) -> Option<Probe> {
    let group = || GroupId(text(group_id));
    let topic_name = |name: &str| TopicName(text(name));
    let probe = match api {
        ApiKey::JoinGroup => {
            let request = JoinGroupRequest::default()
                .with_group_id(group())
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(10_000)
                .with_protocol_type(text("consumer"))
                .with_protocols(vec![
                    JoinGroupRequestProtocol::default().with_name(text("range")),
                ]);
            Probe::new(api, 9, &request)
        }
        ApiKey::SyncGroup => {
            let request = SyncGroupRequest::default()
                .with_group_id(group())
                .with_member_id(text("nobody"))
                .with_protocol_type(Some(text("consumer")))
                .with_protocol_name(Some(text("range")));
            Probe::new(api, 5, &request)
        }
        ApiKey::Heartbeat => {
            let request = HeartbeatRequest::default()
                .with_group_id(group())
                .with_member_id(text("nobody"));
            Probe::new(api, 4, &request)
        }
        ApiKey::LeaveGroup => {
            let request = LeaveGroupRequest::default()
                .with_group_id(group())
                .with_members(vec![
                    kafka_protocol::messages::leave_group_request::MemberIdentity::default()
                        .with_member_id(text("nobody")),
                ]);
            Probe::new(api, 5, &request)
        }
        ApiKey::OffsetCommit => {
            let request = OffsetCommitRequest::default()
                .with_group_id(group())
                .with_generation_id_or_member_epoch(-1)
                .with_topics(vec![
                    OffsetCommitRequestTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(vec![
                            OffsetCommitRequestPartition::default().with_committed_offset(0),
                        ]),
                ]);
            Probe::new(api, 8, &request)
        }
        ApiKey::OffsetFetch => {
            let request = OffsetFetchRequest::default().with_groups(vec![
                OffsetFetchRequestGroup::default()
                    .with_group_id(group())
                    .with_topics(Some(vec![
                        OffsetFetchRequestTopics::default()
                            .with_name(topic_name(topic))
                            .with_partition_indexes(vec![0]),
                    ])),
            ]);
            Probe::new(api, 8, &request)
        }
        ApiKey::DescribeGroups => {
            let request = DescribeGroupsRequest::default().with_groups(vec![group()]);
            Probe::new(api, 5, &request)
        }
        ApiKey::DeleteGroups => {
            let request = DeleteGroupsRequest::default().with_groups_names(vec![group()]);
            Probe::new(api, 2, &request)
        }
        ApiKey::OffsetDelete => {
            let request = OffsetDeleteRequest::default()
                .with_group_id(group())
                .with_topics(vec![
                    OffsetDeleteRequestTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(vec![OffsetDeleteRequestPartition::default()]),
                ]);
            Probe::new(api, 0, &request)
        }
        ApiKey::DescribeTopicPartitions => {
            let request = DescribeTopicPartitionsRequest::default()
                .with_response_partition_limit(100)
                .with_topics(vec![TopicRequest::default().with_name(topic_name(topic))]);
            Probe::new(api, 0, &request)
        }
        _ => return None,
    };
    Some(probe)
}

/// ACLs, SCRAM credentials, quotas and producers.
fn security_probe(api: ApiKey, topic: &str) -> Option<Probe> {
    let probe = match api {
        ApiKey::DescribeAcls => Probe::new(api, 3, &match_any_acl()),
        ApiKey::CreateAcls => {
            let request =
                CreateAclsRequest::default().with_creations(vec![creation(2, "x", 3, "*", 3, 3)]);
            Probe::new(api, 3, &request)
        }
        ApiKey::DeleteAcls => {
            let request = DeleteAclsRequest::default().with_filters(vec![
                DeleteAclsFilter::default()
                    .with_principal_filter(None)
                    .with_host_filter(None)
                    .with_resource_type_filter(2)
                    .with_resource_name_filter(Some(text("x")))
                    .with_pattern_type_filter(3)
                    .with_operation(1)
                    .with_permission_type(1),
            ]);
            Probe::new(api, 3, &request)
        }
        ApiKey::DescribeUserScramCredentials => {
            let request = DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
                describe_user_scram_credentials_request::UserName::default()
                    .with_name(text("probe-user")),
            ]));
            Probe::new(api, 0, &request)
        }
        ApiKey::AlterUserScramCredentials => {
            let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![
                alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
                    .with_name(text("probe-user"))
                    .with_mechanism(1)
                    .with_iterations(4096)
                    .with_salt(Bytes::from_static(b"probe-salt"))
                    .with_salted_password(Bytes::from_static(&[7; 32])),
            ]);
            Probe::new(api, 0, &request)
        }
        ApiKey::DescribeClientQuotas => {
            let request = DescribeClientQuotasRequest::default().with_components(vec![
                describe_client_quotas_request::ComponentData::default()
                    .with_entity_type(text("user"))
                    .with_match_type(0)
                    .with_match(Some(text("probe-user"))),
            ]);
            Probe::new(api, 1, &request)
        }
        ApiKey::DescribeProducers => {
            let request = DescribeProducersRequest::default().with_topics(vec![
                describe_producers_request::TopicRequest::default()
                    .with_name(TopicName(text(topic)))
                    .with_partition_indexes(vec![0]),
            ]);
            Probe::new(api, 0, &request)
        }
        // The transactional APIs name the group's id as their transactional id too.
        _ => return None,
    };
    Some(probe)
}

/// The transaction APIs.
fn txn_probe(api: ApiKey, topic: &str, group_id: &str) -> Option<Probe> {
    let group = || GroupId(text(group_id));
    let topic_name = |name: &str| TopicName(text(name));
    let probe = match api {
        ApiKey::AddPartitionsToTxn => {
            let request = AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(text(group_id)))
                .with_v3_and_below_producer_id(ProducerId(0))
                .with_v3_and_below_topics(vec![
                    kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(vec![0]),
                ]);
            Probe::new(api, 3, &request)
        }
        ApiKey::AddOffsetsToTxn => {
            let request = AddOffsetsToTxnRequest::default()
                .with_transactional_id(TransactionalId(text(group_id)))
                .with_producer_id(ProducerId(0))
                .with_group_id(group());
            Probe::new(api, 3, &request)
        }
        ApiKey::EndTxn => {
            let request = EndTxnRequest::default()
                .with_transactional_id(TransactionalId(text(group_id)))
                .with_producer_id(ProducerId(0))
                .with_committed(true);
            Probe::new(api, 3, &request)
        }
        ApiKey::TxnOffsetCommit => {
            let request = TxnOffsetCommitRequest::default()
                .with_transactional_id(TransactionalId(text(group_id)))
                .with_group_id(group())
                .with_producer_id(ProducerId(0))
                .with_generation_id(-1)
                .with_topics(vec![
                    kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(vec![
                            kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequestPartition::default(),
                        ]),
                ]);
            Probe::new(api, 3, &request)
        }
        ApiKey::DescribeTransactions => {
            let request = DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![TransactionalId(text(group_id))]);
            Probe::new(api, 0, &request)
        }
        ApiKey::WriteTxnMarkers => {
            // An ABORT for a producer the partition does not know: harmless once allowed.
            let request = WriteTxnMarkersRequest::default().with_markers(vec![
                kafka_protocol::messages::write_txn_markers_request::WritableTxnMarker::default()
                    .with_producer_id(ProducerId(i64::MAX))
                    .with_topics(vec![
                        kafka_protocol::messages::write_txn_markers_request::WritableTxnMarkerTopic::default()
                            .with_name(topic_name(topic))
                            .with_partition_indexes(vec![0]),
                    ]),
            ]);
            Probe::new(api, 1, &request)
        }
        _ => return None,
    };
    Some(probe)
}

/// The authorization refusal Kafka answers `api`'s probe with when the first operation the API
/// table says it needs is not allowed: the refusal of that operation's resource type.
pub fn refusal(api: ApiKey) -> i16 {
    match crate::protocol::apis::required_acls(api).first() {
        Some((ResourceType::Topic, _)) => TOPIC_AUTHORIZATION_FAILED,
        Some((ResourceType::Group, _)) => GROUP_AUTHORIZATION_FAILED,
        Some((ResourceType::TransactionalId, _)) => TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        _ => CLUSTER_AUTHORIZATION_FAILED,
    }
}
