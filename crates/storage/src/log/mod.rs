//! A partition log: an ordered list of segments with the log end offset (LEO), the log start
//! offset, the high watermark (HW) and the recovery point.
//!
//! Invariants: there is always at least one segment, the last one is the active segment,
//! `log_start ≤ HW ≤ LEO` and `recovery_point ≤ LEO`.
//!
//! Threads: appends, rolls, truncations and every other change take the log's writer lock, then
//! publish a new immutable [`LogView`]. Readers never take that lock: they load the current view
//! (an `Arc` swap) and read segments positionally up to the offsets it publishes, so a reader
//! holding an old view keeps reading segments that were since removed (their files stay open).
//! fsyncs happen outside the writer lock so a flush never stalls appends.

mod append;
mod load;
mod maintenance;
mod producers;
mod read;
pub mod retention;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

pub use append::AppendInfo;
pub use load::{DamagedBytes, LoadParams, LoadReport, RecoveredSegment};
pub use maintenance::RetentionOutcome;
pub use producers::ProducerStateSource;
pub use read::{FetchBound, FetchData, FetchParams, LogOffsetMetadata, special_timestamps};

use crate::clock::Clock;
use crate::config::LogConfig;
use crate::error::{Result, StorageError};
use crate::fs::{fsync_dir, remove_if_exists};
use crate::health::DirHealth;
use crate::producer::{ProducerBatch, ProducerState, snapshot};
use crate::segment::{
    DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, RollParams, Segment, TIME_INDEX_SUFFIX, segment_path,
};
use crate::types::TopicPartition;

/// An immutable snapshot of the log, published after every change.
#[derive(Debug, Clone)]
pub struct LogView {
    /// Sorted by base offset; never empty; the last is the active segment.
    pub segments: Arc<Vec<Arc<Segment>>>,
    pub log_end: LogOffsetMetadata,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    pub recovery_point: i64,
    /// Damage in the active segment that no recovery cut (the last stop was clean), found
    /// while looking for the log's end: the log ends before it and takes no appends until it
    /// is cut. Kafka takes the last whole batch before such damage for the end and appends
    /// after the damaged bytes, giving the offsets past it twice; ferrolog serves what lies
    /// before the damage and refuses appends until `ferrolog recover --force`, or a truncation
    /// below it, cuts it.
    pub damaged_end: Option<Arc<DamagedBytes>>,
}

impl LogView {
    pub fn active_segment(&self) -> &Arc<Segment> {
        // The list is never empty (module invariant), so `last` always exists.
        &self.segments[self.segments.len() - 1]
    }
    /// The segment whose range holds `offset`: the one with the largest base ≤ `offset`.
    pub fn floor_segment_index(&self, offset: i64) -> Option<usize> {
        let upper = self
            .segments
            .partition_point(|segment| segment.base_offset() <= offset);
        upper.checked_sub(1)
    }
    /// Total bytes of every segment's `.log`.
    pub fn size_in_bytes(&self) -> u64 {
        self.segments.iter().map(|segment| segment.size()).sum()
    }
}

#[derive(Debug)]
struct WriterState {
    last_flush_ms: i64,
    closed: bool,
}

/// One partition's log.
#[derive(Debug)]
pub struct Log {
    dir: Mutex<PathBuf>,
    topic_partition: TopicPartition,
    config: ArcSwap<LogConfig>,
    clock: Arc<dyn Clock>,
    writer: Mutex<WriterState>,
    view: ArcSwap<LogView>,
    health: Arc<DirHealth>,
    reaper: Mutex<Option<Arc<dyn SegmentReaper>>>,
    /// Idempotent producers' state; taken after `writer` when both are held.
    producers: Mutex<ProducerState>,
    /// Damaged places of this log's files already logged, so a consumer retrying a fetch over
    /// damage does not flood the log (each read is still refused and counted).
    reported_damage: Mutex<HashSet<(PathBuf, u64)>>,
}

