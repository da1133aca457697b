//! `group.max.size` for classic groups, as Kafka's `acceptJoiningMember` applies it, on a
//! manual clock: a JoinGroup beyond it is refused GROUP_MAX_SIZE_REACHED (with an empty member
//! id), counted among the members waiting for their answer during a rebalance and among all
//! members afterwards, while the members already in keep rejoining.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use ferrolog_broker::errors;
use ferrolog_broker::group::state::JoinResult;
use ferrolog_broker::group::{GroupConfig, GroupCoordinator, JoinRequest, Reply};
use ferrolog_storage::ManualClock;

struct Fixture {
    _temp: tempfile::TempDir,
    clock: Arc<ManualClock>,
    groups: GroupCoordinator,
}

fn fixture(max_size: u32) -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock.clone(), None);
    let config = GroupConfig {
        offsets_topic_partitions: 1,
        initial_rebalance_delay: Duration::from_secs(3),
        max_size,
        ..GroupConfig::default()
    };
    let groups = GroupCoordinator::open(manager, config).unwrap();
    groups.find_coordinator().unwrap();
    Fixture {
        _temp: temp,
        clock,
        groups,
    }
}

/// A JoinGroup of a static member `instance` (static members are let in at once, without the
/// MEMBER_ID_REQUIRED round).
fn join(f: &Fixture, member_id: &str, instance: &str) -> Reply<JoinResult> {
    f.groups.join(JoinRequest {
        group: "g".into(),
        member_id: member_id.into(),
        group_instance_id: Some(instance.into()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), vec![0, 1])],
        require_known_member_id: true,
        supports_skip_assignment: true,
    })
}

fn refused(reply: Reply<JoinResult>) -> JoinResult {
    match reply {
        Reply::Now(result) => result,
        Reply::Later(_) => panic!("expected a refusal at once"),
    }
}

#[test]
fn a_member_beyond_the_limit_is_refused_while_a_rebalance_waits() {
    let f = fixture(2);
    let Reply::Later(mut a) = join(&f, "", "a") else {
        panic!("the first rebalance waits for more members");
    };
    let Reply::Later(mut b) = join(&f, "", "b") else {
        panic!("the first rebalance waits for more members");
    };
    let c = refused(join(&f, "", "c"));
    assert_eq!(
        (c.error, c.member_id.as_str()),
        (errors::GROUP_MAX_SIZE_REACHED, "")
    );
    // The two let in complete their rebalance.
    f.clock.advance_ms(3_100);
    f.groups.tick();
    let (a, b) = (a.try_recv().unwrap(), b.try_recv().unwrap());
    assert_eq!((a.error, b.error), (errors::NONE, errors::NONE));
    assert_eq!(a.generation, 1);

    // Stable and full: a newcomer is refused, a member rejoining is not.
    let d = refused(join(&f, "", "d"));
    assert_eq!(d.error, errors::GROUP_MAX_SIZE_REACHED);
    let again = join(&f, &a.member_id, "a");
    if let Reply::Now(answer) = again {
        assert_eq!(answer.error, errors::NONE, "{answer:?}");
    }
}
