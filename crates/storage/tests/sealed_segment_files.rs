//! The file descriptors and memory mappings segments hold are bounded whatever their number:
//! with segments of one batch each, hundreds per partition, at most
//! `ferrolog.max.open.sealed.segments` sealed segments' `.log` files are open and their indexes
//! mapped (besides each partition's active one), through appends, reads of the whole log,
//! compaction, retention, and restarts after a clean stop, after a crash and with every offset
//! index missing; and everything reads back.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ferrolog_storage::cleaner::offset_map::OffsetMap;
use ferrolog_storage::log::FetchBound;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{CleanupPolicy, LogConfig, SystemClock, TopicPartition};

const LIMIT: usize = 5;
const PARTITIONS: i32 = 3;
const BATCHES: usize = 150;

fn open(dir: &Path) -> Arc<LogManager> {
    Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.to_path_buf()],
                max_open_sealed_segments: LIMIT,
                log_defaults: LogConfig {
                    // One batch of one record per segment.
                    segment_bytes: 100,
                    file_delete_delay: Duration::ZERO,
                    ..LogConfig::default()
                },
                ..ManagerConfig::default()
            },
            Arc::new(SystemClock),
        )
        .unwrap(),
    )
}

/// The `.log` files under `dir` this process holds open now.
fn open_log_files(dir: &Path) -> usize {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.starts_with(&dir) && target.extension().is_some_and(|e| e == "log"))
        .count()
}

/// The offset and time indexes under `dir` this process has mapped now.
fn mapped_indexes(dir: &Path) -> usize {
    let dir = dir.canonicalize().unwrap();
    let dir = dir.to_str().unwrap();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once('/').map(|(_, path)| format!("/{path}")))
        .filter(|path| path.starts_with(dir))
        .filter(|path| {
            let path = path.trim_end_matches(" (deleted)");
            path.ends_with(".index") || path.ends_with(".timeindex")
        })
        .count()
}

/// At most the limit of sealed segments' files and index pairs, and one active file and
/// index pair per partition.
fn assert_bounded(dir: &Path, when: &str) {
    let open = open_log_files(dir);
    assert!(
        open <= LIMIT + PARTITIONS as usize,
        "{when}: {open} .log files open, more than {LIMIT} sealed and {PARTITIONS} active"
    );
    let mapped = mapped_indexes(dir);
    assert!(
        mapped <= 2 * (LIMIT + PARTITIONS as usize),
        "{when}: {mapped} indexes mapped, more than those of {LIMIT} sealed and {PARTITIONS} active segments"
    );
}

fn tp(partition: i32) -> TopicPartition {
    TopicPartition::new("tiny", partition)
}

fn read_all(manager: &LogManager) -> Vec<Vec<String>> {
    (0..PARTITIONS)
        .map(|partition| {
            let log = manager.get(&tp(partition)).unwrap();
            common::records_from(&log, 0, FetchBound::LogEnd)
                .into_iter()
                .map(|record| String::from_utf8(record.value.unwrap()).unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn sealed_segments_files_stay_within_their_limit_and_read_back() {
    let temp = tempfile::tempdir().unwrap();
    let manager = open(temp.path());
    for partition in 0..PARTITIONS {
        let log = manager.get_or_create(&tp(partition)).unwrap();
        // Stamped now: older records would go with time retention.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        for i in 0..BATCHES {
            let batch = ferrolog_testkit::numbered_batch(i, 1, now);
            log.append_as_leader(batch).unwrap();
        }
        assert!(
            log.segment_count() >= BATCHES,
            "{} segments",
            log.segment_count()
        );
    }
    assert_bounded(temp.path(), "after the appends");
    let written = read_all(&manager);
    for values in &written {
        let expected: Vec<String> = (0..BATCHES).map(|i| format!("value-{i}")).collect();
        assert_eq!(values, &expected);
    }
    assert_bounded(temp.path(), "after reading every segment");
    assert!(manager.open_files().open_count() <= LIMIT);
    assert!(
        manager.open_files().reopened() > 0,
        "closed files were opened again"
    );

    // Compaction and retention go over every segment too.
    let log = manager.get(&tp(0)).unwrap();
    let mut compact = (*log.config()).clone();
    compact.cleanup_policy = CleanupPolicy::COMPACT;
    compact.min_cleanable_dirty_ratio = 0.0;
    log.update_config(compact);
    let cleaner = manager.new_cleaner();
    let mut map = OffsetMap::new(1 << 20, 0.9);
    while cleaner.clean_once(&mut map) {}
    assert_bounded(temp.path(), "after compaction");
    let trimmed = manager.get(&tp(1)).unwrap();
    trimmed
        .maybe_increment_log_start_offset(ferrolog_storage::Offset::new(100))
        .unwrap();
    manager.jobs().run_retention().unwrap();
    assert_bounded(temp.path(), "after retention");
    let after = read_all(&manager);
    assert_eq!(
        after[0], written[0],
        "every key was distinct: compaction kept them all"
    );
    assert_eq!(after[1], written[1][100..]);
    assert_eq!(after[2], written[2]);
    manager.shutdown().unwrap();
    // Each manager, and what holds its logs, goes before the next opens the same files.
    drop((cleaner, log, trimmed, manager));

    // A clean start opens no sealed segment's file; a crashed one recovers and stays bounded.
    let manager = open(temp.path());
    assert_bounded(temp.path(), "after a clean start");
    assert_eq!(read_all(&manager)[2], written[2]);
    // Gone without a shutdown: the next start recovers.
    drop(manager);
    std::fs::remove_file(
        temp.path()
            .join(ferrolog_storage::manager::CLEAN_SHUTDOWN_FILE),
    )
    .ok();
    let manager = open(temp.path());
    assert_bounded(temp.path(), "after recovery");
    assert_eq!(read_all(&manager)[2], written[2]);
    manager.shutdown().unwrap();
    drop(manager);

    // Without its offset indexes every segment is recovered, its indexes rebuilt: they are
    // unmapped again as others are read.
    let mut removed = 0;
    for partition in std::fs::read_dir(temp.path()).unwrap() {
        let partition = partition.unwrap().path();
        if !partition.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&partition).unwrap() {
            let file = file.unwrap().path();
            if file
                .extension()
                .is_some_and(|extension| extension == "index")
            {
                std::fs::remove_file(file).unwrap();
                removed += 1;
            }
        }
    }
    assert!(removed > BATCHES, "{removed} offset indexes removed");
    let manager = open(temp.path());
    assert_bounded(temp.path(), "after rebuilding every index");
    assert_eq!(read_all(&manager)[2], written[2]);
    assert_bounded(temp.path(), "after reading through rebuilt indexes");
    manager.shutdown().unwrap();
}
