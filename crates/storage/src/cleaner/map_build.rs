//! The first half of a cleaning pass: every keyed record of the dirty section into the offset
//! map, from the first dirty offset on, until the map is full or the uncleanable offset is
//! reached. Keys of aborted transactions never reach the map.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, FileEntry, RecordsError};

use super::offset_map::OffsetMap;
use super::pass::{PassStats, aborted};
use super::transactions::TxnFilter;
use crate::error::{Result, StorageError};
use crate::log::Log;
use crate::offset::{FilePosition, Offset};
use crate::segment::Segment;
use crate::throttle::Throttle;

/// A record's offset and key.
type KeyedRecord = (Offset, Option<Vec<u8>>);

/// The offsets a pass may map: from the first dirty offset up to (not including) the first
/// uncleanable one.
#[derive(Debug, Clone, Copy)]
struct DirtyRange {
    first_dirty: Offset,
    first_uncleanable: Offset,
}

/// Puts every keyed record of the dirty section into the map until it is full.
pub(super) fn build_map(
    log: &Log,
    first_dirty: Offset,
    first_uncleanable: Offset,
    map: &mut OffsetMap,
    stats: &mut PassStats,
    throttle: &Throttle,
    abort: &AtomicBool,
) -> Result<()> {
    let range = DirtyRange {
        first_dirty,
        first_uncleanable,
    };
    let view = log.view();
    let segments = &view.segments;
    // Keys of aborted transactions never reach the map.
    let mut txns = TxnFilter::default();
    txns.expect(log.aborted_txns_for_cleaning(first_dirty, first_uncleanable)?);
    for (index, segment) in segments.iter().enumerate() {
        let next_base = segments
            .get(index + 1)
            .map_or(view.log_end.offset, |next| next.base_offset());
        let base = segment.base_offset();
        if next_base <= first_dirty || base >= first_uncleanable {
            continue;
        }
        let start = if base < first_dirty {
            segment
                .translate_offset(first_dirty, FilePosition::START)?
                .map_or(segment.size(), |entry| entry.position)
        } else {
            0
        };
        let full = map_segment(segment, start, range, map, &mut txns, throttle, abort)?;
        if abort.load(Ordering::Relaxed) {
            return Err(aborted(log));
        }
        if full {
            return Ok(());
        }
        // A whole segment was read: the range reaches its end even across offset gaps.
        map.set_latest_offset(next_base.min(first_uncleanable) - 1);
        stats.map_bytes_read += segment.size() - start;
    }
    Ok(())
}

/// Maps one segment's entries from byte `start`. Returns whether mapping stopped for good: the
/// map is full or the uncleanable offset was reached.
fn map_segment(
    segment: &Segment,
    start: u64,
    range: DirtyRange,
    map: &mut OffsetMap,
    txns: &mut TxnFilter,
    throttle: &Throttle,
    abort: &AtomicBool,
) -> Result<bool> {
    let mut full = false;
    let mut failure = None;
    let path = segment.log_path();
    segment
        .log_file()
        .scan(start, segment.size(), |position, entry| {
            if abort.load(Ordering::Relaxed) {
                return ControlFlow::Break(());
            }
            throttle.account_unless(entry.size_in_bytes() as u64, abort);
            let records = match keyed_records(entry, txns) {
                Ok(Some(records)) => records,
                Ok(None) => {
                    // A marker, or data of an aborted transaction: nothing to map.
                    if !entry_is_marker(entry) {
                        map.set_latest_offset(last_mapped(entry, range));
                    }
                    return ControlFlow::Continue(());
                }
                Err(error) => {
                    failure = Some(StorageError::Corrupt {
                        path: path.clone(),
                        position,
                        reason: error.to_string(),
                    });
                    return ControlFlow::Break(());
                }
            };
            for (offset, key) in records {
                if offset < range.first_dirty {
                    continue;
                }
                if offset >= range.first_uncleanable {
                    full = true;
                    return ControlFlow::Break(());
                }
                if let Some(key) = key
                    && !map.put(&key, offset)
                {
                    full = true;
                    return ControlFlow::Break(());
                }
                map.set_latest_offset(offset);
            }
            map.set_latest_offset(last_mapped(entry, range));
            ControlFlow::Continue(())
        })?;
    match failure {
        Some(error) => Err(error),
        None => Ok(full),
    }
}

/// The last offset of `entry` the range reaches.
fn last_mapped(entry: &FileEntry<'_>, range: DirtyRange) -> Offset {
    Offset::new(entry.last_offset()).min(range.first_uncleanable - 1)
}

fn entry_is_marker(entry: &FileEntry<'_>) -> bool {
    matches!(entry, FileEntry::V2(batch) if batch.is_control())
}

/// The offsets and keys of an entry's records, after checking it; `None` for a transaction
/// marker (which `txns` takes note of) and for the data of an aborted transaction.
fn keyed_records(
    entry: &FileEntry<'_>,
    txns: &mut TxnFilter,
) -> std::result::Result<Option<Vec<KeyedRecord>>, RecordsError> {
    entry.validate()?;
    if let FileEntry::V2(batch) = entry {
        if batch.is_control() {
            txns.on_marker(batch);
            return Ok(None);
        }
        if txns.drops_data(batch) {
            return Ok(None);
        }
    }
    let records = entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES)?;
    Ok(Some(
        records
            .to_vec()?
            .iter()
            .map(|record| (Offset::new(record.offset), record.key.map(<[u8]>::to_vec)))
            .collect(),
    ))
}
