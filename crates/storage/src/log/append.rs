//! Validation of appended bytes and offset assignment, as pure functions over the bytes: no
//! file I/O, no locks. The log checks producer batches before it takes its append lock
//! ([`check_leader_append`], the one pass that parses them), then assigns offsets
//! ([`assign_leader_offsets`], which works from what the check learned) and writes the result
//! under the lock. The checked bytes travel inside [`CheckedLeaderAppend`], so nothing can
//! change them between the check and the assignment.
//!
//! Leader appends (from producers) are checked as Kafka's `LogValidator` checks them and get
//! offsets from the log end offset; batches are patched in place (base offset, leader epoch,
//! max timestamp with a new CRC when it changes) unless `compression.type` asks for another
//! codec, in which case each batch is rebuilt. Follower appends keep their offsets.

use ferrolog_records::batch::Records;
use ferrolog_records::batch::{self, MAGIC_V2};
use ferrolog_records::record::walk_record_summaries;
use ferrolog_records::{BatchBuilder, Compression, EntryHeader, RecordBatch, TimestampType};

use std::sync::Arc;

use super::decompression_budget::DecompressionBudget;
use crate::config::{LogConfig, TargetCompression};
use crate::decompression::{DecompressionMemory, Reservation};
use crate::epoch::{LeaderEpoch, ProducerEpoch};
use crate::error::{Result, StorageError};
use crate::leader_epochs::EpochEntry;
use crate::offset::Offset;
use crate::producer::{ProducerBatch, TxnMarker};
use crate::segment::BatchMeta;

/// What an append wrote (or, for a validated but not yet written append, will write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset of the first record appended (for a retry of a written batch, the original's).
    pub first_offset: Offset,
    /// Offset of the last record appended (for a retry of a written batch, the original's).
    pub last_offset: Offset,
    /// Largest timestamp of the append (the append time for LogAppendTime topics).
    pub max_timestamp: i64,
    /// Last offset of the batch carrying `max_timestamp`.
    pub offset_of_max_timestamp: Offset,
    /// The broker time stamped on LogAppendTime batches, else −1.
    pub log_append_time_ms: i64,
    /// Records written (0 for a retry, which writes nothing).
    pub record_count: usize,
    /// Batches written (0 for a retry).
    pub batch_count: usize,
    /// Bytes written to the log (0 for a retry).
    pub valid_bytes: usize,
}

/// What validation learned of bytes ready for a segment.
#[derive(Debug)]
pub(crate) struct ValidatedAppend {
    pub info: AppendInfo,
    pub batches: Vec<BatchMeta>,
    /// The idempotent producers' batches among them, with their offsets.
    pub producer_batches: Vec<ProducerBatch>,
    /// The transaction markers among them (never in a producer's append).
    pub markers: Vec<TxnMarker>,
    /// Where the leader epochs carried by the batches start, one entry per change of epoch
    /// (a follower's append; a leader's batches take the log's epoch).
    pub epoch_starts: Vec<EpochEntry>,
}

/// A leader append with its offsets assigned: the bytes to write and what they hold.
#[derive(Debug)]
pub(crate) struct AssignedAppend {
    pub bytes: Vec<u8>,
    pub validated: ValidatedAppend,
}

/// Inputs a leader append is validated against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaderContext<'c> {
    pub config: &'c LogConfig,
    pub next_offset: Offset,
    pub now_ms: i64,
    pub partition_leader_epoch: LeaderEpoch,
}

