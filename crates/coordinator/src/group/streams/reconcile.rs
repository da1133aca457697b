//! How a streams member's tasks move towards its target (Kafka 4.4's streams
//! `CurrentAssignmentBuilder`), as a pure function. As with partitions in consumer groups,
//! tasks are revoked before new ones are given, and a task is given only once others have let
//! it go; but only an active task is exclusive across the group: a standby or warm-up copy is
//! held back only by the copies on the member's own process.
//!
//! Role changes are eased as Kafka eases them: an active task whose target is now a standby is
//! a standby at once (its state stays where it is), and a standby or warm-up promoted to active
//! stays a replica until the active task is granted.

use std::collections::{BTreeMap, BTreeSet};

use super::assignor::TaskId;

/// Kafka's streams `MemberState` (the byte of the current-assignment record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemberState {
    #[default]
    Stable,
    /// The member must first give up tasks it still owns.
    UnrevokedTasks,
    /// Some of its target tasks are still held by others.
    UnreleasedTasks,
    /// A state this version does not know: the member must rejoin.
    Unknown,
}

impl MemberState {
    pub fn id(self) -> i8 {
        match self {
            Self::Stable => 1,
            Self::UnrevokedTasks => 2,
            Self::UnreleasedTasks => 3,
            Self::Unknown => 127,
        }
    }

    pub fn from_id(id: i8) -> Self {
        match id {
            1 => Self::Stable,
            2 => Self::UnrevokedTasks,
            3 => Self::UnreleasedTasks,
            _ => Self::Unknown,
        }
    }
}

/// A role a member holds a task in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Active,
    Standby,
    Warmup,
}

/// Tasks by role, without epochs: a target, the tasks a member says it owns, or the tasks it
/// must revoke.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskSets {
    pub active: BTreeSet<TaskId>,
    pub standby: BTreeSet<TaskId>,
    pub warmup: BTreeSet<TaskId>,
}

impl TaskSets {
    pub fn is_empty(&self) -> bool {
        self.active.is_empty() && self.standby.is_empty() && self.warmup.is_empty()
    }

    fn intersects(&self, other: &TaskSets) -> bool {
        !self.active.is_disjoint(&other.active)
            || !self.standby.is_disjoint(&other.standby)
            || !self.warmup.is_disjoint(&other.warmup)
    }
}

/// A member's assigned tasks: each active task with the epoch it was assigned at (commits
/// from an older epoch are checked against it), and its replicas.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignedTasks {
    pub active: BTreeMap<TaskId, i32>,
    pub standby: BTreeSet<TaskId>,
    pub warmup: BTreeSet<TaskId>,
}

/// Where a member is in reconciling (the type-22 record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CurrentTasks {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub assigned: AssignedTasks,
    pub pending_revocation: TaskSets,
}

/// Who else holds a task in a role: another member anywhere, and another member of this
/// member's own process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldElsewhere {
    pub by_another_member: bool,
    pub on_this_process: bool,
}

/// What reconciling one member looks at besides its current tasks.
pub struct Towards<'a> {
    pub target_epoch: i32,
    pub target: &'a TaskSets,
    /// The tasks the member says it owns; `None` when its heartbeat did not say.
    pub owned: Option<&'a TaskSets>,
    /// Who else holds a task in a role now (assigned or still revoking).
    pub held: &'a dyn Fn(Role, &TaskId) -> HeldElsewhere,
}

impl std::fmt::Debug for Towards<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Towards")
            .field("target_epoch", &self.target_epoch)
            .field("target", self.target)
            .field("owned", &self.owned)
            .finish_non_exhaustive()
    }
}

/// The member must rejoin: its state is one the coordinator cannot continue from.
#[derive(Debug, PartialEq, Eq)]
pub struct MustRejoin;

/// The member's next tasks.
pub fn reconcile(
    current: &CurrentTasks,
    towards: &Towards<'_>,
) -> Result<CurrentTasks, MustRejoin> {
    let still_owns = |tasks: &TaskSets| towards.owned.is_none_or(|owned| owned.intersects(tasks));
    Ok(match current.state {
        MemberState::Stable if current.member_epoch == towards.target_epoch => current.clone(),
        MemberState::Stable | MemberState::UnreleasedTasks => {
            next_tasks(current, towards, current.member_epoch)
        }
        MemberState::UnrevokedTasks if still_owns(&current.pending_revocation) => current.clone(),
        // Kafka 4.4 moves on from revoking with the member epoch one higher.
        MemberState::UnrevokedTasks => next_tasks(current, towards, current.member_epoch + 1),
        MemberState::Unknown => match towards.owned {
            Some(owned) if owned.is_empty() => next_tasks(current, towards, towards.target_epoch),
            _ => return Err(MustRejoin),
        },
    })
}

/// Whether a task the member is to gain in `role` is still held where that blocks it.
fn unreleased(role: Role, task: &TaskId, held: &dyn Fn(Role, &TaskId) -> HeldElsewhere) -> bool {
    let active = held(Role::Active, task);
    let standby = held(Role::Standby, task);
    let warmup = held(Role::Warmup, task);
    match role {
        Role::Active => {
            active.by_another_member || standby.on_this_process || warmup.on_this_process
        }
        Role::Standby | Role::Warmup => {
            active.on_this_process || standby.on_this_process || warmup.on_this_process
        }
    }
}

