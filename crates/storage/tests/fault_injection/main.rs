//! Faults injected into the storage file layer (see `src/fault.rs`): each write, fsync,
//! rename, index allocation or mapping that fails gives a clear error; the data directory goes
//! offline only for a real I/O failure (never for a full disk or a process out of file
//! descriptors); a failed fsync is never retried; and after a restart every acknowledged
//! record is there, in order, once.
//!
//! Needs the `failpoints` feature: `cargo test -p ferrolog-storage --features failpoints`.
//! The points are process-wide, so every test holds a `FailScenario` (one at a time).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fail::FailScenario;
use ferrolog_records::BatchBuilder;
use ferrolog_storage::Offset;
use ferrolog_storage::cleaner::offset_map::OffsetMap;
use ferrolog_storage::log::{FetchBound, Log};
use ferrolog_storage::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManagerConfig};
use ferrolog_storage::producer::NoTxnCoordinator;
use ferrolog_storage::{CleanupPolicy, LogConfig, ManualClock, StorageError, TopicPartition};

mod background;
mod moves;
mod salvage;

const START: i64 = 1_700_000_000_000;

fn tp(partition: i32) -> TopicPartition {
    TopicPartition::new("events", partition)
}

fn open(dir: &Path, policy: CleanupPolicy) -> Arc<LogManager> {
    open_with(dir, policy, i64::MAX)
}

/// `open` with `flush.messages` set.
fn open_with(dir: &Path, policy: CleanupPolicy, flush_messages: i64) -> Arc<LogManager> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            cleanup_policy: policy,
            segment_bytes: 16 * 1024,
            index_interval_bytes: 512,
            min_cleanable_dirty_ratio: 0.01,
            file_delete_delay: Duration::ZERO,
            flush_messages,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    Arc::new(LogManager::open(config, Arc::new(ManualClock::new(START))).unwrap())
}

/// The records a test was told were written: (offset, value).
#[derive(Debug, Default)]
struct Acknowledged(Vec<(i64, String)>);

impl Acknowledged {
    /// Appends one batch holding `value` (keyed by `key`); remembers it when acknowledged.
    fn produce(&mut self, log: &Log, key: &str, value: &str) -> ferrolog_storage::Result<i64> {
        let mut builder = BatchBuilder::new(0);
        builder
            .append(START, Some(key.as_bytes()), Some(value.as_bytes()), &[])
            .unwrap();
        let info = log.append_as_leader(builder.build().unwrap())?;
        log.maybe_increment_high_watermark(log.log_end_offset());
        self.0.push((info.first_offset.value(), value.to_owned()));
        Ok(info.first_offset.value())
    }

    fn produce_many(&mut self, log: &Log, from: usize, count: usize) {
        for i in from..from + count {
            self.produce(
                log,
                &format!("key-{}", i % 50),
                &format!("value-{i:05}-{}", "x".repeat(200)),
            )
            .unwrap();
        }
    }

    /// Every acknowledged record is in `log` at its offset, and nothing else is between them.
    fn all_in(&self, log: &Log) {
        let stored = records(log, self.0.first().map_or(0, |(offset, _)| *offset));
        assert_eq!(
            stored, self.0,
            "the log holds exactly what was acknowledged"
        );
    }
}

/// Every (offset, value) of the log from `from` on.
fn records(log: &Log, from: i64) -> Vec<(i64, String)> {
    common::records_from(log, from, FetchBound::LogEnd)
        .into_iter()
        .map(|record| (record.offset, record.value_text().unwrap()))
        .collect()
}

fn offline(manager: &LogManager) -> bool {
    manager.data_dirs()[0].is_offline()
}

/// Stops as a crash would: nothing flushed, closed or checkpointed.
fn crash(manager: Arc<LogManager>) {
    std::mem::forget(manager);
}

/// Opens `dir` again after a crash (the lock of the crashed instance is released first: its
/// process would have died).
fn reopen_after_crash(dir: &Path, policy: CleanupPolicy) -> Arc<LogManager> {
    release_lock_of_crashed_instance(dir);
    let manager = open(dir, policy);
    assert!(
        manager.startup_report().offline_dirs.is_empty(),
        "{:?}",
        manager.startup_report()
    );
    manager
}