/// Removes the files of deleted segments after a delay (the LogManager's deleter thread).
pub trait SegmentReaper: Send + Sync + std::fmt::Debug {
    /// Deletes `files`, already renamed `.deleted`, once `delay_ms` has passed.
    fn schedule(&self, files: Vec<PathBuf>, delay_ms: i64);
}

impl Log {
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }
    pub fn dir(&self) -> PathBuf {
        self.dir.lock().clone()
    }
    pub fn config(&self) -> Arc<LogConfig> {
        self.config.load_full()
    }
    /// Applies a new configuration; later appends, rolls and reads see it.
    pub fn update_config(&self, config: LogConfig) {
        self.config.store(Arc::new(config));
    }
    /// The current snapshot.
    pub fn view(&self) -> Arc<LogView> {
        self.view.load_full()
    }
    pub fn log_end_offset(&self) -> i64 {
        self.view.load().log_end.offset
    }
    pub fn log_start_offset(&self) -> i64 {
        self.view.load().log_start_offset
    }
    pub fn high_watermark(&self) -> i64 {
        self.view.load().high_watermark
    }
    pub fn recovery_point(&self) -> i64 {
        self.view.load().recovery_point
    }
    pub fn last_flush_ms(&self) -> i64 {
        self.writer.lock().last_flush_ms
    }
    pub fn size_in_bytes(&self) -> u64 {
        self.view.load().size_in_bytes()
    }
    pub fn segment_count(&self) -> usize {
        self.view.load().segments.len()
    }

    /// Hands removed segments' files to `reaper` (renamed `.deleted`, removed after
    /// `file.delete.delay.ms`) instead of deleting them at once.
    pub fn set_reaper(&self, reaper: Arc<dyn SegmentReaper>) {
        *self.reaper.lock() = Some(reaper);
    }

    /// Renames removed segments' files to `.deleted`, then disposes of them. Readers holding an
    /// older view keep their open handles.
    fn retire(&self, segments: &[Arc<Segment>]) -> Result<()> {
        for segment in segments {
            segment.change_file_suffixes("", DELETED_SUFFIX)?;
        }
        self.dispose_renamed(segments)
    }

    /// Deletes already-renamed segments' files, now or through the reaper.
    fn dispose_renamed(&self, segments: &[Arc<Segment>]) -> Result<()> {
        let reaper = self.reaper.lock().clone();
        match reaper {
            Some(reaper) => {
                let files = segments
                    .iter()
                    .flat_map(|segment| segment.file_paths())
                    .collect();
                reaper.schedule(files, self.config().file_delete_delay_ms);
                Ok(())
            }
            None => segments
                .iter()
                .try_for_each(|segment| segment.delete_files()),
        }
    }

    /// The data directory's health, shared with every log in it.
    pub fn health(&self) -> &Arc<DirHealth> {
        &self.health
    }

    /// Runs a file-touching operation: refused at once when the directory is offline, and an
    /// I/O failure takes the directory offline.
    /// Damaged bytes in a segment refuse the operation (they are never taken for the end of
    /// the data) and are reported: logged at ERROR once per place, counted every time.
    fn guarded<T>(&self, operation: impl FnOnce() -> Result<T>) -> Result<T> {
        self.health.ensure_online()?;
        let result = operation();
        if let Err(error) = &result {
            self.health.observe(error);
            if let StorageError::Corrupt { path, position, .. } = error {
                self.report_damage(path, *position, error);
            }
        }
        result
    }

    fn report_damage(&self, path: &Path, position: u64, error: &StorageError) {
        metrics::counter!(
            "ferrolog_log_damaged_reads_total",
            "topic" => self.topic_partition.topic.clone(),
            "partition" => self.topic_partition.partition.to_string()
        )
        .increment(1);
        let first = self
            .reported_damage
            .lock()
            .insert((path.to_path_buf(), position));
        if first {
            tracing::error!(
                partition = %self.topic_partition,
                path = %path.display(),
                position,
                %error,
                "damaged data in a segment: reads that reach it are refused with CORRUPT_MESSAGE; `ferrolog verify` lists every damaged place"
            );
        }
    }

    fn publish(&self, view: LogView) {
        self.view.store(Arc::new(view));
    }

    fn ensure_open(&self, writer: &WriterState) -> Result<()> {
        if writer.closed {
            return Err(StorageError::LogClosed(self.topic_partition.to_string()));
        }
        Ok(())
    }

    /// Appends producer batches: validates them, assigns offsets from the LEO, rolls first if
    /// needed. `bytes` is rewritten in place with the assigned offsets.
    pub fn append_as_leader(
        &self,
        bytes: &mut Vec<u8>,
        partition_leader_epoch: i32,
    ) -> Result<AppendInfo> {
        self.guarded(|| {
            let config = self.config();
            let now_ms = self.clock.now_ms();
            // CRC and record checks before the lock: appenders to one partition overlap there.
            let checked = append::check_leader_append(bytes, &config, now_ms)?;
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let view = self.view();
            let validated = append::assign_leader_offsets(
                bytes,
                checked,
                append::LeaderContext {
                    config: &config,
                    next_offset: view.log_end.offset,
                    now_ms,
                    partition_leader_epoch,
                },
            )?;
            let producer_batches = producers::producer_batches(
                bytes,
                validated.batches.iter().map(|b| b.size as usize),
            );
            if let Some(original) = self.producers.lock().check(&producer_batches)? {
                // A retry of a batch already written: answered with where it went, as Kafka does.
                tracing::debug!(
                    partition = %self.topic_partition,
                    first_offset = original.first_offset,
                    "duplicate producer batch acknowledged without writing it"
                );
                return Ok(AppendInfo {
                    first_offset: original.first_offset,
                    last_offset: original.last_offset,
                    max_timestamp: original.timestamp,
                    offset_of_max_timestamp: original.last_offset,
                    log_append_time_ms: -1,
                    record_count: 0,
                    batch_count: 0,
                    valid_bytes: 0,
                });
            }
            self.write_validated(writer, &config, bytes, validated, &producer_batches)
        })
    }

    /// Appends batches that already carry their offsets (replication, tools, tests). The first
    /// must start at or after the LEO; offsets must increase.
    pub fn append_as_follower(&self, bytes: &[u8]) -> Result<AppendInfo> {
        self.guarded(|| {
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let validated = append::validate_follower_append(bytes, self.log_end_offset())?;
            let producer_batches = producers::producer_batches(
                bytes,
                validated.batches.iter().map(|b| b.size as usize),
            );
            self.write_validated(writer, &config, bytes, validated, &producer_batches)
        })
    }

    fn write_validated(
        &self,
        writer: parking_lot::MutexGuard<'_, WriterState>,
        config: &LogConfig,
        bytes: &[u8],
        validated: append::ValidatedAppend,
        producer_batches: &[ProducerBatch],
    ) -> Result<AppendInfo> {
        refuse_past_damaged_end(&self.view())?;
        let info = validated.info;
        if bytes.len() as u64 > config.segment_bytes {
            return Err(StorageError::RecordBatchTooLarge {
                size: bytes.len(),
                segment_bytes: config.segment_bytes,
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
                segment_ms: config.segment_ms,
                segment_bytes: config.segment_bytes,
                max_timestamp_in_messages,
                max_offset_in_messages: info.last_offset,
                messages_size: bytes.len() as u64,
                now_ms,
            },
            info.first_offset,
        )?;
        let view = self.view();
        let active = view.active_segment();
        active.append(bytes, &validated.batches)?;
        let mut next = (*view).clone();
        next.log_end = LogOffsetMetadata {
            offset: info.last_offset + 1,
            segment_base_offset: active.base_offset(),
            position: active.size(),
        };
        let unflushed = next.log_end.offset - next.recovery_point;
        {
            let mut producers = self.producers.lock();
            for batch in producer_batches {
                producers.apply(batch);
            }
        }
        self.publish(next);
        drop(writer);

        if let Some(new_base) = rolled {
            // Kafka flushes the segments before a new one asynchronously; here the appender
            // that rolled pays it, outside the writer lock so other appends go on.
            self.flush_up_to(new_base)?;
            snapshot::sync(&self.dir(), new_base)?;
        }
        if unflushed >= config.flush_messages {
            self.flush()?;
        }
        Ok(info)
    }

    /// Rolls if the active segment should not take this append. Returns the new base offset.
    fn maybe_roll(
        &self,
        config: &LogConfig,
        params: RollParams,
        first_offset: i64,
    ) -> Result<Option<i64>> {
        let view = self.view();
        if !view.active_segment().should_roll(&params)? {
            return Ok(None);
        }
        self.roll_locked(config, Some(first_offset)).map(Some)
    }

    /// Starts a new active segment at `max(expected_next_offset, LEO)`; the caller holds the
    /// writer lock. An empty active segment already at that base is kept as it is.
    fn roll_locked(&self, config: &LogConfig, expected_next_offset: Option<i64>) -> Result<i64> {
        let view = self.view();
        refuse_past_damaged_end(&view)?;
        let dir = self.dir();
        let new_base = expected_next_offset.unwrap_or(0).max(view.log_end.offset);
        let active = view.active_segment();
        let mut segments: Vec<Arc<Segment>> = view.segments.iter().cloned().collect();
        if active.base_offset() == new_base {
            if !active.is_empty() {
                return Err(StorageError::InvalidIndexAppend {
                    path: active.log_path(),
                    reason: format!(
                        "cannot roll to offset {new_base}: a non-empty segment already starts there"
                    ),
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
            let stale = segment_path(&dir, new_base, suffix);
            if remove_if_exists(&stale)? {
                tracing::warn!(path = %stale.display(), "removed a stale file in the way of a new segment");
            }
        }
        // The state as of the new base: every batch below it, none above.
        self.write_producer_snapshot(new_base, false)?;
        let segment = Arc::new(Segment::create(
            &dir,
            new_base,
            config,
            self.clock.now_ms(),
        )?);
        active.on_becoming_inactive()?;
        segments.push(Arc::clone(&segment));
        let mut next = (*view).clone();
        next.segments = Arc::new(segments);
        next.log_end.segment_base_offset = new_base;
        next.log_end.position = 0;
        self.publish(next);
        tracing::info!(
            partition = %self.topic_partition,
            new_base,
            "rolled to a new segment"
        );
        Ok(new_base)
    }

    /// Rolls now (the active segment stays if it is empty and already at the LEO).
    pub fn roll(&self) -> Result<i64> {
        self.guarded(|| {
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let new_base = self.roll_locked(&config, None)?;
            drop(writer);
            self.flush_up_to(new_base)?;
            snapshot::sync(&self.dir(), new_base)?;
            Ok(new_base)
        })
    }

    /// fsyncs everything up to the LEO and moves the recovery point there.
    pub fn flush(&self) -> Result<()> {
        self.flush_range(self.log_end_offset(), false)
    }

    /// fsyncs the segments holding offsets in `[recovery point, up_to)` and raises the recovery
    /// point to `up_to`.
    pub fn flush_up_to(&self, up_to: i64) -> Result<()> {
        self.flush_range(up_to, false)
    }

    /// Like [`Log::flush`], but also fsyncs an empty active segment (so its files exist on
    /// disk), as Kafka's shutdown flush does.
    pub fn flush_inclusive(&self) -> Result<()> {
        self.flush_range(self.log_end_offset(), true)
    }

    /// The fsyncs run outside the writer lock; the partition directory is fsynced too when one
    /// of the flushed segments was created since the last flush (its directory entry is new).
    fn flush_range(&self, up_to: i64, inclusive: bool) -> Result<()> {
        self.guarded(|| self.flush_range_unguarded(up_to, inclusive))
    }

    fn flush_range_unguarded(&self, up_to: i64, inclusive: bool) -> Result<()> {
        let started = std::time::Instant::now();
        let result = self.flush_segments(up_to, inclusive);
        if let Ok(true) = result {
            // Kafka's kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs.
            metrics::histogram!("kafka_log_logflushstats_logflushrateandtimems")
                .record(started.elapsed().as_secs_f64() * 1000.0);
        }
        result.map(|_| ())
    }

    /// Flushes; returns whether anything was fsynced.
    fn flush_segments(&self, up_to: i64, inclusive: bool) -> Result<bool> {
        let view = self.view();
        let up_to = up_to.min(view.log_end.offset);
        let from = view.recovery_point;
        let overlaps = |index: usize, segment: &Segment| {
            let next_base = view
                .segments
                .get(index + 1)
                .map_or(i64::MAX, |next| next.base_offset());
            let below_end =
                segment.base_offset() < up_to || (inclusive && segment.base_offset() <= up_to);
            below_end && next_base > from
        };
        let mut new_segment_included = false;
        let mut flushed_any = false;
        for (index, segment) in view.segments.iter().enumerate() {
            if overlaps(index, segment) {
                if let Err(error) = segment.flush() {
                    // Index files are fsynced by path; a log deleted meanwhile has moved them.
                    // That is the deletion winning the race, not a failing disk.
                    let writer = self.writer.lock();
                    self.ensure_open(&writer)?;
                    return Err(error);
                }
                flushed_any = true;
                new_segment_included |= segment.base_offset() >= from;
            }
        }
        if !flushed_any && up_to <= from {
            return Ok(false);
        }
        let mut writer = self.writer.lock();
        // Under the lock: a log being deleted has its directory renamed under that lock.
        self.ensure_open(&writer)?;
        if new_segment_included {
            fsync_dir(&self.dir())?;
        }
        let current = self.view();
        if up_to > current.recovery_point && up_to <= current.log_end.offset {
            let mut next = (*current).clone();
            next.recovery_point = up_to;
            self.publish(next);
        }
        writer.last_flush_ms = self.clock.now_ms();
        Ok(flushed_any)
    }

    /// Raises the high watermark (never past the LEO, never down).
    pub fn maybe_increment_high_watermark(&self, offset: i64) -> bool {
        let _writer = self.writer.lock();
        let view = self.view();
        let target = offset.min(view.log_end.offset);
        if target <= view.high_watermark {
            return false;
        }
        let mut next = (*view).clone();
        next.high_watermark = target;
        self.publish(next);
        true
    }

    /// Sets the high watermark, clamped to `[log start, LEO]`.
    pub fn update_high_watermark(&self, offset: i64) -> i64 {
        let _writer = self.writer.lock();
        let view = self.view();
        let mut next = (*view).clone();
        next.high_watermark = offset.clamp(view.log_start_offset, view.log_end.offset);
        let high_watermark = next.high_watermark;
        self.publish(next);
        high_watermark
    }

    /// Raises the log start offset, as DeleteRecords does; it may not pass the high watermark.
    /// Segments below it are removed later by retention. Returns whether it moved.
    pub fn maybe_increment_log_start_offset(&self, offset: i64) -> Result<bool> {
        let _writer = self.writer.lock();
        let view = self.view();
        if offset > view.high_watermark {
            return Err(StorageError::OffsetOutOfRange {
                offset,
                log_start_offset: view.log_start_offset,
                log_end_offset: view.high_watermark,
            });
        }
        if offset <= view.log_start_offset {
            return Ok(false);
        }
        let mut next = (*view).clone();
        next.log_start_offset = offset;
        self.publish(next);
        self.on_log_start_moved(offset)?;
        Ok(true)
    }

    /// Removes every record at or after `target`. Returns whether anything was removed.
    pub fn truncate_to(&self, target: i64) -> Result<bool> {
        self.guarded(|| {
            if target < 0 {
                return Err(StorageError::OffsetOutOfRange {
                    offset: target,
                    log_start_offset: self.log_start_offset(),
                    log_end_offset: self.log_end_offset(),
                });
            }
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let view = self.view();
            if target >= view.log_end.offset {
                return Ok(false);
            }
            if view.segments[0].base_offset() > target {
                drop(writer);
                self.truncate_fully_and_start_at(target)?;
                return Ok(true);
            }
            let (kept, removed): (Vec<_>, Vec<_>) = view
                .segments
                .iter()
                .cloned()
                .partition(|segment| segment.base_offset() <= target);
            let now_ms = self.clock.now_ms();
            let active = &kept[kept.len() - 1];
            active.truncate_to(target, now_ms)?;
            active.resize_indexes(config.segment_index_bytes)?;
            let mut next = (*view).clone();
            next.log_end = LogOffsetMetadata {
                offset: target,
                segment_base_offset: active.base_offset(),
                position: active.size(),
            };
            next.segments = Arc::new(kept);
            // The cut is below the end, so below any damage there.
            next.damaged_end = None;
            next.log_start_offset = next.log_start_offset.min(target);
            next.high_watermark = next.high_watermark.min(target);
            next.recovery_point = next.recovery_point.min(target);
            self.publish(next);
            self.retire(&removed)?;
            self.rebuild_producer_state(target)?;
            drop(writer);
            Ok(true)
        })
    }

    /// Drops every segment and starts empty at `offset`: LEO = log start = HW = `offset`.
    pub fn truncate_fully_and_start_at(&self, offset: i64) -> Result<()> {
        self.guarded(|| {
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let view = self.view();
            let old: Vec<Arc<Segment>> = view.segments.iter().cloned().collect();
            for segment in &old {
                segment.change_file_suffixes("", DELETED_SUFFIX)?;
            }
            let segment = Arc::new(Segment::create(
                &self.dir(),
                offset,
                &config,
                self.clock.now_ms(),
            )?);
            let mut next = (*view).clone();
            next.segments = Arc::new(vec![Arc::clone(&segment)]);
            next.damaged_end = None;
            next.log_end = LogOffsetMetadata {
                offset,
                segment_base_offset: offset,
                position: 0,
            };
            next.log_start_offset = offset;
            next.high_watermark = offset;
            next.recovery_point = offset;
            self.publish(next);
            *self.producers.lock() = ProducerState::default();
            for (_, path) in snapshot::list(&self.dir())? {
                remove_if_exists(&path)?;
            }
            self.dispose_renamed(&old)
        })
    }

    /// Stops every further write and maintenance step (they fail with
    /// [`StorageError::LogClosed`]) without flushing, before the log's directory is renamed for
    /// deletion. Readers holding the log keep reading through its open files.
    pub fn close_for_deletion(&self) {
        self.writer.lock().closed = true;
    }

    /// Flushes everything, writes final time-index entries and trims indexes. Further writes
    /// fail with [`StorageError::LogClosed`].
    pub fn close(&self) -> Result<()> {
        self.guarded(|| {
            self.flush_inclusive()?;
            let mut writer = self.writer.lock();
            if writer.closed {
                return Ok(());
            }
            writer.closed = true;
            let view = self.view();
            view.active_segment().on_becoming_inactive()?;
            view.active_segment().flush()?;
            // The next clean start loads this instead of reading the log.
            self.write_producer_snapshot(view.log_end.offset, true)?;
            Ok(())
        })
    }
}

/// The directory of a partition's log under a data directory.
pub fn partition_dir(data_dir: &Path, topic_partition: &TopicPartition) -> PathBuf {
    data_dir.join(topic_partition.dir_name())
}

/// Refuses what would go past the end of a log whose end is damaged
/// ([`LogView::damaged_end`]): a write, a roll.
fn refuse_past_damaged_end(view: &LogView) -> Result<()> {
    match &view.damaged_end {
        Some(damaged) => Err(damaged.refusal()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
