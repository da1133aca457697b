//! One cleaning pass over one log: build the key → latest offset map over the dirty section,
//! group the segments below its end, copy each group's surviving records into a `.cleaned`
//! segment, and swap it in crash-safely through `Log::replace_segments`.
//!
//! A record survives if it lies beyond the map's reach, or if it is the latest of its key, and
//! (for a tombstone) its batch's delete horizon has not passed. Records without a key are
//! dropped and counted. Batches that lose nothing are copied byte for byte; others are rebuilt
//! with the same codec, base offset, producer fields and last offset delta. A batch that keeps
//! tombstones gets a delete horizon (now + `delete.retention.ms`) the first time it is cleaned
//! (KIP-534), so tombstones go on a later pass once it has passed.
//!
//! Transactions, as Kafka's cleaner treats them (the `transactions` module): the data of aborted
//! transactions is dropped and its keys never reach the map; a marker whose transaction still
//! has data in the pass is kept (an ABORT with its transaction-index entry, written into the
//! cleaned segment); one whose data is gone gets a delete horizon and goes on a pass after it.
//! A producer's last batch, or its last marker when it has no data left, stays (emptied if need
//! be), so a restart rebuilds the same producer state. Nothing at or past the last stable
//! offset is cleaned.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::filter::{PassContext, filter_entry};
use super::map_build::build_map;
use super::offset_map::OffsetMap;
use super::transactions::TxnFilter;
use crate::config::LogConfig;
use crate::epoch::ProducerEpoch;
use crate::error::{Result, StorageError};
use crate::fs::remove_if_exists;
use crate::log::Log;
use crate::offset::Offset;
use crate::segment::{
    CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, Segment, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
    segment_path, with_added_suffix,
};
use crate::throttle::Throttle;

/// Figures of one pass, for the summary line and the metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassStats {
    /// Where the pass's dirty section started.
    pub first_dirty_offset: Offset,
    /// The next pass starts here (the new cleaner checkpoint).
    pub end_offset: Offset,
    /// Bytes of the dirty section read to build the map (only segments read to their end).
    pub map_bytes_read: u64,
    /// Bytes of the segments read while copying their survivors (Kafka's `bytesRead`).
    pub bytes_read: u64,
    /// Bytes written into the cleaned segments.
    pub bytes_written: u64,
    /// Records of the cleaned segments read while copying (a legacy entry counts as one).
    pub records_read: u64,
    /// Records kept in the cleaned segments (a legacy entry counts as one).
    pub records_written: u64,
    /// Records dropped for having no key.
    pub invalid_records: u64,
    /// Share of the map's usable entries filled, 0.0 to 1.0.
    pub map_utilization: f64,
    /// Seconds spent building the map.
    pub index_seconds: f64,
    /// Seconds spent copying survivors and swapping the cleaned segments in.
    pub clean_seconds: f64,
    /// Segments replaced by cleaned ones.
    pub segments_cleaned: usize,
}

/// Why a pass stopped early on purpose.
pub(super) fn aborted(log: &Log) -> StorageError {
    StorageError::Dropped(format!("cleaning of {} was aborted", log.topic_partition()))
}

/// Cleans `log` from `first_dirty_offset` up to (not past) `first_uncleanable_offset`.
pub fn clean(
    log: &Log,
    first_dirty_offset: Offset,
    first_uncleanable_offset: Offset,
    map: &mut OffsetMap,
    now_ms: i64,
    throttle: &Throttle,
    abort: &AtomicBool,
) -> Result<PassStats> {
    let config = log.config();
    let mut stats = PassStats {
        first_dirty_offset,
        ..PassStats::default()
    };
    let started = Instant::now();
    map.clear();
    build_map(
        log,
        first_dirty_offset,
        first_uncleanable_offset,
        map,
        &mut stats,
        throttle,
        abort,
    )?;
    stats.index_seconds = started.elapsed().as_secs_f64();
    stats.map_utilization = map.utilization();
    stats.end_offset = map.latest_offset().map_or(first_dirty_offset, |latest| {
        latest.next().max(first_dirty_offset)
    });
    if stats.end_offset <= first_dirty_offset {
        return Ok(stats);
    }

    let started = Instant::now();
    let view = log.view();
    let to_clean: Vec<Arc<Segment>> = view
        .segments
        .iter()
        .filter(|segment| segment.base_offset() < stats.end_offset)
        .filter(|segment| !Arc::ptr_eq(segment, view.active_segment()))
        .cloned()
        .collect();
    let producers = last_batch_of_active_producers(log);
    let context = PassContext {
        config: &config,
        now_ms,
        producers: &producers,
    };
    // One view of the transactions for the whole pass, as Kafka keeps it across groups.
    let mut txns = TxnFilter::default();
    for group in group_segments(&to_clean, &config, stats.end_offset) {
        let cleaned = clean_group(
            log, &group, map, &context, &mut txns, &mut stats, throttle, abort,
        )?;
        log.replace_segments(&group, cleaned)?;
        stats.segments_cleaned += group.len();
    }
    stats.clean_seconds = started.elapsed().as_secs_f64();
    Ok(stats)
}

