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
