//! The transaction coordinator (Kafka's `TransactionCoordinator` for a single broker, which
//! coordinates every transactional id): InitProducerId with a transactional id,
//! AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the verification of transactional writes (and,
//! with transactions v2, the partitions they add), the COMMIT and ABORT markers, the abort of
//! transactions past their timeout and the expiry of idle ids. Both protocols, each request by
//! its version: v1 (KIP-98 with KIP-360's epoch bumps), where the epoch stays through a
//! transaction's end, and v2 (KIP-890), where every end bumps it.
//!
//! What is decided is in [`state`] (pure functions of the id's state, the request and the
//! time); this file keeps the states, writes what was decided to `__transaction_state`
//! ([`topic`]) before it takes effect, and writes the markers ([`markers`]).
//!
//! Locking: the ids live in the shards of the coordinator runtime ([`crate::runtime`]), one
//! per `__transaction_state` partition, each id in its partition's shard. A shard's lock is
//! held while a decision is made and its record appended, never while markers are written (the
//! id is marked in flight meanwhile), nor while the tombstones of forgotten ids are. A
//! transactional append asks [`TransactionCoordinator::verify`] before it takes its partition's
//! writer lock (as Kafka does), so no partition's lock is held while an id's shard is; should a
//! marker end the transaction between the answer and the write, the storage layer refuses the
//! write (INVALID_TXN_STATE).
//!
//! An EndTxn is answered once its markers are written and its completion recorded, or, if a
//! marker cannot be written now (a directory offline, a full disk), once its PrepareCommit or
//! PrepareAbort is recorded; the coordinator then retries the rest every tick, as Kafka retries
//! from its marker queue. Meanwhile the id answers CONCURRENT_TRANSACTIONS.

mod config;
mod end;
mod markers;
mod shard;
pub mod state;
mod timers;
pub mod topic;
mod verify;

pub use config::TxnConfig;
pub use verify::{Verifier, VerifyFor};

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ferrolog_records::transaction_state::TxnStatus;
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{
    CoordinatorEpoch, ProducerEpoch, Result, StorageError, TopicPartition, clock,
};

use crate::errors;
use crate::group::GroupCoordinator;
use crate::runtime::{Ctx, LoadEvent, Periodic, Runtime, Shard};
use shard::TxnShard;
use state::{InitDecision, TxnMetadata, TxnPartition};
use topic::{TxnCodec, TxnStateTopic};

/// What an operation on an id's shard appends through, and its time.
type TxnCtx<'a> = Ctx<'a, TxnCodec>;

/// Why an id answers CONCURRENT_TRANSACTIONS for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// A request or the timer is writing its markers, or its tombstone.
    InFlight,
    /// Markers (or the completion record) could not all be written; the timer retries from
    /// `not_before_ms`.
    Retry { not_before_ms: i64 },
    /// A partition refused a marker as stale: as in Kafka, nothing more is sent, and the id
    /// stays preparing until an operator ends the transaction (`kafka-transactions abort`).
    Stuck,
}

/// How long a failed marker or completion write waits before it is tried again.
const RETRY_BACKOFF_MS: i64 = 1_000;

/// The longest transactional id kept (Kafka: any length a string can have, 32,767 bytes).
pub const MAX_TRANSACTIONAL_ID_BYTES: usize = 1_024;

#[derive(Debug, Clone)]
struct Entry {
    meta: TxnMetadata,
    pending: Option<Pending>,
}

/// An id's transaction as DescribeTransactions and ListTransactions show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: ProducerEpoch,
    pub state: TxnStatus,
    pub timeout_ms: i32,
    pub start_ms: i64,
    pub partitions: Vec<TxnPartition>,
}

/// EndTxn's answer: its error, and the producer id and epoch the producer goes on with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndAnswer {
    pub code: i16,
    pub producer_id: i64,
    pub epoch: ProducerEpoch,
}

/// What a request that may write markers leaves behind: its answer, and the partitions that
/// got a marker (their waiting read_committed fetches may now read further).
#[derive(Debug, Default)]
pub struct Outcome<T> {
    pub answer: T,
    pub marked: Vec<TopicPartition>,
}

#[derive(Debug)]
pub struct TransactionCoordinator {
    topic: TxnStateTopic,
    manager: Arc<LogManager>,
    config: TxnConfig,
    runtime: Runtime<TxnShard>,
    /// Ids kept across every shard, against `ferrolog.max.transactional.ids`.
    id_count: AtomicUsize,
    /// The coordinator epoch every marker carries: the highest partition leader epoch in
    /// `__transaction_state`'s batches and every coordinator epoch a partition's producer state
    /// holds, so a marker is never older than one written before (by Kafka, for a directory
    /// it moved here). ferrolog's own batches carry leader epoch 0.
    coordinator_epoch: CoordinatorEpoch,
}

