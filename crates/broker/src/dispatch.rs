//! Request framing and routing: the header is decoded, the body decoded for its API and version,
//! the handler run as the API table says ([`served_apis!`]; storage work crosses into the
//! blocking pool through [`crate::bridge`]), and the response encoded with the matching header
//! version.

use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use ferrolog_records::be;
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AlterConfigsRequest,
    AlterPartitionReassignmentsRequest, AlterReplicaLogDirsRequest,
    AlterUserScramCredentialsRequest, ApiKey, ApiVersionsRequest, CreateAclsRequest,
    CreatePartitionsRequest, CreateTopicsRequest, DeleteAclsRequest, DeleteGroupsRequest,
    DeleteRecordsRequest, DeleteTopicsRequest, DescribeAclsRequest, DescribeClientQuotasRequest,
    DescribeClusterRequest, DescribeConfigsRequest, DescribeGroupsRequest, DescribeLogDirsRequest,
    DescribeProducersRequest, DescribeTopicPartitionsRequest, DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest, EndTxnRequest, FetchRequest, FindCoordinatorRequest,
    HeartbeatRequest, IncrementalAlterConfigsRequest, InitProducerIdRequest, JoinGroupRequest,
    LeaveGroupRequest, ListGroupsRequest, ListOffsetsRequest, ListPartitionReassignmentsRequest,
    ListTransactionsRequest, MetadataRequest, OffsetCommitRequest, OffsetDeleteRequest,
    OffsetFetchRequest, ProduceRequest, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslHandshakeRequest, SyncGroupRequest, TxnOffsetCommitRequest, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::Context;
use crate::authz::{AclOperation, ResourceType};
use crate::error_codes::ErrorCodes;
use crate::frame_shape::CheckedFrame;
use crate::handlers;
use crate::response::{FileRegion, ResponseFrame, SplicingBuf};
use crate::session::Session;

/// A request this broker will not answer; the connection is closed.
#[derive(Debug)]
pub enum Unanswerable {
    /// It cannot be decoded, or asks for what this broker does not serve.
    Malformed(String),
    /// Serving it failed inside the broker (its blocking work panicked): only the connection
    /// that sent it closes.
    Failed(String),
}

impl Unanswerable {
    /// The error code it is counted as in the request metrics.
    fn error_code(&self) -> i16 {
        match self {
            Self::Malformed(_) => crate::errors::INVALID_REQUEST,
            Self::Failed(_) => crate::errors::UNKNOWN_SERVER_ERROR,
        }
    }
}

impl std::fmt::Display for Unanswerable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Malformed(what) => write!(f, "malformed request: {what}"),
            Self::Failed(what) => write!(f, "serving the request failed: {what}"),
        }
    }
}

