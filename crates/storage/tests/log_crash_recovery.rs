//! Crash test: a child process appends in a loop (flushing now and then) and is killed with
//! SIGKILL at random moments, dozens of times. After every kill the log reopens without the
//! clean-shutdown marker, recovers, and must hold every flushed record, records only as they
//! were appended (each value names its own offset), and contiguous offsets from 0.
//!
//! The child is this test binary re-run with `FERROLOG_CRASH_CHILD` set to the data dir.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benches fail loudly"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, LoadParams, Log, partition_dir};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};
use ferrolog_testkit::crash::{self, KillDelays};
use ferrolog_testkit::{TestRecord, batch};

const CHILD_ENV: &str = "FERROLOG_CRASH_CHILD";
const KILLS: usize = 30;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 256 * 1024,
        index_interval_bytes: 4096,
        ..LogConfig::default()
    }
}

fn value_for(offset: i64) -> Vec<u8> {
    let mut value = format!("offset={offset};").into_bytes();
    value.resize(100 + (offset % 300) as usize, b'.');
    value
}

/// The recovery point and the flushed log end the child last made durable.
fn read_progress(data_dir: &Path) -> i64 {
    std::fs::read_to_string(data_dir.join("flushed"))
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0)
}

fn open(data_dir: &Path) -> Log {
    let dir = partition_dir(data_dir, &TopicPartition::new("crash", 0));
    let params = LoadParams {
        recovery_point: Offset::new(read_progress(data_dir)),
        ..LoadParams::default()
    };
    Log::open(&dir, config(), params, Arc::new(SystemClock))
        .expect("open after crash")
        .0
}

/// Checks every record; returns the log end offset.
fn verify(log: &Log) -> i64 {
    let mut expected = 0i64;
    while expected < log.log_end_offset().value() {
        let data = log
            .read(FetchParams {
                start_offset: Offset::new(expected),
                max_bytes: 256 * 1024,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })
            .expect("read");
        let bytes = data.read_bytes().expect("bytes");
        for entry in EntryIter::new(&bytes) {
            let (_, entry) = entry.expect("entry");
            entry
                .validate()
                .expect("every batch below the LEO is valid");
            for record in entry
                .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
                .expect("records")
                .to_vec()
                .expect("records")
            {
                assert_eq!(record.offset, expected, "offsets are contiguous");
                assert_eq!(
                    record.value,
                    Some(&value_for(expected)[..]),
                    "offset {expected} holds what was appended"
                );
                expected += 1;
            }
        }
    }
    assert_eq!(expected, log.log_end_offset().value());
    expected
}

/// The child: recover, then append forever, flushing every few batches and recording the
/// flushed offset durably.
#[test]
fn crash_child_entry() {
    let Some(data_dir) = crash::child_role(CHILD_ENV).map(PathBuf::from) else {
        return; // not a child run
    };
    let log = open(&data_dir);
    verify(&log);
    let mut appends = 0u64;
    loop {
        let next = log.log_end_offset().value();
        let records: Vec<TestRecord> = (next..next + 7)
            .map(|offset| TestRecord::new(1_700_000_000_000, Some(b"k"), Some(&value_for(offset))))
            .collect();
        log.append_as_leader(batch(&records)).expect("append");
        appends += 1;
        if appends.is_multiple_of(5) {
            log.flush().expect("flush");
            ferrolog_storage::fs::atomic_write(
                &data_dir.join("flushed"),
                log.recovery_point().to_string().as_bytes(),
            )
            .expect("progress");
        }
    }
}

#[test]
fn log_survives_repeated_sigkill_mid_append() {
    let temp = tempfile::tempdir().expect("temp dir");
    let data_dir = temp.path();
    let mut delays = KillDelays::new(0x9e37_79b9_7f4a_7c15, 30, 150);
    let mut last_end = 0;
    for kill in 0..KILLS {
        delays.run_and_kill(
            "crash_child_entry",
            CHILD_ENV,
            &data_dir.display().to_string(),
        );

        let flushed = read_progress(data_dir);
        let log = open(data_dir);
        let end = verify(&log);
        assert!(
            end >= flushed,
            "kill {kill}: log end {end} below the flushed offset {flushed}"
        );
        last_end = end;
    }
    assert!(last_end > 0, "the children appended something");
}
