//! Transactions at the log layer: transactional batches open a producer's transaction, COMMIT
//! and ABORT markers close it, aborted ones go into the segment's `.txnindex` in Kafka's format,
//! the last stable offset stops at the earliest open transaction, `read_committed` reads stop
//! there and carry the aborted transactions of the range, and all of it survives clean and
//! unclean restarts (the index rebuilt by recovery) and truncation.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrolog_records::{BatchBuilder, EntryIter};
use ferrolog_storage::log::{
    FetchBound, FetchParams, FirstBatch, LoadParams, Log, MarkerRequest, ProducerStateSource,
};
use ferrolog_storage::producer::MarkerKind;
use ferrolog_storage::producer::snapshot;
use ferrolog_storage::segment::AbortedTxn;
use ferrolog_storage::{
    Clock, CoordinatorEpoch, LogConfig, ManualClock, Offset, ProducerEpoch, StorageError,
};

const START: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
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

/// Appends `count` records of producer `id` at the log end, transactional or not, as a replica
/// would (offsets carried), and commits them (the high watermark follows, as on one replica).
fn write(log: &Log, id: i64, sequence: i32, count: usize, transactional: bool) -> (i64, i64) {
    let base = log.log_end_offset().value();
    let mut builder = BatchBuilder::new(base)
        .producer(id, 0, sequence)
        .transactional(transactional);
    for i in 0..count {
        let value = format!("{id}-{:0>300}", i64::from(sequence) + i as i64);
        builder
            .append(START, Some(b"k"), Some(value.as_bytes()), &[])
            .unwrap();
    }
    let info = log.append_as_follower(&builder.build().unwrap()).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
    (info.first_offset.value(), info.last_offset.value())
}

fn end(log: &Log, id: i64, kind: MarkerKind) -> Result<i64, StorageError> {
    let marker = MarkerRequest {
        producer_id: id,
        epoch: ProducerEpoch::new(0),
        coordinator_epoch: CoordinatorEpoch::new(1),
        kind,
    };
    log.append_marker(marker, false)
        .map(|info| info.first_offset.value())
}

fn last_stable(log: &Log) -> i64 {
    log.watermarks().last_stable_offset.value()
}

/// What a `read_committed` read from `offset` returns: the last offset of the bytes read (−1
/// for none) and the aborted transactions reported.
fn read_committed(log: &Log, offset: i64) -> (i64, Option<Vec<AbortedTxn>>) {
    let data = log
        .read(FetchParams {
            start_offset: Offset::new(offset),
            max_bytes: 1 << 20,
            bound: FetchBound::LastStable,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    let bytes = data.read_bytes().unwrap();
    let last = EntryIter::new(&bytes)
        .map(|entry| entry.unwrap().1.last_offset())
        .last()
        .unwrap_or(-1);
    (last, data.aborted_txns)
}

/// Every `.txnindex` in `dir` with its bytes, by name.
fn txn_indexes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "txnindex"))
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    found.sort();
    found
}

fn entry(producer_id: i64, first: i64, last: i64, stable: i64) -> AbortedTxn {
    AbortedTxn {
        producer_id,
        first_offset: Offset::new(first),
        last_offset: Offset::new(last),
        last_stable_offset: Offset::new(stable),
    }
}

