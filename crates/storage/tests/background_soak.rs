//! Soak: many partitions appended to concurrently while retention, flushes, checkpoints, idle
//! rolls and delayed deletion run on their (shortened) schedules in the background threads.
//! Readers never see an error or a torn record (falling behind retention is a reset to the log
//! start, as a consumer with `auto.offset.reset=earliest` does), and the data on disk stays
//! bounded by the retention settings.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch};
use ferrolog_storage::manager::{BackgroundConfig, LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, StorageError, SystemClock, TopicPartition};
use ferrolog_testkit::{TestRecord, batch};

const PARTITIONS: i32 = 16;
const SEGMENT_BYTES: u64 = 32 * 1024;
const RETENTION_BYTES: u64 = 128 * 1024;
const RUN_FOR: Duration = Duration::from_secs(3);
/// The most the soak runs while waiting for enough appends.
const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

fn value_for(partition: i32, offset: i64) -> Vec<u8> {
    let mut value = format!("{partition}/{offset}|").into_bytes();
    value.resize(200, b'=');
    value
}

/// Bytes of `.log` data (live and `.deleted`) under `dir`.
fn log_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            total += log_bytes(&path);
        } else if path.to_string_lossy().contains(".log") {
            total += entry.metadata().map_or(0, |metadata| metadata.len());
        }
    }
    total
}

