//! Request framing and routing: the header is decoded, the body decoded for its API and version,
//! the handler run on the blocking pool (the one place the broker crosses into synchronous
//! storage code), and the response encoded with the matching header version.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    AlterConfigsRequest, ApiKey, ApiVersionsRequest, CreatePartitionsRequest, CreateTopicsRequest,
    DeleteGroupsRequest, DeleteRecordsRequest, DeleteTopicsRequest, DescribeClusterRequest,
    DescribeConfigsRequest, DescribeGroupsRequest, DescribeLogDirsRequest,
    DescribeTopicPartitionsRequest, FetchRequest, FindCoordinatorRequest, HeartbeatRequest,
    IncrementalAlterConfigsRequest, InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetFetchRequest, ProduceRequest, RequestHeader, ResponseHeader,
    SyncGroupRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::Context;
use crate::error_codes::ErrorCodes;
use crate::frame_shape::CheckedFrame;
use crate::handlers;
use crate::response::{FileRegion, ResponseFrame, SplicingBuf};

/// A request this broker will not answer; the connection is closed.
#[derive(Debug)]
pub struct MalformedRequest(pub String);

impl std::fmt::Display for MalformedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The APIs and version ranges this broker implements: ApiVersions advertises exactly these.
/// Each lies within what the codec decodes, which excludes what Kafka 4 removed (KIP-896):
/// CreateTopics v0–1, DeleteTopics v0, DescribeLogDirs v0.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::DeleteTopics, 1, 5),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 8),
    (ApiKey::ListGroups, 0, 4),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeTopicPartitions, 0, 0),
];

pub fn supported_range(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}

fn malformed(what: impl std::fmt::Display) -> MalformedRequest {
    MalformedRequest(what.to_string())
}

/// Decodes one checked request frame and returns the response frame, or `None` when no
/// response is due (produce with acks=0). Each request is counted and timed per API.
pub async fn dispatch(
    context: &Arc<Context>,
    frame: CheckedFrame,
    peer: SocketAddr,
) -> Result<Option<ResponseFrame>, MalformedRequest> {
    let frame = frame.into_bytes();
    let started = std::time::Instant::now();
    let api = frame
        .get(..2)
        .and_then(|key| ApiKey::try_from(i16::from_be_bytes([key[0], key[1]])).ok());
    let result = dispatch_inner(context, frame, peer).await;
    let name = api.map_or_else(|| "Unknown".to_owned(), |api| format!("{api:?}"));
    crate::metrics::record_request(&name, started.elapsed().as_secs_f64() * 1000.0);
    if result.is_err() {
        crate::metrics::record_error(&name, crate::errors::INVALID_REQUEST);
    }
    result
}

