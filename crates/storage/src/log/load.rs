//! Opening a partition directory: leftover files of interrupted operations are settled, the
//! segments are opened, and (after an unclean shutdown) every segment from the one holding the
//! recovery point on is scanned, validated, re-indexed and cut at its first bad batch.
//!
//! Leftovers (the `leftovers` module), in order: `*.deleted` files are removed; `.swap` files at or above the lowest
//! `.cleaned` base belong to an interrupted split and are removed, then every `.cleaned` file
//! is removed; the remaining `.swap` segments replace the segments they overlap and lose their
//! suffix; index files without a `.log` are removed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use super::leftovers::{file_name, list_files, settle_leftovers};
use super::recovery::{recover_from, recover_listed};
use super::{Log, LogEnvironment, LogHome, LogOffsetMetadata, LogView, WriterState};
use crate::clock::Clock;
use crate::config::LogConfig;
use crate::error::{Result, StorageError};
use crate::fs::remove_if_exists;
use crate::offset::{FilePosition, Offset};
use crate::producer::ProducerState;
use crate::segment::{
    INDEX_SUFFIX, LOG_SUFFIX, OpenFiles, Segment, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
    parse_base_offset, segment_path,
};
use crate::types::{PartitionDirKind, TopicPartition, parse_partition_dir};

/// What the caller knows from the data directory's checkpoints. The default (recovery point
/// 0, unclean) recovers everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadParams {
    /// Offset below which data is known to be fsynced (`recovery-point-offset-checkpoint`).
    pub recovery_point: Offset,
    /// The checkpointed log start offset (`log-start-offset-checkpoint`), or 0.
    pub log_start_offset: Offset,
    /// The data directory had the clean-shutdown marker: skip recovery.
    pub had_clean_shutdown: bool,
    /// Which damaged segments are salvaged rather than cut.
    pub salvage: super::Salvage,
}

impl LoadParams {
    /// The recovery point of a log loaded up to `log_end_offset`: all of it after a clean
    /// shutdown, otherwise the checkpointed one (recovery made the rest whole).
    fn recovery_point_after_load(&self, log_end_offset: Offset) -> Offset {
        if self.had_clean_shutdown {
            log_end_offset
        } else {
            self.recovery_point.min(log_end_offset)
        }
    }
}

/// One segment's recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredSegment {
    /// The segment's `.log`.
    pub log_file: PathBuf,
    /// Bytes of whole, valid batches kept: the file's length after recovery.
    pub valid_bytes: u64,
    /// Bytes cut from the file's end (a torn or damaged tail, or preallocated zeros).
    pub truncated_bytes: u64,
    /// Byte position and reason when the scan stopped on a bad batch.
    pub corruption: Option<(u64, String)>,
    /// Where the leader epochs of the batches kept start, each higher than the one before.
    pub epoch_starts: Vec<crate::leader_epochs::EpochEntry>,
}

/// What loading did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Segments scanned and re-indexed.
    pub recovered: Vec<RecoveredSegment>,
    /// Segments salvaged: rewritten without their damaged stretches (before any recovery).
    pub salvaged: Vec<super::SalvagedSegment>,
    /// Segments dropped because an earlier one was cut, or the log restarted at its start offset.
    pub removed_segments: Vec<PathBuf>,
    /// Leftover files removed (`.deleted`, `.cleaned`, superseded, orphaned indexes).
    pub removed_files: Vec<PathBuf>,
    /// `.swap` files completed.
    pub completed_swaps: Vec<PathBuf>,
    /// Where the idempotent producers' state came from.
    pub producer_state: super::ProducerStateSource,
    /// Damaged bytes met while loading and left in place: by the producer state's rebuild,
    /// which goes on past them, and where the active segment's data should end (the log then
    /// takes no appends until they are cut; [`super::LogView::damaged_end`]).
    pub damaged: Vec<DamagedBytes>,
}

/// Bytes of a `.log` that are not a whole, well-formed batch, found while loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedBytes {
    /// The `.log` holding them.
    pub log_file: PathBuf,
    /// Byte position in that file where the damage starts.
    pub position: u64,
    /// What is wrong there, for messages.
    pub reason: String,
}

