//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups, and the expiry of
//! empty groups' offsets after `offsets.retention.minutes`.

use std::collections::HashMap;

use ferrolog_records::consumer_offsets::{OffsetValue, OffsetsKey};
use ferrolog_storage::clock;

use super::consumer::ConsumerGroup;
use super::consumer::offsets::{check_commit, check_fetch, group_tombstones};
use super::membership::check_member;
use super::offsets_topic::OffsetsRecord;
use super::state::{Group, GroupState};
use super::{CommitEntry, GroupCoordinator, GroupCtx, streams};

/// A partition's answer to OffsetFetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// Its committed offset, if any.
    Committed(Option<OffsetValue>),
    /// An open transaction committed an offset for it (UNSTABLE_OFFSET_COMMIT to a request for
    /// stable offsets).
    Unstable,
}
use crate::errors;

impl GroupCoordinator {
    /// OffsetCommit: one error per entry (a group-level problem applies to all of them).
    #[allow(clippy::too_many_arguments, reason = "OffsetCommit's fields")]
    pub fn commit(
        &self,
        group_id: &str,
        version: i16,
        generation: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        retention_ms: Option<i64>,
        entries: &[CommitEntry],
    ) -> Vec<i16> {
        let all = |code| vec![code; entries.len()];
        if group_id.is_empty() {
            return all(errors::INVALID_GROUP_ID);
        }
        self.runtime
            .write(self.partition_of(group_id), |shard, ctx| {
                let now = ctx.now_ms;
                if shard.refuses_new(group_id) && generation < 0 {
                    return all(errors::GROUP_MAX_SIZE_REACHED);
                }
                let groups = &mut shard.groups;
                let group = match groups.get_mut(group_id) {
                    Some(group) => group,
                    None if generation < 0 => groups
                        .entry(group_id.to_owned())
                        .or_insert_with(|| Group::new(group_id, now)),
                    None if version >= 9 => return all(errors::GROUP_ID_NOT_FOUND),
                    None => return all(errors::ILLEGAL_GENERATION),
                };
                // A share group keeps no committed offsets (Kafka: "not a consumer group").
                if group.share.is_some() {
                    return all(errors::GROUP_ID_NOT_FOUND);
                }
                if let Some(consumer) = group.consumer.as_deref() {
                    let manager = self.topic.manager();
                    let partitions: Vec<_> = entries
                        .iter()
                        .map(|e| (manager.topic_id(&e.topic), e.partition))
                        .collect();
                    if let Err(code) =
                        check_commit(consumer, member_id, generation, version, &partitions)
                    {
                        return all(code);
                    }
                } else if let Some(streams) = group.streams.as_deref() {
                    let partitions: Vec<(&str, i32)> = entries
                        .iter()
                        .map(|e| (e.topic.as_str(), e.partition))
                        .collect();
                    if let Err(code) = streams::offsets::check_commit(
                        streams,
                        member_id,
                        generation,
                        version,
                        &partitions,
                    ) {
                        return all(code);
                    }
                } else if !(generation < 0 && group.state == GroupState::Empty) {
                    if let Err(code) = check_member(group, member_id, group_instance_id, generation)
                    {
                        return all(code);
                    }
                    if group.state == GroupState::CompletingRebalance {
                        return all(errors::REBALANCE_IN_PROGRESS);
                    }
                    if let Some(member) = group.member_mut(member_id) {
                        member.session_deadline_ms = now + i64::from(member.session_timeout_ms);
                    }
                }
                let CommitRecords {
                    results,
                    records,
                    values,
                } = self.commit_records(group_id, entries, now, retention_ms);
                if let Err(error) = ctx.append(&records) {
                    tracing::warn!(group = group_id, %error, "storing committed offsets failed");
                    return results
                        .into_iter()
                        .map(|code| {
                            if code == errors::NONE {
                                errors::COORDINATOR_NOT_AVAILABLE
                            } else {
                                code
                            }
                        })
                        .collect();
                }
                group.offsets.extend(values);
                results
            })
    }

