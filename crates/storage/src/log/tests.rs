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
        start_offset: 0,
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
    while offset < log.log_end_offset() {
        let data = log
            .read(FetchParams {
                start_offset: offset,
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
        segment_ms: 60_000,
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
    assert_eq!(log.view().active_segment().base_offset(), 2);
}

#[test]
fn time_based_log_roll_jitter() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        segment_ms: 60_000,
        segment_jitter_ms: 30_000,
        ..LogConfig::default()
    });
    append(&log, &batch(&[TestRecord::new(NOW, None, Some(b"a"))]));
    let jitter = log.view().active_segment().roll_jitter_ms();
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
    assert_eq!(log.roll().unwrap(), 0);
    assert_eq!(
        log.segment_count(),
        1,
        "rolling an empty active segment to its own base"
    );
    append_value(&log, "a");
    assert_eq!(log.roll().unwrap(), 1);
    assert_eq!(log.roll().unwrap(), 1);
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
        1,
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
    assert_eq!(log.log_end_offset(), 11, "followers may leave gaps");
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
        start_offset: 0,
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
    let at_end = log.read(params(3)).unwrap();
    assert!(at_end.is_empty());
    assert_eq!(at_end.offset_metadata.offset, 3);
    assert!(matches!(
        log.read(params(4)),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    log.maybe_increment_log_start_offset(1).unwrap();
    assert!(matches!(
        log.read(params(0)),
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
            start_offset: 7,
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
    log.update_high_watermark(1);
    let data = log
        .read(FetchParams {
            start_offset: 0,
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
            start_offset: 2,
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
    assert_eq!(log.update_high_watermark(25), 3, "clamped to the LEO");
    assert!(!log.maybe_increment_high_watermark(2), "never down");
    log.truncate_to(1).unwrap();
    assert_eq!(log.high_watermark(), 1, "drops on truncation");
    log.truncate_fully_and_start_at(4).unwrap();
    assert_eq!(
        (
            log.log_end_offset(),
            log.log_start_offset(),
            log.high_watermark()
        ),
        (4, 4, 4)
    );
}

#[test]
fn cannot_increment_log_start_offset_past_high_watermark() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    for value in ["a", "b", "c"] {
        append_value(&log, value);
    }
    log.update_high_watermark(2);
    assert!(log.maybe_increment_log_start_offset(2).unwrap());
    assert!(matches!(
        log.maybe_increment_log_start_offset(3),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(log.log_start_offset(), 2);
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
    log.truncate_to(0).unwrap();
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
    let [log_file, index, time] = log.view().active_segment().file_paths();
    log.flush_inclusive().unwrap();
    assert!(log_file.exists() && index.exists() && time.exists());
    assert_eq!(log.recovery_point(), 1);
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
    assert_eq!(log.recovery_point(), 0);
    append_value(&log, "c");
    assert_eq!(log.recovery_point(), 3);
}

#[test]
fn roll_flushes_the_old_segment_and_moves_the_recovery_point() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "a");
    append_value(&log, "b");
    log.roll().unwrap();
    assert_eq!(log.recovery_point(), 2);
    let (offset_bytes, _) = log.view().segments[0].index_lengths();
    assert_eq!(offset_bytes, 0, "the old segment's index is trimmed");
}

#[test]
fn offsets_by_timestamp_and_special_timestamps() {
    let fixture = Fixture::new();
    let log = fixture.create(small_segments(400));
    for i in 0..10i64 {
        append(
            &log,
            &batch(&[TestRecord::new(NOW + i * 10, Some(b"k"), Some(b"value"))]),
        );
    }
    assert!(log.segment_count() > 1);
    let at = |timestamp| log.fetch_offset_by_timestamp(timestamp).unwrap();
    assert_eq!(at(NOW + 35).map(|found| found.offset), Some(4));
    assert_eq!(
        at(NOW + 40),
        Some(TimestampOffset {
            timestamp: NOW + 40,
            offset: 4
        })
    );
    assert_eq!(at(NOW + 91), None);
    assert_eq!(at(special_timestamps::EARLIEST).unwrap().offset, 0);
    assert_eq!(at(special_timestamps::LATEST).unwrap().offset, 10);
    assert_eq!(at(special_timestamps::MAX_TIMESTAMP).unwrap().offset, 9);
}

#[test]
fn timestamps_outside_the_allowed_window_are_rejected() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        message_timestamp_before_max_ms: 1_000,
        message_timestamp_after_max_ms: 1_000,
        ..LogConfig::default()
    });
    for bad in [NOW - 1_001, NOW + 1_001] {
        let error = log
            .append_as_leader(batch(&[TestRecord::new(bad, None, Some(b"x"))]))
            .unwrap_err();
        assert!(
            matches!(
                error,
                StorageError::InvalidTimestamp {
                    record_index: 0,
                    ..
                }
            ),
            "{error}"
        );
    }
    append(
        &log,
        &batch(&[TestRecord::new(NOW + 1_000, None, Some(b"x"))]),
    );
}

#[test]
fn log_append_time_stamps_the_broker_time() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    });
    let info = append(&log, &batch(&[TestRecord::new(5, None, Some(b"x"))]));
    assert_eq!(info.log_append_time_ms, NOW);
    let bytes = first_mib(&log);
    let batch = RecordBatch::new(&bytes).unwrap();
    batch.validate().unwrap();
    assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(batch.max_timestamp(), NOW);
}

