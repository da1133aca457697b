//! Round trips and malformed-input tests across the crate's modules.

use crate::batch::{self, field};
use crate::legacy::build_legacy_entry;
use crate::*;

fn sample_batch(compression: Compression) -> Vec<u8> {
    let mut builder = BatchBuilder::new(100)
        .compression(compression)
        .producer(7, 2, 40);
    builder
        .append(
            1_000,
            Some(b"k0"),
            Some(b"v0"),
            &[("h", Some(b"x")), ("n", None)],
        )
        .unwrap();
    builder.append(1_005, None, Some(b"no key"), &[]).unwrap();
    builder.append(999, Some(b"tombstone"), None, &[]).unwrap();
    builder.build().unwrap()
}

#[test]
fn built_batch_reads_back_with_every_field() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let bytes = sample_batch(codec);
        let batch = RecordBatch::new(&bytes).unwrap();
        batch.validate().unwrap();
        assert_eq!(batch.base_offset(), 100);
        assert_eq!(batch.last_offset(), 102);
        assert_eq!(batch.records_count(), 3);
        assert_eq!(batch.base_timestamp(), 1_000);
        assert_eq!(batch.max_timestamp(), 1_005);
        assert_eq!(batch.producer_id(), 7);
        assert_eq!(batch.producer_epoch(), 2);
        assert_eq!(batch.base_sequence(), 40);
        assert_eq!(batch.last_sequence(), 42);
        assert_eq!(batch.partition_leader_epoch(), -1);
        assert_eq!(batch.compression().unwrap(), codec);
        let records = batch.records(1 << 20).unwrap();
        let records: Vec<_> = records.iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].offset, 100);
        assert_eq!(records[0].key, Some(&b"k0"[..]));
        let headers: Vec<_> = records[0].headers().collect();
        assert_eq!(
            headers,
            vec![
                Header {
                    key: b"h",
                    value: Some(b"x")
                },
                Header {
                    key: b"n",
                    value: None
                }
            ]
        );
        assert_eq!(records[1].key, None);
        assert_eq!(records[1].timestamp, 1_005);
        assert_eq!(records[2].value, None);
        assert_eq!(records[2].timestamp, 999);
        assert_eq!(records[2].offset, 102);
    }
}

#[test]
fn every_flipped_byte_inside_the_crc_range_is_detected() {
    let bytes = sample_batch(Compression::None);
    for at in field::ATTRIBUTES..bytes.len() {
        let mut corrupt = bytes.clone();
        corrupt[at] ^= 0x01;
        let batch = RecordBatch::new(&corrupt).unwrap();
        assert!(
            matches!(batch.validate(), Err(RecordsError::ChecksumMismatch { .. })),
            "flip at {at} went unnoticed"
        );
    }
}

#[test]
fn base_offset_and_leader_epoch_patch_without_breaking_the_crc() {
    let mut bytes = sample_batch(Compression::None);
    batch::set_base_offset(&mut bytes, 5_000);
    batch::set_partition_leader_epoch(&mut bytes, 9);
    let batch = RecordBatch::new(&bytes).unwrap();
    batch.validate().unwrap();
    assert_eq!(batch.base_offset(), 5_000);
    assert_eq!(batch.partition_leader_epoch(), 9);
    let records = batch.records(0).unwrap();
    let first = records.iter().next().unwrap().unwrap();
    assert_eq!(first.offset, 5_000);
}

#[test]
fn log_append_time_makes_every_record_read_as_the_append_time() {
    let mut bytes = sample_batch(Compression::Lz4);
    batch::set_max_timestamp(&mut bytes, TimestampType::LogAppendTime, 77_777);
    let batch = RecordBatch::new(&bytes).unwrap();
    batch.validate().unwrap();
    assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
    for record in batch.records(1 << 20).unwrap().iter() {
        assert_eq!(record.unwrap().timestamp, 77_777);
    }
}

