//! Criterion benches of the storage layers: append (1 KiB records in 16 KiB and 1 MiB batches),
//! read, offset-index lookup and segment recovery, all on page-cached data in a temp dir on
//! the same file system as `target/`. `scripts/bench.sh` runs them beside `dd` and records the
//! figures in docs/benchmarks.md.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benches fail loudly"
)]

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ferrolog_records::BatchBuilder;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, LoadParams, Log, partition_dir};
use ferrolog_storage::segment::{OffsetIndex, Segment};
use ferrolog_storage::{FilePosition, Offset};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};

const RECORD_BYTES: usize = 1024;
/// Data appended per measured iteration.
const APPEND_BYTES: usize = 256 * 1024 * 1024;

fn bench_dir() -> tempfile::TempDir {
    // Beside target/, i.e. on the file system `dd` is measured on.
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&base).expect("bench dir");
    tempfile::tempdir_in(base).expect("temp dir")
}

/// A producer batch of `records` records of 1 KiB each.
fn producer_batch(records: usize) -> Vec<u8> {
    let value = vec![0x5a; RECORD_BYTES];
    let mut builder = BatchBuilder::new(0);
    for i in 0..records {
        let key = format!("key-{i:08}");
        builder
            .append(1_700_000_000_000, Some(key.as_bytes()), Some(&value), &[])
            .expect("record");
    }
    builder.build().expect("batch")
}

fn config() -> LogConfig {
    LogConfig::default()
}

/// Appends `APPEND_BYTES` in batches of `records_per_batch` to a fresh log from `appenders`
/// threads at once (producers sharing a partition); returns the time spent in the appends.
fn time_append(records_per_batch: usize, appenders: usize) -> Duration {
    // A broker appends bytes it has just read from a socket, so they are in the CPU cache. Each
    // append gets a fresh copy of one template made just before it (and not timed), as the
    // broker hands the log the request's bytes it has just copied.
    let template = producer_batch(records_per_batch);
    let dir = bench_dir();
    let log = Log::create(
        dir.path(),
        &TopicPartition::new("bench", 0),
        config(),
        Arc::new(SystemClock),
    )
    .expect("log");
    let batches_each = APPEND_BYTES / template.len() / appenders;
    let started = Instant::now();
    let copying: Duration = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..appenders)
            .map(|_| {
                let (log, template) = (&log, &template);
                scope.spawn(move || {
                    let mut copying = Duration::ZERO;
                    for _ in 0..batches_each {
                        let copy_started = Instant::now();
                        let records = template.clone();
                        copying += copy_started.elapsed();
                        log.append_as_leader(records).expect("append");
                    }
                    copying
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("appender"))
            .sum()
    });
    // The appenders run side by side, each copying for its share of the time: what is left of
    // the wall time without that share is the appends'.
    started
        .elapsed()
        .saturating_sub(copying / u32::try_from(appenders).expect("appenders"))
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (name, records) in [("16KiB_batches", 16), ("1MiB_batches", 1000)] {
        let batch_len = producer_batch(records).len();
        let bytes = (APPEND_BYTES / batch_len * batch_len) as u64;
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(BenchmarkId::new("1KiB_records", name), |b| {
            b.iter_custom(|iterations| (0..iterations).map(|_| time_append(records, 1)).sum())
        });
        group.bench_function(
            BenchmarkId::new("raw_pwrite_into_reserved_blocks", name),
            |b| b.iter_custom(|iterations| (0..iterations).map(|_| time_raw_writes(records)).sum()),
        );
    }
    // Two producers sharing one partition: batch checks run outside the log's append lock.
    let batch_len = producer_batch(1000).len();
    group.throughput(Throughput::Bytes(
        (APPEND_BYTES / batch_len / 2 * 2 * batch_len) as u64,
    ));
    group.bench_function(
        BenchmarkId::new("1KiB_records_2_appenders", "1MiB_batches"),
        |b| b.iter_custom(|iterations| (0..iterations).map(|_| time_append(1000, 2)).sum()),
    );
    group.finish();
}

/// The ceiling for any engine that writes each batch with one call: the same bytes, in the
/// same sizes, written with `pwrite` to a new file whose blocks are all reserved up front (the
/// log reserves them 16 MiB at a time), with no validation and no indexes.
fn time_raw_writes(records_per_batch: usize) -> Duration {
    let template = producer_batch(records_per_batch);
    let dir = bench_dir();
    let file = std::fs::File::create(dir.path().join("raw.log")).expect("file");
    let batches = APPEND_BYTES / template.len();
    let started = Instant::now();
    rustix::fs::fallocate(
        &file,
        rustix::fs::FallocateFlags::KEEP_SIZE,
        0,
        APPEND_BYTES as u64,
    )
    .expect("reserve");
    let mut position = 0u64;
    for _ in 0..batches {
        file.write_all_at(&template, position).expect("write");
        position += template.len() as u64;
    }
    started.elapsed()
}

