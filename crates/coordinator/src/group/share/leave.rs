//! A share group member leaving (a heartbeat with epoch −1) or fenced when its session lapses:
//! its records tombstoned (14, 13, 10, the order Kafka's replay needs), the group epoch bumped
//! with the hash of the subscriptions that remain, and, when it was the last member, the
//! target's epoch moved to the new group epoch. The others' targets are recomputed at their
//! next heartbeat.

use std::collections::HashMap;

use super::heartbeat::{ShareAnswer, ShareHeartbeat, find_group, replay_all};
use super::model::ShareGroup;
use super::records;
use crate::errors;
use crate::group::consumer::subscription::TopicMetadata;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::Group;
use crate::group::{GroupCoordinator, GroupCtx};

impl GroupCoordinator {
    /// A heartbeat with epoch −1: no epoch check, as in Kafka.
    pub(super) fn share_leave(
        &self,
        groups: &mut HashMap<String, Group>,
        request: &ShareHeartbeat,
        ctx: &GroupCtx<'_>,
    ) -> ShareAnswer {
        let group_id = &request.group_id;
        let group = match find_group(groups, group_id) {
            Err(refusal) => return refusal,
            Ok(None) => {
                return ShareAnswer::error(
                    errors::GROUP_ID_NOT_FOUND,
                    format!("Group {group_id} not found."),
                );
            }
            Ok(Some(group)) => group,
        };
        if !group.members.contains_key(&request.member_id) {
            return ShareAnswer::error(
                errors::UNKNOWN_MEMBER_ID,
                format!(
                    "Member {} is not a member of group {group_id}.",
                    request.member_id
                ),
            );
        }
        if let Err(refusal) = self.fence_share_member(groups, group_id, &request.member_id, ctx) {
            return refusal;
        }
        ShareAnswer {
            member_id: Some(request.member_id.clone()),
            member_epoch: -1,
            ..ShareAnswer::default()
        }
    }

    /// The records that fence `member_id` out of `group`.
    fn fence_records(&self, group: &ShareGroup, member_id: &str) -> Vec<OffsetsRecord> {
        let mut written = records::member_tombstones(&group.id, member_id);
        let names = group
            .members
            .values()
            .filter(|member| member.member_id != member_id)
            .flat_map(|member| member.subscribed.iter().cloned())
            .collect::<std::collections::BTreeSet<String>>();
        let hash = TopicMetadata::read(self.topic.manager(), &names).hash();
        let epoch = group.epoch + 1;
        written.push(records::group_metadata(&group.id, epoch, hash));
        if group.members.len() == 1 {
            written.push(records::target_metadata(&group.id, epoch, 0));
        }
        written
    }

    /// Fences `member_id` out of `group_id` (which holds it).
    pub(super) fn fence_share_member(
        &self,
        groups: &mut HashMap<String, Group>,
        group_id: &str,
        member_id: &str,
        ctx: &GroupCtx<'_>,
    ) -> Result<(), ShareAnswer> {
        let Some(group) = groups
            .get_mut(group_id)
            .and_then(|g| g.share.as_deref_mut())
        else {
            return Ok(());
        };
        let written = self.fence_records(group, member_id);
        if let Err(error) = ctx.append(&written) {
            tracing::warn!(group = group_id, member = member_id, %error, "storing a share member's leave failed");
            return Err(ShareAnswer::error(errors::COORDINATOR_NOT_AVAILABLE, None));
        }
        replay_all(group, &written);
        Ok(())
    }

    /// Fences the members of `group` whose session lapsed (the tick).
    pub(in crate::group) fn expire_share_members(&self, group: &mut Group, ctx: &GroupCtx<'_>) {
        let Some(share) = group.share.as_deref_mut() else {
            return;
        };
        let lapsed: Vec<String> = share
            .members
            .values()
            .filter(|member| member.session_deadline_ms <= ctx.now_ms)
            .map(|member| member.member_id.clone())
            .collect();
        for member_id in lapsed {
            let written = self.fence_records(share, &member_id);
            if let Err(error) = ctx.append(&written) {
                tracing::warn!(group = %share.id, member = member_id, %error, "fencing a share member whose session lapsed failed");
                return;
            }
            tracing::info!(group = %share.id, member = member_id, "a share group member's session lapsed: fenced");
            replay_all(share, &written);
        }
    }

    /// Arms the session of every member of a group loaded from the offsets topic.
    pub(in crate::group) fn arm_loaded_share_sessions(
        group: &mut ShareGroup,
        now: i64,
        session_timeout_ms: i32,
    ) {
        for member in group.members.values_mut() {
            member.session_deadline_ms = now + i64::from(session_timeout_ms);
        }
    }
}
