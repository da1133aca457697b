//! Members leaving a streams group: by asking (epoch -1), for a while (a static member's -2,
//! which keeps its tasks), or fenced when their session or their revocation runs out of time.
//! A removal bumps the group epoch; the next heartbeat of a remaining member computes the new
//! target.

use std::collections::HashMap;

use super::heartbeat::{Refusal, StreamsAnswer, StreamsHeartbeat, replay_all};
use super::model::StreamsGroup;
use super::reconcile::TaskSets;
use super::records;
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::Group;
use crate::group::{GroupCoordinator, GroupCtx};

impl GroupCoordinator {
    /// A heartbeat with epoch -1 (leave) or -2 (a static member away for a while).
    pub(super) fn streams_leave(
        &self,
        groups: &mut HashMap<String, Group>,
        request: &StreamsHeartbeat,
        ctx: &GroupCtx<'_>,
    ) -> StreamsAnswer {
        let group_id = &request.group_id;
        let Some(entry) = groups.get_mut(group_id) else {
            return StreamsAnswer::error(
                errors::GROUP_ID_NOT_FOUND,
                format!("Group {group_id} not found."),
            );
        };
        let Some(group) = entry.streams.as_deref_mut() else {
            return StreamsAnswer::error(
                errors::GROUP_ID_NOT_FOUND,
                format!("Group {group_id} is not a streams group."),
            );
        };
        if request.shutdown_application && group.shutdown_requested_by.is_none() {
            group.shutdown_requested_by = Some(request.member_id.clone());
        }
        let member_id = match leaving_member(group, request) {
            Ok(member_id) => member_id,
            Err(refusal) => return refusal.into(),
        };
        let records = if request.member_epoch == -2 {
            away_records(group, &member_id)
        } else {
            removal_records(group, std::slice::from_ref(&member_id))
        };
        if let Err(error) = ctx.append(&records) {
            tracing::warn!(group = %group_id, %error, "storing a streams member's leaving failed");
            return StreamsAnswer::error(errors::COORDINATOR_NOT_AVAILABLE, None);
        }
        replay_all(group, &records);
        if let Some(member) = group.members.get_mut(&member_id) {
            member.rebalance_deadline = None;
        }
        StreamsAnswer {
            member_id,
            member_epoch: request.member_epoch,
            acceptable_recovery_lag: -1,
            ..StreamsAnswer::default()
        }
    }

    /// Fences the members of a streams group whose session expired, or who did not revoke
    /// their tasks in time; called by the coordinator's timer.
    pub(crate) fn expire_streams_members(&self, entry: &mut Group, ctx: &GroupCtx<'_>) {
        let Some(group) = entry.streams.as_deref_mut() else {
            return;
        };
        let now = ctx.now_ms;
        let expired: Vec<String> = group
            .members
            .values()
            .filter(|member| {
                member.session_deadline_ms <= now
                    || member.rebalance_deadline.is_some_and(|(deadline, epoch)| {
                        deadline <= now && member.current.member_epoch == epoch
                    })
            })
            .map(|member| member.member_id.clone())
            .collect();
        for member_id in expired {
            let records = removal_records(group, std::slice::from_ref(&member_id));
            match ctx.append(&records) {
                Ok(()) => {
                    replay_all(group, &records);
                    tracing::info!(group = %group.id, member = %member_id, "streams group member fenced: session or rebalance timeout");
                }
                Err(error) => {
                    tracing::warn!(group = %group.id, %error, "storing a streams member's fencing failed");
                    return;
                }
            }
        }
    }
}

/// The member a leaving heartbeat names, as Kafka checks it.
fn leaving_member(group: &StreamsGroup, request: &StreamsHeartbeat) -> Result<String, Refusal> {
    let Some(instance) = &request.instance_id else {
        return if group.members.contains_key(&request.member_id) {
            Ok(request.member_id.clone())
        } else {
            Err(Refusal::new(
                errors::UNKNOWN_MEMBER_ID,
                format!(
                    "Member {} is not a member of group {}.",
                    request.member_id, group.id
                ),
            ))
        };
    };
    match group.static_members.get(instance) {
        None => Err(Refusal::new(
            errors::UNKNOWN_MEMBER_ID,
            format!("Instance id {instance} is unknown."),
        )),
        Some(holder) if *holder != request.member_id => Err(Refusal::new(
            errors::FENCED_INSTANCE_ID,
            format!(
                "Static member {} with instance id {instance} was fenced by member {holder}.",
                request.member_id
            ),
        )),
        Some(holder) => Ok(holder.clone()),
    }
}

/// A static member away for a while: epoch -2, nothing pending, its tasks kept (their epochs
/// forgotten, so no older commit is taken for them).
fn away_records(group: &StreamsGroup, member_id: &str) -> Vec<OffsetsRecord> {
    let Some(member) = group.members.get(member_id) else {
        return Vec::new();
    };
    let mut current = member.current.clone();
    current.member_epoch = -2;
    current.pending_revocation = TaskSets::default();
    current
        .assigned
        .active
        .values_mut()
        .for_each(|epoch| *epoch = 0);
    vec![records::current_assignment(&group.id, member_id, &current)]
}

/// The records removing `members`: each one's tombstones, then the group epoch bumped, and the
/// target's epoch when the group empties.
pub(super) fn removal_records(group: &StreamsGroup, members: &[String]) -> Vec<OffsetsRecord> {
    let mut records = Vec::new();
    for member_id in members {
        records.extend(records::member_tombstones(&group.id, member_id));
    }
    let epoch = group.group_epoch + 1;
    records.push(records::group_metadata(
        &group.id,
        epoch,
        group.metadata_hash,
        group.validated_topology_epoch,
        &group.last_assignment_configs,
    ));
    let remaining = group
        .members
        .keys()
        .filter(|id| !members.contains(id))
        .count();
    if remaining == 0 {
        records.push(records::target_metadata(&group.id, epoch, 0));
    }
    records
}
