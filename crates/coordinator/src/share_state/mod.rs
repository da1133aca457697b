//! The share coordinator of Kafka 4.4 (KIP-932), for one node: the durable state of every
//! share partition — its start offset, and the delivery state and count of the records in
//! flight that were acknowledged, released or archived — kept in `__share_group_state` in
//! Kafka's record formats, on the coordinator runtime ([`crate::runtime`]).
//!
//! The operations are Kafka's inter-broker ones, called in process: **initialize** (the group
//! coordinator, before it assigns a partition), **read** (a share partition loading), **write**
//! (each acknowledgement, release or lock timeout that changes a state), **delete** (a group's
//! offsets deleted) and the **summary** (DescribeShareGroupOffsets). Each checks what Kafka's
//! `ShareCoordinatorShard` checks, with its errors.
//!
//! A write appends a [`ShareUpdate`] holding only the batches it brings, or, once a key has
//! `share.coordinator.snapshot.update.records.per.snapshot` updates since its snapshot, a new
//! [`ShareSnapshot`] of the whole state. Every `share.coordinator.cold.partition.snapshot.
//! interval.ms` a key with updates since an older snapshot gets a fresh one, and every
//! `share.coordinator.state.topic.prune.interval.ms` the front of each partition that no key
//! needs (below the oldest latest snapshot) is removed by moving the log start, as Kafka's
//! DeleteRecords does: the topic is not compacted, so this is what bounds it.
//!
//! Files: [`batches`] (combining state batches, pure), [`topic`] (the topic and its records),
//! `shard` (a partition's share partitions, replay).

pub mod batches;
mod shard;
pub mod topic;

pub use shard::PartitionState;
use shard::{Prunable, ShareStateShard};
pub use topic::{SHARE_STATE_TOPIC, ShareKey, ShareRecord, ShareValue};

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use ferrolog_records::share_state_records::{ShareSnapshot, ShareUpdate, StateBatch};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{Offset, StorageError, TopicPartition};

use crate::errors;
use crate::runtime::{Ctx, Periodic, Runtime};
use topic::{ShareStateCodec, ShareStateTopic};

/// The share coordinator's settings, under Kafka's keys.
#[derive(Debug, Clone)]
pub struct ShareStateConfig {
    /// `share.coordinator.state.topic.num.partitions`
    pub partitions: i32,
    /// `share.coordinator.state.topic.segment.bytes`
    pub segment_bytes: u64,
    /// `share.coordinator.snapshot.update.records.per.snapshot`
    pub updates_per_snapshot: u32,
    /// `share.coordinator.cold.partition.snapshot.interval.ms`
    pub cold_snapshot_interval: Duration,
    /// `share.coordinator.state.topic.prune.interval.ms`
    pub prune_interval: Duration,
}

impl Default for ShareStateConfig {
    fn default() -> Self {
        Self {
            partitions: 50,
            segment_bytes: 104_857_600,
            updates_per_snapshot: 500,
            cold_snapshot_interval: Duration::from_secs(300),
            prune_interval: Duration::from_secs(300),
        }
    }
}

/// Why an operation was refused, with Kafka's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// INVALID_REQUEST, with Kafka's message.
    Invalid(&'static str),
    FencedLeaderEpoch,
    FencedStateEpoch,
    UnknownTopicOrPartition,
    /// The partition's records could not be written or read here.
    Unavailable(String),
}

impl StateError {
    pub fn code(&self) -> i16 {
        match self {
            Self::Invalid(_) => errors::INVALID_REQUEST,
            Self::FencedLeaderEpoch => errors::FENCED_LEADER_EPOCH,
            Self::FencedStateEpoch => errors::FENCED_STATE_EPOCH,
            Self::UnknownTopicOrPartition => errors::UNKNOWN_TOPIC_OR_PARTITION,
            Self::Unavailable(_) => errors::COORDINATOR_NOT_AVAILABLE,
        }
    }
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(message) => f.write_str(message),
            Self::FencedLeaderEpoch => f.write_str("the leader epoch is older than the stored one"),
            Self::FencedStateEpoch => f.write_str("the state epoch is older than the stored one"),
            Self::UnknownTopicOrPartition => f.write_str("the topic or partition does not exist"),
            Self::Unavailable(reason) => write!(f, "the share state could not be stored: {reason}"),
        }
    }
}

impl From<StorageError> for StateError {
    fn from(error: StorageError) -> Self {
        Self::Unavailable(error.to_string())
    }
}

/// A write of a share partition's state: the batches whose state changed, with the start
/// offset, the epochs the writer holds, and how many records are done.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StateWrite {
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub batches: Vec<StateBatch>,
}

