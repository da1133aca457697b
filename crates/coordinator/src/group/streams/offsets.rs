//! What a streams group checks before committed offsets are written or read, as Kafka 4.4's
//! `StreamsGroup#validateOffsetCommit` and `#validateOffsetFetch`, and the tombstones that
//! delete a group.

use super::model::StreamsGroup;
use super::records;
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;

/// OffsetCommit by `member_id` at `epoch` (request `version`) for `partitions` (topic name and
/// partition).
pub fn check_commit(
    group: &StreamsGroup,
    member_id: &str,
    epoch: i32,
    version: i16,
    partitions: &[(&str, i32)],
) -> Result<(), i16> {
    if epoch < 0 && group.members.is_empty() {
        // A commit from outside the group (an admin tool resetting offsets).
        return Ok(());
    }
    let member = group
        .members
        .get(member_id)
        .ok_or(errors::UNKNOWN_MEMBER_ID)?;
    if version < 9 {
        return Err(errors::UNSUPPORTED_VERSION);
    }
    let current = member.current.member_epoch;
    if epoch == current {
        return Ok(());
    }
    if epoch > current {
        return Err(errors::STALE_MEMBER_EPOCH);
    }
    // An older epoch may commit the input partitions of the active tasks it still holds that
    // were assigned to it at that epoch or before.
    let subtopologies = group.topology.iter().flat_map(|t| &t.subtopologies);
    let allowed = partitions.iter().all(|(topic, partition)| {
        subtopologies.clone().any(|subtopology| {
            let reads = subtopology.source_topics.iter().any(|t| t == topic)
                || subtopology
                    .repartition_source_topics
                    .iter()
                    .any(|t| t.name == *topic);
            let task = super::assignor::TaskId::new(&subtopology.id, *partition);
            let assigned_at = member
                .current
                .assigned
                .active
                .get(&task)
                .copied()
                .or_else(|| {
                    member
                        .current
                        .pending_revocation
                        .active
                        .contains(&task)
                        .then_some(i32::MIN)
                });
            reads && assigned_at.is_some_and(|assigned| epoch >= assigned)
        })
    });
    if allowed {
        Ok(())
    } else {
        Err(errors::STALE_MEMBER_EPOCH)
    }
}

/// OffsetFetch naming a member (version 9 and later): the member must exist at that epoch.
pub fn check_fetch(group: &StreamsGroup, member_id: Option<&str>, epoch: i32) -> Result<(), i16> {
    if member_id.is_none() && epoch < 0 {
        return Ok(());
    }
    let member = member_id
        .and_then(|id| group.members.get(id))
        .ok_or(errors::UNKNOWN_MEMBER_ID)?;
    if member.current.member_epoch == epoch {
        Ok(())
    } else {
        Err(errors::STALE_MEMBER_EPOCH)
    }
}

/// The tombstones that delete the group's records, in Kafka's order: current tasks, targets,
/// the target's epoch, members, the group epoch, the topology.
pub fn group_tombstones(group: &StreamsGroup) -> Vec<OffsetsRecord> {
    let members: Vec<[OffsetsRecord; 3]> = group
        .members
        .keys()
        .map(|m| records::member_tombstones(&group.id, m))
        .collect();
    let [target_metadata, group_metadata, topology] = records::group_tombstones(&group.id);
    let mut records = Vec::new();
    records.extend(members.iter().map(|[current, _, _]| current.clone()));
    records.extend(members.iter().map(|[_, target, _]| target.clone()));
    records.push(target_metadata);
    records.extend(members.iter().map(|[_, _, metadata]| metadata.clone()));
    records.push(group_metadata);
    records.push(topology);
    records
}
