//! The end of a streams heartbeat, once its records are replayed: what Kafka keeps only in
//! memory (the configured topology, reported offsets, the delay, a shutdown request, the
//! timers, the endpoint epoch), and the answer with its statuses, the member's tasks when they
//! changed, and the partitions behind each member's endpoint when the member's view is old.

use std::collections::BTreeMap;

use super::heartbeat::{EndpointPartitions, StreamsAnswer, StreamsHeartbeat, StreamsStatus};
use super::model::{StreamsGroup, StreamsMember};
use super::reconcile::{MemberState, TaskSets};
use super::target::{Planned, task_offsets, topic_status};
use super::topology::{ConfiguredTopology, TopicStatus};
use crate::errors;
use crate::group::GroupCoordinator;

impl GroupCoordinator {
    pub(super) fn settle(
        &self,
        group: &mut StreamsGroup,
        request: &StreamsHeartbeat,
        planned: &Planned,
        now: i64,
    ) -> StreamsAnswer {
        let config = &self.config.streams;
        group.configured.clone_from(&planned.configured);
        group.metadata_stale = false;
        if let Some(until) = planned.delay_until {
            group.initial_delay_until_ms = Some(until);
        }
        if request.shutdown_application && group.shutdown_requested_by.is_none() {
            group.shutdown_requested_by = Some(planned.member_id.clone());
        }
        let Some(member) = group.members.get_mut(&planned.member_id) else {
            debug_assert!(false, "the member of a heartbeat just written is missing");
            return StreamsAnswer::error(errors::UNKNOWN_SERVER_ERROR, None);
        };
        if let Some(Ok(offsets)) = request.task_offsets.as_deref().map(task_offsets) {
            member.task_offsets = offsets;
        }
        if let Some(Ok(offsets)) = request.task_end_offsets.as_deref().map(task_offsets) {
            member.task_end_offsets = offsets;
        }
        member.session_deadline_ms = now + i64::from(config.session_timeout_ms);
        if member.current.state != MemberState::UnrevokedTasks {
            member.rebalance_deadline = None;
        } else if member.current != planned.before {
            let timeout = i64::from(member.metadata.rebalance_timeout_ms.max(0));
            member.rebalance_deadline = Some((now + timeout, member.current.member_epoch));
        }
        let tasks_changed = member.current.assigned != planned.before.assigned;
        let endpoint_changed = planned.endpoint_changed;
        let member_epoch = member.current.member_epoch;
        let tasks = (request.member_epoch == 0 || tasks_changed).then(|| assigned_sets(member));
        if endpoint_changed || (tasks_changed && member.metadata.user_endpoint.is_some()) {
            group.endpoint_epoch += 1;
        }
        let statuses = statuses(group, planned);
        let partitions_by_endpoint = (group.endpoint_epoch != request.endpoint_epoch)
            .then(|| self.endpoint_partitions(group, &planned.member_id));
        let to_create = planned
            .configured
            .as_ref()
            .filter(|c| {
                c.problem
                    .as_ref()
                    .is_some_and(|p| p.status == TopicStatus::MissingInternalTopics)
            })
            .map(|c| c.to_create.clone())
            .unwrap_or_default();
        StreamsAnswer {
            member_id: planned.member_id.clone(),
            member_epoch,
            heartbeat_interval_ms: config.heartbeat_interval_ms,
            task_offset_interval_ms: config.task_offset_interval_ms,
            acceptable_recovery_lag: config.acceptable_recovery_lag,
            statuses,
            tasks,
            endpoint_epoch: group.endpoint_epoch,
            partitions_by_endpoint,
            to_create,
            ..StreamsAnswer::default()
        }
    }

    /// The partitions each member with an endpoint works on, the member itself last.
    fn endpoint_partitions(
        &self,
        group: &StreamsGroup,
        member_id: &str,
    ) -> Vec<EndpointPartitions> {
        let manager = self.topic.manager();
        let count = |topic: &str| manager.partitions_of(topic).len() as i32;
        let others = group.members.values().filter(|m| m.member_id != member_id);
        others
            .chain(group.members.get(member_id))
            .filter_map(|member| {
                let endpoint = member.metadata.user_endpoint.clone()?;
                let configured = group.configured.as_ref();
                let tasks = assigned_sets(member);
                let replicas = tasks.standby.iter().chain(&tasks.warmup).cloned().collect();
                Some(EndpointPartitions {
                    endpoint,
                    active: partitions_of(configured, &tasks.active, &count),
                    standby: partitions_of(configured, &replicas, &count),
                })
            })
            .collect()
    }
}

/// The member's assigned tasks without their epochs.
pub(super) fn assigned_sets(member: &StreamsMember) -> TaskSets {
    TaskSets {
        active: member.current.assigned.active.keys().cloned().collect(),
        standby: member.current.assigned.standby.clone(),
        warmup: member.current.assigned.warmup.clone(),
    }
}

/// The source and repartition-source partitions behind `tasks`, by topic.
fn partitions_of(
    configured: Option<&ConfiguredTopology>,
    tasks: &std::collections::BTreeSet<super::assignor::TaskId>,
    count: &dyn Fn(&str) -> i32,
) -> BTreeMap<String, Vec<i32>> {
    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    let Some(subtopologies) = configured.and_then(|c| c.subtopologies.as_ref()) else {
        return by_topic;
    };
    for task in tasks {
        let Some(subtopology) = subtopologies.get(&task.subtopology) else {
            continue;
        };
        let topics = subtopology
            .source_topics
            .iter()
            .chain(subtopology.repartition_source_topics.keys());
        for topic in topics {
            if task.partition < count(topic) {
                by_topic
                    .entry(topic.clone())
                    .or_default()
                    .push(task.partition);
            }
        }
    }
    for partitions in by_topic.values_mut() {
        partitions.sort_unstable();
        partitions.dedup();
    }
    by_topic
}

/// The answer's statuses in Kafka's order: stale topology, assignment delayed, the topics'
/// problem, the application's shutdown.
fn statuses(group: &StreamsGroup, planned: &Planned) -> Vec<(StreamsStatus, String)> {
    let mut statuses = planned.statuses.clone();
    if let Some(problem) = planned.configured.as_ref().and_then(|c| c.problem.as_ref()) {
        statuses.push((topic_status(problem.status), problem.detail.clone()));
    }
    if let Some(requester) = &group.shutdown_requested_by {
        statuses.push((
            StreamsStatus::ShutdownApplication,
            format!(
                "Streams group member {requester} encountered a fatal error and requested a shutdown for the entire application."
            ),
        ));
    }
    statuses
}
