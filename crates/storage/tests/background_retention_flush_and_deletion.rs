//! Background maintenance driven by a manual clock, never sleeping: Kafka's retention cases
//! (`UnifiedLogTest`, `LogManagerTest`), scheduled flushes and checkpoints, idle rolls and the
//! delayed deletion of `.deleted` files.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ferrolog_storage::Offset;
use ferrolog_storage::checkpoint::{RECOVERY_POINT_CHECKPOINT, read_offset_checkpoint};
use ferrolog_storage::clock::millis;
use ferrolog_storage::log::Log;
use ferrolog_storage::manager::{BackgroundConfig, LogManager, ManagerConfig};
use ferrolog_storage::{CleanupPolicy, LogConfig, ManualClock, TopicPartition};
use ferrolog_testkit::{TestRecord, batch};

const START: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;

struct Setup {
    _temp: tempfile::TempDir,
    dir: PathBuf,
    clock: Arc<ManualClock>,
    manager: Arc<LogManager>,
}

fn setup(defaults: LogConfig) -> Setup {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let clock = Arc::new(ManualClock::new(START));
    let config = ManagerConfig {
        log_dirs: vec![dir.clone()],
        log_defaults: defaults,
        background: BackgroundConfig {
            initial_delay: Duration::from_millis(30_000),
            retention_check_interval: Duration::from_millis(300_000),
            flush_check_interval: Some(Duration::from_millis(1_000)),
            recovery_point_checkpoint_interval: Duration::from_millis(60_000),
            log_start_offset_checkpoint_interval: Duration::from_millis(60_000),
            ..BackgroundConfig::default()
        },
        ..ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(config, clock.clone()).unwrap());
    Setup {
        _temp: temp,
        dir,
        clock,
        manager,
    }
}

/// Appends one batch of `records` records of about 100 bytes each, stamped `timestamp`, and
/// moves the high watermark to the log end, as a single-replica broker does.
fn append(log: &Log, records: usize, timestamp: i64) {
    let value = vec![b'v'; 100];
    let batch_records: Vec<TestRecord> = (0..records)
        .map(|_| TestRecord::new(timestamp, Some(b"k"), Some(&value)))
        .collect();
    log.append_as_leader(batch(&batch_records)).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
}

fn files_with_suffix(dir: &Path, suffix: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(suffix)
        })
        .count()
}

/// Segments of five one-record batches each.
fn five_per_segment() -> LogConfig {
    let one = batch(&[TestRecord::new(START, Some(b"k"), Some(&[b'v'; 100]))]).len() as u64;
    LogConfig {
        segment_bytes: one * 5,
        ..LogConfig::default()
    }
}

#[test]
fn cannot_delete_segments_at_or_above_the_high_watermark() {
    let setup = setup(LogConfig {
        retention_age: Some(Duration::ZERO),
        ..five_per_segment()
    });
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("hw", 0))
        .unwrap();
    for _ in 0..100 {
        log.append_as_leader(batch(&[TestRecord::new(
            START - HOUR,
            Some(b"k"),
            Some(&[b'v'; 100]),
        )]))
        .unwrap();
    }
    setup.clock.advance_ms(HOUR);
    for high_watermark in 0..=100 {
        log.update_high_watermark(Offset::new(high_watermark));
        log.delete_old_segments().unwrap();
        assert!(
            log.log_start_offset() <= Offset::new(high_watermark),
            "hw {high_watermark}: start {}",
            log.log_start_offset()
        );
        assert_eq!(log.log_start_offset(), Offset::new(high_watermark / 5 * 5));
    }
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.log_start_offset(), Offset::new(100));
    assert!(
        log.view().active_segment().is_empty(),
        "the log rolled before its last segment went"
    );
}

#[test]
fn size_based_retention_keeps_two_segments_of_fifteen_messages() {
    let one = batch(&[TestRecord::new(START, Some(b"k"), Some(&[b'v'; 100]))]).len() as u64;
    let setup = setup(LogConfig {
        retention_bytes: Some(one * 10),
        retention_age: None,
        ..five_per_segment()
    });
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("size", 0))
        .unwrap();
    for _ in 0..15 {
        append(&log, 1, START);
    }
    assert_eq!(log.segment_count(), 3);
    let outcome = log.delete_old_segments().unwrap();
    assert_eq!(outcome.plan.delete_count(), 1);
    assert_eq!(log.segment_count(), 2);
    assert_eq!(log.log_start_offset(), Offset::new(5));
}

