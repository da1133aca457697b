//! The middle of a streams heartbeat: the group's topology adopted (the first member's) and
//! configured against the topics, the group epoch bumped when what the group needs changed,
//! and the target assignment computed when it lags the group epoch, after the initial delay
//! and no more often than the assignment interval.

use std::collections::BTreeMap;

use ferrolog_records::streams_group_records::StreamsTopology;

use super::assignor::{self, MemberSpec, TaskId, TasksSpec};
use super::heartbeat::{StreamsHeartbeat, StreamsStatus};
use super::model::{StreamsGroup, StreamsMember};
use super::reconcile::{CurrentTasks, TaskSets};
use super::records;
use super::topology::{self, ConfigureError, ConfiguredTopology, TopicStatus};
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::{GroupCoordinator, GroupCtx};

use super::heartbeat::Refusal;

/// What a heartbeat decided besides its records: for the answer, and for what is kept in
/// memory once the records are replayed.
#[derive(Debug, Default)]
pub(super) struct Planned {
    pub member_id: String,
    pub before: CurrentTasks,
    /// The member joined, or changed in a way that needs a new target.
    pub member_changed: bool,
    pub statuses: Vec<(StreamsStatus, String)>,
    pub configured: Option<ConfiguredTopology>,
    pub metadata_hash: i64,
    pub validated_topology_epoch: i32,
    pub assignment_configs: BTreeMap<String, String>,
    /// Set when this heartbeat starts the initial rebalance delay: when it ends.
    pub delay_until: Option<i64>,
    /// The member's endpoint changed (or it replaced an incarnation of itself).
    pub endpoint_changed: bool,
    /// The member id a static member's new incarnation replaced.
    pub replaced: Option<String>,
}

impl GroupCoordinator {
    /// The topology adopted and configured, and what follows from it.
    pub(super) fn plan_topology(
        &self,
        group: &StreamsGroup,
        request: &StreamsHeartbeat,
        member: &StreamsMember,
        records: &mut Vec<OffsetsRecord>,
    ) -> Result<Planned, Refusal> {
        let (topology, adopted) = adopt_topology(group, request, records)?;
        let mut planned = Planned::default();
        if group.topology.is_some() && member.metadata.topology_epoch < topology.epoch {
            planned.statuses.push((
                StreamsStatus::StaleTopology,
                format!(
                    "The member's topology epoch {} is behind the group's topology epoch {}.",
                    member.metadata.topology_epoch, topology.epoch
                ),
            ));
        }
        let manager = self.topic.manager();
        let required: Vec<String> = topology::required_topics(&topology).into_iter().collect();
        planned.metadata_hash = crate::group::consumer::subscribed_topics_hash(manager, &required);
        let configured = match &group.configured {
            Some(configured)
                if !adopted
                    && !group.metadata_stale
                    && planned.metadata_hash == group.metadata_hash =>
            {
                configured.clone()
            }
            _ => {
                let count = |name: &str| {
                    let partitions = manager.partitions_of(name).len();
                    (partitions > 0).then_some(partitions as i32)
                };
                topology::configure(&topology, &count).map_err(|error| match error {
                    ConfigureError::InvalidTopology(message) => {
                        Refusal::new(errors::STREAMS_INVALID_TOPOLOGY, message)
                    }
                    ConfigureError::Internal(message) => {
                        tracing::warn!(group = %group.id, message, "configuring a streams topology failed");
                        Refusal::new(errors::UNKNOWN_SERVER_ERROR, None)
                    }
                })?
            }
        };
        planned.validated_topology_epoch = if configured.is_ready() {
            check_owned_tasks(request, &configured)?;
            topology.epoch
        } else {
            -1
        };
        planned.assignment_configs = BTreeMap::from([(
            "num.standby.replicas".to_owned(),
            self.config.streams.num_standby_replicas.to_string(),
        )]);
        planned.configured = Some(configured);
        Ok(planned)
    }

