//! Log behaviours from Kafka's `UnifiedLogTest`, `LocalLogTest` and `LogLoaderTest`, one test per
//! behaviour, named after what it checks.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use ferrolog_records::{Compression, EntryIter, RecordBatch, TimestampType};
use ferrolog_testkit::{TestRecord, batch, batch_at, numbered_batch, sized_batch};

use super::*;
use crate::clock::ManualClock;
use crate::config::{CleanupPolicy, TargetCompression};
use crate::segment::TimestampOffset;

mod invariants;
mod leader_epochs;
mod loading;
mod validation;

const NOW: i64 = 1_700_000_000_000;

struct Fixture {
    _temp: tempfile::TempDir,
    data_dir: PathBuf,
    clock: Arc<ManualClock>,
}

impl Fixture {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let data_dir = temp.path().to_path_buf();
        Self {
            _temp: temp,
            data_dir,
            clock: Arc::new(ManualClock::new(NOW)),
        }
    }
    fn dir(&self) -> PathBuf {
        self.data_dir.join("topic-0")
    }
    fn create(&self, config: LogConfig) -> Log {
        Log::create(
            &self.data_dir,
            &TopicPartition::new("topic", 0),
            config,
            self.clock.clone(),
        )
        .unwrap()
    }
    fn open(&self, config: LogConfig, params: LoadParams) -> (Log, LoadReport) {
        Log::open(&self.dir(), config, params, self.clock.clone()).unwrap()
    }
    /// Opens the log as after a clean shutdown: nothing is recovered.
    fn open_clean(&self, config: LogConfig) -> (Log, LoadReport) {
        let params = LoadParams {
            had_clean_shutdown: true,
            ..LoadParams::default()
        };
        self.open(config, params)
    }
}

/// Appends as the broker does for a single-replica partition: the HW follows the LEO.
fn append(log: &Log, bytes: &[u8]) -> AppendInfo {
    let info = log.append_as_leader(bytes.to_vec()).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
    info
}

fn append_value(log: &Log, value: &str) -> AppendInfo {
    append(
        log,
        &batch(&[TestRecord::new(NOW, Some(b"k"), Some(value.as_bytes()))]),
    )
}

type OffsetsAndValues = Vec<(i64, Option<Vec<u8>>)>;

/// Up to a MiB of the log's stored bytes from offset 0, whole batches.
fn first_mib(log: &Log) -> Vec<u8> {
    log.read(FetchParams {
        start_offset: Offset::ZERO,
        max_bytes: 1 << 20,
        bound: FetchBound::LogEnd,
        first_batch: FirstBatch::Whole,
    })
    .unwrap()
    .read_bytes()
    .unwrap()
}

/// Every record offset and value readable from `start` to the LEO.
fn read_all(log: &Log, start: i64) -> OffsetsAndValues {
    let mut out = Vec::new();
    let mut offset = start;
    while offset < log.log_end_offset().value() {
        let data = log
            .read(FetchParams {
                start_offset: Offset::new(offset),
                max_bytes: 1 << 20,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })
            .unwrap();
        let bytes = data.read_bytes().unwrap();
        let before = out.len();
        for entry in EntryIter::new(&bytes) {
            let (_, entry) = entry.unwrap();
            for record in entry.records(1 << 24).unwrap().to_vec().unwrap() {
                if record.offset >= offset {
                    out.push((record.offset, record.value.map(<[u8]>::to_vec)));
                }
            }
        }
        if out.len() == before {
            break;
        }
        offset = out.last().unwrap().0 + 1;
    }
    out
}

fn small_segments(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes: 1,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

#[test]
fn size_based_log_roll() {
    let fixture = Fixture::new();
    let set_size = sized_batch(100, NOW).len() as u64;
    let log = fixture.create(small_segments(10 * (set_size - 1)));
    for _ in 0..11 {
        append(&log, &sized_batch(100, NOW));
    }
    assert_eq!(
        log.segment_count(),
        2,
        "the 11th message rolls into a second segment"
    );
}

#[test]
fn time_based_log_roll_uses_the_first_batch_timestamp() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        segment_age: std::time::Duration::from_millis(60_000),
        ..LogConfig::default()
    });
    append(&log, &batch(&[TestRecord::new(NOW, None, Some(b"a"))]));
    append(
        &log,
        &batch(&[TestRecord::new(NOW + 60_000, None, Some(b"b"))]),
    );
    assert_eq!(
        log.segment_count(),
        1,
        "exactly segment.ms later does not roll"
    );
    append(
        &log,
        &batch(&[TestRecord::new(NOW + 60_001, None, Some(b"c"))]),
    );
    assert_eq!(log.segment_count(), 2);
    assert_eq!(log.view().active_segment().base_offset(), Offset::new(2));
}

