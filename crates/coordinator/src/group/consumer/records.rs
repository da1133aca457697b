//! A consumer group's records in `__consumer_offsets` (types 3 to 8 and 16, Kafka 4.4's
//! formats): what each change writes, and [`replay`], which applies a record to the group.
//! Replay is the only way the group's stored state changes, at load and for live changes
//! alike: an operation writes its records, then replays them.

use std::collections::BTreeMap;

use ferrolog_records::RecordsError;
use ferrolog_records::consumer_group_records::{
    ConsumerGroupMetadata, ConsumerMemberMetadata, CurrentMemberAssignment, RegularExpressionValue,
    TargetAssignmentMember, TargetAssignmentMetadata, TopicPartitions,
};
use ferrolog_records::consumer_offsets::{ConsumerRecordType, OffsetsKey};
use ferrolog_storage::manager::TopicId;

use super::model::{
    AssignedPartitions, ConsumerGroup, ConsumerMember, CurrentAssignment, MemberState, Partitions,
    ResolvedRegex, Subscription,
};
use crate::group::offsets_topic::OffsetsRecord;

fn key(kind: ConsumerRecordType, group: &str, sub_key: &str) -> OffsetsKey {
    OffsetsKey::Consumer {
        kind,
        group: group.to_owned(),
        sub_key: sub_key.to_owned(),
    }
}

/// Type 3: the group epoch.
pub fn group_epoch(group: &str, epoch: i32, metadata_hash: i64) -> OffsetsRecord {
    let value = ConsumerGroupMetadata {
        epoch,
        metadata_hash,
    };
    (
        key(ConsumerRecordType::GroupMetadata, group, ""),
        Some(value.encode()),
    )
}

/// Type 5: a member's subscription.
pub fn member_metadata(group: &str, member_id: &str, subscription: &Subscription) -> OffsetsRecord {
    let value = ConsumerMemberMetadata {
        instance_id: subscription.instance_id.clone(),
        rack_id: subscription.rack_id.clone(),
        client_id: subscription.client_id.clone(),
        client_host: subscription.client_host.clone(),
        subscribed_topic_names: subscription.topic_names.clone(),
        subscribed_topic_regex: subscription.topic_regex.clone(),
        rebalance_timeout_ms: subscription.rebalance_timeout_ms,
        server_assignor: subscription.server_assignor.clone(),
        classic: subscription.classic.clone(),
    };
    (
        key(ConsumerRecordType::MemberMetadata, group, member_id),
        Some(value.encode()),
    )
}

/// Type 6: the target assignment's epoch and time.
pub fn target_metadata(group: &str, epoch: i32, timestamp: i64) -> OffsetsRecord {
    let value = TargetAssignmentMetadata {
        assignment_epoch: epoch,
        assignment_timestamp: timestamp,
    };
    (
        key(ConsumerRecordType::TargetAssignmentMetadata, group, ""),
        Some(value.encode()),
    )
}

/// Type 7: a member's target assignment.
pub fn target_member(group: &str, member_id: &str, target: &Partitions) -> OffsetsRecord {
    let value = TargetAssignmentMember {
        partitions: to_topic_partitions(target),
    };
    (
        key(ConsumerRecordType::TargetAssignmentMember, group, member_id),
        Some(value.encode()),
    )
}

/// Type 8: a member's current assignment.
pub fn current_assignment(
    group: &str,
    member_id: &str,
    current: &CurrentAssignment,
) -> OffsetsRecord {
    let value = CurrentMemberAssignment {
        member_epoch: current.member_epoch,
        previous_member_epoch: current.previous_member_epoch,
        state: current.state.id(),
        assigned: current
            .assigned
            .iter()
            .map(|(topic, partitions)| TopicPartitions {
                topic_id: topic.0,
                partitions: partitions.keys().copied().collect(),
                assignment_epochs: partitions.values().copied().collect(),
            })
            .collect(),
        pending_revocation: to_topic_partitions(&current.pending_revocation),
    };
    (
        key(
            ConsumerRecordType::CurrentMemberAssignment,
            group,
            member_id,
        ),
        Some(value.encode()),
    )
}

/// Type 16: what a regular expression resolved to.
pub fn regex(group: &str, regex: &str, resolved: &ResolvedRegex) -> OffsetsRecord {
    let value = RegularExpressionValue {
        topics: resolved.topics.iter().cloned().collect(),
        version: resolved.version,
        timestamp: resolved.timestamp,
    };
    (
        key(ConsumerRecordType::RegularExpression, group, regex),
        Some(value.encode()),
    )
}

/// A tombstone of one of the group's records.
pub fn tombstone(kind: ConsumerRecordType, group: &str, sub_key: &str) -> OffsetsRecord {
    (key(kind, group, sub_key), None)
}

/// The tombstones that remove a member, in Kafka's order: its current assignment, its target,
/// then its subscription.
pub fn member_tombstones(group: &str, member_id: &str) -> [OffsetsRecord; 3] {
    [
        tombstone(
            ConsumerRecordType::CurrentMemberAssignment,
            group,
            member_id,
        ),
        tombstone(ConsumerRecordType::TargetAssignmentMember, group, member_id),
        tombstone(ConsumerRecordType::MemberMetadata, group, member_id),
    ]
}

fn to_topic_partitions(partitions: &Partitions) -> Vec<TopicPartitions> {
    partitions
        .iter()
        .map(|(topic, partitions)| TopicPartitions {
            topic_id: topic.0,
            partitions: partitions.iter().copied().collect(),
            assignment_epochs: Vec::new(),
        })
        .collect()
}

