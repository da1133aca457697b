//! The share groups' offsets as admins see them (Kafka 4.4's DescribeShareGroupOffsets,
//! AlterShareGroupOffsets and DeleteShareGroupOffsets, the group coordinator's part): which
//! partitions have share state, a new start offset for an empty group's partitions, and a
//! topic's share state deleted from an empty group.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_storage::manager::TopicId;

use super::heartbeat::{find_group, replay_all};
use super::model::{NamedPartitions, ShareGroup};
use super::records;
use crate::errors;
use crate::group::GroupCoordinator;
use crate::group::state::Group;
use crate::share_state::ShareKey;

/// A refusal of the whole request: Kafka's error and message.
pub type GroupRefusal = (i16, String);

/// Each partition's error, by topic id and partition.
pub type PartitionResults = Vec<((TopicId, i32), i16)>;

/// A topic named in AlterShareGroupOffsets, as it exists here.
#[derive(Debug, Clone)]
pub struct AlterTopic {
    pub id: TopicId,
    pub name: String,
    /// Partitions that exist, with their new start offsets.
    pub offsets: Vec<(i32, i64)>,
}

/// What DeleteShareGroupOffsets answers for one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    pub name: String,
    pub id: Option<TopicId>,
    pub error: i16,
    pub message: Option<String>,
}

fn non_empty() -> GroupRefusal {
    (
        errors::NON_EMPTY_GROUP,
        "The group is not empty.".to_owned(),
    )
}

impl GroupCoordinator {
    /// The partitions of `group` whose share state is initialized, by topic id (none for a
    /// group that is not a share group, as Kafka answers).
    pub fn share_initialized(&self, group: &str) -> BTreeMap<TopicId, NamedPartitions> {
        let partition = self.partition_of(group);
        self.runtime.read(partition, |shard| {
            shard
                .groups
                .get(group)
                .and_then(|g| g.share.as_deref())
                .and_then(|share| share.state_partitions.as_ref())
                .map(|state| state.initialized.clone())
                .unwrap_or_default()
        })
    }

    /// AlterShareGroupOffsets: each partition's share state starts again at its new offset
    /// (its in-flight state dropped). The group must be empty; one that does not exist is made,
    /// as Kafka makes it. Returns each partition's error.
    pub fn alter_share_offsets(
        &self,
        group_id: &str,
        topics: &[AlterTopic],
    ) -> Result<PartitionResults, GroupRefusal> {
        let partition = self.partition_of(group_id);
        self.runtime.write(partition, |shard, ctx| {
            let existing = find_group(&shard.groups, group_id).map_err(|r| (r.error, r.message.unwrap_or_default()))?;
            if existing.is_some_and(|group| !group.members.is_empty()) {
                return Err(non_empty());
            }
            if shard.refuses_new(group_id) {
                return Err((errors::GROUP_MAX_SIZE_REACHED, crate::group::too_many_groups(shard.census.max())));
            }
            let group = existing.cloned().unwrap_or_else(|| ShareGroup::new(group_id));
            let mut state = group.state_partitions.clone().unwrap_or_default();
            let mut results = Vec::new();
            for topic in topics {
                let mut done = BTreeSet::new();
                for (partition, offset) in &topic.offsets {
                    let key = ShareKey::new(group_id, topic.id, *partition);
                    let code = match self.share_state.initialize(&key, group.epoch, *offset) {
                        Ok(()) => {
                            done.insert(*partition);
                            errors::NONE
                        }
                        Err(error) => error.code(),
                    };
                    results.push(((topic.id, *partition), code));
                }
                state.deleting.remove(&topic.id);
                let entry = state
                    .initialized
                    .entry(topic.id)
                    .or_insert_with(|| NamedPartitions { name: topic.name.clone(), partitions: BTreeSet::new() });
                entry.partitions.extend(done);
            }
            let record = records::state_partitions(group_id, &state);
            if let Err(error) = ctx.append(std::slice::from_ref(&record)) {
                tracing::warn!(group = group_id, %error, "storing a share group's altered offsets failed");
                return Err((errors::COORDINATOR_NOT_AVAILABLE, String::new()));
            }
            let entry = shard.groups.entry(group_id.to_owned()).or_insert_with(|| Group::new(group_id, ctx.now_ms));
            let share = entry.share.get_or_insert_with(|| Box::new(group));
            replay_all(share, &[record]);
            Ok(results)
        })
    }

    /// DeleteShareGroupOffsets: the share state of each named topic (name, id when it exists,
    /// its partition count) goes from the empty group `group_id`.
    pub fn delete_share_offsets(
        &self,
        group_id: &str,
        topics: &[(String, Option<(TopicId, i32)>)],
    ) -> Result<Vec<Deleted>, GroupRefusal> {
        let partition = self.partition_of(group_id);
        self.runtime.write(partition, |shard, ctx| {
            let group = match find_group(&shard.groups, group_id) {
                Err(refusal) => return Err((refusal.error, refusal.message.unwrap_or_default())),
                Ok(None) => return Err((errors::GROUP_ID_NOT_FOUND, format!("Group {group_id} not found."))),
                Ok(Some(group)) => group,
            };
            if !group.members.is_empty() {
                return Err(non_empty());
            }
            let Some(mut state) = group.state_partitions.clone() else {
                return Ok(Vec::new());
            };
            let mut answers = Vec::new();
            for (name, found) in topics {
                let Some((id, count)) = found else {
                    let message = "This server does not host this topic-partition.".to_owned();
                    answers.push(Deleted { name: name.clone(), id: None, error: errors::UNKNOWN_TOPIC_OR_PARTITION, message: Some(message) });
                    continue;
                };
                let partitions: Vec<i32> = match state.initialized.remove(id) {
                    Some(named) => named.partitions.into_iter().collect(),
                    None if state.deleting.contains_key(id) => (0..*count).collect(),
                    None => {
                        let message = "There is no offset information to delete.".to_owned();
                        answers.push(Deleted { name: name.clone(), id: Some(*id), error: errors::UNKNOWN_TOPIC_OR_PARTITION, message: Some(message) });
                        continue;
                    }
                };
                state.deleting.insert(*id, name.clone());
                let failed = partitions
                    .iter()
                    .find_map(|p| self.share_state.delete(&ShareKey::new(group_id, *id, *p)).err());
                match failed {
                    Some(error) => answers.push(Deleted { name: name.clone(), id: Some(*id), error: error.code(), message: None }),
                    None => {
                        state.deleting.remove(id);
                        answers.push(Deleted { name: name.clone(), id: Some(*id), error: errors::NONE, message: None });
                    }
                }
            }
            let record = records::state_partitions(group_id, &state);
            if let Err(error) = ctx.append(std::slice::from_ref(&record)) {
                tracing::warn!(group = group_id, %error, "storing a share group's deleted offsets failed");
                return Err((errors::COORDINATOR_NOT_AVAILABLE, String::new()));
            }
            if let Some(share) = shard.groups.get_mut(group_id).and_then(|g| g.share.as_deref_mut()) {
                replay_all(share, &[record]);
            }
            Ok(answers)
        })
    }
}
