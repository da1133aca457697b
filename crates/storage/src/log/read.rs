//! Reads: fetches as file slices, and offsets by timestamp. Readers take no lock; they work
//! from one [`LogView`] snapshot throughout.

use std::ops::ControlFlow;
use std::sync::Arc;

use ferrolog_records::DEFAULT_MAX_DECOMPRESSED_BYTES;

use super::{Log, LogView};
use crate::error::{Result, StorageError};
use crate::offset::{FilePosition, Offset};
pub use crate::segment::FirstBatch;
use crate::segment::{AbortedTxn, Segment, TimestampOffset};

/// An offset with where it lies on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsetMetadata {
    /// The offset itself.
    pub offset: Offset,
    /// Base offset of the segment holding it.
    pub segment_base_offset: Offset,
    /// Byte position in that segment's `.log`.
    pub position: FilePosition,
}

/// How far a fetch may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchBound {
    /// Up to the log end offset (replicas, tools).
    LogEnd,
    /// Up to the high watermark (consumers).
    HighWatermark,
    /// Up to the last stable offset, with the aborted transactions of the range
    /// (`read_committed` consumers).
    LastStable,
}

/// A fetch request against one log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchParams {
    /// The offset to read from; the slice starts at the batch holding it.
    pub start_offset: Offset,
    /// Bytes the slice may cover at most (the first batch aside, see [`FirstBatch`]).
    pub max_bytes: u64,
    /// How far the read may go.
    pub bound: FetchBound,
    /// Whether the first batch comes whole past `max_bytes`.
    pub first_batch: FirstBatch,
}

/// Where a log's readable range starts and ends, all from one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watermarks {
    /// The first offset that can be read.
    pub log_start_offset: Offset,
    /// The end of the committed data: consumers read up to it.
    pub high_watermark: Offset,
    /// Where `read_committed` consumers stop: the first offset of the earliest open
    /// transaction (never below the log start), or the high watermark if that is lower or no
    /// transaction is open.
    pub last_stable_offset: Offset,
    /// The offset the next appended record gets.
    pub log_end_offset: Offset,
}

impl Watermarks {
    pub(super) fn of(view: &LogView) -> Self {
        Self {
            log_start_offset: view.log_start_offset,
            high_watermark: view.high_watermark,
            last_stable_offset: view.last_stable_offset(),
            log_end_offset: view.log_end.offset,
        }
    }
}

/// A byte range of one segment's `.log`, to be sent as it lies. Holding it keeps the file open:
/// a segment the log removes, or whose file is closed meanwhile (a sealed segment's, see
/// [`crate::segment::OpenFiles`]), can still be read through it.
#[derive(Debug, Clone)]
pub struct FileSlice {
    segment: Arc<Segment>,
    file: Arc<std::fs::File>,
    position: FilePosition,
    length: u64,
}

impl FileSlice {
    /// Where the range starts in the file.
    pub fn position(&self) -> FilePosition {
        self.position
    }
    /// Bytes in the range.
    pub fn len(&self) -> u64 {
        self.length
    }
    /// Whether the range holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }
    /// The `.log` file, open for reading (`pread`, `sendfile`); only the range is the slice's.
    pub fn file(&self) -> &std::fs::File {
        &self.file
    }
    /// The `.log`'s path, for messages.
    pub fn path(&self) -> std::path::PathBuf {
        self.segment.log_path()
    }
    /// Copies the range's bytes out of the file.
    pub fn read_bytes(&self) -> Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0u8; usize::try_from(self.length).unwrap_or(usize::MAX)];
        self.file
            .read_exact_at(&mut bytes, self.position.bytes())
            .map_err(StorageError::io("read", self.path()))?;
        Ok(bytes)
    }
}

/// What a fetch found: a slice of one segment's `.log`, handed on without decoding, and the
/// log's watermarks from the same snapshot the slice was cut from.
#[derive(Debug, Clone)]
pub struct FetchData {
    /// Where the fetch started (the requested offset; the position of the batch holding it).
    pub offset_metadata: LogOffsetMetadata,
    /// The bytes to send; `None` when there is nothing to return.
    pub slice: Option<FileSlice>,
    /// The slice ends inside its first batch: `max_bytes` was smaller than it (only with
    /// [`FirstBatch::WithinLimit`]).
    pub first_entry_incomplete: bool,
    /// The log's watermarks, from the snapshot the slice was cut from.
    pub watermarks: Watermarks,
    /// For a [`FetchBound::LastStable`] read: the aborted transactions that overlap the range
    /// read, from the fetch offset to an offset past its last batch (Kafka's bound from the
    /// offset index, so the list is Kafka's), in marker order; `None` for other reads, and
    /// for a read past every segment, as Kafka leaves it out then.
    pub aborted_txns: Option<Vec<AbortedTxn>>,
}

