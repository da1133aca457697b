//! A segment: one `.log` file and its two indexes, holding a contiguous range of offsets from
//! its base offset. A segment knows nothing of topics or of the other segments.
//!
//! Threads: one appender at a time (the owning log's writer lock guarantees it); any number of
//! readers concurrently. The `.log` is read with positional reads; each index sits behind its
//! own read-write lock, taken briefly for a lookup or an append.
//!
//! Lock order, for every path that holds more than one: `state`, then `offset_index`, then
//! `time_index`. The `.log`'s own lock ([`RecordsFile`]) is a leaf: nothing is taken under it.

mod file_name;
mod files;
mod index;
mod index_file;
mod offset_index;
mod open_files;
mod read;
pub(crate) mod records_file;
mod recover;
mod salvage;
mod scan;
mod scrub;
mod time_index;
mod timestamps;
mod txn_index;

use std::path::{Path, PathBuf};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, RwLock};

pub use file_name::*;
pub use index::{Index, IndexEntry, IndexView};
use index_file::SealedIn;
pub use offset_index::{OFFSET_ENTRY_BYTES, OffsetIndex, OffsetPosition};
use open_files::IndexKind;
pub use open_files::{DEFAULT_MAX_OPEN_SEALED, OpenFiles};
pub use records_file::{MAX_RESERVE_AHEAD_BYTES, RESERVE_AFTER_BYTES, RecordsFile};
pub use salvage::{LostStretch, SalvagePlan, SegmentSpan, plan_salvage};
pub use scan::{Damage, DamageKind, EntrySummary, ScanOutcome};
pub use scrub::{SegmentIndexes, SegmentScrub, scrub_segment};
pub use time_index::{NO_TIMESTAMP, TIME_ENTRY_BYTES, TimeEntry, TimeIndex, TimestampOffset};
use txn_index::TxnIndex;
pub use txn_index::{AbortedSearch, AbortedTxn};

use crate::config::LogConfig;
use crate::error::{Result, StorageError};
use crate::offset::{FilePosition, Offset};

/// What the log appends to a segment, already validated: the bytes of whole batches and, per
/// batch, what the indexes need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMeta {
    /// The offset of the batch's last record, which its index entries are keyed by.
    pub last_offset: Offset,
    /// The batch's `maxTimestamp`; −1 when it has none.
    pub max_timestamp: i64,
    /// Bytes of the whole batch, log overhead included.
    pub size: u32,
}

/// Whether a fetch's first batch may exceed its byte limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstBatch {
    /// The first batch comes whole even past `max_bytes` (Kafka's `minOneMessage`: the first
    /// partition of a fetch, so a batch larger than the limits is never stuck).
    Whole,
    /// Nothing past `max_bytes`, so possibly nothing at all.
    WithinLimit,
}

/// Where a read found its first batch, and the slice of the `.log` to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSlice {
    /// Position of the batch holding the requested offset.
    pub position: FilePosition,
    /// Bytes to send from `position`; may end mid-batch.
    pub length: u64,
    /// The first batch does not fit `length` (only without min-one-batch).
    pub first_entry_incomplete: bool,
}

/// Inputs to the roll decision, as Kafka's `RollParams`.
#[derive(Debug, Clone, Copy)]
pub struct RollParams {
    /// `segment.ms`: the age at which a segment rolls, less its jitter.
    pub segment_age: std::time::Duration,
    /// `segment.bytes`: the size a segment may not grow past.
    pub segment_bytes: u64,
    /// The largest timestamp of the incoming batches (now, under `LogAppendTime`): the segment's
    /// age is this less its first batch's timestamp.
    pub max_timestamp_in_messages: i64,
    /// The last offset of the incoming batches, which must fit the segment's relative offsets.
    pub max_offset_in_messages: Offset,
    /// Bytes of the incoming batches.
    pub messages_size: u64,
    /// The current time, which ages a segment without timestamps from its creation.
    pub now_ms: i64,
}

/// What recovering a segment found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRecovery {
    /// Bytes of whole, valid batches: the `.log`'s size after recovery.
    pub valid_bytes: u64,
    /// Bytes cut from the end of the `.log`: damage, a torn tail, or preallocated space.
    pub truncated_bytes: u64,
    /// Where and why the scan stopped, when it stopped on a bad entry.
    pub corruption: Option<(u64, String)>,
    /// Where each leader epoch higher than every one before it in the segment starts, in the
    /// v2 batches kept: what recovery gives the leader-epoch cache.
    pub epoch_starts: Vec<crate::leader_epochs::EpochEntry>,
}

