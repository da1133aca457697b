//! Salvage while a log loads, when asked for ([`Salvage`]): each damaged segment is rewritten
//! with every valid entry it holds, before and after the damage ([`plan_salvage`]), instead of
//! being cut at its first bad entry with every later segment dropped, as recovery does. The
//! offsets stay where they were; what is lost is a gap, as compaction leaves, and is listed in
//! a `<base offset>.salvaged` file beside the segment, which the loader does not read.
//!
//! The rewrite is crash-safe as the cleaner's swap: the kept entries go to `<base>.log.cleaned`
//! (fsynced), which is renamed `.log.swap` (the directory fsynced); only then are the old
//! segment's indexes removed and the swap renamed over its `.log`. A crash before the swap
//! leaves the old segment whole (the next load removes the `.cleaned` file); after it, the
//! next load completes the swap. The new `.log` has no indexes, so recovery rebuilds them as
//! for any segment without; and the producer state is rebuilt from below the segment, by
//! replay, as after a cut (snapshots above it may remember what was lost), which refills its
//! transaction index from the markers it kept.
//!
//! A segment of which nothing survives is removed, unless it is the log's last: that one is
//! emptied, so the log still ends where its kept data does.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::leftovers::{file_name, list_files};
use crate::error::{Result, StorageError};
use crate::fs::{fsync_dir, remove_if_exists, rename};
use crate::offset::FilePosition;
use crate::offset::Offset;
use crate::segment::{
    CLEANED_SUFFIX, INDEX_SUFFIX, IndexEntry, LOG_SUFFIX, LostStretch, OffsetPosition, SWAP_SUFFIX,
    SalvagePlan, SegmentIndexes, SegmentSpan, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, TimestampOffset,
    parse_base_offset, plan_salvage, scrub_segment, segment_path, with_added_suffix,
};

/// Which segments a load salvages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Salvage {
    /// None: damage is cut as Kafka cuts it (recovery) or left for readers to meet.
    #[default]
    Off,
    /// After an unclean stop, the segments recovery reads (from the one holding the recovery
    /// point on) are salvaged rather than cut (`ferrolog.recovery.salvage`).
    Recovery,
    /// Every segment is read whole and any damage salvaged (`ferrolog recover --salvage`).
    Everything,
}

impl Salvage {
    /// The offset from which a load with these `params` salvages (the segment holding it and
    /// every later one), or `None` for none.
    pub(super) fn first_offset(self, params: &super::LoadParams) -> Option<i64> {
        match self {
            Self::Off => None,
            Self::Recovery if params.had_clean_shutdown => None,
            Self::Recovery => Some(params.recovery_point.value()),
            Self::Everything => Some(i64::MIN),
        }
    }
}

/// The suffix of the file listing what salvage dropped from a segment.
pub const SALVAGED_SUFFIX: &str = ".salvaged";

/// What salvage did to one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalvagedSegment {
    /// The segment's `.log`.
    pub log_file: PathBuf,
    /// The stretches dropped, with the offsets that lay there.
    pub lost: Vec<LostStretch>,
    /// Bytes of entries kept.
    pub kept_bytes: u64,
    /// Whether nothing survived and the segment was removed.
    pub removed: bool,
    /// Whether its data was whole but its indexes disagreed with it: they were removed, and
    /// the load rebuilt them.
    pub indexes_rebuilt: bool,
}

/// A transaction still open after a salvage that began before an offset the salvage dropped:
/// its COMMIT or ABORT marker may have been among the dropped batches, and until it is ended
/// (`kafka-transactions abort`) it holds back the last stable offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PossiblyUnended {
    /// The transaction's producer.
    pub producer_id: i64,
    /// Its first offset, which `kafka-transactions abort --start-offset` names.
    pub first_offset: i64,
}

impl super::Log {
    /// The transactions open in this log that began before the last offset `salvaged`
    /// dropped, by first offset.
    pub fn possibly_unended(&self, salvaged: &[SalvagedSegment]) -> Vec<PossiblyUnended> {
        let last_lost = salvaged
            .iter()
            .flat_map(|segment| &segment.lost)
            .map(|stretch| {
                stretch
                    .offsets
                    .as_ref()
                    .map_or(i64::MAX, |offsets| offsets.end)
            })
            .max();
        let Some(last_lost) = last_lost else {
            return Vec::new();
        };
        let mut open: Vec<PossiblyUnended> = self
            .producer_state()
            .open_txns()
            .filter(|(first, _)| first.value() < last_lost)
            .map(|(first, producer_id)| PossiblyUnended {
                producer_id,
                first_offset: first.value(),
            })
            .collect();
        open.sort_unstable_by_key(|txn| txn.first_offset);
        open
    }