/// Every API this broker serves, declared once: its key, the versions it serves, its request
/// type, how its handler runs and what it answers. The advertised list ([`SUPPORTED`], which
/// ApiVersions sends) and the router are both generated from it, so they cannot disagree.
///
/// How a handler runs:
/// * `inline`: on the connection's task; it touches no storage (`fn(header, &request)`);
/// * `blocking`: on the blocking pool through [`crate::bridge`]
///   (`fn(context, session, header, request)`);
/// * `waiting`: an async handler that may wait for other requests (a fetch for data, a group
///   for its members), crossing into storage through the bridge itself
///   (`async fn(context, session, header, request)`).
///
/// What it answers: `response` (always one), `checked` (a response, or a request Kafka would
/// fail to parse, which closes the connection), `produced` (Produce's: no response with acks=0,
/// else one that may wait for flushes, see [`Reply::AfterFlush`]), `spliced` (a response and
/// the file regions its placeholders stand for).
///
/// What it needs: the operations Kafka checks, each on the resources of its type the request
/// names (the cluster for `Cluster`), in the order Kafka checks them; the first refusal is the
/// answer. Left to the handler, and tested there: the alternatives Kafka also accepts (CREATE or
/// DELETE on the cluster for every topic of CreateTopics or DeleteTopics, WRITE on some topic
/// instead of IDEMPOTENT_WRITE for InitProducerId), and what other forms of a request need (a
/// follower's CLUSTER_ACTION for Fetch; WRITE on the transactional id for Produce's
/// transactional batches and a transactional InitProducerId; ALTER on the cluster instead of
/// CLUSTER_ACTION for WriteTxnMarkers; for the config APIs, the cluster's
/// DESCRIBE_CONFIGS or ALTER_CONFIGS for broker resources and the group's for group ones). ListGroups needs nothing and leaves out the groups the
/// principal may not describe, as Metadata, DescribeTopicPartitions and OffsetFetch leave out
/// topics when asked for all of them.
///
/// Each range lies within what the codec decodes, which excludes what Kafka 4 removed
/// (KIP-896): CreateTopics v0–1, DeleteTopics v0, DescribeLogDirs v0.
macro_rules! served_apis {
    ($($key:ident $min:literal ..= $max:literal, $request:ty, $run:ident $handler:path => $answer:ident,
        needs [$($resource:ident $operation:ident),*];)*) => {
        /// The APIs and version ranges this broker implements: ApiVersions advertises exactly
        /// these.
        pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[$((ApiKey::$key, $min, $max),)*];

        /// What each API needs allowed, as the table declares it (see [`required_acls`]).
        const REQUIRED_ACLS: &[(ApiKey, &[(ResourceType, AclOperation)])] =
            &[$((ApiKey::$key, &[$((ResourceType::$resource, AclOperation::$operation)),*]),)*];

        /// Decodes the body of a supported request, runs its handler and encodes the answer.
        async fn route(call: &Call<'_>, mut body: Bytes) -> Result<Reply, Unanswerable> {
            match call.api {
                $(ApiKey::$key => {
                    let request = decode::<$request>(call, &mut body)?;
                    let answer = run!($run, $handler, call, request);
                    answer!($answer, call, answer)
                })*
                other => Err(malformed(format!("{other:?} is not supported"))),
            }
        }
    };
}

macro_rules! run {
    (inline, $handler:path, $call:ident, $request:ident) => {
        $handler(&$call.header, &$request)
    };
    (blocking, $handler:path, $call:ident, $request:ident) => {{
        let (context, session, header) = (
            Arc::clone($call.context),
            Arc::clone($call.session),
            $call.header.clone(),
        );
        crate::bridge::blocking(move || $handler(&context, &session, &header, $request))
            .await
            .map_err(failed)?
    }};
    (waiting, $handler:path, $call:ident, $request:ident) => {
        $handler($call.context, $call.session, &$call.header, $request).await
    };
}

macro_rules! answer {
    (response, $call:ident, $answer:ident) => {
        encode($call, &$answer, Vec::new()).map(Reply::Now)
    };
    (checked, $call:ident, $answer:ident) => {
        encode($call, &$answer?, Vec::new()).map(Reply::Now)
    };
    (produced, $call:ident, $answer:ident) => {
        match $answer {
            None => Ok(Reply::Nothing),
            Some(produced) if produced.is_flushed() => {
                encode($call, &produced.into_response(), Vec::new()).map(Reply::Now)
            }
            Some(produced) => {
                let answering = Answering::of($call);
                Ok(Reply::AfterFlush(Box::pin(async move {
                    // Run once it is the oldest response held back: by then the flush for an
                    // earlier request has often covered these appends too, and then no thread
                    // is taken to find that out.
                    let response = if produced.is_flushed() {
                        produced.into_response()
                    } else {
                        crate::bridge::blocking(move || produced.flush())
                            .await
                            .map_err(failed)?
                    };
                    answering.encode(&response, Vec::new())
                })))
            }
        }
    };
    (spliced, $call:ident, $answer:ident) => {{
        let (response, regions) = $answer;
        encode($call, &response, regions).map(Reply::Now)
    }};
}

