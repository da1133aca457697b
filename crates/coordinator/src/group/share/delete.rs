//! Deleting a share group (DeleteGroups): only an empty one goes. As Kafka does it, its
//! partitions are first recorded as deleting (type 15), then their share state is deleted, and
//! only then is the group tombstoned; a failure in between leaves the group, its partitions
//! still deleting, for the next attempt.

use std::collections::HashMap;

use super::heartbeat::replay_all;
use super::model::StatePartitions;
use super::records;
use crate::errors;
use crate::group::state::Group;
use crate::group::{GroupCoordinator, GroupCtx};

impl GroupCoordinator {
    /// DeleteGroups of share group `group_id` (which the shard holds).
    pub(in crate::group) fn delete_share_group(
        &self,
        groups: &mut HashMap<String, Group>,
        group_id: &str,
        ctx: &GroupCtx<'_>,
    ) -> i16 {
        let Some(share) = groups
            .get_mut(group_id)
            .and_then(|g| g.share.as_deref_mut())
        else {
            return errors::GROUP_ID_NOT_FOUND;
        };
        if !share.members.is_empty() {
            return errors::NON_EMPTY_GROUP;
        }
        if let Some(state) = share.state_partitions.clone() {
            let mut deleting = state.deleting.clone();
            for (id, named) in state.initialized.iter().chain(&state.initializing) {
                deleting.insert(*id, named.name.clone());
            }
            let marked = StatePartitions {
                deleting,
                ..StatePartitions::default()
            };
            let record = records::state_partitions(group_id, &marked);
            if let Err(error) = ctx.append(std::slice::from_ref(&record)) {
                tracing::warn!(group = group_id, %error, "marking a share group's state for deletion failed");
                return errors::COORDINATOR_NOT_AVAILABLE;
            }
            replay_all(share, &[record]);
        }
        for key in self.share_state.keys_of(group_id) {
            if let Err(error) = self.share_state.delete(&key) {
                tracing::warn!(group = group_id, partition = key.partition, %error, "deleting a share partition's state failed");
                return error.code();
            }
        }
        if let Err(error) = ctx.append(&records::group_tombstones(share)) {
            tracing::warn!(group = group_id, %error, "deleting a share group failed");
            return errors::COORDINATOR_NOT_AVAILABLE;
        }
        groups.remove(group_id);
        errors::NONE
    }
}