/// A forgotten LogManager still holds its directory's `flock`; a dead process would not. A
/// new open file description of `.lock` cannot take over that lock, so the lock file is
/// replaced (the old inode keeps the stale lock, the new one is free).
fn release_lock_of_crashed_instance(dir: &Path) {
    let lock = dir.join(".lock");
    if lock.exists() {
        std::fs::remove_file(&lock).unwrap();
    }
}

fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    (temp, dir)
}

#[test]
fn a_write_without_space_is_refused_cleanly_and_reads_go_on() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let manager = open(&dir, CleanupPolicy::DELETE);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 100);
    let end = log.log_end_offset();

    for errno in ["ENOSPC", "EDQUOT"] {
        fail::cfg("log.write", &format!("return({errno})")).unwrap();
        let refused = acknowledged.produce(&log, "k", "refused").unwrap_err();
        assert!(matches!(refused, StorageError::NoSpace { .. }), "{refused}");
        assert!(
            refused.to_string().contains(".log"),
            "names the file: {refused}"
        );
        assert!(!offline(&manager), "a full disk is not a failing disk");
        assert_eq!(log.log_end_offset(), end, "nothing was appended");
        acknowledged.all_in(&log);
    }

    fail::remove("log.write");
    acknowledged.produce_many(&log, 100, 20);
    acknowledged.all_in(&log);
    drop(log);
    manager.shutdown().unwrap();
    let manager = open(&dir, CleanupPolicy::DELETE);
    acknowledged.all_in(&manager.get(&tp(0)).unwrap());
    scenario.teardown();
}

#[test]
fn an_index_without_space_is_sparser_and_the_data_whole() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let manager = open(&dir, CleanupPolicy::DELETE);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 10);

    fail::cfg("index.allocate", "return(ENOSPC)").unwrap();
    acknowledged.produce_many(&log, 10, 300);
    assert!(!offline(&manager));
    assert!(log.segment_count() > 3, "rolled several times");
    acknowledged.all_in(&log);
    for offset in [0, 57, 150, 299] {
        let read = records(&log, offset);
        assert_eq!(read.first().map(|(o, _)| *o), Some(offset));
    }

    // Restart after a crash with the disk still full: recovery rebuilds the active segment's
    // indexes with what room there is.
    crash(manager);
    let manager = reopen_after_crash(&dir, CleanupPolicy::DELETE);
    let log = manager.get(&tp(0)).unwrap();
    acknowledged.all_in(&log);
    fail::remove("index.allocate");
    acknowledged.produce_many(&log, 310, 50);
    acknowledged.all_in(&log);
    scenario.teardown();
}

#[test]
fn a_failed_fsync_takes_the_directory_offline_and_is_never_retried() {
    for errno in ["EIO", "ENOSPC"] {
        let scenario = FailScenario::setup();
        let (_temp, dir) = data_dir();
        let manager = open(&dir, CleanupPolicy::DELETE);
        let log = manager.get_or_create(&tp(0)).unwrap();
        let mut acknowledged = Acknowledged::default();
        acknowledged.produce_many(&log, 0, 30);
        let recovery_point = log.recovery_point();

        fail::cfg("log.fsync", &format!("return({errno})")).unwrap();
        let failed = log.flush().unwrap_err();
        assert!(
            matches!(failed, StorageError::Io { .. }),
            "{errno}: {failed}"
        );
        assert!(
            offline(&manager),
            "{errno}: the pages it could not write may be gone"
        );
        assert_eq!(log.recovery_point(), recovery_point, "{errno}");

        // The disk would take the fsync now; it is not tried again.
        fail::remove("log.fsync");
        let again = log.flush().unwrap_err();
        assert!(
            matches!(again, StorageError::LogDirOffline { .. }),
            "{errno}: {again}"
        );
        let refused = acknowledged.produce(&log, "k", "refused").unwrap_err();
        assert!(
            matches!(refused, StorageError::LogDirOffline { .. }),
            "{refused}"
        );
        assert_eq!(log.recovery_point(), recovery_point, "{errno}");

        drop(log);
        manager.shutdown().unwrap();
        assert!(
            !dir.join(CLEAN_SHUTDOWN_FILE).exists(),
            "an offline dir is not shut down cleanly"
        );
        let manager = reopen_after_crash(&dir, CleanupPolicy::DELETE);
        acknowledged.all_in(&manager.get(&tp(0)).unwrap());
        scenario.teardown();
    }
}

