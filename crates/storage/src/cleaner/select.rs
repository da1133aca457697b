//! Which log to clean next, as a pure function of what the logs look like now.
//!
//! For each compacted log: the dirty section starts at the first dirty offset (the cleaner
//! checkpoint, reset to the log start when outside `[log start, LEO]`) and ends at the first
//! uncleanable offset: the smallest of the active segment's base, the high watermark, and the
//! base of the first segment with records newer than `min.compaction.lag.ms`, rounded down to a
//! segment boundary. The dirty ratio is cleanable bytes / (clean + cleanable bytes). A log is
//! cleaned when its ratio is above `min.cleanable.dirty.ratio`, or when a dirty segment is older
//! than `max.compaction.lag.ms`; the filthiest goes first.

use crate::config::LogConfig;
use crate::offset::Offset;

/// One segment as selection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentInfo {
    /// The segment's base offset.
    pub base_offset: Offset,
    /// Bytes of its `.log`.
    pub size_bytes: u64,
    /// Largest record timestamp (−1 when none).
    pub largest_timestamp_ms: i64,
    /// The first batch's max timestamp (−1 when none): how old the segment's oldest data is.
    pub first_timestamp_ms: i64,
}

/// One compacted log as selection sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogInfo<'a> {
    /// Sorted by base offset; the last is the active segment.
    pub segments: &'a [SegmentInfo],
    /// The log start offset: where the dirty section starts without a usable checkpoint.
    pub log_start_offset: Offset,
    /// The log end offset; a checkpoint past it is reset to the log start.
    pub log_end_offset: Offset,
    /// The last stable offset (the high watermark when no transaction is open): nothing at or
    /// above it is cleaned.
    pub last_stable_offset: Offset,
    /// From the cleaner checkpoint, if any.
    pub checkpointed_dirty_offset: Option<Offset>,
    /// The log's configuration (`min.compaction.lag.ms`, `max.compaction.lag.ms`).
    pub config: &'a LogConfig,
}

/// What cleaning one log would cover.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cleanable {
    /// Where the dirty section starts: the cleaner checkpoint, or the log start.
    pub first_dirty_offset: Offset,
    /// The checkpoint was outside the log and must be rewritten.
    pub dirty_offset_reset: bool,
    /// Where the dirty section ends (exclusive): a pass cleans nothing at or past it.
    pub first_uncleanable_offset: Offset,
    /// Bytes of the segments wholly below the first dirty offset.
    pub clean_bytes: u64,
    /// Bytes of the segments in the dirty section.
    pub cleanable_bytes: u64,
    /// cleanable / (clean + cleanable).
    pub dirty_ratio: f64,
    /// A dirty segment is older than `max.compaction.lag.ms` (by this much, ms).
    pub overdue_ms: Option<i64>,
}

impl Cleanable {
    /// Whether the log should be cleaned now.
    pub fn is_due(&self, config: &LogConfig) -> bool {
        (self.overdue_ms.is_some() && self.cleanable_bytes > 0)
            || self.dirty_ratio > config.min_cleanable_dirty_ratio
    }
}

/// The dirty section of one log and its ratio.
pub fn cleanable(info: &LogInfo<'_>, now_ms: i64) -> Cleanable {
    let segments = info.segments;
    let (first_dirty_offset, dirty_offset_reset) = match info.checkpointed_dirty_offset {
        Some(offset) if offset >= info.log_start_offset && offset <= info.log_end_offset => {
            (offset, false)
        }
        Some(_) => (info.log_start_offset, true),
        None => (info.log_start_offset, false),
    };
    let active_base = segments
        .last()
        .map_or(info.log_end_offset, |segment| segment.base_offset);
    let mut first_uncleanable = active_base.min(info.last_stable_offset);
    let lag = info.config.min_compaction_lag;
    if !lag.is_zero() {
        let too_new = segments
            .iter()
            .enumerate()
            .filter(|(index, segment)| {
                let next = segments
                    .get(index + 1)
                    .map_or(Offset::MAX, |next| next.base_offset);
                next > first_dirty_offset && segment.base_offset < active_base
            })
            .find(|(_, segment)| segment.largest_timestamp_ms > crate::clock::before(now_ms, lag));
        if let Some((_, segment)) = too_new {
            first_uncleanable = first_uncleanable.min(segment.base_offset);
        }
    }
    first_uncleanable = first_uncleanable.max(first_dirty_offset);
    // Round down to the base of the segment holding it: only whole segments are cleaned.
    first_uncleanable = segments
        .iter()
        .rev()
        .find(|segment| segment.base_offset <= first_uncleanable)
        .map_or(first_uncleanable, |segment| segment.base_offset)
        .max(first_dirty_offset.min(first_uncleanable));

    let mut clean_bytes = 0;
    let mut cleanable_bytes = 0;
    let mut oldest_dirty_timestamp: Option<i64> = None;
    for (index, segment) in segments.iter().enumerate() {
        let next = segments
            .get(index + 1)
            .map_or(info.log_end_offset, |next| next.base_offset);
        if next <= first_dirty_offset {
            clean_bytes += segment.size_bytes;
        } else if segment.base_offset < first_uncleanable {
            cleanable_bytes += segment.size_bytes;
            if segment.first_timestamp_ms >= 0 {
                oldest_dirty_timestamp = Some(
                    oldest_dirty_timestamp.map_or(segment.first_timestamp_ms, |t| {
                        t.min(segment.first_timestamp_ms)
                    }),
                );
            }
        }
    }
    let total = clean_bytes + cleanable_bytes;
    let dirty_ratio = if total == 0 {
        0.0
    } else {
        cleanable_bytes as f64 / total as f64
    };
    let max_lag = crate::clock::kafka_ms(info.config.max_compaction_lag);
    let overdue_ms = oldest_dirty_timestamp
        .map(|oldest| now_ms.saturating_sub(oldest).saturating_sub(max_lag))
        .filter(|overdue| *overdue > 0);
    Cleanable {
        first_dirty_offset,
        dirty_offset_reset,
        first_uncleanable_offset: first_uncleanable,
        clean_bytes,
        cleanable_bytes,
        dirty_ratio,
        overdue_ms,
    }
}

