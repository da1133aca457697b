//! Transaction verification before the partition's writer lock, as Kafka verifies (its
//! `VerificationGuard`). A transactional batch that would start a transaction in this partition
//! must belong to its producer's ongoing transaction, which only the transaction coordinator
//! knows; asking it may take the coordinator's locks and append to `__transaction_state` (a
//! transactions-v2 write adds its partition to the transaction), so it is asked with no lock of
//! this log held. What the answer leaves behind is a guard, a token checked under the writer
//! lock: the producer's next transactional batch or marker written here clears it, so a "yes"
//! that a marker has overtaken since (the transaction ended, another may have begun) no longer
//! lets its batch in, and the append is refused INVALID_TXN_STATE.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::Log;
use crate::epoch::ProducerEpoch;
use crate::error::{Result, StorageError};
use crate::producer::{BatchOrigin, ProducerBatch, TxnVerifier};

/// Guards are unique in the process, so one drawn for an earlier verification never matches a
/// later one's.
static NEXT_GUARD: AtomicU64 = AtomicU64::new(1);

/// The verifications of one partition that the coordinator answered and no write has used or
/// overtaken yet: per producer, its guard. Locked after the producer state, and nothing is
/// locked under it.
#[derive(Debug, Default)]
pub(super) struct Verifications {
    by_producer: HashMap<i64, Verification>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verification {
    guard: u64,
    epoch: ProducerEpoch,
    started_ms: i64,
}

impl Verifications {
    /// A new guard for `producer_id` at `epoch`, replacing any earlier one.
    fn start(&mut self, producer_id: i64, epoch: ProducerEpoch, now_ms: i64) -> u64 {
        let guard = NEXT_GUARD.fetch_add(1, Ordering::Relaxed);
        self.by_producer.insert(
            producer_id,
            Verification {
                guard,
                epoch,
                started_ms: now_ms,
            },
        );
        guard
    }

    fn holds(&self, producer_id: i64, epoch: ProducerEpoch, guard: u64) -> bool {
        self.by_producer
            .get(&producer_id)
            .is_some_and(|held| held.guard == guard && held.epoch == epoch)
    }

    /// Drops `producer_id`'s guard if it is still `guard` (a verification the coordinator
    /// refused).
    fn abandon(&mut self, producer_id: i64, guard: u64) {
        if self
            .by_producer
            .get(&producer_id)
            .is_some_and(|held| held.guard == guard)
        {
            self.by_producer.remove(&producer_id);
        }
    }

    /// A transactional batch or a marker of `producer_id` was written: its guard is spent.
    pub(super) fn clear(&mut self, producer_id: i64) {
        self.by_producer.remove(&producer_id);
    }

    /// The producer state was replaced (truncation, a move's swap): no guard stands.
    pub(super) fn clear_all(&mut self) {
        self.by_producer.clear();
    }

    /// Drops guards older than `expiration_ms` at `now_ms`, as idle producers are forgotten.
    pub(super) fn expire(&mut self, now_ms: i64, expiration_ms: i64) {
        self.by_producer
            .retain(|_, held| now_ms - held.started_ms < expiration_ms);
    }
}

/// The guards one append took before the writer lock: the verifier its locked check asks.
#[derive(Debug)]
pub(super) struct GuardCheck<'a> {
    taken: HashMap<i64, (u64, ProducerEpoch)>,
    verifications: &'a Mutex<Verifications>,
}

impl TxnVerifier for GuardCheck<'_> {
    fn verify(&self, producer_id: i64, epoch: ProducerEpoch) -> Result<()> {
        let holds = self.taken.get(&producer_id).is_some_and(|(guard, taken)| {
            *taken == epoch && self.verifications.lock().holds(producer_id, epoch, *guard)
        });
        if holds {
            return Ok(());
        }
        Err(StorageError::InvalidTxnState {
            producer_id,
            reason:
                "its transaction changed between its verification and the write (a marker ended it)"
                    .to_owned(),
        })
    }
}

/// A verifier that answers yes and notes whom it was asked about.
#[derive(Debug, Default)]
struct Recording {
    asked: RefCell<Vec<(i64, ProducerEpoch)>>,
}

impl TxnVerifier for Recording {
    fn verify(&self, producer_id: i64, epoch: ProducerEpoch) -> Result<()> {
        self.asked.borrow_mut().push((producer_id, epoch));
        Ok(())
    }
}

impl Log {
    /// Asks `verifier` about each transactional batch of `batches` that the producer state
    /// says would start a transaction here, with no lock of this log held; returns the guards
    /// to check under the writer lock. A batch the state refuses, or a retry of one written,
    /// asks nothing: the check under the lock answers it.
    pub(super) fn verify_before_lock(
        &self,
        batches: &[ProducerBatch],
        verifier: &dyn TxnVerifier,
        origin: BatchOrigin,
    ) -> Result<GuardCheck<'_>> {
        let recording = Recording::default();
        if batches.iter().any(|batch| batch.transactional) {
            let producers = self.producers.lock();
            // Its answer is the locked check's to give; only whom it would ask matters here.
            let _ = producers.check_verified(batches, &recording, origin);
        }
        let now_ms = self.clock.now_ms();
        let mut taken = HashMap::new();
        for (producer_id, epoch) in recording.asked.into_inner() {
            let guard = self.verifications.lock().start(producer_id, epoch, now_ms);
            if let Err(refused) = verifier.verify(producer_id, epoch) {
                self.verifications.lock().abandon(producer_id, guard);
                return Err(refused);
            }
            taken.insert(producer_id, (guard, epoch));
        }
        Ok(GuardCheck {
            taken,
            verifications: &self.verifications,
        })
    }
}
