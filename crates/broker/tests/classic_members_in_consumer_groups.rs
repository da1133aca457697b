//! Classic consumers in a consumer group of the KIP-848 protocol, without a network, on a
//! manual clock, as Kafka 4.4 serves them: a classic JoinGroup into a group with members is
//! answered at once (no leader, its generation its member epoch), its SyncGroup carries the
//! partitions the broker assigned it, its Heartbeat says REBALANCE_IN_PROGRESS once partitions
//! it waits for are free, it commits with its generation, and it is fenced when it does not
//! send its SyncGroup in time. Under `group.consumer.migration.policy=disabled` it is refused.
//! A consumer-protocol member joining a classic group with members upgrades it online: the
//! classic member keeps its partitions until told to rejoin, and the group reloads as it is.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use ferrolog_broker::errors;
use ferrolog_broker::group::consumer::{
    ConsumerHeartbeat, HeartbeatAnswer, MigrationPolicy, Partitions,
};
use ferrolog_broker::group::state::{JoinResult, SyncResult};
use ferrolog_broker::group::{CommitEntry, GroupConfig, GroupCoordinator, JoinRequest, Reply};
use ferrolog_broker::protocol::consumer_protocol::{decode_assignment, encode_assignment};
use ferrolog_storage::ManualClock;
use ferrolog_storage::manager::{LogManager, TopicId};

struct Fixture {
    _temp: tempfile::TempDir,
    clock: Arc<ManualClock>,
    manager: Arc<LogManager>,
    coordinator: GroupCoordinator,
    topic: TopicId,
}

fn fixture(policy: MigrationPolicy) -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock.clone(), Some(("t", 4)));
    let topic = manager.topic_id("t").unwrap();
    let mut config = GroupConfig {
        offsets_topic_partitions: 1,
        initial_rebalance_delay: std::time::Duration::ZERO,
        ..GroupConfig::default()
    };
    config.consumer.migration = policy;
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    coordinator.find_coordinator().unwrap();
    Fixture {
        _temp: temp,
        clock,
        manager,
        coordinator,
        topic,
    }
}

/// A consumer-protocol member's heartbeat owning `owned` of topic "t".
fn beat(f: &Fixture, member: &str, epoch: i32, owned: &BTreeSet<i32>) -> HeartbeatAnswer {
    let answer = f.coordinator.consumer_heartbeat(
        ConsumerHeartbeat {
            version: 1,
            group_id: "g".into(),
            member_id: member.into(),
            member_epoch: epoch,
            rebalance_timeout_ms: if epoch == 0 { 30_000 } else { -1 },
            topic_names: (epoch == 0).then(|| vec!["t".into()]),
            owned: Some(if owned.is_empty() {
                Partitions::new()
            } else {
                Partitions::from([(f.topic, owned.clone())])
            }),
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            ..ConsumerHeartbeat::default()
        },
        &|_| true,
    );
    assert_eq!(answer.error, errors::NONE, "{answer:?}");
    answer
}

fn assigned(answer: &HeartbeatAnswer, topic: TopicId) -> BTreeSet<i32> {
    answer
        .assignment
        .as_ref()
        .and_then(|a| a.get(&topic).cloned())
        .unwrap_or_default()
}

fn join_request(member_id: &str) -> JoinRequest {
    JoinRequest {
        group: "g".into(),
        member_id: member_id.into(),
        group_instance_id: None,
        client_id: "classic".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 20_000,
        protocol_type: "consumer".into(),
        protocols: vec![
            ("range".into(), common::consumer_subscription(&["t"])),
            (
                "cooperative-sticky".into(),
                common::consumer_subscription(&["t"]),
            ),
        ],
        require_known_member_id: true,
        supports_skip_assignment: true,
    }
}

fn join(f: &Fixture, member_id: &str) -> JoinResult {
    match f.coordinator.join(join_request(member_id)) {
        Reply::Now(result) => result,
        Reply::Later(_) => panic!("a classic member of a consumer group is answered at once"),
    }
}