#[test]
fn aborts_are_indexed_and_committed_reads_stop_at_the_first_open_transaction() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("topic-0");
    let clock = Arc::new(ManualClock::new(START));
    let (log, _) = open(&dir, false, &clock);
    assert_eq!(write(&log, 1, 0, 2, true), (0, 1));
    assert_eq!(write(&log, 9, 0, 1, false), (2, 2));
    assert_eq!(write(&log, 2, 0, 2, true), (3, 4));
    assert_eq!(last_stable(&log), 0);
    assert_eq!(log.watermarks().high_watermark.value(), 5);
    // Nothing stable yet: an empty read with an empty list, as Kafka answers.
    assert_eq!(read_committed(&log, 0), (-1, Some(Vec::new())));

    // Producer 1 aborts: stable up to producer 2's open transaction.
    assert_eq!(end(&log, 1, MarkerKind::Abort).unwrap(), 5);
    assert_eq!(last_stable(&log), 3);
    let aborted = entry(1, 0, 5, 3);
    assert_eq!(read_committed(&log, 0), (2, Some(vec![aborted])));
    let indexes = txn_indexes(&dir);
    assert_eq!(
        indexes.len(),
        1,
        "only the segment holding the abort has an index"
    );
    assert_eq!(indexes[0].1, aborted_bytes(&aborted));
    // A read_uncommitted read reads to the high watermark and lists nothing.
    let uncommitted = log
        .read(FetchParams {
            start_offset: Offset::ZERO,
            max_bytes: 1 << 20,
            bound: FetchBound::HighWatermark,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    assert!(uncommitted.aborted_txns.is_none());

    // Producer 2 commits: everything is stable, and the abort is still reported.
    assert_eq!(end(&log, 2, MarkerKind::Commit).unwrap(), 6);
    assert_eq!(last_stable(&log), 7);
    assert_eq!(read_committed(&log, 0), (6, Some(vec![aborted])));
    // From past the abort's marker, no aborted transaction overlaps the read.
    assert_eq!(read_committed(&log, 6), (6, Some(Vec::new())));
    // Producer 2 may write plain batches again.
    write(&log, 2, 2, 1, false);

    // Markers the producer state refuses, and nothing written for them.
    let before = log.log_end_offset();
    let stale_coordinator = MarkerRequest {
        producer_id: 1,
        epoch: ProducerEpoch::new(0),
        coordinator_epoch: CoordinatorEpoch::new(0),
        kind: MarkerKind::Commit,
    };
    let error = log.append_marker(stale_coordinator, false).unwrap_err();
    assert!(
        matches!(error, StorageError::CoordinatorFenced { .. }),
        "{error}"
    );
    assert_eq!(log.log_end_offset(), before);
    // With transactions v2, a marker at the producer's epoch while its transaction is open is
    // stale; once the transaction has ended, the same marker again is a retry and is taken
    // (KAFKA-19999).
    write(&log, 1, 0, 1, true);
    let same_epoch = MarkerRequest {
        coordinator_epoch: CoordinatorEpoch::new(1),
        ..stale_coordinator
    };
    let before = log.log_end_offset();
    let error = log.append_marker(same_epoch, true).unwrap_err();
    assert!(
        matches!(error, StorageError::InvalidProducerEpoch { .. }),
        "{error}"
    );
    assert_eq!(log.log_end_offset(), before);
    end(&log, 1, MarkerKind::Commit).unwrap();
    log.append_marker(same_epoch, true).unwrap();
    log.close().unwrap();
}

fn aborted_bytes(txn: &AbortedTxn) -> Vec<u8> {
    let mut bytes = vec![0, 0];
    for value in [
        txn.producer_id,
        txn.first_offset.value(),
        txn.last_offset.value(),
        txn.last_stable_offset.value(),
    ] {
        bytes.extend_from_slice(&value.to_be_bytes());
    }
    bytes
}

/// A log of several segments: producer 1's aborted transaction spans segments, producer 2
/// commits, producer 3 aborts one and leaves another open. Returns the offset of producer 3's
/// aborted transaction's first record.
fn transactional_history(log: &Log) -> i64 {
    write(log, 1, 0, 2, true);
    write(log, 2, 0, 3, true);
    write(log, 1, 2, 4, true);
    end(log, 2, MarkerKind::Commit).unwrap();
    let (third, _) = write(log, 3, 0, 2, true);
    end(log, 1, MarkerKind::Abort).unwrap();
    end(log, 3, MarkerKind::Abort).unwrap();
    write(log, 4, 0, 5, false);
    write(log, 3, 2, 2, true);
    third
}

#[test]
fn restarts_keep_open_transactions_and_recovery_rebuilds_the_indexes() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("topic-0");
    let clock = Arc::new(ManualClock::new(START));
    let (log, _) = open(&dir, false, &clock);
    let third = transactional_history(&log);
    assert!(log.view().segments.len() >= 3, "the history spans segments");
    let open_at = log.log_end_offset().value() - 2;
    assert_eq!(last_stable(&log), open_at);
    let indexes = txn_indexes(&dir);
    let entries: usize = indexes.iter().map(|(_, bytes)| bytes.len() / 34).sum();
    assert_eq!(entries, 2);
    // A read covers one segment: the aborted transactions overlapping it, up to the next
    // segment's base.
    let committed = read_committed(&log, 0);
    let reported = |read: &(i64, Option<Vec<AbortedTxn>>)| -> Vec<i64> {
        read.1.iter().flatten().map(|txn| txn.producer_id).collect()
    };
    assert_eq!(reported(&committed), [1]);
    let later = read_committed(&log, third);
    // Producer 1's transaction was still open when producer 3's began: both overlap.
    assert_eq!(reported(&later), [1, 3]);
    log.close().unwrap();

    // Clean: the snapshot at the log end carries producer 3's open transaction.
    let (log, source) = open(&dir, true, &clock);
    assert!(matches!(source, ProducerStateSource::Snapshot(_)));
    assert_eq!(last_stable(&log), open_at);
    assert_eq!(read_committed(&log, 0), committed);
    assert_eq!(read_committed(&log, third), later);
    log.close().unwrap();

    // Unclean, everything recovered: the indexes are emptied and rebuilt from the markers,
    // byte for byte, with or without snapshots to start from.
    for remove_snapshots in [false, true] {
        if remove_snapshots {
            for (_, path) in snapshot::list(&dir).unwrap() {
                std::fs::remove_file(path).unwrap();
            }
        }
        let (log, _) = open(&dir, false, &clock);
        assert_eq!(txn_indexes(&dir), indexes);
        assert_eq!(last_stable(&log), open_at);
        assert_eq!(read_committed(&log, 0), committed);
        assert_eq!(read_committed(&log, third), later);
        log.close().unwrap();
    }

    // Clean, with the offset index of the first segment holding an abort lost: that segment
    // alone is recovered, below the snapshot at the log end, and its transaction index is
    // rebuilt by a replay from the start in a state that is then dropped.
    let (first_indexed, _) = &indexes[0];
    let offset_index = first_indexed.with_extension("index");
    let last_segment = log_files(&dir).pop().unwrap();
    assert_ne!(
        first_indexed.with_extension("log"),
        last_segment,
        "the abort is in an inactive segment"
    );
    std::fs::remove_file(&offset_index).unwrap();
    let (log, source) = open(&dir, true, &clock);
    assert!(
        matches!(source, ProducerStateSource::Snapshot(_)),
        "{source:?}"
    );
    assert!(offset_index.exists(), "the segment was recovered");
    assert_eq!(txn_indexes(&dir), indexes);
    assert_eq!(last_stable(&log), open_at);
    assert_eq!(read_committed(&log, 0), committed);
    log.close().unwrap();
}

/// The `.log` files in `dir`, in offset order.
fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .collect();
    found.sort();
    found
}

#[test]
fn truncation_reopens_the_transactions_its_markers_closed() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("topic-0");
    let clock = Arc::new(ManualClock::new(START));
    let (log, _) = open(&dir, false, &clock);
    write(&log, 1, 0, 2, true);
    let abort_at = end(&log, 1, MarkerKind::Abort).unwrap();
    write(&log, 2, 0, 1, false);
    assert_eq!(last_stable(&log), log.log_end_offset().value());
    assert_eq!(txn_indexes(&dir).len(), 1);
    // Cut at the marker: the transaction is open again and its index entry gone.
    assert!(log.truncate_to(Offset::new(abort_at)).unwrap());
    assert_eq!(last_stable(&log), 0);
    assert_eq!(txn_indexes(&dir)[0].1, Vec::<u8>::new());
    assert_eq!(read_committed(&log, 0), (-1, Some(Vec::new())));
    // The coordinator's marker comes again.
    assert_eq!(end(&log, 1, MarkerKind::Abort).unwrap(), abort_at);
    assert_eq!(last_stable(&log), abort_at + 1);
    log.close().unwrap();
}
