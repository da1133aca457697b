//! The log's side of its leader-epoch cache ([`crate::leader_epochs`]): loading it with the
//! log, keeping it as appends, truncations and log-start moves change the log, and writing its
//! checkpoint.
//!
//! The cache lives in the [`LogView`], changed under the writer lock like every other part of
//! it. Its file is written as Kafka writes it: at once (fsynced, before the batches that start
//! a new epoch are written) when an epoch is added, cut from the end or cleared; only at the
//! next such write or at close when the log start moved, since loading truncates the cache to
//! the log's bounds again and so repairs a file a crash left behind.
//!
//! ferrolog is a single node: the partition's leader epoch ([`LogView::leader_epoch`]) never
//! changes while it serves the partition. It is the latest epoch of the log (0 for a new one),
//! so a log written by Kafka goes on in the epoch Kafka left it in.

use std::path::Path;

use super::load::LoadReport;
use super::{Log, LogView};
use crate::epoch::LeaderEpoch;
use crate::error::{Result, StorageError};
use crate::leader_epochs::{EpochEnd, EpochEntry, LeaderEpochs, file};
use crate::offset::Offset;
use crate::segment::Segment;

/// Loads the cache of the log in `dir` and its leader epoch: the checkpoint, with the epochs
/// recovery found after it (each higher than the latest, as Kafka adds them), cut to the log's
/// bounds `(log start, log end)`; an entry starting at the log end stays (the epoch the log
/// goes on in). A leader log without any entry starts its leader epoch at the log end, as a
/// Kafka broker does when it becomes a partition's leader: in the epoch of the last batch, or
/// 0. A checkpoint that does not parse is logged, with what is wrong where, and replaced so.
/// The file is written when it changed.
pub(super) fn load(
    dir: &Path,
    segments: &[std::sync::Arc<Segment>],
    bounds: (Offset, Offset),
    report: &LoadReport,
    leader: bool,
) -> Result<(LeaderEpochs, LeaderEpoch)> {
    let (log_start, log_end) = bounds;
    let (mut epochs, mut changed) = match file::read(dir) {
        Ok(epochs) => (epochs, false),
        Err(error @ StorageError::MalformedFile { .. }) => {
            tracing::warn!(
                %error,
                "the leader-epoch checkpoint does not parse; the log starts its epochs again at its end"
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
    changed |= epochs.truncate_from_end(log_end.next());
    changed |= epochs.truncate_from_start(log_start);
    let leader_epoch = match epochs.latest() {
        Some(latest) => latest.epoch,
        None => last_batch_epoch(segments)?.unwrap_or(LeaderEpoch::new(0)),
    };
    if leader && epochs.is_empty() {
        epochs.assign(leader_epoch, log_end);
        changed = true;
    }
    if changed {
        file::write(dir, &epochs)?;
    }
    Ok((epochs, leader_epoch))
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
    /// to the highest, and writes the checkpoint when the cache changed. Called under the
    /// writer lock before the batches are written: an epoch's entry is durable before any of
    /// its batches.
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
        if changed {
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
            self.writer_epochs_unwritten(true);
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
        self.writer_epochs_unwritten(false);
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

    fn writer_epochs_unwritten(&self, unwritten: bool) {
        self.epochs_unwritten
            .store(unwritten, std::sync::atomic::Ordering::Release);
    }
}