    /// The target epoch and the member's target; the group epoch bumped first when needed.
    pub(super) fn plan_target(
        &self,
        group: &StreamsGroup,
        member: &StreamsMember,
        inherited: Option<TaskSets>,
        planned: &mut Planned,
        ctx: &GroupCtx<'_>,
        records: &mut Vec<OffsetsRecord>,
    ) -> Result<(i32, TaskSets), Refusal> {
        let config = &self.config.streams;
        let now = ctx.now_ms;
        let bump = planned.member_changed
            || planned.metadata_hash != group.metadata_hash
            || planned.validated_topology_epoch != group.validated_topology_epoch
            || planned.assignment_configs != group.last_assignment_configs;
        let mut group_epoch = group.group_epoch;
        if bump {
            group_epoch += 1;
            records.push(records::group_metadata(
                &group.id,
                group_epoch,
                planned.metadata_hash,
                planned.validated_topology_epoch,
                &planned.assignment_configs,
            ));
        }
        let last = inherited
            .clone()
            .or_else(|| group.target.get(&member.member_id).cloned())
            .unwrap_or_default();
        let delayed_until = match group.initial_delay_until_ms {
            Some(until) => Some(until),
            None if group.members.is_empty() && config.initial_rebalance_delay_ms > 0 => {
                planned.delay_until = Some(now + config.initial_rebalance_delay_ms);
                planned.delay_until
            }
            None => None,
        };
        if delayed_until.is_some_and(|until| now < until) {
            planned.statuses.push((
                StreamsStatus::AssignmentDelayed,
                "Assignment delayed due to the configured initial rebalance delay.".to_owned(),
            ));
            return Ok((group.assignment_epoch, TaskSets::default()));
        }
        if group.assignment_epoch >= group_epoch {
            return Ok((group.assignment_epoch, last));
        }
        let interval = config.assignment_interval_ms;
        let due = group.assignment_timestamp == 0
            || interval == 0
            || now >= group.assignment_timestamp + interval;
        if !due {
            planned.statuses.push((
                StreamsStatus::AssignmentDelayed,
                "Assignment delayed due to the configured assignment interval.".to_owned(),
            ));
            return Ok((group.assignment_epoch, last));
        }
        let targets = compute_targets(group, member, planned, config.num_standby_replicas);
        for (member_id, target) in &targets {
            let old = if member_id == &member.member_id {
                inherited.as_ref().or(group.target.get(member_id))
            } else {
                group.target.get(member_id)
            };
            if old != Some(target) {
                records.push(records::target_member(&group.id, member_id, target));
            }
        }
        records.push(records::target_metadata(&group.id, group_epoch, now));
        let target = targets.get(&member.member_id).cloned().unwrap_or_default();
        Ok((group_epoch, target))
    }
}

/// The group's topology: its own, or the first member's (written as a record).
fn adopt_topology(
    group: &StreamsGroup,
    request: &StreamsHeartbeat,
    records: &mut Vec<OffsetsRecord>,
) -> Result<(StreamsTopology, bool), Refusal> {
    match (&group.topology, &request.topology) {
        (None, Some(offered)) => {
            records.push(records::topology(&group.id, offered));
            Ok((offered.clone(), true))
        }
        (None, None) => {
            tracing::warn!(group = %group.id, "a streams group without a topology");
            Err(Refusal::new(errors::UNKNOWN_SERVER_ERROR, None))
        }
        (Some(own), Some(offered))
            if offered.epoch >= own.epoch && !same_topology(own, offered) =>
        {
            Err(Refusal::new(
                errors::INVALID_REQUEST,
                "Topology updates are not supported yet.".to_owned(),
            ))
        }
        (Some(own), _) => Ok((own.clone(), false)),
    }
}

/// Whether two topologies are the same, their subtopologies compared by id (the order they
/// are declared in does not count), as Kafka compares them.
fn same_topology(a: &StreamsTopology, b: &StreamsTopology) -> bool {
    let by_id = |t: &StreamsTopology| {
        let mut subtopologies = t.subtopologies.clone();
        subtopologies.sort_by(|x, y| x.id.cmp(&y.id));
        subtopologies
    };
    a.epoch == b.epoch && by_id(a) == by_id(b)
}

