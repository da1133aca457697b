//! Damaged sealed segments — a flipped byte, a broken length field, a batch cut short — met by
//! every reader that serves: the cleaner, fetch, retention and a restart. Each refuses or
//! reports the damage with its file and position, and no record after it disappears. And a
//! damaged active segment after a clean stop, whose end cannot be found: the log serves what
//! lies before the damage and takes no appends until the damage is cut.
//!
//! The data is written through a LogManager, which is shut down cleanly before the damage is
//! made (as a disk or a stray write would make it) and opened again, so nothing cached hides it.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrolog_records::BatchBuilder;
use ferrolog_records::batch::crc32c;
use ferrolog_storage::cleaner::offset_map::OffsetMap;
use ferrolog_storage::log::{DamagedBytes, FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManagerConfig};
use ferrolog_storage::segment::RecordsFile;
use ferrolog_storage::{
    CleanupPolicy, LogConfig, ManualClock, Offset, StorageError, TopicPartition,
};

const START: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;
/// Batches written: one record each, about 130 bytes, so about 15 to a 2 KiB segment.
const BATCHES: i64 = 100;
/// Which sealed segment is damaged (0 is the first).
const DAMAGED_SEGMENT: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    /// One byte of a batch's records flipped: its checksum fails.
    FlippedByte,
    /// A batch's length field overwritten with a size far past the end of the file.
    BrokenLength,
    /// The segment's file cut in the middle of its last batch.
    TruncatedBatch,
}

const ALL: [Damage; 3] = [
    Damage::FlippedByte,
    Damage::BrokenLength,
    Damage::TruncatedBatch,
];

struct Damaged {
    _temp: tempfile::TempDir,
    data_dir: PathBuf,
    clock: Arc<ManualClock>,
    manager: Arc<LogManager>,
    log: Arc<Log>,
    /// The damaged `.log` and the position of the damaged batch in it.
    file: PathBuf,
    position: u64,
    /// Offsets of the damaged segment, `[base, next segment's base)`.
    segment_offsets: std::ops::Range<i64>,
    /// The partition directory's files as they were once opened after the damage.
    files_after_damage: BTreeMap<PathBuf, (usize, u32)>,
}

fn tp() -> TopicPartition {
    TopicPartition::new("events", 0)
}

fn manager_config(data_dir: &Path, policy: CleanupPolicy) -> ManagerConfig {
    ManagerConfig {
        log_dirs: vec![data_dir.to_path_buf()],
        log_defaults: LogConfig {
            cleanup_policy: policy,
            segment_bytes: 2048,
            retention_age: Some(ferrolog_storage::clock::millis(HOUR)),
            min_cleanable_dirty_ratio: 0.01,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    }
}

fn open(data_dir: &Path, policy: CleanupPolicy, clock: &Arc<ManualClock>) -> Arc<LogManager> {
    Arc::new(LogManager::open(manager_config(data_dir, policy), clock.clone()).unwrap())
}

/// Every file of the partition's directory with its length and a checksum of its bytes.
fn partition_files(data_dir: &Path) -> BTreeMap<PathBuf, (usize, u32)> {
    std::fs::read_dir(data_dir.join(tp().dir_name()))
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, (bytes.len(), crc32c(&bytes)))
        })
        .collect()
}

