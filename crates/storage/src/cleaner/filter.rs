//! What a cleaning pass keeps of each entry it copies: the entry whole, a batch rebuilt with
//! the surviving records (and a delete horizon when it keeps tombstones), or nothing; and the
//! transaction-index entry of a kept ABORT marker.

use std::collections::HashMap;

use ferrolog_records::{
    BatchBuilder, DEFAULT_MAX_DECOMPRESSED_BYTES, FileEntry, Record, RecordBatch, RecordsError,
    TimestampType,
};

use super::offset_map::OffsetMap;
use super::pass::PassStats;
use super::transactions::TxnFilter;
use crate::config::LogConfig;
use crate::epoch::ProducerEpoch;
use crate::offset::Offset;
use crate::segment::{AbortedTxn, BatchMeta};

type FilterResult<T> = std::result::Result<T, RecordsError>;

/// What filtering needs besides the map.
pub(super) struct PassContext<'a> {
    pub config: &'a LogConfig,
    pub now_ms: i64,
    /// Each active producer's epoch and last data offset (`None` when it has no data batch
    /// left).
    pub producers: &'a HashMap<i64, (ProducerEpoch, Option<Offset>)>,
}

impl PassContext<'_> {
    /// Whether `batch` is its producer's last word, which is kept, emptied if need be, so the
    /// producer's last sequence and epoch survive compaction and a restart rebuilds the same
    /// state (Kafka's rule): its last data batch, or, when it has none left, a marker of its
    /// current epoch.
    pub(super) fn is_last_of_producer(&self, batch: &RecordBatch<'_>) -> bool {
        if batch.producer_id() < 0 {
            return false;
        }
        match self.producers.get(&batch.producer_id()) {
            Some(&(_, Some(last_offset))) => Offset::new(batch.last_offset()) == last_offset,
            Some(&(epoch, None)) => {
                batch.is_control() && ProducerEpoch::new(batch.producer_epoch()) == epoch
            }
            None => false,
        }
    }
}

/// What to keep of one entry: the bytes (itself, a rebuilt batch, or nothing), and the
/// transaction-index entry of a kept ABORT marker.
pub(super) type Filtered = (Option<(Vec<u8>, BatchMeta)>, Option<AbortedTxn>);

/// What to keep of one entry (see [`Filtered`]).
pub(super) fn filter_entry(
    entry: &FileEntry<'_>,
    map: &mut OffsetMap,
    latest: Offset,
    context: &PassContext<'_>,
    txns: &mut TxnFilter,
    stats: &mut PassStats,
) -> FilterResult<Filtered> {
    entry.validate()?;
    let FileEntry::V2(batch) = entry else {
        // Legacy (magic 0/1) entries are kept as they are: ferrolog never rewrites old formats.
        return Ok((Some(keep_whole(entry, stats, 1)), None));
    };
    let count = batch.records_count().max(0) as u64;
    if batch.is_control() {
        return filter_marker(entry, batch, context, txns, stats);
    }
    if txns.drops_data(batch) {
        // Data of an aborted transaction: gone, but for the producer's last batch, emptied.
        stats.records_read += count;
        if context.is_last_of_producer(batch) {
            return Ok((Some(rebuild(batch, &[], None)?), None));
        }
        return Ok((None, None));
    }
    if Offset::new(batch.last_offset()) > latest {
        // Data past the map's reach is newer than anything the map knows.
        return Ok((Some(keep_whole(entry, stats, count)), None));
    }
    filter_records(entry, batch, map, latest, context, stats)
}

/// The entry's bytes as they are, counted as read and written.
fn keep_whole(entry: &FileEntry<'_>, stats: &mut PassStats, records: u64) -> (Vec<u8>, BatchMeta) {
    stats.records_read += records;
    stats.records_written += records;
    let bytes = entry.as_bytes().to_vec();
    let meta = BatchMeta {
        last_offset: Offset::new(entry.last_offset()),
        max_timestamp: entry.max_timestamp(),
        size: bytes.len() as u32,
    };
    (bytes, meta)
}