    /// Logs each transaction [`Self::possibly_unended`] finds, with the command that ends it.
    pub fn warn_possibly_unended(&self, salvaged: &[SalvagedSegment]) {
        let tp = &self.topic_partition;
        for txn in self.possibly_unended(salvaged) {
            tracing::warn!(
                partition = %tp,
                producer_id = txn.producer_id,
                first_offset = txn.first_offset,
                "a transaction open since before what salvage dropped may have lost its marker; if so, end it with `kafka-transactions --bootstrap-server ... abort --topic {} --partition {} --start-offset {}`",
                tp.topic,
                tp.partition,
                txn.first_offset
            );
        }
    }
}

/// Salvages every damaged segment of the partition directory `dir` (whose leftovers are
/// settled and whose segments are not open yet) that holds offsets at or above `from`.
/// With `tail_to_recovery`, a loss only at the end of the log's last segment (a torn write) is
/// left to recovery's cut.
pub(super) fn salvage_segments(
    dir: &Path,
    from: i64,
    tail_to_recovery: bool,
    now_ms: i64,
) -> Result<Vec<SalvagedSegment>> {
    let mut bases: Vec<i64> = list_files(dir)?
        .iter()
        .map(|path| file_name(path))
        .filter(|name| name.ends_with(LOG_SUFFIX))
        .filter_map(parse_base_offset)
        .collect();
    bases.sort_unstable();
    let mut salvaged = Vec::new();
    for (index, base) in bases.iter().enumerate() {
        let span = SegmentSpan {
            base_offset: *base,
            end_offset: bases.get(index + 1).copied(),
        };
        if span.end_offset.is_some_and(|end| end <= from) {
            continue;
        }
        if let Some(done) = salvage_one(dir, span, tail_to_recovery, now_ms)? {
            salvaged.push(done);
        }
    }
    Ok(salvaged)
}

fn salvage_one(
    dir: &Path,
    span: SegmentSpan,
    tail_to_recovery: bool,
    now_ms: i64,
) -> Result<Option<SalvagedSegment>> {
    let log = segment_path(dir, span.base_offset, LOG_SUFFIX);
    let data = std::fs::read(&log).map_err(StorageError::io("read", &log))?;
    let hints = index_hints(dir, span.base_offset);
    let plan = plan_salvage(&data, span, &hints);
    if plan.is_intact() {
        return rebuild_disagreeing_indexes(dir, span, &log, &hints);
    }
    let torn_tail_only = span.end_offset.is_none()
        && plan.lost.len() == 1
        && plan.lost[0].bytes.end == data.len() as u64;
    if tail_to_recovery && torn_tail_only {
        return Ok(None);
    }
    for stretch in &plan.lost {
        tracing::warn!(
            path = %log.display(),
            bytes = ?stretch.bytes,
            offsets = ?stretch.offsets,
            reason = %stretch.reason,
            "salvage drops a damaged stretch of a segment and keeps the entries after it"
        );
    }
    write_lost_list(dir, span.base_offset, &log, &plan, now_ms)?;
    let removed = plan.kept.is_empty() && span.end_offset.is_some();
    if removed {
        remove_segment(dir, span.base_offset)?;
    } else {
        rewrite(dir, span.base_offset, &data, &plan)?;
    }
    Ok(Some(SalvagedSegment {
        log_file: log,
        kept_bytes: plan.kept_bytes(),
        lost: plan.lost,
        removed,
        indexes_rebuilt: false,
    }))
}

/// The offset index's entries, as hints for finding valid entries past damage (an index that
/// cannot be read gives none: the hints are optional).
fn index_hints(dir: &Path, base: i64) -> Vec<(i64, u64)> {
    let path = segment_path(dir, base, INDEX_SUFFIX);
    let Ok(bytes) = std::fs::read(&path) else {
        return Vec::new();
    };
    bytes
        .chunks_exact(OffsetPosition::BYTES)
        .map(|entry| OffsetPosition::decode(entry, Offset::new(base)))
        .filter(|entry| entry.position.bytes() > 0)
        .map(|entry| (entry.offset.value(), entry.position.bytes()))
        .collect()
}

