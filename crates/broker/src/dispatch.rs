//! Request framing and routing: the header is decoded, the body decoded for its API and version,
//! the handler run as the API table says ([`crate::protocol::apis`]; storage work crosses into the
//! blocking pool through [`crate::bridge`]), and the response encoded with the matching header
//! version.

use std::sync::Arc;

use bytes::Bytes;
use ferrolog_protocol::ApiKey;
use ferrolog_protocol::messages::{
    DescribeShareGroupOffsetsRequest, ShareAcknowledgeRequest, ShareFetchRequest,
    StreamsGroupDescribeRequest, StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
};
use ferrolog_records::be;
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AlterClientQuotasRequest,
    AlterConfigsRequest, AlterPartitionReassignmentsRequest, AlterReplicaLogDirsRequest,
    AlterShareGroupOffsetsRequest, AlterUserScramCredentialsRequest, ApiVersionsRequest,
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, CreateAclsRequest,
    CreateDelegationTokenRequest, CreatePartitionsRequest, CreateTopicsRequest, DeleteAclsRequest,
    DeleteGroupsRequest, DeleteRecordsRequest, DeleteShareGroupOffsetsRequest, DeleteTopicsRequest,
    DescribeAclsRequest, DescribeClientQuotasRequest, DescribeClusterRequest,
    DescribeConfigsRequest, DescribeDelegationTokenRequest, DescribeGroupsRequest,
    DescribeLogDirsRequest, DescribeProducersRequest, DescribeQuorumRequest,
    DescribeTopicPartitionsRequest, DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest, ElectLeadersRequest, EndTxnRequest,
    ExpireDelegationTokenRequest, FetchRequest, FindCoordinatorRequest,
    GetTelemetrySubscriptionsRequest, HeartbeatRequest, IncrementalAlterConfigsRequest,
    InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest, ListConfigResourcesRequest,
    ListGroupsRequest, ListOffsetsRequest, ListPartitionReassignmentsRequest,
    ListTransactionsRequest, MetadataRequest, OffsetCommitRequest, OffsetDeleteRequest,
    OffsetFetchRequest, OffsetForLeaderEpochRequest, ProduceRequest, PushTelemetryRequest,
    RenewDelegationTokenRequest, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslHandshakeRequest, ShareGroupDescribeRequest, ShareGroupHeartbeatRequest, SyncGroupRequest,
    TxnOffsetCommitRequest, UpdateFeaturesRequest, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::Context;
use crate::authz::Asked;
use crate::error_codes::ErrorCodes;
use crate::frame_shape::CheckedFrame;
use crate::handlers;
pub use crate::protocol::Unanswerable;
use crate::protocol::apis::declared;
pub use crate::protocol::apis::{SUPPORTED, required_acls, supported_range};
use crate::protocol::resource_name::ResourceName;
use crate::protocol::throttle_time::ThrottleTime;
use crate::refuse::Refuse;
use crate::response::{FileRegion, ResponseFrame, SplicingBuf};
use crate::session::Session;
pub use ferrolog_net::reply::{PendingReply, Reply};

/// The router, from the API table ([`crate::protocol::apis`]).
macro_rules! route_table {
    ($($key:ident $min:literal ..= $max:literal, $request:ty, $run:ident $handler:path => $answer:ident,
        needs [$($resource:ident $operation:ident $($how:ident $($field:ident)?)?),*]
        $(, also [$($also:tt)*])?;)*) => {
        /// Decodes the body of a supported request, checks what its row says it needs of the
        /// whole request, runs its handler and encodes the answer.
        async fn route(call: &Call<'_>, mut body: Bytes) -> Result<Reply, Unanswerable> {
            match call.api {
                $(ApiKey::$key => {
                    let request = decode::<$request>(call, &mut body)?;
                    $(gate!(call, request, $resource $operation $($how $($field)?)?);)*
                    let answer = run!($run, $handler, call, request);
                    answer!($answer, call, answer)
                })*
                other => Err(malformed(format!("{other:?} is not supported"))),
            }
        }
    };
}

/// Checks one request-level need (those on each resource a request names are the handler's),
/// answering the request's refusal when it is refused.
macro_rules! gate {
    ($call:ident, $request:ident, $resource:ident $operation:ident $(or $alternative:ident)?) => {
        let need = ferrolog_protocol::need!($resource $operation $(or $alternative)?);
        if let Some(code) = $call.asked().request_refusal(&need, None) {
            return refuse($call, &$request, code);
        }
    };
    ($call:ident, $request:ident, $resource:ident $operation:ident of $field:ident) => {
        let need = ferrolog_protocol::need!($resource $operation of $field);
        let name = ResourceName::resource_name(&$request.$field);
        if let Some(code) = $call.asked().request_refusal(&need, Some(name)) {
            return refuse($call, &$request, code);
        }
    };
    ($call:ident, $request:ident, $resource:ident $operation:ident $how:ident $($form:ident)?) => {};
}

macro_rules! run {
    (inline, $handler:path, $call:ident, $request:ident) => {{
        let started = std::time::Instant::now();
        let answer = $handler(&$call.header, &$request);
        crate::bridge::add_spent(started.elapsed());
        answer
    }};
    (blocking, $handler:path, $call:ident, $request:ident) => {{
        let (context, session, header, api) = (
            Arc::clone($call.context),
            Arc::clone($call.session),
            $call.header.clone(),
            $call.api,
        );
        crate::bridge::blocking(move || {
            let asked = Asked::new(&context.access, &session, &header, declared(api));
            $handler(&context, &asked, $request)
        })
        .await
        .map_err(failed)?
    }};
    (waiting, $handler:path, $call:ident, $request:ident) => {
        $handler($call.context, &$call.asked(), $request).await
    };
}

