//! The log's side of its leader-epoch cache ([`crate::leader_epochs`]): loading it with the
//! log, keeping it as appends, truncations and log-start moves change the log, and writing its
//! checkpoint.
//!
//! The cache lives in the [`LogView`], changed under the writer lock like every other part of
//! it. Its file is written (atomically, fsynced) under that lock: when an append adds an epoch,
//! before its batches are written; when a truncation cuts epochs or clears them. What loading
//! changed (the new epoch of a start, recovery's epochs, the cut to the log's bounds) and a
//! log-start move are written with the next append or at close: Kafka writes a start's epoch
//! at once, but an epoch need only be durable before its first record, and opening thousands
//! of logs then costs no fsync. Loading repeats its changes after a crash, and cuts the cache
//! to the log's bounds again, which repairs a file left behind.
//!
//! A single node has no leader elections, but it restarts: as a single KRaft Kafka node's
//! partitions, a log's leader epoch ([`LogView::leader_epoch`]) moves up when the log is opened
//! after an unclean stop (which recovery may have cut), and stays while ferrolog runs. A consumer's position in an older epoch is then
//! checked against where that epoch ended, which is how a log cut by recovery shows.

use std::path::Path;

use super::load::LoadReport;
use super::{Log, LogView};
use crate::epoch::LeaderEpoch;
use crate::error::{Result, StorageError};
use crate::leader_epochs::{EpochEnd, EpochEntry, LeaderEpochs, file};
use crate::offset::Offset;
use crate::segment::Segment;
use crate::types::PartitionDirKind;

/// Epochs a partition's leader epoch moves up by when a log is opened after an unclean stop:
/// what a single KRaft Kafka node's restart does (its controller takes the leadership away and
/// gives it back, one epoch each).
const EPOCHS_PER_RESTART: i32 = 2;

/// Loads the cache of the log in `dir` and its leader epoch, as a Kafka broker does when it
/// becomes the partition's leader again: the checkpoint, with the epochs recovery found after
/// it (each higher than the latest, as Kafka adds them), cut to the log's bounds `(log start,
/// log end)`. A leader log after an unclean stop (`recovered`: recovery may have cut it) gets a
/// new epoch from the log end, [`EPOCHS_PER_RESTART`] above the highest it knows, so that the
/// epoch a consumer read in ends where the log now ends and a cut below its position shows;
/// after a clean stop, which cut nothing, it goes on in its epoch (Kafka moves on there too,
/// but a new epoch would tell consumers nothing, and every restart would raise the epochs the
/// records and committed offsets carry into a Kafka cluster the data later moves to). A new
/// log leads in epoch 0. A log without a checkpoint (written by an earlier ferrolog, or a Kafka
/// follower's) takes the epoch of its last batch for its latest, from its log start when its
/// first batch has the same. A checkpoint that does not parse is logged, with what is wrong
/// where, and treated so; a future or stray log gets no new epoch, one being deleted none.
pub(super) fn load(
    dir: &Path,
    segments: &[std::sync::Arc<Segment>],
    bounds: (Offset, Offset),
    report: &LoadReport,
    (kind, recovered): (PartitionDirKind, bool),
) -> Result<LoadedEpochs> {
    if kind == PartitionDirKind::Delete {
        return Ok(LoadedEpochs {
            epochs: LeaderEpochs::default(),
            leader_epoch: LeaderEpoch::new(0),
            unwritten: false,
        });
    }
    let leader = kind == PartitionDirKind::Live;
    let (log_start, log_end) = bounds;
    let (mut epochs, mut changed) = match file::read(dir) {
        Ok(epochs) => (epochs, false),
        Err(error @ StorageError::MalformedFile { .. }) => {
            tracing::warn!(
                %error,
                "the leader-epoch checkpoint does not parse; the log's epochs are taken from its batches"
            );
            (LeaderEpochs::default(), true)
        }
        Err(error) => return Err(error),
    };
    let starts = report
        .recovered
        .iter()
        .flat_map(|segment| &segment.epoch_starts);
    for start in starts {
        if epochs
            .latest()
            .is_none_or(|latest| latest.epoch < start.epoch)
        {
            epochs.assign(start.epoch, start.start_offset);
            changed = true;
        }
    }
    // The highest epoch the log was led in, whether or not an entry of it survives the cut
    // to the log's bounds (an epoch begun at the log end, as Kafka begins one at each start,
    // has no record yet): the new one must be above it.
    let highest = epochs.latest().map(|latest| latest.epoch);
    changed |= epochs.truncate_from_end(log_end);
    changed |= epochs.truncate_from_start(log_start);
    let last_batch = if epochs.is_empty() {
        last_batch_epoch(segments)?
    } else {
        None
    };
    if let Some(last) = last_batch
        && first_batch_epoch(segments, log_start)? == Some(last)
    {
        epochs.assign(last, log_start);
        changed = true;
    }
    let known = highest.max(last_batch);
    let leader_epoch = match (leader && recovered, known) {
        (true, Some(epoch)) => LeaderEpoch::new(epoch.value().saturating_add(EPOCHS_PER_RESTART)),
        (_, Some(epoch)) => epoch,
        (_, None) => LeaderEpoch::new(0),
    };
    if leader {
        changed |=
            epochs.assign(leader_epoch, log_end) != crate::leader_epochs::Assigned::Unchanged;
    }
    // Written with the first append, or at close: an epoch's entry is durable before any of
    // its records, and opening thousands of logs costs no fsync. A crash before then leaves
    // the file as it was, and the next start takes the same new epoch again.
    Ok(LoadedEpochs {
        epochs,
        leader_epoch,
        unwritten: changed,
    })
}

