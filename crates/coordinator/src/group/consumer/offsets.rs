//! What a consumer group checks before committed offsets are written or read, as Kafka 4.4's
//! `ConsumerGroup#validateOffsetCommit` and `#validateOffsetFetch`, and the tombstones that
//! delete a group.

use ferrolog_records::consumer_offsets::ConsumerRecordType;
use ferrolog_storage::manager::TopicId;

use super::model::ConsumerGroup;
use super::records::tombstone;
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;

/// OffsetCommit by `member_id` at `epoch` (request `version`) for `partitions` (their topic
/// ids, `None` for a topic that does not exist).
pub fn check_commit(
    group: &ConsumerGroup,
    member_id: &str,
    epoch: i32,
    version: i16,
    partitions: &[(Option<TopicId>, i32)],
) -> Result<(), i16> {
    if epoch < 0 && group.members.is_empty() {
        // A commit from outside the group (an admin tool, or a consumer using assign()).
        return Ok(());
    }
    let Some(member) = group.members.get(member_id) else {
        return Err(errors::UNKNOWN_MEMBER_ID);
    };
    // A classic member commits with its generation (its member epoch), in any version, and is
    // refused as the classic protocol refuses (ILLEGAL_GENERATION).
    let classic = member.subscription.classic.is_some();
    let stale = if classic {
        errors::ILLEGAL_GENERATION
    } else {
        errors::STALE_MEMBER_EPOCH
    };
    if version < 9 && !classic {
        return Err(errors::UNSUPPORTED_VERSION);
    }
    let current = member.current.member_epoch;
    if epoch == current {
        return Ok(());
    }
    if epoch > current {
        return Err(stale);
    }
    // An older epoch may commit the partitions it still holds that were assigned to it at that
    // epoch or before.
    let assigned_by = |topic: TopicId, partition: i32| {
        member
            .current
            .assigned
            .get(&topic)
            .and_then(|p| p.get(&partition))
            .copied()
            .or_else(|| {
                member
                    .current
                    .pending_revocation
                    .get(&topic)
                    .is_some_and(|p| p.contains(&partition))
                    .then_some(i32::MIN)
            })
    };
    let allowed = partitions.iter().all(|(topic, partition)| {
        topic
            .and_then(|topic| assigned_by(topic, *partition))
            .is_some_and(|assignment_epoch| epoch >= assignment_epoch)
    });
    if allowed { Ok(()) } else { Err(stale) }
}

/// OffsetFetch naming a member (version 9 and later): the member must exist at that epoch.
pub fn check_fetch(group: &ConsumerGroup, member_id: Option<&str>, epoch: i32) -> Result<(), i16> {
    if member_id.is_none() && epoch < 0 {
        return Ok(());
    }
    let member = member_id
        .and_then(|id| group.members.get(id))
        .ok_or(errors::UNKNOWN_MEMBER_ID)?;
    if member.current.member_epoch == epoch {
        Ok(())
    } else if member.subscription.classic.is_some() {
        Err(errors::ILLEGAL_GENERATION)
    } else {
        Err(errors::STALE_MEMBER_EPOCH)
    }
}

/// The tombstones that delete the group's records, in Kafka's order: current assignments,
/// targets, the target's epoch, subscriptions, regular expressions, the subscription metadata,
/// and last the group epoch.
pub fn group_tombstones(group: &ConsumerGroup) -> Vec<OffsetsRecord> {
    use ConsumerRecordType as Kind;
    let id = &group.id;
    let mut records = Vec::new();
    let members = || group.members.keys();
    records.extend(members().map(|m| tombstone(Kind::CurrentMemberAssignment, id, m)));
    records.extend(members().map(|m| tombstone(Kind::TargetAssignmentMember, id, m)));
    records.push(tombstone(Kind::TargetAssignmentMetadata, id, ""));
    records.extend(members().map(|m| tombstone(Kind::MemberMetadata, id, m)));
    records.extend(
        group
            .regexes
            .keys()
            .map(|r| tombstone(Kind::RegularExpression, id, r)),
    );
    records.push(tombstone(Kind::PartitionMetadata, id, ""));
    records.push(tombstone(Kind::GroupMetadata, id, ""));
    records
}
