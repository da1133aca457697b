//! The middle of a share group heartbeat: the member's details recorded, the group epoch bumped
//! when the subscriptions or the subscribed topics changed, the share state of partitions not
//! yet initialized initialized, the target assignment recomputed when it lags the group epoch,
//! and the member given its target.
//!
//! Kafka initializes the share state after answering, so a first member hears an empty
//! assignment and gets its partitions at a later heartbeat. Here the share coordinator is in
//! the process: the state is initialized within the heartbeat (before its type-15 record is
//! written, so a crash between the two initializes again), and the first answer already
//! carries the partitions. The records are Kafka's, in the order its replay needs.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_storage::manager::TopicId;

use super::assignor::{MemberSpec, assign};
use super::heartbeat::ShareHeartbeat;
use super::model::{NamedPartitions, ShareGroup, ShareMember, StatePartitions};
use super::records;
use crate::group::consumer::Partitions;
use crate::group::consumer::subscription::TopicMetadata;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::{GroupCoordinator, GroupCtx};
use crate::share_state::ShareKey;

/// What a heartbeat writes.
#[derive(Debug, Default)]
pub(super) struct Planned {
    pub records: Vec<OffsetsRecord>,
}

impl GroupCoordinator {
    /// The records of one (non-leaving) heartbeat of `member` in `group`.
    pub(super) fn plan_share_heartbeat(
        &self,
        group: &ShareGroup,
        member: ShareMember,
        request: &ShareHeartbeat,
        ctx: &GroupCtx<'_>,
    ) -> Planned {
        let group_id = &group.id;
        let mut planned = Planned::default();
        let mut updated = member.clone();
        if let Some(rack) = &request.rack_id {
            updated.rack_id = Some(rack.clone());
        }
        if let Some(names) = &request.topic_names {
            let mut names = names.clone();
            names.sort();
            names.dedup();
            updated.subscribed = names;
        }
        updated.client_id = request.client_id.clone();
        updated.client_host = request.client_host.clone();
        let details_changed = updated.rack_id != member.rack_id
            || updated.client_id != member.client_id
            || updated.client_host != member.client_host
            || updated.subscribed != member.subscribed
            || !group.members.contains_key(&member.member_id);
        if details_changed {
            planned
                .records
                .push(records::member_metadata(group_id, &updated));
        }
        let names = group.subscribed_names(Some(&updated));
        let metadata = TopicMetadata::read(self.topic.manager(), &names);
        let names_by_id: BTreeMap<TopicId, String> = names
            .iter()
            .filter_map(|name| Some((metadata.id(name)?, name.clone())))
            .collect();
        let hash = metadata.hash();
        let mut bump = updated.subscribed != member.subscribed || hash != group.metadata_hash;
        if !bump && group.assignment_epoch >= group.epoch {
            bump = group.initialized_assignment_pending(&names_by_id);
        }
        let mut epoch = group.epoch;
        if bump {
            epoch += 1;
            planned
                .records
                .push(records::group_metadata(group_id, epoch, hash));
        }
        let state =
            self.initialize_share_state(group, &names_by_id, &metadata, epoch, &mut planned);
        let (target_epoch, target) = self.share_target(
            group,
            &updated,
            epoch,
            &state,
            &names_by_id,
            ctx.now_ms,
            &mut planned,
        );
        reconcile(
            group_id,
            updated,
            bump,
            target_epoch,
            &target,
            &names_by_id,
            &member,
            &mut planned,
        );
        planned
    }

