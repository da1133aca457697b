//! Static membership (KIP-345, KIP-814) in the classic group coordinator, on a manual clock,
//! transition by transition as Kafka 4.4's coordinator makes them: a static member that lost
//! its JoinGroup answer and rejoins during the sync phase, a static leader returning to a
//! Stable group, changed metadata under the same protocol, the order of the member checks,
//! what a replacement keeps and takes, static members that do not rejoin, a group where no one
//! rejoins, LeaveGroup's corner cases, and a replacement whose record cannot be stored.
//! `crates/cli/tests/static_membership_with_kafka.rs` runs the same questions against Kafka.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;
use std::time::Duration;

use ferrolog_broker::errors;
use ferrolog_broker::group::state::{JoinResult, SyncResult};
use ferrolog_broker::group::{CommitEntry, GroupConfig, GroupCoordinator, JoinRequest, Reply};
use ferrolog_storage::ManualClock;
use ferrolog_storage::manager::{LogManager, ManagerConfig};

/// Every test here takes it: the store-failure test arms a process-wide fault point.
static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

const GROUP: &str = "g";
const REBALANCE_TIMEOUT_MS: i32 = 5_000;

struct Coordinator {
    groups: GroupCoordinator,
    clock: Arc<ManualClock>,
    manager: Arc<LogManager>,
    _dir: tempfile::TempDir,
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.manager.shutdown();
    }
}

fn coordinator() -> Coordinator {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.path().to_path_buf()],
                ..ManagerConfig::default()
            },
            clock.clone(),
        )
        .unwrap(),
    );
    let config = GroupConfig {
        initial_rebalance_delay: Duration::ZERO,
        offsets_topic_partitions: 1,
        ..GroupConfig::default()
    };
    let groups = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    groups.find_coordinator().unwrap();
    Coordinator {
        groups,
        clock,
        manager,
        _dir: dir,
    }
}

/// A JoinGroup v9 of `member_id` (instance `instance`) with one protocol, "range", whose
/// metadata is `metadata`.
fn join(member_id: &str, instance: Option<&str>, metadata: &[u8]) -> JoinRequest {
    JoinRequest {
        group: GROUP.into(),
        member_id: member_id.into(),
        group_instance_id: instance.map(Into::into),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: REBALANCE_TIMEOUT_MS,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), metadata.to_vec())],
        require_known_member_id: true,
        supports_skip_assignment: true,
    }
}

fn now(reply: Reply<JoinResult>) -> JoinResult {
    match reply {
        Reply::Now(result) => result,
        Reply::Later(_) => panic!("expected an immediate answer"),
    }
}

fn waiting(reply: Reply<JoinResult>) -> tokio::sync::oneshot::Receiver<JoinResult> {
    match reply {
        Reply::Later(receiver) => receiver,
        Reply::Now(answer) => panic!("expected to wait for the rebalance, got {answer:?}"),
    }
}

fn answered<T: std::fmt::Debug>(receiver: &mut tokio::sync::oneshot::Receiver<T>) -> T {
    receiver.try_recv().expect("answered by now")
}

fn synced(reply: Reply<SyncResult>) -> SyncResult {
    match reply {
        Reply::Now(result) => result,
        Reply::Later(mut receiver) => receiver.try_recv().expect("answered by now"),
    }
}

/// Static member "a" alone, Stable at generation 1 with assignment "x".
fn one_stable(c: &Coordinator) -> String {
    let mut first = waiting(c.groups.join(join("", Some("a"), &[1])));
    let a1 = answered(&mut first);
    assert_eq!(
        (a1.error, a1.generation, a1.leader.as_str()),
        (0, 1, a1.member_id.as_str())
    );
    let plan = vec![(a1.member_id.clone(), b"x".to_vec())];
    let sync = synced(
        c.groups
            .sync(GROUP, (&a1.member_id, Some("a")), 1, (None, None), plan),
    );
    assert_eq!(sync.assignment, b"x");
    a1.member_id
}

