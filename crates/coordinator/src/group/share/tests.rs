//! Share group heartbeats over a real log manager and a manual clock: Kafka's checks and epoch
//! rules, the first join answered with its partitions (the share state initialized within the
//! heartbeat), partitions shared between members, leaving and session expiry, and the group
//! rebuilt from its records.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;
use std::time::Duration;

use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{ManualClock, TopicPartition};

use super::*;
use crate::errors;
use crate::group::{GroupConfig, GroupCoordinator};
use crate::share_state::ShareKey;

struct Fixture {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    manager: Arc<LogManager>,
    groups: GroupCoordinator,
}

fn fixture(topic_partitions: i32) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let config = ManagerConfig {
        log_dirs: vec![dir.path().to_path_buf()],
        ..ManagerConfig::default()
    };
    let manager = Arc::new(
        LogManager::open(
            config,
            Arc::clone(&clock) as Arc<dyn ferrolog_storage::Clock>,
        )
        .unwrap(),
    );
    let all: Vec<TopicPartition> = (0..topic_partitions)
        .map(|p| TopicPartition::new("t", p))
        .collect();
    manager.create_all(&all).unwrap();
    let groups = GroupCoordinator::open(Arc::clone(&manager), config_for_tests()).unwrap();
    Fixture {
        _dir: dir,
        clock,
        manager,
        groups,
    }
}

fn config_for_tests() -> GroupConfig {
    let mut config = GroupConfig {
        offsets_topic_partitions: 3,
        ..GroupConfig::default()
    };
    config.share.state.partitions = 3;
    config
}

fn heartbeat(member: &str, epoch: i32, topics: Option<&[&str]>) -> ShareHeartbeat {
    ShareHeartbeat {
        group_id: "g".to_owned(),
        member_id: member.to_owned(),
        member_epoch: epoch,
        rack_id: None,
        topic_names: topics.map(|names| names.iter().map(|n| (*n).to_owned()).collect()),
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
    }
}

fn partitions_of(answer: &ShareAnswer) -> Vec<i32> {
    answer
        .assignment
        .as_ref()
        .map(|a| a.values().flatten().copied().collect())
        .unwrap_or_default()
}

#[test]
fn a_first_member_gets_every_partition_at_once_with_its_state_initialized() {
    let f = fixture(3);
    let answer = f.groups.share_heartbeat(heartbeat("m1", 0, Some(&["t"])));
    assert_eq!(answer.error, 0, "{answer:?}");
    assert_eq!(
        answer.member_epoch, 2,
        "a group starts at epoch 1 and the join bumps it"
    );
    assert_eq!(answer.heartbeat_interval_ms, 5_000);
    assert_eq!(partitions_of(&answer), vec![0, 1, 2]);
    let topic_id = f.manager.topic_id("t").unwrap();
    for partition in 0..3 {
        let summary = f
            .groups
            .share_state()
            .summary(&ShareKey::new("g", topic_id, partition))
            .unwrap();
        assert_eq!((summary.start_offset, summary.state_epoch), (-1, 2));
    }
    let again = f.groups.share_heartbeat(heartbeat("m1", 2, None));
    assert_eq!(
        (again.error, again.member_epoch, again.assignment),
        (0, 2, None)
    );
}

#[test]
fn members_share_partitions_when_there_are_more_members() {
    let f = fixture(1);
    let first = f.groups.share_heartbeat(heartbeat("m1", 0, Some(&["t"])));
    f.clock.advance(Duration::from_secs(2));
    let second = f.groups.share_heartbeat(heartbeat("m2", 0, Some(&["t"])));
    assert_eq!(partitions_of(&second), vec![0]);
    assert_eq!(second.member_epoch, 3);
    let first_again = f
        .groups
        .share_heartbeat(heartbeat("m1", first.member_epoch, None));
    assert_eq!(first_again.member_epoch, 3);
    let described = f.groups.describe_share_group("g").unwrap();
    assert_eq!(described.state, "Stable");
    assert_eq!((described.epoch, described.assignment_epoch), (3, 3));
    assert!(
        described
            .members
            .iter()
            .all(|m| m.assigned.values().flatten().count() == 1)
    );
}

