use super::*;

fn task(partition: i32) -> TaskId {
    TaskId::new("0", partition)
}

fn set(partitions: &[i32]) -> BTreeSet<TaskId> {
    partitions.iter().map(|p| task(*p)).collect()
}

fn active(partitions: &[i32]) -> TaskSets {
    TaskSets {
        active: set(partitions),
        ..TaskSets::default()
    }
}

fn stable(epoch: i32, active: &[(i32, i32)], standby: &[i32]) -> CurrentTasks {
    CurrentTasks {
        member_epoch: epoch,
        previous_member_epoch: epoch - 1,
        state: MemberState::Stable,
        assigned: AssignedTasks {
            active: active.iter().map(|(p, e)| (task(*p), *e)).collect(),
            standby: set(standby),
            warmup: BTreeSet::new(),
        },
        pending_revocation: TaskSets::default(),
    }
}

fn free(_: Role, _: &TaskId) -> HeldElsewhere {
    HeldElsewhere::default()
}

fn towards<'a>(
    epoch: i32,
    target: &'a TaskSets,
    owned: Option<&'a TaskSets>,
    held: &'a dyn Fn(Role, &TaskId) -> HeldElsewhere,
) -> Towards<'a> {
    Towards {
        target_epoch: epoch,
        target,
        owned,
        held,
    }
}

#[test]
fn free_tasks_are_given_at_once_with_the_target_epoch() {
    let target = active(&[0, 1]);
    let next = reconcile(&stable(0, &[], &[]), &towards(5, &target, None, &free)).unwrap();
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!((next.member_epoch, next.previous_member_epoch), (5, 0));
    assert_eq!(
        next.assigned.active,
        BTreeMap::from([(task(0), 5), (task(1), 5)])
    );
}

#[test]
fn tasks_are_revoked_before_new_ones_are_given() {
    let current = stable(3, &[(0, 2), (1, 3)], &[]);
    let target = active(&[1, 2]);
    let owned = active(&[0, 1]);
    let revoking = reconcile(&current, &towards(4, &target, Some(&owned), &free)).unwrap();
    assert_eq!(revoking.state, MemberState::UnrevokedTasks);
    assert_eq!(revoking.member_epoch, 3);
    assert_eq!(revoking.assigned.active, BTreeMap::from([(task(1), 3)]));
    assert_eq!(revoking.pending_revocation, active(&[0]));
    // Still owning the revoked task: nothing moves.
    let unchanged = reconcile(&revoking, &towards(4, &target, Some(&owned), &free)).unwrap();
    assert_eq!(unchanged, revoking);
    let revoked = active(&[1]);
    let next = reconcile(&revoking, &towards(4, &target, Some(&revoked), &free)).unwrap();
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.member_epoch, 4);
    assert_eq!(
        next.assigned.active,
        BTreeMap::from([(task(1), 3), (task(2), 4)])
    );
    assert!(next.pending_revocation.is_empty());
}

#[test]
fn an_active_task_waits_until_its_owner_anywhere_lets_it_go() {
    let target = active(&[0, 1]);
    let held_by_other = |role: Role, t: &TaskId| HeldElsewhere {
        by_another_member: role == Role::Active && *t == task(1),
        on_this_process: false,
    };
    let next = reconcile(
        &stable(1, &[], &[]),
        &towards(2, &target, None, &held_by_other),
    )
    .unwrap();
    assert_eq!(next.state, MemberState::UnreleasedTasks);
    assert_eq!(next.member_epoch, 2);
    assert_eq!(next.assigned.active, BTreeMap::from([(task(0), 2)]));
    let later = reconcile(&next, &towards(2, &target, None, &free)).unwrap();
    assert_eq!(later.state, MemberState::Stable);
    assert_eq!(
        later.assigned.active,
        BTreeMap::from([(task(0), 2), (task(1), 2)])
    );
}

#[test]
fn a_standby_is_held_back_only_by_copies_on_its_own_process() {
    let target = TaskSets {
        standby: set(&[0]),
        ..TaskSets::default()
    };
    let active_on_another_process = |role: Role, _: &TaskId| HeldElsewhere {
        by_another_member: role == Role::Active,
        on_this_process: false,
    };
    let next = reconcile(
        &stable(1, &[], &[]),
        &towards(2, &target, None, &active_on_another_process),
    )
    .unwrap();
    assert_eq!(next.state, MemberState::Stable);
    assert_eq!(next.assigned.standby, set(&[0]));
    let active_beside = |role: Role, _: &TaskId| HeldElsewhere {
        by_another_member: role == Role::Active,
        on_this_process: role == Role::Active,
    };
    let next = reconcile(
        &stable(1, &[], &[]),
        &towards(2, &target, None, &active_beside),
    )
    .unwrap();
    assert_eq!(next.state, MemberState::UnreleasedTasks);
    assert!(next.assigned.standby.is_empty());
}

#[test]
fn an_active_task_demoted_to_standby_is_a_standby_at_once() {
    let current = stable(1, &[(0, 1)], &[]);
    let target = TaskSets {
        standby: set(&[0]),
        ..TaskSets::default()
    };
    let owned = active(&[0]);
    let next = reconcile(&current, &towards(2, &target, Some(&owned), &free)).unwrap();
    assert_eq!(next.state, MemberState::UnrevokedTasks);
    assert!(next.assigned.active.is_empty());
    assert_eq!(next.assigned.standby, set(&[0]));
    assert_eq!(next.pending_revocation, active(&[0]));
}

#[test]
fn a_promoted_standby_stays_a_standby_until_the_active_is_granted() {
    let current = stable(1, &[], &[0]);
    let target = active(&[0]);
    let owned = TaskSets {
        standby: set(&[0]),
        ..TaskSets::default()
    };
    let held = |role: Role, _: &TaskId| HeldElsewhere {
        by_another_member: role == Role::Active,
        on_this_process: false,
    };
    let waiting = reconcile(&current, &towards(2, &target, Some(&owned), &held)).unwrap();
    assert_eq!(waiting.state, MemberState::UnreleasedTasks);
    assert!(waiting.assigned.active.is_empty());
    assert_eq!(waiting.assigned.standby, set(&[0]));
    let granted = reconcile(&waiting, &towards(2, &target, Some(&owned), &free)).unwrap();
    assert_eq!(granted.state, MemberState::Stable);
    assert_eq!(granted.assigned.active, BTreeMap::from([(task(0), 2)]));
    assert!(granted.assigned.standby.is_empty());
}

#[test]
fn an_unknown_state_continues_only_from_nothing_owned() {
    let mut current = stable(3, &[(0, 3)], &[]);
    current.state = MemberState::Unknown;
    let target = active(&[0]);
    let owned = active(&[0]);
    assert_eq!(
        reconcile(&current, &towards(4, &target, Some(&owned), &free)),
        Err(MustRejoin)
    );
    assert_eq!(
        reconcile(&current, &towards(4, &target, None, &free)),
        Err(MustRejoin)
    );
    let nothing = TaskSets::default();
    let next = reconcile(&current, &towards(4, &target, Some(&nothing), &free)).unwrap();
    assert_eq!((next.state, next.member_epoch), (MemberState::Stable, 4));
}

#[test]
fn state_bytes_are_kafkas() {
    for state in [
        MemberState::Stable,
        MemberState::UnrevokedTasks,
        MemberState::UnreleasedTasks,
        MemberState::Unknown,
    ] {
        assert_eq!(MemberState::from_id(state.id()), state);
    }
    assert_eq!(MemberState::Stable.id(), 1);
    assert_eq!(MemberState::from_id(0), MemberState::Unknown);
}