impl FetchData {
    /// Bytes the slice covers.
    pub fn len(&self) -> u64 {
        self.slice.as_ref().map_or(0, FileSlice::len)
    }
    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The `.log` the slice is in, when there is one.
    pub fn segment_path(&self) -> Option<std::path::PathBuf> {
        self.slice.as_ref().map(FileSlice::path)
    }
    /// Copies the slice's bytes out of the file.
    pub fn read_bytes(&self) -> Result<Vec<u8>> {
        self.slice
            .as_ref()
            .map_or_else(|| Ok(Vec::new()), FileSlice::read_bytes)
    }
}

/// ListOffsets' special timestamps.
pub mod special_timestamps {
    /// −1: the log end offset.
    pub const LATEST: i64 = -1;
    /// −2: the log start offset.
    pub const EARLIEST: i64 = -2;
    /// −3: the record with the largest timestamp (KIP-734).
    pub const MAX_TIMESTAMP: i64 = -3;
}

impl Log {
    /// Reads from `params.start_offset`: out-of-range offsets fail; at or past the bound the
    /// result is empty; otherwise a slice starting at the batch holding the offset.
    pub fn read(&self, params: FetchParams) -> Result<FetchData> {
        self.guarded(|| {
            let view = self.view();
            let start = params.start_offset;
            if start > view.log_end.offset
                && let Some(damaged) = &view.damaged_end
            {
                // A consumer already past the damage: the offset may well exist beyond it, so
                // it is told of the damage (and retries), not sent back to the start.
                return Err(damaged.refusal());
            }
            if start < view.log_start_offset || start > view.log_end.offset {
                return Err(StorageError::OffsetOutOfRange {
                    offset: start.value(),
                    log_start_offset: view.log_start_offset.value(),
                    log_end_offset: view.log_end.offset.value(),
                });
            }
            let watermarks = Watermarks::of(&view);
            let committed = params.bound == FetchBound::LastStable;
            let bound = match params.bound {
                FetchBound::LogEnd => view.log_end,
                FetchBound::HighWatermark => offset_metadata(&view, view.high_watermark)?,
                FetchBound::LastStable => offset_metadata(&view, watermarks.last_stable_offset)?,
            };
            let empty = |metadata, aborted_txns| FetchData {
                offset_metadata: metadata,
                slice: None,
                first_entry_incomplete: false,
                watermarks,
                aborted_txns,
            };
            if start >= bound.offset {
                let metadata = if start == bound.offset {
                    bound
                } else {
                    offset_metadata(&view, start)?
                };
                // Nothing to read yet: an empty list of aborted transactions, as Kafka's.
                return Ok(empty(metadata, committed.then(Vec::new)));
            }
            let Some(first_index) = view.floor_segment_index(start) else {
                return Ok(empty(offset_metadata(&view, start)?, None));
            };
            for (index, segment) in view.segments.iter().enumerate().skip(first_index) {
                let max_position = if segment.base_offset() == bound.segment_base_offset {
                    Some(bound.position)
                } else if segment.base_offset() > bound.segment_base_offset {
                    None
                } else {
                    Some(FilePosition::new(segment.size()))
                };
                if max_position.is_none() {
                    break;
                }
                if let Some(slice) =
                    segment.read(start, params.max_bytes, max_position, params.first_batch)?
                {
                    let aborted_txns = if committed {
                        Some(aborted_txns_of_read(
                            &view,
                            index,
                            start,
                            slice.position,
                            slice.length,
                        )?)
                    } else {
                        None
                    };
                    return Ok(FetchData {
                        offset_metadata: LogOffsetMetadata {
                            offset: start,
                            segment_base_offset: segment.base_offset(),
                            position: slice.position,
                        },
                        first_entry_incomplete: slice.first_entry_incomplete,
                        slice: Some(FileSlice {
                            segment: Arc::clone(segment),
                            file: segment.log_file().file()?,
                            position: slice.position,
                            length: slice.length,
                        }),
                        watermarks,
                        aborted_txns,
                    });
                }
            }
            Ok(empty(offset_metadata(&view, start)?, None))
        })
    }