#[test]
fn kafka_s_checks_and_epoch_rules() {
    let f = fixture(1);
    let refused = |h: ShareHeartbeat| f.groups.share_heartbeat(h);
    let empty = refused(heartbeat("m1", 0, Some(&[])));
    assert_eq!(
        (empty.error, empty.message.as_deref()),
        (
            errors::INVALID_REQUEST,
            Some("SubscribedTopicNames must be set in first request.")
        )
    );
    assert_eq!(
        refused(heartbeat("m1", -2, None)).error,
        errors::INVALID_REQUEST
    );
    let unknown_group = refused(heartbeat("m1", 1, None));
    assert_eq!(
        (unknown_group.error, unknown_group.message.as_deref()),
        (errors::GROUP_ID_NOT_FOUND, Some("Share group g not found."))
    );
    let joined = refused(heartbeat("m1", 0, Some(&["t"])));
    assert_eq!(
        refused(heartbeat("m9", 1, None)).error,
        errors::UNKNOWN_MEMBER_ID
    );
    let ahead = refused(heartbeat("m1", joined.member_epoch + 1, None));
    assert_eq!(ahead.error, errors::FENCED_MEMBER_EPOCH);
    assert!(ahead.message.unwrap().contains("greater member epoch"));
    // A lost answer is tolerated: the previous epoch is accepted.
    f.clock.advance(Duration::from_secs(2));
    let second = refused(heartbeat("m2", 0, Some(&["t"])));
    assert_eq!(second.error, 0);
    let m1 = refused(heartbeat("m1", joined.member_epoch, None));
    assert_eq!((m1.error, m1.member_epoch), (0, 3));
    assert_eq!(refused(heartbeat("m1", joined.member_epoch, None)).error, 0);
    assert_eq!(
        refused(heartbeat("m1", 1, None)).error,
        errors::FENCED_MEMBER_EPOCH
    );
}

#[test]
fn the_group_is_full_at_its_max_size() {
    let mut f = fixture(1);
    drop(f.groups);
    let mut config = config_for_tests();
    config.share.max_size = 1;
    f.groups = GroupCoordinator::open(Arc::clone(&f.manager), config).unwrap();
    assert_eq!(
        f.groups
            .share_heartbeat(heartbeat("m1", 0, Some(&["t"])))
            .error,
        0
    );
    let full = f.groups.share_heartbeat(heartbeat("m2", 0, Some(&["t"])));
    assert_eq!(full.error, errors::GROUP_MAX_SIZE_REACHED);
    assert_eq!(
        full.message.as_deref(),
        Some("The share group has reached its maximum capacity of 1 members.")
    );
}

#[test]
fn leaving_and_lapsing_fence_the_member_and_the_group_survives_a_restart() {
    let mut f = fixture(2);
    let m1 = f.groups.share_heartbeat(heartbeat("m1", 0, Some(&["t"])));
    f.clock.advance(Duration::from_secs(2));
    f.groups.share_heartbeat(heartbeat("m2", 0, Some(&["t"])));
    let left = f.groups.share_heartbeat(heartbeat("m1", -1, None));
    assert_eq!(
        (left.error, left.member_epoch, left.assignment),
        (0, -1, None)
    );
    assert_eq!(
        f.groups.share_heartbeat(heartbeat("m1", -1, None)).error,
        errors::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        f.groups
            .share_heartbeat(heartbeat("m1", m1.member_epoch, None))
            .error,
        errors::UNKNOWN_MEMBER_ID
    );

    drop(f.groups);
    f.groups = GroupCoordinator::open(Arc::clone(&f.manager), config_for_tests()).unwrap();
    let described = f.groups.describe_share_group("g").unwrap();
    assert_eq!(described.members.len(), 1);
    assert_eq!(described.epoch, 4, "joins at 2 and 3, the leave bumps to 4");

    f.clock.advance(Duration::from_secs(46));
    f.groups.tick();
    let described = f.groups.describe_share_group("g").unwrap();
    assert_eq!((described.state, described.members.len()), ("Empty", 0));
    let listed = f.groups.list();
    assert_eq!(
        (listed[0].group_type, listed[0].protocol_type.as_str()),
        ("share", "share")
    );
}