/// The index of the filthiest due candidate.
pub fn filthiest(candidates: &[(Cleanable, &LogConfig)]) -> Option<usize> {
    candidates
        .iter()
        .enumerate()
        .filter(|(_, (cleanable, config))| cleanable.is_due(config))
        .max_by(|(_, (a, _)), (_, (b, _))| {
            let a_key = (a.overdue_ms.is_some(), a.dirty_ratio);
            let b_key = (b.overdue_ms.is_some(), b.dirty_ratio);
            a_key
                .partial_cmp(&b_key)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map(|(index, _)| index)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn segment(base_offset: i64, size_bytes: u64, timestamp: i64) -> SegmentInfo {
        SegmentInfo {
            base_offset: Offset::new(base_offset),
            size_bytes,
            largest_timestamp_ms: timestamp,
            first_timestamp_ms: timestamp,
        }
    }

    fn info<'a>(
        segments: &'a [SegmentInfo],
        checkpoint: Option<i64>,
        config: &'a LogConfig,
    ) -> LogInfo<'a> {
        LogInfo {
            segments,
            log_start_offset: segments[0].base_offset,
            log_end_offset: Offset::new(100),
            last_stable_offset: Offset::new(100),
            checkpointed_dirty_offset: checkpoint.map(Offset::new),
            config,
        }
    }

    #[test]
    fn the_dirty_ratio_covers_whole_segments_below_the_active_one() {
        let config = LogConfig::default();
        let segments = [
            segment(0, 100, 0),
            segment(25, 100, 0),
            segment(50, 200, 0),
            segment(75, 50, 0),
        ];
        let result = cleanable(&info(&segments, Some(25), &config), 1_000);
        assert_eq!(
            (result.first_dirty_offset, result.first_uncleanable_offset),
            (Offset::new(25), Offset::new(75))
        );
        assert_eq!((result.clean_bytes, result.cleanable_bytes), (100, 300));
        assert!((result.dirty_ratio - 0.75).abs() < 1e-9);
        assert!(result.is_due(&config));
    }

    #[test]
    fn a_checkpoint_outside_the_log_is_reset_to_the_log_start() {
        let config = LogConfig::default();
        let segments = [segment(10, 100, 0), segment(50, 0, 0)];
        for checkpoint in [3, 500] {
            let result = cleanable(&info(&segments, Some(checkpoint), &config), 0);
            assert_eq!(result.first_dirty_offset, Offset::new(10));
            assert!(result.dirty_offset_reset);
        }
    }

    #[test]
    fn min_compaction_lag_keeps_recent_segments_dirty_but_uncleaned() {
        let config = LogConfig {
            min_compaction_lag: std::time::Duration::from_millis(1_000),
            ..LogConfig::default()
        };
        let segments = [
            segment(0, 100, 100),
            segment(25, 100, 9_500),
            segment(50, 100, 9_800),
            segment(75, 0, -1),
        ];
        let result = cleanable(&info(&segments, None, &config), 10_000);
        assert_eq!(
            result.first_uncleanable_offset,
            Offset::new(25),
            "the second segment is too new"
        );
        assert_eq!(result.cleanable_bytes, 100);
    }

    #[test]
    fn nothing_at_or_above_the_last_stable_offset_is_cleanable() {
        let config = LogConfig::default();
        let segments = [
            segment(0, 100, 0),
            segment(25, 100, 0),
            segment(50, 100, 0),
            segment(75, 0, -1),
        ];
        let mut log = info(&segments, None, &config);
        log.last_stable_offset = Offset::new(30);
        let result = cleanable(&log, 0);
        assert_eq!(
            result.first_uncleanable_offset,
            Offset::new(25),
            "rounded down to the segment holding the HW"
        );
    }

    #[test]
    fn max_compaction_lag_forces_a_log_below_the_ratio() {
        let config = LogConfig {
            min_cleanable_dirty_ratio: 0.9,
            max_compaction_lag: std::time::Duration::from_millis(1_000),
            ..LogConfig::default()
        };
        let segments = [segment(0, 1000, 0), segment(25, 10, 0), segment(75, 0, -1)];
        let result = cleanable(&info(&segments, Some(25), &config), 5_000);
        assert!(result.dirty_ratio < 0.9);
        assert_eq!(result.overdue_ms, Some(4_000));
        assert!(result.is_due(&config));
        let fresh = cleanable(&info(&segments, Some(25), &config), 500);
        assert!(!fresh.is_due(&config));
    }

    #[test]
    fn the_filthiest_due_log_is_chosen() {
        let config = LogConfig::default();
        let make = |ratio: f64| Cleanable {
            first_dirty_offset: Offset::ZERO,
            dirty_offset_reset: false,
            first_uncleanable_offset: Offset::new(10),
            clean_bytes: 0,
            cleanable_bytes: 10,
            dirty_ratio: ratio,
            overdue_ms: None,
        };
        let candidates = [
            (make(0.6), &config),
            (make(0.9), &config),
            (make(0.4), &config),
        ];
        assert_eq!(filthiest(&candidates), Some(1));
        assert_eq!(
            filthiest(&[(make(0.5), &config)]),
            None,
            "the ratio must exceed 0.5"
        );
    }
}
