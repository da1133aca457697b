//! Log compaction through the LogManager's cleaner, driven one pass at a time with a manual
//! clock: Kafka's `LogCleanerTest` / `LogCleanerManagerTest` behaviours and a model test
//! against a `HashMap`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ferrolog_records::{BatchBuilder, Compression, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::cleaner::offset_map::OffsetMap;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{
    CleanupPolicy, CoordinatorEpoch, LogConfig, ManualClock, ProducerEpoch, TopicPartition,
};
use ferrolog_testkit::fetched_records;
use proptest::prelude::*;

mod transactions;

const START: i64 = 1_700_000_000_000;
const DAY: i64 = 86_400_000;

struct Setup {
    _temp: tempfile::TempDir,
    clock: Arc<ManualClock>,
    manager: Arc<LogManager>,
    log: Arc<Log>,
}

fn setup(segment_bytes: u64) -> Setup {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START));
    let config = ManagerConfig {
        log_dirs: vec![temp.path().join("data")],
        log_defaults: LogConfig {
            cleanup_policy: CleanupPolicy::COMPACT,
            segment_bytes,
            min_cleanable_dirty_ratio: 0.01,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(config, clock.clone()).unwrap());
    let log = manager
        .get_or_create(&TopicPartition::new("compacted", 0))
        .unwrap();
    Setup {
        _temp: temp,
        clock,
        manager,
        log,
    }
}

/// Appends one batch of `(key, value)` records (`None` value = tombstone).
fn append(log: &Log, records: &[(Option<&str>, Option<&str>)], codec: Compression) {
    let mut builder = BatchBuilder::new(0).compression(codec);
    for (key, value) in records {
        builder
            .append(START, key.map(str::as_bytes), value.map(str::as_bytes), &[])
            .unwrap();
    }
    log.append_as_leader(builder.build().unwrap()).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
}

fn put(log: &Log, key: &str, value: &str) {
    append(log, &[(Some(key), Some(value))], Compression::None);
}

fn delete(log: &Log, key: &str) {
    append(log, &[(Some(key), None)], Compression::None);
}

/// Up to a MiB of the log's stored bytes from `offset`, whole batches.
fn mib_from(log: &Log, offset: i64) -> Vec<u8> {
    log.read(FetchParams {
        start_offset: Offset::new(offset),
        max_bytes: 1 << 20,
        bound: FetchBound::LogEnd,
        first_batch: FirstBatch::Whole,
    })
    .unwrap()
    .read_bytes()
    .unwrap()
}

/// Every record as (offset, key, value).
fn records(log: &Log) -> Vec<(i64, Option<String>, Option<String>)> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let (records, after) = fetched_records(&mib_from(log, offset.value()));
        let Some(after) = after else {
            break;
        };
        out.extend(
            records
                .into_iter()
                .filter(|record| record.offset >= offset.value())
                .map(|record| (record.offset, record.key_text(), record.value_text())),
        );
        offset = offset.max(Offset::new(after));
    }
    out
}

/// (producer id, epoch, last sequence, record count) of every idempotent producer's batch in
/// the first MiB of the log, each batch's checksum verified.
fn producer_batches(log: &Log) -> Vec<(i64, i16, i32, i32)> {
    let bytes = mib_from(log, 0);
    let mut producers = Vec::new();
    for entry in EntryIter::new(&bytes) {
        let (_, entry) = entry.unwrap();
        entry.validate().unwrap();
        let ferrolog_records::FileEntry::V2(batch) = entry else {
            panic!("ferrolog writes v2 batches only")
        };
        if batch.producer_id() >= 0 {
            producers.push((
                batch.producer_id(),
                batch.producer_epoch(),
                batch.last_sequence(),
                batch.records_count(),
            ));
        }
    }
    producers
}

/// The latest value per key, as a reader of the whole log sees it.
fn latest(log: &Log) -> BTreeMap<String, Option<String>> {
    records(log)
        .into_iter()
        .filter_map(|(_, key, value)| key.map(|key| (key, value)))
        .collect()
}

fn clean_until_quiet(setup: &Setup, map_bytes: usize) -> usize {
    let cleaner = setup.manager.new_cleaner();
    let mut map = OffsetMap::new(map_bytes, 0.9);
    let mut passes = 0;
    while cleaner.clean_once(&mut map) {
        passes += 1;
        assert!(passes < 10_000, "the cleaner never runs out of work");
    }
    passes
}

