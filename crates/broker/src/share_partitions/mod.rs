//! The share partitions this broker serves (Kafka's `SharePartitionManager`): each
//! [`SharePartition`] loaded from its stored state at its first fetch, kept while a session of
//! its group is open or it holds acquired records, and every change it makes persisted through
//! the share coordinator before it counts — an acknowledgement or release whose write fails is
//! undone, as in Kafka.
//!
//! Locks: a share partition's own, then (inside a write) the share coordinator's shard. A fetch
//! reads the log under the partition's lock, so two members never acquire the same records. A
//! partition dropped from memory is marked fenced under its lock: whoever still holds it looks
//! it up again, so nothing is acquired into a partition no longer served.

mod log_reads;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use ferrolog_coordinator::group::group_configs::OffsetReset;
use ferrolog_coordinator::share_partition::{
    AckBatch, AcquireMode, AcquireRequest, Acquired, Limits, LogBatch, SharePartition,
};
use ferrolog_coordinator::share_state::{ShareKey, ShareStateCoordinator, StateError};
use ferrolog_records::share_state_records::StateBatch;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::{Offset, StorageError};
use parking_lot::Mutex;

use crate::errors;
use log_reads::{covering, entries_of, start_by_reset};

/// How a group's share partitions read and hand out records (its `share.*` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareSettings {
    pub limits: Limits,
    /// `share.isolation.level=read_committed`
    pub read_committed: bool,
    /// `share.auto.offset.reset`: where a partition without a start offset starts.
    pub offset_reset: OffsetReset,
}

/// One partition's part of a share fetch.
#[derive(Debug, Default)]
pub struct Fetched {
    pub error: i16,
    pub records: Bytes,
    pub acquired: Vec<Acquired>,
}

/// What a fetch asks of one partition.
#[derive(Debug, Clone, Copy)]
pub struct FetchAsk<'a> {
    pub member: &'a str,
    pub mode: AcquireMode,
    pub batch_size: i32,
    pub max_records: i32,
    pub max_bytes: u64,
    pub now_ms: i64,
}

/// A share partition in memory, and whether it has been dropped from the map.
#[derive(Debug)]
struct Held {
    partition: SharePartition,
    fenced: bool,
}

type Shared = Arc<Mutex<Held>>;

/// The most of a partition's log one share fetch reads (at least one whole batch): a share
/// fetch hands out at most MaxRecords records (500 by default), so reading its whole byte
/// limit (50 MiB by default) would read far more than it can hand out, at every fetch.
const READ_BYTES: u64 = 1 << 20;

#[derive(Debug, Default)]
pub struct SharePartitions {
    loaded: Mutex<HashMap<ShareKey, Shared>>,
}

/// Kafka's mapping of the share coordinator's refusals when a partition loads.
fn load_error(error: &StateError) -> i16 {
    match error {
        StateError::FencedLeaderEpoch | StateError::FencedStateEpoch => {
            errors::NOT_LEADER_OR_FOLLOWER
        }
        StateError::UnknownTopicOrPartition => errors::UNKNOWN_TOPIC_OR_PARTITION,
        StateError::Unavailable(_) => errors::COORDINATOR_NOT_AVAILABLE,
        StateError::Invalid(_) => errors::UNKNOWN_SERVER_ERROR,
    }
}

impl SharePartitions {
    fn get(&self, key: &ShareKey) -> Option<Shared> {
        self.loaded.lock().get(key).cloned()
    }

    /// The share partition of `key`, loaded from its stored state when not in memory. It is
    /// read at the leader epoch its state was last written at: a single node's partitions
    /// keep their leader, and Kafka's data carries the epoch Kafka gave them.
    fn get_or_load(
        &self,
        state: &ShareStateCoordinator,
        key: &ShareKey,
        log: &Log,
        settings: ShareSettings,
        now_ms: i64,
    ) -> Result<Shared, i16> {
        if let Some(shared) = self.get(key) {
            shared.lock().partition.set_limits(settings.limits);
            return Ok(shared);
        }
        let leader_epoch = state
            .summary(key)
            .map_or(0, |summary| summary.leader_epoch.max(0));
        let stored = state.read(key, leader_epoch).map_err(|error| {
            tracing::warn!(group = %key.group, partition = key.partition, %error, "a share partition's state does not load");
            load_error(&error)
        })?;
        let start = match stored.start_offset {
            -1 => start_by_reset(log, settings.offset_reset, now_ms)?,
            stored => stored,
        };
        let loaded = SharePartition::load(&stored, start, leader_epoch, settings.limits).map_err(|error| {
            tracing::error!(group = %key.group, partition = key.partition, reason = error.0, "a share partition's stored state is inconsistent");
            errors::UNKNOWN_SERVER_ERROR
        })?;
        let shared = Arc::new(Mutex::new(Held {
            partition: loaded,
            fenced: false,
        }));
        Ok(Arc::clone(
            self.loaded.lock().entry(key.clone()).or_insert(shared),
        ))
    }

