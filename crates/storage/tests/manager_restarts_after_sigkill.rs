//! Restart tests through the LogManager, with child processes killed by SIGKILL:
//! - a child appending to several partitions in two data dirs is killed at random moments,
//!   many times; each restart recovers every flushed record and nothing that was never
//!   appended (every value names its own offset);
//! - a second process on a locked data dir fails at once with a message naming the dir.
//!
//! Children are this test binary re-run with `FERROLOG_MANAGER_CHILD` set.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};
use ferrolog_testkit::crash::{self, KillDelays};
use ferrolog_testkit::{TestRecord, batch};

const CHILD_ENV: &str = "FERROLOG_MANAGER_CHILD";
const PARTITIONS: i32 = 4;
const KILLS: usize = 20;

fn config(root: &Path) -> ManagerConfig {
    ManagerConfig {
        log_dirs: vec![root.join("a"), root.join("b")],
        recovery_threads_per_data_dir: 2,
        log_defaults: LogConfig {
            segment_bytes: 64 * 1024,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    }
}

fn value_for(partition: i32, offset: i64) -> Vec<u8> {
    let mut value = format!("p{partition}-o{offset};").into_bytes();
    value.resize(60 + (offset % 200) as usize, b'~');
    value
}

fn flushed(root: &Path) -> BTreeMap<i32, i64> {
    std::fs::read_to_string(root.join("flushed"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(partition, offset)| (partition.parse().unwrap(), offset.parse().unwrap()))
        .collect()
}

fn verify(log: &Log, partition: i32) -> i64 {
    let mut expected = 0i64;
    while expected < log.log_end_offset().value() {
        let data = log
            .read(FetchParams {
                start_offset: Offset::new(expected),
                max_bytes: 64 * 1024,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })
            .unwrap();
        for entry in EntryIter::new(&data.read_bytes().unwrap()) {
            let (_, entry) = entry.unwrap();
            entry.validate().unwrap();
            for record in entry
                .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
                .unwrap()
                .to_vec()
                .unwrap()
            {
                assert_eq!(record.offset, expected);
                assert_eq!(record.value, Some(&value_for(partition, expected)[..]));
                expected += 1;
            }
        }
    }
    expected
}

fn role(root: &Path, mode: &str) -> String {
    format!("{mode}:{}", root.display())
}

/// The child: `append:<root>` appends forever; `hold:<root>` opens the manager and waits.
#[test]
fn child_entry() {
    let Some(spec) = crash::child_role(CHILD_ENV) else {
        return;
    };
    let (mode, root) = spec.split_once(':').unwrap();
    let root = PathBuf::from(root);
    let manager = LogManager::open(config(&root), Arc::new(SystemClock)).unwrap();
    if mode == "hold" {
        std::fs::write(root.join("ready"), b"").unwrap();
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let logs: Vec<Arc<Log>> = (0..PARTITIONS)
        .map(|partition| {
            manager
                .get_or_create(&TopicPartition::new("kill", partition))
                .unwrap()
        })
        .collect();
    let mut round = 0u64;
    loop {
        let partition = (round % PARTITIONS as u64) as i32;
        let log = &logs[partition as usize];
        let next = log.log_end_offset().value();
        let records: Vec<TestRecord> = (next..next + 5)
            .map(|offset| {
                TestRecord::new(1_700_000_000_000, None, Some(&value_for(partition, offset)))
            })
            .collect();
        log.append_as_leader(batch(&records)).unwrap();
        round += 1;
        if round.is_multiple_of(23) {
            let mut text = String::new();
            for (partition, log) in logs.iter().enumerate() {
                log.flush().unwrap();
                text.push_str(&format!("{partition} {}\n", log.recovery_point()));
            }
            manager.jobs().checkpoint_all().unwrap();
            ferrolog_storage::fs::atomic_write(&root.join("flushed"), text.as_bytes()).unwrap();
        }
    }
}

#[test]
fn every_flushed_record_survives_repeated_sigkill() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path();
    let mut delays = KillDelays::new(0x2545_f491_4f6c_dd1d, 40, 160);
    let mut largest_end = 0;
    for kill in 0..KILLS {
        delays.run_and_kill("child_entry", CHILD_ENV, &role(root, "append"));

        let flushed = flushed(root);
        let manager = LogManager::open(config(root), Arc::new(SystemClock)).unwrap();
        for partition in 0..PARTITIONS {
            let Some(log) = manager.get(&TopicPartition::new("kill", partition)) else {
                assert!(flushed.get(&partition).is_none_or(|offset| *offset == 0));
                continue;
            };
            let end = verify(&log, partition);
            largest_end = largest_end.max(end);
            let durable = flushed.get(&partition).copied().unwrap_or(0);
            assert!(
                end >= durable,
                "kill {kill}, partition {partition}: end {end} < flushed {durable}"
            );
        }
        // Now and then a clean stop in between, so both kinds of start are exercised.
        if kill % 5 == 4 {
            manager.shutdown().unwrap();
        }
    }
    assert!(largest_end > 100, "the children appended: {largest_end}");
}

#[test]
fn a_second_process_on_a_locked_dir_fails_naming_it() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path();
    let holder = crash::spawn_child("child_entry", CHILD_ENV, &role(root, "hold"));
    let started = Instant::now();
    while !root.join("ready").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the holder never got ready"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let error = LogManager::open(config(root), Arc::new(SystemClock))
        .unwrap_err()
        .to_string();
    crash::kill(holder);
    assert!(error.contains("another process"), "{error}");
    assert!(
        error.contains(&root.join("a").display().to_string()),
        "{error}"
    );
    // The lock dies with its process: the next start succeeds.
    LogManager::open(config(root), Arc::new(SystemClock))
        .unwrap()
        .shutdown()
        .unwrap();
}
