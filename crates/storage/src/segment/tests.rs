//! Segment behaviours from Kafka's `LogSegmentTest`, one test per behaviour.

#![allow(clippy::unwrap_used, reason = "tests")]

use ferrolog_records::{Compression, RecordBatch};
use ferrolog_testkit::{TestRecord, batch_at};

use super::*;
use std::os::unix::fs::FileExt;

mod reservation;
mod sealed;

const NOW: i64 = 1_000_000;

fn config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 10,
        segment_index_bytes: 12_000,
        ..LogConfig::default()
    }
}

fn create(dir: &tempfile::TempDir, base: i64) -> Segment {
    Segment::create(dir.path(), Offset::new(base), &config(), NOW).unwrap()
}

/// A batch at `offset` holding one record per value, each stamped `timestamp`.
fn records_at(offset: i64, timestamp: i64, values: &[&str]) -> Vec<u8> {
    let records: Vec<TestRecord> = values
        .iter()
        .map(|value| TestRecord::new(timestamp, None, Some(value.as_bytes())))
        .collect();
    batch_at(offset, Compression::None, &records)
}

fn append(segment: &Segment, bytes: &[u8]) {
    let batch = RecordBatch::new(bytes).unwrap();
    segment
        .append(
            bytes,
            &[BatchMeta {
                last_offset: Offset::new(batch.last_offset()),
                max_timestamp: batch.max_timestamp(),
                size: bytes.len() as u32,
            }],
        )
        .unwrap();
}

fn read_offsets(segment: &Segment, slice: &SegmentSlice) -> Vec<i64> {
    let bytes = segment
        .log_file()
        .read_bytes(slice.position.bytes(), slice.length as usize)
        .unwrap();
    let mut offsets = Vec::new();
    for entry in ferrolog_records::EntryIter::new(&bytes) {
        let (_, entry) = entry.unwrap();
        let records = entry.records(1 << 20).unwrap();
        offsets.extend(records.to_vec().unwrap().iter().map(|record| record.offset));
    }
    offsets
}

#[test]
fn read_on_empty_segment_returns_none() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    assert_eq!(
        segment
            .read(
                Offset::new(40),
                300,
                Some(FilePosition::new(segment.size())),
                FirstBatch::WithinLimit
            )
            .unwrap(),
        None
    );
}

#[test]
fn read_before_first_offset_returns_the_first_batch() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    append(
        &segment,
        &records_at(50, NOW, &["hello", "there", "little", "bee"]),
    );
    let slice = segment
        .read(
            Offset::new(41),
            300,
            Some(FilePosition::new(segment.size())),
            FirstBatch::WithinLimit,
        )
        .unwrap()
        .unwrap();
    assert_eq!(read_offsets(&segment, &slice), vec![50, 51, 52, 53]);
}

#[test]
fn read_after_last_offset_returns_none() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    append(&segment, &records_at(50, NOW, &["hello", "there"]));
    assert_eq!(
        segment
            .read(
                Offset::new(52),
                200,
                Some(FilePosition::new(segment.size())),
                FirstBatch::WithinLimit
            )
            .unwrap(),
        None
    );
}

#[test]
fn read_from_gap_returns_the_next_batch() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    append(&segment, &records_at(50, NOW, &["hello", "there"]));
    append(&segment, &records_at(60, NOW, &["alpha", "beta"]));
    let slice = segment
        .read(
            Offset::new(55),
            200,
            Some(FilePosition::new(segment.size())),
            FirstBatch::WithinLimit,
        )
        .unwrap()
        .unwrap();
    assert_eq!(read_offsets(&segment, &slice), vec![60, 61]);
}

#[test]
fn read_when_no_max_position_returns_empty_with_offset_position() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    let first = records_at(50, NOW, &["hello", "there"]);
    append(&segment, &first);
    append(&segment, &records_at(52, NOW, &["alpha"]));
    let slice = segment
        .read(Offset::new(52), 200, None, FirstBatch::WithinLimit)
        .unwrap()
        .unwrap();
    assert_eq!(slice.length, 0);
    assert_eq!(slice.position, FilePosition::new(first.len() as u64));
}

