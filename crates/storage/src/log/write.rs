//! The write path: appends and rolls, under the writer lock. Validation is in [`super::append`]
//! (pure functions); this module takes the lock, writes the validated bytes to the active
//! segment and publishes the next [`LogView`].

use std::sync::Arc;

use super::append::{self, AppendInfo, ValidatedAppend};
use super::producers::SnapshotSync;
use super::{Log, LogOffsetMetadata, WriterState, refuse_past_damaged_end};
use crate::config::LogConfig;
use crate::epoch::{CoordinatorEpoch, ProducerEpoch};
use crate::error::{Result, StorageError};
use crate::fs::remove_if_exists;
use crate::leader_epochs::EpochEntry;
use crate::offset::{FilePosition, Offset};
use crate::producer::{
    BatchOrigin, MarkerKind, ProducerBatch, ProducerState, TxnMarker, TxnVerifier, snapshot,
};
use crate::segment::{
    AbortedTxn, BatchMeta, INDEX_SUFFIX, LOG_SUFFIX, RollParams, Segment, TIME_INDEX_SUFFIX,
    segment_path,
};
use ferrolog_records::BatchBuilder;
use ferrolog_records::control::{control_key, marker_value};

/// A transaction marker to write: which producer's transaction, at which producer and
/// coordinator epochs, and how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerRequest {
    /// The producer whose transaction ends.
    pub producer_id: i64,
    /// The producer epoch the marker carries.
    pub epoch: ProducerEpoch,
    /// The coordinator epoch the marker carries.
    pub coordinator_epoch: CoordinatorEpoch,
    /// COMMIT or ABORT.
    pub kind: MarkerKind,
}

/// Applies an append's producer batches and markers to the producer state in offset order;
/// returns the aborted transactions the markers ended, for the transaction index.
fn apply_in_offset_order(
    producers: &mut ProducerState,
    batches: &[ProducerBatch],
    markers: &[TxnMarker],
) -> Vec<AbortedTxn> {
    let mut aborted = Vec::new();
    let mut markers = markers.iter().peekable();
    let mut end_markers_below = |producers: &mut ProducerState, offset: Offset| {
        while let Some(marker) = markers.next_if(|marker| marker.offset < offset) {
            if let Some(completed) = producers.apply_marker(marker)
                && completed.aborted
            {
                aborted.push(AbortedTxn {
                    producer_id: completed.producer_id,
                    first_offset: completed.first_offset,
                    last_offset: completed.last_offset,
                    last_stable_offset: completed.last_stable_offset,
                });
            }
        }
    };
    for batch in batches {
        end_markers_below(producers, batch.first_offset);
        producers.apply(batch);
    }
    end_markers_below(producers, Offset::MAX);
    aborted
}

/// Keeps at most `max` producers' state ([`ProducerState::evict_beyond`]), counting and
/// reporting (at debug: a client may cause it at will) what goes.
pub(super) fn forget_beyond(
    producers: &mut ProducerState,
    max: usize,
    topic_partition: &crate::types::TopicPartition,
) {
    let forgotten = producers.evict_beyond(max);
    if forgotten > 0 {
        metrics::counter!("ferrolog_log_producer_ids_forgotten_total").increment(forgotten as u64);
        tracing::debug!(partition = %topic_partition, forgotten, limit = max, "forgot the producers least recently seen: ferrolog.max.producers.per.partition reached");
    }
}

/// Flushes [`Log::flush_appended`] makes before giving up on raising the recovery point past
/// its append: each that does not is the log having moved directory meanwhile, which is rare.
const MAX_FLUSH_ATTEMPTS: usize = 3;

/// An append done, and whether it must be flushed before it is acknowledged
/// (`flush.messages` reached). See [`Log::append_as_leader_deferring_flush`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "an append due for a flush is acknowledged only once flushed"]
pub struct Appended {
    /// Where the records went.
    pub info: AppendInfo,
    /// Whether the partition's unflushed messages reached `flush.messages` with this append.
    pub flush_due: bool,
}