served_apis! {
    Produce 3..=12, ProduceRequest, blocking handlers::produce::handle => produced, needs [Topic Write];
    Fetch 4..=12, FetchRequest, waiting handlers::fetch::handle => spliced, needs [Topic Read];
    ListOffsets 1..=7, ListOffsetsRequest, blocking handlers::list_offsets::handle => response, needs [Topic Describe];
    Metadata 0..=12, MetadataRequest, blocking handlers::metadata::handle => response, needs [Topic Describe];
    ApiVersions 0..=4, ApiVersionsRequest, blocking handlers::api_versions::handle => response, needs [];
    CreateTopics 2..=7, CreateTopicsRequest, blocking handlers::create_topics::handle => response, needs [Topic Create];
    CreatePartitions 0..=3, CreatePartitionsRequest, blocking handlers::create_partitions::handle => response, needs [Topic Alter];
    DescribeConfigs 1..=4, DescribeConfigsRequest, blocking handlers::configs::describe => response, needs [Topic DescribeConfigs];
    AlterConfigs 0..=2, AlterConfigsRequest, blocking handlers::configs::alter => response, needs [Topic AlterConfigs];
    IncrementalAlterConfigs 0..=1, IncrementalAlterConfigsRequest, blocking handlers::configs::incremental_alter => response, needs [Topic AlterConfigs];
    DescribeCluster 0..=1, DescribeClusterRequest, blocking handlers::describe_cluster::handle => response, needs [];
    DescribeLogDirs 1..=4, DescribeLogDirsRequest, blocking handlers::describe_log_dirs::handle => response, needs [Cluster Describe];
    AlterReplicaLogDirs 1..=2, AlterReplicaLogDirsRequest, blocking handlers::alter_replica_log_dirs::handle => response, needs [Cluster Alter];
    AlterPartitionReassignments 0..=1, AlterPartitionReassignmentsRequest, blocking handlers::partition_reassignments::alter => response, needs [Cluster Alter];
    ListPartitionReassignments 0..=0, ListPartitionReassignmentsRequest, blocking handlers::partition_reassignments::list => response, needs [Cluster Describe];
    DeleteTopics 1..=5, DeleteTopicsRequest, blocking handlers::delete_topics::handle => response, needs [Topic Delete];
    DeleteRecords 0..=2, DeleteRecordsRequest, blocking handlers::delete_records::handle => response, needs [Topic Delete];
    InitProducerId 0..=5, InitProducerIdRequest, blocking handlers::init_producer_id::handle => response, needs [Cluster IdempotentWrite];
    FindCoordinator 0..=4, FindCoordinatorRequest, blocking handlers::find_coordinator::handle => response, needs [Group Describe];
    JoinGroup 0..=9, JoinGroupRequest, waiting handlers::join_group::handle => response, needs [Group Read];
    SyncGroup 0..=5, SyncGroupRequest, waiting handlers::sync_group::handle => response, needs [Group Read];
    Heartbeat 0..=4, HeartbeatRequest, blocking handlers::heartbeat::handle => response, needs [Group Read];
    LeaveGroup 0..=5, LeaveGroupRequest, blocking handlers::leave_group::handle => response, needs [Group Read];
    OffsetCommit 2..=8, OffsetCommitRequest, blocking handlers::offset_commit::handle => response, needs [Group Read, Topic Read];
    OffsetFetch 1..=8, OffsetFetchRequest, blocking handlers::offset_fetch::handle => response, needs [Group Describe, Topic Describe];
    ListGroups 0..=4, ListGroupsRequest, blocking handlers::list_groups::handle => response, needs [];
    DescribeGroups 0..=5, DescribeGroupsRequest, blocking handlers::describe_groups::handle => response, needs [Group Describe];
    DeleteGroups 0..=2, DeleteGroupsRequest, blocking handlers::delete_groups::handle => response, needs [Group Delete];
    OffsetDelete 0..=0, OffsetDeleteRequest, blocking handlers::offset_delete::handle => response, needs [Group Delete, Topic Read];
    DescribeTopicPartitions 0..=0, DescribeTopicPartitionsRequest, blocking handlers::describe_topic_partitions::handle => response, needs [Topic Describe];
    DescribeAcls 1..=3, DescribeAclsRequest, blocking handlers::acls::describe => checked, needs [Cluster Describe];
    CreateAcls 1..=3, CreateAclsRequest, blocking handlers::acls::create => checked, needs [Cluster Alter];
    DeleteAcls 1..=3, DeleteAclsRequest, blocking handlers::acls::delete => checked, needs [Cluster Alter];
    SaslHandshake 0..=1, SaslHandshakeRequest, inline handlers::sasl::handshake => response, needs [];
    SaslAuthenticate 0..=2, SaslAuthenticateRequest, inline handlers::sasl::authenticate => response, needs [];
    DescribeUserScramCredentials 0..=0, DescribeUserScramCredentialsRequest, blocking handlers::scram_credentials::describe => response, needs [Cluster Describe];
    AlterUserScramCredentials 0..=0, AlterUserScramCredentialsRequest, blocking handlers::scram_credentials::alter => response, needs [Cluster Alter];
    DescribeClientQuotas 0..=1, DescribeClientQuotasRequest, blocking handlers::client_quotas::describe => response, needs [Cluster DescribeConfigs];
    DescribeProducers 0..=0, DescribeProducersRequest, blocking handlers::describe_producers::handle => response, needs [Topic Read];
    AddPartitionsToTxn 0..=3, AddPartitionsToTxnRequest, blocking handlers::add_partitions_to_txn::handle => response, needs [TransactionalId Write, Topic Write];
    AddOffsetsToTxn 0..=4, AddOffsetsToTxnRequest, blocking handlers::add_offsets_to_txn::handle => response, needs [TransactionalId Write, Group Read];
    EndTxn 0..=5, EndTxnRequest, blocking handlers::end_txn::handle => response, needs [TransactionalId Write];
    TxnOffsetCommit 0..=5, TxnOffsetCommitRequest, blocking handlers::txn_offset_commit::handle => response, needs [TransactionalId Write, Group Read, Topic Read];
    DescribeTransactions 0..=0, DescribeTransactionsRequest, blocking handlers::describe_transactions::handle => response, needs [TransactionalId Describe];
    ListTransactions 0..=2, ListTransactionsRequest, blocking handlers::list_transactions::handle => response, needs [];
    WriteTxnMarkers 1..=1, WriteTxnMarkersRequest, blocking handlers::write_txn_markers::handle => response, needs [Cluster ClusterAction];
}