impl TransactionCoordinator {
    /// Rebuilds every id's state from the `__transaction_state` partitions in the data dirs,
    /// each in its partition's shard. Transactions found preparing to commit or abort are
    /// completed by the first tick; ongoing ones stay ongoing until they end or time out.
    /// Partitions that should exist but were not loaded (their directory is offline) leave
    /// their ids' states unknown: those ids are refused (NOT_COORDINATOR, which clients retry)
    /// rather than started afresh.
    pub fn open(manager: Arc<LogManager>, config: TxnConfig) -> Result<Self> {
        let clock = Arc::clone(manager.clock());
        let topic = TxnStateTopic::new(
            Arc::clone(&manager),
            config.state_log_partitions,
            config.state_log_segment_bytes,
        );
        let now = clock.now_ms();
        let mut shards: Vec<TxnShard> = (0..topic.partitions())
            .map(|_| TxnShard {
                ids: HashMap::new(),
                timeout_check: Periodic::new(now, config.abort_timed_out_interval),
                expiry_check: Periodic::new(now, config.remove_expired_interval),
            })
            .collect();
        // An id's records go to its own partition's shard.
        let summary = topic.load(|_, record| {
            let partition = topic.partition_of(&record.0);
            let event = LoadEvent::Record {
                record,
                producer_id: None,
            };
            shards[partition as usize].replay(event, now);
        })?;
        shards.iter_mut().for_each(TxnShard::after_load);
        let loaded: usize = shards.iter().map(|shard| shard.ids.len()).sum();
        if loaded > 0 {
            tracing::info!(
                transactional_ids = loaded,
                "transaction states loaded from the transaction state topic"
            );
        }
        let in_producer_states = manager
            .logs()
            .iter()
            .flat_map(|(_, log)| {
                log.producer_state()
                    .entries()
                    .into_iter()
                    .map(|entry| entry.coordinator_epoch)
                    .collect::<Vec<_>>()
            })
            .max()
            .unwrap_or(CoordinatorEpoch::new(0));
        let unavailable: BTreeSet<i32> = topic.missing_partitions().into_iter().collect();
        if !unavailable.is_empty() {
            tracing::error!(
                partitions = ?unavailable,
                "partitions of the transaction state topic are missing (their directory is offline?): the transactional ids they hold are refused until they are back"
            );
        }
        let runtime = Runtime::new(shards, unavailable, topic.journal(), clock);
        Ok(Self {
            // The coordinator epoch is the state partition's leader epoch, as in Kafka.
            coordinator_epoch: CoordinatorEpoch::new(summary.highest_leader_epoch.value())
                .max(in_producer_states),
            topic,
            manager,
            config,
            runtime,
            id_count: AtomicUsize::new(loaded),
        })
    }

    fn now(&self) -> i64 {
        self.runtime.now()
    }

    /// Whether `transactional_id` may be served: its `__transaction_state` partition was
    /// loaded. Otherwise NOT_COORDINATOR.
    fn check_available(&self, transactional_id: &str) -> std::result::Result<(), i16> {
        if !self
            .runtime
            .is_available(self.topic.partition_of(transactional_id))
        {
            return Err(errors::NOT_COORDINATOR);
        }
        Ok(())
    }

