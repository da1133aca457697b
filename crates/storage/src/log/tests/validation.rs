//! What a leader append checks and stamps: timestamps (CreateTime window, LogAppendTime),
//! recompression, decompression limits, batch framing, offsets and leader epoch; and lookups by
//! timestamp.

use super::*;

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
    assert_eq!(at(NOW + 35).map(|found| found.offset), Some(Offset::new(4)));
    assert_eq!(
        at(NOW + 40),
        Some(TimestampOffset {
            timestamp: NOW + 40,
            offset: Offset::new(4)
        })
    );
    assert_eq!(at(NOW + 91), None);
    assert_eq!(
        at(special_timestamps::EARLIEST).unwrap().offset,
        Offset::ZERO
    );
    assert_eq!(
        at(special_timestamps::LATEST).unwrap().offset,
        Offset::new(10)
    );
    assert_eq!(
        at(special_timestamps::MAX_TIMESTAMP).unwrap().offset,
        Offset::new(9)
    );
}

#[test]
fn timestamps_outside_the_allowed_window_are_rejected() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig {
        message_timestamp_before_max: std::time::Duration::from_millis(1_000),
        message_timestamp_after_max: std::time::Duration::from_millis(1_000),
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
    assert_eq!(log.log_end_offset(), Offset::new(4));
}

#[test]
fn no_topic_config_lifts_the_broker_s_decompression_memory() {
    let fixture = Fixture::new();
    let environment = LogEnvironment {
        decompression: crate::decompression::DecompressionMemory::new(2 << 20),
        ..LogEnvironment::standalone(&fixture.data_dir, fixture.clock.clone())
    };
    let log = Log::create_in(
        &fixture.data_dir,
        &TopicPartition::new("topic", 0),
        LogConfig {
            // As a client may set it: the largest batch a topic takes.
            max_message_bytes: i32::MAX as u32,
            ..LogConfig::default()
        },
        environment,
    )
    .unwrap();
    // 8 MiB of zeros in a few KiB: within max.message.bytes, past the broker's 2 MiB.
    let bomb = batch_at(
        0,
        Compression::Zstd,
        &[TestRecord::new(NOW, None, Some(&vec![0u8; 8 << 20]))],
    );
    let refused = log.append_as_leader(bomb).unwrap_err();
    assert!(
        matches!(refused, StorageError::DecompressedTooLarge { limit, .. } if limit == 2 << 20),
        "{refused}"
    );
    let fits = batch_at(
        0,
        Compression::Zstd,
        &[TestRecord::new(NOW, None, Some(&vec![0u8; 1 << 20]))],
    );
    log.append_as_leader(fits).unwrap();
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
    assert_eq!(log.log_end_offset(), Offset::ZERO);
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
        (Offset::new(1), Offset::new(5), 5)
    );
    let written = log
        .read(FetchParams {
            start_offset: Offset::new(1),
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
        (1, log.leader_epoch().value())
    );
    second.validate().unwrap();
}
