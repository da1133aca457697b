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
//! Flushes fsync segments outside the writer lock, so they never stall appends. Under it run
//! only: a roll's fsync of the old segment when the recovery point is at the log end
//! (`write.rs`), a flush's fsync of a segment that rolled during it (`flush.rs`), the cleaner's
//! two directory fsyncs (`Log::replace_segments`), whose renames must not interleave with a
//! roll or a truncation, a move's swap (`Log::take_over`: the future log's tail and both
//! directories), and [`Log::close`]'s last flush and producer snapshot, after which nothing
//! appends.
//!
//! Lock order, for every path that holds more than one: `flush_turn`, then `writer`, then
//! `producers`, then `verifications`, then a segment's own locks (its `flushing` first, see
//! [`crate::segment`]). `reported_damage` is a leaf: nothing is taken under it. The view is an
//! atomic pointer, not a lock.
//!
//! Files: `append.rs` (with `decompression_budget.rs`) and `follower.rs` validate (pure
//! functions), `verification.rs` asks the transaction coordinator before the lock, `write.rs`
//! appends and rolls, `read.rs` reads, `flush.rs` flushes, `truncate.rs` truncates,
//! `maintenance.rs` and `retention.rs` hold retention and the cleaner's swap, `load.rs` (with
//! `leftovers.rs` and `recovery.rs`) opens and recovers, `relocate.rs` moves a log between data
//! directories, `producers.rs` keeps the idempotent producers' state.

mod append;
mod append_entry;
mod decompression_budget;
mod flush;
mod follower;
mod leader_epochs;
mod leftovers;
mod load;
mod maintenance;
mod producers;
mod read;
mod recovery;
mod relocate;
pub mod retention;
mod salvage;
mod salvage_online;
mod truncate;
mod verification;
mod write;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

pub use append::AppendInfo;
pub use append_entry::{AppendOrigin, FlushMode};
pub use load::{DamagedBytes, LoadParams, LoadReport, RecoveredSegment};
pub use maintenance::RetentionOutcome;
pub use producers::ProducerStateSource;
pub use read::{
    FetchBound, FetchData, FetchParams, FileSlice, FirstBatch, LogOffsetMetadata, Watermarks,
    special_timestamps,
};
pub use relocate::{CopyStep, SwapPaths};
pub use salvage::{PossiblyUnended, SALVAGED_SUFFIX, Salvage, SalvagedSegment};
pub use write::{Appended, MarkerRequest};

use crate::clock::Clock;
use crate::config::LogConfig;
use crate::epoch::LeaderEpoch;
use crate::error::{Result, StorageError};
use crate::health::DirHealth;
use crate::leader_epochs::LeaderEpochs;
use crate::offset::Offset;
use crate::producer::ProducerState;
use crate::segment::{DELETED_SUFFIX, OpenFiles, Segment};
use crate::types::TopicPartition;

/// An immutable snapshot of the log, published after every change.
#[derive(Debug, Clone)]
pub struct LogView {
    /// Sorted by base offset; never empty; the last is the active segment.
    pub segments: Arc<Vec<Arc<Segment>>>,
    /// The log end offset (the next offset to assign) and where it lies in the active segment.
    pub log_end: LogOffsetMetadata,
    /// The first offset that can be read; data below it waits for retention to remove it.
    pub log_start_offset: Offset,
    /// Offsets below it are committed: consumers read up to it.
    pub high_watermark: Offset,
    /// Offsets below it are fsynced; recovery after an unclean stop starts at its segment.
    pub recovery_point: Offset,
    /// Damage in the active segment that no recovery cut (the last stop was clean), found
    /// while looking for the log's end: the log ends before it and takes no appends until it
    /// is cut. Kafka takes the last whole batch before such damage for the end and appends
    /// after the damaged bytes, giving the offsets past it twice; ferrolog serves what lies
    /// before the damage and refuses appends until `ferrolog recover --force`, or a truncation
    /// below it, cuts it.
    pub damaged_end: Option<Arc<DamagedBytes>>,
    /// The first offset of the earliest open transaction, from the producer state as of this
    /// view: `read_committed` consumers read no further (see [`Watermarks`]).
    pub first_unstable_offset: Option<Offset>,
    /// Where the log's files are. In the view, so that work begun on one snapshot (a flush)
    /// can tell whether the log moved to another directory meanwhile.
    pub home: Arc<LogHome>,
    /// Where each leader epoch of the log starts (see `leader_epochs.rs`).
    pub leader_epochs: Arc<LeaderEpochs>,
    /// The partition's leader epoch, stamped on the batches it assigns offsets to: at least
    /// the latest epoch of `leader_epochs`; set when the log opens, never lowered.
    pub leader_epoch: LeaderEpoch,
}