#[test]
fn topic_compression_type_recompresses_batches() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        compression_type: TargetCompression::Codec(Compression::Zstd),
        ..LogConfig::default()
    });
    append(&log, &numbered_batch(0, 20, NOW));
    append(&log, &numbered_batch(20, 5, NOW));
    let bytes = first_mib(&log);
    for entry in EntryIter::new(&bytes) {
        let (_, entry) = entry.unwrap();
        entry.validate().unwrap();
        let ferrolog_records::FileEntry::V2(batch) = entry else {
            panic!("v2 expected")
        };
        assert_eq!(batch.compression().unwrap(), Compression::Zstd);
    }
    let values = read_all(&log, 0);
    assert_eq!(values.len(), 25);
    assert_eq!(values[24], (24, Some(b"value-24".to_vec())));
}

#[test]
fn a_batch_decompressing_past_max_message_bytes_is_refused_before_it_is_inflated() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        max_message_bytes: 200_000,
        compression_type: TargetCompression::Codec(Compression::Gzip),
        ..LogConfig::default()
    });
    let zeros = |bytes| vec![0u8; bytes];
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        // 2 MiB of zeros: a few KiB compressed, within max.message.bytes; over the 1 MiB floor
        // decompressed.
        let bomb = batch_at(
            0,
            codec,
            &[TestRecord::new(NOW, None, Some(&zeros(2 << 20)))],
        );
        assert!(bomb.len() < 200_000, "{codec}: {}", bomb.len());
        let refused = log.append_as_leader(bomb).unwrap_err();
        assert!(
            matches!(
                refused,
                StorageError::DecompressedTooLarge {
                    limit: 1_048_576,
                    ..
                }
            ),
            "{codec}: {refused}"
        );
        // Just under the floor (a client's 1 MiB batch), and in another codec than the topic's:
        // decompressed once, recompressed.
        let fits = batch_at(
            0,
            codec,
            &[TestRecord::new(NOW, None, Some(&zeros(1_000_000)))],
        );
        log.append_as_leader(fits).unwrap();
    }
    assert_eq!(log.log_end_offset(), 4);
}

