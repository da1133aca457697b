//! The table of the APIs this broker serves: one row per API, read by every layer that needs
//! to know about APIs (the versions advertised and checked, what each needs allowed, the
//! router), each through a macro of its own, so that the table sits below them all.

use crate::ApiKey;

use crate::acl::{AclOperation, ResourceType};
use crate::needs::Declared;

/// Every API this broker serves, declared once: its key, the versions it serves, its request
/// type, how its handler runs and what it answers. `served_apis!(consumer)` hands the rows to
/// `consumer`, a macro of the row grammar: here the advertised list ([`SUPPORTED`], which
/// ApiVersions sends) and the needs; in the broker's `dispatch` the router; in its `probes` (the
/// `probes` feature) the authorization probes, one for each row that needs something. Generated
/// from one table, they cannot disagree.
///
/// How a handler runs:
/// * `inline`: on the connection's task; it touches no storage (`fn(header, &request)`);
/// * `blocking`: on the blocking pool through the broker's `bridge`
///   (`fn(context, session, header, request)`);
/// * `waiting`: an async handler that may wait for other requests (a fetch for data, a group
///   for its members), crossing into storage through the bridge itself
///   (`async fn(context, session, header, request)`).
///
/// What it answers: `response` (always one), `checked` (a response, or a request Kafka would
/// fail to parse, which closes the connection), `produced` (Produce's: no response with acks=0,
/// else one that may wait for flushes, see the broker's `Reply::AfterFlush`), `spliced` (a response and
/// the file regions its placeholders stand for).
///
/// What it needs (`needs`), in the order Kafka checks it, the first refusal being the answer
/// (see [`crate::needs`]):
/// * `Cluster Op`, `Type Op of field`: on the whole request, the cluster or the resource the
///   field names. The router checks these before the handler runs and answers a refusal itself
///   (the broker's `Refuse`); `Cluster Op or Alt`: either operation will do.
/// * `Type Op each`: on each resource of the type the request names; the handler asks, name by
///   name, and puts each refusal where the answer says it.
/// * `Type Op when form`: on some forms of the request only; the handler decides (an idempotent
///   InitProducerId needs IDEMPOTENT_WRITE, a transactional one WRITE on its id).
///
/// What else its handler checks (`also`): the alternatives Kafka also accepts (CREATE or DELETE
/// on the cluster for every topic of CreateTopics or DeleteTopics, WRITE on some topic instead
/// of IDEMPOTENT_WRITE), what other forms of a request need (a follower's CLUSTER_ACTION for
/// Fetch, WRITE on the transactional id for Produce's transactional batches; for the config
/// APIs, the cluster's or the group's operation for broker and group resources), and the
/// filters of what an answer shows (ListGroups and ListTransactions leave out what the
/// principal may not describe). A handler can check nothing its row does not declare.
///
/// Each range lies within what the codec decodes, which excludes what Kafka 4 removed
/// (KIP-896): CreateTopics v0–1, DeleteTopics v0, DescribeLogDirs v0.
#[macro_export]
macro_rules! served_apis {
    ($consumer:ident) => {
        $consumer! {
            Produce 3..=12, ProduceRequest, blocking handlers::produce::handle => produced,
                needs [Topic Write each], also [TransactionalId Write];
            Fetch 4..=12, FetchRequest, waiting handlers::fetch::handle => spliced,
                needs [Topic Read each], also [Cluster ClusterAction];
            ListOffsets 1..=7, ListOffsetsRequest, blocking handlers::list_offsets::handle => response,
                needs [Topic Describe each];
            OffsetForLeaderEpoch 2..=4, OffsetForLeaderEpochRequest, blocking handlers::offset_for_leader_epoch::handle => response,
                needs [Topic Describe each], also [Cluster ClusterAction];
            Metadata 0..=12, MetadataRequest, blocking handlers::metadata::handle => response,
                needs [Topic Describe each], also [Cluster Create, Topic Create, Cluster Describe];
            ApiVersions 0..=4, ApiVersionsRequest, blocking handlers::api_versions::handle => response,
                needs [];
            CreateTopics 2..=7, CreateTopicsRequest, blocking handlers::create_topics::handle => response,
                needs [Topic Create each], also [Cluster Create, Topic DescribeConfigs];
            CreatePartitions 0..=3, CreatePartitionsRequest, blocking handlers::create_partitions::handle => response,
                needs [Topic Alter each];
            DescribeConfigs 1..=4, DescribeConfigsRequest, blocking handlers::configs::describe => response,
                needs [Topic DescribeConfigs each], also [Cluster DescribeConfigs, Group DescribeConfigs];
            AlterConfigs 0..=2, AlterConfigsRequest, blocking handlers::configs::alter => response,
                needs [Topic AlterConfigs each], also [Cluster AlterConfigs, Group AlterConfigs];
            IncrementalAlterConfigs 0..=1, IncrementalAlterConfigsRequest, blocking handlers::configs::incremental_alter => response,
                needs [Topic AlterConfigs each], also [Cluster AlterConfigs, Group AlterConfigs];
            DescribeCluster 0..=1, DescribeClusterRequest, blocking handlers::describe_cluster::handle => response,
                needs [], also [Cluster Describe];
            DescribeLogDirs 1..=4, DescribeLogDirsRequest, blocking handlers::describe_log_dirs::handle => response,
                needs [Cluster Describe];
            AlterReplicaLogDirs 1..=2, AlterReplicaLogDirsRequest, blocking handlers::alter_replica_log_dirs::handle => response,
                needs [Cluster Alter];
            AlterPartitionReassignments 0..=1, AlterPartitionReassignmentsRequest, blocking handlers::partition_reassignments::alter => response,
                needs [Cluster Alter];
            ListPartitionReassignments 0..=0, ListPartitionReassignmentsRequest, blocking handlers::partition_reassignments::list => response,
                needs [Cluster Describe];
            DeleteTopics 1..=5, DeleteTopicsRequest, blocking handlers::delete_topics::handle => response,
                needs [Topic Delete each], also [Cluster Delete, Topic Describe];
            DeleteRecords 0..=2, DeleteRecordsRequest, blocking handlers::delete_records::handle => response,
                needs [Topic Delete each];
            InitProducerId 0..=5, InitProducerIdRequest, blocking handlers::init_producer_id::handle => response,
                needs [Cluster IdempotentWrite when idempotent], also [Topic Write, TransactionalId Write];
            FindCoordinator 0..=4, FindCoordinatorRequest, blocking handlers::find_coordinator::handle => response,
                needs [Group Describe each], also [TransactionalId Describe];
            JoinGroup 0..=9, JoinGroupRequest, waiting handlers::join_group::handle => response,
                needs [Group Read of group_id];
            SyncGroup 0..=5, SyncGroupRequest, waiting handlers::sync_group::handle => response,
                needs [Group Read of group_id];
            Heartbeat 0..=4, HeartbeatRequest, blocking handlers::heartbeat::handle => response,
                needs [Group Read of group_id];
            LeaveGroup 0..=5, LeaveGroupRequest, blocking handlers::leave_group::handle => response,
                needs [Group Read of group_id];
            OffsetCommit 2..=9, OffsetCommitRequest, blocking handlers::offset_commit::handle => response,
                needs [Group Read of group_id, Topic Read each];
            OffsetFetch 1..=9, OffsetFetchRequest, blocking handlers::offset_fetch::handle => response,
                needs [Group Describe each, Topic Describe each];
            ListGroups 0..=5, ListGroupsRequest, blocking handlers::list_groups::handle => response,
                needs [], also [Cluster Describe, Group Describe];
            DescribeGroups 0..=6, DescribeGroupsRequest, blocking handlers::describe_groups::handle => response,
                needs [Group Describe each];
            DeleteGroups 0..=2, DeleteGroupsRequest, blocking handlers::delete_groups::handle => response,
                needs [Group Delete each];
            ConsumerGroupHeartbeat 0..=1, ConsumerGroupHeartbeatRequest, blocking handlers::consumer_group_heartbeat::handle => response,
                needs [Group Read of group_id], also [Topic Describe];
            ConsumerGroupDescribe 0..=1, ConsumerGroupDescribeRequest, blocking handlers::consumer_group_describe::handle => response,
                needs [Group Describe each], also [Topic Describe];
            StreamsGroupHeartbeat 0..=1, StreamsGroupHeartbeatRequest, blocking handlers::streams_group_heartbeat::handle => response,
                needs [Group Read of group_id], also [Topic Describe, Cluster Create, Topic Create];
            StreamsGroupDescribe 0..=1, StreamsGroupDescribeRequest, blocking handlers::streams_group_describe::handle => response,
                needs [Group Describe each], also [Topic Describe];
            StreamsGroupTopologyDescriptionUpdate 0..=0, StreamsGroupTopologyDescriptionUpdateRequest, blocking handlers::streams_group_topology_description_update::handle => response,
                needs [Group Read of group_id];
            ShareGroupHeartbeat 1..=1, ShareGroupHeartbeatRequest, blocking handlers::share_group_heartbeat::handle => response,
                needs [Group Read of group_id], also [Topic Describe];
            ShareGroupDescribe 1..=1, ShareGroupDescribeRequest, blocking handlers::share_group_describe::handle => response,
                needs [Group Describe each], also [Topic Describe];
            ShareFetch 1..=2, ShareFetchRequest, waiting handlers::share_fetch::handle => response,
                needs [Group Read each, Topic Read each];
            ShareAcknowledge 1..=2, ShareAcknowledgeRequest, waiting handlers::share_acknowledge::handle => response,
                needs [Group Read each, Topic Read each];
            DescribeShareGroupOffsets 0..=1, DescribeShareGroupOffsetsRequest, blocking handlers::describe_share_group_offsets::handle => response,
                needs [Group Describe each, Topic Describe each];
            AlterShareGroupOffsets 0..=0, AlterShareGroupOffsetsRequest, blocking handlers::alter_share_group_offsets::handle => response,
                needs [Group Read of group_id, Topic Read each];
            DeleteShareGroupOffsets 0..=0, DeleteShareGroupOffsetsRequest, blocking handlers::delete_share_group_offsets::handle => response,
                needs [Group Delete of group_id, Topic Read each];
            OffsetDelete 0..=0, OffsetDeleteRequest, blocking handlers::offset_delete::handle => response,
                needs [Group Delete of group_id, Topic Read each];
            DescribeTopicPartitions 0..=0, DescribeTopicPartitionsRequest, blocking handlers::describe_topic_partitions::handle => response,
                needs [Topic Describe each];
            DescribeAcls 1..=3, DescribeAclsRequest, blocking handlers::acls::describe => checked,
                needs [Cluster Describe];
            CreateAcls 1..=3, CreateAclsRequest, blocking handlers::acls::create => checked,
                needs [Cluster Alter];
            DeleteAcls 1..=3, DeleteAclsRequest, blocking handlers::acls::delete => checked,
                needs [Cluster Alter];
            SaslHandshake 0..=1, SaslHandshakeRequest, inline handlers::sasl::handshake => response,
                needs [];
            SaslAuthenticate 0..=2, SaslAuthenticateRequest, inline handlers::sasl::authenticate => response,
                needs [];
            DescribeUserScramCredentials 0..=0, DescribeUserScramCredentialsRequest, blocking handlers::scram_credentials::describe => response,
                needs [Cluster Describe];
            AlterUserScramCredentials 0..=0, AlterUserScramCredentialsRequest, blocking handlers::scram_credentials::alter => response,
                needs [Cluster Alter];
            DescribeClientQuotas 0..=1, DescribeClientQuotasRequest, blocking handlers::client_quotas::describe => response,
                needs [Cluster DescribeConfigs];
            AlterClientQuotas 0..=1, AlterClientQuotasRequest, blocking handlers::client_quotas::alter => response,
                needs [Cluster AlterConfigs];
            ElectLeaders 0..=2, ElectLeadersRequest, blocking handlers::elect_leaders::handle => response,
                needs [Cluster Alter];
            DescribeQuorum 0..=2, DescribeQuorumRequest, blocking handlers::describe_quorum::handle => response,
                needs [Cluster Describe];
            ListConfigResources 0..=1, ListConfigResourcesRequest, blocking handlers::list_config_resources::handle => response,
                needs [Cluster DescribeConfigs];
            UpdateFeatures 0..=2, UpdateFeaturesRequest, blocking handlers::update_features::handle => response,
                needs [Cluster Alter];
            CreateDelegationToken 1..=3, CreateDelegationTokenRequest, blocking handlers::delegation_tokens::create => response,
                needs [], also [User CreateTokens];
            RenewDelegationToken 1..=2, RenewDelegationTokenRequest, blocking handlers::delegation_tokens::renew => response,
                needs [];
            ExpireDelegationToken 1..=2, ExpireDelegationTokenRequest, blocking handlers::delegation_tokens::expire => response,
                needs [];
            DescribeDelegationToken 1..=3, DescribeDelegationTokenRequest, blocking handlers::delegation_tokens::describe => response,
                needs [], also [DelegationToken Describe, User DescribeTokens];
            GetTelemetrySubscriptions 0..=0, GetTelemetrySubscriptionsRequest, blocking handlers::telemetry::get_subscriptions => response,
                needs [];
            PushTelemetry 0..=0, PushTelemetryRequest, blocking handlers::telemetry::push => response,
                needs [];
            DescribeProducers 0..=0, DescribeProducersRequest, blocking handlers::describe_producers::handle => response,
                needs [Topic Read each];
            AddPartitionsToTxn 0..=3, AddPartitionsToTxnRequest, blocking handlers::add_partitions_to_txn::handle => response,
                needs [TransactionalId Write of v3_and_below_transactional_id, Topic Write each];
            AddOffsetsToTxn 0..=4, AddOffsetsToTxnRequest, blocking handlers::add_offsets_to_txn::handle => response,
                needs [TransactionalId Write of transactional_id, Group Read of group_id];
            EndTxn 0..=5, EndTxnRequest, blocking handlers::end_txn::handle => response,
                needs [TransactionalId Write of transactional_id];
            TxnOffsetCommit 0..=5, TxnOffsetCommitRequest, blocking handlers::txn_offset_commit::handle => response,
                needs [TransactionalId Write of transactional_id, Group Read of group_id, Topic Read each];
            DescribeTransactions 0..=0, DescribeTransactionsRequest, blocking handlers::describe_transactions::handle => response,
                needs [TransactionalId Describe each], also [Topic Describe];
            ListTransactions 0..=2, ListTransactionsRequest, blocking handlers::list_transactions::handle => response,
                needs [], also [TransactionalId Describe];
            WriteTxnMarkers 1..=1, WriteTxnMarkersRequest, blocking handlers::write_txn_markers::handle => response,
                needs [Cluster ClusterAction or Alter];

        }
    };
}

