//! `ferrolog demo`: the storage engine end to end on a data directory it creates — append,
//! close, reopen without the clean-shutdown marker (so every segment is recovered), read back.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, ensure};
use ferrolog_records::{BatchBuilder, DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::log::{FetchBound, FetchParams, LoadParams, Log, partition_dir};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};

const RECORDS_PER_BATCH: usize = 16;

pub fn run(data_dir: &Path, records: usize, record_bytes: usize) -> anyhow::Result<()> {
    let clock = Arc::new(SystemClock);
    let topic_partition = TopicPartition::new("demo", 0);
    let config = LogConfig {
        segment_bytes: 64 * 1024 * 1024,
        ..LogConfig::default()
    };
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let dir = partition_dir(data_dir, &topic_partition);
    let (log, _) = Log::open(&dir, config.clone(), LoadParams::default(), clock.clone())
        .with_context(|| format!("opening {}", dir.display()))?;
    let start_offset = log.log_end_offset();

    let value = vec![b'x'; record_bytes];
    let started = Instant::now();
    let mut appended = 0;
    while appended < records {
        let mut builder = BatchBuilder::new(0);
        for i in appended..(appended + RECORDS_PER_BATCH).min(records) {
            let key = format!("key-{i}");
            builder.append(now_ms(), Some(key.as_bytes()), Some(&value), &[])?;
        }
        appended += builder.count() as usize;
        log.append_as_leader(&mut builder.build()?, 0)?;
    }
    log.maybe_increment_high_watermark(log.log_end_offset());
    let append_secs = started.elapsed().as_secs_f64();
    let bytes = log.size_in_bytes();
    log.close()?;
    drop(log);

    let started = Instant::now();
    let (log, report) = Log::open(&dir, config, LoadParams::default(), clock)?;
    let recover_secs = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut offset = start_offset;
    let mut read_records = 0usize;
    while offset < log.log_end_offset() {
        let data = log.read(FetchParams {
            start_offset: offset,
            max_bytes: 1024 * 1024,
            bound: FetchBound::HighWatermark,
            min_one_batch: true,
        })?;
        let bytes = data.read_bytes()?;
        for entry in EntryIter::new(&bytes) {
            let (_, entry) = entry
                .map_err(|(position, error)| anyhow::anyhow!("at byte {position}: {error}"))?;
            entry.validate()?;
            let batch_records = entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES)?;
            read_records += batch_records
                .to_vec()?
                .iter()
                .filter(|record| record.offset >= offset)
                .count();
            offset = offset.max(entry.next_offset());
        }
    }
    let read_secs = started.elapsed().as_secs_f64();
    ensure!(
        read_records >= records,
        "read back {read_records} of {records} records"
    );

    let mb = bytes as f64 / 1e6;
    println!("log directory      {}", dir.display());
    println!(
        "offsets            {start_offset}..{}",
        log.log_end_offset()
    );
    println!("segments           {}", log.segment_count());
    println!(
        "appended           {records} records, {mb:.1} MB in {append_secs:.3} s ({:.0} MB/s)",
        mb / append_secs
    );
    println!(
        "recovered          {} segments, {} bytes cut, in {recover_secs:.3} s",
        report.recovered.len(),
        report.truncated_bytes()
    );
    println!(
        "read back          {records} records in {read_secs:.3} s ({:.0} MB/s)",
        mb / read_secs
    );
    println!(
        "inspect it with    ferrolog dump-log --files {}/00000000000000000000.log",
        dir.display()
    );
    log.close()?;
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}
