//! LogManager behaviours from Kafka's `LogManagerTest`, one test per behaviour.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use ferrolog_testkit::numbered_batch;

use super::*;
use crate::checkpoint::{
    LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, read_offset_checkpoint,
};
use crate::clock::ManualClock;
use crate::log::{FetchBound, FetchParams, FirstBatch};
use crate::offset::Offset;
use crate::types::random_unique_id;

mod documents;
mod limits;
mod moves;
mod startup;
mod topic_configs;

const NOW: i64 = 1_700_000_000_000;

fn config(dirs: &[PathBuf]) -> ManagerConfig {
    ManagerConfig {
        log_dirs: dirs.to_vec(),
        ..ManagerConfig::default()
    }
}

fn open(dirs: &[PathBuf]) -> LogManager {
    LogManager::open(config(dirs), Arc::new(ManualClock::new(NOW))).unwrap()
}

fn temp_dirs(count: usize) -> (tempfile::TempDir, Vec<PathBuf>) {
    let temp = tempfile::tempdir().unwrap();
    let dirs = (0..count)
        .map(|i| temp.path().join(format!("data-{i}")))
        .collect();
    (temp, dirs)
}

fn append(log: &Log, records: usize) {
    log.append_as_leader(numbered_batch(0, records, NOW))
        .unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

#[test]
fn least_loaded_assignment_balances_partitions() {
    let (_temp, dirs) = temp_dirs(3);
    let manager = open(&dirs);
    for partition in 0..20 {
        manager.get_or_create(&tp("balanced", partition)).unwrap();
    }
    let mut counts = vec![0; 3];
    for (topic_partition, _) in manager.logs() {
        let dir = manager.dir_of(&topic_partition).unwrap();
        counts[dirs
            .iter()
            .position(|candidate| candidate == dir.path())
            .unwrap()] += 1;
    }
    assert!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
        "{counts:?}"
    );
    assert_eq!(counts[0], 7, "ties go to the first listed directory");
    manager.shutdown().unwrap();
}

#[test]
fn free_bytes_placement_places_by_what_the_file_systems_report() {
    let (_temp, dirs) = temp_dirs(2);
    let mut config = config(&dirs);
    config.placement = PlacementPolicy::MostFreeBytes;
    let manager = LogManager::open(config, Arc::new(ManualClock::new(NOW))).unwrap();
    // Both directories share one file system here, and other tests write to it meanwhile, so
    // which one reports more free bytes at any instant is not fixed (the policy's order is
    // tested as a pure function in `dirs.rs`). What holds: each partition lands in the
    // directory first in the order computed at its creation, and stays there.
    for partition in 0..4 {
        manager.get_or_create(&tp("free", partition)).unwrap();
        let dir = manager.dir_of(&tp("free", partition)).unwrap();
        assert!(dirs.contains(&dir.path().to_path_buf()), "{dir:?}");
        assert!(dir.path().join(format!("free-{partition}")).is_dir());
    }
    manager.shutdown().unwrap();
}

#[test]
fn create_log_falls_back_when_a_dir_fails() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    // The first directory vanishes and a file takes its name: creating a log there fails.
    std::fs::remove_dir_all(&dirs[0]).unwrap();
    std::fs::write(&dirs[0], b"not a directory").unwrap();
    let log = manager.get_or_create(&tp("fallback", 0)).unwrap();
    append(&log, 3);
    assert_eq!(manager.dir_of(&tp("fallback", 0)).unwrap().path(), dirs[1]);
    assert_eq!(manager.offline_dir_count(), 1);
    assert!(!manager.is_halted());
}

#[test]
fn an_unusable_dir_goes_offline_at_startup_without_stopping_the_others() {
    let (_temp, dirs) = temp_dirs(2);
    std::fs::create_dir_all(dirs[0].parent().unwrap()).unwrap();
    std::fs::write(&dirs[0], b"a file where a directory should be").unwrap();
    let manager = open(&dirs);
    assert_eq!(manager.offline_dir_count(), 1);
    assert_eq!(manager.startup_report().offline_dirs, vec![dirs[0].clone()]);
    append(&manager.get_or_create(&tp("ok", 0)).unwrap(), 2);
    manager.shutdown().unwrap();
}