/// (position, size) of every batch of a `.log`.
fn batch_positions(path: &Path) -> Vec<(u64, u64)> {
    let file = RecordsFile::open(path, None).unwrap();
    let mut batches = Vec::new();
    file.walk_headers(0, file.size(), |entry| {
        batches.push((entry.position, u64::from(entry.size)));
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    batches
}

/// Appends `BATCHES` batches of one record each; keys repeat every 40 records.
fn write_batches(log: &Log) {
    for i in 0..BATCHES {
        let mut builder = BatchBuilder::new(0);
        builder
            .append(
                START + i,
                Some(format!("key-{}", i % 40).as_bytes()),
                Some(format!("value-{i:04}-{}", "x".repeat(40)).as_bytes()),
                &[],
            )
            .unwrap();
        let batch = builder.build().unwrap();
        log.append_as_leader(batch).unwrap();
        log.maybe_increment_high_watermark(log.log_end_offset());
    }
}

/// Writes the data (keys repeat every 40 records, so compaction has work), shuts down
/// cleanly, damages a sealed segment and opens the directory again.
fn damaged(damage: Damage, policy: CleanupPolicy) -> Damaged {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let clock = Arc::new(ManualClock::new(START));
    let manager = open(&data_dir, policy, &clock);
    let log = manager.get_or_create(&tp()).unwrap();
    write_batches(&log);
    let view = log.view();
    assert!(view.segments.len() > DAMAGED_SEGMENT + 2, "enough segments");
    let segment = &view.segments[DAMAGED_SEGMENT];
    let file = segment.log_path();
    let segment_offsets =
        segment.base_offset().value()..view.segments[DAMAGED_SEGMENT + 1].base_offset().value();
    drop((view, log));
    manager.shutdown().unwrap();
    drop(manager);

    let batches = batch_positions(&file);
    assert!(
        batches.len() >= 8,
        "{} batches in the segment",
        batches.len()
    );
    let mut bytes = std::fs::read(&file).unwrap();
    let position = match damage {
        Damage::FlippedByte => {
            let (position, size) = batches[4];
            bytes[(position + size - 3) as usize] ^= 0x5a;
            position
        }
        Damage::BrokenLength => {
            let (position, _) = batches[4];
            bytes[position as usize + 8..position as usize + 12]
                .copy_from_slice(&0x7fff_0000i32.to_be_bytes());
            position
        }
        Damage::TruncatedBatch => {
            let (position, size) = batches[batches.len() - 1];
            bytes.truncate((position + size / 2) as usize);
            position
        }
    };
    std::fs::write(&file, bytes).unwrap();

    let manager = open(&data_dir, policy, &clock);
    let log = manager.get(&tp()).unwrap();
    let files_after_damage = partition_files(&data_dir);
    Damaged {
        _temp: temp,
        data_dir,
        clock,
        manager,
        log,
        file,
        position,
        segment_offsets,
        files_after_damage,
    }
}

/// The damaged places the last start met and left in place, from its report.
fn damage_met_loading(manager: &LogManager) -> Vec<DamagedBytes> {
    manager
        .startup_report()
        .changed
        .iter()
        .flat_map(|(_, load)| load.damaged.clone())
        .collect()
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

/// (base offset, last offset) of the first batch at the start of `bytes`.
fn first_batch_range(bytes: &[u8]) -> (i64, i64) {
    let base = i64::from_be_bytes(bytes[..8].try_into().unwrap());
    let delta = i32::from_be_bytes(bytes[23..27].try_into().unwrap());
    (base, base + i64::from(delta))
}

fn assert_names_the_damage(error: &StorageError, setup: &Damaged, context: &str) {
    match error {
        StorageError::Corrupt { path, position, .. } => {
            assert_eq!(path, &setup.file, "{context}: {error}");
            assert_eq!(*position, setup.position, "{context}: {error}");
        }
        other => panic!("{context}: expected the damage to be reported, got {other}"),
    }
}

#[test]
fn the_cleaner_leaves_a_damaged_partition_as_it_is_and_marks_it_uncleanable() {
    for damage in ALL {
        let setup = damaged(damage, CleanupPolicy::COMPACT);
        let cleaner = setup.manager.new_cleaner();
        let mut map = OffsetMap::new(1 << 20, 0.9);
        // Damage in the headers shows already when the cleaner measures how dirty the log
        // is; a bad checksum only when it reads the records. Either way the partition is out.
        cleaner.clean_once(&mut map);
        assert_eq!(
            cleaner.uncleanable_partitions(),
            vec![tp()],
            "{damage:?}: marked uncleanable"
        );
        assert_eq!(
            partition_files(&setup.data_dir),
            setup.files_after_damage,
            "{damage:?}: every file of the partition is as the damage left it"
        );
        assert!(
            !cleaner.clean_once(&mut map),
            "{damage:?}: an uncleanable partition is not picked again"
        );
        assert!(cleaner.uncleanable_bytes() > 0, "{damage:?}");
    }
}

#[test]
fn a_fetch_reports_the_damage_and_never_skips_past_it() {
    for damage in ALL {
        let setup = damaged(damage, CleanupPolicy::DELETE);
        let log = &setup.log;
        let mut refused = 0;
        for offset in log.log_start_offset().value()..log.log_end_offset().value() {
            match read(log, offset) {
                Ok(bytes) => {
                    assert!(
                        !bytes.is_empty(),
                        "{damage:?}: offset {offset} read nothing"
                    );
                    let (base, last) = first_batch_range(&bytes);
                    assert!(
                        base <= offset && offset <= last,
                        "{damage:?}: a read of offset {offset} returned batch [{base}, {last}]"
                    );
                }
                Err(error) => {
                    assert!(
                        setup.segment_offsets.contains(&offset),
                        "{damage:?}: offset {offset} is outside the damaged segment: {error}"
                    );
                    assert_names_the_damage(&error, &setup, &format!("{damage:?} at {offset}"));
                    refused += 1;
                }
            }
        }
        match damage {
            // The bytes go out as they are; the client's checksum check catches them.
            Damage::FlippedByte => assert_eq!(refused, 0),
            Damage::BrokenLength | Damage::TruncatedBatch => {
                assert!(refused > 0, "{damage:?}: the damaged batch is refused");
            }
        }
        assert!(
            !setup.manager.data_dirs()[0].is_offline(),
            "{damage:?}: damage is not a failing disk"
        );
    }
}

#[test]
fn retention_keeps_a_segment_it_cannot_date_and_deletes_only_before_it() {
    for damage in ALL {
        let setup = damaged(damage, CleanupPolicy::DELETE);
        let log = &setup.log;
        let segments_before = log.segment_count();
        setup.clock.advance_ms(2 * HOUR);
        let outcome = log.delete_old_segments().unwrap();
        match damage {
            // The batch headers are whole: the segment's age is known and it expires.
            Damage::FlippedByte => {
                assert_eq!(outcome.plan.delete_count(), segments_before);
                assert_eq!(outcome.plan.blocked_by_damage, None);
            }
            Damage::BrokenLength | Damage::TruncatedBatch => {
                assert_eq!(
                    outcome.plan.delete_count(),
                    DAMAGED_SEGMENT,
                    "{damage:?}: only the segments before the damaged one go: {outcome:?}"
                );
                let blocked = outcome.plan.blocked_by_damage.expect("the plan says why");
                assert_eq!(
                    blocked.base_offset,
                    Offset::new(setup.segment_offsets.start)
                );
                assert_eq!(log.segment_count(), segments_before - DAMAGED_SEGMENT);
                assert_eq!(log.log_start_offset().value(), setup.segment_offsets.start);
            }
        }
    }
}

#[test]
fn a_restart_keeps_everything_after_the_damage_and_reports_what_it_met() {
    for damage in ALL {
        let setup = damaged(damage, CleanupPolicy::DELETE);
        let end = setup.log.log_end_offset().value();
        let readable_after = |log: &Log| {
            (setup.segment_offsets.end..end)
                .filter(|offset| read(log, *offset).is_ok())
                .count() as i64
        };
        assert_eq!(readable_after(&setup.log), end - setup.segment_offsets.end);

        // An unclean stop with no producer snapshots: the producer state is rebuilt from every
        // segment, and the rebuild meets the damage.
        let data_dir = setup.data_dir.clone();
        let clock = Arc::clone(&setup.clock);
        let file = setup.file.clone();
        drop(setup.log);
        setup.manager.shutdown().unwrap();
        drop(setup.manager);
        std::fs::remove_file(data_dir.join(CLEAN_SHUTDOWN_FILE)).unwrap();
        for entry in std::fs::read_dir(data_dir.join(tp().dir_name())).unwrap() {
            let path = entry.unwrap().path();
            if path
                .extension()
                .is_some_and(|extension| extension == "snapshot")
            {
                std::fs::remove_file(path).unwrap();
            }
        }
        let manager = open(&data_dir, CleanupPolicy::DELETE, &clock);
        let log = manager.get(&tp()).unwrap();
        assert_eq!(
            log.log_end_offset().value(),
            end,
            "{damage:?}: nothing was cut"
        );
        assert_eq!(readable_after(&log), end - setup.segment_offsets.end);
        let damaged = damage_met_loading(&manager);
        match damage {
            // A flipped byte leaves the batch's frame whole: the producer state needs no more.
            Damage::FlippedByte => assert!(damaged.is_empty(), "{damaged:?}"),
            Damage::BrokenLength | Damage::TruncatedBatch => {
                assert_eq!(damaged.len(), 1, "{damage:?}: {damaged:?}");
                assert_eq!(damaged[0].log_file, file);
                assert_eq!(damaged[0].position, setup.position);
            }
        }
    }
}

#[test]
fn a_damaged_active_segment_takes_no_appends_and_loses_nothing_until_recovery_cuts_it() {
    for damage in [Damage::BrokenLength, Damage::TruncatedBatch] {
        let temp = tempfile::tempdir().unwrap();
        let data_dir = temp.path().join("data");
        let clock = Arc::new(ManualClock::new(START));
        let manager = open(&data_dir, CleanupPolicy::DELETE, &clock);
        let log = manager.get_or_create(&tp()).unwrap();
        write_batches(&log);
        let (active, active_base) = {
            let view = log.view();
            let active = view.active_segment();
            (active.log_path(), active.base_offset().value())
        };
        let end = log.log_end_offset().value();
        drop(log);
        manager.shutdown().unwrap();
        drop(manager);

        // The active segment is smaller than index.interval.bytes, so no index entry leads
        // past the damage: finding the end means reading through it.
        let batches = batch_positions(&active);
        assert!(batches.len() >= 3, "{} batches", batches.len());
        let mut bytes = std::fs::read(&active).unwrap();
        let (position, size) = match damage {
            Damage::BrokenLength => batches[1],
            _ => batches[batches.len() - 1],
        };
        match damage {
            Damage::BrokenLength => bytes[position as usize + 8..position as usize + 12]
                .copy_from_slice(&0x7fff_0000i32.to_be_bytes()),
            _ => bytes.truncate((position + size / 2) as usize),
        }
        std::fs::write(&active, bytes).unwrap();
        let whole_before = match damage {
            Damage::BrokenLength => 1,
            _ => batches.len() as i64 - 1,
        };
        let files = partition_files(&data_dir);

        // The broker comes up; the log ends before the damage.
        let manager = open(&data_dir, CleanupPolicy::DELETE, &clock);
        let log = manager.get(&tp()).unwrap();
        assert_eq!(
            log.log_end_offset().value(),
            active_base + whole_before,
            "{damage:?}"
        );
        let damaged = damage_met_loading(&manager);
        assert_eq!(damaged.len(), 1, "{damage:?}: {damaged:?}");
        assert_eq!(
            (&damaged[0].log_file, damaged[0].position),
            (&active, position)
        );

        // What lies before the damage is served; appends, rolls, and reads past it are
        // refused with the damage named.
        for offset in 0..active_base + whole_before {
            read(&log, offset).unwrap();
        }
        let names_the_damage = |error: StorageError| match error {
            StorageError::DamagedEnd {
                path, position: at, ..
            } => assert_eq!((path, at), (active.clone(), position), "{damage:?}"),
            other => panic!("{damage:?}: expected the damaged end, got {other}"),
        };
        let batch = ferrolog_testkit::numbered_batch(0, 1, START);
        names_the_damage(log.append_as_leader(batch).unwrap_err());
        names_the_damage(log.roll().unwrap_err());
        // A consumer that had read everything is told of the damage, not sent back.
        names_the_damage(read(&log, end).unwrap_err());
        clock.advance_ms(2 * HOUR);
        log.delete_old_segments().unwrap();
        assert_eq!(
            log.view().active_segment().log_path(),
            active,
            "{damage:?}: kept"
        );
        assert!(!manager.data_dirs()[0].is_offline(), "{damage:?}");

        // A clean stop changes nothing of the damaged segment.
        drop(log);
        manager.shutdown().unwrap();
        drop(manager);
        let active_file = |files: &BTreeMap<PathBuf, (usize, u32)>| files.get(&active).copied();
        assert_eq!(
            active_file(&partition_files(&data_dir)),
            active_file(&files),
            "{damage:?}"
        );

        // Recovery (what `ferrolog recover --force` runs) cuts the damage, and appends resume
        // where it was.
        std::fs::remove_file(data_dir.join(CLEAN_SHUTDOWN_FILE)).unwrap();
        let manager = open(&data_dir, CleanupPolicy::DELETE, &clock);
        let log = manager.get(&tp()).unwrap();
        assert_eq!(
            log.log_end_offset().value(),
            active_base + whole_before,
            "{damage:?}"
        );
        let batch = ferrolog_testkit::numbered_batch(0, 1, START);
        let appended = log.append_as_leader(batch).unwrap();
        assert_eq!(
            appended.first_offset,
            Offset::new(active_base + whole_before),
            "{damage:?}"
        );
        drop(log);
        manager.shutdown().unwrap();
    }
}
