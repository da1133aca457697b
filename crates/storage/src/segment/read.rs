//! Reads from a segment: an offset to the batch holding it (the offset index, then a walk of
//! batch headers), a fetch's slice, the offset after the last batch, and lookups by timestamp.

use std::ops::ControlFlow;

use ferrolog_records::DEFAULT_MAX_DECOMPRESSED_BYTES;

use super::{EntrySummary, FirstBatch, Segment, SegmentSlice, TimestampOffset};
use crate::epoch::LeaderEpoch;
use crate::error::{Result, StorageError};
use crate::offset::{FilePosition, Offset};

impl Segment {
    /// The batch holding `offset` (the first whose last offset is ≥ it), starting the header walk
    /// no earlier than `starting_position`; `None` when the segment ends before `offset`.
    pub fn translate_offset(
        &self,
        offset: Offset,
        starting_position: FilePosition,
    ) -> Result<Option<EntrySummary>> {
        let indexed = self.offset_index.read().view()?.lookup(offset).position;
        let start = indexed.max(starting_position).bytes();
        self.log.walk_headers(start, self.size(), |entry| {
            if entry.last_offset >= offset.value() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
    }

    /// Reads from the batch holding `start_offset`: at most `max_bytes` (or, with
    /// [`FirstBatch::Whole`], at least the whole first batch), never past `max_position`.
    /// `None` when the segment holds nothing at or after `start_offset`.
    pub fn read(
        &self,
        start_offset: Offset,
        max_bytes: u64,
        max_position: Option<FilePosition>,
        first_batch: FirstBatch,
    ) -> Result<Option<SegmentSlice>> {
        let Some(first) = self.translate_offset(start_offset, FilePosition::START)? else {
            return Ok(None);
        };
        let adjusted_max = match first_batch {
            FirstBatch::Whole => max_bytes.max(u64::from(first.size)),
            FirstBatch::WithinLimit => max_bytes,
        };
        let length = match max_position {
            Some(max_position) if adjusted_max > 0 => max_position
                .bytes()
                .saturating_sub(first.position)
                .min(adjusted_max),
            _ => 0,
        };
        // Damage the scrubber found ends the read before it, or refuses it when it starts there.
        let length = match self.known_damage_in(first.position, first.position + length.max(1)) {
            Some((position, reason)) if position == first.position => {
                return Err(self.log.corrupt(position, reason));
            }
            Some((position, _)) => position - first.position,
            None => length,
        };
        Ok(Some(SegmentSlice {
            position: FilePosition::new(first.position),
            length,
            first_entry_incomplete: length > 0 && adjusted_max < u64::from(first.size),
        }))
    }

    /// Records damage the scrubber found at byte `position`: from now on a read ends before
    /// it, and a read starting at it is refused (`StorageError::Corrupt`); the cleaner leaves
    /// the segment alone. The earliest damage found is kept.
    pub fn mark_damaged(&self, position: u64, reason: String) {
        let mut known = self.known_damage.lock();
        if known.as_ref().is_none_or(|(at, _)| position < *at) {
            *known = Some((position, reason));
        }
    }

    /// The damage recorded by [`Segment::mark_damaged`], if any.
    pub fn known_damage(&self) -> Option<(u64, String)> {
        self.known_damage.lock().clone()
    }

    /// The recorded damage if it lies in bytes `[from, to)`.
    fn known_damage_in(&self, from: u64, to: u64) -> Option<(u64, String)> {
        self.known_damage
            .lock()
            .clone()
            .filter(|(position, _)| (from..to).contains(position))
    }

    /// The offset after the last batch (the base offset when empty), read from the headers
    /// after the last index entries. Damage on the way ends the reading: then the offset after
    /// the last whole batch before it, with the damage's position and what it is. The walk starts where either index
    /// leaves off, the earlier of the two, so that it meets any damage a later reader of the
    /// segment's end (the largest timestamp's) would.
    pub fn read_next_offset(&self) -> Result<(Offset, Option<(u64, String)>)> {
        let last_timed = self.time_index.read().view()?.last_entry().offset;
        let offset_index = self.offset_index.read();
        let offsets = offset_index.view()?;
        let start = offsets
            .lookup(Offset::MAX)
            .position
            .min(offsets.lookup(last_timed).position);
        drop(offsets);
        drop(offset_index);
        let mut next = self.base_offset;
        let walked = self.log.walk_headers(start.bytes(), self.size(), |entry| {
            next = Offset::new(entry.next_offset());
            ControlFlow::Continue(())
        });
        match walked {
            Ok(_) => Ok((next, None)),
            Err(StorageError::Corrupt {
                position, reason, ..
            }) => Ok((next, Some((position, reason)))),
            Err(error) => Err(error),
        }
    }

    /// The partition leader epoch of the segment's last batch that has one, read from the
    /// headers after the last offset-index entry; damage there ends the reading, as it ends
    /// [`Segment::read_next_offset`]'s. `None` when no batch read has one.
    pub fn last_batch_epoch(&self) -> Result<Option<LeaderEpoch>> {
        let start = self
            .offset_index
            .read()
            .view()?
            .lookup(Offset::MAX)
            .position;
        let mut epoch = None;
        let walked = self.log.walk_headers(start.bytes(), self.size(), |entry| {
            if entry.partition_leader_epoch >= 0 {
                epoch = Some(LeaderEpoch::new(entry.partition_leader_epoch));
            }
            ControlFlow::Continue(())
        });
        match walked {
            Ok(_) | Err(StorageError::Corrupt { .. }) => Ok(epoch),
            Err(error) => Err(error),
        }
    }

    /// The partition leader epoch of the batch holding `offset`; `None` when no batch of the
    /// segment holds it, it has none, or damage comes first.
    pub fn batch_epoch_at(&self, offset: Offset) -> Result<Option<LeaderEpoch>> {
        let start = self.offset_index.read().view()?.lookup(offset).position;
        let mut epoch = None;
        let walked = self.log.walk_headers(start.bytes(), self.size(), |entry| {
            if entry.last_offset < offset.value() {
                return ControlFlow::Continue(());
            }
            if entry.partition_leader_epoch >= 0 {
                epoch = Some(LeaderEpoch::new(entry.partition_leader_epoch));
            }
            ControlFlow::Break(())
        });
        match walked {
            Ok(_) | Err(StorageError::Corrupt { .. }) => Ok(epoch),
            Err(error) => Err(error),
        }
    }

    /// The first record with timestamp ≥ `timestamp` and offset ≥ `starting_offset`.
    pub fn find_offset_by_timestamp(
        &self,
        timestamp: i64,
        starting_offset: Offset,
    ) -> Result<Option<TimestampOffset>> {
        let indexed = self.time_index.read().view()?.lookup(timestamp);
        let from_offset = indexed.offset.max(starting_offset);
        let position = self
            .offset_index
            .read()
            .view()?
            .lookup(from_offset)
            .position
            .bytes();
        let mut found = None;
        let mut failure = None;
        let path = self.log.path();
        self.log
            .scan(position, self.size(), |entry_position, entry| {
                if entry.max_timestamp() < timestamp {
                    return ControlFlow::Continue(());
                }
                let records = entry
                    .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
                    .and_then(|records| {
                        let list = records.to_vec()?;
                        Ok(list
                            .iter()
                            .find(|record| {
                                record.timestamp >= timestamp
                                    && record.offset >= starting_offset.value()
                            })
                            .map(|record| TimestampOffset {
                                timestamp: record.timestamp,
                                offset: Offset::new(record.offset),
                            }))
                    });
                match records {
                    Ok(Some(hit)) => {
                        found = Some(hit);
                        ControlFlow::Break(())
                    }
                    Ok(None) => ControlFlow::Continue(()),
                    Err(error) => {
                        failure = Some(StorageError::Corrupt {
                            path: path.clone(),
                            position: entry_position,
                            reason: error.to_string(),
                        });
                        ControlFlow::Break(())
                    }
                }
            })?;
        match failure {
            Some(error) => Err(error),
            None => Ok(found),
        }
    }
}
