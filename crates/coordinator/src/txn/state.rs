//! A transactional id's state and the coordinator's decisions on it, as pure functions: each
//! takes the current state, the request and the time, and answers with a Kafka error or the
//! next state to write to `__transaction_state` (Kafka's `TransactionMetadata` transitions and
//! the state switches of its `TransactionCoordinator`). Nothing here does I/O or takes a lock;
//! `super::TransactionCoordinator` writes what these decide and installs it once written.

use std::collections::BTreeSet;

use ferrolog_records::transaction_state::{TxnLogValue, TxnStatus};
use ferrolog_storage::ProducerEpoch;

use crate::errors;

/// A producer epoch at which the id must move to a new producer id (Kafka's
/// `isEpochExhausted`: `Short.MAX_VALUE − 1`).
const EXHAUSTED_EPOCH: ProducerEpoch = ProducerEpoch::new(i16::MAX - 1);

/// A topic partition in a transaction.
pub type TxnPartition = (String, i32);

/// One transactional id's state: what `__transaction_state` keeps for it, and the one field
/// Kafka keeps only in memory (`last_producer_epoch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub producer_id: i64,
    /// The producer id before the last change of id (−1 for none).
    pub previous_producer_id: i64,
    pub producer_epoch: ProducerEpoch,
    /// The epoch before the last InitProducerId bump, so a retry of a successful call gets the
    /// same epoch (`ProducerEpoch::NONE` for none; not persisted, as in Kafka).
    pub last_producer_epoch: ProducerEpoch,
    pub timeout_ms: i32,
    pub state: TxnStatus,
    /// The partitions of the ongoing transaction; in PrepareCommit or PrepareAbort, those the
    /// markers go to.
    pub partitions: BTreeSet<TxnPartition>,
    /// When the transaction began; −1 when none has.
    pub start_ms: i64,
    pub last_update_ms: i64,
    /// The client's transaction version (0: transactions v1; 2: v2, the epoch bumped at every
    /// commit or abort).
    pub client_tv: i16,
    /// The producer id a transaction v2 moves to once it completes, when its epoch ran out
    /// (−1 for none).
    pub next_producer_id: i64,
}

/// The transaction version of clients whose every commit or abort bumps the epoch (KIP-890).
pub const TV_2: i16 = 2;

/// What InitProducerId decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitDecision {
    /// Write this state (Empty, with a new epoch or producer id) and answer with its id and
    /// epoch.
    Write(TxnMetadata),
    /// The id's transaction is ongoing: it is fenced and aborted at the next epoch (write this
    /// PrepareAbort, then the markers), and the producer is answered CONCURRENT_TRANSACTIONS
    /// so it asks again once the abort completes.
    FenceOngoing(TxnMetadata),
    /// Refused with this error.
    Refuse(i16),
}

/// What EndTxn decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndDecision {
    /// Write this PrepareCommit or PrepareAbort, then the markers, then complete.
    Prepare(TxnMetadata),
    /// Already done (a retry after the transaction completed): answered NONE, nothing written.
    AlreadyComplete,
    /// Refused with this error.
    Refuse(i16),
}

impl TxnMetadata {
    /// A transactional id seen for the first time, with `producer_id` allocated for it (epoch
    /// −1 until InitProducerId bumps it to 0).
    pub fn new(producer_id: i64, timeout_ms: i32, now: i64) -> Self {
        Self {
            producer_id,
            previous_producer_id: -1,
            producer_epoch: ProducerEpoch::NONE,
            last_producer_epoch: ProducerEpoch::NONE,
            timeout_ms,
            state: TxnStatus::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
            client_tv: 0,
            next_producer_id: -1,
        }
    }