/// Static members "a" (leader) and "b", generation 2, CompletingRebalance: both JoinGroup
/// answers are out, no SyncGroup yet.
fn two_completing(c: &Coordinator) -> (String, String) {
    let a1 = one_stable(c);
    let mut b_join = waiting(c.groups.join(join("", Some("b"), &[2])));
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("a"), 1),
        errors::REBALANCE_IN_PROGRESS
    );
    let mut a_join = waiting(c.groups.join(join(&a1, Some("a"), &[1])));
    let (a, b) = (answered(&mut a_join), answered(&mut b_join));
    assert_eq!(
        (a.generation, b.generation, a.leader.as_str()),
        (2, 2, a1.as_str())
    );
    assert_eq!(a.members.len(), 2);
    assert_eq!(
        c.groups.describe(GROUP).unwrap().state,
        "CompletingRebalance"
    );
    (a1, b.member_id)
}

/// [`two_completing`], then both synced: Stable at generation 2.
fn two_stable(c: &Coordinator) -> (String, String) {
    let (a1, b1) = two_completing(c);
    let b_sync = c
        .groups
        .sync(GROUP, (&b1, Some("b")), 2, (None, None), vec![]);
    let plan = vec![(a1.clone(), b"x".to_vec()), (b1.clone(), b"y".to_vec())];
    assert_eq!(
        synced(
            c.groups
                .sync(GROUP, (&a1, Some("a")), 2, (None, None), plan)
        )
        .assignment,
        b"x"
    );
    assert_eq!(synced(b_sync).assignment, b"y");
    (a1, b1)
}

#[test]
fn a_static_member_rejoining_while_the_leader_assigns_starts_a_new_rebalance() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let (a1, b1) = two_completing(&c);
    // b's answer was lost: it joins again without a member id. The leader's plan would name b1.
    let mut b_again = waiting(c.groups.join(join("", Some("b"), &[2])));
    let plan = vec![(a1.clone(), b"x".to_vec()), (b1.clone(), b"y".to_vec())];
    let leader_sync = synced(
        c.groups
            .sync(GROUP, (&a1, Some("a")), 2, (None, None), plan),
    );
    assert_eq!(leader_sync.error, errors::REBALANCE_IN_PROGRESS);
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("a"), 2),
        errors::REBALANCE_IN_PROGRESS
    );
    assert_eq!(
        c.groups.heartbeat(GROUP, &b1, Some("b"), 2),
        errors::FENCED_INSTANCE_ID
    );
    // The leader rejoins: generation 3, its list names b's new id, and b's answer carries it.
    let mut a_join = waiting(c.groups.join(join(&a1, Some("a"), &[1])));
    let (a, b) = (answered(&mut a_join), answered(&mut b_again));
    assert_eq!((a.generation, b.generation), (3, 3));
    assert_ne!(b.member_id, b1);
    let listed: Vec<&str> = a.members.iter().map(|(id, _, _)| id.as_str()).collect();
    assert!(listed.contains(&b.member_id.as_str()), "{listed:?}");
    let b_sync = c
        .groups
        .sync(GROUP, (&b.member_id, Some("b")), 3, (None, None), vec![]);
    let plan = vec![
        (a1.clone(), b"x".to_vec()),
        (b.member_id.clone(), b"y".to_vec()),
    ];
    c.groups
        .sync(GROUP, (&a1, Some("a")), 3, (None, None), plan);
    assert_eq!(
        synced(b_sync).assignment,
        b"y",
        "the new id gets its assignment"
    );
}

#[test]
fn a_lone_static_member_that_lost_its_answer_gets_a_new_generation() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let mut first = waiting(c.groups.join(join("", Some("a"), &[1])));
    let a1 = answered(&mut first);
    let mut again = waiting(c.groups.join(join("", Some("a"), &[1])));
    let a2 = answered(&mut again);
    assert_eq!(
        (a2.error, a2.generation, a2.leader.as_str()),
        (0, 2, a2.member_id.as_str())
    );
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1.member_id, Some("a"), 1),
        errors::FENCED_INSTANCE_ID
    );
}

