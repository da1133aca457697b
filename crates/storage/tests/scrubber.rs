//! The scrubber, running as the LogManager's background thread: it reads every sealed segment
//! of every log, finds a batch whose checksum no longer matches in the middle of one, and
//! makes it known at once (reads reaching it are refused with the damage's position, where
//! before they were served the bad bytes); its progress is kept in each directory's
//! checkpoint, which stays at the damaged segment so a restart finds the damage again; and a
//! rate of 0 pauses it.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrolog_records::BatchBuilder;
use ferrolog_storage::checkpoint::read_offset_checkpoint;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{
    BackgroundConfig, LogManager, ManagerConfig, PASS_STARTED_TOPIC, SCRUB_CHECKPOINT, ScrubConfig,
};
use ferrolog_storage::{
    Clock, LogConfig, ManualClock, Offset, StorageError, SystemClock, TopicPartition,
};

fn tp(partition: i32) -> TopicPartition {
    TopicPartition::new("scrubbed", partition)
}

fn open(dir: &Path, bytes_per_second: f64) -> Arc<LogManager> {
    open_with(dir, bytes_per_second, Arc::new(SystemClock))
}

fn open_with(dir: &Path, bytes_per_second: f64, clock: Arc<dyn Clock>) -> Arc<LogManager> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            segment_bytes: 8 * 1024,
            ..LogConfig::default()
        },
        background: BackgroundConfig {
            initial_delay: Duration::ZERO,
            ..BackgroundConfig::default()
        },
        scrub: ScrubConfig {
            bytes_per_second,
            interval: PASS_INTERVAL,
        },
        ..ManagerConfig::default()
    };
    Arc::new(LogManager::open(config, clock).unwrap())
}

/// `ferrolog.scrub.interval.ms` in these tests.
const PASS_INTERVAL: Duration = Duration::from_secs(3_600);

/// 300 records of 200 bytes in each of two partitions, a batch each, stopped cleanly (stamped
/// now, so that retention keeps them while the background runs).
fn written(dir: &Path) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let manager = open(dir, 0.0);
    for partition in 0..2 {
        let log = manager.get_or_create(&tp(partition)).unwrap();
        for i in 0..300 {
            let mut batch = BatchBuilder::new(0);
            let value = format!("{i:0>200}");
            batch
                .append(now, None, Some(value.as_bytes()), &[])
                .unwrap();
            log.append_as_leader(batch.build().unwrap()).unwrap();
        }
    }
    manager.shutdown().unwrap();
}

/// Flips a byte inside the fourth batch of partition 0's second segment; returns the
/// segment's base offset, the batch's position and its offset.
fn damage(dir: &Path) -> (i64, u64, i64) {
    let partition = dir.join("scrubbed-0");
    let mut logs: Vec<_> = std::fs::read_dir(&partition)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 4);
    let path = &logs[1];
    let base: i64 = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let mut position = 0usize;
    for _ in 0..3 {
        let size = i32::from_be_bytes(bytes[position + 8..position + 12].try_into().unwrap());
        position += 12 + size as usize;
    }
    bytes[position + 100] ^= 0x04;
    std::fs::write(path, bytes).unwrap();
    (base, position as u64, base + 3)
}

fn read(log: &Log, offset: i64) -> ferrolog_storage::Result<Vec<u8>> {
    log.read(FetchParams {
        start_offset: Offset::new(offset),
        max_bytes: 1 << 20,
        bound: FetchBound::HighWatermark,
        first_batch: FirstBatch::Whole,
    })?
    .read_bytes()
}

/// Waits (up to a minute) until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(60), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The scrubber's checkpoint of `dir`, by partition (the pass's start left out).
fn progress(dir: &Path) -> Vec<(i32, i64)> {
    checkpoint(dir)
        .into_iter()
        .filter(|(tp, _)| tp.topic != PASS_STARTED_TOPIC)
        .map(|(tp, offset)| (tp.partition, offset))
        .collect()
}

