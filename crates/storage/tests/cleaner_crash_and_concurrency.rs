//! The cleaner under stress:
//! - a child process appends keyed records and compacts in a loop and is killed with SIGKILL at
//!   random moments, dozens of times; every reopen holds the latest value of every key;
//! - producers append and consumers read a compacted log while cleaner threads run, and are
//!   replaced as the cleaner's settings change at run time; no reader ever sees an error, or a
//!   value other than the one written at that offset, and the new threads go on cleaning.
//!
//! In both, the record at offset `o` has key `o % KEYS` and value `o`, so the latest value of
//! every key below the log end is known without any bookkeeping.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ferrolog_records::{BatchBuilder, DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::cleaner::CleanerConfig;
use ferrolog_storage::cleaner::offset_map::OffsetMap;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{BackgroundConfig, LogManager, ManagerConfig};
use ferrolog_storage::{CleanupPolicy, LogConfig, StorageError, SystemClock, TopicPartition};
use ferrolog_testkit::crash::{self, KillDelays};

const CHILD_ENV: &str = "FERROLOG_CLEANER_CHILD";
const KEYS: i64 = 40;
const KILLS: usize = 24;

fn config(root: &Path) -> ManagerConfig {
    ManagerConfig {
        log_dirs: vec![root.join("data")],
        log_defaults: LogConfig {
            cleanup_policy: CleanupPolicy::COMPACT,
            segment_bytes: 4 * 1024,
            min_cleanable_dirty_ratio: 0.01,
            ..LogConfig::default()
        },
        cleaner: CleanerConfig {
            threads: 2,
            dedupe_buffer_bytes: 1 << 20,
            backoff: Duration::from_millis(5),
            ..CleanerConfig::default()
        },
        background: BackgroundConfig {
            initial_delay: Duration::ZERO,
            ..BackgroundConfig::default()
        },
        ..ManagerConfig::default()
    }
}

fn append_next(log: &Log, count: i64) {
    let next = log.log_end_offset().value();
    let mut builder = BatchBuilder::new(0);
    for offset in next..next + count {
        let key = format!("key-{}", offset % KEYS);
        let value = offset.to_string();
        builder
            .append(
                1_700_000_000_000,
                Some(key.as_bytes()),
                Some(value.as_bytes()),
                &[],
            )
            .unwrap();
    }
    log.append_as_leader(builder.build().unwrap()).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
}

/// Reads the whole log; checks each value names its own offset; returns key → latest offset.
fn verify(log: &Log) -> BTreeMap<String, i64> {
    let mut latest = BTreeMap::new();
    let mut offset = log.log_start_offset();
    let mut previous = -1;
    while offset < log.high_watermark() {
        let data = log
            .read(FetchParams {
                start_offset: offset,
                max_bytes: 64 * 1024,
                bound: FetchBound::HighWatermark,
                first_batch: FirstBatch::Whole,
            })
            .unwrap();
        let bytes = data.read_bytes().unwrap();
        if bytes.is_empty() {
            break;
        }
        for entry in EntryIter::new(&bytes) {
            let (_, entry) = entry.unwrap();
            entry.validate().unwrap();
            for record in entry
                .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
                .unwrap()
                .to_vec()
                .unwrap()
            {
                if record.offset < offset.value() {
                    continue;
                }
                assert!(record.offset > previous, "offsets only increase");
                previous = record.offset;
                let value: i64 = std::str::from_utf8(record.value.unwrap())
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(value, record.offset, "the value written at this offset");
                let key = String::from_utf8(record.key.unwrap().to_vec()).unwrap();
                assert_eq!(key, format!("key-{}", record.offset % KEYS));
                latest.insert(key, record.offset);
            }
            offset = offset.max(Offset::new(entry.next_offset()));
        }
    }
    latest
}

/// Every key's latest offset below `end` must be present.
fn assert_latest_values_survive(latest: &BTreeMap<String, i64>, end: i64) {
    for key in 0..KEYS.min(end) {
        let expected = (end - 1) - ((end - 1 - key) % KEYS);
        assert_eq!(
            latest.get(&format!("key-{key}")),
            Some(&expected),
            "key-{key} below {end}"
        );
    }
}

/// The child: append and compact forever.
#[test]
fn child_entry() {
    let Some(root) = crash::child_role(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let manager = Arc::new(LogManager::open(config(&root), Arc::new(SystemClock)).unwrap());
    let log = manager
        .get_or_create(&TopicPartition::new("crash", 0))
        .unwrap();
    let cleaner = manager.new_cleaner();
    let mut map = OffsetMap::new(1 << 20, 0.9);
    loop {
        for _ in 0..5 {
            append_next(&log, 7);
        }
        log.roll().unwrap();
        cleaner.clean_once(&mut map);
    }
}

#[test]
fn every_key_keeps_its_latest_value_through_repeated_sigkill_during_compaction() {
    let temp = tempfile::tempdir().unwrap();
    let mut delays = KillDelays::new(0xdead_beef_1234_5678, 60, 200);
    let mut largest_end = 0;
    for kill in 0..KILLS {
        delays.run_and_kill("child_entry", CHILD_ENV, &temp.path().display().to_string());

        let manager = LogManager::open(config(temp.path()), Arc::new(SystemClock)).unwrap();
        if let Some(log) = manager.get(&TopicPartition::new("crash", 0)) {
            let end = log.high_watermark().value();
            let latest = verify(&log);
            assert_latest_values_survive(&latest, end);
            largest_end = largest_end.max(end);
            let leftovers: Vec<_> = std::fs::read_dir(log.dir())
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".cleaned") || name.ends_with(".swap"))
                .collect();
            assert!(leftovers.is_empty(), "kill {kill}: {leftovers:?}");
        }
    }
    assert!(
        largest_end > 200,
        "the children made progress: {largest_end}"
    );
}

