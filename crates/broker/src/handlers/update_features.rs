//! UpdateFeatures (`kafka-features upgrade|downgrade|disable`), as a single-node KRaft Kafka's
//! controller answers it: every update checked against the levels before the request, all
//! applied or none; a refusal is INVALID_UPDATE_VERSION with Kafka's message, prefixed as
//! Kafka prefixes it, and no per-feature results; success lists each feature with no error
//! (up to v1, which has results). `ValidateOnly` (v1+) checks without changing anything; v0's
//! `AllowDowngrade` is ignored, as Kafka ignores it. Turning `share.version` off ends every
//! share session, as in Kafka. Needs ALTER on the cluster.

use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::features::{SHARE_VERSION, Update, UpgradeType};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: UpdateFeaturesRequest,
) -> UpdateFeaturesResponse {
    let updates: Vec<Update> = request
        .feature_updates
        .iter()
        .map(|update| Update {
            feature: update.feature.to_string(),
            level: update.max_version_level,
            upgrade_type: UpgradeType::of(update.upgrade_type),
        })
        .collect();
    let node_id = context.manager.node_id();
    let shares_served = context.features.serves(SHARE_VERSION);
    let answer = match context
        .features
        .update(&updates, request.validate_only, node_id)
    {
        Err(refused) => UpdateFeaturesResponse::default()
            .with_error_code(refused.code)
            .with_error_message(Some(StrBytes::from_string(refused.message))),
        Ok(()) => {
            let results = if asked.version() <= 1 {
                request
                    .feature_updates
                    .into_iter()
                    .map(|update| {
                        UpdatableFeatureResult::default()
                            .with_feature(update.feature)
                            .with_error_code(errors::NONE)
                            // Kafka's controller names the code: "NONE".
                            .with_error_message(Some(StrBytes::from_static_str("NONE")))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            // Kafka's success carries no message (null, not empty).
            UpdateFeaturesResponse::default()
                .with_error_message(None)
                .with_results(results)
        }
    };
    // As Kafka's brokers do when share.version drops to 0: every share session ends and the
    // share partitions are dropped from memory, to be loaded from their state again.
    if shares_served && !context.features.serves(SHARE_VERSION) {
        context.share_sessions.close_all();
        context.shares.forget_all();
    }
    answer
}

impl crate::refuse::Refuse for UpdateFeaturesRequest {
    /// No results; Kafka's message names its internal request, this one the refusal.
    fn refused(&self, _version: i16, code: i16) -> UpdateFeaturesResponse {
        UpdateFeaturesResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_static_str(errors::CLUSTER_REFUSED)))
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::UpdateFeaturesRequest;
    use kafka_protocol::messages::update_features_request::FeatureUpdateKey;

    use crate::probes::{Probed, text};

    impl Probed for UpdateFeaturesRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            let request = UpdateFeaturesRequest::default()
                .with_validate_only(true)
                .with_feature_updates(vec![
                    FeatureUpdateKey::default()
                        .with_feature(text("group.version"))
                        .with_max_version_level(1)
                        .with_upgrade_type(1),
                ]);
            (1, request)
        }
    }
}