/// Who chose an append's offsets, which decides what it does to the high watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OffsetsFrom {
    /// This log assigned them: it is the partition's only replica, so what it writes is
    /// committed at once and the high watermark moves to the new log end in the same view.
    Assigned,
    /// They came with the batches (a replica copying a leader, tools, tests): the high
    /// watermark moves only when told ([`Log::maybe_increment_high_watermark`]).
    Carried,
}

impl Log {
    /// Whether `appended` needs no flush (any more): it was not due one, or the recovery point
    /// has passed it. Never blocks.
    pub fn is_flushed(&self, appended: &Appended) -> bool {
        !appended.flush_due || self.view().recovery_point > appended.info.last_offset
    }

    /// Makes an append durable when it was [`Appended::flush_due`]: fsyncs up to the log end as
    /// it is now, unless a flush since the append already moved the recovery point past it.
    /// These flushes take turns, each checking once its turn has come: while one fsyncs, the
    /// appends made meanwhile wait for the next, which covers them all, and the others find
    /// themselves covered and return without an fsync of their own.
    pub fn flush_appended(&self, appended: &Appended) -> Result<()> {
        if self.is_flushed(appended) {
            return Ok(());
        }
        let _turn = self.flush_turn.lock();
        // A flush returns without raising the recovery point when the log took its future
        // log's place meanwhile (what it fsynced were the old files): the next one works on the
        // new. An append cut away by a truncation needs nothing more.
        for _ in 0..MAX_FLUSH_ATTEMPTS {
            if self.is_flushed(appended) || self.log_end_offset() <= appended.info.last_offset {
                return Ok(());
            }
            self.flush()?;
        }
        if self.is_flushed(appended) || self.log_end_offset() <= appended.info.last_offset {
            return Ok(());
        }
        Err(StorageError::Fatal(format!(
            "{}: {MAX_FLUSH_ATTEMPTS} flushes did not make offset {} durable",
            self.topic_partition, appended.info.last_offset
        )))
    }

    pub(super) fn append_leader(
        &self,
        records: Vec<u8>,
        verifier: &dyn TxnVerifier,
        origin: BatchOrigin,
    ) -> Result<Appended> {
        self.guarded(|| {
            let config = self.config();
            let now_ms = self.clock.now_ms();
            let checked =
                append::check_leader_append(records, &config, now_ms, &self.decompression)?;
            // The coordinator is asked with no lock of this log held; under it, only its guards.
            let guards =
                self.verify_before_lock(&checked.provisional_producer_batches(), verifier, origin)?;
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let assigned = append::assign_leader_offsets(
                checked,
                append::LeaderContext {
                    config: &config,
                    next_offset: self.view.load().log_end.offset,
                    now_ms,
                    partition_leader_epoch: self.view.load().leader_epoch,
                },
            )?;
            if let Some(original) = self.producers.lock().check_verified(
                &assigned.validated.producer_batches,
                &guards,
                origin,
            )? {
                // A retry of a batch already written: answered with where it went, as Kafka does.
                tracing::debug!(
                    partition = %self.topic_partition,
                    first_offset = original.first_offset.value(),
                    "duplicate producer batch acknowledged without writing it"
                );
                return Ok(Appended {
                    info: AppendInfo {
                        first_offset: original.first_offset,
                        last_offset: original.last_offset,
                        max_timestamp: original.timestamp,
                        offset_of_max_timestamp: original.last_offset,
                        log_append_time_ms: -1,
                        record_count: 0,
                        batch_count: 0,
                        valid_bytes: 0,
                    },
                    // The original may still wait for its flush (its answer held back, or lost
                    // with its connection): where `flush.messages` is set, a retry of a batch
                    // not yet below the recovery point is acknowledged only once it is, at the
                    // cost of a rare extra fsync when the original was not due one.
                    flush_due: config.flush_messages < i64::MAX
                        && original.last_offset >= self.view().recovery_point,
                });
            }
            self.write_validated(
                writer,
                &config,
                &assigned.bytes,
                assigned.validated,
                OffsetsFrom::Assigned,
            )
        })
    }