/// Where a log lives: its partition directory and the health of the data directory holding
/// it. It changes only when a log moved to another data directory takes its future log's place
/// (`Log::take_over`).
#[derive(Debug)]
pub struct LogHome {
    /// The partition directory.
    pub dir: PathBuf,
    /// The data directory's health, shared with every log in it.
    pub health: Arc<DirHealth>,
}

impl LogView {
    /// Where `read_committed` consumers stop: the first offset of the earliest open
    /// transaction (never below the log start), or the high watermark if that is lower or no
    /// transaction is open.
    pub fn last_stable_offset(&self) -> Offset {
        self.first_unstable_offset
            .map_or(self.high_watermark, |first| {
                first.max(self.log_start_offset).min(self.high_watermark)
            })
    }
    /// The view's invariants: its segments never empty and in base-offset order, the log end
    /// in the active segment, and log start ≤ high watermark ≤ log end, recovery point ≤ log
    /// end. The checks that cost nothing run in every build; the walk over every segment in
    /// debug builds.
    pub fn check(&self) -> std::result::Result<(), String> {
        let Some(active) = self.segments.last() else {
            return Err("no segment".into());
        };
        let end = &self.log_end;
        if end.segment_base_offset != active.base_offset() || end.offset < active.base_offset() {
            return Err(format!(
                "log end {} (in the segment at {}) is not in the active segment at {}",
                end.offset,
                end.segment_base_offset,
                active.base_offset()
            ));
        }
        if end.position.bytes() > active.size() {
            return Err(format!(
                "log end position {} past the active segment's {} bytes",
                end.position,
                active.size()
            ));
        }
        if !(self.log_start_offset <= self.high_watermark && self.high_watermark <= end.offset) {
            return Err(format!(
                "log start {} ≤ high watermark {} ≤ log end {} does not hold",
                self.log_start_offset, self.high_watermark, end.offset
            ));
        }
        if self.recovery_point > end.offset {
            return Err(format!(
                "recovery point {} past the log end {}",
                self.recovery_point, end.offset
            ));
        }
        self.check_epochs()?;
        if cfg!(debug_assertions)
            && let Some(pair) = self
                .segments
                .windows(2)
                .find(|pair| pair[0].base_offset() >= pair[1].base_offset())
        {
            return Err(format!(
                "segments out of order: {} before {}",
                pair[0].base_offset(),
                pair[1].base_offset()
            ));
        }
        Ok(())
    }

    /// The leader-epoch invariants: its entries within [log start, log end] and none above the
    /// leader epoch; the walk over every entry (the cache's own order) in debug builds.
    fn check_epochs(&self) -> std::result::Result<(), String> {
        if cfg!(debug_assertions) {
            self.leader_epochs.check()?;
        }
        let (Some(earliest), Some(latest)) =
            (self.leader_epochs.earliest(), self.leader_epochs.latest())
        else {
            return Ok(());
        };
        if earliest.start_offset < self.log_start_offset
            || latest.start_offset > self.log_end.offset
        {
            return Err(format!(
                "leader epochs from {} to {} outside the log's [{}, {}]",
                earliest.start_offset,
                latest.start_offset,
                self.log_start_offset,
                self.log_end.offset
            ));
        }
        if latest.epoch > self.leader_epoch {
            return Err(format!(
                "leader epoch {} below the cache's latest {}",
                self.leader_epoch, latest.epoch
            ));
        }
        Ok(())
    }

