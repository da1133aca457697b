//! ApiVersions: the APIs and versions this broker really implements, no more. From version 3
//! the client names its software, and a name or version Kafka would not accept is answered
//! `INVALID_REQUEST`, as Kafka answers it.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader};

use crate::dispatch::SUPPORTED;
use crate::errors;

pub fn handle(header: &RequestHeader, request: &ApiVersionsRequest) -> ApiVersionsResponse {
    if !names_software_validly(request, header.request_api_version) {
        return ApiVersionsResponse::default().with_error_code(errors::INVALID_REQUEST);
    }
    advertising(SUPPORTED)
}

/// Whether a request of `version` names the client's software as Kafka requires from version 3:
/// name and version each letters, digits, `-` and `.`, beginning and ending with a letter or a
/// digit.
pub fn names_software_validly(request: &ApiVersionsRequest, version: i16) -> bool {
    version < 3
        || (is_software_label(&request.client_software_name)
            && is_software_label(&request.client_software_version))
}

fn is_software_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge = |byte: &u8| byte.is_ascii_alphanumeric();
    let inner = |byte: &u8| byte.is_ascii_alphanumeric() || *byte == b'-' || *byte == b'.';
    match bytes {
        [] => false,
        [only] => edge(only),
        [first, middle @ .., last] => edge(first) && edge(last) && middle.iter().all(inner),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::StrBytes;

    fn request(name: &str, version: &str) -> ApiVersionsRequest {
        ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_string(name.to_owned()))
            .with_client_software_version(StrBytes::from_string(version.to_owned()))
    }

    #[test]
    fn software_names_are_checked_from_version_3_as_kafka_checks_them() {
        for (name, version) in [
            ("apache-kafka-java", "4.4.0"),
            ("librdkafka", "2.12.1"),
            ("a", "1"),
            ("kgo", "v1.18.0-rc.1"),
        ] {
            assert!(
                names_software_validly(&request(name, version), 3),
                "{name} {version}"
            );
        }
        for (name, version) in [
            ("", "1.0"),
            ("java", ""),
            ("-java", "1.0"),
            ("java.", "1.0"),
            ("ja va", "1.0"),
            ("java", "1.0_beta"),
            ("jäva", "1.0"),
        ] {
            assert!(
                !names_software_validly(&request(name, version), 3),
                "{name:?} {version:?}"
            );
            assert!(names_software_validly(&request(name, version), 2));
        }
        let answer = handle(
            &RequestHeader::default().with_request_api_version(3),
            &request("", ""),
        );
        assert_eq!(answer.error_code, errors::INVALID_REQUEST);
        assert!(answer.api_keys.is_empty());
    }
}
