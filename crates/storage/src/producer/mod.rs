//! Producer state: for each idempotent producer id of a partition, its epoch, the metadata of
//! its last five batches and its open transaction, so a retried batch is recognised and not
//! written twice, a gap in the sequence numbers is refused, a fenced (older) epoch is refused,
//! and the partition knows which transactions are undecided — Kafka's `ProducerStateManager`.
//!
//! The rules, checked batch by batch in the order of an append:
//! * a batch whose epoch and sequence range equal one of the producer's last five is a
//!   duplicate: the append is answered with the original offsets and nothing is written;
//! * an epoch below the producer's is INVALID_PRODUCER_EPOCH;
//! * a new epoch must start at sequence 0;
//! * in the same epoch the first sequence must follow the last (`last + 1`, or 0 after
//!   `i32::MAX`; 0 once a marker moved the producer to a new epoch), else
//!   OUT_OF_ORDER_SEQUENCE_NUMBER;
//! * a producer id the partition does not know may start at any sequence (its state may have
//!   expired or been removed with old segments), as Kafka accepts it;
//! * a plain batch while the producer's transaction is open is INVALID_TXN_STATE.
//!
//! Transactions: the first transactional batch of a producer opens its transaction at that
//! batch's offset; a COMMIT or ABORT marker (a control batch the coordinator writes) closes it,
//! takes the marker's producer and coordinator epochs, and yields a [`CompletedTxn`]. A marker
//! of a producer with nothing open in the partition completes nothing. The first offset of the
//! earliest open transaction bounds what `read_committed` consumers may read.
//!
//! The state is kept in memory and in [`snapshot`] files written at each roll and at close; at
//! startup the newest valid snapshot is loaded and the log after it replayed.

pub mod snapshot;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use ferrolog_records::RecordBatch;
use ferrolog_records::control::{ControlType, marker_coordinator_epoch};

use crate::epoch::{CoordinatorEpoch, ProducerEpoch};
use crate::error::{Result, StorageError};
use crate::offset::Offset;

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
    pub first_offset: Offset,
    /// The offset of the batch's last record.
    pub last_offset: Offset,
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
    /// [`ProducerEpoch::NONE`] for an entry made by something other than a batch of its own,
    /// which any sequence may follow.
    pub epoch: ProducerEpoch,
    /// Oldest first, at most [`BATCHES_PER_PRODUCER`].
    pub batches: VecDeque<BatchMetadata>,
    /// The transaction coordinator's `coordinatorEpoch`, from the producer's last marker;
    /// [`CoordinatorEpoch::NONE`] for none.
    pub coordinator_epoch: CoordinatorEpoch,
    /// The newest batch's max timestamp or marker's timestamp, from which expiry counts; −1 for
    /// none.
    pub last_timestamp: i64,
    /// The first offset of the producer's open transaction in this partition.
    pub current_txn_first_offset: Option<Offset>,
}

impl ProducerEntry {
    /// A producer at `epoch` with no batches yet, no coordinator epoch and no open
    /// transaction.
    pub fn new(producer_id: i64, epoch: ProducerEpoch) -> Self {
        Self {
            producer_id,
            epoch,
            batches: VecDeque::new(),
            coordinator_epoch: CoordinatorEpoch::NONE,
            last_timestamp: -1,
            current_txn_first_offset: None,
        }
    }

    /// The newest batch's max timestamp or marker's timestamp; −1 for none.
    pub fn last_timestamp(&self) -> i64 {
        self.last_timestamp
    }

    /// The newest batch's last offset; `None` without batches.
    pub fn last_offset(&self) -> Option<Offset> {
        self.batches.back().map(|b| b.last_offset)
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

    /// Moves to `epoch`; the batches of an older epoch no longer tell duplicates or sequences.
    fn set_epoch(&mut self, epoch: ProducerEpoch) {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.batches.clear();
        }
    }

