//! One share partition, as Kafka 4.4's `SharePartition` keeps it on the partition's broker: the
//! share-partition start offset (SPSO: every record before it is done), the records in flight
//! after it with their state and delivery count, which member holds each acquired record and
//! until when. Pure: the broker reads the log and hands over the batches read, persists what a
//! change returns through [`crate::share_state`], and undoes the change when that fails.
//!
//! ```text
//!            acquire                 accept                    (terminal)
//!  Available ───────▶ Acquired ─────────────────▶ Acknowledged
//!      ▲                 │   reject, gap
//!      │ release,        ├──────────────────────▶ Archived     (terminal)
//!      │ lock timeout    │   release or timeout at the delivery-count limit
//!      └─────────────────┴──────────────────────▶ Archived
//! ```
//!
//! Records are tracked per batch while a batch moves as one, and per offset once any part of it
//! moves alone. The start offset moves past every leading record that is done. Acquisitions are
//! not persisted (as in Kafka): after a restart an acquired record is available again with the
//! delivery count last persisted.
//!
//! Files: `acquire` (handing records out), `acknowledge` (acknowledgements, releases, lock
//! timeouts), `cache` (the in-flight batches).

mod acknowledge;
mod acquire;
mod cache;

pub use acknowledge::{AckBatch, check_ack_batches};
pub use acquire::{AcquireMode, AcquireRequest, Acquired, LogBatch};

use std::collections::BTreeMap;

use ferrolog_records::share_state_records::StateBatch;

use crate::share_state::{PartitionState, StateWrite};
use cache::{Batch, Rec};

/// A record's delivery state, with Kafka's ids (the `DeliveryState` byte persisted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    Available,
    Acquired,
    Acknowledged,
    Archived,
}

impl RecordState {
    pub fn id(self) -> i8 {
        match self {
            Self::Available => 0,
            Self::Acquired => 1,
            Self::Acknowledged => 2,
            Self::Archived => 4,
        }
    }

    /// A persisted state; ARCHIVING (3, the dead-letter queue's, not served) reads as archived.
    pub fn from_id(id: i8) -> Option<Self> {
        Some(match id {
            0 => Self::Available,
            1 => Self::Acquired,
            2 => Self::Acknowledged,
            3 | 4 => Self::Archived,
            _ => return None,
        })
    }

    /// Done: never delivered again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Acknowledged | Self::Archived)
    }
}

/// The group's settings a share partition follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `share.delivery.count.limit`: a record released or timed out at this count is archived.
    pub delivery_count_limit: i16,
    /// `share.record.lock.duration.ms`
    pub lock_duration_ms: i64,
    /// `share.partition.max.record.locks`: the span of records in flight.
    pub max_in_flight: i64,
    /// `share.renew.acknowledge.enable`
    pub renew_enabled: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            delivery_count_limit: 5,
            lock_duration_ms: 30_000,
            max_in_flight: 2_000,
            renew_enabled: true,
        }
    }
}

/// Why a share partition's stored state does not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

#[derive(Debug, Clone)]
pub struct SharePartition {
    /// The share-partition start offset: every record before it is done.
    start: i64,
    /// The first offset never put in flight: records from here on are new.
    end: i64,
    /// In-flight batches by first offset: sorted, disjoint, before `end`; those behind the start
    /// offset only while they hold acquired records (until released).
    cache: BTreeMap<i64, Batch>,
    state_epoch: i32,
    leader_epoch: i32,
    limits: Limits,
}

impl SharePartition {
    /// The partition as its stored state says, `start_offset` resolved (the stored one, or
    /// where `share.auto.offset.reset` puts a start of −1), read at `leader_epoch`. Offsets
    /// between stored batches were never delivered: they come back as available, delivery
    /// count 0, as Kafka hands them out first.
    pub fn load(
        stored: &PartitionState,
        start_offset: i64,
        leader_epoch: i32,
        limits: Limits,
    ) -> Result<Self, LoadError> {
        let mut cache = BTreeMap::new();
        let mut end = start_offset;
        for batch in &stored.batches {
            let state = RecordState::from_id(batch.delivery_state)
                .filter(|state| *state != RecordState::Acquired)
                .ok_or_else(|| {
                    LoadError(format!("unknown delivery state {}", batch.delivery_state))
                })?;
            if batch.last_offset < batch.first_offset || batch.first_offset < end {
                return Err(LoadError(format!(
                    "state batch {}..={} out of order (start offset {start_offset})",
                    batch.first_offset, batch.last_offset
                )));
            }
            if batch.first_offset > end {
                let never_delivered = Rec::idle(RecordState::Available, 0);
                cache.insert(
                    end,
                    Batch::whole(end, batch.first_offset - 1, never_delivered),
                );
            }
            let rec = Rec::idle(state, batch.delivery_count);
            cache.insert(
                batch.first_offset,
                Batch::whole(batch.first_offset, batch.last_offset, rec),
            );
            end = batch.last_offset + 1;
        }
        let mut partition = Self {
            start: start_offset,
            end,
            cache,
            state_epoch: stored.state_epoch,
            leader_epoch,
            limits,
        };
        partition.advance_start();
        partition.check();
        Ok(partition)
    }

