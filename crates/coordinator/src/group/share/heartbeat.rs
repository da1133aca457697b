//! ShareGroupHeartbeat, as Kafka 4.4's coordinator answers it: the request checked, the group
//! and member found (or made), the member's subscription updated, the group epoch bumped when
//! what the group needs changed, the share state of newly subscribed partitions initialized,
//! the target computed when it lags (no more often than `group.share.assignment.interval.ms`),
//! and the member given its target at once: share groups revoke nothing, several members may
//! consume one partition. The records are appended as one batch and then replayed.

use super::model::{ShareGroup, ShareMember};
use super::records;
use super::target::Planned;
use crate::errors;
use crate::group::GroupCoordinator;
use crate::group::consumer::Partitions;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::Group;

/// A ShareGroupHeartbeat (version 1).
#[derive(Debug, Clone, Default)]
pub struct ShareHeartbeat {
    pub group_id: String,
    /// Chosen by the client.
    pub member_id: String,
    /// 0 to join, -1 to leave.
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    /// `None`: unchanged.
    pub topic_names: Option<Vec<String>>,
    pub client_id: String,
    pub client_host: String,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareAnswer {
    pub error: i16,
    pub message: Option<String>,
    pub member_id: Option<String>,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// The member's partitions, when it needs to hear them.
    pub assignment: Option<Partitions>,
}

impl ShareAnswer {
    pub fn error(error: i16, message: impl Into<Option<String>>) -> Self {
        Self {
            error,
            message: message.into(),
            ..Self::default()
        }
    }
}

/// Kafka's checks of a heartbeat before it reaches the group, with its messages.
pub fn check_request(request: &ShareHeartbeat) -> Result<(), ShareAnswer> {
    let invalid = |message: &str| {
        Err(ShareAnswer::error(
            errors::INVALID_REQUEST,
            message.to_owned(),
        ))
    };
    let blank = |value: &str| value.trim().is_empty();
    if blank(&request.member_id) {
        return invalid("MemberId can't be empty.");
    }
    if blank(&request.group_id) {
        return invalid("GroupId can't be empty.");
    }
    if request.rack_id.as_deref().is_some_and(blank) {
        return invalid("RackId can't be empty.");
    }
    if request.member_epoch == 0 && request.topic_names.as_ref().is_none_or(Vec::is_empty) {
        return invalid("SubscribedTopicNames must be set in first request.");
    }
    if request.member_epoch < -1 {
        return invalid("MemberEpoch is invalid.");
    }
    Ok(())
}

/// The share group of `group_id` among the shard's groups, as Kafka looks one up: another kind
/// of group under that id is not one, whatever its state.
pub(super) fn find_group<'a>(
    groups: &'a std::collections::HashMap<String, Group>,
    group_id: &str,
) -> Result<Option<&'a ShareGroup>, ShareAnswer> {
    match groups.get(group_id) {
        None => Ok(None),
        Some(group) => group
            .share
            .as_deref()
            .map(Some)
            .ok_or_else(|| not_share(group_id)),
    }
}

pub(super) fn not_share(group_id: &str) -> ShareAnswer {
    ShareAnswer::error(
        errors::GROUP_ID_NOT_FOUND,
        format!("Group {group_id} is not a share group."),
    )
}

/// The member a heartbeat speaks for, checked against Kafka's epoch rules.
fn find_member(
    group: &ShareGroup,
    request: &ShareHeartbeat,
    max_size: u32,
) -> Result<ShareMember, ShareAnswer> {
    let known = group.members.get(&request.member_id);
    if known.is_none() && group.members.len() >= max_size as usize {
        return Err(ShareAnswer::error(
            errors::GROUP_MAX_SIZE_REACHED,
            format!("The share group has reached its maximum capacity of {max_size} members."),
        ));
    }
    let member = match known {
        Some(member) => member.clone(),
        None if request.member_epoch == 0 => ShareMember {
            member_id: request.member_id.clone(),
            previous_member_epoch: -1,
            ..ShareMember::default()
        },
        None => {
            return Err(ShareAnswer::error(
                errors::UNKNOWN_MEMBER_ID,
                format!(
                    "Member {} is not a member of group {}.",
                    request.member_id, group.id
                ),
            ));
        }
    };
    let (received, current) = (request.member_epoch, member.member_epoch);
    if received != 0 && received > current {
        return Err(ShareAnswer::error(
            errors::FENCED_MEMBER_EPOCH,
            format!(
                "The share group member has a greater member epoch ({received}) than the one known by the group coordinator ({current}). The member must abandon all its partitions and rejoin."
            ),
        ));
    }
    if received != 0 && received < current && received != member.previous_member_epoch {
        return Err(ShareAnswer::error(
            errors::FENCED_MEMBER_EPOCH,
            format!(
                "The share group member has a smaller member epoch ({received}) than the one known by the group coordinator ({current}), and it does not match the previous member epoch ({}). The member must abandon all its partitions and rejoin.",
                member.previous_member_epoch
            ),
        ));
    }
    Ok(member)
}

