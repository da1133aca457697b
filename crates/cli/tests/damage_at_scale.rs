//! Damage at scale: 100 partitions of about ten segments each, written with compressed and
//! uncompressed batches, transactions committed and aborted among plain batches, stopped
//! cleanly; then one random damage (a flipped bit, a zeroed stretch, a torn write, a broken
//! length field, a flipped base-offset bit) planted in every segment but each log's last, about
//! 1,000 in all.
//!
//! `ferrolog verify` names every damaged segment whose damage can be seen and fails. On a
//! copy, one pass of the scrubber finds every damaged segment whose damage can be seen,
//! and no other. (Some cannot: zeros written over bytes that were zeros already change nothing,
//! and a batch's partition leader epoch is covered by no checksum and checked against nothing,
//! by Kafka either.) Then a load that salvages keeps every record of every batch the damage did
//! not touch, at its offset, and invents none, rewriting exactly the segments whose damage can
//! be seen; a second salvaging load finds nothing to do, and `verify` passes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrolog_records::{BatchBuilder, Compression, EntryIter};
use ferrolog_storage::log::{FetchBound, Log, MarkerRequest, Salvage};
use ferrolog_storage::manager::{BackgroundConfig, LogManager, ManagerConfig, ScrubConfig};
use ferrolog_storage::producer::MarkerKind;
use ferrolog_storage::{CoordinatorEpoch, LogConfig, ProducerEpoch, SystemClock, TopicPartition};
use ferrolog_testkit::damage::random_damage;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PARTITIONS: i32 = 100;
const BATCHES: usize = 100;
/// What a transaction marker's record stands for in the records written.
const MARKER: &str = "(marker)";