/// Every producer the log's producer state still holds (not expired, not below the log
/// start), with its epoch and last data offset.
fn last_batch_of_active_producers(log: &Log) -> HashMap<i64, (ProducerEpoch, Option<Offset>)> {
    log.producer_state()
        .entries()
        .into_iter()
        .map(|entry| (entry.producer_id, (entry.epoch, entry.last_offset())))
        .collect()
}

/// Consecutive segments whose cleaned output fits one segment: total log bytes within
/// `segment.bytes`, each index within `segment.index.bytes`, and offsets within 2³¹ of the
/// group's base.
pub fn group_segments(
    segments: &[Arc<Segment>],
    config: &LogConfig,
    end_offset: Offset,
) -> Vec<Vec<Arc<Segment>>> {
    let sizes: Vec<(Offset, u64, u64, u64)> = segments
        .iter()
        .map(|segment| {
            let (offset_index, time_index) = segment.index_lengths();
            (
                segment.base_offset(),
                segment.size(),
                offset_index,
                time_index,
            )
        })
        .collect();
    group_by_limits(
        &sizes,
        config.segment_size(),
        u64::from(config.segment_index_bytes),
        end_offset,
    )
    .into_iter()
    .map(|range| segments[range].to_vec())
    .collect()
}

/// The grouping rule on (base, log bytes, offset index bytes, time index bytes) per segment.
pub fn group_by_limits(
    segments: &[(Offset, u64, u64, u64)],
    segment_bytes: u64,
    index_bytes: u64,
    end_offset: Offset,
) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let (group_base, mut log_bytes, mut offset_bytes, mut time_bytes) = segments[start];
        let mut end = start + 1;
        while end < segments.len() {
            let (_, log, offset, time) = segments[end];
            let last_offset = segments.get(end + 1).map_or(end_offset, |next| next.0) - 1;
            let fits = log_bytes + log <= segment_bytes
                && offset_bytes + offset <= index_bytes
                && time_bytes + time <= index_bytes
                && last_offset - group_base <= i64::from(i32::MAX);
            if !fits {
                break;
            }
            log_bytes += log;
            offset_bytes += offset;
            time_bytes += time;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

/// Writes the survivors of `group` into a new `.cleaned` segment based at the group's base.
#[allow(clippy::too_many_arguments, reason = "one pass's state, handed down")]
fn clean_group(
    log: &Log,
    group: &[Arc<Segment>],
    map: &mut OffsetMap,
    context: &PassContext<'_>,
    txns: &mut TxnFilter,
    stats: &mut PassStats,
    throttle: &Throttle,
    abort: &AtomicBool,
) -> Result<Segment> {
    let (config, now_ms) = (context.config, context.now_ms);
    // Damage the scrubber found: the pass fails here, and the partition is uncleanable.
    for segment in group {
        if let Some((position, reason)) = segment.known_damage() {
            return Err(StorageError::Corrupt {
                path: segment.log_path(),
                position,
                reason,
            });
        }
    }
    let dir = &log.dir();
    let base = group[0].base_offset();
    for suffix in [
        LOG_SUFFIX,
        INDEX_SUFFIX,
        TIME_INDEX_SUFFIX,
        TXN_INDEX_SUFFIX,
    ] {
        remove_if_exists(&with_added_suffix(
            &segment_path(dir, base.value(), suffix),
            CLEANED_SUFFIX,
        ))?;
    }
    let output = Segment::open(dir, base, config, now_ms, CLEANED_SUFFIX)?;
    let result = copy_survivors(
        log, group, &output, map, context, txns, stats, throttle, abort,
    );
    if result.is_err() || abort.load(Ordering::Relaxed) {
        if let Err(error) = output.delete_files() {
            // A `.cleaned` file left behind is removed when the log next loads.
            tracing::warn!(%error, "could not remove the files of a dropped cleaning pass");
        }
        return Err(result.err().unwrap_or_else(|| aborted(log)));
    }
    output.on_becoming_inactive()?;
    output.flush()?;
    Ok(output)
}

#[allow(clippy::too_many_arguments, reason = "one pass's state, handed down")]
fn copy_survivors(
    log: &Log,
    group: &[Arc<Segment>],
    output: &Segment,
    map: &mut OffsetMap,
    context: &PassContext<'_>,
    txns: &mut TxnFilter,
    stats: &mut PassStats,
    throttle: &Throttle,
    abort: &AtomicBool,
) -> Result<()> {
    let Some(latest) = map.latest_offset() else {
        // An empty map cleans nothing: `clean` stops before copying.
        return Ok(());
    };
    let view = log.view();
    for segment in group {
        // The aborted transactions reaching into this segment, as Kafka gathers them per
        // segment (those starting below the next segment's base).
        let next_base = view
            .segments
            .iter()
            .map(|later| later.base_offset())
            .find(|base| *base > segment.base_offset())
            .unwrap_or(view.log_end.offset);
        txns.expect(log.aborted_txns_for_cleaning(segment.base_offset(), next_base)?);
        let mut failure = None;
        let path = segment.log_path();
        segment
            .log_file()
            .scan(0, segment.size(), |position, entry| {
                if abort.load(Ordering::Relaxed) {
                    return ControlFlow::Break(());
                }
                throttle.account_unless(entry.size_in_bytes() as u64, abort);
                stats.bytes_read += entry.size_in_bytes() as u64;
                match filter_entry(entry, map, latest, context, txns, stats) {
                    Ok((kept, index_entry)) => {
                        if let Some((bytes, meta)) = kept {
                            throttle.account_unless(bytes.len() as u64, abort);
                            stats.bytes_written += bytes.len() as u64;
                            if let Err(error) = output.append(&bytes, &[meta]) {
                                failure = Some(error);
                                return ControlFlow::Break(());
                            }
                        }
                        if let Some(txn) = index_entry
                            && let Err(error) = output.append_aborted_txn(txn)
                        {
                            failure = Some(error);
                            return ControlFlow::Break(());
                        }
                    }
                    Err(error) => {
                        failure = Some(StorageError::Corrupt {
                            path: path.clone(),
                            position,
                            reason: error.to_string(),
                        });
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            })?;
        if let Some(error) = failure {
            return Err(error);
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn segment_grouping() {
        let segments: Vec<(Offset, u64, u64, u64)> =
            (0..9).map(|i| (Offset::new(i * 10), 100, 8, 12)).collect();
        let end = Offset::new(90);
        let all = group_by_limits(&segments, u64::MAX, u64::MAX, end);
        assert_eq!(all, vec![0..9], "huge limits: one group");
        let tiny = group_by_limits(&segments, 100, u64::MAX, end);
        assert_eq!(tiny.len(), 9, "segment.bytes of one segment: singletons");
        let tiny_index = group_by_limits(&segments, u64::MAX, 8, end);
        assert_eq!(
            tiny_index.len(),
            9,
            "index limit of one segment: singletons"
        );
        let threes = group_by_limits(&segments, 300, u64::MAX, end);
        assert_eq!(threes, vec![0..3, 3..6, 6..9]);
    }

    #[test]
    fn groups_never_span_more_than_two_to_the_31_offsets() {
        let at = |offset| Offset::new(offset);
        let segments = [
            (at(0), 1, 1, 1),
            (at(i64::from(i32::MAX) - 10), 1, 1, 1),
            (at(i64::from(i32::MAX) + 5), 1, 1, 1),
        ];
        let end = at(i64::from(i32::MAX) + 20);
        let groups = group_by_limits(&segments, u64::MAX, u64::MAX, end);
        assert_eq!(groups, vec![0..1, 1..3]);
    }
}
