//! The share coordinator over a real log manager and a manual clock: Kafka's checks, the
//! records a write makes, the state rebuilt after a restart, and pruning.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;
use std::time::Duration;

use ferrolog_storage::manager::{LogManager, ManagerConfig, TopicId};
use ferrolog_storage::{ManualClock, TopicPartition};

use super::*;

const AVAILABLE: i8 = 0;
const ACKNOWLEDGED: i8 = 2;
const ARCHIVED: i8 = 4;

fn manager(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Arc<LogManager> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    Arc::new(
        LogManager::open(
            config,
            Arc::clone(clock) as Arc<dyn ferrolog_storage::Clock>,
        )
        .unwrap(),
    )
}

fn config() -> ShareStateConfig {
    ShareStateConfig {
        partitions: 3,
        updates_per_snapshot: 2,
        ..ShareStateConfig::default()
    }
}

/// A topic `t` of two partitions, and the key of its partition 1 in group `g`.
fn topic_and_key(manager: &LogManager) -> ShareKey {
    manager
        .create_all(&[TopicPartition::new("t", 0), TopicPartition::new("t", 1)])
        .unwrap();
    ShareKey::new("g", manager.topic_id("t").unwrap(), 1)
}

fn batch(first: i64, last: i64, state: i8, count: i16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn write(start_offset: i64, batches: Vec<StateBatch>) -> StateWrite {
    StateWrite {
        state_epoch: 0,
        leader_epoch: 0,
        start_offset,
        delivery_complete_count: 0,
        batches,
    }
}

/// The records of `key`'s partition of the state topic, in order.
fn records(
    manager: &Arc<LogManager>,
    coordinator: &ShareStateCoordinator,
    key: &ShareKey,
) -> Vec<ShareValue> {
    let partition = coordinator.topic.partition_of(key);
    let mut found = Vec::new();
    ShareStateTopic::new(Arc::clone(manager), 3, 1 << 20)
        .load(|p, record| {
            if p == partition && &record.key == key {
                found.push(record.value);
            }
        })
        .unwrap();
    found
}

#[test]
fn an_uninitialized_partition_is_refused_as_kafka_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let key = topic_and_key(&manager);
    let coordinator = ShareStateCoordinator::open(Arc::clone(&manager), config()).unwrap();
    assert_eq!(
        coordinator.read(&key, 0),
        Err(StateError::Invalid(READ_UNINITIALIZED))
    );
    assert_eq!(
        coordinator.write(&key, &write(0, vec![])),
        Err(StateError::Invalid(WRITE_UNINITIALIZED))
    );
    assert_eq!(coordinator.summary(&key), None);
    let missing = ShareKey::new("g", TopicId([9; 16]), 0);
    assert_eq!(
        coordinator.initialize(&missing, 0, -1),
        Err(StateError::UnknownTopicOrPartition)
    );
    let beyond = ShareKey {
        partition: 2,
        ..key.clone()
    };
    assert_eq!(
        coordinator.initialize(&beyond, 0, -1),
        Err(StateError::UnknownTopicOrPartition)
    );
    assert_eq!(
        coordinator.initialize(&key, -1, -1),
        Err(StateError::Invalid(NEGATIVE_STATE_EPOCH))
    );
}

