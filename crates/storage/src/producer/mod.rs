//! Producer state: for each idempotent producer id of a partition, its epoch and the metadata of
//! its last five batches, so a retried batch is recognised and not written twice, a gap in the
//! sequence numbers is refused, and a fenced (older) epoch is refused — Kafka's
//! `ProducerStateManager` for non-transactional producers.
//!
//! The rules, checked batch by batch in the order of an append:
//! * a batch whose epoch and sequence range equal one of the producer's last five is a
//!   duplicate: the append is answered with the original offsets and nothing is written;
//! * an epoch below the producer's is INVALID_PRODUCER_EPOCH;
//! * a new epoch must start at sequence 0;
//! * in the same epoch the first sequence must follow the last (`last + 1`, or 0 after
//!   `i32::MAX`), else OUT_OF_ORDER_SEQUENCE_NUMBER;
//! * a producer id the partition does not know may start at any sequence (its state may have
//!   expired or been removed with old segments), as Kafka accepts it.
//!
//! The state is kept in memory and in [`snapshot`] files written at each roll and at close; at
//! startup the newest valid snapshot is loaded and the log after it replayed.

pub mod snapshot;

use std::collections::{HashMap, HashSet, VecDeque};

use ferrolog_records::RecordBatch;

use crate::error::{Result, StorageError};

/// Batches remembered per producer for duplicate detection (Kafka's
/// `NUM_BATCHES_TO_RETAIN`, which also bounds a producer's in-flight requests).
pub const BATCHES_PER_PRODUCER: usize = 5;

/// Where one batch of a producer landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    /// The batch's `baseSequence`: the sequence number of its first record.
    pub first_seq: i32,
    /// The sequence number of the batch's last record.
    pub last_seq: i32,
    /// The offset of the batch's first record.
    pub first_offset: i64,
    /// The offset of the batch's last record.
    pub last_offset: i64,
    /// The batch's max timestamp; producer expiry counts from the newest.
    pub timestamp: i64,
}

impl BatchMetadata {
    /// The last offset minus the first: a snapshot entry's `offsetDelta`.
    pub fn offset_delta(&self) -> i32 {
        i32::try_from(self.last_offset - self.first_offset).unwrap_or(i32::MAX)
    }
}

/// One producer id's state in one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerEntry {
    /// The producer's `producerId`.
    pub producer_id: i64,
    /// The producer's current `producerEpoch`; batches of an older one are fenced.
    pub epoch: i16,
    /// Oldest first, at most [`BATCHES_PER_PRODUCER`].
    pub batches: VecDeque<BatchMetadata>,
    /// The transaction coordinator's `coordinatorEpoch`, kept through snapshots; −1 for none.
    pub coordinator_epoch: i32,
}

impl ProducerEntry {
    /// A producer at `epoch` with no batches yet and no coordinator epoch (−1).
    pub fn new(producer_id: i64, epoch: i16) -> Self {
        Self {
            producer_id,
            epoch,
            batches: VecDeque::new(),
            coordinator_epoch: -1,
        }
    }

    /// The newest batch's max timestamp, from which expiry counts; −1 without batches.
    pub fn last_timestamp(&self) -> i64 {
        self.batches.back().map_or(-1, |b| b.timestamp)
    }

    /// The newest batch's last offset; −1 without batches.
    pub fn last_offset(&self) -> i64 {
        self.batches.back().map_or(-1, |b| b.last_offset)
    }

    fn find_duplicate(&self, batch: &ProducerBatch) -> Option<BatchMetadata> {
        if batch.epoch != self.epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_seq == batch.first_seq && b.last_seq == batch.last_seq)
            .copied()
    }

    fn record(&mut self, batch: &ProducerBatch) {
        if batch.epoch != self.epoch {
            self.epoch = batch.epoch;
            self.batches.clear();
        }
        self.batches.push_back(BatchMetadata {
            first_seq: batch.first_seq,
            last_seq: batch.last_seq,
            first_offset: batch.first_offset,
            last_offset: batch.last_offset,
            timestamp: batch.timestamp,
        });
        while self.batches.len() > BATCHES_PER_PRODUCER {
            self.batches.pop_front();
        }
    }
}

/// A batch of an idempotent producer, as the state needs it (offsets as assigned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    /// The batch's `producerId`.
    pub producer_id: i64,
    /// The batch's `producerEpoch`.
    pub epoch: i16,
    /// The batch's `baseSequence`.
    pub first_seq: i32,
    /// `baseSequence` + `lastOffsetDelta`, wrapping past `i32::MAX` to 0.
    pub last_seq: i32,
    /// The batch's `baseOffset`.
    pub first_offset: i64,
    /// `baseOffset` + `lastOffsetDelta`: the offset of the batch's last record.
    pub last_offset: i64,
    /// The batch's `maxTimestamp`.
    pub timestamp: i64,
}

