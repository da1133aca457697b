//! Consumer groups of the KIP-848 protocol without a network, on a manual clock: members join
//! and reconcile (revocation before assignment), leave, are fenced when their session or
//! revocation runs out, static members step away and come back; commits are checked against
//! member epochs; a coordinator reopened over the same offsets topic has the same groups; and a
//! group's own configs take effect at its members' next heartbeats.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use ferrolog_broker::errors;
use ferrolog_broker::group::consumer::{ConsumerHeartbeat, HeartbeatAnswer, Partitions};
use ferrolog_broker::group::{CommitEntry, GroupConfig, GroupCoordinator};
use ferrolog_storage::manager::{LogManager, TopicId};
use ferrolog_storage::{ManualClock, TopicPartition};

struct Fixture {
    _temp: tempfile::TempDir,
    clock: Arc<ManualClock>,
    manager: Arc<LogManager>,
    coordinator: GroupCoordinator,
    topic: TopicId,
}

fn config() -> GroupConfig {
    GroupConfig {
        offsets_topic_partitions: 3,
        ..GroupConfig::default()
    }
}

/// A coordinator over a fresh data dir holding topic "t" with `partitions` partitions.
fn fixture(partitions: i32) -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock.clone(), Some(("t", partitions)));
    let topic = manager.topic_id("t").unwrap();
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config()).unwrap();
    coordinator.find_coordinator().unwrap();
    Fixture {
        _temp: temp,
        clock,
        manager,
        coordinator,
        topic,
    }
}

fn join(member: &str) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        version: 1,
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topic_names: Some(vec!["t".into()]),
        owned: Some(Partitions::new()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        ..ConsumerHeartbeat::default()
    }
}

fn beat(member: &str, epoch: i32, owned: &Partitions) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        topic_names: None,
        owned: Some(owned.clone()),
        ..join(member)
    }
}

fn ok(answer: HeartbeatAnswer) -> HeartbeatAnswer {
    assert_eq!(answer.error, errors::NONE, "{answer:?}");
    answer
}

fn partitions_of(answer: &HeartbeatAnswer, topic: TopicId) -> BTreeSet<i32> {
    answer
        .assignment
        .as_ref()
        .and_then(|a| a.get(&topic).cloned())
        .unwrap_or_default()
}

fn owning(topic: TopicId, partitions: &BTreeSet<i32>) -> Partitions {
    Partitions::from([(topic, partitions.clone())])
}

#[test]
fn a_second_member_gets_partitions_only_once_the_first_has_revoked_them() {
    let f = fixture(4);
    let c = &f.coordinator;
    let a = ok(c.consumer_heartbeat(join("a"), &|_| true));
    // A new group starts at epoch 1; the first subscription makes it 2.
    assert_eq!(a.member_epoch, 2);
    assert_eq!(partitions_of(&a, f.topic), BTreeSet::from([0, 1, 2, 3]));
    let a_owns = partitions_of(&a, f.topic);

    // b joins after the assignment interval: the target moves to epoch 3.
    f.clock.advance_ms(1_000);
    let b = ok(c.consumer_heartbeat(join("b"), &|_| true));
    assert_eq!(b.member_epoch, 3);
    assert!(partitions_of(&b, f.topic).is_empty(), "a still owns them");

    // a must revoke two partitions first: it stays at epoch 2 and hears its smaller assignment.
    let a = ok(c.consumer_heartbeat(beat("a", 2, &owning(f.topic, &a_owns)), &|_| true));
    assert_eq!(a.member_epoch, 2);
    let kept = partitions_of(&a, f.topic);
    assert_eq!(kept.len(), 2);
    let described = c.describe_consumer_group("g");
    assert_eq!(described.state, "Reconciling");

    // Once a says it let them go, it reaches epoch 3, and b gets them on its next heartbeat.
    let a = ok(c.consumer_heartbeat(beat("a", 2, &owning(f.topic, &kept)), &|_| true));
    assert_eq!(a.member_epoch, 3);
    let b = ok(c.consumer_heartbeat(beat("b", 3, &Partitions::new()), &|_| true));
    let b_owns = partitions_of(&b, f.topic);
    assert_eq!(b_owns.len(), 2);
    assert!(b_owns.is_disjoint(&kept));
    let described = c.describe_consumer_group("g");
    assert_eq!(
        (
            described.state,
            described.group_epoch,
            described.assignment_epoch
        ),
        ("Stable", 3, 3)
    );
    assert_eq!(described.assignor_name, "uniform");
}

