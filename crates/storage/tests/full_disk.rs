//! A real full file system: a small ext4 image mounted on a loop device (and a small tmpfs),
//! made by the test. Appends go on until the disk is full and beyond; every refused append is
//! a clean `NoSpace` error, reads keep working, a restart on the full disk comes up and serves
//! reads, and once space is freed appends succeed again. Through all of it, no crash (an index
//! page without its disk block would kill the process with SIGBUS) and no acknowledged record
//! lost.
//!
//! Mounting needs root; where it cannot be done the test says it was skipped.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::sync::Arc;

use ferrolog_records::BatchBuilder;
use ferrolog_storage::log::{FetchBound, Log};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, ManualClock, StorageError, TopicPartition};
use ferrolog_testkit::{FileSystemKind, SmallFileSystem, fill_disk};

const START: i64 = 1_700_000_000_000;
const PARTITIONS: i32 = 3;
/// Appends before the disk is filled: enough for each segment to reserve blocks ahead.
const APPENDS_BEFORE_FILLING: usize = 1200;

fn open(dir: &Path) -> Arc<LogManager> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            // Large enough for the segments to reserve blocks ahead of their data (from 1 MiB
            // on), which appends then write into while the disk has no block left for an
            // index page.
            segment_bytes: 6 << 20,
            index_interval_bytes: 1024,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    Arc::new(LogManager::open(config, Arc::new(ManualClock::new(START))).unwrap())
}

/// What each partition acknowledged: (offset, value) in order.
type Acknowledged = Vec<Vec<(i64, String)>>;

fn produce(log: &Log, value: &str) -> ferrolog_storage::Result<i64> {
    let mut builder = BatchBuilder::new(0);
    builder
        .append(START, Some(b"k"), Some(value.as_bytes()), &[])
        .unwrap();
    let info = log.append_as_leader(builder.build().unwrap())?;
    log.maybe_increment_high_watermark(log.log_end_offset());
    Ok(info.first_offset.value())
}

/// Produces round-robin until `refusals` appends in a row were refused (or `max` appends
/// were tried). Every refusal must be a clean `NoSpace`.
fn produce_until_refused(
    manager: &LogManager,
    acknowledged: &mut Acknowledged,
    refusals: usize,
    max: usize,
) -> usize {
    let mut refused_in_a_row = 0;
    let mut refused = 0;
    for attempt in 0..max {
        let partition = (attempt % PARTITIONS as usize) as i32;
        let log = manager
            .get(&TopicPartition::new("full", partition))
            .unwrap();
        let value = format!("{partition}-{attempt:06}-{}", "v".repeat(4000));
        match produce(&log, &value) {
            Ok(offset) => {
                acknowledged[partition as usize].push((offset, value));
                refused_in_a_row = 0;
            }
            Err(StorageError::NoSpace { .. }) => {
                refused += 1;
                refused_in_a_row += 1;
                if refused_in_a_row >= refusals {
                    break;
                }
            }
            Err(other) => panic!("attempt {attempt}: expected a clean NoSpace, got {other}"),
        }
        assert!(
            !manager.data_dirs()[0].is_offline(),
            "a full disk is not a failing disk"
        );
    }
    refused
}

fn records(log: &Log) -> Vec<(i64, String)> {
    common::records_from(log, 0, FetchBound::HighWatermark)
        .into_iter()
        .map(|record| (record.offset, record.value_text().unwrap()))
        .collect()
}

fn assert_all_there(manager: &LogManager, acknowledged: &Acknowledged, when: &str) {
    for (partition, expected) in acknowledged.iter().enumerate() {
        let log = manager
            .get(&TopicPartition::new("full", partition as i32))
            .unwrap();
        assert_eq!(
            &records(&log),
            expected,
            "{when}: partition {partition} holds exactly what was acknowledged"
        );
    }
}

fn fill_free_and_refill(kind: FileSystemKind) {
    let Some(mounted) = SmallFileSystem::mount(kind, 24) else {
        return;
    };
    let dir = mounted.path().join("data");
    let filler = mounted.path().join("filler");
    let mut acknowledged: Acknowledged = vec![Vec::new(); PARTITIONS as usize];

    let manager = open(&dir);
    for partition in 0..PARTITIONS {
        manager
            .get_or_create(&TopicPartition::new("full", partition))
            .unwrap();
    }
    let refused = produce_until_refused(&manager, &mut acknowledged, 1, APPENDS_BEFORE_FILLING);
    assert_eq!(refused, 0, "{kind:?}: room for the first appends");
    // Another program fills the disk. The active segments' reserved blocks still take appends
    // for a while; their index entries then find no block to grow into.
    assert!(fill_disk(&filler) > 0, "{kind:?}: the filler found room");
    let refused = produce_until_refused(&manager, &mut acknowledged, 300, 20_000);
    assert!(refused >= 300, "{kind:?}: the disk filled");
    assert!(
        acknowledged.iter().all(|a| a.len() > 100),
        "{kind:?}: data was written first"
    );
    assert_all_there(&manager, &acknowledged, &format!("{kind:?}, full"));

    // A restart on the full disk: the shutdown may not manage to write everything, and the
    // next start then recovers; either way it comes up and serves every acknowledged record.
    if let Err(error) = manager.shutdown() {
        println!("{kind:?}: shutdown on a full disk: {error}");
    }
    drop(manager);
    let manager = open(&dir);
    assert!(manager.startup_report().offline_dirs.is_empty());
    assert_all_there(
        &manager,
        &acknowledged,
        &format!("{kind:?}, restarted full"),
    );
    let refused = produce_until_refused(&manager, &mut acknowledged, 30, 1_000);
    assert!(refused >= 30, "{kind:?}: still full");

    // The operator frees space; appends succeed again.
    std::fs::remove_file(&filler).unwrap();
    let before: usize = acknowledged.iter().map(Vec::len).sum();
    produce_until_refused(&manager, &mut acknowledged, 1, 200);
    let after: usize = acknowledged.iter().map(Vec::len).sum();
    assert!(
        after >= before + 150,
        "{kind:?}: appends succeed once space is freed"
    );
    assert_all_there(&manager, &acknowledged, &format!("{kind:?}, space freed"));
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open(&dir);
    assert_all_there(&manager, &acknowledged, &format!("{kind:?}, final restart"));
    manager.shutdown().unwrap();
}

#[test]
fn a_full_ext4_disk_refuses_appends_cleanly_and_loses_nothing() {
    fill_free_and_refill(FileSystemKind::Ext4);
}

#[test]
fn a_full_tmpfs_refuses_appends_cleanly_and_loses_nothing() {
    fill_free_and_refill(FileSystemKind::Tmpfs);
}
