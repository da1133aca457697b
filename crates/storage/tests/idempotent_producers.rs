//! Idempotent producers at the log layer: duplicates answered with their original offsets and
//! not written, gaps and fenced epochs refused, producer snapshots written at roll and close and
//! read back (Kafka's own included), recovery with and without snapshots, damaged snapshots
//! never trusted, and snapshots following truncation and retention.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;
use std::sync::Arc;

use ferrolog_records::BatchBuilder;
use ferrolog_storage::Offset;
use ferrolog_storage::log::{LoadParams, Log, ProducerStateSource};
use ferrolog_storage::producer::snapshot;
use ferrolog_storage::{Clock, LogConfig, ManualClock, StorageError};
use ferrolog_testkit::kafka_fixtures;

const START: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        ..LogConfig::default()
    }
}

fn open(dir: &Path, clean: bool, clock: &Arc<ManualClock>) -> (Log, ProducerStateSource) {
    let (log, report) = Log::open(
        dir,
        config(),
        LoadParams {
            recovery_point: Offset::ZERO,
            log_start_offset: Offset::ZERO,
            had_clean_shutdown: clean,
            ..LoadParams::default()
        },
        Arc::clone(clock) as Arc<dyn Clock>,
    )
    .unwrap();
    (log, report.producer_state)
}

/// A batch of `count` records from producer `id` at `epoch`, starting at `sequence`.
fn batch(id: i64, epoch: i16, sequence: i32, count: usize) -> Vec<u8> {
    let mut builder = BatchBuilder::new(0).producer(id, epoch, sequence);
    for i in 0..count {
        // About 130 bytes a record, so a batch of 8 is 1 KiB and 4 KiB segments roll often.
        let value = format!("{id}-{epoch}-{:0>120}", i64::from(sequence) + i as i64);
        builder
            .append(START, Some(b"k"), Some(value.as_bytes()), &[])
            .unwrap();
    }
    builder.build().unwrap()
}

fn append(
    log: &Log,
    id: i64,
    epoch: i16,
    sequence: i32,
    count: usize,
) -> Result<(i64, i64), StorageError> {
    log.append_as_leader(batch(id, epoch, sequence, count))
        .map(|info| (info.first_offset.value(), info.last_offset.value()))
}

fn snapshot_offsets(dir: &Path) -> Vec<i64> {
    snapshot::list(dir)
        .unwrap()
        .into_iter()
        .map(|(o, _)| o.value())
        .collect()
}

#[test]
fn retries_are_answered_with_their_offsets_and_gaps_and_old_epochs_refused() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("topic-0");
    let clock = Arc::new(ManualClock::new(START));
    let (log, _) = open(&dir, false, &clock);
    assert_eq!(append(&log, 1, 0, 0, 3).unwrap(), (0, 2));
    assert_eq!(
        append(&log, 2, 0, 7, 1).unwrap(),
        (3, 3),
        "a new producer starts anywhere"
    );
    assert_eq!(append(&log, 1, 0, 3, 2).unwrap(), (4, 5));
    // A retry of an acknowledged batch: the original offsets, nothing written.
    assert_eq!(append(&log, 1, 0, 0, 3).unwrap(), (0, 2));
    assert_eq!(append(&log, 1, 0, 3, 2).unwrap(), (4, 5));
    assert_eq!(log.log_end_offset(), Offset::new(6));
    // A gap, and a batch of an older epoch once a newer one wrote.
    let gap = append(&log, 1, 0, 6, 1).unwrap_err();
    assert!(
        matches!(
            gap,
            StorageError::OutOfOrderSequence {
                expected: 5,
                received: 6,
                ..
            }
        ),
        "{gap}"
    );
    assert_eq!(
        append(&log, 1, 1, 0, 1).unwrap(),
        (6, 6),
        "a new epoch starts at 0"
    );
    let fenced = append(&log, 1, 0, 5, 1).unwrap_err();
    assert!(
        matches!(
            fenced,
            StorageError::InvalidProducerEpoch { epoch, current, .. }
                if (epoch.value(), current.value()) == (0, 1)
        ),
        "{fenced}"
    );
    assert_eq!(
        log.log_end_offset(),
        Offset::new(7),
        "refused batches write nothing"
    );
    log.close().unwrap();
}

