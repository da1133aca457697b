//! Reading an internal topic's partition whole at startup (`__consumer_offsets`,
//! `__transaction_state`): every batch from the log start to the log end, past the high
//! watermark as Kafka's coordinators read (`FetchIsolation.LOG_END`).
//!
//! Damaged data is reported at ERROR with its partition, file and position, and stepped over: a
//! batch failing its checksum alone, a damaged frame with the rest of its segment (whose batches
//! cannot be found past it). Loading goes on with what follows, so one damaged place costs the
//! coordinator only the records written there.

use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter, FileEntry, RecordsError};
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::{Offset, Result, StorageError};

/// Visits every whole, valid batch of `log` in offset order, with the offset reading has
/// reached (records below it were visited already). `what` names the records in the reports
/// ("group", "transaction").
pub fn for_each_batch(
    log: &Log,
    what: &str,
    mut visit: impl FnMut(&FileEntry<'_>, i64),
) -> Result<()> {
    let partition = log.topic_partition();
    let mut next = log.log_start_offset();
    let end = log.log_end_offset();
    while next < end {
        let read = log.read(FetchParams {
            start_offset: next,
            max_bytes: 1 << 20,
            bound: FetchBound::LogEnd,
            first_batch: FirstBatch::Whole,
        });
        let data = match read {
            Ok(data) => data,
            Err(error @ StorageError::Corrupt { .. }) => {
                next = skip_damaged_segment(log, what, next, &error);
                continue;
            }
            Err(error) => return Err(error),
        };
        let bytes = data.read_bytes()?;
        if bytes.is_empty() {
            break;
        }
        let before = next;
        // The slice may end inside a batch (max_bytes): the iterator stops before it, and the
        // next read starts there.
        for item in EntryIter::new(&bytes) {
            let entry = match item {
                Ok((_, entry)) => entry,
                Err((position, error)) => {
                    let error = StorageError::Corrupt {
                        path: data.segment_path().unwrap_or_default(),
                        position: data.offset_metadata.position.bytes() + position as u64,
                        reason: error.to_string(),
                    };
                    next = skip_damaged_segment(log, what, next, &error);
                    break;
                }
            };
            let entry_next = Offset::new(entry.next_offset());
            if entry_next <= next {
                continue;
            }
            if let Err(error) = entry.validate() {
                tracing::error!(
                    %partition,
                    offset = entry.last_offset(),
                    %error,
                    "skipping a damaged batch of an internal topic: the {what} records in it are lost"
                );
            } else {
                visit(&entry, next.value());
            }
            next = entry_next;
        }
        if next == before {
            // Nothing whole was read where a batch should start.
            let error = StorageError::Corrupt {
                path: data.segment_path().unwrap_or_default(),
                position: data.offset_metadata.position.bytes(),
                reason: "no whole batch where the read started".into(),
            };
            next = skip_damaged_segment(log, what, next, &error);
        }
    }
    Ok(())
}

/// A record of an internal topic, owned: offset, key, value (`None` for a null one).
pub type OwnedRecord = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// The records of one batch, decompressed (within Kafka's default bound) and owned.
pub fn owned_records(entry: &FileEntry<'_>) -> std::result::Result<Vec<OwnedRecord>, RecordsError> {
    let records = entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES)?;
    Ok(records
        .to_vec()?
        .into_iter()
        .map(|record| {
            (
                record.offset,
                record.key.map(<[u8]>::to_vec),
                record.value.map(<[u8]>::to_vec),
            )
        })
        .collect())
}

/// Where loading goes on after damage at `offset`: the next segment's base, or the log end.
fn skip_damaged_segment(log: &Log, what: &str, offset: Offset, error: &StorageError) -> Offset {
    let view = log.view();
    let resume = view
        .segments
        .iter()
        .map(|segment| segment.base_offset())
        .find(|base| *base > offset)
        .unwrap_or(view.log_end.offset);
    tracing::error!(
        partition = %log.topic_partition(),
        %offset,
        resume_at = %resume,
        %error,
        "damaged data in an internal topic: the {what} records from here to the next segment cannot be read and are skipped"
    );
    resume
}
