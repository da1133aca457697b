//! What a share fetch takes from the log: where a partition without a start offset starts,
//! the batches of a read as acquisition needs them, and the bytes answering what was acquired.

use bytes::Bytes;
use ferrolog_coordinator::group::group_configs::OffsetReset;
use ferrolog_coordinator::share_partition::LogBatch;
use ferrolog_records::{EntryIter, FileEntry};
use ferrolog_storage::log::Log;
use ferrolog_storage::producer::{MarkerKind, TxnMarker};

use crate::errors;

/// Where a partition whose share state has no start offset starts, by
/// `share.auto.offset.reset`: the log start, the high watermark, or the first record no older
/// than the duration (OFFSET_NOT_AVAILABLE when none is, as Kafka answers).
pub(super) fn start_by_reset(log: &Log, reset: OffsetReset, now_ms: i64) -> Result<i64, i16> {
    match reset {
        OffsetReset::Earliest => Ok(log.log_start_offset().value()),
        OffsetReset::Latest => Ok(log.high_watermark().value()),
        OffsetReset::ByDuration(ms) => {
            match log.fetch_offset_by_timestamp(now_ms.saturating_sub(ms)) {
                Ok(Some(found)) => Ok(found.offset.value()),
                Ok(None) => Err(errors::OFFSET_NOT_AVAILABLE),
                Err(error) => Err(errors::code_of(&error)),
            }
        }
    }
}

/// The entries of `bytes` (whole ones, read from `read_from`), each with its place and what
/// acquisition needs of it.
pub(super) fn entries_of(bytes: &[u8], read_from: i64) -> Vec<((usize, usize), LogBatch)> {
    let mut entries = Vec::new();
    // A legacy (magic 0/1) entry names only its last offset; its first is the one after the
    // entry before it (or where the read started).
    let mut next = read_from;
    for item in EntryIter::new(bytes) {
        let Ok((position, entry)) = item else { break };
        let place = (position, entry.size_in_bytes());
        let batch = match &entry {
            FileEntry::V2(batch) => LogBatch {
                first: batch.base_offset(),
                last: batch.last_offset(),
                producer_id: batch.producer_id(),
                transactional: batch.is_transactional(),
                abort_marker: matches!(TxnMarker::of(batch), Ok(Some(marker)) if marker.kind == MarkerKind::Abort),
            },
            FileEntry::Legacy(_) => LogBatch {
                first: next.min(entry.last_offset()),
                last: entry.last_offset(),
                ..LogBatch::default()
            },
        };
        next = batch.last + 1;
        entries.push((place, batch));
    }
    entries
}

/// The bytes of the entries overlapping `first..=last`.
pub(super) fn covering(
    bytes: &[u8],
    entries: &[((usize, usize), LogBatch)],
    first: i64,
    last: i64,
) -> Bytes {
    let overlapping: Vec<&((usize, usize), LogBatch)> = entries
        .iter()
        .filter(|(_, b)| b.last >= first && b.first <= last)
        .collect();
    match (overlapping.first(), overlapping.last()) {
        (Some(((from, _), _)), Some(((at, size), _))) => {
            Bytes::copy_from_slice(&bytes[*from..at + size])
        }
        _ => Bytes::new(),
    }
}
