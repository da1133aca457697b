//! Truncation: removing the records at and after an offset (a replica diverging from its
//! leader, `ferrolog recover`), or every record (a replica starting again from the leader's log
//! start).

use std::sync::Arc;

use super::{Log, LogOffsetMetadata};
use crate::error::{Result, StorageError};
use crate::fs::remove_if_exists;
use crate::offset::{FilePosition, Offset};
use crate::producer::{ProducerState, snapshot};
use crate::segment::{DELETED_SUFFIX, Segment};

impl Log {
    /// Removes every record at or after `target`. Returns whether anything was removed.
    pub fn truncate_to(&self, target: Offset) -> Result<bool> {
        self.guarded(|| {
            if target < Offset::ZERO {
                return Err(StorageError::OffsetOutOfRange {
                    offset: target.value(),
                    log_start_offset: self.log_start_offset().value(),
                    log_end_offset: self.log_end_offset().value(),
                });
            }
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let view = self.view();
            if target >= view.log_end.offset {
                return Ok(false);
            }
            if view.segments[0].base_offset() > target {
                drop(writer);
                self.truncate_fully_and_start_at(target)?;
                return Ok(true);
            }
            let (kept, removed): (Vec<_>, Vec<_>) = view
                .segments
                .iter()
                .cloned()
                .partition(|segment| segment.base_offset() <= target);
            let now_ms = self.clock.now_ms();
            let active = &kept[kept.len() - 1];
            active.truncate_to(target, now_ms)?;
            active.resize_indexes(config.segment_index_bytes)?;
            let mut next = (*view).clone();
            next.log_end = LogOffsetMetadata {
                offset: target,
                segment_base_offset: active.base_offset(),
                position: FilePosition::new(active.size()),
            };
            next.segments = Arc::new(kept);
            // The cut is below the end, so below any damage there.
            next.damaged_end = None;
            next.log_start_offset = next.log_start_offset.min(target);
            next.high_watermark = next.high_watermark.min(target);
            next.recovery_point = next.recovery_point.min(target);
            self.truncate_epochs_from_end(&mut next, target)?;
            // The state as of the cut, before the view shows it: the transactions whose markers
            // were cut are open again, and the last stable offset says so at once.
            self.rebuild_producer_state(&mut next)?;
            self.publish(next);
            self.retire(&removed)?;
            drop(writer);
            Ok(true)
        })
    }

    /// Drops every segment and starts empty at `offset`: LEO = log start = HW = `offset`.
    pub(crate) fn truncate_fully_and_start_at(&self, offset: Offset) -> Result<()> {
        self.guarded(|| {
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let view = self.view();
            let old: Vec<Arc<Segment>> = view.segments.iter().cloned().collect();
            for segment in &old {
                segment.change_file_suffixes("", DELETED_SUFFIX)?;
            }
            let segment = Arc::new(Segment::create(
                &self.dir(),
                offset,
                &config,
                self.clock.now_ms(),
            )?);
            let mut next = (*view).clone();
            next.segments = Arc::new(vec![Arc::clone(&segment)]);
            next.damaged_end = None;
            next.log_end = LogOffsetMetadata {
                offset,
                segment_base_offset: offset,
                position: FilePosition::START,
            };
            next.log_start_offset = offset;
            next.high_watermark = offset;
            next.recovery_point = offset;
            next.first_unstable_offset = None;
            self.clear_epochs(&mut next)?;
            self.publish(next);
            *self.producers.lock() = ProducerState::default();
            self.verifications.lock().clear_all();
            for (_, path) in snapshot::list(&self.dir())? {
                remove_if_exists(&path)?;
            }
            self.dispose_renamed(&old)
        })
    }
}
