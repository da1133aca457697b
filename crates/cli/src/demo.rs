//! `ferrolog demo`: the storage engine end to end on a data directory it creates. Records go
//! to a few partitions through the LogManager; the manager is then dropped without a clean
//! shutdown (as after a crash), reopened so every unflushed segment is recovered, every record
//! is read back and checked, and the manager shuts down cleanly.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, ensure};
use ferrolog_records::{BatchBuilder, DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};

const RECORDS_PER_BATCH: usize = 16;
const PARTITIONS: i32 = 4;

pub fn run(data_dir: &Path, records: usize, record_bytes: usize) -> anyhow::Result<()> {
    let config = ManagerConfig {
        log_dirs: vec![data_dir.to_path_buf()],
        recovery_threads_per_data_dir: 2,
        log_defaults: LogConfig {
            segment_bytes: 64 * 1024 * 1024,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    let partitions: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new("demo", p))
        .collect();

    let manager = LogManager::open(config.clone(), Arc::new(SystemClock))
        .with_context(|| format!("opening the data directory {}", data_dir.display()))?;
    let logs: Vec<Arc<Log>> = partitions
        .iter()
        .map(|tp| manager.get_or_create(tp))
        .collect::<Result<_, _>>()?;
    let start_offsets: Vec<Offset> = logs.iter().map(|log| log.log_end_offset()).collect();
    let value = vec![b'x'; record_bytes];
    let started = Instant::now();
    let mut appended = 0;
    let mut batch_number = 0usize;
    while appended < records {
        let mut builder = BatchBuilder::new(0);
        for i in appended..(appended + RECORDS_PER_BATCH).min(records) {
            let key = format!("key-{i}");
            builder.append(now_ms(), Some(key.as_bytes()), Some(&value), &[])?;
        }
        appended += builder.count() as usize;
        let log = &logs[batch_number % logs.len()];
        log.append_as_leader(builder.build()?)?;
        batch_number += 1;
    }
    let append_secs = started.elapsed().as_secs_f64();
    let bytes: u64 = logs.iter().map(|log| log.size_in_bytes()).sum();
    drop(logs);
    // No shutdown: the next open finds no clean-shutdown marker and recovers.
    drop(manager);

    let started = Instant::now();
    let manager = LogManager::open(config, Arc::new(SystemClock))?;
    let recover_secs = started.elapsed().as_secs_f64();
    let report = manager.startup_report().clone();

    let started = Instant::now();
    let mut read_records = 0usize;
    for (tp, start) in partitions.iter().zip(&start_offsets) {
        let log = manager
            .get(tp)
            .context("a demo partition is missing after the restart")?;
        read_records += read_back(&log, start.value())?;
    }
    let read_secs = started.elapsed().as_secs_f64();
    ensure!(
        read_records == records,
        "read back {read_records} of {records} records"
    );

    let mb = bytes as f64 / 1e6;
    println!(
        "data directory     {} (cluster {})",
        data_dir.display(),
        manager.cluster_id()
    );
    for tp in &partitions {
        if let Some(log) = manager.get(tp) {
            println!(
                "  {:<12}     offsets {}..{}, {} segment(s)",
                tp.to_string(),
                log.log_start_offset(),
                log.log_end_offset(),
                log.segment_count()
            );
        }
    }
    println!(
        "appended           {records} records, {mb:.1} MB in {append_secs:.3} s ({:.0} MB/s)",
        mb / append_secs
    );
    println!(
        "restarted uncleanly: {} logs loaded, {} segments recovered in {recover_secs:.3} s",
        report.logs_loaded, report.segments_recovered
    );
    println!(
        "read back          {records} records in {read_secs:.3} s ({:.0} MB/s)",
        mb / read_secs
    );
    manager.shutdown()?;
    println!(
        "shut down cleanly; inspect with: ferrolog dump-log --files {}/demo-0/00000000000000000000.log",
        data_dir.display()
    );
    Ok(())
}

/// Reads every record from `start` to the high watermark, checking each batch; returns the count.
fn read_back(log: &Log, start: i64) -> anyhow::Result<usize> {
    let mut offset = start;
    let mut count = 0;
    while offset < log.high_watermark().value() {
        let data = log.read(FetchParams {
            start_offset: Offset::new(offset),
            max_bytes: 1024 * 1024,
            bound: FetchBound::HighWatermark,
            first_batch: FirstBatch::Whole,
        })?;
        let bytes = data.read_bytes()?;
        for entry in EntryIter::new(&bytes) {
            let (_, entry) = entry
                .map_err(|(position, error)| anyhow::anyhow!("at byte {position}: {error}"))?;
            entry.validate()?;
            let records = entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES)?;
            count += records
                .to_vec()?
                .iter()
                .filter(|record| record.offset >= offset)
                .count();
            offset = offset.max(entry.next_offset());
        }
    }
    Ok(count)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}