/// One role's split: kept, to revoke, to gain (less what is still held elsewhere), and whether
/// anything was held back.
fn split(
    current: &BTreeSet<TaskId>,
    target: &BTreeSet<TaskId>,
    role: Role,
    towards: &Towards<'_>,
) -> (BTreeSet<TaskId>, BTreeSet<TaskId>, BTreeSet<TaskId>, bool) {
    let kept: BTreeSet<TaskId> = current.intersection(target).cloned().collect();
    let revoke: BTreeSet<TaskId> = current.difference(&kept).cloned().collect();
    let wanted: BTreeSet<TaskId> = target.difference(&kept).cloned().collect();
    let (blocked, gain): (BTreeSet<TaskId>, BTreeSet<TaskId>) = wanted
        .into_iter()
        .partition(|task| unreleased(role, task, towards.held));
    (kept, revoke, gain, !blocked.is_empty())
}

/// A member's tasks split against its target, role by role.
struct Split {
    kept_active: BTreeSet<TaskId>,
    gain_active: BTreeSet<TaskId>,
    kept_standby: BTreeSet<TaskId>,
    gain_standby: BTreeSet<TaskId>,
    kept_warmup: BTreeSet<TaskId>,
    gain_warmup: BTreeSet<TaskId>,
    revoke: TaskSets,
    blocked: bool,
}

fn split_all(current: &CurrentTasks, towards: &Towards<'_>) -> Split {
    let target = towards.target;
    let current_active: BTreeSet<TaskId> = current.assigned.active.keys().cloned().collect();
    let (kept_active, revoke_active, gain_active, active_blocked) =
        split(&current_active, &target.active, Role::Active, towards);
    let (mut kept_standby, mut revoke_standby, mut gain_standby, standby_blocked) = split(
        &current.assigned.standby,
        &target.standby,
        Role::Standby,
        towards,
    );
    let (kept_warmup, mut revoke_warmup, gain_warmup, warmup_blocked) = split(
        &current.assigned.warmup,
        &target.warmup,
        Role::Warmup,
        towards,
    );
    // An active task now a standby target: a standby at once, its active copy still revoked.
    let demoted: BTreeSet<TaskId> = current_active
        .intersection(&target.standby)
        .cloned()
        .collect();
    kept_standby.extend(demoted.iter().cloned());
    gain_standby.retain(|task| !demoted.contains(task));
    // A replica promoted to active is not revoked; it stays a replica until the active is
    // granted.
    revoke_standby.retain(|task| !target.active.contains(task));
    revoke_warmup.retain(|task| !target.active.contains(task));
    Split {
        kept_active,
        gain_active,
        kept_standby,
        gain_standby,
        kept_warmup,
        gain_warmup,
        revoke: TaskSets {
            active: revoke_active,
            standby: revoke_standby,
            warmup: revoke_warmup,
        },
        blocked: active_blocked || standby_blocked || warmup_blocked,
    }
}

fn next_tasks(current: &CurrentTasks, towards: &Towards<'_>, member_epoch: i32) -> CurrentTasks {
    let split = split_all(current, towards);
    let still_owned = towards
        .owned
        .is_none_or(|owned| owned.intersects(&split.revoke));
    let keep_epochs = |tasks: &BTreeSet<TaskId>| -> BTreeMap<TaskId, i32> {
        tasks
            .iter()
            .map(|task| {
                (
                    task.clone(),
                    current.assigned.active.get(task).copied().unwrap_or(0),
                )
            })
            .collect()
    };
    let mut active = keep_epochs(&split.kept_active);
    let revoking = !split.revoke.is_empty() && still_owned;
    if !revoking {
        for task in &split.gain_active {
            active.insert(task.clone(), towards.target_epoch);
        }
    }
    // A replica promoted to active stays until the active task is granted.
    let promoted =
        |task: &&TaskId| towards.target.active.contains(*task) && !active.contains_key(*task);
    let replicas =
        |assigned: &BTreeSet<TaskId>, kept: &BTreeSet<TaskId>, gain: &BTreeSet<TaskId>| {
            let gained = if revoking { None } else { Some(gain) };
            assigned
                .iter()
                .filter(promoted)
                .chain(kept)
                .chain(gained.into_iter().flatten())
                .cloned()
                .collect::<BTreeSet<TaskId>>()
        };
    let standby = replicas(
        &current.assigned.standby,
        &split.kept_standby,
        &split.gain_standby,
    );
    let warmup = replicas(
        &current.assigned.warmup,
        &split.kept_warmup,
        &split.gain_warmup,
    );
    let (member_epoch, state, pending_revocation) = if revoking {
        (member_epoch, MemberState::UnrevokedTasks, split.revoke)
    } else if split.blocked {
        (
            towards.target_epoch,
            MemberState::UnreleasedTasks,
            TaskSets::default(),
        )
    } else {
        (
            towards.target_epoch,
            MemberState::Stable,
            TaskSets::default(),
        )
    };
    CurrentTasks {
        member_epoch,
        previous_member_epoch: current.member_epoch,
        state,
        assigned: AssignedTasks {
            active,
            standby,
            warmup,
        },
        pending_revocation,
    }
}

#[cfg(test)]
mod tests;
