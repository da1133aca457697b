//! A share group's records in `__consumer_offsets` (types 10–15, Kafka 4.4's formats): what
//! each change writes, and [`replay`], which applies a record to the group. An operation
//! writes its records and then replays them, so a group rebuilt at startup is the group that
//! ran.

use std::collections::BTreeSet;

use ferrolog_records::RecordsError;
use ferrolog_records::consumer_group_records::TargetAssignmentMetadata;
use ferrolog_records::consumer_offsets::{ConsumerRecordType as Kind, OffsetsKey};
use ferrolog_records::share_group_records::{
    ShareCurrentAssignment, ShareGroupMetadata, ShareMemberMetadata, ShareStatePartitions,
    ShareTopicPartitions, StateTopic, decode_target_member, encode_target_member,
};
use ferrolog_storage::manager::TopicId;

use super::model::{NamedPartitions, ShareGroup, ShareMember, StatePartitions};
use crate::group::consumer::Partitions;
use crate::group::offsets_topic::OffsetsRecord;

fn key(kind: Kind, group: &str, member: &str) -> OffsetsKey {
    OffsetsKey::Consumer {
        kind,
        group: group.to_owned(),
        sub_key: member.to_owned(),
    }
}

fn topics(partitions: &Partitions) -> Vec<ShareTopicPartitions> {
    partitions
        .iter()
        .map(|(id, set)| ShareTopicPartitions {
            topic_id: id.0,
            partitions: set.iter().copied().collect(),
        })
        .collect()
}

fn partitions(topics: Vec<ShareTopicPartitions>) -> Partitions {
    let mut out = Partitions::new();
    for topic in topics {
        out.entry(TopicId(topic.topic_id))
            .or_default()
            .extend(topic.partitions);
    }
    out
}

/// Type 10: a member's subscription (sorted) and client details.
pub fn member_metadata(group: &str, member: &ShareMember) -> OffsetsRecord {
    let value = ShareMemberMetadata {
        rack_id: member.rack_id.clone(),
        client_id: member.client_id.clone(),
        client_host: member.client_host.clone(),
        subscribed_topic_names: member.subscribed.clone(),
    };
    (
        key(Kind::ShareMemberMetadata, group, &member.member_id),
        Some(value.encode()),
    )
}

/// Type 11: the group epoch and metadata hash.
pub fn group_metadata(group: &str, epoch: i32, metadata_hash: i64) -> OffsetsRecord {
    let value = ShareGroupMetadata {
        epoch,
        metadata_hash,
    };
    (
        key(Kind::ShareGroupMetadata, group, ""),
        Some(value.encode()),
    )
}

/// Type 12: the target assignment's epoch and time.
pub fn target_metadata(group: &str, epoch: i32, timestamp: i64) -> OffsetsRecord {
    let value = TargetAssignmentMetadata {
        assignment_epoch: epoch,
        assignment_timestamp: timestamp,
    };
    (
        key(Kind::ShareTargetAssignmentMetadata, group, ""),
        Some(value.encode()),
    )
}

/// Type 13: a member's target.
pub fn target_member(group: &str, member_id: &str, target: &Partitions) -> OffsetsRecord {
    let value = encode_target_member(&topics(target));
    (
        key(Kind::ShareTargetAssignmentMember, group, member_id),
        Some(value),
    )
}

/// Type 14: a member's epochs and assigned partitions (always state 0, stable).
pub fn current_assignment(group: &str, member: &ShareMember) -> OffsetsRecord {
    let value = ShareCurrentAssignment {
        member_epoch: member.member_epoch,
        previous_member_epoch: member.previous_member_epoch,
        state: 0,
        assigned: topics(&member.assigned),
    };
    (
        key(Kind::ShareCurrentMemberAssignment, group, &member.member_id),
        Some(value.encode()),
    )
}

/// Type 15: which partitions have share state.
pub fn state_partitions(group: &str, state: &StatePartitions) -> OffsetsRecord {
    let named = |(id, named): (&TopicId, &NamedPartitions)| StateTopic {
        topic_id: id.0,
        topic_name: named.name.clone(),
        partitions: named.partitions.iter().copied().collect(),
    };
    let value = ShareStatePartitions {
        initializing: state.initializing.iter().map(named).collect(),
        initialized: state.initialized.iter().map(named).collect(),
        deleting: state
            .deleting
            .iter()
            .map(|(id, name)| StateTopic {
                topic_id: id.0,
                topic_name: name.clone(),
                partitions: Vec::new(),
            })
            .collect(),
    };
    (
        key(Kind::ShareStatePartitionMetadata, group, ""),
        Some(value.encode()),
    )
}

