//! How a member's current assignment moves towards its target (Kafka's
//! `CurrentAssignmentBuilder`), as a pure function: partitions are revoked before any is
//! assigned, and a partition is given to a member only once its previous owner has let it go.
//!
//! ```text
//!            target epoch moved on                owned list no longer holds the revoked
//!   Stable ───────────────────────▶ UnrevokedPartitions ─────────────────────────▶ next
//!     ▲  ◀──── all target partitions free ──── UnreleasedPartitions ◀── some still owned
//! ```

use std::collections::BTreeMap;

use ferrolog_storage::manager::TopicId;

use super::model::{AssignedPartitions, CurrentAssignment, MemberState, Partitions};

/// What reconciling one member looks at besides its current assignment.
pub struct Towards<'a> {
    /// The epoch of the group's target assignment.
    pub target_epoch: i32,
    /// The member's target assignment.
    pub target: &'a Partitions,
    /// The partitions the member says it owns, when its heartbeat said.
    pub owned: Option<&'a Partitions>,
    /// Whether another member owns (or is still revoking) a partition.
    pub owned_elsewhere: &'a dyn Fn(TopicId, i32) -> bool,
    /// Whether the member still subscribes to a topic (a topic it dropped, or one deleted, is
    /// revoked whatever the target says).
    pub subscribed: &'a dyn Fn(TopicId) -> bool,
    /// Whether this heartbeat changed what the member subscribes to.
    pub subscription_changed: bool,
}

impl std::fmt::Debug for Towards<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Towards")
            .field("target_epoch", &self.target_epoch)
            .field("target", self.target)
            .field("owned", &self.owned)
            .field("subscription_changed", &self.subscription_changed)
            .finish_non_exhaustive()
    }
}

/// The member must rejoin: its state is one this coordinator cannot continue from.
#[derive(Debug, PartialEq, Eq)]
pub struct MustRejoin;

/// The member's next current assignment (Kafka's `CurrentAssignmentBuilder#build`).
pub fn reconcile(
    current: &CurrentAssignment,
    towards: &Towards<'_>,
) -> Result<CurrentAssignment, MustRejoin> {
    let kept_or_dropped = || {
        if towards.subscription_changed {
            drop_unsubscribed(current, towards)
        } else {
            current.clone()
        }
    };
    let next = match current.state {
        MemberState::Stable if current.member_epoch != towards.target_epoch => {
            next_assignment(current, towards, current.member_epoch)
        }
        MemberState::Stable => kept_or_dropped(),
        MemberState::UnrevokedPartitions
            if still_owns_any(towards.owned, &current.pending_revocation) =>
        {
            kept_or_dropped()
        }
        MemberState::UnrevokedPartitions | MemberState::UnreleasedPartitions => {
            next_assignment(current, towards, current.member_epoch)
        }
        MemberState::Unknown => match towards.owned {
            // Only a member that says it owns nothing can start over from here.
            Some(owned) if owned.values().all(|p| p.is_empty()) => {
                next_assignment(current, towards, towards.target_epoch)
            }
            _ => return Err(MustRejoin),
        },
    };
    Ok(next)
}

/// A member not moving to a new target keeps its assignment, less the topics it no longer
/// subscribes to, which join the partitions it must revoke (Kafka's
/// `updateCurrentAssignment`). It never gains partitions here.
fn drop_unsubscribed(current: &CurrentAssignment, towards: &Towards<'_>) -> CurrentAssignment {
    let mut pending = current.pending_revocation.clone();
    let mut assigned = AssignedPartitions::new();
    let mut dropped_any = false;
    for (topic, partitions) in &current.assigned {
        if (towards.subscribed)(*topic) {
            assigned.insert(*topic, partitions.clone());
        } else {
            dropped_any = true;
            pending
                .entry(*topic)
                .or_default()
                .extend(partitions.keys().copied());
        }
    }
    if !dropped_any {
        return current.clone();
    }
    let state = if !pending.is_empty() && still_owns_any(towards.owned, &pending) {
        MemberState::UnrevokedPartitions
    } else {
        current.state
    };
    CurrentAssignment {
        member_epoch: current.member_epoch,
        previous_member_epoch: current.member_epoch,
        state,
        assigned,
        pending_revocation: pending,
    }
}