/// A sealed segment whose data is whole but whose indexes disagree with it (as the scrubber
/// checks them: `offsets`, the offset index's entries, and the time index's) loses its
/// indexes, which the load then rebuilds from the data.
fn rebuild_disagreeing_indexes(
    dir: &Path,
    span: SegmentSpan,
    log: &Path,
    offsets: &[(i64, u64)],
) -> Result<Option<SalvagedSegment>> {
    if span.end_offset.is_none() {
        return Ok(None);
    }
    let indexes = SegmentIndexes {
        offsets: offsets
            .iter()
            .map(|(offset, position)| OffsetPosition {
                offset: Offset::new(*offset),
                position: FilePosition::new(*position),
            })
            .collect(),
        times: time_entries(dir, span.base_offset),
    };
    let Some(found) = scrub_segment(log, span, &indexes, |_| true)? else {
        return Ok(None);
    };
    let Some((position, reason)) = found.index_problem else {
        return Ok(None);
    };
    tracing::warn!(path = %log.display(), position, %reason, "a segment's indexes disagree with its data; they are rebuilt");
    for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
        remove_if_exists(&segment_path(dir, span.base_offset, suffix))?;
    }
    fsync_dir(dir)?;
    Ok(Some(SalvagedSegment {
        log_file: log.to_path_buf(),
        lost: Vec::new(),
        kept_bytes: found.bytes,
        removed: false,
        indexes_rebuilt: true,
    }))
}

/// The time index's entries, without the zero entries a preallocated file ends with (none
/// when it cannot be read: the check then names every entry the data has as missing).
fn time_entries(dir: &Path, base: i64) -> Vec<TimestampOffset> {
    let path = segment_path(dir, base, TIME_INDEX_SUFFIX);
    let Ok(bytes) = std::fs::read(&path) else {
        return Vec::new();
    };
    let mut entries: Vec<&[u8]> = bytes.chunks_exact(TimestampOffset::BYTES).collect();
    while entries
        .last()
        .is_some_and(|entry| entry.iter().all(|byte| *byte == 0))
    {
        entries.pop();
    }
    entries
        .into_iter()
        .map(|entry| TimestampOffset::decode(entry, Offset::new(base)))
        .collect()
}

/// Replaces the segment's `.log` with its kept entries, through a `.cleaned` then `.swap`
/// file; its indexes go before the swap completes.
fn rewrite(dir: &Path, base: i64, data: &[u8], plan: &SalvagePlan) -> Result<()> {
    let log = segment_path(dir, base, LOG_SUFFIX);
    let cleaned = with_added_suffix(&log, CLEANED_SUFFIX);
    let swap = with_added_suffix(&log, SWAP_SUFFIX);
    let mut file = File::create(&cleaned).map_err(StorageError::io("create", &cleaned))?;
    for range in &plan.kept {
        let bytes = &data[range.start as usize..range.end as usize];
        file.write_all(bytes)
            .map_err(StorageError::io("write", &cleaned))?;
    }
    file.sync_all()
        .map_err(StorageError::io("fsync", &cleaned))?;
    drop(file);
    rename(&cleaned, &swap).map_err(StorageError::io("rename", &cleaned))?;
    fsync_dir(dir)?;
    for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX] {
        remove_if_exists(&segment_path(dir, base, suffix))?;
    }
    rename(&swap, &log).map_err(StorageError::io("rename", &swap))?;
    fsync_dir(dir)
}

/// Removes a segment of which nothing survived: its indexes, then its `.log`.
fn remove_segment(dir: &Path, base: i64) -> Result<()> {
    for suffix in [
        INDEX_SUFFIX,
        TIME_INDEX_SUFFIX,
        TXN_INDEX_SUFFIX,
        LOG_SUFFIX,
    ] {
        remove_if_exists(&segment_path(dir, base, suffix))?;
    }
    fsync_dir(dir)
}

/// Adds the stretches `plan` drops to the segment's `.salvaged` list (made durable before the
/// segment changes, so nothing is dropped unrecorded).
pub(super) fn write_lost_list(
    dir: &Path,
    base: i64,
    log: &Path,
    plan: &SalvagePlan,
    now_ms: i64,
) -> Result<()> {
    let path = segment_path(dir, base, SALVAGED_SUFFIX);
    let mut text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(StorageError::io("read", &path)(error)),
    };
    text.push_str(&format!(
        "# salvage of {} at {now_ms} ms: {} bytes kept\n",
        log.display(),
        plan.kept_bytes()
    ));
    for stretch in &plan.lost {
        let offsets = match &stretch.offsets {
            Some(offsets) if offsets.is_empty() => "none".to_owned(),
            Some(offsets) => format!("{}-{}", offsets.start, offsets.end - 1),
            None => "unknown (the log's end)".to_owned(),
        };
        text.push_str(&format!(
            "lost offsets {offsets} at bytes {}-{}: {}\n",
            stretch.bytes.start, stretch.bytes.end, stretch.reason
        ));
    }
    crate::fs::atomic_write(&path, text.as_bytes())
}
