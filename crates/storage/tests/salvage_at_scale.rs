//! Salvage at scale: 100 partitions of about ten segments each, written with compressed and
//! uncompressed batches, transactions committed and aborted among plain batches, stopped
//! cleanly; then one random damage (a flipped bit, a zeroed stretch, a torn write, a broken
//! length field, a flipped base-offset bit) planted in every segment but each log's last, about
//! 1,000 in all. A load that salvages keeps every record of every batch the damage did not
//! touch, at its offset, and invents none; a second salvaging load finds nothing to do.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrolog_records::{BatchBuilder, Compression, EntryIter};
use ferrolog_storage::log::{FetchBound, Log, MarkerRequest, Salvage};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::producer::MarkerKind;
use ferrolog_storage::{CoordinatorEpoch, LogConfig, ProducerEpoch, SystemClock, TopicPartition};
use ferrolog_testkit::damage::random_damage;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PARTITIONS: i32 = 100;
const BATCHES: usize = 100;
/// What a transaction marker's record stands for in the records written.
const MARKER: &str = "(marker)";

fn manager(dir: &Path, salvage: Salvage) -> LogManager {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            segment_bytes: 4096,
            ..LogConfig::default()
        },
        salvage,
        ..ManagerConfig::default()
    };
    LogManager::open(config, Arc::new(SystemClock)).unwrap()
}

/// Writes one partition: batches of 1 to 6 records, every third gzip-compressed, every fifth
/// opening a transaction of its producer that the next marker commits or aborts. Returns every
/// record written, by offset (a marker's as `MARKER`).
fn write(log: &Log, rng: &mut StdRng, partition: i32) -> BTreeMap<i64, String> {
    let mut written = BTreeMap::new();
    let producer = 1_000 + i64::from(partition);
    let mut sequence = 0;
    for batch in 0..BATCHES {
        let base = log.log_end_offset().value();
        let count = rng.random_range(1..=6);
        let compression = if batch % 3 == 2 {
            Compression::Gzip
        } else {
            Compression::None
        };
        let transactional = batch % 5 == 1;
        let mut builder = BatchBuilder::new(base).compression(compression);
        if transactional {
            builder = builder.producer(producer, 0, sequence).transactional(true);
            sequence += count as i32;
        }
        for offset in base..base + count {
            let value = format!(
                "p{partition}-o{offset}-{}",
                "v".repeat(rng.random_range(20..90))
            );
            builder
                .append(offset, None, Some(value.as_bytes()), &[])
                .unwrap();
            written.insert(offset, value);
        }
        log.append_as_follower(&builder.build().unwrap()).unwrap();
        if transactional {
            let kind = if batch % 10 == 1 {
                MarkerKind::Commit
            } else {
                MarkerKind::Abort
            };
            let marker = MarkerRequest {
                producer_id: producer,
                epoch: ProducerEpoch::new(0),
                coordinator_epoch: CoordinatorEpoch::new(1),
                kind,
            };
            let at = log.append_marker(marker, false).unwrap().first_offset;
            written.insert(at.value(), MARKER.to_owned());
        }
        log.maybe_increment_high_watermark(log.log_end_offset());
    }
    written
}

fn segment_files(partition_dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(partition_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

/// Plants one random damage in `log`; returns the offsets of every record of the batches it
/// touched.
fn damage(rng: &mut StdRng, log: &Path) -> Vec<Range<i64>> {
    let bytes = std::fs::read(log).unwrap();
    let batches: Vec<(Range<u64>, Range<i64>)> = EntryIter::new(&bytes)
        .map(|entry| {
            let (position, entry) = entry.unwrap();
            let ferrolog_records::FileEntry::V2(batch) = entry else {
                panic!("v2 batches");
            };
            let end = (position + entry.size_in_bytes()) as u64;
            (
                position as u64..end,
                batch.base_offset()..entry.last_offset() + 1,
            )
        })
        .collect();
    let starts: Vec<u64> = batches.iter().map(|(bytes, _)| bytes.start).collect();
    let (touched, damaged) = random_damage(rng, bytes, &starts);
    std::fs::write(log, damaged).unwrap();
    batches
        .into_iter()
        .filter(|(bytes, _)| bytes.start < touched.end && touched.start < bytes.end)
        .map(|(_, offsets)| offsets)
        .collect()
}

#[test]
fn salvage_keeps_every_record_outside_a_thousand_damaged_batches() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let mut rng = StdRng::seed_from_u64(1_000);
    let writer = manager(&dir, Salvage::Off);
    let mut written = BTreeMap::new();
    for partition in 0..PARTITIONS {
        let log = writer
            .get_or_create(&TopicPartition::new("scale", partition))
            .unwrap();
        written.insert(partition, write(&log, &mut rng, partition));
    }
    writer.shutdown().unwrap();
    drop(writer);

    let mut touched: BTreeMap<i32, Vec<Range<i64>>> = BTreeMap::new();
    let mut damaged_segments = 0;
    for partition in 0..PARTITIONS {
        let files = segment_files(&dir.join(format!("scale-{partition}")));
        assert!(files.len() >= 10, "{} segments", files.len());
        for file in &files[..files.len() - 1] {
            touched
                .entry(partition)
                .or_default()
                .extend(damage(&mut rng, file));
            damaged_segments += 1;
        }
    }
    assert!(damaged_segments >= 1_000, "{damaged_segments}");

    let salvaging = manager(&dir, Salvage::Everything);
    let salvaged: usize = salvaging
        .startup_report()
        .changed
        .iter()
        .map(|(_, load)| load.salvaged.len())
        .sum();
    for partition in 0..PARTITIONS {
        let log = salvaging
            .get(&TopicPartition::new("scale", partition))
            .unwrap();
        let kept: BTreeMap<i64, String> = common::records_from(&log, 0, FetchBound::LogEnd)
            .into_iter()
            .map(|record| {
                let value = String::from_utf8(record.value.clone().unwrap_or_default())
                    .ok()
                    .filter(|text| text.starts_with('p'))
                    .unwrap_or_else(|| MARKER.to_owned());
                (record.offset, value)
            })
            .collect();
        let lost = &touched[&partition];
        for (offset, value) in &written[&partition] {
            let damaged = lost.iter().any(|range| range.contains(offset));
            match kept.get(offset) {
                Some(found) => assert_eq!(found, value, "partition {partition} offset {offset}"),
                None => assert!(
                    damaged,
                    "partition {partition} lost offset {offset}, outside the damage {lost:?}"
                ),
            }
        }
        assert!(
            kept.keys()
                .all(|offset| written[&partition].contains_key(offset)),
            "partition {partition}: a record that was never written"
        );
    }
    // Some damage (a flipped bit in a base offset that stays in order, a zeroed stretch of
    // padding-free bytes) may leave a segment whole; most is salvaged.
    assert!(
        salvaged >= damaged_segments * 3 / 4,
        "{salvaged} of {damaged_segments}"
    );
    salvaging.shutdown().unwrap();
    drop(salvaging);

    let again = manager(&dir, Salvage::Everything);
    assert!(
        again
            .startup_report()
            .changed
            .iter()
            .all(|(_, load)| load.salvaged.is_empty()),
        "a second salvage finds nothing"
    );
    again.shutdown().unwrap();
}