/// Kafka's check that the tasks a member says it owns exist in the configured topology.
fn check_owned_tasks(
    request: &StreamsHeartbeat,
    configured: &ConfiguredTopology,
) -> Result<(), Refusal> {
    let Some(owned) = &request.owned else {
        return Ok(());
    };
    let subtopologies = configured.subtopologies.as_ref();
    for task in owned
        .active
        .iter()
        .chain(&owned.standby)
        .chain(&owned.warmup)
    {
        let Some(subtopology) = subtopologies.and_then(|s| s.get(&task.subtopology)) else {
            return Err(Refusal::new(
                errors::INVALID_REQUEST,
                format!(
                    "Subtopology {} does not exist in the topology.",
                    task.subtopology
                ),
            ));
        };
        if task.partition < 0 || task.partition >= subtopology.number_of_tasks {
            return Err(Refusal::new(
                errors::INVALID_REQUEST,
                format!(
                    "Task {} for subtopology {} is invalid. Number of tasks for this subtopology: {}",
                    task.partition, task.subtopology, subtopology.number_of_tasks
                ),
            ));
        }
    }
    Ok(())
}

/// Every member's new target: the sticky assignor over the configured topology, or nothing for
/// anyone while the topology is not ready.
fn compute_targets(
    group: &StreamsGroup,
    member: &StreamsMember,
    planned: &Planned,
    standby_replicas: u32,
) -> BTreeMap<String, TaskSets> {
    let mut members: BTreeMap<String, MemberSpec> = BTreeMap::new();
    let others = group.members.values().filter(|m| {
        m.member_id != member.member_id && Some(&m.member_id) != planned.replaced.as_ref()
    });
    for each in others.chain(std::iter::once(member)) {
        members.insert(
            each.member_id.clone(),
            MemberSpec {
                process_id: each.metadata.process_id.clone(),
                active: each.current.assigned.active.keys().cloned().collect(),
                standby: each.current.assigned.standby.clone(),
                task_offsets: each.task_offsets.clone(),
            },
        );
    }
    let ready = planned.configured.as_ref().filter(|c| c.is_ready());
    let Some(subtopologies) = ready.and_then(|c| c.subtopologies.as_ref()) else {
        return members
            .into_keys()
            .map(|id| (id, TaskSets::default()))
            .collect();
    };
    let tasks = TasksSpec {
        subtopologies: subtopologies
            .iter()
            .map(|(id, s)| (id.clone(), (s.number_of_tasks, s.is_stateful())))
            .collect(),
    };
    assignor::assign(&members, &tasks, standby_replicas)
        .into_iter()
        .map(|(id, tasks)| {
            let sets = TaskSets {
                active: tasks.active,
                standby: tasks.standby,
                warmup: Default::default(),
            };
            (id, sets)
        })
        .collect()
}

/// A topic problem as the answer's status.
pub(super) fn topic_status(status: TopicStatus) -> StreamsStatus {
    match status {
        TopicStatus::MissingSourceTopics => StreamsStatus::MissingSourceTopics,
        TopicStatus::IncorrectlyPartitionedTopics => StreamsStatus::IncorrectlyPartitionedTopics,
        TopicStatus::MissingInternalTopics => StreamsStatus::MissingInternalTopics,
    }
}

/// A reported task offset list as a map; a duplicate entry is Kafka's INVALID_REQUEST.
pub(super) fn task_offsets(list: &[(TaskId, i64)]) -> Result<BTreeMap<TaskId, i64>, Refusal> {
    let mut offsets = BTreeMap::new();
    for (task, offset) in list {
        if offsets.insert(task.clone(), *offset).is_some() {
            return Err(Refusal::new(
                errors::INVALID_REQUEST,
                format!(
                    "Task offsets contain a duplicate entry for subtopology {} and partition {}.",
                    task.subtopology, task.partition
                ),
            ));
        }
    }
    Ok(offsets)
}