#[test]
fn producer_batches_must_be_well_formed() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    let nonzero_base = batch_at(
        7,
        Compression::None,
        &[TestRecord::new(NOW, None, Some(b"x"))],
    );
    assert!(matches!(
        log.append_as_leader(nonzero_base),
        Err(StorageError::InvalidRecord { .. })
    ));
    let mut corrupt = batch(&[TestRecord::new(NOW, None, Some(b"x"))]);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    assert!(matches!(
        log.append_as_leader(corrupt),
        Err(StorageError::CorruptRecord { .. })
    ));
    let mut torn = batch(&[TestRecord::new(NOW, None, Some(b"x"))]);
    torn.pop();
    assert!(matches!(
        log.append_as_leader(torn),
        Err(StorageError::CorruptRecord { .. })
    ));
    assert!(log.append_as_leader(Vec::new()).is_err());
    assert_eq!(log.log_end_offset(), 0);
}

#[test]
fn appended_batches_carry_assigned_offsets_and_leader_epoch() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "a");
    let mut two = numbered_batch(0, 2, NOW);
    two.extend(numbered_batch(0, 3, NOW));
    let info = log.append_as_leader(two).unwrap();
    assert_eq!(
        (info.first_offset, info.last_offset, info.record_count),
        (1, 5, 5)
    );
    let written = log
        .read(FetchParams {
            start_offset: 1,
            max_bytes: 1 << 20,
            bound: FetchBound::LogEnd,
            first_batch: FirstBatch::Whole,
        })
        .unwrap()
        .read_bytes()
        .unwrap();
    let second = RecordBatch::parse_prefix(&written).unwrap();
    assert_eq!(
        (second.base_offset(), second.partition_leader_epoch()),
        (1, LEADER_EPOCH)
    );
    second.validate().unwrap();
}

// ---- loading and recovery ----

fn write_some(fixture: &Fixture, config: &LogConfig, batches: usize) -> (i64, OffsetsAndValues) {
    let log = fixture.create(config.clone());
    for i in 0..batches {
        append(&log, &numbered_batch(i * 3, 3, NOW + i as i64));
    }
    let records = read_all(&log, 0);
    let leo = log.log_end_offset();
    log.close().unwrap();
    (leo, records)
}

#[test]
fn clean_shutdown_open_skips_recovery_and_keeps_the_log_end() {
    let fixture = Fixture::new();
    let config = small_segments(2_000);
    let (leo, records) = write_some(&fixture, &config, 30);
    let (log, report) = fixture.open(
        config,
        LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: true,
        },
    );
    assert!(report.recovered.is_empty(), "no segment was scanned");
    assert_eq!(log.log_end_offset(), leo);
    assert_eq!(log.recovery_point(), leo);
    assert_eq!(read_all(&log, 0), records);
}

#[test]
fn unclean_open_at_recovery_point_equal_to_log_end_keeps_identical_indexes() {
    let fixture = Fixture::new();
    let config = small_segments(2_000);
    let (leo, _) = write_some(&fixture, &config, 30);
    let before: Vec<_> = {
        let (log, _) = fixture.open(
            config.clone(),
            LoadParams {
                had_clean_shutdown: true,
                ..LoadParams::default()
            },
        );
        log.view()
            .segments
            .iter()
            .map(|segment| segment.offset_index_entries())
            .collect()
    };
    let (log, report) = fixture.open(
        config.clone(),
        LoadParams {
            recovery_point: leo,
            ..LoadParams::default()
        },
    );
    assert_eq!(
        report.recovered.len(),
        1,
        "only the active segment is scanned"
    );
    let after: Vec<_> = log
        .view()
        .segments
        .iter()
        .map(|segment| segment.offset_index_entries())
        .collect();
    assert_eq!(before, after);
    assert_eq!(log.recovery_point(), leo);
    drop(log);
    let (log, report) = fixture.open(
        config,
        LoadParams {
            recovery_point: 5,
            ..LoadParams::default()
        },
    );
    assert!(report.recovered.len() > 1);
    assert_eq!(
        log.recovery_point(),
        5,
        "a lower recovery point stays until the next flush"
    );
}