/// Bookkeeping of the appender, read by retention and rolls.
#[derive(Debug)]
struct AppendState {
    bytes_since_last_index_entry: u64,
    /// Largest timestamp and the offset of the batch carrying it; `None` until first needed
    /// (then read from the time index and the log after its last entry).
    max_timestamp_so_far: Option<TimestampOffset>,
    /// The first batch's max timestamp; `None` until loaded, `Some(None)` for an empty segment.
    rolling_based_timestamp: Option<Option<i64>>,
    /// When this segment object was created (or emptied), for rolls without timestamps.
    created_ms: i64,
}

/// A segment: a `.log` holding a contiguous range of offsets from its base offset, with its
/// `.index` and `.timeindex`, and a `.txnindex` once a transaction is aborted in it.
#[derive(Debug)]
pub struct Segment {
    base_offset: Offset,
    log: RecordsFile,
    offset_index: RwLock<OffsetIndex>,
    time_index: RwLock<TimeIndex>,
    txn_index: Mutex<TxnIndex>,
    state: Mutex<AppendState>,
    index_interval_bytes: u32,
    segment_index_bytes: u32,
    roll_jitter: std::time::Duration,
    /// The `.log` (and `.txnindex`) changed since the last flush: a flush of an unchanged
    /// segment costs no fsync, so shutting down or flushing thousands of idle logs stays cheap.
    dirty: AtomicBool,
    /// The offset and time indexes changed since they were last fsynced (a flush of the
    /// records alone leaves them so, see [`Segment::flush_records`]).
    indexes_dirty: AtomicBool,
    /// Held across a flush's fsyncs: a second flush of the segment waits for the first's to
    /// finish rather than find the flags clear and return while its data is not yet on disk.
    /// Taken after the log's writer lock when both are held, never before it.
    flushing: Mutex<()>,
    /// An index entry was left out for lack of disk space (reported once).
    index_entries_skipped: AtomicBool,
    /// Damage the scrubber found: its byte position and what is wrong. A leaf lock.
    known_damage: Mutex<Option<(u64, String)>>,
}

/// How a segment's `.log` is opened.
#[derive(Debug, Clone, Copy)]
enum LogFile<'a> {
    /// Now (created if missing), preallocated to this many bytes when new.
    Open(Option<u64>),
    /// When first read, as a sealed segment's counted in these open files.
    Sealed(&'a Arc<OpenFiles>),
}

/// Where a sealed segment's offset and time indexes are mapped when read; `None` for an
/// active segment.
fn sealed_in(log: &RecordsFile) -> Option<[SealedIn; 2]> {
    let (slot, files) = log.sealed_slot()?;
    let of = |kind| SealedIn {
        slot: Arc::clone(&slot),
        files: Arc::clone(&files),
        kind,
    };
    Some([of(IndexKind::Offset), of(IndexKind::Time)])
}

/// A fixed random share of `segment.jitter.ms` for one segment, capped at `segment.ms`.
fn roll_jitter(config: &LogConfig) -> std::time::Duration {
    let bound = crate::clock::kafka_ms(config.segment_jitter.min(config.segment_age));
    if bound <= 0 {
        std::time::Duration::ZERO
    } else {
        crate::clock::millis((rand::random::<u64>() % bound as u64) as i64)
    }
}

