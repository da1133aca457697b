#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use ferrolog_records::{BatchBuilder, Compression, EntryIter};
use ferrolog_testkit::damage::random_damage;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A segment based at 100 of `batches` batches of 5 records each (every third compressed),
/// and each batch's byte range.
fn segment(batches: i64) -> (Vec<u8>, Vec<Range<u64>>) {
    let (mut data, mut ranges) = (Vec::new(), Vec::new());
    for batch in 0..batches {
        let base = 100 + batch * 5;
        let mut builder = BatchBuilder::new(base);
        if batch % 3 == 2 {
            builder = builder.compression(Compression::Gzip);
        }
        for record in 0..5 {
            let value = format!("value {} of the segment", base + record);
            builder
                .append(1_000 + base + record, None, Some(value.as_bytes()), &[])
                .unwrap();
        }
        let bytes = builder.build().unwrap();
        ranges.push(data.len() as u64..(data.len() + bytes.len()) as u64);
        data.extend_from_slice(&bytes);
    }
    (data, ranges)
}

const SEALED: SegmentSpan = SegmentSpan {
    base_offset: 100,
    end_offset: Some(150),
};

/// The offsets of every record in the plan's kept ranges.
fn kept_offsets(data: &[u8], plan: &SalvagePlan) -> Vec<i64> {
    let mut offsets = Vec::new();
    for range in &plan.kept {
        let bytes = &data[range.start as usize..range.end as usize];
        for entry in EntryIter::new(bytes) {
            let (_, entry) = entry.unwrap();
            entry.validate().unwrap();
            for record in entry.records(1 << 20).unwrap().to_vec().unwrap() {
                offsets.push(record.offset);
            }
        }
    }
    offsets
}

fn all_but(lost: Range<i64>) -> Vec<i64> {
    (100..150).filter(|offset| !lost.contains(offset)).collect()
}

#[test]
fn an_intact_segment_is_kept_whole() {
    let (data, _) = segment(10);
    let plan = plan_salvage(&data, SEALED, &[]);
    assert!(plan.is_intact());
    assert_eq!(plan.kept, vec![0..data.len() as u64]);
}

#[test]
fn a_bit_flip_loses_only_its_batch() {
    let (mut data, ranges) = segment(10);
    // A byte among the records of batch 3 (offsets 115..120).
    data[ranges[3].end as usize - 4] ^= 0x10;
    let plan = plan_salvage(&data, SEALED, &[]);
    assert_eq!(plan.lost.len(), 1);
    assert_eq!(plan.lost[0].bytes, ranges[3].clone());
    assert_eq!(plan.lost[0].offsets, Some(115..120));
    assert!(
        plan.lost[0].reason.contains("checksum") || plan.lost[0].reason.contains("CRC"),
        "{}",
        plan.lost[0].reason
    );
    assert_eq!(kept_offsets(&data, &plan), all_but(115..120));
}

#[test]
fn a_zeroed_range_across_batches_loses_only_the_batches_it_touches() {
    let (mut data, ranges) = segment(10);
    let zeroed = ranges[4].start as usize + 20..ranges[6].start as usize + 30;
    data[zeroed].fill(0);
    let plan = plan_salvage(&data, SEALED, &[]);
    assert_eq!(plan.lost.len(), 1);
    assert_eq!(plan.lost[0].bytes, ranges[4].start..ranges[7].start);
    assert_eq!(plan.lost[0].offsets, Some(120..135));
    assert_eq!(kept_offsets(&data, &plan), all_but(120..135));
}

#[test]
fn a_damaged_length_field_is_passed_by_the_next_batch() {
    let (clean, ranges) = segment(10);
    let size = (ranges[2].end - ranges[2].start) as i32 - 12;
    // Too small for any entry, far past the end, and a few bytes off either way.
    for length in [5, i32::MAX, size + 3, size - 3] {
        let mut data = clean.clone();
        let at = ranges[2].start as usize + 8;
        data[at..at + 4].copy_from_slice(&length.to_be_bytes());
        let plan = plan_salvage(&data, SEALED, &[]);
        assert_eq!(plan.lost.len(), 1, "{length}");
        assert_eq!(plan.lost[0].bytes, ranges[2].clone(), "{length}");
        assert_eq!(kept_offsets(&data, &plan), all_but(110..115));
    }
}

