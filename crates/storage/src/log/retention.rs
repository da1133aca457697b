//! Retention as a pure function: from the segments, the configuration, the time and the high
//! watermark to how many of the oldest segments to delete and why. [`super::Log`] carries the
//! plan out.
//!
//! Kafka's order (KAFKA-12177): segments wholly below the log start offset, then by size, then
//! by time; a policy without `delete` applies only the first. Each step walks from the oldest
//! segment and stops at the first that does not qualify. A segment qualifies only if all of it
//! is below the high watermark, and an empty last segment never does.

use crate::config::LogConfig;
use crate::offset::Offset;

/// What retention needs to know of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSummary {
    /// The segment's base offset.
    pub base_offset: Offset,
    /// Bytes of its `.log`.
    pub size_bytes: u64,
    /// The largest record timestamp, or the file's modification time when it has none; `None`
    /// when damaged bytes keep it from being read.
    pub largest_timestamp_ms: Option<i64>,
}

/// Why segments were deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletionReason {
    /// Wholly below the log start offset (DeleteRecords, or an earlier deletion).
    LogStartOffsetBreach,
    /// `retention.bytes` exceeded.
    RetentionSize,
    /// Older than `retention.ms`.
    RetentionTime,
}

/// How many of the oldest segments to delete, step by step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionPlan {
    /// `(reason, count)` for each step that deletes something, in order.
    pub steps: Vec<(DeletionReason, usize)>,
    /// A segment whose largest timestamp lies in the future stopped time retention: it and the
    /// segments after it stay until that time has passed plus `retention.ms`.
    pub blocked_by_future_timestamp: Option<SegmentSummary>,
    /// A segment whose largest timestamp could not be read stopped time retention.
    pub blocked_by_damage: Option<SegmentSummary>,
}

impl RetentionPlan {
    /// Segments to delete from the oldest.
    pub fn delete_count(&self) -> usize {
        self.steps.iter().map(|(_, count)| count).sum()
    }
}

/// The oldest segments to delete. `segments` are sorted by base offset; the last is active.
pub fn plan(
    config: &LogConfig,
    segments: &[SegmentSummary],
    log_end_offset: Offset,
    high_watermark: Offset,
    log_start_offset: Offset,
    now_ms: i64,
) -> RetentionPlan {
    let mut plan = RetentionPlan::default();
    let mut remaining = segments;
    let step =
        |plan: &mut RetentionPlan,
         remaining: &mut &[SegmentSummary],
         reason: DeletionReason,
         qualifies: &mut dyn FnMut(&SegmentSummary, Option<&SegmentSummary>) -> bool| {
            let count = deletable(remaining, log_end_offset, high_watermark, qualifies);
            if count > 0 {
                plan.steps.push((reason, count));
                *remaining = &remaining[count..];
            }
        };

    step(
        &mut plan,
        &mut remaining,
        DeletionReason::LogStartOffsetBreach,
        &mut |_, next| next.is_some_and(|next| next.base_offset <= log_start_offset),
    );
    if !config.cleanup_policy.delete {
        return plan;
    }

    if let Some(limit) = config.retention_bytes {
        let total: u64 = remaining.iter().map(|segment| segment.size_bytes).sum();
        if total >= limit {
            let mut excess = total - limit;
            step(
                &mut plan,
                &mut remaining,
                DeletionReason::RetentionSize,
                &mut |segment, _| {
                    if excess >= segment.size_bytes {
                        excess -= segment.size_bytes;
                        true
                    } else {
                        false
                    }
                },
            );
        }
    }

    if let Some(retention_age) = config.retention_age {
        let (mut future, mut damaged) = (None, None);
        step(
            &mut plan,
            &mut remaining,
            DeletionReason::RetentionTime,
            &mut |segment, _| {
                let Some(largest_timestamp_ms) = segment.largest_timestamp_ms else {
                    damaged = Some(*segment);
                    return false;
                };
                if largest_timestamp_ms > now_ms {
                    future = Some(*segment);
                }
                crate::clock::elapsed(largest_timestamp_ms, now_ms) > retention_age
            },
        );
        plan.blocked_by_future_timestamp = future;
        plan.blocked_by_damage = damaged;
    }
    plan
}

/// How many segments from the start qualify, stopping at the first that does not.
fn deletable(
    segments: &[SegmentSummary],
    log_end_offset: Offset,
    high_watermark: Offset,
    qualifies: &mut dyn FnMut(&SegmentSummary, Option<&SegmentSummary>) -> bool,
) -> usize {
    let mut count = 0;
    for (index, segment) in segments.iter().enumerate() {
        let next = segments.get(index + 1);
        let last_and_empty = next.is_none() && segment.size_bytes == 0;
        let upper_bound = next.map_or(log_end_offset, |next| next.base_offset);
        if upper_bound > high_watermark || last_and_empty || !qualifies(segment, next) {
            break;
        }
        count += 1;
    }
    count
}

#[cfg(test)]
mod tests;