/// Splits the member's partitions against its target: kept, to revoke, to assign (less those
/// another member still owns), and moves as far as it can.
fn next_assignment(
    current: &CurrentAssignment,
    towards: &Towards<'_>,
    epoch: i32,
) -> CurrentAssignment {
    let mut kept: AssignedPartitions = BTreeMap::new();
    let mut revoke: Partitions = BTreeMap::new();
    let mut assign: Partitions = BTreeMap::new();
    let mut unreleased = false;
    for (topic, partitions) in &current.assigned {
        let subscribed = (towards.subscribed)(*topic);
        let target = towards.target.get(topic);
        for (partition, epoch) in partitions {
            if subscribed && target.is_some_and(|t| t.contains(partition)) {
                kept.entry(*topic).or_default().insert(*partition, *epoch);
            } else {
                revoke.entry(*topic).or_default().insert(*partition);
            }
        }
    }
    for (topic, partitions) in towards.target {
        if !(towards.subscribed)(*topic) {
            continue;
        }
        for partition in partitions {
            let held = kept.get(topic).is_some_and(|k| k.contains_key(partition));
            if held {
                continue;
            }
            let revoking_here = current
                .pending_revocation
                .get(topic)
                .is_some_and(|p| p.contains(partition));
            if !revoking_here && (towards.owned_elsewhere)(*topic, *partition) {
                unreleased = true;
            } else {
                assign.entry(*topic).or_default().insert(*partition);
            }
        }
    }
    if !revoke.is_empty() && still_owns_any(towards.owned, &revoke) {
        // Revocation first: the member keeps its epoch until it has let these go.
        return CurrentAssignment {
            member_epoch: epoch,
            previous_member_epoch: current.member_epoch,
            state: MemberState::UnrevokedPartitions,
            assigned: kept,
            pending_revocation: revoke,
        };
    }
    for (topic, partitions) in assign {
        let entry = kept.entry(topic).or_default();
        for partition in partitions {
            entry.insert(partition, towards.target_epoch);
        }
    }
    CurrentAssignment {
        member_epoch: towards.target_epoch,
        previous_member_epoch: current.member_epoch,
        state: if unreleased {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        },
        assigned: kept,
        pending_revocation: Partitions::new(),
    }
}