    /// The last segment, the one appends go to.
    pub fn active_segment(&self) -> &Arc<Segment> {
        // The list is never empty (module invariant), so `last` always exists.
        &self.segments[self.segments.len() - 1]
    }
    /// The segment whose range holds `offset`: the one with the largest base ≤ `offset`.
    pub fn floor_segment_index(&self, offset: Offset) -> Option<usize> {
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
    topic_partition: TopicPartition,
    config: ArcSwap<LogConfig>,
    clock: Arc<dyn Clock>,
    writer: Mutex<WriterState>,
    view: ArcSwap<LogView>,
    reaper: Option<Arc<dyn SegmentReaper>>,
    /// Where the files of this log's sealed segments are counted and closed when cold.
    open_files: Arc<OpenFiles>,
    /// What this log's appends decompress into.
    decompression: Arc<crate::decompression::DecompressionMemory>,
    /// Idempotent producers' state; taken after `writer` when both are held.
    producers: Mutex<ProducerState>,
    /// Transaction verifications answered and not yet used by a write; a leaf, taken after
    /// `producers` when both are held.
    verifications: Mutex<verification::Verifications>,
    /// Damaged places of this log's files already logged, so a consumer retrying a fetch over
    /// damage does not flood the log (each read is still refused and counted).
    reported_damage: Mutex<HashSet<(PathBuf, u64)>>,
    /// The leader-epoch checkpoint lags the view's cache (the log start moved since it was
    /// written); written at close.
    epochs_unwritten: std::sync::atomic::AtomicBool,
    /// Held by [`Log::flush_appended`] across its flush: deferred flushes take turns, so each
    /// finds out, once its turn comes, whether the one before covered its append (group
    /// commit); taken before `writer`.
    flush_turn: Mutex<()>,
}

/// Removes the files of deleted segments after a delay (the LogManager's deleter thread).
pub trait SegmentReaper: Send + Sync + std::fmt::Debug {
    /// Deletes `files`, already renamed `.deleted`, once `delay` has passed.
    fn schedule(&self, files: Vec<PathBuf>, delay: std::time::Duration);
}

/// What a log shares with the other logs of its data directory and with its owner, given when
/// it is opened or created.
#[derive(Debug, Clone)]
pub struct LogEnvironment {
    /// The clock the log's rolls, retention, flushes and LogAppendTime stamps read.
    pub clock: Arc<dyn Clock>,
    /// The data directory's health, shared with every log in it.
    pub health: Arc<DirHealth>,
    /// Takes removed segments' files (renamed `.deleted`) and removes them after
    /// `file.delete.delay.ms`; `None` removes them at once.
    pub reaper: Option<Arc<dyn SegmentReaper>>,
    /// The sealed segments' files open now, within their limit, shared by every log of the
    /// owner.
    pub open_files: Arc<OpenFiles>,
    /// The memory appends decompress produced batches into, shared by every log of the owner.
    pub decompression: Arc<crate::decompression::DecompressionMemory>,
}

impl LogEnvironment {
    /// A log on its own: its own health for `data_dir`, files removed at once, at most
    /// [`crate::segment::DEFAULT_MAX_OPEN_SEALED`] sealed segments' files open.
    pub fn standalone(data_dir: &Path, clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            health: Arc::new(DirHealth::new(data_dir)),
            reaper: None,
            open_files: OpenFiles::new(crate::segment::DEFAULT_MAX_OPEN_SEALED),
            decompression: crate::decompression::DecompressionMemory::new(
                crate::decompression::DEFAULT_DECOMPRESSION_MEMORY,
            ),
        }
    }
}

