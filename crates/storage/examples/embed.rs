//! Embedding ferrolog's storage engine in an application: open a data directory, create a
//! partition, append records, read them back, compact a keyed topic, and shut down cleanly. The
//! files it writes are Kafka's: point `kafka-dump-log` (or `ferrolog dump-log`) at them.
//!
//! Run with `cargo run -p ferrolog-storage --example embed [data-dir]` (default: a new
//! temporary directory, removed at the end).

use std::sync::Arc;

use ferrolog_records::{BatchBuilder, DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::cleaner::offset_map::OffsetMap;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{CleanupPolicy, LogConfig, SystemClock, TopicPartition};

type AnyError = Box<dyn std::error::Error>;

fn main() -> Result<(), AnyError> {
    let temp = tempfile::tempdir()?;
    let data_dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| temp.path().join("data"), Into::into);

    // Every topic of this manager is compacted, with small segments so the example has
    // something to compact; each setting is one of Kafka's topic configs.
    let config = ManagerConfig {
        log_dirs: vec![data_dir.clone()],
        log_defaults: LogConfig {
            cleanup_policy: CleanupPolicy::COMPACT,
            segment_bytes: 1024,
            min_cleanable_dirty_ratio: 0.01,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(config, Arc::new(SystemClock))?);
    let log = manager.get_or_create(&TopicPartition::new("prices", 0))?;

    // A producer's batches carry base offset 0; the log assigns the offsets.
    let now_ms = 1_700_000_000_000;
    for round in 0..20 {
        let mut batch = BatchBuilder::new(0);
        for item in ["apple", "pear", "plum"] {
            let price = format!("{}", 100 + round);
            batch.append(now_ms, Some(item.as_bytes()), Some(price.as_bytes()), &[])?;
        }
        let appended = log.append_as_leader(batch.build()?)?;
        if round == 0 {
            println!(
                "first batch at offsets {}..={}",
                appended.first_offset, appended.last_offset
            );
        }
    }
    println!(
        "log end offset {}, {} segments",
        log.log_end_offset(),
        log.segment_count()
    );

    // Compaction keeps the latest value of each key (the active segment is never cleaned).
    log.roll()?;
    let cleaner = manager.new_cleaner();
    let mut map = OffsetMap::new(1 << 20, 0.9);
    while cleaner.clean_once(&mut map) {}
    println!("after compaction: {:?}", latest_values(&log)?);

    manager.shutdown()?;
    println!("shut down cleanly; data in {}", data_dir.display());
    Ok(())
}

/// Every record from the log start, read as a consumer would (up to the high watermark).
fn latest_values(log: &Log) -> Result<Vec<(i64, String, String)>, AnyError> {
    let mut found = Vec::new();
    let mut offset = log.log_start_offset();
    loop {
        let data = log.read(FetchParams {
            start_offset: offset,
            max_bytes: 1 << 20,
            bound: FetchBound::HighWatermark,
            first_batch: FirstBatch::Whole,
        })?;
        if data.is_empty() {
            return Ok(found);
        }
        for entry in EntryIter::new(&data.read_bytes()?) {
            let (_, entry) =
                entry.map_err(|(position, error)| format!("batch at byte {position}: {error}"))?;
            for record in entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES)?.to_vec()? {
                let text = |bytes: Option<&[u8]>| {
                    String::from_utf8_lossy(bytes.unwrap_or_default()).into_owned()
                };
                found.push((record.offset, text(record.key), text(record.value)));
            }
            offset = Offset::new(entry.next_offset());
        }
    }
}