/// Byte ranges of the whole batches in `bytes`; anything else is corruption.
pub(super) fn batch_ranges(bytes: &[u8]) -> Result<Vec<(usize, usize)>> {
    let mut ranges = Vec::new();
    let mut position = 0;
    while position < bytes.len() {
        let corrupt = |source| StorageError::CorruptRecord {
            batch_index: ranges.len(),
            source,
        };
        let header = EntryHeader::read(&bytes[position..])
            .map_err(corrupt)?
            .ok_or_else(|| {
                corrupt(ferrolog_records::RecordsError::Truncated {
                    what: "batch header",
                    needed: ferrolog_records::HEADER_SIZE_UP_TO_MAGIC,
                    available: bytes.len() - position,
                })
            })?;
        let end = position + header.total_size;
        if end > bytes.len() {
            return Err(corrupt(ferrolog_records::RecordsError::Truncated {
                what: "record batch",
                needed: header.total_size,
                available: bytes.len() - position,
            }));
        }
        ranges.push((position, end));
        position = end;
    }
    Ok(ranges)
}

pub(super) fn invalid(
    batch_index: usize,
    record_index: Option<usize>,
    reason: impl Into<String>,
) -> StorageError {
    StorageError::InvalidRecord {
        batch_index,
        record_index,
        reason: reason.into(),
    }
}

/// The producer fields of a batch's header (producer id −1: not an idempotent producer).
#[derive(Debug, Clone, Copy)]
struct ProducerFields {
    producer_id: i64,
    epoch: ProducerEpoch,
    base_sequence: i32,
    transactional: bool,
}

/// What the checks that need no lock learned about one producer batch: everything offset
/// assignment and the producer state need, so the batch is not parsed again.
#[derive(Debug)]
struct CheckedBatch {
    start: usize,
    end: usize,
    /// Largest record timestamp.
    max_timestamp: i64,
    /// The header's max timestamp and timestamp type, as the producer sent them.
    header_max_timestamp: i64,
    header_timestamp_type: TimestampType,
    last_offset_delta: i32,
    record_count: usize,
    producer: ProducerFields,
    codec: Compression,
    /// The batch is written anew (in the topic's codec) rather than patched in place: it is
    /// in another codec, or an earlier batch of the append is rebuilt.
    rebuild: bool,
    /// The decompressed records, kept when the batch will be rebuilt, so that it is
    /// decompressed once.
    records: Option<Records<'static>>,
}

/// Producer batches that passed every check that does not depend on the log's state: framing,
/// size, magic, CRC, header rules and every record. Made by [`check_leader_append`] before the
/// append lock is taken, as Kafka validates before taking its log lock, so concurrent producers
/// to one partition checksum in parallel; only offset assignment waits for the lock.
#[derive(Debug)]
pub(crate) struct CheckedLeaderAppend {
    /// The bytes checked, owned so that they reach [`assign_leader_offsets`] unchanged.
    bytes: Vec<u8>,
    batches: Vec<CheckedBatch>,
    /// The memory its decompressed records may take, held until they are written.
    decompression: Option<Reservation>,
}

impl CheckedLeaderAppend {
    /// The append's producer batches at provisional offsets (the first from 0): what the
    /// producer state's checks look at before the writer lock assigns the real ones.
    pub(crate) fn provisional_producer_batches(&self) -> Vec<ProducerBatch> {
        let mut next_offset = Offset::ZERO;
        self.batches
            .iter()
            .filter_map(|checked| {
                let base_offset = next_offset;
                next_offset = next_offset + i64::from(checked.last_offset_delta) + 1;
                producer_batch(checked, base_offset, checked.max_timestamp)
            })
            .collect()
    }
}