/// A member's tombstones, in the order Kafka's replay needs them: 14, 13, 10.
pub fn member_tombstones(group: &str, member_id: &str) -> Vec<OffsetsRecord> {
    [
        Kind::ShareCurrentMemberAssignment,
        Kind::ShareTargetAssignmentMember,
        Kind::ShareMemberMetadata,
    ]
    .into_iter()
    .map(|kind| (key(kind, group, member_id), None))
    .collect()
}

/// The group's tombstones, as Kafka deletes a group: each member's 14 and 13, then 12, each
/// member's 10, 15 and 11.
pub fn group_tombstones(group: &ShareGroup) -> Vec<OffsetsRecord> {
    let id = &group.id;
    let mut records = Vec::new();
    for member_id in group.members.keys() {
        records.push((key(Kind::ShareCurrentMemberAssignment, id, member_id), None));
        records.push((key(Kind::ShareTargetAssignmentMember, id, member_id), None));
    }
    records.push((key(Kind::ShareTargetAssignmentMetadata, id, ""), None));
    for member_id in group.members.keys() {
        records.push((key(Kind::ShareMemberMetadata, id, member_id), None));
    }
    records.push((key(Kind::ShareStatePartitionMetadata, id, ""), None));
    records.push((key(Kind::ShareGroupMetadata, id, ""), None));
    records
}

fn member_entry<'a>(group: &'a mut ShareGroup, member_id: &str) -> &'a mut ShareMember {
    group
        .members
        .entry(member_id.to_owned())
        .or_insert_with(|| ShareMember {
            member_id: member_id.to_owned(),
            previous_member_epoch: -1,
            ..ShareMember::default()
        })
}

fn named(topics: Vec<StateTopic>) -> std::collections::BTreeMap<TopicId, NamedPartitions> {
    topics
        .into_iter()
        .map(|topic| {
            let partitions: BTreeSet<i32> = topic.partitions.into_iter().collect();
            (
                TopicId(topic.topic_id),
                NamedPartitions {
                    name: topic.topic_name,
                    partitions,
                },
            )
        })
        .collect()
}

/// Applies one of the group's records (a tombstone of type 11 is the caller's: it ends the
/// group).
pub fn replay(
    group: &mut ShareGroup,
    kind: Kind,
    member_id: &str,
    value: Option<&[u8]>,
) -> Result<(), RecordsError> {
    match (kind, value) {
        (Kind::ShareMemberMetadata, Some(bytes)) => {
            let value = ShareMemberMetadata::decode(bytes)?;
            let member = member_entry(group, member_id);
            member.rack_id = value.rack_id;
            member.client_id = value.client_id;
            member.client_host = value.client_host;
            let mut names = value.subscribed_topic_names;
            names.sort();
            names.dedup();
            member.subscribed = names;
        }
        (Kind::ShareMemberMetadata, None) => {
            group.members.remove(member_id);
        }
        (Kind::ShareGroupMetadata, Some(bytes)) => {
            let value = ShareGroupMetadata::decode(bytes)?;
            group.epoch = value.epoch;
            group.metadata_hash = value.metadata_hash;
        }
        (Kind::ShareTargetAssignmentMetadata, Some(bytes)) => {
            let value = TargetAssignmentMetadata::decode(bytes)?;
            group.assignment_epoch = value.assignment_epoch;
            group.assignment_timestamp = value.assignment_timestamp;
        }
        (Kind::ShareTargetAssignmentMetadata, None) => {
            group.assignment_epoch = -1;
            group.assignment_timestamp = 0;
        }
        (Kind::ShareTargetAssignmentMember, Some(bytes)) => {
            let target = partitions(decode_target_member(bytes)?);
            group.targets.insert(member_id.to_owned(), target);
        }
        (Kind::ShareTargetAssignmentMember, None) => {
            group.targets.remove(member_id);
        }
        (Kind::ShareCurrentMemberAssignment, Some(bytes)) => {
            let value = ShareCurrentAssignment::decode(bytes)?;
            let member = member_entry(group, member_id);
            member.member_epoch = value.member_epoch;
            member.previous_member_epoch = value.previous_member_epoch;
            member.assigned = partitions(value.assigned);
        }
        (Kind::ShareCurrentMemberAssignment, None) => {
            if let Some(member) = group.members.get_mut(member_id) {
                member.member_epoch = -1;
                member.previous_member_epoch = -1;
                member.assigned.clear();
            }
        }
        (Kind::ShareStatePartitionMetadata, Some(bytes)) => {
            let value = ShareStatePartitions::decode(bytes)?;
            group.state_partitions = Some(StatePartitions {
                initializing: named(value.initializing),
                initialized: named(value.initialized),
                deleting: value
                    .deleting
                    .into_iter()
                    .map(|topic| (TopicId(topic.topic_id), topic.topic_name))
                    .collect(),
            });
        }
        (Kind::ShareStatePartitionMetadata, None) => {
            group.state_partitions = None;
        }
        _ => {}
    }
    group.check();
    Ok(())
}