#[test]
fn a_static_leader_returning_to_a_stable_group_skips_the_assignment() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let (a1, b1) = two_stable(&c);
    let a2 = now(c.groups.join(join("", Some("a"), &[1])));
    assert_eq!((a2.error, a2.generation), (0, 2), "no rebalance");
    assert!(
        a2.skip_assignment,
        "KIP-814: the returning leader need not assign"
    );
    assert_eq!(a2.leader, a2.member_id);
    assert_eq!(a2.members.len(), 2, "it still gets the members");
    assert_eq!(c.groups.heartbeat(GROUP, &b1, Some("b"), 2), errors::NONE);
    let sync = synced(
        c.groups
            .sync(GROUP, (&a2.member_id, Some("a")), 2, (None, None), vec![]),
    );
    assert_eq!(sync.assignment, b"x", "its assignment came along");
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("a"), 2),
        errors::FENCED_INSTANCE_ID
    );

    // Before JoinGroup 9 the old id is named as leader and no member list is sent.
    let old_client = JoinRequest {
        supports_skip_assignment: false,
        ..join("", Some("a"), &[1])
    };
    let a3 = now(c.groups.join(old_client));
    assert_eq!(
        (a3.leader.as_str(), a3.members.len(), a3.skip_assignment),
        (a2.member_id.as_str(), 0, false)
    );
    // A follower's return is answered at once and skips nothing.
    let b2 = now(c.groups.join(join("", Some("b"), &[2])));
    assert_eq!(
        (
            b2.generation,
            b2.leader.as_str(),
            b2.members.len(),
            b2.skip_assignment
        ),
        (2, a3.member_id.as_str(), 0, false)
    );
}

#[test]
fn new_metadata_under_the_same_protocol_is_stored_without_a_rebalance() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let (_a1, b1) = two_stable(&c);
    let b2 = now(c.groups.join(join("", Some("b"), &[9])));
    assert_eq!((b2.error, b2.generation), (0, 2));
    let described = c.groups.describe(GROUP).unwrap();
    assert_eq!(described.state, "Stable");
    let b = described
        .members
        .iter()
        .find(|m| m.member_id == b2.member_id)
        .unwrap();
    assert_eq!(
        (b.metadata.as_slice(), b.assignment.as_slice()),
        (&[9][..], &b"y"[..])
    );
    assert!(described.members.iter().all(|m| m.member_id != b1));

    // A protocol b prefers that a does not speak leaves the vote as it was.
    let preferring = JoinRequest {
        protocols: vec![("roundrobin".into(), vec![1]), ("range".into(), vec![9])],
        ..join("", Some("b"), &[9])
    };
    assert_eq!(now(c.groups.join(preferring)).generation, 2);

    // Alone, a member whose preference changes the vote rebalances.
    let c = coordinator();
    one_stable(&c);
    let changed = JoinRequest {
        protocols: vec![("roundrobin".into(), vec![1]), ("range".into(), vec![1])],
        ..join("", Some("a"), &[1])
    };
    let mut rebalanced = waiting(c.groups.join(changed));
    let answer = answered(&mut rebalanced);
    assert_eq!(
        (answer.generation, answer.protocol.as_deref()),
        (2, Some("roundrobin"))
    );
}