    /// Takes a place for a new id under `ferrolog.max.transactional.ids`; `false` when none is
    /// left.
    fn reserve_id(&self) -> bool {
        let max = self.config.max_transactional_ids;
        self.id_count
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |count| {
                (count < max).then_some(count + 1)
            })
            .is_ok()
    }

    /// Gives back the place of an id forgotten (or never made).
    fn release_id(&self) {
        self.id_count.fetch_sub(1, Ordering::SeqCst);
    }

    /// FindCoordinator for a transactional id: this broker; `__transaction_state` is created the
    /// first time a client asks, as Kafka does.
    pub fn find_coordinator(&self) -> Result<()> {
        self.topic.ensure_created()
    }

    /// Writes `next` as `transactional_id`'s state; on success it is the state.
    fn write(ctx: &TxnCtx<'_>, id: &str, entry: &mut Entry, next: TxnMetadata) -> Result<()> {
        ctx.append(&[(id.to_owned(), Some(next.to_value()))])?;
        entry.meta = next;
        Ok(())
    }

    /// InitProducerId with a transactional id (after the handler's checks of the request):
    /// the producer id and epoch, or an error.
    pub fn init_producer_id(
        &self,
        groups: &GroupCoordinator,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, ProducerEpoch)>,
    ) -> Outcome<std::result::Result<(i64, ProducerEpoch), i16>> {
        let refuse = |code| Outcome {
            answer: Err(code),
            marked: Vec::new(),
        };
        if timeout_ms <= 0 || i64::from(timeout_ms) > clock::kafka_ms(self.config.max_timeout) {
            return refuse(errors::INVALID_TRANSACTION_TIMEOUT);
        }
        if let Err(code) = self.check_available(transactional_id) {
            return refuse(code);
        }
        let partition = self.topic.partition_of(transactional_id);
        let is_new = !self
            .runtime
            .read(partition, |shard| shard.ids.contains_key(transactional_id));
        if is_new && self.id_count.load(Ordering::SeqCst) >= self.config.max_transactional_ids {
            self.make_room(self.now());
        }
        let fence = self.runtime.write(partition, |shard, ctx| {
            let now = ctx.now_ms;
            let ids = &mut shard.ids;
            if !ids.contains_key(transactional_id) {
                let entry = self
                    .admit(transactional_id, timeout_ms, now)
                    .map_err(refuse)?;
                ids.insert(transactional_id.to_owned(), entry);
            }
            let Some(entry) = ids.get_mut(transactional_id) else {
                return Err(refuse(errors::UNKNOWN_SERVER_ERROR));
            };
            if entry.pending.is_some() {
                return Err(refuse(errors::CONCURRENT_TRANSACTIONS));
            }
            let cluster_tv = self
                .config
                .transaction_version
                .load(std::sync::atomic::Ordering::Acquire);
            let decision =
                entry
                    .meta
                    .init_producer_id(timeout_ms, expected, now, cluster_tv, || {
                        self.manager.next_producer_id().map_err(|error| {
                            tracing::warn!(%error, "no producer id could be reserved");
                            errors::COORDINATOR_NOT_AVAILABLE
                        })
                    });
            match decision {
                InitDecision::Refuse(code) => Err(refuse(code)),
                InitDecision::Write(next) => {
                    let answer = (next.producer_id, next.producer_epoch);
                    Err(match Self::write(ctx, transactional_id, entry, next) {
                        Ok(()) => Outcome {
                            answer: Ok(answer),
                            marked: Vec::new(),
                        },
                        Err(error) => refuse(append_error(transactional_id, &error)),
                    })
                }
                InitDecision::FenceOngoing(abort) => {
                    if let Err(error) = Self::write(ctx, transactional_id, entry, abort) {
                        return Err(refuse(append_error(transactional_id, &error)));
                    }
                    entry.pending = Some(Pending::InFlight);
                    Ok(entry.meta.clone())
                }
            }
        });
        // An answer now, or a fenced transaction whose abort is written first.
        let fence = match fence {
            Ok(fence) => fence,
            Err(answer) => return answer,
        };
        // The fenced transaction's abort: the producer asks again once it is complete.
        let marked = self.finish(groups, transactional_id, &fence);
        Outcome {
            answer: Err(errors::CONCURRENT_TRANSACTIONS),
            marked,
        }
    }

    /// A new id's entry, with a producer id of its own, once it has a place under
    /// `ferrolog.max.transactional.ids`; the error its InitProducerId gets otherwise.
    fn admit(
        &self,
        transactional_id: &str,
        timeout_ms: i32,
        now: i64,
    ) -> std::result::Result<Entry, i16> {
        if transactional_id.len() > MAX_TRANSACTIONAL_ID_BYTES {
            tracing::warn!(
                bytes = transactional_id.len(),
                limit = MAX_TRANSACTIONAL_ID_BYTES,
                "refusing a transactional id longer than ferrolog keeps"
            );
            return Err(errors::INVALID_REQUEST);
        }
        if !self.reserve_id() {
            tracing::warn!(
                transactional_id,
                limit = self.config.max_transactional_ids,
                "refusing a new transactional id: ferrolog.max.transactional.ids reached and every id has a transaction open"
            );
            return Err(errors::POLICY_VIOLATION);
        }
        match self.manager.next_producer_id() {
            Ok(producer_id) => Ok(Entry {
                meta: TxnMetadata::new(producer_id, timeout_ms, now),
                pending: None,
            }),
            Err(error) => {
                self.release_id();
                tracing::warn!(%error, "no producer id could be reserved");
                Err(errors::COORDINATOR_NOT_AVAILABLE)
            }
        }
    }

    /// Waits, up to `window`, while `transactional_id` has a transition in progress (its
    /// previous transaction's markers being written): a transactions-v2 write adding a
    /// partition would otherwise be answered CONCURRENT_TRANSACTIONS. Kafka retries such a
    /// write for up to 100 ms; waiting before the write keeps the partition's lock free.
    pub fn wait_until_settled(&self, transactional_id: &str, window: Duration) {
        let deadline = std::time::Instant::now() + window;
        let partition = self.topic.partition_of(transactional_id);
        let in_flight = || {
            self.runtime.read(partition, |shard| {
                shard
                    .ids
                    .get(transactional_id)
                    .is_some_and(|entry| entry.pending == Some(Pending::InFlight))
            })
        };
        while in_flight() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// AddPartitionsToTxn (v0–3) and AddOffsetsToTxn (`client_tv` 0), and the partitions a
    /// transactions-v2 write adds itself (`client_tv` 2): NONE, or the error every partition
    /// gets.
    pub fn add_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: ProducerEpoch,
        partitions: &[TxnPartition],
        client_tv: i16,
    ) -> i16 {
        if let Err(code) = self.check_available(transactional_id) {
            return code;
        }
        let partition = self.topic.partition_of(transactional_id);
        self.runtime.write(partition, |shard, ctx| {
            let Some(entry) = shard.ids.get_mut(transactional_id) else {
                return errors::INVALID_PRODUCER_ID_MAPPING;
            };
            if entry.pending.is_some() {
                return errors::CONCURRENT_TRANSACTIONS;
            }
            match entry
                .meta
                .add_partitions(producer_id, epoch, partitions, client_tv, ctx.now_ms)
            {
                Err(code) => code,
                Ok(None) => errors::NONE,
                Ok(Some(next)) => match Self::write(ctx, transactional_id, entry, next) {
                    Ok(()) => errors::NONE,
                    Err(error) => append_error(transactional_id, &error),
                },
            }
        })
    }

    /// The verifier of a transactional append to `partition` under `transactional_id`, mapping
    /// the coordinator's answers as Kafka's broker does for `purpose`.
    pub fn verifier<'a>(
        &'a self,
        transactional_id: &'a str,
        partition: TxnPartition,
        purpose: VerifyFor,
    ) -> Verifier<'a> {
        Verifier::new(self, transactional_id, partition, purpose)
    }

    fn verify(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: ProducerEpoch,
        partition: &TxnPartition,
    ) -> std::result::Result<(), i16> {
        let shard = self.topic.partition_of(transactional_id);
        self.runtime.read(shard, |shard| {
            let entry = shard
                .ids
                .get(transactional_id)
                .ok_or(errors::INVALID_PRODUCER_ID_MAPPING)?;
            entry.meta.verify(producer_id, epoch, partition)
        })
    }

    /// An id's state, for DescribeTransactions; `None` when the id is unknown.
    pub fn describe(&self, transactional_id: &str) -> Option<TxnDescription> {
        let partition = self.topic.partition_of(transactional_id);
        self.runtime.read(partition, |shard| {
            shard
                .ids
                .get(transactional_id)
                .map(|entry| describe(transactional_id, &entry.meta))
        })
    }

    /// Every id's state, for ListTransactions.
    pub fn list(&self) -> Vec<TxnDescription> {
        let mut all: Vec<TxnDescription> = self
            .runtime
            .read_each(|shard| {
                shard
                    .ids
                    .iter()
                    .map(|(id, entry)| describe(id, &entry.meta))
                    .collect::<Vec<_>>()
            })
            .into_iter()
            .flatten()
            .collect();
        all.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        all
    }
}