#[test]
fn read_with_too_small_max_length() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    append(&segment, &records_at(50, NOW, &["hello", "there"]));
    let nothing = segment
        .read(
            Offset::new(50),
            0,
            Some(FilePosition::new(segment.size())),
            FirstBatch::WithinLimit,
        )
        .unwrap()
        .unwrap();
    assert_eq!(nothing.length, 0);
    let one = segment
        .read(
            Offset::new(50),
            1,
            Some(FilePosition::new(segment.size())),
            FirstBatch::WithinLimit,
        )
        .unwrap()
        .unwrap();
    assert_eq!(one.length, 1);
    assert!(one.first_entry_incomplete);
    let whole = segment
        .read(
            Offset::new(50),
            1,
            Some(FilePosition::new(segment.size())),
            FirstBatch::Whole,
        )
        .unwrap()
        .unwrap();
    assert_eq!(whole.length, segment.size());
    assert!(!whole.first_entry_incomplete);
}

#[test]
fn truncate_keeps_earlier_batches_readable() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    for offset in 40..70 {
        let first = records_at(offset, NOW, &["hello"]);
        let second = records_at(offset + 1, NOW, &["there"]);
        append(&segment, &first);
        append(&segment, &second);
        let slice = segment
            .read(
                Offset::new(offset),
                10_000,
                Some(FilePosition::new(segment.size())),
                FirstBatch::WithinLimit,
            )
            .unwrap()
            .unwrap();
        assert_eq!(read_offsets(&segment, &slice).first(), Some(&offset));
        segment.truncate_to(Offset::new(offset + 1), NOW).unwrap();
        let slice = segment
            .read(
                Offset::new(offset),
                10_000,
                Some(FilePosition::new(segment.size())),
                FirstBatch::WithinLimit,
            )
            .unwrap()
            .unwrap();
        assert_eq!(
            read_offsets(&segment, &slice),
            vec![offset],
            "only the first stays"
        );
    }
}

#[test]
fn truncate_to_a_gap_offset_drops_the_later_batch() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    append(&segment, &records_at(40, NOW, &["a", "b"]));
    let size_after_first = segment.size();
    append(&segment, &records_at(50, NOW, &["c"]));
    segment.truncate_to(Offset::new(45), NOW).unwrap();
    assert_eq!(segment.size(), size_after_first);
    assert_eq!(segment.read_next_offset().unwrap(), (Offset::new(42), None));
}

#[test]
fn truncate_full_resets_roll_timer_and_index_fullness() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_index_bytes: 36,
        index_interval_bytes: 0,
        ..LogConfig::default()
    };
    let segment = Segment::create(dir.path(), Offset::new(40), &config, NOW).unwrap();
    for offset in 40..43 {
        append(&segment, &records_at(offset, offset, &["x"]));
    }
    assert!(segment.time_index_is_full(), "3 slots, the last reserved");
    segment.truncate_to(Offset::new(40), NOW + 5_000).unwrap();
    assert!(!segment.offset_index_is_full() && !segment.time_index_is_full());
    assert_eq!(segment.size(), 0);
    let params = RollParams {
        segment_age: std::time::Duration::from_millis(1_000),
        segment_bytes: 1 << 30,
        max_timestamp_in_messages: -1,
        max_offset_in_messages: Offset::new(40),
        messages_size: 10,
        now_ms: NOW + 5_500,
    };
    append(&segment, &records_at(40, -1, &["again"]));
    assert!(
        !segment.should_roll(&params).unwrap(),
        "the roll timer restarted at truncation"
    );
    assert!(
        segment
            .should_roll(&RollParams {
                now_ms: NOW + 6_001,
                ..params
            })
            .unwrap()
    );
}

#[test]
fn truncate_empty_segment_allows_reappending_the_same_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    segment.truncate_to(Offset::ZERO, NOW).unwrap();
    append(&segment, &records_at(40, NOW, &["a"]));
    segment.truncate_to(Offset::new(40), NOW).unwrap();
    append(&segment, &records_at(40, NOW, &["a"]));
    assert_eq!(segment.read_next_offset().unwrap(), (Offset::new(41), None));
}

#[test]
fn reload_largest_timestamp_and_next_offset_after_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    for offset in 40..50 {
        append(&segment, &records_at(offset, offset * 10, &["v"]));
    }
    segment.truncate_to(Offset::new(45), NOW).unwrap();
    assert_eq!(segment.max_timestamp().unwrap(), 440);
    assert_eq!(segment.read_next_offset().unwrap(), (Offset::new(45), None));
}