#[test]
fn a_member_whose_session_lapses_is_fenced_and_its_partitions_move() {
    let f = fixture(2);
    let c = &f.coordinator;
    let a = ok(c.consumer_heartbeat(join("a"), &|_| true));
    f.clock.advance_ms(1_000);
    ok(c.consumer_heartbeat(join("b"), &|_| true));
    let a_all = partitions_of(&a, f.topic);
    let a = ok(c.consumer_heartbeat(beat("a", 2, &owning(f.topic, &a_all)), &|_| true));
    let a_kept = partitions_of(&a, f.topic);
    ok(c.consumer_heartbeat(beat("a", 2, &owning(f.topic, &a_kept)), &|_| true));
    // b goes silent; a keeps heartbeating.
    for _ in 0..5 {
        f.clock.advance_ms(10_000);
        ok(c.consumer_heartbeat(beat("a", 3, &owning(f.topic, &a_kept)), &|_| true));
        c.tick();
    }
    // 50 s after its last heartbeat b is gone: the group epoch moved on and a gets everything.
    let described = c.describe_consumer_group("g");
    assert_eq!(described.members.len(), 1);
    assert_eq!(described.group_epoch, 4);
    let a = ok(c.consumer_heartbeat(beat("a", 3, &owning(f.topic, &a_kept)), &|_| true));
    assert_eq!(a.member_epoch, 4);
    assert_eq!(partitions_of(&a, f.topic), BTreeSet::from([0, 1]));
    // A heartbeat from the fenced member is refused; it must rejoin.
    let stale = c.consumer_heartbeat(beat("b", 3, &Partitions::new()), &|_| true);
    assert_eq!(stale.error, errors::UNKNOWN_MEMBER_ID);
}

#[test]
fn the_group_reloads_as_it_was_and_kafka_s_checks_refuse_bad_heartbeats() {
    let f = fixture(3);
    let c = &f.coordinator;
    let a = ok(c.consumer_heartbeat(join("a"), &|_| true));
    let a_owns = owning(f.topic, &partitions_of(&a, f.topic));
    // Epoch checks: ahead of the member is fenced; an unknown member is refused.
    let ahead = c.consumer_heartbeat(beat("a", 9, &a_owns), &|_| true);
    assert_eq!(ahead.error, errors::FENCED_MEMBER_EPOCH);
    assert!(ahead.message.unwrap().contains("greater member epoch (9)"));
    assert_eq!(
        c.consumer_heartbeat(beat("x", 2, &a_owns), &|_| true).error,
        errors::UNKNOWN_MEMBER_ID
    );
    let mut no_timeout = join("c");
    no_timeout.rebalance_timeout_ms = -1;
    let refused = c.consumer_heartbeat(no_timeout, &|_| true);
    assert_eq!(
        (refused.error, refused.message.as_deref()),
        (
            errors::INVALID_REQUEST,
            Some("RebalanceTimeoutMs must be provided in first request.")
        )
    );
    let mut unknown_assignor = join("c");
    unknown_assignor.server_assignor = Some("sticky".into());
    assert_eq!(
        c.consumer_heartbeat(unknown_assignor, &|_| true).error,
        errors::UNSUPPORTED_ASSIGNOR
    );
    let mut other_group = beat("a", 2, &a_owns);
    other_group.group_id = "nope".into();
    assert_eq!(
        c.consumer_heartbeat(other_group, &|_| true).error,
        errors::GROUP_ID_NOT_FOUND
    );

    // Reopened over the same offsets topic: the same member at the same epoch, same partitions.
    let before = c.describe_consumer_group("g");
    let reopened = GroupCoordinator::open(Arc::clone(&f.manager), config()).unwrap();
    let after = reopened.describe_consumer_group("g");
    assert_eq!(
        (after.state, after.group_epoch, after.assignment_epoch),
        (before.state, before.group_epoch, before.assignment_epoch)
    );
    assert_eq!(after.members[0].assignment, before.members[0].assignment);
    let again = ok(reopened.consumer_heartbeat(beat("a", 2, &a_owns), &|_| true));
    assert_eq!(again.member_epoch, 2);
}