#[test]
fn empty_batch_has_no_timestamps() {
    let bytes = BatchBuilder::new(3).build().unwrap();
    assert_eq!(bytes.len(), BATCH_HEADER_LEN);
    let batch = RecordBatch::new(&bytes).unwrap();
    batch.validate().unwrap();
    assert_eq!(batch.records_count(), 0);
    assert_eq!(batch.base_timestamp(), -1);
    assert_eq!(batch.max_timestamp(), -1);
    assert_eq!(batch.records(0).unwrap().iter().count(), 0);
}

#[test]
fn delete_horizon_is_the_base_timestamp_and_records_keep_their_timestamps() {
    let mut builder = BatchBuilder::new(0)
        .delete_horizon_ms(50_000)
        .last_offset_delta(9);
    builder
        .append_with_offset(4, 1_000, Some(b"k"), None, &[])
        .unwrap();
    let bytes = builder.build().unwrap();
    let batch = RecordBatch::new(&bytes).unwrap();
    batch.validate().unwrap();
    assert_eq!(batch.delete_horizon_ms(), Some(50_000));
    assert_eq!(batch.last_offset(), 9);
    let records = batch.records(0).unwrap();
    let record = records.iter().next().unwrap().unwrap();
    assert_eq!((record.offset, record.timestamp), (4, 1_000));
}

#[test]
fn truncated_batches_are_errors_at_every_length() {
    let bytes = sample_batch(Compression::Gzip);
    for len in 0..bytes.len() {
        assert!(RecordBatch::new(&bytes[..len]).is_err(), "length {len}");
    }
}

#[test]
fn malformed_records_are_errors_not_panics() {
    // A batch whose record area is random bytes, with a correct CRC so parsing goes deep.
    let mut state = 0x1234_5678u32;
    for _ in 0..2_000 {
        let mut builder = BatchBuilder::new(0);
        builder
            .append(0, Some(b"key"), Some(b"value"), &[("a", Some(b"b"))])
            .unwrap();
        let mut bytes = builder.build().unwrap();
        for byte in bytes[field::RECORDS..].iter_mut() {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            if state.is_multiple_of(4) {
                *byte = state as u8;
            }
        }
        let crc = batch::compute_crc(&bytes);
        bytes[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
        let batch = RecordBatch::new(&bytes).unwrap();
        for record in batch.records(1 << 20).unwrap().iter().flatten() {
            let _ = record.headers().count();
        }
    }
}

#[test]
fn record_count_larger_than_the_data_is_an_error() {
    let mut bytes = sample_batch(Compression::None);
    bytes[field::RECORDS_COUNT..field::RECORDS_COUNT + 4].copy_from_slice(&4i32.to_be_bytes());
    let batch = RecordBatch::new(&bytes).unwrap();
    let records = batch.records(0).unwrap();
    let results: Vec<_> = records.iter().collect();
    assert_eq!(results.len(), 4);
    assert!(results[3].is_err());
}

#[test]
fn legacy_v0_and_v1_messages_are_read() {
    let v0 = build_legacy_entry(5, 0, 0, -1, Some(b"k"), Some(b"v"));
    let v1 = build_legacy_entry(6, 1, 0, 1_234, None, Some(b"w"));
    let mut file = v0.clone();
    file.extend_from_slice(&v1);
    let entries: Vec<_> = EntryIter::new(&file).collect::<Result<_, _>>().unwrap();
    assert_eq!(entries.len(), 2);
    for (_, entry) in &entries {
        entry.validate().unwrap();
    }
    let first = entries[0].1.records(0).unwrap();
    let first = first.to_vec().unwrap();
    assert_eq!((first[0].offset, first[0].timestamp), (5, -1));
    assert_eq!(first[0].key, Some(&b"k"[..]));
    let second = entries[1].1.records(0).unwrap();
    let second = second.to_vec().unwrap();
    assert_eq!((second[0].offset, second[0].timestamp), (6, 1_234));
    assert_eq!(entries[1].0, v0.len());
}

#[test]
fn legacy_v1_compressed_wrapper_yields_inner_messages_with_absolute_offsets() {
    let mut inner = Vec::new();
    for relative in 0..3i64 {
        inner.extend(build_legacy_entry(
            relative,
            1,
            0,
            100 + relative,
            None,
            Some(b"x"),
        ));
    }
    let compressed = Compression::Gzip.compress(&inner).unwrap();
    let wrapper = build_legacy_entry(42, 1, Compression::Gzip.id(), 102, None, Some(&compressed));
    let entry = FileEntry::parse_prefix(&wrapper).unwrap();
    entry.validate().unwrap();
    assert_eq!(entry.last_offset(), 42);
    let records = entry.records(1 << 20).unwrap();
    let offsets: Vec<_> = records.to_vec().unwrap().iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![40, 41, 42]);
}