#[test]
fn concurrent_appends_and_reads_with_background_maintenance() {
    let temp = tempfile::tempdir().unwrap();
    let config = ManagerConfig {
        log_dirs: vec![temp.path().join("a"), temp.path().join("b")],
        log_defaults: LogConfig {
            segment_bytes: SEGMENT_BYTES,
            retention_bytes: Some(RETENTION_BYTES),
            segment_age: Duration::from_millis(200),
            flush_interval: Some(Duration::from_millis(50)),
            file_delete_delay: Duration::from_millis(50),
            ..LogConfig::default()
        },
        background: BackgroundConfig {
            initial_delay: Duration::ZERO,
            retention_check_interval: Duration::from_millis(20),
            flush_check_interval: Some(Duration::from_millis(10)),
            recovery_point_checkpoint_interval: Duration::from_millis(30),
            log_start_offset_checkpoint_interval: Duration::from_millis(30),
            producer_id_expiration: Duration::from_secs(86_400),
            producer_id_expiration_check_interval: Duration::from_millis(25),
        },
        ..ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(config, Arc::new(SystemClock)).unwrap());
    let stats = manager.start_background().unwrap();
    let partitions: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new("soak", p))
        .collect();
    for tp in &partitions {
        manager.get_or_create(tp).unwrap();
    }
    // Retention keeps about RETENTION_BYTES per partition plus the active segment; deleted
    // segments linger up to file.delete.delay.ms, and appends go on between passes.
    let bound = PARTITIONS as u64 * (RETENTION_BYTES + 4 * SEGMENT_BYTES);
    let stop = AtomicBool::new(false);
    let appended = AtomicU64::new(0);
    let read = AtomicU64::new(0);
    let resets = AtomicU64::new(0);
    let largest_on_disk = AtomicU64::new(0);

    std::thread::scope(|scope| {
        for writer in 0..4 {
            let (manager, partitions, stop, appended) = (&manager, &partitions, &stop, &appended);
            scope.spawn(move || {
                let mut round = writer;
                while !stop.load(Ordering::Relaxed) {
                    let partition = (round % PARTITIONS as usize) as i32;
                    let log = manager.get(&partitions[partition as usize]).unwrap();
                    let next = log.log_end_offset();
                    let records: Vec<TestRecord> = (0..4)
                        .map(|i| {
                            TestRecord::new(
                                0,
                                Some(b"k"),
                                Some(&value_for(partition, (next + i).value())),
                            )
                        })
                        .collect();
                    // Two writers may race on a partition: a value then names an offset at or
                    // below the one it got, which is what readers check.
                    log.append_as_leader(batch(&records)).unwrap();
                    log.maybe_increment_high_watermark(log.log_end_offset());
                    appended.fetch_add(4, Ordering::Relaxed);
                    round += 4;
                }
            });
        }
        for reader in 0..2 {
            let (manager, partitions, stop, read, resets) =
                (&manager, &partitions, &stop, &read, &resets);
            scope.spawn(move || {
                let mut positions = vec![0i64; PARTITIONS as usize];
                let mut round = reader;
                while !stop.load(Ordering::Relaxed) {
                    let partition = round % PARTITIONS as usize;
                    round += 1;
                    let log = manager.get(&partitions[partition]).unwrap();
                    let start = positions[partition];
                    let data = match log.read(FetchParams {
                        start_offset: Offset::new(start),
                        max_bytes: 16 * 1024,
                        bound: FetchBound::HighWatermark,
                        first_batch: FirstBatch::Whole,
                    }) {
                        Ok(data) => data,
                        Err(StorageError::OffsetOutOfRange { .. }) => {
                            resets.fetch_add(1, Ordering::Relaxed);
                            positions[partition] = log.log_start_offset().value();
                            continue;
                        }
                        Err(error) => panic!("reader saw an error: {error}"),
                    };
                    let bytes = data.read_bytes().unwrap();
                    for entry in EntryIter::new(&bytes) {
                        let (_, entry) = entry.unwrap();
                        entry
                            .validate()
                            .expect("no torn or corrupt batch is ever returned");
                        for record in entry
                            .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
                            .unwrap()
                            .to_vec()
                            .unwrap()
                        {
                            let value = String::from_utf8_lossy(record.value.unwrap()).into_owned();
                            let (named_partition, rest) = value.split_once('/').unwrap();
                            assert_eq!(
                                named_partition,
                                partition.to_string(),
                                "a record of another partition"
                            );
                            let named_offset: i64 =
                                rest.split('|').next().unwrap().parse().unwrap();
                            assert!(named_offset <= record.offset, "offsets only grow");
                            if record.offset >= start {
                                read.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        positions[partition] = positions[partition].max(entry.next_offset());
                    }
                }
            });
        }
        // Runs for RUN_FOR, and on until twice the bound has been appended (a loaded machine
        // appends less in the same time), so retention always has work.
        let started = Instant::now();
        while started.elapsed() < RUN_FOR
            || (appended.load(Ordering::Relaxed) * 200 <= 2 * bound
                && started.elapsed() < GIVE_UP_AFTER)
        {
            std::thread::sleep(Duration::from_millis(50));
            largest_on_disk.fetch_max(log_bytes(temp.path()), Ordering::Relaxed);
        }
        stop.store(true, Ordering::Relaxed);
    });

    let largest = largest_on_disk.load(Ordering::Relaxed);
    let appended = appended.load(Ordering::Relaxed);
    assert!(
        appended * 200 > 2 * bound,
        "enough was appended to need retention: {appended} records"
    );
    // While four writers append flat out, how far retention lags depends on how the machine
    // schedules its thread (on two loaded cores it has overshot the bound by a few percent);
    // once appends stop, its next passes must bring the data within the bound.
    let settled = Instant::now();
    let mut on_disk = log_bytes(temp.path());
    while on_disk > bound && settled.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
        on_disk = log_bytes(temp.path());
    }
    assert!(
        on_disk <= bound,
        "retention left {on_disk} bytes on disk, bound {bound} (largest seen while appending: {largest})"
    );
    assert!(read.load(Ordering::Relaxed) > 1000, "readers read");
    for job in &stats {
        assert_eq!(job.failures(), 0, "{} failed", job.name);
        assert!(
            job.runs() > 0 || job.name == "never",
            "{} never ran",
            job.name
        );
    }
    manager.shutdown().unwrap();
    eprintln!(
        "appended {appended} records, read {}, {} resets after retention, largest on disk {largest} bytes",
        read.load(Ordering::Relaxed),
        resets.load(Ordering::Relaxed)
    );
}
