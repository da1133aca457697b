//! ApiVersions: the APIs and versions this broker really implements, no more, and (from
//! version 3) the one feature clients act on, `transaction.version`: supported 0–2 (listed from
//! version 4, as Kafka leaves out features whose lowest level is 0 before it, KAFKA-17492) and
//! finalized at `ferrolog.transaction.version` (2 by default, as a new Kafka 4.4 cluster; a
//! level of 0 is not listed, as in Kafka). From version 3 the client names its software, and a
//! name or version Kafka would not accept is answered `INVALID_REQUEST`, as Kafka answers it.

use ferrolog_protocol::ApiKey;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::protocol::apis::SUPPORTED;
pub use crate::protocol::names_software_validly;
use crate::{Context, errors};

/// The feature naming the transaction protocol clients may use (KIP-890).
const TRANSACTION_VERSION: &str = "transaction.version";

/// The highest `transaction.version` this broker serves.
pub const MAX_TRANSACTION_VERSION: i16 = 2;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ApiVersionsRequest,
) -> ApiVersionsResponse {
    let version = asked.version();
    if !names_software_validly(&request, version) {
        return ApiVersionsResponse::default().with_error_code(errors::INVALID_REQUEST);
    }
    with_features(
        advertising(SUPPORTED),
        context.config.transactions.transaction_version,
        version,
    )
}

/// The finalized features' epoch: the time this process started, in milliseconds. Clients keep
/// the features of the highest epoch they have seen, so a restart with another
/// `ferrolog.transaction.version` must tell them a higher one (Kafka's grows with its metadata
/// log).
fn features_epoch() -> i64 {
    static STARTED: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *STARTED.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as i64)
    })
}

/// `response` with the features a request of `version` is told of, `transaction_version` the
/// finalized level.
pub fn with_features(
    response: ApiVersionsResponse,
    transaction_version: i16,
    version: i16,
) -> ApiVersionsResponse {
    let name = || StrBytes::from_static_str(TRANSACTION_VERSION);
    let supported = if version >= 4 {
        vec![
            SupportedFeatureKey::default()
                .with_name(name())
                .with_min_version(0)
                .with_max_version(MAX_TRANSACTION_VERSION),
        ]
    } else {
        Vec::new()
    };
    let finalized = if transaction_version > 0 {
        vec![
            FinalizedFeatureKey::default()
                .with_name(name())
                .with_min_version_level(transaction_version)
                .with_max_version_level(transaction_version),
        ]
    } else {
        Vec::new()
    };
    response
        .with_supported_features(supported)
        .with_finalized_features_epoch(features_epoch())
        .with_finalized_features(finalized)
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
    advertising(SUPPORTED).with_error_code(errors::UNSUPPORTED_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn transaction_version_is_told_as_kafka_tells_it() {
        let at = |level, version| with_features(ApiVersionsResponse::default(), level, version);
        let v4 = at(2, 4);
        assert_eq!(v4.supported_features.len(), 1);
        assert_eq!(
            (
                v4.supported_features[0].min_version,
                v4.supported_features[0].max_version
            ),
            (0, 2)
        );
        assert_eq!(v4.finalized_features[0].max_version_level, 2);
        // Before v4 a feature whose lowest level is 0 is not listed as supported.
        assert!(at(2, 3).supported_features.is_empty());
        assert_eq!(at(2, 3).finalized_features.len(), 1);
        // Level 0 is never listed as finalized.
        assert!(at(0, 4).finalized_features.is_empty());
    }
}
