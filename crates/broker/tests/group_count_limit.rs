//! `ferrolog.max.groups`, on a manual clock: once the coordinator holds that many groups (of
//! any kind, over all its shards), a new group of every kind is refused GROUP_MAX_SIZE_REACHED
//! (a classic group's JoinGroup, a consumer and a share group's first heartbeat, a first
//! commit of a group with no members), while the groups that exist go on; deleting one makes
//! room; and a coordinator reopened over the same offsets topic counts the groups it loads.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::Arc;

use ferrolog_broker::errors;
use ferrolog_broker::group::consumer::{ConsumerHeartbeat, Partitions};
use ferrolog_broker::group::share::ShareHeartbeat;
use ferrolog_broker::group::state::JoinResult;
use ferrolog_broker::group::{CommitEntry, GroupConfig, GroupCoordinator, JoinRequest, Reply};
use ferrolog_storage::ManualClock;
use ferrolog_storage::manager::LogManager;

const MAX_GROUPS: usize = 3;

fn open(manager: &Arc<LogManager>) -> GroupCoordinator {
    let config = GroupConfig {
        // Groups spread over several shards, whose counts add up.
        offsets_topic_partitions: 4,
        max_groups: MAX_GROUPS,
        ..GroupConfig::default()
    };
    let groups = GroupCoordinator::open(Arc::clone(manager), config).unwrap();
    groups.find_coordinator().unwrap();
    groups
}

/// A commit to `group` with no member (generation −1, as a consumer with no group does).
fn commit(groups: &GroupCoordinator, group: &str) -> Vec<i16> {
    let entry = CommitEntry {
        topic: "t".into(),
        partition: 0,
        offset: 7,
        leader_epoch: -1,
        metadata: String::new(),
    };
    groups.commit(group, 8, -1, "", None, None, &[entry])
}

/// A classic JoinGroup's answer if given at once (a refusal), else `None` (it waits for the
/// rebalance, as a first member's does).
fn join(groups: &GroupCoordinator, group: &str) -> Option<JoinResult> {
    let reply = groups.join(JoinRequest {
        group: group.into(),
        member_id: String::new(),
        group_instance_id: Some("instance".into()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), vec![0, 1])],
        require_known_member_id: true,
        supports_skip_assignment: true,
    });
    match reply {
        Reply::Now(result) => Some(result),
        Reply::Later(_) => None,
    }
}

/// A first consumer-protocol heartbeat in `group`: its error and message.
fn consumer_join(groups: &GroupCoordinator, group: &str) -> (i16, Option<String>) {
    let answer = groups.consumer_heartbeat(
        ConsumerHeartbeat {
            version: 1,
            group_id: group.into(),
            member_id: "m".into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            topic_names: Some(vec!["t".into()]),
            owned: Some(Partitions::new()),
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            ..ConsumerHeartbeat::default()
        },
        &|_| true,
    );
    (answer.error, answer.message)
}

/// A first share-group heartbeat in `group`: its error and message.
fn share_join(groups: &GroupCoordinator, group: &str) -> (i16, Option<String>) {
    let answer = groups.share_heartbeat(ShareHeartbeat {
        group_id: group.into(),
        member_id: "member-of-the-queue000".into(),
        member_epoch: 0,
        topic_names: Some(vec!["t".into()]),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        ..ShareHeartbeat::default()
    });
    (answer.error, answer.message)
}

fn refused_with_message((error, message): (i16, Option<String>)) {
    assert_eq!(error, errors::GROUP_MAX_SIZE_REACHED);
    let message = message.unwrap_or_default();
    assert!(message.contains("ferrolog.max.groups"), "{message}");
}

#[test]
fn a_new_group_beyond_the_limit_is_refused_whatever_its_kind() {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock, Some(("t", 1)));
    let groups = open(&manager);
    assert_eq!(commit(&groups, "simple"), vec![errors::NONE]);
    assert!(join(&groups, "classic").is_none(), "the first member waits");
    assert_eq!(consumer_join(&groups, "modern").0, errors::NONE);

    // Three groups: no fourth, of any kind.
    refused_with_message(share_join(&groups, "queue"));
    refused_with_message(consumer_join(&groups, "modern-2"));
    assert_eq!(
        commit(&groups, "simple-2"),
        vec![errors::GROUP_MAX_SIZE_REACHED]
    );
    let classic = join(&groups, "classic-2").expect("refused at once");
    assert_eq!(classic.error, errors::GROUP_MAX_SIZE_REACHED);
    // The groups there go on.
    assert_eq!(commit(&groups, "simple"), vec![errors::NONE]);
    assert_eq!(consumer_join(&groups, "modern").0, errors::NONE);

    // A group deleted makes room for one more.
    assert_eq!(groups.delete_group("simple"), errors::NONE);
    assert_eq!(share_join(&groups, "queue").0, errors::NONE);
    refused_with_message(share_join(&groups, "queue-2"));

    // Reopened, the coordinator counts the groups it loads: the consumer and the share
    // group; the classic group's first rebalance never completed, so nothing of it was
    // written.
    drop(groups);
    let groups = open(&manager);
    assert_eq!(commit(&groups, "simple-3"), vec![errors::NONE]);
    assert_eq!(
        commit(&groups, "simple-4"),
        vec![errors::GROUP_MAX_SIZE_REACHED]
    );
    refused_with_message(consumer_join(&groups, "modern-2"));
    assert_eq!(consumer_join(&groups, "modern").0, errors::NONE);
}
