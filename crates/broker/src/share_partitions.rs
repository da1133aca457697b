//! The share partitions this broker serves (Kafka's `SharePartitionManager`): each
//! [`SharePartition`] loaded from its stored state at its first fetch, kept while a session of
//! its group is open, and every change it makes persisted through the share coordinator before
//! it counts — an acknowledgement or release whose write fails is undone, as in Kafka.
//!
//! Locks: a share partition's own, then (inside a write) the share coordinator's shard. A fetch
//! reads the log under the partition's lock, so two members never acquire the same records.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use ferrolog_coordinator::group::group_configs::OffsetReset;
use ferrolog_coordinator::share_partition::{
    AckBatch, AcquireMode, AcquireRequest, Acquired, Limits, LogBatch, SharePartition,
};
use ferrolog_coordinator::share_state::{ShareKey, ShareStateCoordinator, StateError};
use ferrolog_records::share_state_records::StateBatch;
use ferrolog_records::{EntryIter, FileEntry};
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::producer::{MarkerKind, TxnMarker};
use ferrolog_storage::{Offset, StorageError};
use parking_lot::Mutex;

use crate::errors;

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

type Shared = Arc<Mutex<SharePartition>>;

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

    /// The share partition of `key`, loaded from its stored state when not in memory.
    fn get_or_load(
        &self,
        state: &ShareStateCoordinator,
        key: &ShareKey,
        log: &Log,
        settings: ShareSettings,
        now_ms: i64,
    ) -> Result<Shared, i16> {
        if let Some(shared) = self.get(key) {
            shared.lock().set_limits(settings.limits);
            return Ok(shared);
        }
        let stored = state.read(key, 0).map_err(|error| {
            tracing::warn!(group = %key.group, partition = key.partition, %error, "a share partition's state does not load");
            load_error(&error)
        })?;
        let start = match stored.start_offset {
            -1 => start_by_reset(log, settings.offset_reset, now_ms)?,
            stored => stored,
        };
        let loaded = SharePartition::load(&stored, start, 0, settings.limits).map_err(|error| {
            tracing::error!(group = %key.group, partition = key.partition, reason = error.0, "a share partition's stored state is inconsistent");
            errors::UNKNOWN_SERVER_ERROR
        })?;
        let shared = Arc::new(Mutex::new(loaded));
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
        let shared = match self.get_or_load(state, key, log, settings, ask.now_ms) {
            Ok(shared) => shared,
            Err(error) => {
                return Fetched {
                    error,
                    ..Fetched::default()
                };
            }
        };
        let mut partition = shared.lock();
        let lapsed = partition.expire_locks(ask.now_ms);
        if !lapsed.is_empty() {
            // Kept even when not stored, as Kafka keeps a lapsed lock's change.
            let _ = state.write(key, &partition.state_write(lapsed));
        }
        partition.advance_to_log_start(log.log_start_offset().value());
        let read = log.read(FetchParams {
            start_offset: Offset::new(partition.next_fetch_offset()),
            max_bytes: ask.max_bytes.min(READ_BYTES),
            bound: if settings.read_committed {
                FetchBound::LastStable
            } else {
                FetchBound::HighWatermark
            },
            first_batch: FirstBatch::Whole,
        });
        let data = match read.and_then(|data| Ok((data.read_bytes()?, data.aborted_txns))) {
            Ok(data) => data,
            Err(StorageError::OffsetOutOfRange { .. }) => return Fetched::default(),
            Err(error) => {
                return Fetched {
                    error: errors::code_of(&error),
                    ..Fetched::default()
                };
            }
        };
        let (bytes, aborted) = data;
        let entries = entries_of(&bytes);
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
        let mut partition = shared.lock();
        let before = partition.clone();
        match partition.acknowledge(member, batches, now_ms) {
            Ok(changed) => Self::persist(state, key, &mut partition, before, changed),
            Err(code) => {
                *partition = before;
                code
            }
        }
    }

    /// Releases what `member` holds in the partitions of `keys` (its session ended); drops the
    /// group's partitions from memory when it has no session left.
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
            let mut partition = shared.lock();
            let before = partition.clone();
            let changed = partition.release(member);
            Self::persist(state, key, &mut partition, before, changed);
        }
        if group_idle && let Some(group) = keys.first().map(|key| key.group.clone()) {
            self.loaded.lock().retain(|key, _| key.group != group);
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
            let mut partition = shared.lock();
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
        self.loaded.lock().retain(|key, _| key.group != group);
    }

    /// How many share partitions are in memory.
    pub fn loaded_count(&self) -> usize {
        self.loaded.lock().len()
    }
}

/// Where a partition whose share state has no start offset starts, by
/// `share.auto.offset.reset`: the log start, the high watermark, or the first record no older
/// than the duration (OFFSET_NOT_AVAILABLE when none is, as Kafka answers).
fn start_by_reset(log: &Log, reset: OffsetReset, now_ms: i64) -> Result<i64, i16> {
    match reset {
        OffsetReset::Earliest => Ok(log.log_start_offset().value()),
        OffsetReset::Latest => Ok(log.high_watermark().value()),
        OffsetReset::ByDuration(ms) => {
            match log.fetch_offset_by_timestamp(now_ms.saturating_sub(ms)) {
                Ok(Some(found)) => Ok(found.offset.value()),
                Ok(None) => Err(errors::OFFSET_NOT_AVAILABLE),
                Err(error) => Err(errors::code_of(&error)),
            }
        }
    }
}

/// The entries of `bytes` (whole ones), each with its place and what acquisition needs of it.
fn entries_of(bytes: &[u8]) -> Vec<((usize, usize), LogBatch)> {
    let mut entries = Vec::new();
    for item in EntryIter::new(bytes) {
        let Ok((position, entry)) = item else { break };
        let place = (position, entry.size_in_bytes());
        let batch = match &entry {
            FileEntry::V2(batch) => LogBatch {
                first: batch.base_offset(),
                last: batch.last_offset(),
                producer_id: batch.producer_id(),
                transactional: batch.is_transactional(),
                abort_marker: matches!(TxnMarker::of(batch), Ok(Some(marker)) if marker.kind == MarkerKind::Abort),
            },
            FileEntry::Legacy(_) => LogBatch {
                first: entry.last_offset(),
                last: entry.last_offset(),
                ..LogBatch::default()
            },
        };
        entries.push((place, batch));
    }
    entries
}

/// The bytes of the entries overlapping `first..=last`.
fn covering(bytes: &[u8], entries: &[((usize, usize), LogBatch)], first: i64, last: i64) -> Bytes {
    let overlapping: Vec<&((usize, usize), LogBatch)> = entries
        .iter()
        .filter(|(_, b)| b.last >= first && b.first <= last)
        .collect();
    match (overlapping.first(), overlapping.last()) {
        (Some(((from, _), _)), Some(((at, size), _))) => {
            Bytes::copy_from_slice(&bytes[*from..at + size])
        }
        _ => Bytes::new(),
    }
}
