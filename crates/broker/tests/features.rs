//! Feature levels: ApiVersions tells them, UpdateFeatures changes them as Kafka's controller
//! does (all or nothing, Kafka's refusals), they survive a restart, and what each turns on
//! answers UNSUPPORTED_VERSION once it is off.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::atomic::Ordering;

use common::{Broker, Client};
use ferrolog_broker::protocol::messages::{
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
    GroupId, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, UpdateFeaturesRequest,
    UpdateFeaturesResponse,
};
use kafka_protocol::protocol::StrBytes;

const UNSUPPORTED_VERSION: i16 = 35;
const INVALID_UPDATE_VERSION: i16 = 95;

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

/// The finalized levels ApiVersions v4 gives, and their epoch.
async fn finalized(client: &mut Client) -> (Vec<(String, i16)>, i64) {
    let request = ApiVersionsRequest::default()
        .with_client_software_name(text("ferrolog-test"))
        .with_client_software_version(text("1.0"));
    let answer: ApiVersionsResponse = client.send(ApiKey::ApiVersions, 4, &request).await;
    let levels = answer
        .finalized_features
        .iter()
        .map(|feature| (feature.name.to_string(), feature.max_version_level))
        .collect();
    (levels, answer.finalized_features_epoch)
}

/// UpdateFeatures v1 of (feature, level, upgrade type): (error, message, results).
async fn update(
    client: &mut Client,
    updates: &[(&str, i16, i8)],
    validate_only: bool,
) -> (i16, Option<String>, Vec<String>) {
    let request = UpdateFeaturesRequest::default()
        .with_timeout_ms(60_000)
        .with_validate_only(validate_only)
        .with_feature_updates(
            updates
                .iter()
                .map(|(feature, level, upgrade_type)| {
                    FeatureUpdateKey::default()
                        .with_feature(text(feature))
                        .with_max_version_level(*level)
                        .with_upgrade_type(*upgrade_type)
                })
                .collect(),
        );
    let answer: UpdateFeaturesResponse = client.send(ApiKey::UpdateFeatures, 1, &request).await;
    let results = answer
        .results
        .iter()
        .map(|result| format!("{}:{}", result.feature, result.error_code))
        .collect();
    (
        answer.error_code,
        answer.error_message.map(|message| message.to_string()),
        results,
    )
}

fn pairs(levels: &[(&str, i16)]) -> Vec<(String, i16)> {
    levels
        .iter()
        .map(|(name, level)| ((*name).to_owned(), *level))
        .collect()
}

#[tokio::test]
async fn levels_change_as_kafka_changes_them_and_survive_a_restart() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    let (levels, epoch) = finalized(&mut client).await;
    assert_eq!(
        levels,
        pairs(&[
            ("group.version", 1),
            ("share.version", 1),
            ("streams.version", 1),
            ("transaction.version", 2),
        ])
    );

    // A refused update changes nothing, and names what was wrong as Kafka does.
    let refused = update(
        &mut client,
        &[("share.version", 0, 2), ("transaction.version", 3, 1)],
        false,
    )
    .await;
    assert_eq!(
        refused,
        (
            INVALID_UPDATE_VERSION,
            Some(format!(
                "The update failed for all features since the following feature had an error: Invalid update version 3 for feature transaction.version. Local controller {} only supports versions 0-2",
                broker.context.manager.node_id()
            )),
            Vec::new()
        )
    );
    assert_eq!(
        update(&mut client, &[("group.version", 0, 1)], false)
            .await
            .1
            .unwrap(),
        "The update failed for all features since the following feature had an error: Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
    );
    // Validating only changes nothing either.
    let validated = update(&mut client, &[("group.version", 0, 2)], true).await;
    assert_eq!(validated, (0, None, vec!["group.version:0".to_owned()]));
    assert_eq!(finalized(&mut client).await, (levels.clone(), epoch));

    let done = update(
        &mut client,
        &[
            ("group.version", 0, 2),
            ("share.version", 0, 3),
            ("streams.version", 0, 2),
            ("transaction.version", 1, 2),
        ],
        false,
    )
    .await;
    assert_eq!(done.0, 0, "{done:?}");
    let (levels, new_epoch) = finalized(&mut client).await;
    assert_eq!(levels, pairs(&[("transaction.version", 1)]));
    assert!(new_epoch > epoch, "the epoch rises with a change");
    let coordinator_level = &broker.context.config.transactions.transaction_version;
    assert_eq!(coordinator_level.load(Ordering::Acquire), 1);

    // What the levels turned off answers UNSUPPORTED_VERSION.
    let heartbeat: ConsumerGroupHeartbeatResponse = client
        .send(
            ApiKey::ConsumerGroupHeartbeat,
            0,
            &ConsumerGroupHeartbeatRequest::default().with_group_id(GroupId(text("g"))),
        )
        .await;
    assert_eq!(heartbeat.error_code, UNSUPPORTED_VERSION);
    let described: ConsumerGroupDescribeResponse = client
        .send(
            ApiKey::ConsumerGroupDescribe,
            0,
            &ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(text("g"))]),
        )
        .await;
    assert_eq!(described.groups[0].error_code, UNSUPPORTED_VERSION);
    let share: ShareGroupHeartbeatResponse = client
        .send(
            ApiKey::ShareGroupHeartbeat,
            1,
            &ShareGroupHeartbeatRequest::default()
                .with_group_id(GroupId(text("s")))
                .with_member_id(text("m")),
        )
        .await;
    assert_eq!(share.error_code, UNSUPPORTED_VERSION);
    let streams: StreamsGroupHeartbeatResponse = client
        .send(
            ferrolog_broker::protocol::ApiKey::StreamsGroupHeartbeat,
            0,
            &StreamsGroupHeartbeatRequest {
                group_id: "st".to_owned(),
                ..StreamsGroupHeartbeatRequest::default()
            },
        )
        .await;
    assert_eq!(streams.error_code, UNSUPPORTED_VERSION);

    // Kept across a restart.
    drop(client);
    drop(broker);
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    assert_eq!(
        finalized(&mut client).await.0,
        pairs(&[("transaction.version", 1)])
    );
    let coordinator_level = &broker.context.config.transactions.transaction_version;
    assert_eq!(coordinator_level.load(Ordering::Acquire), 1);
    // As Kafka's controller keys updates by name, the last of a name is the one applied.
    let upgraded = update(
        &mut client,
        &[("group.version", 5, 1), ("group.version", 1, 1)],
        false,
    )
    .await;
    assert_eq!(upgraded.0, 0, "{upgraded:?}");
    assert_eq!(
        finalized(&mut client).await.0,
        pairs(&[("group.version", 1), ("transaction.version", 1)])
    );
}