/// What DescribeShareGroupOffsets shows of a share partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateSummary {
    pub start_offset: i64,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub delivery_complete_count: i32,
}

type ShareCtx<'a> = Ctx<'a, ShareStateCodec>;

#[derive(Debug)]
pub struct ShareStateCoordinator {
    topic: ShareStateTopic,
    config: ShareStateConfig,
    runtime: Runtime<ShareStateShard>,
    manager: Arc<LogManager>,
}

const NEGATIVE_PARTITION: &str = "The partition id cannot be a negative number.";
const NEGATIVE_LEADER_EPOCH: &str = "The leader epoch cannot be a negative number.";
const NEGATIVE_STATE_EPOCH: &str = "The state epoch cannot be a negative number.";
const WRITE_UNINITIALIZED: &str = "Write operation on uninitialized share partition not allowed.";
const READ_UNINITIALIZED: &str = "Read operation on uninitialized share partition not allowed.";

impl ShareStateCoordinator {
    /// Rebuilds every share partition's state from the topic's partitions present here.
    pub fn open(
        manager: Arc<LogManager>,
        config: ShareStateConfig,
    ) -> ferrolog_storage::Result<Self> {
        let clock = Arc::clone(manager.clock());
        let topic = ShareStateTopic::new(
            Arc::clone(&manager),
            config.partitions,
            config.segment_bytes,
        );
        let now = clock.now_ms();
        let mut shards: Vec<ShareStateShard> = (0..topic.partitions())
            .map(|_| {
                ShareStateShard::new(
                    Periodic::new(now, config.cold_snapshot_interval),
                    Periodic::new(now, config.prune_interval),
                )
            })
            .collect();
        let records = topic.load(|partition, record| {
            let offset = record.offset;
            shards[partition as usize].apply(&record, offset);
        })?;
        if records > 0 {
            let keys: usize = shards.iter().map(|shard| shard.entries.len()).sum();
            tracing::info!(records, share_partitions = keys, "share state loaded");
        }
        let runtime = Runtime::new(shards, BTreeSet::new(), topic.journal(), clock);
        Ok(Self {
            topic,
            config,
            runtime,
            manager,
        })
    }

    /// Whether `key`'s topic exists with that partition.
    fn partition_exists(&self, key: &ShareKey) -> bool {
        self.manager
            .topic_with_id(key.topic_id)
            .is_some_and(|name| self.manager.partitions_of(&name).contains(&key.partition))
    }

    /// Appends `value` for `key` and applies it.
    fn store(
        shard: &mut ShareStateShard,
        ctx: &ShareCtx<'_>,
        key: &ShareKey,
        value: ShareValue,
    ) -> Result<(), StateError> {
        let record = ShareRecord {
            key: key.clone(),
            value,
            offset: None,
        };
        let offset = ctx.append_placed(std::slice::from_ref(&record))?;
        shard.apply(&record, offset);
        Ok(())
    }

    /// Kafka's InitializeShareGroupState: a fresh snapshot of `key` at `state_epoch` with
    /// `start_offset` (−1: to be decided by the first reader), over whatever was there.
    pub fn initialize(
        &self,
        key: &ShareKey,
        state_epoch: i32,
        start_offset: i64,
    ) -> Result<(), StateError> {
        if key.partition < 0 {
            return Err(StateError::Invalid(NEGATIVE_PARTITION));
        }
        if state_epoch < 0 {
            return Err(StateError::Invalid(NEGATIVE_STATE_EPOCH));
        }
        self.topic.ensure_created()?;
        self.runtime
            .write(self.topic.partition_of(key), |shard, ctx| {
                let existing = shard.entries.get(key);
                if existing.is_some_and(|entry| entry.max_state_epoch > state_epoch) {
                    return Err(StateError::FencedStateEpoch);
                }
                if !self.partition_exists(key) {
                    return Err(StateError::UnknownTopicOrPartition);
                }
                let snapshot = ShareSnapshot {
                    snapshot_epoch: existing.map_or(0, |entry| entry.state.snapshot_epoch + 1),
                    state_epoch,
                    leader_epoch: 0,
                    start_offset,
                    delivery_complete_count: if start_offset == -1 { -1 } else { 0 },
                    create_timestamp: ctx.now_ms,
                    write_timestamp: ctx.now_ms,
                    batches: Vec::new(),
                };
                Self::store(shard, ctx, key, ShareValue::Snapshot(snapshot))
            })
    }

