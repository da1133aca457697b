//! ApiVersions: the APIs and versions this broker really implements, no more.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader};

use crate::dispatch::SUPPORTED;
use crate::errors;

pub fn handle(_header: &RequestHeader, _request: &ApiVersionsRequest) -> ApiVersionsResponse {
    advertising(SUPPORTED)
}

/// An ApiVersions answer listing `apis` as (key, lowest version, highest version).
pub fn advertising(apis: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        apis.iter()
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