#[test]
fn producers_and_consumers_run_while_the_cleaner_compacts() {
    let temp = tempfile::tempdir().unwrap();
    let manager = Arc::new(LogManager::open(config(temp.path()), Arc::new(SystemClock)).unwrap());
    let log = manager
        .get_or_create(&TopicPartition::new("busy", 0))
        .unwrap();
    manager.start_background().unwrap();
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                append_next(&log, 5);
            }
        });
        for _ in 0..2 {
            scope.spawn(|| {
                let mut offset = 0;
                while !stop.load(Ordering::Relaxed) {
                    let data = match log.read(FetchParams {
                        start_offset: Offset::new(offset),
                        max_bytes: 16 * 1024,
                        bound: FetchBound::HighWatermark,
                        first_batch: FirstBatch::Whole,
                    }) {
                        Ok(data) => data,
                        Err(StorageError::OffsetOutOfRange { .. }) => {
                            offset = log.log_start_offset().value();
                            continue;
                        }
                        Err(error) => panic!("a reader saw {error}"),
                    };
                    let bytes = data.read_bytes().unwrap();
                    for entry in EntryIter::new(&bytes) {
                        let (_, entry) = entry.unwrap();
                        entry.validate().unwrap();
                        for record in entry
                            .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
                            .unwrap()
                            .to_vec()
                            .unwrap()
                        {
                            let value: i64 = std::str::from_utf8(record.value.unwrap())
                                .unwrap()
                                .parse()
                                .unwrap();
                            assert_eq!(
                                value, record.offset,
                                "a record read is the one written at its offset"
                            );
                            reads.fetch_add(1, Ordering::Relaxed);
                        }
                        offset = offset.max(entry.next_offset());
                    }
                    if offset >= log.high_watermark().value() {
                        offset = 0; // read the (compacting) log again from the start
                    }
                }
            });
        }
        // The settings change while passes run: 2 threads, then 4 with a smaller buffer, then
        // 2 again with a slower backoff; the threads are replaced each time.
        let cleaner = manager.cleaner().unwrap();
        let steps = [(4, 512 << 10, 5), (2, 1 << 20, 10)];
        let mut passes_before_last = 0;
        for (threads, dedupe_buffer_bytes, backoff_ms) in steps {
            std::thread::sleep(Duration::from_secs(1));
            let next = CleanerConfig {
                threads,
                dedupe_buffer_bytes,
                backoff: Duration::from_millis(backoff_ms),
                ..cleaner.config()
            };
            // The threads before are joined when it returns: later passes are the new ones'.
            cleaner.reconfigure(next, false).unwrap();
            passes_before_last = cleaner.stats.passes.load(Ordering::Relaxed);
            assert_eq!(cleaner.running_threads(), threads);
        }
        assert!(
            cleaner
                .reconfigure(
                    CleanerConfig {
                        threads: 5,
                        ..cleaner.config()
                    },
                    false
                )
                .is_err(),
            "more than double refused"
        );
        assert_eq!(cleaner.running_threads(), 2);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        assert!(passes_before_last > 0, "passes ran before the last change");
        assert!(
            cleaner.stats.passes.load(Ordering::Relaxed) > passes_before_last,
            "the last threads clean"
        );
    });
    let cleaner = manager.cleaner().unwrap();
    assert_eq!(cleaner.stats.dead_threads.load(Ordering::Relaxed), 0);
    assert!(reads.load(Ordering::Relaxed) > 1000);
    let end = log.high_watermark();
    assert_latest_values_survive(&verify(&log), end.value());
    manager.shutdown().unwrap();
}

#[test]
fn a_restart_of_the_threads_does_not_wait_out_a_pass_held_to_a_low_rate() {
    let temp = tempfile::tempdir().unwrap();
    let mut config = config(temp.path());
    // A byte a second: a pass's first batch alone is worth minutes of waiting.
    config.cleaner.max_io_bytes_per_second = 1.0;
    let manager = Arc::new(LogManager::open(config, Arc::new(SystemClock)).unwrap());
    let log = manager
        .get_or_create(&TopicPartition::new("slow", 0))
        .unwrap();
    for _ in 0..50 {
        append_next(&log, 5);
    }
    log.roll().unwrap();
    manager.start_background().unwrap();
    let cleaner = manager.cleaner().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (done, restarted) = std::sync::mpsc::channel();
    let restarting = Arc::clone(&cleaner);
    std::thread::spawn(move || {
        let next = CleanerConfig {
            threads: 1,
            ..restarting.config()
        };
        done.send(restarting.reconfigure(next, false)).unwrap();
    });
    // The pass under way is aborted at its next throttled step, well within this.
    let outcome = restarted.recv_timeout(Duration::from_secs(60));
    assert_eq!(outcome, Ok(Ok(())), "the restart waited for the pass");
    assert_eq!(cleaner.running_threads(), 1);
    manager.shutdown().unwrap();
}