#[test]
fn corrupt_log_tail_recovers_every_record() {
    let fixture = Fixture::new();
    let config = small_segments(1 << 20);
    let (leo, records) = write_some(&fixture, &config, 20);
    let (log, _) = fixture.open(
        config.clone(),
        LoadParams {
            had_clean_shutdown: true,
            ..LoadParams::default()
        },
    );
    let [log_file, index_file, _] = log.view().active_segment().file_paths();
    drop(log);
    let garbage: Vec<u8> = (0..333u32).map(|i| (i * 37 + 11) as u8).collect();
    for path in [&log_file, &index_file] {
        let mut contents = std::fs::read(path).unwrap();
        contents.extend_from_slice(&garbage);
        std::fs::write(path, contents).unwrap();
    }
    let (log, report) = fixture.open(config, LoadParams::default());
    assert_eq!(report.truncated_bytes(), 333);
    assert_eq!(log.log_end_offset(), leo);
    assert_eq!(read_all(&log, 0), records);
}

#[test]
fn deleted_and_corrupt_indexes_are_rebuilt_on_unclean_open() {
    let fixture = Fixture::new();
    let config = small_segments(1_500);
    let (_, records) = write_some(&fixture, &config, 40);
    let paths: Vec<[PathBuf; 3]> = {
        let (log, _) = fixture.open(
            config.clone(),
            LoadParams {
                had_clean_shutdown: true,
                ..LoadParams::default()
            },
        );
        log.view()
            .segments
            .iter()
            .map(|segment| segment.file_paths())
            .collect()
    };
    for (i, [_, index, time]) in paths.iter().enumerate() {
        if i % 2 == 0 {
            std::fs::remove_file(index).unwrap();
            std::fs::remove_file(time).unwrap();
        } else {
            std::fs::write(index, vec![0xab; 80]).unwrap();
            std::fs::write(time, vec![0xcd; 96]).unwrap();
        }
    }
    let (log, _) = fixture.open(config, LoadParams::default());
    assert_eq!(read_all(&log, 0), records);
    for i in 0..40i64 {
        let found = log.fetch_offset_by_timestamp(NOW + i).unwrap().unwrap();
        assert_eq!(found.offset, i * 3, "timestamp lookup {i}");
    }
    for segment in log.view().segments.iter() {
        segment.sanity_check().unwrap();
    }
}

#[test]
fn bogus_index_segments_are_removed() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "a");
    drop(log);
    let orphan_index = fixture.dir().join("00000000000000000005.index");
    let orphan_time = fixture.dir().join("00000000000000000005.timeindex");
    std::fs::write(&orphan_index, [0u8; 16]).unwrap();
    std::fs::write(&orphan_time, [0u8; 24]).unwrap();
    let (log, report) = fixture.open(LogConfig::default(), LoadParams::default());
    assert!(!orphan_index.exists() && !orphan_time.exists());
    assert_eq!(report.removed_files.len(), 2);
    assert_eq!(log.segment_count(), 1);
}

#[test]
fn open_deletes_obsolete_deleted_and_cleaned_files() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "a");
    drop(log);
    let leftovers = [
        "00000000000000000007.log.deleted",
        "00000000000000000007.index.deleted",
        "00000000000000000009.log.cleaned",
    ];
    for name in leftovers {
        std::fs::write(fixture.dir().join(name), b"junk").unwrap();
    }
    let (log, _) = fixture.open(LogConfig::default(), LoadParams::default());
    for name in leftovers {
        assert!(!fixture.dir().join(name).exists(), "{name}");
    }
    assert_eq!(read_all(&log, 0).len(), 1);
}