#[test]
fn snapshots_at_roll_and_close_restore_the_state_after_clean_and_unclean_restarts() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("topic-0");
    let clock = Arc::new(ManualClock::new(START));
    let (log, _) = open(&dir, false, &clock);
    // Enough 1 KiB-ish batches from three producers to roll the 4 KiB segments several times.
    let mut sequences = [0i32; 3];
    for round in 0..30 {
        let producer = round % 3;
        append(&log, producer as i64 + 10, 0, sequences[producer], 8).unwrap();
        sequences[producer] += 8;
    }
    let before = log.producer_state();
    let end = log.log_end_offset().value();
    let rolls = snapshot_offsets(&dir);
    assert!(rolls.len() >= 3, "a snapshot at each roll: {rolls:?}");
    let bases: Vec<i64> = bases_of(&log);
    assert!(
        rolls.iter().all(|offset| bases.contains(offset)),
        "{rolls:?} vs {bases:?}"
    );
    log.close().unwrap();
    assert_eq!(
        snapshot_offsets(&dir).last(),
        Some(&end),
        "and one at close"
    );

    // Clean restart: the close snapshot alone rebuilds the state (each producer's last batch).
    let (log, source) = open(&dir, true, &clock);
    assert_eq!(source, ProducerStateSource::Snapshot(Offset::new(end)));
    let after = log.producer_state();
    for id in [10, 11, 12] {
        assert_eq!(
            after.get(id).unwrap().batches.back(),
            before.get(id).unwrap().batches.back()
        );
    }
    // The retry of each producer's last batch is still recognised.
    assert_eq!(
        Some(Offset::new(
            append(&log, 12, 0, sequences[2] - 8, 8).unwrap().1
        )),
        before.get(12).unwrap().last_offset()
    );
    log.close().unwrap();

    // Unclean restart without the close snapshot: the last roll's snapshot plus a replay.
    std::fs::remove_file(snapshot::snapshot_path(&dir, Offset::new(end))).unwrap();
    let (log, source) = open(&dir, false, &clock);
    let last_roll = *rolls.last().unwrap();
    assert_eq!(
        source,
        ProducerStateSource::Snapshot(Offset::new(last_roll))
    );
    assert_eq!(
        log.producer_state().get(10).unwrap().last_offset(),
        before.get(10).unwrap().last_offset()
    );
    drop(log);

    // Without any snapshot, an unclean restart replays the whole log.
    for offset in snapshot_offsets(&dir) {
        std::fs::remove_file(snapshot::snapshot_path(&dir, Offset::new(offset))).unwrap();
    }
    let (log, source) = open(&dir, false, &clock);
    assert_eq!(source, ProducerStateSource::FullReplay);
    let replayed = log.producer_state();
    for id in [10, 11, 12] {
        assert_eq!(
            replayed.get(id).unwrap().batches.len(),
            5,
            "the last five batches again"
        );
        assert_eq!(
            replayed.get(id).unwrap().last_offset(),
            before.get(id).unwrap().last_offset()
        );
    }
    log.close().unwrap();
}

#[test]
fn a_damaged_snapshot_is_deleted_and_an_older_one_used() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("topic-0");
    let clock = Arc::new(ManualClock::new(START));
    let (log, _) = open(&dir, false, &clock);
    for sequence in (0..200).step_by(8) {
        append(&log, 5, 0, sequence, 8).unwrap();
    }
    let last_offset = log.producer_state().get(5).unwrap().last_offset();
    log.close().unwrap();
    let newest = *snapshot_offsets(&dir).last().unwrap();
    let path = snapshot::snapshot_path(&dir, Offset::new(newest));
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();

    let (log, source) = open(&dir, true, &clock);
    assert!(
        matches!(source, ProducerStateSource::Snapshot(offset) if offset < Offset::new(newest)),
        "{source:?}"
    );
    assert!(!path.exists(), "the damaged snapshot is gone");
    assert_eq!(
        log.producer_state().get(5).unwrap().last_offset(),
        last_offset
    );
    log.close().unwrap();
}

#[test]
fn truncation_and_retention_take_their_snapshots_with_them() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("topic-0");
    let clock = Arc::new(ManualClock::new(START));
    let (log, _) = open(&dir, false, &clock);
    for sequence in (0..240).step_by(8) {
        append(&log, 3, 0, sequence, 8).unwrap();
    }
    let snapshots = snapshot_offsets(&dir);
    let middle = snapshots[snapshots.len() / 2];
    // Truncating into the middle drops later snapshots and rebuilds the state there.
    log.truncate_to(Offset::new(middle + 3)).unwrap();
    assert!(
        snapshot_offsets(&dir)
            .iter()
            .all(|offset| *offset <= middle + 3)
    );
    let state = log.producer_state();
    assert!(state.get(3).unwrap().last_offset() < Some(Offset::new(middle + 3)));
    // The producer's next batch must follow what is left, not what was cut.
    let last_seq = state.get(3).unwrap().batches.back().unwrap().last_seq;
    assert!(append(&log, 3, 0, 240, 8).is_err());
    append(&log, 3, 0, last_seq + 1, 8).unwrap();

    // Raising the log start removes the snapshots below it.
    log.maybe_increment_high_watermark(log.log_end_offset());
    let new_start = bases_of(&log)[2];
    log.maybe_increment_log_start_offset(Offset::new(new_start))
        .unwrap();
    assert!(
        snapshot_offsets(&dir)
            .iter()
            .all(|offset| *offset >= new_start)
    );
    log.close().unwrap();
}