    /// Appends batches that already carry their offsets (replication, tools, tests), without
    /// a flush. The first must start at or after the LEO; offsets must increase. The high
    /// watermark stays.
    pub(super) fn append_replicated(&self, bytes: &[u8]) -> Result<Appended> {
        self.guarded(|| {
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let validated =
                super::follower::validate_follower_append(bytes, self.log_end_offset())?;
            self.write_validated(writer, &config, bytes, validated, OffsetsFrom::Carried)
        })
    }

    fn write_validated(
        &self,
        writer: parking_lot::MutexGuard<'_, WriterState>,
        config: &LogConfig,
        bytes: &[u8],
        validated: ValidatedAppend,
        offsets: OffsetsFrom,
    ) -> Result<Appended> {
        refuse_past_damaged_end(&self.view())?;
        let info = validated.info;
        if bytes.len() as u64 > config.segment_size() {
            return Err(StorageError::RecordBatchTooLarge {
                size: bytes.len(),
                segment_bytes: config.segment_size(),
            });
        }
        let now_ms = self.clock.now_ms();
        let max_timestamp_in_messages = if info.log_append_time_ms >= 0 {
            now_ms
        } else {
            info.max_timestamp
        };
        let rolled = self.maybe_roll(
            config,
            RollParams {
                segment_age: config.segment_age,
                segment_bytes: config.segment_size(),
                max_timestamp_in_messages,
                max_offset_in_messages: info.last_offset,
                messages_size: bytes.len() as u64,
                now_ms,
            },
            info.first_offset,
        )?;
        let view = self.view();
        let mut next = (*view).clone();
        let starts = epoch_starts(&view, info.first_offset, offsets, validated.epoch_starts);
        self.assign_epochs(&mut next, &starts)?;
        let active = view.active_segment();
        // The checkpoint may now hold an epoch the view will not: close writes the view's.
        active
            .append(bytes, &validated.batches)
            .inspect_err(|_| self.set_epochs_unwritten(true))?;
        next.log_end = LogOffsetMetadata {
            offset: info.last_offset.next(),
            segment_base_offset: active.base_offset(),
            position: FilePosition::new(active.size()),
        };
        if offsets == OffsetsFrom::Assigned {
            next.high_watermark = next.log_end.offset;
        }
        let unflushed = next.log_end.offset - next.recovery_point;
        let aborted = {
            let mut producers = self.producers.lock();
            let aborted = apply_in_offset_order(
                &mut producers,
                &validated.producer_batches,
                &validated.markers,
            );
            forget_beyond(&mut producers, config.max_producers, &self.topic_partition);
            next.first_unstable_offset = producers.first_unstable_offset();
            self.spend_verifications(&validated.producer_batches, &validated.markers);
            aborted
        };
        // Aborts are indexed, in the segment their markers went to, before the last stable
        // offset may pass them: a read_committed reader (or the cleaner) that sees the new
        // bound finds the entries. Should an entry not be written, the data stays written but
        // the bound does not move (as in Kafka) until recovery rebuilds the index.
        let indexed = aborted
            .iter()
            .try_for_each(|txn| active.append_aborted_txn(*txn));
        if indexed.is_err() {
            let unindexed = aborted.iter().map(|txn| txn.first_offset);
            next.first_unstable_offset = view
                .first_unstable_offset
                .into_iter()
                .chain(unindexed)
                .min();
        }
        self.publish(next);
        drop(writer);
        indexed?;

        if let Some(new_base) = rolled {
            self.make_roll_durable(new_base)?;
        }
        Ok(Appended {
            info,
            flush_due: unflushed >= config.flush_messages,
        })
    }