#[test]
fn member_checks_take_the_instance_id_first_as_kafka_does() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let (a1, b1) = two_stable(&c);
    // A stale incarnation of a known instance is fenced, whatever it asks.
    let b2 = now(c.groups.join(join("", Some("b"), &[2])));
    let zombie = now(c.groups.join(join(&b1, Some("b"), &[2])));
    assert_eq!(
        (zombie.error, zombie.member_id.as_str()),
        (errors::FENCED_INSTANCE_ID, b1.as_str())
    );
    // An instance id the group does not know, with a member's id: unknown member.
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("zzz"), 2),
        errors::UNKNOWN_MEMBER_ID
    );
    let sync = synced(
        c.groups
            .sync(GROUP, (&a1, Some("zzz")), 2, (None, None), vec![]),
    );
    assert_eq!(sync.error, errors::UNKNOWN_MEMBER_ID);
    let commit = CommitEntry {
        topic: "t".into(),
        partition: 0,
        offset: 1,
        leader_epoch: -1,
        metadata: String::new(),
    };
    let committed = c
        .groups
        .commit(GROUP, 8, 2, &a1, Some("zzz"), None, &[commit]);
    assert_eq!(committed, vec![errors::UNKNOWN_MEMBER_ID]);
    assert_eq!(
        now(c.groups.join(join(&a1, Some("zzz"), &[1]))).error,
        errors::UNKNOWN_MEMBER_ID
    );
    // Another instance's member id: fenced.
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("b"), 2),
        errors::FENCED_INSTANCE_ID
    );
    // No instance id at all: a static member's own id is enough, never fenced.
    assert_eq!(
        c.groups.heartbeat(GROUP, &b2.member_id, None, 2),
        errors::NONE
    );
    let _rejoin = waiting(c.groups.join(join(&a1, None, &[1])));
}

#[test]
fn a_member_id_handed_out_for_a_dynamic_member_cannot_join_as_a_static_one() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    one_stable(&c);
    let dynamic = now(c.groups.join(join("", None, &[3])));
    assert_eq!(dynamic.error, errors::MEMBER_ID_REQUIRED);
    let refused = now(c.groups.join(join(&dynamic.member_id, Some("a"), &[3])));
    assert_eq!(
        (refused.error, refused.member_id.as_str()),
        (errors::UNKNOWN_SERVER_ERROR, "")
    );
    let described = c.groups.describe(GROUP).unwrap();
    assert_eq!((described.state, described.members.len()), ("Stable", 1));
    // Named with its instance id, a pending id still leaves (it is looked up first).
    let left = c
        .groups
        .leave(GROUP, &[(dynamic.member_id.clone(), Some("x".into()))]);
    assert_eq!(left, (errors::NONE, vec![errors::NONE]));
}

#[test]
fn a_replaced_static_member_keeps_its_client_and_takes_the_new_timeouts() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    one_stable(&c);
    let restarted = JoinRequest {
        client_id: "restarted".into(),
        client_host: "/127.0.0.2".into(),
        session_timeout_ms: 6_000,
        ..join("", Some("a"), &[1])
    };
    let a2 = now(c.groups.join(restarted));
    let described = c.groups.describe(GROUP).unwrap();
    assert_eq!(
        (
            described.members[0].client_id.as_str(),
            described.members[0].client_host.as_str()
        ),
        ("client", "/127.0.0.1")
    );
    assert_eq!(
        c.groups.heartbeat(GROUP, &a2.member_id, Some("a"), 1),
        errors::NONE
    );
    // The new session timeout (6 s, not 30 s) decides when it expires.
    c.clock.advance_ms(7_000);
    c.groups.tick();
    assert_eq!(c.groups.describe(GROUP).unwrap().state, "Empty");
}

