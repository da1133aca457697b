//! The log's side of producer state (see [`crate::producer`]): building it at open, keeping it
//! through appends, rolls, truncation and log-start moves, and its snapshot files.
//!
//! Snapshots, as Kafka keeps them: one at each roll (named for the new segment's base, written
//! under the writer lock without an fsync, which the flush after the roll then does), one at
//! close (at the log end, fsynced), none above the log end, none below the log start. A
//! snapshot that does not decode is never trusted: it is deleted with a warning and an older one
//! (or the log itself) is used.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use ferrolog_records::FileEntry;

use super::{DamagedBytes, Log};
use crate::error::{Result, StorageError};
use crate::fs::remove_if_exists;
use crate::offset::Offset;
use crate::producer::{ProducerBatch, ProducerState, TxnMarker, snapshot};
use crate::segment::{AbortedTxn, Segment};

/// When a snapshot written is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SnapshotSync {
    /// fsynced before the write returns (at close).
    Now,
    /// Written without an fsync, under the writer lock; the flush after a roll fsyncs it.
    Later,
}

/// How the producer state was found at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProducerStateSource {
    /// A snapshot at this offset, then the log after it replayed.
    Snapshot(Offset),
    /// No usable snapshot after an unclean shutdown: the whole log replayed.
    FullReplay,
    /// No snapshot after a clean shutdown (data from a Kafka without producer snapshots):
    /// Kafka's shortcut, an empty state, no scan.
    #[default]
    EmptyAfterCleanShutdown,
}

/// Replays the producer batches and markers with offsets in `[from, to)` into `state`; an
/// abort in a segment of `reindexed` (recovered, its transaction index emptied) goes back into
/// that index. Returns the damage met: each damaged segment is replayed up to its damage, and
/// replay goes on with the next.
pub(super) fn replay(
    segments: &[Arc<Segment>],
    state: &mut ProducerState,
    from: Offset,
    to: Offset,
    reindexed: &HashSet<Offset>,
) -> Result<Vec<DamagedBytes>> {
    let (from_value, to_value) = (from.value(), to.value());
    let mut damaged = Vec::new();
    for (index, segment) in segments.iter().enumerate() {
        let reindex = reindexed.contains(&segment.base_offset());
        let mut index_error = None;
        let next_base = segments
            .get(index + 1)
            .map_or(Offset::MAX, |next| next.base_offset());
        if next_base <= from || segment.base_offset() >= to {
            continue;
        }
        let file = segment.log_file();
        let scanned = file.scan_to_damage(0, segment.size(), |_, entry| {
            if let FileEntry::V2(batch) = entry
                && batch.last_offset() >= from_value
                && batch.base_offset() < to_value
            {
                if let Some(producer_batch) = ProducerBatch::of(batch) {
                    state.apply(&producer_batch);
                }
                match TxnMarker::of(batch) {
                    Ok(Some(marker)) => {
                        if let Some(completed) = state.apply_marker(&marker)
                            && completed.aborted
                            && reindex
                            && let Err(error) = segment.append_aborted_txn(AbortedTxn {
                                producer_id: completed.producer_id,
                                first_offset: completed.first_offset,
                                last_offset: completed.last_offset,
                                last_stable_offset: completed.last_stable_offset,
                            })
                        {
                            index_error = Some(error);
                            return ControlFlow::Break(());
                        }
                    }
                    Ok(None) => {}
                    // The batch's CRC held, so a writer put it there: it ends no transaction,
                    // and that is said where it is.
                    Err(reason) => tracing::warn!(
                        path = %file.path().display(),
                        offset = batch.base_offset(),
                        %reason,
                        "a transaction marker that does not read; replayed as no marker"
                    ),
                }
            }
            ControlFlow::Continue(())
        })?;
        if let Some(error) = index_error {
            return Err(error);
        }
        if let Some(damage) = scanned.damage {
            // The state only deduplicates retries: without the batches past the damage the log
            // still opens and serves, and a producer whose latest batches lie past it is told
            // OUT_OF_ORDER_SEQUENCE_NUMBER rather than having a retry written twice.
            tracing::error!(
                path = %file.path().display(),
                position = damage.position,
                reason = %damage.reason,
                "damaged data in a segment: idempotent producer state was rebuilt without the batches after it"
            );
            damaged.push(DamagedBytes {
                log_file: file.path(),
                position: damage.position,
                reason: damage.reason,
            });
        }
    }
    Ok(damaged)
}

/// What recovery did to a log being opened, for its producer state.
pub(super) struct Reindex<'a> {
    /// The segments recovery scanned: their transaction indexes are empty until the replay.
    pub segments: &'a HashSet<Offset>,
    /// The base of the first segment recovery cut, if any: snapshots above it may hold what
    /// was cut.
    pub cut: Option<Offset>,
}