/// A log's epochs as loaded.
pub(super) struct LoadedEpochs {
    pub epochs: LeaderEpochs,
    pub leader_epoch: LeaderEpoch,
    /// The checkpoint lags `epochs`: written before the next append, or at close.
    pub unwritten: bool,
}

/// The epoch of the log's last batch that has one.
fn last_batch_epoch(segments: &[std::sync::Arc<Segment>]) -> Result<Option<LeaderEpoch>> {
    for segment in segments.iter().rev() {
        if let Some(epoch) = segment.last_batch_epoch()? {
            return Ok(Some(epoch));
        }
    }
    Ok(None)
}

/// The epoch of the batch holding the log start. When it is the last batch's, every batch
/// between is of that epoch too (epochs only rise), which a log without a checkpoint then
/// starts its cache with.
fn first_batch_epoch(
    segments: &[std::sync::Arc<Segment>],
    log_start: Offset,
) -> Result<Option<LeaderEpoch>> {
    let holding_start = segments
        .iter()
        .rev()
        .find(|segment| segment.base_offset() <= log_start)
        .or(segments.first());
    match holding_start {
        Some(segment) => segment.batch_epoch_at(log_start),
        None => Ok(None),
    }
}

impl Log {
    /// The partition's leader epoch: what its new batches are stamped with, and what Metadata
    /// and the epoch checks of requests answer.
    pub fn leader_epoch(&self) -> LeaderEpoch {
        self.view.load().leader_epoch
    }

    /// Refuses at once when the log's data directory is offline.
    pub fn ensure_online(&self) -> Result<()> {
        self.health().ensure_online()
    }

    /// Where the epoch `requested` ends (OffsetForLeaderEpoch), from one snapshot of the log.
    pub fn end_offset_for_epoch(&self, requested: i32) -> EpochEnd {
        let view = self.view.load();
        view.leader_epochs
            .end_offset_for(requested, view.log_end.offset)
    }

    /// The epoch `offset` was written in, if the cache knows it.
    pub fn epoch_for_offset(&self, offset: Offset) -> Option<LeaderEpoch> {
        self.view.load().leader_epochs.epoch_for_offset(offset)
    }

    /// The cache's entries, oldest first.
    pub fn leader_epoch_entries(&self) -> Vec<EpochEntry> {
        self.view.load().leader_epochs.entries().to_vec()
    }

    /// Records in `next` the epochs `starts` begin (in offset order), raising the leader epoch
    /// to the highest, and writes the checkpoint when the cache changed or the file lags it.
    /// Called under the writer lock before the batches are written: an epoch's entry is
    /// durable before any of its batches.
    pub(super) fn assign_epochs(&self, next: &mut LogView, starts: &[EpochEntry]) -> Result<()> {
        let mut changed = false;
        for start in starts {
            next.leader_epoch = next.leader_epoch.max(start.epoch);
            if !next
                .leader_epochs
                .assign_changes(start.epoch, start.start_offset)
            {
                continue;
            }
            let epochs = std::sync::Arc::make_mut(&mut next.leader_epochs);
            if let crate::leader_epochs::Assigned::Added { removed } =
                epochs.assign(start.epoch, start.start_offset)
            {
                changed = true;
                if removed.len() > 1
                    || removed
                        .first()
                        .is_some_and(|gone| gone.start_offset != start.start_offset)
                {
                    tracing::warn!(
                        partition = %self.topic_partition,
                        epoch = start.epoch.value(),
                        start_offset = start.start_offset.value(),
                        ?removed,
                        "a new leader epoch entry removed conflicting entries"
                    );
                }
            }
        }
        if changed
            || self
                .epochs_unwritten
                .load(std::sync::atomic::Ordering::Acquire)
        {
            self.write_epochs(next)?;
        }
        Ok(())
    }

    /// Cuts the cache in `next` to the log's end `end`, writing the checkpoint if it changed.
    pub(super) fn truncate_epochs_from_end(&self, next: &mut LogView, end: Offset) -> Result<()> {
        if std::sync::Arc::make_mut(&mut next.leader_epochs).truncate_from_end(end) {
            self.write_epochs(next)?;
        }
        Ok(())
    }

    /// Forgets, in `next`, the epochs below its log start; the file catches up later.
    pub(super) fn truncate_epochs_from_start(&self, next: &mut LogView) {
        let start = next.log_start_offset;
        if std::sync::Arc::make_mut(&mut next.leader_epochs).truncate_from_start(start) {
            self.set_epochs_unwritten(true);
        }
    }

    /// Empties the cache in `next` (the log starts over, Kafka's `clearAndFlush`) and writes
    /// the checkpoint. The leader epoch stays; the next append starts its entry.
    pub(super) fn clear_epochs(&self, next: &mut LogView) -> Result<()> {
        next.leader_epochs = std::sync::Arc::new(LeaderEpochs::default());
        self.write_epochs(next)
    }

    /// Writes the checkpoint of the cache in `view` to the log's directory.
    pub(super) fn write_epochs(&self, view: &LogView) -> Result<()> {
        file::write(&view.home.dir, &view.leader_epochs)?;
        self.set_epochs_unwritten(false);
        Ok(())
    }

    /// Writes the checkpoint if a log-start move left it behind (at close).
    pub(super) fn write_epochs_if_behind(&self, view: &LogView) -> Result<()> {
        if self
            .epochs_unwritten
            .load(std::sync::atomic::Ordering::Acquire)
        {
            self.write_epochs(view)?;
        }
        Ok(())
    }

    /// Notes whether the checkpoint lags the view's cache (written at close when it does).
    pub(super) fn set_epochs_unwritten(&self, unwritten: bool) {
        self.epochs_unwritten
            .store(unwritten, std::sync::atomic::Ordering::Release);
    }
}