    /// Kafka's ReadShareGroupState: `key`'s state, for a reader at `leader_epoch`; a new
    /// leader epoch is recorded.
    pub fn read(&self, key: &ShareKey, leader_epoch: i32) -> Result<PartitionState, StateError> {
        if key.partition < 0 {
            return Err(StateError::Invalid(NEGATIVE_PARTITION));
        }
        if leader_epoch < 0 {
            return Err(StateError::Invalid(NEGATIVE_LEADER_EPOCH));
        }
        self.runtime
            .write(self.topic.partition_of(key), |shard, ctx| {
                let Some(entry) = shard.entries.get(key) else {
                    return Err(StateError::Invalid(READ_UNINITIALIZED));
                };
                if entry.max_leader_epoch > leader_epoch {
                    return Err(StateError::FencedLeaderEpoch);
                }
                if !self.partition_exists(key) {
                    return Err(StateError::UnknownTopicOrPartition);
                }
                let state = entry.state.clone();
                if entry.max_leader_epoch != leader_epoch || state.leader_epoch != leader_epoch {
                    let write = StateWrite {
                        state_epoch: state.state_epoch,
                        leader_epoch,
                        start_offset: state.start_offset,
                        delivery_complete_count: state.delivery_complete_count,
                        batches: Vec::new(),
                    };
                    let value = self.next_record(shard, key, &write, ctx.now_ms);
                    Self::store(shard, ctx, key, value)?;
                }
                Ok(state)
            })
    }

    /// Kafka's WriteShareGroupState.
    pub fn write(&self, key: &ShareKey, write: &StateWrite) -> Result<(), StateError> {
        if key.partition < 0 {
            return Err(StateError::Invalid(NEGATIVE_PARTITION));
        }
        if write.leader_epoch < 0 {
            return Err(StateError::Invalid(NEGATIVE_LEADER_EPOCH));
        }
        if write.state_epoch < 0 {
            return Err(StateError::Invalid(NEGATIVE_STATE_EPOCH));
        }
        self.runtime
            .write(self.topic.partition_of(key), |shard, ctx| {
                let Some(entry) = shard.entries.get(key) else {
                    return Err(StateError::Invalid(WRITE_UNINITIALIZED));
                };
                if entry.max_leader_epoch > write.leader_epoch {
                    return Err(StateError::FencedLeaderEpoch);
                }
                if entry.max_state_epoch > write.state_epoch {
                    return Err(StateError::FencedStateEpoch);
                }
                if !self.partition_exists(key) {
                    return Err(StateError::UnknownTopicOrPartition);
                }
                let value = self.next_record(shard, key, write, ctx.now_ms);
                Self::store(shard, ctx, key, value)
            })
    }

    /// The record a write makes, as Kafka's `generateShareStateRecord`: an update carrying the
    /// write's batches, or a snapshot of everything once enough updates have piled up. The start
    /// offset never moves back; the complete count follows the start offset it belongs to.
    fn next_record(
        &self,
        shard: &ShareStateShard,
        key: &ShareKey,
        write: &StateWrite,
        now: i64,
    ) -> ShareValue {
        let Some(entry) = shard.entries.get(key) else {
            unreachable!("a write's key is checked to exist first");
        };
        let current = &entry.state;
        let start_offset = write.start_offset.max(current.start_offset);
        let delivery_complete_count = match write.start_offset.cmp(&current.start_offset) {
            std::cmp::Ordering::Equal => write
                .delivery_complete_count
                .max(current.delivery_complete_count),
            std::cmp::Ordering::Less => current.delivery_complete_count,
            std::cmp::Ordering::Greater => write.delivery_complete_count,
        };
        if entry.updates >= self.config.updates_per_snapshot {
            ShareValue::Snapshot(ShareSnapshot {
                snapshot_epoch: current.snapshot_epoch + 1,
                state_epoch: current.state_epoch,
                leader_epoch: write.leader_epoch,
                start_offset,
                delivery_complete_count,
                create_timestamp: now,
                write_timestamp: now,
                batches: batches::combine(&current.batches, &write.batches, start_offset),
            })
        } else {
            ShareValue::Update(ShareUpdate {
                snapshot_epoch: current.snapshot_epoch,
                leader_epoch: write.leader_epoch,
                start_offset,
                delivery_complete_count,
                batches: batches::combine(&[], &write.batches, start_offset),
            })
        }
    }

    /// Kafka's DeleteShareGroupState: `key`'s state is tombstoned (nothing for an unknown key).
    pub fn delete(&self, key: &ShareKey) -> Result<(), StateError> {
        if key.partition < 0 {
            return Err(StateError::Invalid(NEGATIVE_PARTITION));
        }
        self.runtime
            .write(self.topic.partition_of(key), |shard, ctx| {
                if !shard.entries.contains_key(key) {
                    return Ok(());
                }
                Self::store(shard, ctx, key, ShareValue::Tombstone)
            })
    }