/// Checks producer batches against `config`, with `now_ms` bounding CreateTime timestamps.
pub(crate) fn check_leader_append(
    bytes: Vec<u8>,
    config: &LogConfig,
    now_ms: i64,
    memory: &Arc<DecompressionMemory>,
) -> Result<CheckedLeaderAppend> {
    let ranges = batch_ranges(&bytes)?;
    if ranges.is_empty() {
        return Err(invalid(0, None, "the append holds no batches"));
    }
    let mut batches = Vec::with_capacity(ranges.len());
    let mut budget = DecompressionBudget::new(config, memory);
    let mut rebuilding = false;
    for (batch_index, (start, end)) in ranges.into_iter().enumerate() {
        let size = end - start;
        if size > config.max_message_bytes as usize {
            return Err(StorageError::RecordTooLarge {
                batch_index,
                size,
                max_message_bytes: config.max_message_bytes as usize,
            });
        }
        let slice = &bytes[start..end];
        if slice[batch::field::MAGIC] != MAGIC_V2 {
            return Err(invalid(
                batch_index,
                None,
                format!(
                    "record format magic {} is not accepted; producers must send magic 2",
                    slice[batch::field::MAGIC]
                ),
            ));
        }
        let corrupt = |source| StorageError::CorruptRecord {
            batch_index,
            source,
        };
        let batch = RecordBatch::new(slice).map_err(corrupt)?;
        batch.validate().map_err(corrupt)?;
        check_batch_header(&batch, batch_index)?;
        let codec = batch.compression().map_err(corrupt)?;
        let records = budget.decompress(&batch, batch_index)?;
        let max_timestamp = check_records(&batch, &records, batch_index, config, now_ms)?;
        // Once one batch of the append is rebuilt, every later one is too (the append's bytes
        // are written anew from there).
        rebuilding |= match config.compression_type {
            TargetCompression::Producer => false,
            TargetCompression::Codec(target) => target != codec,
        };
        batches.push(CheckedBatch {
            start,
            end,
            max_timestamp,
            header_max_timestamp: batch.max_timestamp(),
            header_timestamp_type: batch.timestamp_type(),
            last_offset_delta: batch.last_offset_delta(),
            // check_batch_header made sure it is positive.
            record_count: batch.records_count() as usize,
            producer: ProducerFields {
                producer_id: batch.producer_id(),
                epoch: ProducerEpoch::new(batch.producer_epoch()),
                base_sequence: batch.base_sequence(),
                transactional: batch.is_transactional(),
            },
            codec,
            rebuild: rebuilding,
            records: (rebuilding && records.is_owned()).then(|| records.into_owned()),
        });
    }
    Ok(CheckedLeaderAppend {
        bytes,
        batches,
        decompression: budget.reservation,
    })
}

/// Assigns offsets from `context.next_offset` to checked producer batches, patching their
/// bytes in place (or rebuilding batches when the topic recompresses). Runs under the append
/// lock.
pub(crate) fn assign_leader_offsets(
    checked: CheckedLeaderAppend,
    context: LeaderContext<'_>,
) -> Result<AssignedAppend> {
    let CheckedLeaderAppend {
        mut bytes,
        batches: checked_batches,
        // Held until the decompressed records are dropped, at the end.
        decompression: _decompression,
    } = checked;
    let config = context.config;
    let mut rebuilt: Vec<u8> = Vec::new();
    let mut needs_rebuild = false;
    let mut batches = Vec::with_capacity(checked_batches.len());
    let mut producer_batches = Vec::new();
    let mut next_offset = context.next_offset.value();
    let mut record_count = 0usize;
    let (mut max_timestamp, mut offset_of_max_timestamp) = (-1i64, -1i64);
    let log_append_time = config.message_timestamp_type == TimestampType::LogAppendTime;

    for (batch_index, checked_batch) in checked_batches.iter().enumerate() {
        let (start, end) = (checked_batch.start, checked_batch.end);
        let base_offset = next_offset;
        let last_offset = base_offset + i64::from(checked_batch.last_offset_delta);
        let stored_max = if log_append_time {
            context.now_ms
        } else {
            checked_batch.max_timestamp
        };

        let meta_size;
        if !checked_batch.rebuild {
            let slice = &mut bytes[start..end];
            patch_in_place(slice, checked_batch, base_offset, stored_max, &context);
            meta_size = end - start;
        } else {
            if !needs_rebuild {
                // Everything before this batch was patched in place; carry it over.
                rebuilt.extend_from_slice(&bytes[..start]);
                needs_rebuild = true;
            }
            let rebuilt_batch = rebuild_batch(
                &bytes[start..end],
                checked_batch,
                batch_index,
                config,
                base_offset,
                context,
                log_append_time,
            )?;
            meta_size = rebuilt_batch.len();
            rebuilt.extend_from_slice(&rebuilt_batch);
        }
        if stored_max > max_timestamp {
            max_timestamp = stored_max;
            offset_of_max_timestamp = last_offset;
        }
        batches.push(BatchMeta {
            last_offset: Offset::new(last_offset),
            max_timestamp: stored_max,
            size: meta_size as u32,
        });
        producer_batches.extend(producer_batch(
            checked_batch,
            Offset::new(base_offset),
            stored_max,
        ));
        record_count += checked_batch.record_count;
        next_offset = last_offset + 1;
    }
    if needs_rebuild {
        bytes = rebuilt;
    }
    let info = AppendInfo {
        first_offset: context.next_offset,
        last_offset: Offset::new(next_offset - 1),
        max_timestamp,
        offset_of_max_timestamp: Offset::new(offset_of_max_timestamp),
        log_append_time_ms: if log_append_time { context.now_ms } else { -1 },
        record_count,
        batch_count: batches.len(),
        valid_bytes: bytes.len(),
    };
    Ok(AssignedAppend {
        bytes,
        validated: ValidatedAppend {
            info,
            batches,
            producer_batches,
            markers: Vec::new(),
            epoch_starts: Vec::new(),
        },
    })
}