#[test]
fn a_dir_failing_while_its_logs_load_goes_offline_with_nothing_left_to_recover() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    for partition in 0..3 {
        append(&manager.get_or_create(&tp("load", partition)).unwrap(), 2);
    }
    let failing = manager.dir_of(&tp("load", 0)).unwrap().path().to_path_buf();
    manager.shutdown().unwrap();
    // A segment file the loader cannot open: the directory fails mid-load.
    let segment = failing.join("load-0").join("00000000000000000000.log");
    std::fs::remove_file(&segment).unwrap();
    std::fs::create_dir(&segment).unwrap();

    let manager = open(&dirs);
    assert_eq!(manager.offline_dir_count(), 1);
    let offline = manager
        .data_dirs()
        .iter()
        .find(|dir| dir.path() == failing)
        .unwrap();
    assert_eq!(
        (
            offline.remaining_logs_to_recover(),
            offline.remaining_segments_to_recover()
        ),
        (0, 0),
        "a directory that stopped loading has nothing left to recover"
    );
    manager.shutdown().unwrap();
}

#[test]
fn a_failed_dir_refuses_its_logs_and_the_others_serve() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let first = manager.get_or_create(&tp("t", 0)).unwrap();
    let second = manager.get_or_create(&tp("t", 1)).unwrap();
    append(&first, 2);
    append(&second, 2);
    // The first directory fails: an I/O error in any of its logs takes it offline.
    first
        .health()
        .mark_offline(&StorageError::Fatal("simulated disk failure".into()));
    let error = first
        .append_as_leader(numbered_batch(0, 1, NOW))
        .unwrap_err();
    assert!(
        matches!(&error, StorageError::LogDirOffline { dir } if dir == &dirs[0]),
        "{error}"
    );
    let read = first.read(FetchParams {
        start_offset: Offset::ZERO,
        max_bytes: 100,
        bound: FetchBound::LogEnd,
        first_batch: FirstBatch::Whole,
    });
    assert!(matches!(read, Err(StorageError::LogDirOffline { .. })));
    append(&second, 2);
    assert_eq!(manager.offline_dir_count(), 1);
    let third = manager.get_or_create(&tp("t", 2)).unwrap();
    assert_eq!(
        manager.dir_of(&tp("t", 2)).unwrap().path(),
        dirs[1],
        "an offline dir is never chosen"
    );
    append(&third, 1);
    manager.shutdown().unwrap();
    assert!(
        !dirs[0].join(CLEAN_SHUTDOWN_FILE).exists(),
        "no marker where logs failed"
    );
    assert!(dirs[1].join(CLEAN_SHUTDOWN_FILE).exists());

    second
        .health()
        .mark_offline(&StorageError::Fatal("and the other".into()));
    assert!(manager.is_halted());
}

#[test]
fn when_every_dir_is_offline_the_manager_stops() {
    let (_temp, dirs) = temp_dirs(1);
    let manager = open(&dirs);
    manager.data_dirs()[0]
        .health()
        .mark_offline(&StorageError::Fatal("gone".into()));
    assert!(manager.is_halted());
    assert!(manager.get_or_create(&tp("t", 0)).is_err());
}

#[test]
fn clean_restart_loads_without_recovery_and_unclean_restart_recovers() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    for partition in 0..6 {
        append(
            &manager.get_or_create(&tp("restart", partition)).unwrap(),
            5,
        );
    }
    manager.shutdown().unwrap();
    for dir in &dirs {
        assert!(dir.join(CLEAN_SHUTDOWN_FILE).exists());
    }
    drop(manager);

    let manager = open(&dirs);
    assert_eq!(manager.startup_report().logs_loaded, 6);
    assert_eq!(
        manager.startup_report().segments_recovered,
        0,
        "no segment was scanned"
    );
    for dir in &dirs {
        assert!(
            !dir.join(CLEAN_SHUTDOWN_FILE).exists(),
            "the marker is deleted once read"
        );
    }
    for partition in 0..6 {
        assert_eq!(
            manager
                .get(&tp("restart", partition))
                .unwrap()
                .log_end_offset(),
            Offset::new(5)
        );
        append(&manager.get(&tp("restart", partition)).unwrap(), 5);
    }
    drop(manager); // no shutdown: an unclean stop

    let manager = open(&dirs);
    assert_eq!(
        manager.startup_report().segments_recovered,
        6,
        "each log's active segment"
    );
    for partition in 0..6 {
        assert_eq!(
            manager
                .get(&tp("restart", partition))
                .unwrap()
                .log_end_offset(),
            Offset::new(10)
        );
    }
    for dir in manager.data_dirs() {
        assert_eq!(
            (
                dir.remaining_logs_to_recover(),
                dir.remaining_segments_to_recover()
            ),
            (0, 0)
        );
    }
    manager.shutdown().unwrap();
}

