//! Members leaving a consumer group: by asking (epoch -1), for a while (a static member's -2),
//! or fenced when their session or their revocation (a classic member's join or sync) runs out
//! of time. A removal bumps the group epoch, and the next heartbeat of a remaining member
//! computes the new target; or, when only classic members stay, it downgrades the group
//! (`downgrade`).

use std::collections::{BTreeSet, HashMap};

use ferrolog_records::consumer_offsets::ConsumerRecordType;

use super::heartbeat::{ConsumerHeartbeat, HeartbeatAnswer, replay_all};
use super::model::{ConsumerGroup, CurrentAssignment};
use super::records;
use super::subscription::{TopicMetadata, topic_names};
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::Group;
use crate::group::{GroupCoordinator, GroupCtx};

impl GroupCoordinator {
    /// A heartbeat with epoch -1 (leave) or -2 (a static member away for a while).
    pub(super) fn consumer_leave(
        &self,
        groups: &mut HashMap<String, Group>,
        request: &ConsumerHeartbeat,
        ctx: &GroupCtx<'_>,
    ) -> HeartbeatAnswer {
        let group_id = &request.group_id;
        let Some(group) = groups.get_mut(group_id) else {
            return HeartbeatAnswer::error(
                errors::GROUP_ID_NOT_FOUND,
                format!("Group {group_id} not found."),
            );
        };
        let Some(consumer) = group.consumer.as_deref_mut() else {
            return HeartbeatAnswer::error(
                errors::GROUP_ID_NOT_FOUND,
                format!("Group {group_id} is not a consumer group."),
            );
        };
        let member_id = match leaving_member(consumer, request) {
            Ok(member_id) => member_id,
            Err(refusal) => return refusal,
        };
        if request.member_epoch == -2 {
            let records = [away_record(consumer, &member_id)];
            if let Err(error) = ctx.append(&records) {
                tracing::warn!(group = %group_id, %error, "storing a member's leaving failed");
                return HeartbeatAnswer::error(errors::COORDINATOR_NOT_AVAILABLE, None);
            }
            replay_all(consumer, &records);
            if let Some(member) = consumer.members.get_mut(&member_id) {
                // Away for a while: the session keeps running, so it is fenced unless it
                // returns.
                member.rebalance_deadline = None;
            }
        } else if let Err(error) =
            self.remove_consumer_members(group, std::slice::from_ref(&member_id), ctx)
        {
            tracing::warn!(group = %group_id, %error, "storing a member's leaving failed");
            return HeartbeatAnswer::error(errors::COORDINATOR_NOT_AVAILABLE, None);
        }
        HeartbeatAnswer {
            member_id: Some(member_id),
            member_epoch: request.member_epoch,
            ..HeartbeatAnswer::default()
        }
    }

    /// The records removing `members`: each one's tombstones, then the group epoch bumped (and
    /// the metadata hash without them), and the target's epoch when the group empties.
    pub(super) fn removal_records(
        &self,
        group: &ConsumerGroup,
        members: &[String],
    ) -> Vec<OffsetsRecord> {
        let mut records = Vec::new();
        for member_id in members {
            records.extend(records::member_tombstones(&group.id, member_id));
        }
        let staying = || {
            group
                .members
                .values()
                .filter(|member| !members.contains(&member.member_id))
        };
        for regex in group.regexes.keys() {
            if !staying().any(|m| m.subscription.topic_regex.as_ref() == Some(regex)) {
                records.push(records::tombstone(
                    ConsumerRecordType::RegularExpression,
                    &group.id,
                    regex,
                ));
            }
        }
        let names: BTreeSet<&String> = staying()
            .flat_map(|m| topic_names(&m.subscription, &group.regexes))
            .collect();
        let hash = TopicMetadata::read(self.topic.manager(), names).hash();
        let epoch = group.group_epoch + 1;
        records.push(records::group_epoch(&group.id, epoch, hash));
        if staying().next().is_none() {
            records.push(records::target_metadata(&group.id, epoch, 0));
        }
        records
    }

