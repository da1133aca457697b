//! Flushes: the segments holding offsets from the recovery point up to a target are fsynced,
//! then the recovery point moves there. The segments are fsynced outside the writer lock, so a
//! flush does not stall appends. The lock is taken to open the partition directory (fsynced
//! after it), to publish the new recovery point, and, when the active segment rolled during the
//! flush, to fsync that segment (its trimmed `.log` and its indexes) before the recovery point
//! passes it.
//!
//! The active segment's offset and time indexes are not fsynced by a flush that leaves the
//! recovery point inside it: recovery after a crash re-reads the segment holding the recovery
//! point whole and rebuilds its indexes, so only its records need to be on disk. They are
//! fsynced once the segment is no longer active (the roll's flush, a shutdown's, or a flush that
//! finds it rolled, under the writer lock), before the
//! recovery point can pass beyond it. With `flush.messages=1` this makes an append cost one
//! fsync of the `.log` instead of three.

use std::sync::Arc;

use super::Log;
use crate::error::Result;
use crate::fs::OpenDir;
use crate::offset::Offset;
use crate::segment::Segment;

/// Which segments a flush to an offset covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlushEnd {
    /// Those holding offsets below the target.
    Below,
    /// Also a segment starting at the target (an empty active segment), so that its files
    /// exist on disk, as Kafka's shutdown flush does.
    Including,
}

impl Log {
    /// fsyncs everything up to the LEO and moves the recovery point there.
    pub fn flush(&self) -> Result<()> {
        self.flush_range(self.log_end_offset(), FlushEnd::Below)
    }

    /// fsyncs the segments holding offsets in `[recovery point, up_to)` and raises the recovery
    /// point to `up_to`.
    pub(crate) fn flush_up_to(&self, up_to: Offset) -> Result<()> {
        self.flush_range(up_to, FlushEnd::Below)
    }

    /// Like [`Log::flush`], but also fsyncs an empty active segment (so its files exist on
    /// disk), as Kafka's shutdown flush does.
    pub(crate) fn flush_inclusive(&self) -> Result<()> {
        self.flush_range(self.log_end_offset(), FlushEnd::Including)
    }

    /// The partition directory is fsynced too when one of the flushed segments was created
    /// since the last flush (its directory entry is new).
    fn flush_range(&self, up_to: Offset, end: FlushEnd) -> Result<()> {
        self.guarded(|| self.flush_range_unguarded(up_to, end))
    }

    fn flush_range_unguarded(&self, up_to: Offset, end: FlushEnd) -> Result<()> {
        let started = std::time::Instant::now();
        let result = self.flush_segments(up_to, end);
        if let Ok(true) = result {
            // Kafka's kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs.
            metrics::histogram!("kafka_log_logflushstats_logflushrateandtimems")
                .record(started.elapsed().as_secs_f64() * 1000.0);
        }
        result.map(|_| ())
    }

    /// Flushes; returns whether anything was fsynced.
    fn flush_segments(&self, up_to: Offset, end: FlushEnd) -> Result<bool> {
        let view = self.view();
        let up_to = up_to.min(view.log_end.offset);
        let from = view.recovery_point;
        let overlaps = |index: usize, segment: &Segment| {
            let next_base = view
                .segments
                .get(index + 1)
                .map_or(Offset::MAX, |next| next.base_offset());
            let below_end = segment.base_offset() < up_to
                || (end == FlushEnd::Including && segment.base_offset() <= up_to);
            below_end && next_base > from
        };
        let mut new_segment_included = false;
        let mut flushed_any = false;
        // The active segment, when only its records were fsynced.
        let mut records_only = None;
        for (index, segment) in view.segments.iter().enumerate() {
            if overlaps(index, segment) {
                let flushed = if end == FlushEnd::Below && index + 1 == view.segments.len() {
                    records_only = Some(segment);
                    segment.flush_records()
                } else {
                    segment.flush()
                };
                if let Err(error) = flushed {
                    // Index files are fsynced by path; a log deleted meanwhile has moved them.
                    // That is the deletion winning the race, not a failing disk.
                    let writer = self.writer.lock();
                    self.ensure_open(&writer)?;
                    // Likewise a log moved to another directory meanwhile: these files are
                    // no longer its own.
                    if !Arc::ptr_eq(&self.view().home, &view.home) {
                        return Ok(false);
                    }
                    return Err(error);
                }
                flushed_any = true;
                new_segment_included |= segment.base_offset() >= from;
            }
        }
        if !flushed_any && up_to <= from {
            return Ok(false);
        }
        if new_segment_included {
            // Opened under the lock, where a move renames the directory and a deletion first
            // closes the log, so the path is right; fsynced after it. A rename meanwhile leaves the handle on the same
            // directory, and the check below then finds the log closed.
            let dir = {
                let writer = self.writer.lock();
                self.ensure_open(&writer)?;
                OpenDir::open(&self.dir())?
            };
            dir.fsync()?;
        }
        let mut writer = self.writer.lock();
        self.ensure_open(&writer)?;
        let current = self.view();
        // A log that took its future log's place meanwhile has other files: what was fsynced
        // here says nothing of them.
        let same_files = Arc::ptr_eq(&current.home, &view.home);
        if let Some(segment) = records_only
            && same_files
            && !current
                .segments
                .last()
                .is_some_and(|active| Arc::ptr_eq(active, segment))
        {
            // It rolled meanwhile, so the recovery point may now reach the next segment, past
            // which recovery would not rebuild this one's indexes: they are fsynced first.
            segment.flush()?;
        }
        if same_files && up_to > current.recovery_point && up_to <= current.log_end.offset {
            let mut next = (*current).clone();
            next.recovery_point = up_to;
            self.publish(next);
        }
        writer.last_flush_ms = self.clock.now_ms();
        Ok(flushed_any)
    }
}