#[test]
fn a_flush_that_panics_before_its_fsync_leaves_its_data_for_the_next_flush() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let manager = open(&dir, CleanupPolicy::DELETE);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 30);
    let recovery_point = log.recovery_point();

    fail::cfg("log.fsync", "panic(injected)").unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| log.flush()));
    assert!(panicked.is_err());
    assert_eq!(log.recovery_point(), recovery_point);

    // Nothing appended since: the next flush still has the records to fsync.
    let fsyncs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&fsyncs);
    fail::cfg_callback("log.fsync", move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    log.flush().unwrap();
    fail::remove("log.fsync");
    assert!(
        fsyncs.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "the records were left marked as fsynced"
    );
    assert_eq!(log.recovery_point(), log.log_end_offset());
    assert!(!offline(&manager), "a panic is not a disk failure");
    drop(log);
    manager.shutdown().unwrap();
    scenario.teardown();
}

/// With `flush.messages=1` every append fsyncs its records, but the active segment's indexes
/// are fsynced only when it rolls: recovery after a crash re-indexes the segment holding the
/// recovery point, and the roll syncs them before the recovery point can pass it. An index
/// fsync that fails at the roll fails that append, and nothing acknowledged is lost.
#[test]
fn the_active_segments_indexes_are_fsynced_at_its_roll_not_at_each_flush() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let manager = open_with(&dir, CleanupPolicy::DELETE, 1);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 5);

    fail::cfg("index.fsync", "return(EIO)").unwrap();
    // About 5 KiB more in a 16 KiB segment, with an index entry every 512 bytes: no roll.
    acknowledged.produce_many(&log, 5, 20);
    assert_eq!(log.segment_count(), 1);
    assert_eq!(
        log.recovery_point(),
        log.log_end_offset(),
        "each append fsynced its records"
    );
    assert!(!offline(&manager));

    // The append that rolls must first fsync the full segment's indexes.
    let rolled_at = log.log_end_offset();
    let mut index = 25;
    let failed = loop {
        match acknowledged.produce(
            &log,
            &format!("key-{index}"),
            &format!("value-{index:05}-{}", "x".repeat(200)),
        ) {
            Ok(_) => index += 1,
            Err(error) => break error,
        }
        assert!(
            index < 200,
            "no append failed: the roll did not fsync the indexes"
        );
    };
    assert!(
        matches!(&failed, StorageError::Io { path, .. } if path.to_string_lossy().ends_with("index")),
        "{failed}"
    );
    assert!(
        offline(&manager),
        "a failed fsync takes the directory offline"
    );
    assert_eq!(log.segment_count(), 1, "the roll did not happen");
    assert!(log.recovery_point() >= rolled_at);

    fail::remove("index.fsync");
    drop(log);
    crash(manager);
    let manager = reopen_after_crash(&dir, CleanupPolicy::DELETE);
    let log = manager.get(&tp(0)).unwrap();
    acknowledged.all_in(&log);
    // And with every fsync working, the log rolls on and reads back whole from any offset.
    acknowledged.produce_many(&log, 1000, 150);
    assert!(log.segment_count() > 2);
    acknowledged.all_in(&log);
    for from in [0, 40, 77, 120] {
        let expected: Vec<_> = acknowledged
            .0
            .iter()
            .filter(|(offset, _)| *offset >= from)
            .cloned()
            .collect();
        assert_eq!(records(&log, from), expected, "from offset {from}");
    }
    scenario.teardown();
}

#[test]
fn appends_deferring_their_flush_are_made_durable_by_one_fsync() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let manager = open_with(&dir, CleanupPolicy::DELETE, 1);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let batch = |value: &str| {
        let mut builder = BatchBuilder::new(0);
        builder
            .append(START, None, Some(value.as_bytes()), &[])
            .unwrap();
        builder.build().unwrap()
    };
    let first = log
        .append_as_leader_deferring_flush(batch("first"), &NoTxnCoordinator)
        .unwrap();
    let second = log
        .append_as_leader_deferring_flush(batch("second"), &NoTxnCoordinator)
        .unwrap();
    assert!(first.flush_due && second.flush_due, "flush.messages=1");
    assert_eq!(
        log.recovery_point(),
        Offset::new(0),
        "nothing is flushed before the flush is asked for"
    );

    log.flush_appended(&first).unwrap();
    assert_eq!(
        log.recovery_point(),
        Offset::new(2),
        "the first append's flush covers the second, made before it"
    );
    // The second needs no fsync of its own: one that failed would be an error.
    fail::cfg("log.fsync", "return(EIO)").unwrap();
    log.flush_appended(&second).unwrap();
    assert!(!offline(&manager));

    // A third append's flush does fsync, and its failure is its error.
    let third = log
        .append_as_leader_deferring_flush(batch("third"), &NoTxnCoordinator)
        .unwrap();
    let failed = log.flush_appended(&third).unwrap_err();
    assert!(matches!(failed, StorageError::Io { .. }), "{failed}");
    assert_eq!(log.recovery_point(), Offset::new(2));
    assert!(
        offline(&manager),
        "a failed fsync takes the directory offline"
    );
    fail::remove("log.fsync");
    scenario.teardown();
}

