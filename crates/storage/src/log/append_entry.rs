//! The one way records enter a log: [`Log::append`], with who they come from (Kafka's
//! `AppendOrigin`) deciding their offsets, the producer checks and the high watermark, and the
//! caller deciding when the append is flushed. The shorthands below it name the usual
//! combinations. A transaction marker, which the log builds itself, goes through
//! [`Log::append_marker`].

use super::Log;
use super::append::AppendInfo;
use super::write::Appended;
use crate::error::Result;
use crate::producer::{BatchOrigin, NoTxnCoordinator, TxnVerifier};

/// Who an append comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A producer's request: checked (before the writer lock, so appenders to one partition
    /// checksum in parallel), offsets assigned from the log end, a retry of a batch already
    /// written answered with where it went, sequences checked, the high watermark moved to the
    /// new log end (this log is the partition's only replica).
    Client,
    /// A coordinator writing its internal topic, or for a producer (the group coordinator's
    /// transactional offset commits): as `Client`, but a producer's batches are checked for
    /// their epoch only, as Kafka checks its `COORDINATOR` origin.
    Coordinator,
    /// Batches that carry their offsets (a replica copying a leader, tools, tests): the first
    /// must start at or after the log end and offsets must increase; the high watermark stays.
    Replication,
}

/// When an append is flushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// Before [`Log::append`] returns, when `flush.messages` is reached.
    Now,
    /// By the caller: an append that reached `flush.messages` comes back
    /// [`Appended::flush_due`], to be acknowledged only after [`Log::flush_appended`]. Between
    /// the two, the next appends can be made (a connection's next produce request), and one
    /// fsync then covers them all.
    Deferred,
}

impl Log {
    /// Appends `records` as `origin` says. `verifier` is asked whether each transactional batch
    /// that would start a transaction here belongs to its producer's ongoing transaction:
    /// before the writer lock, which then checks only that no marker has overtaken the answer
    /// (the `verification` module). It is not asked for `Replication`.
    pub fn append(
        &self,
        records: Vec<u8>,
        origin: AppendOrigin,
        verifier: &dyn TxnVerifier,
        flush: FlushMode,
    ) -> Result<Appended> {
        let appended = match origin {
            AppendOrigin::Client => self.append_leader(records, verifier, BatchOrigin::Client)?,
            AppendOrigin::Coordinator => {
                self.append_leader(records, verifier, BatchOrigin::Coordinator)?
            }
            AppendOrigin::Replication => self.append_replicated(&records)?,
        };
        if flush == FlushMode::Now {
            self.flush_appended(&appended)?;
        }
        Ok(appended)
    }

    /// A producer's batches, no transaction coordinator, flushed as due
    /// ([`AppendOrigin::Client`]).
    pub fn append_as_leader(&self, records: Vec<u8>) -> Result<AppendInfo> {
        self.append_as_leader_verified(records, &NoTxnCoordinator)
    }

    /// A producer's batches, flushed as due ([`AppendOrigin::Client`]).
    pub fn append_as_leader_verified(
        &self,
        records: Vec<u8>,
        verifier: &dyn TxnVerifier,
    ) -> Result<AppendInfo> {
        let appended = self.append(records, AppendOrigin::Client, verifier, FlushMode::Now)?;
        Ok(appended.info)
    }

    /// A producer's batches, flushed by the caller ([`AppendOrigin::Client`],
    /// [`FlushMode::Deferred`]).
    pub fn append_as_leader_deferring_flush(
        &self,
        records: Vec<u8>,
        verifier: &dyn TxnVerifier,
    ) -> Result<Appended> {
        self.append(records, AppendOrigin::Client, verifier, FlushMode::Deferred)
    }

    /// A coordinator's batches, flushed as due ([`AppendOrigin::Coordinator`]).
    pub fn append_as_coordinator(
        &self,
        records: Vec<u8>,
        verifier: &dyn TxnVerifier,
    ) -> Result<AppendInfo> {
        let appended = self.append(records, AppendOrigin::Coordinator, verifier, FlushMode::Now)?;
        Ok(appended.info)
    }

    /// Batches that carry their offsets, flushed as due ([`AppendOrigin::Replication`]).
    pub fn append_as_follower(&self, bytes: &[u8]) -> Result<AppendInfo> {
        // As `append` does, without copying the caller's bytes.
        let appended = self.append_replicated(bytes)?;
        self.flush_appended(&appended)?;
        Ok(appended.info)
    }
}