/// A log of about 256 MiB in 16 KiB batches, closed cleanly and reopened.
fn filled_log(dir: &Path) -> Log {
    let tp = TopicPartition::new("bench", 0);
    let log = Log::create(dir, &tp, config(), Arc::new(SystemClock)).expect("log");
    let template = producer_batch(16);
    for _ in 0..APPEND_BYTES / template.len() {
        log.append_as_leader(template.clone()).expect("append");
    }
    log.maybe_increment_high_watermark(log.log_end_offset());
    log.close().expect("close");
    drop(log);
    let params = LoadParams {
        had_clean_shutdown: true,
        ..LoadParams::default()
    };
    Log::open(
        &partition_dir(dir, &tp),
        config(),
        params,
        Arc::new(SystemClock),
    )
    .expect("reopen")
    .0
}

fn read(c: &mut Criterion) {
    let dir = bench_dir();
    let log = filled_log(dir.path());
    let total = log.size_in_bytes();
    let mut group = c.benchmark_group("read");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Bytes(total));
    // One reused buffer, as a server reusing its send buffers would (a fresh 1 MiB allocation
    // per fetch would measure page faults, not reads).
    let mut buffer = vec![0u8; 2 * 1024 * 1024];
    group.bench_function("sequential_1MiB_fetches", |b| {
        b.iter(|| {
            let mut offset = 0;
            let mut bytes = 0u64;
            while offset < log.log_end_offset().value() {
                let data = log
                    .read(FetchParams {
                        start_offset: Offset::new(offset),
                        max_bytes: 1024 * 1024,
                        bound: FetchBound::HighWatermark,
                        first_batch: FirstBatch::Whole,
                    })
                    .expect("read");
                let slice = data.slice.as_ref().expect("data");
                let buffer = &mut buffer[..slice.len() as usize];
                slice
                    .file()
                    .read_exact_at(buffer, slice.position().bytes())
                    .expect("bytes");
                bytes += buffer.len() as u64;
                // Resume after the last whole batch in the slice.
                let mut position = 0usize;
                while let Some(header) =
                    ferrolog_records::EntryHeader::read(&buffer[position..]).expect("header")
                {
                    if position + header.total_size > buffer.len() {
                        break;
                    }
                    let batch = ferrolog_records::RecordBatch::parse_prefix(&buffer[position..])
                        .expect("batch");
                    offset = batch.next_offset();
                    position += header.total_size;
                }
            }
            bytes
        })
    });
    group.finish();
}

fn index_lookup(c: &mut Criterion) {
    let dir = bench_dir();
    let entries = 1_310_720u32; // a full default 10 MiB index
    let mut index = OffsetIndex::open(
        &dir.path().join("00000000000000000000.index"),
        Offset::ZERO,
        entries * 8,
    )
    .expect("index");
    for i in 0..entries {
        index
            .append(
                Offset::new(i64::from(i) * 16 + 15),
                FilePosition::from(i * 4096),
            )
            .expect("entry");
    }
    let mut group = c.benchmark_group("index_lookup");
    let mut state = 12345u64;
    let index = index.view().expect("view");
    group.bench_function("offset_index_full_10MiB_random", |b| {
        b.iter(|| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            index.lookup(Offset::new((state % (u64::from(entries) * 16)) as i64))
        })
    });
    let log_dir = bench_dir();
    let log = filled_log(log_dir.path());
    let segment = Arc::clone(log.view().active_segment());
    let end = log.log_end_offset().value();
    group.bench_function("segment_translate_offset_random", |b| {
        b.iter(|| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            segment
                .translate_offset(
                    Offset::new((state % end as u64) as i64),
                    FilePosition::START,
                )
                .expect("lookup")
        })
    });
    group.finish();
}

fn recovery(c: &mut Criterion) {
    let dir = bench_dir();
    let log = filled_log(dir.path());
    let segment_dir = log.dir().to_path_buf();
    let size = log.size_in_bytes();
    drop(log);
    let mut group = c.benchmark_group("recovery");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Bytes(size));
    group.bench_function("segment_recover_16KiB_batches", |b| {
        b.iter(|| {
            let segment =
                Segment::open(&segment_dir, Offset::ZERO, &config(), 0, "").expect("open");
            let outcome = segment.recover().expect("recover");
            assert_eq!(outcome.valid_bytes, size);
            outcome
        })
    });
    group.finish();
}

criterion_group!(benches, append, read, index_lookup, recovery);
criterion_main!(benches);