    /// Persists `changed`; on failure the partition goes back to `before`.
    fn persist(
        state: &ShareStateCoordinator,
        key: &ShareKey,
        partition: &mut SharePartition,
        before: SharePartition,
        changed: Vec<StateBatch>,
    ) -> i16 {
        if changed.is_empty() {
            return errors::NONE;
        }
        match state.write(key, &partition.state_write(changed)) {
            Ok(()) => errors::NONE,
            Err(error) => {
                tracing::warn!(group = %key.group, partition = key.partition, %error, "a share partition's change was not stored: undone");
                *partition = before;
                load_error(&error)
            }
        }
    }

    /// Acquires records of `log` for `ask.member`: the batches read from the partition's next
    /// fetch offset, those overlapping what was acquired returned whole.
    pub fn fetch(
        &self,
        state: &ShareStateCoordinator,
        key: &ShareKey,
        log: &Log,
        settings: ShareSettings,
        ask: FetchAsk<'_>,
    ) -> Fetched {
        // A partition fenced between its lookup and its lock is looked up again.
        for _ in 0..3 {
            let shared = match self.get_or_load(state, key, log, settings, ask.now_ms) {
                Ok(shared) => shared,
                Err(error) => {
                    return Fetched {
                        error,
                        ..Fetched::default()
                    };
                }
            };
            let mut held = shared.lock();
            if !held.fenced {
                return fetch_from(&mut held.partition, state, key, log, settings, ask);
            }
        }
        Fetched {
            error: errors::COORDINATOR_NOT_AVAILABLE,
            ..Fetched::default()
        }
    }

    /// Applies `member`'s acknowledgements to the partition of `key`; the partition's error.
    pub fn acknowledge(
        &self,
        state: &ShareStateCoordinator,
        key: &ShareKey,
        member: &str,
        batches: &[AckBatch],
        now_ms: i64,
    ) -> i16 {
        let Some(shared) = self.get(key) else {
            return errors::UNKNOWN_TOPIC_OR_PARTITION;
        };
        let mut held = shared.lock();
        if held.fenced {
            return errors::UNKNOWN_TOPIC_OR_PARTITION;
        }
        let partition = &mut held.partition;
        let before = partition.clone();
        match partition.acknowledge(member, batches, now_ms) {
            Ok(changed) => Self::persist(state, key, partition, before, changed),
            Err(code) => {
                *partition = before;
                code
            }
        }
    }

    /// Releases what `member` holds in the partitions of `keys` (its session ended); when its
    /// group has no session left, drops the group's partitions that hold nothing acquired.
    pub fn release(
        &self,
        state: &ShareStateCoordinator,
        keys: &[ShareKey],
        member: &str,
        group_idle: bool,
    ) {
        for key in keys {
            let Some(shared) = self.get(key) else {
                continue;
            };
            let mut held = shared.lock();
            if held.fenced {
                continue;
            }
            let partition = &mut held.partition;
            let before = partition.clone();
            let changed = partition.release(member);
            Self::persist(state, key, partition, before, changed);
        }
        if group_idle && let Some(key) = keys.first() {
            self.drop_group(&key.group, false);
        }
    }