impl Log {
    /// The partition this log holds.
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }
    /// The partition directory.
    pub fn dir(&self) -> PathBuf {
        self.view.load().home.dir.clone()
    }
    /// The configuration in force, as given at opening or by [`Log::update_config`] since.
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
    /// The offset the next appended record gets (the LEO).
    pub fn log_end_offset(&self) -> Offset {
        self.view.load().log_end.offset
    }
    /// The first offset that can be read (Kafka's `LogStartOffset`).
    pub fn log_start_offset(&self) -> Offset {
        self.view.load().log_start_offset
    }
    /// The end of the committed data: consumers read up to it.
    pub fn high_watermark(&self) -> Offset {
        self.view.load().high_watermark
    }
    /// The log start offset, high watermark and log end offset, from one snapshot.
    pub fn watermarks(&self) -> Watermarks {
        Watermarks::of(&self.view.load())
    }
    /// The offset below which every record is fsynced; recovery starts from its segment.
    pub fn recovery_point(&self) -> Offset {
        self.view.load().recovery_point
    }
    /// When the last flush ended, by the log's clock (before any, when the log opened).
    pub(crate) fn last_flush_ms(&self) -> i64 {
        self.writer.lock().last_flush_ms
    }
    /// Bytes of every segment's `.log` (Kafka's `Size` metric).
    pub fn size_in_bytes(&self) -> u64 {
        self.view.load().size_in_bytes()
    }
    /// Segments in the log, the active one included (Kafka's `NumLogSegments`).
    pub fn segment_count(&self) -> usize {
        self.view.load().segments.len()
    }

    /// Damage the scrubber recorded in this log's segments, in offset order: each damaged
    /// segment's `.log`, the byte position and what is wrong there.
    pub fn known_damage(&self) -> Vec<(PathBuf, u64, String)> {
        self.view
            .load()
            .segments
            .iter()
            .filter_map(|segment| {
                let (position, reason) = segment.known_damage()?;
                Some((segment.log_path(), position, reason))
            })
            .collect()
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
        match &self.reaper {
            Some(reaper) => {
                let files = segments
                    .iter()
                    .flat_map(|segment| segment.file_paths())
                    .collect();
                reaper.schedule(files, self.config().file_delete_delay);
                Ok(())
            }
            None => segments
                .iter()
                .try_for_each(|segment| segment.delete_files()),
        }
    }

    /// The data directory's health, shared with every log in it.
    pub(crate) fn health(&self) -> Arc<DirHealth> {
        Arc::clone(&self.view.load().home.health)
    }

    /// Runs a file-touching operation: refused at once when the directory is offline, and an
    /// I/O failure takes the directory offline.
    /// Damaged bytes in a segment refuse the operation (they are never taken for the end of
    /// the data) and are reported: logged at ERROR once per place, counted every time.
    fn guarded<T>(&self, operation: impl FnOnce() -> Result<T>) -> Result<T> {
        self.health().ensure_online()?;
        let result = operation();
        if let Err(error) = &result {
            // The directory the log is in now: an operation that waited out a move to another
            // directory worked on the moved files.
            self.health().observe(error);
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

    /// Makes `view` the log's, once it is checked: a view that breaks its invariants is a
    /// bug that would serve wrong offsets, and stops here, its writer's operation with it.
    fn publish(&self, view: LogView) {
        if let Err(broken) = view.check() {
            panic!(
                "{}: a log view that breaks its invariants: {broken}",
                self.topic_partition
            );
        }
        self.view.store(Arc::new(view));
    }

    fn ensure_open(&self, writer: &WriterState) -> Result<()> {
        if writer.closed {
            return Err(StorageError::LogClosed(self.topic_partition.to_string()));
        }
        Ok(())
    }

    /// Raises the high watermark (never past the LEO, never down).
    pub fn maybe_increment_high_watermark(&self, offset: Offset) -> bool {
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
    pub fn update_high_watermark(&self, offset: Offset) -> Offset {
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
    pub fn maybe_increment_log_start_offset(&self, offset: Offset) -> Result<bool> {
        let _writer = self.writer.lock();
        let view = self.view();
        if offset > view.high_watermark {
            return Err(StorageError::OffsetOutOfRange {
                offset: offset.value(),
                log_start_offset: view.log_start_offset.value(),
                log_end_offset: view.high_watermark.value(),
            });
        }
        if offset <= view.log_start_offset {
            return Ok(false);
        }
        let mut next = (*view).clone();
        next.log_start_offset = offset;
        self.truncate_epochs_from_start(&mut next);
        self.publish(next);
        self.on_log_start_moved(offset)?;
        Ok(true)
    }

    /// Stops every further write and maintenance step (they fail with
    /// [`StorageError::LogClosed`]) without flushing, before the log's directory is renamed for
    /// deletion. Readers holding the log keep reading through its open files.
    pub(crate) fn close_for_deletion(&self) {
        self.writer.lock().closed = true;
    }

    /// Flushes everything, writes final time-index entries and trims indexes. Further writes
    /// fail with [`StorageError::LogClosed`].
    pub fn close(&self) -> Result<()> {
        if self.writer.lock().closed {
            return Ok(());
        }
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
            view.active_segment().seal(&self.open_files);
            // The next clean start loads this instead of reading the log.
            self.write_producer_snapshot(view.log_end.offset, producers::SnapshotSync::Now)?;
            self.write_epochs_if_behind(&view)?;
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