    fn record(&mut self, batch: &ProducerBatch) {
        self.set_epoch(batch.epoch);
        self.last_timestamp = batch.timestamp;
        if batch.transactional && self.current_txn_first_offset.is_none() {
            self.current_txn_first_offset = Some(batch.first_offset);
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
    pub epoch: ProducerEpoch,
    /// The batch's `baseSequence`.
    pub first_seq: i32,
    /// `baseSequence` + `lastOffsetDelta`, wrapping past `i32::MAX` to 0.
    pub last_seq: i32,
    /// The batch's `baseOffset`.
    pub first_offset: Offset,
    /// `baseOffset` + `lastOffsetDelta`: the offset of the batch's last record.
    pub last_offset: Offset,
    /// The batch's `maxTimestamp`.
    pub timestamp: i64,
    /// Whether the batch belongs to a transaction.
    pub transactional: bool,
}

impl ProducerBatch {
    /// The producer fields of a v2 batch; `None` for batches without a producer id and for
    /// control batches (transaction markers carry no sequence).
    pub fn of(batch: &RecordBatch<'_>) -> Option<Self> {
        if batch.producer_id() < 0 || batch.is_control() {
            return None;
        }
        let first_seq = batch.base_sequence();
        let first_offset = Offset::new(batch.base_offset());
        Some(Self {
            producer_id: batch.producer_id(),
            epoch: ProducerEpoch::new(batch.producer_epoch()),
            first_seq,
            // Sequences wrap at i32::MAX, as Kafka's do.
            last_seq: first_seq.wrapping_add(batch.last_offset_delta()) & i32::MAX,
            first_offset,
            last_offset: first_offset + i64::from(batch.last_offset_delta()),
            timestamp: batch.max_timestamp(),
            transactional: batch.is_transactional(),
        })
    }
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// ABORT (control record type 0): consumers reading committed data skip the transaction.
    Abort,
    /// COMMIT (control record type 1).
    Commit,
}

/// A transaction marker, as the producer state needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    /// The producer whose transaction the marker ends.
    pub producer_id: i64,
    /// The marker batch's producer epoch.
    pub epoch: ProducerEpoch,
    /// The coordinator epoch in the marker's value.
    pub coordinator_epoch: CoordinatorEpoch,
    /// COMMIT or ABORT.
    pub kind: MarkerKind,
    /// The marker's offset.
    pub offset: Offset,
    /// The marker record's timestamp.
    pub timestamp: i64,
}

impl TxnMarker {
    /// The marker a control batch holds: `Ok(None)` for a batch that is not a control batch of
    /// a producer, has no record (the cleaner leaves such empty batches), or holds a control
    /// record other than COMMIT or ABORT; `Err(reason)` for a marker whose record does not read.
    pub fn of(batch: &RecordBatch<'_>) -> std::result::Result<Option<Self>, String> {
        if !batch.is_control() || batch.producer_id() < 0 || batch.records_count() == 0 {
            return Ok(None);
        }
        // A marker is one small uncompressed record; 64 KiB bounds anything claiming more.
        let records = batch
            .records(64 * 1024)
            .map_err(|error| format!("the control record does not read: {error}"))?;
        let record = match records.iter().next() {
            None => return Ok(None),
            Some(Err(error)) => return Err(format!("the control record does not read: {error}")),
            Some(Ok(record)) => record,
        };
        let kind = match record.key.and_then(ControlType::from_key) {
            Some(ControlType::Abort) => MarkerKind::Abort,
            Some(ControlType::Commit) => MarkerKind::Commit,
            Some(_) => return Ok(None),
            None => return Err("a control record without a 4-byte key".to_owned()),
        };
        let coordinator_epoch = record
            .value
            .and_then(marker_coordinator_epoch)
            .ok_or_else(|| format!("a {} marker without a 6-byte value", kind.name()))?;
        Ok(Some(Self {
            producer_id: batch.producer_id(),
            epoch: ProducerEpoch::new(batch.producer_epoch()),
            coordinator_epoch: CoordinatorEpoch::new(coordinator_epoch),
            kind,
            offset: Offset::new(batch.base_offset()),
            timestamp: record.timestamp,
        }))
    }
}

impl MarkerKind {
    /// The control record type's name, as Kafka's tools print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Abort => "ABORT",
            Self::Commit => "COMMIT",
        }
    }
}