impl Segment {
    /// Creates the files of a new segment at `base_offset` (replacing nothing: the caller
    /// removed any stale files first).
    pub fn create(
        dir: &Path,
        base_offset: Offset,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<Self> {
        let preallocate = config.preallocate.then_some(config.segment_size());
        Self::open_with(
            dir,
            base_offset,
            config,
            now_ms,
            "",
            LogFile::Open(preallocate),
        )
    }

    /// Opens an existing segment's files; indexes are taken at their on-disk length.
    pub fn open(
        dir: &Path,
        base_offset: Offset,
        config: &LogConfig,
        now_ms: i64,
        suffix: &str,
    ) -> Result<Self> {
        Self::open_with(
            dir,
            base_offset,
            config,
            now_ms,
            suffix,
            LogFile::Open(None),
        )
    }

    /// Opens an existing sealed segment, its `.log` left closed until something reads it
    /// (counted in `files` while open).
    pub fn open_sealed(
        dir: &Path,
        base_offset: Offset,
        config: &LogConfig,
        now_ms: i64,
        files: &Arc<OpenFiles>,
    ) -> Result<Self> {
        Self::open_with(dir, base_offset, config, now_ms, "", LogFile::Sealed(files))
    }

    fn open_with(
        dir: &Path,
        base_offset: Offset,
        config: &LogConfig,
        now_ms: i64,
        suffix: &str,
        log: LogFile<'_>,
    ) -> Result<Self> {
        let path =
            |kind: &str| with_added_suffix(&segment_path(dir, base_offset.value(), kind), suffix);
        let existed = path(LOG_SUFFIX).exists();
        let preallocate = match log {
            LogFile::Open(preallocate) => preallocate,
            LogFile::Sealed(_) => None,
        };
        let log = match log {
            LogFile::Open(preallocate) => RecordsFile::open(&path(LOG_SUFFIX), preallocate)?,
            LogFile::Sealed(files) => RecordsFile::sealed(&path(LOG_SUFFIX), files)?,
        };
        let (offset_index, time_index) = match sealed_in(&log) {
            Some([offset, time]) => (
                OffsetIndex::open_sealed(&path(INDEX_SUFFIX), base_offset, offset)?,
                TimeIndex::open_sealed(&path(TIME_INDEX_SUFFIX), base_offset, time)?,
            ),
            None => (
                OffsetIndex::open(&path(INDEX_SUFFIX), base_offset, config.segment_index_bytes)?,
                TimeIndex::open(
                    &path(TIME_INDEX_SUFFIX),
                    base_offset,
                    config.segment_index_bytes,
                )?,
            ),
        };
        Ok(Self {
            base_offset,
            log,
            offset_index: RwLock::new(offset_index),
            time_index: RwLock::new(time_index),
            txn_index: Mutex::new(TxnIndex::new(path(TXN_INDEX_SUFFIX))),
            state: Mutex::new(AppendState {
                bytes_since_last_index_entry: 0,
                max_timestamp_so_far: None,
                rolling_based_timestamp: None,
                created_ms: now_ms,
            }),
            index_interval_bytes: config.index_interval_bytes,
            segment_index_bytes: config.segment_index_bytes,
            roll_jitter: roll_jitter(config),
            dirty: AtomicBool::new(preallocate.is_some() || !existed),
            indexes_dirty: AtomicBool::new(preallocate.is_some() || !existed),
            flushing: Mutex::new(()),
            index_entries_skipped: AtomicBool::new(false),
            known_damage: Mutex::new(None),
        })
    }

    /// The segment takes no more appends: its `.log` may be closed, and its indexes unmapped,
    /// while others are read.
    pub fn seal(&self, files: &Arc<OpenFiles>) {
        self.log.seal(files);
        self.seal_indexes(&mut self.offset_index.write(), &mut self.time_index.write());
    }

    /// A sealed segment's indexes map themselves in its slot from now on (after a change that
    /// mapped them writable); nothing for an active segment.
    fn seal_indexes(&self, offset_index: &mut OffsetIndex, time_index: &mut TimeIndex) {
        if let Some([offset, time]) = sealed_in(&self.log) {
            offset_index.seal(offset);
            time_index.seal(time);
        }
    }

    /// The offset the segment starts at (no record in it is below); its files are named after it.
    pub fn base_offset(&self) -> Offset {
        self.base_offset
    }

    fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
        self.indexes_dirty.store(true, Ordering::Release);
    }

