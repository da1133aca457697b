//! `ferrolog.recovery.salvage` (`Salvage::Recovery`): after an unclean stop, recovery salvages
//! the segments it reads instead of cutting the first damaged one and dropping every later
//! segment; segments below the recovery point, which recovery does not read, are left as they
//! are; after a clean stop nothing is read.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrolog_storage::log::{FetchBound, LoadParams, Log, Salvage};
use ferrolog_storage::{Clock, LogConfig, ManualClock, Offset};
use ferrolog_testkit::numbered_batch;

const START: i64 = 1_700_000_000_000;

fn open(dir: &Path, params: LoadParams) -> (Log, ferrolog_storage::log::LoadReport) {
    let config = LogConfig {
        segment_bytes: 2048,
        ..LogConfig::default()
    };
    let clock = Arc::new(ManualClock::new(START)) as Arc<dyn Clock>;
    Log::open(dir, config, params, clock).unwrap()
}

/// A log of 200 records, two to a batch, in several segments, closed cleanly; its segments.
fn written(dir: &Path) -> Vec<PathBuf> {
    let (log, _) = open(dir, LoadParams::default());
    for i in 0..100 {
        log.append_as_leader(numbered_batch(i * 2, 2, START))
            .unwrap();
    }
    log.close().unwrap();
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

/// Flips a byte near the end of `log`'s first batch (inside its checksum).
fn damage_first_batch(log: &Path) {
    let mut bytes = std::fs::read(log).unwrap();
    let size = i32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
    bytes[12 + size - 3] ^= 0x20;
    std::fs::write(log, bytes).unwrap();
}

fn base_of(log: &Path) -> i64 {
    log.file_stem().unwrap().to_str().unwrap().parse().unwrap()
}

/// The offsets of the records from `from` on.
fn offsets(log: &Log, from: i64) -> Vec<i64> {
    common::records_from(log, from, FetchBound::LogEnd)
        .into_iter()
        .map(|record| record.offset)
        .collect()
}

#[test]
fn recovery_salvages_what_it_reads_and_only_that() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("events-0");
    let logs = written(&dir);
    assert!(logs.len() >= 4, "{logs:?}");
    damage_first_batch(&logs[0]);
    damage_first_batch(&logs[2]);
    let (below, above) = (base_of(&logs[0]), base_of(&logs[2]));
    let recovery_point = base_of(&logs[1]);
    let unclean = |salvage| LoadParams {
        recovery_point: Offset::new(recovery_point),
        had_clean_shutdown: false,
        salvage,
        ..LoadParams::default()
    };

    // Plain recovery of a copy cuts the damaged segment above the recovery point and drops
    // every later one.
    let copy = temp.path().join("copy").join("events-0");
    std::fs::create_dir_all(&copy).unwrap();
    for log in std::fs::read_dir(&dir).unwrap() {
        let path = log.unwrap().path();
        std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
    }
    let (cut, report) = open(&copy, unclean(Salvage::Off));
    assert!(report.salvaged.is_empty());
    assert!(!report.removed_segments.is_empty());
    assert_eq!(cut.log_end_offset(), Offset::new(above));

    let (log, report) = open(&dir, unclean(Salvage::Recovery));
    let salvaged: Vec<i64> = report
        .salvaged
        .iter()
        .map(|segment| base_of(&segment.log_file))
        .collect();
    assert_eq!(salvaged, vec![above], "only the segment recovery reads");
    assert!(report.removed_segments.is_empty());
    assert_eq!(log.log_end_offset(), Offset::new(200));
    // The damaged batch of the salvaged segment is gone; the one below the recovery point is
    // still there for readers to meet (and `verify` to report).
    let stored = std::fs::read(&logs[0]).unwrap();
    let first = ferrolog_records::FileEntry::parse_prefix(&stored).unwrap();
    assert!(first.validate().is_err());
    let expected: Vec<i64> = (below + 2..200)
        .filter(|offset| !(above..above + 2).contains(offset))
        .collect();
    assert_eq!(offsets(&log, below + 2), expected);
    log.close().unwrap();

    // After a clean stop nothing is read, so nothing is salvaged.
    let clean = LoadParams {
        had_clean_shutdown: true,
        salvage: Salvage::Recovery,
        ..LoadParams::default()
    };
    let (_, report) = open(&dir, clean);
    assert!(report.salvaged.is_empty());
}

/// An index entry of a sealed segment that disagrees with its whole data (as the scrubber
/// reports it) is mended by a salvage: the indexes are rebuilt, the data left as it is.
#[test]
fn salvage_rebuilds_indexes_that_disagree_with_whole_data() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("events-0");
    let logs = written(&dir);
    // The time index's last entry (the one a sealed segment gets as it closes) names a
    // timestamp its batches do not have.
    let index = logs[1].with_extension("timeindex");
    let mut bytes = std::fs::read(&index).unwrap();
    assert!(
        bytes.len() >= 12,
        "the sealed segment has a time index entry"
    );
    let last = bytes.len() - 12;
    let timestamp = i64::from_be_bytes(bytes[last..last + 8].try_into().unwrap()) + 1;
    bytes[last..last + 8].copy_from_slice(&timestamp.to_be_bytes());
    std::fs::write(&index, bytes).unwrap();
    let data = std::fs::read(&logs[1]).unwrap();
    let everything = LoadParams {
        had_clean_shutdown: true,
        salvage: Salvage::Everything,
        ..LoadParams::default()
    };
    let (log, report) = open(&dir, everything);
    assert_eq!(report.salvaged.len(), 1, "{report:?}");
    assert!(report.salvaged[0].indexes_rebuilt && report.salvaged[0].lost.is_empty());
    assert_eq!(
        std::fs::read(&logs[1]).unwrap(),
        data,
        "the data is left as it is"
    );
    assert_eq!(offsets(&log, 0), (0..200).collect::<Vec<_>>());
}
