//! Share groups without a network, on a manual clock: a member joins, records are acquired,
//! some accepted, some released, and the broker is reopened over the same data directory —
//! what was accepted is never delivered again, what was released comes back with its delivery
//! count, what was acquired and not acknowledged comes back as never delivered, as Kafka keeps
//! acquisitions in memory only; and a lapsed lock gives records back.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use ferrolog_broker::group::group_configs::OffsetReset;
use ferrolog_broker::group::share::ShareHeartbeat;
use ferrolog_broker::group::{GroupConfig, GroupCoordinator};
use ferrolog_broker::share_partitions::{FetchAsk, SharePartitions, ShareSettings};
use ferrolog_coordinator::share_partition::{AckBatch, AcquireMode, Limits};
use ferrolog_coordinator::share_state::ShareKey;
use ferrolog_records::BatchBuilder;
use ferrolog_storage::log::{AppendOrigin, FlushMode};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::producer::NoTxnCoordinator;
use ferrolog_storage::{ManualClock, TopicPartition};

fn config() -> GroupConfig {
    let mut config = GroupConfig {
        offsets_topic_partitions: 3,
        ..GroupConfig::default()
    };
    config.share.state.partitions = 3;
    config
}

fn settings() -> ShareSettings {
    ShareSettings {
        limits: Limits::default(),
        read_committed: false,
        offset_reset: OffsetReset::Earliest,
    }
}

/// Ten batches of ten records each into `jobs`-0.
fn produce(manager: &LogManager) {
    let log = manager.get(&TopicPartition::new("jobs", 0)).unwrap();
    for batch in 0..10 {
        let mut builder = BatchBuilder::new(0);
        for record in 0..10 {
            let value = format!("r{}", batch * 10 + record);
            builder
                .append(1_000, None, Some(value.as_bytes()), &[])
                .unwrap();
        }
        let _appended = log
            .append(
                builder.build().unwrap(),
                AppendOrigin::Client,
                &NoTxnCoordinator,
                FlushMode::Now,
            )
            .unwrap();
    }
}

fn join(groups: &GroupCoordinator, member: &str) {
    let answer = groups.share_heartbeat(ShareHeartbeat {
        group_id: "queue".to_owned(),
        member_id: member.to_owned(),
        member_epoch: 0,
        topic_names: Some(vec!["jobs".to_owned()]),
        client_id: "c".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        ..ShareHeartbeat::default()
    });
    assert_eq!(answer.error, 0, "{answer:?}");
}

/// Acquires up to `max` records for `member`: the ranges and their delivery counts.
fn fetch(
    shares: &SharePartitions,
    groups: &GroupCoordinator,
    manager: &LogManager,
    key: &ShareKey,
    member: &str,
    max: i32,
    now: i64,
) -> Vec<(i64, i64, i16)> {
    let log = manager.get(&TopicPartition::new("jobs", 0)).unwrap();
    let ask = FetchAsk {
        member,
        mode: AcquireMode::RecordLimit,
        batch_size: 500,
        max_records: max,
        max_bytes: 1 << 20,
        now_ms: now,
    };
    let fetched = shares.fetch(groups.share_state(), key, &log, settings(), ask);
    assert_eq!(fetched.error, 0);
    fetched
        .acquired
        .iter()
        .map(|a| (a.first, a.last, a.count))
        .collect()
}

fn ack(first: i64, last: i64, kind: i8) -> AckBatch {
    AckBatch {
        first,
        last,
        types: vec![kind],
    }
}

#[test]
fn accepted_records_stay_done_and_the_rest_comes_back_after_a_reopen() {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock.clone(), Some(("jobs", 1)));
    produce(&manager);
    let groups = GroupCoordinator::open(Arc::clone(&manager), config()).unwrap();
    join(&groups, "m1");
    let key = ShareKey::new("queue", manager.topic_id("jobs").unwrap(), 0);
    let shares = SharePartitions::default();
    let now = ferrolog_storage::Clock::now_ms(clock.as_ref());
    assert_eq!(
        fetch(&shares, &groups, &manager, &key, "m1", 30, now),
        vec![(0, 29, 1)]
    );
    // Accept 0-9, release 10-19, keep 20-29 acquired.
    assert_eq!(
        shares.acknowledge(
            groups.share_state(),
            &key,
            "m1",
            &[ack(0, 9, 1), ack(10, 19, 2)],
            now
        ),
        0
    );
    assert_eq!(groups.share_state().summary(&key).unwrap().start_offset, 10);
    // Another member cannot acknowledge what m1 holds, and nothing of its request is applied.
    assert_eq!(
        shares.acknowledge(groups.share_state(), &key, "m2", &[ack(20, 29, 1)], now),
        ferrolog_broker::errors::INVALID_RECORD_STATE
    );

    drop((shares, groups));
    let groups = GroupCoordinator::open(Arc::clone(&manager), config()).unwrap();
    let shares = SharePartitions::default();
    let got = fetch(&shares, &groups, &manager, &key, "m2", 100, now);
    // 10-19 released once: count 2; 20-29 acquired but never persisted: as if never delivered.
    assert_eq!(got, vec![(10, 19, 2), (20, 99, 1)]);

    // A lapsed lock gives them back, the count kept.
    let later = now + Duration::from_secs(31).as_millis() as i64;
    shares.expire_locks(groups.share_state(), later);
    assert_eq!(
        fetch(&shares, &groups, &manager, &key, "m3", 5, later),
        vec![(10, 14, 3)]
    );
}