#[test]
fn cleaning_with_deletes_keeps_only_latest_values_and_tombstones_until_the_horizon() {
    let setup = setup(2_000);
    for round in 0..5 {
        for key in 0..10 {
            put(&setup.log, &format!("k{key}"), &format!("v{round}-{key}"));
        }
    }
    for key in [3, 7] {
        delete(&setup.log, &format!("k{key}"));
    }
    put(&setup.log, "tail", "x");
    setup.log.roll().unwrap();
    let before = latest(&setup.log);
    clean_until_quiet(&setup, 1 << 20);
    let after = records(&setup.log);
    assert_eq!(
        latest(&setup.log),
        before,
        "every key's latest value survives"
    );
    let keys: Vec<&str> = after
        .iter()
        .filter_map(|(_, key, _)| key.as_deref())
        .collect();
    assert_eq!(keys.len(), 11, "one record per key: {after:?}");
    assert!(
        after
            .iter()
            .any(|(_, key, value)| key.as_deref() == Some("k3") && value.is_none()),
        "tombstone kept"
    );
    let offsets: Vec<i64> = after.iter().map(|(offset, _, _)| *offset).collect();
    assert!(
        offsets.windows(2).all(|pair| pair[0] < pair[1]),
        "offsets only increase"
    );

    // Past the delete horizon (delete.retention.ms, a day by default) tombstones go too.
    setup.clock.advance_ms(DAY + 1);
    put(&setup.log, "tail", "y");
    setup.log.roll().unwrap();
    let cleaner = setup.manager.new_cleaner();
    let mut map = OffsetMap::new(1 << 20, 0.9);
    while cleaner.clean_once(&mut map) {}
    // This pass re-copies the head cleaned before: what it wrote is measured against what it
    // copied, never against the small dirty tail it mapped.
    let recopy = cleaner.stats.recopy_percent.load(Ordering::Relaxed);
    assert!((1..=100).contains(&recopy), "recopy {recopy}%");
    let final_keys = latest(&setup.log);
    assert!(
        !final_keys.contains_key("k3") && !final_keys.contains_key("k7"),
        "{final_keys:?}"
    );
    assert_eq!(final_keys.get("k4"), Some(&Some("v4-4".to_owned())));
}

#[test]
fn unkeyed_records_are_removed_and_counted() {
    let setup = setup(1_000_000);
    // A compacted topic refuses unkeyed records from producers; they arrive in data written
    // before the policy changed, here through the follower path.
    let mut builder = BatchBuilder::new(0);
    builder.append(START, None, Some(b"no key"), &[]).unwrap();
    builder.append(START, Some(b"k"), Some(b"v"), &[]).unwrap();
    setup
        .log
        .append_as_follower(&builder.build().unwrap())
        .unwrap();
    setup.log.maybe_increment_high_watermark(Offset::new(2));
    setup.log.roll().unwrap();
    clean_until_quiet(&setup, 1 << 20);
    assert_eq!(
        records(&setup.log),
        vec![(1, Some("k".to_owned()), Some("v".to_owned()))]
    );
}

#[test]
fn a_one_entry_map_still_makes_progress_every_pass() {
    let setup = setup(5_000);
    for round in 0..3 {
        for key in 0..8 {
            put(&setup.log, &format!("k{key}"), &format!("{round}"));
        }
    }
    setup.log.roll().unwrap();
    let before = latest(&setup.log);
    let passes = clean_until_quiet(&setup, 48);
    assert!(passes > 1, "a tiny map needs many passes: {passes}");
    assert_eq!(latest(&setup.log), before);
    assert_eq!(
        setup
            .manager
            .cleaner_checkpoint(&TopicPartition::new("compacted", 0)),
        Some(24)
    );
}

#[test]
fn cleaning_passes_offset_gaps() {
    let setup = setup(1_000_000);
    for (offset, value) in [(0, "a"), (10, "b"), (50, "c")] {
        let mut builder = BatchBuilder::new(offset);
        builder
            .append(START, Some(b"key"), Some(value.as_bytes()), &[])
            .unwrap();
        setup
            .log
            .append_as_follower(&builder.build().unwrap())
            .unwrap();
    }
    setup.log.maybe_increment_high_watermark(Offset::new(51));
    setup.log.roll().unwrap();
    clean_until_quiet(&setup, 1 << 20);
    assert_eq!(
        records(&setup.log),
        vec![(50, Some("key".to_owned()), Some("c".to_owned()))]
    );
    assert_eq!(
        setup
            .manager
            .cleaner_checkpoint(&TopicPartition::new("compacted", 0)),
        Some(51)
    );
}