#[test]
fn a_retry_of_a_batch_still_waiting_for_its_flush_waits_for_it_too() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let manager = open_with(&dir, CleanupPolicy::DELETE, 1);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut builder = BatchBuilder::new(0).producer(7, 0, 0);
    builder
        .append(START, None, Some(b"idempotent"), &[])
        .unwrap();
    let batch = builder.build().unwrap();

    let original = log
        .append_as_leader_deferring_flush(batch.clone(), &NoTxnCoordinator)
        .unwrap();
    assert!(original.flush_due);
    let retry = log
        .append_as_leader_deferring_flush(batch.clone(), &NoTxnCoordinator)
        .unwrap();
    assert_eq!(retry.info.record_count, 0, "the retry writes nothing");
    assert_eq!(retry.info.first_offset, original.info.first_offset);
    assert!(
        retry.flush_due && !log.is_flushed(&retry),
        "acknowledged before the original is on disk"
    );

    log.flush_appended(&retry).unwrap();
    assert!(log.is_flushed(&original));
    let later_retry = log
        .append_as_leader_deferring_flush(batch, &NoTxnCoordinator)
        .unwrap();
    assert!(!later_retry.flush_due, "the original is on disk");
    scenario.teardown();
}

#[test]
fn checkpoints_without_space_fail_and_the_directory_stays_online() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let manager = open(&dir, CleanupPolicy::DELETE);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 20);

    fail::cfg("fs.write", "return(ENOSPC)").unwrap();
    let failed = manager.jobs().checkpoint_all().unwrap_err();
    assert!(matches!(failed, StorageError::NoSpace { .. }), "{failed}");
    assert!(!offline(&manager));
    fail::remove("fs.write");
    acknowledged.produce_many(&log, 20, 5);
    manager.jobs().checkpoint_all().unwrap();

    // Its fsync failing is another matter: the directory is offline.
    fail::cfg("fs.fsync", "return(EIO)").unwrap();
    assert!(matches!(
        manager.jobs().checkpoint_all().unwrap_err(),
        StorageError::Io { .. }
    ));
    assert!(offline(&manager));
    fail::remove("fs.fsync");
    drop(log);
    manager.shutdown().unwrap();
    let manager = reopen_after_crash(&dir, CleanupPolicy::DELETE);
    acknowledged.all_in(&manager.get(&tp(0)).unwrap());
    scenario.teardown();
}

#[test]
fn running_out_of_file_descriptors_or_maps_is_not_a_disk_failure() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let manager = open(&dir, CleanupPolicy::DELETE);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 20);

    for (point, errno) in [("log.open", "EMFILE"), ("log.open", "ENFILE")] {
        fail::cfg(point, &format!("return({errno})")).unwrap();
        let refused = manager.get_or_create(&tp(1)).unwrap_err();
        assert!(
            matches!(refused, StorageError::OutOfResources { .. }),
            "{point} {errno}: {refused}"
        );
        assert!(!offline(&manager), "{point} {errno}");
        assert!(
            !dir.join(tp(1).dir_name()).exists(),
            "{point} {errno}: no half-made partition is left to load at the next start"
        );
        fail::remove(point);
    }
    manager.get_or_create(&tp(1)).unwrap();

    // No memory to map a growing index: from a fresh segment on, index entries are left out
    // and the appends (and rolls) go on.
    log.roll().unwrap();
    fail::cfg("index.mmap", "return(ENOMEM)").unwrap();
    acknowledged.produce_many(&log, 20, 200);
    assert!(!offline(&manager));
    assert!(log.segment_count() > 3, "rolled");
    fail::remove("index.mmap");
    acknowledged.produce_many(&log, 220, 5);
    acknowledged.all_in(&log);
    scenario.teardown();
}