fn from_topic_partitions(topics: Vec<TopicPartitions>) -> Partitions {
    let mut partitions = Partitions::new();
    for topic in topics {
        partitions
            .entry(TopicId(topic.topic_id))
            .or_default()
            .extend(topic.partitions);
    }
    partitions
}

/// Applies one of the group's records; a record that does not decode changes nothing and is
/// returned as the error.
pub fn replay(
    group: &mut ConsumerGroup,
    kind: ConsumerRecordType,
    sub_key: &str,
    value: Option<&[u8]>,
) -> Result<(), RecordsError> {
    use ConsumerRecordType as Kind;
    match (kind, value) {
        (Kind::GroupMetadata, Some(bytes)) => {
            let value = ConsumerGroupMetadata::decode(bytes)?;
            group.group_epoch = value.epoch;
            group.metadata_hash = value.metadata_hash;
        }
        // The group itself is removed by the caller, which keeps its offsets.
        (Kind::GroupMetadata, None) | (Kind::PartitionMetadata, _) => {}
        (Kind::MemberMetadata, Some(bytes)) => replay_member(group, sub_key, bytes)?,
        (Kind::MemberMetadata, None) => {
            group.remove_member(sub_key);
        }
        (Kind::TargetAssignmentMetadata, Some(bytes)) => {
            let value = TargetAssignmentMetadata::decode(bytes)?;
            group.assignment_epoch = value.assignment_epoch;
            group.assignment_timestamp = value.assignment_timestamp;
        }
        (Kind::TargetAssignmentMetadata, None) => {
            group.assignment_epoch = 0;
            group.assignment_timestamp = 0;
        }
        (Kind::TargetAssignmentMember, Some(bytes)) => {
            let value = TargetAssignmentMember::decode(bytes)?;
            group
                .target
                .insert(sub_key.to_owned(), from_topic_partitions(value.partitions));
        }
        (Kind::TargetAssignmentMember, None) => {
            group.target.remove(sub_key);
        }
        (Kind::CurrentMemberAssignment, Some(bytes)) => {
            let value = CurrentMemberAssignment::decode(bytes)?;
            let current = CurrentAssignment {
                member_epoch: value.member_epoch,
                previous_member_epoch: value.previous_member_epoch,
                state: MemberState::from_id(value.state),
                assigned: assigned_from(value.assigned, value.member_epoch),
                pending_revocation: from_topic_partitions(value.pending_revocation),
            };
            ensure_member(group, sub_key);
            group.set_current(sub_key, current);
        }
        (Kind::CurrentMemberAssignment, None) => {
            // The member is leaving: it owns nothing from here on.
            if group.members.contains_key(sub_key) {
                group.set_current(
                    sub_key,
                    CurrentAssignment {
                        member_epoch: -1,
                        previous_member_epoch: -1,
                        ..CurrentAssignment::default()
                    },
                );
            }
        }
        (Kind::RegularExpression, Some(bytes)) => {
            let value = RegularExpressionValue::decode(bytes)?;
            group.regexes.insert(
                sub_key.to_owned(),
                ResolvedRegex {
                    topics: value.topics.into_iter().collect(),
                    version: value.version,
                    timestamp: value.timestamp,
                },
            );
        }
        (Kind::RegularExpression, None) => {
            group.regexes.remove(sub_key);
        }
        // A streams group's records are its own (`streams::records`).
        (kind, _) if kind.is_streams() => {}
        (_, _) => {}
    }
    Ok(())
}

fn replay_member(
    group: &mut ConsumerGroup,
    member_id: &str,
    bytes: &[u8],
) -> Result<(), RecordsError> {
    let value = ConsumerMemberMetadata::decode(bytes)?;
    let mut topic_names = value.subscribed_topic_names;
    topic_names.sort();
    topic_names.dedup();
    let subscription = Subscription {
        instance_id: value.instance_id,
        rack_id: value.rack_id,
        client_id: value.client_id,
        client_host: value.client_host,
        topic_names,
        topic_regex: value.subscribed_topic_regex,
        rebalance_timeout_ms: value.rebalance_timeout_ms,
        server_assignor: value.server_assignor,
        classic: value.classic,
    };
    ensure_member(group, member_id);
    if let Some(instance) = &subscription.instance_id {
        group
            .static_members
            .insert(instance.clone(), member_id.to_owned());
    }
    if let Some(member) = group.members.get_mut(member_id) {
        member.subscription = subscription;
    }
    Ok(())
}

fn ensure_member(group: &mut ConsumerGroup, member_id: &str) {
    group
        .members
        .entry(member_id.to_owned())
        .or_insert_with(|| ConsumerMember {
            member_id: member_id.to_owned(),
            ..ConsumerMember::default()
        });
}

/// Assigned partitions with their epochs; a record without epochs (written before Kafka kept
/// them) takes the member's epoch for each.
fn assigned_from(topics: Vec<TopicPartitions>, member_epoch: i32) -> AssignedPartitions {
    let mut assigned: AssignedPartitions = BTreeMap::new();
    for topic in topics {
        let entry = assigned.entry(TopicId(topic.topic_id)).or_default();
        if topic.assignment_epochs.len() == topic.partitions.len() {
            entry.extend(topic.partitions.into_iter().zip(topic.assignment_epochs));
        } else {
            entry.extend(topic.partitions.into_iter().map(|p| (p, member_epoch)));
        }
    }
    assigned
}