#[test]
fn compressed_batches_are_recompressed_with_their_codec() {
    let setup = setup(1_000_000);
    for round in 0..3 {
        let records: Vec<(String, String)> = (0..20)
            .map(|key| (format!("k{key}"), format!("{round}")))
            .collect();
        let refs: Vec<(Option<&str>, Option<&str>)> = records
            .iter()
            .map(|(k, v)| (Some(k.as_str()), Some(v.as_str())))
            .collect();
        append(&setup.log, &refs, Compression::Lz4);
    }
    setup.log.roll().unwrap();
    clean_until_quiet(&setup, 1 << 20);
    let bytes = mib_from(&setup.log, 0);
    for entry in EntryIter::new(&bytes) {
        let (_, entry) = entry.unwrap();
        let ferrolog_records::FileEntry::V2(batch) = entry else {
            panic!()
        };
        assert_eq!(batch.compression().unwrap(), Compression::Lz4);
    }
    assert_eq!(records(&setup.log).len(), 20);
}

#[test]
fn a_corrupt_log_is_marked_uncleanable_and_the_cleaner_goes_on() {
    let setup = setup(600);
    for key in 0..30 {
        put(&setup.log, &format!("k{}", key % 5), "value");
    }
    setup.log.roll().unwrap();
    let second = setup.log.view().segments[1].log_path();
    let mut bytes = std::fs::read(&second).unwrap();
    bytes[70] ^= 0xff;
    std::fs::write(&second, &bytes).unwrap();
    let cleaner = setup.manager.new_cleaner();
    let mut map = OffsetMap::new(1 << 20, 0.9);
    assert!(cleaner.clean_once(&mut map));
    assert_eq!(
        cleaner.uncleanable_partitions(),
        vec![TopicPartition::new("compacted", 0)]
    );
    assert!(
        !cleaner.clean_once(&mut map),
        "an uncleanable log is skipped"
    );
}

#[test]
fn the_last_batch_of_every_producer_survives_cleaning_even_when_emptied() {
    let setup = setup(1_000_000);
    let producer_batch = |producer_id: i64, sequence: i32, key: &str, value: &str| {
        let mut builder = BatchBuilder::new(0).producer(producer_id, 3, sequence);
        builder
            .append(START, Some(key.as_bytes()), Some(value.as_bytes()), &[])
            .unwrap();
        builder
            .append(START, Some(key.as_bytes()), Some(value.as_bytes()), &[])
            .unwrap();
        builder.build().unwrap()
    };
    for (producer, sequence, key) in [(7, 0, "a"), (7, 2, "b"), (9, 0, "c")] {
        setup
            .log
            .append_as_leader(producer_batch(producer, sequence, key, "old"))
            .unwrap();
    }
    // A non-idempotent producer overwrites every key, so producer 7's and 9's batches lose all
    // their records.
    for key in ["a", "b", "c"] {
        put(&setup.log, key, "new");
    }
    setup
        .log
        .maybe_increment_high_watermark(setup.log.log_end_offset());
    setup.log.roll().unwrap();
    clean_until_quiet(&setup, 1 << 20);
    assert_eq!(
        producer_batches(&setup.log),
        vec![(7, 3, 3, 0), (9, 3, 1, 0)],
        "each producer's last batch, emptied"
    );
    assert_eq!(latest(&setup.log).get("a"), Some(&Some("new".to_owned())));
}

#[test]
fn a_paused_partition_is_not_cleaned_until_resumed() {
    let setup = setup(600);
    for key in 0..30 {
        put(&setup.log, &format!("k{}", key % 3), "value");
    }
    setup.log.roll().unwrap();
    let cleaner = setup.manager.new_cleaner();
    let tp = TopicPartition::new("compacted", 0);
    cleaner.abort_and_pause(&tp);
    let mut map = OffsetMap::new(1 << 20, 0.9);
    assert!(!cleaner.clean_once(&mut map));
    cleaner.resume(&tp);
    assert!(cleaner.clean_once(&mut map));
}