impl DamagedBytes {
    /// What an append, a roll, or a read past the end of a log whose end these bytes damage
    /// is refused with.
    pub fn refusal(&self) -> StorageError {
        StorageError::DamagedEnd {
            path: self.log_file.clone(),
            position: self.position,
            reason: self.reason.clone(),
        }
    }
}

impl LoadReport {
    /// Adds `damaged` to the damage found, unless the producer state's rebuild met the same
    /// place already.
    fn note_damage(&mut self, damaged: &DamagedBytes) {
        let place = (&damaged.log_file, damaged.position);
        if !self
            .damaged
            .iter()
            .any(|met| (&met.log_file, met.position) == place)
        {
            self.damaged.push(damaged.clone());
        }
    }

    /// Bytes recovery cut, summed over the recovered segments.
    pub fn truncated_bytes(&self) -> u64 {
        self.recovered
            .iter()
            .map(|segment| segment.truncated_bytes)
            .sum()
    }
}

impl Log {
    /// Opens (and if needed recovers) the log in `dir`, a `topic-partition` directory, on its
    /// own (its parent directory's health is not shared with other logs).
    pub fn open(
        dir: &Path,
        config: LogConfig,
        params: LoadParams,
        clock: Arc<dyn Clock>,
    ) -> Result<(Self, LoadReport)> {
        let environment = LogEnvironment::standalone(dir.parent().unwrap_or(dir), clock);
        Self::open_in(dir, config, params, environment, None)
    }

    /// Opens the log in `dir` as part of a data directory (its health, clock and deleter in
    /// `environment`). While segments are recovered, `segments_to_recover` (if given) counts
    /// those still to go.
    pub(crate) fn open_in(
        dir: &Path,
        config: LogConfig,
        params: LoadParams,
        environment: LogEnvironment,
        segments_to_recover: Option<&AtomicUsize>,
    ) -> Result<(Self, LoadReport)> {
        let LogEnvironment {
            clock,
            health,
            reaper,
            open_files,
            decompression,
        } = environment;
        let (topic_partition, kind) = parse_partition_dir(dir)?;
        std::fs::create_dir_all(dir).map_err(StorageError::io("create", dir))?;
        let mut report = LoadReport::default();
        settle_leftovers(dir, &mut report)?;

        let now_ms = clock.now_ms();
        if let Some(from) = params.salvage.first_offset(&params)
            && kind != PartitionDirKind::Delete
        {
            let tail_to_recovery = params.salvage == super::Salvage::Recovery;
            report.salvaged =
                super::salvage::salvage_segments(dir, from, tail_to_recovery, now_ms)?;
        }
        let (mut segments, mut needs_recovery) =
            open_segment_files(dir, &config, now_ms, &open_files, &mut report)?;
        check_indexes(&segments, kind, &params, &mut needs_recovery)?;
        recover_listed(&segments, &needs_recovery, &mut report)?;
        if kind != PartitionDirKind::Delete && !params.had_clean_shutdown {
            recover_from(
                &mut segments,
                params.recovery_point,
                &mut report,
                segments_to_recover,
            )?;
        }
        let (log_end_offset, damaged_end) = find_log_end(&segments, &params)?;
        let (segments, log_end_offset) = settle_log_start(
            dir,
            segments,
            log_end_offset,
            &params,
            &config,
            now_ms,
            &mut report,
        )?;
        let active = &segments[segments.len() - 1];
        active.resize_indexes(config.segment_index_bytes)?;
        let log_start_offset = params.log_start_offset.max(segments[0].base_offset());
        let recovery_point = params.recovery_point_after_load(log_end_offset);
        let mut producer_state = if kind == PartitionDirKind::Delete {
            ProducerState::default()
        } else {
            let bounds = (log_start_offset, log_end_offset);
            load_producer_state(dir, &segments, bounds, &params, &mut report)?
        };
        super::write::forget_beyond(&mut producer_state, config.max_producers, &topic_partition);
        let bounds = (log_start_offset, log_end_offset);
        let how = (kind, !params.had_clean_shutdown);
        let epochs = super::leader_epochs::load(dir, &segments, bounds, &report, how)?;
        if let Some(damaged) = &damaged_end {
            report.note_damage(damaged);
        }
        let log_end = log_end_in(active, log_end_offset, damaged_end.as_ref());
        let view = LogView {
            log_end,
            segments: Arc::new(segments),
            log_start_offset,
            // A single-replica log commits everything it holds.
            high_watermark: log_end_offset,
            recovery_point,
            damaged_end: damaged_end.map(Arc::new),
            first_unstable_offset: producer_state.first_unstable_offset(),
            home: Arc::new(LogHome {
                dir: dir.to_path_buf(),
                health,
            }),
            leader_epochs: Arc::new(epochs.epochs),
            leader_epoch: epochs.leader_epoch,
        };
        view.check().map_err(|broken| {
            StorageError::Fatal(format!("{topic_partition}: loaded a view that {broken}"))
        })?;
        let shared = (reaper, open_files, decompression);
        let log = Self::assemble(topic_partition, config, clock, view, producer_state, shared);
        log.set_epochs_unwritten(epochs.unwritten);
        Ok((log, report))
    }