fn sync(f: &Fixture, member_id: &str, generation: i32) -> SyncResult {
    match f
        .coordinator
        .sync("g", (member_id, None), generation, (None, None), Vec::new())
    {
        Reply::Now(result) => result,
        Reply::Later(_) => panic!("a classic member of a consumer group is answered at once"),
    }
}

/// A classic group of one member, Stable at generation 1, owning every partition of "t".
fn classic_group_of_one(f: &Fixture) -> String {
    let id = join(f, "").member_id;
    let Reply::Later(mut waiting) = f.coordinator.join(join_request(&id)) else {
        panic!("a classic group's join waits for its rebalance");
    };
    let joined = waiting.try_recv().unwrap();
    assert_eq!((joined.error, joined.generation), (errors::NONE, 1));
    let plan = vec![(
        id.clone(),
        encode_assignment(1, &[("t".to_owned(), vec![0, 1, 2, 3])]),
    )];
    let synced = match f.coordinator.sync("g", (&id, None), 1, (None, None), plan) {
        Reply::Now(result) => result,
        Reply::Later(mut waiting) => waiting.try_recv().unwrap(),
    };
    assert_eq!(synced.error, errors::NONE);
    id
}

fn synced_partitions(result: &SyncResult) -> BTreeSet<i32> {
    assert_eq!(result.error, errors::NONE, "{result:?}");
    let (partitions, user_data) = decode_assignment(&result.assignment).unwrap();
    assert!(!user_data);
    partitions
        .into_iter()
        .flat_map(|(topic, partitions)| {
            assert_eq!(topic, "t");
            partitions
        })
        .collect()
}

#[test]
fn a_classic_consumer_is_assigned_by_the_broker_and_told_when_to_rejoin() {
    let f = fixture(MigrationPolicy::Bidirectional);
    let c = &f.coordinator;
    let a = beat(&f, "a", 0, &BTreeSet::new());
    let all = assigned(&a, f.topic);
    assert_eq!(all.len(), 4);

    // The first JoinGroup is sent away for a member id, as a classic group does.
    let first = join(&f, "");
    assert_eq!(first.error, errors::MEMBER_ID_REQUIRED);
    let id = first.member_id;
    f.clock.advance_ms(1_000);
    let joined = join(&f, &id);
    assert_eq!(joined.error, errors::NONE, "{joined:?}");
    assert_eq!(joined.leader, "", "nobody leads: the broker assigns");
    assert!(joined.members.is_empty());
    assert_eq!(joined.protocol.as_deref(), Some("range"));
    assert_eq!(joined.protocol_type.as_deref(), Some("consumer"));
    // A protocol type or name given must be the consumer protocol and the first one the member
    // listed; the answer echoes them.
    let named = |protocol| match c.sync("g", (&id, None), joined.generation, protocol, Vec::new()) {
        Reply::Now(result) => result,
        Reply::Later(_) => panic!("answered at once"),
    };
    let refused = named((Some("consumer"), Some("cooperative-sticky")));
    assert_eq!(refused.error, errors::INCONSISTENT_GROUP_PROTOCOL);
    let echoed = named((Some("consumer"), Some("range")));
    assert_eq!(
        (
            echoed.error,
            echoed.protocol_type.as_deref(),
            echoed.protocol.as_deref()
        ),
        (errors::NONE, Some("consumer"), Some("range"))
    );
    // a still owns everything: nothing for the newcomer yet, and nothing to rejoin for.
    assert!(synced_partitions(&sync(&f, &id, joined.generation)).is_empty());
    assert_eq!(c.heartbeat("g", &id, None, joined.generation), errors::NONE);

    // a revokes half; then the partitions the classic member waits for are free.
    let a = beat(&f, "a", 2, &all);
    let kept = assigned(&a, f.topic);
    assert_eq!(kept.len(), 2);
    beat(&f, "a", 2, &kept);
    assert_eq!(
        c.heartbeat("g", &id, None, joined.generation),
        errors::REBALANCE_IN_PROGRESS
    );
    // Its epoch was the target's already: the rejoin hands it the free partitions.
    let rejoined = join(&f, &id);
    assert_eq!(rejoined.error, errors::NONE);
    assert_eq!(rejoined.generation, joined.generation);
    let held = synced_partitions(&sync(&f, &id, rejoined.generation));
    assert_eq!(held.len(), 2);
    assert!(held.is_disjoint(&kept));
    assert_eq!(
        c.heartbeat("g", &id, None, rejoined.generation),
        errors::NONE
    );
    assert_eq!(
        c.heartbeat("g", &id, None, joined.generation + 1),
        errors::ILLEGAL_GENERATION
    );
    let described = c.describe_consumer_group("g");
    assert_eq!(described.state, "Stable");
    let classic: Vec<bool> = described.members.iter().map(|m| m.classic).collect();
    assert_eq!(classic.iter().filter(|c| **c).count(), 1);

    // It commits with its generation, in a classic OffsetCommit version.
    let entry = |partition| CommitEntry {
        topic: "t".into(),
        partition,
        offset: 5,
        leader_epoch: -1,
        metadata: String::new(),
    };
    let held: Vec<i32> = held.into_iter().collect();
    let committed = c.commit(
        "g",
        8,
        rejoined.generation,
        &id,
        None,
        None,
        &[entry(held[0])],
    );
    assert_eq!(committed, vec![errors::NONE]);
    let newer = c.commit(
        "g",
        8,
        rejoined.generation + 1,
        &id,
        None,
        None,
        &[entry(held[0])],
    );
    assert_eq!(newer, vec![errors::ILLEGAL_GENERATION]);

    // It leaves: the group epoch moves on, and a is given everything again.
    let (error, members) = c.leave("g", &[(id.clone(), None)]);
    assert_eq!((error, members), (errors::NONE, vec![errors::NONE]));
    let described = c.describe_consumer_group("g");
    assert_eq!(described.members.len(), 1);
}