#[test]
fn find_offset_by_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    for offset in 40..50 {
        append(&segment, &records_at(offset, offset * 10, &["v"]));
    }
    for offset in 40..50 {
        let found = segment
            .find_offset_by_timestamp(offset * 10 - 5, Offset::ZERO)
            .unwrap()
            .unwrap();
        assert_eq!(
            found,
            TimestampOffset {
                timestamp: offset * 10,
                offset: Offset::new(offset)
            }
        );
        let exact = segment
            .find_offset_by_timestamp(offset * 10, Offset::ZERO)
            .unwrap()
            .unwrap();
        assert_eq!(exact.offset, Offset::new(offset));
    }
    assert_eq!(
        segment.find_offset_by_timestamp(491, Offset::ZERO).unwrap(),
        None,
        "above max"
    );
}

#[test]
fn next_offset_calculation() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    assert_eq!(segment.read_next_offset().unwrap(), (Offset::new(40), None));
    append(&segment, &records_at(50, NOW, &["a", "b", "c"]));
    assert_eq!(segment.read_next_offset().unwrap(), (Offset::new(53), None));
}

#[test]
fn change_file_suffixes_renames_log_and_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    append(&segment, &records_at(40, NOW, &["a"]));
    let [log, index, time, _] = segment.file_paths();
    segment.change_file_suffixes("", DELETED_SUFFIX).unwrap();
    for path in [&log, &index, &time] {
        assert!(!path.exists());
        assert!(with_added_suffix(path, DELETED_SUFFIX).exists());
    }
    segment.change_file_suffixes(DELETED_SUFFIX, "").unwrap();
    assert!(log.exists() && index.exists() && time.exists());
    // The segment still reads after the renames.
    assert_eq!(segment.read_next_offset().unwrap(), (Offset::new(41), None));
}

#[test]
fn a_txnindex_beside_the_segment_is_renamed_and_deleted_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 40);
    append(&segment, &records_at(40, NOW, &["a"]));
    // As Kafka leaves beside a segment that held an aborted transaction.
    let txn_index = dir.path().join("00000000000000000040.txnindex");
    std::fs::write(&txn_index, [0u8; 34]).unwrap();
    assert_eq!(segment.file_paths()[3], txn_index);
    segment.change_file_suffixes("", DELETED_SUFFIX).unwrap();
    let renamed = with_added_suffix(&txn_index, DELETED_SUFFIX);
    assert!(!txn_index.exists() && renamed.exists());
    assert_eq!(segment.file_paths()[3], renamed);
    segment.delete_files().unwrap();
    assert!(!renamed.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn recovery_fixes_corrupt_index() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 0);
    for offset in 0..100 {
        append(
            &segment,
            &records_at(offset, offset * 10, &[&offset.to_string()]),
        );
    }
    let expected_index = segment.offset_index_entries().unwrap();
    let expected_time = segment.time_index_entries().unwrap();
    assert!(expected_index.len() > 10);
    let [_, index_path, time_path, _] = segment.file_paths();
    drop(segment);
    for path in [&index_path, &time_path] {
        let mut garbage = std::fs::read(path).unwrap();
        for (i, byte) in garbage.iter_mut().enumerate().take(600) {
            *byte = (i * 7 + 3) as u8;
        }
        std::fs::write(path, garbage).unwrap();
    }
    let segment = Segment::open(dir.path(), Offset::ZERO, &config(), NOW, "").unwrap();
    segment.recover().unwrap();
    assert_eq!(segment.offset_index_entries().unwrap(), expected_index);
    let mut time = segment.time_index_entries().unwrap();
    // Recovery adds the final entry a roll would add; the rest is identical.
    assert_eq!(time.pop().map(|entry| entry.timestamp), Some(990));
    assert_eq!(&time[..], &expected_time[..time.len()]);
    for offset in 0..100 {
        let slice = segment
            .read(
                Offset::new(offset),
                1 << 20,
                Some(FilePosition::new(segment.size())),
                FirstBatch::WithinLimit,
            )
            .unwrap()
            .unwrap();
        assert_eq!(read_offsets(&segment, &slice)[0], offset);
    }
}