/// A point where a crash test makes the coordinator wait (the broker's `arm_failpoints_from_env`):
/// `txn.markers` before a prepared transaction's markers, `txn.marker-written` after each
/// marker, `txn.complete` before its completion is recorded.
pub(crate) fn failpoint(name: &str) {
    #[cfg(feature = "failpoints")]
    fail::fail_point!(name);
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}

fn describe(transactional_id: &str, meta: &TxnMetadata) -> TxnDescription {
    TxnDescription {
        transactional_id: transactional_id.to_owned(),
        producer_id: meta.producer_id,
        producer_epoch: meta.producer_epoch,
        state: meta.state,
        timeout_ms: meta.timeout_ms,
        start_ms: meta.start_ms,
        partitions: meta.partitions.iter().cloned().collect(),
    }
}

/// The error a failed `__transaction_state` append answers, as Kafka maps it.
fn append_error(transactional_id: &str, error: &StorageError) -> i16 {
    tracing::warn!(transactional_id, %error, "writing to the transaction state topic failed");
    match error {
        StorageError::RecordTooLarge { .. } | StorageError::RecordBatchTooLarge { .. } => {
            errors::UNKNOWN_SERVER_ERROR
        }
        StorageError::LogDirOffline { .. } | StorageError::Io { .. } => errors::NOT_COORDINATOR,
        _ => errors::COORDINATOR_NOT_AVAILABLE,
    }
}
