//! ShareGroupDescribe: a share group's state, epochs and members, as Kafka 4.4 describes it.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_storage::manager::TopicId;

use super::heartbeat::not_share;
use crate::errors;
use crate::group::GroupCoordinator;

/// A share group as ShareGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedShareGroup {
    pub state: &'static str,
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub members: Vec<DescribedShareMember>,
}

/// A member as ShareGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedShareMember {
    pub member_id: String,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed: Vec<String>,
    /// The member's partitions by topic id.
    pub assigned: BTreeMap<TopicId, BTreeSet<i32>>,
}

impl GroupCoordinator {
    /// `group_id` described, or Kafka's error and message for it.
    pub fn describe_share_group(
        &self,
        group_id: &str,
    ) -> Result<DescribedShareGroup, (i16, String)> {
        let partition = self.partition_of(group_id);
        self.runtime.read(partition, |shard| {
            let Some(group) = shard.groups.get(group_id) else {
                return Err((
                    errors::GROUP_ID_NOT_FOUND,
                    format!("Group {group_id} not found."),
                ));
            };
            let Some(share) = group.share.as_deref() else {
                let refusal = not_share(group_id);
                return Err((refusal.error, refusal.message.unwrap_or_default()));
            };
            Ok(DescribedShareGroup {
                state: share.state().name(),
                epoch: share.epoch,
                assignment_epoch: share.assignment_epoch,
                members: share
                    .members
                    .values()
                    .map(|member| DescribedShareMember {
                        member_id: member.member_id.clone(),
                        rack_id: member.rack_id.clone(),
                        member_epoch: member.member_epoch,
                        client_id: member.client_id.clone(),
                        client_host: member.client_host.clone(),
                        subscribed: member.subscribed.clone(),
                        assigned: member.assigned.clone(),
                    })
                    .collect(),
            })
        })
    }

    /// Whether `group_id` is a share group.
    pub fn is_share_group(&self, group_id: &str) -> bool {
        let partition = self.partition_of(group_id);
        self.runtime.read(partition, |shard| {
            shard
                .groups
                .get(group_id)
                .is_some_and(|group| group.share.is_some())
        })
    }

    /// The members of share group `group_id` and their epochs (the broker checks a share
    /// fetch's member against them).
    pub fn share_member_epoch(&self, group_id: &str, member_id: &str) -> Option<i32> {
        let partition = self.partition_of(group_id);
        self.runtime.read(partition, |shard| {
            let share = shard.groups.get(group_id)?.share.as_deref()?;
            share
                .members
                .get(member_id)
                .map(|member| member.member_epoch)
        })
    }
}
