//! Segment recovery: every batch of the `.log` is validated from the start, both indexes are
//! rebuilt as appends would have built them, and the file is cut at the first invalid or partial
//! batch. Used after an unclean shutdown, and for segments whose index is missing. The
//! transaction index is emptied: its entries come from the producer state's replay of the
//! markers, which the log does after recovery (a transaction may start in an earlier segment).

use std::ops::ControlFlow;

use ferrolog_records::{FileEntry, RecordBatch};

use super::{
    NO_TIMESTAMP, OffsetIndex, Segment, SegmentRecovery, TimeEntry, TimeIndex, TimestampOffset,
};
use crate::error::{Result, StorageError};
use crate::leader_epochs::EpochEntry;
use crate::offset::{FilePosition, Offset};

/// Notes where `batch`'s leader epoch starts when it is higher than every epoch before it in
/// the segment (a batch without one, −1, starts none).
fn note_epoch_start(starts: &mut Vec<EpochEntry>, batch: &RecordBatch<'_>) {
    let epoch = batch.partition_leader_epoch();
    if epoch >= 0 && starts.last().is_none_or(|last| last.epoch.value() < epoch) {
        starts.push(EpochEntry::new(epoch, batch.base_offset()));
    }
}

/// Why recovery stops at an entry.
enum Stop {
    /// Damage: the file is cut there.
    Damaged(String),
    /// Data ferrolog cannot index and will not cut: the segment is refused.
    Refused(StorageError),
}

