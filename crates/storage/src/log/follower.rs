//! Validation of batches a follower copies from its leader (replication, tools, tests): they
//! keep their offsets, which must increase from the log end on. A pure function over the bytes,
//! like the leader's checks in [`super::append`].

use ferrolog_records::RecordBatch;

use super::append::{AppendInfo, ValidatedAppend, batch_ranges, invalid};
use crate::error::{Result, StorageError};
use crate::leader_epochs::EpochEntry;
use crate::offset::Offset;
use crate::producer::{ProducerBatch, TxnMarker};
use crate::segment::BatchMeta;

/// Validates batches a follower copies from a leader: offsets are kept and must increase from
/// `log_end_offset` on.
pub(crate) fn validate_follower_append(
    bytes: &[u8],
    log_end_offset: Offset,
) -> Result<ValidatedAppend> {
    let log_end_offset = log_end_offset.value();
    let ranges = batch_ranges(bytes)?;
    let mut batches = Vec::with_capacity(ranges.len());
    let mut previous_last: Option<i64> = None;
    let (mut max_timestamp, mut offset_of_max_timestamp) = (-1i64, -1i64);
    let mut record_count = 0usize;
    let mut producer_batches = Vec::new();
    let mut markers = Vec::new();
    let mut epoch_starts: Vec<EpochEntry> = Vec::new();
    for (batch_index, &(start, end)) in ranges.iter().enumerate() {
        let batch =
            RecordBatch::new(&bytes[start..end]).map_err(|source| StorageError::CorruptRecord {
                batch_index,
                source,
            })?;
        batch
            .validate()
            .map_err(|source| StorageError::CorruptRecord {
                batch_index,
                source,
            })?;
        if let Some(previous) = previous_last {
            if batch.base_offset() <= previous {
                return Err(StorageError::OffsetsOutOfOrder(format!(
                    "batch {batch_index} starts at {} after a batch ending at {previous}",
                    batch.base_offset()
                )));
            }
        } else if batch.base_offset() < log_end_offset {
            return Err(StorageError::UnexpectedAppendOffset {
                first_offset: batch.base_offset(),
                log_end_offset,
            });
        }
        if batch.max_timestamp() > max_timestamp {
            max_timestamp = batch.max_timestamp();
            offset_of_max_timestamp = batch.last_offset();
        }
        previous_last = Some(batch.last_offset());
        let epoch = batch.partition_leader_epoch();
        if epoch >= 0
            && epoch_starts
                .last()
                .is_none_or(|last| last.epoch.value() != epoch)
        {
            epoch_starts.push(EpochEntry::new(epoch, batch.base_offset()));
        }
        record_count += batch.records_count().max(0) as usize;
        producer_batches.extend(ProducerBatch::of(&batch));
        markers.extend(TxnMarker::of(&batch).map_err(|reason| invalid(batch_index, None, reason))?);
        batches.push(BatchMeta {
            last_offset: Offset::new(batch.last_offset()),
            max_timestamp: batch.max_timestamp(),
            size: (end - start) as u32,
        });
    }
    let (Some(&(first_start, first_end)), Some(last_offset)) = (ranges.first(), previous_last)
    else {
        return Err(invalid(0, None, "the append holds no batches"));
    };
    let first = RecordBatch::new(&bytes[first_start..first_end]).map_err(|source| {
        StorageError::CorruptRecord {
            batch_index: 0,
            source,
        }
    })?;
    Ok(ValidatedAppend {
        info: AppendInfo {
            first_offset: Offset::new(first.base_offset()),
            last_offset: Offset::new(last_offset),
            max_timestamp,
            offset_of_max_timestamp: Offset::new(offset_of_max_timestamp),
            log_append_time_ms: -1,
            record_count,
            batch_count: batches.len(),
            valid_bytes: bytes.len(),
        },
        batches,
        producer_batches,
        markers,
        epoch_starts,
    })
}