#[test]
fn a_static_member_steps_away_and_its_next_incarnation_keeps_its_partitions() {
    let f = fixture(2);
    let c = &f.coordinator;
    let with_instance = |mut request: ConsumerHeartbeat| {
        request.instance_id = Some("pod-1".into());
        request
    };
    let first = ok(c.consumer_heartbeat(with_instance(join("m1")), &|_| true));
    let owned = owning(f.topic, &partitions_of(&first, f.topic));
    let away = ok(c.consumer_heartbeat(with_instance(beat("m1", -2, &owned)), &|_| true));
    assert_eq!(away.member_epoch, -2);
    // A new incarnation of the instance takes the place kept for it, with its partitions.
    let other = ok(c.consumer_heartbeat(with_instance(join("m2")), &|_| true));
    assert_eq!(partitions_of(&other, f.topic), BTreeSet::from([0, 1]));
    assert_eq!(
        other.member_epoch, 2,
        "no rebalance: the group epoch did not move"
    );
    // The old incarnation is fenced by the new one.
    let old = c.consumer_heartbeat(with_instance(beat("m1", 2, &owned)), &|_| true);
    assert_eq!(old.error, errors::FENCED_INSTANCE_ID);
    // While m2 holds the instance, a third incarnation is refused.
    let third = c.consumer_heartbeat(with_instance(join("m3")), &|_| true);
    assert_eq!(third.error, errors::UNRELEASED_INSTANCE_ID);
}

#[test]
fn commits_are_checked_against_member_epochs() {
    let f = fixture(2);
    let c = &f.coordinator;
    let a = ok(c.consumer_heartbeat(join("a"), &|_| true));
    let entry = |partition| CommitEntry {
        topic: "t".into(),
        partition,
        offset: 5,
        leader_epoch: -1,
        metadata: String::new(),
    };
    let commit = |version, epoch, member: &str| {
        c.commit("g", version, epoch, member, None, None, &[entry(0)])
    };
    assert_eq!(commit(9, a.member_epoch, "a"), [errors::NONE]);
    assert_eq!(
        commit(9, a.member_epoch + 1, "a"),
        [errors::STALE_MEMBER_EPOCH]
    );
    assert_eq!(commit(9, a.member_epoch, "z"), [errors::UNKNOWN_MEMBER_ID]);
    assert_eq!(
        commit(8, a.member_epoch, "a"),
        [errors::UNSUPPORTED_VERSION]
    );
    // Outside the group (epoch -1) only while the group has no members.
    assert_eq!(commit(9, -1, ""), [errors::UNKNOWN_MEMBER_ID]);
    assert_eq!(
        c.check_offset_fetch("g", Some("a"), a.member_epoch + 1),
        errors::STALE_MEMBER_EPOCH
    );
    assert_eq!(
        c.check_offset_fetch("g", Some("a"), a.member_epoch),
        errors::NONE
    );
    // After the member leaves, the group is empty and a standalone commit is accepted.
    let left = ok(c.consumer_heartbeat(beat("a", -1, &Partitions::new()), &|_| true));
    assert_eq!(left.member_epoch, -1);
    assert_eq!(c.describe_consumer_group("g").state, "Empty");
    assert_eq!(commit(9, -1, ""), [errors::NONE]);
    assert_eq!(c.fetch_offsets("g", None)[0].2.as_ref().unwrap().offset, 5);
    // An empty consumer group can be deleted; its offsets go with it.
    assert_eq!(c.delete_group("g"), errors::NONE);
    assert!(c.fetch_offsets("g", None).is_empty());
}