/// The producer state of a log being opened: stray snapshots (above the log end, below the log
/// start, above a segment recovery cut) are removed, then the newest valid snapshot is loaded
/// and the log after it replayed.
///
/// Recovery emptied the transaction indexes of the segments in `recovery.segments`, and
/// replaying their markers refills them. The replay from the snapshot covers those at or above
/// it; for those below, a state as of an older snapshot (or the log start) replays up to it and
/// is then dropped, as Kafka rebuilds a throwaway state up to a segment it recovers.
pub(super) fn load(
    dir: &Path,
    segments: &[Arc<Segment>],
    log_start_offset: Offset,
    log_end_offset: Offset,
    had_clean_shutdown: bool,
    recovery: &Reindex<'_>,
) -> Result<(ProducerState, ProducerStateSource, Vec<DamagedBytes>)> {
    let reindexed = recovery.segments;
    let above_cut = recovery.cut.unwrap_or(Offset::MAX);
    let mut candidates = Vec::new();
    for (offset, path) in snapshot::list(dir)? {
        if offset > log_end_offset || offset < log_start_offset || offset > above_cut {
            remove_if_exists(&path)?;
        } else {
            candidates.push((offset, path));
        }
    }
    let newest = newest_valid_snapshot(&mut candidates, Offset::MAX)?;
    let (start, mut state, source) = match newest {
        Some((offset, state)) => (offset, state, ProducerStateSource::Snapshot(offset)),
        // Kafka's shortcut for data without snapshots, unless a recovered segment's index needs
        // the replay (the state is then the replayed one, not an empty one).
        None if had_clean_shutdown && reindexed.is_empty() => {
            return Ok((
                ProducerState::default(),
                ProducerStateSource::EmptyAfterCleanShutdown,
                Vec::new(),
            ));
        }
        None => (
            log_start_offset,
            ProducerState::default(),
            ProducerStateSource::FullReplay,
        ),
    };
    let mut damaged = Vec::new();
    if let Some(&first) = reindexed.iter().min()
        && first < start
    {
        let (from, mut earlier) = newest_valid_snapshot(&mut candidates, first)?
            .unwrap_or((log_start_offset, ProducerState::default()));
        damaged = replay(segments, &mut earlier, from, start, reindexed)?;
    }
    for met in replay(segments, &mut state, start, log_end_offset, reindexed)? {
        if !damaged.contains(&met) {
            damaged.push(met);
        }
    }
    if source != ProducerStateSource::FullReplay {
        state.evict_below(log_start_offset);
    }
    Ok((state, source, damaged))
}

/// The newest snapshot in `candidates` (oldest first) at or below `at_most` that decodes, with
/// its state; those that do not decode are deleted on the way, newer ones left in place.
fn newest_valid_snapshot(
    candidates: &mut Vec<(Offset, std::path::PathBuf)>,
    at_most: Offset,
) -> Result<Option<(Offset, ProducerState)>> {
    while let Some(position) = candidates
        .iter()
        .rposition(|(offset, _)| *offset <= at_most)
    {
        let (offset, path) = candidates.remove(position);
        let bytes = std::fs::read(&path).map_err(StorageError::io("read", &path))?;
        match snapshot::decode(&path, &bytes) {
            Ok(entries) => return Ok(Some((offset, ProducerState::from_entries(entries)))),
            Err(error) => {
                tracing::warn!(%error, "ignoring a damaged producer snapshot; deleting it");
                remove_if_exists(&path)?;
            }
        }
    }
    Ok(None)
}

impl Log {
    /// The ids of the producers this partition remembers (not expired, not below the start).
    pub(crate) fn active_producer_ids(&self) -> std::collections::HashSet<i64> {
        self.producers.lock().producer_ids()
    }

    /// A copy of the producer state, for tools and tests.
    pub fn producer_state(&self) -> ProducerState {
        self.producers.lock().clone()
    }

    /// Forgets producers idle for `producer.id.expiration.ms`; returns how many.
    pub fn remove_expired_producers(&self, expiration: std::time::Duration) -> usize {
        let now_ms = self.clock.now_ms();
        let removed = self.producers.lock().remove_expired(now_ms, expiration);
        self.verifications
            .lock()
            .expire(now_ms, crate::clock::kafka_ms(expiration));
        if removed > 0 {
            tracing::debug!(partition = %self.topic_partition, removed, "producer ids expired");
        }
        removed
    }

    /// Writes the snapshot at `offset` of the current state.
    pub(super) fn write_producer_snapshot(&self, offset: Offset, sync: SnapshotSync) -> Result<()> {
        let bytes = snapshot::encode(self.producers.lock().entries().into_iter());
        let dir = self.dir();
        match sync {
            SnapshotSync::Now => snapshot::write(&dir, offset, &bytes),
            SnapshotSync::Later => snapshot::write_unsynced(&dir, offset, &bytes),
        }
    }

    /// After the log start moved up: producers whose data is gone are forgotten, and snapshots
    /// below the new start deleted.
    pub(super) fn on_log_start_moved(&self, log_start_offset: Offset) -> Result<()> {
        self.producers.lock().evict_below(log_start_offset);
        for (offset, path) in snapshot::list(&self.dir())? {
            if offset < log_start_offset {
                remove_if_exists(&path)?;
            }
        }
        Ok(())
    }

    /// After a truncation, for the view `next` about to be published: snapshots above its
    /// end go and the state is rebuilt from the newest one left (Kafka rebuilds it the same
    /// way), and `next` takes its first unstable offset.
    pub(super) fn rebuild_producer_state(&self, next: &mut super::LogView) -> Result<()> {
        let (state, _, _reported_when_met) = load(
            &self.dir(),
            &next.segments,
            next.log_start_offset,
            next.log_end.offset,
            false,
            &Reindex {
                segments: &HashSet::new(),
                cut: None,
            },
        )?;
        let mut state = state;
        let max = self.config().max_producers;
        super::write::forget_beyond(&mut state, max, &self.topic_partition);
        next.first_unstable_offset = state.first_unstable_offset();
        *self.producers.lock() = state;
        self.verifications.lock().clear_all();
        Ok(())
    }
}