/// A transaction a marker ended in this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// Whose transaction.
    pub producer_id: i64,
    /// Its first offset in the partition.
    pub first_offset: Offset,
    /// The marker's offset.
    pub last_offset: Offset,
    /// Whether it was aborted.
    pub aborted: bool,
    /// What became stable with it, the high watermark aside: the first offset of the earliest
    /// other open transaction, or the marker's offset + 1 (Kafka's
    /// `lastStableOffset(completedTxn)`, which the transaction index keeps).
    pub last_stable_offset: Offset,
}

/// Who wrote a producer batch: Kafka's `AppendOrigin` for the checks that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOrigin {
    /// A producer: duplicates are recognised and sequences must follow.
    Client,
    /// A coordinator writing for a producer (the group coordinator's transactional offset
    /// commits): its batches carry no sequence of the producer's, so only the epoch is checked.
    Coordinator,
}

/// The transaction coordinator's check that a producer's transaction includes this partition
/// (Kafka's partition verification, KIP-890), asked for the first transactional batch of a
/// transaction in a partition. A log asks it before it takes its writer lock, and under the lock
/// checks only that no marker has overtaken the answer since (`Log::append_as_leader_verified`):
/// no batch can start a transaction here that no marker will end.
pub trait TxnVerifier {
    /// `Ok` when `producer_id` at `epoch` has an ongoing transaction that includes this
    /// partition; otherwise the refusal the producer gets
    /// ([`StorageError::TxnNotVerified`], or an epoch or state error).
    fn verify(&self, producer_id: i64, epoch: ProducerEpoch) -> Result<()>;
}

/// The verifier of appends made without a transaction coordinator (tools, tests, embedded use):
/// a batch that would start a transaction is refused with INVALID_TXN_STATE.
#[derive(Debug, Clone, Copy)]
pub struct NoTxnCoordinator;

impl TxnVerifier for NoTxnCoordinator {
    fn verify(&self, producer_id: i64, _epoch: ProducerEpoch) -> Result<()> {
        Err(StorageError::InvalidTxnState {
            producer_id,
            reason: "a transactional batch, but no transaction coordinator verifies this append"
                .to_owned(),
        })
    }
}

/// Every producer of a partition, and its open transactions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerState {
    producers: HashMap<i64, ProducerEntry>,
    /// Open transactions by first offset: the producer whose transaction starts there.
    open_txns: BTreeMap<Offset, i64>,
}

impl ProducerState {
    /// The state of the producers in `entries` (a loaded snapshot), keyed by producer id.
    pub fn from_entries(entries: Vec<ProducerEntry>) -> Self {
        let open_txns = entries
            .iter()
            .filter_map(|e| {
                e.current_txn_first_offset
                    .map(|first| (first, e.producer_id))
            })
            .collect();
        Self {
            producers: entries.into_iter().map(|e| (e.producer_id, e)).collect(),
            open_txns,
        }
    }