/// What a request is answered with.
pub enum Reply {
    /// Nothing (Produce with acks=0).
    Nothing,
    /// The response, to be written now.
    Now(ResponseFrame),
    /// A Produce's response, once the flushes its appends were due (`flush.messages`) have
    /// ended. The appends are done, and the flushes run when the future is first polled: the
    /// connection may read and serve its next requests meanwhile, as long as it writes the
    /// responses in order.
    AfterFlush(PendingReply),
}

/// A response still waiting for the flushes it acknowledges.
pub type PendingReply = Pin<Box<dyn Future<Output = Result<ResponseFrame, Unanswerable>> + Send>>;

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nothing => f.write_str("Nothing"),
            Self::Now(response) => f.debug_tuple("Now").field(response).finish(),
            Self::AfterFlush(_) => f.write_str("AfterFlush(..)"),
        }
    }
}

impl Reply {
    /// The response, after its flushes when it waits for any; `None` for no response.
    pub async fn into_response(self) -> Result<Option<ResponseFrame>, Unanswerable> {
        match self {
            Self::Nothing => Ok(None),
            Self::Now(response) => Ok(Some(response)),
            Self::AfterFlush(pending) => pending.await.map(Some),
        }
    }
}

/// One request being served: who asked, what, at which version.
struct Call<'a> {
    context: &'a Arc<Context>,
    header: RequestHeader,
    api: ApiKey,
    version: i16,
    session: &'a Arc<Session>,
}

/// The operations `api` needs allowed, each on the resources of its type a request names, in
/// the order they are checked (the API table's `needs`); empty for an API that is not served or
/// needs nothing.
pub fn required_acls(api: ApiKey) -> &'static [(ResourceType, AclOperation)] {
    REQUIRED_ACLS
        .iter()
        .find(|(key, _)| *key == api)
        .map_or(&[], |(_, needs)| *needs)
}

pub fn supported_range(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}

fn malformed(what: impl std::fmt::Display) -> Unanswerable {
    Unanswerable::Malformed(what.to_string())
}

fn failed(what: crate::bridge::WorkFailed) -> Unanswerable {
    Unanswerable::Failed(what.to_string())
}

fn decode<R: Decodable>(call: &Call<'_>, body: &mut Bytes) -> Result<R, Unanswerable> {
    R::decode(body, call.version)
        .map_err(|error| malformed(format!("{:?} v{} body: {error}", call.api, call.version)))
}