async fn dispatch_inner(
    context: &Arc<Context>,
    mut frame: Bytes,
    peer: SocketAddr,
) -> Result<Option<ResponseFrame>, MalformedRequest> {
    if frame.len() < 4 {
        return Err(malformed("a request shorter than its header"));
    }
    let api_key = i16::from_be_bytes([frame[0], frame[1]]);
    let api_version = i16::from_be_bytes([frame[2], frame[3]]);
    let api =
        ApiKey::try_from(api_key).map_err(|_| malformed(format!("unknown API key {api_key}")))?;
    let header = RequestHeader::decode(&mut frame, api.request_header_version(api_version))
        .map_err(|error| malformed(format!("request header: {error}")))?;
    let supported =
        supported_range(api).is_some_and(|(min, max)| (min..=max).contains(&api_version));
    if !supported {
        if api == ApiKey::ApiVersions {
            // Kafka answers an unknown ApiVersions version with v0 and UNSUPPORTED_VERSION, so
            // the client can retry with a version it finds in the list.
            let response = handlers::api_versions::unsupported();
            return encode(&header, api, 0, &response).map(Some);
        }
        return Err(malformed(format!(
            "{api:?} version {api_version} is not supported"
        )));
    }
    macro_rules! blocking {
        ($request:ty, $handler:path) => {{
            let request = <$request>::decode(&mut frame, api_version)
                .map_err(|error| malformed(format!("{api:?} v{api_version} body: {error}")))?;
            let context = Arc::clone(context);
            let header_copy = header.clone();
            tokio::task::spawn_blocking(move || $handler(&context, &header_copy, request))
                .await
                .map_err(|error| malformed(format!("handler failed: {error}")))?
        }};
    }
    match api {
        ApiKey::ApiVersions => {
            let request = ApiVersionsRequest::decode(&mut frame, api_version)
                .map_err(|error| malformed(format!("ApiVersions body: {error}")))?;
            let response = handlers::api_versions::handle(&header, &request);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::Metadata => {
            let response = blocking!(MetadataRequest, handlers::metadata::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::Produce => {
            let request = ProduceRequest::decode(&mut frame, api_version)
                .map_err(|error| malformed(format!("Produce body: {error}")))?;
            let acks = request.acks;
            let context_for_handler = Arc::clone(context);
            let header_copy = header.clone();
            let response = tokio::task::spawn_blocking(move || {
                handlers::produce::handle(&context_for_handler, &header_copy, request)
            })
            .await
            .map_err(|error| malformed(format!("handler failed: {error}")))?;
            if acks == 0 {
                return Ok(None);
            }
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::Fetch => {
            let request = FetchRequest::decode(&mut frame, api_version)
                .map_err(|error| malformed(format!("Fetch body: {error}")))?;
            let (response, regions) = handlers::fetch::handle(context, &header, request).await;
            encode_spliced(&header, api, api_version, &response, regions).map(Some)
        }
        ApiKey::ListOffsets => {
            let response = blocking!(ListOffsetsRequest, handlers::list_offsets::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::InitProducerId => {
            let response = blocking!(InitProducerIdRequest, handlers::init_producer_id::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::CreateTopics => {
            let response = blocking!(CreateTopicsRequest, handlers::create_topics::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::DeleteTopics => {
            let response = blocking!(DeleteTopicsRequest, handlers::delete_topics::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::DeleteRecords => {
            let response = blocking!(DeleteRecordsRequest, handlers::delete_records::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::CreatePartitions => {
            let response = blocking!(CreatePartitionsRequest, handlers::create_partitions::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::DescribeConfigs => {
            let response = blocking!(DescribeConfigsRequest, handlers::configs::describe);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::AlterConfigs => {
            let response = blocking!(AlterConfigsRequest, handlers::configs::alter);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::IncrementalAlterConfigs => {
            let response = blocking!(
                IncrementalAlterConfigsRequest,
                handlers::configs::incremental_alter
            );
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::DescribeTopicPartitions => {
            let response = blocking!(
                DescribeTopicPartitionsRequest,
                handlers::describe_topic_partitions::handle
            );
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::DescribeCluster => {
            let response = blocking!(DescribeClusterRequest, handlers::describe_cluster::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::DescribeLogDirs => {
            let response = blocking!(DescribeLogDirsRequest, handlers::describe_log_dirs::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::FindCoordinator => {
            let response = blocking!(FindCoordinatorRequest, handlers::find_coordinator::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::JoinGroup => {
            let request = JoinGroupRequest::decode(&mut frame, api_version)
                .map_err(|error| malformed(format!("JoinGroup body: {error}")))?;
            let response = handlers::join_group::handle(context, &header, request, peer).await;
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::SyncGroup => {
            let request = SyncGroupRequest::decode(&mut frame, api_version)
                .map_err(|error| malformed(format!("SyncGroup body: {error}")))?;
            let response = handlers::sync_group::handle(context, &header, request).await;
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::Heartbeat => {
            let response = blocking!(HeartbeatRequest, handlers::heartbeat::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::LeaveGroup => {
            let response = blocking!(LeaveGroupRequest, handlers::leave_group::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::OffsetCommit => {
            let response = blocking!(OffsetCommitRequest, handlers::offset_commit::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::OffsetFetch => {
            let response = blocking!(OffsetFetchRequest, handlers::offset_fetch::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::ListGroups => {
            let response = blocking!(ListGroupsRequest, handlers::list_groups::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::DescribeGroups => {
            let response = blocking!(DescribeGroupsRequest, handlers::describe_groups::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::DeleteGroups => {
            let response = blocking!(DeleteGroupsRequest, handlers::delete_groups::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        ApiKey::OffsetDelete => {
            let response = blocking!(OffsetDeleteRequest, handlers::offset_delete::handle);
            encode(&header, api, api_version, &response).map(Some)
        }
        other => Err(malformed(format!("{other:?} is not supported"))),
    }
}

fn encode<R: Encodable + ErrorCodes>(
    header: &RequestHeader,
    api: ApiKey,
    version: i16,
    response: &R,
) -> Result<ResponseFrame, MalformedRequest> {
    encode_spliced(header, api, version, response, Vec::new())
}

/// Encodes a response whose placeholders stand for `regions`, in encoding order, and counts
/// the errors it carries.
fn encode_spliced<R: Encodable + ErrorCodes>(
    header: &RequestHeader,
    api: ApiKey,
    version: i16,
    response: &R,
    regions: Vec<FileRegion>,
) -> Result<ResponseFrame, MalformedRequest> {
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
        .with_correlation_id(header.correlation_id)
        .encode(&mut out, header_version)
        .map_err(|error| malformed(format!("encoding the response header: {error}")))?;
    response
        .encode(&mut out, version)
        .map_err(|error| malformed(format!("encoding the {api:?} v{version} response: {error}")))?;
    out.finish()
        .map_err(|error| malformed(format!("encoding the {api:?} v{version} response: {error}")))
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