    /// Writes a COMMIT or ABORT marker for `producer_id` at `epoch` (the transaction
    /// coordinator's, through WriteTxnMarkers): a control batch of one record, checked against
    /// the producer state (an older producer epoch, or with `epoch_bumped` (transactions v2) the
    /// same one, is INVALID_PRODUCER_EPOCH; an older coordinator epoch
    /// TRANSACTION_COORDINATOR_FENCED). The producer's open transaction, if any, ends; an
    /// aborted one goes into the segment's transaction index.
    pub fn append_marker(&self, marker: MarkerRequest, epoch_bumped: bool) -> Result<AppendInfo> {
        self.guarded(|| {
            let config = self.config();
            let now_ms = self.clock.now_ms();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let offset = self.view.load().log_end.offset;
            let txn_marker = TxnMarker {
                producer_id: marker.producer_id,
                epoch: marker.epoch,
                coordinator_epoch: marker.coordinator_epoch,
                kind: marker.kind,
                offset,
                timestamp: now_ms,
            };
            self.producers
                .lock()
                .check_marker(&txn_marker, epoch_bumped)?;
            let kind = match marker.kind {
                MarkerKind::Abort => 0,
                MarkerKind::Commit => 1,
            };
            let mut builder = BatchBuilder::new(offset.value())
                .producer(marker.producer_id, marker.epoch.value(), -1)
                .transactional(true)
                .control(true)
                .partition_leader_epoch(self.view.load().leader_epoch.value());
            // One record of 4 and 6 bytes: nothing in it can fail to encode.
            let unencodable = |error: ferrolog_records::RecordsError| {
                StorageError::Fatal(format!("encoding a transaction marker: {error}"))
            };
            builder
                .append(
                    now_ms,
                    Some(&control_key(kind)),
                    Some(&marker_value(marker.coordinator_epoch.value())),
                    &[],
                )
                .map_err(unencodable)?;
            let bytes = builder.build().map_err(unencodable)?;
            let size = bytes.len() as u32;
            let validated = ValidatedAppend {
                info: AppendInfo {
                    first_offset: offset,
                    last_offset: offset,
                    max_timestamp: now_ms,
                    offset_of_max_timestamp: offset,
                    log_append_time_ms: -1,
                    record_count: 1,
                    batch_count: 1,
                    valid_bytes: bytes.len(),
                },
                batches: vec![BatchMeta {
                    last_offset: offset,
                    max_timestamp: now_ms,
                    size,
                }],
                producer_batches: Vec::new(),
                markers: vec![txn_marker],
                epoch_starts: Vec::new(),
            };
            let appended =
                self.write_validated(writer, &config, &bytes, validated, OffsetsFrom::Assigned)?;
            self.flush_appended(&appended)?;
            Ok(appended.info)
        })
    }

    /// A transactional batch or a marker written spends its producer's verification. Called
    /// with `producers` held (the verifications are taken after it).
    fn spend_verifications(&self, batches: &[ProducerBatch], markers: &[TxnMarker]) {
        let mut verifications = self.verifications.lock();
        let transactional = batches.iter().filter(|b| b.transactional);
        for producer_id in transactional
            .map(|batch| batch.producer_id)
            .chain(markers.iter().map(|marker| marker.producer_id))
        {
            verifications.clear(producer_id);
        }
    }

    /// Rolls if the active segment should not take this append. Returns the new base offset.
    fn maybe_roll(
        &self,
        config: &LogConfig,
        params: RollParams,
        first_offset: Offset,
    ) -> Result<Option<Offset>> {
        let view = self.view();
        if !view.active_segment().should_roll(&params)? {
            return Ok(None);
        }
        self.roll_locked(config, Some(first_offset)).map(Some)
    }