#[test]
fn a_torn_batch_in_the_middle_and_at_the_end() {
    let (data, ranges) = segment(10);
    // Batch 5 loses its second half, as a write that never finished before the next.
    let mut torn = data[..ranges[5].start as usize + 30].to_vec();
    torn.extend_from_slice(&data[ranges[6].start as usize..]);
    let plan = plan_salvage(&torn, SEALED, &[]);
    assert_eq!(plan.lost.len(), 1);
    assert_eq!(plan.lost[0].offsets, Some(125..130));
    assert_eq!(kept_offsets(&torn, &plan), all_but(125..130));
    // At the end of the log's last segment nothing tells how much a torn write held.
    let tail = &data[..ranges[9].start as usize + 30];
    let last = SegmentSpan {
        base_offset: 100,
        end_offset: None,
    };
    let plan = plan_salvage(tail, last, &[]);
    assert_eq!(plan.lost.len(), 1);
    assert_eq!(plan.lost[0].bytes, ranges[9].start..tail.len() as u64);
    assert_eq!(plan.lost[0].offsets, None);
    assert_eq!(kept_offsets(tail, &plan), (100..145).collect::<Vec<_>>());
}

#[test]
fn damage_at_the_start_and_the_end_of_a_sealed_segment() {
    let (mut data, ranges) = segment(10);
    data[ranges[0].start as usize + 30] ^= 1;
    data[ranges[9].end as usize - 1] ^= 1;
    let plan = plan_salvage(&data, SEALED, &[]);
    let lost: Vec<_> = plan.lost.iter().map(|l| l.offsets.clone()).collect();
    assert_eq!(lost, vec![Some(100..105), Some(145..150)]);
    assert_eq!(kept_offsets(&data, &plan), (105..145).collect::<Vec<_>>());
}

#[test]
fn a_verified_index_entry_overrules_a_candidate_that_contradicts_it() {
    let (_, ranges) = segment(4);
    let candidate = Valid {
        position: ranges[1].start as usize,
        size: 0,
        first_offset: 105,
        last_offset: 109,
    };
    assert!(agrees_with(
        &candidate,
        &[
            (104, 0),
            (109, ranges[1].start as usize),
            (114, ranges[2].start as usize)
        ]
    ));
    // An entry further on that holds offsets the candidate claims.
    assert!(!agrees_with(&candidate, &[(107, ranges[2].start as usize)]));
    assert!(!agrees_with(&candidate, &[(110, ranges[1].start as usize)]));
}

/// A record as written: its offset and value.
type WrittenRecord = (i64, Vec<u8>);

/// The records written: each batch's byte range and its records.
struct Written {
    data: Vec<u8>,
    batches: Vec<(Range<u64>, Vec<WrittenRecord>)>,
}

/// A segment based at 1,000 of 30 batches of 1 to 20 records: compressed and not,
/// transactional (with their commit markers) and not.
fn varied_segment(rng: &mut StdRng) -> Written {
    let mut written = Written {
        data: Vec::new(),
        batches: Vec::new(),
    };
    let mut next = 1_000i64;
    for batch in 0..30 {
        let count = rng.random_range(1..=20);
        let compression = [Compression::None, Compression::Gzip, Compression::Lz4][batch % 3];
        let mut builder = BatchBuilder::new(next).compression(compression);
        if batch % 4 == 1 {
            builder = builder
                .producer(7, 0, batch as i32 * 20)
                .transactional(true);
        }
        let mut records = Vec::new();
        for offset in next..next + count {
            let value = format!("record {offset} {}", "x".repeat(rng.random_range(0..60)));
            builder
                .append(offset, None, Some(value.as_bytes()), &[])
                .unwrap();
            records.push((offset, value.into_bytes()));
        }
        let bytes = builder.build().unwrap();
        let start = written.data.len() as u64;
        written.data.extend_from_slice(&bytes);
        written
            .batches
            .push((start..written.data.len() as u64, records));
        next += count;
    }
    written
}