#[test]
fn entry_iteration_stops_quietly_at_a_torn_tail_and_fails_on_a_tiny_size() {
    let bytes = sample_batch(Compression::None);
    let mut file = bytes.clone();
    file.extend_from_slice(&bytes[..bytes.len() - 1]);
    assert_eq!(EntryIter::new(&file).count(), 1);
    let mut zero_tail = bytes.clone();
    zero_tail.extend_from_slice(&[0u8; 100]);
    let results: Vec<_> = EntryIter::new(&zero_tail).collect();
    assert_eq!(results.len(), 2);
    assert!(results[1].is_err(), "size 0 is corruption");
}

#[test]
fn control_record_key_parses() {
    use crate::control::{ControlType, control_key, marker_coordinator_epoch, marker_value};
    assert_eq!(
        ControlType::from_key(&control_key(1)),
        Some(ControlType::Commit)
    );
    assert_eq!(marker_coordinator_epoch(&marker_value(12)), Some(12));
    assert_eq!(ControlType::from_key(&[0]), None);
}

#[test]
fn crc32c_matches_the_standard_check_value() {
    assert_eq!(batch::crc32c(b"123456789"), 0xE306_9283);
    assert_eq!(batch::crc32c(b""), 0);
}

proptest::proptest! {
    /// The fast validation walk and the full record iterator accept and reject the same bytes.
    #[test]
    fn summary_walk_agrees_with_the_record_iterator(
        flips in proptest::collection::vec((0usize..400, proptest::prelude::any::<u8>()), 0..4),
        count_delta in -1i32..=1,
    ) {
        let mut builder = BatchBuilder::new(0);
        for i in 0..5u8 {
            let headers: Vec<HeaderRef<'_>> = if i % 2 == 0 { vec![("h", Some(&b"v"[..]))] } else { vec![] };
            let key = (i != 3).then_some(&b"key"[..]);
            builder.append(1_000 + i64::from(i), key, Some(&[i; 40]), &headers).unwrap();
        }
        let bytes = builder.build().unwrap();
        let mut data = bytes[field::RECORDS..].to_vec();
        for (at, value) in flips {
            let at = at % data.len();
            data[at] = value;
        }
        let count = 5 + count_delta;
        let full: Result<Vec<_>, _> = RecordIter::new(&data, count, 0, 1_000, None).collect();
        let mut summaries = Vec::new();
        let walked = crate::record::walk_record_summaries::<()>(&data, count, |_, summary| {
            summaries.push(summary);
            Ok(())
        });
        proptest::prop_assert_eq!(full.is_ok(), walked.is_ok());
        if let Ok(records) = full {
            proptest::prop_assert_eq!(records.len(), summaries.len());
            for (record, summary) in records.iter().zip(&summaries) {
                proptest::prop_assert_eq!(record.offset, i64::from(summary.offset_delta));
                proptest::prop_assert_eq!(record.timestamp, 1_000 + summary.timestamp_delta);
                proptest::prop_assert_eq!(record.key.is_some(), summary.has_key);
            }
        }
    }
}