#[test]
fn completed_swap_replaces_the_segments_it_covers() {
    let fixture = Fixture::new();
    let config = small_segments(1 << 20);
    let log = fixture.create(config.clone());
    append(&log, &numbered_batch(0, 4, NOW));
    log.roll().unwrap();
    append(&log, &numbered_batch(0, 4, NOW));
    log.roll().unwrap();
    append(&log, &numbered_batch(0, 2, NOW));
    log.close().unwrap();
    drop(log);
    // A cleaner's output for offsets 0..8 whose swap was interrupted after the rename to .swap:
    // only the records at offsets 3 and 7 survive.
    let mut cleaned = batch_at(
        3,
        Compression::None,
        &[TestRecord::new(NOW, Some(b"key-3"), Some(b"value-3"))],
    );
    cleaned.extend(batch_at(
        7,
        Compression::None,
        &[TestRecord::new(NOW, Some(b"key-3"), Some(b"value-7"))],
    ));
    std::fs::write(
        fixture.dir().join("00000000000000000000.log.swap"),
        &cleaned,
    )
    .unwrap();
    let (log, report) = fixture.open(config, LoadParams::default());
    assert_eq!(report.completed_swaps.len(), 1);
    assert!(
        !fixture.dir().join("00000000000000000004.log").exists(),
        "superseded by the swap"
    );
    let offsets: Vec<i64> = read_all(&log, 0)
        .iter()
        .map(|(offset, _)| *offset)
        .collect();
    assert_eq!(offsets, vec![3, 7, 8, 9]);
}

#[test]
fn swap_at_or_above_a_cleaned_file_belongs_to_an_interrupted_split_and_is_dropped() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append(&log, &numbered_batch(0, 4, NOW));
    log.close().unwrap();
    drop(log);
    std::fs::write(
        fixture.dir().join("00000000000000000000.log.cleaned"),
        b"partial",
    )
    .unwrap();
    std::fs::write(
        fixture.dir().join("00000000000000000002.log.swap"),
        batch_at(
            2,
            Compression::None,
            &[TestRecord::new(NOW, None, Some(b"x"))],
        ),
    )
    .unwrap();
    let (log, _) = fixture.open(LogConfig::default(), LoadParams::default());
    assert_eq!(read_all(&log, 0).len(), 4, "the original data stays");
    assert!(!fixture.dir().join("00000000000000000002.log.swap").exists());
    assert!(!fixture.dir().join("00000000000000000002.log").exists());
}

#[test]
fn log_end_less_than_start_after_reopen_restarts_at_the_start() {
    let fixture = Fixture::new();
    let (_, _) = write_some(&fixture, &small_segments(1 << 20), 3);
    let (log, _) = fixture.open(
        LogConfig::default(),
        LoadParams {
            recovery_point: 0,
            log_start_offset: 100,
            had_clean_shutdown: false,
        },
    );
    assert_eq!(log.segment_count(), 1);
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (100, 100));
    let [log_file, index, time] = log.view().active_segment().file_paths();
    assert!(log_file.ends_with("00000000000000000100.log"));
    assert!(index.exists() && time.exists());
}

#[test]
fn recovery_drops_segments_after_a_cut_one() {
    let fixture = Fixture::new();
    let config = small_segments(1_000);
    let (_, records) = write_some(&fixture, &config, 30);
    let segments: Vec<PathBuf> = {
        let (log, _) = fixture.open(
            config.clone(),
            LoadParams {
                had_clean_shutdown: true,
                ..LoadParams::default()
            },
        );
        log.view()
            .segments
            .iter()
            .map(|segment| segment.log_path())
            .collect()
    };
    assert!(segments.len() > 3);
    let victim = &segments[1];
    let mut bytes = std::fs::read(victim).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(victim, &bytes).unwrap();
    let (log, report) = fixture.open(config, LoadParams::default());
    assert_eq!(report.removed_segments.len(), segments.len() - 2);
    assert_eq!(log.segment_count(), 2);
    let survivors = read_all(&log, 0);
    assert!(survivors.len() < records.len());
    assert_eq!(
        &records[..survivors.len()],
        &survivors[..],
        "a prefix survives, in order"
    );
}