    /// Bytes of valid data in the `.log`.
    pub fn size(&self) -> u64 {
        self.log.size()
    }
    /// Whether the `.log` holds no valid data.
    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }
    /// The segment's `.log`, for reading its bytes directly.
    pub fn log_file(&self) -> &RecordsFile {
        &self.log
    }
    /// The `.log`'s current path, with any transient suffix.
    pub fn log_path(&self) -> PathBuf {
        self.log.path()
    }
    /// This segment's share of `segment.jitter.ms`: it rolls by time that much before `segment.ms`.
    pub fn roll_jitter(&self) -> std::time::Duration {
        self.roll_jitter
    }
    /// The offset index's entries, in order.
    pub fn offset_index_entries(&self) -> Result<Vec<OffsetPosition>> {
        Ok(self.offset_index.read().view()?.all_entries())
    }
    /// The time index's entries, in order.
    pub fn time_index_entries(&self) -> Result<Vec<TimestampOffset>> {
        Ok(self.time_index.read().view()?.all_entries())
    }
    /// Whether the offset index has no room left, which rolls the segment.
    pub fn offset_index_is_full(&self) -> bool {
        self.offset_index.read().is_full()
    }
    /// Whether the time index is full but for its reserved last slot, which rolls the segment.
    pub fn time_index_is_full(&self) -> bool {
        self.time_index.read().is_full()
    }
    /// Sizes of the two index files as mapped: (offset index, time index).
    pub fn index_lengths(&self) -> (u64, u64) {
        (
            self.offset_index.read().length_bytes(),
            self.time_index.read().length_bytes(),
        )
    }

    fn fits_relative(&self, offset: Offset) -> bool {
        offset.relative_to(self.base_offset).is_some()
    }

    /// Appends whole batches. `batches` describes each batch in `bytes`, in order. Adds an
    /// index entry before a batch once more than `index.interval.bytes` were appended since the
    /// last entry.
    ///
    /// The bytes become part of the segment (readers see them, the next append goes after
    /// them) only once the indexes took their entries: an append that fails leaves the segment
    /// as it was, and the next one writes over what it wrote.
    pub fn append(&self, bytes: &[u8], batches: &[BatchMeta]) -> Result<()> {
        let Some(last) = batches.last() else {
            return Ok(());
        };
        if !self.fits_relative(last.last_offset) {
            return Err(StorageError::OffsetOverflow {
                offset: last.last_offset.value(),
                base_offset: self.base_offset.value(),
            });
        }
        let mut state = self.state.lock();
        let mut max_so_far = self.load_max_timestamp(&mut state)?;
        let start = self.log.write_after_end(bytes)?;
        self.mark_dirty();
        let mut offset_index = self.offset_index.write();
        let mut time_index = self.time_index.write();
        let mut position = start;
        let mut since_last_entry = state.bytes_since_last_index_entry;
        for batch in batches {
            if batch.max_timestamp > max_so_far.timestamp {
                max_so_far = TimestampOffset {
                    timestamp: batch.max_timestamp,
                    offset: batch.last_offset,
                };
            }
            if since_last_entry > u64::from(self.index_interval_bytes) {
                let indexed = offset_index
                    .append(batch.last_offset, FilePosition::new(position))
                    .and_then(|()| {
                        time_index.maybe_append(
                            max_so_far.timestamp,
                            max_so_far.offset,
                            TimeEntry::Regular,
                        )
                    });
                if let Err(error) = self.skip_index_entry_without_space(indexed) {
                    // Entries of this append point at bytes that will not be published. An
                    // index that took an entry owns its mapping, so taking it back reads it
                    // without failing; one that could not map itself took none.
                    offset_index.truncate_to(batches[0].last_offset)?;
                    time_index.truncate_to(batches[0].last_offset)?;
                    return Err(error);
                }
                since_last_entry = 0;
            }
            position += u64::from(batch.size);
            since_last_entry += u64::from(batch.size);
        }
        self.log.publish(position);
        if state.rolling_based_timestamp == Some(None) || start == 0 {
            state.rolling_based_timestamp =
                Some(Some(batches[0].max_timestamp).filter(|ts| *ts >= 0));
        }
        state.bytes_since_last_index_entry = since_last_entry;
        state.max_timestamp_so_far = Some(max_so_far);
        Ok(())
    }

    /// An index entry that found no disk space (or no memory to map it) is left out: the index
    /// stays correct with fewer entries (lookups walk a little further), and the append, whose
    /// bytes are already in the `.log`, stands. Said once per segment.
    fn skip_index_entry_without_space(&self, indexed: Result<()>) -> Result<()> {
        match indexed {
            Err(error @ (StorageError::NoSpace { .. } | StorageError::OutOfResources { .. })) => {
                if !self.index_entries_skipped.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        %error,
                        "index entries left out: this segment's indexes stay sparser until space is freed"
                    );
                }
                Ok(())
            }
            other => other,
        }
    }

    /// Removes every batch from the one holding `offset` on (the whole batch goes). Returns the
    /// bytes removed. The indexes are grown back to full size: the segment is active after this.
    pub fn truncate_to(&self, offset: Offset, now_ms: i64) -> Result<u64> {
        self.mark_dirty();
        let mapping = self.translate_offset(offset, FilePosition::START)?;
        {
            let mut offset_index = self.offset_index.write();
            let mut time_index = self.time_index.write();
            offset_index.truncate_to(offset)?;
            time_index.truncate_to(offset)?;
            self.txn_index.lock().truncate_to(offset)?;
            offset_index.resize(u64::from(self.segment_index_bytes))?;
            time_index.resize(u64::from(self.segment_index_bytes))?;
        }
        let truncated = match mapping {
            Some(entry) => self.log.truncate_to(entry.position)?,
            None => 0,
        };
        let mut state = self.state.lock();
        if self.size() == 0 {
            state.created_ms = now_ms;
            state.rolling_based_timestamp = Some(None);
        }
        state.bytes_since_last_index_entry = 0;
        state.max_timestamp_so_far = None;
        self.load_max_timestamp(&mut state)?;
        Ok(truncated)
    }

    /// Writes the final time-index entry and trims indexes (and a preallocated `.log`) to their
    /// valid size: done when the segment stops being active, and at close.
    pub fn on_becoming_inactive(&self) -> Result<()> {
        self.mark_dirty();
        let max = match self.max_timestamp_and_offset() {
            Ok(max) => Some(max),
            // Damage hides the largest timestamp: no final entry, and the segment closes all
            // the same (a log whose active segment is damaged still shuts down cleanly).
            Err(StorageError::Corrupt { .. }) => None,
            Err(error) => return Err(error),
        };
        let mut time_index = self.time_index.write();
        if let Some(max) = max.filter(|max| max.timestamp >= 0) {
            self.skip_index_entry_without_space(time_index.maybe_append(
                max.timestamp,
                max.offset,
                TimeEntry::Final,
            ))?;
        }
        time_index.trim_to_valid_size()?;
        drop(time_index);
        self.offset_index.write().trim_to_valid_size()?;
        self.log.trim()
    }

    /// Grows (or shrinks) both indexes to `bytes`, as the active segment's are after loading.
    pub fn resize_indexes(&self, bytes: u32) -> Result<()> {
        let offset_changed = self.offset_index.write().resize(u64::from(bytes))?;
        let time_changed = self.time_index.write().resize(u64::from(bytes))?;
        if offset_changed || time_changed {
            self.mark_dirty();
        }
        Ok(())
    }

    /// Resizes only the time index (an absent legacy time index becomes an empty file).
    pub fn resize_indexes_time_only(&self, bytes: u32) -> Result<()> {
        let mut time_index = self.time_index.write();
        let changed = time_index.resize(u64::from(bytes))?;
        if let Some([_, time]) = sealed_in(&self.log) {
            time_index.seal(time);
        }
        if changed {
            self.mark_dirty();
        }
        Ok(())
    }

    /// Kafka's sanity check of the indexes: no offset below the base, no timestamp going
    /// backwards, whole entries, no aborted transaction ending before the segment starts.
    pub fn sanity_check(&self) -> Result<()> {
        self.offset_index.read().sanity_check()?;
        self.time_index.read().sanity_check()?;
        self.txn_index.lock().sanity_check(self.base_offset)
    }

    /// Records a transaction aborted by a marker in this segment (its last offset after every
    /// one already recorded).
    pub fn append_aborted_txn(&self, txn: AbortedTxn) -> Result<()> {
        self.mark_dirty();
        self.txn_index.lock().append(txn)
    }

    /// The transactions aborted in this segment that overlap `[fetch_offset, upper_bound)`.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: Offset,
        upper_bound: Offset,
    ) -> Result<AbortedSearch> {
        self.txn_index.lock().collect(fetch_offset, upper_bound)
    }

    /// The offset of the first index entry at or after `fetch_size` bytes past `start`: a fetch
    /// of that many bytes from `start` ends below it (Kafka's `fetchUpperBoundOffset`, the
    /// bound of the aborted transactions a `read_committed` fetch reports).
    pub fn fetch_upper_bound_offset(
        &self,
        start: FilePosition,
        fetch_size: u64,
    ) -> Result<Option<Offset>> {
        let start = OffsetPosition {
            offset: self.base_offset,
            position: start,
        };
        let fetch_size = u32::try_from(fetch_size).unwrap_or(u32::MAX);
        Ok(self
            .offset_index
            .read()
            .view()?
            .fetch_upper_bound_offset(start, fetch_size)
            .map(|entry| entry.offset))
    }

    /// fsyncs the `.txnindex`, if there is one (recovery rebuilds it below the recovery point,
    /// where no flush reaches, and an index lost would let aborted data pass for committed).
    pub fn sync_txn_index(&self) -> Result<()> {
        self.txn_index.lock().fsync()
    }

    /// Every transaction aborted in this segment, in marker order.
    pub fn aborted_txns(&self) -> Result<Vec<AbortedTxn>> {
        Ok(self.txn_index.lock().entries()?.to_vec())
    }
}

#[cfg(test)]
mod tests;