#[test]
fn time_based_log_roll_jitter() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        segment_age: std::time::Duration::from_millis(60_000),
        segment_jitter: std::time::Duration::from_millis(30_000),
        ..LogConfig::default()
    });
    append(&log, &batch(&[TestRecord::new(NOW, None, Some(b"a"))]));
    let jitter = crate::clock::kafka_ms(log.view().active_segment().roll_jitter());
    append(
        &log,
        &batch(&[TestRecord::new(NOW + 60_000 - jitter, None, Some(b"b"))]),
    );
    assert_eq!(log.segment_count(), 1);
    append(
        &log,
        &batch(&[TestRecord::new(NOW + 60_001 - jitter, None, Some(b"c"))]),
    );
    assert_eq!(log.segment_count(), 2);
}

#[test]
fn roll_segment_that_already_exists_replaces_the_empty_active_segment() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    assert_eq!(log.roll().unwrap(), Offset::ZERO);
    assert_eq!(
        log.segment_count(),
        1,
        "rolling an empty active segment to its own base"
    );
    append_value(&log, "a");
    assert_eq!(log.roll().unwrap(), Offset::new(1));
    assert_eq!(log.roll().unwrap(), Offset::new(1));
    assert_eq!(log.segment_count(), 2);
    append_value(&log, "b");
    assert_eq!(read_all(&log, 0).len(), 2);
}

#[test]
fn roll_when_the_offset_index_is_full() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        index_interval_bytes: 1,
        segment_index_bytes: 8 * 3,
        ..LogConfig::default()
    });
    for i in 0..10 {
        append_value(&log, &i.to_string());
    }
    assert!(log.segment_count() > 2);
    assert_eq!(read_all(&log, 0).len(), 10);
}

#[test]
fn message_size_check() {
    let fixture = Fixture::new();
    let small = sized_batch(10, NOW);
    let log = fixture.create(LogConfig {
        max_message_bytes: small.len() as u32 + 5,
        ..LogConfig::default()
    });
    append(&log, &small);
    let error = log.append_as_leader(sized_batch(100, NOW)).unwrap_err();
    assert!(
        matches!(error, StorageError::RecordTooLarge { batch_index: 0, .. }),
        "{error}"
    );
    assert_eq!(
        log.log_end_offset(),
        Offset::new(1),
        "nothing of the rejected append was written"
    );
}

#[test]
fn compacted_topic_rejects_unkeyed_records_naming_the_record() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        ..LogConfig::default()
    });
    let mixed = batch(&[
        TestRecord::new(NOW, Some(b"k"), Some(b"v")),
        TestRecord::new(NOW, None, Some(b"v")),
    ]);
    let error = log.append_as_leader(mixed.clone()).unwrap_err();
    assert!(
        matches!(
            error,
            StorageError::InvalidRecord {
                batch_index: 0,
                record_index: Some(1),
                ..
            }
        ),
        "{error}"
    );
    append(
        &log,
        &batch(&[TestRecord::new(NOW, Some(b"k"), Some(b"v"))]),
    );
}

#[test]
fn append_with_out_of_order_offsets_throws() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    let mut bytes = batch_at(
        5,
        Compression::None,
        &[TestRecord::new(NOW, None, Some(b"a"))],
    );
    bytes.extend(batch_at(
        5,
        Compression::None,
        &[TestRecord::new(NOW, None, Some(b"b"))],
    ));
    assert!(matches!(
        log.append_as_follower(&bytes),
        Err(StorageError::OffsetsOutOfOrder(_))
    ));
}

#[test]
fn append_below_expected_offset_throws() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    log.append_as_follower(&batch_at(
        0,
        Compression::None,
        &vec![TestRecord::new(NOW, None, Some(b"a")); 3],
    ))
    .unwrap();
    let again = batch_at(
        1,
        Compression::None,
        &[TestRecord::new(NOW, None, Some(b"b"))],
    );
    assert!(matches!(
        log.append_as_follower(&again),
        Err(StorageError::UnexpectedAppendOffset {
            first_offset: 1,
            log_end_offset: 3
        })
    ));
    log.append_as_follower(&batch_at(
        10,
        Compression::None,
        &[TestRecord::new(NOW, None, Some(b"c"))],
    ))
    .unwrap();
    assert_eq!(
        log.log_end_offset(),
        Offset::new(11),
        "followers may leave gaps"
    );
}

#[test]
fn append_message_with_null_payload() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append(&log, &batch(&[TestRecord::new(NOW, Some(b"k"), None)]));
    assert_eq!(read_all(&log, 0), vec![(0, None)]);
}

#[test]
fn read_with_too_small_max_length() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "hello");
    let params = |max_bytes| FetchParams {
        start_offset: Offset::ZERO,
        max_bytes,
        bound: FetchBound::LogEnd,
        first_batch: FirstBatch::WithinLimit,
    };
    assert!(log.read(params(0)).unwrap().is_empty());
    let one = log.read(params(1)).unwrap();
    assert_eq!(one.len(), 1);
    assert!(one.first_entry_incomplete);
}

