//! What the background jobs do to one log: retention, rolling an idle segment, flushing on
//! `flush.ms`; and the cleaner's swap. Retention and the idle roll are each one short step under
//! the writer lock (a roll's flush follows after it); the `flush.ms` flush fsyncs outside it;
//! file removal is handed on. The cleaner's swap renames and fsyncs the directory twice under
//! the lock.

use std::sync::Arc;

use super::Log;
use super::retention::{self, DeletionReason, RetentionPlan, SegmentSummary};
use crate::error::{Result, StorageError};
use crate::fs::fsync_dir;
use crate::segment::{CLEANED_SUFFIX, DELETED_SUFFIX, RollParams, SWAP_SUFFIX, Segment};

/// What one retention pass removed from a log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionOutcome {
    /// What retention decided; a damaged active segment stays even when the plan counts it.
    pub plan: RetentionPlan,
    /// Bytes of the `.log` files of the segments removed.
    pub deleted_bytes: u64,
}

impl Log {
    /// Deletes the segments retention allows (see [`retention::plan`]): they leave the segment
    /// list at once, the log start offset moves to the first remaining segment, and their
    /// files are renamed `.deleted` for the deleter. When every segment goes, the log rolls
    /// first so an (empty) active segment remains.
    pub fn delete_old_segments(&self) -> Result<RetentionOutcome> {
        self.guarded(|| {
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let now_ms = self.clock.now_ms();
            let view = self.view();
            let summaries = view
                .segments
                .iter()
                .map(|segment| {
                    let largest_timestamp_ms = match segment.largest_timestamp() {
                        Ok(timestamp) => Some(timestamp),
                        Err(error) => match &error {
                            StorageError::Corrupt { path, position, .. } => {
                                self.report_damage(path, *position, &error);
                                None
                            }
                            _ => return Err(error),
                        },
                    };
                    Ok(SegmentSummary {
                        base_offset: segment.base_offset(),
                        size_bytes: segment.size(),
                        largest_timestamp_ms,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let plan = retention::plan(
                &config,
                &summaries,
                view.log_end.offset,
                view.high_watermark,
                view.log_start_offset,
                now_ms,
            );
            if let Some(future) = plan.blocked_by_future_timestamp {
                tracing::warn!(
                    partition = %self.topic_partition,
                    segment_base = future.base_offset.value(),
                    largest_timestamp_ms = future.largest_timestamp_ms,
                    now_ms,
                    "a segment's largest timestamp is in the future: time retention keeps it and every later segment until then"
                );
            }
            let mut count = plan.delete_count();
            if count == view.segments.len() && view.damaged_end.is_some() {
                // No roll past damage: the damaged active segment stays.
                count -= 1;
            }
            if count == 0 {
                return Ok(RetentionOutcome {
                    plan,
                    deleted_bytes: 0,
                });
            }
            let rolled = if count == view.segments.len() {
                Some(self.roll_locked(&config, None)?)
            } else {
                None
            };
            let view = self.view();
            let removed: Vec<Arc<Segment>> = view.segments[..count].to_vec();
            let mut next = (*view).clone();
            next.segments = Arc::new(view.segments[count..].to_vec());
            next.log_start_offset = next.log_start_offset.max(next.segments[0].base_offset());
            next.recovery_point = next.recovery_point.max(next.log_start_offset).min(next.log_end.offset);
            let log_start_offset = next.log_start_offset;
            self.truncate_epochs_from_start(&mut next);
            self.publish(next);
            // Renamed under the lock, so a concurrent deletion of the whole log cannot move the
            // directory from under the renames.
            let deleted_bytes = removed.iter().map(|segment| segment.size()).sum();
            self.retire(&removed)?;
            self.on_log_start_moved(log_start_offset)?;
            drop(writer);
            if let Some(new_base) = rolled {
                self.make_roll_durable(new_base)?;
            }
            for (reason, segments) in &plan.steps {
                tracing::info!(
                    partition = %self.topic_partition,
                    segments,
                    reason = match reason {
                        DeletionReason::LogStartOffsetBreach => "below the log start offset",
                        DeletionReason::RetentionSize => "retention.bytes",
                        DeletionReason::RetentionTime => "retention.ms",
                    },
                    %log_start_offset,
                    "deleting segments"
                );
            }
            Ok(RetentionOutcome { plan, deleted_bytes })
        })
    }

    /// Rolls the active segment when it is non-empty and older than `segment.ms` (less its
    /// jitter) by the clock, even though nothing is being appended: idle partitions then become
    /// eligible for retention and compaction. Returns whether it rolled.
    pub(crate) fn roll_if_idle(&self) -> Result<bool> {
        let rolled = self.guarded(|| {
            let config = self.config();
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let view = self.view();
            let active = view.active_segment();
            if active.is_empty() || view.damaged_end.is_some() {
                return Ok(None);
            }
            let now_ms = self.clock.now_ms();
            let params = RollParams {
                segment_age: config.segment_age,
                segment_bytes: config.segment_size(),
                max_timestamp_in_messages: now_ms,
                max_offset_in_messages: view.log_end.offset,
                messages_size: 0,
                now_ms,
            };
            if !active.should_roll(&params)? {
                return Ok(None);
            }
            self.roll_locked(&config, None).map(Some)
        })?;
        match rolled {
            Some(new_base) => {
                self.make_roll_durable(new_base)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Flushes when `flush.ms` has passed since the last flush. Returns whether it flushed.
    pub(crate) fn flush_if_due(&self) -> Result<bool> {
        let Some(interval) = self.config().flush_interval else {
            return Ok(false);
        };
        let due = crate::clock::elapsed(self.last_flush_ms(), self.clock.now_ms()) >= interval;
        if due && self.recovery_point() < self.log_end_offset() {
            self.flush()?;
            return Ok(true);
        }
        Ok(false)
    }
}

impl Log {
    /// Swaps `replaced` (consecutive segments of this log, not the active one) for `cleaned`,
    /// a segment written with the `.cleaned` suffix and already flushed. Each step is durable,
    /// so a crash anywhere leaves the old data or the new (see the load's leftover handling):
    /// `.cleaned` → `.swap` (fsync dir), old segments → `.deleted`, `.swap` → final names
    /// (fsync dir). Fails, changing nothing, when the segments are no longer in the log
    /// (truncated, deleted or cleaned meanwhile); the cleaned files are then removed.
    pub(crate) fn replace_segments(
        &self,
        replaced: &[Arc<Segment>],
        cleaned: Segment,
    ) -> Result<()> {
        let outcome = self.guarded(|| {
            let writer = self.writer.lock();
            self.ensure_open(&writer)?;
            let view = self.view();
            let start = view.segments.iter().position(|segment| {
                replaced
                    .first()
                    .is_some_and(|first| Arc::ptr_eq(segment, first))
            });
            let still_here = start.is_some_and(|start| {
                replaced.len() < view.segments.len() - start
                    && replaced
                        .iter()
                        .zip(&view.segments[start..])
                        .all(|(old, current)| Arc::ptr_eq(old, current))
            });
            let Some(start) = start.filter(|_| still_here) else {
                cleaned.delete_files()?;
                return Ok(false);
            };
            let dir = &view.home.dir;
            // From the first rename the files are between the old state and the new, which only
            // loading settles (it completes the swap). A failure now, of whatever kind, must
            // not let the log go on over them: the directory goes offline until the next start.
            let swapped = cleaned
                .change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
                .and_then(|()| fsync_dir(dir))
                .and_then(|()| {
                    replaced
                        .iter()
                        .try_for_each(|old| old.change_file_suffixes("", DELETED_SUFFIX))
                })
                .and_then(|()| cleaned.change_file_suffixes(SWAP_SUFFIX, ""))
                .and_then(|()| fsync_dir(dir));
            if let Err(error) = swapped {
                view.home.health.mark_offline(&error);
                return Err(error);
            }
            let mut segments: Vec<Arc<Segment>> = view.segments[..start].to_vec();
            cleaned.seal(&self.open_files);
            segments.push(Arc::new(cleaned));
            segments.extend_from_slice(&view.segments[start + replaced.len()..]);
            let mut next = (*view).clone();
            next.segments = Arc::new(segments);
            self.publish(next);
            self.dispose_renamed(replaced)?;
            Ok(true)
        });
        match outcome {
            Ok(true) => Ok(()),
            Ok(false) => Err(StorageError::Dropped(format!(
                "{}: the cleaned segments changed meanwhile; the pass is dropped",
                self.topic_partition
            ))),
            Err(error) => Err(error),
        }
    }
}
