//! The internal `__transaction_state` topic: each transactional id's state, in the partition
//! Kafka places it (`Utils.abs(id.hashCode) % transaction.state.log.num.partitions`), compacted
//! so only the latest record per id (and tombstones, for a while) survives. Records use Kafka's
//! key and value schemas (`records::transaction_state`); values are written at version 1, as a
//! Kafka 4.4 cluster writes them.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_records::consumer_offsets::coordinator_partition;
use ferrolog_records::transaction_state::{TxnLogValue, decode_key, encode_key};
use ferrolog_records::{BatchBuilder, FileEntry};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{Result, StorageError, TopicPartition};

use crate::internal_log;

pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// The value version written: 1 (flexible, with the client's transaction version), as Kafka
/// writes it once `transaction.version` is 1 or more.
const VALUE_VERSION: i16 = 1;

/// One record read back: the transactional id and its state, `None` for a tombstone.
pub type TxnRecord = (String, Option<TxnLogValue>);

#[derive(Debug)]
pub struct TxnStateTopic {
    manager: Arc<LogManager>,
    partitions: i32,
    segment_bytes: u64,
}

impl TxnStateTopic {
    /// `partitions` is `transaction.state.log.num.partitions`, `segment_bytes` is
    /// `transaction.state.log.segment.bytes`. A topic that exists keeps the partition count it
    /// has (ids are placed by it), as Kafka places them by the existing topic's.
    pub fn new(manager: Arc<LogManager>, partitions: i32, segment_bytes: u64) -> Self {
        let existing = manager
            .partitions_of(TRANSACTION_STATE_TOPIC)
            .into_iter()
            .max()
            .map(|highest| highest + 1);
        if let Some(existing) = existing
            && existing != partitions
        {
            tracing::warn!(
                existing,
                configured = partitions,
                "{TRANSACTION_STATE_TOPIC} keeps the partition count it was created with; transaction.state.log.num.partitions applies only to a new topic"
            );
        }
        Self {
            manager,
            partitions: existing.unwrap_or(partitions).max(1),
            segment_bytes,
        }
    }

    /// Whether any partition of the topic exists here.
    fn exists(&self) -> bool {
        !self
            .manager
            .partitions_of(TRANSACTION_STATE_TOPIC)
            .is_empty()
    }

    pub fn partition_of(&self, transactional_id: &str) -> i32 {
        coordinator_partition(transactional_id, self.partitions)
    }

    /// Creates every partition (as Kafka does on the first FindCoordinator for a transaction)
    /// compacted, with `transaction.state.log.segment.bytes` segments, uncompressed. Settings an
    /// operator has already given the topic are kept. A topic that exists is left as it is: a
    /// partition missing from it lives in a directory that is offline, and must not be made
    /// again elsewhere.
    pub fn ensure_created(&self) -> Result<()> {
        if self.exists() {
            return Ok(());
        }
        if self
            .manager
            .topic_overrides(TRANSACTION_STATE_TOPIC)
            .is_empty()
        {
            let overrides = BTreeMap::from([
                ("cleanup.policy".to_owned(), "compact".to_owned()),
                ("segment.bytes".to_owned(), self.segment_bytes.to_string()),
                ("compression.type".to_owned(), "uncompressed".to_owned()),
            ]);
            self.manager
                .set_topic_overrides(TRANSACTION_STATE_TOPIC, overrides)?;
        }
        let all: Vec<TopicPartition> = (0..self.partitions)
            .map(|partition| TopicPartition::new(TRANSACTION_STATE_TOPIC, partition))
            .collect();
        self.manager.create_all(&all)
    }

    /// Writes `transactional_id`'s state (`None`: a tombstone, forgetting it) as one record.
    /// The partition is never created here (FindCoordinator creates the topic, outside the
    /// coordinator's lock): a missing one is [`StorageError::UnknownTopicOrPartition`].
    pub fn append(
        &self,
        transactional_id: &str,
        value: Option<&TxnLogValue>,
        now_ms: i64,
    ) -> Result<()> {
        let value = value
            .map(|value| value.encode(VALUE_VERSION))
            .transpose()
            .map_err(invalid)?;
        self.append_records(
            self.partition_of(transactional_id),
            &[(transactional_id, value.as_deref())],
            now_ms,
        )
    }