#[test]
fn read_out_of_range() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    for value in ["a", "b", "c"] {
        append_value(&log, value);
    }
    let params = |start_offset| FetchParams {
        start_offset,
        max_bytes: 1024,
        bound: FetchBound::LogEnd,
        first_batch: FirstBatch::Whole,
    };
    let at_end = log.read(params(Offset::new(3))).unwrap();
    assert!(at_end.is_empty());
    assert_eq!(at_end.offset_metadata.offset, Offset::new(3));
    assert!(matches!(
        log.read(params(Offset::new(4))),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    log.maybe_increment_log_start_offset(Offset::new(1))
        .unwrap();
    assert!(matches!(
        log.read(params(Offset::ZERO)),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn first_batch_is_returned_whole_past_max_bytes_and_reads_cross_segments() {
    let fixture = Fixture::new();
    let log = fixture.create(small_segments(2_000));
    for i in 0..20 {
        append(&log, &sized_batch(300 + i, NOW));
    }
    assert!(log.segment_count() > 3);
    let data = log
        .read(FetchParams {
            start_offset: Offset::new(7),
            max_bytes: 10,
            bound: FetchBound::LogEnd,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    let bytes = data.read_bytes().unwrap();
    let batch = RecordBatch::new(&bytes).unwrap();
    assert_eq!(batch.base_offset(), 7);
    assert_eq!(read_all(&log, 0).len(), 20);
}

#[test]
fn consumer_reads_stop_at_the_high_watermark() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    for value in ["a", "b", "c"] {
        append_value(&log, value);
    }
    log.update_high_watermark(Offset::new(1));
    let data = log
        .read(FetchParams {
            start_offset: Offset::ZERO,
            max_bytes: 1 << 20,
            bound: FetchBound::HighWatermark,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    let bytes = data.read_bytes().unwrap();
    assert_eq!(
        EntryIter::new(&bytes).count(),
        1,
        "only the batch below the HW"
    );
    let past = log
        .read(FetchParams {
            start_offset: Offset::new(2),
            max_bytes: 1 << 20,
            bound: FetchBound::HighWatermark,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    assert!(past.is_empty());
}

#[test]
fn high_watermark_maintenance() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    for value in ["a", "b", "c"] {
        append_value(&log, value);
    }
    assert_eq!(
        log.update_high_watermark(Offset::new(25)),
        Offset::new(3),
        "clamped to the LEO"
    );
    assert!(
        !log.maybe_increment_high_watermark(Offset::new(2)),
        "never down"
    );
    log.truncate_to(Offset::new(1)).unwrap();
    assert_eq!(log.high_watermark(), Offset::new(1), "drops on truncation");
    log.truncate_fully_and_start_at(Offset::new(4)).unwrap();
    assert_eq!(
        (
            log.log_end_offset(),
            log.log_start_offset(),
            log.high_watermark()
        ),
        (Offset::new(4), Offset::new(4), Offset::new(4))
    );
}

#[test]
fn cannot_increment_log_start_offset_past_high_watermark() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    for value in ["a", "b", "c"] {
        append_value(&log, value);
    }
    log.update_high_watermark(Offset::new(2));
    assert!(
        log.maybe_increment_log_start_offset(Offset::new(2))
            .unwrap()
    );
    assert!(matches!(
        log.maybe_increment_log_start_offset(Offset::new(3)),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(log.log_start_offset(), Offset::new(2));
}

#[test]
fn index_resizing_at_truncation() {
    let fixture = Fixture::new();
    let config = small_segments(3_000);
    let log = fixture.create(config.clone());
    for i in 0..30 {
        append(&log, &sized_batch(100 + i, NOW));
    }
    assert!(log.segment_count() > 1);
    let full = u64::from(config.segment_index_bytes);
    log.truncate_to(Offset::ZERO).unwrap();
    let (offset_bytes, time_bytes) = log.view().active_segment().index_lengths();
    assert_eq!(offset_bytes, full);
    assert_eq!(time_bytes, full - full % 12);
    assert_eq!(log.segment_count(), 1);
}

#[test]
fn flushing_empty_active_segments_materialises_their_files() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "a");
    log.roll().unwrap();
    let [log_file, index, time, _] = log.view().active_segment().file_paths();
    log.flush_inclusive().unwrap();
    assert!(log_file.exists() && index.exists() && time.exists());
    assert_eq!(log.recovery_point(), Offset::new(1));
}

#[test]
fn flush_messages_advances_the_recovery_point() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        flush_messages: 3,
        ..LogConfig::default()
    });
    append_value(&log, "a");
    append_value(&log, "b");
    assert_eq!(log.recovery_point(), Offset::ZERO);
    append_value(&log, "c");
    assert_eq!(log.recovery_point(), Offset::new(3));
}

#[test]
fn roll_flushes_the_old_segment_and_moves_the_recovery_point() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "a");
    append_value(&log, "b");
    log.roll().unwrap();
    assert_eq!(log.recovery_point(), Offset::new(2));
    let (offset_bytes, _) = log.view().segments[0].index_lengths();
    assert_eq!(offset_bytes, 0, "the old segment's index is trimmed");
}
