//! What a partition of many sealed segments costs the process: file descriptors, memory
//! mappings and resident memory, after appending one record per segment, after reading every
//! segment back, and after a restart that loads them all. Also the time each step takes.
//!
//! `cargo bench -p ferrolog-storage --bench sealed_segments [-- SEGMENTS]` (100,000 by
//! default) prints one line per step. The process's own limits are printed beside: the
//! descriptors (`ulimit -n`) and mappings (`vm.max_map_count`) it may hold.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benches fail loudly"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, Offset, SystemClock, TopicPartition};
use ferrolog_testkit::{fetched_records, numbered_batch};

fn open(dir: &Path) -> LogManager {
    LogManager::open(
        ManagerConfig {
            log_dirs: vec![dir.to_path_buf()],
            log_defaults: LogConfig {
                // One batch of one record per segment.
                segment_bytes: 100,
                file_delete_delay: Duration::ZERO,
                ..LogConfig::default()
            },
            ..ManagerConfig::default()
        },
        Arc::new(SystemClock),
    )
    .unwrap()
}

/// Reads the batch holding `offset` (checking it is there): the offset after it.
fn read_one(log: &Log, offset: i64) -> i64 {
    let bytes = log
        .read(FetchParams {
            start_offset: Offset::new(offset),
            max_bytes: 1,
            bound: FetchBound::LogEnd,
            first_batch: FirstBatch::Whole,
        })
        .unwrap()
        .read_bytes()
        .unwrap();
    let (records, after) = fetched_records(&bytes);
    assert_eq!(
        records[0].offset, offset,
        "the record at {offset} reads back"
    );
    after.unwrap()
}

fn count_lines(path: &str) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count()
}

fn descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn resident_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024
}

fn report(step: &str, segments: usize, took: Duration, baseline: (usize, usize)) {
    println!(
        "{step}: {segments} segments, {:.1} s; descriptors {} (+{} over the process's own), \
         mappings {} (+{}), resident {} MiB",
        took.as_secs_f64(),
        descriptors(),
        descriptors().saturating_sub(baseline.0),
        count_lines("/proc/self/maps"),
        count_lines("/proc/self/maps").saturating_sub(baseline.1),
        resident_mib()
    );
}

fn main() {
    let segments: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(100_000);
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&base).unwrap();
    let temp = tempfile::tempdir_in(&base).unwrap();
    let dir = temp.path().join("data");
    let file_limit = std::fs::read_to_string("/proc/self/limits")
        .unwrap()
        .lines()
        .find_map(|line| {
            let soft = line
                .strip_prefix("Max open files")?
                .split_whitespace()
                .next()?;
            Some(soft.to_owned())
        })
        .unwrap();
    println!(
        "limits: descriptors {file_limit}, vm.max_map_count {}",
        std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .unwrap()
            .trim()
    );
    let baseline = (descriptors(), count_lines("/proc/self/maps"));
    let tp = TopicPartition::new("tiny", 0);

    let started = Instant::now();
    let manager = open(&dir);
    let log = manager.get_or_create(&tp).unwrap();
    for record in 0..segments {
        log.append_as_leader(numbered_batch(record, 1, 1_700_000_000_000))
            .unwrap();
    }
    log.flush().unwrap();
    report("appended", log.segment_count(), started.elapsed(), baseline);

    let started = Instant::now();
    let mut next = 0;
    while next < segments as i64 {
        next = read_one(&log, next);
    }
    report(
        "read every segment",
        log.segment_count(),
        started.elapsed(),
        baseline,
    );
    drop(log);
    manager.shutdown().unwrap();
    drop(manager);

    let started = Instant::now();
    let manager = open(&dir);
    let log = manager.get(&tp).unwrap();
    report("reopened", log.segment_count(), started.elapsed(), baseline);
    let started = Instant::now();
    read_one(&log, 0);
    report(
        "read the first again",
        log.segment_count(),
        started.elapsed(),
        baseline,
    );
    drop(log);
    manager.shutdown().unwrap();
}
