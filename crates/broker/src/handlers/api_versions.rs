//! ApiVersions: the APIs and versions this broker really implements, no more, and (from
//! version 3) its features ([`crate::features`]): each supported range (listed from version 4,
//! as Kafka leaves out features whose lowest level is 0 before it, KAFKA-17492) and each
//! finalized level above 0, with the epoch of the levels. From version 3 the client names its
//! software, and a name or version Kafka would not accept is answered `INVALID_REQUEST`, as
//! Kafka answers it.

use ferrolog_protocol::ApiKey;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use std::collections::BTreeMap;

use crate::authz::Asked;
use crate::features::FEATURES;
use crate::protocol::apis::SUPPORTED;
pub use crate::protocol::names_software_validly;
use crate::{Context, errors};

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
    if version >= 3 {
        asked.session().set_client_software(
            request.client_software_name.as_str(),
            request.client_software_version.as_str(),
        );
    }
    let (levels, epoch) = context.features.finalized();
    with_features(advertising(SUPPORTED), &levels, epoch, version)
}

/// `response` with the features a request of `version` is told of: the supported ranges and
/// the finalized `levels` (above 0), of `epoch`.
pub fn with_features(
    response: ApiVersionsResponse,
    levels: &BTreeMap<String, i16>,
    epoch: i64,
    version: i16,
) -> ApiVersionsResponse {
    let supported = FEATURES
        .iter()
        .filter(|feature| version >= 4 || feature.min > 0)
        .map(|feature| {
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str(feature.name))
                .with_min_version(feature.min)
                .with_max_version(feature.max)
        })
        .collect();
    let finalized = levels
        .iter()
        .filter(|(_, level)| **level > 0)
        .map(|(name, level)| {
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_string(name.clone()))
                .with_min_version_level(*level)
                .with_max_version_level(*level)
        })
        .collect();
    response
        .with_supported_features(supported)
        .with_finalized_features_epoch(epoch)
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
    fn features_are_told_as_kafka_tells_them() {
        let levels: BTreeMap<String, i16> = [
            ("group.version".to_owned(), 1),
            ("transaction.version".to_owned(), 2),
        ]
        .into();
        let at = |levels: &BTreeMap<String, i16>, version| {
            with_features(ApiVersionsResponse::default(), levels, 7, version)
        };
        let v4 = at(&levels, 4);
        let supported: Vec<(String, i16, i16)> = v4
            .supported_features
            .iter()
            .map(|f| (f.name.to_string(), f.min_version, f.max_version))
            .collect();
        assert_eq!(
            supported,
            [
                ("group.version".to_owned(), 0, 1),
                ("share.version".to_owned(), 0, 1),
                ("streams.version".to_owned(), 0, 1),
                ("transaction.version".to_owned(), 0, 2),
            ]
        );
        let finalized: Vec<(String, i16)> = v4
            .finalized_features
            .iter()
            .map(|f| (f.name.to_string(), f.max_version_level))
            .collect();
        assert_eq!(
            finalized,
            [
                ("group.version".to_owned(), 1),
                ("transaction.version".to_owned(), 2)
            ]
        );
        assert_eq!(v4.finalized_features_epoch, 7);
        // Before v4 a feature whose lowest level is 0 is not listed as supported.
        assert!(at(&levels, 3).supported_features.is_empty());
        assert_eq!(at(&levels, 3).finalized_features.len(), 2);
        // Level 0 is never listed as finalized.
        let disabled: BTreeMap<String, i16> = [("share.version".to_owned(), 0)].into();
        assert!(at(&disabled, 4).finalized_features.is_empty());
    }
}