macro_rules! answer {
    (response, $call:ident, $answer:ident) => {
        encode($call, &throttled($call, $answer), Vec::new()).map(Reply::Now)
    };
    (checked, $call:ident, $answer:ident) => {
        encode($call, &throttled($call, $answer?), Vec::new()).map(Reply::Now)
    };
    (produced, $call:ident, $answer:ident) => {{
        // Recorded against the client's quota once appended, as Kafka does; with acks=0 the
        // connection is muted all the same, and its time is not held against the request
        // quota (Kafka's exemption).
        let bandwidth = handlers::throttling::produced(
            $call.context,
            $call.session,
            $call.client_id(),
            $call.request_bytes,
        );
        let throttle = match &$answer {
            None => bandwidth,
            Some(_) => bandwidth.max(handlers::throttling::requested(
                $call.context,
                $call.session,
                $call.client_id(),
            )),
        };
        match $answer {
            None => Ok(Reply::Nothing),
            Some(produced) if produced.is_flushed() => {
                let response = produced.into_response().with_throttle_time_ms(throttle);
                encode($call, &response, Vec::new()).map(Reply::Now)
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
                    answering.encode(&response.with_throttle_time_ms(throttle), Vec::new())
                })))
            }
        }
    }};
    // Fetch: its handler records its quotas itself (a throttled fetch is answered empty).
    (spliced, $call:ident, $answer:ident) => {{
        let (response, regions) = $answer;
        encode($call, &response, regions).map(Reply::Now)
    }};
}

ferrolog_protocol::served_apis!(route_table);

/// One request being served: who asked, what, at which version.
struct Call<'a> {
    context: &'a Arc<Context>,
    header: RequestHeader,
    api: ApiKey,
    version: i16,
    session: &'a Arc<Session>,
    /// The request's header and body, as Kafka sizes a request for its client quotas.
    request_bytes: usize,
}

impl Call<'_> {
    /// The client id the request names (empty when it names none).
    fn client_id(&self) -> &str {
        self.header.client_id.as_deref().unwrap_or_default()
    }

    /// The request as its handler sees it, with what its row declares.
    fn asked(&self) -> Asked<'_> {
        Asked::new(
            &self.context.access,
            self.session,
            &self.header,
            declared(self.api),
        )
    }
}

/// `response` with the throttle time the request's handling time earned under the client's
/// request quota, where that is longer than the one it carries (a fetch's byte rate).
fn throttled<R: ThrottleTime>(call: &Call<'_>, mut response: R) -> R {
    let requested = handlers::throttling::requested(call.context, call.session, call.client_id());
    if requested > response.throttle_time_ms() {
        response.set_throttle_time_ms(call.version, requested);
    }
    response
}

/// Answers a request refused as a whole (see [`Refuse`]).
fn refuse<R: Refuse>(call: &Call<'_>, request: &R, code: i16) -> Result<Reply, Unanswerable>
where
    R::Response: Encodable + ErrorCodes + ThrottleTime,
{
    request.precheck(call.version)?;
    let response = throttled(call, request.refused(call.version, code));
    encode(call, &response, Vec::new()).map(Reply::Now)
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
    let request_bytes = frame.len();
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
        request_bytes,
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
    crate::bridge::accounted(route(&call, frame)).await
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
    use kafka_protocol::protocol::{Message, VersionRange};

    use super::*;

    /// The versions each row's request codec decodes.
    macro_rules! codec_versions {
        ($($key:ident $min:literal ..= $max:literal, $request:ty, $run:ident $handler:path => $answer:ident,
            needs [$($resource:ident $operation:ident $($how:ident $($field:ident)?)?),*]
            $(, also [$($also:tt)*])?;)*) => {
            fn codec_versions(api: ApiKey) -> Option<VersionRange> {
                match api {
                    $(ApiKey::$key => Some(<$request as Message>::VERSIONS),)*
                    _ => None,
                }
            }
        };
    }

    ferrolog_protocol::served_apis!(codec_versions);

    #[test]
    fn every_advertised_version_is_one_the_codec_decodes() {
        for (api, min, max) in SUPPORTED {
            let valid = codec_versions(*api).expect("a codec");
            assert!(
                valid.min <= *min && *max <= valid.max,
                "{api:?} {min}-{max} is advertised; the codec decodes {}-{}",
                valid.min,
                valid.max
            );
            let (kafka_min, kafka_max) = api.kafka_versions();
            assert!(
                kafka_min <= *min && *max <= kafka_max,
                "{api:?} {min}-{max} is advertised; Kafka defines {kafka_min}-{kafka_max}"
            );
        }
    }

    #[test]
    fn header_versions_agree_with_the_codec_for_every_key_both_know() {
        let mut compared = 0;
        for codec in kafka_protocol::messages::ApiKey::iter() {
            let Ok(api) = ApiKey::try_from(codec as i16) else {
                continue;
            };
            let (min, max) = api.kafka_versions();
            for version in min..=max.min(codec.valid_versions().max) {
                assert_eq!(
                    api.request_header_version(version),
                    codec.request_header_version(version),
                    "{api:?} v{version} request header"
                );
                if api != ApiKey::ApiVersions {
                    assert_eq!(
                        api.response_header_version(version),
                        codec.response_header_version(version),
                        "{api:?} v{version} response header"
                    );
                }
            }
            compared += 1;
        }
        assert!(compared > 60, "only {compared} keys compared");
    }
}