impl ProducerBatch {
    /// The producer fields of a v2 batch; `None` for batches without a producer id and for
    /// control batches (transaction markers carry no sequence).
    pub fn of(batch: &RecordBatch<'_>) -> Option<Self> {
        if batch.producer_id() < 0 || batch.is_control() {
            return None;
        }
        let first_seq = batch.base_sequence();
        Some(Self {
            producer_id: batch.producer_id(),
            epoch: batch.producer_epoch(),
            first_seq,
            // Sequences wrap at i32::MAX, as Kafka's do.
            last_seq: first_seq.wrapping_add(batch.last_offset_delta()) & i32::MAX,
            first_offset: batch.base_offset(),
            last_offset: batch.base_offset() + i64::from(batch.last_offset_delta()),
            timestamp: batch.max_timestamp(),
        })
    }
}

/// Every producer of a partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerState {
    producers: HashMap<i64, ProducerEntry>,
}

impl ProducerState {
    /// The state of the producers in `entries` (a loaded snapshot), keyed by producer id.
    pub fn from_entries(entries: Vec<ProducerEntry>) -> Self {
        Self {
            producers: entries.into_iter().map(|e| (e.producer_id, e)).collect(),
        }
    }

    /// How many producers the state holds.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Whether the state holds no producer.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// The state of `producer_id`, if the partition knows it.
    pub fn get(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    /// Entries in producer-id order (snapshots are written in this order).
    pub fn entries(&self) -> Vec<&ProducerEntry> {
        let mut entries: Vec<&ProducerEntry> = self.producers.values().collect();
        entries.sort_by_key(|e| e.producer_id);
        entries
    }

    /// The ids of every producer the state holds.
    pub fn producer_ids(&self) -> HashSet<i64> {
        self.producers.keys().copied().collect()
    }

    /// Checks the batches of one append in order against the state (and against the batches
    /// before them in the same append). `Ok(Some(original))` when a batch is a duplicate: the
    /// append must be answered with the original's offsets and not written.
    pub fn check(&self, batches: &[ProducerBatch]) -> Result<Option<BatchMetadata>> {
        let mut pending: HashMap<i64, ProducerEntry> = HashMap::new();
        for batch in batches {
            let current = pending
                .get(&batch.producer_id)
                .or_else(|| self.producers.get(&batch.producer_id));
            if let Some(entry) = current {
                if let Some(original) = entry.find_duplicate(batch) {
                    return Ok(Some(original));
                }
                if batch.epoch < entry.epoch {
                    return Err(StorageError::InvalidProducerEpoch {
                        producer_id: batch.producer_id,
                        epoch: batch.epoch,
                        current: entry.epoch,
                    });
                }
                // A new epoch starts at 0; otherwise the sequence follows the last batch's.
                let expected = match entry.batches.back() {
                    _ if batch.epoch != entry.epoch => 0,
                    Some(last) if last.last_seq == i32::MAX => 0,
                    Some(last) => last.last_seq + 1,
                    None => batch.first_seq,
                };
                if batch.first_seq != expected {
                    return Err(StorageError::OutOfOrderSequence {
                        producer_id: batch.producer_id,
                        expected,
                        received: batch.first_seq,
                    });
                }
            }
            let mut next = current
                .cloned()
                .unwrap_or_else(|| ProducerEntry::new(batch.producer_id, batch.epoch));
            next.record(batch);
            pending.insert(batch.producer_id, next);
        }
        Ok(None)
    }

    /// Records an appended (or replayed) batch.
    pub fn apply(&mut self, batch: &ProducerBatch) {
        self.producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerEntry::new(batch.producer_id, batch.epoch))
            .record(batch);
    }

    /// Forgets producers whose newest batch is older than `expiration`
    /// (`producer.id.expiration.ms`); returns how many.
    pub fn remove_expired(&mut self, now_ms: i64, expiration: std::time::Duration) -> usize {
        let before = self.producers.len();
        let expiration_ms = crate::clock::kafka_ms(expiration);
        self.producers
            .retain(|_, entry| now_ms.saturating_sub(entry.last_timestamp()) < expiration_ms);
        before - self.producers.len()
    }

    /// Forgets producers whose every batch lies below `log_start_offset` (their data is gone).
    pub fn evict_below(&mut self, log_start_offset: i64) {
        self.producers
            .retain(|_, entry| entry.last_offset() >= log_start_offset);
    }
}

#[cfg(test)]
mod tests;