    /// Writes tombstones for `ids`, one batch per partition (of at most 512 records, well
    /// within `max.message.bytes`).
    pub fn append_tombstones(&self, ids: &[String], now_ms: i64) -> Vec<(String, Result<()>)> {
        let mut by_partition: BTreeMap<i32, Vec<&str>> = BTreeMap::new();
        for id in ids {
            by_partition
                .entry(self.partition_of(id))
                .or_default()
                .push(id);
        }
        let mut results = Vec::new();
        for (partition, ids) in by_partition {
            for chunk in ids.chunks(512) {
                let records: Vec<(&str, Option<&[u8]>)> =
                    chunk.iter().map(|id| (*id, None)).collect();
                let written = self.append_records(partition, &records, now_ms);
                for id in chunk {
                    let result = match &written {
                        Ok(()) => Ok(()),
                        Err(error) => Err(StorageError::Fatal(error.to_string())),
                    };
                    results.push(((*id).to_owned(), result));
                }
            }
        }
        results
    }

    fn append_records(
        &self,
        partition: i32,
        records: &[(&str, Option<&[u8]>)],
        now_ms: i64,
    ) -> Result<()> {
        let topic_partition = TopicPartition::new(TRANSACTION_STATE_TOPIC, partition);
        let log =
            self.manager
                .get(&topic_partition)
                .ok_or(StorageError::UnknownTopicOrPartition {
                    topic_partition: topic_partition.clone(),
                })?;
        let mut builder = BatchBuilder::new(0);
        for (id, value) in records {
            builder
                .append(now_ms, Some(&encode_key(id)), *value, &[])
                .map_err(invalid)?;
        }
        log.append_as_leader(builder.build().map_err(invalid)?)?;
        Ok(())
    }

    /// The `__transaction_state` partitions that should exist but do not: their directory is
    /// offline (or they were lost). Their ids' states are unknown, so those ids are refused.
    pub fn missing_partitions(&self) -> Vec<i32> {
        if !self.exists() {
            return Vec::new();
        }
        let present = self.manager.partitions_of(TRANSACTION_STATE_TOPIC);
        (0..self.partitions)
            .filter(|partition| !present.contains(partition))
            .collect()
    }

    /// Every record of every partition that exists, oldest first within a partition, with its
    /// partition; records that do not decode are skipped with a warning naming the partition and
    /// offset, damaged data as [`internal_log::for_each_batch`] reports it. Also returns, per
    /// highest partition leader epoch the batches carry (see
    /// [`super::TransactionCoordinator`]'s coordinator epoch).
    pub fn load(&self, mut visit: impl FnMut(i32, TxnRecord)) -> Result<i32> {
        let mut highest_epoch = 0;
        for partition in 0..self.partitions {
            let topic_partition = TopicPartition::new(TRANSACTION_STATE_TOPIC, partition);
            let Some(log) = self.manager.get(&topic_partition) else {
                continue;
            };
            internal_log::for_each_batch(&log, "transaction", |entry, from| {
                if let FileEntry::V2(batch) = entry {
                    highest_epoch = highest_epoch.max(batch.partition_leader_epoch());
                }
                visit_entry(&topic_partition, entry, from, &mut |record| {
                    visit(partition, record)
                });
            })?;
        }
        Ok(highest_epoch)
    }
}

fn invalid(error: ferrolog_records::RecordsError) -> StorageError {
    StorageError::InvalidRecord {
        batch_index: 0,
        record_index: None,
        reason: error.to_string(),
    }
}

/// Visits the records of one batch at or above `from`.
fn visit_entry(
    topic_partition: &TopicPartition,
    entry: &FileEntry<'_>,
    from: i64,
    visit: &mut impl FnMut(TxnRecord),
) {
    if let FileEntry::V2(batch) = entry
        && batch.is_control()
    {
        return;
    }
    let records = match internal_log::owned_records(entry) {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(partition = %topic_partition, offset = entry.last_offset(), %error, "skipping an unreadable batch of the transaction state topic");
            return;
        }
    };
    for (offset, key, value) in records {
        if offset < from {
            continue;
        }
        let Some(key) = key else { continue };
        let id = match decode_key(&key) {
            Ok(id) => id,
            Err(error) => {
                // Kafka skips keys of other record types the same way.
                tracing::warn!(partition = %topic_partition, offset, %error, "skipping a record of the transaction state topic whose key does not read");
                continue;
            }
        };
        match value.as_deref().map(TxnLogValue::decode).transpose() {
            Ok(value) => visit((id, value)),
            Err(error) => {
                tracing::warn!(partition = %topic_partition, offset, transactional_id = id, %error, "skipping a transaction state record whose value does not read");
            }
        }
    }
}