/// One need of a row, as [`crate::needs::Need`].
#[macro_export]
macro_rules! need {
    (Cluster $operation:ident) => {
        $crate::need!(@ Cluster $operation, $crate::needs::Scope::Request, None)
    };
    (Cluster $operation:ident or $alternative:ident) => {
        $crate::need!(@ Cluster $operation, $crate::needs::Scope::Request, Some($crate::acl::AclOperation::$alternative))
    };
    ($resource:ident $operation:ident of $field:ident) => {
        $crate::need!(@ $resource $operation, $crate::needs::Scope::Request, None)
    };
    ($resource:ident $operation:ident each) => {
        $crate::need!(@ $resource $operation, $crate::needs::Scope::Each, None)
    };
    ($resource:ident $operation:ident when $form:ident) => {
        $crate::need!(@ $resource $operation, $crate::needs::Scope::Form, None)
    };
    (@ $resource:ident $operation:ident, $scope:expr, $alternative:expr) => {
        $crate::needs::Need {
            resource: $crate::acl::ResourceType::$resource,
            operation: $crate::acl::AclOperation::$operation,
            scope: $scope,
            alternative: $alternative,
        }
    };
}

/// The table's versions and needs.
macro_rules! versions_and_needs {
    ($($key:ident $min:literal ..= $max:literal, $request:ty, $run:ident $handler:path => $answer:ident,
        needs [$($resource:ident $operation:ident $($how:ident $($field:ident)?)?),*]
        $(, also [$($also_resource:ident $also_operation:ident),*])?;)*) => {
        /// The APIs and version ranges this broker implements: ApiVersions advertises exactly
        /// these.
        pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[$((ApiKey::$key, $min, $max),)*];

        /// What each API needs allowed, as the table declares it (see [`required_acls`]).
        const REQUIRED_ACLS: &[(ApiKey, &[(ResourceType, AclOperation)])] =
            &[$((ApiKey::$key, &[$((ResourceType::$resource, AclOperation::$operation)),*]),)*];

        /// What each API's row declares.
        const DECLARED: &[(ApiKey, Declared)] = &[$((ApiKey::$key, Declared {
            needs: &[$(crate::need!($resource $operation $($how $($field)?)?)),*],
            also: &[$($((ResourceType::$also_resource, AclOperation::$also_operation)),*)?],
        }),)*];
    };
}

crate::served_apis!(versions_and_needs);

/// The operations `api` needs allowed, each on the resources of its type a request names, in
/// the order they are checked (the API table's `needs`); empty for an API that is not served or
/// needs nothing.
pub fn required_acls(api: ApiKey) -> &'static [(ResourceType, AclOperation)] {
    REQUIRED_ACLS
        .iter()
        .find(|(key, _)| *key == api)
        .map_or(&[], |(_, needs)| *needs)
}

/// What `api`'s row declares; nothing for an API that is not served.
pub fn declared(api: ApiKey) -> &'static Declared {
    static NOTHING: Declared = Declared {
        needs: &[],
        also: &[],
    };
    DECLARED
        .iter()
        .find(|(key, _)| *key == api)
        .map_or(&NOTHING, |(_, declared)| declared)
}

pub fn supported_range(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}