/// Gives a batch kept as the producer sent it its offsets, the leader epoch and, when the
/// topic's timestamp type or the batch's maximum changes it, its max timestamp.
fn patch_in_place(
    slice: &mut [u8],
    checked_batch: &CheckedBatch,
    base_offset: i64,
    stored_max: i64,
    context: &LeaderContext<'_>,
) {
    let timestamp_type = if context.config.message_timestamp_type == TimestampType::LogAppendTime {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    let rewrite_max = checked_batch.header_max_timestamp != stored_max
        || checked_batch.header_timestamp_type != timestamp_type;
    batch::set_base_offset(slice, base_offset);
    batch::set_partition_leader_epoch(slice, context.partition_leader_epoch.value());
    if rewrite_max {
        batch::set_max_timestamp(slice, timestamp_type, stored_max);
    }
}

/// What the producer state learns from a batch with a producer id, at its assigned offsets.
fn producer_batch(
    checked_batch: &CheckedBatch,
    base_offset: Offset,
    stored_max: i64,
) -> Option<ProducerBatch> {
    let producer = checked_batch.producer;
    (producer.producer_id >= 0).then(|| ProducerBatch {
        producer_id: producer.producer_id,
        epoch: producer.epoch,
        first_seq: producer.base_sequence,
        // Sequences wrap at i32::MAX, as Kafka's do.
        last_seq: producer
            .base_sequence
            .wrapping_add(checked_batch.last_offset_delta)
            & i32::MAX,
        first_offset: base_offset,
        last_offset: base_offset + i64::from(checked_batch.last_offset_delta),
        timestamp: stored_max,
        transactional: producer.transactional,
    })
}

fn check_batch_header(batch: &RecordBatch<'_>, batch_index: usize) -> Result<()> {
    if batch.base_offset() != 0 {
        return Err(invalid(
            batch_index,
            None,
            format!(
                "producer batches must have base offset 0, not {}",
                batch.base_offset()
            ),
        ));
    }
    let count = batch.records_count();
    if count <= 0 || i64::from(batch.last_offset_delta()) + 1 != i64::from(count) {
        return Err(invalid(
            batch_index,
            None,
            format!(
                "last offset delta {} does not match record count {count}",
                batch.last_offset_delta()
            ),
        ));
    }
    if batch.is_control() {
        return Err(invalid(
            batch_index,
            None,
            "producers may not send control batches",
        ));
    }
    if batch.is_transactional() && batch.producer_id() < 0 {
        return Err(invalid(
            batch_index,
            None,
            "a transactional batch needs a producer id",
        ));
    }
    if batch.producer_id() >= 0 && batch.base_sequence() < 0 {
        return Err(invalid(
            batch_index,
            None,
            "an idempotent batch needs a base sequence",
        ));
    }
    if batch.timestamp_type() == TimestampType::LogAppendTime {
        return Err(invalid(
            batch_index,
            None,
            "producers may not set LogAppendTime",
        ));
    }
    Ok(())
}

/// Checks every record (offset deltas, keys on compacted topics, timestamps) and returns the
/// batch's largest record timestamp.
fn check_records(
    batch: &RecordBatch<'_>,
    records: &Records<'_>,
    batch_index: usize,
    config: &LogConfig,
    now_ms: i64,
) -> Result<i64> {
    let lower = crate::clock::before(now_ms, config.message_timestamp_before_max);
    let upper = crate::clock::after(now_ms, config.message_timestamp_after_max);
    let check_time = config.message_timestamp_type == TimestampType::CreateTime;
    let mut max_timestamp = -1i64;
    let base_timestamp = batch.base_timestamp();
    let walked = walk_record_summaries(records.data(), records.count(), |record_index, record| {
        if i64::from(record.offset_delta) != record_index as i64 {
            return Err(invalid(
                batch_index,
                Some(record_index),
                format!(
                    "offset delta {} where {record_index} was expected",
                    record.offset_delta
                ),
            ));
        }
        if config.cleanup_policy.compact && !record.has_key {
            return Err(invalid(
                batch_index,
                Some(record_index),
                "compacted topics cannot accept a record without a key",
            ));
        }
        let timestamp = base_timestamp.wrapping_add(record.timestamp_delta);
        if check_time && timestamp != -1 && (timestamp < lower || timestamp > upper) {
            return Err(StorageError::InvalidTimestamp {
                batch_index,
                record_index,
                timestamp,
                lower,
                upper,
            });
        }
        max_timestamp = max_timestamp.max(timestamp);
        Ok(())
    });
    walked.map_err(|source| StorageError::CorruptRecord {
        batch_index,
        source,
    })??;
    Ok(max_timestamp)
}

/// Writes a checked batch anew in the topic's codec, with its offsets and leader epoch.
fn rebuild_batch(
    original: &[u8],
    checked: &CheckedBatch,
    batch_index: usize,
    config: &LogConfig,
    base_offset: i64,
    context: LeaderContext<'_>,
    log_append_time: bool,
) -> Result<Vec<u8>> {
    let corrupt = |source| StorageError::CorruptRecord {
        batch_index,
        source,
    };
    let codec = match config.compression_type {
        TargetCompression::Producer => checked.codec,
        TargetCompression::Codec(codec) => codec,
    };
    let batch = RecordBatch::new(original).map_err(corrupt)?;
    // A compressed batch was decompressed by the check; an uncompressed one is read where it
    // lies.
    let read_again;
    let records = match &checked.records {
        Some(records) => records,
        None => {
            read_again = batch.records(0).map_err(corrupt)?;
            &read_again
        }
    };
    let producer = checked.producer;
    let mut builder = BatchBuilder::new(base_offset)
        .compression(codec)
        .producer(
            producer.producer_id,
            producer.epoch.value(),
            producer.base_sequence,
        )
        .partition_leader_epoch(context.partition_leader_epoch.value());
    if log_append_time {
        builder = builder.log_append_time(context.now_ms);
    }
    for record in records.iter() {
        builder
            .append_record(&record.map_err(corrupt)?)
            .map_err(corrupt)?;
    }
    let rebuilt = builder.build().map_err(corrupt)?;
    if rebuilt.len() > config.max_message_bytes as usize {
        return Err(StorageError::RecordTooLarge {
            batch_index,
            size: rebuilt.len(),
            max_message_bytes: config.max_message_bytes as usize,
        });
    }
    Ok(rebuilt)
}
