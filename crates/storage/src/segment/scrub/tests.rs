#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::offset::{FilePosition, Offset};
use ferrolog_records::BatchBuilder;

/// A segment based at 1,000 of `batches` batches of 20 records of 100 bytes (about 2.3 KB
/// each, so that a few thousand straddle several chunks), with its indexes as appends build
/// them (an offset entry every 4 KiB, a time entry with it); and each batch's position.
fn segment(batches: i64) -> (Vec<u8>, SegmentIndexes, Vec<u64>) {
    let (mut data, mut indexes, mut starts) = (Vec::new(), SegmentIndexes::default(), Vec::new());
    let (mut since_entry, mut max_timestamp) = (0usize, -1i64);
    for batch in 0..batches {
        let base = 1_000 + batch * 20;
        let mut builder = BatchBuilder::new(base);
        for offset in base..base + 20 {
            builder
                .append(offset, None, Some(&[7u8; 100]), &[])
                .unwrap();
        }
        let bytes = builder.build().unwrap();
        let last = base + 19;
        max_timestamp = max_timestamp.max(last);
        if since_entry > 4096 {
            indexes.offsets.push(OffsetPosition {
                offset: Offset::new(last),
                position: FilePosition::new(data.len() as u64),
            });
            indexes.times.push(TimestampOffset {
                timestamp: max_timestamp,
                offset: Offset::new(last),
            });
            since_entry = 0;
        }
        starts.push(data.len() as u64);
        since_entry += bytes.len();
        data.extend_from_slice(&bytes);
    }
    (data, indexes, starts)
}

const SPAN: SegmentSpan = SegmentSpan {
    base_offset: 1_000,
    end_offset: None,
};

fn scrub(data: &[u8], indexes: &SegmentIndexes) -> SegmentScrub {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000001000.log");
    std::fs::write(&path, data).unwrap();
    scrub_segment(&path, SPAN, indexes, |_| true)
        .unwrap()
        .unwrap()
}

#[test]
fn a_whole_segment_over_several_chunks_is_clean() {
    let (data, indexes, starts) = segment(1_500);
    assert!(data.len() > 3 * CHUNK);
    let found = scrub(&data, &indexes);
    assert_eq!(found.damage, None);
    assert_eq!(found.entries, starts.len() as u64);
    assert_eq!(found.bytes, data.len() as u64);
}

#[test]
fn damage_is_named_by_the_position_of_its_batch() {
    let (clean, indexes, starts) = segment(1_000);
    // A flipped byte inside a batch that straddles the first chunk's end.
    let straddling = starts
        .iter()
        .rposition(|start| (*start as usize) < CHUNK)
        .unwrap();
    let mut data = clean.clone();
    data[CHUNK + 3] ^= 0x01;
    let found = scrub(&data, &indexes);
    let (position, reason) = found.damage.unwrap();
    assert_eq!(position, starts[straddling]);
    assert!(reason.contains("checksum"), "{reason}");
    // A torn end.
    let torn = &clean[..clean.len() - 10];
    let (position, _) = scrub(torn, &indexes).damage.unwrap();
    assert_eq!(position, *starts.last().unwrap());
}

#[test]
fn index_entries_that_disagree_with_the_log_are_index_problems_not_damage() {
    let (data, indexes, _) = segment(200);
    let problem = |indexes: &SegmentIndexes| {
        let found = scrub(&data, indexes);
        assert_eq!(found.damage, None, "the data is whole");
        found.index_problem
    };
    assert_eq!(problem(&indexes), None);
    // Kafka indexes an append of several batches by its last offset at its first batch.
    let mut appended_together = indexes.clone();
    appended_together.offsets[3].offset = Offset::new(indexes.offsets[3].offset.value() + 20);
    assert_eq!(problem(&appended_together), None);

    // An offset the batches before the entry's position already hold.
    let mut too_low = indexes.clone();
    too_low.offsets[3].offset = Offset::new(indexes.offsets[3].offset.value() - 20);
    let (position, reason) = problem(&too_low).unwrap();
    assert_eq!(position, indexes.offsets[3].position.bytes());
    assert!(reason.contains("offset index"), "{reason}");
    // A position where no batch starts.
    let mut mid_batch = indexes.clone();
    mid_batch.offsets[3].position = FilePosition::new(indexes.offsets[3].position.bytes() + 1);
    assert!(problem(&mid_batch).is_some());

    let mut wrong_time = indexes.clone();
    wrong_time.times[5].timestamp += 1;
    let (_, reason) = problem(&wrong_time).unwrap();
    assert!(reason.contains("time index"), "{reason}");

    let mut past_the_end = indexes.clone();
    past_the_end.offsets.push(OffsetPosition {
        offset: Offset::new(1_000_000),
        position: FilePosition::new(data.len() as u64 + 100),
    });
    let (position, _) = problem(&past_the_end).unwrap();
    assert_eq!(position, data.len() as u64);
}

#[test]
fn the_pace_can_stop_a_check_between_chunks() {
    let (data, indexes, _) = segment(1_500);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("00000000000000001000.log");
    std::fs::write(&path, &data).unwrap();
    let mut chunks = 0;
    let stopped = scrub_segment(&path, SPAN, &indexes, |bytes| {
        assert!(bytes <= CHUNK as u64);
        chunks += 1;
        chunks < 2
    })
    .unwrap();
    assert_eq!(stopped, None);
    assert_eq!(chunks, 2);
}