#[test]
fn writes_are_updates_until_a_snapshot_is_due_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let key = topic_and_key(&manager);
    let coordinator = ShareStateCoordinator::open(Arc::clone(&manager), config()).unwrap();
    coordinator.initialize(&key, 1, -1).unwrap();
    let read = coordinator.read(&key, 0).unwrap();
    assert_eq!(
        (
            read.start_offset,
            read.state_epoch,
            read.delivery_complete_count
        ),
        (-1, 1, -1)
    );

    let mut first = write(
        10,
        vec![batch(10, 19, AVAILABLE, 1), batch(12, 13, ACKNOWLEDGED, 1)],
    );
    first.state_epoch = 1;
    coordinator.write(&key, &first).unwrap();
    let mut second = write(12, vec![batch(14, 14, ARCHIVED, 5)]);
    second.state_epoch = 1;
    coordinator.write(&key, &second).unwrap();
    let mut third = write(12, vec![batch(15, 15, ACKNOWLEDGED, 2)]);
    third.state_epoch = 1;
    coordinator.write(&key, &third).unwrap();
    let expected = vec![
        batch(12, 13, ACKNOWLEDGED, 1),
        batch(14, 14, ARCHIVED, 5),
        batch(15, 15, ACKNOWLEDGED, 2),
        batch(16, 19, AVAILABLE, 1),
    ];
    let state = coordinator.read(&key, 0).unwrap();
    assert_eq!((state.start_offset, &state.batches), (12, &expected));

    // Initialize is a snapshot; two updates; then, the limit reached, the third is a snapshot.
    let written = records(&manager, &coordinator, &key);
    assert!(matches!(written[0], ShareValue::Snapshot(_)), "{written:?}");
    assert!(matches!(written[1], ShareValue::Update(_)), "{written:?}");
    assert!(matches!(written[2], ShareValue::Update(_)), "{written:?}");
    let ShareValue::Snapshot(snapshot) = &written[3] else {
        panic!("a snapshot after two updates: {written:?}");
    };
    assert_eq!((snapshot.snapshot_epoch, &snapshot.batches), (1, &expected));

    drop(coordinator);
    let reopened = ShareStateCoordinator::open(Arc::clone(&manager), config()).unwrap();
    assert_eq!(reopened.read(&key, 0).unwrap(), state);
}

#[test]
fn older_epochs_are_fenced_and_a_new_leader_epoch_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let key = topic_and_key(&manager);
    let coordinator = ShareStateCoordinator::open(Arc::clone(&manager), config()).unwrap();
    coordinator.initialize(&key, 3, 0).unwrap();
    assert_eq!(
        coordinator.initialize(&key, 2, 0),
        Err(StateError::FencedStateEpoch)
    );
    assert_eq!(
        coordinator.write(&key, &write(0, vec![])),
        Err(StateError::FencedStateEpoch)
    );
    assert_eq!(coordinator.read(&key, 4).unwrap().leader_epoch, 0);
    assert_eq!(coordinator.summary(&key).unwrap().leader_epoch, 4);
    assert_eq!(
        coordinator.read(&key, 3),
        Err(StateError::FencedLeaderEpoch)
    );
    let mut stale = write(0, vec![]);
    stale.state_epoch = 3;
    stale.leader_epoch = 3;
    assert_eq!(
        coordinator.write(&key, &stale),
        Err(StateError::FencedLeaderEpoch)
    );
}

#[test]
fn the_start_offset_never_moves_back() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let key = topic_and_key(&manager);
    let coordinator = ShareStateCoordinator::open(Arc::clone(&manager), config()).unwrap();
    coordinator.initialize(&key, 0, 50).unwrap();
    coordinator
        .write(&key, &write(40, vec![batch(45, 55, ACKNOWLEDGED, 1)]))
        .unwrap();
    let state = coordinator.read(&key, 0).unwrap();
    assert_eq!(
        (state.start_offset, state.batches),
        (50, vec![batch(50, 55, ACKNOWLEDGED, 1)])
    );
}

#[test]
fn a_deleted_state_is_gone_and_pruning_keeps_what_live_keys_need() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let key = topic_and_key(&manager);
    let other = ShareKey {
        partition: 0,
        ..key.clone()
    };
    let coordinator = ShareStateCoordinator::open(Arc::clone(&manager), config()).unwrap();
    coordinator.initialize(&key, 0, 0).unwrap();
    coordinator.initialize(&other, 0, 0).unwrap();
    for offset in 0..4 {
        coordinator
            .write(
                &key,
                &write(0, vec![batch(offset, offset, ACKNOWLEDGED, 1)]),
            )
            .unwrap();
    }
    coordinator.delete(&other).unwrap();
    assert_eq!(coordinator.summary(&other), None);
    assert_eq!(coordinator.keys_of("g"), vec![key.clone()]);
    let before = coordinator.read(&key, 0).unwrap();

    clock.advance(Duration::from_secs(301));
    coordinator.tick();
    let partition = TopicPartition::new(SHARE_STATE_TOPIC, coordinator.topic.partition_of(&key));
    let log = manager.get(&partition).unwrap();
    assert!(
        log.log_start_offset().value() > 0,
        "the front no key needs is pruned"
    );
    drop(coordinator);
    let reopened = ShareStateCoordinator::open(Arc::clone(&manager), config()).unwrap();
    assert_eq!(reopened.read(&key, 0).unwrap().batches, before.batches);
    assert_eq!(reopened.summary(&other), None);
}