    /// The log made of what loading found, with what it shares with its directory's logs.
    fn assemble(
        topic_partition: TopicPartition,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        view: LogView,
        producer_state: ProducerState,
        shared: SharedParts,
    ) -> Self {
        let (reaper, open_files, decompression) = shared;
        Self {
            topic_partition,
            config: ArcSwap::from_pointee(config),
            clock: Arc::clone(&clock),
            writer: Mutex::new(WriterState {
                last_flush_ms: clock.now_ms(),
                closed: false,
            }),
            view: ArcSwap::from_pointee(view),
            reaper,
            open_files,
            decompression,
            producers: Mutex::new(producer_state),
            verifications: Mutex::default(),
            reported_damage: Mutex::new(std::collections::HashSet::new()),
            flush_turn: Mutex::new(()),
            epochs_unwritten: Default::default(),
        }
    }

    /// Creates a new, empty log for `topic_partition` under `data_dir`.
    pub fn create(
        data_dir: &Path,
        topic_partition: &TopicPartition,
        config: LogConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        let environment = LogEnvironment::standalone(data_dir, clock);
        Self::create_in(data_dir, topic_partition, config, environment)
    }

    /// Creates a new, empty log in a data directory (its health, clock and deleter in
    /// `environment`). The partition directory's entry is made durable before this returns.
    pub(crate) fn create_in(
        data_dir: &Path,
        topic_partition: &TopicPartition,
        config: LogConfig,
        environment: LogEnvironment,
    ) -> Result<Self> {
        Self::create_named_in(data_dir, &topic_partition.dir_name(), config, environment)
    }

    /// Creates a new, empty log in `data_dir` under `dir_name`: a partition's plain name, or a
    /// `-future` name for a copy of a log moving to this data directory.
    pub(crate) fn create_named_in(
        data_dir: &Path,
        dir_name: &str,
        config: LogConfig,
        environment: LogEnvironment,
    ) -> Result<Self> {
        let dir = data_dir.join(dir_name);
        std::fs::create_dir_all(&dir).map_err(StorageError::io("create", &dir))?;
        let params = LoadParams {
            had_clean_shutdown: true,
            ..LoadParams::default()
        };
        let (log, _) = Self::open_in(&dir, config, params, environment, None)?;
        crate::fs::fsync_dir(data_dir)?;
        Ok(log)
    }
}

/// What a log shares with the other logs of its directory: the deleter, the open sealed
/// segments' files and the decompression memory.
type SharedParts = (
    Option<Arc<dyn super::SegmentReaper>>,
    Arc<OpenFiles>,
    Arc<crate::decompression::DecompressionMemory>,
);

/// A partition's segments by base offset, while it loads.
type SegmentsByBase = BTreeMap<Offset, Arc<Segment>>;

