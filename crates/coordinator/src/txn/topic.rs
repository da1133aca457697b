//! The internal `__transaction_state` topic: each transactional id's state, in the partition
//! Kafka places it (`Utils.abs(id.hashCode) % transaction.state.log.num.partitions`), compacted
//! so only the latest record per id (and tombstones, for a while) survives. Records use Kafka's
//! key and value schemas (`records::transaction_state`); values are written at version 1, as a
//! Kafka 4.4 cluster writes them.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_records::consumer_offsets::coordinator_partition;
use ferrolog_records::transaction_state::{TxnLogValue, decode_key, encode_key};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{Result, StorageError, TopicPartition};

use crate::runtime::{Codec, Journal, LoadEvent, LoadSummary, Missing, invalid, loader};

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

    /// The topic's partition count, which places the ids.
    pub fn partitions(&self) -> i32 {
        self.partitions
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
            .topic_configs()
            .overrides(TRANSACTION_STATE_TOPIC)
            .is_empty()
        {
            let overrides = BTreeMap::from([
                ("cleanup.policy".to_owned(), "compact".to_owned()),
                ("segment.bytes".to_owned(), self.segment_bytes.to_string()),
                ("compression.type".to_owned(), "uncompressed".to_owned()),
            ]);
            self.manager
                .topic_configs()
                .set(TRANSACTION_STATE_TOPIC, overrides)?;
        }
        let all: Vec<TopicPartition> = (0..self.partitions)
            .map(|partition| TopicPartition::new(TRANSACTION_STATE_TOPIC, partition))
            .collect();
        self.manager.create_all(&all)
    }

    /// The topic's writer. A partition is never created by a write (FindCoordinator creates
    /// the topic, outside the coordinator's locks): a missing one is
    /// [`StorageError::UnknownTopicOrPartition`].
    pub fn journal(&self) -> Journal {
        Journal::new(
            Arc::clone(&self.manager),
            TRANSACTION_STATE_TOPIC,
            Missing::Refuse,
        )
    }

    /// Writes `transactional_id`'s state (`None`: a tombstone, forgetting it) as one record.
    pub fn append(
        &self,
        transactional_id: &str,
        value: Option<&TxnLogValue>,
        now_ms: i64,
    ) -> Result<()> {
        let record = (transactional_id.to_owned(), value.cloned());
        self.journal()
            .append::<TxnCodec>(self.partition_of(transactional_id), &[record], now_ms)
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
        let journal = self.journal();
        let mut results = Vec::new();
        for (partition, ids) in by_partition {
            for chunk in ids.chunks(512) {
                let records: Vec<TxnRecord> =
                    chunk.iter().map(|id| ((*id).to_owned(), None)).collect();
                let written = journal.append::<TxnCodec>(partition, &records, now_ms);
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
    /// offset, damaged data as the loader reports it. The summary's highest partition leader
    /// epoch feeds the coordinator epoch (see [`super::TransactionCoordinator`]).
    pub fn load(&self, mut visit: impl FnMut(i32, TxnRecord)) -> Result<LoadSummary> {
        loader::load::<TxnCodec>(&self.manager, self.partitions, |partition, event| {
            // Markers are not written to this topic.
            if let LoadEvent::Record { record, .. } = event {
                visit(partition, record);
            }
        })
    }
}

/// The records of `__transaction_state`: each id's state in Kafka's key and value schemas.
#[derive(Debug)]
pub struct TxnCodec;

impl Codec for TxnCodec {
    type Record = TxnRecord;
    const TOPIC: &'static str = TRANSACTION_STATE_TOPIC;
    const WHAT: &'static str = "transaction";

    fn encode((id, value): &TxnRecord) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        let value = value
            .as_ref()
            .map(|value| value.encode(VALUE_VERSION))
            .transpose()
            .map_err(invalid)?;
        Ok((encode_key(id), value))
    }

    fn decode(
        partition: &TopicPartition,
        offset: i64,
        key: &[u8],
        value: Option<Vec<u8>>,
    ) -> Option<TxnRecord> {
        let id = match decode_key(key) {
            Ok(id) => id,
            Err(error) => {
                // Kafka skips keys of other record types the same way.
                tracing::warn!(%partition, offset, %error, "skipping a record of the transaction state topic whose key does not read");
                return None;
            }
        };
        match value.as_deref().map(TxnLogValue::decode).transpose() {
            Ok(value) => Some((id, value)),
            Err(error) => {
                tracing::warn!(%partition, offset, transactional_id = id, %error, "skipping a transaction state record whose value does not read");
                None
            }
        }
    }
}