    /// ListOffsets: the earliest (−2), latest (−1) or max-timestamp (−3) offset, or the first
    /// record whose timestamp is ≥ `timestamp`. `None` when no record qualifies.
    pub fn fetch_offset_by_timestamp(&self, timestamp: i64) -> Result<Option<TimestampOffset>> {
        self.guarded(|| {
            let view = self.view();
            let at = |offset| TimestampOffset {
                timestamp: -1,
                offset,
            };
            match timestamp {
                special_timestamps::EARLIEST => return Ok(Some(at(view.log_start_offset))),
                special_timestamps::LATEST => return Ok(Some(at(view.log_end.offset))),
                special_timestamps::MAX_TIMESTAMP => return max_timestamp_offset(&view),
                _ => {}
            }
            for segment in view.segments.iter() {
                if segment.max_timestamp()? < timestamp {
                    continue;
                }
                if let Some(found) =
                    segment.find_offset_by_timestamp(timestamp, view.log_start_offset)?
                {
                    return Ok(Some(found));
                }
            }
            Ok(None)
        })
    }
}

impl Log {
    /// The aborted transactions the cleaner must know of for the segment based at
    /// `segment_base`: those starting below `upper_bound` found in that segment's index and the
    /// later ones', until an index says no later one holds more (Kafka's
    /// `collectAbortedTransactions`, which filters on the log start, not the segment base).
    pub(crate) fn aborted_txns_for_cleaning(
        &self,
        segment_base: Offset,
        upper_bound: Offset,
    ) -> Result<Vec<AbortedTxn>> {
        let view = self.view();
        let Some(first) = view.floor_segment_index(segment_base) else {
            return Ok(Vec::new());
        };
        let mut aborted = Vec::new();
        for segment in &view.segments[first..] {
            let search = segment.collect_aborted_txns(view.log_start_offset, upper_bound)?;
            aborted.extend(search.aborted);
            if search.complete {
                break;
            }
        }
        Ok(aborted)
    }
}

/// The aborted transactions a `read_committed` fetch of `length` bytes from `position` in
/// segment `index` reports, as Kafka's `addAbortedTransactions` finds them: those ending at or
/// after the fetch offset and starting below an upper bound past the bytes read (the first
/// offset-index entry beyond them, else the next segment's base, else the log end), searched
/// from the read's segment on until an index says no later one can hold more.
fn aborted_txns_of_read(
    view: &LogView,
    index: usize,
    fetch_offset: Offset,
    position: FilePosition,
    length: u64,
) -> Result<Vec<AbortedTxn>> {
    let segment = &view.segments[index];
    let upper_bound = segment
        .fetch_upper_bound_offset(position, length)?
        .or_else(|| view.segments.get(index + 1).map(|next| next.base_offset()))
        .unwrap_or(view.log_end.offset);
    let mut aborted = Vec::new();
    for segment in &view.segments[index..] {
        let search = segment.collect_aborted_txns(fetch_offset, upper_bound)?;
        aborted.extend(search.aborted);
        if search.complete {
            break;
        }
    }
    Ok(aborted)
}

/// The on-disk position of `offset`: the start of the batch holding it, or the end of the
/// segment it falls after.
fn offset_metadata(view: &LogView, offset: Offset) -> Result<LogOffsetMetadata> {
    if offset == view.log_end.offset {
        return Ok(view.log_end);
    }
    let index = view.floor_segment_index(offset).unwrap_or(0);
    let segment = &view.segments[index];
    let position = segment
        .translate_offset(offset, FilePosition::START)?
        .map_or(segment.size(), |entry| entry.position);
    let position = FilePosition::new(position);
    Ok(LogOffsetMetadata {
        offset,
        segment_base_offset: segment.base_offset(),
        position,
    })
}

/// The record with the largest timestamp (the first such record when several tie).
fn max_timestamp_offset(view: &LogView) -> Result<Option<TimestampOffset>> {
    let mut best: Option<(Arc<Segment>, i64)> = None;
    for segment in view.segments.iter() {
        let max = segment.max_timestamp()?;
        if max >= 0 && best.as_ref().is_none_or(|(_, best_max)| max > *best_max) {
            best = Some((Arc::clone(segment), max));
        }
    }
    let Some((segment, max)) = best else {
        return Ok(None);
    };
    let mut found = None;
    let log = segment.log_file();
    log.scan(0, segment.size(), |_, entry| {
        if entry.max_timestamp() < max {
            return ControlFlow::Continue(());
        }
        if let Ok(records) = entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES)
            && let Ok(list) = records.to_vec()
        {
            found = list
                .iter()
                .find(|record| record.timestamp == max)
                .map(|record| TimestampOffset {
                    timestamp: max,
                    offset: Offset::new(record.offset),
                });
        }
        if found.is_none() {
            // LogAppendTime or unreadable records: the batch's last offset, as Kafka reports.
            found = Some(TimestampOffset {
                timestamp: max,
                offset: Offset::new(entry.last_offset()),
            });
        }
        ControlFlow::Break(())
    })?;
    Ok(found)
}