mod over_the_network {
    //! A share consumer's connection closing ends its session and releases the records it
    //! held: another member gets them at once, their delivery count kept.

    use bytes::Bytes;
    use ferrolog_broker::protocol::ApiKey;
    use ferrolog_protocol::messages::share_fetch_request::{FetchPartition, FetchTopic};
    use ferrolog_protocol::messages::{ShareFetchRequest, ShareFetchResponse};
    use kafka_protocol::messages::{
        GroupId, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;

    use super::common::{Broker, Client};

    async fn join(client: &mut Client, member: &str) {
        let request = ShareGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("queue")))
            .with_member_id(StrBytes::from_string(member.to_owned()))
            .with_member_epoch(0)
            .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_static_str("jobs"))]));
        let answer: ShareGroupHeartbeatResponse =
            client.send(ApiKey::ShareGroupHeartbeat, 1, &request).await;
        assert_eq!(answer.error_code, 0, "{answer:?}");
    }

    /// A first ShareFetch of `member`: the ranges acquired, with their delivery counts.
    async fn fetch(
        client: &mut Client,
        member: &str,
        topic_id: uuid::Uuid,
    ) -> Vec<(i64, i64, i16)> {
        let request = ShareFetchRequest {
            group_id: Some("queue".to_owned()),
            member_id: Some(member.to_owned()),
            share_session_epoch: 0,
            max_wait_ms: 0,
            max_bytes: 1 << 20,
            max_records: 100,
            batch_size: 100,
            topics: vec![FetchTopic {
                topic_id,
                partitions: vec![FetchPartition {
                    partition_index: 0,
                    ..FetchPartition::default()
                }],
            }],
            ..ShareFetchRequest::default()
        };
        let answer: ShareFetchResponse = client.send(ApiKey::ShareFetch, 2, &request).await;
        assert_eq!(answer.error_code, 0, "{answer:?}");
        answer.responses[0].partitions[0]
            .acquired_records
            .iter()
            .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
            .collect()
    }

    #[tokio::test]
    async fn a_closed_connection_releases_what_its_member_held() {
        let dir = tempfile::tempdir().unwrap();
        let broker = Broker::start(dir.path()).await;
        let mut admin = broker.client().await;
        assert_eq!(admin.create_topic("jobs", 1, &[]).await.error_code, 0);
        let mut builder = ferrolog_records::BatchBuilder::new(0);
        for n in 0..5 {
            builder
                .append(1_000, None, Some(format!("r{n}").as_bytes()), &[])
                .unwrap();
        }
        // The group starts at the log start (by default it would start after these records).
        let set = kafka_protocol::messages::IncrementalAlterConfigsRequest::default().with_resources(vec![
            kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(StrBytes::from_static_str("queue"))
                .with_configs(vec![
                    kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(StrBytes::from_static_str("share.auto.offset.reset"))
                        .with_config_operation(0)
                        .with_value(Some(StrBytes::from_static_str("earliest"))),
                ]),
        ]);
        let altered: kafka_protocol::messages::IncrementalAlterConfigsResponse =
            admin.send(ApiKey::IncrementalAlterConfigs, 1, &set).await;
        assert_eq!(altered.responses[0].error_code, 0, "{altered:?}");
        assert_eq!(
            admin
                .produce("jobs", 0, Bytes::from(builder.build().unwrap()))
                .await
                .error_code,
            0
        );
        let topic_id = uuid::Uuid::from_bytes(broker.context.manager.topic_id("jobs").unwrap().0);

        let mut first = broker.client().await;
        join(&mut first, "m1").await;
        assert_eq!(fetch(&mut first, "m1", topic_id).await, vec![(0, 4, 1)]);
        let mut second = broker.client().await;
        join(&mut second, "m2").await;
        assert_eq!(
            fetch(&mut second, "m2", topic_id).await,
            vec![],
            "m1 holds them"
        );
        drop(first);
        let mut got = Vec::new();
        for _ in 0..100 {
            let mut again = broker.client().await;
            got = fetch(&mut again, "m2", topic_id).await;
            if !got.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(got, vec![(0, 4, 2)]);
    }
}
