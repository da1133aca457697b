//! A streams group's records in `__consumer_offsets` (types 17 and 19–23, Kafka 4.4's formats):
//! what each change writes, and [`replay`], which applies a record to the group. As for
//! consumer groups, an operation writes its records and then replays them, so a group rebuilt
//! at startup is the group that ran.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_records::RecordsError;
use ferrolog_records::consumer_group_records::TargetAssignmentMetadata;
use ferrolog_records::consumer_offsets::{ConsumerRecordType, OffsetsKey};
use ferrolog_records::streams_group_records::{
    StreamsCurrentAssignment, StreamsGroupMetadata, StreamsMemberMetadata, StreamsTasks,
    StreamsTopology, TaskIds, decode_target_metadata, encode_target_metadata,
};

use super::assignor::{TaskId, partitions_by_subtopology};
use super::model::{StreamsGroup, StreamsMember};
use super::reconcile::{AssignedTasks, CurrentTasks, MemberState, TaskSets};
use crate::group::offsets_topic::OffsetsRecord;

fn key(kind: ConsumerRecordType, group: &str, sub_key: &str) -> OffsetsKey {
    OffsetsKey::Consumer {
        kind,
        group: group.to_owned(),
        sub_key: sub_key.to_owned(),
    }
}

/// Type 17: the group epoch, the topics' hash, the validated topology epoch and the assignment
/// configs.
pub fn group_metadata(
    group: &str,
    epoch: i32,
    metadata_hash: i64,
    validated_topology_epoch: i32,
    configs: &BTreeMap<String, String>,
) -> OffsetsRecord {
    let value = StreamsGroupMetadata {
        epoch,
        metadata_hash,
        validated_topology_epoch,
        last_assignment_configs: Some(
            configs
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        ..StreamsGroupMetadata::default()
    };
    (
        key(ConsumerRecordType::StreamsGroupMetadata, group, ""),
        Some(value.encode()),
    )
}

/// Type 19: a member's details.
pub fn member_metadata(
    group: &str,
    member_id: &str,
    metadata: &StreamsMemberMetadata,
) -> OffsetsRecord {
    let mut value = metadata.clone();
    value.client_tags.sort();
    (
        key(ConsumerRecordType::StreamsMemberMetadata, group, member_id),
        Some(value.encode()),
    )
}

/// Type 23: the topology.
pub fn topology(group: &str, topology: &StreamsTopology) -> OffsetsRecord {
    (
        key(ConsumerRecordType::StreamsTopology, group, ""),
        Some(topology.encode()),
    )
}

/// Type 20: the target assignment's epoch and time.
pub fn target_metadata(group: &str, epoch: i32, timestamp: i64) -> OffsetsRecord {
    let value = TargetAssignmentMetadata {
        assignment_epoch: epoch,
        assignment_timestamp: timestamp,
    };
    (
        key(
            ConsumerRecordType::StreamsTargetAssignmentMetadata,
            group,
            "",
        ),
        Some(encode_target_metadata(&value)),
    )
}

/// Type 21: a member's target tasks.
pub fn target_member(group: &str, member_id: &str, target: &TaskSets) -> OffsetsRecord {
    let value = StreamsTasks {
        active: task_ids(&target.active, None),
        standby: task_ids(&target.standby, None),
        warmup: task_ids(&target.warmup, None),
    };
    (
        key(
            ConsumerRecordType::StreamsTargetAssignmentMember,
            group,
            member_id,
        ),
        Some(value.encode()),
    )
}

/// Type 22: a member's current tasks.
pub fn current_assignment(group: &str, member_id: &str, current: &CurrentTasks) -> OffsetsRecord {
    let active: BTreeSet<TaskId> = current.assigned.active.keys().cloned().collect();
    let value = StreamsCurrentAssignment {
        member_epoch: current.member_epoch,
        previous_member_epoch: current.previous_member_epoch,
        state: current.state.id(),
        tasks: StreamsTasks {
            active: task_ids(&active, Some(&current.assigned.active)),
            standby: task_ids(&current.assigned.standby, None),
            warmup: task_ids(&current.assigned.warmup, None),
        },
        pending_revocation: StreamsTasks {
            active: task_ids(&current.pending_revocation.active, None),
            standby: task_ids(&current.pending_revocation.standby, None),
            warmup: task_ids(&current.pending_revocation.warmup, None),
        },
    };
    (
        key(
            ConsumerRecordType::StreamsCurrentMemberAssignment,
            group,
            member_id,
        ),
        Some(value.encode()),
    )
}

/// The tombstones of a member leaving: its current tasks, its target, its details.
pub fn member_tombstones(group: &str, member_id: &str) -> [OffsetsRecord; 3] {
    [
        (
            key(
                ConsumerRecordType::StreamsCurrentMemberAssignment,
                group,
                member_id,
            ),
            None,
        ),
        (
            key(
                ConsumerRecordType::StreamsTargetAssignmentMember,
                group,
                member_id,
            ),
            None,
        ),
        (
            key(ConsumerRecordType::StreamsMemberMetadata, group, member_id),
            None,
        ),
    ]
}

/// The tombstones deleting an empty group, in Kafka's order.
pub fn group_tombstones(group: &str) -> [OffsetsRecord; 3] {
    [
        (
            key(
                ConsumerRecordType::StreamsTargetAssignmentMetadata,
                group,
                "",
            ),
            None,
        ),
        (
            key(ConsumerRecordType::StreamsGroupMetadata, group, ""),
            None,
        ),
        (key(ConsumerRecordType::StreamsTopology, group, ""), None),
    ]
}

/// Tasks grouped by subtopology, sorted, with each active task's epoch when given.
fn task_ids(tasks: &BTreeSet<TaskId>, epochs: Option<&BTreeMap<TaskId, i32>>) -> Vec<TaskIds> {
    partitions_by_subtopology(tasks)
        .into_iter()
        .map(|(subtopology, partitions)| TaskIds {
            assignment_epochs: epochs.map(|epochs| {
                partitions
                    .iter()
                    .map(|p| {
                        epochs
                            .get(&TaskId::new(&subtopology, *p))
                            .copied()
                            .unwrap_or(0)
                    })
                    .collect()
            }),
            subtopology_id: subtopology,
            partitions,
        })
        .collect()
}

fn task_set(ids: &[TaskIds]) -> BTreeSet<TaskId> {
    ids.iter()
        .flat_map(|ids| {
            ids.partitions
                .iter()
                .map(|p| TaskId::new(&ids.subtopology_id, *p))
        })
        .collect()
}

fn tasks_of(tasks: &StreamsTasks) -> TaskSets {
    TaskSets {
        active: task_set(&tasks.active),
        standby: task_set(&tasks.standby),
        warmup: task_set(&tasks.warmup),
    }
}

/// Active tasks with their epochs; a record without epochs gives each the member's epoch.
fn active_with_epochs(ids: &[TaskIds], member_epoch: i32) -> BTreeMap<TaskId, i32> {
    let mut active = BTreeMap::new();
    for ids in ids {
        for (index, partition) in ids.partitions.iter().enumerate() {
            let epoch = ids
                .assignment_epochs
                .as_ref()
                .and_then(|epochs| epochs.get(index).copied())
                .unwrap_or(member_epoch);
            active.insert(TaskId::new(&ids.subtopology_id, *partition), epoch);
        }
    }
    active
}

fn member_entry<'a>(group: &'a mut StreamsGroup, member_id: &str) -> &'a mut StreamsMember {
    group
        .members
        .entry(member_id.to_owned())
        .or_insert_with(|| StreamsMember {
            member_id: member_id.to_owned(),
            ..StreamsMember::default()
        })
}