    /// Kafka's ReadShareGroupStateSummary; `None` for a key with no state.
    pub fn summary(&self, key: &ShareKey) -> Option<StateSummary> {
        self.runtime.read(self.topic.partition_of(key), |shard| {
            shard.entries.get(key).map(|entry| StateSummary {
                start_offset: entry.state.start_offset,
                state_epoch: entry.state.state_epoch,
                leader_epoch: entry.state.leader_epoch,
                delivery_complete_count: entry.state.delivery_complete_count,
            })
        })
    }

    /// Every key with state, of `group` (for a group's deletion and its offsets' description).
    pub fn keys_of(&self, group: &str) -> Vec<ShareKey> {
        let mut keys: Vec<ShareKey> = self
            .runtime
            .read_each(|shard| {
                shard
                    .entries
                    .keys()
                    .filter(|key| key.group == group)
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .into_iter()
            .flatten()
            .collect();
        keys.sort();
        keys
    }

    /// Every share partition's state, by key (for `move-to-kafka`, which writes it anew under
    /// another cluster's topic ids). Reads only: nothing is appended.
    pub fn states(&self) -> Vec<(ShareKey, PartitionState)> {
        let mut states: Vec<(ShareKey, PartitionState)> = self
            .runtime
            .read_each(|shard| {
                shard
                    .entries
                    .iter()
                    .map(|(key, entry)| (key.clone(), entry.state.clone()))
                    .collect::<Vec<_>>()
            })
            .into_iter()
            .flatten()
            .collect();
        states.sort_by(|a, b| a.0.cmp(&b.0));
        states
    }

    /// The number of `__share_group_state` partitions keys are placed over.
    pub fn partitions(&self) -> i32 {
        self.topic.partitions()
    }

    /// The timers: cold snapshots, the state of deleted topics tombstoned, and pruning.
    pub fn tick(&self) {
        let now = self.runtime.now();
        self.runtime.write_each(now, |shard, ctx| {
            if shard.cold_snapshots.due(now) {
                self.snapshot_cold(shard, ctx);
                self.forget_deleted_topics(shard, ctx);
            }
            if shard.prune.due(now) {
                self.prune(shard, ctx.partition);
            }
        });
    }

    /// A fresh snapshot of each key with updates over a snapshot older than the interval, so
    /// its updates need not be kept.
    fn snapshot_cold(&self, shard: &mut ShareStateShard, ctx: &ShareCtx<'_>) {
        let interval =
            i64::try_from(self.config.cold_snapshot_interval.as_millis()).unwrap_or(i64::MAX);
        let cold: Vec<(ShareKey, PartitionState)> = shard
            .entries
            .iter()
            .filter(|(_, entry)| {
                entry.updates > 0 && ctx.now_ms - entry.state.write_timestamp >= interval
            })
            .map(|(key, entry)| (key.clone(), entry.state.clone()))
            .collect();
        for (key, state) in cold {
            let mut snapshot = state.to_snapshot();
            snapshot.snapshot_epoch += 1;
            snapshot.write_timestamp = ctx.now_ms;
            if let Err(error) = Self::store(shard, ctx, &key, ShareValue::Snapshot(snapshot)) {
                tracing::warn!(group = %key.group, partition = key.partition, %error, "a cold share state snapshot was not written");
                return;
            }
        }
    }

    /// Tombstones the state of partitions whose topic is gone, as Kafka does on a deletion.
    /// Not while a data directory is offline: a topic there only looks gone.
    fn forget_deleted_topics(&self, shard: &mut ShareStateShard, ctx: &ShareCtx<'_>) {
        if self.manager.offline_dir_count() > 0 {
            return;
        }
        let gone: Vec<ShareKey> = shard
            .entries
            .keys()
            .filter(|key| self.manager.topic_with_id(key.topic_id).is_none())
            .cloned()
            .collect();
        for key in gone {
            if let Err(error) = Self::store(shard, ctx, &key, ShareValue::Tombstone) {
                tracing::warn!(group = %key.group, %error, "the share state of a deleted topic was not removed");
                return;
            }
        }
    }

    /// Moves the log start of `partition` past the records no key needs.
    fn prune(&self, shard: &ShareStateShard, partition: i32) {
        let Some(log) = self
            .manager
            .get(&TopicPartition::new(SHARE_STATE_TOPIC, partition))
        else {
            return;
        };
        let below = match shard.prunable() {
            Prunable::Nothing => return,
            Prunable::Below(offset) => offset,
            Prunable::Everything => log.log_end_offset().value(),
        };
        if let Err(error) = log.maybe_increment_log_start_offset(Offset::new(below)) {
            tracing::warn!(partition, %error, "pruning the share state topic failed");
        }
    }
}

#[cfg(test)]
mod tests;