#[test]
fn other_kinds_of_group_are_not_share_groups() {
    let f = fixture(1);
    let entry = crate::group::CommitEntry {
        topic: "t".to_owned(),
        partition: 0,
        offset: 5,
        leader_epoch: -1,
        metadata: String::new(),
    };
    assert_eq!(
        f.groups.commit("g", 9, -1, "", None, None, &[entry]),
        vec![0]
    );
    let answer = f.groups.share_heartbeat(heartbeat("m1", 0, Some(&["t"])));
    assert_eq!(
        (answer.error, answer.message.as_deref()),
        (
            errors::GROUP_ID_NOT_FOUND,
            Some("Group g is not a share group.")
        )
    );
}

#[test]
fn an_empty_share_group_is_deleted_with_its_state_and_other_protocols_are_refused() {
    let f = fixture(2);
    let joined = f.groups.share_heartbeat(heartbeat("m1", 0, Some(&["t"])));
    assert_eq!(f.groups.delete_group("g"), errors::NON_EMPTY_GROUP);
    let entry = crate::group::CommitEntry {
        topic: "t".to_owned(),
        partition: 0,
        offset: 5,
        leader_epoch: -1,
        metadata: String::new(),
    };
    assert_eq!(
        f.groups
            .commit("g", 9, joined.member_epoch, "m1", None, None, &[entry]),
        vec![errors::GROUP_ID_NOT_FOUND]
    );
    f.groups.share_heartbeat(heartbeat("m1", -1, None));
    assert_eq!(f.groups.delete_group("g"), errors::NONE);
    assert!(f.groups.list().is_empty());
    assert!(f.groups.share_state().keys_of("g").is_empty());
    drop(f.groups);
    let reopened = GroupCoordinator::open(Arc::clone(&f.manager), config_for_tests()).unwrap();
    assert!(
        reopened.list().is_empty(),
        "the tombstones end the group at load too"
    );
}

#[test]
fn offsets_are_altered_and_deleted_only_in_an_empty_share_group() {
    use super::offsets::AlterTopic;
    let f = fixture(2);
    let topic_id = f.manager.topic_id("t").unwrap();
    let alter = |offset: i64| {
        vec![AlterTopic {
            id: topic_id,
            name: "t".to_owned(),
            offsets: vec![(0, offset), (1, offset)],
        }]
    };
    // A group that does not exist is made, as Kafka makes it.
    let results = f.groups.alter_share_offsets("g", &alter(3)).unwrap();
    assert_eq!(results, vec![((topic_id, 0), 0), ((topic_id, 1), 0)]);
    let key = ShareKey::new("g", topic_id, 1);
    assert_eq!(
        f.groups.share_state().summary(&key).unwrap().start_offset,
        3
    );
    assert_eq!(
        f.groups.share_initialized("g")[&topic_id].partitions.len(),
        2
    );
    f.groups.share_heartbeat(heartbeat("m1", 0, Some(&["t"])));
    let busy = f.groups.alter_share_offsets("g", &alter(0)).unwrap_err();
    assert_eq!(
        busy,
        (
            errors::NON_EMPTY_GROUP,
            "The group is not empty.".to_owned()
        )
    );
    assert_eq!(
        f.groups
            .delete_share_offsets("g", &[("t".to_owned(), Some((topic_id, 2)))])
            .unwrap_err()
            .0,
        errors::NON_EMPTY_GROUP
    );
    f.groups.share_heartbeat(heartbeat("m1", -1, None));
    let deleted = f
        .groups
        .delete_share_offsets(
            "g",
            &[
                ("t".to_owned(), Some((topic_id, 2))),
                ("gone".to_owned(), None),
            ],
        )
        .unwrap();
    assert_eq!(
        deleted.iter().map(|d| d.error).collect::<Vec<_>>(),
        vec![errors::NONE, errors::UNKNOWN_TOPIC_OR_PARTITION]
    );
    assert_eq!(f.groups.share_state().summary(&key), None);
    assert!(f.groups.share_initialized("g").is_empty());
}
