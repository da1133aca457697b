//! A segment's timestamps: the largest one (for the final time-index entry and time retention)
//! and the first batch's (for the time-based roll), each loaded from the files on first use.

use std::ops::ControlFlow;

use super::{AppendState, NO_TIMESTAMP, RollParams, Segment, TimestampOffset};
use crate::error::{Result, StorageError};
use crate::offset::Offset;

impl Segment {
    /// The largest timestamp so far and its offset, loading it on first use from the time
    /// index's last entry and the batches after it.
    pub(super) fn load_max_timestamp(&self, state: &mut AppendState) -> Result<TimestampOffset> {
        if let Some(max) = state.max_timestamp_so_far {
            return Ok(max);
        }
        let last_entry = self.time_index.read().view()?.last_entry();
        let mut max = last_entry;
        if self.time_index.read().entries() == 0 {
            max = TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset,
            };
        }
        let start = self
            .offset_index
            .read()
            .view()?
            .lookup(last_entry.offset)
            .position;
        self.log.walk_headers(start.bytes(), self.size(), |entry| {
            if entry.max_timestamp > max.timestamp {
                max = TimestampOffset {
                    timestamp: entry.max_timestamp,
                    offset: Offset::new(entry.last_offset),
                };
            }
            ControlFlow::Continue(())
        })?;
        state.max_timestamp_so_far = Some(max);
        Ok(max)
    }

    /// The largest record timestamp in the segment, or −1 when it has none.
    pub fn max_timestamp(&self) -> Result<i64> {
        let mut state = self.state.lock();
        Ok(self.load_max_timestamp(&mut state)?.timestamp)
    }

    /// The largest record timestamp, or the `.log` file's modification time when the segment
    /// has no timestamps (legacy data or empty), as Kafka's time retention uses.
    pub fn largest_timestamp(&self) -> Result<i64> {
        let max = self.max_timestamp()?;
        if max >= 0 {
            return Ok(max);
        }
        self.last_modified_ms()
    }

    /// The `.log`'s modification time, in milliseconds since the Unix epoch (0 if earlier).
    pub fn last_modified_ms(&self) -> Result<i64> {
        let path = self.log.path();
        let modified = std::fs::metadata(&path)
            .and_then(|metadata| metadata.modified())
            .map_err(StorageError::io("stat", &path))?;
        Ok(modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis() as i64))
    }

    /// Kafka's roll rule: full by size, old by time (with this segment's jitter), an index full,
    /// or an incoming offset too far from the base.
    pub fn should_roll(&self, params: &RollParams) -> Result<bool> {
        let size = self.size();
        let by_size = size > params.segment_bytes.saturating_sub(params.messages_size);
        let by_time = size > 0
            && self.time_waited_for_roll(params)?
                > crate::clock::kafka_ms(params.segment_age.saturating_sub(self.roll_jitter));
        Ok(by_size
            || by_time
            || self.offset_index_is_full()
            || self.time_index_is_full()
            || !self.fits_relative(params.max_offset_in_messages))
    }

    fn time_waited_for_roll(&self, params: &RollParams) -> Result<i64> {
        let mut state = self.state.lock();
        Ok(match self.load_rolling_based_timestamp(&mut state)? {
            Some(first_timestamp) => params.max_timestamp_in_messages - first_timestamp,
            None => params.now_ms - state.created_ms,
        })
    }

    /// The first batch's max timestamp, read once from the file.
    fn load_rolling_based_timestamp(&self, state: &mut AppendState) -> Result<Option<i64>> {
        if state.rolling_based_timestamp.is_none() {
            let first = self.log.read_entry_header(0, self.size())?;
            state.rolling_based_timestamp =
                Some(first.map(|entry| entry.max_timestamp).filter(|ts| *ts >= 0));
        }
        Ok(state.rolling_based_timestamp.flatten())
    }

    /// The first batch's max timestamp (how old the segment's oldest data is), or −1.
    pub fn first_batch_timestamp(&self) -> Result<i64> {
        let mut state = self.state.lock();
        Ok(self.load_rolling_based_timestamp(&mut state)?.unwrap_or(-1))
    }

    pub(super) fn max_timestamp_and_offset(&self) -> Result<TimestampOffset> {
        let mut state = self.state.lock();
        self.load_max_timestamp(&mut state)
    }
}
