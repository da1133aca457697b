//! Moving a partition between two data directories of one file system: how fast the mover
//! copies it (from the alter to the end of the swap, whose fsync is included) and how fast
//! another partition takes appends meanwhile, against the same appends with nothing moving for
//! as long as the move took.
//!
//! A bench binary, not criterion: one move is one long sample. `cargo bench -p
//! ferrolog-storage --bench log_dir_move [-- MIB]` prints `move …` and `append …` lines, three
//! runs each; `scripts/bench.sh` puts them beside `dd`'s rates of the same run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benches fail loudly"
)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};
use ferrolog_testkit::sized_batch;

const RUNS: usize = 3;
/// Appends to the other partition: 64 KiB batches, as a busy producer sends.
const APPEND_BYTES: usize = 64 * 1024;

/// Appends to `partition` until `stop`; returns the bytes appended.
fn append_until(manager: &LogManager, partition: &TopicPartition, stop: &AtomicBool) -> u64 {
    let log = manager.get(partition).unwrap();
    let batch = sized_batch(APPEND_BYTES, 1_700_000_000_000);
    let mut bytes = 0;
    while !stop.load(Ordering::Relaxed) {
        log.append_as_leader(batch.clone()).unwrap();
        bytes += batch.len() as u64;
    }
    bytes
}

fn main() {
    let mib: u64 = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(512);
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&base).unwrap();
    for run in 0..RUNS {
        let temp = tempfile::tempdir_in(&base).unwrap();
        let dirs = [temp.path().join("a"), temp.path().join("b")];
        let config = ManagerConfig {
            log_dirs: dirs.to_vec(),
            // Segments of 64 MiB: a roll (whose fsync the appender pays) every 64 MiB, so a
            // window of a second holds many, not one 1 GiB roll or none.
            log_defaults: LogConfig {
                segment_bytes: 64 << 20,
                ..LogConfig::default()
            },
            ..ManagerConfig::default()
        };
        let manager = Arc::new(LogManager::open(config, Arc::new(SystemClock)).unwrap());
        manager.start_background().unwrap();
        let moving = TopicPartition::new("moving", 0);
        let other = TopicPartition::new("other", 0);
        for partition in [&moving, &other] {
            manager.moves().alter_log_dir(partition, &dirs[0]).unwrap();
            manager.get_or_create(partition).unwrap();
        }
        let log = manager.get(&moving).unwrap();
        let batch = sized_batch(512 << 10, 1_700_000_000_000);
        for _ in 0..mib * 2 {
            log.append_as_leader(batch.clone()).unwrap();
        }
        log.flush().unwrap();
        let size = log.size_in_bytes();

        // The move, with the same appends beside it.
        let stop = AtomicBool::new(false);
        let during = AtomicU64::new(0);
        let started = Instant::now();
        let seconds = std::thread::scope(|scope| {
            let appender = scope.spawn(|| {
                during.store(append_until(&manager, &other, &stop), Ordering::Relaxed);
            });
            manager.moves().alter_log_dir(&moving, &dirs[1]).unwrap();
            while manager.moves().is_moving(&moving) {
                std::thread::sleep(Duration::from_millis(5));
            }
            let seconds = started.elapsed().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            appender.join().unwrap();
            seconds
        });
        assert_eq!(manager.dir_of(&moving).unwrap().path(), dirs[1]);
        // The same appends alone, for as long as the move took.
        let stop = AtomicBool::new(false);
        let idle_bytes = std::thread::scope(|scope| {
            let appender = scope.spawn(|| append_until(&manager, &other, &stop));
            std::thread::sleep(Duration::from_secs_f64(seconds));
            stop.store(true, Ordering::Relaxed);
            appender.join().unwrap()
        });
        println!(
            "move run={run} bytes={size} seconds={seconds:.3} rate={:.0}",
            size as f64 / seconds
        );
        println!(
            "append run={run} idle={:.0} during_move={:.0}",
            idle_bytes as f64 / seconds,
            during.load(Ordering::Relaxed) as f64 / seconds
        );
        manager.shutdown().unwrap();
    }
}