/// Whether the member still owns one of `revoking`; a heartbeat that did not say what it owns
/// is taken to own them all.
fn still_owns_any(owned: Option<&Partitions>, revoking: &Partitions) -> bool {
    let Some(owned) = owned else {
        return !revoking.is_empty();
    };
    revoking.iter().any(|(topic, partitions)| {
        owned
            .get(topic)
            .is_some_and(|o| partitions.iter().any(|p| o.contains(p)))
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const T: TopicId = TopicId([1; 16]);
    const U: TopicId = TopicId([2; 16]);

    fn parts(list: &[(TopicId, &[i32])]) -> Partitions {
        list.iter()
            .map(|(t, ps)| (*t, ps.iter().copied().collect::<BTreeSet<i32>>()))
            .collect()
    }

    fn assigned(list: &[(TopicId, &[(i32, i32)])]) -> AssignedPartitions {
        list.iter()
            .map(|(t, ps)| (*t, ps.iter().copied().collect()))
            .collect()
    }

    fn stable(epoch: i32, list: &[(TopicId, &[(i32, i32)])]) -> CurrentAssignment {
        CurrentAssignment {
            member_epoch: epoch,
            previous_member_epoch: epoch - 1,
            state: MemberState::Stable,
            assigned: assigned(list),
            pending_revocation: Partitions::new(),
        }
    }

    fn towards<'a>(
        epoch: i32,
        target: &'a Partitions,
        owned: Option<&'a Partitions>,
        elsewhere: &'a dyn Fn(TopicId, i32) -> bool,
    ) -> Towards<'a> {
        Towards {
            target_epoch: epoch,
            target,
            owned,
            owned_elsewhere: elsewhere,
            subscribed: &|_| true,
            subscription_changed: false,
        }
    }

    #[test]
    fn partitions_are_revoked_before_new_ones_are_assigned() {
        let current = stable(3, &[(T, &[(0, 2), (1, 3)])]);
        let target = parts(&[(T, &[1, 2])]);
        let owned = parts(&[(T, &[0, 1])]);
        let free = |_: TopicId, _: i32| false;
        let next = reconcile(&current, &towards(4, &target, Some(&owned), &free)).unwrap();
        // Partition 0 must go first: the member stays at epoch 3 and gets nothing new yet.
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(next.member_epoch, 3);
        assert_eq!(next.assigned, assigned(&[(T, &[(1, 3)])]));
        assert_eq!(next.pending_revocation, parts(&[(T, &[0])]));
        // Still owning it: nothing changes.
        let again = reconcile(&next, &towards(4, &target, Some(&owned), &free)).unwrap();
        assert_eq!(again, next);
        // Not saying what it owns counts as owning it.
        let unsaid = reconcile(&next, &towards(4, &target, None, &free)).unwrap();
        assert_eq!(unsaid, next);
        // Released: partition 2 arrives at the target epoch, partition 1 keeps its epoch.
        let released = parts(&[(T, &[1])]);
        let done = reconcile(&next, &towards(4, &target, Some(&released), &free)).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!((done.member_epoch, done.previous_member_epoch), (4, 3));
        assert_eq!(done.assigned, assigned(&[(T, &[(1, 3), (2, 4)])]));
        assert!(done.pending_revocation.is_empty());
    }

    #[test]
    fn a_partition_still_owned_elsewhere_waits_for_its_release() {
        let current = stable(3, &[(T, &[(0, 3)])]);
        let target = parts(&[(T, &[0, 1])]);
        let owned = parts(&[(T, &[0])]);
        let held = |_: TopicId, partition: i32| partition == 1;
        let next = reconcile(&current, &towards(4, &target, Some(&owned), &held)).unwrap();
        assert_eq!(next.state, MemberState::UnreleasedPartitions);
        assert_eq!(next.member_epoch, 4);
        assert_eq!(next.assigned, assigned(&[(T, &[(0, 3)])]));
        let free = |_: TopicId, _: i32| false;
        let done = reconcile(&next, &towards(4, &target, Some(&owned), &free)).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.assigned, assigned(&[(T, &[(0, 3), (1, 4)])]));
    }

    #[test]
    fn revoked_partitions_the_member_no_longer_owns_are_dropped_at_once() {
        let current = stable(3, &[(T, &[(0, 3), (1, 3)])]);
        let target = parts(&[(T, &[1])]);
        let owned = parts(&[(T, &[1])]);
        let free = |_: TopicId, _: i32| false;
        let next = reconcile(&current, &towards(5, &target, Some(&owned), &free)).unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.member_epoch, 5);
        assert_eq!(next.assigned, assigned(&[(T, &[(1, 3)])]));
    }

    #[test]
    fn a_dropped_topic_is_revoked_without_waiting_for_a_new_target() {
        let current = stable(4, &[(T, &[(0, 4)]), (U, &[(0, 4)])]);
        let target = parts(&[(T, &[0]), (U, &[0])]);
        let owned = parts(&[(T, &[0]), (U, &[0])]);
        let free = |_: TopicId, _: i32| false;
        let mut step = towards(4, &target, Some(&owned), &free);
        // Unchanged subscription at the target's epoch: nothing to do.
        assert_eq!(reconcile(&current, &step).unwrap(), current);
        let only_t = |topic: TopicId| topic == T;
        step.subscribed = &only_t;
        step.subscription_changed = true;
        let next = reconcile(&current, &step).unwrap();
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(next.member_epoch, 4);
        assert_eq!(next.assigned, assigned(&[(T, &[(0, 4)])]));
        assert_eq!(next.pending_revocation, parts(&[(U, &[0])]));
    }

    #[test]
    fn an_unknown_state_is_left_only_by_owning_nothing() {
        let current = CurrentAssignment {
            state: MemberState::Unknown,
            ..stable(2, &[(T, &[(0, 2)])])
        };
        let target = parts(&[(T, &[0])]);
        let free = |_: TopicId, _: i32| false;
        let owned = parts(&[(T, &[0])]);
        assert_eq!(
            reconcile(&current, &towards(3, &target, Some(&owned), &free)),
            Err(MustRejoin)
        );
        assert_eq!(
            reconcile(&current, &towards(3, &target, None, &free)),
            Err(MustRejoin)
        );
        let nothing = Partitions::new();
        let next = reconcile(&current, &towards(3, &target, Some(&nothing), &free)).unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.member_epoch, 3);
    }
}