#[test]
fn time_index_of_legacy_data_reappears_as_an_empty_file() {
    let fixture = Fixture::new();
    std::fs::create_dir_all(fixture.dir()).unwrap();
    let mut legacy = Vec::new();
    for offset in 0..5 {
        legacy.extend(ferrolog_records::legacy::build_legacy_entry(
            offset,
            1,
            0,
            NOW + offset,
            None,
            Some(b"v1"),
        ));
    }
    std::fs::write(fixture.dir().join("00000000000000000000.log"), &legacy).unwrap();
    std::fs::write(fixture.dir().join("00000000000000000000.index"), []).unwrap();
    let time_index = fixture.dir().join("00000000000000000000.timeindex");
    {
        let (log, _) = fixture.open(
            LogConfig::default(),
            LoadParams {
                had_clean_shutdown: true,
                ..LoadParams::default()
            },
        );
        append_value(&log, "v2 after legacy");
        log.roll().unwrap();
        log.close().unwrap();
    }
    std::fs::remove_file(&time_index).unwrap();
    let (log, report) = fixture.open(
        LogConfig::default(),
        LoadParams {
            recovery_point: 6,
            log_start_offset: 0,
            had_clean_shutdown: false,
        },
    );
    assert!(
        report
            .recovered
            .iter()
            .all(|segment| !segment.log_file.ends_with("00000000000000000000.log"))
    );
    assert_eq!(std::fs::metadata(&time_index).unwrap().len(), 0);
    assert_eq!(read_all(&log, 0).len(), 6);
}

#[test]
fn legacy_records_read_back_through_the_log() {
    let fixture = Fixture::new();
    std::fs::create_dir_all(fixture.dir()).unwrap();
    let mut legacy =
        ferrolog_records::legacy::build_legacy_entry(0, 0, 0, -1, Some(b"k"), Some(b"v0"));
    legacy.extend(ferrolog_records::legacy::build_legacy_entry(
        1,
        1,
        0,
        NOW,
        None,
        Some(b"v1"),
    ));
    std::fs::write(fixture.dir().join("00000000000000000000.log"), &legacy).unwrap();
    let (log, report) = fixture.open(LogConfig::default(), LoadParams::default());
    assert_eq!(report.truncated_bytes(), 0);
    assert_eq!(log.log_end_offset(), 2);
    append_value(&log, "v2");
    assert_eq!(
        read_all(&log, 0),
        vec![
            (0, Some(b"v0".to_vec())),
            (1, Some(b"v1".to_vec())),
            (2, Some(b"v2".to_vec()))
        ]
    );
}

#[test]
fn truncate_to_removes_later_segments_and_keeps_earlier_data() {
    let fixture = Fixture::new();
    let log = fixture.create(small_segments(300));
    for i in 0..20 {
        append_value(&log, &format!("value-{i}"));
    }
    let segments_before = log.segment_count();
    assert!(segments_before > 3);
    assert!(log.truncate_to(5).unwrap());
    assert_eq!(log.log_end_offset(), 5);
    assert!(log.segment_count() < segments_before);
    assert!(!log.truncate_to(10).unwrap(), "past the end is a no-op");
    append_value(&log, "again");
    let values = read_all(&log, 0);
    assert_eq!(values.len(), 6);
    assert_eq!(values[5], (5, Some(b"again".to_vec())));
    let deleted: Vec<_> = std::fs::read_dir(fixture.dir())
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".deleted"))
        .collect();
    assert!(deleted.is_empty(), "{deleted:?}");
}

#[test]
fn reader_holding_an_old_view_keeps_reading_after_truncation() {
    let fixture = Fixture::new();
    let log = fixture.create(small_segments(600));
    for i in 0..20 {
        append_value(&log, &format!("value-{i}"));
    }
    let old = log
        .read(FetchParams {
            start_offset: 15,
            max_bytes: 1 << 20,
            bound: FetchBound::LogEnd,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    log.truncate_to(2).unwrap();
    let bytes = old.read_bytes().unwrap();
    let batch = RecordBatch::parse_prefix(&bytes).unwrap();
    batch.validate().unwrap();
    assert_eq!(batch.base_offset(), 15);
}

#[test]
fn update_config_reaches_later_appends() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "a");
    log.update_config(LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        ..LogConfig::default()
    });
    assert!(
        log.append_as_leader(batch(&[TestRecord::new(NOW, None, Some(b"x"))]))
            .is_err()
    );
}