impl GroupCoordinator {
    /// A ShareGroupHeartbeat.
    pub fn share_heartbeat(&self, request: ShareHeartbeat) -> ShareAnswer {
        if let Err(refusal) = check_request(&request) {
            return refusal;
        }
        let partition = self.partition_of(&request.group_id);
        self.runtime.write(partition, |shard, ctx| {
            if request.member_epoch == -1 {
                return self.share_leave(&mut shard.groups, &request, ctx);
            }
            let missing = format!("Share group {} not found.", request.group_id);
            let fresh;
            let group = match find_group(&shard.groups, &request.group_id) {
                Err(refusal) => return refusal,
                Ok(Some(group)) => group,
                Ok(None) if request.member_epoch == 0 && shard.refuses_new(&request.group_id) => {
                    let message = crate::group::too_many_groups(shard.census.max());
                    return ShareAnswer::error(errors::GROUP_MAX_SIZE_REACHED, message);
                }
                Ok(None) if request.member_epoch == 0 => {
                    fresh = ShareGroup::new(&request.group_id);
                    &fresh
                }
                Ok(None) => return ShareAnswer::error(errors::GROUP_ID_NOT_FOUND, missing),
            };
            let member = match find_member(group, &request, self.config.share.max_size) {
                Ok(member) => member,
                Err(refusal) => return refusal,
            };
            let before = member.assigned.clone();
            let planned = self.plan_share_heartbeat(group, member, &request, ctx);
            self.apply_share_heartbeat(&mut shard.groups, &request, planned, &before, ctx)
        })
    }

    /// Appends a heartbeat's records, replays them into the group and answers.
    fn apply_share_heartbeat(
        &self,
        groups: &mut std::collections::HashMap<String, Group>,
        request: &ShareHeartbeat,
        planned: Planned,
        before: &Partitions,
        ctx: &crate::group::GroupCtx<'_>,
    ) -> ShareAnswer {
        if let Err(error) = ctx.append(&planned.records) {
            tracing::warn!(group = %request.group_id, %error, "storing a share group's change failed");
            return ShareAnswer::error(errors::COORDINATOR_NOT_AVAILABLE, None);
        }
        let entry = groups
            .entry(request.group_id.clone())
            .or_insert_with(|| Group::new(&request.group_id, ctx.now_ms));
        entry.check_kind();
        let group = entry
            .share
            .get_or_insert_with(|| Box::new(ShareGroup::new(&request.group_id)));
        replay_all(group, &planned.records);
        let Some(member) = group.members.get_mut(&request.member_id) else {
            debug_assert!(false, "the member of a heartbeat just written is missing");
            return ShareAnswer::error(errors::UNKNOWN_SERVER_ERROR, None);
        };
        let settings = self.share_settings(&request.group_id);
        member.session_deadline_ms = ctx.now_ms + i64::from(settings.session_timeout_ms);
        let changed = member.assigned != *before;
        ShareAnswer {
            member_id: Some(member.member_id.clone()),
            member_epoch: member.member_epoch,
            heartbeat_interval_ms: settings.heartbeat_interval_ms,
            assignment: (request.member_epoch == 0 || request.topic_names.is_some() || changed)
                .then(|| member.assigned.clone()),
            ..ShareAnswer::default()
        }
    }
}

/// Replays records just written into the group.
pub(super) fn replay_all(group: &mut ShareGroup, written: &[OffsetsRecord]) {
    use ferrolog_records::consumer_offsets::OffsetsKey;
    for (key, value) in written {
        if let OffsetsKey::Consumer { kind, sub_key, .. } = key
            && let Err(error) = records::replay(group, *kind, sub_key, value.as_deref())
        {
            debug_assert!(
                false,
                "a share group record just written does not read: {error}"
            );
        }
    }
}