/// A manager of `dir`, salvaging or not, its scrubber at `scrub_rate` bytes a second (with
/// no wait after the start), its logs keeping everything however old.
fn manager(dir: &Path, salvage: Salvage, scrub_rate: f64) -> LogManager {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            segment_bytes: 4096,
            retention_age: None,
            ..LogConfig::default()
        },
        background: BackgroundConfig {
            initial_delay: Duration::ZERO,
            ..BackgroundConfig::default()
        },
        scrub: ScrubConfig {
            bytes_per_second: scrub_rate,
            ..ScrubConfig::default()
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

/// Where a batch's partition leader epoch lies, from its start: no check covers it.
const LEADER_EPOCH_FIELD: Range<u64> = 12..16;

/// One damaged segment: the offsets of every record of the batches the damage touched, and
/// whether any check can see it.
struct Damaged {
    touched: Vec<Range<i64>>,
    visible: bool,
}

/// Plants one random damage in `log`.
fn damage(rng: &mut StdRng, log: &Path) -> Damaged {
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
    let (touched, damaged) = random_damage(rng, bytes.clone(), &starts);
    let unchecked = |position: u64| {
        starts.iter().any(|start| {
            let field = start + LEADER_EPOCH_FIELD.start..start + LEADER_EPOCH_FIELD.end;
            field.contains(&position)
        })
    };
    let visible = damaged.len() != bytes.len()
        || (0..bytes.len()).any(|at| bytes[at] != damaged[at] && !unchecked(at as u64));
    std::fs::write(log, damaged).unwrap();
    let touched = batches
        .into_iter()
        .filter(|(bytes, _)| bytes.start < touched.end && touched.start < bytes.end)
        .map(|(_, offsets)| offsets)
        .collect();
    Damaged { touched, visible }
}

/// What was written and damaged: every record by partition and offset, the offsets of the
/// damaged batches by partition, and the segments (partition, base offset) whose damage
/// can be seen.
struct Planted {
    written: BTreeMap<i32, BTreeMap<i64, String>>,
    touched: BTreeMap<i32, Vec<Range<i64>>>,
    visible: BTreeSet<(i32, i64)>,
    segments: usize,
}

fn planted(dir: &Path) -> Planted {
    let mut rng = StdRng::seed_from_u64(1_000);
    let writer = manager(dir, Salvage::Off, 0.0);
    let mut written = BTreeMap::new();
    for partition in 0..PARTITIONS {
        let log = writer
            .get_or_create(&TopicPartition::new("scale", partition))
            .unwrap();
        written.insert(partition, write(&log, &mut rng, partition));
    }
    writer.shutdown().unwrap();
    drop(writer);
    let mut planted = Planted {
        written,
        touched: BTreeMap::new(),
        visible: BTreeSet::new(),
        segments: 0,
    };
    for partition in 0..PARTITIONS {
        let files = segment_files(&dir.join(format!("scale-{partition}")));
        assert!(files.len() >= 10, "{} segments", files.len());
        for file in &files[..files.len() - 1] {
            let damaged = damage(&mut rng, file);
            let base: i64 = file.file_stem().unwrap().to_str().unwrap().parse().unwrap();
            if damaged.visible {
                planted.visible.insert((partition, base));
            }
            planted
                .touched
                .entry(partition)
                .or_default()
                .extend(damaged.touched);
            planted.segments += 1;
        }
    }
    assert!(planted.segments >= 1_000, "{}", planted.segments);
    planted
}

/// The segments (partition, base offset) of `manager`'s logs the scrubber found damaged.
fn found_by_scrubber(manager: &LogManager) -> BTreeSet<(i32, i64)> {
    let mut found = BTreeSet::new();
    for (topic_partition, log) in manager.logs() {
        for segment in log.view().segments.iter() {
            if segment.known_damage().is_some() {
                found.insert((topic_partition.partition, segment.base_offset().value()));
            }
        }
    }
    found
}

#[test]
fn the_scrubber_finds_and_salvage_repairs_a_thousand_damaged_segments() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let planted = planted(&dir);
    let (whole, listed) = verify(&dir);
    assert!(!whole, "{listed}");
    for (partition, base) in &planted.visible {
        let file = format!("scale-{partition}/{base:020}.log");
        assert!(listed.contains(&file), "verify names {file}:\n{listed}");
    }
    let copy = temp.path().join("copy");
    ferrolog_testkit::copy_dir(&dir, &copy);

    // One scrubber pass over the copy.
    let scrubbing = Arc::new(manager(&copy, Salvage::Off, 1e12));
    scrubbing.start_background().unwrap();
    let started = Instant::now();
    while scrubbing.scrubber().passes_completed() == 0 {
        assert!(started.elapsed() < Duration::from_secs(120), "a whole pass");
        std::thread::sleep(Duration::from_millis(20));
    }
    let found = found_by_scrubber(&scrubbing);
    scrubbing.shutdown().unwrap();
    println!(
        "{} segments damaged, {} visibly; one scrubber pass found {}",
        planted.segments,
        planted.visible.len(),
        found.len()
    );
    assert_eq!(found, planted.visible);

    let salvaging = manager(&dir, Salvage::Everything, 0.0);
    let salvaged: BTreeSet<(i32, i64)> = salvaging
        .startup_report()
        .changed
        .iter()
        .flat_map(|(topic_partition, load)| {
            load.salvaged.iter().map(|segment| {
                let stem = segment.log_file.file_stem().unwrap().to_str().unwrap();
                (topic_partition.partition, stem.parse::<i64>().unwrap())
            })
        })
        .collect();
    assert_eq!(salvaged, planted.visible);
    for partition in 0..PARTITIONS {
        let log = salvaging
            .get(&TopicPartition::new("scale", partition))
            .unwrap();
        check_kept(
            &log,
            &planted.written[&partition],
            &planted.touched[&partition],
            partition,
        );
    }
    salvaging.shutdown().unwrap();
    drop(salvaging);

    let again = manager(&dir, Salvage::Everything, 0.0);
    assert!(
        again
            .startup_report()
            .changed
            .iter()
            .all(|(_, load)| load.salvaged.is_empty()),
        "a second salvage finds nothing"
    );
    again.shutdown().unwrap();
    drop(again);
    let (whole, listed) = verify(&dir);
    assert!(whole, "{listed}");
}

/// `ferrolog verify` of `dir`: whether it found no problem, and what it printed.
fn verify(dir: &Path) -> (bool, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args(["verify", "--log-dirs"])
        .arg(dir)
        .env("FERROLOG_LOG", "error")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    match output.status.code() {
        Some(0) => (true, printed),
        Some(1) => (false, printed),
        _ => panic!(
            "ferrolog verify failed: {printed}{}",
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

/// Every record of `written` outside the `touched` batches is in `log` at its offset, and
/// nothing else is.
fn check_kept(log: &Log, written: &BTreeMap<i64, String>, touched: &[Range<i64>], partition: i32) {
    let kept: BTreeMap<i64, String> = common::logs::records_from(log, 0, FetchBound::LogEnd)
        .into_iter()
        .map(|record| {
            let value = String::from_utf8(record.value.clone().unwrap_or_default())
                .ok()
                .filter(|text| text.starts_with('p'))
                .unwrap_or_else(|| MARKER.to_owned());
            (record.offset, value)
        })
        .collect();
    for (offset, value) in written {
        let damaged = touched.iter().any(|range| range.contains(offset));
        match kept.get(offset) {
            Some(found) => assert_eq!(found, value, "partition {partition} offset {offset}"),
            None => assert!(
                damaged,
                "partition {partition} lost offset {offset}, outside the damage {touched:?}"
            ),
        }
    }
    assert!(
        kept.keys().all(|offset| written.contains_key(offset)),
        "partition {partition}: a record that was never written"
    );
}