#[test]
fn recovery_with_corrupt_message_keeps_exactly_the_earlier_batches() {
    let mut state = 99u64;
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let segment = create(&dir, 0);
        let mut positions = Vec::new();
        for offset in 0..100 {
            positions.push(segment.size());
            append(&segment, &records_at(offset, NOW, &[&offset.to_string()]));
        }
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
        let victim = (state >> 33) as usize % positions.len();
        let position = positions[victim];
        let garbage: Vec<u8> = (0..20).map(|i| (i * 31 + 7) as u8).collect();
        segment
            .log_file()
            .file()
            .unwrap()
            .write_all_at(&garbage, position + 3)
            .unwrap();
        let outcome = segment.recover().unwrap();
        assert_eq!(outcome.valid_bytes, position, "victim {victim}");
        assert_eq!(
            segment.read_next_offset().unwrap(),
            (Offset::new(victim as i64), None)
        );
        assert!(outcome.corruption.is_some());
    }
}

#[test]
fn preallocated_segment_is_readable_and_trimmed_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        preallocate: true,
        segment_bytes: 512 * 1024 * 1024,
        ..config()
    };
    let segment = Segment::create(dir.path(), Offset::new(40), &config, NOW).unwrap();
    assert_eq!(segment.log_file().file_length().unwrap(), 512 * 1024 * 1024);
    append(&segment, &records_at(40, NOW, &["hello", "there"]));
    let size = segment.size();
    let slice = segment
        .read(
            Offset::new(40),
            1 << 20,
            Some(FilePosition::new(size)),
            FirstBatch::WithinLimit,
        )
        .unwrap()
        .unwrap();
    assert_eq!(read_offsets(&segment, &slice), vec![40, 41]);
    segment.on_becoming_inactive().unwrap();
    assert_eq!(segment.log_file().file_length().unwrap(), size);
    drop(segment);
    let reopened = Segment::open(dir.path(), Offset::new(40), &config, NOW, "").unwrap();
    assert_eq!(reopened.size(), size);
    assert_eq!(
        reopened.read_next_offset().unwrap(),
        (Offset::new(42), None)
    );
}

#[test]
fn unclean_preallocated_segment_recovers_to_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        preallocate: true,
        segment_bytes: 1024 * 1024,
        ..config()
    };
    let segment = Segment::create(dir.path(), Offset::ZERO, &config, NOW).unwrap();
    append(&segment, &records_at(0, NOW, &["a", "b"]));
    let size = segment.size();
    drop(segment);
    let reopened = Segment::open(dir.path(), Offset::ZERO, &config, NOW, "").unwrap();
    let outcome = reopened.recover().unwrap();
    assert_eq!(outcome.valid_bytes, size);
    // As in Kafka, the zero-filled tail reads as an entry of size 0 and is reported and cut.
    assert_eq!(outcome.corruption.map(|(position, _)| position), Some(size));
    assert_eq!(reopened.log_file().file_length().unwrap(), size);
}

#[test]
fn append_for_log_segment_offset_overflow_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 0);
    let bytes = records_at(i64::from(i32::MAX) + 1, NOW, &["too far"]);
    let batch = RecordBatch::new(&bytes).unwrap();
    let result = segment.append(
        &bytes,
        &[BatchMeta {
            last_offset: Offset::new(batch.last_offset()),
            max_timestamp: NOW,
            size: bytes.len() as u32,
        }],
    );
    assert!(matches!(result, Err(StorageError::OffsetOverflow { .. })));
    assert_eq!(segment.size(), 0, "nothing was written");
}

#[test]
fn roll_jitter_brings_the_time_roll_forward() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_age: std::time::Duration::from_millis(10_000),
        segment_jitter: std::time::Duration::from_millis(10_000),
        ..config()
    };
    let segment = Segment::create(dir.path(), Offset::ZERO, &config, NOW).unwrap();
    append(&segment, &records_at(0, NOW, &["a"]));
    let jitter = crate::clock::kafka_ms(segment.roll_jitter());
    assert!((0..10_000).contains(&jitter));
    let params = |timestamp| RollParams {
        segment_age: std::time::Duration::from_millis(10_000),
        segment_bytes: 1 << 30,
        max_timestamp_in_messages: timestamp,
        max_offset_in_messages: Offset::new(1),
        messages_size: 10,
        now_ms: NOW,
    };
    assert!(!segment.should_roll(&params(NOW + 10_000 - jitter)).unwrap());
    assert!(
        segment
            .should_roll(&params(NOW + 10_000 - jitter + 1))
            .unwrap()
    );
}