/// Opens every segment in `dir` by its `.log` (every segment but the newest sealed: its `.log`
/// is opened when read), removing index files without a `.log`. Returns the segments by base
/// offset and those without an offset index, which recovery rebuilds.
fn open_segment_files(
    dir: &Path,
    config: &LogConfig,
    now_ms: i64,
    open_files: &Arc<OpenFiles>,
    report: &mut LoadReport,
) -> Result<(SegmentsByBase, Vec<Offset>)> {
    let mut segments: BTreeMap<Offset, Arc<Segment>> = BTreeMap::new();
    let mut needs_recovery = Vec::new();
    let files = list_files(dir)?;
    let newest = files
        .iter()
        .filter(|path| file_name(path).ends_with(LOG_SUFFIX))
        .filter_map(|path| parse_base_offset(file_name(path)))
        .max();
    for path in files {
        let name = file_name(&path);
        let Some(base) = parse_base_offset(name) else {
            continue;
        };
        let base = Offset::new(base);
        if name.ends_with(INDEX_SUFFIX)
            || name.ends_with(TIME_INDEX_SUFFIX)
            || name.ends_with(TXN_INDEX_SUFFIX)
        {
            if !segment_path(dir, base.value(), LOG_SUFFIX).exists() {
                remove_if_exists(&path)?;
                tracing::warn!(path = %path.display(), "removed an orphaned index file");
                report.removed_files.push(path);
            }
            continue;
        }
        if !name.ends_with(LOG_SUFFIX) {
            continue;
        }
        let index_existed = segment_path(dir, base.value(), INDEX_SUFFIX).exists();
        let time_index_existed = segment_path(dir, base.value(), TIME_INDEX_SUFFIX).exists();
        let segment = if Some(base.value()) == newest {
            Segment::open(dir, base, config, now_ms, "")?
        } else {
            Segment::open_sealed(dir, base, config, now_ms, open_files)?
        };
        if !time_index_existed && index_existed {
            // Data from before time indexes existed: an empty time index, as Kafka makes.
            segment.resize_indexes_time_only(0)?;
        }
        if !index_existed {
            needs_recovery.push(base);
        }
        segments.insert(base, Arc::new(segment));
    }
    Ok((segments, needs_recovery))
}

/// As Kafka's loader: an index that fails its sanity check (entries that end below the
/// segment's base, timestamps going back, a partial entry) is rebuilt from the `.log`, also on
/// a clean start that recovers nothing else. Segments the recovery scans anyway are not
/// checked: after a crash an active segment's preallocated index fails the check as a matter
/// of course, and is rebuilt all the same. Adds the segments to rebuild to `needs_recovery`.
fn check_indexes(
    segments: &BTreeMap<Offset, Arc<Segment>>,
    kind: PartitionDirKind,
    params: &LoadParams,
    needs_recovery: &mut Vec<Offset>,
) -> Result<()> {
    let checked_below = match kind {
        PartitionDirKind::Delete => Offset::new(i64::MIN),
        _ if params.had_clean_shutdown => Offset::MAX,
        _ => segments
            .range(..=params.recovery_point)
            .next_back()
            .map_or(Offset::new(i64::MIN), |(base, _)| *base),
    };
    for (base, segment) in segments.range(..checked_below) {
        if needs_recovery.contains(base) {
            continue;
        }
        match segment.sanity_check() {
            Ok(()) => {}
            Err(error @ StorageError::Corrupt { .. }) => {
                tracing::warn!(path = %segment.log_path().display(), %error, "a damaged index: the segment is recovered and its indexes rebuilt");
                needs_recovery.push(*base);
            }
            Err(other) => return Err(other),
        }
    }
    Ok(())
}

/// The log end offset the segments give, and the damage that ends the active segment's data
/// early when the load recovered nothing.
fn find_log_end(
    segments: &BTreeMap<Offset, Arc<Segment>>,
    params: &LoadParams,
) -> Result<(Offset, Option<DamagedBytes>)> {
    let Some(last) = segments.values().next_back() else {
        return Ok((params.log_start_offset, None));
    };
    Ok(match last.read_next_offset()? {
        (next, None) => (next, None),
        (next, Some((position, reason))) => {
            // Only a load without recovery gets here: recovery cuts such damage.
            let damaged = DamagedBytes {
                log_file: last.log_path(),
                position,
                reason,
            };
            tracing::error!(
                path = %damaged.log_file.display(),
                position = damaged.position,
                reason = %damaged.reason,
                "the active segment is damaged before the end of its data: the log serves what lies before the damage and takes no appends until `ferrolog recover --force` cuts it"
            );
            // The data below the checkpointed start is gone already; nothing is readable, and
            // nothing is deleted.
            (next.max(params.log_start_offset), Some(damaged))
        }
    })
}