#[test]
fn producers_expire_after_their_idle_time() {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START));
    let (log, _) = open(&temp.path().join("topic-0"), false, &clock);
    append(&log, 8, 0, 0, 1).unwrap();
    clock.advance_ms(1_000);
    assert_eq!(
        log.remove_expired_producers(std::time::Duration::from_millis(1_001)),
        0
    );
    clock.advance_ms(1);
    assert_eq!(
        log.remove_expired_producers(std::time::Duration::from_millis(1_001)),
        1
    );
    // Forgotten, the producer may continue at any sequence, as a new one would.
    append(&log, 8, 0, 50, 1).unwrap();
    log.close().unwrap();
}

#[test]
fn kafka_s_producer_snapshots_and_idempotent_batches_load() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    // Kafka's empty snapshot is byte-identical to ferrolog's empty snapshot.
    let kafka_snapshot =
        fixtures.join("LDI-POC/__consumer_offsets-6/00000000000000000013.snapshot");
    let kafka_bytes = std::fs::read(&kafka_snapshot).unwrap();
    assert_eq!(snapshot::encode(std::iter::empty()), kafka_bytes);
    assert!(
        snapshot::decode(&kafka_snapshot, &kafka_bytes)
            .unwrap()
            .is_empty()
    );

    let clock = Arc::new(ManualClock::new(START));
    let (_copy, dir) = copy_partition(&fixtures.join("LDI-POC"), "__consumer_offsets-6");
    let (log, source) = open(&dir, false, &clock);
    assert_eq!(source, ProducerStateSource::Snapshot(Offset::new(13)));
    assert!(log.producer_state().is_empty());

    // TestTopicPatient-0 holds three idempotent producers' batches and no snapshot: an unclean
    // open replays them.
    let (_copy, dir) = copy_partition(&fixtures.join("LDI-POC"), "TestTopicPatient-0");
    let (log, source) = open(&dir, false, &clock);
    assert_eq!(source, ProducerStateSource::FullReplay);
    let state = log.producer_state();
    let mut producers: Vec<(i64, i16, i32, i64)> = state
        .entries()
        .into_iter()
        .map(|e| {
            (
                e.producer_id,
                e.epoch.value(),
                e.batches.back().unwrap().last_seq,
                e.last_offset().map_or(-1, Offset::value),
            )
        })
        .collect();
    producers.sort();
    assert_eq!(producers, vec![(1, 0, 0, 0), (2, 0, 0, 1), (3, 0, 0, 2)]);
}

/// A copy of one fixture partition directory, under its own name (the name is the log's
/// identity); fixtures are never opened in place.
fn copy_partition(data_dir: &Path, name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join(name);
    std::fs::create_dir(&dir).unwrap();
    for entry in std::fs::read_dir(data_dir.join(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    (temp, dir)
}

fn bases_of(log: &Log) -> Vec<i64> {
    log.view()
        .segments
        .iter()
        .map(|segment| segment.base_offset().value())
        .collect()
}

#[test]
fn producer_ids_are_never_handed_out_twice_across_restarts() {
    use ferrolog_storage::manager::{LogManager, ManagerConfig, PRODUCER_IDS_FILE};
    let temp = tempfile::tempdir().unwrap();
    let dirs = vec![temp.path().join("a"), temp.path().join("b")];
    let open = || {
        let config = ManagerConfig {
            log_dirs: dirs.clone(),
            ..ManagerConfig::default()
        };
        LogManager::open(config, Arc::new(ManualClock::new(START))).unwrap()
    };
    let manager = open();
    let first: Vec<i64> = (0..3)
        .map(|_| manager.next_producer_id().unwrap())
        .collect();
    assert_eq!(first, vec![0, 1, 2]);
    // The block is reserved in every directory before its first id is used.
    for dir in &dirs {
        assert_eq!(
            std::fs::read_to_string(dir.join(PRODUCER_IDS_FILE)).unwrap(),
            "0\n1000\n"
        );
    }
    drop(manager);
    // A restart (even one without a clean shutdown) starts after the reserved block.
    let manager = open();
    assert_eq!(manager.next_producer_id().unwrap(), 1000);
    manager.shutdown().unwrap();

    // A malformed file stops startup, naming the file and the line.
    std::fs::write(dirs[1].join(PRODUCER_IDS_FILE), "0\nmany\n").unwrap();
    let config = ManagerConfig {
        log_dirs: dirs.clone(),
        ..ManagerConfig::default()
    };
    let error = LogManager::open(config, Arc::new(ManualClock::new(START)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(PRODUCER_IDS_FILE) && error.contains("line 2"),
        "{error}"
    );
}

#[test]
fn a_kafka_data_dir_s_producer_ids_are_not_reused() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = ferrolog_testkit::copy_to_temp(&fixtures.join("LDI-POC"));
    let config = ferrolog_storage::manager::ManagerConfig {
        log_dirs: vec![copy.path().to_path_buf()],
        ..ferrolog_storage::manager::ManagerConfig::default()
    };
    let manager =
        ferrolog_storage::manager::LogManager::open(config, Arc::new(ManualClock::new(START)))
            .unwrap();
    // Kafka gave TestTopicPatient-0's producers ids 1, 2 and 3.
    assert_eq!(manager.next_producer_id().unwrap(), 4);
    manager.shutdown().unwrap();
}
