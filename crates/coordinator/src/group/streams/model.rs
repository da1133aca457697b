//! A streams group as plain data: what its records say (epochs, topology, members, targets,
//! current tasks) and, apart, what Kafka keeps only in memory (the configured topology, the
//! members' reported task offsets, the endpoint epoch, the timers). [`super::records::replay`]
//! is the only writer of the recorded part.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_records::streams_group_records::{StreamsMemberMetadata, StreamsTopology};

use super::assignor::TaskId;
use super::reconcile::{CurrentTasks, HeldElsewhere, MemberState, Role, TaskSets};
use super::topology::ConfiguredTopology;

/// One member.
#[derive(Debug, Clone, Default)]
pub struct StreamsMember {
    pub member_id: String,
    pub metadata: StreamsMemberMetadata,
    pub current: CurrentTasks,
    /// When the member is fenced unless it heartbeats again.
    pub session_deadline_ms: i64,
    /// While it revokes tasks: when it is fenced unless it has, and the epoch it must still be
    /// at for that.
    pub rebalance_deadline: Option<(i64, i32)>,
    /// The changelog offsets and end offsets it last reported (in memory, as Kafka's).
    pub task_offsets: BTreeMap<TaskId, i64>,
    pub task_end_offsets: BTreeMap<TaskId, i64>,
}

/// A streams group.
#[derive(Debug, Clone, Default)]
pub struct StreamsGroup {
    pub id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    /// The topology epoch last configured ready, or -1.
    pub validated_topology_epoch: i32,
    /// The assignment configs the target was last computed with (sorted).
    pub last_assignment_configs: BTreeMap<String, String>,
    pub assignment_epoch: i32,
    pub assignment_timestamp: i64,
    pub topology: Option<StreamsTopology>,
    pub members: BTreeMap<String, StreamsMember>,
    /// Each member's target tasks.
    pub target: BTreeMap<String, TaskSets>,
    /// Static members: instance id → member id.
    pub static_members: BTreeMap<String, String>,
    /// The topology configured against the topics, until the topics change (in memory).
    pub configured: Option<ConfiguredTopology>,
    /// Whether topics changed since the topology was configured: configure again.
    pub metadata_stale: bool,
    /// Bumped whenever the members' endpoints or tasks change (in memory, as Kafka's).
    pub endpoint_epoch: i32,
    /// No target is computed before this (`group.streams.initial.rebalance.delay.ms`).
    pub initial_delay_until_ms: Option<i64>,
    /// The member that asked the whole application to shut down (in memory).
    pub shutdown_requested_by: Option<String>,
}

/// The group states StreamsGroupDescribe and ListGroups report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamsGroupState {
    Empty,
    NotReady,
    Assigning,
    Reconciling,
    Stable,
}

impl StreamsGroupState {
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::NotReady => "NotReady",
            Self::Assigning => "Assigning",
            Self::Reconciling => "Reconciling",
            Self::Stable => "Stable",
        }
    }
}

impl StreamsGroup {
    /// A new group: epochs start at 1, as Kafka's.
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            group_epoch: 1,
            assignment_epoch: 1,
            validated_topology_epoch: -1,
            metadata_stale: true,
            ..Self::default()
        }
    }

    /// Empty without members; NotReady until its topology is validated; Assigning while the
    /// target lags the group epoch; Reconciling while a member is not at the target; Stable.
    pub fn state(&self) -> StreamsGroupState {
        let validated = self
            .topology
            .as_ref()
            .is_some_and(|topology| topology.epoch == self.validated_topology_epoch);
        if self.members.is_empty() {
            StreamsGroupState::Empty
        } else if !validated {
            StreamsGroupState::NotReady
        } else if self.group_epoch > self.assignment_epoch {
            StreamsGroupState::Assigning
        } else if self.members.values().any(|member| {
            member.current.state != MemberState::Stable
                || member.current.member_epoch != self.assignment_epoch
        }) {
            StreamsGroupState::Reconciling
        } else {
            StreamsGroupState::Stable
        }
    }

    /// Who but the members `ignored` (the one asking, and an incarnation it replaces) holds
    /// `task` in `role` (assigned or still revoking), anywhere and on `process_id`.
    pub fn held_elsewhere(
        &self,
        ignored: &[&str],
        process_id: &str,
        role: Role,
        task: &TaskId,
    ) -> HeldElsewhere {
        let mut held = HeldElsewhere::default();
        let others = self
            .members
            .values()
            .filter(|m| !ignored.contains(&m.member_id.as_str()));
        for other in others {
            let current = &other.current;
            let holds = match role {
                Role::Active => {
                    current.assigned.active.contains_key(task)
                        || current.pending_revocation.active.contains(task)
                }
                Role::Standby => {
                    current.assigned.standby.contains(task)
                        || current.pending_revocation.standby.contains(task)
                }
                Role::Warmup => {
                    current.assigned.warmup.contains(task)
                        || current.pending_revocation.warmup.contains(task)
                }
            };
            if holds {
                held.by_another_member = true;
                held.on_this_process |= other.metadata.process_id == process_id;
            }
        }
        held
    }

    /// Every topic the group's topology needs to exist (see [`super::topology::required_topics`]).
    pub fn required_topics(&self) -> BTreeSet<String> {
        self.topology
            .as_ref()
            .map(super::topology::required_topics)
            .unwrap_or_default()
    }

    /// As Kafka after a load: every member's session runs from now, and a member still
    /// revoking has its rebalance timeout to finish.
    pub fn arm_loaded_timers(&mut self, now: i64, session_timeout_ms: i32) {
        for member in self.members.values_mut() {
            member.session_deadline_ms = now + i64::from(session_timeout_ms);
            if member.current.state == MemberState::UnrevokedTasks {
                let timeout = i64::from(member.metadata.rebalance_timeout_ms.max(0));
                member.rebalance_deadline = Some((now + timeout, member.current.member_epoch));
            }
        }
    }

    /// Removes a member and its target.
    pub(super) fn remove_member(&mut self, member_id: &str) -> Option<StreamsMember> {
        let member = self.members.remove(member_id)?;
        if let Some(instance) = &member.metadata.instance_id
            && self.static_members.get(instance).map(String::as_str) == Some(member_id)
        {
            self.static_members.remove(instance);
        }
        if self.members.is_empty() {
            // The next member to arrive starts over: a shutdown asked for is over, and the
            // first target waits for the initial delay again.
            self.shutdown_requested_by = None;
            self.initial_delay_until_ms = None;
        }
        Some(member)
    }

    /// Checks what every write must leave true: no active task has two owners.
    pub(super) fn check_invariants(&self) {
        if cfg!(debug_assertions) {
            let mut owners: BTreeMap<&TaskId, &str> = BTreeMap::new();
            for member in self.members.values() {
                let current = &member.current;
                for task in current
                    .assigned
                    .active
                    .keys()
                    .chain(&current.pending_revocation.active)
                {
                    let previous = owners.insert(task, &member.member_id);
                    debug_assert!(
                        previous.is_none(),
                        "group {}: task {task:?} is active on {} and {}",
                        self.id,
                        previous.unwrap_or_default(),
                        member.member_id
                    );
                }
            }
        }
    }
}