impl Segment {
    /// Rebuilds both indexes from the `.log`, validating every batch, and cuts the file at the
    /// first invalid or partial batch.
    pub fn recover(&self) -> Result<SegmentRecovery> {
        self.mark_dirty();
        // The module's lock order: state, then the offset index, then the time index.
        let mut state = self.state.lock();
        let mut offset_index = self.offset_index.write();
        let mut time_index = self.time_index.write();
        self.empty_indexes(&mut offset_index, &mut time_index)?;

        let mut max_so_far = TimestampOffset {
            timestamp: NO_TIMESTAMP,
            offset: Offset::new(-1),
        };
        let mut last_index_entry = 0u64;
        let mut first_batch_timestamp = None;
        let mut previous_last_offset = self.base_offset - 1;
        let mut failure: Option<(u64, String)> = None;
        let mut index_error = None;
        let mut epoch_starts: Vec<EpochEntry> = Vec::new();
        let end = self.log.file_length()?;
        let scan = self.log.scan_to_damage(0, end, |position, entry| {
            if let Err(error) = entry.validate() {
                failure = Some((position, error.to_string()));
                return ControlFlow::Break(());
            }
            let last_offset = Offset::new(entry.last_offset());
            if let Some(stop) = self.check_offsets(entry.magic(), last_offset, previous_last_offset)
            {
                match stop {
                    Stop::Damaged(reason) => failure = Some((position, reason)),
                    Stop::Refused(error) => index_error = Some(error),
                }
                return ControlFlow::Break(());
            }
            previous_last_offset = last_offset;
            if let FileEntry::V2(batch) = entry {
                note_epoch_start(&mut epoch_starts, batch);
            }
            if first_batch_timestamp.is_none() {
                first_batch_timestamp = Some(entry.max_timestamp());
            }
            if entry.max_timestamp() > max_so_far.timestamp {
                max_so_far = TimestampOffset {
                    timestamp: entry.max_timestamp(),
                    offset: last_offset,
                };
            }
            if position - last_index_entry > u64::from(self.index_interval_bytes) {
                let appended = offset_index
                    .append(last_offset, FilePosition::new(position))
                    .and_then(|()| {
                        time_index.maybe_append(
                            max_so_far.timestamp,
                            max_so_far.offset,
                            TimeEntry::Regular,
                        )
                    });
                // On a full disk the rebuilt index just has fewer entries.
                if let Err(error) = self.skip_index_entry_without_space(appended) {
                    index_error = Some(error);
                    return ControlFlow::Break(());
                }
                last_index_entry = position;
            }
            ControlFlow::Continue(())
        })?;
        if let Some(error) = index_error {
            return Err(error);
        }
        // A torn tail (an entry running past the end) is what a crash leaves; it is cut like any
        // other damage, and named in the report.
        let valid_bytes = scan.valid_end;
        if let Some(damage) = scan.damage {
            failure.get_or_insert((damage.position, damage.reason));
        }
        let truncated_bytes = self.cut_log_to(valid_bytes, end)?;
        self.finish_indexes(&mut offset_index, &mut time_index, max_so_far)?;

        state.bytes_since_last_index_entry = valid_bytes - last_index_entry;
        state.max_timestamp_so_far = Some(if max_so_far.timestamp >= 0 {
            max_so_far
        } else {
            TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset,
            }
        });
        state.rolling_based_timestamp = Some(first_batch_timestamp.filter(|ts| *ts >= 0));
        Ok(SegmentRecovery {
            valid_bytes,
            truncated_bytes,
            corruption: failure,
            epoch_starts,
        })
    }

    /// Ends the rebuilt indexes: the time index's final entry (the largest timestamp), both
    /// trimmed to their entries and sealed.
    fn finish_indexes(
        &self,
        offset_index: &mut OffsetIndex,
        time_index: &mut TimeIndex,
        max_so_far: TimestampOffset,
    ) -> Result<()> {
        offset_index.trim_to_valid_size()?;
        if max_so_far.timestamp >= 0 {
            self.skip_index_entry_without_space(time_index.maybe_append(
                max_so_far.timestamp,
                max_so_far.offset,
                TimeEntry::Final,
            ))?;
        }
        time_index.trim_to_valid_size()?;
        self.seal_indexes(offset_index, time_index);
        Ok(())
    }

    /// Cuts the `.log` to the `valid_bytes` recovery read, of the `end` it found. The valid size
    /// may have been the file's full (preallocated) length. Returns the bytes cut.
    fn cut_log_to(&self, valid_bytes: u64, end: u64) -> Result<u64> {
        let truncated_bytes = end - valid_bytes;
        if truncated_bytes > 0 {
            self.log.set_size_for_recovery(end);
            self.log.truncate_to(valid_bytes)?;
        } else {
            self.log.set_size_for_recovery(valid_bytes);
        }
        Ok(truncated_bytes)
    }

    /// Empties all three indexes, the offset and time indexes at full size for the rebuild.
    fn empty_indexes(
        &self,
        offset_index: &mut OffsetIndex,
        time_index: &mut TimeIndex,
    ) -> Result<()> {
        offset_index.truncate_all();
        offset_index.resize(u64::from(self.segment_index_bytes))?;
        time_index.truncate_all();
        time_index.resize(u64::from(self.segment_index_bytes))?;
        self.txn_index.lock().reset()
    }

    /// Checks an entry's last offset against the segment's base and the entry before it.
    fn check_offsets(
        &self,
        magic: u8,
        last_offset: Offset,
        previous_last_offset: Offset,
    ) -> Option<Stop> {
        if !self.fits_relative(last_offset) {
            if magic < 2 && last_offset > self.base_offset {
                // Legacy data can hold offsets too far from the base for 32-bit relative index
                // entries (KAFKA-6264). Kafka splits such a segment; ferrolog refuses to open it
                // rather than cut valid data.
                return Some(Stop::Refused(StorageError::OffsetOverflow {
                    offset: last_offset.value(),
                    base_offset: self.base_offset.value(),
                }));
            }
            // A v2 segment never holds such offsets (rolls prevent it); the base offset field
            // is outside the CRC, so this is corruption the CRC missed.
            return Some(Stop::Damaged(format!(
                "offset {last_offset} does not fit a segment based at {}",
                self.base_offset
            )));
        }
        if last_offset <= previous_last_offset {
            return Some(Stop::Damaged(format!(
                "last offset {last_offset} does not follow the previous batch's {previous_last_offset}"
            )));
        }
        None
    }
}