    /// Fences the members of a consumer group whose session expired, who did not revoke in
    /// time, or (classic members) did not rejoin or sync in time, one at a time in the order
    /// their deadlines passed, as Kafka's timers fire. Runs on the shard's tick. Once a fenced
    /// member leaves classic members only and the group is downgraded, the others are the
    /// classic group's members, under its own timers.
    pub(crate) fn expire_consumer_members(&self, entry: &mut Group, ctx: &GroupCtx<'_>) {
        let now = ctx.now_ms;
        let Some(group) = entry.consumer.as_deref() else {
            return;
        };
        let mut expired: Vec<(i64, String)> = group
            .members
            .values()
            .filter_map(|member| {
                let rebalance = member
                    .rebalance_deadline
                    .filter(|(_, epoch)| member.current.member_epoch == *epoch)
                    .map(|(deadline, _)| deadline);
                [
                    Some(member.session_deadline_ms),
                    rebalance,
                    member.join_deadline,
                    member.sync_deadline,
                ]
                .into_iter()
                .flatten()
                .filter(|deadline| *deadline <= now)
                .min()
                .map(|deadline| (deadline, member.member_id.clone()))
            })
            .collect();
        expired.sort();
        for (_, member_id) in expired {
            if entry.consumer.is_none() {
                break;
            }
            match self.remove_consumer_members(entry, std::slice::from_ref(&member_id), ctx) {
                Ok(_) => {
                    tracing::info!(group = %entry.id, member = %member_id, "consumer group member fenced: session, rebalance, join or sync timeout");
                }
                Err(error) => {
                    tracing::warn!(group = %entry.id, %error, "storing a fenced member failed; retrying on the next tick");
                    return;
                }
            }
        }
    }
}

/// Arms every member's session (and a revoking member's rebalance) timer, as after a load.
pub(crate) fn arm_loaded_timers(group: &mut ConsumerGroup, now: i64, session_timeout_ms: i32) {
    for member in group.members.values_mut() {
        member.session_deadline_ms = now + i64::from(session_timeout_ms);
        if member.current.state == super::model::MemberState::UnrevokedPartitions {
            member.arm_rebalance_deadline(now);
        }
    }
}

/// The member a leave names; leaving is not checked against the member's epoch.
fn leaving_member(
    group: &ConsumerGroup,
    request: &ConsumerHeartbeat,
) -> Result<String, HeartbeatAnswer> {
    let Some(instance) = &request.instance_id else {
        return if group.members.contains_key(&request.member_id) {
            Ok(request.member_id.clone())
        } else {
            Err(HeartbeatAnswer::error(
                errors::UNKNOWN_MEMBER_ID,
                format!(
                    "Member {} is not a member of group {}.",
                    request.member_id, group.id
                ),
            ))
        };
    };
    match group.static_members.get(instance) {
        None => Err(HeartbeatAnswer::error(
            errors::UNKNOWN_MEMBER_ID,
            format!("Instance id {instance} is unknown."),
        )),
        Some(holder) if holder != &request.member_id => Err(HeartbeatAnswer::error(
            errors::FENCED_INSTANCE_ID,
            format!(
                "Static member {} with instance id {instance} was fenced by member {holder}.",
                request.member_id
            ),
        )),
        Some(holder) => Ok(holder.clone()),
    }
}

/// A static member away for a while: epoch -2, nothing pending, its partitions kept for it at
/// assignment epoch 0.
fn away_record(group: &ConsumerGroup, member_id: &str) -> OffsetsRecord {
    let mut current = group
        .members
        .get(member_id)
        .map(|member| member.current.clone())
        .unwrap_or_default();
    current = CurrentAssignment {
        member_epoch: -2,
        pending_revocation: Default::default(),
        ..current
    };
    current.zero_assignment_epochs();
    records::current_assignment(&group.id, member_id, &current)
}