#[test]
fn deleting_a_partition_drops_its_cleaner_checkpoint() {
    let setup = setup(600);
    for key in 0..30 {
        put(&setup.log, &format!("k{}", key % 3), "value");
    }
    setup.log.roll().unwrap();
    clean_until_quiet(&setup, 1 << 20);
    let tp = TopicPartition::new("compacted", 0);
    assert!(setup.manager.cleaner_checkpoint(&tp).is_some());
    setup.manager.delete(&tp).unwrap();
    assert_eq!(setup.manager.cleaner_checkpoint(&tp), None);
}

/// A random operation of the model test.
#[derive(Debug, Clone)]
enum Op {
    Put(u8, u16),
    Delete(u8),
    Roll,
    Clean,
    AdvanceDays(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..12, any::<u16>()).prop_map(|(key, value)| Op::Put(key, value)),
        2 => (0u8..12).prop_map(Op::Delete),
        2 => Just(Op::Roll),
        3 => Just(Op::Clean),
        1 => (0u8..3).prop_map(Op::AdvanceDays),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random keyed writes and deletes with many passes against a HashMap: every key's latest
    /// value is there, a deleted key is gone once its horizon has passed, offsets increase.
    #[test]
    fn compaction_matches_a_hash_map_model(ops in prop::collection::vec(op(), 1..120)) {
        let setup = setup(700);
        let mut model: HashMap<String, Option<String>> = HashMap::new();
        for op in ops {
            match op {
                Op::Put(key, value) => {
                    let (key, value) = (format!("k{key}"), value.to_string());
                    put(&setup.log, &key, &value);
                    model.insert(key, Some(value));
                }
                Op::Delete(key) => {
                    let key = format!("k{key}");
                    delete(&setup.log, &key);
                    model.insert(key, None);
                }
                Op::Roll => {
                    setup.log.roll().unwrap();
                }
                Op::Clean => {
                    clean_until_quiet(&setup, 24 * 8);
                }
                Op::AdvanceDays(days) => setup.clock.advance_ms(i64::from(days) * DAY),
            }
            let seen = latest(&setup.log);
            for (key, value) in &model {
                match value {
                    Some(value) => prop_assert_eq!(seen.get(key), Some(&Some(value.clone())), "key {}", key),
                    None => prop_assert!(seen.get(key).is_none_or(Option::is_none), "deleted key {} came back", key),
                }
            }
            let offsets: Vec<i64> = records(&setup.log).iter().map(|(offset, _, _)| *offset).collect();
            prop_assert!(offsets.windows(2).all(|pair| pair[0] < pair[1]));
        }
        // A pass gives every surviving tombstone its horizon; a pass after that horizon has
        // passed removes every deleted key.
        for round in 0..2 {
            setup.log.roll().unwrap();
            put(&setup.log, "final", &round.to_string());
            setup.log.roll().unwrap();
            clean_until_quiet(&setup, 1 << 20);
            setup.clock.advance_ms(2 * DAY);
        }
        let seen = latest(&setup.log);
        for (key, value) in &model {
            if value.is_none() {
                prop_assert!(!seen.contains_key(key), "tombstone of {} outlived its horizon", key);
            }
        }
    }
}

#[test]
fn an_expired_producer_s_emptied_batch_is_not_kept() {
    let setup = setup(1_000_000);
    for (producer, key) in [(7, "a"), (9, "b")] {
        let mut builder = BatchBuilder::new(0).producer(producer, 0, 0);
        builder
            .append(START, Some(key.as_bytes()), Some(b"old"), &[])
            .unwrap();
        setup
            .log
            .append_as_leader(builder.build().unwrap())
            .unwrap();
    }
    for key in ["a", "b"] {
        put(&setup.log, key, "new");
    }
    // Producer 9 stays active; producer 7 has been idle for longer than its expiry.
    setup.clock.advance_ms(DAY);
    let mut builder = BatchBuilder::new(0).producer(9, 0, 1);
    builder
        .append(START + DAY, Some(b"c"), Some(b"live"), &[])
        .unwrap();
    setup
        .log
        .append_as_leader(builder.build().unwrap())
        .unwrap();
    assert_eq!(
        setup
            .log
            .remove_expired_producers(ferrolog_storage::clock::millis(DAY)),
        1
    );
    setup
        .log
        .maybe_increment_high_watermark(setup.log.log_end_offset());
    setup.log.roll().unwrap();
    clean_until_quiet(&setup, 1 << 20);
    let producers: Vec<i64> = producer_batches(&setup.log)
        .into_iter()
        .map(|(id, ..)| id)
        .collect();
    assert_eq!(
        producers,
        vec![9],
        "only the active producer's batch is kept"
    );
}