#[test]
fn a_classic_member_that_does_not_sync_in_time_is_fenced() {
    let f = fixture(MigrationPolicy::Bidirectional);
    let c = &f.coordinator;
    beat(&f, "a", 0, &BTreeSet::new());
    let id = join(&f, "").member_id;
    let joined = join(&f, &id);
    assert_eq!(joined.error, errors::NONE);
    assert_eq!(c.describe_consumer_group("g").members.len(), 2);
    // Its rebalance timeout (20 s) passes without a SyncGroup; a's session (45 s) runs on.
    for _ in 0..21 {
        f.clock.advance_ms(1_000);
        c.tick();
    }
    assert_eq!(c.describe_consumer_group("g").members.len(), 1);
    assert_eq!(
        sync(&f, &id, joined.generation).error,
        errors::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn with_migration_disabled_a_classic_member_is_refused() {
    let f = fixture(MigrationPolicy::Disabled);
    beat(&f, "a", 0, &BTreeSet::new());
    let refused = join(&f, "");
    assert_eq!(refused.error, errors::INCONSISTENT_GROUP_PROTOCOL);
}

#[test]
fn a_consumer_protocol_member_upgrades_a_classic_group_online() {
    let f = fixture(MigrationPolicy::Bidirectional);
    let c = &f.coordinator;
    let k = classic_group_of_one(&f);
    // a joins: the classic group becomes a consumer group at generation 1, then epoch 2 with a.
    let a = beat(&f, "a", 0, &BTreeSet::new());
    assert_eq!(a.member_epoch, 2);
    assert!(
        assigned(&a, f.topic).is_empty(),
        "k still owns every partition"
    );
    let described = c.describe_consumer_group("g");
    assert_eq!((described.group_epoch, described.members.len()), (2, 2));
    let k_described = described.members.iter().find(|m| m.member_id == k).unwrap();
    assert!(k_described.classic);
    assert_eq!(k_described.member_epoch, 1);
    assert_eq!(k_described.assignment[0].2, vec![0, 1, 2, 3]);

    // k hears of it at its next heartbeat, gives up what it must, and rejoins.
    assert_eq!(c.heartbeat("g", &k, None, 1), errors::REBALANCE_IN_PROGRESS);
    let rejoined = join(&f, &k);
    assert_eq!((rejoined.error, rejoined.generation), (errors::NONE, 2));
    let kept = synced_partitions(&sync(&f, &k, 2));
    assert_eq!(kept.len(), 2);
    let a = beat(&f, "a", 2, &BTreeSet::new());
    let taken = assigned(&a, f.topic);
    assert_eq!(taken.len(), 2);
    assert!(taken.is_disjoint(&kept));
    assert_eq!(c.describe_consumer_group("g").state, "Stable");

    // The same group after a restart, its classic member still one.
    let config = GroupConfig {
        offsets_topic_partitions: 1,
        ..GroupConfig::default()
    };
    let reopened = GroupCoordinator::open(Arc::clone(&f.manager), config).unwrap();
    reopened.find_coordinator().unwrap();
    let again = reopened.describe_consumer_group("g");
    assert_eq!((again.state, again.group_epoch), ("Stable", 2));
    assert_eq!(again.members.iter().filter(|m| m.classic).count(), 1);
}

#[test]
fn under_the_downgrade_policy_a_classic_group_is_not_upgraded() {
    let f = fixture(MigrationPolicy::Downgrade);
    classic_group_of_one(&f);
    let refused = f.coordinator.consumer_heartbeat(
        ConsumerHeartbeat {
            version: 1,
            group_id: "g".into(),
            member_id: "a".into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            topic_names: Some(vec!["t".into()]),
            owned: Some(Partitions::new()),
            ..ConsumerHeartbeat::default()
        },
        &|_| true,
    );
    assert_eq!(refused.error, errors::GROUP_ID_NOT_FOUND);
    assert_eq!(
        refused.message.as_deref(),
        Some(
            "Cannot upgrade classic group g to consumer group because online upgrade is disabled."
        )
    );
}

#[test]
fn when_only_classic_members_stay_the_group_is_downgraded_online() {
    let f = fixture(MigrationPolicy::Bidirectional);
    let c = &f.coordinator;
    let k = classic_group_of_one(&f);
    beat(&f, "a", 0, &BTreeSet::new());
    assert_eq!(c.heartbeat("g", &k, None, 1), errors::REBALANCE_IN_PROGRESS);
    let rejoined = join(&f, &k);
    let kept = synced_partitions(&sync(&f, &k, rejoined.generation));
    assert_eq!(kept.len(), 2);
    let epoch = c.describe_consumer_group("g").group_epoch;

    // a leaves: k alone speaks the classic protocol, so the group is classic again, at the
    // group epoch, k keeping its target, and a rebalance starts to hand it all.
    let left = f.coordinator.consumer_heartbeat(
        ConsumerHeartbeat {
            version: 1,
            group_id: "g".into(),
            member_id: "a".into(),
            member_epoch: -1,
            ..ConsumerHeartbeat::default()
        },
        &|_| true,
    );
    assert_eq!((left.error, left.member_epoch), (errors::NONE, -1));
    let listed = c.list();
    assert_eq!(
        (listed[0].group_type, listed[0].state),
        ("classic", "PreparingRebalance")
    );
    assert_eq!(
        c.heartbeat("g", &k, None, epoch),
        errors::REBALANCE_IN_PROGRESS
    );
    let Reply::Later(mut waiting) = c.join(join_request(&k)) else {
        panic!("a classic group's join waits for its rebalance");
    };
    let joined = waiting.try_recv().unwrap();
    assert_eq!((joined.error, joined.generation), (errors::NONE, epoch + 1));
    assert_eq!(joined.leader, k);

    // Written as Kafka writes it: reopened, the group is the classic one.
    let config = GroupConfig {
        offsets_topic_partitions: 1,
        ..GroupConfig::default()
    };
    let reopened = GroupCoordinator::open(Arc::clone(&f.manager), config).unwrap();
    reopened.find_coordinator().unwrap();
    assert_eq!(reopened.list()[0].group_type, "classic");
    let described = reopened.describe("g").unwrap();
    assert_eq!(described.members.len(), 1);
}

#[test]
fn a_classic_static_member_replacing_the_last_consumer_member_downgrades_at_once() {
    let f = fixture(MigrationPolicy::Bidirectional);
    let c = &f.coordinator;
    // s (static, instance "i1") and a classic member k share the group, settled.
    let s = f.coordinator.consumer_heartbeat(
        ConsumerHeartbeat {
            version: 1,
            group_id: "g".into(),
            member_id: "s".into(),
            member_epoch: 0,
            instance_id: Some("i1".into()),
            rebalance_timeout_ms: 30_000,
            topic_names: Some(vec!["t".into()]),
            owned: Some(Partitions::new()),
            ..ConsumerHeartbeat::default()
        },
        &|_| true,
    );
    assert_eq!(s.error, errors::NONE);
    let k = join(&f, "").member_id;
    f.clock.advance_ms(1_000);
    let joined = join(&f, &k);
    assert_eq!(joined.error, errors::NONE);
    let epoch = c.describe_consumer_group("g").group_epoch;

    // The instance comes back as a classic consumer under a new member id.
    let request = JoinRequest {
        group_instance_id: Some("i1".into()),
        ..join_request("")
    };
    let Reply::Now(replaced) = c.join(request) else {
        panic!("answered at once");
    };
    assert_eq!(replaced.error, errors::NONE, "{replaced:?}");
    assert_ne!(replaced.member_id, "s");
    let listed = c.list();
    assert_eq!(listed[0].group_type, "classic");
    let described = c.describe("g").unwrap();
    assert_eq!(described.members.len(), 2);
    // Its target stood at the group epoch: no rebalance is due, the classic group is Stable at
    // that generation, and the member's SyncGroup gets the partitions its instance held.
    assert_eq!((listed[0].state, replaced.generation), ("Stable", epoch));
    let Reply::Now(synced) = c.sync(
        "g",
        (&replaced.member_id, Some("i1")),
        epoch,
        (None, None),
        Vec::new(),
    ) else {
        panic!("a Stable group answers a SyncGroup at once");
    };
    assert_eq!(synced.error, errors::NONE);
    let (partitions, _) = decode_assignment(&synced.assignment).unwrap();
    assert!(!partitions.is_empty(), "the instance's target partitions");
}

#[test]
fn members_expiring_together_are_fenced_in_the_order_their_deadlines_passed() {
    let f = fixture(MigrationPolicy::Bidirectional);
    let c = &f.coordinator;
    beat(&f, "a", 0, &BTreeSet::new());
    // k's session (60 s) outlasts a's (the broker's 45 s).
    let long = |member_id: &str| JoinRequest {
        session_timeout_ms: 60_000,
        ..join_request(member_id)
    };
    let Reply::Now(first) = c.join(long("")) else {
        panic!("answered at once");
    };
    let Reply::Now(joined) = c.join(long(&first.member_id)) else {
        panic!("answered at once");
    };
    assert_eq!(
        sync(&f, &joined.member_id, joined.generation).error,
        errors::NONE
    );
    // Both are past their deadlines at the next tick: a's passed first, and fencing it leaves
    // a classic member only, so the group goes back to the classic protocol with k in it.
    f.clock.advance_ms(61_000);
    c.tick();
    let listed = c.list();
    assert_eq!(listed[0].group_type, "classic");
    let described = c.describe("g").unwrap();
    let members: Vec<&str> = described
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(members, [joined.member_id.as_str()]);
}