#[test]
fn recovery_checkpoint_holds_each_logs_recovery_point_only_in_its_dir() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    for partition in 0..4 {
        let log = manager.get_or_create(&tp("cp", partition)).unwrap();
        append(&log, partition as usize + 1);
        if partition % 2 == 0 {
            log.flush().unwrap();
        }
    }
    manager.jobs().checkpoint_all().unwrap();
    for (index, dir) in dirs.iter().enumerate() {
        let entries = read_offset_checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT)).unwrap();
        let expected: crate::checkpoint::OffsetMap = manager
            .logs()
            .into_iter()
            .filter(|(topic_partition, _)| {
                manager.dir_of(topic_partition).unwrap().path() == dirs[index]
            })
            .map(|(topic_partition, log)| (topic_partition, log.recovery_point().value()))
            .collect();
        assert_eq!(entries, expected);
        assert_eq!(entries.len(), 2);
    }
    manager.shutdown().unwrap();
}

#[test]
fn log_start_offsets_are_checkpointed_and_restored() {
    let (_temp, dirs) = temp_dirs(1);
    let manager = open(&dirs);
    let log = manager.get_or_create(&tp("start", 0)).unwrap();
    append(&log, 10);
    log.maybe_increment_log_start_offset(Offset::new(4))
        .unwrap();
    manager.jobs().checkpoint_all().unwrap();
    let entries = read_offset_checkpoint(&dirs[0].join(LOG_START_OFFSET_CHECKPOINT)).unwrap();
    assert_eq!(entries.get(&tp("start", 0)), Some(&4));
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open(&dirs);
    assert_eq!(
        manager.get(&tp("start", 0)).unwrap().log_start_offset(),
        Offset::new(4)
    );
    manager.shutdown().unwrap();
}

#[test]
fn a_malformed_checkpoint_means_recovery_from_zero_not_a_failed_start() {
    let (_temp, dirs) = temp_dirs(1);
    let manager = open(&dirs);
    append(&manager.get_or_create(&tp("m", 0)).unwrap(), 4);
    manager.jobs().checkpoint_all().unwrap();
    drop(manager);
    std::fs::write(dirs[0].join(RECOVERY_POINT_CHECKPOINT), "0\n1\nm zero 4\n").unwrap();
    let manager = open(&dirs);
    assert_eq!(
        manager.get(&tp("m", 0)).unwrap().log_end_offset(),
        Offset::new(4)
    );
    assert_eq!(manager.startup_report().segments_recovered, 1);
    manager.shutdown().unwrap();
}