#[test]
fn log_deletion_after_delete_records() {
    let setup = setup(five_per_segment());
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("records", 0))
        .unwrap();
    for _ in 0..15 {
        append(&log, 1, START);
    }
    log.roll().unwrap();
    assert_eq!(log.segment_count(), 4);
    for (start, segments) in [(1, 4), (6, 3), (15, 1)] {
        log.maybe_increment_log_start_offset(Offset::new(start))
            .unwrap();
        log.delete_old_segments().unwrap();
        assert_eq!(
            log.segment_count(),
            segments,
            "after DeleteRecords to {start}"
        );
        assert_eq!(log.log_start_offset(), Offset::new(start));
    }
}

#[test]
fn pure_compact_logs_lose_only_segments_below_the_log_start_offset() {
    let setup = setup(LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        retention_age: Some(Duration::from_millis(1)),
        retention_bytes: Some(1),
        ..five_per_segment()
    });
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("compacted", 0))
        .unwrap();
    for _ in 0..15 {
        append(&log, 1, START - HOUR);
    }
    assert_eq!(log.delete_old_segments().unwrap().plan.delete_count(), 0);
    log.maybe_increment_log_start_offset(Offset::new(7))
        .unwrap();
    assert_eq!(log.delete_old_segments().unwrap().plan.delete_count(), 1);

    let both = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: true,
            compact: true,
        },
        ..log.config().as_ref().clone()
    };
    log.update_config(both);
    log.delete_old_segments().unwrap();
    assert_eq!(
        log.segment_count(),
        1,
        "compact,delete applies time retention too"
    );
}

#[test]
fn deleted_segments_stay_as_deleted_files_until_the_delay() {
    let setup = setup(LogConfig {
        retention_age: Some(millis(HOUR)),
        file_delete_delay: Duration::from_millis(60_000),
        ..five_per_segment()
    });
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("async", 0))
        .unwrap();
    for _ in 0..10 {
        append(&log, 1, START);
    }
    // The newest record is written when it is stamped: none may be over an hour ahead.
    setup.clock.advance_ms(2 * HOUR);
    append(&log, 1, START + 2 * HOUR);
    assert_eq!(log.delete_old_segments().unwrap().plan.delete_count(), 2);
    let partition_dir = &log.dir();
    assert_eq!(
        files_with_suffix(partition_dir, ".deleted"),
        6,
        "3 files for each of 2 segments"
    );
    setup.clock.advance_ms(59_999);
    setup.manager.deleter().run_due();
    assert_eq!(files_with_suffix(partition_dir, ".deleted"), 6);
    setup.clock.advance_ms(1);
    setup.manager.deleter().run_due();
    assert_eq!(files_with_suffix(partition_dir, ".deleted"), 0);
    assert_eq!(files_with_suffix(partition_dir, ".log"), 1);
}

#[test]
fn cleanup_expired_segments_on_the_schedule_leaves_one_segment() {
    let setup = setup(LogConfig {
        retention_age: Some(millis(HOUR)),
        ..five_per_segment()
    });
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("expired", 0))
        .unwrap();
    for _ in 0..50 {
        append(&log, 1, START);
    }
    assert_eq!(log.segment_count(), 10);
    let (mut scheduler, stats) = setup.manager.background_jobs();
    setup.clock.advance_ms(29_999);
    assert!(
        scheduler.run_due(setup.clock.as_ref()).is_empty(),
        "nothing before log.initial.task.delay.ms"
    );
    setup.clock.advance_ms(2 * HOUR);
    let ran = scheduler.run_due(setup.clock.as_ref());
    assert!(ran.contains(&"log-retention"), "{ran:?}");
    assert_eq!(log.segment_count(), 1);
    assert!(stats.iter().all(|job| job.failures() == 0));
    setup.clock.advance(LogConfig::default().file_delete_delay);
    setup.manager.deleter().run_due();
    let partition_dir = &log.dir();
    assert_eq!(files_with_suffix(partition_dir, ".log"), 1);
    assert_eq!(files_with_suffix(partition_dir, ".index"), 1);
    assert_eq!(files_with_suffix(partition_dir, ".timeindex"), 1);
    assert_eq!(files_with_suffix(partition_dir, ".deleted"), 0);
}