/// Applies one of the group's records; a record that does not decode changes nothing and is
/// returned as the error. The group's own tombstone (type 17) is the caller's.
pub fn replay(
    group: &mut StreamsGroup,
    kind: ConsumerRecordType,
    sub_key: &str,
    value: Option<&[u8]>,
) -> Result<(), RecordsError> {
    use ConsumerRecordType as Kind;
    match (kind, value) {
        (Kind::StreamsGroupMetadata, Some(bytes)) => {
            let value = StreamsGroupMetadata::decode(bytes)?;
            group.group_epoch = value.epoch;
            group.metadata_hash = value.metadata_hash;
            group.validated_topology_epoch = value.validated_topology_epoch;
            group.last_assignment_configs = value
                .last_assignment_configs
                .unwrap_or_default()
                .into_iter()
                .collect();
        }
        (Kind::StreamsMemberMetadata, Some(bytes)) => {
            let metadata = StreamsMemberMetadata::decode(bytes)?;
            if let Some(instance) = &metadata.instance_id {
                group
                    .static_members
                    .insert(instance.clone(), sub_key.to_owned());
            }
            member_entry(group, sub_key).metadata = metadata;
        }
        (Kind::StreamsMemberMetadata, None) => {
            group.remove_member(sub_key);
        }
        (Kind::StreamsTargetAssignmentMetadata, Some(bytes)) => {
            let value = decode_target_metadata(bytes)?;
            group.assignment_epoch = value.assignment_epoch;
            group.assignment_timestamp = value.assignment_timestamp;
        }
        (Kind::StreamsTargetAssignmentMetadata, None) => {
            group.assignment_epoch = -1;
            group.assignment_timestamp = 0;
        }
        (Kind::StreamsTargetAssignmentMember, Some(bytes)) => {
            let value = StreamsTasks::decode(bytes)?;
            group.target.insert(sub_key.to_owned(), tasks_of(&value));
        }
        (Kind::StreamsTargetAssignmentMember, None) => {
            group.target.remove(sub_key);
        }
        (Kind::StreamsCurrentMemberAssignment, Some(bytes)) => {
            let value = StreamsCurrentAssignment::decode(bytes)?;
            let current = CurrentTasks {
                member_epoch: value.member_epoch,
                previous_member_epoch: value.previous_member_epoch,
                state: MemberState::from_id(value.state),
                assigned: AssignedTasks {
                    active: active_with_epochs(&value.tasks.active, value.member_epoch),
                    standby: task_set(&value.tasks.standby),
                    warmup: task_set(&value.tasks.warmup),
                },
                pending_revocation: tasks_of(&value.pending_revocation),
            };
            member_entry(group, sub_key).current = current;
        }
        (Kind::StreamsCurrentMemberAssignment, None) => {
            if let Some(member) = group.members.get_mut(sub_key) {
                member.current = CurrentTasks {
                    member_epoch: -1,
                    previous_member_epoch: -1,
                    ..CurrentTasks::default()
                };
            }
        }
        (Kind::StreamsTopology, Some(bytes)) => {
            group.topology = Some(StreamsTopology::decode(bytes)?);
            group.configured = None;
            group.metadata_stale = true;
        }
        (Kind::StreamsTopology, None) => group.topology = None,
        // The group's tombstone is the caller's; other kinds are not a streams group's.
        (_, _) => {}
    }
    Ok(())
}
