//! Opening a log: leftovers of interrupted operations, recovery after an unclean stop, legacy
//! data, producer state (Kafka's `LogLoaderTest`).

use super::*;

fn write_some(fixture: &Fixture, config: &LogConfig, batches: usize) -> (i64, OffsetsAndValues) {
    let log = fixture.create(config.clone());
    for i in 0..batches {
        append(&log, &numbered_batch(i * 3, 3, NOW + i as i64));
    }
    let records = read_all(&log, 0);
    let leo = log.log_end_offset();
    log.close().unwrap();
    (leo.value(), records)
}

#[test]
fn clean_shutdown_open_skips_recovery_and_keeps_the_log_end() {
    let fixture = Fixture::new();
    let config = small_segments(2_000);
    let (leo, records) = write_some(&fixture, &config, 30);
    let (log, report) = fixture.open(
        config,
        LoadParams {
            recovery_point: Offset::ZERO,
            log_start_offset: Offset::ZERO,
            had_clean_shutdown: true,
            ..LoadParams::default()
        },
    );
    assert!(report.recovered.is_empty(), "no segment was scanned");
    assert_eq!(log.log_end_offset(), Offset::new(leo));
    assert_eq!(log.recovery_point(), Offset::new(leo));
    assert_eq!(read_all(&log, 0), records);
}

#[test]
fn unclean_open_at_recovery_point_equal_to_log_end_keeps_identical_indexes() {
    let fixture = Fixture::new();
    let config = small_segments(2_000);
    let (leo, _) = write_some(&fixture, &config, 30);
    let before: Vec<_> = {
        let (log, _) = fixture.open_clean(config.clone());
        log.view()
            .segments
            .iter()
            .map(|segment| segment.offset_index_entries().unwrap())
            .collect()
    };
    let (log, report) = fixture.open(
        config.clone(),
        LoadParams {
            recovery_point: Offset::new(leo),
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
        .map(|segment| segment.offset_index_entries().unwrap())
        .collect();
    assert_eq!(before, after);
    assert_eq!(log.recovery_point(), Offset::new(leo));
    drop(log);
    let (log, report) = fixture.open(
        config,
        LoadParams {
            recovery_point: Offset::new(5),
            ..LoadParams::default()
        },
    );
    assert!(report.recovered.len() > 1);
    assert_eq!(
        log.recovery_point(),
        Offset::new(5),
        "a lower recovery point stays until the next flush"
    );
}

#[test]
fn corrupt_log_tail_recovers_every_record() {
    let fixture = Fixture::new();
    let config = small_segments(1 << 20);
    let (leo, records) = write_some(&fixture, &config, 20);
    let (log, _) = fixture.open_clean(config.clone());
    let [log_file, index_file, _, _] = log.view().active_segment().file_paths();
    drop(log);
    let garbage: Vec<u8> = (0..333u32).map(|i| (i * 37 + 11) as u8).collect();
    for path in [&log_file, &index_file] {
        let mut contents = std::fs::read(path).unwrap();
        contents.extend_from_slice(&garbage);
        std::fs::write(path, contents).unwrap();
    }
    let (log, report) = fixture.open(config, LoadParams::default());
    assert_eq!(report.truncated_bytes(), 333);
    assert_eq!(log.log_end_offset(), Offset::new(leo));
    assert_eq!(read_all(&log, 0), records);
}

#[test]
fn deleted_and_corrupt_indexes_are_rebuilt_on_unclean_open() {
    let fixture = Fixture::new();
    let config = small_segments(1_500);
    let (_, records) = write_some(&fixture, &config, 40);
    let paths: Vec<[PathBuf; 4]> = {
        let (log, _) = fixture.open_clean(config.clone());
        log.view()
            .segments
            .iter()
            .map(|segment| segment.file_paths())
            .collect()
    };
    for (i, [_, index, time, _]) in paths.iter().enumerate() {
        if i % 2 == 0 {
            std::fs::remove_file(index).unwrap();
            std::fs::remove_file(time).unwrap();
        } else {
            std::fs::write(index, vec![0xab; 80]).unwrap();
            std::fs::write(time, vec![0xcd; 96]).unwrap();
        }
    }
    let (log, _) = fixture.open(config, LoadParams::default());
    serves_through_sound_indexes(&log, &records);
}

/// `log` (written by `write_some`, 40 values) reads back whole, finds every timestamp, and its
/// indexes pass Kafka's sanity check.
fn serves_through_sound_indexes(log: &Log, records: &OffsetsAndValues) {
    assert_eq!(&read_all(log, 0), records);
    for i in 0..40i64 {
        let found = log.fetch_offset_by_timestamp(NOW + i).unwrap().unwrap();
        assert_eq!(found.offset, Offset::new(i * 3), "timestamp lookup {i}");
    }
    for segment in log.view().segments.iter() {
        segment.sanity_check().unwrap();
    }
}

#[test]
fn an_index_failing_its_sanity_check_is_rebuilt_on_a_clean_open() {
    let fixture = Fixture::new();
    let config = small_segments(1_500);
    let (_, records) = write_some(&fixture, &config, 40);
    let [log_file, index, time, _] = {
        let (log, _) = fixture.open_clean(config.clone());
        log.view().segments[1].file_paths()
    };
    // Entries far below the segment's base, and a time index that ends mid-entry.
    std::fs::write(&index, vec![0xab; 80]).unwrap();
    let mut time_bytes = std::fs::read(&time).unwrap();
    time_bytes.truncate(time_bytes.len() - 5);
    std::fs::write(&time, time_bytes).unwrap();
    let (log, report) = fixture.open_clean(config);
    assert_eq!(
        report
            .recovered
            .iter()
            .map(|recovered| recovered.log_file.clone())
            .collect::<Vec<_>>(),
        vec![log_file],
        "only the damaged segment is recovered"
    );
    serves_through_sound_indexes(&log, &records);
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
            recovery_point: Offset::ZERO,
            log_start_offset: Offset::new(100),
            had_clean_shutdown: false,
            ..LoadParams::default()
        },
    );
    assert_eq!(log.segment_count(), 1);
    assert_eq!(
        (log.log_start_offset(), log.log_end_offset()),
        (Offset::new(100), Offset::new(100))
    );
    let [log_file, index, time, _] = log.view().active_segment().file_paths();
    assert!(log_file.ends_with("00000000000000000100.log"));
    assert!(index.exists() && time.exists());
}

#[test]
fn recovery_drops_segments_after_a_cut_one() {
    let fixture = Fixture::new();
    let config = small_segments(1_000);
    let (_, records) = write_some(&fixture, &config, 30);
    let segments: Vec<PathBuf> = {
        let (log, _) = fixture.open_clean(config.clone());
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
            recovery_point: Offset::new(6),
            log_start_offset: Offset::ZERO,
            had_clean_shutdown: false,
            ..LoadParams::default()
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
    assert_eq!(log.log_end_offset(), Offset::new(2));
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
    assert!(log.truncate_to(Offset::new(5)).unwrap());
    assert_eq!(log.log_end_offset(), Offset::new(5));
    assert!(log.segment_count() < segments_before);
    assert!(
        !log.truncate_to(Offset::new(10)).unwrap(),
        "past the end is a no-op"
    );
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
            start_offset: Offset::new(15),
            max_bytes: 1 << 20,
            bound: FetchBound::LogEnd,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    log.truncate_to(Offset::new(2)).unwrap();
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