    /// OffsetFetch for `topics` (all of the group's partitions when `None`): each partition's
    /// committed offset, or `None` when there is none.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
    ) -> Vec<(String, i32, Option<OffsetValue>)> {
        self.fetch_offsets_stable(group_id, topics, false)
            .into_iter()
            .map(|(topic, partition, fetched)| match fetched {
                Fetched::Committed(value) => (topic, partition, value),
                Fetched::Unstable => (topic, partition, None),
            })
            .collect()
    }

    /// As [`GroupCoordinator::fetch_offsets`]; with `require_stable`, a partition whose offset
    /// an open transaction committed is [`Fetched::Unstable`], decided under the same lock as
    /// the value read.
    pub fn fetch_offsets_stable(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
        require_stable: bool,
    ) -> Vec<(String, i32, Fetched)> {
        self.runtime.read(self.partition_of(group_id), |shard| {
            let groups = &shard.groups;
            let group = groups.get(group_id);
            let fetched = |topic: &str, partition: i32| match group {
                Some(g) if require_stable && g.has_pending_offset(topic, partition) => {
                    Fetched::Unstable
                }
                Some(g) => {
                    Fetched::Committed(g.offsets.get(&(topic.to_owned(), partition)).cloned())
                }
                None => Fetched::Committed(None),
            };
            match topics {
                Some(topics) => topics
                    .iter()
                    .flat_map(|(topic, partitions)| {
                        partitions.iter().map(|partition| {
                            (topic.clone(), *partition, fetched(topic, *partition))
                        })
                    })
                    .collect(),
                None => group
                    .map(|g| {
                        g.offsets
                            .keys()
                            .map(|(topic, partition)| {
                                (topic.clone(), *partition, fetched(topic, *partition))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
    }

    /// OffsetFetch naming a member (version 9 and later): the group-level error, if any. Only
    /// consumer groups check it.
    pub fn check_offset_fetch(&self, group_id: &str, member_id: Option<&str>, epoch: i32) -> i16 {
        self.runtime.read(self.partition_of(group_id), |shard| {
            let Some(group) = shard.groups.get(group_id) else {
                return errors::NONE;
            };
            let checked = match (group.consumer.as_deref(), group.streams.as_deref()) {
                (Some(consumer), _) => check_fetch(consumer, member_id, epoch),
                (None, Some(streams)) => streams::offsets::check_fetch(streams, member_id, epoch),
                (None, None) => Ok(()),
            };
            checked.err().unwrap_or(errors::NONE)
        })
    }

    /// DeleteGroups: only empty groups go; their offsets and metadata are tombstoned.
    pub fn delete_group(&self, group_id: &str) -> i16 {
        self.runtime
            .write(self.partition_of(group_id), |shard, ctx| {
                let groups = &mut shard.groups;
                let Some(group) = groups.get(group_id) else {
                    return errors::GROUP_ID_NOT_FOUND;
                };
                if group.share.is_some() {
                    return self.delete_share_group(groups, group_id, ctx);
                }
                let consumer_members = group.consumer.as_ref().map_or(0, |c| c.members.len());
                let streams_members = group.streams.as_ref().map_or(0, |s| s.members.len());
                if group.state != GroupState::Empty || consumer_members + streams_members > 0 {
                    return errors::NON_EMPTY_GROUP;
                }
                // Offsets pending in transactions go too, as Kafka tombstones them.
                let mut records: Vec<OffsetsRecord> = group
                    .offset_keys()
                    .iter()
                    .map(|(topic, partition)| (offset_key(group_id, topic, *partition), None))
                    .collect();
                match (group.consumer.as_deref(), group.streams.as_deref()) {
                    (Some(consumer), _) => records.extend(group_tombstones(consumer)),
                    (None, Some(streams)) => {
                        records.extend(streams::offsets::group_tombstones(streams));
                    }
                    (None, None) => records.push((
                        OffsetsKey::Group {
                            group: group_id.to_owned(),
                        },
                        None,
                    )),
                }
                if let Err(error) = ctx.append(&records) {
                    tracing::warn!(group = group_id, %error, "deleting a group failed");
                    return errors::COORDINATOR_NOT_AVAILABLE;
                }
                groups.remove(group_id);
                tracing::info!(group = group_id, "group deleted");
                errors::NONE
            })
    }

    /// A deleted topic's committed offsets go from every group (tombstoned), as Kafka removes
    /// them when a topic is deleted: a topic created again under the name starts afresh.
    /// Returns how many offsets were removed.
    pub fn forget_topic(&self, topic: &str) -> usize {
        let mut removed = 0;
        self.runtime.write_each(self.now(), |shard, ctx| {
            for group in shard.groups.values_mut() {
                let keys: Vec<(String, i32)> = group
                    .offset_keys()
                    .into_iter()
                    .filter(|(t, _)| t == topic)
                    .collect();
                let records: Vec<OffsetsRecord> = keys
                    .iter()
                    .map(|(t, partition)| (offset_key(&group.id, t, *partition), None))
                    .collect();
                if records.is_empty() {
                    continue;
                }
                match ctx.append(&records) {
                    Ok(()) => {
                        removed += records.len();
                        group.offsets.retain(|(t, _), _| t != topic);
                        for (t, partition) in &keys {
                            group.remove_pending(t, *partition);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(group = %group.id, topic, %error, "removing a deleted topic's offsets failed");
                    }
                }
            }
        });
        removed
    }

    /// OffsetDelete: returns the group's error and one error per `(topic, partition)`. Offsets
    /// of topics the group's members subscribe to stay (GROUP_SUBSCRIBED_TO_TOPIC).
    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
        subscribed: impl Fn(&str, &[u8]) -> Vec<String>,
    ) -> (i16, Vec<i16>) {
        self.runtime
            .write(self.partition_of(group_id), |shard, ctx| {
                let groups = &mut shard.groups;
                let Some(group) = groups.get_mut(group_id) else {
                    return (errors::GROUP_ID_NOT_FOUND, Vec::new());
                };
                let protocol_type = group.protocol_type.clone().unwrap_or_default();
                let protocol = group.protocol.clone().unwrap_or_default();
                let topics: Vec<String> = if let Some(consumer) = group.consumer.as_deref() {
                    consumer.subscribed_topics().into_iter().collect()
                } else if let Some(streams) = group.streams.as_deref() {
                    // Kafka's streams group is subscribed to the topics its members read.
                    if streams.members.is_empty() {
                        Vec::new()
                    } else {
                        streams.required_topics().into_iter().collect()
                    }
                } else if group.state == GroupState::Empty {
                    Vec::new()
                } else {
                    group
                        .members
                        .iter()
                        .flat_map(|m| subscribed(&protocol_type, &m.metadata_for(&protocol)))
                        .collect()
                };
                let mut records = Vec::new();
                let results: Vec<i16> = partitions
                    .iter()
                    .map(|(topic, partition)| {
                        if topics.contains(topic) {
                            return errors::GROUP_SUBSCRIBED_TO_TOPIC;
                        }
                        if group.offsets.contains_key(&(topic.clone(), *partition))
                            || group.has_pending_offset(topic, *partition)
                        {
                            records.push((offset_key(group_id, topic, *partition), None));
                        }
                        errors::NONE
                    })
                    .collect();
                if let Err(error) = ctx.append(&records) {
                    tracing::warn!(group = group_id, %error, "deleting offsets failed");
                    return (errors::COORDINATOR_NOT_AVAILABLE, Vec::new());
                }
                for (key, _) in &records {
                    if let OffsetsKey::Offset {
                        topic, partition, ..
                    } = key
                    {
                        group.offsets.remove(&(topic.clone(), *partition));
                        group.remove_pending(topic, *partition);
                    }
                }
                (errors::NONE, results)
            })
    }

    /// Offsets of empty groups older than `offsets.retention.minutes` (counted from when the
    /// group emptied, or from the commit for groups that never had members) are tombstoned; an
    /// empty group left with no offsets is removed.
    pub(super) fn expire_offsets(&self, groups: &mut HashMap<String, Group>, ctx: &GroupCtx<'_>) {
        let now = ctx.now_ms;
        let retention = clock::kafka_ms(self.config.offsets_retention);
        let mut dead = Vec::new();
        for group in groups.values_mut() {
            // A share group has no offsets to expire and never expires itself, as in Kafka.
            if group.share.is_some() {
                continue;
            }
            let consumer = group.consumer.as_deref();
            if consumer.is_none() && group.state != GroupState::Empty {
                continue;
            }
            // A consumer group's offsets of topics its members subscribe to stay; the others
            // expire counted from their commit, as Kafka 4.4 expires them.
            let streams = group.streams.as_deref();
            let mut subscribed = consumer
                .map(ConsumerGroup::subscribed_topics)
                .unwrap_or_default();
            if let Some(streams) = streams.filter(|s| !s.members.is_empty()) {
                subscribed.extend(streams.required_topics());
            }
            let expired: Vec<(String, i32)> = group
                .offsets
                .iter()
                .filter(|((topic, _), _)| !subscribed.contains(topic))
                .filter(|(_, value)| match value.expire_timestamp {
                    Some(expire) => now >= expire,
                    None if consumer.is_none() && group.protocol_type.is_some() => {
                        now - group.state_timestamp_ms >= retention
                    }
                    None => now - value.commit_timestamp >= retention,
                })
                .map(|(key, _)| key.clone())
                .collect();
            // An empty group left without offsets is dead: its metadata is tombstoned too
            // (unless a transaction's offsets for it are pending).
            let dies = expired.len() == group.offsets.len()
                && group.pending_txn_offsets.is_empty()
                && consumer.is_none_or(|c| c.members.is_empty())
                && streams.is_none_or(|s| s.members.is_empty());
            if expired.is_empty() && !dies {
                continue;
            }
            let mut records: Vec<OffsetsRecord> = expired
                .iter()
                .map(|(topic, partition)| (offset_key(&group.id, topic, *partition), None))
                .collect();
            if dies {
                match (consumer, streams) {
                    (Some(consumer), _) => records.extend(group_tombstones(consumer)),
                    (None, Some(streams)) => {
                        records.extend(streams::offsets::group_tombstones(streams));
                    }
                    (None, None) => records.push((
                        OffsetsKey::Group {
                            group: group.id.clone(),
                        },
                        None,
                    )),
                }
            }
            match ctx.append(&records) {
                Ok(()) => {
                    tracing::info!(group = %group.id, offsets = expired.len(), "expired committed offsets");
                    for key in &expired {
                        group.offsets.remove(key);
                    }
                    if dies {
                        dead.push(group.id.clone());
                    }
                }
                Err(error) => {
                    tracing::warn!(group = %group.id, %error, "expiring offsets failed");
                }
            }
        }
        for id in dead {
            groups.remove(&id);
        }
    }
}

/// What a commit writes and answers: one error per entry, the records of the entries
/// accepted, and their values as the group keeps them.
pub(super) struct CommitRecords {
    pub results: Vec<i16>,
    pub records: Vec<OffsetsRecord>,
    pub values: Vec<((String, i32), OffsetValue)>,
}

impl GroupCoordinator {
    /// The records of a commit of `entries` for `group_id` at `now` (kept until `now` +
    /// `retention_ms` when the client asked), entries whose metadata is too long refused.
    pub(super) fn commit_records(
        &self,
        group_id: &str,
        entries: &[CommitEntry],
        now: i64,
        retention_ms: Option<i64>,
    ) -> CommitRecords {
        let mut results = Vec::with_capacity(entries.len());
        let mut records = Vec::new();
        let mut values = Vec::new();
        for entry in entries {
            if entry.metadata.len() > self.config.offset_metadata_max_bytes {
                results.push(errors::OFFSET_METADATA_TOO_LARGE);
                continue;
            }
            let value = OffsetValue {
                offset: entry.offset,
                leader_epoch: entry.leader_epoch,
                metadata: entry.metadata.clone(),
                commit_timestamp: now,
                expire_timestamp: retention_ms.map(|retention| now + retention),
            };
            records.push((
                offset_key(group_id, &entry.topic, entry.partition),
                Some(value.encode()),
            ));
            values.push(((entry.topic.clone(), entry.partition), value));
            results.push(errors::NONE);
        }
        CommitRecords {
            results,
            records,
            values,
        }
    }
}

fn offset_key(group: &str, topic: &str, partition: i32) -> OffsetsKey {
    OffsetsKey::Offset {
        group: group.to_owned(),
        topic: topic.to_owned(),
        partition,
    }
}