    /// The state as read back from `__transaction_state`.
    pub fn from_value(value: &TxnLogValue) -> Self {
        let partitions = match value.status {
            TxnStatus::Empty => BTreeSet::new(),
            _ => value
                .partitions
                .iter()
                .flatten()
                .flat_map(|(topic, ids)| ids.iter().map(move |id| (topic.clone(), *id)))
                .collect(),
        };
        Self {
            producer_id: value.producer_id,
            previous_producer_id: value.previous_producer_id,
            producer_epoch: ProducerEpoch::new(value.producer_epoch),
            last_producer_epoch: ProducerEpoch::NONE,
            timeout_ms: value.timeout_ms,
            state: value.status,
            partitions,
            start_ms: value.start_ms,
            last_update_ms: value.last_update_ms,
            client_tv: value.client_transaction_version,
            next_producer_id: value.next_producer_id,
        }
    }

    /// The record value of this state.
    pub fn to_value(&self) -> TxnLogValue {
        let partitions = (self.state != TxnStatus::Empty).then(|| {
            let mut by_topic: Vec<(String, Vec<i32>)> = Vec::new();
            for (topic, partition) in &self.partitions {
                match by_topic.last_mut() {
                    Some((last, ids)) if last == topic => ids.push(*partition),
                    _ => by_topic.push((topic.clone(), vec![*partition])),
                }
            }
            by_topic
        });
        TxnLogValue {
            producer_id: self.producer_id,
            previous_producer_id: self.previous_producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch.value(),
            next_producer_epoch: -1,
            timeout_ms: self.timeout_ms,
            status: self.state,
            partitions,
            last_update_ms: self.last_update_ms,
            start_ms: self.start_ms,
            client_transaction_version: self.client_tv,
        }
    }

    /// The starting point of every transition: this state, with the producer id before the
    /// transition recorded as the previous one, as Kafka records it at each.
    fn next(&self) -> Self {
        Self {
            previous_producer_id: self.producer_id,
            ..self.clone()
        }
    }

    fn epoch_exhausted(&self) -> bool {
        self.producer_epoch >= EXHAUSTED_EPOCH
    }

    /// InitProducerId for an id whose state is `self` and has no transition pending, with the
    /// producer's expected id and epoch (KIP-360; `None` for a new producer). `new_producer_id`
    /// allocates an id when the epoch is exhausted.
    pub fn init_producer_id(
        &self,
        timeout_ms: i32,
        expected: Option<(i64, ProducerEpoch)>,
        now: i64,
        cluster_tv: i16,
        new_producer_id: impl FnOnce() -> Result<i64, i16>,
    ) -> InitDecision {
        if let Some((expected_id, expected_epoch)) = expected {
            let valid = self.producer_epoch.is_none()
                || expected_id == self.producer_id
                || (expected_id == self.previous_producer_id && expected_epoch >= EXHAUSTED_EPOCH);
            if !valid {
                return InitDecision::Refuse(errors::PRODUCER_FENCED);
            }
        }
        match self.state {
            TxnStatus::PrepareCommit | TxnStatus::PrepareAbort => {
                InitDecision::Refuse(errors::CONCURRENT_TRANSACTIONS)
            }
            TxnStatus::Ongoing => match self.fenced_abort(now, cluster_tv, new_producer_id) {
                Ok(abort) => InitDecision::FenceOngoing(abort),
                Err(code) => InitDecision::Refuse(code),
            },
            TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort => {
                let mut next = Self {
                    timeout_ms,
                    state: TxnStatus::Empty,
                    partitions: BTreeSet::new(),
                    start_ms: -1,
                    last_update_ms: now,
                    ..self.next()
                };
                let expected_epoch = expected.map(|(_, epoch)| epoch);
                if self.epoch_exhausted()
                    && expected_epoch.is_none_or(|epoch| epoch == self.producer_epoch)
                {
                    let producer_id = match new_producer_id() {
                        Ok(id) => id,
                        Err(code) => return InitDecision::Refuse(code),
                    };
                    next.producer_id = producer_id;
                    next.producer_epoch = ProducerEpoch::new(0);
                    next.last_producer_epoch = expected_epoch.unwrap_or(ProducerEpoch::NONE);
                    return InitDecision::Write(next);
                }
                // Below the exhausted epoch here, so the bump cannot overflow.
                match expected_epoch {
                    None => {
                        next.producer_epoch = self.producer_epoch.next();
                        next.last_producer_epoch = ProducerEpoch::NONE;
                    }
                    Some(epoch)
                        if self.producer_epoch.is_none() || epoch == self.producer_epoch =>
                    {
                        next.producer_epoch = self.producer_epoch.next();
                        next.last_producer_epoch = self.producer_epoch;
                    }
                    // A retry of a call that already bumped the epoch: the same epoch again.
                    Some(epoch) if epoch == self.last_producer_epoch => {}
                    Some(_) => return InitDecision::Refuse(errors::PRODUCER_FENCED),
                }
                InitDecision::Write(next)
            }
            TxnStatus::Dead | TxnStatus::PrepareEpochFence => {
                InitDecision::Refuse(errors::CONCURRENT_TRANSACTIONS)
            }
        }
    }

