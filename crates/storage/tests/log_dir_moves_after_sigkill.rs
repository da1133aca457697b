//! Moves between data directories through SIGKILLs: a child process appends to three
//! partitions of two data directories while it keeps moving each of them to the other
//! directory (the mover thread copying at a limited rate), and is killed at random moments,
//! sixty times: in the middle of copies, of swaps, and (with the `failpoints` feature, which
//! holds each swap between its two renames for a moment) between a swap's renames. After each
//! kill the LogManager opens the directories again: every partition has one log, holding every
//! record the child's appends had returned for, each once, at its offset, in order.
//!
//! Children are this test binary re-run with `FERROLOG_MOVE_CHILD` set.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};
use ferrolog_testkit::crash::{self, KillDelays};
use ferrolog_testkit::{TestRecord, batch};

const CHILD_ENV: &str = "FERROLOG_MOVE_CHILD";
const PARTITIONS: i32 = 3;
const KILLS: usize = 60;

fn config(root: &Path) -> ManagerConfig {
    ManagerConfig {
        log_dirs: vec![root.join("a"), root.join("b")],
        log_defaults: LogConfig {
            segment_bytes: 64 * 1024,
            ..LogConfig::default()
        },
        // A copy of a few hundred KiB takes a good part of a second: kills find copies under way.
        move_max_bytes_per_second: 2_000_000.0,
        ..ManagerConfig::default()
    }
}

fn value_for(partition: i32, offset: i64) -> Vec<u8> {
    let mut value = format!("p{partition}-o{offset};").into_bytes();
    value.resize(100 + (offset % 300) as usize, b'~');
    value
}

fn tp(partition: i32) -> TopicPartition {
    TopicPartition::new("moving", partition)
}

/// The ends the child's appends returned for, as it last wrote them down.
fn acknowledged(root: &Path) -> BTreeMap<i32, i64> {
    std::fs::read_to_string(root.join("acknowledged"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(partition, offset)| (partition.parse().unwrap(), offset.parse().unwrap()))
        .collect()
}

/// Reads the whole log, checking each record is the one written at its offset; returns the end.
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
                assert_eq!(record.offset, expected, "partition {partition}");
                assert_eq!(record.value, Some(&value_for(partition, expected)[..]));
                expected += 1;
            }
        }
    }
    expected
}

/// The child: appends round-robin, and moves every partition not moving to the other directory.
#[test]
fn child_entry() {
    let Some(root) = crash::child_role(CHILD_ENV) else {
        return;
    };
    #[cfg(feature = "failpoints")]
    {
        std::mem::forget(fail::FailScenario::setup());
        fail::cfg("log.move.between-renames", "sleep(60)").unwrap();
    }
    let root = PathBuf::from(root);
    let config = config(&root);
    let manager = Arc::new(LogManager::open(config.clone(), Arc::new(SystemClock)).unwrap());
    manager.start_background().unwrap();
    let logs: Vec<Arc<Log>> = (0..PARTITIONS)
        .map(|partition| manager.get_or_create(&tp(partition)).unwrap())
        .collect();
    let mut round = 0u64;
    loop {
        let partition = (round % PARTITIONS as u64) as i32;
        let log = &logs[partition as usize];
        let next = log.log_end_offset().value();
        let records: Vec<TestRecord> = (next..next + 4)
            .map(|offset| {
                TestRecord::new(1_700_000_000_000, None, Some(&value_for(partition, offset)))
            })
            .collect();
        log.append_as_leader(batch(&records)).unwrap();
        round += 1;
        if round.is_multiple_of(9) {
            let text: String = logs
                .iter()
                .enumerate()
                .map(|(partition, log)| format!("{partition} {}\n", log.log_end_offset()))
                .collect();
            // Written after the appends returned; a SIGKILL keeps what was written.
            ferrolog_storage::fs::replace_unsynced(&root.join("acknowledged"), text.as_bytes())
                .unwrap();
        }
        if round.is_multiple_of(60) {
            for partition in 0..PARTITIONS {
                let topic_partition = tp(partition);
                if manager.moves().is_moving(&topic_partition) {
                    continue;
                }
                let here = manager
                    .dir_of(&topic_partition)
                    .unwrap()
                    .path()
                    .to_path_buf();
                let there = config.log_dirs.iter().find(|dir| **dir != here).unwrap();
                manager
                    .moves()
                    .alter_log_dir(&topic_partition, there)
                    .unwrap();
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn every_acknowledged_record_survives_sigkills_during_moves() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path();
    let mut delays = KillDelays::new(0x9e37_79b9_7f4a_7c15, 100, 400);
    let (mut resumed, mut completed, mut moved) = (0, 0, 0);
    let mut homes: BTreeMap<i32, PathBuf> = BTreeMap::new();
    for kill in 0..KILLS {
        delays.run_and_kill("child_entry", CHILD_ENV, &root.display().to_string());

        let acknowledged = acknowledged(root);
        let manager = LogManager::open(config(root), Arc::new(SystemClock))
            .unwrap_or_else(|error| panic!("kill {kill}: {error}"));
        let report = manager.startup_report();
        resumed += report.moves_resumed.len();
        completed += report.moves_completed.len();
        for partition in 0..PARTITIONS {
            let Some(log) = manager.get(&tp(partition)) else {
                assert!(acknowledged.get(&partition).is_none_or(|end| *end == 0));
                continue;
            };
            let end = verify(&log, partition);
            let acked = acknowledged.get(&partition).copied().unwrap_or(0);
            assert!(
                end >= acked,
                "kill {kill}: partition {partition} ends at {end}, {acked} were acknowledged"
            );
            let home = manager.dir_of(&tp(partition)).unwrap().path().to_path_buf();
            if homes
                .insert(partition, home.clone())
                .is_some_and(|before| before != home)
            {
                moved += 1;
            }
        }
        // One log per partition: the open refuses a partition in two directories; the
        // directories hold nothing else but its future log, if a move goes on.
        for dir in &config(root).log_dirs {
            for entry in std::fs::read_dir(dir).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                assert!(
                    !name.ends_with("-delete"),
                    "kill {kill}: {name} left in {}",
                    dir.display()
                );
            }
        }
        manager.shutdown().unwrap();
    }
    eprintln!(
        "{KILLS} kills: {moved} moves seen done, {resumed} resumed copies, {completed} swaps finished at startup"
    );
    assert!(
        moved > 0 && resumed > 0,
        "the kills found no moves: {moved} done, {resumed} resumed"
    );
    #[cfg(feature = "failpoints")]
    assert!(completed > 0, "no kill landed between a swap's renames");
}