    pub fn start_offset(&self) -> i64 {
        self.start
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The group's settings changed (a group config).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Where the next log read starts: the first available record in flight, else the first
    /// new offset.
    pub fn next_fetch_offset(&self) -> i64 {
        self.cache
            .values()
            .find_map(|batch| batch.first_available(self.start))
            .unwrap_or(self.end)
    }

    /// Records acknowledged or archived at or after the start offset (Kafka's
    /// DeliveryCompleteCount, which the lag of DescribeShareGroupOffsets subtracts).
    pub fn delivery_complete_count(&self) -> i32 {
        let count: i64 = self
            .cache
            .values()
            .map(|batch| batch.count_where(self.start, |rec| rec.state.is_terminal()))
            .sum();
        i32::try_from(count).unwrap_or(i32::MAX)
    }

    /// The write that persists `changed` (the batches whose state changed) with the start
    /// offset and complete count as they are now.
    pub fn state_write(&self, changed: Vec<StateBatch>) -> StateWrite {
        StateWrite {
            state_epoch: self.state_epoch,
            leader_epoch: self.leader_epoch,
            start_offset: self.start,
            delivery_complete_count: self.delivery_complete_count(),
            batches: changed,
        }
    }

    /// The log's start passed records in flight (retention, DeleteRecords): they are done,
    /// those still available archived, as Kafka moves the start offset with the log's.
    pub fn advance_to_log_start(&mut self, log_start: i64) {
        if log_start <= self.start {
            return;
        }
        // Acquired records behind it stay with their holder until released (then archived).
        self.cache
            .retain(|_, batch| batch.last >= log_start || batch.any_acquired());
        self.start = log_start;
        self.end = self.end.max(log_start);
        self.advance_start();
        self.check();
    }

    /// Moves the start offset past every leading record that is done, dropping the batches
    /// wholly behind it. A hole between batches holds no records (the log has none there) and
    /// is passed over; with nothing left in flight, start and end meet.
    fn advance_start(&mut self) {
        let keys: Vec<i64> = self.cache.keys().copied().collect();
        let mut blocked = false;
        for key in keys {
            let Some(batch) = self.cache.get(&key) else {
                continue;
            };
            if batch.last < self.start {
                if !batch.any_acquired() {
                    self.cache.remove(&key);
                }
                continue;
            }
            let from = self.start.max(batch.first);
            match batch.done_through(from) {
                Some(last) if last == batch.last => {
                    self.start = last + 1;
                    if !batch.any_acquired() {
                        self.cache.remove(&key);
                    }
                }
                Some(last) => {
                    self.start = last + 1;
                    blocked = true;
                    break;
                }
                None => {
                    self.start = from;
                    blocked = true;
                    break;
                }
            }
        }
        if !blocked {
            let meet = self.start.max(self.end);
            self.start = meet;
            self.end = meet;
        }
    }

    /// Invariants of the in-flight state, wherever it is made.
    fn check(&self) {
        let mut previous: Option<i64> = None;
        for (first, batch) in &self.cache {
            debug_assert_eq!(*first, batch.first, "a batch under another key");
            debug_assert!(
                batch.first <= batch.last,
                "an empty batch {}..={}",
                batch.first,
                batch.last
            );
            debug_assert!(
                previous.is_none_or(|p| p < batch.first),
                "overlapping batches at {first}"
            );
            debug_assert!(
                batch.last < self.end,
                "batch {first} past the end {}",
                self.end
            );
            previous = Some(batch.last);
        }
        debug_assert!(
            self.start <= self.end,
            "start {} past end {}",
            self.start,
            self.end
        );
    }
}

#[cfg(test)]
mod tests;
