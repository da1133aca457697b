//! The retention plan on its own, with Kafka's cases and the edge cases of time.

use super::*;
use crate::config::CleanupPolicy;

const GB: u64 = 1_000_000_000;
const NOW: i64 = 1_000_000_000;

fn segment(base_offset: i64, size_bytes: u64, largest_timestamp_ms: i64) -> SegmentSummary {
    SegmentSummary {
        base_offset: Offset::new(base_offset),
        size_bytes,
        largest_timestamp_ms: Some(largest_timestamp_ms),
    }
}

/// [`plan`] with the log's bounds as plain numbers.
fn plan_at(
    config: &LogConfig,
    segments: &[SegmentSummary],
    log_end_offset: i64,
    high_watermark: i64,
    log_start_offset: i64,
    now_ms: i64,
) -> RetentionPlan {
    plan(
        config,
        segments,
        Offset::new(log_end_offset),
        Offset::new(high_watermark),
        Offset::new(log_start_offset),
        now_ms,
    )
}

/// A config with Kafka's `retention.bytes` and `retention.ms` values (−1: no limit).
fn config(retention_bytes: i64, retention_ms: i64) -> LogConfig {
    LogConfig {
        retention_bytes: u64::try_from(retention_bytes).ok(),
        retention_age: (retention_ms >= 0).then(|| crate::clock::millis(retention_ms)),
        ..LogConfig::default()
    }
}

#[test]
fn size_retention_keeps_at_least_the_limit() {
    // 1 GB, 1 GB, 1 GB and 500 MB with a 1 GB limit: exactly the first two go.
    let segments = [
        segment(0, GB, NOW),
        segment(100, GB, NOW),
        segment(200, GB, NOW),
        segment(300, GB / 2, NOW),
    ];
    let plan = plan_at(&config(GB as i64, -1), &segments, 350, 350, 0, NOW);
    assert_eq!(plan.steps, vec![(DeletionReason::RetentionSize, 2)]);
}

#[test]
fn size_retention_of_fifteen_messages_five_per_segment_keeps_two_segments() {
    // Kafka's shouldDeleteSizeBasedSegments: segments of 5 messages, retention of 10 messages.
    let segments = [
        segment(0, 500, NOW),
        segment(5, 500, NOW),
        segment(10, 500, NOW),
    ];
    let plan = plan_at(&config(1000, -1), &segments, 15, 15, 0, NOW);
    assert_eq!(segments.len() - plan.delete_count(), 2);
}

#[test]
fn time_retention_deletes_segments_older_than_retention_ms() {
    let segments = [
        segment(0, 10, NOW - 5000),
        segment(10, 10, NOW - 3000),
        segment(20, 10, NOW - 10),
        segment(30, 0, -1),
    ];
    let plan = plan_at(&config(-1, 2000), &segments, 30, 30, 0, NOW);
    assert_eq!(plan.steps, vec![(DeletionReason::RetentionTime, 2)]);
}

#[test]
fn nothing_at_or_above_the_high_watermark_is_deleted() {
    let segments = [segment(0, 10, 0), segment(10, 10, 0), segment(20, 10, 0)];
    for high_watermark in 0..30 {
        let plan = plan_at(&config(-1, 1), &segments, 30, high_watermark, 0, NOW);
        let expected = (high_watermark / 10) as usize;
        assert_eq!(
            plan.delete_count(),
            expected,
            "high watermark {high_watermark}"
        );
    }
    let all = plan_at(&config(-1, 1), &segments, 30, 30, 0, NOW);
    assert_eq!(
        all.delete_count(),
        3,
        "everything goes once the HW reaches the LEO (the log rolls first)"
    );
}

#[test]
fn an_empty_last_segment_is_never_deleted() {
    let segments = [segment(0, 10, 0), segment(10, 0, -1)];
    let plan = plan_at(&config(-1, 1), &segments, 10, 10, 0, NOW);
    assert_eq!(plan.delete_count(), 1);
}