/// Restarts the log at the checkpointed log start when its data ends below it (corruption cut
/// it) or it has no segment. Returns the segments, never empty, and the log end offset.
fn settle_log_start(
    dir: &Path,
    mut segments: BTreeMap<Offset, Arc<Segment>>,
    mut log_end_offset: Offset,
    params: &LoadParams,
    config: &LogConfig,
    now_ms: i64,
    report: &mut LoadReport,
) -> Result<(Vec<Arc<Segment>>, Offset)> {
    if log_end_offset < params.log_start_offset && !segments.is_empty() {
        for segment in std::mem::take(&mut segments).into_values() {
            report.removed_segments.push(segment.log_path());
            segment.delete_files()?;
        }
        log_end_offset = params.log_start_offset;
    }
    if segments.is_empty() {
        let start = params.log_start_offset;
        for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
            remove_if_exists(&segment_path(dir, start.value(), suffix))?;
        }
        segments.insert(
            start,
            Arc::new(Segment::create(dir, start, config, now_ms)?),
        );
        log_end_offset = start;
    }
    Ok((segments.into_values().collect(), log_end_offset))
}

/// Rebuilds the producer state from its snapshot and the segments after it, refilling the
/// transaction indexes that recovery emptied (and syncing them).
fn load_producer_state(
    dir: &Path,
    segments: &[Arc<Segment>],
    (log_start_offset, log_end_offset): (Offset, Offset),
    params: &LoadParams,
    report: &mut LoadReport,
) -> Result<ProducerState> {
    let recovered_here = |segment: &Arc<Segment>| {
        let path = segment.log_path();
        report
            .recovered
            .iter()
            .find(|recovered| recovered.log_file == path)
            .map(|recovered| recovered.truncated_bytes)
    };
    let reindexed: std::collections::HashSet<Offset> = segments
        .iter()
        .filter(|segment| recovered_here(segment).is_some())
        .map(|segment| segment.base_offset())
        .collect();
    // A snapshot above a segment recovery cut, or salvage rewrote (now, or before a crash
    // whose swap this load completed), may hold what was lost.
    let swapped_by_salvage = report.completed_swaps.iter().filter(|path| {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        crate::segment::parse_base_offset(name).is_some_and(|base| {
            crate::segment::segment_path(dir, base, super::SALVAGED_SUFFIX).exists()
        })
    });
    let salvaged = report
        .salvaged
        .iter()
        .map(|segment| &segment.log_file)
        .chain(swapped_by_salvage)
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            crate::segment::parse_base_offset(name).map(Offset::new)
        });
    let cut = segments
        .iter()
        .filter(|segment| recovered_here(segment).is_some_and(|cut| cut > 0))
        .map(|segment| segment.base_offset())
        .chain(salvaged)
        .min();
    let (state, source, damaged) = super::producers::load(
        dir,
        segments,
        log_start_offset,
        log_end_offset,
        params.had_clean_shutdown,
        &super::producers::Reindex {
            segments: &reindexed,
            cut,
        },
    )?;
    let mut synced = false;
    for segment in segments
        .iter()
        .filter(|s| reindexed.contains(&s.base_offset()))
    {
        segment.sync_txn_index()?;
        synced |= segment.txn_index_path().exists();
    }
    if synced {
        crate::fs::fsync_dir(dir)?;
    }
    report.producer_state = source;
    report.damaged = damaged;
    Ok(state)
}

/// The log end of a loaded log: `offset`, after the active segment's data, or where damage
/// found in it starts (reads stop there).
fn log_end_in(
    active: &Segment,
    offset: Offset,
    damaged_end: Option<&DamagedBytes>,
) -> LogOffsetMetadata {
    LogOffsetMetadata {
        offset,
        segment_base_offset: active.base_offset(),
        position: FilePosition::new(damaged_end.map_or(active.size(), |damaged| damaged.position)),
    }
}