    /// writer lock. An empty active segment already at that base is kept as it is.
    pub(super) fn roll_locked(
        &self,
        config: &LogConfig,
        expected_next_offset: Option<Offset>,
    ) -> Result<Offset> {
        let view = self.view();
        refuse_past_damaged_end(&view)?;
        let dir = &view.home.dir;
        let new_base = expected_next_offset
            .unwrap_or(Offset::ZERO)
            .max(view.log_end.offset);
        let active = view.active_segment();
        let mut segments: Vec<Arc<Segment>> = view.segments.iter().cloned().collect();
        if active.base_offset() == new_base {
            if !active.is_empty() {
                return Err(StorageError::SegmentExists {
                    path: active.log_path(),
                    base_offset: new_base.value(),
                });
            }
            // An empty segment already at the new base is what the roll would make: it stays,
            // as an active segment (its indexes may have been trimmed by a roll that then
            // failed to create its successor).
            active.resize_indexes(config.segment_index_bytes)?;
            return Ok(new_base);
        }
        // The snapshot and the new segment's files come first, the old segment's trimming
        // after: a failure on the way (a full disk, no file descriptors) leaves the log as it
        // was, and at worst files of the new segment, which the next roll removes.
        for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
            let stale = segment_path(dir, new_base.value(), suffix);
            if remove_if_exists(&stale)? {
                tracing::warn!(path = %stale.display(), "removed a stale file in the way of a new segment");
            }
        }
        // The state as of the new base: every batch below it, none above.
        self.write_producer_snapshot(new_base, SnapshotSync::Later)?;
        let segment = Arc::new(Segment::create(dir, new_base, config, self.clock.now_ms())?);
        active.on_becoming_inactive()?;
        active.seal(&self.open_files);
        // A recovery point already at the old segment's end would have recovery after a crash
        // start at the new segment, so the old one's indexes, which flushes leave unsynced
        // while it is active (flush.rs), are fsynced, trimmed, before the new segment is
        // published. Only with frequent flushes (`flush.messages=1`) is the recovery point
        // there, and then this is three fsyncs (four with a `.txnindex`: the trimmed `.log` too)
        // once per segment, under the lock (a failure takes the directory offline, as every
        // failed fsync does).
        if view.recovery_point >= view.log_end.offset {
            active.flush()?;
        }
        segments.push(Arc::clone(&segment));
        let mut next = (*view).clone();
        next.segments = Arc::new(segments);
        next.log_end.segment_base_offset = new_base;
        next.log_end.position = FilePosition::START;
        self.publish(next);
        tracing::info!(
            partition = %self.topic_partition,
            new_base = new_base.value(),
            "rolled to a new segment"
        );
        Ok(new_base)
    }

    /// Rolls now (the active segment stays if it is empty and already at the LEO).
    pub fn roll(&self) -> Result<Offset> {
        self.guarded(|| {
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let new_base = self.roll_locked(&config, None)?;
            drop(writer);
            self.make_roll_durable(new_base)?;
            Ok(new_base)
        })
    }

    /// What follows every roll, outside the writer lock so other appends go on: the segments
    /// below the new base are fsynced and the recovery point moves to it, then the producer
    /// snapshot written at the roll is fsynced. Kafka does both on its flush thread; here
    /// whoever rolled (an appender, `roll`, an idle roll, retention) pays it.
    pub(super) fn make_roll_durable(&self, new_base: Offset) -> Result<()> {
        self.flush_up_to(new_base)?;
        // Read under the lock, which a move to another directory holds from its first rename
        // to the new view: the directory is one that exists. (A snapshot written before a move
        // is not in the new one, which the sync allows.)
        let dir = {
            let _writer = self.writer.lock();
            self.dir()
        };
        snapshot::sync(&dir, new_base)
    }
}

/// Where the leader epochs of an append start: a leader's batches are in the log's epoch from
/// their first offset; a copy's carry their own.
fn epoch_starts(
    view: &super::LogView,
    first_offset: Offset,
    offsets: OffsetsFrom,
    carried: Vec<EpochEntry>,
) -> Vec<EpochEntry> {
    match offsets {
        OffsetsFrom::Assigned => vec![EpochEntry {
            epoch: view.leader_epoch,
            start_offset: first_offset,
        }],
        OffsetsFrom::Carried => carried,
    }
}
