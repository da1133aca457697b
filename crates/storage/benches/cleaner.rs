//! Cleaner throughput per thread: one pass over 64 MiB of 1 KiB records (in 16-record
//! batches) with 1%, 10% and 100% unique keys, uncompressed and lz4, from a page-cached log.
//! `cargo bench -p ferrolog-storage --bench cleaner` prints one line per case:
//! `clean unique_percent=<p> codec=<c> mb_per_s=<log bytes/s> record_mb_per_s=<uncompressed
//! record bytes/s> runs=<...>`, then the map's memory per key.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benches fail loudly"
)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use ferrolog_records::{BatchBuilder, Compression};
use ferrolog_storage::cleaner::offset_map::{BYTES_PER_SLOT, OffsetMap};
use ferrolog_storage::cleaner::pass;
use ferrolog_storage::log::Log;
use ferrolog_storage::throttle::Throttle;
use ferrolog_storage::{CleanupPolicy, LogConfig, Offset, SystemClock, TopicPartition};

const LOG_BYTES: usize = 64 * 1024 * 1024;
const RECORD_BYTES: usize = 1024;
const RUNS: usize = 3;

fn filled_log(dir: &Path, unique_percent: usize, codec: Compression) -> Log {
    let config = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        segment_bytes: 16 * 1024 * 1024,
        ..LogConfig::default()
    };
    let log = Log::create(
        dir,
        &TopicPartition::new("clean", 0),
        config,
        Arc::new(SystemClock),
    )
    .unwrap();
    let records = LOG_BYTES / RECORD_BYTES;
    let keys = (records * unique_percent / 100).max(1);
    let value = vec![0x42u8; RECORD_BYTES - 24];
    let mut written = 0;
    while written < records {
        let mut builder = BatchBuilder::new(0).compression(codec);
        for i in written..written + 16 {
            let key = format!("key-{:012}", (i * 7919) % keys);
            builder
                .append(1_700_000_000_000, Some(key.as_bytes()), Some(&value), &[])
                .unwrap();
        }
        log.append_as_leader(builder.build().unwrap()).unwrap();
        written += 16;
    }
    log.maybe_increment_high_watermark(log.log_end_offset());
    log.roll().unwrap();
    log
}

fn main() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&base).unwrap();
    let records = LOG_BYTES / RECORD_BYTES;
    for codec in [Compression::None, Compression::Lz4] {
        for unique_percent in [1, 10, 100] {
            let mut rates = Vec::new();
            let mut uncompressed_rates = Vec::new();
            for _ in 0..RUNS {
                let temp = tempfile::tempdir_in(&base).unwrap();
                let log = filled_log(temp.path(), unique_percent, codec);
                let mut map = OffsetMap::new(records * BYTES_PER_SLOT * 2, 0.9);
                let bytes: u64 = log
                    .view()
                    .segments
                    .iter()
                    .map(|segment| segment.size())
                    .sum();
                let started = Instant::now();
                let stats = pass::clean(
                    &log,
                    Offset::ZERO,
                    log.log_end_offset(),
                    &mut map,
                    1_700_000_000_000,
                    &Throttle::new(f64::MAX),
                    &AtomicBool::new(false),
                )
                .unwrap();
                let seconds = started.elapsed().as_secs_f64();
                assert_eq!(stats.end_offset, log.log_end_offset());
                rates.push(bytes as f64 / seconds / 1e6);
                uncompressed_rates.push(LOG_BYTES as f64 / seconds / 1e6);
            }
            let mut sorted = rates.clone();
            sorted.sort_by(f64::total_cmp);
            uncompressed_rates.sort_by(f64::total_cmp);
            println!(
                "clean unique_percent={unique_percent} codec={codec} mb_per_s={:.0} record_mb_per_s={:.0} runs={}",
                sorted[RUNS / 2],
                uncompressed_rates[RUNS / 2],
                rates
                    .iter()
                    .map(|r| format!("{r:.0}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
    }
    println!(
        "map bytes_per_slot={BYTES_PER_SLOT} bytes_per_key_at_load_factor_0.9={:.1}",
        BYTES_PER_SLOT as f64 / 0.9
    );
}