/// What to keep of a transaction marker: kept while its transaction has data in the pass, then
/// given a delete horizon, then gone (or emptied when it is its producer's last word).
fn filter_marker(
    entry: &FileEntry<'_>,
    batch: &RecordBatch<'_>,
    context: &PassContext<'_>,
    txns: &mut TxnFilter,
    stats: &mut PassStats,
) -> FilterResult<Filtered> {
    let count = batch.records_count().max(0) as u64;
    let verdict = txns.on_marker(batch);
    if count == 0 {
        // An emptied marker: kept only as its producer's last word, as Kafka keeps it.
        let kept = context
            .is_last_of_producer(batch)
            .then(|| keep_whole(entry, stats, 0));
        return Ok((kept, None));
    }
    if !verdict.discardable {
        return Ok((Some(keep_whole(entry, stats, count)), verdict.index_entry));
    }
    let Some(horizon) = batch.delete_horizon_ms() else {
        // Its transaction's data is gone: the marker goes once its horizon has passed.
        let horizon = crate::clock::after(context.now_ms, context.config.delete_retention);
        let records = batch.records(DEFAULT_MAX_DECOMPRESSED_BYTES)?;
        let records: Vec<Record<'_>> = records.iter().collect::<FilterResult<_>>()?;
        let kept: Vec<&Record<'_>> = records.iter().collect();
        stats.records_read += count;
        stats.records_written += count;
        return Ok((Some(rebuild(batch, &kept, Some(horizon))?), None));
    };
    if context.now_ms < horizon {
        return Ok((Some(keep_whole(entry, stats, count)), None));
    }
    stats.records_read += count;
    if context.is_last_of_producer(batch) {
        // Emptied, as Kafka's empty header is: no records, no delete horizon.
        return Ok((Some(rebuild(batch, &[], None)?), None));
    }
    Ok((None, None))
}

/// What to keep of a data batch within the map's reach: the records that are the latest of
/// their key, less tombstones past their batch's delete horizon.
fn filter_records(
    entry: &FileEntry<'_>,
    batch: &RecordBatch<'_>,
    map: &mut OffsetMap,
    latest: Offset,
    context: &PassContext<'_>,
    stats: &mut PassStats,
) -> FilterResult<Filtered> {
    let now_ms = context.now_ms;
    let records = batch.records(DEFAULT_MAX_DECOMPRESSED_BYTES)?;
    let records: Vec<Record<'_>> = records.iter().collect::<FilterResult<_>>()?;
    stats.records_read += records.len() as u64;
    let horizon = batch.delete_horizon_ms();
    let mut kept = Vec::with_capacity(records.len());
    let mut retains_tombstone = false;
    for record in &records {
        let offset = Offset::new(record.offset);
        let survives = if offset > latest {
            true
        } else if let Some(key) = record.key {
            let is_latest = map
                .get(key)
                .is_none_or(|latest_of_key| offset >= latest_of_key);
            let tombstone_expired =
                record.value.is_none() && horizon.is_some_and(|horizon| now_ms >= horizon);
            is_latest && !tombstone_expired
        } else {
            stats.invalid_records += 1;
            false
        };
        if survives {
            retains_tombstone |= record.value.is_none();
            kept.push(record);
        }
    }
    stats.records_written += kept.len() as u64;
    let needs_horizon = retains_tombstone && horizon.is_none();
    if kept.len() == records.len() && !needs_horizon {
        stats.records_written -= kept.len() as u64;
        stats.records_read -= records.len() as u64;
        return Ok((Some(keep_whole(entry, stats, records.len() as u64)), None));
    }
    if kept.is_empty() && !context.is_last_of_producer(batch) {
        return Ok((None, None));
    }
    let new_horizon =
        needs_horizon.then(|| crate::clock::after(now_ms, context.config.delete_retention));
    Ok((Some(rebuild(batch, &kept, horizon.or(new_horizon))?), None))
}

/// The batch again, with only `kept` of its records, its header fields kept as they were.
fn rebuild(
    batch: &RecordBatch<'_>,
    kept: &[&Record<'_>],
    horizon: Option<i64>,
) -> FilterResult<(Vec<u8>, BatchMeta)> {
    let codec = batch.compression()?;
    let mut builder = BatchBuilder::new(batch.base_offset())
        .compression(codec)
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional())
        .control(batch.is_control())
        .partition_leader_epoch(batch.partition_leader_epoch())
        .last_offset_delta(batch.last_offset_delta());
    if batch.timestamp_type() == TimestampType::LogAppendTime {
        builder = builder.log_append_time(batch.max_timestamp());
    }
    if let Some(horizon) = horizon {
        builder = builder.delete_horizon_ms(horizon);
    } else if kept.is_empty() {
        builder = builder.empty_batch_timestamp(batch.max_timestamp());
    }
    for record in kept {
        builder.append_record_at(record.offset, record)?;
    }
    let bytes = builder.build()?;
    let rebuilt = RecordBatch::new(&bytes)?;
    let meta = BatchMeta {
        last_offset: Offset::new(rebuilt.last_offset()),
        max_timestamp: rebuilt.max_timestamp(),
        size: bytes.len() as u32,
    };
    Ok((bytes, meta))
}