/// Decodes one checked request frame and returns what answers it. Each request is counted and
/// timed per API, up to its response (a produce's flushes included).
pub async fn dispatch(
    context: &Arc<Context>,
    frame: CheckedFrame,
    session: &Arc<Session>,
) -> Result<Reply, Unanswerable> {
    let frame = frame.into_bytes();
    let started = std::time::Instant::now();
    let api = frame
        .get(..2)
        .and_then(|key| ApiKey::try_from(be::i16_at(key, 0)).ok());
    let name = api.map_or_else(|| "Unknown".to_owned(), |api| format!("{api:?}"));
    let counted = move |failure: Option<&Unanswerable>| {
        crate::metrics::record_request(&name, started.elapsed().as_secs_f64() * 1000.0);
        if let Some(failure) = failure {
            crate::metrics::record_error(&name, failure.error_code());
        }
    };
    match dispatch_inner(context, frame, session).await {
        Ok(Reply::AfterFlush(pending)) => Ok(Reply::AfterFlush(Box::pin(async move {
            let response = pending.await;
            counted(response.as_ref().err());
            response
        }))),
        result => {
            counted(result.as_ref().err());
            result
        }
    }
}

async fn dispatch_inner(
    context: &Arc<Context>,
    mut frame: Bytes,
    session: &Arc<Session>,
) -> Result<Reply, Unanswerable> {
    if frame.len() < 4 {
        return Err(malformed("a request shorter than its header"));
    }
    let api_key = be::i16_at(&frame, 0);
    let api_version = be::i16_at(&frame, 2);
    let api =
        ApiKey::try_from(api_key).map_err(|_| malformed(format!("unknown API key {api_key}")))?;
    let header = RequestHeader::decode(&mut frame, api.request_header_version(api_version))
        .map_err(|error| malformed(format!("request header: {error}")))?;
    let call = Call {
        context,
        header,
        api,
        version: api_version,
        session,
    };
    let supported =
        supported_range(api).is_some_and(|(min, max)| (min..=max).contains(&api_version));
    if !supported {
        if api == ApiKey::ApiVersions {
            // Kafka answers an unknown ApiVersions version with v0 and UNSUPPORTED_VERSION, so
            // the client can retry with a version it finds in the list.
            let response = handlers::api_versions::unsupported();
            return encode(&Call { version: 0, ..call }, &response, Vec::new()).map(Reply::Now);
        }
        return Err(malformed(format!(
            "{api:?} version {api_version} is not supported"
        )));
    }
    route(&call, frame).await
}

/// Encodes a response to `call` (see [`Answering::encode`]).
fn encode<R: Encodable + ErrorCodes>(
    call: &Call<'_>,
    response: &R,
    regions: Vec<FileRegion>,
) -> Result<ResponseFrame, Unanswerable> {
    Answering::of(call).encode(response, regions)
}

/// What encoding a request's response needs of it, kept for responses that wait.
struct Answering {
    api: ApiKey,
    version: i16,
    correlation_id: i32,
}

impl Answering {
    fn of(call: &Call<'_>) -> Self {
        Self {
            api: call.api,
            version: call.version,
            correlation_id: call.header.correlation_id,
        }
    }

    /// Encodes a response whose placeholders stand for `regions`, in encoding order, and
    /// counts the errors it carries.
    fn encode<R: Encodable + ErrorCodes>(
        &self,
        response: &R,
        regions: Vec<FileRegion>,
    ) -> Result<ResponseFrame, Unanswerable> {
        let (api, version) = (self.api, self.version);
        let codes = response.error_codes();
        if codes.iter().any(|code| *code != crate::errors::NONE) {
            let name = format!("{api:?}");
            for code in codes
                .into_iter()
                .filter(|code| *code != crate::errors::NONE)
            {
                crate::metrics::record_error(&name, code);
            }
        }
        let mut out = SplicingBuf::new(regions);
        let header_version = if api == ApiKey::ApiVersions {
            0
        } else {
            api.response_header_version(version)
        };
        ResponseHeader::default()
            .with_correlation_id(self.correlation_id)
            .encode(&mut out, header_version)
            .map_err(|error| {
                Unanswerable::Failed(format!("encoding the response header: {error}"))
            })?;
        response.encode(&mut out, version).map_err(|error| {
            Unanswerable::Failed(format!("encoding the {api:?} v{version} response: {error}"))
        })?;
        out.finish().map_err(|error| {
            Unanswerable::Failed(format!("encoding the {api:?} v{version} response: {error}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_advertised_version_is_one_the_codec_decodes() {
        for (api, min, max) in SUPPORTED {
            let valid = api.valid_versions();
            assert!(
                valid.min <= *min && *max <= valid.max,
                "{api:?} {min}-{max} is advertised; the codec decodes {}-{}",
                valid.min,
                valid.max
            );
        }
    }
}