    /// Drops `group`'s partitions from memory (`all`: even those holding acquired records, as
    /// when an admin changed their state), each fenced under its lock.
    fn drop_group(&self, group: &str, all: bool) {
        let held: Vec<(ShareKey, Shared)> = self
            .loaded
            .lock()
            .iter()
            .filter(|(key, _)| key.group == group)
            .map(|(key, shared)| (key.clone(), Arc::clone(shared)))
            .collect();
        for (key, shared) in held {
            let mut guard = shared.lock();
            if !all && guard.partition.next_lock_deadline().is_some() {
                continue;
            }
            guard.fenced = true;
            let mut loaded = self.loaded.lock();
            if loaded
                .get(&key)
                .is_some_and(|current| Arc::ptr_eq(current, &shared))
            {
                loaded.remove(&key);
            }
        }
    }

    /// Gives back the records whose lock lapsed, in every partition (the broker's tick).
    pub fn expire_locks(&self, state: &ShareStateCoordinator, now_ms: i64) {
        let all: Vec<(ShareKey, Shared)> = self
            .loaded
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect();
        for (key, shared) in all {
            let mut held = shared.lock();
            let partition = &mut held.partition;
            if partition
                .next_lock_deadline()
                .is_none_or(|deadline| deadline > now_ms)
            {
                continue;
            }
            let lapsed = partition.expire_locks(now_ms);
            if let Err(error) = state.write(&key, &partition.state_write(lapsed)) {
                tracing::warn!(group = %key.group, partition = key.partition, %error, "storing the records whose lock lapsed failed; they are available in memory");
            }
        }
    }

    /// Drops `group`'s share partitions from memory (their state was changed from outside: they
    /// load it again at their next fetch).
    pub fn forget_group(&self, group: &str) {
        self.drop_group(group, true);
    }

    /// Drops every share partition from memory (share groups were turned off: what was
    /// acquired and not acknowledged is delivered again once they are back).
    pub fn forget_all(&self) {
        let groups: std::collections::BTreeSet<String> = self
            .loaded
            .lock()
            .keys()
            .map(|key| key.group.clone())
            .collect();
        for group in groups {
            self.drop_group(&group, true);
        }
    }

    /// How many share partitions are in memory.
    pub fn loaded_count(&self) -> usize {
        self.loaded.lock().len()
    }
}

/// One fetch of `partition` (held under its lock): lapsed locks given back, the log's start
/// followed, up to [`READ_BYTES`] read from its next fetch offset, records acquired.
fn fetch_from(
    partition: &mut SharePartition,
    state: &ShareStateCoordinator,
    key: &ShareKey,
    log: &Log,
    settings: ShareSettings,
    ask: FetchAsk<'_>,
) -> Fetched {
    let lapsed = partition.expire_locks(ask.now_ms);
    if !lapsed.is_empty() {
        // Kept even when not stored, as Kafka keeps a lapsed lock's change.
        let _ = state.write(key, &partition.state_write(lapsed));
    }
    partition.advance_to_log_start(log.log_start_offset().value());
    let read_from = partition.next_fetch_offset();
    let read = log.read(FetchParams {
        start_offset: Offset::new(read_from),
        max_bytes: ask.max_bytes.min(READ_BYTES),
        bound: if settings.read_committed {
            FetchBound::LastStable
        } else {
            FetchBound::HighWatermark
        },
        first_batch: FirstBatch::Whole,
    });
    let (bytes, aborted) = match read.and_then(|data| Ok((data.read_bytes()?, data.aborted_txns))) {
        Ok(data) => data,
        Err(StorageError::OffsetOutOfRange { .. }) => return Fetched::default(),
        Err(error) => {
            return Fetched {
                error: errors::code_of(&error),
                ..Fetched::default()
            };
        }
    };
    let entries = entries_of(&bytes, read_from);
    let batches: Vec<LogBatch> = entries.iter().map(|(_, batch)| *batch).collect();
    let aborted: Option<Vec<(i64, i64)>> = aborted.map(|txns| {
        txns.iter()
            .map(|t| (t.producer_id, t.first_offset.value()))
            .collect()
    });
    let acquired = partition.acquire(&AcquireRequest {
        member: ask.member,
        mode: ask.mode,
        batch_size: ask.batch_size,
        max_records: ask.max_records,
        batches: &batches,
        aborted: aborted.as_deref(),
        now_ms: ask.now_ms,
    });
    let records = match (acquired.first(), acquired.last()) {
        (Some(first), Some(last)) => covering(&bytes, &entries, first.first, last.last),
        _ => Bytes::new(),
    };
    Fetched {
        error: errors::NONE,
        records,
        acquired,
    }
}