    /// Initializes the share state of subscribed partitions that have none, at `epoch`, and
    /// records which now have it (type 15). Returns the group's share-state partitions after.
    fn initialize_share_state(
        &self,
        group: &ShareGroup,
        names_by_id: &BTreeMap<TopicId, String>,
        metadata: &TopicMetadata,
        epoch: i32,
        planned: &mut Planned,
    ) -> StatePartitions {
        let mut state = group.state_partitions.clone().unwrap_or_default();
        let counts = metadata.partition_counts();
        let mut changed = false;
        for (id, name) in names_by_id {
            let count = counts.get(id).copied().unwrap_or(0);
            let have = state
                .initialized
                .get(id)
                .map(|n| n.partitions.clone())
                .unwrap_or_default();
            let missing: Vec<i32> = (0..count).filter(|p| !have.contains(p)).collect();
            if missing.is_empty() {
                continue;
            }
            // A topic the group knows gets its new partitions from their start; a new topic
            // from where `share.auto.offset.reset` says when first read.
            let known = state.initialized.contains_key(id) || state.initializing.contains_key(id);
            let start_offset = if known { 0 } else { -1 };
            let mut done = BTreeSet::new();
            for partition in missing {
                let key = ShareKey::new(&group.id, *id, partition);
                match self.share_state.initialize(&key, epoch, start_offset) {
                    Ok(()) => {
                        done.insert(partition);
                    }
                    Err(error) => {
                        tracing::warn!(group = %group.id, topic = %name, partition, %error, "initializing a share partition's state failed; the next heartbeat tries again");
                    }
                }
            }
            if done.is_empty() {
                continue;
            }
            changed = true;
            if let Some(initializing) = state.initializing.get_mut(id) {
                initializing.partitions.retain(|p| !done.contains(p));
                if initializing.partitions.is_empty() {
                    state.initializing.remove(id);
                }
            }
            state.deleting.remove(id);
            let entry = state
                .initialized
                .entry(*id)
                .or_insert_with(|| NamedPartitions {
                    name: name.clone(),
                    partitions: BTreeSet::new(),
                });
            entry.partitions.extend(done);
        }
        if changed {
            planned
                .records
                .push(records::state_partitions(&group.id, &state));
        }
        state
    }

    /// The target of the group at `epoch` when it may be computed now, else the last one:
    /// (its epoch, the member's part of it).
    #[allow(clippy::too_many_arguments)]
    fn share_target(
        &self,
        group: &ShareGroup,
        updated: &ShareMember,
        epoch: i32,
        state: &StatePartitions,
        names_by_id: &BTreeMap<TopicId, String>,
        now: i64,
        planned: &mut Planned,
    ) -> (i32, Partitions) {
        let interval = self.share_settings(&group.id).assignment_interval_ms;
        let due = group.assignment_timestamp == 0
            || interval == 0
            || now >= group.assignment_timestamp + interval;
        if epoch <= group.assignment_epoch || !due {
            let last = group
                .targets
                .get(&updated.member_id)
                .cloned()
                .unwrap_or_default();
            return (group.assignment_epoch, last);
        }
        let ids_of = |names: &[String]| -> BTreeSet<TopicId> {
            names_by_id
                .iter()
                .filter(|(_, n)| names.contains(n))
                .map(|(id, _)| *id)
                .collect()
        };
        let mut specs: BTreeMap<String, MemberSpec> = BTreeMap::new();
        for member in group.members.values().chain(std::iter::once(updated)) {
            specs.insert(
                member.member_id.clone(),
                MemberSpec {
                    subscribed: ids_of(&member.subscribed),
                    current: group
                        .targets
                        .get(&member.member_id)
                        .cloned()
                        .unwrap_or_default(),
                },
            );
        }
        let targets = assign(&specs, &state.assignable());
        for (member_id, target) in &targets {
            if group.targets.get(member_id) != Some(target) {
                planned
                    .records
                    .push(records::target_member(&group.id, member_id, target));
            }
        }
        planned
            .records
            .push(records::target_metadata(&group.id, epoch, now));
        let mine = targets.get(&updated.member_id).cloned().unwrap_or_default();
        (epoch, mine)
    }
}

/// Gives the member its target (of the topics it subscribes to that exist), as Kafka's
/// `ShareGroupAssignmentBuilder`, and records it when it changed (type 14).
#[allow(clippy::too_many_arguments)]
fn reconcile(
    group_id: &str,
    mut updated: ShareMember,
    bump: bool,
    target_epoch: i32,
    target: &Partitions,
    names_by_id: &BTreeMap<TopicId, String>,
    before: &ShareMember,
    planned: &mut Planned,
) {
    if !bump && updated.member_epoch == target_epoch {
        return;
    }
    let visible: Partitions = target
        .iter()
        .filter(|(id, _)| {
            names_by_id
                .get(id)
                .is_some_and(|name| updated.subscribed.contains(name))
        })
        .map(|(id, partitions)| (*id, partitions.clone()))
        .collect();
    if target_epoch != updated.member_epoch {
        updated.previous_member_epoch = updated.member_epoch;
        updated.member_epoch = target_epoch;
    }
    updated.assigned = visible;
    let changed = updated.member_epoch != before.member_epoch
        || updated.previous_member_epoch != before.previous_member_epoch
        || updated.assigned != before.assigned;
    if changed {
        planned
            .records
            .push(records::current_assignment(group_id, &updated));
    }
}
