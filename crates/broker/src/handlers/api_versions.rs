//! ApiVersions: the APIs and versions this broker really implements, no more.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse, RequestHeader};

use crate::dispatch::SUPPORTED;
use crate::errors;

pub fn handle(_header: &RequestHeader, _request: &ApiVersionsRequest) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        SUPPORTED
            .iter()
            .map(|(key, min, max)| {
                ApiVersion::default()
                    .with_api_key(*key as i16)
                    .with_min_version(*min)
                    .with_max_version(*max)
            })
            .collect(),
    )
}

/// The answer to an ApiVersions request of a version this broker does not know (sent as v0).
pub fn unsupported() -> ApiVersionsResponse {
    handle(&RequestHeader::default(), &ApiVersionsRequest::default())
        .with_error_code(errors::UNSUPPORTED_VERSION)
}