#[test]
fn closed_log_refuses_appends() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    log.close().unwrap();
    assert!(matches!(
        log.append_as_leader(batch(&[TestRecord::new(NOW, None, Some(b"x"))])),
        Err(StorageError::LogClosed(_))
    ));
}

#[test]
fn rolled_and_closed_segments_hold_no_blocks_past_their_data() {
    let fixture = Fixture::new();
    if !crate::segment::records_file::file_system_reserves_blocks(&fixture.data_dir) {
        return;
    }
    // Segments large enough to reserve blocks ahead of their data.
    let segment_bytes = 2 * crate::segment::RESERVE_AFTER_BYTES;
    let log = fixture.create(LogConfig {
        segment_bytes,
        ..LogConfig::default()
    });
    let value = vec![b'v'; 100_000];
    let records: Vec<TestRecord> = (0..10)
        .map(|_| TestRecord::new(NOW, Some(b"k"), Some(&value)))
        .collect();
    while log.view().segments.len() < 3 || log.view().active_segment().size() < segment_bytes / 2 {
        append(&log, &batch(&records));
    }
    let view = log.view();
    let block_rounded = |bytes: u64| bytes.div_ceil(4096) * 4096;
    let (active, rolled) = view.segments.split_last().unwrap();
    assert!(active.log_file().allocated_bytes().unwrap() > block_rounded(active.size()));
    for segment in rolled {
        assert_eq!(
            segment.log_file().allocated_bytes().unwrap(),
            block_rounded(segment.size()),
            "{}",
            segment.log_path().display()
        );
    }
    log.close().unwrap();
    assert_eq!(
        active.log_file().allocated_bytes().unwrap(),
        block_rounded(active.size())
    );
}

#[test]
fn appenders_sharing_a_partition_get_consecutive_offsets_and_lose_nothing() {
    // Batches are checked outside the append lock; offsets are assigned under it.
    const APPENDERS: usize = 4;
    const BATCHES_EACH: usize = 200;
    let fixture = Fixture::new();
    let log = fixture.create(small_segments(64 * 1024));
    std::thread::scope(|scope| {
        for appender in 0..APPENDERS {
            let log = &log;
            scope.spawn(move || {
                for sequence in 0..BATCHES_EACH {
                    let value = format!("{appender}:{sequence}");
                    let records = [
                        TestRecord::new(NOW, Some(b"k"), Some(value.as_bytes())),
                        TestRecord::new(NOW, Some(b"k"), Some(value.as_bytes())),
                    ];
                    log.append_as_leader(batch(&records)).unwrap();
                }
            });
        }
    });
    log.maybe_increment_high_watermark(log.log_end_offset());
    let read = read_all(&log, 0);
    let offsets: Vec<i64> = read.iter().map(|(offset, _)| *offset).collect();
    let expected: Vec<i64> = (0..(APPENDERS * BATCHES_EACH * 2) as i64).collect();
    assert_eq!(offsets, expected);
    // Each appender's batches appear whole (both records together) and in its own order.
    let mut next_sequence = [0usize; APPENDERS];
    for pair in read.chunks(2) {
        assert_eq!(
            pair[0].1, pair[1].1,
            "a batch was split at offset {}",
            pair[0].0
        );
        let value = String::from_utf8(pair[0].1.clone().unwrap()).unwrap();
        let (appender, sequence) = value.split_once(':').unwrap();
        let appender: usize = appender.parse().unwrap();
        assert_eq!(sequence.parse::<usize>().unwrap(), next_sequence[appender]);
        next_sequence[appender] += 1;
    }
    assert_eq!(next_sequence, [BATCHES_EACH; APPENDERS]);
}