#[test]
fn delete_renames_then_removes_the_dir_after_the_delay_and_rewrites_checkpoints() {
    let (_temp, dirs) = temp_dirs(1);
    let clock = Arc::new(ManualClock::new(NOW));
    let manager = LogManager::open(config(&dirs), clock.clone()).unwrap();
    let long_topic = "t".repeat(253);
    for topic in ["gone", long_topic.as_str()] {
        let log = manager.get_or_create(&tp(topic, 0)).unwrap();
        append(&log, 3);
    }
    let kept = manager.get_or_create(&tp("kept", 0)).unwrap();
    append(&kept, 1);
    let held = manager.get(&tp("gone", 0)).unwrap();
    assert!(manager.delete(&tp("gone", 0)).unwrap());
    assert!(manager.delete(&tp(&long_topic, 0)).unwrap());
    assert!(!manager.delete(&tp("gone", 0)).unwrap());
    assert!(manager.get(&tp("gone", 0)).is_none());
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(&dirs[0])
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("gone") || name.starts_with("ttt"))
            .collect()
    };
    let waiting = leftovers();
    assert_eq!(waiting.len(), 2, "{waiting:?}");
    assert!(
        waiting
            .iter()
            .all(|name| name.ends_with("-delete") && name.len() <= 255),
        "{waiting:?}"
    );
    assert!(waiting.iter().any(|name| name.starts_with("gone-0.")));
    clock.advance_ms(crate::clock::kafka_ms(manager.config().log_defaults.file_delete_delay) - 1);
    assert_eq!(manager.deleter().run_due(), 0);
    clock.advance_ms(1);
    assert_eq!(manager.deleter().run_due(), 2);
    assert!(leftovers().is_empty(), "{:?}", leftovers());
    let entries = read_offset_checkpoint(&dirs[0].join(RECOVERY_POINT_CHECKPOINT)).unwrap();
    assert_eq!(entries.keys().collect::<Vec<_>>(), vec![&tp("kept", 0)]);
    // A reader that held the deleted log still reads it through its open files.
    let data = held
        .read(FetchParams {
            start_offset: Offset::ZERO,
            max_bytes: 1 << 20,
            bound: FetchBound::LogEnd,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    assert!(!data.read_bytes().unwrap().is_empty());
    manager.shutdown().unwrap();
}

#[test]
fn delete_dirs_and_temp_files_left_at_startup_are_removed() {
    let (_temp, dirs) = temp_dirs(1);
    open(&dirs).shutdown().unwrap();
    let queued = dirs[0].join(format!("old-0.{}-delete", random_unique_id()));
    std::fs::create_dir_all(&queued).unwrap();
    std::fs::write(queued.join("00000000000000000000.log"), b"").unwrap();
    let temp_file = dirs[0].join(format!("{RECOVERY_POINT_CHECKPOINT}.tmp"));
    std::fs::write(&temp_file, b"partial").unwrap();
    let manager = open(&dirs);
    assert!(!queued.exists() && !temp_file.exists());
    assert_eq!(manager.logs().len(), 0);
    manager.shutdown().unwrap();
}

#[test]
fn shutdown_writes_the_marker_in_every_dir_with_the_epoch_json() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    manager.shutdown().unwrap();
    for dir in &dirs {
        let marker = std::fs::read_to_string(dir.join(CLEAN_SHUTDOWN_FILE)).unwrap();
        assert_eq!(marker, r#"{"version":0,"brokerEpoch":-1}"#);
    }
}

#[test]
fn a_topic_keeps_one_id_in_every_partition_and_across_restarts() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    manager.create_all(&[tp("t", 0), tp("t", 1)]).unwrap();
    manager.get_or_create(&tp("other", 0)).unwrap();
    let id = manager.topic_id("t").unwrap();
    assert_ne!(manager.topic_id("other"), Some(id));
    assert_eq!(manager.topic_with_id(id).as_deref(), Some("t"));
    // A partition added later takes the topic's id.
    manager.get_or_create(&tp("t", 2)).unwrap();
    for partition in 0..3 {
        let dir = manager
            .get(&tp("t", partition))
            .unwrap()
            .dir()
            .to_path_buf();
        assert_eq!(topic_ids::read(&dir).unwrap(), Some(id), "t-{partition}");
    }
    manager.shutdown().unwrap();
    drop(manager);

    let manager = open(&dirs);
    assert_eq!(manager.topic_id("t"), Some(id), "the id survives a restart");
    manager.delete(&tp("t", 0)).unwrap();
    assert_eq!(manager.topic_id("t"), Some(id));
    manager.delete(&tp("t", 1)).unwrap();
    manager.delete(&tp("t", 2)).unwrap();
    assert_eq!(manager.topic_id("t"), None, "gone with its last partition");
    assert_eq!(manager.topic_with_id(id), None);
    manager.shutdown().unwrap();
}

#[test]
fn a_topic_written_without_ids_gets_one_and_damaged_ids_are_left_alone() {
    let (_temp, dirs) = temp_dirs(1);
    let manager = open(&dirs);
    manager
        .create_all(&[tp("old", 0), tp("old", 1), tp("damaged", 0)])
        .unwrap();
    let damaged_dir = manager.get(&tp("damaged", 0)).unwrap().dir().to_path_buf();
    manager.shutdown().unwrap();
    drop(manager);
    // As a directory from before topic ids: no partition.metadata at all.
    for partition in 0..2 {
        std::fs::remove_file(dirs[0].join(format!("old-{partition}/{PARTITION_METADATA_FILE}")))
            .unwrap();
    }
    std::fs::write(
        damaged_dir.join(PARTITION_METADATA_FILE),
        "version: 0\ntopic_id: ??",
    )
    .unwrap();

    let manager = open(&dirs);
    let id = manager.topic_id("old").unwrap();
    for partition in 0..2 {
        let dir = manager
            .get(&tp("old", partition))
            .unwrap()
            .dir()
            .to_path_buf();
        assert_eq!(topic_ids::read(&dir).unwrap(), Some(id), "written at load");
    }
    assert!(
        manager.topic_id("damaged").is_some(),
        "served with an id for now"
    );
    assert_eq!(
        std::fs::read_to_string(damaged_dir.join(PARTITION_METADATA_FILE)).unwrap(),
        "version: 0\ntopic_id: ??",
        "a damaged file is not overwritten"
    );
    manager.shutdown().unwrap();
}