/// The scrubber's checkpoint of `dir`, whole.
fn checkpoint(dir: &Path) -> Vec<(TopicPartition, i64)> {
    let path = dir.join(SCRUB_CHECKPOINT);
    if !path.exists() {
        return Vec::new();
    }
    read_offset_checkpoint(&path).unwrap().into_iter().collect()
}

/// When the checkpoint of `dir` says the current pass started.
fn pass_started(dir: &Path) -> Option<i64> {
    checkpoint(dir)
        .into_iter()
        .find(|(tp, _)| tp.topic == PASS_STARTED_TOPIC && tp.partition == -1)
        .map(|(_, started)| started)
}

#[test]
fn the_scrubber_finds_damage_and_makes_it_known_to_readers() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    written(&dir);
    let (damaged_base, position, offset) = damage(&dir);

    // Paused: nothing is read, and the damaged batch is served as it is.
    let manager = open(&dir, 0.0);
    manager.start_background().unwrap();
    let log = manager.get(&tp(0)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(progress(&dir).is_empty());
    assert!(read(&log, offset).is_ok());

    // Running: the pass goes through both partitions and stops at the damage in the checkpoint.
    manager.scrubber().set_rate(64.0 * 1024.0 * 1024.0);
    let active_base = |partition| {
        let log = manager.get(&tp(partition)).unwrap();
        let view = log.view();
        view.segments.last().unwrap().base_offset().value()
    };
    let done = vec![(0, damaged_base), (1, active_base(1))];
    wait_until("a pass over every sealed segment", || {
        progress(&dir) == done
    });
    match read(&log, offset).unwrap_err() {
        StorageError::Corrupt {
            position: at,
            reason,
            ..
        } => {
            assert_eq!(at, position);
            assert!(reason.contains("checksum"), "{reason}");
        }
        other => panic!("expected the damage, got {other}"),
    }
    // Batches before it are read as before.
    assert!(read(&log, damaged_base).is_ok());
    drop(log);
    manager.shutdown().unwrap();
    drop(manager);

    // A restart reads the damaged segment again and records its damage again.
    let manager = open(&dir, 64.0 * 1024.0 * 1024.0);
    manager.start_background().unwrap();
    let log = manager.get(&tp(0)).unwrap();
    wait_until("the damage found again", || read(&log, offset).is_err());
    drop(log);
    manager.shutdown().unwrap();
}

/// The start of a pass is kept across restarts: a broker restarted more often than
/// `ferrolog.scrub.interval.ms` still begins a new pass once the interval since the last
/// start has passed, where counting from each start would never begin one.
#[test]
fn a_restart_keeps_the_interval_since_the_pass_began() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    written(&dir);
    let began = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let clock = Arc::new(ManualClock::new(began));
    let fast = 64.0 * 1024.0 * 1024.0;
    let manager = open_with(&dir, fast, clock.clone());
    manager.start_background().unwrap();
    wait_until("the first pass", || {
        manager.scrubber().passes_completed() == 1
    });
    assert_eq!(pass_started(&dir), Some(began));
    manager.shutdown().unwrap();
    drop(manager);

    // Restarted shortly before the interval ends: the pass that began before carries on (it
    // is complete, so nothing is read) and the next begins when the interval is up.
    let interval_ms = PASS_INTERVAL.as_millis() as i64;
    clock.set_ms(began + interval_ms - 60_000);
    let manager = open_with(&dir, fast, clock.clone());
    manager.start_background().unwrap();
    wait_until("the pass taken up", || {
        manager.scrubber().passes_completed() == 1
    });
    assert_eq!(pass_started(&dir), Some(began));
    clock.set_ms(began + interval_ms);
    manager.scrubber().set_rate(fast);
    wait_until("a new pass, the interval after the first began", || {
        manager.scrubber().passes_completed() == 2
    });
    assert_eq!(pass_started(&dir), Some(began + interval_ms));
    manager.shutdown().unwrap();
}