#[test]
fn log_start_offset_breach_comes_first_and_is_all_a_compacted_log_gets() {
    let segments = [
        segment(0, 10, 0),
        segment(5, 10, 0),
        segment(10, 10, 0),
        segment(15, 10, 0),
    ];
    let compact = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        ..config(1, 1)
    };
    let plan = plan_at(&compact, &segments, 20, 20, 10, NOW);
    assert_eq!(plan.steps, vec![(DeletionReason::LogStartOffsetBreach, 2)]);
    let both = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: true,
            compact: true,
        },
        ..config(-1, 1)
    };
    let plan = super::plan(
        &both,
        &segments,
        Offset::new(20),
        Offset::new(20),
        Offset::new(10),
        NOW,
    );
    assert_eq!(
        plan.steps,
        vec![
            (DeletionReason::LogStartOffsetBreach, 2),
            (DeletionReason::RetentionTime, 2)
        ]
    );
}

#[test]
fn delete_records_log_start_offsets_remove_the_segments_below() {
    // Kafka's testLogDeletionAfterDeleteRecords: 3 segments of 5 messages and an empty active.
    let segments = [
        segment(0, 5, NOW),
        segment(5, 5, NOW),
        segment(10, 5, NOW),
        segment(15, 0, -1),
    ];
    let compact_only = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        ..LogConfig::default()
    };
    for (log_start, remaining) in [(1, 4), (6, 3), (15, 1)] {
        let plan = plan_at(&compact_only, &segments, 15, 15, log_start, NOW);
        assert_eq!(
            segments.len() - plan.delete_count(),
            remaining,
            "log start {log_start}"
        );
    }
}

#[test]
fn a_future_timestamp_stops_time_retention_and_is_reported() {
    let segments = [
        segment(0, 10, NOW - 5000),
        segment(10, 10, NOW + 60_000),
        segment(20, 10, NOW - 5000),
        segment(30, 0, -1),
    ];
    let plan = plan_at(&config(-1, 1000), &segments, 30, 30, 0, NOW);
    assert_eq!(plan.delete_count(), 1, "the older segment still goes");
    assert_eq!(plan.blocked_by_future_timestamp, Some(segments[1]));
    let later = super::plan(
        &config(-1, 1000),
        &segments,
        Offset::new(30),
        Offset::new(30),
        Offset::ZERO,
        NOW + 61_001,
    );
    assert_eq!(
        later.delete_count(),
        3,
        "once the future has passed, retention catches up"
    );
    assert_eq!(later.blocked_by_future_timestamp, None);
}

#[test]
fn negative_retention_disables_each_step() {
    let segments = [segment(0, GB, 0), segment(10, GB, 0)];
    assert_eq!(
        plan_at(&config(-1, -1), &segments, 20, 20, 0, NOW).delete_count(),
        0
    );
}

#[test]
fn empty_segments_in_the_middle_count_as_nothing_for_size() {
    let segments = [
        segment(0, 0, 0),
        segment(10, 100, NOW),
        segment(20, 100, NOW),
        segment(30, 0, -1),
    ];
    let plan = plan_at(&config(100, -1), &segments, 30, 30, 0, NOW);
    assert_eq!(plan.steps, vec![(DeletionReason::RetentionSize, 2)]);
}

#[test]
fn a_segment_whose_age_cannot_be_read_stops_time_retention_not_size_retention() {
    let old = NOW - 10_000;
    let mut segments = [
        segment(0, GB, old),
        segment(100, GB, old),
        segment(200, GB, old),
        segment(300, GB, NOW),
    ];
    segments[1].largest_timestamp_ms = None;
    let by_time = plan_at(&config(-1, 1_000), &segments, 350, 350, 0, NOW);
    assert_eq!(by_time.steps, vec![(DeletionReason::RetentionTime, 1)]);
    assert_eq!(by_time.blocked_by_damage, Some(segments[1]));
    let by_size = plan_at(&config(GB as i64, -1), &segments, 350, 350, 0, NOW);
    assert_eq!(by_size.steps, vec![(DeletionReason::RetentionSize, 3)]);
    assert_eq!(by_size.blocked_by_damage, None);
}