    /// The PrepareAbort that fences the producer of an ongoing transaction: its epoch bumped,
    /// so the old producer's writes and markers are refused, and the transaction aborted at the
    /// new epoch (Kafka's `prepareFenceProducerEpoch` followed by the coordinator's own abort).
    /// With the cluster at transactions v2 (`cluster_tv`), as a v2 end: the epoch it leaves is
    /// the last, a new producer id follows once the epoch runs out (KAFKA-20090), and the
    /// markers are v2's; with v1 the epoch never passes `i16::MAX`.
    pub fn fenced_abort(
        &self,
        now: i64,
        cluster_tv: i16,
        new_producer_id: impl FnOnce() -> Result<i64, i16>,
    ) -> Result<Self, i16> {
        if cluster_tv >= TV_2 {
            return self.prepare_v2(TxnStatus::PrepareAbort, false, now, new_producer_id);
        }
        Ok(Self {
            producer_epoch: self.producer_epoch.next(),
            last_producer_epoch: ProducerEpoch::NONE,
            state: TxnStatus::PrepareAbort,
            last_update_ms: now,
            ..self.next()
        })
    }

    /// Whether `producer_id` at `epoch` may add partitions to, or end, this id's transaction:
    /// the checks AddPartitionsToTxn, AddOffsetsToTxn and verification share.
    fn check_producer(&self, producer_id: i64, epoch: ProducerEpoch) -> Result<(), i16> {
        if producer_id != self.producer_id {
            return Err(errors::INVALID_PRODUCER_ID_MAPPING);
        }
        if epoch != self.producer_epoch {
            return Err(errors::PRODUCER_FENCED);
        }
        Ok(())
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, with the group's offsets partition):
    /// `Ok(None)` when every partition is already in the ongoing transaction (nothing to
    /// write), else the Ongoing state to write.
    pub fn add_partitions(
        &self,
        producer_id: i64,
        epoch: ProducerEpoch,
        partitions: &[TxnPartition],
        client_tv: i16,
        now: i64,
    ) -> Result<Option<Self>, i16> {
        self.check_producer(producer_id, epoch)?;
        match self.state {
            TxnStatus::PrepareCommit | TxnStatus::PrepareAbort => {
                Err(errors::CONCURRENT_TRANSACTIONS)
            }
            TxnStatus::Ongoing if partitions.iter().all(|p| self.partitions.contains(p)) => {
                Ok(None)
            }
            TxnStatus::Ongoing
            | TxnStatus::Empty
            | TxnStatus::CompleteCommit
            | TxnStatus::CompleteAbort => {
                let starting = self.state != TxnStatus::Ongoing;
                let mut next = Self {
                    state: TxnStatus::Ongoing,
                    last_update_ms: now,
                    start_ms: if starting { now } else { self.start_ms },
                    client_tv,
                    ..self.next()
                };
                if starting {
                    next.partitions.clear();
                }
                next.partitions.extend(partitions.iter().cloned());
                Ok(Some(next))
            }
            TxnStatus::Dead | TxnStatus::PrepareEpochFence => Err(errors::CONCURRENT_TRANSACTIONS),
        }
    }

    /// Whether a transactional write of `producer_id` at `epoch` to `partition` belongs to
    /// this id's ongoing transaction (Kafka's verify-only AddPartitionsToTxn):
    /// TRANSACTION_ABORTABLE when the partition was never added.
    pub fn verify(
        &self,
        producer_id: i64,
        epoch: ProducerEpoch,
        partition: &TxnPartition,
    ) -> Result<(), i16> {
        self.check_producer(producer_id, epoch)?;
        match self.state {
            TxnStatus::PrepareCommit | TxnStatus::PrepareAbort => {
                Err(errors::CONCURRENT_TRANSACTIONS)
            }
            TxnStatus::Ongoing if self.partitions.contains(partition) => Ok(()),
            _ => Err(errors::TRANSACTION_ABORTABLE),
        }
    }

    /// EndTxn from a client speaking transactions v1 (EndTxn v0–4): the epoch stays.
    pub fn end_txn(
        &self,
        producer_id: i64,
        epoch: ProducerEpoch,
        commit: bool,
        now: i64,
    ) -> EndDecision {
        if producer_id != self.producer_id {
            return EndDecision::Refuse(errors::INVALID_PRODUCER_ID_MAPPING);
        }
        if epoch != self.producer_epoch {
            return EndDecision::Refuse(errors::PRODUCER_FENCED);
        }
        use TxnStatus::*;
        match (self.state, commit) {
            // Ended by a v1 request, the transaction is v1's whatever added its partitions:
            // its markers keep the epoch (Kafka's `endTransactionWithTV1`).
            (Ongoing, _) => EndDecision::Prepare(Self {
                state: if commit { PrepareCommit } else { PrepareAbort },
                last_update_ms: now,
                client_tv: 0,
                ..self.next()
            }),
            (CompleteCommit, true) | (CompleteAbort, false) => EndDecision::AlreadyComplete,
            (PrepareCommit, true) | (PrepareAbort, false) => {
                EndDecision::Refuse(errors::CONCURRENT_TRANSACTIONS)
            }
            (Dead | PrepareEpochFence, _) => EndDecision::Refuse(errors::CONCURRENT_TRANSACTIONS),
            _ => EndDecision::Refuse(errors::INVALID_TXN_STATE),
        }
    }

    /// CompleteCommit or CompleteAbort, once every marker of a PrepareCommit or PrepareAbort is
    /// written.
    pub fn completed(&self, now: i64) -> Self {
        let mut next = Self {
            state: if self.state == TxnStatus::PrepareCommit {
                TxnStatus::CompleteCommit
            } else {
                TxnStatus::CompleteAbort
            },
            partitions: BTreeSet::new(),
            last_update_ms: now,
            next_producer_id: -1,
            ..self.next()
        };
        // A transaction v2 whose epoch ran out moves to its new producer id, at epoch 0.
        if self.client_tv >= TV_2 && self.next_producer_id >= 0 {
            next.producer_id = self.next_producer_id;
            next.producer_epoch = ProducerEpoch::new(0);
        }
        next
    }

    /// EndTxn from a client speaking transactions v2 (EndTxn v5), as Kafka's coordinator
    /// decides it: the PrepareCommit or PrepareAbort bumps the epoch (a new producer id follows
    /// at completion once the epoch runs out: `new_producer_id`), a retry of a finished EndTxn
    /// (one epoch behind, or the old id after a change of id) is answered without a write, and
    /// an abort with no transaction open bumps the epoch too. Pending transitions are the
    /// caller's to refuse first (CONCURRENT_TRANSACTIONS).
    pub fn end_txn_v2(
        &self,
        producer_id: i64,
        epoch: ProducerEpoch,
        commit: bool,
        now: i64,
        new_producer_id: impl FnOnce() -> Result<i64, i16>,
    ) -> EndDecision {
        use TxnStatus::*;
        let retry_on_overflow = self.previous_producer_id == producer_id
            && epoch == EXHAUSTED_EPOCH
            && self.producer_epoch == ProducerEpoch::new(0);
        let retry_on_epoch_bump =
            i32::from(self.producer_epoch.value()) == i32::from(epoch.value()) + 1;
        if producer_id != self.producer_id && !retry_on_overflow {
            return EndDecision::Refuse(errors::INVALID_PRODUCER_ID_MAPPING);
        }
        let valid_epoch = match self.state {
            Ongoing | Empty | Dead | PrepareEpochFence => epoch == self.producer_epoch,
            PrepareCommit | PrepareAbort => retry_on_epoch_bump,
            CompleteCommit | CompleteAbort => {
                retry_on_epoch_bump || retry_on_overflow || epoch == self.producer_epoch
            }
        };
        if !valid_epoch {
            return EndDecision::Refuse(errors::PRODUCER_FENCED);
        }
        let retry = retry_on_epoch_bump || retry_on_overflow;
        let prepare = |state, no_partition_added| match self.prepare_v2(
            state,
            no_partition_added,
            now,
            new_producer_id,
        ) {
            Ok(next) => EndDecision::Prepare(next),
            Err(code) => EndDecision::Refuse(code),
        };
        match (self.state, commit) {
            (Ongoing, true) => prepare(PrepareCommit, false),
            (Ongoing, false) => prepare(PrepareAbort, false),
            (CompleteCommit, true) | (CompleteAbort, false) if retry => {
                EndDecision::AlreadyComplete
            }
            (CompleteCommit | CompleteAbort | Empty, false) if !retry => {
                prepare(PrepareAbort, true)
            }
            (PrepareCommit, true) | (PrepareAbort, false) => {
                EndDecision::Refuse(errors::CONCURRENT_TRANSACTIONS)
            }
            (Dead | PrepareEpochFence, _) => EndDecision::Refuse(errors::CONCURRENT_TRANSACTIONS),
            _ => EndDecision::Refuse(errors::INVALID_TXN_STATE),
        }
    }

    /// The PrepareCommit or PrepareAbort of a transaction v2: the epoch bumped (the old one
    /// kept as the last), the start set when no partition was added, the next producer id
    /// reserved when the epoch runs out.
    fn prepare_v2(
        &self,
        state: TxnStatus,
        no_partition_added: bool,
        now: i64,
        new_producer_id: impl FnOnce() -> Result<i64, i16>,
    ) -> Result<Self, i16> {
        let next_producer_id = if self.epoch_exhausted() {
            new_producer_id()?
        } else {
            -1
        };
        Ok(Self {
            state,
            producer_epoch: self.producer_epoch.next(),
            last_producer_epoch: self.producer_epoch,
            start_ms: if no_partition_added {
                now
            } else {
                self.start_ms
            },
            last_update_ms: now,
            client_tv: TV_2,
            next_producer_id,
            ..self.next()
        })
    }

    /// Whether the coordinator aborts this transaction now: ongoing past its timeout.
    pub fn timed_out(&self, now: i64) -> bool {
        self.state == TxnStatus::Ongoing
            && self.start_ms.saturating_add(i64::from(self.timeout_ms)) < now
    }

    /// Whether the id has been idle for `expiration_ms` (`transactional.id.expiration.ms`)
    /// with no transaction open, and is forgotten (a tombstone in `__transaction_state`).
    pub fn expired(&self, now: i64, expiration_ms: i64) -> bool {
        self.state.may_expire() && self.last_update_ms <= now.saturating_sub(expiration_ms)
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