#[test]
fn cleanup_segments_to_maintain_size_keeps_six_of_twenty() {
    let one = batch(&[TestRecord::new(START, Some(b"k"), Some(&[b'v'; 100]))]).len() as u64;
    let setup = setup(LogConfig {
        retention_bytes: Some(one * 5 * 6),
        retention_age: None,
        ..five_per_segment()
    });
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("sized", 0))
        .unwrap();
    for _ in 0..100 {
        append(&log, 1, START);
    }
    log.roll().unwrap();
    assert_eq!(log.segment_count(), 21);
    setup.manager.jobs().run_retention().unwrap();
    assert_eq!(
        log.segment_count(),
        7,
        "six full segments and the empty active one"
    );
}

#[test]
fn topic_flush_ms_triggers_a_scheduled_flush() {
    let setup = setup(LogConfig::default());
    let slow = setup
        .manager
        .get_or_create(&TopicPartition::new("slow", 0))
        .unwrap();
    setup
        .manager
        .topic_configs()
        .set("fast", [("flush.ms".to_owned(), "1000".to_owned())].into())
        .unwrap();
    let fast = setup
        .manager
        .get_or_create(&TopicPartition::new("fast", 0))
        .unwrap();
    append(&slow, 3, START);
    append(&fast, 3, START);
    let (mut scheduler, _) = setup.manager.background_jobs();
    setup.clock.advance_ms(31_000);
    let ran = scheduler.run_due(setup.clock.as_ref());
    assert!(ran.contains(&"log-flusher"), "{ran:?}");
    assert_eq!(
        fast.recovery_point(),
        Offset::new(3),
        "flush.ms=1000 has passed"
    );
    assert_eq!(
        slow.recovery_point(),
        Offset::ZERO,
        "the default flush.ms never flushes"
    );
}

#[test]
fn checkpoints_are_written_on_their_schedule() {
    let setup = setup(LogConfig::default());
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("cp", 0))
        .unwrap();
    append(&log, 4, START);
    log.flush().unwrap();
    let (mut scheduler, _) = setup.manager.background_jobs();
    let checkpoint = setup.dir.join(RECOVERY_POINT_CHECKPOINT);
    setup.clock.advance_ms(29_000);
    scheduler.run_due(setup.clock.as_ref());
    assert!(read_offset_checkpoint(&checkpoint).unwrap().is_empty());
    setup.clock.advance_ms(1_000);
    let ran = scheduler.run_due(setup.clock.as_ref());
    assert!(
        ran.contains(&"recovery-point-checkpoint") && ran.contains(&"log-start-offset-checkpoint"),
        "{ran:?}"
    );
    assert_eq!(
        read_offset_checkpoint(&checkpoint)
            .unwrap()
            .get(&TopicPartition::new("cp", 0)),
        Some(&4)
    );
}

#[test]
fn an_idle_active_segment_rolls_after_segment_ms_and_then_expires() {
    let setup = setup(LogConfig {
        segment_age: millis(HOUR),
        retention_age: Some(millis(2 * HOUR)),
        ..LogConfig::default()
    });
    let log = setup
        .manager
        .get_or_create(&TopicPartition::new("idle", 0))
        .unwrap();
    append(&log, 3, START);
    let (mut scheduler, _) = setup.manager.background_jobs();
    setup.clock.advance_ms(HOUR / 2);
    scheduler.run_due(setup.clock.as_ref());
    assert_eq!(log.segment_count(), 1, "younger than segment.ms");
    setup.clock.advance_ms(HOUR);
    scheduler.run_due(setup.clock.as_ref());
    assert_eq!(log.segment_count(), 2, "rolled with nothing appended");
    assert_eq!(
        log.recovery_point(),
        Offset::new(3),
        "the rolled segment was flushed"
    );
    setup.clock.advance_ms(2 * HOUR);
    scheduler.run_due(setup.clock.as_ref());
    assert_eq!(log.segment_count(), 1, "the idle data expired");
    assert_eq!(log.log_start_offset(), Offset::new(3));
}

#[test]
fn a_deleted_partition_dir_goes_after_the_delay() {
    let setup = setup(LogConfig::default());
    let topic_partition = TopicPartition::new("dropped", 0);
    let log = setup.manager.get_or_create(&topic_partition).unwrap();
    append(&log, 2, START);
    setup.manager.delete(&topic_partition).unwrap();
    assert_eq!(files_with_suffix(&setup.dir, "-delete"), 1);
    setup.clock.advance(LogConfig::default().file_delete_delay);
    setup.manager.deleter().run_due();
    assert_eq!(files_with_suffix(&setup.dir, "-delete"), 0);
}