#[test]
fn a_regex_subscription_takes_in_new_matching_topics_it_may_describe() {
    let f = fixture(2);
    let c = &f.coordinator;
    f.manager
        .create_all(&[TopicPartition::new("secret-t", 0)])
        .unwrap();
    let by_regex = |member: &str, regex: &str| ConsumerHeartbeat {
        topic_names: None,
        topic_regex: Some(regex.into()),
        ..join(member)
    };
    let not_secret = |topic: &str| !topic.starts_with("secret");
    let invalid = c.consumer_heartbeat(by_regex("a", "t("), &not_secret);
    assert_eq!(invalid.error, errors::INVALID_REGULAR_EXPRESSION);
    assert!(
        invalid
            .message
            .unwrap()
            .starts_with("SubscribedTopicRegex `t(` is not a valid")
    );
    // Matched in full: "t" but neither "secret-t" (not describable) nor "__consumer_offsets".
    let a = ok(c.consumer_heartbeat(by_regex("a", ".*t"), &not_secret));
    assert_eq!(partitions_of(&a, f.topic), BTreeSet::from([0, 1]));
    assert_eq!(a.assignment.as_ref().unwrap().len(), 1);
    // A new matching topic joins at the next resolution, ten seconds on.
    f.manager
        .create_all(&[TopicPartition::new("new-t", 0)])
        .unwrap();
    let new_topic = f.manager.topic_id("new-t").unwrap();
    let owned = owning(f.topic, &partitions_of(&a, f.topic));
    f.clock.advance_ms(10_000);
    let a = ok(c.consumer_heartbeat(beat("a", a.member_epoch, &owned), &not_secret));
    assert_eq!(partitions_of(&a, new_topic), BTreeSet::from([0]));
    assert_eq!(partitions_of(&a, f.topic), BTreeSet::from([0, 1]));
    let described = c.describe_consumer_group("g");
    assert_eq!(
        described.members[0].subscribed_topic_regex.as_deref(),
        Some(".*t")
    );
}

#[test]
fn a_groups_own_configs_take_effect_at_each_members_next_heartbeat() {
    use ferrolog_broker::group::group_configs::Alteration;
    let f = fixture(2);
    let c = &f.coordinator;
    let a = ok(c.consumer_heartbeat(join("a"), &|_| true));
    assert_eq!(a.heartbeat_interval_ms, 5_000);
    let set = |key: &str, value: &str| (key.to_owned(), Some(value.to_owned()));
    c.alter_group_configs(
        "g",
        Alteration::Incremental(vec![
            set("consumer.heartbeat.interval.ms", "6000"),
            set("consumer.session.timeout.ms", "50000"),
        ]),
        false,
    )
    .unwrap();
    f.clock.advance_ms(1_000);
    let b = ok(c.consumer_heartbeat(join("b"), &|_| true));
    assert_eq!(b.heartbeat_interval_ms, 6_000);
    let a_all = partitions_of(&a, f.topic);
    let a = ok(c.consumer_heartbeat(beat("a", 2, &owning(f.topic, &a_all)), &|_| true));
    assert_eq!(a.heartbeat_interval_ms, 6_000);
    let a_kept = partitions_of(&a, f.topic);
    ok(c.consumer_heartbeat(beat("a", 2, &owning(f.topic, &a_kept)), &|_| true));
    // b goes silent: the broker's 45 s pass and it stays; the group's 50 s fence it.
    for _ in 0..47 {
        f.clock.advance_ms(1_000);
        c.tick();
    }
    ok(c.consumer_heartbeat(beat("a", 3, &owning(f.topic, &a_kept)), &|_| true));
    assert_eq!(c.describe_consumer_group("g").members.len(), 2);
    for _ in 0..4 {
        f.clock.advance_ms(1_000);
        c.tick();
    }
    assert_eq!(c.describe_consumer_group("g").members.len(), 1);

    // Kept: a coordinator reopened over the same directory answers with the group's interval.
    let reopened = GroupCoordinator::open(Arc::clone(&f.manager), config()).unwrap();
    reopened.find_coordinator().unwrap();
    let a = ok(reopened.consumer_heartbeat(beat("a", 3, &owning(f.topic, &a_kept)), &|_| true));
    assert_eq!(a.heartbeat_interval_ms, 6_000);
}