    /// The first offset of the earliest open transaction: `read_committed` reads stop there.
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        self.open_txns.keys().next().copied()
    }

    /// Open transactions as (first offset, producer id), earliest first.
    pub fn open_txns(&self) -> impl Iterator<Item = (Offset, i64)> + '_ {
        self.open_txns
            .iter()
            .map(|(&first, &producer)| (first, producer))
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

    /// [`ProducerState::check_verified`] without a transaction coordinator: a batch that would
    /// start a transaction is refused.
    pub fn check(&self, batches: &[ProducerBatch]) -> Result<Option<BatchMetadata>> {
        self.check_verified(batches, &NoTxnCoordinator, BatchOrigin::Client)
    }

    /// Checks the batches of one append in order against the state (and against the batches
    /// before them in the same append). `Ok(Some(original))` when a batch is a duplicate: the
    /// append must be answered with the original's offsets and not written. A transactional
    /// batch of a producer with no transaction open here at its epoch is first put to
    /// `verifier` (after the epoch check, before the sequence checks, in Kafka's order).
    /// Batches a coordinator writes are checked for their epoch only.
    pub fn check_verified(
        &self,
        batches: &[ProducerBatch],
        verifier: &dyn TxnVerifier,
        origin: BatchOrigin,
    ) -> Result<Option<BatchMetadata>> {
        let mut pending: HashMap<i64, ProducerEntry> = HashMap::new();
        for batch in batches {
            let current = pending
                .get(&batch.producer_id)
                .or_else(|| self.producers.get(&batch.producer_id));
            if let Some(entry) = current {
                if origin == BatchOrigin::Client
                    && let Some(original) = entry.find_duplicate(batch)
                {
                    return Ok(Some(original));
                }
                if batch.epoch < entry.epoch {
                    return Err(StorageError::InvalidProducerEpoch {
                        producer_id: batch.producer_id,
                        epoch: batch.epoch,
                        current: entry.epoch,
                    });
                }
                let in_open_txn =
                    entry.current_txn_first_offset.is_some() && entry.epoch == batch.epoch;
                if batch.transactional && !in_open_txn {
                    verifier.verify(batch.producer_id, batch.epoch)?;
                }
                // A new epoch starts at 0; otherwise the sequence follows the last batch's. An
                // entry without batches was made by a marker: its epoch is new, so 0 again,
                // unless it has no epoch of its own.
                let expected = match entry.batches.back() {
                    _ if batch.epoch != entry.epoch && !entry.epoch.is_none() => 0,
                    _ if batch.epoch != entry.epoch => batch.first_seq,
                    Some(last) if last.last_seq == i32::MAX => 0,
                    Some(last) => last.last_seq + 1,
                    None if entry.epoch.is_none() => batch.first_seq,
                    None => 0,
                };
                if origin == BatchOrigin::Client && batch.first_seq != expected {
                    return Err(StorageError::OutOfOrderSequence {
                        producer_id: batch.producer_id,
                        expected,
                        received: batch.first_seq,
                    });
                }
                if let Some(first) = entry.current_txn_first_offset
                    && !batch.transactional
                {
                    return Err(StorageError::InvalidTxnState {
                        producer_id: batch.producer_id,
                        reason: format!(
                            "a non-transactional batch while its transaction from offset {first} is open"
                        ),
                    });
                }
            }
            if current.is_none() && batch.transactional {
                verifier.verify(batch.producer_id, batch.epoch)?;
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
        let entry = self
            .producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerEntry::new(batch.producer_id, batch.epoch));
        let was_open = entry.current_txn_first_offset.is_some();
        entry.record(batch);
        if !was_open && let Some(first) = entry.current_txn_first_offset {
            self.open_txns.insert(first, batch.producer_id);
        }
    }

    /// Checks a marker the coordinator is about to write: its producer epoch may not be older
    /// than the producer's (with `epoch_bumped`, transactions v2, it must be newer, unless it
    /// repeats the last marker: the producer has no transaction open at its epoch), nor its
    /// coordinator epoch older than the last marker's.
    pub fn check_marker(&self, marker: &TxnMarker, epoch_bumped: bool) -> Result<()> {
        let Some(entry) = self.producers.get(&marker.producer_id) else {
            return Ok(());
        };
        // With transactions v2 a marker's epoch is above the producer's, except a retry of the
        // marker already written (the producer has nothing open at that epoch), which Kafka
        // 4.4 accepts (KAFKA-19999): a coordinator completing a transaction after a restart
        // writes its markers again.
        let retried = marker.epoch == entry.epoch
            && (entry.current_txn_first_offset.is_none() || entry.epoch == ProducerEpoch::MAX);
        let stale = if epoch_bumped {
            marker.epoch < entry.epoch || (marker.epoch == entry.epoch && !retried)
        } else {
            marker.epoch < entry.epoch
        };
        if stale {
            return Err(StorageError::InvalidProducerEpoch {
                producer_id: marker.producer_id,
                epoch: marker.epoch,
                current: entry.epoch,
            });
        }
        if entry.coordinator_epoch > marker.coordinator_epoch {
            return Err(StorageError::CoordinatorFenced {
                producer_id: marker.producer_id,
                marker: marker.coordinator_epoch,
                current: entry.coordinator_epoch,
            });
        }
        Ok(())
    }

    /// Records an appended (or replayed) marker: the producer takes its epochs and its open
    /// transaction, if any, is completed and returned.
    pub fn apply_marker(&mut self, marker: &TxnMarker) -> Option<CompletedTxn> {
        let entry = self
            .producers
            .entry(marker.producer_id)
            .or_insert_with(|| ProducerEntry::new(marker.producer_id, ProducerEpoch::NONE));
        entry.set_epoch(marker.epoch);
        entry.coordinator_epoch = marker.coordinator_epoch;
        entry.last_timestamp = marker.timestamp;
        let first_offset = entry.current_txn_first_offset.take()?;
        // Stable up to the earliest transaction of another producer still open.
        let last_stable_offset = self
            .open_txns
            .iter()
            .find(|&(_, &producer)| producer != marker.producer_id)
            .map_or(marker.offset.next(), |(&first, _)| first);
        self.open_txns.remove(&first_offset);
        Some(CompletedTxn {
            producer_id: marker.producer_id,
            first_offset,
            last_offset: marker.offset,
            aborted: marker.kind == MarkerKind::Abort,
            last_stable_offset,
        })
    }

    /// Forgets producers idle for `expiration` (`producer.id.expiration.ms`) with no open
    /// transaction; returns how many.
    pub fn remove_expired(&mut self, now_ms: i64, expiration: std::time::Duration) -> usize {
        let before = self.producers.len();
        let expiration_ms = crate::clock::kafka_ms(expiration);
        self.producers.retain(|_, entry| {
            entry.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(entry.last_timestamp()) < expiration_ms
        });
        before - self.producers.len()
    }

    /// Keeps at most `max` producers: beyond, the least recently seen in the log (by the offset
    /// of their last batch, which a client cannot make up, unlike a timestamp) with no
    /// transaction open are forgotten, down to nine tenths of `max`, so that a partition fed
    /// new producer ids by the thousand pays for an eviction once per many of them. A producer
    /// forgotten is as one expired: its next batch starts its state again, and a retry of a
    /// batch from before is no longer known as one. Returns how many went.
    pub fn evict_beyond(&mut self, max: usize) -> usize {
        if self.producers.len() <= max {
            return 0;
        }
        let before = self.producers.len();
        let keep = (max - max / 10).max(1);
        let mut idle: Vec<(Option<Offset>, i64)> = self
            .producers
            .values()
            .filter(|entry| entry.current_txn_first_offset.is_none())
            .map(|entry| (entry.last_offset(), entry.producer_id))
            .collect();
        idle.sort_unstable();
        let excess = before.saturating_sub(keep);
        for (_, producer_id) in idle.into_iter().take(excess) {
            self.producers.remove(&producer_id);
        }
        before - self.producers.len()
    }

    /// Forgets producers whose every batch lies below `log_start_offset` (their data is gone),
    /// but none with an open transaction or whose last word was a marker (it carries their
    /// epoch; they expire with time).
    pub fn evict_below(&mut self, log_start_offset: Offset) {
        self.producers.retain(|_, entry| {
            entry.current_txn_first_offset.is_some()
                || entry
                    .last_offset()
                    .is_none_or(|last| last >= log_start_offset)
        });
    }
}

#[cfg(test)]
mod tests;
