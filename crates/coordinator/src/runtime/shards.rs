//! The shards of one coordinator: one per partition of its internal topic, each behind its own
//! lock, and the operations that run on them.

use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::sync::Arc;

use ferrolog_storage::log::MarkerRequest;
use ferrolog_storage::producer::TxnVerifier;
use ferrolog_storage::{Clock, ProducerEpoch, Result};
use parking_lot::Mutex;

use super::{Codec, Journal, LoadEvent};

/// The state a coordinator keeps for one partition of its internal topic: a state machine its
/// records rebuild.
pub trait Shard: Send + 'static {
    /// The topic's record format.
    type Codec: Codec;

    /// Applies a record or marker read back from the partition at startup, in log order.
    fn replay(&mut self, event: LoadEvent<<Self::Codec as Codec>::Record>, now_ms: i64);

    /// Runs after each operation that may change the shard, still under its lock: for what a
    /// shard publishes of itself to readers that take no lock.
    fn after_write(&mut self) {}
}

/// What an operation on a shard may do besides changing it: read the time the operation runs
/// at, and append to the shard's partition.
#[derive(Debug)]
pub struct Ctx<'a, C> {
    /// The time of the operation: read once the shard's lock is held, or the tick's.
    pub now_ms: i64,
    /// The shard's partition.
    pub partition: i32,
    journal: &'a Journal,
    codec: PhantomData<C>,
}

impl<C: Codec> Ctx<'_, C> {
    /// Appends `records` to the shard's partition as one batch (nothing for none). When it
    /// returns Ok they are written: the operation applies their effect then, not before.
    pub fn append(&self, records: &[C::Record]) -> Result<()> {
        self.journal
            .append::<C>(self.partition, records, self.now_ms)
    }

    /// As [`Self::append`], and the offset the first record got (`None` for no records).
    pub fn append_placed(&self, records: &[C::Record]) -> Result<Option<i64>> {
        self.journal
            .append_placed::<C>(self.partition, records, self.now_ms)
    }

    /// Appends `records` as one transactional batch of `producer` (id, epoch), once `verifier`
    /// confirms the partition is in its transaction.
    pub fn append_transactional(
        &self,
        records: &[C::Record],
        producer: (i64, ProducerEpoch),
        verifier: &dyn TxnVerifier,
    ) -> Result<()> {
        self.journal.append_transactional::<C>(
            self.partition,
            records,
            self.now_ms,
            producer,
            verifier,
        )
    }

    /// Appends a transaction marker; `Ok(false)` when the partition does not exist here.
    pub fn append_marker(&self, marker: MarkerRequest, epoch_bumped: bool) -> Result<bool> {
        self.journal
            .append_marker(self.partition, marker, epoch_bumped)
    }
}

/// A coordinator's shards. One operation runs on a shard at a time, holding its lock through
/// its appends: so whenever a shard's lock is free, its state is what its partition's records
/// say (with the state that is never written, such as members waiting for a rebalance), and a
/// read never sees the effect of an append that has not returned.
#[derive(Debug)]
pub struct Runtime<S> {
    shards: Box<[Mutex<S>]>,
    /// Partitions whose records could not be loaded (their directory is offline): their
    /// shard is empty, and the coordinator refuses what it would hold.
    unavailable: BTreeSet<i32>,
    journal: Journal,
    clock: Arc<dyn Clock>,
}

impl<S: Shard> Runtime<S> {
    /// A runtime over `shards`, the one at index `p` serving partition `p`.
    pub fn new(
        shards: Vec<S>,
        unavailable: BTreeSet<i32>,
        journal: Journal,
        clock: Arc<dyn Clock>,
    ) -> Self {
        assert!(!shards.is_empty(), "a coordinator has at least one shard");
        assert!(
            unavailable
                .iter()
                .all(|partition| (0..shards.len() as i32).contains(partition)),
            "unavailable partitions {unavailable:?} beyond the {} shards",
            shards.len()
        );
        Self {
            shards: shards.into_iter().map(Mutex::new).collect(),
            unavailable,
            journal,
            clock,
        }
    }

    /// The time now, by the coordinator's clock (the LogManager's).
    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Whether `partition`'s records were loaded, so its shard may serve.
    pub fn is_available(&self, partition: i32) -> bool {
        !self.unavailable.contains(&partition)
    }

    fn shard(&self, partition: i32) -> &Mutex<S> {
        let index = usize::try_from(partition).unwrap_or(usize::MAX);
        match self.shards.get(index) {
            Some(shard) => shard,
            None => panic!(
                "partition {partition} has no shard: the coordinator has {}",
                self.shards.len()
            ),
        }
    }

    fn ctx(&self, partition: i32, now_ms: i64) -> Ctx<'_, S::Codec> {
        Ctx {
            now_ms,
            partition,
            journal: &self.journal,
            codec: PhantomData,
        }
    }

    /// Runs `op` on `partition`'s shard, under its lock, at the time read once it holds it.
    pub fn write<T>(&self, partition: i32, op: impl FnOnce(&mut S, &Ctx<'_, S::Codec>) -> T) -> T {
        let mut shard = self.shard(partition).lock();
        let ctx = self.ctx(partition, self.now());
        let out = op(&mut shard, &ctx);
        shard.after_write();
        out
    }

    /// Reads `partition`'s shard, under its lock.
    pub fn read<T>(&self, partition: i32, op: impl FnOnce(&S) -> T) -> T {
        op(&self.shard(partition).lock())
    }

    /// Runs `op` on every shard in partition order, each under its own lock, one at a time (no
    /// two shard locks are ever held together), all at `now_ms`.
    pub fn write_each(&self, now_ms: i64, mut op: impl FnMut(&mut S, &Ctx<'_, S::Codec>)) {
        for (index, shard) in self.shards.iter().enumerate() {
            let ctx = self.ctx(index as i32, now_ms);
            let mut shard = shard.lock();
            op(&mut shard, &ctx);
            shard.after_write();
        }
    }

    /// Reads every shard in partition order, one at a time.
    pub fn read_each<T>(&self, mut op: impl FnMut(&S) -> T) -> Vec<T> {
        self.shards.iter().map(|shard| op(&shard.lock())).collect()
    }
}