#[test]
fn static_members_that_do_not_rejoin_stay_until_they_owe_a_sync_too_long() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let (a1, b1) = two_stable(&c);
    // b rejoins with new metadata (a rebalance); a keeps heartbeating and never rejoins.
    let mut b_join = waiting(c.groups.join(join(&b1, Some("b"), &[7])));
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("a"), 2),
        errors::REBALANCE_IN_PROGRESS
    );
    c.clock.advance_ms(i64::from(REBALANCE_TIMEOUT_MS) + 1);
    c.groups.tick();
    let b = answered(&mut b_join);
    assert_eq!(
        (b.generation, b.leader.as_str()),
        (3, b1.as_str()),
        "b rejoined, so b leads"
    );
    let listed: Vec<&str> = b.members.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(listed.len(), 2, "a stays a member: {listed:?}");
    assert!(listed.contains(&a1.as_str()));
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("a"), 2),
        errors::ILLEGAL_GENERATION
    );
    let plan = vec![(a1.clone(), b"x".to_vec()), (b1.clone(), b"y".to_vec())];
    assert_eq!(
        synced(
            c.groups
                .sync(GROUP, (&b1, Some("b")), 3, (None, None), plan)
        )
        .error,
        errors::NONE
    );
    assert_eq!(c.groups.describe(GROUP).unwrap().state, "Stable");
    // a sends no SyncGroup within the rebalance timeout: it is removed, and the group
    // rebalances, Stable as it is.
    c.clock.advance_ms(i64::from(REBALANCE_TIMEOUT_MS) + 1);
    c.groups.tick();
    assert_eq!(
        c.groups.heartbeat(GROUP, &b1, Some("b"), 3),
        errors::REBALANCE_IN_PROGRESS
    );
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("a"), 3),
        errors::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn when_no_member_rejoins_the_group_keeps_waiting_for_them() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let a1 = one_stable(&c);
    // A dynamic member arrives (a rebalance), then leaves; static a never rejoins.
    let pending = now(c.groups.join(join("", None, &[3])));
    let mut d_join = waiting(c.groups.join(join(&pending.member_id, None, &[3])));
    let left = c.groups.leave(GROUP, &[(pending.member_id.clone(), None)]);
    assert_eq!(left, (errors::NONE, vec![errors::NONE]));
    let removed = answered(&mut d_join);
    assert_eq!(
        (removed.error, removed.member_id.as_str()),
        (errors::UNKNOWN_MEMBER_ID, "")
    );
    c.clock.advance_ms(i64::from(REBALANCE_TIMEOUT_MS) + 1);
    c.groups.tick();
    let described = c.groups.describe(GROUP).unwrap();
    assert_eq!(
        (described.state, described.members.len()),
        ("PreparingRebalance", 1)
    );
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("a"), 1),
        errors::REBALANCE_IN_PROGRESS
    );
    // Once it rejoins, the rebalance completes.
    let mut a_join = waiting(c.groups.join(join(&a1, Some("a"), &[1])));
    assert_eq!(answered(&mut a_join).generation, 2);
}

#[test]
fn leaving_a_group_that_does_not_exist_answers_each_member() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let leaving = [(String::new(), Some("a".into())), ("m1".into(), None)];
    let left = c.groups.leave("nope", &leaving);
    assert_eq!(left, (errors::NONE, vec![errors::UNKNOWN_MEMBER_ID; 2]));
}

#[cfg(feature = "failpoints")]
#[test]
fn a_replacement_whose_record_cannot_be_stored_is_undone() {
    let _serial = SERIAL.lock();
    let c = coordinator();
    let (a1, _b1) = two_stable(&c);
    let scenario = fail::FailScenario::setup();
    fail::cfg("log.write", "return(ENOSPC)").unwrap();
    let refused = now(c.groups.join(join("", Some("a"), &[1])));
    fail::remove("log.write");
    scenario.teardown();
    assert_eq!(
        (
            refused.error,
            refused.member_id.as_str(),
            refused.leader.as_str()
        ),
        (errors::COORDINATOR_NOT_AVAILABLE, "", a1.as_str())
    );
    assert_eq!(
        c.groups.heartbeat(GROUP, &a1, Some("a"), 2),
        errors::NONE,
        "a1 is still a"
    );
    let described = c.groups.describe(GROUP).unwrap();
    assert!(described.members.iter().any(|m| m.member_id == a1));
}