/// The (offset, value) pairs of the plan's kept ranges of `data`.
fn kept_records(data: &[u8], plan: &SalvagePlan) -> Vec<(i64, Vec<u8>)> {
    let mut records = Vec::new();
    for range in &plan.kept {
        for entry in EntryIter::new(&data[range.start as usize..range.end as usize]) {
            let (_, entry) = entry.unwrap();
            for record in entry.records(1 << 20).unwrap().to_vec().unwrap() {
                records.push((record.offset, record.value.unwrap().to_vec()));
            }
        }
    }
    records
}

#[test]
fn random_damage_loses_only_the_damaged_batches_and_invents_nothing() {
    let mut rng = StdRng::seed_from_u64(41);
    for round in 0..1_000 {
        let written = varied_segment(&mut rng);
        let starts: Vec<u64> = written.batches.iter().map(|b| b.0.start).collect();
        let (damaged, data) = random_damage(&mut rng, written.data.clone(), &starts);
        let end = written.batches.last().unwrap().1.last().unwrap().0 + 1;
        let span = SegmentSpan {
            base_offset: 1_000,
            end_offset: Some(end),
        };
        let plan = plan_salvage(&data, span, &[]);
        let kept = kept_records(&data, &plan);
        let all: Vec<(i64, Vec<u8>)> = written.batches.iter().flat_map(|b| b.1.clone()).collect();
        // Nothing kept that was not written, at its offset.
        assert!(
            kept.iter().all(|record| all.contains(record)),
            "round {round}: a record kept that was not written ({damaged:?})"
        );
        // Every batch clear of the damage kept.
        for (range, records) in &written.batches {
            let touched = range.start < damaged.end && damaged.start < range.end;
            if !touched {
                for record in records {
                    assert!(
                        kept.contains(record),
                        "round {round}: offset {} lost, the damage at {damaged:?}, its batch at {range:?}: {:?}",
                        record.0,
                        plan.lost
                    );
                }
            }
        }
        // Each lost stretch names the offsets that are missing.
        for stretch in &plan.lost {
            let offsets = stretch.offsets.clone().unwrap();
            assert!(kept.iter().all(|(offset, _)| !offsets.contains(offset)));
        }
    }
}

/// In a compacted segment (gaps between batches), a base offset moved down into the previous
/// batch's offsets is the damaged one: the previous batch is kept, not blamed.
#[test]
fn a_base_offset_moved_down_in_a_compacted_segment_is_the_one_refused() {
    let mut data = Vec::new();
    let mut starts = Vec::new();
    for base in [100i64, 120, 140, 160] {
        let mut builder = BatchBuilder::new(base);
        for offset in base..base + 10 {
            builder
                .append(offset, None, Some(b"compacted"), &[])
                .unwrap();
        }
        starts.push(data.len());
        data.extend_from_slice(&builder.build().unwrap());
    }
    // The third batch (140..149) now claims 115..124, overlapping the second (120..129).
    data[starts[2]..starts[2] + 8].copy_from_slice(&115i64.to_be_bytes());
    let span = SegmentSpan {
        base_offset: 100,
        end_offset: Some(200),
    };
    let plan = plan_salvage(&data, span, &[]);
    let kept: Vec<i64> = kept_records(&data, &plan)
        .iter()
        .map(|record| record.0)
        .collect();
    let expected: Vec<i64> = (100..110).chain(120..130).chain(160..170).collect();
    assert_eq!(kept, expected);
    assert_eq!(plan.lost.len(), 1);
    assert_eq!(plan.lost[0].bytes.start, starts[2] as u64);
}
